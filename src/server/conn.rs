//! The one connection state machine every model runs: echo (RFC 862), or
//! HTTP/1.1 with `--protocol http`.
//!
//! A connection owns a bounded buffer (`--buffer`, 16 KiB by default). It
//! reads into the buffer, writes it all back, and only then reads again, so a
//! peer that stops reading makes the server stop reading from it: TCP flow
//! control pushes back on the sender and memory stays bounded at one buffer
//! per connection. Writes may be partial; the rest is written when the socket
//! is writable again. When the peer shuts down its write side (read returns
//! 0), everything still owed is sent before the connection is closed.
//!
//! With `--work`, every `--message-size` bytes are a request: its bytes are
//! echoed only once its work is done ([`super::work::Requests`]), in order;
//! a request not yet whole stays at the front of the buffer for its rest,
//! and a request that waits returns [`Want::Wait`] (the model times it its
//! own way). Without work the path is the plain one above, unchanged.
//!
//! The same code serves blocking sockets (it simply returns when the peer is
//! done) and non-blocking ones (it returns what to wait for next), so the
//! thread, process, readiness and async models differ only in how they wait.
//!
//! With `--protocol http` ([`Work::http`]) the bytes read are requests,
//! answered by [`super::http::Exchange`] into an output queue that is
//! written before more is read, on the same terms: a request's work first,
//! answers in order, a peer that does not read stops the reading once
//! [`super::http::OUT_LIMIT`] bytes of answers wait, a head not yet whole
//! stays at the front of the buffer for its rest. A response that ends the
//! connection (`Connection: close`, HTTP/1.0, a refusal) is written, what
//! the peer sent meanwhile is read and dropped, and the connection is
//! `Done`.
//!
//! Memory: a connection holds its buffer only while it needs one. When a
//! non-blocking read would block with nothing owed, the buffer goes back to
//! a small per-thread spare list and the next readable event takes one from
//! it (no allocation, no zeroing per event). So an idle connection of a
//! readiness or async model costs no buffer, while a blocking model's thread
//! or process holds one for as long as it is parked in read: that difference
//! is the models', not the state machine's.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsFd;

use super::http::{Exchange, OUT_LIMIT};
use super::work::{Http, Next, Requests, Work};
use super::Stats;

/// How far a connection reads on one report that it is readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reads {
    /// Until the socket would block (or the budget is spent): a waiter that
    /// reports edges (`epoll --edge`, `sigio`) says nothing more about
    /// bytes already there, and a blocking socket reads until the peer is
    /// done.
    ToEmpty,
    /// Until a read shorter than the buffer has been echoed: the socket
    /// held no more than that, and a level-triggered waiter (select, poll,
    /// epoll) reports it again if more came since, or the peer hung up. So
    /// the read that would only find it empty (EAGAIN) is not made: one
    /// read a message at depth 1 instead of two, as the C loops do.
    UntilShort,
}

/// What a connection needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Wait until the socket is readable.
    Read,
    /// Wait until the socket is writable (the peer is slow to read).
    Write,
    /// The read budget ran out while data may still be waiting: call again
    /// soon (an edge-triggered loop will not be told a second time).
    More,
    /// The request in hand waits (`--work wait:`) until then: call again
    /// after it, without watching the socket meanwhile.
    Wait(std::time::Instant),
    /// Make this blocking call elsewhere (`--work block:` with
    /// [`Work::offload_block`]), then [`Conn::blocked`], then call again.
    Block(std::time::Duration),
    /// The peer closed and everything owed was sent: close the socket.
    Done,
}

/// Spare buffers kept per thread for connections that become readable.
const SPARES: usize = 64;

thread_local! {
    static SPARE: RefCell<Vec<Box<[u8]>>> = const { RefCell::new(Vec::new()) };
    static SPARE_OUT: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// An empty output queue for HTTP answers: a spare one if this thread has
/// it, its capacity kept from the connection that last used it.
fn take_out() -> Vec<u8> {
    SPARE_OUT.with(|s| s.borrow_mut().pop()).unwrap_or_default()
}

/// Keeps an emptied output queue for the next connection on this thread,
/// up to [`SPARES`], unless it grew past [`OUT_LIMIT`] twice over (a large
/// `--response-size`): that one is freed.
fn give_out(mut out: Vec<u8>) {
    if out.capacity() == 0 || out.capacity() > 2 * OUT_LIMIT {
        return;
    }
    out.clear();
    let _ = SPARE_OUT.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < SPARES {
            s.push(out);
        }
    });
}

/// A buffer of `capacity` bytes: a spare one if this thread has it.
fn take_buffer(capacity: usize) -> Box<[u8]> {
    SPARE
        .with(|s| {
            let mut s = s.borrow_mut();
            match s.last() {
                Some(b) if b.len() == capacity => s.pop(),
                _ => None,
            }
        })
        .unwrap_or_else(|| vec![0; capacity].into_boxed_slice())
}

/// Keeps `buf` for the next connection on this thread, up to [`SPARES`].
fn give_buffer(buf: Box<[u8]>) {
    // During thread exit the list may be gone; the buffer is then freed.
    let _ = SPARE.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < SPARES {
            s.push(buf);
        }
    });
}

/// Puts a buffer of `capacity` bytes in this thread's spare list now. A
/// forking parent calls it before its first fork, so every child takes a
/// buffer that already exists, its pages copied only where the child writes,
/// instead of setting up the thread-local list (a TLS destructor, resolved
/// lazily by ld.so in each child) and allocating from a heap the parent
/// left fragmented: a fork child made 65 page faults before its first
/// echo, 20 with the buffer ready (the plain C child: 21).
pub(crate) fn keep_buffer(capacity: usize) {
    give_buffer(vec![0; capacity].into_boxed_slice());
}

/// The per-connection echo state.
#[derive(Debug)]
pub struct Conn {
    /// Present while reading or owing bytes; see the module docs.
    buf: Option<Box<[u8]>>,
    capacity: usize,
    /// Bytes `head..tail` of `buf` are read but not yet echoed.
    head: usize,
    tail: usize,
    /// The peer has shut down its write side.
    eof: bool,
    /// Its number in the `--shared-state` table, from its first read.
    id: Option<u64>,
    /// With `--work`: where its requests stand (boxed: a plain echo pays
    /// 8 bytes for it, not its size).
    framed: Option<Box<Framed>>,
    /// With `--protocol http`: its requests and the answers not yet
    /// written (boxed, as `framed`).
    http: Option<Box<Served>>,
}

/// A connection's HTTP requests and the answers queued for it.
#[derive(Debug, Default)]
struct Served {
    exchange: Exchange,
    /// Answers not yet written: `out[sent..]`. Empty and given back to the
    /// spare list while nothing is owed.
    out: Vec<u8>,
    sent: usize,
}

/// A connection's requests under `--work`.
#[derive(Debug, Default)]
struct Framed {
    /// Bytes `head..ready` of the buffer are done and may be echoed;
    /// `ready..tail` are not yet (a request in progress, or a partial one).
    ready: usize,
    requests: Requests,
}

impl Conn {
    /// A connection with a buffer of `capacity` bytes (at least 1).
    pub fn new(capacity: usize) -> Conn {
        Conn {
            buf: None,
            capacity: capacity.max(1),
            head: 0,
            tail: 0,
            eof: false,
            id: None,
            framed: None,
            http: None,
        }
    }

    /// Bytes read from the peer and not yet written back.
    pub fn owed(&self) -> usize {
        self.tail - self.head
    }

    /// Gives the buffer back to this thread's spare list: called by the
    /// thread that served the connection when it ends, so a pool thread's
    /// next connection reuses it (dropping the connection elsewhere would
    /// hand it to a thread that never serves).
    pub(crate) fn release(&mut self) {
        if let Some(b) = self.buf.take() {
            give_buffer(b);
        }
        if let Some(h) = &mut self.http {
            give_out(std::mem::take(&mut h.out));
            h.sent = 0;
        }
    }

    /// Whether the connection holds a buffer now.
    #[cfg(test)]
    fn holds_buffer(&self) -> bool {
        self.buf.is_some()
    }

    /// Echoes as much as the socket allows: at most `budget` reads, stopping
    /// early when a read or write would block. On a blocking socket it runs
    /// until the peer is done (or a request waits). Echoed bytes are added
    /// to `stats`. With `work`, each request is echoed once its work is
    /// done ([`Conn::drive_framed`]).
    pub(crate) fn drive<S: Read + Write + AsFd>(
        &mut self,
        sock: &mut S,
        budget: usize,
        reads: Reads,
        stats: &Stats,
        work: &Work,
    ) -> io::Result<Want> {
        if let Some(http) = &work.http {
            let mut h = self.http.take().unwrap_or_default();
            let want = self.serve_http(sock, budget, reads, stats, work, http, &mut h);
            self.http = Some(h);
            want
        } else if work.is_none() {
            self.drive_plain(sock, budget, reads, stats)
        } else {
            self.drive_framed(sock, budget, stats, work)
        }
    }

    /// The plain echo: everything read is owed at once.
    fn drive_plain<S: Read + Write>(
        &mut self,
        sock: &mut S,
        budget: usize,
        until: Reads,
        stats: &Stats,
    ) -> io::Result<Want> {
        let mut reads = 0;
        let mut short = false;
        loop {
            if !self.flush(sock, stats, self.tail)? {
                return Ok(Want::Write);
            }
            if self.eof {
                return Ok(Want::Done);
            }
            if short {
                // Echoed whole: nothing owed, so no buffer held.
                if let Some(b) = self.buf.take() {
                    give_buffer(b);
                }
                return Ok(Want::Read);
            }
            if reads == budget {
                return Ok(Want::More);
            }
            let capacity = self.capacity;
            let buf = self.buf.get_or_insert_with(|| take_buffer(capacity));
            match sock.read(buf) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    short = until == Reads::UntilShort && n < buf.len();
                    self.head = 0;
                    self.tail = n;
                    reads += 1;
                    stats.state.read(&mut self.id, n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Nothing owed (flushed above): an idle connection
                    // holds no buffer.
                    if let Some(b) = self.buf.take() {
                        give_buffer(b);
                    }
                    return Ok(Want::Read);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The echo of requests: every `work.request` bytes are one request,
    /// done ([`Requests`]) before they are echoed, in order. Bytes of a
    /// request not yet whole stay at the front of the buffer (moved there
    /// before the next read, fewer than a request's bytes) and are read
    /// after; the buffer holds at least one request (the plan checks
    /// `--buffer` against `--message-size`). While a request waits, nothing
    /// more is read: the peer's next requests queue in the kernel.
    fn drive_framed<S: Read + Write>(
        &mut self,
        sock: &mut S,
        budget: usize,
        stats: &Stats,
        work: &Work,
    ) -> io::Result<Want> {
        let mut f = self.framed.take().unwrap_or_default();
        let want = self.frame(sock, budget, stats, work, &mut f);
        self.framed = Some(f);
        want
    }

    fn frame<S: Read + Write>(
        &mut self,
        sock: &mut S,
        budget: usize,
        stats: &Stats,
        work: &Work,
        f: &mut Framed,
    ) -> io::Result<Want> {
        let mut reads = 0;
        loop {
            let (done, next) = f.requests.run(work, self.tail - f.ready, self.eof, stats);
            f.ready += done;
            if !self.flush(sock, stats, f.ready)? {
                return Ok(Want::Write);
            }
            if self.head == 0 && self.tail == 0 {
                f.ready = 0;
            }
            match next {
                Next::Wait(until) => return Ok(Want::Wait(until)),
                Next::Block(d) => return Ok(Want::Block(d)),
                Next::Idle => {}
            }
            if self.eof {
                return Ok(Want::Done);
            }
            if reads == budget {
                return Ok(Want::More);
            }
            let capacity = self.capacity;
            let buf = self.buf.get_or_insert_with(|| take_buffer(capacity));
            if self.head > 0 {
                // Only part of a request is left: move it to the front.
                buf.copy_within(self.head..self.tail, 0);
                self.tail -= self.head;
                f.ready -= self.head;
                self.head = 0;
            }
            match sock.read(&mut buf[self.tail..]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.tail += n;
                    reads += 1;
                    stats.state.read(&mut self.id, n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.tail == 0 {
                        if let Some(b) = self.buf.take() {
                            give_buffer(b);
                        }
                    }
                    return Ok(Want::Read);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// HTTP: answers the requests read, writes the answers, and reads
    /// again only once they are written (or fewer than [`OUT_LIMIT`] wait
    /// while the socket takes no more): see the module docs.
    #[allow(clippy::too_many_arguments)]
    fn serve_http<S: Read + Write + AsFd>(
        &mut self,
        sock: &mut S,
        budget: usize,
        until: Reads,
        stats: &Stats,
        work: &Work,
        http: &Http,
        h: &mut Served,
    ) -> io::Result<Want> {
        let mut reads = 0;
        let mut short = false;
        loop {
            let input = match self.buf.as_deref() {
                Some(buf) => &buf[self.head..self.tail],
                None => &[][..],
            };
            let mut next = Next::Idle;
            let mut full = false;
            if !input.is_empty() || h.exchange.busy() {
                if h.out.capacity() == 0 {
                    h.out = take_out();
                }
                let (used, n) = h.exchange.answer(input, &mut h.out, http, work, stats);
                self.head += used;
                next = n;
                full = h.out.len() >= OUT_LIMIT;
            }
            while h.sent < h.out.len() {
                match sock.write(&h.out[h.sent..]) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        h.sent += n;
                        stats.add_bytes(n as u64);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Want::Write),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            h.out.clear();
            h.sent = 0;
            if h.exchange.closing() {
                linger(sock.as_fd());
                self.head = 0;
                self.tail = 0;
                return Ok(Want::Done);
            }
            match next {
                Next::Wait(until) => return Ok(Want::Wait(until)),
                Next::Block(d) => return Ok(Want::Block(d)),
                Next::Idle => {}
            }
            if full {
                // Answering stopped at the queue's bound: answer on.
                continue;
            }
            if self.eof {
                // A head the peer never finished gets no answer.
                return Ok(Want::Done);
            }
            if self.head == self.tail {
                self.head = 0;
                self.tail = 0;
            }
            if short {
                self.idle(h);
                return Ok(Want::Read);
            }
            if reads == budget {
                return Ok(Want::More);
            }
            let capacity = self.capacity;
            let buf = self.buf.get_or_insert_with(|| take_buffer(capacity));
            if self.head > 0 {
                // Part of a head is left: move it to the front.
                buf.copy_within(self.head..self.tail, 0);
                self.tail -= self.head;
                self.head = 0;
            }
            // The buffer is never full here: a part of a head as long as
            // it (the header limit) was refused above.
            match sock.read(&mut buf[self.tail..]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    short = until == Reads::UntilShort && self.tail + n < buf.len();
                    self.tail += n;
                    reads += 1;
                    stats.state.read(&mut self.id, n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.idle(h);
                    return Ok(Want::Read);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Gives back the buffers of an HTTP connection that owes nothing and
    /// holds no part of a head.
    fn idle(&mut self, h: &mut Served) {
        if self.tail == 0 {
            if let Some(b) = self.buf.take() {
                give_buffer(b);
            }
        }
        give_out(std::mem::take(&mut h.out));
    }

    /// The blocking call handed out with [`Want::Block`] returned.
    pub(crate) fn blocked(&mut self) {
        if let Some(f) = &mut self.framed {
            f.requests.blocked();
        }
        if let Some(h) = &mut self.http {
            h.exchange.blocked();
        }
    }

    /// Writes what is owed up to `end` of the buffer, counting it in
    /// `stats` as it goes (a blocking connection may live as long as the
    /// server); `Ok(false)` when the socket would block first. Once
    /// everything read is written, the buffer starts over.
    fn flush<S: Write>(&mut self, sock: &mut S, stats: &Stats, end: usize) -> io::Result<bool> {
        // Bytes are owed only while there is a buffer holding them.
        let Some(buf) = self.buf.as_deref() else {
            return Ok(true);
        };
        while self.head < end {
            match sock.write(&buf[self.head..end]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.head += n;
                    stats.add_bytes(n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.head == self.tail {
            self.head = 0;
            self.tail = 0;
        }
        Ok(true)
    }
}

/// Before a connection the server ends (HTTP's `Connection: close`, a
/// refusal) is closed: sends its end of the stream, so the peer reads the
/// last answer and then the end, blocking model or not; then reads and
/// drops what the peer sent meanwhile, without waiting (at most 4 reads
/// of 4 KiB): closing a socket with unread bytes resets it, and a reset
/// can destroy the last answer before the peer reads it.
pub(crate) fn linger(fd: std::os::fd::BorrowedFd<'_>) {
    use rustix::net::{recv, shutdown, RecvFlags, Shutdown};
    let _ = shutdown(fd, Shutdown::Write);
    let mut scratch = [0u8; 4096];
    for _ in 0..4 {
        match recv(fd, &mut scratch, RecvFlags::DONTWAIT) {
            Ok((n, _)) if n > 0 => {}
            Err(rustix::io::Errno::INTR) => {}
            _ => break,
        }
    }
}

/// The whole life of a connection on a blocking socket (`threads`, `fork`,
/// `prefork`): echo until the peer is done, sleeping through a request's
/// `wait` (a blocking model has nothing else to do meanwhile), and count
/// how it ended; the close is counted before the socket closes, so a
/// client that has seen EOF can rely on its slot being free.
pub(crate) fn serve_blocking(stream: TcpStream, buffer: usize, stats: &Stats, work: &Work) {
    let mut stream = stream;
    let mut conn = Conn::new(buffer);
    let ended = loop {
        match conn.drive(&mut stream, usize::MAX, Reads::ToEmpty, stats, work) {
            // Slept as a blocking call, which a stop of the server ends.
            Ok(Want::Wait(until)) => {
                super::work::block(until.saturating_duration_since(std::time::Instant::now()))
            }
            Ok(Want::Done) => break Ok(()),
            // A blocking socket neither would block nor runs out of
            // budget; none hands calls off.
            Ok(_) => continue,
            Err(e) => break Err(e),
        }
    };
    if let Err(e) = ended {
        stats.conn_failed(&e);
    }
    stats.closed();
    drop(stream);
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A socket stand-in: reads from `input` in chunks, accepts at most
    /// `room` bytes per write, and would-block when either runs dry.
    struct Fake {
        input: VecDeque<Vec<u8>>,
        output: Vec<u8>,
        room: usize,
        closed: bool,
    }

    impl Read for Fake {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.input.front_mut() {
                Some(chunk) => {
                    let n = chunk.len().min(buf.len());
                    buf[..n].copy_from_slice(&chunk[..n]);
                    chunk.drain(..n);
                    if chunk.is_empty() {
                        self.input.pop_front();
                    }
                    Ok(n)
                }
                None if self.closed => Ok(0),
                None => Err(io::ErrorKind::WouldBlock.into()),
            }
        }
    }

    /// `linger` shuts down and reads a descriptor: /dev/null refuses
    /// both, as a socket that is gone would.
    impl AsFd for Fake {
        fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
            static NULL: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();
            NULL.get_or_init(|| std::fs::File::open("/dev/null").unwrap())
                .as_fd()
        }
    }

    impl Write for Fake {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            self.output.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn partial_writes_then_half_close() {
        let stats = Stats::default();
        let data: Vec<u8> = (0..50_000u32).map(|i| i as u8).collect();
        let mut s = Fake {
            input: data.chunks(7000).map(<[u8]>::to_vec).collect(),
            output: Vec::new(),
            room: 1000,
            closed: true,
        };
        let mut c = Conn::new(4096);
        // The writer accepts 1000 bytes, then would block: the state machine
        // must stop reading (backpressure) and ask to write.
        assert_eq!(
            c.drive(&mut s, usize::MAX, Reads::ToEmpty, &stats, &Work::default())
                .unwrap(),
            Want::Write
        );
        assert_eq!(s.output.len(), 1000);
        assert!(c.owed() > 0 && c.owed() <= 4096);
        let mut rounds = 0;
        loop {
            s.room = 1000;
            match c
                .drive(&mut s, usize::MAX, Reads::ToEmpty, &stats, &Work::default())
                .unwrap()
            {
                Want::Done => break,
                Want::Write => {}
                other => panic!("unexpected {other:?}"),
            }
            rounds += 1;
            assert!(rounds < 100, "did not finish");
        }
        assert_eq!(s.output, data);
        assert_eq!(stats.summary("t").bytes_echoed, data.len() as u64);
    }

    #[test]
    fn an_idle_connection_holds_no_buffer() {
        let stats = Stats::default();
        let mut s = Fake {
            input: vec![vec![5; 100]].into(),
            output: Vec::new(),
            room: usize::MAX,
            closed: false,
        };
        let mut c = Conn::new(64);
        assert!(!c.holds_buffer());
        assert_eq!(
            c.drive(&mut s, 100, Reads::ToEmpty, &stats, &Work::default())
                .unwrap(),
            Want::Read
        );
        assert_eq!(s.output, vec![5; 100]);
        assert!(!c.holds_buffer(), "kept a buffer while idle");
        // Backpressure keeps it: bytes are owed.
        s.input.push_back(vec![6; 100]);
        s.room = 10;
        assert_eq!(
            c.drive(&mut s, 100, Reads::ToEmpty, &stats, &Work::default())
                .unwrap(),
            Want::Write
        );
        assert!(c.holds_buffer() && c.owed() > 0);
    }

    /// A level-triggered waiter's connection stops after a short read it
    /// echoed whole: the next chunk waits for the next report, and no
    /// buffer is held meanwhile. A full read reads on; a short one that
    /// cannot be echoed at once waits to write, as before.
    #[test]
    fn a_short_read_echoed_ends_a_level_triggered_turn() {
        let stats = Stats::default();
        let mut s = Fake {
            input: vec![vec![1; 64], vec![2; 64]].into(),
            output: Vec::new(),
            room: usize::MAX,
            closed: true,
        };
        let mut c = Conn::new(128);
        let drive = |c: &mut Conn, s: &mut Fake| {
            c.drive(s, 100, Reads::UntilShort, &stats, &Work::default())
                .unwrap()
        };
        assert_eq!(drive(&mut c, &mut s), Want::Read);
        assert_eq!((s.output.len(), s.input.len()), (64, 1), "one read");
        assert!(!c.holds_buffer());
        assert_eq!(drive(&mut c, &mut s), Want::Read);
        assert_eq!(s.output.len(), 128);
        // Then the hang-up, on the next report.
        assert_eq!(drive(&mut c, &mut s), Want::Done);
        // A read that filled the buffer reads on until a short one.
        let mut c = Conn::new(128);
        let mut s = Fake {
            input: vec![vec![3; 300]].into(),
            output: Vec::new(),
            room: usize::MAX,
            closed: false,
        };
        assert_eq!(drive(&mut c, &mut s), Want::Read);
        assert_eq!(s.output, vec![3; 300]);
        // Edge-triggered: to the end, the hang-up included.
        let mut s = Fake {
            input: vec![vec![4; 64], vec![5; 64]].into(),
            output: Vec::new(),
            room: usize::MAX,
            closed: true,
        };
        let mut c = Conn::new(128);
        assert_eq!(
            c.drive(&mut s, 100, Reads::ToEmpty, &stats, &Work::default())
                .unwrap(),
            Want::Done
        );
        assert_eq!(s.output.len(), 128);
    }

    #[test]
    fn budget_yields_more() {
        let stats = Stats::default();
        let mut s = Fake {
            input: vec![vec![1; 10]; 5].into(),
            output: Vec::new(),
            room: usize::MAX,
            closed: false,
        };
        let mut c = Conn::new(10);
        assert_eq!(
            c.drive(&mut s, 2, Reads::ToEmpty, &stats, &Work::default())
                .unwrap(),
            Want::More
        );
        assert_eq!(s.output.len(), 20);
        assert_eq!(
            c.drive(&mut s, 100, Reads::ToEmpty, &stats, &Work::default())
                .unwrap(),
            Want::Read
        );
        assert_eq!(s.output.len(), 50);
    }

    /// Requests split over reads and coalesced in one read each get their
    /// work once, in order; a trailing partial request waits for its rest.
    #[test]
    fn requests_split_and_coalesced_get_their_work_once() {
        let stats = Stats::default();
        let work = Work::parse("cpu:1us", 8).unwrap();
        let data: Vec<u8> = (0..40u8).collect();
        // 3 bytes, then 21 (the rest of one, two whole, 5 of the fourth),
        // then 13 (the rest of the fourth and 5 of the fifth).
        let mut s = Fake {
            input: vec![
                data[..3].to_vec(),
                data[3..24].to_vec(),
                data[24..37].to_vec(),
            ]
            .into(),
            output: Vec::new(),
            room: usize::MAX,
            closed: false,
        };
        let mut c = Conn::new(16);
        assert_eq!(
            c.drive(&mut s, 100, Reads::ToEmpty, &stats, &work).unwrap(),
            Want::Read
        );
        assert_eq!(s.output, data[..32], "four whole requests echoed");
        assert_eq!(stats.summary("t").requests, 4);
        assert_eq!(c.owed(), 5, "a partial request waits for its rest");
        // The rest of the fifth, then the peer half-closes with 2 bytes
        // that are no request: echoed as they are, without work.
        s.input.push_back(data[37..40].to_vec());
        s.input.push_back(vec![99, 98]);
        s.closed = true;
        assert_eq!(
            c.drive(&mut s, 100, Reads::ToEmpty, &stats, &work).unwrap(),
            Want::Done
        );
        let mut all = data.clone();
        all.extend([99, 98]);
        assert_eq!(s.output, all);
        assert_eq!(stats.summary("t").requests, 5);
    }

    /// A waiting request holds back its bytes and the next ones; the
    /// requests before it are echoed at once.
    #[test]
    fn a_wait_holds_its_request_and_those_after() {
        let stats = Stats::default();
        let work = Work::parse("wait:2ms", 4).unwrap();
        let mut s = Fake {
            input: vec![vec![1, 1, 1, 1, 2, 2, 2, 2]].into(),
            output: Vec::new(),
            room: usize::MAX,
            closed: false,
        };
        let mut c = Conn::new(64);
        let Want::Wait(until) = c.drive(&mut s, 100, Reads::ToEmpty, &stats, &work).unwrap() else {
            panic!("the first request waits")
        };
        assert!(s.output.is_empty());
        std::thread::sleep(until.saturating_duration_since(std::time::Instant::now()));
        assert!(matches!(
            c.drive(&mut s, 100, Reads::ToEmpty, &stats, &work).unwrap(),
            Want::Wait(_)
        ));
        assert_eq!(s.output, [1, 1, 1, 1], "the first, then the second waits");
        // Offloaded blocking calls come back through `blocked`.
        let offload = Work {
            offload_block: true,
            ..Work::parse("block:1ms", 4).unwrap()
        };
        let mut s = Fake {
            input: vec![vec![7; 4]].into(),
            output: Vec::new(),
            room: usize::MAX,
            closed: true,
        };
        let mut c = Conn::new(64);
        assert_eq!(
            c.drive(&mut s, 100, Reads::ToEmpty, &stats, &offload)
                .unwrap(),
            Want::Block(std::time::Duration::from_millis(1))
        );
        c.blocked();
        assert_eq!(
            c.drive(&mut s, 100, Reads::ToEmpty, &stats, &offload)
                .unwrap(),
            Want::Done
        );
        assert_eq!(s.output, [7; 4]);
    }

    /// Backpressure holds with requests too: a peer that does not read
    /// stops the reading, and the buffer never grows.
    #[test]
    fn framed_backpressure() {
        let stats = Stats::default();
        let work = Work::parse("cpu:1us", 10).unwrap();
        let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let mut s = Fake {
            input: data.chunks(7).map(<[u8]>::to_vec).collect(),
            output: Vec::new(),
            room: 25,
            closed: true,
        };
        let mut c = Conn::new(32);
        let mut rounds = 0;
        loop {
            match c.drive(&mut s, 3, Reads::ToEmpty, &stats, &work).unwrap() {
                Want::Done => break,
                Want::Write | Want::More => {}
                other => panic!("unexpected {other:?}"),
            }
            assert!(c.owed() <= 32);
            s.room = 25;
            rounds += 1;
            assert!(rounds < 1000, "did not finish");
        }
        assert_eq!(s.output, data);
        assert_eq!(stats.summary("t").requests, 100);
    }

    fn http_work() -> Work {
        Work {
            http: Some(Http {
                response: 13,
                header_limit: 256,
            }),
            ..Work::default()
        }
    }

    /// HTTP through the shared state machine: a head split across reads
    /// waits for its rest, pipelined requests are answered in order, and
    /// `Connection: close` ends the connection once its answer is written;
    /// an idle connection holds neither buffer.
    #[test]
    fn http_split_pipelined_and_closed() {
        let stats = Stats::default();
        let work = http_work();
        let mut s = Fake {
            input: vec![b"GET /1 HTTP/1.1\r\n\r\nGET /2 HT".to_vec()].into(),
            output: Vec::new(),
            room: usize::MAX,
            closed: false,
        };
        let mut c = Conn::new(256);
        let drive =
            |c: &mut Conn, s: &mut Fake| c.drive(s, 100, Reads::ToEmpty, &stats, &work).unwrap();
        assert_eq!(drive(&mut c, &mut s), Want::Read);
        assert_eq!(
            String::from_utf8_lossy(&s.output)
                .matches(" 200 OK")
                .count(),
            1
        );
        assert!(c.holds_buffer(), "the part of a head is kept");
        s.input.push_back(
            b"TP/1.1\r\n\r\nGET /3 HTTP/1.1\r\nConnection: close\r\n\r\nGET /4".to_vec(),
        );
        assert_eq!(drive(&mut c, &mut s), Want::Done);
        let text = String::from_utf8(s.output.clone()).unwrap();
        assert_eq!(text.matches(" 200 OK").count(), 3, "none after the close");
        assert!(text.ends_with("Connection: close\r\n\r\nHello, World!"));
        assert_eq!(stats.summary("t").requests, 3);
        // Idle: no buffers held.
        let mut s = Fake {
            input: vec![b"GET / HTTP/1.1\r\n\r\n".to_vec()].into(),
            output: Vec::new(),
            room: usize::MAX,
            closed: false,
        };
        let mut c = Conn::new(256);
        assert_eq!(drive(&mut c, &mut s), Want::Read);
        assert!(!c.holds_buffer());
        assert_eq!(c.http.as_ref().map(|h| h.out.capacity()), Some(0));
    }

    /// A peer that pipelines without reading stops the reading once
    /// `OUT_LIMIT` bytes of answers wait; every request is still answered,
    /// in order, once it reads.
    #[test]
    fn http_backpressure_bounds_the_answers_queued() {
        let stats = Stats::default();
        let work = http_work();
        let one = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        let n = 4000;
        let all: Vec<u8> = one.iter().copied().cycle().take(one.len() * n).collect();
        let mut s = Fake {
            input: all.chunks(200).map(<[u8]>::to_vec).collect(),
            output: Vec::new(),
            room: 0,
            closed: true,
        };
        let mut c = Conn::new(256);
        let mut rounds = 0;
        loop {
            match c
                .drive(&mut s, 1000, Reads::ToEmpty, &stats, &work)
                .unwrap()
            {
                Want::Done => break,
                Want::Write | Want::More => {}
                other => panic!("unexpected {other:?}"),
            }
            let queued = c.http.as_ref().map_or(0, |h| h.out.len() - h.sent);
            assert!(queued < OUT_LIMIT + 1024, "{queued} bytes queued");
            s.room = 5000;
            rounds += 1;
            assert!(rounds < 10_000, "did not finish");
        }
        let text = String::from_utf8(s.output).unwrap();
        assert_eq!(text.matches("\r\n\r\nHello, World!").count(), n);
        assert_eq!(stats.summary("t").requests, n as u64);
    }
}
