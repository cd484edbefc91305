# The C programs of tests/linux, built with musl-gcc -static, run by
# Debian's busybox sh; the host runs the same script with the same
# programs: the outputs must be equal.
LX_MARK=exported; export LX_MARK
lx-hello one 'two words'; echo "status $?"
lx-files; echo "status $?"
lx-procs; echo "status $?"
lx-mmap; echo "status $?"
lx-dents; echo "status $?"
lx-bad 2>/dev/null; echo "status $?"
lx-signal; echo "status $?"
lx-sigipc; echo "status $?"
lx-fpsig; echo "status $?"
lx-poll; echo "status $?"
lx-at; echo "status $?"
lx-cloexec; echo "status $?"
