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

#include <stdint.h>

static volatile int hits;
static char alt[65536];
static volatile int on_alt, alt_flags, reset_hits;

static void alt_handler(int sig) {
    (void)sig;
    char here;
    on_alt = (uintptr_t)&here > (uintptr_t)alt && (uintptr_t)&here < (uintptr_t)alt + sizeof alt;
    stack_t now;
    sigaltstack(NULL, &now);
    alt_flags = now.ss_flags;
}

static void reset_handler(int sig) {
    (void)sig;
    reset_hits++;
}
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

    /* SA_ONSTACK: the handler runs on the alternate stack, and
     * sigaltstack says so there. */
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = alt_handler;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR2, &sa, NULL);
    raise(SIGUSR2);
    printf("SA_ONSTACK: on the alternate stack %d, SS_ONSTACK %d\n", on_alt, alt_flags == SS_ONSTACK);
    stack_t back;
    sigaltstack(NULL, &back);
    printf("after: alternate stack kept %d, not on it %d\n", back.ss_sp == alt, back.ss_flags == 0);

    /* SA_RESETHAND: the first delivery puts the default action back. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = reset_handler;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGURG, &sa, NULL);
    raise(SIGURG);
    sigaction(SIGURG, NULL, &old);
    printf("SA_RESETHAND: ran %d, action now default %d\n", reset_hits, old.sa_handler == SIG_DFL);
    raise(SIGURG); /* default for SIGURG: ignored */
    printf("SIGURG default ignored, ran %d\n", reset_hits);
    return 0;
}
