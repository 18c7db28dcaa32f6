//! `poll(2)` over a caller-maintained array of `pollfd`.
//!
//! rustix's `PollFd` borrows each descriptor, which cannot live in an array
//! kept across calls next to the sockets it watches. The poll model keeps a
//! plain array and updates it in place, so the array here is raw.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

pub use libc::{POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT};

/// One entry: a descriptor, the events wanted, and the events returned.
pub type PollFd = libc::pollfd;

/// A new entry watching `fd` for `events`.
pub(crate) fn pollfd(fd: RawFd, events: libc::c_short) -> PollFd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// `poll(fds, timeout)`; `None` waits forever. Returns how many entries have
/// events.
pub fn poll(fds: &mut [PollFd], timeout: Option<Duration>) -> io::Result<usize> {
    let ms = timeout.map_or(-1, millis_up);
    // SAFETY: the pointer and length describe a live, exclusively borrowed
    // slice of `pollfd`, which the kernel reads and whose `revents` it writes.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// `d` in whole milliseconds, rounded up: poll(2) counts milliseconds, and
/// a remaining 0.4 ms truncated to 0 would return at once and spin until
/// the deadline (mio rounds up for the same reason).
fn millis_up(d: Duration) -> libc::c_int {
    d.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int
}

/// A `pollfd` array maintained incrementally: adding, changing or removing a
/// descriptor touches one entry (removal swaps the last entry into the hole),
/// and a side index maps descriptor to entry, so nothing is rebuilt per call.
#[derive(Debug, Default)]
pub(crate) struct PollSet {
    fds: Vec<PollFd>,
    /// `index[fd]` is the entry of `fd` plus one, or 0 when absent.
    index: Vec<u32>,
}

impl PollSet {
    /// Watches `fd` for `events`, adding it or updating its entry.
    pub fn set(&mut self, fd: RawFd, events: libc::c_short) {
        let i = fd as usize;
        if i >= self.index.len() {
            self.index.resize(i + 1, 0);
        }
        match self.index[i] {
            0 => {
                self.fds.push(pollfd(fd, events));
                self.index[i] = self.fds.len() as u32;
            }
            k => self.fds[k as usize - 1].events = events,
        }
    }

    /// Stops watching `fd` (a no-op when absent).
    pub fn remove(&mut self, fd: RawFd) {
        let Some(&k) = self.index.get(fd as usize) else {
            return;
        };
        if k == 0 {
            return;
        }
        let k = k as usize - 1;
        self.fds.swap_remove(k);
        self.index[fd as usize] = 0;
        if let Some(moved) = self.fds.get(k) {
            self.index[moved.fd as usize] = k as u32 + 1;
        }
    }

    /// Whether `fd` is watched.
    pub fn contains(&self, fd: RawFd) -> bool {
        self.index.get(fd as usize).is_some_and(|&k| k != 0)
    }

    /// Descriptors watched.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.fds.len()
    }

    /// Every watched descriptor, in array order.
    pub fn fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.fds.iter().map(|p| p.fd)
    }

    /// Polls every entry; returns how many have events.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<usize> {
        poll(&mut self.fds, timeout)
    }

    /// The first `nready` entries with events, as (descriptor, revents):
    /// the scan stops as soon as all ready ones were found.
    pub fn ready(&self, nready: usize) -> impl Iterator<Item = (RawFd, libc::c_short)> + '_ {
        self.fds
            .iter()
            .filter(|p| p.revents != 0)
            .take(nready)
            .map(|p| (p.fd, p.revents))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incremental_updates_keep_the_index_right() {
        let mut s = PollSet::default();
        for fd in [3, 7, 5, 9] {
            s.set(fd, POLLIN);
        }
        s.remove(7);
        assert!(!s.contains(7));
        s.set(9, POLLOUT);
        s.remove(3);
        assert_eq!(s.len(), 2);
        assert!(s.contains(5) && s.contains(9));
        let mut entries: Vec<_> = s.fds.iter().map(|p| (p.fd, p.events)).collect();
        entries.sort();
        assert_eq!(entries, vec![(5, POLLIN), (9, POLLOUT)]);
    }

    #[test]
    fn a_sub_millisecond_timeout_waits_a_millisecond() {
        assert_eq!(millis_up(Duration::from_micros(400)), 1);
        assert_eq!(millis_up(Duration::from_millis(3)), 3);
        assert_eq!(millis_up(Duration::from_nanos(3_000_001)), 4);
        assert_eq!(millis_up(Duration::ZERO), 0);
        assert_eq!(millis_up(Duration::from_secs(u64::MAX)), i32::MAX);
    }
}
