# Sockets from a Linux program (lx-net.c, built with musl-gcc -static):
# TCP echo over loopback between a forked client and server, a UDP round
# trip, a connect to a closed port, options and bad input. The host runs
# the same script: the outputs must be equal.
lx-net; echo "status $?"
