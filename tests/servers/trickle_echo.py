#!/usr/bin/env python3
"""An echo server that trickles: every byte comes back, one every 10 ms, for
the test that `c10k conform --patience` bounds a whole check, not each wait.

usage: trickle_echo.py PORT

A thread per connection, standard library only; dies of SIGTERM's default
action. Prints `READY 127.0.0.1:PORT` once it listens.
"""

import socket
import sys
import threading
import time


def serve(conn):
    with conn:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            for i in range(len(data)):
                conn.sendall(data[i : i + 1])
                time.sleep(0.010)


def main(port):
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(4096)
    print(f"READY 127.0.0.1:{lsock.getsockname()[1]}", flush=True)
    while True:
        conn, _ = lsock.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main(int(sys.argv[1]))
