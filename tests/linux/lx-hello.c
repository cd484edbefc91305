/* lx-hello: the smallest Linux program: start-up stack (argc, argv,
 * envp, auxv), TLS set-up (arch_prctl), stdio (writev, ioctl) and exit. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(int argc, char **argv) {
    printf("hello from a Linux program, argc %d\n", argc);
    for (int i = 1; i < argc; i++) printf("argv[%d] = %s\n", i, argv[i]);
    printf("AT_PAGESZ %lu\n", getauxval(AT_PAGESZ));
    printf("AT_RANDOM given: %s\n", getauxval(AT_RANDOM) ? "yes" : "no");
    printf("AT_ENTRY given: %s\n", getauxval(AT_ENTRY) ? "yes" : "no");
    printf("HOME set: %s\n", getenv("LX_MARK") ? getenv("LX_MARK") : "(unset)");
    return 7;
}
