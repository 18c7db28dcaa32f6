#!/usr/bin/env python3
"""An echo server whose speed changes from one start to the next: a thread
per connection that sleeps before each echo, 0.2 ms in one start and 5 ms
in the next, alternately (a counter in STATE counts the starts). A model
whose runs swing by 25x, for the tests of the ranking: it must come out
inconclusive against a steady server, never tied with it.

usage: sleepy_echo.py PORT STATE [DELAY]    (DELAY in seconds: always that)

Prints `READY 127.0.0.1:PORT` once it listens; exits on SIGTERM.
"""

import os
import signal
import socket
import sys
import threading
import time


def serve(conn, delay):
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            time.sleep(delay)
            try:
                conn.sendall(data)
            except OSError:
                return


def main():
    port, state = int(sys.argv[1]), sys.argv[2]
    starts = 0
    if os.path.exists(state):
        with open(state) as f:
            starts = int(f.read() or 0)
    with open(state, "w") as f:
        f.write(str(starts + 1))
    delay = 0.0002 if starts % 2 == 0 else 0.005
    if len(sys.argv) > 3:
        delay = float(sys.argv[3])
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    print(f"READY 127.0.0.1:{listener.getsockname()[1]}", flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, delay), daemon=True).start()


if __name__ == "__main__":
    main()
