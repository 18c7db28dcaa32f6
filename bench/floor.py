#!/usr/bin/env python3
"""The models without a C twin in ../shared/ref, each beside its closest plain program, in paired rounds.

  bench/floor.py BIN REFDIR [ROUNDS] [N:D ...]

  BIN     c10k binary (target/release/c10k)
  REFDIR  the C reference programs (../shared/ref: epcli.c, epsrv.c, refsrv.c, common.h)

Pairs (c10k serve --model M --cpus 0 against the reference pinned to CPU 0):
  tokio          against target/release/examples/tokio_echo (a task per connection, read then
                 write_all; `cargo build --release --example tokio_echo`), one runtime worker each
  epoll-workers  against epsrv (one epoll loop; --cpus 0 gives one worker)
  hybrid         against refsrv poll (the plain poll loop that echoes on its own thread: the
                 difference is the hybrid's hand-off to its pool, the model's own cost)

The method is grid.py's: the C client (epcli) on CPU 1, 64 B, 1 s warm-up + 4 s measured; in every
round each side runs once, in shuffled order (GRID_SEED=N repeats it); a row is the geometric mean of
the per-round ratios c10k/reference with its 95 % interval (Student t over log ratios) and a verdict:
ahead (interval above 1), level (it holds 1), behind (below 1). Traffic goes to 127.0.0.1 only; every
server it starts is stopped, and every reference exits by itself after 60 s.
"""
import math, os, random, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

args = sys.argv[1:]
if len(args) < 2:
    print(__doc__)
    sys.exit(2)
BIN, REF = os.path.abspath(args[0]), os.path.abspath(args[1])
rest = args[2:]
ROUNDS = int(rest[0]) if rest and rest[0].isdigit() else 6
GRID = [tuple(map(int, a.split(":"))) for a in rest if ":" in a] or [(100, 1), (1000, 1)]
SEED = int(os.environ.get("GRID_SEED", time.time_ns() % 100000))
rng = random.Random(SEED)
# cargo puts the example beside the binary: target/release/examples/tokio_echo
TOKIO_ECHO = os.path.join(os.path.dirname(BIN), "examples", "tokio_echo")
tmp = tempfile.mkdtemp()


def build(prog, *libs):
    out = os.path.join(tmp, prog)
    r = subprocess.run(["gcc", "-O2", "-o", out, os.path.join(REF, prog + ".c"), *libs],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"building {prog}.c failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else '?'}")
    return out


EPCLI, EPSRV, REFSRV = build("epcli", "-lm"), build("epsrv", "-lm"), build("refsrv", "-lpthread")


def free_port():
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
    sys.exit("no free port below the ephemeral range")


def listening(port, proc, limit=5.0):
    end = time.time() + limit
    while time.time() < end and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


def reference(cmd):
    def start():
        port = free_port()
        p = subprocess.Popen([c.replace("{port}", str(port)) for c in cmd], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        return p, (port if listening(port, p) else None)
    return start


def c10k(model):
    def start():
        p = subprocess.Popen([BIN, "serve", "--model", model, "--cpus", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        line = p.stdout.readline()
        return p, (int(line.split()[1].rsplit(":", 1)[1]) if line.startswith("READY") else None)
    return start


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def cell(server, n, d):
    p, port = server()
    try:
        if not port:
            return None
        out = subprocess.run([EPCLI, str(port), str(n), str(d), "64", "1", "4", "1"], capture_output=True,
                             text=True, timeout=60).stdout
        m = re.search(r"msgs_per_s=([\d.]+)", out)
        return float(m.group(1)) if m else None
    finally:
        stop(p)


def interval(ratios):
    logs = [math.log(r) for r in ratios]
    g = math.exp(statistics.mean(logs))
    t = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}
    h = t.get(len(logs) - 1, 2.23) * statistics.stdev(logs) / math.sqrt(len(logs))
    return g, math.exp(statistics.mean(logs) - h), math.exp(statistics.mean(logs) + h)


PAIRS = [
    ("tokio", "tokio_echo", reference(["taskset", "-c", "0", TOKIO_ECHO, "{port}"])),
    ("epoll-workers", "C epoll", reference([EPSRV, "{port}", "lt", "0", "0", "60"])),
    ("hybrid", "C poll", reference([REFSRV, "poll", "{port}", "0", "60"])),
]

print(f"seed {SEED}, {ROUNDS} rounds per point, server CPU 0, C client CPU 1, 64 B, 4 s measured", flush=True)
try:
    for model, name, ref in PAIRS:
        if model == "tokio" and not os.path.exists(TOKIO_ECHO):
            print(f"tokio: skipped ({TOKIO_ECHO} is missing: cargo build --release --example tokio_echo)")
            continue
        for n, d in GRID:
            got = {"ref": [], "c10k": []}
            for _ in range(ROUNDS):
                sides = [("ref", ref), ("c10k", c10k(model))]
                rng.shuffle(sides)
                for k, srv in sides:
                    got[k].append(cell(srv, n, d))
            ratios = [a / b for a, b in zip(got["c10k"], got["ref"]) if a and b]
            base = statistics.median([b for b in got["ref"] if b] or [0])
            if len(ratios) < 2:
                print(f"{model} N={n} D={d}: no result in {ROUNDS - len(ratios)} of {ROUNDS} rounds", flush=True)
                continue
            g, lo, hi = interval(ratios)
            v = "ahead" if lo > 1 else "behind" if hi < 1 else "level"
            print(f"{model} N={n} D={d}: {name} {base:,.0f} msg/s; c10k {g:.2f}× [{lo:.2f}, {hi:.2f}] {v}",
                  flush=True)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
