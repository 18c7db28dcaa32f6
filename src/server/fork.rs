//! `fork`: a process per connection, blocking I/O (the classic inetd and
//! early-Apache design).
//!
//! How it waits: the parent is a single thread in poll(2) on the listener and
//! the stop pipe. For each connection it accepts a blocking socket and forks;
//! the child blocks in read and write on that one socket, so, as with
//! `threads`, the kernel scheduler is the event loop. The parent closes its
//! copy of the socket at once, so its descriptor count does not grow with the
//! connections; each child has its own descriptor table.
//!
//! What it costs: a fork per connection (copying the parent's page tables and
//! descriptor table; pages are shared copy-on-write), then a process per
//! connection: a task struct, a kernel stack, page tables, the pages the child
//! writes (its `--buffer` among them), and a context switch per wake-up. The
//! end costs an exit, a SIGCHLD (a pipe write and a wake-up of the parent) and
//! a wait4. In return, connections are isolated: a crash takes down one.
//! Where the host's DAMON watches physical memory, each child also costs
//! the monitor: it checks a page by visiting every process that maps it,
//! and every child maps its parent's pages, so its CPU grows with the
//! children ([`crate::env::damon`]; `c10k run` warns from 5,000
//! connections), for the plainest C fork server as for this one. What
//! made this one pay more was the parent's memory written between two
//! forks: each such page leaves a copy in every child, filed under the
//! parent; the parent now writes no heap there and each child takes its
//! own stack pages ([`super::children`]).
//!
//! Counting: the parent calls `opened` when it accepts (in `admit`). A child
//! that finishes its connection calls `closed` itself, before its socket
//! closes, so a client that has seen EOF can count on the slot being free
//! (`--max-conns`), and exits with status 0. A child that ends any other way
//! (a crash, a panic, a signal) is counted closed by the parent when it reaps
//! it. Children cut off by a stop (killed by the parent's SIGTERM) were still
//! serving and show as `open_at_exit`, as in every other model.
//!
//! Children: SIGCHLD writes to the stop pipe and wakes the parent, which
//! empties the pipe and reaps every exited child without blocking, so a
//! zombie lives only until that wake-up. On SIGTERM or SIGINT the parent
//! sends SIGTERM to every live child and waits for them all. A fork failure
//! (EAGAIN: the process limit) closes that connection, counts it as
//! `spawn_failed`, and pauses accepting like descriptor exhaustion does (until
//! a child exits, or [`Gate::PAUSE`]), so the rest of the backlog waits
//! instead of being refused in a burst. The parent itself rarely runs out of
//! descriptors, since it keeps none per connection; if it does, it pauses
//! the same way.

use std::net::{TcpListener, TcpStream};

use anyhow::Context as _;

use super::accept::{accept, wait_for_listener, Accepted, Gate};
use super::children::{run_child, Children};
use super::conn::{keep_buffer, serve_blocking};
use super::{Context, Model};
use crate::sys::process::Forked;

pub(crate) struct Fork;

impl Model for Fork {
    fn name(&self) -> &'static str {
        "fork"
    }
    fn about(&self) -> &'static str {
        "a process per connection, blocking I/O; the parent polls, accepts, forks and reaps"
    }
    fn forks(&self) -> bool {
        true
    }
    fn task_per_connection(&self) -> bool {
        true
    }
    fn handlers(&self, _config: &super::Config) -> Option<usize> {
        None
    }
    fn sleeps_through_waits(&self) -> bool {
        true
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let stats = ctx.stats;
        let mut children = Children::default();
        let mut gate = Gate::default();
        // Each child's echo buffer, ready before the first fork.
        keep_buffer(ctx.config.buffer);
        // A process starts per connection, as it comes.
        ctx.ready();
        loop {
            let woke = wait_for_listener(&listener, ctx, &mut gate).context("poll")?;
            let Some(readable) = woke else {
                children
                    .stop(|r| {
                        // Status 0 counted itself; another status ended
                        // without counting; one killed by our SIGTERM (or a
                        // Ctrl-C to the whole group) was still serving.
                        if r.exit_code().is_some_and(|c| c != 0) {
                            stats.closed();
                        }
                    })
                    .context("stopping the children")?;
                return Ok(());
            };
            // Empty the pipe before reaping: a SIGCHLD that arrives after
            // this writes again and wakes the next poll.
            ctx.shutdown.drain();
            children
                .reap(|r| {
                    if r.exit_code() != Some(0) {
                        stats.closed();
                    }
                    // A process fewer: if forking or accepting ran out of
                    // something, try again.
                    gate.resume();
                })
                .context("reaping the children")?;
            if !readable {
                continue;
            }
            // A burst of connections must not hide a stop request.
            while !ctx.shutdown.requested() {
                let stream = match accept(&listener, ctx, false) {
                    Accepted::Conn(s) => s,
                    Accepted::Empty => break,
                    Accepted::Exhausted => {
                        gate.pause();
                        break;
                    }
                };
                match children.fork() {
                    Ok(Forked::Child) => {
                        // The child serves this one connection and exits;
                        // the listener is the parent's business.
                        drop(listener);
                        run_child(ctx, || echo(stream, ctx))
                    }
                    // The child has its own copy; ours would keep the
                    // connection open after the child is done.
                    Ok(Forked::Parent(_)) => drop(stream),
                    Err(_) => {
                        drop(stream);
                        stats.spawn_failed();
                        stats.closed();
                        gate.pause();
                        break;
                    }
                }
            }
        }
    }
}

/// The child's whole job: echo on the blocking socket until the peer is
/// done, and count the close before the socket closes.
fn echo(stream: TcpStream, ctx: &Context) {
    serve_blocking(stream, ctx.config.buffer, ctx.stats, &ctx.config.work);
}
