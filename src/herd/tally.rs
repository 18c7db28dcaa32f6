//! What the herd counts, and how it is read.
//!
//! - Each worker counts its own wait returns, accepts and failed accepts in
//!   a slot of a [`Board`] in shared memory (`sys::shared`), so the counts
//!   survive the worker being stopped by a signal and need no report pipe.
//! - Wakeups come from outside: `voluntary_ctxt_switches` in
//!   `/proc/PID/status` counts every time a worker went to sleep. A worker
//!   woken for a connection it did not get sleeps again, often without
//!   returning to user space (select, poll and level-triggered epoll re-check
//!   the listener in the kernel and wait on), so only the switch count sees
//!   the herd. It is a proxy: any sleep counts, not only waits on the
//!   listener.
//! - How evenly the accepts spread over the workers: min, max and Jain's
//!   fairness index, (Σx)² / (n·Σx²): 1 when every worker accepted as many,
//!   1/n when one worker took them all.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::stats::fairness::jain;

/// One worker's counters.
#[derive(Debug, Default)]
pub struct WorkerTally {
    /// Times the wait returned to user space with something ready (or, for
    /// blocking accept, times accept returned).
    pub returns: AtomicU64,
    /// Connections accepted.
    pub accepts: AtomicU64,
    /// Accepts that found nothing (EAGAIN): another worker took it first.
    pub again: AtomicU64,
    /// Accepts that failed otherwise (ECONNABORTED, EMFILE, …).
    pub errors: AtomicU64,
}

/// What a slot held when read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub returns: u64,
    pub accepts: u64,
    pub again: u64,
    pub errors: u64,
}

impl WorkerTally {
    pub fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::SeqCst);
    }

    pub fn read(&self) -> Counts {
        Counts {
            returns: self.returns.load(Ordering::SeqCst),
            accepts: self.accepts.load(Ordering::SeqCst),
            again: self.again.load(Ordering::SeqCst),
            errors: self.errors.load(Ordering::SeqCst),
        }
    }

    fn clear(&self) {
        for c in [&self.returns, &self.accepts, &self.again, &self.errors] {
            c.store(0, Ordering::SeqCst);
        }
    }
}

/// A slot for every worker a cell may fork, in memory shared with them.
#[derive(Debug, Clone, Copy)]
pub struct Board {
    slots: &'static [WorkerTally],
}

impl Board {
    /// A board of `n` slots in memory shared with the children forked
    /// after this call.
    pub fn shared(n: usize) -> std::io::Result<Board> {
        Ok(Board {
            slots: crate::sys::shared::shared_slice::<WorkerTally>(n.max(1))?,
        })
    }

    /// Slots on the board (at least one).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Zeroes the first `n` slots before a cell.
    pub fn clear(&self, n: usize) {
        self.slots.iter().take(n).for_each(WorkerTally::clear);
    }

    /// Worker `i`'s slot (the last one past the end).
    pub fn slot(&self, i: usize) -> &'static WorkerTally {
        &self.slots[i.min(self.slots.len() - 1)]
    }

    /// The first `n` slots, read.
    pub fn read(&self, n: usize) -> Vec<Counts> {
        self.slots.iter().take(n).map(WorkerTally::read).collect()
    }

    /// Accepts summed over the first `n` slots.
    pub fn accepts(&self, n: usize) -> u64 {
        self.slots
            .iter()
            .take(n)
            .map(|s| s.accepts.load(Ordering::SeqCst))
            .sum()
    }
}

/// A process's scheduling state letter from `/proc/PID/stat` (`S` asleep,
/// `R` running or runnable, `Z` zombie, …).
pub fn state(pid: i32) -> Option<char> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_state(&text)
}

fn parse_state(stat: &str) -> Option<char> {
    crate::sys::process::stat_fields(stat)?
        .next()?
        .chars()
        .next()
}

/// `voluntary_ctxt_switches` of a process.
pub(crate) fn voluntary_switches(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_switches(&text)
}

/// `voluntary_ctxt_switches` of a process when it is asleep (`State: S`),
/// from one read of `/proc/PID/status`; `None` when it is not asleep or
/// cannot be read.
pub(crate) fn switches_if_asleep(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_asleep_switches(&text)
}

fn parse_asleep_switches(text: &str) -> Option<u64> {
    let state = text
        .lines()
        .find_map(|l| l.strip_prefix("State:"))?
        .trim_start()
        .chars()
        .next()?;
    if state != 'S' {
        return None;
    }
    parse_switches(text)
}

fn parse_switches(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))?
        .trim()
        .parse()
        .ok()
}

/// How the accepts spread over the workers.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Spread {
    pub min: u64,
    pub max: u64,
    /// Jain's fairness index; `None` when nothing was accepted.
    pub jain: Option<f64>,
}

impl Spread {
    pub fn of(accepts: &[u64]) -> Spread {
        Spread {
            min: accepts.iter().copied().min().unwrap_or(0),
            max: accepts.iter().copied().max().unwrap_or(0),
            jain: jain(accepts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::herd::plan::MAX_WORKERS;

    #[test]
    fn spread_takes_the_extremes() {
        let s = Spread::of(&[3, 9, 1]);
        assert_eq!((s.min, s.max), (1, 9));
    }

    #[test]
    fn proc_text_is_parsed() {
        let stat = "1234 (a) odd) name) S 1 1234 1234 0 -1";
        assert_eq!(parse_state(stat), Some('S'));
        let status = "Name:\tc10k\nvoluntary_ctxt_switches:\t42\n\
                      nonvoluntary_ctxt_switches:\t7\n";
        assert_eq!(parse_switches(status), Some(42));
        assert_eq!(parse_switches("Name: x\n"), None);
        let asleep = "State:\tS (sleeping)\nvoluntary_ctxt_switches:\t5\n";
        assert_eq!(parse_asleep_switches(asleep), Some(5));
        let running = "State:\tR (running)\nvoluntary_ctxt_switches:\t5\n";
        assert_eq!(parse_asleep_switches(running), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let me = std::process::id() as i32;
        assert!(state(me).is_some());
        assert!(voluntary_switches(me).is_some());
    }

    #[test]
    fn the_board_fits_every_worker() {
        let Ok(b) = Board::shared(MAX_WORKERS) else {
            panic!("cannot map the board");
        };
        WorkerTally::add(&b.slot(MAX_WORKERS - 1).accepts);
        assert_eq!(b.accepts(MAX_WORKERS), 1);
        b.clear(MAX_WORKERS);
        assert_eq!(b.accepts(MAX_WORKERS), 0);
    }
}
