//! `busy`: one thread, every socket non-blocking, tried in turn with
//! `read` (and the listener with `accept`) in a loop that never sleeps:
//! McKusick's first way to avoid blocking, before select.
//!
//! How it waits: it does not. Each pass reports every watched descriptor as
//! ready and the shared [`reactor`](super::reactor) tries each one; a socket
//! with nothing to read answers EAGAIN. A pass costs a system call per
//! connection whether anything arrived or not, so the loop's latency is the
//! time of one pass (about a microsecond per connection) and its CPU is a
//! whole core even when every connection is idle: that is the design, and
//! why every report shows its CPU beside its latency. It never yields the
//! CPU on its own, so a client pinned to the same CPU gets it only when the
//! scheduler takes it away.
//!
//! The waiter keeps the watched set in a [`PollSet`] (for its O(1) add and
//! remove; the array is never passed to poll).

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

use super::reactor::{Inline, Interest, Reactor, Waiter};
use super::{Context, Model};
use crate::sys::pollset::{PollSet, POLLIN};

pub(crate) struct Busy;

impl Model for Busy {
    fn readiness(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "busy"
    }
    fn about(&self) -> &'static str {
        "one thread, no wait: every socket non-blocking and tried with read/accept in turn, forever: a syscall per connection per pass, a full CPU even idle"
    }
    fn spins(&self) -> Option<&'static str> {
        Some("busy polls every socket without ever sleeping, by design: its CPU is a full core even when idle")
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let mut reactor =
            Reactor::new(ctx, BusyWaiter::default(), Inline)?.listen(&listener, false);
        ctx.ready();
        reactor.run()
    }
}

/// Every watched descriptor (their interest does not matter: each is tried).
#[derive(Default)]
pub(crate) struct BusyWaiter {
    set: PollSet,
}

impl Waiter for BusyWaiter {
    const CALL: &'static str = "a busy pass";

    fn watch_source(&mut self, fd: BorrowedFd<'_>, _exclusive: bool) -> io::Result<()> {
        self.set.set(fd.as_raw_fd(), POLLIN);
        Ok(())
    }

    fn watch(&mut self, fd: BorrowedFd<'_>, _interest: Interest) -> io::Result<()> {
        self.set.set(fd.as_raw_fd(), POLLIN);
        Ok(())
    }

    fn change(&mut self, _fd: BorrowedFd<'_>, _to: Interest) -> io::Result<()> {
        Ok(())
    }

    fn unwatch(&mut self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.set.remove(fd.as_raw_fd());
        Ok(())
    }

    fn forget(&mut self, fd: RawFd) {
        self.set.remove(fd);
    }

    /// Returns at once with every descriptor, whatever the timeout.
    fn wait(&mut self, _timeout: Option<Duration>, ready: &mut Vec<RawFd>) -> io::Result<()> {
        ready.extend(self.set.fds());
        Ok(())
    }
}
