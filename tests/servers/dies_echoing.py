#!/usr/bin/env python3
"""An echo server that dies while it serves, for the test that a resident
server's death in `c10k run` loses its own cells only, named with the
cause.

usage: dies_echoing.py PORT [LIMIT [PIDFILE]]

One thread, a selectors loop, standard library only. It echoes every byte
until it has echoed LIMIT bytes in all (4 KiB unless given; over every
connection), then exits at once with code 3 and a message on stderr, its
connections reset by the kernel. With PIDFILE it writes its pid there
first (for a test that kills it at a moment of its own). Prints
`READY 127.0.0.1:PORT` once it listens.
"""

import os
import selectors
import socket
import sys


def main(port, limit, pidfile):
    if pidfile:
        with open(pidfile, "w") as f:
            f.write(str(os.getpid()))
    sel = selectors.DefaultSelector()
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(4096)
    lsock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ, None)
    print(f"READY 127.0.0.1:{lsock.getsockname()[1]}", flush=True)
    echoed = 0
    while True:
        for key, _ in sel.select(timeout=1.0):
            if key.data is None:
                try:
                    conn, _ = lsock.accept()
                except BlockingIOError:
                    continue
                conn.setblocking(True)
                sel.register(conn, selectors.EVENT_READ, "conn")
                continue
            conn = key.fileobj
            data = conn.recv(65536)
            if not data:
                sel.unregister(conn)
                conn.close()
                continue
            conn.sendall(data)
            echoed += len(data)
            if echoed >= limit:
                print(f"dies_echoing: echoed {echoed} bytes, exiting", file=sys.stderr, flush=True)
                os._exit(3)


if __name__ == "__main__":
    main(
        int(sys.argv[1]),
        int(sys.argv[2]) if len(sys.argv) > 2 else 4096,
        sys.argv[3] if len(sys.argv) > 3 else None,
    )
