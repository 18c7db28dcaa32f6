//! The coordinator of a load run: checks limits, starts the event loops,
//! moves them through their phases (connect, warm up, measure), shows
//! progress on a terminal, and turns what they measured into a [`Report`].
//!
//! One process holds at most the open-files hard limit of sockets. Past it,
//! the run is split ([`super::split`]): worker processes (re-executions of
//! this binary) each run a share of the connections through the same code
//! here, and their measurements are merged.
//!
//! Nothing measured is lost to a bad ending: a server that refuses, resets or
//! dies ends the affected connections (recorded with their cause), Ctrl-C
//! ends the run early, and either way every output is written.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::net::IpAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use hdrhistogram::Histogram;

use super::conn::Failure;
use super::engine::{self, histogram, Schedule, Shared, ThreadResult};
use super::plan::{LoadPlan, Stop, Workload};
use super::record::ConnRecord;
use super::report::{self, Percentiles, Report};
use super::{limit, preflight, source, split};
use crate::metrics::cpu::{Snapshot, WindowCpu};
use crate::sys;

/// A finished run: the report and the per-connection records.
pub struct Outcome {
    pub report: Report,
    pub records: Vec<ConnRecord>,
    pub latency: Histogram<u64>,
    /// Wall-clock start, for the HdrHistogram log.
    pub started: SystemTime,
}

/// What the event loops of one or more processes measured.
pub struct Measured {
    /// Round trips from the intended send time, in ns.
    pub latency: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    pub send_lag: Histogram<u64>,
    pub connect: Histogram<u64>,
    pub records: super::record::Records,
    pub missed: u64,
    /// Burst: makespan of each round in µs (`None`: not every echo came).
    pub rounds: Vec<Option<f64>>,
    /// From the first connect to every connection up or failed.
    pub connect_seconds: f64,
    /// Length of the measured window.
    pub measured_seconds: f64,
    /// Client CPU over the measured window, and peak memory.
    pub cpu_user: f64,
    pub cpu_system: f64,
    pub max_rss_kib: u64,
    pub interrupted: bool,
    /// The event loops' system calls over the measured window.
    pub io: report::Syscalls,
    /// What the machine and the server used over the measured window.
    pub window: WindowCpu,
}

/// Runs `plan` to the end (in several processes when one cannot hold its
/// connections) and returns what it measured.
pub fn run(plan: LoadPlan) -> anyhow::Result<Outcome> {
    if let Some(cpus) = &plan.cpus {
        sys::affinity::pin_current(cpus).with_context(|| format!("cannot pin to CPUs {cpus:?}"))?;
    }
    run_inner(plan, None)
}

/// Runs `plan` in worker processes (at least one), calling `connected`
/// once every connection is up and before the measured phase: how the
/// experiment runner samples a server that holds every connection. This
/// process does no load work and is not pinned.
pub fn run_in_workers(plan: LoadPlan, connected: &mut dyn FnMut()) -> anyhow::Result<Outcome> {
    run_inner(plan, Some(connected))
}

fn run_inner(mut plan: LoadPlan, connected: Option<&mut dyn FnMut()>) -> anyhow::Result<Outcome> {
    let mut warnings = Vec::new();
    let total = plan.connections + plan.idle;
    // Limits first, each stated with its shortfall and its fix.
    let needs = preflight::Needs {
        connections: total,
        target: plan.target,
        sources: plan.sources.len(),
        threads: plan.threads,
    };
    let findings = preflight::check_with(&needs, plan.connect_rate, &preflight::System::read());
    for f in &findings {
        if f.level >= preflight::Level::Warn || !plan.quiet {
            eprintln!("{f}");
        }
        if f.level >= preflight::Level::Warn {
            warnings.push(format!("{}; fix: {}", f.what, f.fix));
        }
    }
    if let Some(f) = findings.iter().find(|f| f.level == preflight::Level::Block) {
        anyhow::bail!("{} (fix: {})", f.what, f.fix);
    }
    // Sources are chosen once, here, so every worker process uses the same.
    if plan.sources.is_empty() && plan.target.ip().is_loopback() && plan.target.is_ipv4() {
        let auto = source::auto_loopback_sources(total, source::ephemeral_port_count());
        if auto.len() > 1 {
            plan.sources = auto;
        }
    }
    source::check_family(&plan.sources, plan.target).map_err(anyhow::Error::msg)?;
    let hard = sys::rlimit::nofile().hard.unwrap_or(u64::MAX);
    let processes = preflight::processes_needed(total, hard);
    let environment = crate::env::capture();
    let tcp_before = crate::env::tcp_counters().ok();
    let started = SystemTime::now();
    let measured = if let Some(hook) = connected {
        split::run(&plan, processes, hook)?
    } else if processes > 1 {
        split::run(&plan, processes, &mut || {})?
    } else {
        preflight::raise_nofile_for(total).context("raising the open-files limit")?;
        drive(&plan, &mut |_| Ok(()))?
    };
    let tcp = match (tcp_before, crate::env::tcp_counters().ok()) {
        (Some(a), Some(b)) => Some(b.since(&a)),
        _ => None,
    };
    if let Some(t) = &tcp {
        if t.syn_retrans > 0 || t.listen_overflows > 0 {
            warnings.push(format!(
                "the listen backlog overflowed: {} SYN retransmits, {} listen overflows system-wide during the run; \
                 connect latencies include retransmit timeouts (lower --connect-rate or raise net.core.somaxconn and the server's backlog)",
                t.syn_retrans, t.listen_overflows
            ));
        }
    }
    let mut outcome = assemble(&plan, measured, processes, started, warnings);
    outcome.report.tcp = serde_json::to_value(tcp).unwrap_or_default();
    outcome.report.environment = serde_json::to_value(environment).unwrap_or_default();
    outcome.report.sources = plan.sources.iter().map(IpAddr::to_string).collect();
    Ok(outcome)
}

/// Runs this process's share of `plan`: its event loops, through their
/// phases. `connected` is called once every loop has its connections up,
/// with the seconds that took, and the measured phase starts when it
/// returns (a worker process waits there for its parent's go).
pub fn drive(
    plan: &LoadPlan,
    connected: &mut dyn FnMut(f64) -> std::io::Result<()>,
) -> anyhow::Result<Measured> {
    let show = !plan.quiet && plan.process.is_none() && std::io::stderr().is_terminal();
    let mut shared = Shared::new(plan.clone());
    shared.live_progress = show;
    let interrupted = crate::sys::signals::interrupt_flag()
        .context("installing the Ctrl-C and SIGTERM handlers")?;
    let t0 = Instant::now();
    // CPU (this process, the machine, the server) is counted over the
    // measured window only: a snapshot at each end.
    let pids = &plan.server_pids;
    let mut window_start = Snapshot::take(pids);
    let mut schedule = None;
    let mut gate_error = None;
    let finished = std::sync::atomic::AtomicBool::new(false);
    let results: (Vec<std::io::Result<ThreadResult>>, Instant, Snapshot) =
        std::thread::scope(|scope| {
            // Each loop holds a sender until it returns: the receiver hears
            // "disconnected" the moment the last loop ends.
            let (ended_tx, ended_rx) = std::sync::mpsc::channel::<()>();
            let handles: Vec<_> = (0..plan.threads)
                .map(|i| {
                    let shared = &shared;
                    let ended_tx = ended_tx.clone();
                    std::thread::Builder::new()
                        .name(format!("load-{i}"))
                        .spawn_scoped(scope, move || {
                            let _held = ended_tx;
                            engine::run(shared, i)
                        })
                        // A loop that never started must not be waited for.
                        .inspect_err(|_| shared.barrier.leave())
                })
                .collect();
            drop(ended_tx);
            scope.spawn(|| progress(&shared, &interrupted, &finished, show));
            // Every loop has its connections up (or failed).
            shared.barrier.wait();
            if let Err(e) = connected(t0.elapsed().as_secs_f64()) {
                // The parent is gone: measure nothing, end at once.
                shared.interrupted.store(true, Relaxed);
                gate_error = Some(e);
            }
            let start = Instant::now();
            let burst = matches!(plan.workload, Workload::Burst { .. });
            let measure_from = start + if burst { Duration::ZERO } else { plan.warmup };
            let until = match plan.stop {
                Stop::Duration(d) if !burst => Some(measure_from + d),
                _ => None,
            };
            let s = Schedule {
                start,
                measure_from,
                until,
            };
            let _ = shared.schedule.set(s);
            schedule = Some(s);
            if let Workload::Burst { rounds } = plan.workload {
                shared.barrier.wait();
                window_start = Snapshot::take(pids);
                let mut r = 0;
                loop {
                    let more = r < rounds && !shared.interrupted.load(Relaxed);
                    shared.more_rounds.store(more, Relaxed);
                    shared.barrier.wait();
                    if !more {
                        break;
                    }
                    shared.barrier.wait();
                    r += 1;
                }
            } else {
                shared.barrier.wait();
                std::thread::sleep(measure_from.saturating_duration_since(Instant::now()));
                window_start = Snapshot::take(pids);
            }
            // A timed window ends at `until` (the loops then drain what is
            // owed, which is not measured); a counted one when the loops end.
            let mut window_end = None;
            if let Some(u) = until {
                // Wakes once: at `until`, or when the loops end early (Ctrl-C,
                // every connection done). Nothing is ever sent, so a message
                // cannot cut the wait short.
                let _ = ended_rx.recv_timeout(u.saturating_duration_since(Instant::now()));
                window_end = Some(Snapshot::take(pids));
            }
            let results = handles
                .into_iter()
                .map(|h| match h {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("an event loop panicked"))),
                    Err(e) => Err(e),
                })
                .collect();
            // The run ends when its loops do, not when the progress thread next
            // wakes (it sleeps up to 100 ms, and the scope waits for it).
            let ended = Instant::now();
            let window_end = window_end.unwrap_or_else(|| Snapshot::take(pids));
            finished.store(true, Relaxed);
            (results, ended, window_end)
        });
    let (results, ended, window_end) = results;
    let cpu_end = window_end.own;
    let cpu_at_measure = window_start.own;
    if let Some(e) = gate_error {
        return Err(e).context("lost the parent process");
    }
    let mut parts = Vec::new();
    for r in results {
        parts.push(r.context("an event loop failed")?);
    }
    let schedule = schedule.context("the run never started")?;
    let mut m = Measured {
        latency: histogram(),
        uncorrected: histogram(),
        send_lag: histogram(),
        connect: histogram(),
        records: super::record::Records::new(usize::MAX),
        missed: 0,
        rounds: Vec::new(),
        connect_seconds: 0.0,
        measured_seconds: schedule
            .until
            .map_or(ended, |u| u.min(ended))
            .saturating_duration_since(schedule.measure_from)
            .as_secs_f64(),
        cpu_user: cpu_end
            .user
            .saturating_sub(cpu_at_measure.user)
            .as_secs_f64(),
        cpu_system: cpu_end
            .system
            .saturating_sub(cpu_at_measure.system)
            .as_secs_f64(),
        max_rss_kib: cpu_end.max_rss_kib,
        window: window_end.since(&window_start),
        interrupted: shared.interrupted.load(Relaxed) || interrupted.load(Relaxed),
        io: report::Syscalls::default(),
    };
    let mut connected_at = t0;
    let mut rounds: Vec<(Option<Instant>, Option<Instant>)> = Vec::new();
    for p in parts {
        let _ = m.latency.add(&p.latency);
        let _ = m.uncorrected.add(&p.latency_uncorrected);
        let _ = m.send_lag.add(&p.send_lag);
        let _ = m.connect.add(&p.connect);
        m.records.merge(p.records);
        m.missed += p.missed;
        m.io.add(p.io);
        connected_at = connected_at.max(p.connected_at);
        for (k, (start, end)) in p.rounds.into_iter().enumerate() {
            if rounds.len() <= k {
                rounds.push((None, None));
            }
            let r = &mut rounds[k];
            r.0 = Some(r.0.map_or(start, |s: Instant| s.min(start)));
            r.1 = match (r.1, end) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
    }
    m.connect_seconds = connected_at.saturating_duration_since(t0).as_secs_f64();
    m.rounds = rounds
        .iter()
        .map(|(s, e)| match (s, e) {
            (Some(s), Some(e)) => Some(e.saturating_duration_since(*s).as_nanos() as f64 / 1e3),
            _ => None,
        })
        .collect();
    Ok(m)
}

/// Prints a progress line once a second on a terminal until `finished`;
/// forwards Ctrl-C to the event loops.
fn progress(
    shared: &Shared,
    interrupted: &std::sync::atomic::AtomicBool,
    finished: &std::sync::atomic::AtomicBool,
    show: bool,
) {
    let bar = if show {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        Some(b)
    } else {
        None
    };
    let total = shared.plan.connections + shared.plan.idle;
    let mut last = (Instant::now(), 0u64);
    let mut ticks = 0u32;
    while !finished.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if interrupted.load(Relaxed) {
            shared.interrupted.store(true, Relaxed);
        }
        ticks += 1;
        if ticks % 10 != 0 {
            continue;
        }
        if let Some(b) = &bar {
            let now = Instant::now();
            let done = shared.completed.load(Relaxed);
            let rate = (done - last.1) as f64 / (now - last.0).as_secs_f64();
            last = (now, done);
            let (p50, p99) = match shared.live.lock() {
                Ok(h) if !h.is_empty() => (
                    h.value_at_quantile(0.5) as f64 / 1e3,
                    h.value_at_quantile(0.99) as f64 / 1e3,
                ),
                _ => (0.0, 0.0),
            };
            b.set_message(format!(
                "{}/{} up · {:.0} msg/s · p50 {:.1} µs · p99 {:.1} µs · {} failed",
                shared.up.load(Relaxed),
                total,
                rate,
                p50,
                p99,
                shared.failed.load(Relaxed),
            ));
            b.tick();
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

/// Turns what was measured into the report.
fn assemble(
    plan: &LoadPlan,
    m: Measured,
    processes: usize,
    started: SystemTime,
    mut warnings: Vec<String>,
) -> Outcome {
    let mut errors: BTreeMap<String, u64> = Failure::ALL
        .iter()
        .map(|f| (f.name().to_string(), 0))
        .collect();
    for (k, n) in m.records.errors() {
        *errors.entry(k).or_default() += n;
    }
    let failed = errors.values().sum();
    let established = m.records.established();
    let (bytes_sent, bytes_received) = m.records.bytes();
    if m.records.beyond.count > 0 {
        warnings.push(format!(
            "the per-connection records hold the first {} of {} connections (churn keeps at most {} per event loop, so memory stays bounded); every count above covers them all",
            m.records.kept.len(),
            m.records.total(),
            super::engine::CHURN_RECORDS
        ));
    }
    let mut records = m.records.kept;
    records.sort_by_key(|r| r.id);
    let fairness = matches!(
        plan.workload,
        Workload::Closed { .. } | Workload::Open { .. }
    )
    .then(|| {
        let mut per: Vec<u64> = records
            .iter()
            .filter(|r| (r.id as usize) < plan.connections)
            .map(|r| r.requests)
            .collect();
        report::Fairness::of(&mut per)
    });
    let measured = m.measured_seconds;
    let messages = m.latency.len();
    let per_second = |n: f64| if measured > 0.0 { n / measured } else { 0.0 };
    let message_bytes = plan.payload.as_ref().map_or(plan.message_size, Vec::len);
    let workload = match plan.workload {
        Workload::Closed { .. } => "closed",
        Workload::Open { .. } => "open",
        Workload::Burst { .. } => "burst",
        Workload::Churn { .. } => "churn",
    };
    let open_loop = match plan.workload {
        Workload::Open { rate, .. } => {
            let achieved = per_second(messages as f64);
            if achieved < rate * 0.95 {
                warnings.push(format!(
                    "target rate missed: {achieved:.0}/s achieved of {rate:.0}/s; the latency above is measured from the intended send times, so it includes the wait"
                ));
            }
            Some(report::OpenLoop {
                target_rate: rate,
                achieved_rate: achieved,
                missed: m.missed,
                latency_uncorrected_us: Percentiles::of(&m.uncorrected),
                send_lag_us: Percentiles::of(&m.send_lag),
            })
        }
        _ => None,
    };
    let burst = matches!(plan.workload, Workload::Burst { .. }).then(|| report::Burst {
        makespan_us: m.rounds.clone(),
    });
    if failed > 0 {
        warnings.push(format!(
            "{failed} connection(s) ended early: see errors (and --per-connection-csv)"
        ));
    }
    if m.interrupted {
        warnings.push("interrupted (Ctrl-C or SIGTERM): results cover the run so far".into());
    }
    let cpu = m.cpu_user + m.cpu_system;
    // Every event loop, over every process, on the CPUs the client may use.
    let loops = if processes > 1 {
        (plan.threads / processes).max(1) * processes
    } else {
        plan.threads
    };
    let online = crate::env::online_cpus().len().max(1);
    let allowed = plan.cpus.as_ref().map_or(online, Vec::len);
    let limits = limit::judge(&limit::Inputs {
        window: m.window,
        client_seconds: cpu,
        client_capacity: loops.min(allowed) as f64,
        server_local: limit::is_local(plan.target.ip()),
        rate_kept: match plan.workload {
            Workload::Open { rate, .. } => per_second(messages as f64) >= rate * 0.95,
            _ => false,
        },
        machine_cpus: online as f64,
    });
    let mut report = Report {
        schema_version: report::SCHEMA_VERSION,
        command: plan.command.clone(),
        target: plan.target.to_string(),
        workload: workload.into(),
        message_bytes,
        depth: match plan.workload {
            Workload::Closed { depth } | Workload::Open { depth, .. } => depth,
            _ => 1,
        },
        warmup_seconds: plan.warmup.as_secs_f64(),
        measured_seconds: measured,
        interrupted: m.interrupted,
        connections: report::Connections {
            requested: plan.connections,
            idle: plan.idle,
            established,
            failed,
        },
        connect: report::Connect {
            established_seconds: m.connect_seconds,
            per_second: match plan.workload {
                Workload::Churn { .. } => per_second(m.connect.len() as f64),
                _ if m.connect_seconds > 0.0 => m.connect.len() as f64 / m.connect_seconds,
                _ => 0.0,
            },
            latency_us: Percentiles::of(&m.connect),
        },
        messages,
        bytes_sent,
        bytes_received,
        throughput: report::Throughput {
            messages_per_second: per_second(messages as f64),
            bytes_per_second: per_second((messages * message_bytes as u64) as f64),
        },
        latency_us: Percentiles::of(&m.latency),
        open_loop,
        burst,
        errors,
        client: report::Client {
            threads: plan.threads,
            cpus: plan.cpus.clone(),
            cpu_user_seconds: m.cpu_user,
            cpu_system_seconds: m.cpu_system,
            cpu_per_message_us: if messages > 0 {
                cpu * 1e6 / messages as f64
            } else {
                0.0
            },
            max_rss_kib: m.max_rss_kib,
            processes,
            syscalls: m.io,
        },
        limits,
        fairness,
        tcp: serde_json::Value::Null,
        sources: Vec::new(),
        warnings,
        environment: serde_json::Value::Null,
    };
    if let Some(why) = report.too_little() {
        report.warnings.push(why);
    }
    Outcome {
        report,
        records,
        latency: m.latency,
        started,
    }
}

/// Writes the outputs the plan asks for; returns the first error, after
/// trying them all.
pub fn write_outputs(plan: &LoadPlan, outcome: &Outcome) -> anyhow::Result<()> {
    let mut first = None;
    let mut note = |r: std::io::Result<()>, what: &str, path: &std::path::Path| {
        if let Err(e) = r {
            let msg = format!("cannot write {what} {}: {e}", path.display());
            if first.is_none() {
                first = Some(msg);
            }
        }
    };
    if let Some(p) = &plan.json {
        note(crate::export::write_json(p, &outcome.report), "JSON", p);
    }
    if let Some(p) = &plan.csv {
        note(crate::export::write_csv(p, &outcome.records), "CSV", p);
    }
    if let Some(p) = &plan.hdr {
        let len = Duration::from_secs_f64(outcome.report.measured_seconds.max(0.0));
        note(
            crate::export::write_hdr(p, &[("latency", &outcome.latency)], outcome.started, len),
            "HdrHistogram log",
            p,
        );
    }
    match first {
        Some(m) => anyhow::bail!(m),
        None => Ok(()),
    }
}
