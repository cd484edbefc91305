/* lx-cloexec: close-on-exec across execve: descriptors opened with
 * O_CLOEXEC, made by pipe2(O_CLOEXEC), dup3(O_CLOEXEC) and
 * fcntl(F_DUPFD_CLOEXEC), or marked with F_SETFD are closed in the new
 * program; the others stay open; F_GETFD reports the flag. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *names[] = {"plain", "O_CLOEXEC", "pipe2 read", "pipe2 write", "dup3", "F_DUPFD_CLOEXEC",
                              "F_SETFD", "F_SETFD cleared"};
#define N 8

int main(int argc, char **argv) {
    if (argc > 1) {
        for (int i = 0; i < N; i++) {
            int fd = atoi(argv[1 + i]);
            printf("after exec, %s: %s\n", names[i], fcntl(fd, F_GETFD) < 0 ? "closed" : "open");
        }
        return 0;
    }
    int fd[N];
    fd[0] = open("/", O_RDONLY);
    fd[1] = open("/", O_RDONLY | O_CLOEXEC);
    int p[2];
    pipe2(p, O_CLOEXEC);
    fd[2] = p[0];
    fd[3] = p[1];
    fd[4] = dup3(fd[0], 20, O_CLOEXEC);
    fd[5] = fcntl(fd[0], F_DUPFD_CLOEXEC, 30);
    fd[6] = dup(fd[0]);
    fcntl(fd[6], F_SETFD, FD_CLOEXEC);
    fd[7] = dup(fd[1]);
    fcntl(fd[7], F_SETFD, FD_CLOEXEC);
    fcntl(fd[7], F_SETFD, 0);
    char args[N][16];
    char *av[N + 2];
    av[0] = argv[0];
    for (int i = 0; i < N; i++) {
        printf("before exec, %s: FD_CLOEXEC %d\n", names[i], fcntl(fd[i], F_GETFD) & FD_CLOEXEC);
        snprintf(args[i], sizeof args[i], "%d", fd[i]);
        av[1 + i] = args[i];
    }
    av[N + 1] = NULL;
    fflush(stdout);
    execv("/proc/self/exe", av);
    perror("execv");
    return 1;
}
