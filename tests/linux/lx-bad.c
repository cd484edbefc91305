/* lx-bad: garbage pointers and lengths to the implemented calls get the
 * errors Linux gives (EFAULT, EINVAL, EBADF), and unknown calls ENOSYS;
 * the server never crashes: the program goes on to the end. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define TRY(what, call) do { errno = 0; long r = (call); printf("%-28s %ld errno %d\n", what, r, r < 0 ? errno : 0); } while (0)

int main(void) {
    char *bad = (char *)8;
    char *kernel = (char *)0xffff800000000000UL;
    int fd = open("f", O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(fd, "abc", 3);
    lseek(fd, 0, SEEK_SET);
    TRY("write bad buffer", syscall(SYS_write, 1, bad, 10));
    TRY("write kernel buffer", syscall(SYS_write, 1, kernel, 10));
    TRY("read into bad buffer", syscall(SYS_read, fd, bad, 3));
    TRY("read bad fd", syscall(SYS_read, 1000, bad, 3));
    TRY("write negative fd", syscall(SYS_write, -5, "x", 1));
    TRY("open bad path", syscall(SYS_open, bad, O_RDONLY));
    TRY("openat bad path", syscall(SYS_openat, AT_FDCWD, kernel, O_RDONLY));
    TRY("stat bad path", syscall(SYS_stat, bad, bad));
    TRY("fstat bad buffer", syscall(SYS_fstat, fd, bad));
    TRY("writev bad iovec", syscall(SYS_writev, 1, bad, 2));
    TRY("writev too many", syscall(SYS_writev, 1, bad, 100000));
    TRY("getcwd bad buffer", syscall(SYS_getcwd, bad, 100));
    TRY("getcwd too small", syscall(SYS_getcwd, (char[2]){0}, 2));
    TRY("pipe bad array", syscall(SYS_pipe, bad));
    TRY("uname bad buffer", syscall(SYS_uname, bad));
    TRY("clock_gettime bad", syscall(SYS_clock_gettime, 0, bad));
    TRY("nanosleep bad", syscall(SYS_nanosleep, bad, 0));
    TRY("rt_sigaction SIGKILL", syscall(SYS_rt_sigaction, 9, bad, 0, 8));
    TRY("mmap zero length", (long)syscall(SYS_mmap, 0, 0, 3, 0x22, -1, 0));
    TRY("unknown call 999", syscall(999));
    TRY("unknown call 500", syscall(500, 1, 2, 3));
    printf("still running\n");
    return 0;
}
