// Minimal single-threaded epoll HTTP/1.1 server: the C twin of `c10k serve --model epoll --protocol http`.
// ./ephttp port cpu [maxsecs]
//
// One level-triggered epoll loop, one read per readiness event into the connection's input buffer. Every
// complete request in it (a head ending in "\r\n\r\n", then its Content-Length body, skipped; requests back
// to back) gets one response, the same bytes c10k's server sends (Server, Date, Content-Type,
// Content-Length, then "Hello, World!"), and the responses of one read go out in one write. What the socket
// does not take waits for EPOLLOUT (no reads meanwhile), as epsrv's echo does. HTTP/1.0, or a
// "Connection: close", closes once the response is written and says so ("Connection: keep-alive" keeps
// an HTTP/1.0 one, and says that). Nothing else is checked: a head longer than the buffer closes the connection, nothing is refused.
#include "common.h"
#include <sys/epoll.h>
#define MAXFD 65536
#define INCAP 16384  // c10k's --buffer default: the longest head
struct conn { char *in; int ilen; long body; int closing; char *pend; int plen, poff; };
static struct conn C[MAXFD];
static char *out; static size_t olen, ocap;        // the responses of one read
static char resp[3][256]; static int rlen[3]; static time_t rsec = -1;  // kept, closing, kept HTTP/1.0

static void render(void) {  // the response, its Date formatted once a second
    time_t t = time(NULL); if (t == rsec) return; rsec = t;
    struct tm tm; char date[64]; gmtime_r(&t, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    const char *conn[3] = {"", "Connection: close\r\n", "Connection: keep-alive\r\n"};
    for (int c = 0; c < 3; c++)
        rlen[c] = snprintf(resp[c], sizeof resp[c], "HTTP/1.1 200 OK\r\nServer: c10k\r\nDate: %s\r\n"
                           "Content-Type: text/plain\r\nContent-Length: 13\r\n%s\r\nHello, World!",
                           date, conn[c]);
}
static void append(const char *p, size_t n) {
    if (olen + n > ocap) { ocap = 2 * (olen + n); out = realloc(out, ocap); if (!out) die("realloc"); }
    memcpy(out + olen, p, n); olen += n;
}
// Answers every complete request in k's input; returns how many bytes of it that took.
static int serve(struct conn *k) {
    char *p = k->in, *end = k->in + k->ilen;
    while (p < end && !k->closing) {
        if (k->body) { long b = end - p < k->body ? end - p : k->body; p += b; k->body -= b; continue; }
        char *h = memmem(p, end - p, "\r\n\r\n", 4);
        if (!h) break;
        *h = 0;  // the head is a string now (its last "\r" is never read again)
        char *eol = strstr(p, "\r\n"); if (!eol) eol = h;
        int old = eol - p >= 8 && !memcmp(eol - 8, "HTTP/1.0", 8), keep = !old;
        char *cn = strcasestr(p, "\r\nconnection:");
        if (cn) { char v[64]; snprintf(v, sizeof v, "%s", cn + 13); char *e = strstr(v, "\r\n"); if (e) *e = 0;
                  if (strcasestr(v, "close")) keep = 0; else if (strcasestr(v, "keep-alive")) keep = 1; }
        char *cl = strcasestr(p, "\r\ncontent-length:");
        k->body = cl ? strtol(cl + 17, NULL, 10) : 0;
        if (k->body < 0) { k->closing = 1; break; }  // no response: closed
        int r = !keep ? 1 : old ? 2 : 0;
        append(resp[r], rlen[r]);
        if (!keep) k->closing = 1;
        p = h + 4;
    }
    return p - k->in;
}
static void drop(int fd) {
    struct conn *k = &C[fd]; close(fd); k->ilen = k->plen = k->poff = k->closing = 0; k->body = 0;
}
static void want(int ep, int fd, unsigned events) {
    struct epoll_event e = {.events = events, .data.fd = fd}; epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e);
}
int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: ./ephttp port cpu [maxsecs]\n"); return 2; }
    int port = atoi(argv[1]); pin_cpu(atoi(argv[2])); int maxs = argc > 3 ? atoi(argv[3]) : 120;
    alarm(maxs); signal(SIGPIPE, SIG_IGN);
    int lfd = tcp_listen("127.0.0.1", port, 4096, 0); set_nonblock(lfd);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd}; epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event evs[1024];
    fprintf(stderr, "ephttp ready port=%d\n", port);
    for (;;) {
        int n = epoll_wait(ep, evs, 1024, -1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == lfd) {
                for (;;) { int c = accept4(lfd, 0, 0, SOCK_NONBLOCK); if (c < 0) break;
                    if (c >= MAXFD) { close(c); continue; }
                    if (!C[c].in && !(C[c].in = malloc(INCAP))) die("malloc");
                    set_nodelay(c); struct epoll_event e = {.events = EPOLLIN, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &e); }
                continue;
            }
            struct conn *k = &C[fd];
            if (evs[i].events & EPOLLOUT) { // drain pending
                while (k->poff < k->plen) { ssize_t w = write(fd, k->pend + k->poff, k->plen - k->poff); if (w <= 0) break; k->poff += w; }
                if (k->poff < k->plen) { if (errno != EAGAIN) drop(fd); continue; }
                k->plen = k->poff = 0;
                if (k->closing) { drop(fd); continue; }
                want(ep, fd, EPOLLIN);
            }
            if (k->plen) continue;
            ssize_t r = read(fd, k->in + k->ilen, INCAP - k->ilen);
            if (r == 0 || (r < 0 && errno != EAGAIN)) { drop(fd); continue; }
            if (r < 0) continue;
            k->ilen += r; render(); olen = 0;
            int used = serve(k);
            k->ilen = k->closing ? 0 : k->ilen - used;
            memmove(k->in, k->in + used, k->ilen);
            if (k->ilen == INCAP) { drop(fd); continue; }  // a head longer than the buffer
            ssize_t w = olen ? write(fd, out, olen) : 0;
            if (w < 0 && errno != EAGAIN) { drop(fd); continue; }
            if (w < 0) w = 0;
            if ((size_t)w < olen) { // stash and wait for EPOLLOUT
                k->pend = realloc(k->pend, olen - w); if (!k->pend) die("realloc");
                memcpy(k->pend, out + w, olen - w); k->plen = olen - w; k->poff = 0;
                want(ep, fd, EPOLLOUT);
            } else if (k->closing) drop(fd);
        }
    }
}
