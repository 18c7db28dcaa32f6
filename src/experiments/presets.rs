//! The presets: each a matrix that follows one study's method. Flags given
//! to `c10k run` change a preset's matrix; the plan records the result.

use crate::protocol::Protocol;
use crate::results::matrix::{Bench, Pin, Rate, Shape, Workload, WorkloadKind};

/// A named experiment before flags change it.
#[derive(Debug, Clone)]
pub struct Preset {
    pub name: &'static str,
    /// What it reproduces, one line.
    pub title: &'static str,
    /// Models; empty: every model.
    pub models: &'static [&'static str],
    pub connections: &'static [usize],
    pub runs: usize,
    pub workload: Workload,
    pub per_connection_csv: bool,
    /// A micro-benchmark experiment; its models are the benchmark's
    /// variants.
    pub bench: Option<Bench>,
    /// More arguments of the micro-benchmark's command, for every cell.
    pub bench_args: &'static [&'static str],
    /// What a cell's size counts.
    pub size_label: &'static str,
    /// Peers ([`super::peers`]) run beside the models, as foreign servers.
    pub peers: &'static [&'static str],
    /// Variants named in `models`: a name and `MODEL FLAGS` (as
    /// `--variant NAME='MODEL FLAGS'`).
    pub variants: &'static [(&'static str, &'static str)],
    /// Where server and client run unless `--pin` says: split (each on its
    /// own CPUs) for every preset but c1m and handlers.
    pub pin: Pin,
    /// The work axis unless `--work` says (empty: none).
    pub work: &'static [&'static str],
    /// Rounds of resident slots unless `--runs` says, where the plan has
    /// them ([`crate::results::matrix::Slots`]).
    pub rounds: usize,
    /// Where the plan has slots and `--runs` is not given: `--runs auto`
    /// within this many seconds unless `--budget` says ([`crate::results::matrix::Looks`]);
    /// `None`: `rounds` rounds.
    pub looks_budget: Option<f64>,
    /// A capacity search against these targets (as `--slo`) within this
    /// many seconds unless `--budget` says.
    pub slo: Option<(&'static str, f64)>,
    /// Pools sized for the work by Little's law unless `--tune` searches
    /// them ([`crate::runner::tuner::sized`]).
    pub size_pools: bool,
}

/// `thesis-lock`: each model again with `--shared-state` (a mutex).
const LOCKED: &[(&str, &str)] = &[
    ("threads+lock", "threads --shared-state"),
    ("select+lock", "select --shared-state"),
    ("epoll+lock", "epoll --shared-state"),
    ("fork+lock", "fork --shared-state"),
];

/// `interval`, `interval-accept`: each loop unpaced, then paced.
const INTERVAL_MODELS: &[&str] = &[
    "select",
    "select@100us",
    "select@1ms",
    "select@10ms",
    "epoll",
    "epoll@100us",
    "epoll@1ms",
    "epoll@10ms",
];

const INTERVALS: &[(&str, &str)] = &[
    ("select@100us", "select --interval 100us"),
    ("select@1ms", "select --interval 1ms"),
    ("select@10ms", "select --interval 10ms"),
    ("epoll@100us", "epoll --interval 100us"),
    ("epoll@1ms", "epoll --interval 1ms"),
    ("epoll@10ms", "epoll --interval 10ms"),
];

/// `handlers`: every model (its `models` is empty), and tokio making its
/// blocking calls inside the task, which runs right after tokio. Prefork
/// runs with a worker per connection (and 8 spare, as every run gives it),
/// so it holds 1,000 connections; its bound is then one per connection, as
/// threads' and fork's.
const HANDLERS_VARIANTS: &[(&str, &str)] = &[("tokio-inline", "tokio --block-inline")];

/// Every preset, the default first.
pub fn all() -> Vec<Preset> {
    let interval = Preset {
        variants: INTERVALS,
        ..study(
            "interval",
            "interval control (select(2) done right, 2017): select and epoll waiting at least 0, 100 µs, 1 ms or 10 ms between waits, closed-loop echo at 100 and 10,000 connections",
            INTERVAL_MODELS,
            &[100, 10_000],
            3,
            Workload::closed(2.0, 0.5),
        )
    };
    let thesis = study(
        "thesis",
        "select() vs a thread per connection (thesis, 2009): the burst method, 2 to 512 sockets",
        &[],
        &[2, 4, 8, 16, 32, 64, 128, 200, 256, 300, 400, 512],
        10,
        Workload {
            shape: Shape::of(WorkloadKind::Burst),
            ..Workload::closed(0.0, 0.0)
        },
    );
    vec![
        Preset {
            // Looks until every model is told from the best: here, quiet,
            // 32 of 33 decided in 2 min 38 s; beside a CPU hog 31 of 33
            // in 3 min 16 s. Three minutes keep the tour about as long as
            // one look took one at a time.
            looks_budget: Some(180.0),
            ..study(
                "tour",
                "a quick tour: every model at 10, 100 and 1,000 connections, closed loop",
                &[],
                &[10, 100, 1000],
                3,
                Workload::closed(1.0, 0.25),
            )
        },
        Preset {
            // As the tour, over HTTP/1.1, with the web servers people run.
            looks_budget: Some(180.0),
            peers: &["nginx", "go-http", "node-http"],
            ..study(
                "web",
                "HTTP/1.1: every model and the web servers people run (nginx, Go net/http, Node.js http) at 10, 100 and 1,000 connections, closed loop, keep-alive",
                &[],
                &[10, 100, 1000],
                3,
                Workload {
                    protocol: Protocol::Http,
                    message_bytes: 0,
                    ..Workload::closed(1.0, 0.25)
                },
            )
        },
        Preset {
            peers: &["go", "node", "asyncio", "uvloop", "erlang", "socat"],
            ..study(
                "peers",
                "the runtimes people pick (Go, Node.js, asyncio, uvloop, Erlang, socat) beside epoll, uring, threads and tokio, 10 to 10,000 connections",
                &["epoll", "uring", "threads", "tokio"],
                &[10, 100, 1000, 10_000],
                3,
                // At 10,000 connections the slower runtimes echo 5,000 to
                // 20,000 round trips a second: a round takes up to 2 s,
                // and a window must hold one (a 1 s window failed those
                // cells).
                Workload::closed(3.0, 1.0),
            )
        },
        thesis.clone(),
        Preset {
            name: "thesis-lock",
            title: "the thesis's open question, \"if we use locking after each read will threading be equal to select?\": threads, select, epoll and fork with and without a lock taken after every read (--shared-state), the burst method, 2 to 512 sockets",
            models: &[
                "threads",
                "threads+lock",
                "select",
                "select+lock",
                "epoll",
                "epoll+lock",
                "fork",
                "fork+lock",
            ],
            variants: LOCKED,
            ..thesis
        },
        study(
            "muller",
            "poll loop vs thread per connection (Muller, 2006): 10,000 request/response pairs over 10 to 380 connections",
            &[],
            &[10, 50, 100, 150, 200, 300, 380],
            5,
            Workload {
                total_messages: Some(10_000),
                ..Workload::closed(0.0, 0.0)
            },
        ),
        Preset {
            per_connection_csv: true,
            ..study(
                "comp8005",
                "select, threads and epoll to 100,000 clients (COMP 8005): 100 messages per connection, per-connection CSV",
                &[],
                &[1, 10, 100, 1000, 5000, 10_000, 20_000, 30_000, 50_000, 100_000],
                3,
                Workload {
                    messages_per_connection: Some(100),
                    payload: Some("Gary's spamming".into()),
                    message_bytes: "Gary's spamming".len(),
                    // The study waited for every echo; a thread starved for
                    // tens of seconds is slow, not failed.
                    timeout_seconds: 120.0,
                    ..Workload::closed(0.0, 0.0)
                },
            )
        },
        Preset {
            // Unpinned: pinned apart, every message of a mostly idle
            // connection wakes the other CPU twice (about 35 µs each
            // here), and at 20,000 messages/s that tax alone saturated
            // the client's CPU from 250,000 connections on (send lag p99
            // 74 ms at a million): the instrument was a limit. Unpinned,
            // a message cost the client 28 µs of CPU instead of 47 µs.
            pin: Pin::None,
            ..study(
                "c1m",
                "a million mostly idle connections (C1M): the event loops from 10,000 to 1,000,000 connections, open loop at 20,000 messages/s, every connection echoing once",
                &["epoll", "epoll-workers", "select", "poll", "uring", "tokio"],
                &[10_000, 100_000, 250_000, 500_000, 1_000_000],
                1,
                Workload {
                    // The same offered load at every count, so what grows
                    // is the cost of holding. One message per connection:
                    // the window is one round of the schedule, N / 20,000 s
                    // (50 s at a million), long enough for every connection
                    // to echo once and no longer, so five counts of six
                    // models fit in half an hour.
                    rate: Some(Rate::Total(20_000.0)),
                    // 51 client processes at a million connections, each
                    // sending about 400 messages/s: a pass per message
                    // cost a wake-up per send and per echo. Passes 10 ms
                    // apart batch them (latencies late by up to 10 ms at
                    // each end, said beside them): at a million and
                    // 20,000/s the client's CPU per message fell from 36
                    // to 23 µs here.
                    client_interval_seconds: Some(0.01),
                    messages_per_connection: Some(1),
                    // A select or poll loop over 20,000 descriptors a
                    // process answers in seconds at a million: slow, not
                    // failed.
                    timeout_seconds: 60.0,
                    ..Workload::closed(0.0, 2.0)
                },
            )
        },
        Preset {
            // Server and client each on both CPUs of this machine (all the
            // CPUs the run may use), recorded in the plan: pinned apart,
            // the server would have one core and cpu:100us would cap every
            // model at 10,000/s, so the models that run handlers on
            // several cores (threads, fork, prefork, epoll-workers, uring,
            // tokio, hybrid's pool) could not show it. The client then
            // competes for those cores: a CPU-bound model's share of its
            // bound (cores / CPU per request) is what the client leaves it.
            pin: Pin::All,
            variants: HANDLERS_VARIANTS,
            // A pool of one thread per CPU caps a blocking handler at
            // CPUs / block: hybrid made 866–877/s at 100 connections under
            // block:1ms, and 32,000–39,500/s with 64 threads, level with
            // threads. Sized as a practitioner would size it (Tomcat's
            // NIO pool has 200 threads for this), or searched with --tune.
            size_pools: true,
            work: &["none", "cpu:10us", "cpu:100us", "block:1ms", "wait:1ms"],
            // In resident slots (300 ms, and 1.35 s at 1,000 connections
            // under block:1ms, where one handler takes a second to go
            // round), 13 models × 3 counts × 5 profiles a round take
            // about 72 s: six rounds took 9 min 36 s here with starting
            // and sampling each server (docs/results/2026-11-28-resident-slots.md).
            rounds: 6,
            ..study(
                "handlers",
                "handlers that cost something: every model (and tokio-inline, tokio blocking inside its tasks: the common mistake) at 10, 100 and 1,000 connections under no work, cpu:10us, cpu:100us, block:1ms and wait:1ms per request, each figure beside the bound the work allows; server and client each on every CPU, so a model that can use both cores shows it",
                &[],
                &[10, 100, 1000],
                3,
                // With --sequential: 585 cells (13 models × 3 counts × 5
                // profiles × 3 runs) of a 1 s window after 1 s of warm-up,
                // about 25 minutes here with starting, sampling and
                // stopping each server.
                // The window counts the echoes that come back in it, and
                // the warm-up goes round every connection first, so a
                // model with one handler blocking 1 ms per request, which
                // answers each of 1,000 connections once a second, still
                // gives its true rate (about 1,000/s).
                Workload::closed(1.0, 1.0),
            )
        },
        Preset {
            // 12 models × 2 counts × 2 profiles, each search about 20
            // slots: 12 minutes here, within the 15 the issue allows
            // (docs/results/2026-11-28-capacity.md).
            // 5 ms beyond the work: a 1 ms block's own p99 here, unloaded,
            // is 1.5 to 2.4 ms (the sleep wakes late), and this host's own
            // stalls put 0.5 to 1.7 % of echoes past 2 ms at any rate on
            // some hours (the run says so: `micro::stalls`), where p99
            // ≤ 2 ms decided almost nothing; past 5 ms they put almost
            // none.
            slo: Some(("p99=5ms+work", 840.0)),
            work: &["none", "block:1ms"],
            // A pool one thread per CPU caps a 1 ms block at 2,000/s:
            // sized for it, as a practitioner would (or `--tune`).
            size_pools: true,
            ..study(
                "capacity",
                "capacity at a latency target (ZygOS, Shenango): every model at 100 and 1,000 connections under no work and block:1ms, the highest Poisson-offered rate that holds its p99 target (5 ms beyond the work, or --slo), its knee, and the queueing bound of its handlers beside it",
                &[],
                &[100, 1000],
                1,
                Workload::closed(1.0, 0.25),
            )
        },
        study(
            "accept",
            "accept rate (select(2) done right, 2017): connection churn against each model",
            &[],
            &[1, 8, 64],
            3,
            Workload {
                shape: Shape::of(WorkloadKind::Churn),
                ..Workload::closed(2.0, 0.5)
            },
        ),
        interval.clone(),
        Preset {
            name: "interval-accept",
            title: "interval control against connection churn: select and epoll waiting at least 0, 100 µs, 1 ms or 10 ms between waits, accepts per second",
            connections: &[1, 8, 64],
            workload: Workload {
                shape: Shape::of(WorkloadKind::Churn),
                ..Workload::closed(2.0, 0.5)
            },
            ..interval
        },
        Preset {
            // Memory per parked thread, measured with a thousand parked.
            bench_args: &["--parked", "1000"],
            ..bench(
                "spawn",
                "thread and process creation (c10k micro spawn): create and join, fork and reap, per task",
                Bench::Spawn,
                &["thread", "thread-small", "fork", "fork-large"],
                &[1, 10, 100, 1000],
                5,
                "threads or processes",
            )
        },
        bench(
            "dispatch",
            "select, poll and epoll_wait return time over N descriptors, 1 active (c10k micro dispatch)",
            Bench::Dispatch,
            &["select", "poll", "epoll-lt", "epoll-et"],
            &[10, 100, 1000, 9900],
            5,
            "descriptors",
        ),
        bench(
            "micro-accept",
            "accepts per second by way of waiting (c10k micro accept)",
            Bench::Accept,
            &["one", "drain", "one+interval", "drain+interval", "uring"],
            &[1, 4],
            3,
            "client threads",
        ),
        Preset {
            // A thousand connections per cell, half `c10k herd`'s default,
            // so the 64-worker cells stay short.
            bench_args: &["-n", "1000"],
            ..bench(
                "herd",
                "the thundering herd (c10k herd): connect latency and wake-ups per connection against W",
                Bench::Herd,
                &["select", "poll", "epoll", "epoll-exclusive", "accept", "reuseport"],
                &[1, 8, 64],
                3,
                "workers",
            )
        },
    ]
}

/// A preset with the defaults: servers (no micro-benchmark), sizes that
/// count connections, no per-connection CSV, no peers or variants, server
/// and client pinned apart.
fn study(
    name: &'static str,
    title: &'static str,
    models: &'static [&'static str],
    connections: &'static [usize],
    runs: usize,
    workload: Workload,
) -> Preset {
    Preset {
        name,
        title,
        models,
        connections,
        runs,
        workload,
        per_connection_csv: false,
        bench: None,
        bench_args: &[],
        size_label: "connections",
        peers: &[],
        variants: &[],
        pin: Pin::Split,
        work: &[],
        rounds: crate::results::matrix::DEFAULT_ROUNDS,
        looks_budget: None,
        slo: None,
        size_pools: false,
    }
}

fn bench(
    name: &'static str,
    title: &'static str,
    kind: Bench,
    models: &'static [&'static str],
    sizes: &'static [usize],
    runs: usize,
    size_label: &'static str,
) -> Preset {
    Preset {
        bench: Some(kind),
        size_label,
        ..study(name, title, models, sizes, runs, Workload::closed(1.0, 0.0))
    }
}

/// The preset called `name`.
pub fn find(name: &str) -> Option<Preset> {
    all().into_iter().find(|p| p.name == name)
}
