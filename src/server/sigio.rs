//! `sigio`: one thread, signal-driven I/O. Every socket has O_ASYNC with its
//! owner set to the loop's thread and a real-time signal (`F_SETSIG`), so
//! each readiness change queues a signal carrying the descriptor; the loop
//! reads the queue through a signalfd and serves the descriptors it names
//! (see [`crate::sys::sigio`]). This is the Linux 2.4 design the C10K page
//! describes, McKusick's second way to avoid blocking.
//!
//! How it waits: a signal is queued per event, not per socket, so the cost
//! is O(events) like epoll, but each event is a signal allocated and queued
//! in the kernel, and making a connection costs three `fcntl` calls. The
//! signals report changes (edges): a socket is served until EAGAIN, and one
//! that used up its read budget is served again without waiting, as with
//! edge-triggered epoll. Several signals for one socket in a batch are
//! served once.
//!
//! When the real-time queue is full (RLIMIT_SIGPENDING, per user; `c10k
//! serve --sigpending N` lowers it), the kernel sends a plain SIGIO instead
//! and the event is lost: the loop then polls every connection, as the
//! classic design requires, and counts the overflow in its summary
//! (`waits.overflows`). The poll array is kept beside the signals for that
//! (updated in place, no system call). Signals still queued for a
//! descriptor that was closed or unwatched are dropped. Like edge-triggered
//! epoll, a descriptor raises nothing for what was ready before it was
//! watched: the reactor serves new connections and a listener it watches
//! again once without waiting.

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

use super::poll::events;
use super::reactor::{Inline, Interest, Reactor, Waiter};
use super::{Context, Model, Stats, Variant};
use crate::sys::pollset::{PollSet, POLLIN};
use crate::sys::sigio::{self, Note, SignalQueue};

pub(crate) struct Sigio;

impl Model for Sigio {
    fn readiness(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "sigio"
    }
    fn about(&self) -> &'static str {
        "one thread, O_ASYNC sockets queue a real-time signal per event, read from a signalfd; a full queue falls back to poll"
    }
    /// Also with a queue of two signals, so that nearly every wait
    /// overflows and the poll rescan serves everything.
    fn variants(&self) -> &'static [Variant] {
        &[
            Variant {
                label: "",
                flags: &[],
            },
            Variant {
                label: "overflow",
                flags: &["--sigpending", "2"],
            },
        ]
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let mut reactor =
            Reactor::new(ctx, SigioWaiter::new(ctx.stats)?, Inline)?.listen(&listener, false);
        ctx.ready();
        reactor.run()
    }
}

/// The thread's signal queue, and every routed descriptor in a poll array
/// for the rescan after an overflow.
pub(crate) struct SigioWaiter {
    queue: SignalQueue,
    watched: PollSet,
    /// The descriptors one wait was told of, reused.
    notes: Vec<RawFd>,
    /// `marks[fd]` is the wait in which `fd` was last reported, so a
    /// descriptor signalled several times is reported once.
    marks: Vec<u64>,
    round: u64,
    stats: &'static Stats,
}

impl SigioWaiter {
    /// Blocks the signals on this thread and opens its queue.
    pub fn new(stats: &'static Stats) -> io::Result<Self> {
        Ok(SigioWaiter {
            queue: SignalQueue::open()?,
            watched: PollSet::default(),
            notes: Vec::new(),
            marks: Vec::new(),
            round: 0,
            stats,
        })
    }

    /// Routes `fd`'s signals here; the poll array keeps what it waits for,
    /// for the rescan.
    fn route(&mut self, fd: BorrowedFd<'_>, events: libc::c_short) -> io::Result<()> {
        self.watched.set(fd.as_raw_fd(), events);
        sigio::route(fd)
    }

    /// Adds `fd` to `ready` unless it is unwatched or already there.
    fn report(&mut self, fd: RawFd, ready: &mut Vec<RawFd>) {
        if fd < 0 || !self.watched.contains(fd) {
            return;
        }
        let i = fd as usize;
        if i >= self.marks.len() {
            self.marks.resize(i + 1, 0);
        }
        if self.marks[i] != self.round {
            self.marks[i] = self.round;
            ready.push(fd);
        }
    }
}

impl Waiter for SigioWaiter {
    const CALL: &'static str = "reading the signal queue";

    fn edge(&self) -> bool {
        true
    }

    fn watch_source(&mut self, fd: BorrowedFd<'_>, _exclusive: bool) -> io::Result<()> {
        self.route(fd, POLLIN)
    }

    fn watch(&mut self, fd: BorrowedFd<'_>, interest: Interest) -> io::Result<()> {
        self.route(fd, events(interest))
    }

    /// Signals come for both directions anyway; only the rescan's entry
    /// changes (no system call).
    fn change(&mut self, fd: BorrowedFd<'_>, to: Interest) -> io::Result<()> {
        self.watched.set(fd.as_raw_fd(), events(to));
        Ok(())
    }

    fn unwatch(&mut self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.watched.remove(fd.as_raw_fd());
        sigio::unroute(fd)
    }

    fn forget(&mut self, fd: RawFd) {
        self.watched.remove(fd);
    }

    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<RawFd>) -> io::Result<()> {
        self.round += 1;
        let mut overflow = false;
        let (queue, notes) = (&mut self.queue, &mut self.notes);
        notes.clear();
        queue.take(timeout, |note| match note {
            Note::Ready(fd) => notes.push(fd),
            Note::Overflow => overflow = true,
        })?;
        if overflow {
            // Events were lost: ask every connection what it waits for.
            self.stats.overflowed();
            let n = self.watched.wait(Some(Duration::ZERO))?;
            let found = self.watched.ready(n).map(|(fd, _)| fd);
            self.notes.extend(found);
        }
        for i in 0..self.notes.len() {
            self.report(self.notes[i], ready);
        }
        Ok(())
    }
}
