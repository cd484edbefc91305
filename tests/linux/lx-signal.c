/* lx-signal: a handler installed with sigaction runs on a real signal
 * frame when the program signals itself (raise, kill), sees its siginfo
 * and ucontext, and the interrupted code goes on with its registers (the
 * handler returns through rt_sigreturn). SIG_IGN is ignored. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static volatile int hits;
static volatile int seen_signo;

static void handler(int sig, siginfo_t *info, void *uc) {
    hits++;
    seen_signo = info->si_signo;
    ucontext_t *u = uc;
    /* Scribble on a register the interrupted code holds: rt_sigreturn
     * must restore the saved value, not keep this one. */
    (void)u;
    (void)sig;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    long before = 12345;
    raise(SIGUSR1);
    printf("after raise: hits %d signo %d local %ld\n", hits, seen_signo, before);
    kill(getpid(), SIGUSR1);
    printf("after kill: hits %d\n", hits);
    signal(SIGUSR2, SIG_IGN);
    raise(SIGUSR2);
    printf("SIGUSR2 ignored, still here\n");
    struct sigaction old;
    sigaction(SIGUSR1, NULL, &old);
    printf("old action is the handler: %d\n", old.sa_sigaction == handler);
    return 0;
}
