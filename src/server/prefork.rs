//! `prefork`: a fixed pool of `--workers` processes (64 by default), each
//! blocking in accept(2) on the shared listener and serving one connection at
//! a time (the classic Apache prefork).
//!
//! How it waits: every worker blocks in accept on the same listening socket,
//! inherited across fork; the kernel hands each new connection to one waiting
//! worker. The worker then blocks in read and write on that blocking socket
//! until the peer is done, and accepts again. So at most `--workers`
//! connections are served at once; the rest wait, connected but unserved, in
//! the listen backlog (`--backlog`) until a worker is free, and past that the
//! kernel stops answering new SYNs.
//!
//! What it costs: the forks are paid once at start instead of per connection,
//! and nothing is forked, reaped or closed by the parent per connection: two
//! system calls (accept, close) around the echo itself. The price is a
//! process per worker whether busy or not (task struct, kernel stack, page
//! tables, its `--buffer`), a context switch per wake-up, and a hard cap on
//! concurrency fixed at start.
//!
//! The listener is made blocking before the first fork: O_NONBLOCK belongs to
//! the open file description, which all workers share, so no worker may change
//! it later. Workers count their own connections in shared memory (`opened` in
//! `admit`, `closed` when done). A worker out of descriptors sleeps for
//! [`Gate::PAUSE`] and accepts again, rather than spin on EMFILE.
//!
//! The parent is single-threaded and only minds the pool: it waits on the stop
//! pipe, which SIGCHLD also writes to; a worker that died (a crash, a kill) is
//! reaped and replaced while the server runs. A connection the dead worker was
//! serving cannot be counted as closed by anyone, and shows in
//! `open_at_exit`. On SIGTERM or SIGINT the parent sends SIGTERM to every
//! worker and waits for them all.

use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::time::Duration;

use anyhow::Context as _;

use super::accept::{accept, Accepted, Gate};
use super::children::{run_child, Children};
use super::conn::serve_blocking;
use super::{Context, Model};
use crate::sys::pollset::{self, POLLIN};
use crate::sys::process::Forked;

pub(crate) struct Prefork;

impl Model for Prefork {
    fn knobs(&self) -> &'static [super::knobs::Knob] {
        use super::knobs::{Knob, Values};
        &[Knob {
            field: crate::server::settings::Field::Workers,
            what: "processes in the pool, one connection each",
            values: Values::Count {
                least: 1,
                // A run gives it a process per connection (and 8 spare),
                // as it is meant to run: up to serve's 100,000 workers.
                most: 100_000,
            },
            default: "64",
            short: "processes",
            unsearched: None,
        }]
    }
    fn name(&self) -> &'static str {
        "prefork"
    }
    fn about(&self) -> &'static str {
        "--workers processes (64) block in accept, one connection each at a time; the rest wait in the backlog"
    }
    fn forks(&self) -> bool {
        true
    }
    fn worker_per_connection(&self) -> bool {
        true
    }
    fn handlers(&self, config: &super::Config) -> Option<usize> {
        Some(config.workers)
    }
    fn sleeps_through_waits(&self) -> bool {
        true
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        listener
            .set_nonblocking(false)
            .context("making the listener blocking")?;
        let mut workers = Children::default();
        if let Err(e) = fill(&mut workers, &listener, ctx) {
            let _ = workers.stop(|_| {});
            return Err(e).context(format!(
                "cannot start {} worker processes",
                ctx.config.workers
            ));
        }
        ctx.ready();
        // Set when a replacement could not be forked: try again this soon.
        let mut retry: Option<Duration> = None;
        loop {
            // A SIGTERM that came after the last check has its byte in the
            // pipe, or was drained with a SIGCHLD's below: then its flag is
            // set already, and this check sees it before a poll that nothing
            // would wake.
            if !ctx.shutdown.requested() {
                let mut fds = [pollset::pollfd(ctx.shutdown.fd().as_raw_fd(), POLLIN)];
                match pollset::poll(&mut fds, retry) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e).context("poll"),
                }
            }
            if ctx.shutdown.requested() {
                workers.stop(|_| {}).context("stopping the workers")?;
                return Ok(());
            }
            // Empty the pipe before reaping: a SIGCHLD that arrives after
            // this writes again and wakes the next poll.
            ctx.shutdown.drain();
            workers.reap(|_| {}).context("reaping the workers")?;
            retry = fill(&mut workers, &listener, ctx)
                .err()
                .map(|_| Gate::PAUSE);
        }
    }
}

/// Forks workers until there are `--workers` of them.
fn fill(workers: &mut Children, listener: &TcpListener, ctx: &Context) -> std::io::Result<()> {
    while workers.len() < ctx.config.workers {
        if let Forked::Child = workers.fork()? {
            run_child(ctx, || work(listener, ctx));
        }
    }
    Ok(())
}

/// A worker's life: accept one connection, echo until the peer is done,
/// close, accept the next. Ends only when killed.
fn work(listener: &TcpListener, ctx: &Context) {
    loop {
        match accept(listener, ctx, false) {
            Accepted::Conn(stream) => {
                serve_blocking(stream, ctx.config.buffer, ctx.stats, &ctx.config.work)
            }
            // Out of descriptors or memory. (Empty cannot happen on a
            // blocking listener; pausing keeps it from spinning if it did.)
            Accepted::Exhausted | Accepted::Empty => std::thread::sleep(Gate::PAUSE),
        }
    }
}
