/* lx-sigipc: signals between processes. A signal another process sends
 * runs this program's handler; a blocked one waits as pending (sigpending)
 * and runs when sigprocmask unblocks it, before the call returns;
 * sigsuspend waits for it atomically; SIGCHLD arrives when a child ends;
 * nanosleep and pause are interrupted (EINTR, nanosleep's time left); a
 * SA_RESTART handler lets an interrupted read go on; a blocked signal
 * whose default action ends the process ends it once unblocked. Every
 * wait is for an event, never for a time, so the output does not depend
 * on speed. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1, usr2, chld;

static void on_usr1(int s) { (void)s; usr1++; }
static void on_usr2(int s) { (void)s; usr2++; }
static void on_chld(int s) { (void)s; chld++; }
static volatile sig_atomic_t alrm, piped;
static void on_pipe(int s) { (void)s; piped++; }
static void on_alrm(int s) { (void)s; alrm++; }

static void handle(int sig, void (*fn)(int), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_flags = flags;
    sigaction(sig, &sa, NULL);
}

static void block(int how, int sig) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(how, &s, NULL);
}

static void status(const char *what, int st) {
    if (WIFEXITED(st))
        printf("%s: exit %d\n", what, WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        printf("%s: killed by signal %d\n", what, WTERMSIG(st));
}

/* Send `sig` to `child` until it writes a byte on `fd` (it is ready for
 * the next step only once the signal interrupted what it waits in). */
static void prod_until_answer(pid_t child, int sig, int fd) {
    for (;;) {
        kill(child, sig);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) > 0)
            return;
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    handle(SIGUSR1, on_usr1, 0);
    handle(SIGUSR2, on_usr2, 0);

    /* 1. A blocked signal from a child waits, then runs at unblock. */
    block(SIG_BLOCK, SIGUSR1);
    pid_t c = fork();
    if (c == 0) {
        kill(getppid(), SIGUSR1);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    sigset_t pend;
    sigpending(&pend);
    printf("blocked: handler ran %d times, pending %d\n", usr1, sigismember(&pend, SIGUSR1));
    block(SIG_UNBLOCK, SIGUSR1);
    printf("unblocked: handler ran %d times\n", usr1);

    /* 2. sigsuspend: the child signals once it has started; the mask
     * keeps the signal out until sigsuspend opens it. */
    block(SIG_BLOCK, SIGUSR2);
    c = fork();
    if (c == 0) {
        kill(getppid(), SIGUSR2);
        _exit(0);
    }
    sigset_t none;
    sigemptyset(&none);
    while (!usr2)
        sigsuspend(&none);
    waitpid(c, &st, 0);
    printf("sigsuspend: woken by SIGUSR2 (%d)\n", usr2);
    block(SIG_UNBLOCK, SIGUSR2);

    /* 3. SIGCHLD when a child ends. */
    handle(SIGCHLD, on_chld, 0);
    block(SIG_BLOCK, SIGCHLD);
    c = fork();
    if (c == 0)
        _exit(7);
    while (!chld)
        sigsuspend(&none);
    waitpid(c, &st, 0);
    status("SIGCHLD came; child", st);
    block(SIG_UNBLOCK, SIGCHLD);
    handle(SIGCHLD, SIG_DFL, 0);

    /* 4. nanosleep interrupted by a signal from the parent. */
    int fds[2];
    pipe(fds);
    c = fork();
    if (c == 0) {
        struct timespec t = {.tv_sec = 600}, rem = {0};
        int r = nanosleep(&t, &rem);
        int ok = r == -1 && errno == EINTR && rem.tv_sec > 0 && rem.tv_sec <= 600;
        printf("child: nanosleep interrupted: %d, handler ran: %d\n", ok, usr1 > 1);
        write(fds[1], "x", 1);
        _exit(0);
    }
    prod_until_answer(c, SIGUSR1, fds[0]);
    waitpid(c, &st, 0);
    status("nanosleep child", st);
    char b;
    read(fds[0], &b, 1);

    /* 5. pause interrupted. */
    c = fork();
    if (c == 0) {
        int r = pause();
        printf("child: pause returned %d, EINTR: %d\n", r, errno == EINTR);
        write(fds[1], "x", 1);
        _exit(0);
    }
    prod_until_answer(c, SIGUSR2, fds[0]);
    waitpid(c, &st, 0);
    status("pause child", st);
    read(fds[0], &b, 1);

    /* 6. SA_RESTART: a read interrupted by a handled signal goes on and
     * returns the data that comes later. */
    int data[2];
    pipe(data);
    c = fork();
    if (c == 0) {
        handle(SIGUSR1, on_usr1, SA_RESTART);
        usr1 = 0;
        write(fds[1], "r", 1);
        char got[8] = {0};
        ssize_t n = read(data[0], got, sizeof got - 1);
        printf("child: read after SA_RESTART handler: %zd '%s' (handler ran: %d)\n", n, got, usr1 > 0);
        _exit(0);
    }
    read(fds[0], &b, 1); /* the child is about to read */
    kill(c, SIGUSR1);
    /* The data comes after the signal was sent: the handler runs first,
     * and the read, restarted, returns the data (EINTR would be wrong). */
    write(data[1], "data", 4);
    waitpid(c, &st, 0);
    status("restart child", st);

    /* 7. A blocked SIGTERM (default action) waits, then ends the child. */
    c = fork();
    if (c == 0) {
        block(SIG_BLOCK, SIGTERM);
        write(fds[1], "b", 1);
        sigset_t p;
        do {
            sigpending(&p);
        } while (!sigismember(&p, SIGTERM));
        printf("child: SIGTERM pending while blocked\n");
        block(SIG_UNBLOCK, SIGTERM);
        printf("child: still alive (wrong)\n");
        _exit(0);
    }
    read(fds[0], &b, 1);
    kill(c, SIGTERM);
    waitpid(c, &st, 0);
    status("blocked SIGTERM child", st);

    /* 8. alarm: SIGALRM ends a pause; a second alarm returns the
     * seconds the first had left. */
    handle(SIGALRM, on_alrm, 0);
    alarm(5);
    unsigned left = alarm(1);
    int r = pause();
    printf("alarm: handler ran %d, pause %d, the first alarm had %u s left\n", alrm, r, left);

    /* 9. SIGPIPE: a write with no reader left runs the handler before it
     * returns EPIPE. */
    handle(SIGPIPE, on_pipe, 0);
    int np[2];
    pipe(np);
    close(np[0]);
    errno = 0;
    ssize_t w = write(np[1], "x", 1);
    printf("SIGPIPE: handler ran %d before write returned %zd (EPIPE %d)\n", piped, w, errno == EPIPE);
    close(np[1]);

    /* 10. An ignored signal from another process does nothing. */
    signal(SIGUSR1, SIG_IGN);
    c = fork();
    if (c == 0) {
        kill(getppid(), SIGUSR1);
        _exit(0);
    }
    waitpid(c, &st, 0);
    printf("ignored SIGUSR1: still here\n");
    return 0;
}
