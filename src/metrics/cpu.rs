//! Who used the CPUs during a measured window, read from /proc: the whole
//! machine (`/proc/stat`: busy and steal time over every CPU) and a server's
//! process tree (`/proc/PID/stat` of every live process, with the time of
//! the children it has already reaped). Two snapshots, one at each end of
//! the window, give what each side used; the machine's busy time minus the
//! run's own processes is the interference from outside the run.
//!
//! Cost: one read of `/proc/stat` and, per server process, one of its
//! `stat` and `status` and one `schedstat` per thread (and one `stat` per
//! thread of a process with several), at each end of the window; nothing
//! during it. The window's start snapshot reads the machine and the server
//! first and this process last; the end snapshot this process first: the
//! reading is outside the client's own window, and the server's window is
//! timed from its reads ([`WindowCpu::server_seconds`],
//! [`WindowCpu::server_span`]).
//!
//! **Resolution**, input by input (what [`WindowCpu`]'s `*_error` fields
//! add up):
//!
//! - a thread's `schedstat` is in nanoseconds and exact for a thread that
//!   sleeps; for one on a CPU when read, the kernel adds its
//!   current stretch only at its next tick or switch, so it may lag by a
//!   tick ([`kernel_tick`]: `CONFIG_HZ`, or 10 ms, the longest Linux uses,
//!   where the kernel's config cannot be read); a thread runnable but
//!   waiting for a CPU lags by nothing, so a tree lags by at most a tick
//!   per CPU of the machine, whatever its threads;
//! - `getrusage` (this process) is in microseconds, exact for the calling
//!   thread and for threads that sleep; its other threads on a CPU lag as
//!   above;
//! - a process's `stat` and reaped children's time are in clock ticks
//!   (`USER_HZ`, 10 ms), rounded down: a process's time is the larger of
//!   its threads' `schedstat` and its `stat` (which keeps threads that have
//!   exited), and where `stat` is the larger, it is known to a clock tick;
//! - the machine's `/proc/stat` is sampled at each kernel tick and printed
//!   in clock ticks per field, so a window shorter than
//!   [`MACHINE_MIN_TICKS`] clock ticks cannot resolve the machine's busy
//!   share (nor the interference) to a few per cent.
//!
//! So a server asleep at both ends of a short window (an event loop
//! between bursts) is measured to the nanosecond, while one spinning on a
//! CPU (`busy`) is known only to a tick at each end.

use serde::{Deserialize, Serialize};

/// CPU seconds of the whole machine since boot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct MachineCpu {
    /// user + nice + system + irq + softirq, every CPU.
    pub busy: f64,
    /// Time the hypervisor ran something else while a CPU wanted to run.
    pub steal: f64,
    /// Time of the kernel's softirq threads (`ksoftirqd/N`): packet
    /// processing deferred from interrupts, mostly a network run's own.
    pub softirq_threads: f64,
}

/// CPU seconds of a process tree, and how many CPUs it could use at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TreeCpu {
    /// user + system of the live processes and of the children they reaped.
    pub seconds: f64,
    /// Seconds its live threads were runnable but waited for a CPU (run
    /// delay, `/proc/PID/task/TID/schedstat`): CPU it wanted and did not
    /// get, because something else ran there.
    pub waited: f64,
    /// Threads in the tree (one thread uses one CPU at most).
    pub threads: u64,
    /// CPUs the root may run on (`Cpus_allowed_list`).
    pub cpus_allowed: usize,
    /// Of `seconds`, the reaped children's (clock ticks, rounded down).
    #[serde(default)]
    pub reaped: f64,
    /// Times its live threads were put on a CPU ([`Thread::runs`]).
    #[serde(default)]
    pub runs: u64,
    /// Seconds `seconds` may lag the truth: a kernel tick for each thread
    /// on a CPU when read (at most one per CPU of the machine, however many
    /// are runnable: [`running_lag`]), a clock tick for each process whose
    /// time came from `stat` ([`tree`]). `waited` also lacks the wait in
    /// progress of each thread runnable when read; in a steady load that
    /// is alike at both ends of a window and cancels in the difference.
    #[serde(default)]
    pub error: f64,
}

impl TreeCpu {
    /// CPU seconds the tree used from `start` to this reading, and how far
    /// off that may be: each end's [`TreeCpu::error`], and a clock tick at
    /// each end when reaped children's time (rounded down per read) moved.
    pub(crate) fn since(&self, start: &TreeCpu) -> (f64, f64) {
        let reaped = if self.reaped == start.reaped {
            0.0
        } else {
            2.0 / ticks()
        };
        (
            (self.seconds - start.seconds).max(0.0),
            start.error + self.error + reaped,
        )
    }

    /// How many CPUs the tree could keep busy: its threads, on the CPUs it
    /// may use.
    pub(crate) fn capacity(&self) -> f64 {
        self.threads.min(self.cpus_allowed as u64).max(1) as f64
    }
}

/// What used the CPUs at one end of a window: this process, the machine,
/// and the server's tree when its processes are known.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    /// When this process's own usage was read: the client's edge of the
    /// window.
    pub at: std::time::Instant,
    pub own: crate::sys::process::Usage,
    /// Seconds this process's threads waited, runnable, for a CPU.
    pub own_waited: f64,
    /// Times this process's threads were put on a CPU ([`Thread::runs`]).
    pub own_runs: u64,
    /// Seconds `own` and `own_waited` may lag: a tick for each of this
    /// process's other threads on a CPU or runnable when read.
    pub own_error: f64,
    pub machine: Option<MachineCpu>,
    pub server: Option<TreeCpu>,
    /// When the server's tree was read: from before its first read to
    /// after its last.
    pub server_read: (std::time::Instant, std::time::Instant),
    /// CPU seconds of this thread's own in `own` that are not the
    /// client's: settling before the end snapshot ([`settle`]).
    pub excluded: f64,
    /// CPU seconds this thread spent reading the machine and the server
    /// outside its own window (before `own` at the start, after it at the
    /// end), yet inside the machine's: the instrument's, not another
    /// process's. Reading a thousand threads' schedstat costs tens of ms.
    pub reading: f64,
    /// When the machine was read. Reading a server of a thousand tasks
    /// takes about 0.1 s at each end, so the machine's window is longer
    /// than the client's, and its busy time is a share of its own span.
    pub machine_at: std::time::Instant,
}

impl Snapshot {
    /// The start of a window: the machine and the server are read first,
    /// this process last, so what reading them costs is not in this
    /// process's window. With `settled`, this process's other threads are
    /// first let fall asleep ([`settle`]).
    pub fn start(server: &[u32], settled: bool) -> Snapshot {
        if settled {
            settle();
        }
        let before = thread_cpu();
        let machine_at = std::time::Instant::now();
        let machine = machine();
        let (server_read, tree) = read_server(server);
        let reading = (thread_cpu() - before).max(0.0);
        let (own, own_waited, own_error, own_runs) = own(false);
        Snapshot {
            at: std::time::Instant::now(),
            own,
            own_waited,
            own_runs,
            own_error,
            machine,
            server: tree,
            server_read,
            excluded: 0.0,
            reading,
            machine_at,
        }
    }

    /// The end of a window: this process first, then the server and the
    /// machine. With `settled`, this process's other threads are first
    /// let fall asleep ([`settle`]), and what that costs this thread is
    /// taken out of its CPU.
    pub fn end(server: &[u32], settled: bool) -> Snapshot {
        let at = std::time::Instant::now();
        let mut excluded = 0.0;
        if settled {
            let before = thread_cpu();
            settle();
            excluded = (thread_cpu() - before).max(0.0);
        }
        let (own, own_waited, own_error, own_runs) = own(true);
        let before = thread_cpu();
        let (server_read, tree) = read_server(server);
        let machine = machine();
        let machine_at = std::time::Instant::now();
        let reading = (thread_cpu() - before).max(0.0);
        Snapshot {
            at,
            own,
            own_waited,
            own_runs,
            own_error,
            machine,
            server: tree,
            server_read,
            excluded,
            reading,
            machine_at,
        }
    }

    /// This process's user and system CPU seconds from `start` to here,
    /// less what settling cost (taken from its system time first).
    pub(crate) fn own_cpu_since(&self, start: &Snapshot) -> (f64, f64) {
        let user = self.own.user.saturating_sub(start.own.user).as_secs_f64();
        let system = self
            .own
            .system
            .saturating_sub(start.own.system)
            .as_secs_f64();
        let off = self.excluded + start.excluded;
        let from_system = off.min(system);
        ((user - (off - from_system)).max(0.0), system - from_system)
    }

    /// What the machine and the server used from `start` to this snapshot
    /// (this process's own part is in `own` of each).
    pub(crate) fn since(&self, start: &Snapshot) -> WindowCpu {
        let d = |a: Option<f64>, b: Option<f64>| Some((a? - b?).max(0.0));
        let machine = |f: fn(&MachineCpu) -> f64| {
            d(self.machine.as_ref().map(f), start.machine.as_ref().map(f))
        };
        let server =
            |f: fn(&TreeCpu) -> f64| d(self.server.as_ref().map(f), start.server.as_ref().map(f));
        let between = |a: std::time::Instant, b: std::time::Instant| {
            b.saturating_duration_since(a).as_secs_f64()
        };
        let seconds = between(start.at, self.at);
        let observed = self.server.is_some() && start.server.is_some();
        // Each process is read at about the same point of both sweeps, so
        // its own window runs from the middle of one to the middle of the
        // other; no read lies outside the first read to the last.
        let mid = |(a, b): (std::time::Instant, std::time::Instant)| a + (b - a) / 2;
        let server_seconds =
            observed.then(|| between(mid(start.server_read), mid(self.server_read)));
        let server_span = observed.then(|| between(start.server_read.0, self.server_read.1));
        WindowCpu {
            seconds,
            machine_busy: machine(|m| m.busy),
            steal: machine(|m| m.steal),
            softirq: machine(|m| m.softirq_threads),
            server_cpu: server(|s| s.seconds),
            server_waited: server(|s| s.waited),
            client_waited: (self.own_waited - start.own_waited).max(0.0),
            server_runs: server(|s| s.runs as f64).filter(|&r| r > 0.0),
            client_runs: self.own_runs.saturating_sub(start.own_runs) as f64,
            server_capacity: self.server.or(start.server).map(|s| s.capacity()),
            server_seconds,
            server_span,
            server_error: match (start.server, self.server) {
                (Some(a), Some(b)) => Some(b.since(&a).1),
                _ => None,
            },
            // getrusage's microseconds, at each end, and the threads that
            // were on a CPU.
            client_error: 2e-6 + start.own_error + self.own_error,
            instrument: start.reading + self.reading,
            machine_seconds: Some(between(start.machine_at, self.machine_at)),
        }
    }
}

/// Yields the CPU until no other thread of this process is runnable, at
/// most [`SETTLE_YIELDS`] times: a thread that has just parked (an event
/// loop at a rendezvous) may not yet sleep, and until it does, its time is
/// counted only at its next tick. Costs a few reads of /proc per yield.
pub(crate) fn settle() {
    let me = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    for _ in 0..SETTLE_YIELDS {
        let busy = threads(std::process::id())
            .iter()
            .any(|t| t.tid != me && t.running);
        if !busy {
            return;
        }
        std::thread::yield_now();
    }
}

/// This thread's CPU seconds, to the nanosecond (the kernel adds the
/// running stretch of the thread that asks).
fn thread_cpu() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// The most times [`settle`] yields.
const SETTLE_YIELDS: usize = 100;

/// This process's usage, its threads' wait for a CPU, how much both
/// may lag, and the times its threads were put on a CPU (its other threads on a CPU are counted at their next tick).
/// The usage is read `first` (a window's end) or last (its start), so that
/// reading the threads is outside the window.
fn own(first: bool) -> (crate::sys::process::Usage, f64, f64, u64) {
    let usage = first.then(crate::sys::process::Usage::of_self);
    let me = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    let threads = threads(std::process::id());
    let usage = usage.unwrap_or_else(crate::sys::process::Usage::of_self);
    let others_running = threads.iter().filter(|t| t.tid != me && t.running).count();
    let waited = threads.iter().map(|t| t.waited).sum();
    let runs = threads.iter().map(|t| t.runs).sum();
    let lag = running_lag(others_running, machine_cpus());
    (usage, waited, lag, runs)
}

/// The server's tree, with the moments just before and after reading it.
fn read_server(server: &[u32]) -> ((std::time::Instant, std::time::Instant), Option<TreeCpu>) {
    let before = std::time::Instant::now();
    let tree = if server.is_empty() {
        None
    } else {
        tree(server)
    };
    ((before, std::time::Instant::now()), tree)
}

/// CPU used over a measured window by the machine and by the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowCpu {
    /// CPU seconds the instrument spent reading the machine and the server
    /// at the window's ends, inside the machine's window but outside the
    /// client's: not interference ([`Snapshot::reading`]).
    #[serde(default)]
    pub instrument: f64,
    /// From the first read of the machine to the last: the span its busy,
    /// steal and softirq times are over (`None`: taken as `seconds`).
    #[serde(default)]
    pub machine_seconds: Option<f64>,
    /// Wall time between the two snapshots.
    pub seconds: f64,
    /// Busy CPU seconds of the whole machine, every process.
    pub machine_busy: Option<f64>,
    /// Stolen CPU seconds (the hypervisor ran something else).
    pub steal: Option<f64>,
    /// CPU seconds of the kernel's softirq threads.
    pub softirq: Option<f64>,
    /// CPU seconds of the server's tree (`None`: not observed).
    pub server_cpu: Option<f64>,
    /// Seconds the server's threads waited, runnable, for a CPU.
    pub server_waited: Option<f64>,
    /// Seconds the client's threads waited, runnable, for a CPU (summed
    /// over worker processes when merged).
    pub client_waited: f64,
    /// Times the server's live threads were put on a CPU ([`Thread::runs`];
    /// `None`: not observed, or schedstat not there).
    #[serde(default)]
    pub server_runs: Option<f64>,
    /// Times the client's threads were put on a CPU (summed over worker
    /// processes when merged; 0: schedstat not there).
    #[serde(default)]
    pub client_runs: f64,
    /// CPUs the server could keep busy (its threads on its allowed CPUs).
    pub server_capacity: Option<f64>,
    /// The server's own window: from the middle of its reads at the start
    /// to the middle of its reads at the end (its processes are read one
    /// after the other, in the same order each time).
    #[serde(default)]
    pub server_seconds: Option<f64>,
    /// From before the server's first read at the start to after its last
    /// read at the end: no CPU outside this is in `server_cpu`, so
    /// `server_cpu` ≤ `server_span` × `server_capacity`.
    #[serde(default)]
    pub server_span: Option<f64>,
    /// Seconds `server_cpu` and `server_waited` may be off
    /// ([`TreeCpu::error`] at each end, and the reaped children's ticks).
    #[serde(default)]
    pub server_error: Option<f64>,
    /// Seconds the client's CPU and wait may be off (summed over worker
    /// processes when merged).
    #[serde(default)]
    pub client_error: f64,
}

impl WindowCpu {
    /// Merges what several client processes saw of the same window: they
    /// watched one machine and one server, so the widest view is kept.
    pub fn merge(&mut self, o: &WindowCpu) {
        let max = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.seconds = self.seconds.max(o.seconds);
        self.machine_busy = max(self.machine_busy, o.machine_busy);
        self.steal = max(self.steal, o.steal);
        self.softirq = max(self.softirq, o.softirq);
        self.server_cpu = max(self.server_cpu, o.server_cpu);
        self.server_waited = max(self.server_waited, o.server_waited);
        self.client_waited += o.client_waited;
        self.server_runs = max(self.server_runs, o.server_runs);
        self.client_runs += o.client_runs;
        self.server_capacity = max(self.server_capacity, o.server_capacity);
        self.server_seconds = max(self.server_seconds, o.server_seconds);
        self.server_span = max(self.server_span, o.server_span);
        self.server_error = max(self.server_error, o.server_error);
        self.client_error += o.client_error;
        // Every process reads the server at each end, all inside the
        // machine's window.
        self.instrument += o.instrument;
        self.machine_seconds = max(self.machine_seconds, o.machine_seconds);
    }
}

/// Clock ticks per second (`USER_HZ`), the unit of `/proc/stat` and of a
/// process's `stat`.
fn ticks() -> f64 {
    rustix::param::clock_ticks_per_second() as f64
}

/// A window shorter than this many clock ticks cannot resolve the
/// machine's busy share to a few per cent: `/proc/stat` charges each
/// kernel tick whole to what ran at it, and prints each field rounded down
/// to a clock tick.
pub(crate) const MACHINE_MIN_TICKS: f64 = 50.0;

/// The machine's CPU time resolves a share of it to a few per cent over
/// `seconds` ([`MACHINE_MIN_TICKS`]).
pub(crate) fn machine_resolves(seconds: f64) -> bool {
    seconds * ticks() >= MACHINE_MIN_TICKS
}

/// The least window, in seconds, over which the machine's time resolves.
pub(crate) fn machine_min_seconds() -> f64 {
    MACHINE_MIN_TICKS / ticks()
}

/// Seconds of a kernel tick, the most a running thread's time may lag:
/// `CONFIG_HZ` from the kernel's config in /boot, or where that cannot be
/// read, a clock tick (`USER_HZ`, 10 ms): no Linux ticks slower.
pub(crate) fn kernel_tick() -> f64 {
    static TICK: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICK.get_or_init(|| {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        std::fs::read_to_string(format!("/boot/config-{}", release.trim()))
            .ok()
            .and_then(|c| config_hz(&c))
            .map_or(1.0 / ticks(), |hz| 1.0 / hz)
    })
}

/// `CONFIG_HZ` of a kernel config.
fn config_hz(config: &str) -> Option<f64> {
    config
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|hz| *hz >= 1.0)
}

/// The machine's CPU time now; `None` where `/proc/stat` cannot be read.
pub(crate) fn machine() -> Option<MachineCpu> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let mut m = parse_machine(&text)?;
    m.softirq_threads = softirq_threads()
        .iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|s| parse_stat(&s))
        .sum();
    Some(m)
}

/// The pids of the `ksoftirqd/N` kernel threads, found once (a scan of
/// every process's name).
fn softirq_threads() -> &'static [u32] {
    static PIDS: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    PIDS.get_or_init(|| {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.starts_with("ksoftirqd/"))
            })
            .collect()
    })
}

fn parse_machine(text: &str) -> Option<MachineCpu> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap_or(0.0))
        .collect();
    let at = |i: usize| f.get(i).copied().unwrap_or(0.0);
    // user nice system idle iowait irq softirq steal (guest is in user).
    let t = ticks();
    Some(MachineCpu {
        busy: (at(0) + at(1) + at(2) + at(5) + at(6)) / t,
        steal: at(7) / t,
        softirq_threads: 0.0,
    })
}

/// Steal over a short window counts from this many clock ticks (30 ms at
/// 100 Hz): each of the two readings may round a tick away, so three are
/// at least one stolen for certain, and 10 % of a CPU over a 300 ms slot.
pub(crate) const STOLEN_TICKS: f64 = 3.0;

/// The CPU time of every process outside this one's tree (this process,
/// the servers and clients it started), by pid, read at one moment: what
/// else the machine ran. The kernel's softirq threads are left out (they
/// carry the run's own packets). Clock ticks, rounded down per process
/// and read; a process that exits between two reads takes its time with
/// it unless an outside parent reaps it. Cost: a `stat` per process.
#[derive(Debug, Clone)]
pub(crate) struct Outside {
    at: std::time::Instant,
    by_pid: std::collections::HashMap<u32, f64>,
    /// The machine's steal time (`/proc/stat`), in seconds.
    steal: Option<f64>,
}

impl Outside {
    pub(crate) fn read() -> Outside {
        let ours: std::collections::HashSet<u32> = super::tree::descendants(std::process::id())
            .into_iter()
            .collect();
        let mut by_pid = std::collections::HashMap::new();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for e in dir.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                if ours.contains(&pid) {
                    continue;
                }
                let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    continue;
                };
                if stat.contains("(ksoftirqd/") {
                    continue;
                }
                if let Some((own, reaped)) = stat_times(&stat) {
                    by_pid.insert(pid, own + reaped);
                }
            }
        }
        let steal = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| parse_machine(&t))
            .map(|m| m.steal);
        Outside {
            at: std::time::Instant::now(),
            by_pid,
            steal,
        }
    }

    /// Seconds the hypervisor stole from the machine's CPUs from `start`
    /// to this reading, when it took more than [`STOLEN_TICKS`] clock
    /// ticks (fewer are each reading's rounding: `Some(0.0)`); `None`
    /// where `/proc/stat` could not be read.
    pub(crate) fn stolen_since(&self, start: &Outside) -> Option<f64> {
        let s = (self.steal? - start.steal?).max(0.0);
        Some(if s * ticks() >= STOLEN_TICKS { s } else { 0.0 })
    }

    /// CPU seconds used outside the run from `start` to this reading, and
    /// the wall seconds between them. A process first seen here counts
    /// from 0 (it started in between).
    pub(crate) fn since(&self, start: &Outside) -> (f64, f64) {
        let cpu = self
            .by_pid
            .iter()
            .map(|(pid, &t)| (t - start.by_pid.get(pid).copied().unwrap_or(0.0)).max(0.0))
            .sum();
        (cpu, self.at.duration_since(start.at).as_secs_f64())
    }
}

/// The CPU time of `roots` and their descendants now; `None` when no root
/// can be read (gone, or not ours to see).
pub fn tree(roots: &[u32]) -> Option<TreeCpu> {
    let mut out = TreeCpu::default();
    let mut seen = false;
    let mut running_threads = 0;
    for &root in roots {
        for pid in super::tree::descendants(root) {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some((own, reaped)) = stat_times(&stat) else {
                continue;
            };
            seen = true;
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok();
            let nthreads = status
                .as_deref()
                .and_then(|s| super::tree::field(s, "Threads:"))
                .unwrap_or(1);
            // `stat` rounds each process down to a clock tick: a thousand
            // forked children using a few ms each add up to nothing. Its
            // live threads' schedstat is in nanoseconds, but forgets the
            // threads that have exited. Each is monotonic, so the larger of
            // the two is too. Reaped children's time comes from `stat`.
            let threads = threads(pid);
            let read = !threads.is_empty();
            let ran: f64 = threads.iter().map(|t| t.ran).sum();
            // One thread: the process's own state is the thread's.
            let running = if nthreads <= 1 {
                usize::from(stat_state(&stat).is_some_and(|s| s == "R"))
            } else {
                threads.iter().filter(|t| t.running).count()
            };
            running_threads += running;
            if !read || own > ran {
                out.error += 1.0 / ticks();
            }
            out.seconds += if read { ran.max(own) } else { own } + reaped;
            out.reaped += reaped;
            out.waited += threads.iter().map(|t| t.waited).sum::<f64>();
            out.runs += threads.iter().map(|t| t.runs).sum::<u64>();
            if let Some(status) = &status {
                out.threads += nthreads;
                if pid == root {
                    let allowed = status
                        .lines()
                        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                        .map_or(0, |l| count_cpus(l.trim()));
                    out.cpus_allowed = out.cpus_allowed.max(allowed);
                }
            }
        }
    }
    out.error += running_lag(running_threads, machine_cpus());
    seen.then_some(out)
}

/// The machine's CPUs online (0: not known), read once: every window's
/// two snapshots need it, and reading /sys at each would be I/O at the
/// window's edges for a figure that does not move.
pub(crate) fn machine_cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| crate::env::online_cpus().len())
}

/// The most the CPU time of a tree's threads may lag when `running` of
/// them were runnable when read, on a machine of `cpus` CPUs (0: not
/// known): a kernel tick for each one on a CPU. A runnable thread waiting
/// for a CPU had its time added when it was last taken off one, so only
/// those on a CPU lag, and no more are on one than the machine has CPUs:
/// a thousand runnable threads on 2 CPUs lag by 2 ticks, not a thousand.
fn running_lag(running: usize, cpus: usize) -> f64 {
    let on_cpu = if cpus == 0 {
        running
    } else {
        running.min(cpus)
    };
    on_cpu as f64 * kernel_tick()
}

/// One thread's figures from `/proc/PID/task/TID/`.
#[derive(Debug, Clone, Copy)]
struct Thread {
    tid: u32,
    /// Seconds it ran (`schedstat`'s first field).
    ran: f64,
    /// Seconds it waited, runnable, for a CPU (the second).
    waited: f64,
    /// Times it was put on a CPU (the third): each wake-up from a sleep,
    /// and each return after it was preempted while runnable. A loop that
    /// sleeps in its wait and is rarely preempted makes one per wake-up.
    runs: u64,
    /// On a CPU or runnable when read (state `R` in its `stat`; read only
    /// for a process with several threads: `running` is false otherwise).
    running: bool,
}

/// The threads of `pid` whose `schedstat` could be read (none when it
/// cannot: gone, or schedstat not built into the kernel).
fn threads(pid: u32) -> Vec<Thread> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let tasks: Vec<_> = tasks.flatten().collect();
    let several = tasks.len() > 1;
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        let mut f = s.split_whitespace().map(|v| v.parse::<f64>().ok());
        let (Some(Some(ran)), Some(Some(waited))) = (f.next(), f.next()) else {
            continue;
        };
        let runs = f.next().flatten().unwrap_or(0.0) as u64;
        let running = several
            && std::fs::read_to_string(t.path().join("stat"))
                .ok()
                .is_some_and(|s| stat_state(&s) == Some("R"));
        out.push(Thread {
            tid,
            ran: ran / 1e9,
            waited: waited / 1e9,
            runs,
            running,
        });
    }
    out
}

/// The state letter of a `stat` line (`R`, `S`, …).
fn stat_state(stat: &str) -> Option<&str> {
    crate::sys::process::stat_fields(stat)?.next()
}

/// utime + stime + cutime + cstime of one `/proc/PID/stat` line, seconds.
fn parse_stat(stat: &str) -> Option<f64> {
    stat_times(stat).map(|(own, reaped)| own + reaped)
}

/// utime + stime, and cutime + cstime (the children it reaped), of one
/// `/proc/PID/stat` line, seconds.
fn stat_times(stat: &str) -> Option<(f64, f64)> {
    // Field 3, state, comes first.
    let f: Vec<&str> = crate::sys::process::stat_fields(stat)?.collect();
    let at = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14..17 of stat(5) are at 11..14 here.
    Some(((at(11) + at(12)) / ticks(), (at(13) + at(14)) / ticks()))
}

/// How many CPUs a list such as `0-3,8,10-11` names.
fn count_cpus(list: &str) -> usize {
    list.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => usize::from(p.parse::<usize>().is_ok()),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_time_adds_the_busy_fields() {
        let t = ticks();
        let m = parse_machine("cpu  100 10 50 1000 5 2 3 7 0 0\ncpu0 1 2 3 4\n").unwrap();
        assert!((m.busy - 165.0 / t).abs() < 1e-9);
        assert!((m.steal - 7.0 / t).abs() < 1e-9);
        assert!(parse_machine("intr 1 2 3\n").is_none());
    }

    #[test]
    fn process_time_survives_a_name_with_spaces() {
        let t = ticks();
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 30 20 5 4 20 0 1 0";
        assert!((parse_stat(line).unwrap() - 59.0 / t).abs() < 1e-9);
    }

    #[test]
    fn the_kernel_tick_comes_from_its_config() {
        assert_eq!(
            config_hz("# x\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n"),
            Some(250.0)
        );
        assert_eq!(config_hz("CONFIG_HZ_1000=y\n"), None);
        // No Linux ticks slower than a clock tick.
        assert!(kernel_tick() > 0.0 && kernel_tick() <= 1.0 / ticks());
    }

    /// A snapshot of a server tree at `at` (µs after `t0`), read in
    /// `read` µs, with `seconds` of CPU.
    fn snap(t0: std::time::Instant, at: u64, read: u64, tree: Option<TreeCpu>) -> Snapshot {
        let us = std::time::Duration::from_micros;
        Snapshot {
            at: t0 + us(at),
            own: crate::sys::process::Usage::default(),
            own_waited: 0.0,
            own_runs: 0,
            own_error: 0.0,
            machine: None,
            server: tree,
            server_read: (t0 + us(at), t0 + us(at + read)),
            excluded: 0.0,
            reading: 0.0,
            machine_at: t0 + us(at),
        }
    }

    /// A thread that sleeps is put on a CPU again when it wakes: the runs
    /// count it, and a window gives each side's runs as the difference.
    #[test]
    fn runs_count_the_wake_ups_of_each_side() {
        // This thread's own: the process's sum drops when another test's
        // thread exits with its runs.
        let me = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        let mine = || {
            threads(std::process::id())
                .iter()
                .find(|t| t.tid == me)
                .map_or(0, |t| t.runs)
        };
        let before = mine();
        for _ in 0..3 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let after = mine();
        assert!(after >= before + 3, "{before} → {after}");
        let t0 = std::time::Instant::now();
        let tree = |runs| TreeCpu {
            runs,
            threads: 1,
            cpus_allowed: 1,
            ..TreeCpu::default()
        };
        let mut a = snap(t0, 0, 10, Some(tree(10)));
        let mut b = snap(t0, 1_000_000, 10, Some(tree(110)));
        a.own_runs = 5;
        b.own_runs = 45;
        let w = b.since(&a);
        assert_eq!(w.server_runs, Some(100.0));
        assert_eq!(w.client_runs, 40.0);
        // Two client processes watched the same server: their runs add,
        // the server's is one.
        let mut m = w;
        m.merge(&w);
        assert_eq!((m.client_runs, m.server_runs), (80.0, Some(100.0)));
    }

    #[test]
    fn a_window_times_the_server_from_its_reads() {
        let t0 = std::time::Instant::now();
        let tree = |seconds: f64, reaped: f64, error: f64| TreeCpu {
            seconds,
            reaped,
            error,
            threads: 1,
            cpus_allowed: 1,
            ..TreeCpu::default()
        };
        // Read for 100 µs at 0 and at 1,000 µs: the server's own window
        // is 1 ms, and no read lies outside 1.1 ms.
        let a = snap(t0, 0, 100, Some(tree(1.0, 0.5, 0.0)));
        let b = snap(t0, 1000, 100, Some(tree(1.0004, 0.5, 0.004)));
        let w = b.since(&a);
        assert!((w.server_seconds.unwrap_or(0.0) - 1e-3).abs() < 1e-9);
        assert!((w.server_span.unwrap_or(0.0) - 1.1e-3).abs() < 1e-9);
        assert!((w.server_cpu.unwrap_or(0.0) - 0.0004).abs() < 1e-9);
        // A thread on a CPU at the end: a tick of error; reaped time
        // unchanged adds none.
        assert!((w.server_error.unwrap_or(0.0) - 0.004).abs() < 1e-12);
        assert!((w.client_error - 2e-6).abs() < 1e-12);
        // Reaped children's time that moved is known to a clock tick at
        // each end.
        let c = snap(t0, 1000, 100, Some(tree(1.0104, 0.51, 0.0)));
        assert!((c.since(&a).server_error.unwrap_or(0.0) - 2.0 / ticks()).abs() < 1e-12);
        // A server not observed at one end has no window.
        let d = snap(t0, 1000, 100, None);
        let w = d.since(&a);
        assert_eq!(
            (w.server_cpu, w.server_span, w.server_error),
            (None, None, None)
        );
    }

    #[test]
    fn settling_costs_are_not_the_clients() {
        let t0 = std::time::Instant::now();
        let mut a = snap(t0, 0, 0, None);
        let mut b = snap(t0, 1000, 0, None);
        a.own.user = std::time::Duration::from_micros(100);
        a.own.system = std::time::Duration::from_micros(100);
        b.own.user = std::time::Duration::from_micros(400);
        b.own.system = std::time::Duration::from_micros(150);
        b.excluded = 80e-6;
        let (user, system) = b.own_cpu_since(&a);
        // 50 µs of system time, then 30 µs of user time, are settling's.
        assert!((system - 0.0).abs() < 1e-12, "{system}");
        assert!((user - 270e-6).abs() < 1e-12, "{user}");
    }

    #[test]
    fn a_sleeping_tree_is_exact_and_a_running_one_is_not() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("start sleep");
        let pid = child.id();
        // Bounded: until it sleeps, or 5 s.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline
            && super::super::tree::state(pid).as_deref() != Some("S")
        {
            std::thread::yield_now();
        }
        let asleep = tree(&[pid]);
        let _ = child.kill();
        let _ = child.wait();
        let asleep = asleep.expect("the child is ours to read");
        let schedstat = std::path::Path::new("/proc/self/schedstat").exists();
        if schedstat {
            assert_eq!(asleep.error, 0.0, "{asleep:?}");
        } else {
            assert_eq!(asleep.error, 1.0 / ticks(), "{asleep:?}");
        }
        // This process: the thread reading it is on a CPU.
        let me = tree(&[std::process::id()]).expect("this process");
        assert!(me.error >= kernel_tick(), "{me:?}");
    }

    #[test]
    fn only_the_threads_a_machine_can_run_at_once_lag() {
        let tick = kernel_tick();
        assert_eq!(running_lag(0, 2), 0.0);
        assert_eq!(running_lag(1, 2), tick);
        assert_eq!(running_lag(1000, 2), 2.0 * tick);
        // CPUs not known: every runnable thread may lag.
        assert_eq!(running_lag(1000, 0), 1000.0 * tick);
    }

    #[test]
    fn cpu_lists_count() {
        assert_eq!(count_cpus("0-3,8,10-11"), 7);
        assert_eq!(count_cpus("1"), 1);
        assert_eq!(count_cpus(""), 0);
    }

    #[test]
    fn this_process_is_seen_using_cpu() {
        let me = std::process::id();
        let before = tree(&[me]).unwrap();
        // Spin until the kernel has charged at least two ticks (bounded),
        // and judge by that reading: in a process whose other test threads
        // come and go, a later one may read up to two ticks less (`stat`
        // rounds down to a tick; schedstat forgets exited threads).
        let start = std::time::Instant::now();
        let mut x = 0u64;
        let mut after = tree(&[me]).unwrap();
        while after.seconds < before.seconds + 2.0 / ticks()
            && start.elapsed() < std::time::Duration::from_secs(10)
        {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            after = tree(&[me]).unwrap();
        }
        std::hint::black_box(x);
        assert!(after.seconds > before.seconds);
        assert!(after.threads >= 1 && after.cpus_allowed >= 1);
        assert!(machine().unwrap().busy > 0.0);
    }
}
