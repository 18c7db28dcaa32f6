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
pub fn pollfd(fd: RawFd, events: libc::c_short) -> PollFd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// `poll(fds, timeout)`; `None` waits forever. Returns how many entries have
/// events.
pub fn poll(fds: &mut [PollFd], timeout: Option<Duration>) -> io::Result<usize> {
    let ms = timeout.map_or(-1, |d| d.as_millis().min(i32::MAX as u128) as libc::c_int);
    // SAFETY: the pointer and length describe a live, exclusively borrowed
    // slice of `pollfd`, which the kernel reads and whose `revents` it writes.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
