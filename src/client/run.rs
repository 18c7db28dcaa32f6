//! The coordinator of a load run: checks limits, starts the event loops,
//! moves them through their phases (connect, warm up, measure), shows
//! progress on a terminal, and turns what they measured into a [`Report`].
//!
//! Nothing measured is lost to a bad ending: a server that refuses, resets or
//! dies ends the affected connections (recorded with their cause), Ctrl-C
//! ends the run early, and either way every output is written.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;

use super::conn::Failure;
use super::engine::{self, histogram, Schedule, Shared, ThreadResult};
use super::record::ConnRecord;
use super::report::{self, Percentiles, Report};
use super::{preflight, source};
use crate::plan::{LoadPlan, Stop, Workload};
use crate::sys;

/// A finished run: the report and the per-connection records.
pub struct Outcome {
    pub report: Report,
    pub records: Vec<ConnRecord>,
    pub latency: hdrhistogram::Histogram<u64>,
    /// Wall-clock start, for the HdrHistogram log.
    pub started: SystemTime,
}

/// Runs `plan` to the end and writes its outputs.
pub fn run(plan: LoadPlan) -> anyhow::Result<Outcome> {
    if let Some(cpus) = &plan.cpus {
        sys::affinity::pin_current(cpus).with_context(|| format!("cannot pin to CPUs {cpus:?}"))?;
    }
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
    let hard = sys::rlimit::nofile().hard.unwrap_or(u64::MAX);
    if preflight::processes_needed(total, hard) > 1 {
        anyhow::bail!(
            "{total} connections need more descriptors than one process may hold (hard limit {hard}); \
             spreading them over worker processes is not built yet: use at most {} connections per run",
            hard.saturating_sub(preflight::HEADROOM)
        );
    }
    preflight::raise_nofile_for(total).context("raising the open-files limit")?;
    let mut sources = plan.sources.clone();
    if sources.is_empty() && plan.target.ip().is_loopback() && plan.target.is_ipv4() {
        let auto = source::auto_loopback_sources(total, source::ephemeral_port_count());
        if auto.len() > 1 {
            sources = auto;
        }
    }
    source::check_family(&sources, plan.target).map_err(anyhow::Error::msg)?;
    let environment = crate::env::capture();
    let tcp_before = crate::env::tcp_counters().ok();
    let shared = Shared::new(plan, sources);
    let interrupted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))
        .context("installing the Ctrl-C handler")?;
    let plan = &shared.plan;
    let show = !plan.quiet && std::io::stderr().is_terminal();
    let wall_start = SystemTime::now();
    let t0 = Instant::now();
    let mut cpu_at_measure = sys::process::Usage::of_self();
    let mut schedule = None;

    let finished = std::sync::atomic::AtomicBool::new(false);
    let results: Vec<std::io::Result<ThreadResult>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..plan.threads)
            .map(|i| {
                let shared = &shared;
                std::thread::Builder::new()
                    .name(format!("load-{i}"))
                    .spawn_scoped(scope, move || engine::run(shared, i))
                    // A loop that never started must not be waited for.
                    .inspect_err(|_| shared.barrier.leave())
            })
            .collect();
        scope.spawn(|| progress(&shared, &interrupted, &finished, show));
        // Every loop has its connections up (or failed).
        shared.barrier.wait();
        let start = Instant::now();
        let measure_from = start
            + if matches!(plan.workload, Workload::Burst { .. }) {
                Duration::ZERO
            } else {
                plan.warmup
            };
        let until = match plan.stop {
            Stop::Duration(d) if !matches!(plan.workload, Workload::Burst { .. }) => {
                Some(measure_from + d)
            }
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
            // CPU is counted over the measured window only.
            std::thread::sleep(measure_from.saturating_duration_since(Instant::now()));
            cpu_at_measure = sys::process::Usage::of_self();
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
        finished.store(true, Relaxed);
        results
    });
    let ended = Instant::now();
    let cpu_end = sys::process::Usage::of_self();
    let mut parts = Vec::new();
    for r in results {
        parts.push(r.context("an event loop failed")?);
    }
    let schedule = schedule.context("the run never started")?;
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
    if shared.interrupted.load(Relaxed) || interrupted.load(Relaxed) {
        warnings.push("interrupted (Ctrl-C): results cover the run so far".into());
    }
    let mut outcome = assemble(
        &shared,
        parts,
        schedule,
        t0,
        ended,
        wall_start,
        cpu_at_measure,
        cpu_end,
        warnings,
    );
    outcome.report.tcp = serde_json::to_value(tcp).unwrap_or_default();
    outcome.report.environment = serde_json::to_value(environment).unwrap_or_default();
    if !shared.sources.is_empty() {
        outcome.report.sources = shared.sources.iter().map(|s| s.to_string()).collect();
    }
    Ok(outcome)
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

#[allow(clippy::too_many_arguments)]
fn assemble(
    shared: &Shared,
    parts: Vec<ThreadResult>,
    schedule: Schedule,
    t0: Instant,
    ended: Instant,
    wall_start: SystemTime,
    cpu0: sys::process::Usage,
    cpu1: sys::process::Usage,
    mut warnings: Vec<String>,
) -> Outcome {
    let plan = &shared.plan;
    let mut latency = histogram();
    let mut uncorrected = histogram();
    let mut send_lag = histogram();
    let mut connect = histogram();
    let mut records = Vec::new();
    let mut missed = 0;
    let mut connected_at = t0;
    let mut rounds: Vec<(Option<Instant>, Option<Instant>)> = Vec::new();
    for p in parts {
        let _ = latency.add(&p.latency);
        let _ = uncorrected.add(&p.latency_uncorrected);
        let _ = send_lag.add(&p.send_lag);
        let _ = connect.add(&p.connect);
        records.extend(p.records);
        missed += p.missed;
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
    records.sort_by_key(|r| r.id);
    let mut errors: BTreeMap<String, u64> = Failure::ALL
        .iter()
        .map(|f| (f.name().to_string(), 0))
        .collect();
    for r in &records {
        if !r.error.is_empty() {
            *errors.entry(r.error.clone()).or_default() += 1;
        }
    }
    let failed = errors.values().sum();
    let established = records.iter().filter(|r| r.connect_us.is_some()).count() as u64;
    let measured_end = schedule.until.map_or(ended, |u| u.min(ended));
    let measured = measured_end
        .saturating_duration_since(schedule.measure_from)
        .as_secs_f64();
    let messages = latency.len();
    let per_second = |n: f64| if measured > 0.0 { n / measured } else { 0.0 };
    let message_bytes = shared.payload.len();
    let cpu_user = cpu1.user.saturating_sub(cpu0.user).as_secs_f64();
    let cpu_sys = cpu1.system.saturating_sub(cpu0.system).as_secs_f64();
    let workload = match plan.workload {
        Workload::Closed { .. } => "closed",
        Workload::Open { .. } => "open",
        Workload::Burst { .. } => "burst",
        Workload::Churn { .. } => "churn",
    };
    let connect_secs = connected_at.saturating_duration_since(t0).as_secs_f64();
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
                missed,
                latency_uncorrected_us: Percentiles::of(&uncorrected),
                send_lag_us: Percentiles::of(&send_lag),
            })
        }
        _ => None,
    };
    let burst = matches!(plan.workload, Workload::Burst { .. }).then(|| report::Burst {
        makespan_us: rounds
            .iter()
            .map(|(s, e)| match (s, e) {
                (Some(s), Some(e)) => Some(e.saturating_duration_since(*s).as_nanos() as f64 / 1e3),
                _ => None,
            })
            .collect(),
    });
    if failed > 0 {
        warnings.push(format!(
            "{failed} connection(s) ended early: see errors (and --per-connection-csv)"
        ));
    }
    let report = Report {
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
        interrupted: shared.interrupted.load(Relaxed),
        connections: report::Connections {
            requested: plan.connections,
            idle: plan.idle,
            established,
            failed,
        },
        connect: report::Connect {
            established_seconds: connect_secs,
            per_second: match plan.workload {
                Workload::Churn { .. } => per_second(connect.len() as f64),
                _ if connect_secs > 0.0 => connect.len() as f64 / connect_secs,
                _ => 0.0,
            },
            latency_us: Percentiles::of(&connect),
        },
        messages,
        bytes_sent: records.iter().map(|r| r.bytes_sent).sum(),
        bytes_received: records.iter().map(|r| r.bytes_received).sum(),
        throughput: report::Throughput {
            messages_per_second: per_second(messages as f64),
            bytes_per_second: per_second((messages * message_bytes as u64) as f64),
        },
        latency_us: Percentiles::of(&latency),
        open_loop,
        burst,
        errors,
        client: report::Client {
            threads: plan.threads,
            cpus: plan.cpus.clone(),
            cpu_user_seconds: cpu_user,
            cpu_system_seconds: cpu_sys,
            cpu_per_message_us: if messages > 0 {
                (cpu_user + cpu_sys) * 1e6 / messages as f64
            } else {
                0.0
            },
            max_rss_kib: cpu1.max_rss_kib,
            processes: 1,
        },
        tcp: serde_json::Value::Null,
        sources: Vec::new(),
        warnings,
        environment: serde_json::Value::Null,
    };
    Outcome {
        report,
        records,
        latency,
        started: wall_start,
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
