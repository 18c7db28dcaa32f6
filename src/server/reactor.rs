//! The readiness reactor: the one loop of every model that waits for
//! readiness (`busy`, `select`, `poll`, `sigio`, `epoll`, `epoll-workers`,
//! `hybrid`), as redis's `ae.c` is one loop over `ae_select.c` and
//! `ae_epoll.c`.
//!
//! The loop owns everything those models share: the stop pipe, the listener
//! (unwatched while the accept [`Gate`] is paused after EMFILE), accepting,
//! the connection [`Table`], interest changes, the list of connections to
//! serve again without waiting (edge-triggered waiting), EINTR (a wait
//! interrupted by a signal returns no events), interval control
//! (`--interval`, [`Pace`]), the timers of requests that wait (`--work
//! wait:`), the wait counts of the summary, and errors. A model brings two
//! things:
//!
//! - a [`Waiter`]: how it waits. One small file per mechanism, each stating
//!   its cost: `busy.rs` (no wait at all), `select.rs`, `poll.rs`,
//!   `sigio.rs` (a real-time signal queue), `epoll.rs`.
//! - a [`Handler`]: who runs the echo on a ready connection. [`Inline`] runs
//!   it on the loop's thread; `epoll-workers` adds an inbox of sockets
//!   accepted by another thread; `hybrid` hands the connection to a pool.
//!
//! Both are type parameters, so each model's loop is compiled for its own
//! waiter and handler: no virtual call and no branch on the mechanism per
//! event. What the loop adds to the waiter's own system call is a copy of
//! the ready descriptors into a reused vector (a few nanoseconds each), so a
//! handler may change the watched set while the batch is being served.
//!
//! Timers (`--work wait:D`): a connection whose request waits is taken off
//! the watched set (a level-triggered waiter would report its unread bytes
//! again and again; an edge-triggered one keeps it) and put in a heap by
//! the instant its wait ends; the wait's timeout is cut to the earliest,
//! and due connections are handed to the handler as if ready. With no
//! work the heap stays empty and costs one branch per wait. A timer is as
//! precise as the waiter's timeout: nanoseconds for epoll
//! (`epoll_pwait2`), microseconds for select, milliseconds (rounded up)
//! for poll, plus the kernel's timer slack (50 µs by default).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::accept::{accept_all, Gate};
use super::conn::{Reads, Want};
use super::pace::Pace;
use super::table::{Served, Step, Table};
use super::Context;

/// One loop's waits and the descriptors they returned, added to its
/// server's [`Stats`](super::Stats) when dropped.
struct Waited<'a> {
    stats: &'a super::Stats,
    waits: u64,
    events: u64,
}

impl Drop for Waited<'_> {
    fn drop(&mut self) {
        self.stats.waited(self.waits, self.events);
    }
}

/// What a watched connection waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interest {
    Read,
    Write,
}

impl Interest {
    /// What a connection that wants `want` waits for: `More` (read budget
    /// used up) is reading again, which a level-triggered waiter reports at
    /// once while data is waiting.
    pub fn of(want: Want) -> Interest {
        if want == Want::Write {
            Interest::Write
        } else {
            Interest::Read
        }
    }
}

/// A wait mechanism: the descriptors it watches and one call that waits.
pub(crate) trait Waiter {
    /// The system call, to name it in errors.
    const CALL: &'static str;

    /// Whether connections are reported on edges: registered once for both
    /// directions and reported only on a change, so a connection that used
    /// up its read budget is served again without waiting.
    fn edge(&self) -> bool {
        false
    }

    /// Watches one of the loop's own descriptors for reading,
    /// level-triggered: the stop pipe, a listener, a wake-up. `exclusive`
    /// asks that one waiter of several be woken per event (EPOLLEXCLUSIVE;
    /// a mechanism without it ignores it).
    fn watch_source(&mut self, fd: BorrowedFd<'_>, exclusive: bool) -> io::Result<()>;

    /// Starts watching a connection.
    fn watch(&mut self, fd: BorrowedFd<'_>, interest: Interest) -> io::Result<()>;

    /// A watched connection now waits for `to` instead of the other.
    fn change(&mut self, fd: BorrowedFd<'_>, to: Interest) -> io::Result<()>;

    /// Stops watching a descriptor that stays open (a paused listener, a
    /// connection handed to another thread).
    fn unwatch(&mut self, fd: BorrowedFd<'_>) -> io::Result<()>;

    /// A watched connection was closed.
    fn forget(&mut self, fd: RawFd);

    /// Waits up to `timeout` (`None`: until something is ready) and puts the
    /// ready descriptors in `ready`.
    fn wait(&mut self, timeout: Option<Duration>, ready: &mut Vec<RawFd>) -> io::Result<()>;
}

/// Who runs the echo on a ready connection.
pub(crate) trait Handler {
    /// A descriptor the loop watches for this handler; [`Handler::woken`]
    /// runs when it is readable.
    fn wake(&self) -> Option<BorrowedFd<'_>> {
        None
    }

    /// The wake-up descriptor is readable.
    fn woken<W: Waiter>(&mut self, _core: &mut Core<'_, W>) -> anyhow::Result<()> {
        Ok(())
    }

    /// A watched connection is ready.
    fn ready<W: Waiter>(&mut self, core: &mut Core<'_, W>, fd: RawFd) -> anyhow::Result<()> {
        core.service(fd)
    }
}

/// The handler of the single-threaded loops: echo on the loop's thread.
pub(crate) struct Inline;

impl Handler for Inline {}

/// What handlers work on: the waiter, the connections and the accept gate.
pub(crate) struct Core<'a, W> {
    ctx: &'a Context<'a>,
    waiter: W,
    table: Table,
    gate: Gate,
    /// Connections to serve again before the next wait blocks.
    again: Vec<RawFd>,
    /// Connections whose request waits, by the instant it ends.
    timers: BinaryHeap<Reverse<(Instant, RawFd)>>,
}

impl<W: Waiter> Core<'_, W> {
    /// Serves a new connection: watched for reading. One the waiter cannot
    /// take (out of kernel memory for epoll items, past select's bitmap) is
    /// counted as failed and closed.
    pub fn add(&mut self, stream: TcpStream) {
        let fd = stream.as_raw_fd();
        if let Err(e) = self.waiter.watch(stream.as_fd(), Interest::Read) {
            self.ctx.stats.conn_failed(&e);
            self.ctx.stats.closed();
            return;
        }
        self.table.insert(stream);
        // Data may have arrived before registration; a level-triggered wait
        // reports it, an edge-triggered one might not.
        if self.waiter.edge() {
            self.again.push(fd);
        }
    }

    /// Whether a connection that wants `want` is in the waiter's set: not
    /// while its request waits, unless the waiter is edge-triggered (it
    /// stays registered for both directions and reports only changes).
    fn watched(&self, want: Want) -> bool {
        self.waiter.edge() || !matches!(want, Want::Wait(_))
    }

    /// Echoes on a ready connection as far as the socket allows, then
    /// watches it for what it wants next (or sets its timer), or forgets it
    /// once closed.
    pub(crate) fn service(&mut self, fd: RawFd) -> anyhow::Result<()> {
        let Some(before) = self.table.get(fd).map(|s| s.want) else {
            return Ok(()); // Closed earlier in this batch.
        };
        // A level-triggered waiter reports the socket again for whatever
        // one short read left; an edge-triggered one would not.
        let reads = if self.waiter.edge() {
            Reads::ToEmpty
        } else {
            Reads::UntilShort
        };
        let step = self.table.service(fd, reads, self.ctx.stats);
        self.follow(fd, before, step)
    }

    /// After a connection was served: what it waited for `before`, and
    /// what became of it.
    fn follow(&mut self, fd: RawFd, before: Want, step: Step) -> anyhow::Result<()> {
        match step {
            Step::Closed => {
                self.waiter.forget(fd);
                self.gate.resume();
            }
            Step::Wait(Want::More) if self.waiter.edge() => self.again.push(fd),
            Step::Wait(want) => {
                if let Want::Wait(until) = want {
                    // Told again of a connection already waiting (an
                    // edge), it keeps its one timer.
                    if before != want {
                        self.timers.push(Reverse((until, fd)));
                    }
                }
                let Some(slot) = self.table.get(fd) else {
                    return Ok(());
                };
                let now = Interest::of(want);
                match (self.watched(before), self.watched(want)) {
                    (true, true) if now != Interest::of(before) => self
                        .waiter
                        .change(slot.stream.as_fd(), now)
                        .context("changing a connection's interest")?,
                    (true, false) => self
                        .waiter
                        .unwatch(slot.stream.as_fd())
                        .context("setting a connection aside while it waits")?,
                    (false, true) => self
                        .waiter
                        .watch(slot.stream.as_fd(), now)
                        .context("watching a connection after its wait")?,
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Takes a connection out of the loop (no longer watched) so another
    /// thread can serve it.
    pub fn take(&mut self, fd: RawFd) -> anyhow::Result<Option<Served>> {
        let Some(slot) = self.table.take(fd) else {
            return Ok(None);
        };
        if self.watched(slot.want) {
            self.waiter
                .unwatch(slot.stream.as_fd())
                .context("handing a connection over")?;
        }
        Ok(Some(slot))
    }

    /// Takes back a connection served elsewhere: watched for what it wants
    /// next (or timed while its request waits), or closed (its close
    /// already counted) when it is finished.
    pub(crate) fn put_back(&mut self, slot: Served, step: Step) -> anyhow::Result<()> {
        match step {
            Step::Closed => {
                drop(slot);
                self.gate.resume();
            }
            Step::Wait(want) => {
                if let Want::Wait(until) = want {
                    self.timers.push(Reverse((until, slot.stream.as_raw_fd())));
                }
                if self.watched(want) {
                    self.waiter
                        .watch(slot.stream.as_fd(), Interest::of(want))
                        .context("taking a connection back")?;
                }
                self.table.put(slot);
            }
        }
        Ok(())
    }

    /// How long until the earliest timer is due (`None`: no timer).
    fn next_timer(&self) -> Option<Duration> {
        self.timers
            .peek()
            .map(|Reverse((t, _))| t.saturating_duration_since(Instant::now()))
    }

    /// The connections whose timers are due, in order, into `due`.
    fn due(&mut self, due: &mut Vec<RawFd>) {
        if self.timers.is_empty() {
            return;
        }
        let now = Instant::now();
        while let Some(&Reverse((t, fd))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            // Only a connection still waiting for this instant (one served
            // since, or closed, has no business here).
            if self.table.get(fd).is_some_and(|s| s.want == Want::Wait(t)) {
                due.push(fd);
            }
        }
    }
}

/// One readiness loop: a waiter, a handler, optionally a listener.
pub(crate) struct Reactor<'a, W, H> {
    core: Core<'a, W>,
    handler: H,
    /// The listener and whether it is watched with `exclusive`.
    listener: Option<(&'a TcpListener, bool)>,
    listening: bool,
    /// Accepting stopped with connections left in the backlog (EMFILE):
    /// an edge-triggered waiter will not report them again.
    backlog: bool,
    /// Connections accepted in one burst, before they are added.
    fresh: Vec<TcpStream>,
}

impl<'a, W: Waiter, H: Handler> Reactor<'a, W, H> {
    /// A loop that watches the stop pipe and the handler's wake-up.
    pub fn new(ctx: &'a Context<'a>, mut waiter: W, handler: H) -> anyhow::Result<Self> {
        waiter
            .watch_source(ctx.shutdown.fd(), false)
            .context("watching the stop signal")?;
        if let Some(fd) = handler.wake() {
            waiter
                .watch_source(fd, false)
                .context("watching the wake-up")?;
        }
        Ok(Reactor {
            core: Core {
                ctx,
                waiter,
                table: Table::new(ctx.config.buffer, &ctx.config.work),
                gate: Gate::default(),
                again: Vec::new(),
                timers: BinaryHeap::new(),
            },
            handler,
            listener: None,
            listening: false,
            backlog: false,
            fresh: Vec::new(),
        })
    }

    /// Accepts from `listener` in this loop; `exclusive` as in
    /// [`Waiter::watch_source`].
    pub(crate) fn listen(mut self, listener: &'a TcpListener, exclusive: bool) -> Self {
        self.listener = Some((listener, exclusive));
        self
    }

    /// Runs until a stop is requested.
    pub fn run(&mut self) -> anyhow::Result<()> {
        let ctx = self.core.ctx;
        let stop = ctx.shutdown.fd().as_raw_fd();
        let wake = self.handler.wake().map(|fd| fd.as_raw_fd());
        let listen = self.listener.map(|(l, _)| l.as_raw_fd());
        let mut ready = Vec::new();
        let mut due = Vec::new();
        let mut pace = Pace::new(ctx.config.interval);
        // Counted here and added to the shared counters once, when the
        // loop ends however it ends: no atomic per wait.
        let mut waited = Waited {
            stats: ctx.stats,
            waits: 0,
            events: 0,
        };
        loop {
            // An edge-triggered waiter reports nothing for connections
            // already in the backlog: of a listener it starts watching, or
            // left there when descriptors ran out. Accept them now.
            let armed = self.arm_listener()?;
            if self.core.waiter.edge() && self.listening && (armed || self.backlog) {
                self.accept();
            }
            pace.before_wait();
            let timeout = if self.core.again.is_empty() {
                match (self.core.gate.timeout(), self.core.next_timer()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            } else {
                Some(Duration::ZERO)
            };
            ready.clear();
            match self.core.waiter.wait(timeout, &mut ready) {
                // A signal: no events; its byte in the stop pipe wakes the
                // next wait.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).context(W::CALL),
                Ok(()) => {
                    waited.waits += 1;
                    waited.events += ready.len() as u64;
                }
            }
            for &fd in &ready {
                if fd == stop {
                    if ctx.shutdown.requested() {
                        return Ok(());
                    }
                    // Not a stop: empty the pipe so a level-triggered wait
                    // does not report it again and again.
                    ctx.shutdown.drain();
                } else if Some(fd) == listen {
                    self.accept();
                } else if Some(fd) == wake {
                    self.handler.woken(&mut self.core)?;
                } else {
                    self.handler.ready(&mut self.core, fd)?;
                }
            }
            for fd in std::mem::take(&mut self.core.again) {
                self.core.service(fd)?;
            }
            self.core.due(&mut due);
            for fd in due.drain(..) {
                self.handler.ready(&mut self.core, fd)?;
            }
        }
    }

    /// Watches the listener while the gate is open, and not while paused;
    /// whether it has just started watching it.
    fn arm_listener(&mut self) -> anyhow::Result<bool> {
        let Some((listener, exclusive)) = self.listener else {
            return Ok(false);
        };
        let open = self.core.gate.is_open();
        if open && !self.listening {
            self.core
                .waiter
                .watch_source(listener.as_fd(), exclusive)
                .context("watching the listener")?;
        } else if !open && self.listening {
            self.core
                .waiter
                .unwatch(listener.as_fd())
                .context("pausing the listener")?;
        }
        let armed = open && !self.listening;
        self.listening = open;
        Ok(armed)
    }

    /// Accepts until the backlog is empty (or descriptors run out, which
    /// pauses the gate) and serves every new connection.
    fn accept(&mut self) {
        let Some((listener, _)) = self.listener else {
            return;
        };
        let core = &mut self.core;
        let fresh = &mut self.fresh;
        accept_all(listener, core.ctx, true, &mut core.gate, |s| fresh.push(s));
        self.backlog = core.gate.timeout().is_some();
        for stream in fresh.drain(..) {
            core.add(stream);
        }
    }
}
