//! `epoll`: one thread, one epoll instance, every socket registered once.
//!
//! How it waits: `epoll_wait` returns only the descriptors that are ready, so
//! a call costs O(ready), not O(watched) as select and poll do; the price is
//! an `epoll_ctl` syscall whenever interest changes (here: only when a
//! connection switches between waiting to read and waiting to write). A
//! closed socket leaves the interest list by itself (it is in one epoll
//! only and never duplicated), so closing costs no `epoll_ctl`.
//!
//! Level-triggered (default): a ready socket is reported on every call until
//! drained, so a connection may stop after a read budget and be told again.
//! Edge-triggered (`--edge`): each socket is registered once for both
//! directions and reported only on a change, so the loop must read until
//! EAGAIN; a connection that used up its budget goes on the loop's "again"
//! list and is serviced on the next round (with a zero timeout) instead of
//! waiting for an edge that will never come.
//!
//! The loop around the wait is the shared [`reactor`](super::reactor); this
//! file is only the waiter (also the per-thread waiter of `epoll-workers`).

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

use anyhow::Context as _;
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::event::Timespec;

use super::reactor::{Inline, Interest, Reactor, Waiter};
use super::{Context, Model, Variant};

pub(crate) struct Epoll;

impl Model for Epoll {
    fn readiness(&self) -> bool {
        true
    }
    fn knobs(&self) -> &'static [super::knobs::Knob] {
        &[super::knobs::EDGE]
    }
    fn name(&self) -> &'static str {
        "epoll"
    }
    fn about(&self) -> &'static str {
        "one thread, epoll_wait returns only ready sockets: O(ready) per call; --edge for edge-triggered"
    }
    fn variants(&self) -> &'static [Variant] {
        &[
            Variant {
                label: "",
                flags: &[],
            },
            Variant {
                label: "edge",
                flags: &["--edge"],
            },
        ]
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let mut reactor =
            Reactor::new(ctx, EpollWaiter::new(ctx.config.edge)?, Inline)?.listen(&listener, false);
        ctx.ready();
        reactor.run()
    }
}

/// Events fetched per `epoll_wait`.
const BATCH: usize = 1024;

/// One epoll instance and the buffer its events arrive in.
pub(crate) struct EpollWaiter {
    ep: OwnedFd,
    edge: bool,
    events: Vec<Event>,
}

impl EpollWaiter {
    /// A new epoll instance; `edge` registers connections edge-triggered.
    pub fn new(edge: bool) -> anyhow::Result<Self> {
        Ok(Self::on(Self::instance()?, edge))
    }

    /// An epoll descriptor, to be made a waiter later (on the thread that
    /// waits: the event buffer cannot move between threads).
    pub(crate) fn instance() -> anyhow::Result<OwnedFd> {
        epoll::create(CreateFlags::CLOEXEC).context("epoll_create")
    }

    /// The waiter of the epoll instance `ep`.
    pub fn on(ep: OwnedFd, edge: bool) -> Self {
        let empty = Event {
            flags: EventFlags::empty(),
            data: EventData::new_u64(0),
        };
        EpollWaiter {
            ep,
            edge,
            events: vec![empty; BATCH],
        }
    }

    fn add(&self, fd: BorrowedFd<'_>, flags: EventFlags) -> io::Result<()> {
        let data = EventData::new_u64(fd.as_raw_fd() as u64);
        Ok(epoll::add(&self.ep, fd, data, flags)?)
    }
}

fn flags(interest: Interest) -> EventFlags {
    match interest {
        Interest::Read => EventFlags::IN,
        Interest::Write => EventFlags::OUT,
    }
}

impl Waiter for EpollWaiter {
    const CALL: &'static str = "epoll_wait";

    fn edge(&self) -> bool {
        self.edge
    }

    fn watch_source(&mut self, fd: BorrowedFd<'_>, exclusive: bool) -> io::Result<()> {
        let flags = if exclusive {
            EventFlags::IN | EventFlags::EXCLUSIVE
        } else {
            EventFlags::IN
        };
        self.add(fd, flags)
    }

    fn watch(&mut self, fd: BorrowedFd<'_>, interest: Interest) -> io::Result<()> {
        if self.edge {
            self.add(fd, EventFlags::IN | EventFlags::OUT | EventFlags::ET)
        } else {
            self.add(fd, flags(interest))
        }
    }

    fn change(&mut self, fd: BorrowedFd<'_>, to: Interest) -> io::Result<()> {
        if self.edge {
            return Ok(()); // Registered for both directions once.
        }
        let data = EventData::new_u64(fd.as_raw_fd() as u64);
        Ok(epoll::modify(&self.ep, fd, data, flags(to))?)
    }

    /// A delete: EPOLL_CTL_MOD is refused for EPOLLEXCLUSIVE, so a paused
    /// listener is deleted and added again.
    fn unwatch(&mut self, fd: BorrowedFd<'_>) -> io::Result<()> {
        Ok(epoll::delete(&self.ep, fd)?)
    }

    fn forget(&mut self, _fd: RawFd) {}

    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<RawFd>) -> io::Result<()> {
        // A timeout past what a timespec holds is no timeout.
        let timeout = timeout.and_then(|d| Timespec::try_from(d).ok());
        let n = epoll::wait(&self.ep, &mut self.events[..], timeout.as_ref())?;
        ready.extend(self.events[..n].iter().map(|e| e.data.u64() as RawFd));
        Ok(())
    }
}
