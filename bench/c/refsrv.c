// Minimal echo servers in the classic models, the plainest C of each, as a floor for c10k's own.
// ./refsrv MODEL PORT CPU [maxsecs]      MODEL: threads | fork | select | poll
//   threads: a detached pthread per connection, blocking read/write (default stack)
//   fork:    a child process per connection, blocking read/write (SIGCHLD ignored: no zombies)
//   select:  one loop; fd_set grown past FD_SETSIZE, master set copied per call, scan stops after nready,
//            accept until EAGAIN, one read per ready socket (level-triggered, like epsrv's lt)
//   poll:    one loop over a compacted pollfd array, one read per ready socket
// Writes that would block are finished blocking (a loopback echo of 64 B never blocks in practice).
#include "common.h"
#include <poll.h>
#include <pthread.h>
#include <sys/select.h>

static void *thread_main(void *p) { echo_blocking((int)(intptr_t)p); return NULL; }

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: refsrv threads|fork|select|poll PORT CPU [maxsecs]\n"); return 2; }
    const char *model = argv[1]; int port = atoi(argv[2]); pin_cpu(atoi(argv[3]));
    alarm(argc > 4 ? atoi(argv[4]) : 120); signal(SIGPIPE, SIG_IGN);
    int lfd = tcp_listen("127.0.0.1", port, 4096, 0);
    fprintf(stderr, "refsrv ready port=%d model=%s\n", port, model);
    static char buf[BS];
    if (!strcmp(model, "threads") || !strcmp(model, "fork")) {
        int thr = !strcmp(model, "threads");
        if (!thr) signal(SIGCHLD, SIG_IGN);
        pthread_attr_t at; pthread_attr_init(&at); pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        for (;;) {
            int c = accept(lfd, 0, 0); if (c < 0) { if (errno == EINTR || errno == ECONNABORTED) continue; die("accept"); }
            set_nodelay(c);
            if (thr) { pthread_t t; if (pthread_create(&t, &at, thread_main, (void *)(intptr_t)c)) close(c); }
            else { pid_t p = fork(); if (p == 0) { close(lfd); echo_blocking(c); _exit(0); } close(c); }
        }
    }
    set_nonblock(lfd);
    if (!strcmp(model, "select")) {
        int words = 64; fd_set *master = calloc(words, 8), *ready = calloc(words, 8); int maxfd = lfd;
        FD_SET(lfd, master);
        for (;;) {
            memcpy(ready, master, (size_t)words * 8);
            int n = select(maxfd + 1, ready, NULL, NULL, NULL); if (n < 0) { if (errno == EINTR) continue; die("select"); }
            uint64_t *w = (uint64_t *)ready;
            for (int i = 0; i <= maxfd / 64 && n > 0; i++) {
                for (uint64_t bits = w[i]; bits && n > 0; bits &= bits - 1) {
                    int fd = i * 64 + __builtin_ctzll(bits); n--;
                    if (fd == lfd) {
                        for (;;) {
                            int c = accept4(lfd, 0, 0, SOCK_NONBLOCK); if (c < 0) break;
                            set_nodelay(c);
                            if (c / 64 >= words) { int nw = (c / 64 + 1) * 2;
                                master = realloc(master, (size_t)nw * 8); memset((uint64_t *)master + words, 0, (size_t)(nw - words) * 8);
                                ready = realloc(ready, (size_t)nw * 8); memset((uint64_t *)ready + words, 0, (size_t)(nw - words) * 8);
                                w = (uint64_t *)ready; words = nw; }
                            ((uint64_t *)master)[c / 64] |= 1ull << (c % 64); if (c > maxfd) maxfd = c;
                        }
                    } else if (!echo_once(fd, buf)) { ((uint64_t *)master)[fd / 64] &= ~(1ull << (fd % 64)); close(fd); }
                }
            }
        }
    }
    if (!strcmp(model, "poll")) {
        int cap = 1024, n = 1; struct pollfd *p = calloc(cap, sizeof *p);
        p[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        for (;;) {
            int k = poll(p, n, -1); if (k < 0) { if (errno == EINTR) continue; die("poll"); }
            int live = n;
            for (int i = 0; i < live && k > 0; i++) {
                if (!p[i].revents) continue;
                k--;
                if (p[i].fd == lfd) {
                    for (;;) {
                        int c = accept4(lfd, 0, 0, SOCK_NONBLOCK); if (c < 0) break;
                        set_nodelay(c);
                        if (n == cap) { cap *= 2; p = realloc(p, (size_t)cap * sizeof *p); }
                        p[n++] = (struct pollfd){.fd = c, .events = POLLIN};
                    }
                } else if (!echo_once(p[i].fd, buf)) { close(p[i].fd); p[i].fd = -1; }
            }
            int j = 0; for (int i = 0; i < n; i++) if (p[i].fd >= 0) p[j++] = p[i]; n = j;
        }
    }
    fprintf(stderr, "refsrv: unknown model %s\n", model); return 2;
}
