// prefork's C twin: WORKERS processes forked at start, each blocking in accept on the shared listener and
// serving one connection at a time with blocking reads and writes (the classic Apache prefork), the plainest
// C of c10k's `prefork` model (src/server/prefork.rs).
// ./prefork PORT CPU WORKERS [maxsecs]      CPU -1: unpinned
// The parent only waits; on SIGTERM, or when maxsecs pass, it kills its workers and exits, and a worker
// whose parent dies is killed with it (PR_SET_PDEATHSIG), so none outlives a run.
#include "common.h"
#include <sys/prctl.h>

static pid_t *pids;
static int nworkers;
static void stop(int sig) {
    (void)sig;
    for (int i = 0; i < nworkers; i++) if (pids[i] > 0) kill(pids[i], SIGKILL);
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: prefork PORT CPU WORKERS [maxsecs]\n"); return 2; }
    int port = atoi(argv[1]); pin_cpu(atoi(argv[2])); nworkers = atoi(argv[3]);
    if (nworkers < 1) { fprintf(stderr, "prefork: WORKERS must be at least 1\n"); return 2; }
    signal(SIGPIPE, SIG_IGN);
    int lfd = tcp_listen("127.0.0.1", port, 4096, 0);
    pids = calloc(nworkers, sizeof *pids);
    pid_t parent = getpid();
    for (int i = 0; i < nworkers; i++) {
        pid_t p = fork();
        if (p < 0) die("fork");
        if (p == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(0);  // the parent died before the line above
            for (;;) {
                int c = accept(lfd, 0, 0);
                if (c < 0) { if (errno == EINTR || errno == ECONNABORTED) continue; die("accept"); }
                set_nodelay(c);
                echo_blocking(c);
            }
        }
        pids[i] = p;
    }
    signal(SIGTERM, stop); signal(SIGINT, stop); signal(SIGALRM, stop);
    alarm(argc > 4 ? atoi(argv[4]) : 120);
    fprintf(stderr, "prefork ready port=%d workers=%d\n", port, nworkers);
    for (;;) pause();
}
