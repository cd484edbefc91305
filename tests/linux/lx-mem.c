/* lx-mem: memory calls that give memory back or take rights away
 * (docs/linux-abi.md "Memory"): 16 rounds of mapping, touching and
 * unmapping 64 MiB (1 GiB in all: more than the test machine has, so the
 * loop ends only if munmap really returns the pages), a reused range
 * coming back zero-filled, mprotect(PROT_READ) making a write end the
 * process with SIGSEGV (in a forked child), a MAP_SHARED file mapping
 * whose writes reach the file at msync and at munmap, and brk shrunk
 * giving its pages back (grown again, they read zero). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUND_BYTES (64UL << 20)
#define ROUNDS 16
#define PAGE 4096UL

static void rounds(void) {
    for (int r = 0; r < ROUNDS; r++) {
        unsigned char *p = mmap(NULL, ROUND_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            printf("round %d: mmap failed\n", r);
            return;
        }
        for (unsigned long at = 0; at < ROUND_BYTES; at += PAGE) {
            if (p[at] != 0) {
                printf("round %d: a fresh page is not zero\n", r);
                return;
            }
            p[at] = (unsigned char)(r + 1);
        }
        if (munmap(p, ROUND_BYTES) != 0) {
            printf("round %d: munmap failed\n", r);
            return;
        }
    }
    printf("%d rounds of 64 MiB mapped, touched and unmapped\n", ROUNDS);
}

static void partial(void) {
    char *p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p, 'x', 4 * PAGE);
    printf("munmap of the middle two pages: %d\n", munmap(p + PAGE, 2 * PAGE));
    char *q = mmap(p + PAGE, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    printf("mapped there again: %s, zero-filled: %s, neighbours kept: %s\n", q == p + PAGE ? "yes" : "no",
           q[0] == 0 && q[2 * PAGE - 1] == 0 ? "yes" : "no", p[0] == 'x' && p[4 * PAGE - 1] == 'x' ? "yes" : "no");
    printf("munmap, unaligned: %d\n", munmap(p + 1, PAGE));
    printf("munmap, empty: %d\n", munmap(p, 0));
    munmap(p, 4 * PAGE);
}

static void protect(void) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        char *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        p[0] = 'a';
        if (mprotect(p, 2 * PAGE, PROT_READ) != 0) _exit(3);
        printf("child: read '%c' after PROT_READ; the second page reads %d\n", p[0], p[PAGE]);
        if (mprotect(p, PAGE, PROT_READ | PROT_WRITE) != 0) _exit(4);
        p[0] = 'b';
        printf("child: wrote '%c' after PROT_READ|PROT_WRITE; now a write to the read-only page\n", p[0]);
        fflush(stdout);
        ((volatile char *)p)[PAGE] = 'c';
        _exit(5);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (WIFSIGNALED(status))
        printf("child ended by signal %d (SIGSEGV is %d)\n", WTERMSIG(status), SIGSEGV);
    else
        printf("child exited %d\n", WEXITSTATUS(status));
    printf("mprotect, unaligned: %d\n", mprotect((void *)(PAGE + 1), PAGE, PROT_READ));
    printf("mprotect, unknown bits: %d\n", mprotect((void *)PAGE, PAGE, 0x40));
}

static void shared_file(void) {
    int fd = open("lx-mem.data", O_RDWR | O_CREAT | O_TRUNC, 0644);
    char text[] = "0123456789abcdef";
    write(fd, text, 16);
    char *p = mmap(NULL, 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        printf("MAP_SHARED mmap failed\n");
        return;
    }
    close(fd); /* the mapping keeps the file */
    memcpy(p, "ABCD", 4);
    printf("msync: %d\n", msync(p, 16, MS_SYNC));
    char back[17] = {0};
    fd = open("lx-mem.data", O_RDONLY);
    read(fd, back, 16);
    close(fd);
    printf("after msync the file holds %s\n", back);
    memcpy(p + 12, "WXYZ", 4);
    printf("munmap: %d\n", munmap(p, 16));
    fd = open("lx-mem.data", O_RDONLY);
    memset(back, 0, sizeof back);
    ssize_t n = read(fd, back, 16);
    ssize_t more = read(fd, back + 16, 1);
    printf("after munmap the file holds %s (%zd bytes, then %zd: not grown)\n", back, n, more);
    close(fd);
    unlink("lx-mem.data");
}

/* brk shrunk gives its pages back: grown again, they read zero (the raw
 * call: musl's brk() always fails). */
static void shrink_brk(void) {
    char *base = (char *)syscall(SYS_brk, 0);
    if ((char *)syscall(SYS_brk, base + 64 * PAGE) != base + 64 * PAGE) {
        printf("brk up failed\n");
        return;
    }
    memset(base, 'z', 64 * PAGE);
    syscall(SYS_brk, base);
    syscall(SYS_brk, base + 64 * PAGE);
    int zero = 1;
    for (unsigned long at = 0; at < 64 * PAGE; at += PAGE) zero &= base[at] == 0;
    printf("brk shrunk and grown again reads zero: %s\n", zero ? "yes" : "no");
    syscall(SYS_brk, base);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    rounds();
    shrink_brk();
    partial();
    protect();
    shared_file();
    return 0;
}
