//! `threads`: a thread per connection, blocking I/O.
//!
//! How it waits: each connection's thread blocks in read or write, and the
//! kernel scheduler is the event loop. The code is the simplest of all; the
//! cost is a thread per connection: its stack (virtual size `--stack-size`,
//! by default the platform's, RLIMIT_STACK as glibc's threads get it;
//! resident only as touched), a kernel stack and task struct, creation time
//! per connection, and a context switch per wake-up.

//!
//! The main thread waits in poll(2) on the listener and the stop pipe only, so
//! SIGTERM is seen at once; when accept fails for lack of descriptors it stops
//! watching the listener for a while instead of spinning.

use std::net::{TcpListener, TcpStream};

use anyhow::Context as _;

use super::accept::accept_loop;
use super::conn::serve_blocking;
use super::{Context, Model, Stats, Variant};
use crate::sys::rlimit;

pub(crate) struct Threads;

impl Model for Threads {
    fn knobs(&self) -> &'static [super::knobs::Knob] {
        use super::knobs::{Knob, Values};
        &[Knob {
            field: crate::server::settings::Field::StackSize,
            what: "each connection thread's stack",
            values: Values::Bytes {
                least: 16 * 1024,
                most: 1 << 30,
            },
            default: "the platform's (8 MiB)",
            short: "stack",
            unsearched: Some(
                "it sets memory, not speed: an untouched stack costs only the pages a thread uses",
            ),
        }]
    }
    fn name(&self) -> &'static str {
        "threads"
    }
    fn about(&self) -> &'static str {
        "a thread per connection, blocking I/O; the scheduler is the event loop (--stack-size)"
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
    fn variants(&self) -> &'static [Variant] {
        &[
            Variant {
                label: "",
                flags: &[],
            },
            Variant {
                label: "small_stack",
                flags: &["--stack-size", "64KiB"],
            },
        ]
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let stats: &'static Stats = ctx.stats;
        // Nothing to set up: a thread starts per connection, as it comes.
        ctx.ready();
        // Connection threads die with the process when this returns.
        accept_loop(&listener, ctx, false, |s| spawn(s, ctx, stats)).context("accept loop")
    }
}

/// Starts the thread that serves `stream`; a connection that gets no thread
/// is closed and counted.
fn spawn(stream: TcpStream, ctx: &Context, stats: &'static Stats) {
    let buffer = ctx.config.buffer;
    let stack = ctx
        .config
        .stack_size
        .unwrap_or_else(rlimit::platform_thread_stack);
    let builder = std::thread::Builder::new().stack_size(stack);
    let work = ctx.config.work.clone();
    let spawned = builder.spawn(move || serve_blocking(stream, buffer, stats, &work));
    if spawned.is_err() {
        stats.spawn_failed();
        stats.closed();
    }
}
