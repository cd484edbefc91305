/* lx-at: the *at calls with a real directory descriptor (not AT_FDCWD):
 * openat, mkdirat, newfstatat, faccessat, renameat, unlinkat, statx,
 * readlinkat, fchdir; a file descriptor as dirfd is ENOTDIR, a bad one
 * EBADF; an absolute path ignores dirfd; umask applies to the modes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* struct statx (Linux include/uapi/linux/stat.h), the fields used here;
 * called through syscall(2), which every libc has. */
struct lx_statx {
    unsigned mask, blksize;
    unsigned long long attributes;
    unsigned nlink, uid, gid;
    unsigned short mode, pad;
    unsigned long long ino, size, blocks, attributes_mask;
    char rest[256 - 64];
};
#define LX_STATX_BASIC_STATS 0x7ffu
static int lx_statx(int dir, const char *path, int flags, struct lx_statx *sx) {
    return (int)syscall(SYS_statx, dir, path, flags, LX_STATX_BASIC_STATS, sx);
}

static void r(const char *what, int v) {
    printf("%s: %s\n", what, v < 0 ? strerror(errno) : "ok");
}

int main(void) {
    umask(022);
    mkdir("atdir", 0777);
    int d = open("atdir", O_RDONLY | O_DIRECTORY);
    r("open dir", d);
    int f = openat(d, "file", O_CREAT | O_WRONLY, 0666);
    r("openat", f);
    write(f, "twelve bytes", 12);
    close(f);
    r("mkdirat", mkdirat(d, "sub", 0777));
    struct stat st;
    r("fstatat file", fstatat(d, "file", &st, 0));
    printf("size %lld mode %o\n", (long long)st.st_size, st.st_mode & 07777);
    r("fstatat sub", fstatat(d, "sub", &st, 0));
    printf("dir %d mode %o\n", S_ISDIR(st.st_mode), st.st_mode & 07777);
    r("faccessat", faccessat(d, "file", R_OK, 0));
    r("faccessat missing", faccessat(d, "nothing", R_OK, 0));
    r("renameat", renameat(d, "file", d, "sub/moved"));
    int sub = openat(d, "sub", O_RDONLY | O_DIRECTORY);
    r("openat sub", sub);
    struct lx_statx sx;
    r("statx", lx_statx(sub, "moved", 0, &sx));
    printf("statx size %llu regular %d\n", (unsigned long long)sx.size, S_ISREG(sx.mode));
    r("statx empty path", lx_statx(sub, "", AT_EMPTY_PATH, &sx));
    printf("statx of the dir itself: dir %d\n", S_ISDIR(sx.mode));
    char buf[64];
    r("readlinkat of a file", (int)readlinkat(sub, "moved", buf, sizeof buf));
    int file = openat(sub, "moved", O_RDONLY);
    r("openat as dirfd of a file", openat(file, "x", O_RDONLY));
    r("openat bad dirfd", openat(999, "x", O_RDONLY));
    r("absolute path ignores dirfd", fstatat(file, "/", &st, 0));
    close(file);
    r("fchdir", fchdir(sub));
    r("stat after fchdir", stat("moved", &st));
    r("chdir back", chdir(".."));
    r("unlinkat", unlinkat(d, "sub/moved", 0));
    r("unlinkat dir without AT_REMOVEDIR", unlinkat(d, "sub", 0));
    r("unlinkat AT_REMOVEDIR", unlinkat(d, "sub", AT_REMOVEDIR));
    close(sub);
    close(d);
    umask(077);
    f = open("masked", O_CREAT | O_WRONLY, 0666);
    fstat(f, &st);
    printf("umask 077: mode %o\n", st.st_mode & 07777);
    close(f);
    unlink("masked");
    r("chdir ..", chdir(".."));
    rmdir("atdir");
    return 0;
}
