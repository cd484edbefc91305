/* lx-poll: poll and ppoll over pipes and files: an empty pipe is not
 * readable and times out, its write end is writable; once written the
 * read end is readable; a closed write end is POLLHUP; a regular file
 * is always ready; a negative fd is left out; a closed fd is POLLNVAL;
 * ppoll takes a timespec and a signal mask. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static void show(const char *what, int n, struct pollfd *p, int count) {
    printf("%s: %d ready;", what, n);
    for (int i = 0; i < count; i++)
        printf(" [%d] %s%s%s%s", i, p[i].revents & POLLIN ? "in " : "", p[i].revents & POLLOUT ? "out " : "",
               p[i].revents & POLLHUP ? "hup " : "", p[i].revents & POLLNVAL ? "nval " : "");
    printf("\n");
}

int main(void) {
    int fds[2];
    pipe(fds);
    struct pollfd p[4] = {{.fd = fds[0], .events = POLLIN}, {.fd = fds[1], .events = POLLOUT}};
    show("empty pipe, timeout 0", poll(p, 2, 0), p, 2);
    p[1].fd = -1;
    show("empty pipe, 20 ms", poll(p, 2, 20), p, 2);
    write(fds[1], "hello", 5);
    show("written", poll(p, 1, -1), p, 1);
    char b[8];
    read(fds[0], b, sizeof b);
    close(fds[1]);
    show("writer closed", poll(p, 1, 1000), p, 1);

    int f = open("lx-poll.tmp", O_CREAT | O_RDWR | O_TRUNC, 0644);
    int gone = dup(f);
    close(gone);
    p[0] = (struct pollfd){.fd = f, .events = POLLIN | POLLOUT};
    p[1] = (struct pollfd){.fd = gone, .events = POLLIN};
    show("file and closed fd", poll(p, 2, 1000), p, 2);
    close(f);
    unlink("lx-poll.tmp");

    int q[2];
    pipe(q);
    struct timespec t = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGUSR1);
    p[0] = (struct pollfd){.fd = q[0], .events = POLLIN};
    show("ppoll 10 ms with a mask", ppoll(p, 1, &t, &mask), p, 1);
    write(q[1], "x", 1);
    show("ppoll readable", ppoll(p, 1, NULL, NULL), p, 1);
    return 0;
}
