#!/usr/bin/env python3
"""c10k's HTTP load generator against wrk, and c10k's epoll HTTP server against its C twin, in paired rounds.

  bench/wrk.py BIN [ROUNDS] [N:D ...] [--servers nginx,c10k,c]   `c10k load` against wrk (default)
  bench/wrk.py BIN [ROUNDS] [N:D ...] --twin                     c10k's server against bench/c/ephttp.c

BIN is c10k (target/release/c10k). ROUNDS defaults to 6, the points to 100:1 1000:1 100:16 (N connections,
D requests pipelined on each).

Default mode: at each point, every round drives each server once with wrk and once with `c10k load`, every
cell with a freshly started server, stopped after its client (the order of the cells is shuffled per round;
the seed is printed, GRID_SEED=N repeats it). The servers (--servers picks some; default all, a missing
one skipped with the reason):
  nginx   peers/nginx_http.sh (the distribution's nginx, one worker) under taskset -c 0
  c10k    BIN serve --model epoll --protocol http --cpus 0
  c       bench/c/ephttp.c (built with gcc -O2), pinned to CPU 0 by itself
The clients, on CPU 1, one thread each, both sending `GET / HTTP/1.1` with a Host header (41 B):
  wrk        taskset -c 1 wrk -t1 -cN -dMEASURE --latency http://127.0.0.1:PORT/
             (D > 1: -s bench/wrk/pipeline.lua -- D, D requests in one write, as wrk's scripts/pipeline.lua)
  c10k load  BIN load 127.0.0.1:PORT --protocol http -c N --depth D -t 1 --cpus 1 -d MEASURE --json F
For each server and point, a row per figure gives the ratio c10k load / wrk of each round, as the geometric
mean of the rounds' ratios with its 95 % interval (Student t over the log ratios), the two sides' medians,
and a verdict: ahead (the interval lies on c10k's better side of 1), level (it holds 1), behind:
  requests/s            wrk's "Requests/sec", c10k's throughput.messages_per_second (higher is better)
  p50, p99              wrk's "Latency Distribution" 50% and 99% (us, ms, s, m, h), c10k's latency_us
                        (lower is better)
  client CPU/request    user + system CPU of the client's process (wait4) over the responses it read:
                        wrk's "N requests in", c10k's http.responses (lower is better)

Each point also prints, for each side, the closed loop's cycle N·D/rate (Little's law: the mean time from
one request's write to the next's on a connection) beside the client's mean latency: the share of the cycle
a client's latency covers. wrk writes a connection's next request on the pass of its loop after the one that
read its response, and starts the timer then, so that wait is in neither the cycle's latency share nor its
p50; c10k load writes in the pass that read the response.

--twin: every round runs c10k's epoll HTTP server (as above) and the C twin ephttp, each driven by the same
pinned client: c10k load (one latency per request, and a p99 at every point; --twin-wrk drives both with wrk). Rows as above, as ratios c10k / C: requests/s,
p50, p99 (both sides measured by the same client, so comparable at any D), and the server's CPU per request:
the server process's utime + stime (/proc/PID/stat, clock ticks) from just before its client's measured
run starts to just after it ends, over the responses that client read.

Warm-up: wrk has none, so neither side gets one inside its measured run. Instead each cell first gives its
own client a warm-up run of GRID_WARMUP seconds (default 1) against the cell's fresh server: started with
its usual flags, stopped with SIGINT after that long (both end on it within milliseconds), its figures
dropped. Then a fresh process of the same client is measured for GRID_MEASURE seconds (default 4) from its
start, connects included, c10k load with no --warmup. GRID_WARMUP=0 skips the warm-up run. wrk's -d takes
whole seconds, so GRID_MEASURE must be whole wherever wrk runs.

What the two clients count differently, so what the ratios mean:
  - wrk's rate is every response from about when its threads start connecting until they stop, which
    they check every 100 ms once -d has passed, over that whole time (a 1 s run reports 1.0 to 1.1 s,
    its connects included); c10k load's counts the responses that arrive in its window, which opens once every
    connection is up and lasts -d. A status above 399 is still a request to wrk (its "Non-2xx or 3xx
    responses"); a cell where either client saw a status other than 2xx or 3xx, or a socket error, is
    printed as such and gives no ratio.
  - Pipelining: wrk sends a batch of D requests, sends the next only when all D are back (not a window of D
    in flight, as c10k load keeps), and records one latency per batch: from the batch's first write to its
    last response (wrk.c: c->start is taken when a batch is written, recorded when --c->pending reaches 0).
    c10k load records one latency per request, from its send to its response. So at D > 1 the p50 and p99
    rows compare different things: they are printed, marked, and not counted in the exit status.
  - wrk corrects its latency histogram for coordinated omission after the run (stats_correct, wrk 4):
    for every sample of at least twice the mean time per request on a connection (its runtime over
    requests per connection), it adds samples at that latency minus 1, 2, ... times the mean. c10k load
    reports the samples it took. So wherever the tail is long, wrk's p75 to p99 (and with a very long
    one its p50) lie above what it timed, and c10k load's can read lower than wrk's against the same
    server without being faster; at D > 1, where a batch takes about D times the mean per request, most
    batches get such samples.

Where wrk, nginx or gcc is missing, what needs it prints "skipped (why)", never a number. Exit 0 when
nothing is behind, 1 when something is (any row of --twin; by default every row but the p50 and p99 at
D > 1), 2 for arguments it cannot run (one line on stderr naming what was typed, before anything is built or
run). A row with fewer than 2 paired rounds of results reads "no result" and counts as behind. Traffic goes
to 127.0.0.1 only. Every server runs in a session of its own and is stopped after its cell, also on SIGTERM
and Ctrl-C: SIGTERM (SIGKILL after 5 s), then whatever is left of its session killed (nginx's master and
worker run under the script); the C twin exits by itself after 60 s or more. Every client is killed on
SIGTERM or Ctrl-C too, and when it runs 30 s past its time.
"""
import json, math, os, random, re, select, shutil, signal, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from paired import free_port, interval, plan_of, refuse, said_ready, seconds, stop, verdict, wait_listening  # noqa: E402

BENCH = os.path.dirname(os.path.realpath(__file__))
NGINX_SH = os.path.join(os.path.dirname(BENCH), "peers", "nginx_http.sh")
PIPELINE = os.path.join(BENCH, "wrk", "pipeline.lua")
SERVER_NAMES = ("nginx", "c10k", "c")


args = sys.argv[1:]
twin = "--twin" in args
TWIN_WITH_WRK = "--twin-wrk" in args
twin = twin or TWIN_WITH_WRK
args = [a for a in args if a not in ("--twin", "--twin-wrk")]
chosen = None
if "--servers" in args:
    i = args.index("--servers")
    if i + 1 >= len(args):
        refuse("--servers needs a list, e.g. --servers nginx,c10k,c")
    chosen = args[i + 1].split(",")
    del args[i:i + 2]
    unknown = [s for s in chosen if s not in SERVER_NAMES]
    if unknown or not chosen:
        refuse(f"--servers {','.join(chosen)}: the servers are {', '.join(SERVER_NAMES)}")
    if twin:
        refuse("--servers chooses the servers wrk and c10k load drive; --twin is c10k's server against C's")
if not args:
    print(__doc__)
    sys.exit(2)
flags = [a for a in args if a.startswith("--")]
if flags:
    refuse(f"{flags[0]}: not a flag of bench/wrk.py (--servers, --twin, --twin-wrk)")
BIN, ROUNDS, POINTS, SEED = plan_of(args, "bench/wrk.py", 6, [(100, 1), (1000, 1), (100, 16)],
                                    "requests pipelined")
WARMUP = seconds("GRID_WARMUP", "1", least_exclusive=False)
MEASURE = seconds("GRID_MEASURE", "4")
WRK = shutil.which("wrk")
WRK_WHY = None if WRK else "wrk is not installed: apt-get install wrk"
if WRK and MEASURE != int(MEASURE):
    refuse(f"GRID_MEASURE={os.environ.get('GRID_MEASURE')}: wrk measures whole seconds (-d), give a whole number")
if not shutil.which("taskset"):
    refuse("taskset is not installed (apt-get install util-linux): the server and client are pinned with it")
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
NGINX_WHY = None if NGINX else "nginx is not installed: apt-get install nginx-light"
# How long the C twin serves before it exits by itself: past the longest cell.
ALIVE = str(int(max(60, WARMUP + MEASURE + 30)))
# A client still running this long after its time is killed.
GRACE = 30


def _stop_on_signal(signum, _frame):
    raise SystemExit(128 + signum)  # unwinds through cell()'s finally, which stops the server it started


signal.signal(signal.SIGTERM, _stop_on_signal)
rng = random.Random(SEED)
tmp = tempfile.mkdtemp()


def build_twin():
    """bench/c/ephttp.c built into the temporary directory, or None and why."""
    if not shutil.which("gcc"):
        return None, "gcc is not installed: apt-get install gcc"
    out = os.path.join(tmp, "ephttp")
    r = subprocess.run(["gcc", "-O2", "-o", out, os.path.join(BENCH, "c", "ephttp.c")], capture_output=True,
                       text=True)
    if r.returncode == 0:
        return out, None
    last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "?"
    return None, f"building bench/c/ephttp.c failed: {last}"


EPHTTP, EPHTTP_WHY = build_twin()


# Servers: each starts one on a free port of 127.0.0.1 on CPU 0, in a session of its own; (process, port),
# the port None when it did not come up (with why in the process's .why).
def start_server(cmd, port, says_ready):
    log = open(os.path.join(tmp, "server.log"), "w+b")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE if says_ready else log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    p.log = log
    up = (said_ready(p) if says_ready else True) and wait_listening(port, p, limit=10.0)
    if not up:
        log.seek(0)
        lines = log.read().decode(errors="replace").strip().splitlines()
        p.why = "it did not listen" + (f": {lines[-1]}" if lines else "")
    return p, (port if up else None)


def nginx_server():
    port = free_port(rng)
    return start_server(["taskset", "-c", "0", "sh", NGINX_SH, str(port)], port, False)


def c10k_server():
    port = free_port(rng)
    return start_server([BIN, "serve", "--model", "epoll", "--protocol", "http", "--cpus", "0", "--port", str(port)],
                        port, True)


def c_server():
    port = free_port(rng)
    return start_server([EPHTTP, str(port), "0", ALIVE], port, True)


def stop_server(p):
    """SIGTERM, then whatever of its session is left (nginx's master and worker under the script) killed."""
    try:
        stop(p)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p.log.close()


# Clients.
def run(cmd, length, interrupt=False):
    """Run a client to its end: its stdout and the CPU seconds it used (wait4). With interrupt, it gets a
    SIGINT after `length` seconds (the warm-up run); else it is expected to end by itself by then. Killed
    when it is GRACE seconds late, and on any exception (SIGTERM, Ctrl-C) while it runs."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    chunks = []
    try:
        start = time.monotonic()
        interrupted = False
        while True:
            late = start + length + (0 if interrupt and not interrupted else GRACE)
            left = late - time.monotonic()
            if left <= 0:
                if interrupt and not interrupted:
                    p.send_signal(signal.SIGINT)
                    interrupted = True
                    continue
                p.kill()
                break
            if select.select([p.stdout], [], [], min(left, 0.5))[0]:
                chunk = os.read(p.stdout.fileno(), 65536)
                if not chunk:
                    break
                chunks.append(chunk)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        return b"".join(chunks).decode(errors="replace"), ru.ru_utime + ru.ru_stime
    finally:
        if p.returncode is None:
            p.kill()
            p.wait()
        p.stdout.close()


UNITS = {"us": 1, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}


def wrk_cmd(port, n, d, length):
    script = ["-s", PIPELINE] if d > 1 else []
    return (["taskset", "-c", "1", WRK, "-t1", f"-c{n}", f"-d{length}s", "--latency", *script,
             f"http://127.0.0.1:{port}/"] + (["--", str(d)] if d > 1 else []))


def wrk_client(port, n, d):
    """{rate, p50, p99 (µs), cpu (s), requests} of a measured wrk run, or (None, why)."""
    out, cpu = run(wrk_cmd(port, n, d, int(MEASURE)), MEASURE)
    rate = re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M)
    total = re.search(r"^\s+(\d+) requests in ", out, re.M)
    lat = {q: re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s|m|h)\s*$", out, re.M) for q in ("50", "99")}
    avg = re.search(r"^\s+Latency\s+([\d.]+)(us|ms|s|m|h)\s", out, re.M)
    if not (rate and total and avg and all(lat.values())):
        return None, "wrk printed no result" + (f" ({out.strip().splitlines()[-1]})" if out.strip() else "")
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if bad or sock:
        return None, "wrk: " + "; ".join(m.group(0) for m in (bad, sock) if m)
    # A percentile past the range of wrk's corrected histogram prints as 0.00us (seen at 100:16 against
    # 1.6 M requests/s): no figure, never a zero.
    q = {k: (float(m.group(1)) * UNITS[m.group(2)]) or None for k, m in lat.items()}
    return {"rate": float(rate.group(1)), "p50": q["50"], "p99": q["99"], "cpu": cpu,
            "mean": float(avg.group(1)) * UNITS[avg.group(2)], "requests": int(total.group(1))}, None


def load_cmd(port, n, d, length, js=None):
    return ([BIN, "load", f"127.0.0.1:{port}", "--protocol", "http", "-c", str(n), "--depth", str(d), "-t", "1",
             "--cpus", "1", "-d", f"{length:g}s"] + (["--json", js] if js else []))


def load_client(port, n, d):
    """{rate, p50, p99 (µs), cpu (s), requests} of a measured `c10k load` run, or (None, why)."""
    js = os.path.join(tmp, "load.json")
    if os.path.exists(js):
        os.unlink(js)
    _, cpu = run(load_cmd(port, n, d, MEASURE, js), MEASURE)
    try:
        doc = json.load(open(js))
        http, lat = doc["http"], doc["latency_us"]
        fig = {"rate": doc["throughput"]["messages_per_second"], "p50": lat["p50"], "p99": lat["p99"], "cpu": cpu,
               "mean": lat["mean"], "requests": http["responses"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None, "c10k load wrote no report"
    bad = {k: v for k, v in (http.get("status") or {}).items() if not 200 <= int(k) < 400}
    errs = {k: v for k, v in (doc.get("errors") or {}).items() if v}
    if bad or errs or http.get("errors"):
        return None, "c10k load: " + (", ".join([f"status {k} ×{v}" for k, v in bad.items()] +
                                               [f"{k} {v}" for k, v in errs.items()]) or "HTTP errors")
    if not fig["rate"] or not fig["p50"] or not fig["p99"]:
        return None, "c10k load measured no responses"
    return fig, None


def warm(client, port, n, d):
    """The client's warm-up run: its usual command, stopped with SIGINT after GRID_WARMUP seconds."""
    if WARMUP <= 0:
        return
    length = int(math.ceil(WARMUP)) + 60
    cmd = wrk_cmd(port, n, d, length) if client is wrk_client else load_cmd(port, n, d, length)
    run(cmd, WARMUP, interrupt=True)


TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    """The CPU seconds (user + system) process pid has used so far, all its threads, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
    except OSError:
        return None
    fields = st[st.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def cell(server, client, n, d):
    """A fresh server, the client's warm-up run, its measured run, the server stopped: the client's figures
    with the server's CPU seconds over the measured run ("server_cpu"), or (None, why)."""
    p, port = server()
    try:
        if port is None:
            return None, p.why
        warm(client, port, n, d)
        before = proc_cpu(p.pid)
        fig, why = client(port, n, d)
        after = proc_cpu(p.pid)
        if fig is not None:
            fig["server_cpu"] = after - before if before is not None and after is not None else None
        return fig, why
    finally:
        stop_server(p)


# The plans: for each pair of sides, which is the reference (the ratio's denominator), and the figures.
FIGURES = (("requests/s", "rate", False), ("p50", "p50", True), ("p99", "p99", True))
if twin:
    TWIN_CLIENT, TWIN_CLIENT_NAME = ((wrk_client, "wrk") if TWIN_WITH_WRK and WRK else
                                     (load_client, "c10k load"))
    sides = {"C ephttp": (c_server, TWIN_CLIENT), "c10k": (c10k_server, TWIN_CLIENT)}
    skipped = {} if EPHTTP else {"twin": EPHTTP_WHY}
    pairs = [("twin", "c10k", "C ephttp")] if EPHTTP else []
    extra = ("server CPU/request", "server_cpu")
    header = f"c10k's epoll HTTP server against bench/c/ephttp.c, both driven by {TWIN_CLIENT_NAME}"
else:
    names = chosen or list(SERVER_NAMES)
    why_not = {"nginx": NGINX_WHY, "c10k": None, "c": EPHTTP_WHY}
    skipped = {s: WRK_WHY or why_not[s] for s in names if WRK_WHY or why_not[s]}
    starters = {"nginx": nginx_server, "c10k": c10k_server, "c": c_server}
    sides = {}
    pairs = []
    for s in names:
        if s in skipped:
            continue
        sides[f"{s} wrk"] = (starters[s], wrk_client)
        sides[f"{s} c10k load"] = (starters[s], load_client)
        pairs.append((s, f"{s} c10k load", f"{s} wrk"))
    extra = ("client CPU/request", "cpu")
    header = "c10k load against wrk"

print(f"{header}: seed {SEED}, {ROUNDS} rounds per point, server CPU 0, client CPU 1, GET / (Hello, World!), "
      f"{WARMUP:g} s warm-up run, {MEASURE:g} s measured", flush=True)
for name, why in skipped.items():
    print(f"{name}: skipped ({why})", flush=True)
behind = []


def figure(fig, key):
    """One figure of a cell (None where the cell gave none); CPU seconds as µs per response read."""
    v = fig.get(key) if fig else None
    if key in ("cpu", "server_cpu") and v is not None:
        return v / fig["requests"] * 1e6 if fig["requests"] else None
    return v


def row(label, g, lo, hi, v, mine, theirs, unit, note=""):
    digits = 2 if unit.startswith("µs/") else 0
    print(f"   {label:<20} {g:.2f}× [{lo:.2f}, {hi:.2f}] {v}  ({mine:,.{digits}f} {unit} against "
          f"{theirs:,.{digits}f}){note}", flush=True)


try:
    for n, d in POINTS if pairs else []:
        got = {k: [] for k in sides}
        whys = {k: [] for k in sides}
        for _ in range(ROUNDS):
            order = list(sides)
            rng.shuffle(order)
            for k in order:
                server, client = sides[k]
                fig, why = cell(server, client, n, d)
                got[k].append(fig)
                if why:
                    whys[k].append(why)
        for name, mine, ref in pairs:
            rates = {k: statistics.median([g["rate"] for g in got[k] if g] or [0]) for k in (ref, mine)}
            print(f"{name} N={n} D={d}: " + ", ".join(f"{k} {v:,.0f} req/s" for k, v in rates.items()) +
                  " (median)", flush=True)
            # Little's law: a closed loop's cycle is N·D / rate; the share of it a client's mean latency
            # covers says what its latency leaves out (wrk starts its timer when it writes, on the next
            # pass of its loop after the response before it, so that wait is in neither its latency nor
            # c10k load's, which writes in the pass that read the response).
            cycle = {k: [(n * d / g["rate"] * 1e6, g["mean"]) for g in got[k] if g and g["rate"] and g.get("mean")]
                     for k in (ref, mine)}
            if all(cycle.values()):
                print("   cycle N·D/rate, mean latency (median): " + ", ".join(
                    f"{k} {statistics.median(c for c, _ in v):,.0f} µs, {statistics.median(m for _, m in v):,.0f} µs"
                    for k, v in cycle.items()), flush=True)
            for k in (ref, mine):
                for why in sorted(set(whys[k])):
                    print(f"   {k}: no result in {whys[k].count(why)} of {ROUNDS} rounds: {why}", flush=True)
            for label, key, lower in FIGURES + ((extra[0], extra[1], True),):
                per = key in ("cpu", "server_cpu")
                both = [(figure(a, key), figure(b, key)) for a, b in zip(got[mine], got[ref])]
                ratios = [a / b for a, b in both if a and b]
                if len(ratios) < 2:
                    print(f"   {label:<20} no result in {ROUNDS - len(ratios)} of {ROUNDS} rounds", flush=True)
                    behind.append(f"{name} {label} {n}:{d}")
                    continue
                g, lo, hi = interval(ratios)
                v = verdict(lo, hi, lower_is_better=lower)
                unit = "µs/request" if per else "µs" if lower else "req/s"
                batch = not twin and key in ("p50", "p99") and d > 1
                note = f"  [wrk: one latency per batch of {d}, not counted]" if batch else ""
                row(label, g, lo, hi, v, statistics.median(a for a, _ in both if a),
                    statistics.median(b for _, b in both if b), unit, note)
                if v == "behind" and not batch:
                    behind.append(f"{name} {label} {n}:{d} {g:.2f}")
except KeyboardInterrupt:
    sys.exit(130)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("behind: " + (", ".join(behind) if behind else "none"))
sys.exit(1 if behind else 0)
