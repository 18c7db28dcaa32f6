//! `tokio`: the M:N model — a task per connection on an async runtime.
//!
//! How it waits: every connection is a tokio task, a small heap-allocated
//! state machine, and `--workers` runtime threads run whichever tasks are
//! ready. The runtime's I/O driver is an edge-triggered epoll instance: each
//! socket is registered once, when it is accepted, and a readiness event
//! wakes the task that waits on it, which is put on a worker's run queue
//! (other workers steal from it when idle). The code reads like the blocking
//! `threads` model — a loop per connection that "waits" for its socket — but
//! a wait is a return to the scheduler, not a parked kernel thread.
//!
//! Who runs the handler: any worker thread; a task may move between workers
//! from one wake-up to the next. The task runs the shared [`Conn`] state
//! machine over `try_read`/`try_write` (a would-block clears tokio's cached
//! readiness, so the next `readable()`/`writable()` really waits), and after
//! [`READ_BUDGET`] reads it yields so one busy peer cannot hold a worker.
//!
//! What it costs: per readiness event, one `epoll_wait` share, a wake-up
//! (queue push; a futex wake when the chosen worker is parked) and the reads
//! and writes themselves — close to a hand-written epoll loop, plus the
//! scheduler's bookkeeping. Per connection: the task (a few hundred bytes),
//! tokio's registration, and the `--buffer` echo buffer; no stack of its own.
//! The accept path pays two extra `epoll_ctl` calls per connection: the
//! socket tokio registered on accept is taken back out (`into_std`) so the
//! shared [`admit`] policy applies to a plain descriptor, as in every model,
//! and registered again (`from_std`).
//!
//! The accepting loop runs on the main thread in `block_on`, racing the
//! accept against the stop pipe (`tokio::select!`). When accept fails for
//! lack of descriptors, the loop waits until a connection task closes its
//! socket (a [`Notify`]) or [`Gate::PAUSE`] passes, instead of retrying at
//! once: the listener stays readable and a retry loop would spin.

use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rustix::io::Errno;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::sync::Notify;

use super::accept::{admit, Gate};
use super::conn::{Conn, Want};
use super::table::READ_BUDGET;
use super::{Context, Model, Stats};
use crate::sys::async_fd;
use crate::sys::signals::Shutdown;

pub struct Tokio;

impl Model for Tokio {
    fn name(&self) -> &'static str {
        "tokio"
    }
    fn about(&self) -> &'static str {
        "a task per connection on tokio's multi-thread runtime (--workers threads, work-stealing, epoll inside)"
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(ctx.config.workers.max(1))
            .thread_name("c10k-tokio")
            .enable_io()
            .enable_time()
            .build()
            .context("starting the tokio runtime")?;
        let result = runtime.block_on(accept_loop(listener, ctx));
        // Connection tasks are dropped, not finished: their sockets close and
        // they stay counted as open at exit, as in the other models. The
        // bound only matters if a worker were stuck; dropping tasks is quick.
        runtime.shutdown_timeout(SHUTDOWN_GRACE);
        result
    }
}

/// How long stopping waits for the workers to drop their tasks.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Accepts until a stop is requested, spawning a task per connection.
async fn accept_loop(listener: TcpListener, ctx: &Context<'_>) -> anyhow::Result<()> {
    let stats: &'static Stats = ctx.stats;
    let buffer = ctx.config.buffer;
    let max_conns = ctx.config.max_conns;
    let listener =
        tokio::net::TcpListener::from_std(listener).context("registering the listener")?;
    // Borrowed, not owned: the pipe belongs to `Shutdown`. It is never
    // drained, so every waiter sees it readable.
    let pipe = async_fd::watch(ctx.shutdown.fd(), Interest::READABLE)
        .context("watching the stop signal")?;
    let stop = stopped(&pipe, ctx.shutdown);
    tokio::pin!(stop);
    // Signalled by every connection task after it closed its socket.
    let freed = Arc::new(Notify::new());
    loop {
        let accepted = tokio::select! {
            biased;
            r = &mut stop => return r,
            r = listener.accept() => r,
        };
        match accepted {
            Ok((stream, _)) => {
                let Some(stream) = register(stream, max_conns, stats) else {
                    continue;
                };
                let freed = Arc::clone(&freed);
                tokio::spawn(async move {
                    serve_conn(stream, buffer, stats).await;
                    // The descriptor is closed by now: an accept paused on
                    // EMFILE can go on.
                    freed.notify_one();
                });
            }
            Err(e) if transient(&e) => {}
            Err(e) => {
                // Out of descriptors or memory (or an error we do not know):
                // the listener stays readable, so retrying now would spin.
                stats.accept_failed(&e);
                tokio::select! {
                    biased;
                    r = &mut stop => return r,
                    () = freed.notified() => {}
                    () = tokio::time::sleep(Gate::PAUSE) => {}
                }
            }
        }
    }
}

/// Resolves once SIGTERM or SIGINT has arrived.
async fn stopped(pipe: &AsyncFd<BorrowedFd<'_>>, shutdown: &Shutdown) -> anyhow::Result<()> {
    loop {
        let mut ready = pipe.readable().await.context("waiting for a stop")?;
        if shutdown.requested() {
            return Ok(());
        }
        // Woken without a stop (not expected: only stop signals write to
        // the pipe); wait for the next write.
        ready.clear_ready();
    }
}

/// Accept errors worth retrying at once, as in [`super::accept::accept`].
fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
    ) || e.raw_os_error() == Some(Errno::PROTO.raw_os_error())
}

/// Applies the shared accept policy (`--max-conns`, TCP_NODELAY, counting)
/// to a socket tokio accepted; `None` when it was refused or lost.
fn register(stream: TcpStream, max_conns: Option<u64>, stats: &Stats) -> Option<TcpStream> {
    let std_stream = match stream.into_std() {
        Ok(s) => s,
        Err(e) => {
            // Not admitted yet, so not opened: count it with accept errors.
            stats.accept_failed(&e);
            return None;
        }
    };
    // Still non-blocking, as `from_std` requires.
    let std_stream = admit(OwnedFd::from(std_stream), max_conns, stats)?;
    match TcpStream::from_std(std_stream) {
        Ok(s) => Some(s),
        Err(e) => {
            stats.conn_failed(&e);
            stats.closed();
            None
        }
    }
}

/// Echoes on one connection until the peer is done or the socket fails.
async fn serve_conn(stream: TcpStream, buffer: usize, stats: &'static Stats) {
    let mut conn = Conn::new(buffer);
    let result = loop {
        let want = conn.drive(&mut Sock(&stream), READ_BUDGET, stats);
        let waited = match want {
            Ok(Want::Read) => stream.readable().await,
            Ok(Want::Write) => stream.writable().await,
            // Budget used up: let other tasks on this worker run first.
            Ok(Want::More) => {
                tokio::task::yield_now().await;
                Ok(())
            }
            Ok(Want::Done) => break Ok(()),
            Err(e) => break Err(e),
        };
        if let Err(e) = waited {
            break Err(e);
        }
    };
    if let Err(e) = result {
        stats.conn_failed(&e);
    }
    drop(stream);
    stats.closed();
}

/// The std `Read`/`Write` face of a tokio socket that [`Conn`] needs:
/// `try_read`/`try_write` never wait, and report `WouldBlock` (clearing
/// tokio's readiness) when the socket is not ready.
struct Sock<'a>(&'a TcpStream);

impl Read for Sock<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Write for Sock<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
