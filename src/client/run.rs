//! The coordinator of a load run: checks limits, starts the event loops,
//! moves them through their phases (connect, warm up, measure), shows
//! progress on a terminal, and turns what they measured into a [`Report`].
//!
//! One process holds at most the open-files hard limit of sockets. Past it,
//! the run is spread over agents ([`super::agents`]): local worker
//! processes (`c10k agent`, this binary), or agents on other hosts started
//! through `--agent` launcher templates, each running a share of the
//! connections through the same engine; their measurements are merged.
//!
//! Nothing measured is lost to a bad ending: a server that refuses, resets or
//! dies ends the affected connections (recorded with their cause), Ctrl-C
//! ends the run early, and either way every output is written.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use hdrhistogram::Histogram;

use super::agents;
use super::conn::Failure;
use super::launch::Launch;
use super::launch::{Template, LOCAL};
use super::plan::{LoadPlan, Workload};
use super::record::ConnRecord;
use super::report::{self, Percentiles, Report};
use super::{limit, preflight, source};
use crate::protocol::Protocol;
use crate::sys;

use super::drive::drive;
pub(crate) use super::drive::Ask;
use super::measured::Measured;

/// A finished run: the report and the per-connection records.
pub struct Outcome {
    pub report: Report,
    pub records: Vec<ConnRecord>,
    pub latency: Histogram<u64>,
    /// Wall-clock start, for the HdrHistogram log.
    pub started: SystemTime,
    /// Agents lost mid-run, each with the share that went with it: the
    /// figures are the others' (also among the report's warnings).
    pub lost: Vec<String>,
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
///
/// SIGINT or SIGTERM to this process (`kill PID`, not only a terminal's
/// Ctrl-C) ends it within about a second in any phase (waiting for the
/// workers' hello, connecting, measuring), every worker and launcher
/// stopped and reaped: the result is then `Ok` with
/// `outcome.report.interrupted` set, and holds what the workers had
/// measured (nothing, before they started). That is the one way to tell
/// an interrupted run: an error is a failure.
pub(crate) fn run_in_workers(
    plan: LoadPlan,
    connected: &mut dyn FnMut(),
) -> anyhow::Result<Outcome> {
    let outcome = run_inner(plan, Some(connected))?;
    if outcome.report.interrupted {
        return Ok(outcome);
    }
    // A cell is whole or failed: a lost share fails it.
    if let Some(lost) = outcome.lost.first() {
        anyhow::bail!("{lost}");
    }
    Ok(outcome)
}

/// The limits checked (each finding in `warnings`, a blocking one the
/// error), the sources chosen (so every worker process uses the same), and
/// the agents that will run `plan`: its own `--agent`s, or as many local
/// workers as the open-files limit needs.
fn ready(plan: &mut LoadPlan, warnings: &mut Vec<String>) -> anyhow::Result<Launch> {
    let total = plan.connections + plan.idle;
    // Agents started elsewhere check their own limits (their hello);
    // this machine's are checked only when it runs the connections.
    let remote = plan.agents.is_some();
    if !remote {
        // Limits first, each stated with its shortfall and its fix.
        let needs = preflight::Needs {
            connections: total,
            target: plan.target,
            sources: plan.sources.len(),
            threads: plan.threads,
            listen_queues: plan.server_pids.len().max(1),
            client_here: true,
        };
        let findings = preflight::check_with(&needs, plan.connect_rate, &preflight::System::read());
        for f in &findings {
            let shown = if f.level >= preflight::Level::Warn {
                plan.preflight_to_stderr
            } else {
                !plan.quiet
            };
            if shown {
                eprintln!("{f}");
            }
            if f.level >= preflight::Level::Warn {
                warnings.push(format!("{}; fix: {}", f.what, f.fix));
            }
        }
        if let Some(f) = findings.iter().find(|f| f.level == preflight::Level::Block) {
            anyhow::bail!("{} (fix: {})", f.what, f.fix);
        }
        // Sources are chosen once, here, so every worker process uses the
        // same.
        if plan.sources.is_empty() && plan.target.ip().is_loopback() && plan.target.is_ipv4() {
            let auto = source::auto_loopback_sources(total, source::ephemeral_port_count());
            if auto.len() > 1 {
                plan.sources = auto;
            }
        }
    }
    source::check_family(&plan.sources, plan.target).map_err(anyhow::Error::msg)?;
    let hard = sys::rlimit::nofile().hard.unwrap_or(u64::MAX);
    Ok(plan.agents.clone().unwrap_or_else(|| Launch {
        templates: Template::parse(LOCAL).into_iter().collect(),
        agents: preflight::processes_needed(total, hard),
    }))
}

fn run_inner(mut plan: LoadPlan, connected: Option<&mut dyn FnMut()>) -> anyhow::Result<Outcome> {
    let mut warnings = Vec::new();
    let total = plan.connections + plan.idle;
    let remote = plan.agents.is_some();
    let launch = ready(&mut plan, &mut warnings)?;
    let processes = launch.agents;
    let environment = crate::env::capture();
    let tcp_before = crate::env::tcp_counters().ok();
    let started = SystemTime::now();
    let spread = connected.is_some() || remote || processes > 1;
    let mut lost: Vec<String> = Vec::new();
    let mut agents_report = None;
    let mut spread_over = None;
    let measured = if spread {
        let mut nothing = || {};
        let merged = agents::run(&plan, &launch, connected.unwrap_or(&mut nothing))?;
        lost = merged.lost.iter().map(ToString::to_string).collect();
        agents_report = (merged.report.each.len() > 1 || remote && !merged.report.each.is_empty())
            .then_some(merged.report);
        warnings.extend(lost.iter().cloned());
        spread_over = Some((merged.capacity, merged.local));
        warnings.extend(merged.warnings);
        merged.measured
    } else {
        preflight::raise_nofile_for(total).context("raising the open-files limit")?;
        drive(
            &plan,
            &mut |_| Ok(Default::default()),
            &mut |_| Ok(None),
            &|_| {},
        )?
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
    // The agents' own namespaces: where a client's connects retransmit.
    let here = (&environment.hostname, &environment.network_namespace);
    for ns in agents_report.iter().flat_map(|a| &a.namespaces) {
        if (&ns.hostname, &ns.network_namespace) == here {
            continue;
        }
        let t: Option<crate::env::TcpCounters> = serde_json::from_value(ns.tcp.clone()).ok();
        if let Some(t) = t.filter(|t| t.syn_retrans > 0 || t.listen_overflows > 0) {
            warnings.push(format!(
                "agents {:?} ({} {}) saw {} SYN retransmits and {} listen overflows: their connect latencies include retransmit timeouts (lower --connect-rate, or raise the server's backlog)",
                ns.agents, ns.hostname, ns.network_namespace, t.syn_retrans, t.listen_overflows
            ));
        }
    }
    let mut outcome = assemble(&plan, measured, processes, spread_over, started, warnings);
    outcome.lost = lost;
    outcome.report.agents = agents_report;
    outcome.report.tcp = serde_json::to_value(tcp).unwrap_or_default();
    outcome.report.environment = serde_json::to_value(environment).unwrap_or_default();
    outcome.report.sources = plan.sources.iter().map(IpAddr::to_string).collect();
    Ok(outcome)
}

/// A resident load (`c10k run`'s slots): the connections of `plan` up in
/// worker processes, measured window after window on demand, each window
/// a report of its own; the connections stay up between windows and cost
/// the server nothing then. Ctrl-C during a window fails it (the runner
/// records nothing of it); dropping the session stops every worker.
pub(crate) struct Session {
    plan: LoadPlan,
    agents: agents::Resident,
    processes: usize,
    warnings: Vec<String>,
}

impl Session {
    /// Checks the limits and opens every connection of `plan`, calling
    /// `connected` once they are up (the moment to sample a server holding
    /// them).
    pub(crate) fn open(mut plan: LoadPlan, connected: &mut dyn FnMut()) -> anyhow::Result<Session> {
        let mut warnings = Vec::new();
        let launch = ready(&mut plan, &mut warnings)?;
        let agents = agents::Resident::open(&plan, &launch, connected)?;
        warnings.extend(agents.warnings.iter().cloned());
        Ok(Session {
            processes: launch.agents,
            plan,
            agents,
            warnings,
        })
    }

    /// One window (its warm-up, then its measured part), as a report;
    /// `ask` may give it a rate and a length of its own.
    pub(crate) fn window(&mut self, ask: Ask) -> anyhow::Result<Outcome> {
        let started = SystemTime::now();
        let m = self.agents.window(ask)?;
        // The report states the window's own rate and length.
        let mut plan = self.plan.clone();
        if let (Some(r), Workload::Open { rate, .. }) =
            (ask.rate_per_connection, &mut plan.workload)
        {
            *rate = r * plan.connections as f64;
        }
        if let Some(d) = ask.measured_seconds {
            plan.stop = super::plan::Stop::Duration(Duration::from_secs_f64(d));
        }
        let mut outcome = assemble(
            &plan,
            m,
            self.processes,
            Some(self.agents.capacity),
            started,
            self.warnings.clone(),
        );
        outcome.report.sources = self.plan.sources.iter().map(IpAddr::to_string).collect();
        Ok(outcome)
    }

    /// Closes the connections, giving the workers a moment to do it
    /// themselves.
    pub(crate) fn close(self) {
        self.agents.close(Duration::from_secs(5));
    }
}

/// Turns what was measured into the report.
fn assemble(
    plan: &LoadPlan,
    m: Measured,
    processes: usize,
    spread_over: Option<(f64, bool)>,
    started: SystemTime,
    mut warnings: Vec<String>,
) -> Outcome {
    let mut errors: BTreeMap<Failure, u64> = Failure::ALL.iter().map(|&f| (f, 0)).collect();
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
    let workload = plan.workload.kind();
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
                interval_us: plan.interval.as_secs_f64() * 1e6,
            })
        }
        _ => None,
    };
    let burst = matches!(plan.workload, Workload::Burst { .. }).then(|| report::Burst {
        makespan_us: m.rounds.iter().map(|r| r.makespan_us()).collect(),
    });
    if failed > 0 {
        warnings.push(format!(
            "{failed} connection(s) ended early: see errors (and --per-connection-csv)"
        ));
    }
    let http = plan.protocol == Protocol::Http;
    let http_report = http.then(|| {
        let request = super::http::request(&plan.target.to_string(), plan.message_size);
        report::Http::of(request.len(), &m.http)
    });
    if let Some(h) = &http_report {
        if h.errors > 0 {
            warnings.push(format!(
                "{} of {} measured responses were not 2xx ({}): they are counted in the requests and their latency, as wrk counts them, and are errors",
                h.errors,
                messages,
                h.error_text().join(", ")
            ));
        }
    }
    if m.interrupted {
        warnings.push("interrupted (Ctrl-C or SIGTERM): results cover the run so far".into());
    }
    let cpu = m.cpu_user + m.cpu_system;
    // Every event loop on the CPUs it may use: in this process, or over
    // the agents' hosts.
    let online = crate::env::online_cpus().len().max(1);
    let (client_capacity, client_local) = spread_over.unwrap_or_else(|| {
        let allowed = plan.cpus.as_ref().map_or(online, Vec::len);
        (plan.threads.min(allowed) as f64, true)
    });
    let limits = limit::judge(&limit::Inputs {
        window: m.window,
        client_seconds: cpu,
        client_capacity,
        client_local,
        server_local: super::source::is_local(plan.target.ip()),
        rate_kept: match plan.workload {
            Workload::Open { rate, .. } => per_second(messages as f64) >= rate * 0.95,
            _ => false,
        },
        machine_cpus: online as f64,
        lag: open_loop.as_ref().map(|o| limit::Lag {
            send_p99: o.send_lag_us.p99 / 1e6,
            latency_p99: Percentiles::of(&m.latency).p99 / 1e6,
            interval: plan.interval.as_secs_f64(),
        }),
    });
    let mut report = Report {
        schema_version: report::SCHEMA_VERSION,
        command: plan.command.clone(),
        target: plan.target.to_string(),
        protocol: plan.protocol,
        workload,
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
            bytes_per_second: if http {
                // Responses at their mean size over the run.
                let each = bytes_received as f64 / m.http.responses.max(1) as f64;
                per_second(messages as f64 * each)
            } else {
                per_second((messages * message_bytes as u64) as f64)
            },
        },
        latency_us: Percentiles::of(&m.latency),
        open_loop,
        burst,
        errors,
        http: http_report,
        client: report::Client {
            threads: agents::threads_each(plan.threads, processes),
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
        agents: None,
        environment: serde_json::Value::Null,
    };
    // Nothing measured at all: the cause, not advice on the window.
    if let Some(why) = report.no_result().or_else(|| report.too_little()) {
        report.warnings.push(why);
    }
    Outcome {
        report,
        records,
        latency: m.latency,
        started,
        lost: Vec::new(),
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
