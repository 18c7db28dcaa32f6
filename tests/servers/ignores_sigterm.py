#!/usr/bin/env python3
"""An echo server that ignores SIGTERM and leaves a child of its own (which
ignores it too) in its process group, for the test that `c10k run --server`
kills what does not stop and leaves nothing of it running.

usage: ignores_sigterm.py PORT

A thread per connection, standard library only. Prints `READY` once it
listens.
"""

import signal
import socket
import subprocess
import sys
import threading

if sys.argv[1] == "child":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Event().wait()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen([sys.executable, __file__, "child"])
lst = socket.create_server(("127.0.0.1", int(sys.argv[1])), backlog=128)


def serve(c):
    with c:
        while data := c.recv(65536):
            c.sendall(data)


print("READY", flush=True)
while True:
    c, _ = lst.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
