#!/usr/bin/env bash
# bench/peers.sh — c10k load side by side with the tools people use today,
# on this machine, in one run (issue 3, "Performance, side by side").
#
#   1. closed loop, 100 connections, 64 B, against `c10k serve --model epoll`:
#      round trips per second and client CPU per message of c10k load and of
#      tcp-echo-benchmark (the crates.io echo benchmark with rust_echo_bench's
#      flags, on tokio), both pinned to CPU 1 with the server on CPU 0;
#   2. one connection, 64 B: p50 round trip of c10k load against
#      `c10k serve --model epoll`, beside `sockperf ping-pong --full-rtt`
#      against `sockperf sr` (it speaks only its own framing), pinned the
#      same way;
#   3. 10,000 and 100,000 connections: time to establish them and client
#      memory per connection (the server side for 100,000 is several
#      `c10k serve --reuseport` processes on one port).
#
# It installs the peers if they are missing (cargo install, apt-get), builds
# c10k in release, and prints each figure and the ratios. Traffic goes to
# 127.0.0.1 only; every step is bounded in time; every process it starts is
# stopped on exit, however it exits.
#
# Usage: bench/peers.sh [--quick] [--out DIR]
#   --quick    2 s per measurement instead of 10 s (a smoke test)
#   --out DIR  keep the raw outputs (JSON, peer logs) in DIR
#
# C10K=PATH uses that c10k binary instead of building this checkout's.
#
# Needs 2 CPUs (the server on CPU 0, the clients on CPU 1), jq, taskset,
# GNU time, ss; root or sudo to install what is missing.

set -euo pipefail

DURATION=10
OUT=""
while (($#)); do
    case "$1" in
    --quick) DURATION=2 ;;
    --out)
        OUT="${2:?--out needs a directory}"
        shift
        ;;
    -h | --help)
        sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
        exit 0
        ;;
    *)
        echo "peers.sh: unknown argument: $1 (try --help)" >&2
        exit 2
        ;;
    esac
    shift
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD=1
[[ -n "${C10K:-}" ]] && BUILD=0
C10K="${C10K:-$ROOT/target/release/c10k}"
# The peer the issue names; pinned so its output format, parsed below,
# cannot change under us.
ECHO_BENCH_CRATE=tcp-echo-benchmark
ECHO_BENCH_VERSION=0.1.1
SERVER_CPU=0
CLIENT_CPU=1
# Slack on top of a measurement before `timeout` gives up on a command.
SLACK=120

WORK="$(mktemp -d "${TMPDIR:-/tmp}/c10k-peers.XXXXXX")"
PIDS=()
FAILED=()

say() { printf '%s\n' "$*"; }
warn() { printf 'peers.sh: %s\n' "$*" >&2; }
die() {
    warn "$*"
    exit 1
}

# Stops the servers we started: SIGTERM, a bounded wait, then SIGKILL.
stop_servers() {
    local pid i
    ((${#PIDS[@]})) || return 0
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for ((i = 0; i < 50; i++)); do
        local alive=0
        for pid in "${PIDS[@]}"; do
            if kill -0 "$pid" 2>/dev/null; then alive=1; fi
        done
        ((alive)) || break
        sleep 0.1
    done
    for pid in "${PIDS[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    PIDS=()
}

cleanup() {
    stop_servers
    if [[ -n "$OUT" ]]; then
        mkdir -p "$OUT" && cp -r "$WORK"/. "$OUT"/ && say "raw outputs kept in $OUT"
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- setup

as_root() {
    if ((EUID == 0)); then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        die "need root to run: $*"
    fi
}

# apt_install PACKAGE…: install with apt-get, updating the index first if
# the package is unknown.
apt_install() {
    command -v apt-get >/dev/null || die "install $* by hand (no apt-get here)"
    as_root env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y "$@" ||
        {
            as_root timeout 600 apt-get update &&
                as_root env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y "$@"
        } ||
        die "cannot install $*"
}

ECHO_BENCH=""
install_peers() {
    command -v jq >/dev/null || apt_install jq
    command -v sockperf >/dev/null || apt_install sockperf
    [[ -x /usr/bin/time ]] || apt_install time
    command -v taskset >/dev/null || apt_install util-linux
    command -v ss >/dev/null || apt_install iproute2
    local cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
    ECHO_BENCH="$(command -v tcp-echo-benchmark || true)"
    [[ -n "$ECHO_BENCH" ]] || ECHO_BENCH="$cargo_bin/tcp-echo-benchmark"
    if [[ ! -x "$ECHO_BENCH" ]]; then
        say "installing $ECHO_BENCH_CRATE $ECHO_BENCH_VERSION"
        timeout 900 cargo install --locked "$ECHO_BENCH_CRATE" --version "$ECHO_BENCH_VERSION" ||
            die "cannot install $ECHO_BENCH_CRATE"
        ECHO_BENCH="$cargo_bin/tcp-echo-benchmark"
    fi
}

check_machine() {
    taskset -c "$SERVER_CPU,$CLIENT_CPU" true 2>/dev/null ||
        die "needs CPUs $SERVER_CPU and $CLIENT_CPU (server and client pinned apart); this machine has $(nproc)"
    # Servers and clients inherit this; 100,000 connections need it.
    local hard
    hard="$(ulimit -Hn)"
    [[ "$hard" == unlimited ]] && hard="$(cat /proc/sys/fs/nr_open)"
    ulimit -n "$hard"
}

# ---------------------------------------------------------------- helpers

# start_server LOG CMD…: starts a server in the background (recorded for
# cleanup). Its READY line, if it prints one, goes to LOG.
start_server() {
    local log="$1"
    shift
    : >"$log"
    "$@" >"$log" 2>"$log.err" </dev/null &
    PIDS+=("$!")
}

# ready_port LOG PID: waits (at most 30 s) for `READY ip:port` in LOG and
# prints the port.
ready_port() {
    local log="$1" pid="$2" i line
    for ((i = 0; i < 300; i++)); do
        line="$(grep -m1 '^READY ' "$log" || true)"
        if [[ -n "$line" ]]; then
            say "${line##*:}"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || {
            warn "server exited before READY: $(cat "$log.err")"
            return 1
        }
        sleep 0.1
    done
    warn "no READY line from the server within 30 s"
    return 1
}

# listening PORT PID: waits (at most 30 s) until something listens on
# 127.0.0.1:PORT (for sockperf, which prints no READY line).
listening() {
    local port="$1" pid="$2" i
    for ((i = 0; i < 300; i++)); do
        [[ -n "$(ss -Hltn "sport = :$port")" ]] && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# free_port: a port below the ephemeral range that nothing listens on.
free_port() {
    local low base=10000 port i
    read -r low _ </proc/sys/net/ipv4/ip_local_port_range
    ((low > base + 1000)) || base=1024
    for ((i = 0; i < 100; i++)); do
        port=$((base + RANDOM % (low - base)))
        [[ -z "$(ss -Htan "sport = :$port")" ]] && {
            say "$port"
            return 0
        }
    done
    return 1
}

# bounded CMD…: runs a measuring command for at most DURATION + SLACK
# seconds (then SIGTERM, and SIGKILL 10 s later). --foreground keeps it in
# our process group, so a Ctrl-C reaches it at once.
bounded() { timeout --foreground -k 10 $((DURATION + SLACK)) "$@"; }

# json FILE PATH: one number from c10k load's JSON (fails if absent).
json() { jq -er "$2" "$1"; }

# calc FORMAT EXPR: floating-point arithmetic, printed with FORMAT.
calc() { awk "BEGIN { printf \"$1\", $2 }"; }

# c10k_load NAME ARGS…: runs c10k load against 127.0.0.1 with --json
# $WORK/NAME.json; its output goes to $WORK/NAME.log.
c10k_load() {
    local name="$1"
    shift
    if ! bounded "$C10K" load "$@" --json "$WORK/$name.json" \
        >"$WORK/$name.log" 2>&1; then
        warn "c10k load ($name) failed:"
        tail -n 5 "$WORK/$name.log" >&2
        return 1
    fi
}

row() { printf '  %-34s %16s %16s %10s\n' "$@"; }

# num FORMAT VALUE: VALUE printed with FORMAT, or "-" when it is missing.
num() { if [[ -n "$2" ]]; then calc "$1" "$2"; else say "-"; fi; }

# ratio FORMAT A B: A / B with FORMAT and an "x", or "-" when either is
# missing or B is zero.
ratio() {
    if [[ -n "$2" && -n "$3" ]] && awk "BEGIN { exit !($3 != 0) }"; then
        say "$(calc "$1" "$2 / $3")x"
    else
        say "-"
    fi
}

# ---------------------------------------------------------------- 1

# Closed loop, 100 connections, 64 B messages, same duration, both clients
# pinned to CLIENT_CPU, the server to SERVER_CPU. Either client's figures
# are printed even when the other failed.
compare_throughput() {
    say ""
    say "1. closed loop, 100 connections, 64 B, ${DURATION} s, against c10k serve --model epoll"
    local port pid ok=1
    start_server "$WORK/1-serve.out" "$C10K" serve --model epoll --cpus "$SERVER_CPU"
    pid="${PIDS[-1]}"
    port="$(ready_port "$WORK/1-serve.out" "$pid")" || return 1

    local c_rate="" c_cpu=""
    if c10k_load 1-c10k "127.0.0.1:$port" -c 100 -m 64 -d "${DURATION}s" \
        --cpus "$CLIENT_CPU"; then
        c_rate="$(json "$WORK/1-c10k.json" .throughput.messages_per_second)" || ok=0
        c_cpu="$(json "$WORK/1-c10k.json" .client.cpu_per_message_us)" || ok=0
    else
        ok=0
    fi

    # tcp-echo-benchmark prints (0.1.1):
    #   Benchmarking 127.0.0.1:P with 100 clients, 64 bytes, 10 seconds
    #   Throughput: N request/sec, N response/sec
    #   Total: N requests, N responses
    # and GNU time -f "%U %S" -o FILE writes "user system" seconds to FILE.
    # Its tokio runtime sizes itself to the CPUs it may use: one, pinned.
    # (`bounded` spelt out: time runs programs, not shell functions; the CPU
    # it reports includes timeout's own, a few milliseconds.)
    local p_rate="" p_cpu="" responses="" user="" sys=""
    if /usr/bin/time -f "%U %S" -o "$WORK/1-peer.time" \
        timeout --foreground -k 10 $((DURATION + SLACK)) \
        taskset -c "$CLIENT_CPU" "$ECHO_BENCH" -a "127.0.0.1:$port" -l 64 -c 100 \
        -t "$DURATION" >"$WORK/1-peer.log" 2>&1; then
        responses="$(sed -n 's/^Total: [0-9]* requests, \([0-9]*\) responses$/\1/p' \
            "$WORK/1-peer.log")"
        read -r user sys <"$WORK/1-peer.time" || true
        if [[ "$responses" =~ ^[0-9]+$ && "$responses" -gt 0 && -n "$sys" ]]; then
            p_rate="$(calc %.3f "$responses / $DURATION")"
            p_cpu="$(calc %.6f "($user + $sys) * 1e6 / $responses")"
        else
            warn "cannot read tcp-echo-benchmark's figures from:" \
                "$(cat "$WORK/1-peer.log" "$WORK/1-peer.time")"
            ok=0
        fi
    else
        warn "tcp-echo-benchmark failed:"
        tail -n 5 "$WORK/1-peer.log" >&2
        ok=0
    fi
    stop_servers

    row "" "c10k load" "tcp-echo-bench" "c10k/peer"
    row "round trips per second" "$(num %.0f "$c_rate")" "$(num %.0f "$p_rate")" \
        "$(ratio %.2f "$c_rate" "$p_rate")"
    row "client CPU per message (us)" "$(num %.3f "$c_cpu")" "$(num %.3f "$p_cpu")" \
        "$(ratio %.2f "$c_cpu" "$p_cpu")"
    say "  (aim: at least 2x the round trips for the same CPU per message or less)"
    ((ok))
}

# ---------------------------------------------------------------- 2

# One connection, 64 B: p50 round trip, each client against its own kind of
# server, pinned the same way. Either figure is printed even when the other
# failed.
compare_latency() {
    say ""
    say "2. one connection, 64 B, ${DURATION} s: p50 round trip"
    local port pid ok=1 c_p50="" s_p50=""
    start_server "$WORK/2-serve.out" "$C10K" serve --model epoll --cpus "$SERVER_CPU"
    pid="${PIDS[-1]}"
    if port="$(ready_port "$WORK/2-serve.out" "$pid")" &&
        c10k_load 2-c10k "127.0.0.1:$port" -c 1 -m 64 -d "${DURATION}s" --cpus "$CLIENT_CPU"; then
        c_p50="$(json "$WORK/2-c10k.json" .latency_us.p50)" || ok=0
    else
        ok=0
    fi
    stop_servers

    # sockperf defaults to UDP: --tcp on both sides. Its summary lines look
    # like (colour codes around some of them):
    #   sockperf: ---> percentile 50.000 =   74.967
    # in microseconds; with --full-rtt, round trips rather than half of one.
    if port="$(free_port)"; then
        start_server "$WORK/2-sr.out" taskset -c "$SERVER_CPU" \
            sockperf sr --tcp -i 127.0.0.1 -p "$port"
        pid="${PIDS[-1]}"
        if ! listening "$port" "$pid"; then
            warn "sockperf sr is not listening on $port:" \
                "$(cat "$WORK/2-sr.out" "$WORK/2-sr.out.err")"
            ok=0
        elif bounded taskset -c "$CLIENT_CPU" \
            sockperf ping-pong --tcp --full-rtt -i 127.0.0.1 -p "$port" -t "$DURATION" -m 64 \
            >"$WORK/2-sockperf.log" 2>&1; then
            s_p50="$(sed -n 's/.*percentile 50\.000 = *\([0-9.]*\).*/\1/p' "$WORK/2-sockperf.log")"
            [[ -n "$s_p50" ]] || {
                warn "no p50 in sockperf's output: $(cat "$WORK/2-sockperf.log")"
                ok=0
            }
        else
            warn "sockperf ping-pong failed:"
            tail -n 5 "$WORK/2-sockperf.log" >&2
            ok=0
        fi
        stop_servers
    else
        warn "no free port for sockperf"
        ok=0
    fi

    row "" "c10k load" "sockperf" "c10k/peer"
    row "p50 round trip (us)" "$(num %.1f "$c_p50")" "$(num %.1f "$s_p50")" \
        "$(ratio %.3f "$c_p50" "$s_p50")"
    say "  (aim: within 10%, a ratio of at most 1.10)"
    ((ok))
}

# ---------------------------------------------------------------- 3

# N connections held and echoing for DURATION: time to establish them and
# client memory per connection. Nothing pinned: c10k load spreads itself
# over source addresses and worker processes as it needs. The server side is enough
# `c10k serve --reuseport` processes on one port that each stays well under
# its open-files limit.
compare_scale() {
    local n="$1"
    say ""
    say "3. $n connections, ${DURATION} s"
    local hard per procs need_kib avail_kib
    hard="$(ulimit -n)"
    # The kernel spreads reuseport connections by hash, not evenly: keep 15%
    # of each server's limit spare.
    per=$((hard * 85 / 100))
    procs=$(((n + per - 1) / per))
    # Both ends of every connection (sockets, buffers, both processes):
    # 32 KiB each is generous.
    need_kib=$((n * 32))
    avail_kib="$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)"
    if ((avail_kib < need_kib)); then
        say "  skipped: needs about $((need_kib / 1024)) MiB of memory, $((avail_kib / 1024)) MiB available"
        return 0
    fi

    local port pid i
    start_server "$WORK/3-$n-serve-0.out" "$C10K" serve --model epoll --reuseport
    pid="${PIDS[-1]}"
    port="$(ready_port "$WORK/3-$n-serve-0.out" "$pid")" || return 1
    for ((i = 1; i < procs; i++)); do
        start_server "$WORK/3-$n-serve-$i.out" "$C10K" serve --model epoll --reuseport \
            --port "$port"
        pid="${PIDS[-1]}"
        ready_port "$WORK/3-$n-serve-$i.out" "$pid" >/dev/null || return 1
    done
    say "  server: $procs x c10k serve --model epoll --reuseport on port $port (open-files limit $hard each)"

    c10k_load "3-$n" "127.0.0.1:$port" -c "$n" -m 64 -d "${DURATION}s" || return 1
    stop_servers
    local secs rss
    secs="$(json "$WORK/3-$n.json" .connect.established_seconds)" || return 1
    rss="$(json "$WORK/3-$n.json" .client.max_rss_kib)" || return 1
    say "  c10k load: established in $(calc %.3f "$secs") s;" \
        "client memory $(calc %.2f "$rss / $n") KiB per connection (peak RSS $rss KiB)"
}

# ---------------------------------------------------------------- main

install_peers
check_machine
if ((BUILD)); then
    say "building c10k (release)"
    timeout 1800 cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" ||
        die "cargo build --release failed"
fi
[[ -x "$C10K" ]] || die "no c10k binary at $C10K"
say "c10k load vs tcp-echo-benchmark $ECHO_BENCH_VERSION and sockperf $(sockperf --version 2>&1 | grep -m1 -o 'version [^ ]*' || true)"
say "$(nproc) CPUs, $(uname -sr); servers on CPU $SERVER_CPU, clients on CPU $CLIENT_CPU"
# Anything else busy on these CPUs skews every figure below.
say "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg) (should be near 0)"

compare_throughput || FAILED+=("1 (closed loop)")
stop_servers
compare_latency || FAILED+=("2 (one connection)")
stop_servers
for n in 10000 100000; do
    compare_scale "$n" || FAILED+=("3 ($n connections)")
    stop_servers
done

say ""
if ((${#FAILED[@]})); then
    warn "failed: ${FAILED[*]}"
    exit 1
fi
say "done"
