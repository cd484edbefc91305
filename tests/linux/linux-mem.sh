# Memory calls from a Linux program (lx-mem.c): munmap giving pages back
# (1 GiB mapped and unmapped in 64 MiB rounds), mprotect, MAP_SHARED
# write-back. The host runs the same script: the outputs must be equal.
lx-mem; echo "status $?"
