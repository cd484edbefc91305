/* lx-fpsig: x87/SSE registers survive a signal handler. The interrupted
 * code holds values in xmm registers and the x87 stack and has changed
 * MXCSR's rounding mode; the handler computes with SSE and x87 (and sets
 * its own rounding mode) and returns; rt_sigreturn must put the
 * interrupted code's registers back from the frame's fpstate. The
 * handler itself must start with the default rounding mode. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <xmmintrin.h>

static volatile double sink;
static volatile unsigned handler_mxcsr;

static void handler(int sig) {
    (void)sig;
    handler_mxcsr = _mm_getcsr() & 0x6000; /* rounding control */
    _mm_setcsr((_mm_getcsr() & ~0x6000u) | 0x2000); /* round down */
    double a = 1.0;
    for (int i = 0; i < 50; i++)
        a = a * 1.5 + 0.25;
    long double x = 3.0L;
    for (int i = 0; i < 10; i++)
        x = x * x / 2.0L + 1.0L;
    sink = a + (double)x;
    /* Clobber every xmm register the caller might hold. */
    __asm__ volatile("xorps %%xmm0,%%xmm0; xorps %%xmm1,%%xmm1; xorps %%xmm2,%%xmm2;"
                     "xorps %%xmm3,%%xmm3; xorps %%xmm4,%%xmm4; xorps %%xmm5,%%xmm5;"
                     "xorps %%xmm6,%%xmm6; xorps %%xmm7,%%xmm7; xorps %%xmm8,%%xmm8;"
                     "xorps %%xmm15,%%xmm15" ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4",
                     "xmm5", "xmm6", "xmm7", "xmm8", "xmm15");
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigaction(SIGUSR1, &sa, NULL);

    /* Round toward zero in the interrupted code. */
    _mm_setcsr((_mm_getcsr() & ~0x6000u) | 0x6000);
    double in0 = 1.25, in1 = -2.5, out0, out1;
    long double st_in = 7.0L, st_out;
    /* Values in xmm0/xmm1 and on the x87 stack across the kill call,
     * which the handler interrupts. */
    __asm__ volatile("movsd %[a], %%xmm0\n\t"
                     "movsd %[b], %%xmm1\n\t"
                     "fldt %[s]\n\t"
                     "mov $62, %%eax\n\t" /* kill(getpid(), SIGUSR1) */
                     "mov %[pid], %%edi\n\t"
                     "mov $10, %%esi\n\t"
                     "syscall\n\t"
                     "movsd %%xmm0, %[o0]\n\t"
                     "movsd %%xmm1, %[o1]\n\t"
                     "fstpt %[so]\n\t"
                     : [o0] "=m"(out0), [o1] "=m"(out1), [so] "=m"(st_out)
                     : [a] "m"(in0), [b] "m"(in1), [s] "m"(st_in), [pid] "r"((int)getpid())
                     : "rax", "rdi", "rsi", "rcx", "r11", "xmm0", "xmm1", "memory");
    unsigned mode = _mm_getcsr() & 0x6000;
    printf("xmm0 kept: %d, xmm1 kept: %d, x87 top kept: %d\n", out0 == 1.25, out1 == -2.5, st_out == 7.0L);
    printf("rounding mode kept: %d, handler started with the default: %d\n", mode == 0x6000,
           handler_mxcsr == 0);
    _mm_setcsr(_mm_getcsr() & ~0x6000u);
    printf("handler computed: %d\n", sink > 1000.0);
    return 0;
}
