/* lx-mmap: anonymous memory (malloc of large blocks), brk, and a private
 * mapping of a file. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
    int fd = open("mapped.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
    const char *text = "mapped file contents\n";
    write(fd, text, strlen(text));
    char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 1; }
    printf("mapped: %s", p);
    p[0] = 'M';
    printf("private write: %.6s\n", p);
    close(fd);
    char *big = malloc(3 << 20);
    memset(big, 7, 3 << 20);
    long sum = 0;
    for (int i = 0; i < (3 << 20); i += 4096) sum += big[i];
    printf("3 MiB block: %ld\n", sum);
    free(big);
    char *anon = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("anonymous memory starts zeroed: %d\n", anon[0] == 0 && anon[(1 << 16) - 1] == 0);
    unlink("mapped.txt");
    return 0;
}
