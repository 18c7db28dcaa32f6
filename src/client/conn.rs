//! One client connection: what it has sent, what came back, and whether
//! the echo is right.
//!
//! Messages are checked byte for byte: the bytes sent stay queued until
//! their echo arrives and is compared with them (a `memcmp`, so checking
//! costs little even at gigabytes per second). Generated messages are cut
//! from a fixed pseudo-random template at an offset that depends on the
//! connection and the message number, so a dropped, duplicated or corrupted
//! byte shows as a mismatch at once; with `--payload` every message is the
//! user's text. A message is complete when
//! the bytes received pass its end; its latency is measured from the time it
//! was due to be sent (open loop: the intended time, which corrects for
//! coordinated omission) and, beside it, from the time it was written.
//!
//! Over HTTP there is nothing to compare: the requests written are
//! dropped once sent, and the connection's [`Framer`] counts the responses
//! that come back.

use std::collections::VecDeque;
use std::net::TcpStream;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::http::Framer;

/// Why a connection ended early: the kinds a load report counts its
/// `errors` by, each named in the JSON (a key of `errors`, a record's
/// `error`) and in prose by [`Failure::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// ECONNREFUSED: nothing listens there.
    Refused,
    /// ECONNRESET or EPIPE: the peer reset the connection.
    Reset,
    /// No connect or no echo within `--timeout`.
    Timeout,
    /// EADDRNOTAVAIL: no free local port for this source address.
    AddrNotAvail,
    /// EMFILE or ENFILE: the client ran out of descriptors.
    Emfile,
    /// The echo differed from what was sent; over HTTP, the bytes were not
    /// a response (or answered no request).
    Mismatch,
    /// The peer closed the connection while echoes were owed (over HTTP:
    /// before it answered any request of the connection).
    Closed,
    /// Anything else.
    Other,
}

impl Failure {
    /// Classifies an I/O error.
    pub fn of(e: &std::io::Error) -> Failure {
        match e.raw_os_error() {
            Some(libc::ECONNREFUSED) => Failure::Refused,
            Some(libc::ECONNRESET | libc::EPIPE) => Failure::Reset,
            Some(libc::ETIMEDOUT) => Failure::Timeout,
            Some(libc::EADDRNOTAVAIL) => Failure::AddrNotAvail,
            Some(libc::EMFILE | libc::ENFILE) => Failure::Emfile,
            _ => Failure::Other,
        }
    }

    pub(crate) const ALL: [Failure; 8] = [
        Failure::Refused,
        Failure::Reset,
        Failure::Timeout,
        Failure::AddrNotAvail,
        Failure::Emfile,
        Failure::Mismatch,
        Failure::Closed,
        Failure::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Failure::Refused => "refused",
            Failure::Reset => "reset",
            Failure::Timeout => "timeout",
            Failure::AddrNotAvail => "addr_not_avail",
            Failure::Emfile => "emfile",
            Failure::Mismatch => "mismatch",
            Failure::Closed => "closed",
            Failure::Other => "other",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// By name, as the maps of failures were ordered when they were keyed by
/// it: a report's `errors` keep their order in the JSON and the summary.
impl Ord for Failure {
    fn cmp(&self, other: &Failure) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for Failure {
    fn partial_cmp(&self, other: &Failure) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The bytes of every message: generated, or the user's text.
#[derive(Debug, Clone)]
pub enum Payload {
    Generated(usize),
    Text(Vec<u8>),
}

/// Length of the generated-message template (a prime, so offsets of
/// consecutive messages do not line up).
const TEMPLATE_LEN: usize = 4093;

/// Pseudo-random bytes that generated messages are cut from: the period
/// twice over, so a message up to a period long is one contiguous slice.
fn template() -> &'static [u8; 2 * TEMPLATE_LEN] {
    static T: std::sync::OnceLock<[u8; 2 * TEMPLATE_LEN]> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let mut t = [0u8; 2 * TEMPLATE_LEN];
        let mut x: u32 = 0x1234_5678;
        for i in 0..TEMPLATE_LEN {
            // xorshift32
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            t[i] = x as u8;
            t[i + TEMPLATE_LEN] = x as u8;
        }
        t
    })
}

impl Payload {
    pub fn len(&self) -> usize {
        match self {
            Payload::Generated(n) => *n,
            Payload::Text(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where in the template message `k` of connection `conn` starts.
    pub fn offset(conn: u32, k: u64) -> usize {
        ((k.wrapping_mul(131) + conn as u64 * 31) % TEMPLATE_LEN as u64) as usize
    }

    /// Where the message after the one at `at` starts: the same as
    /// [`Payload::offset`] of the next number, without its division.
    pub(crate) fn next_offset(at: usize) -> usize {
        let next = at + 131;
        if next >= TEMPLATE_LEN {
            next - TEMPLATE_LEN
        } else {
            next
        }
    }

    /// Appends message `k` of connection `conn` to `out`.
    #[cfg(test)]
    pub(crate) fn write_message(&self, conn: u32, k: u64, out: &mut Vec<u8>) {
        self.write_at(Self::offset(conn, k), out);
    }

    /// Appends the message that starts at template offset `at` to `out`.
    pub(crate) fn write_at(&self, at: usize, out: &mut Vec<u8>) {
        match self {
            Payload::Text(t) => out.extend_from_slice(t),
            Payload::Generated(n) if *n <= TEMPLATE_LEN => {
                out.extend_from_slice(&template()[at..at + n]);
            }
            Payload::Generated(n) => {
                let t = &template()[..TEMPLATE_LEN];
                let mut at = at;
                let mut left = *n;
                while left > 0 {
                    let take = left.min(TEMPLATE_LEN - at);
                    out.extend_from_slice(&t[at..at + take]);
                    left -= take;
                    at = 0;
                }
            }
        }
    }
}

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Not opened yet.
    Waiting,
    /// connect() in progress.
    Connecting,
    /// Established.
    Up,
    /// Closed, by us or by a failure.
    Done,
}

/// A message written (or due) and not yet echoed. Times are nanoseconds
/// since its event loop's epoch: a subtraction per round trip, not a
/// `timespec` one.
#[derive(Debug, Clone, Copy)]
pub struct InFlight {
    /// When it was due (open loop) or written (closed loop, burst).
    pub intended: u64,
    /// When it was handed to the socket.
    pub sent: u64,
    /// Whether it counts (sent inside the measured window).
    pub measured: bool,
}

/// One connection's state and its record.
#[derive(Debug)]
pub struct Conn {
    /// Global id: row in the per-connection CSV, input of the pattern.
    pub id: u32,
    pub idle: bool,
    pub state: State,
    pub sock: Option<TcpStream>,
    pub source: Option<std::net::IpAddr>,
    /// Bytes sent and not yet echoed (`out[acked..out_pos]`), then bytes
    /// queued and not yet written (`out[out_pos..]`).
    pub out: Vec<u8>,
    pub acked: usize,
    pub out_pos: usize,
    /// Messages queued so far (the next one's number).
    pub queued: u64,
    /// Template offset of the next message ([`Payload::offset`] of
    /// `queued`, kept up to date).
    pub next_at: usize,
    pub in_flight: VecDeque<InFlight>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Measured messages echoed, and their round trips in nanoseconds.
    pub requests: u64,
    pub rt_sum_ns: u128,
    pub rt_min_ns: u64,
    pub rt_max_ns: u64,
    /// The first connect's start, and when it was first established.
    pub connect_started: Option<Instant>,
    pub established: Option<Instant>,
    /// When the latest connect began: the first, or (HTTP) a reconnect's.
    pub dialed: Option<Instant>,
    /// HTTP: the framing of this connection's responses (`None`: echo).
    pub framer: Option<Box<Framer>>,
    /// HTTP: responses since the connection was last opened.
    pub answered: u64,
    pub ended: Option<Instant>,
    /// Last time bytes arrived or the connect started (for timeouts).
    pub last_progress: Instant,
    pub failure: Option<Failure>,
    /// Open loop: due times of messages waiting for a free slot (at most
    /// `--depth` in flight per connection).
    pub backlog: VecDeque<Instant>,
}

impl Conn {
    pub fn new(id: u32, idle: bool, now: Instant) -> Conn {
        Conn {
            id,
            idle,
            state: State::Waiting,
            sock: None,
            source: None,
            out: Vec::new(),
            acked: 0,
            out_pos: 0,
            queued: 0,
            next_at: Payload::offset(id, 0),
            in_flight: VecDeque::new(),
            bytes_sent: 0,
            bytes_received: 0,
            requests: 0,
            rt_sum_ns: 0,
            rt_min_ns: u64::MAX,
            rt_max_ns: 0,
            connect_started: None,
            established: None,
            dialed: None,
            framer: None,
            answered: 0,
            ended: None,
            last_progress: now,
            failure: None,
            backlog: VecDeque::new(),
        }
    }

    /// Checks `data` (the next bytes received) against what was sent and
    /// returns how many messages it completed (their entries are the first
    /// of `in_flight`, for the caller to pop); `None` on a mismatch (or
    /// bytes never sent).
    pub fn receive(&mut self, data: &[u8], message: usize) -> Option<usize> {
        let end = self.acked + data.len();
        if end > self.out_pos || self.out[self.acked..end] != *data {
            return None;
        }
        self.acked = end;
        let m = message as u64;
        let before = self.bytes_received / m;
        self.bytes_received += data.len() as u64;
        let completed = (self.bytes_received / m - before) as usize;
        // Drop what is checked once it is worth a move.
        if self.acked == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
            self.acked = 0;
        } else if self.acked >= 64 << 10 {
            self.out.drain(..self.acked);
            self.out_pos -= self.acked;
            self.acked = 0;
        }
        Some(completed.min(self.in_flight.len()))
    }

    /// Records `count` measured round trips of `ns` each.
    pub fn record(&mut self, ns: u64, count: u64) {
        self.requests += count;
        self.rt_sum_ns += ns as u128 * count as u128;
        self.rt_min_ns = self.rt_min_ns.min(ns);
        self.rt_max_ns = self.rt_max_ns.max(ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_named_alike_in_json_and_prose_and_sorted_by_name() {
        for f in Failure::ALL {
            let json = serde_json::to_value(f).expect("a failure serializes");
            assert_eq!(json, f.name());
            assert_eq!(f.to_string(), f.name());
            assert_eq!(serde_json::from_value::<Failure>(json).ok(), Some(f));
        }
        let mut sorted = Failure::ALL;
        sorted.sort();
        let mut names = Failure::ALL.map(Failure::name);
        names.sort_unstable();
        assert_eq!(sorted.map(Failure::name), names);
    }

    #[test]
    fn a_dropped_byte_is_a_mismatch() {
        let p = Payload::Generated(64);
        let now = Instant::now();
        let mut c = Conn::new(7, false, now);
        for k in 0..3 {
            p.write_message(7, k, &mut c.out);
            c.queued += 1;
            c.in_flight.push_back(InFlight {
                intended: 0,
                sent: 0,
                measured: true,
            });
        }
        c.out_pos = c.out.len();
        let sent = c.out.clone();
        assert_eq!(c.receive(&sent[..100], 64), Some(1));
        let mut dropped = sent[100..].to_vec();
        dropped.remove(5);
        assert_eq!(c.receive(&dropped, 64), None);
        // Two messages of one connection differ, and so do two connections.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        p.write_message(7, 0, &mut a);
        p.write_message(7, 1, &mut b);
        assert_ne!(a, b);
        b.clear();
        p.write_message(8, 0, &mut b);
        assert_ne!(a, b);
    }

    #[test]
    fn offsets_kept_up_to_date_match_the_formula() {
        for conn in [0, 7, 12_345] {
            let mut at = Payload::offset(conn, 0);
            for k in 1..10_000u64 {
                at = Payload::next_offset(at);
                assert_eq!(at, Payload::offset(conn, k), "conn {conn} message {k}");
            }
        }
        // A message longer than the template wraps around it.
        let p = Payload::Generated(10_000);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        p.write_at(4000, &mut a);
        Payload::Generated(93).write_at(4000, &mut b);
        assert_eq!(a.len(), 10_000);
        assert_eq!(a[..93], b[..]);
        assert_eq!(a[93..93 + 100], a[93 + 4093..93 + 4093 + 100]);
    }

    #[test]
    fn bytes_beyond_what_was_sent_are_a_mismatch() {
        let mut c = Conn::new(0, false, Instant::now());
        assert_eq!(c.receive(b"h", 2), None);
    }
}
