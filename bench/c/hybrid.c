// hybrid's C twin: one poll loop finds ready sockets and hands each to a pool of pthreads, which echo
// and hand it back, the plainest C of c10k's `hybrid` model (src/server/hybrid.rs).
// ./hybrid PORT CPU WORKERS [maxsecs]      CPU -1: unpinned
//   loop:    poll over the listener, an eventfd and every socket it holds (a compacted pollfd array);
//            a ready socket leaves the array for the job queue (a mutex and a condition variable)
//   workers: take a socket, echo_once (one read, its echo), put it on the return queue, write the eventfd
//   loop:    reads the eventfd, puts returned sockets back in the array, closes the finished ones, so a
//            descriptor is never reused while a worker holds it
// Two hand-offs per readiness event, as the model pays them; nothing else.
#include "common.h"
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>

// A queue of descriptors (a ring that grows), guarded by its mutex.
struct q { int *v; size_t head, len, cap; pthread_mutex_t mu; pthread_cond_t cv; };
static void q_push(struct q *q, int x) {
    if (q->len == q->cap) {
        size_t nc = q->cap ? q->cap * 2 : 1024; int *nv = malloc(nc * sizeof *nv); if (!nv) die("malloc");
        for (size_t i = 0; i < q->len; i++) nv[i] = q->v[(q->head + i) % q->cap];
        free(q->v); q->v = nv; q->head = 0; q->cap = nc;
    }
    q->v[(q->head + q->len++) % q->cap] = x;
}
static int q_pop(struct q *q) { int x = q->v[q->head]; q->head = (q->head + 1) % q->cap; q->len--; return x; }

static struct q jobs = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
static struct q back = {.mu = PTHREAD_MUTEX_INITIALIZER};
static int wake;  // the eventfd the workers write when they hand a socket back

static void *worker(void *unused) {
    (void)unused;
    static __thread char buf[BS];
    for (;;) {
        pthread_mutex_lock(&jobs.mu);
        while (!jobs.len) pthread_cond_wait(&jobs.cv, &jobs.mu);
        int fd = q_pop(&jobs);
        pthread_mutex_unlock(&jobs.mu);
        int alive = echo_once(fd, buf);
        pthread_mutex_lock(&back.mu);
        q_push(&back, alive ? fd : -fd - 1);  // a finished socket comes back negative, to be closed
        pthread_mutex_unlock(&back.mu);
        uint64_t one = 1;
        if (write(wake, &one, sizeof one) != sizeof one) die("eventfd write");
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: hybrid PORT CPU WORKERS [maxsecs]\n"); return 2; }
    int port = atoi(argv[1]); pin_cpu(atoi(argv[2])); int workers = atoi(argv[3]);
    if (workers < 1) { fprintf(stderr, "hybrid: WORKERS must be at least 1\n"); return 2; }
    alarm(argc > 4 ? atoi(argv[4]) : 120); signal(SIGPIPE, SIG_IGN);
    int lfd = tcp_listen("127.0.0.1", port, 4096, 0); set_nonblock(lfd);
    wake = eventfd(0, EFD_NONBLOCK); if (wake < 0) die("eventfd");
    for (int i = 0; i < workers; i++) { pthread_t t; if (pthread_create(&t, NULL, worker, NULL)) die("pthread_create"); }
    int cap = 1024, n = 2; struct pollfd *p = calloc(cap, sizeof *p);
    p[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
    p[1] = (struct pollfd){.fd = wake, .events = POLLIN};
    fprintf(stderr, "hybrid ready port=%d workers=%d\n", port, workers);
    for (;;) {
        int k = poll(p, n, -1); if (k < 0) { if (errno == EINTR) continue; die("poll"); }
        int live = n, handed = 0;
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
            } else if (p[i].fd == wake) {
                uint64_t got; if (read(wake, &got, sizeof got) < 0 && errno != EAGAIN) die("eventfd read");
                pthread_mutex_lock(&back.mu);
                while (back.len) {
                    int fd = q_pop(&back);
                    if (fd < 0) { close(-fd - 1); continue; }
                    if (n == cap) { cap *= 2; p = realloc(p, (size_t)cap * sizeof *p); }
                    p[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
                }
                pthread_mutex_unlock(&back.mu);
            } else {
                // Out of the array until a worker hands it back.
                pthread_mutex_lock(&jobs.mu);
                q_push(&jobs, p[i].fd);
                pthread_mutex_unlock(&jobs.mu);
                p[i].fd = -1; handed++;
            }
        }
        while (handed--) pthread_cond_signal(&jobs.cv);
        int j = 0; for (int i = 0; i < n; i++) if (p[i].fd >= 0) p[j++] = p[i]; n = j;
    }
}
