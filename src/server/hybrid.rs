//! `hybrid`: one poll loop finds ready connections, a thread pool echoes.
//!
//! How it waits: the main thread runs the shared [`reactor`](super::reactor)
//! with the `poll` waiter: every idle connection is in a `poll(2)` array
//! (updated in place) beside the listener, the stop pipe and an eventfd.
//! The pool is the loop's [`Handler`]: when a connection is ready, the loop
//! stops watching it, takes its [`Slot`] out of the connection table and
//! sends it down a job channel.
//!
//! Who runs the handler: one of `--workers` pool threads receives the slot,
//! runs the shared echo step ([`service`]: at most
//! [`READ_BUDGET`](super::table::READ_BUDGET) reads,
//! never blocking), sends the slot back with what it wants next on a return
//! channel and writes the eventfd to wake the loop. The loop puts the slot
//! back and watches it for POLLIN or POLLOUT (a connection that used up its
//! budget is simply watched for POLLIN again: poll is level-triggered and
//! reports it at once), or drops it when it is finished, which closes the
//! socket on the thread that accepts, so a descriptor is never reused while
//! a worker still holds it.
//!
//! A connection is owned by exactly one thread at a time — in the poll set
//! or in a worker's hands, never both — so no lock guards a connection and
//! no two workers can race on one socket.
//!
//! What it costs, per readiness event: two cross-thread hand-offs (the job
//! channel, whose receiver the workers share behind a mutex, and the return
//! channel; each a futex wake when the other side sleeps), an eventfd write
//! by the worker and an eventfd read by the loop (one read serves all the
//! slots that came back together), on top of the echo's reads and writes
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
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use anyhow::Context as _;
use rustix::event::{eventfd, EventfdFlags};

use super::conn::Reads;
use super::poll::PollWaiter;
use super::reactor::{Core, Handler, Reactor, Waiter};
use super::table::{service, Slot, Step};
use super::work::Work;
use super::{Context, Model, Stats, Variant};

pub(crate) struct Hybrid;

impl Model for Hybrid {
    fn readiness(&self) -> bool {
        true
    }
    fn knobs(&self) -> &'static [super::knobs::Knob] {
        &[super::knobs::POOL]
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
        &[Variant {
            label: "",
            flags: &["--workers", "2"],
        }]
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let pool = Pool::start(ctx.config.workers.max(1), ctx.stats, &ctx.config.work)?;
        // Dropping the loop (also on an error) stops the pool: the job
        // channel closes and the workers are joined.
        Reactor::new(ctx, PollWaiter::default(), pool)?
            .listen(&listener, false)
            .run()
    }
}

/// The worker threads, the sending end of their job channel, and the
/// channel and eventfd on which they give connections back.
struct Pool {
    jobs: Option<Sender<Slot>>,
    threads: Vec<JoinHandle<()>>,
    done: Receiver<(Slot, Step)>,
    wake: Arc<OwnedFd>,
}

impl Pool {
    /// Starts `n` workers that service the slots sent to them and return
    /// each with its next step, writing the eventfd after each.
    fn start(n: usize, stats: &'static Stats, work: &Work) -> anyhow::Result<Pool> {
        let wake = Arc::new(
            eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).context("eventfd")?,
        );
        let (jobs, rx) = mpsc::channel::<Slot>();
        let (done_tx, done) = mpsc::channel();
        let rx = Arc::new(Mutex::new(rx));
        let mut pool = Pool {
            jobs: Some(jobs),
            threads: Vec::with_capacity(n),
            done,
            wake,
        };
        for i in 0..n {
            let rx = Arc::clone(&rx);
            let done = done_tx.clone();
            let wake = Arc::clone(&pool.wake);
            let job = work.clone();
            let thread = std::thread::Builder::new()
                .name(format!("c10k-pool-{i}"))
                .spawn(move || serve(&rx, &done, &wake, stats, &job))
                .context("starting a pool thread")?;
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
        Some(self.wake.as_fd())
    }

    /// Connections come back: watch them again, or close them.
    fn woken<W: Waiter>(&mut self, core: &mut Core<'_, W>) -> anyhow::Result<()> {
        let mut buf = [0u8; 8];
        let _ = rustix::io::read(self.wake.as_fd(), &mut buf);
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
/// timers).
fn serve(
    jobs: &Mutex<Receiver<Slot>>,
    done: &Sender<(Slot, Step)>,
    wake: &OwnedFd,
    stats: &Stats,
    work: &Work,
) {
    loop {
        // The lock is held while waiting, so one idle worker waits in recv
        // and the others wait for the lock (the receiver cannot be shared).
        // Nothing in here panics, but a poisoned lock is still usable.
        let job = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(mut slot) = job else {
            return; // Channel closed and drained: stopping.
        };
        // The poll loop it goes back to reports it again if more came.
        let step = service(&mut slot, Reads::UntilShort, stats, work);
        if done.send((slot, step)).is_err() {
            return; // The loop is gone.
        }
        // After the send, so a loop woken by this write finds the slot.
        // EAGAIN would mean the counter is about to overflow: the loop is
        // awake anyway.
        let _ = rustix::io::write(wake, &1u64.to_ne_bytes());
    }
}
