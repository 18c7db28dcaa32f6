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
//! readiness, so the next wait for the socket really waits), and after
//! [`READ_BUDGET`] reads it yields so one busy peer cannot hold a worker.
//!
//! What it costs: per readiness event, one `epoll_wait` share, a wake-up
//! (queue push; a futex wake when the chosen worker is parked) and the reads
//! and writes themselves — close to a hand-written epoll loop, plus the
//! scheduler's bookkeeping. Per connection: the task (a few hundred bytes),
//! tokio's registration, and the `--buffer` echo buffer; no stack of its own.
//! Accepting uses the shared policy ([`accept`]) on the plain listener, with
//! tokio only reporting when the listener is readable; each accepted socket
//! is then registered with the runtime once (`from_std`, one `epoll_ctl`).
//!
//! The accepting loop runs on the main thread in `block_on`, racing the
//! accept against the stop pipe (`tokio::select!`). When accept fails for
//! lack of descriptors, the loop waits until a connection task closes its
//! socket (a [`Notify`]) or [`Gate::PAUSE`] passes, instead of retrying at
//! once: the listener stays readable and a retry loop would spin.

use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::sync::Notify;

use super::accept::{accept, Accepted, Gate};
use super::conn::{Conn, Reads, Want};
use super::start::{threads_fit, try_threads, STD_STACK};
use super::table::READ_BUDGET;
use super::work::{block, Work};
use super::{Context, Model, Stats, Variant};
use crate::sys::async_fd;
use crate::sys::signals::Shutdown;

pub(crate) struct Tokio;

impl Model for Tokio {
    fn knobs(&self) -> &'static [super::knobs::Knob] {
        use super::knobs::{Knob, Values, LOOPS};
        &[
            Knob {
                what: "runtime worker threads",
                short: "workers",
                ..LOOPS
            },
            Knob {
                field: crate::server::settings::Field::BlockingThreads,
                what: "most threads of the spawn_blocking pool",
                values: Values::Count {
                    least: 1,
                    most: 4096,
                },
                default: "512 (tokio's)",
                short: "blocking",
                unsearched: None,
            },
            Knob {
                field: crate::server::settings::Field::GlobalQueueInterval,
                what: "tasks a worker runs between looks at the global queue",
                values: Values::Count {
                    least: 1,
                    most: 255,
                },
                default: "tokio's own",
                short: "global queue every",
                unsearched: Some(
                    "it trades throughput for fairness (the tail); a throughput search would only undo it",
                ),
            },
        ]
    }
    fn name(&self) -> &'static str {
        "tokio"
    }
    fn about(&self) -> &'static str {
        "a task per connection on tokio's multi-thread runtime (--workers threads, work-stealing, epoll inside)"
    }
    fn handlers(&self, config: &super::Config) -> Option<usize> {
        Some(config.workers.max(1))
    }
    fn offloads_blocking(&self) -> bool {
        true
    }
    fn has_global_queue(&self) -> bool {
        true
    }
    fn variants(&self) -> &'static [Variant] {
        &[
            Variant {
                label: "",
                flags: &["--workers", "2"],
            },
            // Fair to every connection past 256 of them, at a cost of
            // throughput (see `--global-queue-interval`).
            Variant {
                label: "gq1",
                flags: &["--workers", "2", "--global-queue-interval", "1"],
            },
        ]
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let n = ctx.config.workers.max(1);
        // tokio starts every worker thread in `build` and panics on one it
        // cannot start (then hangs joining the rest): ask the kernel first.
        // Its blocking pool starts threads as `block` calls come.
        threads_fit(n, STD_STACK)
            .map_err(anyhow::Error::msg)
            .and_then(|()| try_threads(n).map_err(anyhow::Error::from))
            .with_context(|| format!("cannot start {n} runtime worker threads"))?;
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder
            .worker_threads(n)
            .thread_name("c10k-tokio")
            .enable_io()
            .enable_time();
        if let Some(n) = ctx.config.global_queue_interval {
            builder.global_queue_interval(n);
        }
        if let Some(n) = ctx.config.blocking_threads {
            builder.max_blocking_threads(n);
        }
        let runtime = builder.build().context("starting the tokio runtime")?;
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
    let work = Arc::new(ctx.config.work.clone());
    // tokio only tells when the listener is readable; accepting is the
    // shared policy, as in every model.
    let listening = async_fd::watch(listener.as_fd(), Interest::READABLE)
        .context("registering the listener")?;
    // Borrowed, not owned: the pipe belongs to `Shutdown`. It is never
    // drained, so every waiter sees it readable.
    let pipe = async_fd::watch(ctx.shutdown.fd(), Interest::READABLE)
        .context("watching the stop signal")?;
    let stop = stopped(&pipe, ctx.shutdown);
    tokio::pin!(stop);
    // The runtime and its worker threads exist, the listener is watched.
    ctx.ready();
    // Signalled by every connection task after it closed its socket.
    let freed = Arc::new(Notify::new());
    loop {
        let mut ready = tokio::select! {
            biased;
            r = &mut stop => return r,
            r = listening.readable() => r.context("waiting for connections")?,
        };
        match accept(&listener, ctx, true) {
            Accepted::Conn(stream) => {
                let stream = match TcpStream::from_std(stream) {
                    Ok(s) => s,
                    Err(e) => {
                        stats.conn_failed(&e);
                        stats.closed();
                        continue;
                    }
                };
                let freed = Arc::clone(&freed);
                let work = Arc::clone(&work);
                tokio::spawn(async move {
                    serve_conn(stream, buffer, stats, &work).await;
                    // The descriptor is closed by now: an accept paused on
                    // EMFILE can go on.
                    freed.notify_one();
                });
            }
            Accepted::Empty => ready.clear_ready(),
            Accepted::Exhausted => {
                // The listener stays readable, so retrying now would spin.
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

/// Echoes on one connection until the peer is done or the socket fails.
/// A request's `wait` is a `tokio::time::sleep` (the runtime's timer wheel
/// has a millisecond's resolution); its `block` goes through
/// `spawn_blocking` to the runtime's blocking pool (up to 512 threads),
/// or, with `--block-inline`, is made inside the task: the worker thread
/// then serves nobody else meanwhile.
async fn serve_conn(stream: TcpStream, buffer: usize, stats: &'static Stats, work: &Work) {
    let mut conn = Conn::new(buffer);
    let result = loop {
        // tokio's readiness is edge-triggered: it clears only on EAGAIN.
        let want = conn.drive(&mut Sock(&stream), READ_BUDGET, Reads::ToEmpty, stats, work);
        let waited = match want {
            // The socket's reserved reader and writer slots, as tokio's
            // own read and write wait: `readable()` would join and leave
            // the socket's list of waiters, a lock each way, every wait.
            Ok(Want::Read) => std::future::poll_fn(|cx| stream.poll_read_ready(cx)).await,
            Ok(Want::Write) => std::future::poll_fn(|cx| stream.poll_write_ready(cx)).await,
            Ok(Want::Wait(until)) => {
                tokio::time::sleep_until(until.into()).await;
                Ok(())
            }
            Ok(Want::Block(d)) => match tokio::task::spawn_blocking(move || block(d)).await {
                Ok(()) => {
                    conn.blocked();
                    Ok(())
                }
                Err(e) => Err(io::Error::other(e)),
            },
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
    // Counted before the socket closes: a client that sees EOF can rely on
    // its slot being free.
    stats.closed();
    drop(stream);
}

/// The std `Read`/`Write` face of a tokio socket that [`Conn`] needs:
/// reads and writes never wait, and report `WouldBlock` (clearing
/// tokio's readiness) when the socket is not ready.
struct Sock<'a>(&'a TcpStream);

impl Read for Sock<'_> {
    /// A read that fills less than `buf` has emptied the socket, so it
    /// clears tokio's readiness as tokio's own `AsyncRead` does on epoll:
    /// the reads to empty that follow it return `WouldBlock` without a
    /// system call, until the driver sees new bytes. (With `try_read`
    /// every echo paid a second `recvfrom` that found nothing: 3 system
    /// calls a message against tokio's own echo loop's 2.) It is recv(2),
    /// as tokio's own read is: read(2) goes through the file layer first
    /// (position lock, permission and fsnotify hooks), 1.5 % of this
    /// server's CPU at 100:1 in a perf profile, most of what it trailed
    /// tokio's echo loop by.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len();
        let mut short = None;
        let got = self.0.try_io(Interest::READABLE, || {
            let (n, _) = rustix::net::recv(self.0, &mut *buf, rustix::net::RecvFlags::empty())?;
            if n > 0 && n < want {
                // Kept, and reported below: the error only clears the
                // readiness.
                short = Some(n);
                return Err(io::ErrorKind::WouldBlock.into());
            }
            Ok(n)
        });
        match (got, short) {
            (_, Some(n)) => Ok(n),
            (r, None) => r,
        }
    }
}

impl std::os::fd::AsFd for Sock<'_> {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.0.as_fd()
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
