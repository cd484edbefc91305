/* lx-files: file I/O through the Linux calls: openat, write, lseek, read,
 * pread, fstat, newfstatat, dup, rename, unlink, mkdir, getcwd, chdir. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
