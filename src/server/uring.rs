//! `uring`: io_uring completions instead of readiness. Each of `--workers`
//! threads owns a ring and a listener (SO_REUSEPORT when there are several;
//! the kernel spreads new connections over them).
//!
//! How it waits: a readiness loop asks "which sockets could I read?" and
//! then makes a syscall per read and per write. Here the loop hands the
//! kernel the I/O itself and, once per batch, says "submit what I queued and
//! wait for at least one result" (`io_uring_enter`). Three kinds of request
//! do the work:
//!
//! - a multishot accept per listener posts one completion per connection;
//! - a multishot recv per connection posts one completion per chunk, which
//!   the kernel writes into a buffer it takes from a *provided buffer ring*
//!   (`IORING_REGISTER_PBUF_RING`): a pool shared by all the worker's
//!   connections and handed back to the kernel before every submit;
//! - a send per chunk to echo, from the connection's own copy of the data.
//!
//! A batch of events on hundreds of sockets costs one syscall, not one per
//! socket and direction, and the loop never learns about readiness at all.
//! (In one run here, 4,000 64-byte echoes on 200 connections took 780
//! `io_uring_enter` calls; `epoll` made 12,000 syscalls for the same.) The
//! ring is set up with DEFER_TASKRUN: the kernel does the receive work when
//! this thread enters the ring, not by interrupting it at random. Accepting
//! still costs a `setsockopt` (TCP_NODELAY) and closing a `close`, as in
//! every model.
//!
//! The echo contract is the one of [`super::conn::Conn`], rebuilt for
//! completions (Conn reads into its buffer and writes it back; here the
//! kernel reads for us):
//!
//! - Order: a connection has at most one send in flight; data that arrives
//!   meanwhile queues behind it. A partial send is resubmitted from where it
//!   stopped.
//! - Bounded memory: once a connection owes more than `--buffer` bytes (its
//!   peer is not reading), its multishot recv is cancelled and re-armed only
//!   when it owes nothing; TCP flow control then pushes back on the sender.
//!   A cancel takes effect at the next submit, so the chunks the kernel had
//!   already delivered in that batch still arrive: at most one batch's worth
//!   for that socket (up to the pool, [`POOL_BUFS`] chunks; hundreds of KiB
//!   were seen on loopback). To keep that from recurring, a connection that
//!   was throttled receives one chunk at a time (a one-shot recv) until a
//!   receive finds the socket drained, and only then goes back to
//!   multishot. A readiness model's bound is exactly `--buffer`; this one is
//!   `--buffer` plus that one-time overshoot.
//! - Half-close: a recv of 0 bytes ends receiving; everything owed is sent,
//!   then the socket is closed.
//! - Requests (`--work`): the received bytes queue as they come; only the
//!   front ones whose requests are done ([`Requests`], the same as every
//!   other model's) are sent. `cpu` and `block` run on the ring's thread
//!   (blocking it, as in any loop); a `wait` is an io_uring timeout, after
//!   which the connection is pumped again. Receiving resumes once no more
//!   than part of a request is held.
//! - HTTP (`--protocol http`): the received bytes are the requests, parsed
//!   by the same [`super::http::Exchange`] every model uses; once no send is
//!   in flight, every complete request queued is answered into one vector
//!   and sent, and the bytes it used are dropped. A `Connection: close`, a
//!   400 or a 431 is sent, then the socket's write side is shut and the
//!   connection closed, as in [`super::conn::linger`].
//! - Errors end only their connection (counted); its other requests are
//!   cancelled and the socket is closed once the kernel has let go of them.
//! - An empty buffer ring ends a recv with ENOBUFS. Nothing is lost (the
//!   kernel left the data in the socket) and nothing stalls: every lent
//!   buffer goes back before the next submit, so the recv is simply re-armed.
//! - EMFILE/ENFILE end the multishot accept; it is re-armed when one of our
//!   connections closes or after [`Gate::PAUSE`] (an io_uring timeout), never
//!   in a loop.
//! - The stop pipe and a worker-failure eventfd are watched with poll
//!   requests, so SIGTERM (or one worker dying) stops every worker at once.
//!
//! What it costs: per worker, the pool ([`POOL_BUFS`] buffers of `--buffer`
//! bytes, at most 64 KiB each: 4 MiB at the default 16 KiB, resident once
//! touched) and the rings' queues (about 160 KiB). Per connection, a small
//! struct and kernel state for its armed requests; an idle connection holds
//! no buffer at all (a readiness model holds `--buffer` for it), and one
//! that is echoing holds what it owes, paid for with one memcpy per chunk
//! out of the pool. Sending straight from the pool would save that copy, but
//! a peer that never reads would then pin pool buffers, and enough such peers
//! would starve every other connection: copying keeps the pool returnable.
//! The vector copied into is one a finished send left behind (the worker
//! keeps up to [`SPARES`]), so the copy allocates nothing per message.
//! The price of the whole scheme is code: ownership of every buffer has to be
//! tracked until the kernel's last completion for it (see
//! [`crate::sys::uring`]), and needs Linux 6.1 or later.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use anyhow::Context as _;
use rustix::event::{eventfd, EventfdFlags};

use super::accept::{admit, Gate};
use super::conn::linger;
use super::http::Exchange;
use super::start::{threads_fit, StartLine, STD_STACK};
use super::work::{Next, Requests, Work};
use super::{run, Config, Context, Model, Variant};
use crate::sys::uring::{self, Completion, OpId, Ring, Sizes};

pub(crate) struct Uring;

impl Model for Uring {
    fn knobs(&self) -> &'static [super::knobs::Knob] {
        &[
            super::knobs::Knob {
                what: "rings, one thread each",
                short: "rings",
                // Each ring maps its own queues and buffer ring (256 buffers
                // of --buffer bytes): 1 MiB a ring at 4 KiB, so 256 rings
                // are a quarter GiB before a connection arrives.
                values: super::knobs::Values::Count {
                    least: 1,
                    most: 256,
                },
                ..super::knobs::LOOPS
            },
            super::knobs::Knob {
                field: crate::server::settings::Field::RingEntries,
                what: "submission queue entries of each ring",
                values: super::knobs::Values::Count {
                    least: 8,
                    most: 4096,
                },
                default: "512",
                short: "entries",
                unsearched: None,
            },
            super::knobs::Knob {
                field: crate::server::settings::Field::RingBuffers,
                what: "provided buffers in each ring's buffer ring",
                values: super::knobs::Values::Count {
                    least: 16,
                    most: 32_768,
                },
                default: "256",
                short: "buffers",
                unsearched: None,
            },
            super::knobs::Knob {
                field: crate::server::settings::Field::RingRecv,
                what: "how each connection receives",
                values: super::knobs::Values::Choice(&["multishot", "once"]),
                default: "multishot",
                short: "recv",
                unsearched: Some(
                    "once is multishot's floor, kept to measure what multishot gives, not to be chosen",
                ),
            },
        ]
    }
    fn name(&self) -> &'static str {
        "uring"
    }
    fn handlers(&self, config: &super::Config) -> Option<usize> {
        Some(config.workers.max(1))
    }
    fn about(&self) -> &'static str {
        "io_uring completions: multishot accept and recv into a shared buffer ring, one syscall per batch; --workers rings"
    }
    fn probe(&self, _config: &Config) -> Result<(), String> {
        uring::probe()
    }
    fn needs_reuseport(&self, config: &Config) -> bool {
        config.workers > 1
    }
    fn variants(&self) -> &'static [Variant] {
        &[
            Variant {
                label: "",
                flags: &["--workers", "1"],
            },
            Variant {
                label: "workers",
                flags: &["--workers", "2"],
            },
            // A one-shot recv after every chunk: the same echo contract
            // (order, bounded memory, half-close) without multishot.
            Variant {
                label: "recv_once",
                flags: &["--workers", "1", "--ring-recv", "once"],
            },
            // The smallest rings --tune may try: a full submission queue
            // waits in the backlog, a drained buffer ring stops receives.
            Variant {
                label: "small-rings",
                flags: &[
                    "--workers",
                    "1",
                    "--ring-entries",
                    "8",
                    "--ring-buffers",
                    "16",
                ],
            },
        ]
    }
    fn serve(&self, listener: TcpListener, ctx: &Context) -> anyhow::Result<()> {
        let n = ctx.config.workers.max(1);
        let cannot = || format!("cannot start {n} rings");
        // This thread runs the first ring.
        threads_fit(n - 1, STD_STACK)
            .map_err(anyhow::Error::msg)
            .with_context(cannot)?;
        let extra = (1..n)
            .map(|_| run::listen(ctx.config.bind, ctx.config.backlog, true))
            .collect::<io::Result<Vec<_>>>()
            .with_context(|| format!("cannot open a listener for each of {n} rings"))?;
        // A worker that fails wakes the others through this, so the server
        // stops as a whole instead of silently losing a listener.
        let abort =
            eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).context("eventfd")?;
        let abort = &abort;
        let start = StartLine::new(extra.len() + 1);
        let start = &start;
        std::thread::scope(|s| {
            let mut handles = Vec::new();
            let mut result = Ok(());
            for (i, l) in extra.into_iter().enumerate() {
                let spawned = std::thread::Builder::new()
                    .name(format!("uring-{}", i + 1))
                    .spawn_scoped(s, move || worker(&l, ctx, abort, start));
                match spawned {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        start.arrive(false);
                        raise(abort);
                        result = Err(e).with_context(cannot);
                        break;
                    }
                }
            }
            let first = if result.is_ok() {
                worker(&listener, ctx, abort, start)
            } else {
                Ok(())
            };
            for h in handles {
                let r = h
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a worker thread panicked")));
                if result.is_ok() {
                    result = r;
                }
            }
            result.and(first)
        })
    }
}

/// Buffers in each worker's provided-buffer ring.
pub(crate) const POOL_BUFS: u16 = 256;
/// Largest pool buffer: one recv completion carries at most this much.
const MAX_BUF: usize = 64 * 1024;
/// Submission and completion queue sizes per worker.
const SQ: u32 = 512;
const CQ: u32 = 8192;

// What a request is for: the low byte of its user_data; the rest is the
// connection slot for RECV and SEND.
const SHUTDOWN: u64 = 0;
const ABORT: u64 = 1;
const ACCEPT: u64 = 2;
const TIMER: u64 = 3;
const RECV: u64 = 4;
const SEND: u64 = 5;
/// A request's `--work wait:` ended.
const WAKE: u64 = 6;

fn tag(slot: usize, kind: u64) -> u64 {
    (slot as u64) << 8 | kind
}

/// Runs one worker; on failure, wakes the others so they stop too.
///
/// A ring must be made on the thread that submits to it (SINGLE_ISSUER), so
/// each worker makes its own, then waits at `start` until every worker has
/// one: a worker that began accepting first could take the descriptors the
/// others' rings need. If any worker could not set up, none starts;
/// otherwise the first past the line says READY (once for all).
fn worker(
    listener: &TcpListener,
    ctx: &Context,
    abort: &OwnedFd,
    start: &StartLine,
) -> anyhow::Result<()> {
    let made = Worker::new(listener, ctx, abort)
        .with_context(|| format!("cannot start {} rings", ctx.config.workers.max(1)));
    let result = if start.arrive(made.is_ok()) {
        ctx.ready();
        made.and_then(|mut w| w.run())
    } else {
        made.map(drop)
    };
    if result.is_err() {
        raise(abort);
    }
    result
}

fn raise(abort: &OwnedFd) {
    let _ = rustix::io::write(abort, &1u64.to_ne_bytes());
}

/// One connection's echo state.
struct Conn {
    stream: TcpStream,
    /// The armed recv.
    recv: Option<OpId>,
    /// `recv` is a one-shot receive rather than a multishot one (while
    /// `careful`, or always with `--ring-recv once`).
    once: bool,
    /// A cancel of `recv` was submitted (the peer is not keeping up).
    throttled: bool,
    /// The peer fell behind: receive one buffer at a time until the socket
    /// has nothing more queued, then go back to multishot.
    careful: bool,
    /// Received, waiting for the send in flight to finish.
    queued: Vec<u8>,
    /// Bytes of the send in flight not yet confirmed (0: none in flight).
    sending: usize,
    /// The peer shut down its write side.
    eof: bool,
    /// An error ended the connection, or the server did (HTTP's
    /// `Connection: close`); waiting for its requests to finish.
    failed: bool,
    /// Its remaining requests were cancelled.
    cancelled: bool,
    /// Its number in the `--shared-state` table, from its first read.
    id: Option<u64>,
    /// With `--work`: the bytes at the front of `queued` whose requests
    /// are done (the rest wait for their work or their last bytes).
    ready: usize,
    requests: Requests,
    /// With `--protocol http`: its requests, answered from `queued`.
    exchange: Exchange,
    /// A timeout for a request's wait is in flight.
    timer: bool,
}

impl Conn {
    fn owed(&self) -> usize {
        self.sending + self.queued.len()
    }

    /// Nothing to send and nothing in progress: receiving may resume. A
    /// plain echo owes nothing; with `--work`, at most part of a request
    /// is held, waiting for its rest.
    fn drained(&self, work: &Work) -> bool {
        if let Some(http) = &work.http {
            // What is queued is part of a head, waiting for its rest.
            self.sending == 0 && !self.timer && self.queued.len() < http.header_limit
        } else if work.is_none() {
            self.owed() == 0
        } else {
            self.sending == 0
                && self.ready == 0
                && !self.requests.busy()
                && self.queued.len() < work.request
        }
    }
}

struct Worker<'a> {
    ring: Ring,
    ctx: &'a Context<'a>,
    listener: &'a TcpListener,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    /// The armed multishot accept; `None` while paused.
    accept: Option<OpId>,
    /// The Gate::PAUSE timer, while armed.
    timer: Option<OpId>,
    stop: bool,
    /// Send vectors whose send completed, emptied, for the next receive
    /// to copy into: no allocation per message (up to [`SPARES`] kept).
    spare: Vec<Vec<u8>>,
}

/// Emptied send vectors a worker keeps; like the readiness loops' spare
/// buffers ([`super::conn`]), so an idle connection holds none.
const SPARES: usize = 64;

impl<'a> Worker<'a> {
    fn new(
        listener: &'a TcpListener,
        ctx: &'a Context<'a>,
        abort: &'a OwnedFd,
    ) -> anyhow::Result<Self> {
        let sq = ctx.config.ring_entries.unwrap_or(SQ);
        let ring = Ring::new(Sizes {
            sq,
            cq: (sq * 16).max(CQ),
            bufs: ctx.config.ring_buffers.unwrap_or(POOL_BUFS),
            buf_size: ctx.config.buffer.clamp(1, MAX_BUF) as u32,
        })
        .context("setting up io_uring")?;
        let mut w = Worker {
            ring,
            ctx,
            listener,
            conns: Vec::new(),
            free: Vec::new(),
            accept: None,
            timer: None,
            stop: false,
            spare: Vec::new(),
        };
        w.ring.poll_readable(ctx.shutdown.fd(), SHUTDOWN);
        w.ring.poll_readable(abort.as_fd(), ABORT);
        w.arm_accept();
        Ok(w)
    }

    fn run(&mut self) -> anyhow::Result<()> {
        let mut batch = Vec::new();
        loop {
            self.ring.submit_and_wait(1)?;
            self.ring.complete(&mut batch);
            for c in batch.drain(..) {
                self.handle(c)?;
            }
            if self.stop {
                // Dropping the ring cancels what is in flight; connections
                // close with the worker.
                return Ok(());
            }
        }
    }

    fn handle(&mut self, c: Completion) -> anyhow::Result<()> {
        let slot = (c.user_data >> 8) as usize;
        match c.user_data & 0xff {
            SHUTDOWN => {
                if let Some(e) = c.error() {
                    // Re-arming a poll that fails would spin.
                    return Err(e).context("watching the stop signal");
                }
                if self.ctx.shutdown.requested() {
                    self.stop = true;
                } else {
                    // Not a stop (only SIGTERM/SIGINT write the pipe, after
                    // setting the flag): watch again. The pipe is never
                    // drained, so every worker sees a stop.
                    self.ring.poll_readable(self.ctx.shutdown.fd(), SHUTDOWN);
                }
            }
            ABORT => self.stop = true,
            ACCEPT => self.on_accept(c),
            TIMER => {
                self.timer = None;
                self.arm_accept();
            }
            RECV => self.on_recv(slot, c),
            SEND => self.on_send(slot, c),
            WAKE => {
                if let Some(Some(conn)) = self.conns.get_mut(slot) {
                    conn.timer = false;
                }
                self.pump(slot);
            }
            _ => {}
        }
        Ok(())
    }

    fn arm_accept(&mut self) {
        if self.accept.is_none() && !self.stop {
            self.accept = Some(self.ring.accept_multi(self.listener.as_fd(), ACCEPT));
        }
    }

    fn on_accept(&mut self, mut c: Completion) {
        if !c.more {
            self.accept = None;
        }
        let mut pause = false;
        if let Some(fd) = c.take_fd() {
            if let Some(stream) = admit(fd, self.ctx.config.max_conns, self.ctx.stats) {
                self.add(stream);
            }
        } else if let Some(e) = c.error() {
            match e.raw_os_error() {
                // The peer gave up before we accepted, or a signal: retry.
                Some(libc::ECONNABORTED | libc::EINTR | libc::EPROTO | libc::EAGAIN) => {}
                Some(libc::ECANCELED) => return,
                // Exhaustion, or something we do not know: either way,
                // retrying at once would spin.
                _ => {
                    self.ctx.stats.accept_failed(&e);
                    pause = true;
                }
            }
        }
        if self.accept.is_none() {
            if pause {
                if self.timer.is_none() && !self.stop {
                    self.timer = Some(self.ring.timeout(Gate::PAUSE, TIMER));
                }
            } else {
                self.arm_accept();
            }
        }
    }

    fn add(&mut self, stream: TcpStream) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        let once = self.ctx.config.ring_recv_once;
        let recv = arm_recv(&mut self.ring, stream.as_fd(), tag(slot, RECV), once);
        self.conns[slot] = Some(Conn {
            stream,
            recv: Some(recv),
            once,
            throttled: false,
            careful: false,
            queued: Vec::new(),
            sending: 0,
            eof: false,
            failed: false,
            cancelled: false,
            id: None,
            ready: 0,
            requests: Requests::default(),
            exchange: Exchange::default(),
            timer: false,
        });
    }

    fn on_recv(&mut self, slot: usize, c: Completion) {
        let Some(Some(conn)) = self.conns.get_mut(slot) else {
            return;
        };
        if !c.more {
            conn.recv = None;
            conn.throttled = false;
        }
        if conn.failed {
            // Draining the requests of a dead connection.
        } else if c.result > 0 {
            if let Some(data) = self.ring.data(&c) {
                if conn.queued.capacity() == 0 {
                    conn.queued = self.spare.pop().unwrap_or_default();
                }
                conn.queued.extend_from_slice(data);
            }
            self.ctx.stats.state.read(&mut conn.id, c.result as u64);
            if conn.once && !c.nonempty {
                // The backlog that built up while throttled is gone.
                conn.careful = false;
            }
        } else if c.result == 0 {
            conn.eof = true;
        } else {
            match -c.result {
                // The buffer ring ran dry (re-armed below, after the batch's
                // buffers go back), or our own cancel (throttling).
                libc::ENOBUFS | libc::ECANCELED => {}
                errno => fail(conn, self.ctx, io::Error::from_raw_os_error(errno)),
            }
        }
        self.pump(slot);
    }

    fn on_send(&mut self, slot: usize, mut c: Completion) {
        let Some(Some(conn)) = self.conns.get_mut(slot) else {
            return;
        };
        let mut buf = c.take_sent().unwrap_or_default();
        let start = buf.len() - conn.sending;
        conn.sending = 0;
        // A dead connection's send just comes home; its buffer is dropped.
        if c.result > 0 {
            // Sent is sent, even if the connection failed since.
            self.ctx.stats.add_bytes(c.result as u64);
        }
        if !conn.failed {
            if c.result > 0 {
                let n = c.result as usize;
                if start + n < buf.len() {
                    // Partial send: the rest goes first, from where it stopped.
                    conn.sending = buf.len() - start - n;
                    self.ring
                        .send(conn.stream.as_fd(), buf, start + n, tag(slot, SEND));
                    buf = Vec::new();
                }
            } else {
                let e = c.error().unwrap_or_else(|| io::ErrorKind::WriteZero.into());
                fail(conn, self.ctx, e);
            }
        }
        // Kept only if no larger than a receive buffer: a vector grown by
        // a burst is not held on to.
        if self.spare.len() < SPARES && (1..=MAX_BUF).contains(&buf.capacity()) {
            buf.clear();
            self.spare.push(buf);
        }
        self.pump(slot);
    }

    /// Decides a connection's next requests: send what is queued, stop or
    /// resume receiving, close when done.
    fn pump(&mut self, slot: usize) {
        let Some(Some(conn)) = self.conns.get_mut(slot) else {
            return;
        };
        if conn.failed {
            if conn.recv.is_none() && conn.sending == 0 && !conn.timer {
                self.close(slot);
            } else if !conn.cancelled {
                // A send may wait forever on a peer that stopped reading.
                self.ring.cancel_fd(conn.stream.as_fd());
                conn.cancelled = true;
            }
            return;
        }
        let ctx = self.ctx;
        let work = &ctx.config.work;
        if let Some(http) = &work.http {
            if conn.sending == 0 {
                // Answers the requests queued, a batch of at most
                // `OUT_LIMIT` bytes per send, as `super::conn` does.
                let mut out = self.spare.pop().unwrap_or_default();
                let (used, next) =
                    conn.exchange
                        .answer(&conn.queued, &mut out, http, work, ctx.stats);
                conn.queued.drain(..used);
                if let Next::Wait(until) = next {
                    if !conn.timer {
                        conn.timer = true;
                        let after = until.saturating_duration_since(std::time::Instant::now());
                        self.ring.timeout(after, tag(slot, WAKE));
                    }
                }
                if conn.eof && !conn.timer {
                    // A head the peer never finished gets no answer.
                    conn.queued.clear();
                }
                if out.is_empty() {
                    self.spare.push(out);
                } else {
                    conn.sending = out.len();
                    self.ring.send(conn.stream.as_fd(), out, 0, tag(slot, SEND));
                }
                if conn.exchange.closing() && conn.sending == 0 {
                    // The last answer is sent: end the connection (its
                    // recv is cancelled, then it closes), no error.
                    linger(conn.stream.as_fd());
                    conn.failed = true;
                    conn.queued = Vec::new();
                    return self.pump(slot);
                }
            }
        } else if work.is_none() {
            conn.ready = conn.queued.len();
        } else {
            // The requests' work runs here, on the ring's thread: a
            // blocking call blocks the whole ring, as in any loop.
            let unready = conn.queued.len() - conn.ready;
            let (done, next) = conn.requests.run(work, unready, conn.eof, ctx.stats);
            conn.ready += done;
            if let Next::Wait(until) = next {
                if !conn.timer {
                    conn.timer = true;
                    let after = until.saturating_duration_since(std::time::Instant::now());
                    self.ring.timeout(after, tag(slot, WAKE));
                }
            }
        }
        if conn.sending == 0 && conn.ready > 0 {
            let buf = if conn.ready == conn.queued.len() {
                std::mem::take(&mut conn.queued)
            } else {
                let rest = conn.queued.split_off(conn.ready);
                std::mem::replace(&mut conn.queued, rest)
            };
            conn.ready = 0;
            conn.sending = buf.len();
            self.ring.send(conn.stream.as_fd(), buf, 0, tag(slot, SEND));
        }
        let owed = conn.owed();
        let drained = conn.drained(work);
        match conn.recv {
            Some(op) if owed > self.ctx.config.buffer && !conn.throttled && !conn.once => {
                self.ring.cancel(op);
                conn.throttled = true;
                conn.careful = true;
            }
            None if !conn.eof && drained => {
                let (fd, user_data) = (conn.stream.as_fd(), tag(slot, RECV));
                conn.once = conn.careful || ctx.config.ring_recv_once;
                conn.recv = Some(arm_recv(&mut self.ring, fd, user_data, conn.once));
            }
            None if conn.eof && owed == 0 && !conn.timer => self.close(slot),
            _ => {}
        }
    }

    /// Closes a connection none of whose requests is in flight, and lets a
    /// paused accept go again (a descriptor is free).
    fn close(&mut self, slot: usize) {
        if let Some(conn) = self.conns.get_mut(slot).and_then(Option::take) {
            // Counted before the socket closes: a client that sees EOF can
            // rely on its slot being free (with --max-conns, another
            // worker may accept its next connection at once).
            self.ctx.stats.closed();
            drop(conn);
            self.free.push(slot);
            self.arm_accept();
        }
    }
}

/// Counts the error that ends `conn`; `pump` then cancels its requests and
/// closes it once their last completions are in.
/// Arms a connection's receive: a one-shot recv, or a multishot one.
fn arm_recv(ring: &mut Ring, fd: BorrowedFd<'_>, user_data: u64, once: bool) -> OpId {
    if once {
        ring.recv_once(fd, user_data)
    } else {
        ring.recv_multi(fd, user_data)
    }
}

fn fail(conn: &mut Conn, ctx: &Context, e: io::Error) {
    ctx.stats.conn_failed(&e);
    conn.failed = true;
    conn.queued = Vec::new();
}
