//! `epoll-workers`: `--workers` threads, each an independent epoll loop
//! (the loop of the `epoll` model) owning its own connections.
//!
//! How it waits: like `epoll`, O(ready) per call, but on every core. The
//! interesting part is how the listening socket is shared (`--accept`):
//! - `acceptor`: one thread accepts and hands sockets out round-robin over a
//!   channel plus an eventfd wake-up: one extra cross-thread hand-off and
//!   wake-up per connection, and one thread bounds the accept rate.
//! - `shared`: every worker's epoll watches the listener. Each new connection
//!   wakes every idle worker; all but one find nothing to accept (EAGAIN).
//!   This is the thundering herd, kept on purpose so it can be measured.
//! - `exclusive`: as shared, with EPOLLEXCLUSIVE, so the kernel wakes one
//!   (or a few) waiters per connection.
//! - `reuseport` (default): a listener per worker on the same port with
//!   SO_REUSEPORT; the kernel hashes each connection to one listener, so no
//!   herd and no hand-off, at the price of no balancing by load.

use std::net::{TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::mpsc::{channel, Sender};

use anyhow::Context as _;
use rustix::event::{eventfd, EventfdFlags};

use super::accept::accept_loop;
use super::epoll::{Inbox, Reactor};
use super::run::listen;
use super::{AcceptMode, Config, Context, Model};

pub struct EpollWorkers;

impl Model for EpollWorkers {
    fn name(&self) -> &'static str {
        "epoll-workers"
    }
    fn about(&self) -> &'static str {
        "--workers threads each with its own epoll; --accept acceptor|shared|exclusive|reuseport"
    }
    fn needs_reuseport(&self, config: &Config) -> bool {
        config.accept == AcceptMode::Reuseport
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let cfg = ctx.config;
        let listeners = match cfg.accept {
            AcceptMode::Reuseport => (1..cfg.workers)
                .map(|_| listen(cfg.bind, cfg.backlog, true))
                .collect::<Result<Vec<_>, _>>()
                .context("opening a listener per worker")?,
            _ => Vec::new(),
        };
        // Every worker's epoll and eventfd exists before any worker runs:
        // a running worker may take the last descriptors.
        let mut reactors = Vec::with_capacity(cfg.workers);
        let mut inboxes: Vec<(Sender<TcpStream>, OwnedFd)> = Vec::new();
        for i in 0..cfg.workers {
            let mut reactor = Reactor::new(ctx, cfg.edge)?;
            match cfg.accept {
                AcceptMode::Acceptor => {
                    let (tx, rx) = channel();
                    let wake = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
                        .context("eventfd")?;
                    inboxes.push((tx, wake.try_clone().context("dup eventfd")?));
                    reactor.watch_inbox(Inbox { rx, wake })?;
                }
                AcceptMode::Shared => reactor.watch_listener(&listener, false)?,
                AcceptMode::Exclusive => reactor.watch_listener(&listener, true)?,
                AcceptMode::Reuseport => {
                    let l = if i == 0 { &listener } else { &listeners[i - 1] };
                    reactor.watch_listener(l, false)?;
                }
            }
            reactors.push(reactor);
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = reactors
                .into_iter()
                .enumerate()
                .map(|(i, mut reactor)| {
                    std::thread::Builder::new()
                        .name(format!("epoll-worker-{i}"))
                        .spawn_scoped(scope, move || reactor.run())
                })
                .collect::<Result<_, _>>()
                .context("starting a worker thread")?;
            let accepted = if cfg.accept == AcceptMode::Acceptor {
                acceptor(&listener, ctx, &inboxes)
            } else {
                Ok(())
            };
            // Workers return once the stop pipe is readable, which it stays.
            for h in handles {
                h.join()
                    .map_err(|_| anyhow::anyhow!("a worker thread panicked"))??;
            }
            accepted
        })
    }
}

/// The acceptor thread: accepts until EAGAIN and deals the sockets out
/// round-robin, waking the chosen worker through its eventfd.
fn acceptor(
    listener: &TcpListener,
    ctx: &Context,
    inboxes: &[(Sender<TcpStream>, OwnedFd)],
) -> anyhow::Result<()> {
    let mut next = 0;
    accept_loop(listener, ctx, true, |s| {
        let (tx, wake) = &inboxes[next % inboxes.len()];
        next += 1;
        if tx.send(s).is_ok() {
            let _ = rustix::io::write(wake, &1u64.to_ne_bytes());
        } else {
            ctx.stats.closed();
        }
    })
    .context("acceptor")
}
