//! Who used the CPUs during a measured window, read from /proc: the whole
//! machine (`/proc/stat`: busy and steal time over every CPU) and a server's
//! process tree (`/proc/PID/stat` of every live process, with the time of
//! the children it has already reaped). Two snapshots, one at each end of
//! the window, give what each side used; the machine's busy time minus the
//! run's own processes is the interference from outside the run.
//!
//! Cost: one read of `/proc/stat` and, per server process, one of its
//! `stat` and `status` and one `schedstat` per thread, at each end of the
//! window; nothing during it. A process's time is the larger of its
//! threads' `schedstat` (nanoseconds) and its `stat` (clock ticks, 10 ms
//! here, rounded down per process, which over a thousand forked children
//! loses everything); the machine's and reaped children's times are in
//! ticks, so a window under a second resolves a share to a few per cent.

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
}

impl TreeCpu {
    /// How many CPUs the tree could keep busy: its threads, on the CPUs it
    /// may use.
    pub(crate) fn capacity(&self) -> f64 {
        self.threads.min(self.cpus_allowed as u64).max(1) as f64
    }
}

/// What used the CPUs at one moment: this process, the machine, and the
/// server's tree when its processes are known.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    pub at: std::time::Instant,
    pub own: crate::sys::process::Usage,
    /// Seconds this process's threads waited, runnable, for a CPU.
    pub own_waited: f64,
    pub machine: Option<MachineCpu>,
    pub server: Option<TreeCpu>,
}

impl Snapshot {
    pub fn take(server: &[u32]) -> Snapshot {
        Snapshot {
            at: std::time::Instant::now(),
            own: crate::sys::process::Usage::of_self(),
            own_waited: run_delay(std::process::id()),
            machine: machine(),
            server: if server.is_empty() {
                None
            } else {
                tree(server)
            },
        }
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
        WindowCpu {
            seconds: self.at.saturating_duration_since(start.at).as_secs_f64(),
            machine_busy: machine(|m| m.busy),
            steal: machine(|m| m.steal),
            softirq: machine(|m| m.softirq_threads),
            server_cpu: server(|s| s.seconds),
            server_waited: server(|s| s.waited),
            client_waited: (self.own_waited - start.own_waited).max(0.0),
            server_capacity: self.server.or(start.server).map(|s| s.capacity()),
        }
    }
}

/// CPU used over a measured window by the machine and by the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowCpu {
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
    /// CPUs the server could keep busy (its threads on its allowed CPUs).
    pub server_capacity: Option<f64>,
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
        self.server_capacity = max(self.server_capacity, o.server_capacity);
    }
}

fn ticks() -> f64 {
    rustix::param::clock_ticks_per_second() as f64
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

/// The CPU time of `roots` and their descendants now; `None` when no root
/// can be read (gone, or not ours to see).
pub fn tree(roots: &[u32]) -> Option<TreeCpu> {
    let mut out = TreeCpu::default();
    let mut seen = false;
    for &root in roots {
        for pid in super::tree::descendants(root) {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some((own, reaped)) = stat_times(&stat) else {
                continue;
            };
            seen = true;
            // `stat` rounds each process down to a clock tick: a thousand
            // forked children using a few ms each add up to nothing. Its
            // live threads' schedstat is in nanoseconds, but forgets the
            // threads that have exited. Each is monotonic, so the larger of
            // the two is too. Reaped children's time comes from `stat`.
            let (ran, waited) = schedstat(pid);
            out.seconds += ran.map_or(own, |ran| ran.max(own)) + reaped;
            out.waited += waited;
            if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                out.threads += super::tree::field(&status, "Threads:").unwrap_or(1);
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
    seen.then_some(out)
}

/// Seconds the threads of `pid` waited, runnable, for a CPU.
pub(crate) fn run_delay(pid: u32) -> f64 {
    schedstat(pid).1
}

/// Seconds the threads of `pid` ran (`None` when schedstat cannot be
/// read) and waited, runnable, for a CPU: the first two fields of each
/// thread's `schedstat`, in nanoseconds.
fn schedstat(pid: u32) -> (Option<f64>, f64) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (None, 0.0);
    };
    let (mut ran, mut waited, mut read) = (0.0, 0.0, false);
    for t in tasks.flatten() {
        let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        let mut f = s.split_whitespace().map(|v| v.parse::<f64>().ok());
        if let (Some(Some(r)), Some(Some(w))) = (f.next(), f.next()) {
            ran += r;
            waited += w;
            read = true;
        }
    }
    (read.then_some(ran / 1e9), waited / 1e9)
}

/// utime + stime + cutime + cstime of one `/proc/PID/stat` line, seconds.
fn parse_stat(stat: &str) -> Option<f64> {
    stat_times(stat).map(|(own, reaped)| own + reaped)
}

/// utime + stime, and cutime + cstime (the children it reaped), of one
/// `/proc/PID/stat` line, seconds.
fn stat_times(stat: &str) -> Option<(f64, f64)> {
    // The command name is in parentheses and may hold spaces: fields are
    // counted from after its closing one (field 3, state, comes first).
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
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
    fn cpu_lists_count() {
        assert_eq!(count_cpus("0-3,8,10-11"), 7);
        assert_eq!(count_cpus("1"), 1);
        assert_eq!(count_cpus(""), 0);
    }

    #[test]
    fn this_process_is_seen_using_cpu() {
        let me = std::process::id();
        let before = tree(&[me]).unwrap();
        // Spin until the kernel has charged at least two ticks (bounded).
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while tree(&[me]).unwrap().seconds < before.seconds + 2.0 / ticks()
            && start.elapsed() < std::time::Duration::from_secs(10)
        {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let after = tree(&[me]).unwrap();
        assert!(after.seconds > before.seconds);
        assert!(after.threads >= 1 && after.cpus_allowed >= 1);
        assert!(machine().unwrap().busy > 0.0);
    }
}
