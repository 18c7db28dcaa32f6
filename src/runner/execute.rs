//! One cell, start to finish: check the limits, start the server (several
//! instances sharing the port when one process may not hold every
//! connection), sample it idle, drive it with the load generator, sample it
//! again with every connection up, stop and reap it, and turn all of that
//! into a [`CellResult`]. Whatever goes wrong becomes the cell's reason;
//! nothing here ends the run.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::child::foreign::{self, Foreign};
use crate::child::server::{Launcher, ServerChild, StartError, Stopped};
use crate::client::conn::Failure;
use crate::client::plan::{LoadPlan, Stop, Workload, DEFAULT_DURATION};
use crate::client::run::Outcome;
use crate::metrics::kernel::KernelMemory;
use crate::metrics::tree::TreeMemory;
use crate::metrics::{kernel, tree};
use crate::results::cell::{CellResult, ServerSide, Status};
use crate::results::matrix::{CellSpec, RunPlan, Shape, WorkloadKind};
use crate::server::settings::Settings;
use crate::sys;

/// How long the server's socket count may stand still, short of every
/// connection the client has up, before the loaded sample is taken anyway
/// (and the cell notes it).
pub(super) const ACCEPT_PATIENCE: Duration = Duration::from_secs(2);

/// How long a server is watched holding no connection, for its CPU when
/// idle: long enough that the clock-tick rounding of a process's time
/// (10 ms) moves the share by 5 % at most.
const IDLE_WINDOW: Duration = Duration::from_millis(200);

/// CPUs' worth the trees of `pids` use over [`IDLE_WINDOW`] with nothing to
/// do; `None` when they cannot be read.
pub(super) fn idle_cpu(pids: &[u32]) -> Option<f64> {
    let before = crate::metrics::cpu::tree(pids)?;
    let t = Instant::now();
    std::thread::sleep(IDLE_WINDOW);
    let after = crate::metrics::cpu::tree(pids)?;
    Some((after.seconds - before.seconds) / t.elapsed().as_secs_f64())
}

/// How a cell ended when it did not produce a result to keep.
pub(crate) enum Ended {
    Done(Box<CellResult>),
    /// Ctrl-C: the cell is not recorded, so a resumed run repeats it.
    Interrupted,
}

/// Runs one cell of `plan`; per-connection CSV (when asked) goes under
/// `dir`.
pub(crate) fn run_cell(plan: &RunPlan, spec: &CellSpec, dir: &Path) -> Ended {
    let t0 = Instant::now();
    let cpu0 = sys::process::Usage::of_self();
    let started_unix = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let mut result = CellResult {
        started_unix,
        messages_per_connection: if plan.workload.kind() == WorkloadKind::Closed {
            plan.workload.messages_for(spec.connections)
        } else {
            None
        },
        plan: Some(crate::results::identity::settings(plan)),
        ..CellResult::new(spec.clone(), Status::Failed)
    };
    let outcome = match plan.bench {
        Some(b) => super::bench::measure(b, plan, spec, &mut result).map_err(|t| match t {
            super::bench::Trouble::Skipped(w) => Trouble::Skipped(w),
            super::bench::Trouble::Failed(w) => Trouble::Failed(w),
        }),
        None => measure(plan, spec, dir, &mut result),
    };
    result.wall_seconds = t0.elapsed().as_secs_f64();
    result.runner_cpu_seconds = Some(sys::process::Usage::of_self().cpu_since(&cpu0));
    match outcome {
        Ok(()) => {}
        Err(Trouble::Interrupted) => return Ended::Interrupted,
        Err(Trouble::Skipped(why)) => {
            result.status = Status::Skipped;
            result.reason = Some(why);
        }
        Err(Trouble::Failed(why)) => {
            result.status = Status::Failed;
            result.reason = Some(why);
        }
    }
    Ended::Done(Box::new(result))
}

pub(super) enum Trouble {
    Skipped(String),
    Failed(String),
    Interrupted,
}

fn measure(
    plan: &RunPlan,
    spec: &CellSpec,
    dir: &Path,
    result: &mut CellResult,
) -> Result<(), Trouble> {
    let hard = sys::rlimit::nofile().hard;
    result.kernel_before = kernel::sample();
    let Started {
        servers,
        addr,
        args: args_used,
        instances,
        task_per_connection,
    } = start_servers(plan, spec, hard)?;
    // Stopped while the servers came up: the cell is abandoned.
    if sys::signals::interrupted() {
        for s in servers {
            s.stop();
        }
        return Err(Trouble::Interrupted);
    }
    // A --target's server is not ours: nothing of it is sampled.
    let observed = !servers.is_empty();
    let pids: Vec<u32> = servers.iter().map(ServerChild::pid).collect();
    let idle = tree::sample(&pids);
    let idle_cpus = (observed && spec.run == 1 && plan.workload.kind() != WorkloadKind::Churn)
        .then(|| idle_cpu(&pids))
        .flatten();
    let csv = plan.per_connection_csv.then(|| {
        let work = spec
            .work
            .as_ref()
            .map_or_else(String::new, |w| format!("-{w}"));
        format!(
            "cells/{}{work}-c{}-r{}.csv",
            spec.model, spec.connections, spec.run
        )
    });
    let load_plan = match load_plan(plan, spec, addr, pids.clone(), None) {
        Ok(p) => p,
        Err(e) => {
            // Not reached for a plan that passed its checks; the servers
            // are stopped all the same.
            for s in servers {
                s.stop();
            }
            return Err(Trouble::Failed(format!("the client's plan: {e}")));
        }
    };
    let mut loaded = TreeMemory::default();
    let mut kernel_loaded: Option<KernelMemory> = None;
    let mut traffic_from = None;
    let mut all_accepted = true;
    let churn = plan.workload.kind() == WorkloadKind::Churn;
    let outcome = crate::client::run::run_in_workers(load_plan, &mut || {
        // The client's connects completed before the server accepted them
        // all (they wait in the backlog): sample once the server holds them.
        if !churn && observed {
            let sockets = idle.sockets as usize + spec.connections;
            // A thread or process per connection: wait for those too.
            let threads = if task_per_connection {
                idle.threads + spec.connections as u64
            } else {
                0
            };
            let others = idle.fds.saturating_sub(idle.sockets);
            all_accepted = tree::wait_for(&pids, sockets, others, threads, ACCEPT_PATIENCE);
        }
        loaded = tree::sample(&pids);
        kernel_loaded = kernel::sample();
        traffic_from = Some(sys::process::Usage::of_self());
    });
    result.runner_traffic_cpu_seconds =
        traffic_from.map(|from| sys::process::Usage::of_self().cpu_since(&from));
    // Peaks only: the sockets were counted with every connection up.
    let end = tree::memory(&pids);
    let died = servers.iter().position(|s| !s.running());
    let stopped: Vec<Stopped> = servers.into_iter().map(ServerChild::stop).collect();
    result.kernel_loaded = kernel_loaded;
    let secs = |d: Duration| d.as_secs_f64();
    result.server = observed.then(|| ServerSide {
        instances,
        args: args_used,
        cpu_user_seconds: stopped
            .iter()
            .filter_map(|s| s.reaped)
            .map(|r| secs(r.user))
            .sum(),
        cpu_system_seconds: stopped
            .iter()
            .filter_map(|s| s.reaped)
            .map(|r| secs(r.system))
            .sum(),
        max_rss_kib: stopped
            .iter()
            .filter_map(|s| s.reaped)
            .map(|r| r.max_rss_kib)
            .max()
            .unwrap_or(0),
        idle,
        loaded,
        end,
        summaries: stopped.iter().filter_map(|s| s.summary.clone()).collect(),
        idle_cpus,
        cpu_error_seconds: None,
    });
    if let Some(s) = &result.server {
        result.work_done = crate::analysis::bound::of_cell(plan, spec, &s.summaries);
    }
    let server_trouble = match died {
        Some(i) => stopped[i]
            .trouble()
            .map(|t| format!("{t} during the cell"))
            .or_else(|| Some("the server exited during the cell".into())),
        None => stopped.iter().find_map(Stopped::trouble),
    };
    let outcome: Outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            let mut why = one_line(&format!("the load generator failed: {e:#}"));
            if let Some(t) = server_trouble {
                why = format!("{t}; {why}");
            }
            return Err(Trouble::Failed(why));
        }
    };
    if outcome.report.interrupted {
        return Err(Trouble::Interrupted);
    }
    if let Some(rel) = &csv {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        match crate::export::write_csv(&path, &outcome.records) {
            Ok(()) => result.per_connection_csv = Some(rel.clone()),
            Err(e) => {
                return Err(Trouble::Failed(format!(
                    "cannot write {}: {e}",
                    path.display()
                )))
            }
        }
    }
    let mut report = outcome.report;
    report.environment = serde_json::Value::Null;
    // What stopping the servers found though they ended well (a helper in
    // a session of its own killed, an output held open): said, not failed.
    for note in stopped.iter().filter_map(Stopped::notes) {
        report.warnings.push(format!("stopping the server: {note}"));
    }
    if !all_accepted {
        report.warnings.push(format!(
            "the server stopped accepting for {} s: memory was sampled with {} of {} connections",
            ACCEPT_PATIENCE.as_secs(),
            loaded.sockets.saturating_sub(idle.sockets),
            spec.connections
        ));
    }
    let summaries = result.server.as_ref().map_or(&[][..], |s| &s.summaries[..]);
    let judged = judge(&report, spec, summaries, server_trouble);
    result.load = Some(report);
    judged?;
    result.status = Status::Ok;
    Ok(())
}

/// Whether a cell's measured load is a result, and if not why: the
/// server's trouble (`server_trouble`), nothing measured, too little
/// measured, or connections that failed; each failure names the limits
/// its errors point at.
pub(super) fn judge(
    report: &crate::client::report::Report,
    spec: &CellSpec,
    summaries: &[serde_json::Value],
    server_trouble: Option<String>,
) -> Result<(), Trouble> {
    let failures = report.failures();
    let errors: Vec<String> = report
        .errors
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    // Nothing measured at all (every connection failed, or no echo came
    // back): that is the cause, before any other reading of the window.
    let no_result = report.no_result();
    let too_little = report.too_little();
    let limits = limits_hit(report, summaries);
    let naming_limits = |why: String| {
        if limits.is_empty() {
            why
        } else {
            format!("{why}; limit hit: {}", limits.join("; "))
        }
    };
    if let Some(t) = server_trouble {
        return Err(Trouble::Failed(naming_limits(t)));
    }
    if let Some(why) = no_result {
        return Err(Trouble::Failed(naming_limits(format!(
            "{why} ({failures} of {} connections failed: {})",
            spec.connections,
            if errors.is_empty() {
                "none with an error".to_string()
            } else {
                errors.join(", ")
            }
        ))));
    }
    // A window in which not every connection could finish a round trip
    // measured which connections happened to finish, not the server.
    if let Some(why) = too_little {
        return Err(Trouble::Failed(why));
    }
    if failures > 0 {
        return Err(Trouble::Failed(naming_limits(format!(
            "{failures} of {} connections failed ({})",
            spec.connections,
            errors.join(", ")
        ))));
    }
    Ok(())
}

/// The server side of a cell, running.
pub(super) struct Started {
    /// None for a `--target`, which c10k did not start.
    pub servers: Vec<ServerChild>,
    /// Where the client connects.
    pub addr: std::net::SocketAddr,
    /// The command line of the last instance started.
    pub args: Vec<String>,
    pub instances: usize,
    /// A thread or process per connection: the loaded sample waits for
    /// those too.
    pub task_per_connection: bool,
}

/// Starts the cell's server: a foreign one as its command says, or `c10k
/// serve` in as many instances (sharing the port) as the connections need
/// under the open-files hard limit `hard`.
pub(super) fn start_servers(
    plan: &RunPlan,
    spec: &CellSpec,
    hard: Option<u64>,
) -> Result<Started, Trouble> {
    let foreign = plan.servers.iter().any(|f| f.name == spec.model)
        || plan.targets.iter().any(|t| t.name == spec.model);
    if let (true, Some(work)) = (foreign, &spec.work) {
        return Err(Trouble::Skipped(format!(
            "{} is not a c10k model: --work {work} is a c10k serve flag its server cannot take \
             (its handler does what its own code does), so it runs under the none profile only",
            spec.model
        )));
    }
    if let Some(f) = plan.servers.iter().find(|f| f.name == spec.model) {
        return start_foreign(plan, spec, f, hard);
    }
    if let Some(t) = plan.targets.iter().find(|t| t.name == spec.model) {
        return Ok(Started {
            servers: Vec::new(),
            addr: t.addr,
            args: Vec::new(),
            instances: 0,
            task_per_connection: false,
        });
    }
    let (model, variant) = plan
        .model(&spec.model)
        .ok_or_else(|| Trouble::Failed(format!("unknown model '{}'", spec.model)))?;
    // Refused up front (the plan says why), or by the limits as they are
    // now (a resumed run on a changed machine): not started.
    if let Some(r) = plan
        .refused
        .iter()
        .find(|r| r.model == spec.model && spec.connections >= r.from)
    {
        return Err(Trouble::Skipped(r.why.clone()));
    }
    let system = crate::client::preflight::System::read();
    if let Some(why) = super::preflight::task_refusal(model, spec.connections, &system, None) {
        return Err(Trouble::Skipped(why));
    }
    let instances = if model.forks() {
        1
    } else {
        crate::results::matrix::server_processes(spec.connections, hard)
    };
    let mut servers: Vec<ServerChild> = Vec::with_capacity(instances);
    let mut args_used = Vec::new();
    for i in 0..instances {
        let port = servers.first().map_or(0, |s| s.addr.port());
        let args = server_args(plan, (model, variant), spec, instances, port, hard);
        match ServerChild::start(&args) {
            Ok(s) => servers.push(s),
            Err(e) => {
                let stopped: Vec<Stopped> = servers.into_iter().map(ServerChild::stop).collect();
                drop(stopped);
                return Err(match e {
                    StartError::Unsupported(why) => Trouble::Skipped(why),
                    StartError::Failed(why) if i > 0 => {
                        Trouble::Failed(format!("server instance {} of {instances}: {why}", i + 1))
                    }
                    StartError::Failed(why) => Trouble::Failed(why),
                });
            }
        }
        args_used = args;
    }
    Ok(Started {
        addr: servers[0].addr,
        servers,
        args: args_used,
        instances,
        task_per_connection: model.task_per_connection(),
    })
}

/// Starts a foreign server: one process (c10k cannot know whether it
/// shares a port), pinned as the cell says, with the open-files soft limit
/// raised to the hard one (as our models get `--nofile`).
fn start_foreign(
    plan: &RunPlan,
    spec: &CellSpec,
    f: &Foreign,
    hard: Option<u64>,
) -> Result<Started, Trouble> {
    if let Some(why) = &f.unavailable {
        return Err(Trouble::Skipped(why.clone()));
    }
    if let Some(room) = hard.map(|h| h.saturating_sub(crate::results::matrix::SERVER_HEADROOM)) {
        if spec.connections as u64 > room {
            return Err(Trouble::Skipped(format!(
                "{} is one process, which holds at most {room} connections under the open-files \
                 hard limit of {}; c10k spreads only its own models over processes",
                f.name,
                hard.unwrap_or(0)
            )));
        }
    }
    sys::rlimit::raise_nofile()
        .map_err(|e| Trouble::Failed(format!("raising the open-files limit: {e}")))?;
    let port =
        foreign::free_port().map_err(|e| Trouble::Failed(format!("finding a free port: {e}")))?;
    let cpus = if plan.server_cpus.is_empty() {
        sys::affinity::current_cpus()
    } else {
        plan.server_cpus.clone()
    };
    let argv = f.argv(port, &sys::affinity::format_cpu_list(&cpus));
    let launcher = Launcher {
        patience: Duration::from_secs_f64(plan.ready_timeout_seconds.clamp(0.01, 3600.0)),
        ..Launcher::default()
    };
    let server = launcher
        .start_foreign(&argv, port, &plan.server_cpus, None)
        .map_err(|e| match e {
            StartError::Unsupported(why) => Trouble::Skipped(why),
            StartError::Failed(why) => Trouble::Failed(format!("{}: {why}", f.name)),
        })?;
    // It binds where its command says; the client goes to --bind.
    let addr = match plan.bind {
        Some(ip) => std::net::SocketAddr::new(ip, server.addr.port()),
        None => server.addr,
    };
    Ok(Started {
        addr,
        servers: vec![server],
        args: argv,
        instances: 1,
        task_per_connection: false,
    })
}

/// The `c10k serve` arguments of one instance of `model` with its
/// variant's settings, for cell `spec` (its work, when it has some: a
/// request is one of the workload's messages): the cell's own settings,
/// the variant's laid over them, what `--tune` kept over both, and a
/// user's `--server-arg`s over all, written as flags here, where the
/// child starts.
fn server_args(
    plan: &RunPlan,
    (model, variant): (&dyn crate::server::Model, &Settings),
    spec: &CellSpec,
    instances: usize,
    port: u16,
    hard: Option<u64>,
) -> Vec<String> {
    let connections = spec.connections;
    let cell = Settings {
        buffer_bytes: crate::present::units::parse_size(&plan.buffer).ok(),
        workers: Some(default_workers(plan, model, connections)),
        nofile: hard,
        work: spec.work.clone(),
        // An echo's request is a message of -m bytes; HTTP's its own.
        message_size: spec
            .work
            .as_ref()
            .filter(|_| plan.workload.protocol.is_echo())
            .map(|_| plan.workload.message_size()),
        ..Settings::default()
    };
    let tuned = plan
        .tuned_at(&spec.model, connections, spec.work.as_ref())
        .map(|t| t.settings.clone())
        .unwrap_or_default();
    let settings = cell.over(variant).over(&tuned).over(&plan.server_settings);
    let mut a: Vec<String> = vec![
        "--model".into(),
        model.name().into(),
        "--port".into(),
        port.to_string(),
    ];
    if let Some(ip) = plan.bind {
        a.extend(["--bind".into(), ip.to_string()]);
    }
    if !plan.server_cpus.is_empty() {
        a.extend([
            "--cpus".into(),
            crate::sys::affinity::format_cpu_list(&plan.server_cpus),
        ]);
    }
    if instances > 1 {
        a.push("--reuseport".into());
    }
    a.extend(settings.args());
    a
}

/// The `--workers` a run gives `model` at `connections`: a worker per
/// connection (and 8 spare) for a model that blocks one per connection,
/// else one per CPU the server may use.
pub(crate) fn default_workers(
    plan: &RunPlan,
    model: &dyn crate::server::Model,
    connections: usize,
) -> usize {
    if model.worker_per_connection() {
        // A blocked worker per connection, as the model is meant to run.
        connections + 8
    } else {
        server_cores(plan)
    }
}

/// The CPUs the run's servers may use.
pub(crate) fn server_cores(plan: &RunPlan) -> usize {
    if plan.server_cpus.is_empty() {
        crate::sys::affinity::cpus_available()
    } else {
        plan.server_cpus.len()
    }
}

/// The client's plan for a cell against `target`, checked as any plan
/// is; its command line is recorded with the results. In a resident
/// `slot`, each window is the slot: its warm-up, then the rest measured.
pub(super) fn load_plan(
    plan: &RunPlan,
    spec: &CellSpec,
    target: std::net::SocketAddr,
    server_pids: Vec<u32>,
    slot: Option<crate::results::matrix::Slots>,
) -> Result<LoadPlan, String> {
    let w = &plan.workload;
    let n = spec.connections;
    let messages = w.messages_for(n);
    let workload = match (w.shape, w.rate) {
        (Shape::Closed { depth }, Some(r)) => Workload::Open {
            rate: r.total(n),
            depth,
        },
        (Shape::Closed { depth }, None) => Workload::Closed { depth },
        (Shape::Burst { rounds }, _) => Workload::Burst { rounds },
        (Shape::Churn { churn_echo }, _) => Workload::Churn { echo: churn_echo },
    };
    let fixed = w.kind() == WorkloadKind::Closed && messages.is_some();
    let stop = match (fixed, messages) {
        (true, Some(m)) => Stop::Messages(m),
        // A burst ends with its rounds: the flags' default, which its
        // command line leaves out.
        _ if w.kind() == WorkloadKind::Burst => Stop::Duration(DEFAULT_DURATION),
        _ => Stop::Duration(Duration::from_secs_f64(w.duration_seconds)),
    };
    // An open loop's fixed work is still paced: its warm-up settles the
    // schedule before the counted messages, as a timed window's does.
    let warmup = if (fixed && w.rate.is_none()) || w.kind() == WorkloadKind::Burst {
        Duration::ZERO
    } else {
        Duration::from_secs_f64(w.warmup_seconds)
    };
    let (stop, warmup) = match slot {
        Some(s) => (
            Stop::Duration(Duration::from_secs_f64(s.measured_seconds())),
            Duration::from_secs_f64(s.warmup_seconds),
        ),
        None => (stop, warmup),
    };
    let cpus = (!plan.client_cpus.is_empty()).then(|| plan.client_cpus.clone());
    let mut p = LoadPlan {
        protocol: w.protocol,
        threads: plan.client_threads(n),
        stop,
        warmup,
        message_size: w.message_size(),
        payload: w.payload.as_ref().map(|p| p.as_bytes().to_vec()),
        timeout: Duration::from_secs_f64(w.timeout_seconds),
        connect_rate: w.connect_rate,
        interval: Duration::from_secs_f64(w.client_interval_seconds.unwrap_or(0.0)),
        arrivals: w.arrivals,
        cpus,
        quiet: true,
        // The run printed its pre-flight once; each cell keeps its own
        // findings in its report's warnings.
        preflight_to_stderr: false,
        server_pids,
        agents: plan.agents.clone(),
        resident: slot.is_some(),
        ..LoadPlan::new(target, n, workload)
    }
    .validate()?;
    p.command = p.command_line();
    Ok(p)
}

/// The limits a cell's failures point at, for its reason: the client's
/// descriptors or ports, the listen queues, the server's accept running
/// out of descriptors or memory.
fn limits_hit(
    report: &crate::client::report::Report,
    summaries: &[serde_json::Value],
) -> Vec<String> {
    let mut out = Vec::new();
    let errors = |k: Failure| report.errors.get(&k).copied().unwrap_or(0);
    if errors(Failure::Emfile) > 0 {
        out.push(
            "the client ran out of descriptors (EMFILE: its open-files limit; ENFILE: fs.file-max)"
                .to_string(),
        );
    }
    if errors(Failure::AddrNotAvail) > 0 {
        out.push(
            "the client ran out of ephemeral ports (EADDRNOTAVAIL: net.ipv4.ip_local_port_range \
             per source address)"
                .to_string(),
        );
    }
    let tcp = |k: &str| {
        report
            .tcp
            .get(k)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    if tcp("listen_overflows") > 0 {
        out.push(format!(
            "listen queues overflowed {} times (net.core.somaxconn and the server's backlog; {} \
             SYN retransmits)",
            tcp("listen_overflows"),
            tcp("syn_retrans")
        ));
    }
    let exhausted: u64 = summaries
        .iter()
        .filter_map(|s| s["errors"]["accept_exhausted"].as_u64())
        .sum();
    if exhausted > 0 {
        out.push(format!(
            "the server's accept() ran out of descriptors or memory {exhausted} times (EMFILE, \
             ENFILE, ENOBUFS, ENOMEM)"
        ));
    }
    out
}

/// The first line of a message, without the anyhow chain's line breaks.
pub(super) fn one_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_cell_names_the_limits_it_hit() {
        let mut r = crate::client::report::example(10, 1, 640);
        assert!(limits_hit(&r, &[]).is_empty());
        r.errors.insert(Failure::Emfile, 3);
        r.errors.insert(Failure::AddrNotAvail, 1);
        r.tcp = serde_json::json!({"listen_overflows": 2, "syn_retrans": 5});
        let server = serde_json::json!({"errors": {"accept_exhausted": 4}});
        let l = limits_hit(&r, &[server.clone(), server]);
        assert_eq!(l.len(), 4, "{l:?}");
        assert!(l[0].contains("EMFILE"), "{l:?}");
        assert!(l[1].contains("ip_local_port_range"), "{l:?}");
        assert!(
            l[2].contains("overflowed 2 times") && l[2].contains("5 SYN"),
            "{l:?}"
        );
        assert!(l[3].contains("8 times"), "{l:?}");
    }
}
