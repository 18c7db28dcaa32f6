//! The herd's pre-flight: whether the machine holds a cell of W workers with
//! M copies of the listener each, checked before anything forks, and the
//! machine's figures kept for the report.
//!
//! - Tasks: `kernel.pid_max`, `kernel.threads-max`, RLIMIT_NPROC and the
//!   cgroup's `pids.max` ([`crate::env::tasks`]).
//! - Descriptors per process: each worker holds M copies and a few more
//!   against RLIMIT_NOFILE (raised to its hard limit, itself capped by
//!   `fs.nr_open`); the parent holds the listener and the copies it hands
//!   down, the readiness pipe and the client's connects in flight.
//! - Open files machine-wide (`fs.file-max` against `fs.file-nr`): a dup'ed
//!   descriptor shares its open file, so the study's 16 million descriptors
//!   are one file; what counts is an epoll instance per epoll worker, a
//!   listener per reuseport worker and the client's sockets.
//! - epoll watches (`fs.epoll.max_user_watches`, per user, root included):
//!   one per copy per epoll worker, W × M. Watches this user already holds
//!   elsewhere are not counted (the kernel does not say), so a margin stays
//!   free.
//! - Memory: W times a worker's cost, measured by [`super::cell::probe`]
//!   (a few real workers forked and set up), against MemAvailable and the
//!   cgroup's memory limit.
//!
//! Cost: a handful of small reads of /proc and /sys; the checks are
//! arithmetic.

use serde::Serialize;

use super::method::Method;
use crate::present::units::kib;

/// Descriptors a worker needs beyond its copies of the listener.
pub(crate) const FD_MARGIN: usize = 16;
/// Descriptors the parent needs beyond the client's connects in flight.
pub(crate) const PARENT_FD_MARGIN: usize = 64;
/// Processes and threads left free for everything else on the machine.
pub(crate) const PROCESS_MARGIN: u64 = 64;
/// Open files (machine-wide) left free for everything else.
const FILE_MARGIN: u64 = 4096;
/// epoll watches left free for this user's other epoll sets.
const WATCH_MARGIN: u64 = 4096;
/// Memory left free, KiB (512 MiB), beside what the workers need.
const MEMORY_MARGIN_KIB: u64 = 512 << 10;

/// The machine's limits as the pre-flight read them (a limit that cannot
/// be read is `None` and not checked).
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub pid_max: Option<u64>,
    pub threads_max: Option<u64>,
    /// Tasks (threads) on the machine when read.
    pub tasks: Option<u64>,
    /// The cgroup's `pids.max` and `pids.current`, when finite.
    pub cgroup_pids: Option<(u64, u64)>,
    /// RLIMIT_NOFILE after raising the soft limit to the hard one.
    pub nofile: usize,
    pub nofile_hard: Option<u64>,
    pub nr_open: Option<u64>,
    pub file_max: Option<u64>,
    /// Open files allocated machine-wide (`fs.file-nr`, first field).
    pub files_open: Option<u64>,
    pub epoll_max_user_watches: Option<u64>,
    pub mem_total_kib: Option<u64>,
    pub mem_available_kib: Option<u64>,
    /// The cgroup's memory limit and use, KiB, when it has a limit.
    pub cgroup_memory_kib: Option<(u64, u64)>,
}

impl Machine {
    /// Reads the limits now; raises the open-files soft limit to the hard
    /// one first.
    pub fn read() -> Machine {
        let _ = crate::sys::rlimit::raise_nofile();
        let tasks = crate::env::tasks::Tasks::read();
        let cgroup_pids = tasks.limits.iter().find_map(|l| match l.kind {
            crate::env::tasks::Kind::Cgroup(_) => Some((l.max, l.used)),
            _ => None,
        });
        let sysctl = crate::env::sysctl_u64;
        Machine {
            pid_max: sysctl("kernel.pid_max"),
            threads_max: sysctl("kernel.threads-max"),
            tasks: tasks_running(),
            cgroup_pids,
            nofile: crate::sys::rlimit::soft_nofile(),
            nofile_hard: crate::sys::rlimit::nofile().hard,
            nr_open: sysctl("fs.nr_open"),
            file_max: sysctl("fs.file-max"),
            files_open: file_nr().and_then(|v| v.first().copied()),
            epoll_max_user_watches: sysctl("fs.epoll.max_user_watches"),
            mem_total_kib: crate::env::meminfo_kib("MemTotal"),
            mem_available_kib: crate::env::meminfo_kib("MemAvailable"),
            cgroup_memory_kib: cgroup_memory_kib(),
        }
    }

    /// Memory the workers may use, KiB: MemAvailable, or what the cgroup's
    /// limit leaves if less.
    pub fn memory_room_kib(&self) -> Option<u64> {
        let cg = self
            .cgroup_memory_kib
            .map(|(max, used)| max.saturating_sub(used));
        match (self.mem_available_kib, cg) {
            (Some(a), Some(c)) => Some(a.min(c)),
            (a, c) => a.or(c),
        }
    }

    /// One line of the figures that bound the herd here, for the notes.
    pub fn describe(&self) -> String {
        let n = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
        let mut parts = vec![
            format!(
                "kernel.pid_max {} ({} tasks running)",
                n(self.pid_max),
                n(self.tasks)
            ),
            format!("kernel.threads-max {}", n(self.threads_max)),
        ];
        if let Some((max, used)) = self.cgroup_pids {
            parts.push(format!("cgroup pids.max {max} ({used} in use)"));
        }
        parts.push(format!(
            "open files per process {} (hard {}, fs.nr_open {})",
            self.nofile,
            n(self.nofile_hard),
            n(self.nr_open)
        ));
        parts.push(format!(
            "fs.file-max {} ({} open)",
            n(self.file_max),
            n(self.files_open)
        ));
        parts.push(format!(
            "fs.epoll.max_user_watches {}",
            n(self.epoll_max_user_watches)
        ));
        parts.push(format!(
            "MemAvailable {} of {}",
            self.mem_available_kib.map_or("?".into(), |v| kib(v as f64)),
            self.mem_total_kib.map_or("?".into(), |v| kib(v as f64)),
        ));
        if let Some((max, used)) = self.cgroup_memory_kib {
            parts.push(format!(
                "cgroup memory {} of {}",
                kib(used as f64),
                kib(max as f64)
            ));
        }
        parts.join(", ")
    }
}

/// `fs.file-nr`: open files, free ones, the maximum (tab-separated).
fn file_nr() -> Option<Vec<u64>> {
    let text = std::fs::read_to_string("/proc/sys/fs/file-nr").ok()?;
    text.split_whitespace().map(|v| v.parse().ok()).collect()
}

/// Tasks on the whole machine, from /proc/loadavg's `running/total`.
fn tasks_running() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace()
        .nth(3)?
        .split_once('/')?
        .1
        .parse()
        .ok()
}

/// This process's cgroup memory limit and use, KiB, when finite: v2
/// `memory.max` and `memory.current`, or v1 `memory.limit_in_bytes` and
/// `memory.usage_in_bytes`.
fn cgroup_memory_kib() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |p: std::path::PathBuf| -> Option<u64> {
        std::fs::read_to_string(p).ok()?.trim().parse().ok()
    };
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let path = path.trim_start_matches('/');
        let found = if controllers.is_empty() {
            let dir = std::path::Path::new("/sys/fs/cgroup").join(path);
            read(dir.join("memory.max")).zip(read(dir.join("memory.current")))
        } else if controllers.split(',').any(|c| c == "memory") {
            let dir = std::path::Path::new("/sys/fs/cgroup/memory").join(path);
            read(dir.join("memory.limit_in_bytes")).zip(read(dir.join("memory.usage_in_bytes")))
        } else {
            None
        };
        // v1 says "no limit" with a huge number (2^63 less a page).
        if let Some((max, used)) = found.filter(|(max, _)| *max < 1 << 60) {
            return Some((max >> 10, used >> 10));
        }
    }
    None
}

/// What one worker of `method` costs in open files machine-wide: its
/// epoll instance, and for reuseport its own listener. Copies share the
/// listener's open file and cost none.
pub(crate) fn files_per_worker(method: Method) -> u64 {
    match method {
        Method::Select | Method::Poll | Method::Accept => 0,
        Method::Epoll | Method::EpollExclusive => 1,
        Method::Reuseport => 2,
    }
}

/// epoll watches one worker holds: one per copy it waits on.
pub(crate) fn watches_per_worker(method: Method, dups: usize) -> u64 {
    match method {
        Method::Epoll | Method::EpollExclusive | Method::Reuseport => dups as u64,
        Method::Select | Method::Poll | Method::Accept => 0,
    }
}

/// The cell's name in a refusal.
fn cell(method: Method, dups: usize, workers: usize) -> String {
    format!(
        "{} with {workers} worker{} × {dups} cop{}",
        method.name(),
        if workers == 1 { "" } else { "s" },
        if dups == 1 { "y" } else { "ies" }
    )
}

/// Whether `workers` workers of `method` with `dups` copies each fit the
/// machine's task, descriptor, file and epoll limits, with the client's
/// `in_flight` connects beside them; `Err` is one line with the numbers
/// (needed against available) and the fix. Memory is [`memory`]'s.
pub fn limits(
    m: &Machine,
    method: Method,
    dups: usize,
    workers: usize,
    in_flight: usize,
) -> Result<(), String> {
    let what = cell(method, dups, workers);
    crate::env::tasks::Tasks::read()
        .check(workers as u64, PROCESS_MARGIN)
        .map_err(|e| format!("{what}: {e}; or lower --workers"))?;
    let per_worker = dups + FD_MARGIN;
    if per_worker > m.nofile {
        return Err(format!(
            "{what}: each worker needs {per_worker} descriptors but the open-files limit is {} \
             (hard {}); lower --dups or raise the hard limit (ulimit -Hn, fs.nr_open {})",
            m.nofile,
            m.nofile_hard.map_or("unlimited".into(), |h| h.to_string()),
            m.nr_open.map_or("?".into(), |v| v.to_string()),
        ));
    }
    let parent = in_flight + PARENT_FD_MARGIN + if method.shares_listener() { dups } else { 0 };
    if parent > m.nofile {
        return Err(format!(
            "{what}: the parent needs {parent} descriptors (the copies it hands down and \
             {in_flight} connects) but the open-files limit is {}; lower --dups or raise the \
             limit (ulimit -n)",
            m.nofile
        ));
    }
    if let (Some(max), Some(open)) = (m.file_max, m.files_open) {
        let need = workers as u64 * files_per_worker(method) + 2 * in_flight as u64 + 8;
        let room = max.saturating_sub(open).saturating_sub(FILE_MARGIN);
        if need > room {
            return Err(format!(
                "{what}: needs {need} open files machine-wide but fs.file-max = {max} with \
                 {open} open leaves {room} (keeping {FILE_MARGIN} free); fix: sysctl -w \
                 fs.file-max={}",
                (open + need + FILE_MARGIN).next_power_of_two()
            ));
        }
    }
    if let Some(max) = m.epoll_max_user_watches {
        let need = workers as u64 * watches_per_worker(method, dups);
        let room = max.saturating_sub(WATCH_MARGIN);
        if need > room {
            return Err(format!(
                "{what}: needs {need} epoll watches ({workers} × {dups}) but \
                 fs.epoll.max_user_watches = {max} leaves {room} (keeping {WATCH_MARGIN} free); \
                 lower --workers to {} or --dups, or sysctl -w fs.epoll.max_user_watches={}",
                room / watches_per_worker(method, dups).max(1),
                (need + WATCH_MARGIN).next_power_of_two()
            ));
        }
    }
    Ok(())
}

/// What one worker costs in memory, measured on a few real workers.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct WorkerCost {
    pub method: &'static str,
    pub dups: usize,
    /// Workers forked for the measurement.
    pub probes: usize,
    /// Their proportional set size, each, KiB (user-space pages).
    pub pss_kib: f64,
    /// Kernel memory each: the fall of MemAvailable over the probes beyond
    /// their PSS, or the rise of KernelStack + PageTables + SUnreclaim when
    /// that is larger (MemAvailable moves with the rest of the machine).
    pub kernel_kib: f64,
    /// The estimate the check uses: PSS plus kernel memory.
    pub per_worker_kib: f64,
}

/// Whether `workers` workers of the measured cost fit in the memory left;
/// `Err` is one line with the numbers.
pub fn memory(m: &Machine, cost: &WorkerCost, workers: usize) -> Result<(), String> {
    let Some(room) = m.memory_room_kib() else {
        return Ok(());
    };
    let need = workers as f64 * cost.per_worker_kib;
    let left = room.saturating_sub(MEMORY_MARGIN_KIB) as f64;
    if need > left {
        let method = Method::parse(cost.method).unwrap_or(Method::Select);
        return Err(format!(
            "{}: needs {} of memory ({workers} × {} a worker, measured on {} workers) but {} \
             is available (keeping {} free); lower --workers to {} or --dups",
            cell(method, cost.dups, workers),
            kib(need),
            kib(cost.per_worker_kib),
            cost.probes,
            kib(left),
            kib(MEMORY_MARGIN_KIB as f64),
            (left / cost.per_worker_kib.max(1.0)) as u64
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        Machine {
            pid_max: Some(32_768),
            threads_max: Some(192_730),
            tasks: Some(100),
            cgroup_pids: None,
            nofile: 20_000,
            nofile_hard: Some(20_000),
            nr_open: Some(1 << 20),
            file_max: Some(2_466_177),
            files_open: Some(400),
            epoll_max_user_watches: Some(5_491_511),
            mem_total_kib: Some(24 << 20),
            mem_available_kib: Some(20 << 20),
            cgroup_memory_kib: None,
        }
    }

    #[test]
    fn copies_cost_no_open_files_but_epoll_watches() {
        let m = machine();
        assert!(limits(&m, Method::Select, 1019, 1, 1024).is_ok());
        let e = limits(&m, Method::EpollExclusive, 1019, 16_384, 1024).unwrap_err();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.starts_with(
                "epoll-exclusive with 16384 workers × 1019 copies: needs 16695296 epoll watches"
            ),
            "{e}"
        );
        assert!(e.contains("lower --workers to 5385"), "{e}");
    }

    #[test]
    fn copies_past_the_open_files_limit_are_refused() {
        let e = limits(&machine(), Method::Select, 19_990, 1, 1024).unwrap_err();
        assert!(
            e.contains("each worker needs 20006 descriptors but the open-files limit is 20000"),
            "{e}"
        );
    }

    #[test]
    fn memory_is_workers_times_the_measured_cost() {
        let cost = WorkerCost {
            method: "select",
            dups: 1019,
            probes: 32,
            pss_kib: 100.0,
            kernel_kib: 156.0,
            per_worker_kib: 256.0,
        };
        let mut m = machine();
        assert!(memory(&m, &cost, 16_384).is_ok());
        m.mem_available_kib = Some(1 << 20);
        let e = memory(&m, &cost, 16_384).unwrap_err();
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.starts_with("select with 16384 workers × 1019 copies: needs 4 GiB of memory"),
            "{e}"
        );
        assert!(e.contains("lower --workers to 2048"), "{e}");
    }

    #[test]
    fn this_machine_can_be_read() {
        let m = Machine::read();
        assert!(m.nofile > 0);
        assert!(!m.describe().is_empty());
    }
}
