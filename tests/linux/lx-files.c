/* lx-files: file I/O through the Linux calls: openat, write, lseek, read,
 * pread, pwrite, preadv, pwritev (the offset left where it was; ESPIPE on
 * a pipe; O_APPEND appends), fstat, newfstatat, dup, rename, unlink,
 * mkdir, getcwd, chdir. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* The call's result and then its errno (a printf's arguments are
 * evaluated in no set order). */
static void outcome(const char *what, ssize_t r) {
    int e = r < 0 ? errno : 0;
    printf("%s: %zd errno %d\n", what, r, e);
}

int main(void) {
    int fd = open("data.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0) { perror("open"); return 1; }
    const char *text = "0123456789abcdefghij";
    printf("write %zd\n", write(fd, text, strlen(text)));
    printf("lseek %ld\n", (long)lseek(fd, 5, SEEK_SET));
    char buf[32] = {0};
    printf("read %zd: %s\n", read(fd, buf, 6), buf);
    memset(buf, 0, sizeof buf);
    printf("pread %zd: %s\n", pread(fd, buf, 4, 10), buf);
    printf("pwrite %zd, offset still %ld\n", pwrite(fd, "XY", 2, 2), (long)lseek(fd, 0, SEEK_CUR));
    memset(buf, 0, sizeof buf);
    printf("pread after pwrite %zd: %s\n", pread(fd, buf, 6, 0), buf);
    char v1[4] = {0}, v2[5] = {0};
    struct iovec rv[2] = {{v1, 3}, {v2, 4}};
    printf("preadv %zd: %s %s\n", preadv(fd, rv, 2, 12), v1, v2);
    struct iovec wv[2] = {{"pq", 2}, {"rst", 3}};
    printf("pwritev %zd, offset still %ld\n", pwritev(fd, wv, 2, 15), (long)lseek(fd, 0, SEEK_CUR));
    memset(buf, 0, sizeof buf);
    printf("pread after pwritev %zd: %s\n", pread(fd, buf, 20, 0), buf);
    outcome("pread at -1", pread(fd, buf, 1, -1));
    outcome("pwrite at -1", pwrite(fd, "z", 1, -1));
    outcome("pread of fd 99", pread(99, buf, 1, 0));
    int pfd[2];
    if (pipe(pfd) == 0) {
        outcome("pread of a pipe", pread(pfd[0], buf, 1, 0));
        outcome("pwrite of a pipe", pwrite(pfd[1], "p", 1, 0));
        outcome("pwritev of a pipe", pwritev(pfd[1], wv, 2, 0));
        close(pfd[0]);
        close(pfd[1]);
    }
    int afd = open("data.txt", O_WRONLY | O_APPEND);
    printf("pwrite O_APPEND %zd\n", pwrite(afd, "END", 3, 0));
    close(afd);
    memset(buf, 0, sizeof buf);
    printf("after the append %zd: %s\n", pread(fd, buf, 30, 0), buf);
    struct stat st;
    fstat(fd, &st);
    printf("fstat size %ld regular %d\n", (long)st.st_size, S_ISREG(st.st_mode));
    int fd2 = dup(fd);
    printf("dup gives a new fd: %d\n", fd2 > fd);
    close(fd2);
    close(fd);
    printf("rename %d\n", rename("data.txt", "moved.txt"));
    printf("stat old: %d errno %d\n", stat("data.txt", &st), errno);
    printf("stat new: %d size %ld\n", stat("moved.txt", &st), (long)st.st_size);
    printf("mkdir %d\n", mkdir("sub", 0755));
    printf("chdir %d\n", chdir("sub"));
    char cwd[256];
    printf("cwd ends in /sub: %d\n", getcwd(cwd, sizeof cwd) && strcmp(cwd + strlen(cwd) - 4, "/sub") == 0);
    chdir("..");
    printf("unlink %d\n", unlink("moved.txt"));
    printf("rmdir %d\n", rmdir("sub"));
    printf("open missing: %d errno %d\n", open("missing", O_RDONLY), errno);
    return 0;
}
