#!/usr/bin/env python3
"""c10k side by side with the plainest C program of each model (bench/c/), in paired rounds.

  bench/grid.py BIN [ROUNDS] [N:D ...]                      the client grid (default)
  bench/grid.py BIN [ROUNDS] [N:D ...] --models M1,M2,...   the server grid, one model at a time
  --tails       a p50 or p99 that is behind counts as behind, and with --settled the time to answer every
                connection (their rows print in any case)
  --switches    each point also prints each server's context switches per echo (voluntary + forced), read
                from its own threads in /proc (a process per connection's children are not counted)
  --settled     the server grid's window opens once every connection has been answered once and the warm-up
                is over (at most GRID_SETTLE seconds, default 30, after the client's first write):
                a thread or process per connection on one CPU takes seconds to accept a thousand, and until it
                has, its figures are those of fewer connections. Each point prints when each side had answered
                them all, and how many it had not when the window opened
  --also FLAGS  the server grid adds, in the same rounds, c10k's model started with these `c10k serve` flags
                too (e.g. --also "--ring-recv once"): an A/B of a setting, each side against the same C twin

BIN is c10k (target/release/c10k). ROUNDS defaults to 5, the points to 100:1 100:16 1000:1.

Client grid: at each point (N connections, D messages in flight on each), every round runs the C pair
(epsrv + epcli), c10k's epoll server with the C client, the C server with `c10k load`, and c10k with itself.
Server grid: every round runs the C client (epcli) against the C twin of model M and against
`c10k serve --model M --cpus 0`:
  threads, fork, select, poll   refsrv.c      a thread or process per connection, a select or poll loop
  epoll                         epsrv.c lt    one level-triggered epoll loop
  uring                         ursrv.c 1     io_uring, SINGLE_ISSUER|DEFER_TASKRUN (needs liburing-dev)
  hybrid                        hybrid.c 1    a poll loop handing ready sockets to a pthread pool of 1 (c10k's
                                              default on one CPU: a pool thread per server CPU)
  epoll-workers                 epwork.c 1    an epoll per thread, each its own SO_REUSEPORT listener (1 on one CPU)
  prefork                       prefork.c     N+8 processes blocking in accept, one connection each at a time
                                              (c10k's side gets --workers N+8, as `c10k run` sizes it)
  tokio                         examples/tokio_echo.rs under taskset -c 0 (one worker, as --cpus 0 gives c10k's)
A model whose twin cannot be built here is skipped with the reason, never given a number; one without a twin
(busy, sigio) is refused.

Server on CPU 0, client on CPU 1, 64 B messages, 1 s warm-up, 4 s measured (GRID_WARMUP and GRID_MEASURE
change them, in seconds); the order inside each round is
shuffled (seed printed; GRID_SEED=N repeats it), so neither side always runs first or last.

Each round gives a ratio to the C reference of the same round, so the drift of this machine between rounds
cancels. Beside each throughput row, a p50 and a p99 row: the client's round trip against the reference's
(lower is better: behind when the interval lies above 1). A row prints the geometric mean of those ratios
with its 95 % interval (Student t over log ratios), the client CPU per message beside the rate where the
client differs, and a verdict: ahead (the interval lies on the better side of 1), level (it holds 1),
behind. Where the host runs DAMON (kdamond threads), each point also prints the monitor's CPU seconds per cell
for each side, median: it checks a page by visiting every process that maps it, so a server of many processes
pays for it in its own figures (the fork family at thousands of connections). Where a server had not yet
accepted every connection during the run, the point also prints how many waited in its accept queue at most
and at the end of the measured window, median per side: such a server served fewer than N, and its figures are those of fewer
connections (a thread per connection on one CPU at 1,000). Exit 0 when nothing is behind, 1 when something is,
2 for arguments it cannot run (one line on stderr naming what was typed, before anything is built or run). Traffic goes to 127.0.0.1 only; every server it starts is stopped,
and every C server exits by itself after 60 s.
"""
import json, os, random, re, shutil, signal, statistics, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from paired import free_port, interval, plan_of, refuse, said_ready, seconds, stop, verdict, wait_listening  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "c")
# The models with a C twin (TWINS below, once they are built).
TWIN_NAMES = ("epoll", "uring", "hybrid", "epoll-workers", "prefork", "tokio", "threads", "fork", "select", "poll")


args = sys.argv[1:]
models = None
tails = "--tails" in args
switches = "--switches" in args
settled = "--settled" in args
args = [a for a in args if a not in ("--tails", "--switches", "--settled")]
also = []
if "--also" in args:
    i = args.index("--also")
    if i + 1 >= len(args):
        refuse('--also needs c10k serve flags, e.g. --also "--ring-recv once"')
    also = args[i + 1].split()
    del args[i:i + 2]
if "--models" in args:
    i = args.index("--models")
    if i + 1 >= len(args):
        refuse("--models needs a list, e.g. --models hybrid,epoll-workers")
    models = args[i + 1].split(",")
    del args[i:i + 2]
    unknown = [m for m in models if m not in TWIN_NAMES]
    if unknown:
        refuse(f"--models: no C twin is known for {', '.join(unknown)} (known: {', '.join(sorted(TWIN_NAMES))})")
if also and not models:
    refuse("--also adds a side to the server grid: give --models too")
if settled and not models:
    refuse("--settled opens the server grid's window once every connection is answered: give --models too")
if not args:
    print(__doc__)
    sys.exit(2)
flags = [a for a in args if a.startswith("--")]
if flags:
    refuse(f"{flags[0]}: not a flag of bench/grid.py (--models, --also, --tails, --switches, --settled)")
BIN, ROUNDS, GRID, SEED = plan_of(args, "bench/grid.py", 5, [(100, 1), (100, 16), (1000, 1)],
                                  "messages in flight")
# The warm-up and measured seconds of every side (a quick check of the script: GRID_MEASURE=0.5).
WARMUP = seconds("GRID_WARMUP", "1", least_exclusive=False)
MEASURE = seconds("GRID_MEASURE", "4")
# --settled: the longest the window waits for every connection to be answered once.
SETTLE = seconds("GRID_SETTLE", "30")
# How long a C twin serves before it exits by itself: past the longest client run.
ALIVE = str(int(max(60, (SETTLE if settled else WARMUP) + MEASURE + 30)))
# cargo puts the example beside the binary: target/release/examples/tokio_echo
TOKIO_ECHO = os.path.join(os.path.dirname(BIN), "examples", "tokio_echo")


def _stop_on_signal(signum, _frame):
    raise SystemExit(128 + signum)  # unwinds through cell()'s finally, which stops the server it started


signal.signal(signal.SIGTERM, _stop_on_signal)
rng = random.Random(SEED)
tmp = tempfile.mkdtemp()


def build(prog, *libs):
    """The program built into the temporary directory, or None and why."""
    out = os.path.join(tmp, prog)
    r = subprocess.run(["gcc", "-O2", "-o", out, os.path.join(HERE, prog + ".c"), *libs],
                       capture_output=True, text=True)
    if r.returncode == 0:
        return out, None
    last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "?"
    return None, f"building bench/c/{prog}.c failed: {last}"


(EPSRV, _), (EPCLI, _), (REFSRV, _) = build("epsrv", "-lm"), build("epcli", "-lm"), build("refsrv", "-lpthread")
if not (EPSRV and EPCLI and REFSRV):
    sys.exit("the C reference programs did not build (gcc)")
URSRV, URSRV_WHY = build("ursrv", "-luring")
if not URSRV:
    URSRV_WHY = "the C twin needs liburing-dev (apt-get install liburing-dev)"
HYBRID, HYBRID_WHY = build("hybrid", "-lpthread")
PREFORK, PREFORK_WHY = build("prefork")
EPWORK, EPWORK_WHY = build("epwork", "-lpthread")


# Each model's C twin: the command that serves PORT on CPU 0 for at most ALIVE s, or (None, why).
# {workers}: a pool of processes that each serve one connection at a time gets one per connection and 8
# spare, as `c10k run` sizes prefork; c10k's side gets the same --workers.
TWINS = {
    "epoll": ([EPSRV, "{port}", "lt", "0", "0", ALIVE], None),
    "uring": ([URSRV, "{port}", "0", "1", ALIVE], URSRV_WHY) if URSRV else (None, URSRV_WHY),
    "hybrid": ([HYBRID, "{port}", "0", "1", ALIVE], None) if HYBRID else (None, HYBRID_WHY),
    "epoll-workers": ([EPWORK, "{port}", "0", "1", ALIVE], None) if EPWORK else (None, EPWORK_WHY),
    "prefork": ([PREFORK, "{port}", "0", "{workers}", ALIVE], None) if PREFORK else (None, PREFORK_WHY),
    "tokio": (["taskset", "-c", "0", TOKIO_ECHO, "{port}"], None) if os.path.exists(TOKIO_ECHO) else
             (None, f"{TOKIO_ECHO} is missing: cargo build --release --example tokio_echo"),
}
for m in ("threads", "fork", "select", "poll"):
    TWINS[m] = ([REFSRV, m, "{port}", "0", ALIVE], None)
assert set(TWINS) == set(TWIN_NAMES), "TWIN_NAMES lists the models of TWINS"


def workers(n):
    return str(n + 8)


def c_server(model):
    def start(n):
        port = free_port(rng)
        cmd = [a.replace("{port}", str(port)).replace("{workers}", workers(n)) for a in TWINS[model][0]]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return p, (port if said_ready(p) and wait_listening(port, p) else None)
    return start


def c10k_server(model, extra=()):
    def start(n):
        pool = ["--workers", workers(n)] if model == "prefork" else []
        p = subprocess.Popen([BIN, "serve", "--model", model, "--cpus", "0", *pool, *extra], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        line = p.stdout.readline()
        return p, (int(line.split()[1].rsplit(":", 1)[1]) if line.startswith("READY") else None)
    return start


def timed(cmd):
    """Run cmd to its end; its stdout and the CPU seconds it used (wait4)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return out, ru.ru_utime + ru.ru_stime


def c_client(port, n, d):
    """(messages/s, client CPU s, p50 µs, p99 µs, seconds until every connection was answered or None,
    connections not answered when the window opened) from epcli, or None."""
    warm = f"{WARMUP:g}..{SETTLE:g}" if settled else str(WARMUP)
    out, cpu = timed([EPCLI, str(port), str(n), str(d), "64", warm, str(MEASURE), "1"])
    m = re.search(r"msgs_per_s=([\d.]+)", out)
    if not m:
        return None
    q50, q99, t_all, left = (re.search(rf"{k}=(-?[\d.]+)", out) for k in
                             ("lat_p50_us", "lat_p99_us", "all_answered_s", "unanswered"))
    answered = float(t_all.group(1)) if t_all and float(t_all.group(1)) >= 0 else None
    return (float(m.group(1)), cpu, float(q50.group(1)) if q50 else None, float(q99.group(1)) if q99 else None,
            answered, int(left.group(1)) if left else None)


def c10k_client(port, n, d):
    js = os.path.join(tmp, "load.json")
    if os.path.exists(js):
        os.unlink(js)
    _, cpu = timed([BIN, "load", f"127.0.0.1:{port}", "-c", str(n), "--depth", str(d), "-m", "64", "-d", f"{MEASURE:g}s",
                    "--warmup", f"{WARMUP:g}s", "--cpus", "1", "--json", js])
    try:
        doc = json.load(open(js))
        lat = doc.get("latency_us") or {}
        return doc["throughput"]["messages_per_second"], cpu, lat.get("p50"), lat.get("p99"), None, None
    except (OSError, ValueError, KeyError):
        return None


TICK = os.sysconf("SC_CLK_TCK")


def monitor_cpu():
    """CPU seconds the host's DAMON threads (kdamond) have used so far, or None where there are none:
    the monitor checks a page by visiting every process that maps it, so it costs more beside a server
    whose many processes map many pages (the fork family)."""
    total, found = 0, False
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read()
        except OSError:
            continue
        if st[st.index("(") + 1:st.rindex(")")].startswith("kdamond"):
            fields = st[st.rindex(")") + 2:].split()
            total, found = total + int(fields[11]) + int(fields[12]), True
    return total / TICK if found else None


def unaccepted(port):
    """Connections the kernel has completed on 127.0.0.1:port that the server has not yet accepted (a
    listening socket's rx_queue in /proc/net/tcp is its accept queue), or None when it is not listening.
    The kernel lists listening sockets first and makes the file as it is read, so stopping at the first
    other line costs nothing for the 20,000 connection lines after them."""
    key = f"0100007F:{port:04X}"
    try:
        with open("/proc/net/tcp") as f:
            next(f, None)  # the header
            for line in f:
                cols = line.split()
                if len(cols) < 5 or cols[3] != "0A":
                    break
                if cols[1] == key:
                    return int(cols[4].split(":")[1], 16)
    except OSError:
        pass
    return None


def context_switches(pid):
    """(voluntary, forced) context switches of process pid's threads so far, or None once it is gone."""
    vol = forced = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        forced += int(line.split()[1])
        except OSError:
            continue  # a thread that ended between the listing and the read
    return vol, forced


def backlog_while(port, out, done):
    """Fills out with the accept queue every 0.1 s until done is set: a server that has not accepted every
    connection serves fewer than the point's N (a thread per connection on one CPU accepts slowly under
    load), and which side accepted more changes its figures. The last sample is taken as the client ends,
    with its measured window."""
    while not done.wait(0.1):
        out.append(unaccepted(port))


def cell(server, client, n, d):
    """The client's figures, the host monitor's CPU seconds over the cell (None: no monitor), the
    connections not yet accepted (the most at once, and at the end), and the server's context switches
    over the client's run (voluntary, forced; None without --switches)."""
    p, port = server(n)
    try:
        before = monitor_cpu()
        ctx0 = context_switches(p.pid) if switches else None
        samples, done = [], threading.Event()
        sampler = threading.Thread(target=backlog_while, args=(port, samples, done), daemon=True)
        if port:
            sampler.start()
        got = client(port, n, d) if port else None
        done.set()
        ctx1 = context_switches(p.pid) if switches else None
        if port:
            sampler.join()
        after = monitor_cpu()
        known = [q for q in samples if q is not None]
        queue = [max(known), known[-1]] if known else []
        ctx = (ctx1[0] - ctx0[0], ctx1[1] - ctx0[1]) if ctx0 and ctx1 else None
        return got, (after - before if before is not None and after is not None else None), queue, ctx
    finally:
        stop(p)


def run_span(fig):
    """The seconds of a client's whole run, warm-up included: with --settled, until every connection was
    answered (at least the warm-up, at most GRID_SETTLE), then the measured window."""
    if not settled:
        return WARMUP + MEASURE
    return (max(WARMUP, fig[4]) if fig[4] is not None else SETTLE) + MEASURE


def answered_after(runs):
    """When a side had answered every connection, median over its runs, and how many runs did not get there
    within GRID_SETTLE (with the connections they had not answered when the window opened)."""
    ts = [g[4] for g in runs if g and g[4] is not None]
    late = [g[5] for g in runs if g and g[4] is None and g[5] is not None]
    return ((f"{statistics.median(ts):.2f} s" if ts else "never") +
            (f" ({len(late)} of {len(runs)} runs not within {SETTLE:g} s: "
             f"{statistics.median(late):,.0f} unanswered when the window opened, median)" if late else ""))


if models:
    plans = [(m, {"C " + m: (c_server(m), c_client), "c10k " + m: (c10k_server(m), c_client),
                  **({f"c10k {m} {' '.join(also)}": (c10k_server(m, also), c_client)} if also else {})})
             for m in models]
else:
    plans = [("client", {"C pair": (c_server("epoll"), c_client), "c10k server": (c10k_server("epoll"), c_client),
                         "C server + c10k load": (c_server("epoll"), c10k_client),
                         "c10k pair": (c10k_server("epoll"), c10k_client)})]

print(f"seed {SEED}, {ROUNDS} rounds per point, server CPU 0, client CPU 1, 64 B, {WARMUP:g} s warm-up, "
      f"{MEASURE:g} s measured", flush=True)
behind = []
try:
    for name, sides in plans:
        if name in TWINS and TWINS[name][0] is None:
            print(f"{name}: skipped ({TWINS[name][1]})")
            continue
        ref = next(iter(sides))
        for n, d in GRID:
            got = {k: [] for k in sides}
            monitor = {k: [] for k in sides}
            queued = {k: [] for k in sides}
            switched = {k: [] for k in sides}
            for _ in range(ROUNDS):
                order = list(sides)
                rng.shuffle(order)
                for k in order:
                    srv, cli = sides[k]
                    figures, mon, queue, ctx = cell(srv, cli, n, d)
                    got[k].append(figures)
                    if ctx and figures and figures[0] > 0:
                        # per echo over the client's whole run, warm-up included (as the client CPU/msg)
                        switched[k].append([c / (figures[0] * run_span(figures)) for c in ctx])
                    if len(queue) == 2 and None not in queue:
                        queued[k].append(queue)
                    if mon is not None:
                        monitor[k].append(mon)
            base = statistics.median([g[0] for g in got[ref] if g] or [0])
            print(f"{name} N={n} D={d}: {ref} {base:,.0f} msg/s", flush=True)
            if all(monitor.values()):
                print("   the host's DAMON (kdamond) CPU per cell, median: " +
                      ", ".join(f"{k} {statistics.median(v):.2f} s" for k, v in monitor.items()), flush=True)
            if any(q[0] or q[1] for v in queued.values() for q in v):
                print("   not yet accepted, the most at once → at the end, median: " +
                      ", ".join(f"{k} {statistics.median(q[0] for q in v):,.0f} → {statistics.median(q[1] for q in v):,.0f}"
                                for k, v in queued.items() if v) + f" of {n}", flush=True)
            if settled:
                print("   every connection answered after, median: " +
                      ", ".join(f"{k} {answered_after(v)}" for k, v in got.items()), flush=True)
            if switches and all(switched.values()):
                print("   server context switches per echo, voluntary + forced, median: " +
                      ", ".join(f"{k} {statistics.median(c[0] for c in v):.3f} + {statistics.median(c[1] for c in v):.3f}"
                                for k, v in switched.items()), flush=True)
            for k in sides:
                if k == ref:
                    continue
                pairs = [(a[0] / b[0]) for a, b in zip(got[k], got[ref]) if a and b and a[0] > 0 and b[0] > 0]
                if len(pairs) < 2:
                    print(f"   {k:<22} no result in {ROUNDS - len(pairs)} of {ROUNDS} rounds")
                    behind.append(f"{k} {n}:{d}")
                    continue
                g, lo, hi = interval(pairs)
                # the client's CPU (wait4, warm-up included) over the messages of its run, where the client differs
                cpu = [a[1] / (a[0] * run_span(a)) * 1e6 for a in got[k] if a]
                cpu_ref = [b[1] / (b[0] * run_span(b)) * 1e6 for b in got[ref] if b]
                cpus = (f"  client CPU/msg {statistics.median(cpu):.2f} µs (C client {statistics.median(cpu_ref):.2f})"
                        if ("load" in k or "pair" in k) and cpu and cpu_ref else "")
                v = verdict(lo, hi)
                print(f"   {k:<22} {g:.2f}× [{lo:.2f}, {hi:.2f}] {v}{cpus}", flush=True)
                if v == "behind":
                    behind.append(f"{k} {n}:{d} {g:.2f}")
                for q, col in (("p50", 2), ("p99", 3)) + ((("all answered", 4),) if settled else ()):
                    tp = [(a[col] / b[col]) for a, b in zip(got[k], got[ref]) if a and b and a[col] and b[col]]
                    if len(tp) < 2:
                        continue
                    g2, lo2, hi2 = interval(tp)
                    v2 = verdict(lo2, hi2, lower_is_better=True)
                    mine = statistics.median([a[col] for a in got[k] if a and a[col]])
                    theirs = statistics.median([b[col] for b in got[ref] if b and b[col]])
                    unit = "s" if col == 4 else "µs"
                    print(f"   {'  ' + q:<22} {g2:.2f}× [{lo2:.2f}, {hi2:.2f}] {v2}  ({mine:,.{2 * (col == 4)}f} {unit} "
                          f"against {theirs:,.{2 * (col == 4)}f})", flush=True)
                    if tails and v2 == "behind":
                        behind.append(f"{k} {q} {n}:{d} {g2:.2f}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("behind: " + (", ".join(behind) if behind else "none"))
sys.exit(1 if behind else 0)
