//! `hybrid`: one poll loop finds ready connections, a thread pool echoes.
//!
//! How it waits: the main thread runs the shared [`reactor`](super::reactor)
//! with the `poll` waiter: every idle connection is in a `poll(2)` array
//! (updated in place) beside the listener, the stop pipe and an eventfd.
//! The pool is the loop's [`Handler`]: when a connection is ready, the loop
//! stops watching it, takes its [`Served`] out of the connection table and
//! sends it down a job channel.
//!
//! Who runs the handler: one of `--workers` pool threads receives the slot,
//! runs the shared echo step ([`service`]: at most
//! [`READ_BUDGET`](super::table::READ_BUDGET) reads,
//! never blocking) and sends the slot back with what it wants next on a
//! return channel. The loop puts the slot back and watches it for POLLIN or
//! POLLOUT (a connection that used up its budget is simply watched for
//! POLLIN again: poll is level-triggered and reports it at once), or drops
//! it when it is finished, which closes the socket on the thread that
//! accepts, so a descriptor is never reused while a worker still holds it.
//!
//! When the loop hears of them (`--hand-back`): a worker wakes the loop by
//! writing an eventfd (a [`Doorbell`]: one write until the loop answers,
//! however many workers ring). With `idle`, the default, it rings once it
//! finds no job waiting or has given back [`HOLD_MOST`]: one wake-up per
//! batch. With `each`, as the plainest C pool (`bench/c/hybrid.c`), it
//! rings after every job; on one CPU each ring wakes the loop, which
//! preempts the worker, so every event pays two context switches (per
//! echo at 100:1, voluntary and forced: the C twin 0.52 and 0.51, `each`
//! 0.46 and 0.44, `idle` 0.034 and 0.033; see
//! `docs/results/2026-11-29-hand-back.md`).
//! Holding is only for the plain echo: under `--work` a job may block or
//! compute for long, and the connections held would wait with it, so
//! every job rings.
//!
//! A connection is owned by exactly one thread at a time — in the poll set
//! or in a worker's hands, never both — so no lock guards a connection and
//! no two workers can race on one socket.
//!
//! What it costs, per readiness event: two cross-thread hand-offs (the job
//! channel, whose receiver the workers share behind a mutex, and the return
//! channel; each a futex wake when the other side sleeps), a share of an
//! eventfd write by the worker and of an eventfd read by the loop (one
//! per batch), on top of the echo's reads and writes
//! and a cache miss or two as the connection's buffer moves between cores. Per `poll` call
//! the kernel scans every watched descriptor, O(n) in open connections, and
//! the loop scans the array for the ready ones. The pool spreads the echo
//! work over cores, but the single loop thread does all waiting, accepting
//! and bookkeeping and becomes the ceiling; `epoll-workers` avoids both the
//! hand-offs and the O(n) scan. Per connection: the `--buffer` echo buffer,
//! one `pollfd` and one table slot.
//!
//! Stop: on SIGTERM the loop closes the job channel; each worker finishes
//! the slots already queued (each step is non-blocking, so this is quick)
//! and exits; the loop joins them and returns.

use std::net::TcpListener;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::thread::JoinHandle;

use anyhow::Context as _;
use rustix::event::{eventfd, EventfdFlags};

use super::conn::Reads;
use super::poll::PollWaiter;
use super::reactor::{Core, Handler, Reactor, Waiter};
use super::start::{threads_fit, STD_STACK};
use super::table::{service, Served, Step};
use super::work::Work;
use super::{Context, Model, Stats, Variant};

pub(crate) struct Hybrid;

impl Model for Hybrid {
    fn readiness(&self) -> bool {
        true
    }
    fn knobs(&self) -> &'static [super::knobs::Knob] {
        use super::knobs::{Knob, Values, POOL};
        &[
            POOL,
            Knob {
                field: crate::server::settings::Field::HandBack,
                what: "when a pool thread wakes the loop to take connections back",
                values: Values::Choice(&["idle", "each"]),
                default: "idle",
                short: "hand-back",
                unsearched: Some(
                    "each is the plainest C pool's way, kept to measure what waking on idle gives, not to be chosen",
                ),
            },
        ]
    }
    fn name(&self) -> &'static str {
        "hybrid"
    }
    fn handlers(&self, config: &super::Config) -> Option<usize> {
        Some(config.workers.max(1))
    }
    fn about(&self) -> &'static str {
        "one poll loop hands ready sockets to --workers pool threads and takes them back: two hand-offs per event"
    }
    fn variants(&self) -> &'static [Variant] {
        &[
            Variant {
                label: "",
                flags: &["--workers", "2"],
            },
            // A wake-up after every job, as the C twin: the same echo
            // contract through the other hand-back.
            Variant {
                label: "hand_back_each",
                flags: &["--workers", "2", "--hand-back", "each"],
            },
        ]
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        // Holding served connections is safe only while every job is
        // short: a job that blocks or computes would keep them from the
        // loop for as long as it takes.
        let hold = if !ctx.config.hand_back_each && ctx.config.work.is_none() {
            HOLD_MOST
        } else {
            1
        };
        let n = ctx.config.workers.max(1);
        let pool = Pool::start(n, ctx.stats, &ctx.config.work, hold)
            .with_context(|| format!("cannot start {n} pool threads"))?;
        // Dropping the loop (also on an error) stops the pool: the job
        // channel closes and the workers are joined.
        let mut reactor = Reactor::new(ctx, PollWaiter::default(), pool)?.listen(&listener, false);
        // Every pool thread is running.
        ctx.ready();
        reactor.run()
    }
}

/// The worker threads, the sending end of their job channel, and the
/// channel and doorbell on which they give connections back.
struct Pool {
    jobs: Option<Sender<Served>>,
    threads: Vec<JoinHandle<()>>,
    done: Receiver<(Served, Step)>,
    bell: Arc<Doorbell>,
}

/// Most connections a pool thread holds before it wakes the loop to take
/// them back, when it holds at all (`--hand-back idle`).
const HOLD_MOST: usize = 64;

/// The eventfd the pool threads write to wake the loop, written once per
/// wake-up however many threads ring: `rung` stays set from the first
/// ring until the loop answers (as libuv's `uv_async_send` coalesces).
struct Doorbell {
    fd: OwnedFd,
    rung: AtomicBool,
}

impl Doorbell {
    /// Wakes the loop, unless a ring it has not yet answered will.
    /// Called after the connections are sent, so the loop finds them.
    fn ring(&self) {
        // AcqRel: the loop's swap in `answer` reads this write (or a later
        // one), so the sends before it are seen by the loop's drain.
        if !self.rung.swap(true, Ordering::AcqRel) {
            // EAGAIN would mean the counter is about to overflow: the loop
            // is awake anyway.
            let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
        }
    }

    /// The loop takes the wake-up; a ring from now on writes again.
    /// Called before the loop drains the returned connections. The read
    /// comes first: cleared before it, the flag could be set again by a
    /// ring whose write that read then consumes, and every later ring
    /// would trust a wake-up that is already spent (the loop asleep, the
    /// connections given back after its drain stranded).
    fn answer(&self) {
        let mut buf = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut buf);
        self.rung.swap(false, Ordering::AcqRel);
    }
}

impl Pool {
    /// Starts `n` workers that service the slots sent to them and return
    /// each with its next step, ringing the loop's doorbell once they have
    /// given back `hold` (1: after each job) or find no job waiting. Fails,
    /// with the threads started stopped, when any of the `n` cannot start;
    /// refused before the first when they would not fit ([`threads_fit`]).
    fn start(n: usize, stats: &'static Stats, work: &Work, hold: usize) -> anyhow::Result<Pool> {
        threads_fit(n, STD_STACK).map_err(anyhow::Error::msg)?;
        let bell = Arc::new(Doorbell {
            fd: eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).context("eventfd")?,
            rung: AtomicBool::new(false),
        });
        let (jobs, rx) = mpsc::channel::<Served>();
        let (done_tx, done) = mpsc::channel();
        let rx = Arc::new(Mutex::new(rx));
        let mut pool = Pool {
            jobs: Some(jobs),
            threads: Vec::with_capacity(n),
            done,
            bell,
        };
        for i in 0..n {
            let rx = Arc::clone(&rx);
            let done = done_tx.clone();
            let bell = Arc::clone(&pool.bell);
            let job = work.clone();
            let thread = std::thread::Builder::new()
                .name(format!("c10k-pool-{i}"))
                .spawn(move || serve(&rx, &done, &bell, hold, stats, &job))?;
            // On an error above, dropping `pool` stops the threads started.
            pool.threads.push(thread);
        }
        Ok(pool)
    }

    /// Closes the job channel and joins the workers.
    fn stop(&mut self) {
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Handler for Pool {
    fn wake(&self) -> Option<BorrowedFd<'_>> {
        Some(self.bell.fd.as_fd())
    }

    /// Connections come back: watch them again, or close them.
    fn woken<W: Waiter>(&mut self, core: &mut Core<'_, W>) -> anyhow::Result<()> {
        self.bell.answer();
        for (slot, step) in self.done.try_iter() {
            core.put_back(slot, step)?;
        }
        Ok(())
    }

    /// Hands a ready connection (POLLHUP and POLLERR too: the worker's read
    /// or write reports them and the connection closes) to the pool.
    fn ready<W: Waiter>(&mut self, core: &mut Core<'_, W>, fd: RawFd) -> anyhow::Result<()> {
        let Some(slot) = core.take(fd)? else {
            return Ok(());
        };
        let Some(jobs) = &self.jobs else {
            anyhow::bail!("the pool is stopped");
        };
        // Fails only if every worker is gone (they exit only when the
        // channel closes, so: all panicked).
        jobs.send(slot)
            .map_err(|_| anyhow::anyhow!("every pool thread has died"))
    }
}

/// A worker: take a slot, echo what the socket allows (doing the work of
/// its requests, blocking calls included: the pool is where they may
/// block), give it back (a request that waits goes back to the loop's
/// timers), and ring the loop's doorbell once `hold` are given back or no
/// job is waiting, so one wake-up of the loop takes back a batch.
fn serve(
    jobs: &Mutex<Receiver<Served>>,
    done: &Sender<(Served, Step)>,
    bell: &Doorbell,
    hold: usize,
    stats: &Stats,
    work: &Work,
) {
    // Given back since the last ring.
    let mut held = 0;
    loop {
        // A lock another worker holds means it waits in recv for the next
        // job (the queue is empty) or is about to take one: either way
        // this one must not wait for the lock before ringing, or the
        // connections it holds wait with it. Nothing in here panics, but a
        // poisoned lock is still usable.
        let waiting = match jobs.try_lock() {
            Ok(rx) => rx.try_recv(),
            Err(TryLockError::Poisoned(rx)) => rx.into_inner().try_recv(),
            Err(TryLockError::WouldBlock) => Err(TryRecvError::Empty),
        };
        let job = match waiting {
            Ok(slot) => Ok(slot),
            Err(TryRecvError::Disconnected) => return, // Closed and drained: stopping.
            Err(TryRecvError::Empty) => {
                // Never sleep on connections the loop has not been told of.
                if held > 0 {
                    bell.ring();
                    held = 0;
                }
                // The lock is held while waiting, so one idle worker waits
                // in recv and the others wait for the lock (the receiver
                // cannot be shared).
                jobs.lock().unwrap_or_else(PoisonError::into_inner).recv()
            }
        };
        let Ok(mut slot) = job else {
            return; // Channel closed and drained: stopping.
        };
        // The poll loop it goes back to reports it again if more came.
        let step = service(&mut slot, Reads::UntilShort, stats, work);
        if done.send((slot, step)).is_err() {
            return; // The loop is gone.
        }
        held += 1;
        if held >= hold {
            bell.ring();
            held = 0;
        }
    }
}
