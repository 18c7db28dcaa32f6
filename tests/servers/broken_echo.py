#!/usr/bin/env python3
"""A deliberately broken echo server, for the tests of `c10k conform`.

usage: broken_echo.py MODE PORT

One thread, a selectors loop (epoll underneath), standard library only. In
every mode it is a good citizen everywhere else: it reads at most 64 KiB
ahead of a peer that does not read its echo, backs off 50 ms when accept
fails for lack of descriptors, sleeps when idle, and dies of SIGTERM's
default action. Each mode breaks exactly one promise:

  drops       loses the 100,000th byte of every connection;
  half-close  holds back the last piece it read until 20 ms pass with
              nothing new, and closes at once on EOF: what it held when the
              client half-closed is never sent;
  unbounded   never stops reading: everything a peer that does not read
              sends piles up in memory.

Prints `READY 127.0.0.1:PORT` once it listens.
"""

import errno
import selectors
import socket
import sys
import time

AHEAD = 64 << 10
DROP_AT = 100_000 - 1
HOLD = 0.020


class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.out = bytearray()
        self.held = b""
        self.held_since = 0.0
        self.seen = 0
        self.eof = False


def main(mode, port):
    sel = selectors.DefaultSelector()
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(4096)
    lsock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ, None)
    print(f"READY 127.0.0.1:{lsock.getsockname()[1]}", flush=True)
    paused_until = None
    conns = {}

    def want(c):
        events = 0
        if not c.eof and (mode == "unbounded" or len(c.out) < AHEAD):
            events |= selectors.EVENT_READ
        if c.out:
            events |= selectors.EVENT_WRITE
        if events:
            sel.modify(c.sock, events, c)
        else:
            # Nothing to wait for until the held piece is released.
            sel.modify(c.sock, selectors.EVENT_READ, c)

    def close(c):
        sel.unregister(c.sock)
        c.sock.close()
        del conns[id(c)]

    while True:
        now = time.monotonic()
        timeout = None
        if paused_until is not None:
            timeout = max(0.0, paused_until - now)
        held = [c for c in conns.values() if c.held]
        if held:
            soonest = min(c.held_since for c in held) + HOLD - now
            timeout = max(0.0, soonest if timeout is None else min(timeout, soonest))
        if paused_until is not None and now >= paused_until:
            sel.register(lsock, selectors.EVENT_READ, None)
            paused_until = None
        for key, events in sel.select(timeout):
            c = key.data
            if c is None:
                try:
                    s, _ = lsock.accept()
                except BlockingIOError:
                    continue
                except OSError as e:
                    if e.errno in (errno.EMFILE, errno.ENFILE):
                        sel.unregister(lsock)
                        paused_until = time.monotonic() + 0.05
                        continue
                    raise
                s.setblocking(False)
                c = Conn(s)
                conns[id(c)] = c
                sel.register(s, selectors.EVENT_READ, c)
                continue
            if events & selectors.EVENT_READ and not c.eof:
                try:
                    data = c.sock.recv(65536)
                except ConnectionError:
                    close(c)
                    continue
                if not data:
                    c.eof = True
                    if mode == "half-close":
                        close(c)
                        continue
                else:
                    if mode == "drops" and c.seen <= DROP_AT < c.seen + len(data):
                        k = DROP_AT - c.seen
                        c.seen += len(data)
                        data = data[:k] + data[k + 1:]
                    else:
                        c.seen += len(data)
                    if mode == "half-close":
                        c.out += c.held
                        c.held, c.held_since = data, time.monotonic()
                    else:
                        c.out += data
            if c.out:
                try:
                    n = c.sock.send(c.out)
                    del c.out[:n]
                except BlockingIOError:
                    pass
                except ConnectionError:
                    close(c)
                    continue
            if c.eof and not c.out and not c.held:
                close(c)
                continue
            want(c)
        now = time.monotonic()
        for c in [c for c in conns.values() if c.held and now - c.held_since >= HOLD]:
            c.out += c.held
            c.held = b""
            want(c)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("drops", "half-close", "unbounded"):
        sys.exit("usage: broken_echo.py drops|half-close|unbounded PORT")
    main(sys.argv[1], int(sys.argv[2]))
