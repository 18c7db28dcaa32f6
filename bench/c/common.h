#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <errno.h>
#include <unistd.h>
#include <time.h>
#include <sched.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

static inline uint64_t now_ns(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
static inline void die(const char *m) { perror(m); exit(1); }
static inline void pin_cpu(int cpu) {
    if (cpu < 0) return;
    cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s)) die("sched_setaffinity");
}
static __attribute__((unused)) int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? -1 : x > y;
}
static inline uint64_t pctl(uint64_t *sorted, size_t n, double p) {
    size_t i = (size_t)(p * (n - 1) + 0.5); return sorted[i];
}
static inline void set_nodelay(int fd) { int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); }
static inline void set_nonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }
static inline int tcp_listen(const char *ip, int port, int backlog, int reuseport) {
    int fd = socket(AF_INET, SOCK_STREAM, 0); if (fd < 0) die("socket");
    int one = 1; setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, ip, &a.sin_addr);
    if (bind(fd, (void*)&a, sizeof a)) die("bind");
    if (listen(fd, backlog)) die("listen");
    return fd;
}
static inline int sock_port(int fd) {
    struct sockaddr_in a; socklen_t l = sizeof a; getsockname(fd, (void*)&a, &l); return ntohs(a.sin_port);
}
static inline int tcp_connect(const char *ip, int port, const char *src) {
    int fd = socket(AF_INET, SOCK_STREAM, 0); if (fd < 0) return -1;
    if (src) {
        int one = 1; setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        struct sockaddr_in s = {.sin_family = AF_INET}; inet_pton(AF_INET, src, &s.sin_addr);
        if (bind(fd, (void*)&s, sizeof s)) { close(fd); return -1; }
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, ip, &a.sin_addr);
    if (connect(fd, (void*)&a, sizeof a)) { int e = errno; close(fd); errno = e; return -1; }
    return fd;
}
static inline int readn(int fd, char *b, size_t n) {
    size_t g = 0; while (g < n) { ssize_t r = recv(fd, b + g, n - g, 0); if (r <= 0) return -1; g += r; } return 0;
}
static inline int writen(int fd, const char *b, size_t n) {
    size_t g = 0; while (g < n) { ssize_t r = send(fd, b + g, n - g, MSG_NOSIGNAL); if (r <= 0) return -1; g += r; } return 0;
}

// The echo of the non-blocking models (refsrv's select and poll, hybrid, epwork): one read per ready
// socket and an echo of what it read, a write that would block finished blocking (a loopback echo of
// 64 B never blocks in practice); returns 0 when the socket is done.
#define BS 65536
static __attribute__((unused)) int echo_once(int fd, char *buf) {
    ssize_t r = read(fd, buf, BS);
    if (r < 0 && errno == EAGAIN) return 1;
    if (r <= 0) return 0;
    int fl = fcntl(fd, F_GETFL);
    ssize_t w = send(fd, buf, r, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno != EAGAIN) return 0;
    if (w < 0) w = 0;
    if (w < r) { fcntl(fd, F_SETFL, fl & ~O_NONBLOCK); int bad = writen(fd, buf + w, r - w); fcntl(fd, F_SETFL, fl); if (bad) return 0; }
    return 1;
}


// The echo of the blocking models (refsrv's threads and fork, prefork): read and write back until the peer
// is done, then close.
static __attribute__((unused)) void echo_blocking(int fd) {
    static __thread char buf[BS];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r <= 0 || writen(fd, buf, r)) break;
    }
    close(fd);
}
