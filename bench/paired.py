"""What bench/grid.py and bench/wrk.py share: their arguments' refusals, the servers they start and stop on
127.0.0.1, and the statistics of paired rounds.

A paired round runs each side once, one after the other on the same machine, and gives the ratio of one
side's figure to the other's in that round, so the drift of the machine between rounds cancels. interval()
is the geometric mean of those ratios with its 95 % interval (Student t over the log ratios); verdict()
reads the interval against 1."""
import math, os, select, signal, socket, statistics, subprocess, sys, threading, time


def refuse(why):
    """An argument that cannot be run: one line naming what was typed, exit 2 (1 is "something behind"),
    before anything is built or run."""
    print(why, file=sys.stderr)
    sys.exit(2)


def seconds(name, default, least_exclusive=True):
    """GRID_<NAME> in seconds: a finite number above 0 (at least 0 where `least_exclusive` is False)."""
    text = os.environ.get(name, default)
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v < 0 or (least_exclusive and v == 0):
        refuse(f"{name}={text}: not a number of seconds{' above 0' if least_exclusive else ', 0 or more'}")
    return v


def point(text, what):
    """A point N:D (connections, and `what` on each), both whole numbers from 1."""
    parts = text.split(":")
    if len(parts) != 2 or not all(p.isdigit() and int(p) >= 1 for p in parts):
        refuse(f"{text}: a point is N:D, connections and {what} on each, whole numbers from 1 (e.g. 100:16)")
    return int(parts[0]), int(parts[1])


def plan_of(args, script, default_rounds, default_points, what):
    """BIN, ROUNDS and the points of `script BIN [ROUNDS] [N:D ...]` (its flags already taken out), and
    the seed (GRID_SEED, or one from the clock)."""
    binary = os.path.abspath(args[0])
    if not os.access(binary, os.X_OK):
        refuse(f"{binary}: not an executable (cargo build --release first)")
    rest = args[1:]
    rounds = default_rounds
    if rest and ":" not in rest[0]:
        if not rest[0].isdigit():
            refuse(f"{rest[0]}: not a number of rounds nor a point N:D ({script} BIN [ROUNDS] [N:D ...])")
        rounds = int(rest[0])
        # A ratio's interval takes two rounds; with fewer every row would read "no result", behind.
        if rounds < 2:
            refuse(f"ROUNDS {rest[0]}: a ratio and its interval need at least 2 rounds per point")
        rest = rest[1:]
    points = [point(a, what) for a in rest] or default_points
    seed = os.environ.get("GRID_SEED")
    if seed is not None and not seed.isdigit():
        refuse(f"GRID_SEED={seed}: not a whole number")
    return binary, rounds, points, int(seed) if seed is not None else time.time_ns() % 100000


def free_port(rng):
    """A free port below the ephemeral range, so no client's TIME_WAIT or source port can take it."""
    lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    for _ in range(200):
        p = rng.randrange(10000, lo)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            return p
        except OSError:
            continue
        finally:
            s.close()
    raise SystemExit("no free port below the ephemeral range")


def wait_listening(port, proc, limit=5.0):
    end = time.time() + limit
    while time.time() < end and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


def said_ready(p, limit=10.0):
    """Whether p printed its ready line (every C twin prints one once its setup is done, prefork's after its
    last fork) within limit seconds; what it prints after is read and dropped, so it never blocks on a pipe.
    c10k's side is measured from its READY line, which it prints at the same point: measuring one side
    from its first accepted connection instead measured prefork's C twin before its pool was formed, when
    either side served 1,000 connections at up to twice the rate it had seconds later (not explained)."""
    end = time.time() + limit
    buf = b""
    while time.time() < end and p.poll() is None:
        ready, _, _ = select.select([p.stdout], [], [], 0.1)
        if not ready:
            continue
        chunk = os.read(p.stdout.fileno(), 4096)
        if not chunk:
            return False
        buf += chunk
        if b"ready" in buf.lower():
            threading.Thread(target=lambda: [None for _ in iter(lambda: os.read(p.stdout.fileno(), 4096), b"")],
                             daemon=True).start()
            return True
    return False


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def interval(ratios):
    logs = [math.log(r) for r in ratios]
    g = math.exp(statistics.mean(logs))
    if len(logs) < 2:
        return g, g, g
    t = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 11: 2.20,
         12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13, 19: 2.09, 24: 2.06, 29: 2.05}
    df = len(logs) - 1
    tv = t.get(df) or next(v for k, v in sorted(t.items(), reverse=True) if k <= df)
    h = tv * statistics.stdev(logs) / math.sqrt(len(logs))
    return g, math.exp(statistics.mean(logs) - h), math.exp(statistics.mean(logs) + h)


def verdict(lo, hi, lower_is_better=False):
    if lower_is_better:
        return "behind" if lo > 1 else "ahead" if hi < 1 else "level"
    return "ahead" if lo > 1 else "behind" if hi < 1 else "level"
