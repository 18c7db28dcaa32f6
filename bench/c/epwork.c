// epoll-workers' C twin: WORKERS threads, each with its own SO_REUSEPORT listener and its own epoll
// (level-triggered), accepting and echoing on its own, the plainest C of c10k's `epoll-workers` model
// with its default `--accept reuseport` (src/server/epoll_workers.rs).
// ./epwork PORT CPU WORKERS [maxsecs]      CPU -1: unpinned
#include "common.h"
#include <pthread.h>
#include <sys/epoll.h>

static void *loop(void *arg) {
    int lfd = (int)(intptr_t)arg;
    static __thread char buf[BS];
    int ep = epoll_create1(0); if (ep < 0) die("epoll_create1");
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev)) die("epoll_ctl");
    struct epoll_event evs[1024];
    for (;;) {
        int n = epoll_wait(ep, evs, 1024, -1);
        if (n < 0) { if (errno == EINTR) continue; die("epoll_wait"); }
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == lfd) {
                for (;;) {
                    int c = accept4(lfd, 0, 0, SOCK_NONBLOCK); if (c < 0) break;
                    set_nodelay(c);
                    struct epoll_event e = {.events = EPOLLIN, .data.fd = c};
                    if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &e)) close(c);
                }
            } else if (!echo_once(fd, buf)) close(fd);  // close drops it from the epoll set
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: epwork PORT CPU WORKERS [maxsecs]\n"); return 2; }
    int port = atoi(argv[1]); pin_cpu(atoi(argv[2])); int workers = atoi(argv[3]);
    if (workers < 1) { fprintf(stderr, "epwork: WORKERS must be at least 1\n"); return 2; }
    alarm(argc > 4 ? atoi(argv[4]) : 120); signal(SIGPIPE, SIG_IGN);
    // Every listener is bound before any loop runs, so the first connection finds them all.
    int *lfds = calloc(workers, sizeof *lfds);
    for (int i = 0; i < workers; i++) { lfds[i] = tcp_listen("127.0.0.1", port, 4096, 1); set_nonblock(lfds[i]); }
    for (int i = 1; i < workers; i++) { pthread_t t; if (pthread_create(&t, NULL, loop, (void *)(intptr_t)lfds[i])) die("pthread_create"); }
    fprintf(stderr, "epwork ready port=%d workers=%d\n", port, workers);
    loop((void *)(intptr_t)lfds[0]);
    return 0;
}
