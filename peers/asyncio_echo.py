#!/usr/bin/env python3
"""An echo server on Python's asyncio (standard library only): one
coroutine per connection on one event loop (epoll underneath); with
--uvloop, the same on uvloop's loop (libuv, python3-uvloop).

usage: asyncio_echo.py PORT [ADDR] [--uvloop]    (PORT 0: any free port)

Echoes every byte; when the client half-closes, sends what is left and
then EOF. Prints `READY ADDR:PORT` once it listens; exits cleanly on
SIGTERM or SIGINT. Run by `c10k run --server` and the `peers` preset.
"""

import asyncio
import signal
import sys


async def echo(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def main(args):
    port = int(args[0])
    addr = args[1] if len(args) > 1 else "127.0.0.1"
    server = await asyncio.start_server(echo, addr, port, backlog=4096)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    # Port 0: the one the kernel picked.
    port = server.sockets[0].getsockname()[1]
    print(f"READY {addr}:{port}", flush=True)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--uvloop"]
    if len(args) not in (1, 2):
        sys.exit(__doc__.strip().splitlines()[4])
    if "--uvloop" in sys.argv:
        import uvloop

        uvloop.install()
    asyncio.run(main(args))
