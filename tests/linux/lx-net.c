/* lx-net: sockets from a Linux program (docs/linux-abi.md "Sockets"):
 * a TCP echo over loopback between a forked client and the server
 * (accept4, sendmsg/recvmsg with two iovecs, read/write, shutdown,
 * getsockname/getpeername, options), a UDP round trip (sendto/recvfrom,
 * poll, a connected datagram socket), a connect to a closed port
 * (ECONNREFUSED), and bad input answered with Linux's errno. Nothing
 * printed depends on port numbers or timing, so the host's output is the
 * expected one. `lx-net client PORT` is the Linux end of a mixed test
 * with Ridgeback's `nc` (xtask/src/test/linux.rs). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *err(void) {
    switch (errno) {
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EINVAL: return "EINVAL";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case EADDRINUSE: return "EADDRINUSE";
    case EAGAIN: return "EAGAIN";
    case EFAULT: return "EFAULT";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ENOTSOCK: return "ENOTSOCK";
    case EBADF: return "EBADF";
    case ENOPROTOOPT: return "ENOPROTOOPT";
    default: return strerror(errno);
    }
}

static void show(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, err());
    else
        printf("%s: %ld\n", what, r);
}

static struct sockaddr_in loopback(unsigned short port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static unsigned short port_of(int s) {
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    if (getsockname(s, (struct sockaddr *)&a, &len) < 0) return 0;
    return ntohs(a.sin_port);
}

static int is_loopback(const struct sockaddr_in *a) {
    return a->sin_family == AF_INET && a->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
}

static const char REQUEST[] = "ping over tcp\npart one, part two\n";

/* The client, in the forked child: its result is its exit status. */
static int client(unsigned short port) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = loopback(port);
    if (c < 0 || connect(c, (struct sockaddr *)&to, sizeof to) < 0) return 10;
    int one = 1;
    if (setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) return 11;
    if (write(c, "ping over tcp\n", 14) != 14) return 12;
    struct iovec parts[2] = {{"part one, ", 10}, {"part two\n", 9}};
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = parts;
    m.msg_iovlen = 2;
    if (sendmsg(c, &m, 0) != 19) return 13;
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    if (getpeername(c, (struct sockaddr *)&peer, &len) < 0 || ntohs(peer.sin_port) != port) return 17;
    if (shutdown(c, SHUT_WR) < 0) return 14;
    char back[128];
    size_t got = 0;
    for (;;) {
        ssize_t n = read(c, back + got, sizeof back - got);
        if (n < 0) return 15;
        if (n == 0) break;
        got += n;
    }
    if (got != strlen(REQUEST) || memcmp(back, REQUEST, got) != 0) return 16;
    close(c);
    return 0;
}

static void tcp_echo(void) {
    printf("-- tcp echo\n");
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1, value = 0;
    socklen_t len = sizeof value;
    show("setsockopt SO_REUSEADDR", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
    getsockopt(s, SOL_SOCKET, SO_REUSEADDR, &value, &len);
    printf("SO_REUSEADDR on: %s, length %u\n", value ? "yes" : "no", (unsigned)len);
    struct sockaddr_in any = loopback(0);
    show("bind 127.0.0.1:0", bind(s, (struct sockaddr *)&any, sizeof any));
    unsigned short port = port_of(s);
    printf("a port was given: %s\n", port ? "yes" : "no");
    show("listen", listen(s, 4));
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) _exit(client(port));
    struct sockaddr_in peer;
    socklen_t peer_len = sizeof peer;
    int a = accept4(s, (struct sockaddr *)&peer, &peer_len, SOCK_CLOEXEC);
    show("accept4", a < 0 ? -1 : 0);
    printf("peer is 127.0.0.1: %s, address length %u\n", is_loopback(&peer) ? "yes" : "no",
           (unsigned)peer_len);
    char buf[128];
    size_t total = 0;
    for (;;) {
        char first[5], rest[64];
        struct iovec iov[2] = {{first, sizeof first}, {rest, sizeof rest}};
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = iov;
        m.msg_iovlen = 2;
        ssize_t n = recvmsg(a, &m, 0);
        if (n <= 0) {
            show("recvmsg at the end", n);
            break;
        }
        char joined[69];
        memcpy(joined, first, n < 5 ? n : 5);
        if (n > 5) memcpy(joined + 5, rest, n - 5);
        if (total + n <= sizeof buf) memcpy(buf + total, joined, n);
        total += n;
        if (write(a, joined, n) != n) printf("echo write failed: %s\n", err());
    }
    printf("server read %zu bytes: %s", total, total == strlen(REQUEST) && !memcmp(buf, REQUEST, total) ? REQUEST : "(wrong)\n");
    close(a);
    int status = 0;
    waitpid(child, &status, 0);
    printf("client exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    /* A second socket on the listener's port, without SO_REUSEADDR. */
    int t = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in same = loopback(port);
    show("bind to a port in use", bind(t, (struct sockaddr *)&same, sizeof same));
    close(t);
    close(s);
}

static void udp(void) {
    printf("-- udp\n");
    int u1 = socket(AF_INET, SOCK_DGRAM, 0);
    int u2 = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
    struct sockaddr_in any = loopback(0);
    show("bind u1", bind(u1, (struct sockaddr *)&any, sizeof any));
    show("bind u2", bind(u2, (struct sockaddr *)&any, sizeof any));
    struct sockaddr_in to1 = loopback(port_of(u1));
    show("sendto u1", sendto(u2, "datagram one", 12, 0, (struct sockaddr *)&to1, sizeof to1));
    struct pollfd p = {u1, POLLIN, 0};
    long ready = poll(&p, 1, 10000);
    printf("poll: %ld ready, POLLIN %s\n", ready, p.revents & POLLIN ? "yes" : "no");
    char buf[64] = {0};
    struct sockaddr_in from;
    socklen_t from_len = sizeof from;
    long n = recvfrom(u1, buf, sizeof buf, 0, (struct sockaddr *)&from, &from_len);
    printf("recvfrom: %ld bytes \"%.*s\", from 127.0.0.1: %s, from u2's port: %s\n", n, (int)(n > 0 ? n : 0),
           buf, is_loopback(&from) ? "yes" : "no", ntohs(from.sin_port) == port_of(u2) ? "yes" : "no");
    show("sendto back", sendto(u1, "datagram two", 12, 0, (struct sockaddr *)&from, from_len));
    char head[4], tail[32] = {0};
    struct iovec iov[2] = {{head, sizeof head}, {tail, sizeof tail}};
    struct sockaddr_in name;
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_name = &name;
    m.msg_namelen = sizeof name;
    m.msg_iov = iov;
    m.msg_iovlen = 2;
    n = recvmsg(u2, &m, 0);
    printf("recvmsg: %ld bytes \"%.4s\" + \"%.*s\", name length %u\n", n, head, (int)(n > 4 ? n - 4 : 0), tail,
           (unsigned)m.msg_namelen);
    show("connect u2 to u1", connect(u2, (struct sockaddr *)&to1, sizeof to1));
    show("send on the connected u2", send(u2, "three", 5, 0));
    memset(buf, 0, sizeof buf);
    n = recv(u1, buf, sizeof buf, 0);
    printf("recv: %ld \"%s\"\n", n, buf);
    show("recv with MSG_DONTWAIT, nothing there", recv(u1, buf, sizeof buf, MSG_DONTWAIT));
    close(u1);
    close(u2);
}

static void refused(void) {
    printf("-- a closed port\n");
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in any = loopback(0);
    bind(s, (struct sockaddr *)&any, sizeof any);
    struct sockaddr_in gone = loopback(port_of(s));
    close(s); /* bound, never listening, now closed: nobody has the port */
    int c = socket(AF_INET, SOCK_STREAM, 0);
    show("connect", connect(c, (struct sockaddr *)&gone, sizeof gone));
    int e = -1;
    socklen_t len = sizeof e;
    show("getsockopt SO_ERROR", getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &len));
    printf("SO_ERROR after it: %d\n", e);
    close(c);
}

static void options_and_flags(void) {
    printf("-- options and flags\n");
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1, v = 0, asked = 8192;
    socklen_t len = sizeof v;
    show("set TCP_NODELAY", setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
    getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, &len);
    printf("TCP_NODELAY on: %s\n", v ? "yes" : "no");
    show("set SO_RCVBUF", setsockopt(s, SOL_SOCKET, SO_RCVBUF, &asked, sizeof asked));
    show("set SO_SNDBUF", setsockopt(s, SOL_SOCKET, SO_SNDBUF, &asked, sizeof asked));
    len = sizeof v;
    getsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, &len);
    printf("SO_RCVBUF at least asked: %s\n", v >= asked ? "yes" : "no");
    len = sizeof v;
    getsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &len);
    printf("SO_SNDBUF at least asked: %s\n", v >= asked ? "yes" : "no");
    show("fcntl F_SETFL O_NONBLOCK", fcntl(s, F_SETFL, O_NONBLOCK));
    printf("F_GETFL has O_NONBLOCK: %s\n", fcntl(s, F_GETFL) & O_NONBLOCK ? "yes" : "no");
    struct sockaddr_in any = loopback(0);
    bind(s, (struct sockaddr *)&any, sizeof any);
    listen(s, 1);
    show("accept, non-blocking, nobody", accept(s, NULL, NULL));
    close(s);
    int n = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    printf("SOCK_NONBLOCK gives O_NONBLOCK: %s\n", fcntl(n, F_GETFL) & O_NONBLOCK ? "yes" : "no");
    close(n);
}

static void bad_input(void) {
    printf("-- bad input\n");
    show("socket, unknown family", socket(12345, SOCK_STREAM, 0));
    show("socket, unknown type", socket(AF_INET, 77, 0));
    show("socket, stream over UDP", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP));
    int s = socket(AF_INET, SOCK_STREAM, 0);
    show("bind, bad pointer", bind(s, (struct sockaddr *)1, 16));
    struct sockaddr_in a = loopback(0);
    show("bind, short length", bind(s, (struct sockaddr *)&a, 4));
    struct sockaddr_in un = loopback(1);
    un.sin_family = AF_UNIX;
    show("connect, another family", connect(s, (struct sockaddr *)&un, sizeof un));
    int v = 1;
    show("setsockopt, unknown option", setsockopt(s, SOL_SOCKET, 12345, &v, sizeof v));
    show("setsockopt, short value", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, 2));
    socklen_t *volatile bad_len = (socklen_t *)1;
    show("getsockopt, bad length pointer", getsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, bad_len));
    show("shutdown, bad how", shutdown(s, 7));
    show("sendto, bad descriptor", sendto(999, "x", 1, 0, NULL, 0));
    int p[2];
    pipe(p);
    show("getsockname of a pipe", getsockname(p[0], (struct sockaddr *)&a, &(socklen_t){sizeof a}));
    show("recvfrom a pipe", recvfrom(p[0], &v, 1, 0, NULL, NULL));
    show("poll, bad pointer", poll((struct pollfd *)1, 1, 0));
    struct pollfd none = {-1, POLLIN, 7};
    show("poll, a negative descriptor", poll(&none, 1, 0));
    printf("its revents: %d\n", none.revents);
    close(p[0]);
    close(p[1]);
    close(s);
}

/* `lx-net client PORT`: the Linux end of the mixed test, against
 * Ridgeback's `nc -l PORT` started just before in the background: connect
 * to 127.0.0.1:PORT (again while refused: nc may not listen yet, up to
 * a minute), send a line, end the sending side, print what comes back. */
static int mixed_client(unsigned short port) {
    struct sockaddr_in to = loopback(port);
    int c = -1;
    for (int tries = 0; tries < 600; tries++) {
        c = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(c, (struct sockaddr *)&to, sizeof to) == 0) break;
        int e = errno;
        close(c);
        c = -1;
        if (e != ECONNREFUSED) break;
        usleep(100000);
    }
    if (c < 0) {
        printf("connect: %s\n", err());
        return 1;
    }
    const char line[] = "from the linux program\n";
    if (send(c, line, sizeof line - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof line - 1)) return 2;
    shutdown(c, SHUT_WR);
    char buf[256];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = recv(c, buf + got, sizeof buf - 1 - got, 0)) > 0) got += n;
    buf[got] = 0;
    printf("linux program read: %s", buf);
    close(c);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc == 3 && !strcmp(argv[1], "client")) return mixed_client((unsigned short)atoi(argv[2]));
    tcp_echo();
    udp();
    refused();
    options_and_flags();
    bad_input();
    return 0;
}
