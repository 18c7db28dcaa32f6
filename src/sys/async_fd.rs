//! Registering a borrowed descriptor with tokio's reactor.
//!
//! Since tokio 1.54, `AsyncFd::register*` are `unsafe`: tokio cannot check
//! that the descriptor stays open (and means the same file) while it is
//! registered. A [`BorrowedFd`] carries exactly that promise in its lifetime,
//! so registering one is safe, and this is the safe API for it.

use std::io;
use std::os::fd::BorrowedFd;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// Watches `fd` for `interest` on the current tokio runtime, for as long as
/// the borrow lasts. The descriptor is not closed when the watch is dropped.
///
/// # Panics
///
/// Outside a tokio runtime with I/O enabled (as `AsyncFd` does).
pub(crate) fn watch(fd: BorrowedFd<'_>, interest: Interest) -> io::Result<AsyncFd<BorrowedFd<'_>>> {
    // SAFETY: a `BorrowedFd<'a>` is an open descriptor that no one may close
    // or replace during `'a`, and the returned `AsyncFd` cannot outlive `'a`;
    // `BorrowedFd::as_raw_fd` always returns the same number. That is what
    // `register_with_interest` requires.
    unsafe { AsyncFd::register_with_interest(fd, interest) }.map_err(io::Error::from)
}
