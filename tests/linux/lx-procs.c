/* lx-procs: fork, execve, wait4 and pipes: a tree of children, each
 * exiting with its own status, one of them exec'ing busybox; a pipe from
 * a child to its parent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    fflush(stdout);
    for (int i = 1; i <= 3; i++) {
        pid_t p = fork();
        if (p == 0) {
            if (i == 2) {
                pid_t q = fork();
                if (q == 0) _exit(40);
                int s;
                waitpid(q, &s, 0);
                _exit(20 + WEXITSTATUS(s) / 10);
            }
            _exit(10 * i);
        }
        int status;
        pid_t got = waitpid(p, &status, 0);
        printf("child %d: waited %d, exited %d with %d\n", i, got == p, WIFEXITED(status), WEXITSTATUS(status));
    }
    int fds[2];
    if (pipe(fds) != 0) { perror("pipe"); return 1; }
    pid_t w = fork();
    if (w == 0) {
        close(fds[0]);
        const char *m = "through the pipe\n";
        write(fds[1], m, strlen(m));
        _exit(0);
    }
    close(fds[1]);
    char buf[64] = {0};
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    printf("parent read %zd: %s", n, buf);
    printf("then end of file: %zd\n", read(fds[0], buf, sizeof buf));
    waitpid(w, NULL, 0);
    fflush(stdout);
    pid_t e = fork();
    if (e == 0) {
        char *argv[] = {"busybox", "echo", "exec'd busybox", NULL};
        execvp("busybox", argv);
        _exit(127);
    }
    int s;
    waitpid(e, &s, 0);
    printf("exec child exited %d\n", WEXITSTATUS(s));
    printf("no more children: %d\n", wait(NULL));
    return 0;
}
