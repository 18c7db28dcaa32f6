//! `epoll-workers`: `--workers` threads, each an independent epoll loop
//! (the shared [`reactor`](super::reactor) with the `epoll` waiter) owning
//! its own connections.
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
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::mpsc::{channel, Receiver, Sender};

use anyhow::Context as _;
use rustix::event::{eventfd, EventfdFlags};

use super::accept::accept_loop;
use super::epoll::EpollWaiter;
use super::reactor::{Core, Handler, Inline, Reactor, Waiter};
use super::run::listen;
use super::start::{threads_fit, StartLine, STD_STACK};
use super::{AcceptMode, Config, Context, Model, Variant};

pub(crate) struct EpollWorkers;

impl Model for EpollWorkers {
    fn readiness(&self) -> bool {
        true
    }
    fn knobs(&self) -> &'static [super::knobs::Knob] {
        use super::knobs::{Knob, Values, EDGE, LOOPS};
        &[
            LOOPS,
            Knob {
                field: crate::server::settings::Field::Accept,
                what: "how the loops share the listener",
                values: Values::Choice(&["acceptor", "shared", "exclusive", "reuseport"]),
                default: "reuseport",
                short: "accept",
                unsearched: None,
            },
            EDGE,
        ]
    }
    fn name(&self) -> &'static str {
        "epoll-workers"
    }
    fn handlers(&self, config: &super::Config) -> Option<usize> {
        Some(config.workers.max(1))
    }
    fn about(&self) -> &'static str {
        "--workers threads each with its own epoll; --accept acceptor|shared|exclusive|reuseport"
    }
    fn needs_reuseport(&self, config: &Config) -> bool {
        config.accept == AcceptMode::Reuseport
    }
    fn variants(&self) -> &'static [Variant] {
        &[
            Variant {
                label: "reuseport",
                flags: &["--workers", "2", "--accept", "reuseport"],
            },
            Variant {
                label: "acceptor",
                flags: &["--workers", "2", "--accept", "acceptor"],
            },
            Variant {
                label: "shared",
                flags: &["--workers", "2", "--accept", "shared"],
            },
            Variant {
                label: "exclusive_edge",
                flags: &["--workers", "2", "--accept", "exclusive", "--edge"],
            },
        ]
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let cfg = ctx.config;
        if cfg.accept == AcceptMode::Acceptor {
            return with_acceptor(&listener, ctx);
        }
        let listeners = match cfg.accept {
            AcceptMode::Reuseport => (1..cfg.workers)
                .map(|_| listen(cfg.bind, cfg.backlog, true))
                .collect::<Result<Vec<_>, _>>()
                .with_context(|| {
                    format!("cannot open a listener for each of {} loops", cfg.workers)
                })?,
            _ => Vec::new(),
        };
        let workers = (0..cfg.workers)
            .map(|i| {
                Ok(Worker {
                    ep: EpollWaiter::instance()?,
                    handler: Inline,
                    listener: Some(match cfg.accept {
                        AcceptMode::Exclusive => (&listener, true),
                        AcceptMode::Reuseport if i > 0 => (&listeners[i - 1], false),
                        _ => (&listener, false),
                    }),
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .with_context(|| format!("cannot set up {} epoll loops", cfg.workers))?;
        run_workers(ctx, workers, || Ok(()))
    }
}

/// What one worker thread starts from. Its epoll instance is made before
/// any worker runs: a running worker may take the last descriptors.
struct Worker<'a, H> {
    ep: OwnedFd,
    handler: H,
    listener: Option<(&'a TcpListener, bool)>,
}

/// `--accept acceptor`: the workers serve what one accepting thread deals
/// out to their inboxes.
fn with_acceptor(listener: &TcpListener, ctx: &Context) -> anyhow::Result<()> {
    let n = ctx.config.workers;
    let mut workers = Vec::with_capacity(n);
    let mut inboxes: Vec<(Sender<TcpStream>, OwnedFd)> = Vec::new();
    let cannot = || format!("cannot set up {n} epoll loops");
    for _ in 0..n {
        let (tx, rx) = channel();
        let wake = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
            .context("eventfd")
            .with_context(cannot)?;
        inboxes.push((
            tx,
            wake.try_clone()
                .context("dup eventfd")
                .with_context(cannot)?,
        ));
        workers.push(Worker {
            ep: EpollWaiter::instance().with_context(cannot)?,
            handler: Inbox { rx, wake },
            listener: None,
        });
    }
    run_workers(ctx, workers, || acceptor(listener, ctx, &inboxes))
}

/// Runs each worker's loop on a thread of its own and `main` on this one,
/// and returns once all of them have (the workers, once a stop is
/// requested). Every loop is set up before any runs and before READY
/// ([`StartLine`]); if one cannot start or set up, none runs, the ones
/// started return, and so does the error.
fn run_workers<H: Handler + Send>(
    ctx: &Context,
    workers: Vec<Worker<'_, H>>,
    main: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let edge = ctx.config.edge;
    let n = workers.len();
    let cannot = || format!("cannot start {n} epoll loops");
    threads_fit(n, STD_STACK)
        .map_err(anyhow::Error::msg)
        .with_context(cannot)?;
    // Every worker and this thread.
    let line = StartLine::new(n + 1);
    let line = &line;
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        let mut spawned = Ok(());
        for (i, w) in workers.into_iter().enumerate() {
            let started = std::thread::Builder::new()
                .name(format!("epoll-worker-{i}"))
                .spawn_scoped(scope, move || {
                    let made = Reactor::new(ctx, EpollWaiter::on(w.ep, edge), w.handler);
                    let made = match w.listener {
                        Some((l, exclusive)) => made.map(|r| r.listen(l, exclusive)),
                        None => made,
                    };
                    if line.arrive(made.is_ok()) {
                        made?.run()
                    } else {
                        made.map(drop)
                    }
                });
            match started {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawned = Err(e.into());
                    break;
                }
            }
        }
        // Releases the workers started either way.
        let all = line.arrive(spawned.is_ok());
        let ran = if all {
            ctx.ready();
            main()
        } else {
            Ok(())
        };
        // Workers return once the stop pipe is readable, which it stays.
        let mut result = spawned;
        for h in handles {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("a worker thread panicked")));
            if result.is_ok() {
                result = r;
            }
        }
        if !all {
            result = result.with_context(cannot);
        }
        result.and(ran)
    })
}

/// Sockets handed to a worker by the acceptor thread, with the eventfd that
/// wakes it.
struct Inbox {
    rx: Receiver<TcpStream>,
    wake: OwnedFd,
}

impl Handler for Inbox {
    fn wake(&self) -> Option<BorrowedFd<'_>> {
        Some(self.wake.as_fd())
    }

    fn woken<W: Waiter>(&mut self, core: &mut Core<'_, W>) -> anyhow::Result<()> {
        let mut buf = [0u8; 8];
        let _ = rustix::io::read(&self.wake, &mut buf);
        for stream in self.rx.try_iter() {
            core.add(stream);
        }
        Ok(())
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
