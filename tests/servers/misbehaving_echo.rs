//! A misbehaving echo server for the tests of `c10k load`: it drops bytes,
//! echoes wrong bytes, resets, stalls, hangs up at once or refuses, so the
//! tests can check that the client counts each fault exactly and by kind.
//!
//! It runs inside the test process: a thread accepts on a non-blocking
//! listener bound to 127.0.0.1:0, polled with a short timeout, and each
//! connection gets a thread of its own doing blocking reads and writes with
//! short timeouts (at most [`MAX_CONNS`] at once; tests use a few hundred).
//! Every loop re-checks a stop flag at least every [`TICK`] and ends after
//! [`LIFETIME`] at the latest, and a stall waits on a condition variable that
//! a drop signals, so dropping a [`Misbehave`] stops it within about a tick:
//! threads joined, listener and connections closed. A test can never hang
//! on it.
//!
//! Byte positions in [`Fault::DropBytes`] and [`Fault::Corrupt`] count from
//! the start of each connection, so a client knows exactly which bytes go
//! missing or come back wrong.
//!
//! It is the one fixture server written in Rust; it lives here with the
//! others, and the test binary takes it in by path (`tests/it/main.rs`),
//! where its self-tests, at the end of this file, run beside the rest.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use socket2::{Domain, SockRef, Socket, Type};

use crate::support::{pattern, PATIENCE};

/// How often every blocked thread looks at the stop flag.
const TICK: Duration = Duration::from_millis(50);
/// No thread of the server lives longer than this, whatever happens.
const LIFETIME: Duration = Duration::from_secs(300);
/// Connections served at once; past this, one is accepted and closed.
pub const MAX_CONNS: usize = 1024;
/// Connections taken from the backlog per wake-up of the acceptor.
const ACCEPT_BATCH: usize = 64;
/// Read size of a connection thread.
const BUFFER: usize = 16 * 1024;

/// How the server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Well-behaved: echoes every byte.
    Echo,
    /// Silently drops one byte of every `every` received: on each
    /// connection, bytes number `every`, `2 × every`, … (counting from 1)
    /// are not echoed. `every == 0` drops nothing.
    DropBytes { every: usize },
    /// Flips (XOR 0xFF) one byte of every `every` echoed: on each
    /// connection, bytes number `every`, `2 × every`, … (counting from 1).
    /// `every == 0` flips nothing.
    Corrupt { every: usize },
    /// Per connection: after echoing exactly this many bytes, close with
    /// SO_LINGER 0, so the client sees a reset (after the echoed bytes).
    ResetAfter { bytes: u64 },
    /// Per server: the first time the total of bytes received passes
    /// `after_bytes`, stop reading and writing on *all* connections for
    /// `for_ms` milliseconds, then carry on. The bytes that crossed the
    /// mark are echoed after the stall. Happens once.
    StallOnce { after_bytes: u64, for_ms: u64 },
    /// Accept each connection and close it at once.
    CloseAfterAccept,
    /// Echo every byte, but sleep this many milliseconds before each echo:
    /// a server slow without using any CPU.
    SlowReads { ms: u64 },
    /// No listener: connects are refused. The port stays bound (without
    /// listening) while the server lives, so nobody else can take it.
    Refuse,
}

/// A running misbehaving server; dropping it stops it.
pub struct Misbehave {
    /// Where to connect.
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    /// [`Fault::Refuse`]: the bound socket that never listens.
    _reserved: Option<Socket>,
}

/// What the threads of one server share.
struct Shared {
    fault: Fault,
    stop: AtomicBool,
    /// Paired with `wake`: a stalled thread waits here, a drop signals.
    lock: Mutex<()>,
    wake: Condvar,
    accepted: AtomicU64,
    bytes_in: AtomicU64,
    /// [`Fault::StallOnce`]: set once, when the stall starts; it ends here.
    stall_until: OnceLock<Instant>,
    /// Connection threads not yet joined.
    conns: Mutex<Vec<JoinHandle<()>>>,
}

impl Misbehave {
    /// Starts a server with `fault` on 127.0.0.1 and a free port.
    ///
    /// Panics if it cannot bind or spawn its acceptor (a broken test host).
    pub fn start(fault: Fault) -> Misbehave {
        let shared = Arc::new(Shared {
            fault,
            stop: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            accepted: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            stall_until: OnceLock::new(),
            conns: Mutex::new(Vec::new()),
        });
        let any: SocketAddr = "127.0.0.1:0".parse().expect("a socket address");
        if fault == Fault::Refuse {
            let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("a TCP socket");
            socket.bind(&any.into()).expect("bind 127.0.0.1:0");
            let addr = socket
                .local_addr()
                .ok()
                .and_then(|a| a.as_socket())
                .expect("the bound address");
            return Misbehave {
                addr,
                shared,
                acceptor: None,
                _reserved: Some(socket),
            };
        }
        let listener = TcpListener::bind(any).expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("the bound address");
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("misbehave-accept".into())
                .spawn(move || accept_loop(&shared, listener))
                .expect("spawn the acceptor")
        };
        Misbehave {
            addr,
            shared,
            acceptor: Some(acceptor),
            _reserved: None,
        }
    }

    /// Connections accepted so far (including those closed at once).
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Bytes received so far over all connections (dropped ones included).
    pub fn bytes_in(&self) -> u64 {
        self.shared.bytes_in.load(Ordering::SeqCst)
    }
}

impl Drop for Misbehave {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Taking the lock orders the flag before the wake-up for a thread
        // that checked it and is about to wait.
        drop(
            self.shared
                .lock
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.shared.wake.notify_all();
        // The acceptor first, so no connection thread starts after the join.
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let conns = std::mem::take(
            &mut *self
                .shared
                .conns
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for conn in conns {
            let _ = conn.join();
        }
    }
}

impl Shared {
    /// Whether to carry on: not stopped and before `deadline`.
    fn running(&self, deadline: Instant) -> bool {
        !self.stop.load(Ordering::SeqCst) && Instant::now() < deadline
    }

    /// Counts `n` received bytes and starts the stall if they cross its mark.
    fn received(&self, n: usize) {
        let before = self.bytes_in.fetch_add(n as u64, Ordering::SeqCst);
        if let Fault::StallOnce {
            after_bytes,
            for_ms,
        } = self.fault
        {
            // fetch_add makes exactly one reader the one that crosses.
            if before <= after_bytes && before + n as u64 > after_bytes {
                let _ = self
                    .stall_until
                    .set(Instant::now() + Duration::from_millis(for_ms));
            }
        }
    }

    /// During the stall: waits until it is over, the server stops, or
    /// `deadline`. Returns whether to carry on.
    fn hold(&self, deadline: Instant) -> bool {
        let Some(&until) = self.stall_until.get() else {
            return self.running(deadline);
        };
        self.wait_until(until.min(deadline), deadline)
    }

    /// [`Fault::SlowReads`]: waits `pause`, or less if the server stops.
    /// Returns whether to carry on.
    fn pause(&self, pause: Duration, deadline: Instant) -> bool {
        self.wait_until((Instant::now() + pause).min(deadline), deadline)
    }

    /// Waits on the stop signal until `until`; whether to carry on.
    fn wait_until(&self, until: Instant, deadline: Instant) -> bool {
        let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        // Bounded: each wait ends at `until` or on the drop's signal; the
        // count only guards against a storm of spurious wake-ups.
        for _ in 0..10_000 {
            let now = Instant::now();
            if self.stop.load(Ordering::SeqCst) || now >= until {
                break;
            }
            guard = self
                .wake
                .wait_timeout(guard, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        drop(guard);
        self.running(deadline)
    }
}

/// Accepts until stopped; each connection gets a thread (or, for
/// [`Fault::CloseAfterAccept`] and past [`MAX_CONNS`], is closed at once).
fn accept_loop(shared: &Arc<Shared>, listener: TcpListener) {
    let deadline = Instant::now() + LIFETIME;
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: TICK.as_nanos() as _,
    };
    while shared.running(deadline) {
        let mut fds = [PollFd::new(&listener, PollFlags::IN)];
        match poll(&mut fds, Some(&tick)) {
            Ok(0) => continue,
            Ok(_) => {}
            // EINTR, or worse: the loop is bounded by the deadline anyway.
            Err(_) => continue,
        }
        for _ in 0..ACCEPT_BATCH {
            let stream = match listener.accept() {
                Ok((stream, _)) => stream,
                // WouldBlock: the backlog is empty. Anything else (EMFILE,
                // ECONNABORTED): back to poll, try again later.
                Err(_) => break,
            };
            // Counted before anything happens on the connection, so a client
            // that saw any reaction can rely on the count.
            shared.accepted.fetch_add(1, Ordering::SeqCst);
            if shared.fault == Fault::CloseAfterAccept {
                drop(stream);
                continue;
            }
            let mut conns = shared.conns.lock().unwrap_or_else(PoisonError::into_inner);
            conns.retain(|c| !c.is_finished());
            if conns.len() >= MAX_CONNS {
                continue;
            }
            let worker = Arc::clone(shared);
            let spawned = std::thread::Builder::new()
                .name("misbehave-conn".into())
                .stack_size(256 * 1024)
                .spawn(move || serve_conn(&worker, stream));
            // A thread that cannot be spawned drops its stream: closed.
            if let Ok(handle) = spawned {
                conns.push(handle);
            }
        }
    }
}

/// One connection: read, apply the fault, write back, until EOF, an error,
/// the reset, the stop or [`LIFETIME`].
fn serve_conn(shared: &Shared, mut stream: TcpStream) {
    let deadline = Instant::now() + LIFETIME;
    if stream.set_nonblocking(false).is_err()
        || stream.set_read_timeout(Some(TICK)).is_err()
        || stream.set_write_timeout(Some(TICK)).is_err()
    {
        return;
    }
    let _ = stream.set_nodelay(true);
    let mut buf = vec![0u8; BUFFER];
    // Bytes received and echoed on this connection so far.
    let mut received: u64 = 0;
    let mut echoed: u64 = 0;
    while shared.hold(deadline) {
        if let Fault::ResetAfter { bytes } = shared.fault {
            if echoed >= bytes {
                reset(stream);
                return;
            }
        }
        let n = match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if transient(e.kind()) => continue,
            Err(_) => return,
        };
        shared.received(n);
        if let Fault::SlowReads { ms } = shared.fault {
            // The fault itself: a pause of `ms`, which a drop cuts short.
            if !shared.pause(Duration::from_millis(ms), deadline) {
                return;
            }
        }
        let out = apply(shared.fault, &mut buf[..n], received, echoed);
        received += n as u64;
        // The stall may have started with this very read.
        if !shared.hold(deadline) || !send(shared, &mut stream, &buf[..out], deadline) {
            return;
        }
        echoed += out as u64;
    }
}

/// Applies `fault` in place to `data`, the bytes just received on a
/// connection that had received `received` and echoed `echoed` before them.
/// Returns how many bytes from the start of `data` to echo.
fn apply(fault: Fault, data: &mut [u8], received: u64, echoed: u64) -> usize {
    // Whether the byte at 0-based connection offset `i` is an `every`-th one.
    let nth = |i: u64, every: usize| every > 0 && (i + 1) % every as u64 == 0;
    match fault {
        Fault::DropBytes { every } => {
            let mut kept = 0;
            for i in 0..data.len() {
                if !nth(received + i as u64, every) {
                    data[kept] = data[i];
                    kept += 1;
                }
            }
            kept
        }
        Fault::Corrupt { every } => {
            for (i, b) in data.iter_mut().enumerate() {
                if nth(echoed + i as u64, every) {
                    *b ^= 0xFF;
                }
            }
            data.len()
        }
        Fault::ResetAfter { bytes } => {
            let left = bytes.saturating_sub(echoed);
            data.len().min(usize::try_from(left).unwrap_or(usize::MAX))
        }
        Fault::Echo
        | Fault::StallOnce { .. }
        | Fault::CloseAfterAccept
        | Fault::Refuse
        | Fault::SlowReads { .. } => data.len(),
    }
}

/// Writes all of `data`, re-checking the stop flag at every write timeout.
fn send(shared: &Shared, stream: &mut TcpStream, mut data: &[u8], deadline: Instant) -> bool {
    while !data.is_empty() {
        if !shared.running(deadline) {
            return false;
        }
        match stream.write(data) {
            Ok(0) => return false,
            Ok(n) => data = &data[n..],
            Err(e) if transient(e.kind()) => {}
            Err(_) => return false,
        }
    }
    true
}

/// A timeout or an interruption: try again.
fn transient(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

/// Closes with SO_LINGER 0: the kernel sends RST instead of FIN.
///
/// On loopback an echoed write is already in the peer's receive queue (the
/// peer reads, so its window is open), so the reset discards nothing the
/// client was owed; the client reads the echoed bytes, then ECONNRESET.
fn reset(stream: TcpStream) {
    let _ = SockRef::from(&stream).set_linger(Some(Duration::ZERO));
    drop(stream);
}

// ---------------------------------------------------------------------------
// Self-tests: each fault against a plain blocking client.

tests![
    echo_echoes_everything,
    drop_bytes_drops_every_nth,
    corrupt_flips_every_nth,
    reset_after_echoes_then_resets,
    stall_once_holds_every_connection,
    close_after_accept_closes,
    refuse_refuses,
    drop_stops_the_server,
    drop_ends_a_stall_early,
];

/// A client connection whose reads and writes fail after [`PATIENCE`].
fn client(addr: SocketAddr) -> Result<TcpStream, Failed> {
    let s = TcpStream::connect_timeout(&addr, PATIENCE)
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    s.set_read_timeout(Some(PATIENCE))?;
    s.set_write_timeout(Some(PATIENCE))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// `n` bytes of the test pattern starting at `from`.
fn bytes(from: u64, n: usize) -> Vec<u8> {
    (from..from + n as u64).map(pattern).collect()
}

/// Reads until EOF or an error (bounded by [`PATIENCE`] per read and by
/// `limit` bytes); returns what came and how it ended (`None`: EOF).
fn drain(s: &mut TcpStream, limit: usize) -> (Vec<u8>, Option<ErrorKind>) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.len() <= limit {
        match s.read(&mut buf) {
            Ok(0) => return (got, None),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return (got, Some(e.kind())),
        }
    }
    (got, Some(ErrorKind::Other))
}

fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), Failed> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}").into())
    }
}

fn echo_echoes_everything() -> Result<(), Failed> {
    let server = Misbehave::start(Fault::Echo);
    let mut s = client(server.addr)?;
    // 64 round trips of 4 KiB: never more in flight than the buffers hold.
    let chunk = 4096;
    for k in 0..64u64 {
        let sent = bytes(k * chunk as u64, chunk);
        s.write_all(&sent)?;
        let mut got = vec![0u8; chunk];
        s.read_exact(&mut got)?;
        if got != sent {
            return Err(format!("round trip {k}: echo differs from what was sent").into());
        }
    }
    s.shutdown(Shutdown::Write)?;
    let (rest, end) = drain(&mut s, 0);
    expect_eq("after our FIN", (rest.len(), end), (0, None))?;
    expect_eq("accepted", server.accepted(), 1)?;
    expect_eq("bytes_in", server.bytes_in(), 64 * chunk as u64)
}

fn drop_bytes_drops_every_nth() -> Result<(), Failed> {
    let every = 10;
    let server = Misbehave::start(Fault::DropBytes { every });
    // Two connections: the count restarts on each.
    for _ in 0..2 {
        let mut s = client(server.addr)?;
        let sent = bytes(0, 1000);
        // Two writes, so the count must carry over between reads.
        s.write_all(&sent[..333])?;
        s.write_all(&sent[333..])?;
        s.shutdown(Shutdown::Write)?;
        let (got, end) = drain(&mut s, sent.len());
        let want: Vec<u8> = sent
            .iter()
            .enumerate()
            .filter(|(i, _)| (i + 1) % every != 0)
            .map(|(_, &b)| b)
            .collect();
        expect_eq("how the echo ended", end, None)?;
        expect_eq("bytes echoed", got.len(), 900)?;
        if got != want {
            return Err("the echo is not the input without every 10th byte".into());
        }
    }
    expect_eq("accepted", server.accepted(), 2)?;
    expect_eq("bytes_in", server.bytes_in(), 2000)
}

fn corrupt_flips_every_nth() -> Result<(), Failed> {
    let every = 7;
    let server = Misbehave::start(Fault::Corrupt { every });
    let mut s = client(server.addr)?;
    let sent = bytes(0, 700);
    s.write_all(&sent[..100])?;
    s.write_all(&sent[100..])?;
    s.shutdown(Shutdown::Write)?;
    let (got, end) = drain(&mut s, sent.len());
    expect_eq("how the echo ended", end, None)?;
    expect_eq("bytes echoed", got.len(), sent.len())?;
    for (i, (&g, &w)) in got.iter().zip(&sent).enumerate() {
        let want = if (i + 1) % every == 0 { w ^ 0xFF } else { w };
        if g != want {
            return Err(format!("byte {i}: got {g:#04x}, want {want:#04x}").into());
        }
    }
    expect_eq("bytes_in", server.bytes_in(), 700)
}

fn reset_after_echoes_then_resets() -> Result<(), Failed> {
    let server = Misbehave::start(Fault::ResetAfter { bytes: 1000 });
    let mut s = client(server.addr)?;
    let sent = bytes(0, 1200);
    s.write_all(&sent[..600])?;
    let mut first = vec![0u8; 600];
    s.read_exact(&mut first)?;
    // More than the server will echo: it echoes 400 of these, then resets.
    s.write_all(&sent[600..])?;
    let (rest, end) = drain(&mut s, sent.len());
    expect_eq(
        "how the connection ended",
        end,
        Some(ErrorKind::ConnectionReset),
    )?;
    expect_eq("bytes echoed", 600 + rest.len(), 1000)?;
    if first != sent[..600] || rest != sent[600..1000] {
        return Err("the echo before the reset differs from what was sent".into());
    }
    // Per connection: a second one gets its own 1000 bytes.
    let mut s = client(server.addr)?;
    s.write_all(&sent[..1000])?;
    let mut again = vec![0u8; 1000];
    s.read_exact(&mut again)?;
    let (rest, end) = drain(&mut s, sent.len());
    expect_eq(
        "second connection",
        (rest.len(), end),
        (0, Some(ErrorKind::ConnectionReset)),
    )
}

fn stall_once_holds_every_connection() -> Result<(), Failed> {
    let for_ms = 300;
    let server = Misbehave::start(Fault::StallOnce {
        after_bytes: 100,
        for_ms,
    });
    let (mut a, mut b) = (client(server.addr)?, client(server.addr)?);
    let round_trip = |s: &mut TcpStream, n: usize| -> Result<(), Failed> {
        let sent = bytes(0, n);
        s.write_all(&sent)?;
        let mut got = vec![0u8; n];
        s.read_exact(&mut got)?;
        expect_eq("echo", got, sent)
    };
    // 90 bytes in: below the mark, no stall.
    round_trip(&mut a, 50)?;
    round_trip(&mut b, 40)?;
    // These 20 cross the mark: from here on nothing moves on any connection
    // for `for_ms`. The server guarantees the lower bounds checked below;
    // no upper bound is checked (timing is not a pass/fail matter).
    let start = Instant::now();
    a.write_all(&bytes(0, 20))?;
    // b must not race a's bytes to the server: wait (bounded) for the stall.
    let deadline = start + PATIENCE;
    while server.shared.stall_until.get().is_none() {
        if Instant::now() > deadline {
            return Err("the stall never started".into());
        }
        std::thread::yield_now();
    }
    round_trip(&mut b, 10)?;
    let b_done = start.elapsed();
    let mut got = vec![0u8; 20];
    a.read_exact(&mut got)?;
    let a_done = start.elapsed();
    expect_eq("echo on a", got, bytes(0, 20))?;
    let stall = Duration::from_millis(for_ms);
    if a_done < stall || b_done < stall {
        return Err(format!(
            "stall of {stall:?} not held: the crossing connection echoed after \
             {a_done:?}, the other after {b_done:?}"
        )
        .into());
    }
    // And it carries on afterwards.
    round_trip(&mut a, 1000)?;
    round_trip(&mut b, 1000)?;
    expect_eq("bytes_in", server.bytes_in(), 2120)
}

fn close_after_accept_closes() -> Result<(), Failed> {
    let server = Misbehave::start(Fault::CloseAfterAccept);
    for k in 1..=3 {
        let mut s = client(server.addr)?;
        let (got, end) = drain(&mut s, 0);
        // Closed without reading anything: a FIN, seen as EOF.
        expect_eq("how the connection ended", (got.len(), end), (0, None))?;
        expect_eq("accepted", server.accepted(), k)?;
    }
    expect_eq("bytes_in", server.bytes_in(), 0)
}

fn refuse_refuses() -> Result<(), Failed> {
    let server = Misbehave::start(Fault::Refuse);
    for _ in 0..3 {
        match TcpStream::connect_timeout(&server.addr, PATIENCE) {
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(format!("connect failed, but not refused: {e}").into()),
            Ok(_) => return Err(format!("connected to {}", server.addr).into()),
        }
    }
    expect_eq("accepted", server.accepted(), 0)
}

/// Drops `server` on another thread; fails if that takes [`PATIENCE`].
fn drop_bounded(server: Misbehave) -> Result<Duration, Failed> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let start = Instant::now();
        drop(server);
        let _ = tx.send(start.elapsed());
    });
    rx.recv_timeout(PATIENCE)
        .map_err(|_| format!("dropping the server took more than {PATIENCE:?}").into())
}

fn drop_stops_the_server() -> Result<(), Failed> {
    let server = Misbehave::start(Fault::Echo);
    let addr = server.addr;
    let mut open: Vec<TcpStream> = Vec::new();
    for _ in 0..20 {
        let mut s = client(addr)?;
        s.write_all(b"ping")?;
        let mut got = [0u8; 4];
        s.read_exact(&mut got)?;
        open.push(s);
    }
    drop_bounded(server)?;
    // Every connection thread has ended and closed its socket…
    for s in &mut open {
        let (got, end) = drain(s, 0);
        if !got.is_empty() || !matches!(end, None | Some(ErrorKind::ConnectionReset)) {
            return Err(format!("after the drop a connection read {got:?}, {end:?}").into());
        }
    }
    // …and the listener is closed.
    match TcpStream::connect_timeout(&addr, PATIENCE) {
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => Ok(()),
        other => Err(format!("connect after the drop: {other:?}").into()),
    }
}

fn drop_ends_a_stall_early() -> Result<(), Failed> {
    // A stall far longer than PATIENCE: only the drop's signal ends it.
    let server = Misbehave::start(Fault::StallOnce {
        after_bytes: 0,
        for_ms: 10 * PATIENCE.as_millis() as u64,
    });
    let mut s = client(server.addr)?;
    s.write_all(b"x")?;
    // bytes_in is counted before the stall starts; wait (bounded) for it,
    // so the drop below surely meets a stalled thread.
    let deadline = Instant::now() + PATIENCE;
    while server.bytes_in() == 0 {
        if Instant::now() > deadline {
            return Err("the server never read the byte".into());
        }
        std::thread::yield_now();
    }
    drop_bounded(server)?;
    let (got, end) = drain(&mut s, 0);
    if !got.is_empty() || !matches!(end, None | Some(ErrorKind::ConnectionReset)) {
        return Err(format!("after the drop the connection read {got:?}, {end:?}").into());
    }
    Ok(())
}
