//! `epoll`: one thread, one epoll instance, every socket registered once.
//!
//! How it waits: `epoll_wait` returns only the descriptors that are ready, so
//! a call costs O(ready), not O(watched) as select and poll do; the price is
//! an `epoll_ctl` syscall whenever interest changes (here: only when a
//! connection switches between waiting to read and waiting to write).
//!
//! Level-triggered (default): a ready socket is reported on every call until
//! drained, so a connection may stop after a read budget and be told again.
//! Edge-triggered (`--edge`): each socket is registered once for both
//! directions and reported only on a change, so the loop must read until
//! EAGAIN; a connection that used up its budget goes on a local "again" list
//! and is serviced on the next round (with a zero timeout) instead of waiting
//! for an edge that will never come.
//!
//! The loop here is also the per-thread loop of `epoll-workers`.

use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::mpsc::Receiver;

use anyhow::Context as _;
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use rustix::event::Timespec;

use super::accept::{accept_all, Gate};
use super::conn::Want;
use super::table::{Step, Table};
use super::{Context, Model};

pub struct Epoll;

impl Model for Epoll {
    fn name(&self) -> &'static str {
        "epoll"
    }
    fn about(&self) -> &'static str {
        "one thread, epoll_wait returns only ready sockets: O(ready) per call; --edge for edge-triggered"
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let mut ev = Reactor::new(ctx, ctx.config.edge)?;
        ev.watch_listener(&listener, false)?;
        ev.run()
    }
}

const LISTENER: u64 = u64::MAX;
const SHUTDOWN: u64 = u64::MAX - 1;
const INBOX: u64 = u64::MAX - 2;

/// Events fetched per `epoll_wait`.
const BATCH: usize = 1024;

/// Sockets handed to a worker by an acceptor thread, with the eventfd that
/// wakes it.
pub(super) struct Inbox {
    pub rx: Receiver<TcpStream>,
    pub wake: OwnedFd,
}

/// One epoll loop: its connections, optionally a listener, optionally an
/// inbox of sockets accepted elsewhere.
pub(super) struct Reactor<'a> {
    ep: OwnedFd,
    ctx: &'a Context<'a>,
    edge: bool,
    table: Table,
    listener: Option<(&'a TcpListener, EventFlags)>,
    listening: bool,
    gate: Gate,
    inbox: Option<Inbox>,
    again: Vec<RawFd>,
}

impl<'a> Reactor<'a> {
    pub fn new(ctx: &'a Context<'a>, edge: bool) -> anyhow::Result<Self> {
        let ep = epoll::create(CreateFlags::CLOEXEC).context("epoll_create")?;
        epoll::add(
            &ep,
            ctx.shutdown.fd(),
            EventData::new_u64(SHUTDOWN),
            EventFlags::IN,
        )
        .context("watching the stop signal")?;
        Ok(Reactor {
            ep,
            ctx,
            edge,
            table: Table::new(ctx.config.buffer),
            listener: None,
            listening: false,
            gate: Gate::default(),
            inbox: None,
            again: Vec::new(),
        })
    }

    /// Accepts from `listener` in this loop; `exclusive` sets EPOLLEXCLUSIVE
    /// (one waiter woken per connection instead of all).
    pub fn watch_listener(
        &mut self,
        listener: &'a TcpListener,
        exclusive: bool,
    ) -> anyhow::Result<()> {
        let flags = if exclusive {
            EventFlags::IN | EventFlags::EXCLUSIVE
        } else {
            EventFlags::IN
        };
        self.listener = Some((listener, flags));
        self.arm_listener(true)
    }

    /// Serves sockets that arrive through `inbox` (the acceptor hand-off).
    pub fn watch_inbox(&mut self, inbox: Inbox) -> anyhow::Result<()> {
        epoll::add(
            &self.ep,
            &inbox.wake,
            EventData::new_u64(INBOX),
            EventFlags::IN,
        )
        .context("watching the inbox")?;
        self.inbox = Some(inbox);
        Ok(())
    }

    /// Adds or removes the listener. EPOLL_CTL_MOD is refused for
    /// EPOLLEXCLUSIVE, so pausing is a delete and resuming an add.
    fn arm_listener(&mut self, on: bool) -> anyhow::Result<()> {
        let Some((l, flags)) = self.listener else {
            return Ok(());
        };
        if on && !self.listening {
            epoll::add(&self.ep, l, EventData::new_u64(LISTENER), flags)
                .context("watching the listener")?;
        } else if !on && self.listening {
            epoll::delete(&self.ep, l).context("pausing the listener")?;
        }
        self.listening = on;
        Ok(())
    }

    /// Runs until a stop is requested.
    pub fn run(&mut self) -> anyhow::Result<()> {
        let mut events = vec![
            Event {
                flags: EventFlags::empty(),
                data: EventData::new_u64(0),
            };
            BATCH
        ];
        loop {
            let open = self.gate.is_open();
            self.arm_listener(open)?;
            let timeout = if !self.again.is_empty() {
                Some(Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                })
            } else {
                self.gate
                    .timeout()
                    .map(|d| Timespec::try_from(d).unwrap_or_default())
            };
            let n = match epoll::wait(&self.ep, &mut events[..], timeout.as_ref()) {
                Ok(n) => n,
                Err(rustix::io::Errno::INTR) => 0,
                Err(e) => return Err(e).context("epoll_wait"),
            };
            for ev in &events[..n] {
                match ev.data.u64() {
                    SHUTDOWN => {
                        if self.ctx.shutdown.requested() {
                            return Ok(());
                        }
                    }
                    LISTENER => self.accept()?,
                    INBOX => self.take_inbox()?,
                    fd => self.service(fd as RawFd)?,
                }
            }
            for fd in std::mem::take(&mut self.again) {
                self.service(fd)?;
            }
        }
    }

    fn accept(&mut self) -> anyhow::Result<()> {
        let Some((l, _)) = self.listener else {
            return Ok(());
        };
        let mut fresh = Vec::new();
        accept_all(l, self.ctx, true, &mut self.gate, |s| fresh.push(s));
        for s in fresh {
            self.add(s)?;
        }
        Ok(())
    }

    fn take_inbox(&mut self) -> anyhow::Result<()> {
        let Some(inbox) = &self.inbox else {
            return Ok(());
        };
        let mut buf = [0u8; 8];
        let _ = rustix::io::read(&inbox.wake, &mut buf);
        let fresh: Vec<TcpStream> = inbox.rx.try_iter().collect();
        for s in fresh {
            self.add(s)?;
        }
        Ok(())
    }

    /// Registers a new connection: for reading (level) or both ways (edge).
    fn add(&mut self, stream: TcpStream) -> anyhow::Result<()> {
        let flags = if self.edge {
            EventFlags::IN | EventFlags::OUT | EventFlags::ET
        } else {
            EventFlags::IN
        };
        let fd = stream.as_raw_fd();
        if let Err(e) = epoll::add(
            &self.ep,
            stream.as_fd(),
            EventData::new_u64(fd as u64),
            flags,
        ) {
            // Out of kernel memory for epoll items: drop this connection.
            self.ctx.stats.conn_failed(&e.into());
            self.ctx.stats.closed();
            return Ok(());
        }
        self.table.insert(stream);
        // Data may have arrived before registration; a level-triggered wait
        // would report it, an edge-triggered one might not.
        if self.edge {
            self.again.push(fd);
        }
        Ok(())
    }

    fn service(&mut self, fd: RawFd) -> anyhow::Result<()> {
        let before = self.table.get(fd).map(|s| s.want);
        match self.table.service(fd, self.ctx.stats) {
            Step::Closed => self.gate.resume(),
            Step::Wait(Want::More) if self.edge => self.again.push(fd),
            Step::Wait(want) if !self.edge => {
                let want = if want == Want::Write {
                    Want::Write
                } else {
                    Want::Read
                };
                let was = if before == Some(Want::Write) {
                    Want::Write
                } else {
                    Want::Read
                };
                if want != was {
                    let flags = if want == Want::Write {
                        EventFlags::OUT
                    } else {
                        EventFlags::IN
                    };
                    if let Some(slot) = self.table.get(fd) {
                        epoll::modify(
                            &self.ep,
                            slot.stream.as_fd(),
                            EventData::new_u64(fd as u64),
                            flags,
                        )
                        .context("epoll_ctl MOD")?;
                    }
                }
            }
            Step::Wait(_) => {}
        }
        Ok(())
    }
}
