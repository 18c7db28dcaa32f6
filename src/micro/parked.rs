//! Memory per parked thread: what an idle thread costs a thread-per-connection
//! server while its connection is quiet.
//!
//! P threads are started and left blocked on a condition variable — asleep
//! in the kernel on a futex, not spinning. The process's VmRSS and VmSize
//! (/proc/self/status) and the system's KernelStack (/proc/meminfo) are read
//! before they start and while all of them wait; the differences over P are
//! one thread's user memory actually touched (the stack pages it used, its
//! thread-local storage), the address space it reserves (mostly its stack)
//! and the kernel stack every task has. Then they are released and joined.
//!
//! Each run happens in a freshly forked child that reports its readings
//! through a pipe and exits: glibc keeps freed thread stacks (up to 40 MiB)
//! for the next threads, and stacks left by an earlier run would be reused
//! already mapped and partly resident, hiding what a new thread costs.

use std::io::{Read as _, Write as _};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;

use crate::sys::process::{self, Forked};

/// How long parked threads wait for their release before giving up (a
/// guard against a hang, far longer than a run takes).
const PATIENCE: Duration = Duration::from_secs(120);

/// Memory readings at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Reading {
    /// This process: VmRSS, VmSize (KiB) and threads.
    pub rss_kib: u64,
    pub vm_kib: u64,
    pub threads: u64,
    /// The system: KernelStack from /proc/meminfo (KiB).
    pub kernel_stack_kib: u64,
}

impl Reading {
    pub fn now() -> std::io::Result<Reading> {
        let status = std::fs::read_to_string("/proc/self/status")?;
        let meminfo = std::fs::read_to_string("/proc/meminfo")?;
        let field = |text: &str, name: &str| -> std::io::Result<u64> {
            proc_field(text, name)
                .ok_or_else(|| std::io::Error::other(format!("no {name} field in /proc")))
        };
        Ok(Reading {
            rss_kib: field(&status, "VmRSS")?,
            vm_kib: field(&status, "VmSize")?,
            threads: field(&status, "Threads")?,
            kernel_stack_kib: field(&meminfo, "KernelStack")?,
        })
    }

    fn to_line(self) -> String {
        format!(
            "{} {} {} {}",
            self.rss_kib, self.vm_kib, self.threads, self.kernel_stack_kib
        )
    }

    fn from_words<'a>(words: &mut impl Iterator<Item = &'a str>) -> Option<Reading> {
        let mut next = || words.next()?.parse::<u64>().ok();
        Some(Reading {
            rss_kib: next()?,
            vm_kib: next()?,
            threads: next()?,
            kernel_stack_kib: next()?,
        })
    }
}

/// The first number after `name:` in a /proc file of `Name: value [kB]`
/// lines.
fn proc_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        if k != name {
            return None;
        }
        v.split_whitespace().next()?.parse().ok()
    })
}

/// One run: readings before and while the threads were parked.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct ParkedRound {
    pub before: Reading,
    pub during: Reading,
    /// Threads started and seen waiting.
    pub parked: usize,
    /// Threads joined after their release.
    pub joined: usize,
    pub rss_kib_per_thread: f64,
    pub vm_kib_per_thread: f64,
    /// System-wide, so other work adds noise (it may even come out below
    /// zero).
    pub kernel_stack_kib_per_thread: f64,
}

/// Parks `count` threads with `stack` bytes of stack each, in a child of its
/// own, and returns its readings. The child is reaped before this returns.
pub(crate) fn measure(count: usize, stack: usize) -> anyhow::Result<ParkedRound> {
    let (rx, tx) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .context("pipe for the parked-thread child")?;
    let parent = std::process::id() as i32;
    match process::fork().context("fork for the parked-thread child")? {
        Forked::Child => {
            drop(rx);
            process::die_with_parent(parent);
            // Never unwind into the parent's code: whatever happens, the
            // child writes one line and exits here.
            let line = std::panic::catch_unwind(|| child(count, stack))
                .unwrap_or_else(|_| "error: the parked-thread child panicked".into());
            let mut out = std::fs::File::from(tx);
            let ok = out.write_all(format!("{line}\n").as_bytes()).is_ok();
            process::exit_now(if ok { 0 } else { 1 })
        }
        Forked::Parent(pid) => {
            drop(tx);
            let mut text = String::new();
            // Ends at the child's exit (EOF), which its own deadline bounds.
            let read = std::fs::File::from(rx).take(4096).read_to_string(&mut text);
            let reaped = process::reap(pid, true).context("wait4 for the parked-thread child")?;
            read.context("reading the parked-thread child")?;
            if reaped.as_ref().and_then(|r| r.exit_code()) != Some(0) {
                anyhow::bail!("the parked-thread child failed: {}", text.trim());
            }
            parse_round(text.trim(), count)
        }
    }
}

/// The child's report: `ok BEFORE DURING PARKED JOINED` or `error: why`.
fn parse_round(line: &str, count: usize) -> anyhow::Result<ParkedRound> {
    let mut words = line.split_whitespace();
    if words.next() != Some("ok") {
        anyhow::bail!("parked threads: {line}");
    }
    let parsed = (|| {
        let before = Reading::from_words(&mut words)?;
        let during = Reading::from_words(&mut words)?;
        let parked = words.next()?.parse().ok()?;
        let joined = words.next()?.parse().ok()?;
        Some((before, during, parked, joined))
    })();
    let Some((before, during, parked, joined)) = parsed else {
        anyhow::bail!("parked threads: unreadable report {line:?}");
    };
    let per = |a: u64, b: u64| (b as f64 - a as f64) / count as f64;
    Ok(ParkedRound {
        before,
        during,
        parked,
        joined,
        rss_kib_per_thread: per(before.rss_kib, during.rss_kib),
        vm_kib_per_thread: per(before.vm_kib, during.vm_kib),
        kernel_stack_kib_per_thread: per(before.kernel_stack_kib, during.kernel_stack_kib),
    })
}

/// Where the parked threads and the measuring thread meet.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    waiting: usize,
    released: bool,
}

impl Gate {
    /// A parked thread: says it is waiting, then sleeps until released (or
    /// until the deadline, so a lost release cannot hang the process).
    fn park(&self, deadline: Instant) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.waiting += 1;
        self.changed.notify_all();
        while !s.released {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return;
            };
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Waits until `n` threads are parked; false at the deadline.
    fn wait_parked(&self, n: usize, deadline: Instant) -> bool {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while s.waiting < n {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    fn release(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .released = true;
        self.changed.notify_all();
    }
}

/// In the child: park the threads, read, release, join; one line of report.
fn child(count: usize, stack: usize) -> String {
    let before = match Reading::now() {
        Ok(r) => r,
        Err(e) => return format!("error: reading /proc: {e}"),
    };
    let deadline = Instant::now() + PATIENCE;
    let gate = Arc::new(Gate::default());
    let mut handles = Vec::with_capacity(count);
    let mut failure = None;
    for _ in 0..count {
        let g = Arc::clone(&gate);
        match std::thread::Builder::new()
            .stack_size(stack)
            .spawn(move || g.park(deadline))
        {
            Ok(h) => handles.push(h),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let all_parked = gate.wait_parked(handles.len(), deadline);
    let during = Reading::now();
    gate.release();
    let parked = handles.len();
    let joined = handles.into_iter().filter_map(|h| h.join().ok()).count();
    if let Some(e) = failure {
        return format!("error: creating thread {} of {count}: {e}", parked + 1);
    }
    if !all_parked {
        return format!("error: not all {count} threads parked within {PATIENCE:?}");
    }
    match during {
        Ok(d) => format!("ok {} {} {parked} {joined}", before.to_line(), d.to_line()),
        Err(e) => format!("error: reading /proc: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fields_parse() {
        let status = "Name:\tc10k\nVmSize:\t  123456 kB\nVmRSS:\t    7890 kB\nThreads:\t3\n";
        assert_eq!(proc_field(status, "VmRSS"), Some(7890));
        assert_eq!(proc_field(status, "VmSize"), Some(123456));
        assert_eq!(proc_field(status, "Threads"), Some(3));
        assert_eq!(proc_field(status, "VmPeak"), None);
        assert!(Reading::now().is_ok());
    }

    #[test]
    fn a_report_round_trips() {
        let b = Reading {
            rss_kib: 1000,
            vm_kib: 5000,
            threads: 1,
            kernel_stack_kib: 100,
        };
        let d = Reading {
            rss_kib: 1100,
            vm_kib: 7000,
            threads: 11,
            kernel_stack_kib: 260,
        };
        let line = format!("ok {} {} 10 10", b.to_line(), d.to_line());
        let r = parse_round(&line, 10).expect("parses");
        assert_eq!((r.before, r.during, r.parked, r.joined), (b, d, 10, 10));
        assert_eq!(r.rss_kib_per_thread, 10.0);
        assert_eq!(r.kernel_stack_kib_per_thread, 16.0);
        assert!(parse_round("error: no", 10).is_err());
        assert!(parse_round("ok 1 2", 10).is_err());
    }

    #[test]
    fn the_gate_parks_and_releases() {
        let gate = Arc::new(Gate::default());
        let deadline = Instant::now() + Duration::from_secs(30);
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let g = Arc::clone(&gate);
                std::thread::spawn(move || g.park(deadline))
            })
            .collect();
        assert!(gate.wait_parked(4, deadline));
        gate.release();
        for h in hs {
            h.join().expect("joined");
        }
    }
}
