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
    TRY("rt_sigaction bad act", syscall(SYS_rt_sigaction, 10, bad, 0, 8));
    TRY("rt_sigaction bad signal", syscall(SYS_rt_sigaction, 65, 0, 0, 8));
    TRY("rt_sigaction bad setsize", syscall(SYS_rt_sigaction, 10, 0, 0, 4));
    TRY("rt_sigprocmask bad how", syscall(SYS_rt_sigprocmask, 7, (long[1]){0}, 0, 8));
    TRY("rt_sigprocmask bad set", syscall(SYS_rt_sigprocmask, 0, bad, 0, 8));
    TRY("rt_sigprocmask bad setsize", syscall(SYS_rt_sigprocmask, 0, 0, 0, 16));
    TRY("rt_sigsuspend bad mask", syscall(SYS_rt_sigsuspend, bad, 8));
    TRY("rt_sigsuspend bad setsize", syscall(SYS_rt_sigsuspend, (long[1]){0}, 4));
    TRY("sigaltstack bad pointer", syscall(SYS_sigaltstack, bad, 0));
    TRY("sigaltstack bad flags", syscall(SYS_sigaltstack, (long[3]){0x10000, 77, 65536}, 0));
    TRY("sigaltstack too small", syscall(SYS_sigaltstack, (long[3]){0x10000, 0, 100}, 0));
    TRY("kill bad signal", syscall(SYS_kill, getpid(), 65));
    TRY("poll bad array", syscall(SYS_poll, bad, 2, 0));
    TRY("poll too many", syscall(SYS_poll, bad, 1 << 24, 0));
    TRY("ppoll bad timespec", syscall(SYS_ppoll, (long[1]){0}, 0, (long[2]){0, 2000000000L}, 0, 8));
    TRY("ppoll bad setsize", syscall(SYS_ppoll, (long[1]){0}, 0, (long[2]){0, 0}, (long[1]){0}, 4));
    TRY("statx bad buffer", syscall(SYS_statx, AT_FDCWD, ".", 0, 0x7ff, bad));
    TRY("statx bad dirfd", syscall(SYS_statx, 999, "x", 0, 0x7ff, (char[256]){0}));
    TRY("openat file as dirfd", syscall(SYS_openat, fd, "x", O_RDONLY));
    TRY("fcntl F_GETFD bad fd", syscall(SYS_fcntl, 999, F_GETFD));
    TRY("dup3 same fds", syscall(SYS_dup3, fd, fd, O_CLOEXEC));
    TRY("dup3 bad flags", syscall(SYS_dup3, fd, 40, 1));
    TRY("clock_nanosleep bad flags", syscall(SYS_clock_nanosleep, 1, 8, (long[2]){0, 0}, 0));
    TRY("setitimer bad which", syscall(SYS_setitimer, 7, (long[4]){0}, 0));
    TRY("setitimer bad pointer", syscall(SYS_setitimer, 0, bad, 0));
    TRY("setitimer bad usec", syscall(SYS_setitimer, 0, (long[4]){0, 0, 1, 2000000}, 0));
    TRY("getitimer bad pointer", syscall(SYS_getitimer, 0, bad));
    TRY("mmap zero length", (long)syscall(SYS_mmap, 0, 0, 3, 0x22, -1, 0));
    TRY("unknown call 999", syscall(999));
    TRY("unknown call 500", syscall(500, 1, 2, 3));
    printf("still running\n");
    return 0;
}
