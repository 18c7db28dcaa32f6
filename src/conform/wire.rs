//! The client side of the conformance checks: blocking connections with
//! bounded waits, a message written in random fragments while another
//! thread reads its echo, half-close and EOF, and a byte pattern that lets
//! 64 MiB be checked without keeping a copy; over HTTP, the responses of
//! one connection framed as the load generator frames them
//! ([`crate::client::http::Framer`]). A check asked in either protocol
//! sends [`ask`] and reads [`answer`]. Cost: one thread per connection
//! while a message is in flight.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

use super::Suite;
use crate::client::http::{self, Framer, Response};
use crate::protocol::Protocol;

/// What a check asked in the subject's protocol sends on its connection
/// `i`: a 33-byte message (padded to whole requests) to echo, or `GET /`.
pub(super) fn ask(suite: &Suite, i: usize) -> Vec<u8> {
    match suite.protocol {
        Protocol::Echo => suite.message(format!("message {i:>24}\n").as_bytes()),
        Protocol::Http => get(),
    }
}

/// `GET /` as the load generator sends it.
pub(super) fn get() -> Vec<u8> {
    http::request("localhost", 0)
}

/// Reads the answer to [`ask`] on connection `i`: the echo, equal, or a
/// 2xx response.
pub(super) fn answer(suite: &Suite, stream: &TcpStream, i: usize) -> Result<(), String> {
    match suite.protocol {
        Protocol::Echo => {
            let want = ask(suite, i);
            let mut back = vec![0u8; want.len()];
            read_fully(stream, &mut back).map_err(|e| words(&e))?;
            if back != want {
                return Err(format!("got {:?}", String::from_utf8_lossy(&back)));
            }
            Ok(())
        }
        Protocol::Http => {
            let r = Responses::new().next(stream)?;
            if !r.ok() {
                return Err(format!("got status {} to GET /", r.status));
            }
            Ok(())
        }
    }
}

/// The responses of one HTTP connection, read and framed as they come.
pub(super) struct Responses {
    framer: Framer,
    ready: VecDeque<Response>,
    /// Responses handed out so far.
    got: u64,
    ended: bool,
}

impl Responses {
    pub fn new() -> Responses {
        Responses {
            framer: Framer::new(),
            ready: VecDeque::new(),
            got: 0,
            ended: false,
        }
    }

    /// The next request sent was a HEAD (`true`) or not: needed, in order,
    /// for every request once any is a HEAD.
    pub fn expect(&mut self, head: bool) {
        self.framer.expect(head);
    }

    /// The next response, reading as much as it takes.
    pub fn next(&mut self, stream: &TcpStream) -> Result<Response, String> {
        let mut buf = [0u8; 16 << 10];
        loop {
            if let Some(r) = self.ready.pop_front() {
                self.got += 1;
                return Ok(r);
            }
            if self.ended {
                return Err(format!(
                    "the server closed the connection after {} responses",
                    self.got
                ));
            }
            let ready = &mut self.ready;
            let framed = match (&*stream).read(&mut buf) {
                Ok(0) => {
                    self.ended = true;
                    self.framer.eof(|r| ready.push_back(r))
                }
                Ok(n) => self.framer.feed(&buf[..n], |r| ready.push_back(r)),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(()),
                Err(e) => {
                    return Err(format!(
                        "waiting for response {}: {}",
                        self.got + 1,
                        words(&e)
                    ))
                }
            };
            framed.map_err(|b| format!("after {} responses: {b}", self.got))?;
        }
    }

    /// Expects the server's close next, with nothing more before it.
    pub fn then_eof(&mut self, stream: &TcpStream) -> Result<(), String> {
        if !self.ended && self.ready.is_empty() {
            let mut rest = Vec::new();
            (&*stream).read_to_end(&mut rest).map_err(|e| {
                format!(
                    "waiting for the close after {} responses: {}",
                    self.got,
                    words(&e)
                )
            })?;
            self.ended = true;
            let ready = &mut self.ready;
            let fed = self.framer.feed(&rest, |r| ready.push_back(r));
            fed.and_then(|()| self.framer.eof(|r| ready.push_back(r)))
                .map_err(|b| format!("after {} responses: {b}", self.got))?;
        }
        match self.ready.len() {
            0 => Ok(()),
            n => Err(format!(
                "{n} more responses came after response {} where the close was due",
                self.got
            )),
        }
    }
}

/// A blocking connection whose reads and writes fail after `patience`.
pub(super) fn connect(addr: SocketAddr, patience: Duration) -> std::io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, patience)?;
    s.set_read_timeout(Some(patience))?;
    s.set_write_timeout(Some(patience))?;
    Ok(s)
}

/// A small seeded generator (SplitMix64) for fragment sizes and message
/// bytes: the same seed gives the same traffic, run after run.
pub(super) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `1..=max`.
    pub fn size(&mut self, max: usize) -> usize {
        1 + (self.next() % max as u64) as usize
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Writes `data` in random fragments of 1 to 9,000 bytes from one thread
/// while this one reads the echo; returns what came back.
pub(super) fn echo_fragmented(
    stream: &TcpStream,
    data: &[u8],
    rng: &mut Rng,
) -> std::io::Result<Vec<u8>> {
    let mut cuts = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let n = rng.size(9000).min(data.len() - at);
        cuts.push(n);
        at += n;
    }
    std::thread::scope(|s| {
        let writer = s.spawn(|| -> std::io::Result<()> {
            let mut w = stream;
            let mut at = 0;
            for n in cuts {
                w.write_all(&data[at..at + n])?;
                at += n;
            }
            Ok(())
        });
        let mut back = vec![0u8; data.len()];
        let read = read_fully(stream, &mut back);
        let wrote = writer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the writer thread panicked")));
        read?;
        wrote.map(|()| back)
    })
}

/// Fills `buf`, saying how much had come when it could not.
pub(super) fn read_fully(mut stream: &TcpStream, buf: &mut [u8]) -> std::io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match stream.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(std::io::Error::other(format!(
                    "EOF after {} of {} bytes",
                    count(got as u64),
                    count(buf.len() as u64)
                )))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!(
                        "{} after {} of {} bytes",
                        words(&e),
                        count(got as u64),
                        count(buf.len() as u64)
                    ),
                ))
            }
        }
    }
    Ok(())
}

/// An error in words, with a timed-out wait named as such (an error this
/// module wrote already says what it means).
pub(super) fn words(e: &std::io::Error) -> String {
    let timed_out = matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    );
    if timed_out && e.raw_os_error().is_some() {
        "nothing came within the patience".to_string()
    } else {
        e.to_string()
    }
}

/// Half-closes `stream` and expects EOF with nothing more.
pub(super) fn finish(stream: &TcpStream) -> Result<(), String> {
    stream
        .shutdown(Shutdown::Write)
        .map_err(|e| e.to_string())?;
    expect_eof(stream)
}

/// Reads to EOF, expecting no more bytes.
pub(super) fn expect_eof(stream: &TcpStream) -> Result<(), String> {
    let mut rest = Vec::new();
    (&*stream).read_to_end(&mut rest).map_err(|e| {
        format!(
            "waiting for EOF after {} more bytes: {}",
            rest.len(),
            words(&e)
        )
    })?;
    if rest.is_empty() {
        Ok(())
    } else {
        Err(format!("{} unexpected bytes before EOF", rest.len()))
    }
}

/// A deterministic byte pattern, so 64 MiB can be checked without a copy.
pub(super) fn pattern(i: u64) -> u8 {
    (i.wrapping_mul(31) ^ (i >> 9)) as u8
}

/// Fills `buf` with the pattern from byte `from` on.
pub(super) fn fill(buf: &mut [u8], from: u64) {
    for (j, b) in buf.iter_mut().enumerate() {
        *b = pattern(from + j as u64);
    }
}

/// `n` as text with thousands separators.
pub(super) fn count(n: u64) -> String {
    crate::present::units::format_count(n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_seeded_and_sizes_stay_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        assert_eq!(a.bytes(32), b.bytes(32));
        assert!((0..1000)
            .map(|_| a.size(9000))
            .all(|n| (1..=9000).contains(&n)));
        assert_ne!(Rng::new(8).next(), Rng::new(7).next());
    }
}
