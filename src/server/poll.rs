//! `poll`: one thread, poll(2) over an array of `pollfd`.
//!
//! How it waits: every call copies the whole array into the kernel, which
//! checks each descriptor, and back; then user space walks the array to find
//! the ready ones. A call costs O(watched connections), with no FD_SETSIZE
//! limit and no cost for gaps between descriptor numbers (unlike select).
//!
//! The array is maintained incrementally ([`PollSet`]): a connection that
//! changes interest updates its entry in place, a closed one is swapped out,
//! and nothing is rebuilt per call. The scan stops after `nready` entries.
//!
//! The loop around the wait is the shared [`reactor`](super::reactor); this
//! file is only the waiter (also `hybrid`'s).

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

use super::reactor::{Inline, Interest, Reactor, Waiter};
use super::{Context, Model};
use crate::sys::pollset::{PollSet, POLLIN, POLLOUT};

pub(crate) struct Poll;

impl Model for Poll {
    fn readiness(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "poll"
    }
    fn about(&self) -> &'static str {
        "one thread, poll(2) over an incrementally kept pollfd array: O(connections) per call"
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let mut reactor =
            Reactor::new(ctx, PollWaiter::default(), Inline)?.listen(&listener, false);
        ctx.ready();
        reactor.run()
    }
}

/// The `pollfd` array.
#[derive(Default)]
pub(crate) struct PollWaiter {
    set: PollSet,
}

/// The `pollfd` events that wait for `interest` (also `sigio`'s rescan).
pub(super) fn events(interest: Interest) -> libc::c_short {
    match interest {
        Interest::Read => POLLIN,
        Interest::Write => POLLOUT,
    }
}

impl Waiter for PollWaiter {
    const CALL: &'static str = "poll";

    fn watch_source(&mut self, fd: BorrowedFd<'_>, _exclusive: bool) -> io::Result<()> {
        self.set.set(fd.as_raw_fd(), POLLIN);
        Ok(())
    }

    fn watch(&mut self, fd: BorrowedFd<'_>, interest: Interest) -> io::Result<()> {
        self.set.set(fd.as_raw_fd(), events(interest));
        Ok(())
    }

    fn change(&mut self, fd: BorrowedFd<'_>, to: Interest) -> io::Result<()> {
        self.watch(fd, to)
    }

    fn unwatch(&mut self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.set.remove(fd.as_raw_fd());
        Ok(())
    }

    fn forget(&mut self, fd: RawFd) {
        self.set.remove(fd);
    }

    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<RawFd>) -> io::Result<()> {
        let n = self.set.wait(timeout)?;
        // POLLHUP and POLLERR too: the next read or write reports them and
        // the connection closes.
        ready.extend(self.set.ready(n).map(|(fd, _)| fd));
        Ok(())
    }
}
