//! Before a run's first connection: its largest cell against this
//! machine's limits, and every model that needs a task per connection
//! against the tasks and the memory it would take.
//!
//! The largest cell goes through the client's checks
//! ([`crate::client::preflight`]): `fs.file-max` for both ends here,
//! memory at the measured cost of an idle connection, ports per source
//! address, the listen queues of the server processes the open-files limit
//! needs, the client's threads. A finding that blocks refuses the run with
//! its numbers and its fix before anything starts.
//!
//! A model with a thread or a process per connection (threads, fork,
//! prefork) is refused up front at every count it cannot hold, with the
//! measured cause: the task limits (`kernel.pid_max`, `threads-max`,
//! RLIMIT_NPROC, the cgroup's `pids.max`), two memory mappings per thread,
//! and the memory its tasks would take, measured by parking 256 threads in
//! a child ([`crate::micro::parked`]): their kernel stacks and touched
//! stack pages. Those cells are recorded as skipped with that cause; the
//! run goes on with the others. Cost: a few reads of /proc and /sys, and
//! when such a model is in the plan, 256 threads started once.
//!
//! A process-per-connection model run from 5,000 connections on a machine
//! whose DAMON watches physical memory gets a warning: the monitor's CPU
//! grows with the children ([`crate::env::damon`]).

use crate::client::preflight::{self, Finding, Level, Needs, System};
use crate::present::units::format_count;

use crate::results::matrix::{Refusal, RunPlan};

/// Threads parked to measure what one costs.
const PARKED: usize = 256;

/// What one parked thread costs, measured: its kernel stack and the pages
/// of its own stack it touched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TaskCost {
    pub kib_per_task: f64,
}

impl TaskCost {
    /// Parks [`PARKED`] threads with a 2 MiB stack (glibc's default is 8
    /// MiB of address space; what is resident does not depend on it) in a
    /// child and reads the difference.
    pub(crate) fn measure() -> Option<TaskCost> {
        let r = crate::micro::parked::measure(PARKED, 2 << 20).ok()?;
        let kib = r.rss_kib_per_thread.max(0.0) + r.kernel_stack_kib_per_thread.max(0.0);
        (kib > 0.0).then_some(TaskCost { kib_per_task: kib })
    }
}

/// The findings for `plan` on this machine; the first that blocks, if
/// any, is why it cannot run.
pub fn check(plan: &RunPlan) -> Vec<Finding> {
    check_with(plan, &System::read())
}

/// The largest cell of `plan` that will run (models refused up front
/// from a count on do not make it) against `system`.
pub(crate) fn check_with(plan: &RunPlan, system: &System) -> Vec<Finding> {
    if plan.bench.is_some() {
        return Vec::new();
    }
    let runs = |n: usize| {
        plan.models
            .iter()
            .any(|m| !plan.refused.iter().any(|r| r.model == *m && n >= r.from))
    };
    let Some(n) = plan.connections.iter().copied().filter(|&n| runs(n)).max() else {
        return Vec::new();
    };
    // The servers run here, on --bind or loopback; a run of --targets
    // alone goes where they are.
    let ours = plan
        .models
        .iter()
        .any(|m| !plan.targets.iter().any(|t| t.name == *m));
    let target = match plan.targets.first() {
        Some(t) if !ours => t.addr,
        _ => std::net::SocketAddr::new(
            plan.bind
                .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
            7,
        ),
    };
    let needs = Needs {
        connections: n,
        target,
        sources: 0,
        threads: plan.client_threads(n),
        listen_queues: crate::results::matrix::server_processes(n, system.nofile_hard),
        // Agents check their own machines; here, only the servers' half.
        client_here: plan.agents.is_none(),
    };
    let mut findings = preflight::check_with(&needs, plan.workload.connect_rate, system);
    findings.extend(damon_finding(plan, system));
    findings
}

/// From this many connections a process-per-connection model measures
/// DAMON as well (fork at 5,000:1 was level with its C program here, at
/// 6,000 and 10,000 behind while DAMON ran).
const DAMON_FORK_FROM: usize = 5_000;

/// A warning when a model with a process per connection runs thousands
/// of children on a machine whose DAMON watches physical memory
/// ([`crate::env::damon`]): the monitor's CPU then grows with the model's
/// children, so its figures include the host's monitor.
fn damon_finding(plan: &RunPlan, system: &System) -> Option<Finding> {
    if !crate::env::damon_watches_physical(&system.damon) {
        return None;
    }
    // Each forking model's largest count from the threshold on that runs.
    let counts: Vec<(&str, usize)> = plan
        .models
        .iter()
        .filter(|m| {
            crate::results::matrix::resolve(&plan.variants, m)
                .is_some_and(|(model, _)| model.forks() && model.task_per_connection())
        })
        .filter_map(|m| {
            let refused = |n: usize| plan.refused.iter().any(|r| r.model == *m && n >= r.from);
            let n = plan
                .connections
                .iter()
                .copied()
                .filter(|&n| n >= DAMON_FORK_FROM && !refused(n))
                .max()?;
            Some((m.as_str(), n))
        })
        .collect();
    let n = counts.iter().map(|&(_, n)| n).max()?;
    let models: Vec<&str> = counts.iter().map(|&(m, _)| m).collect();
    Some(Finding {
        level: Level::Warn,
        what: format!(
            "DAMON watches this machine's physical memory ({}): it checks a page by \
             visiting every process that maps it, and {}'s children all map their \
             parent's pages, so at {} connections its figures include the monitor's \
             CPU (20 to 28 % of the server's at 10,000 in the README's profiles)",
            system.damon.join("; "),
            models.join(", "),
            format_count(n as f64),
        ),
        fix: format!(
            "to measure without it: echo off > {}/N/state for the run, and on after",
            crate::env::KDAMONDS
        ),
    })
}

/// For each model of `plan` with a task per connection, the counts it
/// cannot hold; `cost` is measured only when such a model is present.
pub(crate) fn refusals(
    models: &[String],
    variants: &[crate::results::matrix::Variant],
    connections: &[usize],
    system: &System,
    cost: &mut dyn FnMut() -> Option<TaskCost>,
) -> Vec<Refusal> {
    let mut out = Vec::new();
    let mut measured: Option<Option<TaskCost>> = None;
    for name in models {
        let Some((model, _)) = crate::results::matrix::resolve(variants, name) else {
            continue;
        };
        if !(model.task_per_connection() || model.worker_per_connection()) {
            continue;
        }
        let cost = *measured.get_or_insert_with(&mut *cost);
        let mut sorted = connections.to_vec();
        sorted.sort_unstable();
        if let Some((from, why)) = sorted
            .iter()
            .find_map(|&n| task_refusal(model, n, system, cost).map(|w| (n, w)))
        {
            out.push(Refusal {
                model: name.clone(),
                from,
                why,
            });
        }
    }
    out
}

/// Why `model` cannot hold `connections` here, or `None` when it can: the
/// task limits, the memory mappings of its threads, and the memory its
/// tasks and connections would take (when `cost` was measured).
pub(crate) fn task_refusal(
    model: &dyn crate::server::Model,
    connections: usize,
    system: &System,
    cost: Option<TaskCost>,
) -> Option<String> {
    if !(model.task_per_connection() || model.worker_per_connection()) {
        return None;
    }
    let name = model.name();
    let n = connections as u64;
    let threads = model.task_per_connection() && !model.forks();
    let (mut causes, mut fixes): (Vec<String>, Vec<String>) =
        preflight::task_shortfalls(n, threads, system)
            .into_iter()
            .unzip();
    // What its tasks and connections would take: a cause past what is
    // available, said beside the other causes anyway.
    let mut memory = None;
    if let (Some(cost), Some(available)) = (cost, system.mem_available_kib) {
        let socket_kib = 2.0 * preflight::KERNEL_BYTES_PER_SOCKET as f64 / 1024.0;
        let kib = n as f64 * (cost.kib_per_task + socket_kib);
        let process = if model.forks() {
            ", a process more: its page tables"
        } else {
            ""
        };
        let over = kib > available as f64;
        let text = format!(
            "its tasks and connections would take {} MiB ({:.1} KiB per task measured with \
             {PARKED} parked threads{process}; {:.1} KiB of kernel memory per connection), {} \
             the {} MiB available",
            format_count(kib / 1024.0),
            cost.kib_per_task,
            socket_kib,
            if over { "more than" } else { "within" },
            format_count(available as f64 / 1024.0)
        );
        if over {
            causes.push(text);
            fixes.push("more memory".into());
        } else {
            memory = Some(text);
        }
    }
    if causes.is_empty() {
        return None;
    }
    causes.extend(memory);
    Some(format!(
        "{name} needs a task per connection: {}; fix: {}",
        causes.join("; "),
        fixes.join(" && ")
    ))
}

/// The finding that refuses a run, if any.
pub fn blocking(findings: &[Finding]) -> Option<&Finding> {
    findings.iter().find(|f| f.level == Level::Block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::tasks::Tasks;

    fn machine() -> System {
        System::example()
    }

    /// The client pinned to one CPU, as --pin split gives it on two.
    fn plan(models: &str, connections: &[usize]) -> RunPlan {
        let models: Vec<&str> = models.split(',').collect();
        let mut p = RunPlan::example(&models, connections, 1);
        p.client_cpus = vec![1];
        p
    }

    #[test]
    fn a_million_fits_this_machine_spread_over_processes() {
        let f = check_with(&plan("epoll", &[1_000_000]), &machine());
        assert!(blocking(&f).is_none(), "{f:?}");
        // 51 server processes, each with its own listen queue: the
        // client's 256 connects in flight per loop do not overflow them.
        assert!(f.iter().all(|x| !x.what.contains("somaxconn")), "{f:?}");
    }

    #[test]
    fn with_agents_only_the_servers_half_is_checked_here() {
        let s = System {
            file_max: Some(1_500_000),
            ..machine()
        };
        let mut p = plan("epoll", &[1_000_000]);
        p.agents = Some(crate::client::launch::Launch {
            templates: Vec::new(),
            agents: 4,
        });
        p.bind = Some("10.77.0.1".parse().unwrap());
        // A million server sockets fit 1.5 million files; the client's
        // ports and files are the agents' business.
        let f = check_with(&p, &s);
        assert!(blocking(&f).is_none(), "{f:?}");
        assert!(
            f.iter().all(|x| !x.what.contains("source address")),
            "{f:?}"
        );
    }

    #[test]
    fn the_largest_cell_that_runs_is_checked() {
        let s = System {
            file_max: Some(1_500_000),
            ..machine()
        };
        let mut p = plan("threads", &[10, 1_000_000]);
        p.refused = vec![Refusal {
            model: "threads".into(),
            from: 100_000,
            why: "tasks".into(),
        }];
        assert!(blocking(&check_with(&p, &s)).is_none());
    }

    #[test]
    fn file_max_refuses_the_run() {
        let s = System {
            file_max: Some(1_500_000),
            ..machine()
        };
        let f = check_with(&plan("epoll", &[10_000, 1_000_000]), &s);
        let b = blocking(&f).expect("refused");
        assert!(b.what.contains("fs.file-max=1500000"), "{b}");
        assert!(b.fix.contains("sysctl -w fs.file-max="), "{b}");
    }

    #[test]
    fn memory_refuses_the_run() {
        let s = System {
            mem_available_kib: Some(8_000_000),
            ..machine()
        };
        let f = check_with(&plan("epoll", &[1_000_000]), &s);
        let b = blocking(&f).expect("refused");
        assert!(b.what.contains("7812 MiB available"), "{b}");
        assert!(b.fix.contains("at most"), "{b}");
        // A tenth of it fits.
        assert!(blocking(&check_with(&plan("epoll", &[100_000]), &s)).is_none());
    }

    #[test]
    fn damon_over_physical_memory_is_a_warning_for_fork_at_thousands() {
        let on = System {
            damon: vec!["kdamond 0: paddr".into()],
            ..machine()
        };
        let damon = |f: &[Finding]| f.iter().find(|x| x.what.contains("DAMON")).cloned();
        let w = damon(&check_with(&plan("epoll,fork", &[100, 10_000]), &on)).expect("warned");
        assert_eq!(w.level, Level::Warn);
        assert!(w.what.contains("(kdamond 0: paddr)"), "{w}");
        assert!(w.what.contains("fork's children"), "{w}");
        assert!(w.what.contains("at 10,000 connections"), "{w}");
        assert!(
            w.fix
                .contains("/sys/kernel/mm/damon/admin/kdamonds/N/state"),
            "{w}"
        );
        // Not below thousands, not for the loops, not for a monitor of
        // chosen processes, not without DAMON.
        assert!(damon(&check_with(&plan("fork", &[1_000]), &on)).is_none());
        assert!(damon(&check_with(&plan("epoll,threads", &[10_000]), &on)).is_none());
        let vaddr = System {
            damon: vec!["kdamond 0: vaddr".into()],
            ..machine()
        };
        assert!(damon(&check_with(&plan("fork", &[10_000]), &vaddr)).is_none());
        assert!(damon(&check_with(&plan("fork", &[10_000]), &machine())).is_none());
        // Fork refused from 10,000 here: its largest count that runs.
        let mut p = plan("epoll,fork", &[6_000, 10_000]);
        p.refused = vec![Refusal {
            model: "fork".into(),
            from: 10_000,
            why: "tasks".into(),
        }];
        let w = damon(&check_with(&p, &on)).expect("warned");
        assert!(w.what.contains("at 6,000 connections"), "{w}");
    }

    #[test]
    fn task_models_are_refused_from_the_first_count_that_does_not_fit() {
        let cost = TaskCost { kib_per_task: 30.0 };
        let models: Vec<String> = ["epoll", "threads", "fork", "prefork"]
            .map(String::from)
            .to_vec();
        let r = refusals(
            &models,
            &[],
            &[10_000, 100_000, 1_000_000],
            &machine(),
            &mut || Some(cost),
        );
        assert_eq!(r.len(), 3, "{r:?}");
        for x in &r {
            assert_eq!(x.from, 100_000, "{x:?}");
            assert!(x.why.contains("kernel.pid_max = 32768"), "{x:?}");
        }
        // Memory alone: a machine with tasks to spare and 1 GiB.
        let s = System {
            tasks: Tasks { limits: Vec::new() },
            max_map_count: None,
            mem_available_kib: Some(1 << 20),
            ..machine()
        };
        let threads = crate::server::find("threads").unwrap();
        let why = task_refusal(threads, 100_000, &s, Some(cost)).expect("refused");
        assert!(why.contains("30.0 KiB per task"), "{why}");
        assert!(task_refusal(threads, 10_000, &s, Some(cost)).is_none());
        // An event loop is never a task model.
        let epoll = crate::server::find("epoll").unwrap();
        assert!(task_refusal(epoll, 1_000_000, &s, Some(cost)).is_none());
    }
}
