//! The herd's flags turned into a validated plan: wait methods parsed,
//! sizes in range, and the machine's limits checked before anything forks
//! (processes: `kernel.pid_max`, `kernel.threads-max`, RLIMIT_NPROC and the
//! cgroup's `pids.max`; descriptors: RLIMIT_NOFILE against `--dups`), each
//! refusal one line that names the limit and the fix.

use std::path::PathBuf;
use std::time::Duration;

/// The most workers one cell may fork (the study's largest herd).
pub(crate) const MAX_WORKERS: usize = 1024;

/// Processes and threads left free for everything else on the machine.
const PROCESS_MARGIN: u64 = 64;

/// Descriptors a worker needs beyond its copies of the listener.
const FD_MARGIN: usize = 16;

/// Longest the connects of one cell may be paced over (a day).
const MAX_CELL_SECONDS: f64 = 86_400.0;

/// Connects the client keeps in flight at most.
const MAX_IN_FLIGHT: usize = 1024;

/// How the workers wait for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Method {
    /// select(2) over the worker's copies of the listener.
    Select,
    /// poll(2) over the copies.
    Poll,
    /// epoll, level-triggered, one epoll instance per worker.
    Epoll,
    /// epoll with EPOLLEXCLUSIVE on every copy.
    EpollExclusive,
    /// accept(2) blocking on the shared (blocking) listener.
    Accept,
    /// Each worker its own SO_REUSEPORT listener on one port, watched with
    /// level-triggered epoll.
    Reuseport,
}

impl Method {
    pub(crate) const ALL: [Method; 6] = [
        Method::Select,
        Method::Poll,
        Method::Epoll,
        Method::EpollExclusive,
        Method::Accept,
        Method::Reuseport,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Select => "select",
            Method::Poll => "poll",
            Method::Epoll => "epoll",
            Method::EpollExclusive => "epoll-exclusive",
            Method::Accept => "accept",
            Method::Reuseport => "reuseport",
        }
    }

    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the workers share the parent's listener (all but reuseport).
    pub(crate) fn shares_listener(self) -> bool {
        self != Method::Reuseport
    }

    /// Whether the listener is non-blocking, so a worker that lost the race
    /// gets EAGAIN (all but blocking accept).
    pub(crate) fn nonblocking(self) -> bool {
        self != Method::Accept
    }
}

/// What `c10k herd` was asked to measure, before [`Plan::new`] checks it
/// and the machine.
#[derive(Debug, Clone)]
pub struct Request {
    /// Worker counts, one cell each.
    pub workers: Vec<usize>,
    /// Copies of the listener in each worker's wait set.
    pub dups: usize,
    /// Wait methods by name (`None`: all).
    pub methods: Option<Vec<String>>,
    /// New connections per second.
    pub rate: f64,
    /// Connections per cell.
    pub connections: usize,
    pub runs: usize,
    /// Where to draw the chart, if anywhere.
    pub svg: Option<PathBuf>,
    /// Where the JSON is to be written, if anywhere (checked here, written
    /// by the caller).
    pub json: Option<PathBuf>,
}

/// A validated `c10k herd`.
#[derive(Debug, Clone)]
pub struct Plan {
    pub workers: Vec<usize>,
    /// Descriptors of the listener in each worker's wait set (1: the
    /// listener alone; M: it and M−1 dups).
    pub dups: usize,
    pub methods: Vec<Method>,
    /// Connects per second.
    pub rate: f64,
    /// Connects per cell.
    pub connections: usize,
    pub runs: usize,
    /// Longest the client may take in one cell.
    pub client_limit: Duration,
    /// Connects in flight at most.
    pub in_flight: usize,
    /// Listen backlog.
    pub backlog: i32,
    pub svg: Option<PathBuf>,
}

impl Plan {
    /// Checks the request and the machine; `Err` is one line for the user.
    pub fn new(a: &Request) -> Result<Plan, String> {
        if a.workers.is_empty() {
            return Err("--workers needs at least one count".into());
        }
        let mut workers = a.workers.clone();
        workers.sort_unstable();
        workers.dedup();
        if let Some(&w) = workers.iter().find(|&&w| w == 0 || w > MAX_WORKERS) {
            return Err(format!(
                "--workers {w} is out of range: 1 to {MAX_WORKERS} worker processes"
            ));
        }
        if a.dups == 0 || a.dups > 1 << 20 {
            return Err(format!(
                "--dups {} is out of range: 1 (the listener alone) to 1048576",
                a.dups
            ));
        }
        let methods = match &a.methods {
            None => Method::ALL.to_vec(),
            Some(names) => {
                let mut ms = Vec::new();
                for n in names {
                    let m = Method::parse(n.trim()).ok_or_else(|| {
                        format!(
                            "unknown wait method {n:?}: choose from {}",
                            Method::ALL.map(Method::name).join(", ")
                        )
                    })?;
                    if !ms.contains(&m) {
                        ms.push(m);
                    }
                }
                if ms.is_empty() {
                    return Err("--methods needs at least one wait method".into());
                }
                ms
            }
        };
        crate::client::plan::per_second("--rate", a.rate, 1e6)?;
        if a.connections == 0 || a.connections > 10_000_000 {
            return Err(format!(
                "-n {} is out of range: 1 to 10000000 connections per cell",
                a.connections
            ));
        }
        if a.runs == 0 || a.runs > 1000 {
            return Err(format!("--runs {} is out of range: 1 to 1000", a.runs));
        }
        crate::export::target::check_flag("--svg", a.svg.as_deref())?;
        crate::export::target::check_flag("--json", a.json.as_deref())?;
        let most = workers.last().copied().unwrap_or(1);
        check_processes(most)?;
        let nofile = raise_nofile();
        if a.dups + FD_MARGIN > nofile {
            return Err(format!(
                "--dups {} needs {} descriptors per worker but the open-files limit is {nofile}; \
                 lower --dups or raise the limit (ulimit -n)",
                a.dups,
                a.dups + FD_MARGIN
            ));
        }
        let in_flight = MAX_IN_FLIGHT.min(nofile.saturating_sub(FD_MARGIN).max(1));
        let backlog = crate::env::sysctl_u64("net.core.somaxconn")
            .unwrap_or(4096)
            .clamp(128, 65535) as i32;
        let pacing = a.connections as f64 / a.rate;
        if pacing > MAX_CELL_SECONDS {
            return Err(format!(
                "-n {} at --rate {} would take {:.0} s per cell, over the {MAX_CELL_SECONDS} s                  allowed; raise --rate or lower -n",
                a.connections, a.rate, pacing
            ));
        }
        let client_limit = Duration::from_secs_f64(pacing) + Duration::from_secs(10);
        Ok(Plan {
            workers,
            dups: a.dups,
            methods,
            rate: a.rate,
            connections: a.connections,
            runs: a.runs,
            client_limit,
            in_flight,
            backlog,
            svg: a.svg.clone(),
        })
    }
}

/// The open-files soft limit after raising it to the hard limit.
fn raise_nofile() -> usize {
    let _ = crate::sys::rlimit::raise_nofile();
    crate::sys::rlimit::soft_nofile()
}

/// Refuses a herd of `workers` the machine cannot fork, naming the limit.
fn check_processes(workers: usize) -> Result<(), String> {
    crate::env::tasks::Tasks::read()
        .check(workers as u64, PROCESS_MARGIN)
        .map_err(|e| format!("--workers {workers}: {e}; or lower --workers"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_round_trip() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.name()), Some(m));
        }
        assert_eq!(Method::parse("kqueue"), None);
    }

    #[test]
    fn the_machine_has_room_for_one_worker() {
        assert!(check_processes(1).is_ok());
    }
}
