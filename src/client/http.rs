//! HTTP/1.1 on the client's side, sans I/O: the requests `c10k load
//! --protocol http` writes, and the framing of the responses that come
//! back, for the load generator's connections and for the conformance
//! suite's (one framer, two users).
//!
//! A request is rendered once per run (`GET /` or, with `-m N`, a `POST`
//! of N bytes with its `Content-Length`) and written as is, `--depth` of
//! them back to back when pipelining, as wrk's pipeline script does.
//!
//! A response's head is parsed with `httparse`; its body is framed by
//! `Content-Length`, by chunked encoding (chunk sizes parsed with
//! `httparse::parse_chunk_size`, trailers skipped), or, with neither, by
//! the server's close. Bodies are counted and dropped as they stream past,
//! never kept; only a head split across reads is copied, into the one
//! buffer of its connection. Interim responses (`100 Continue`) are
//! skipped, as a client does. What a response is judged by: its status
//! (2xx is a success, anything else an error counted by its code) and
//! whether the server said it will close the connection after it.
//!
//! Cost per response: one head parse (SIMD where the CPU has it) and a few
//! compares; per byte of body, nothing but the count.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::protocol::HELLO;

/// The most header fields a response may carry.
const MAX_HEADERS: usize = 64;

/// The longest response head accepted (nginx's and Go's default request
/// limits are larger than any response head a server sends back).
pub const MAX_HEAD: usize = 64 << 10;

/// The request every message of a run is: `GET /`, or a `POST` of `body`
/// bytes (of the same pattern the echo's bytes are cut from).
pub fn request(host: &str, body: usize) -> Vec<u8> {
    let mut r = if body == 0 {
        format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes()
    } else {
        format!(
            "POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\nContent-Length: {body}\r\n\r\n"
        )
        .into_bytes()
    };
    r.extend(HELLO.iter().cycle().take(body));
    r
}

/// What a run's HTTP responses were, counted by each event loop and
/// merged as the rest of what it measured ([`super::measured::Measured`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Every response framed, warm-up and drain included (what a run that
    /// measured too little is judged by).
    pub responses: u64,
    /// The measured responses by status code.
    pub status: BTreeMap<u16, u64>,
    /// Times a connection was opened again because the server closed it
    /// (after a `Connection: close`, or an idle one it timed out).
    pub reconnects: u64,
    /// Responses the server's close cut short.
    pub cut_short: u64,
}

impl Counts {
    pub fn merge(&mut self, o: &Counts) {
        self.responses += o.responses;
        for (&code, &n) in &o.status {
            *self.status.entry(code).or_default() += n;
        }
        self.reconnects += o.reconnects;
        self.cut_short += o.cut_short;
    }

    /// Measured responses whose status is not 2xx: errors.
    pub fn errors(&self) -> u64 {
        self.status
            .iter()
            .filter(|(c, _)| !(200..300).contains(*c))
            .map(|(_, n)| n)
            .sum()
    }
}

/// One response, framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// `HTTP/1.x`'s x.
    pub minor: u8,
    /// The server will close after it (`Connection: close`, or HTTP/1.0
    /// without `keep-alive`).
    pub closes: bool,
    /// Bytes of body it carried.
    pub body: u64,
}

impl Response {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// What is wrong with bytes that are not a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad(pub String);

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where the framer is within the current response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Head,
    /// `left` bytes of a `Content-Length` body to go.
    Body {
        left: u64,
    },
    /// Between chunks: the next chunk-size line.
    ChunkSize,
    /// `left` bytes of chunk data, then its CRLF (`crlf` of 2 to go).
    Chunk {
        left: u64,
        crlf: u8,
    },
    /// After the last chunk: trailer lines until an empty one.
    Trailer,
    /// No framing: the body runs to the server's close.
    UntilClose,
}

/// The framing of one connection's responses.
#[derive(Debug)]
pub struct Framer {
    part: Part,
    /// The response whose head is parsed, its body being counted.
    current: Option<Response>,
    /// A head (or a chunk-size or trailer line) split across reads.
    partial: Vec<u8>,
    /// Whether each request still unanswered was a HEAD (whose response
    /// has no body whatever its headers say), when the user sends them;
    /// the load generator never does, and leaves this empty.
    heads: VecDeque<bool>,
}

impl Default for Framer {
    fn default() -> Framer {
        Framer::new()
    }
}

impl Framer {
    pub fn new() -> Framer {
        Framer {
            part: Part::Head,
            current: None,
            partial: Vec::new(),
            heads: VecDeque::new(),
        }
    }

    /// Says what the next request sent was: a HEAD's response has no
    /// body. Needed only where HEADs are sent.
    pub fn expect(&mut self, head: bool) {
        self.heads.push_back(head);
    }

    /// Whether it is between responses (nothing of one received).
    pub fn idle(&self) -> bool {
        self.part == Part::Head && self.partial.is_empty()
    }

    /// Frames `data`, the next bytes received, calling `done` for every
    /// response it completes, in order.
    pub fn feed(&mut self, data: &[u8], mut done: impl FnMut(Response)) -> Result<(), Bad> {
        if self.partial.is_empty() {
            return self.frame(data, &mut done).map(|_| ());
        }
        // Finish the split piece first, from a copy of it and what came.
        let mut joined = std::mem::take(&mut self.partial);
        let had = joined.len();
        joined.extend_from_slice(data);
        let used = self.frame_one(&joined, &mut done)?;
        match used {
            None => {
                self.partial = joined;
                self.limit()?;
                Ok(())
            }
            Some(n) => {
                let rest = &data[n.saturating_sub(had)..];
                self.frame(rest, &mut done).map(|_| ())
            }
        }
    }

    /// The server closed: completes a response framed by the close, and
    /// says whether one was cut short (a head, or a body of stated
    /// length, unfinished).
    pub fn eof(&mut self, mut done: impl FnMut(Response)) -> Result<(), Bad> {
        match self.part {
            Part::UntilClose => {
                if let Some(r) = self.current.take() {
                    done(r);
                }
                self.part = Part::Head;
                Ok(())
            }
            Part::Head if self.partial.is_empty() => Ok(()),
            Part::Head => Err(Bad(format!(
                "the server closed within a response's head ({} bytes of it)",
                self.partial.len()
            ))),
            _ => Err(Bad("the server closed within a response's body".into())),
        }
    }

    /// Frames as many pieces of `data` as are whole; keeps a split one.
    fn frame(&mut self, mut data: &[u8], done: &mut impl FnMut(Response)) -> Result<(), Bad> {
        while !data.is_empty() {
            match self.frame_one(data, done)? {
                Some(n) => data = &data[n..],
                None => {
                    self.partial.extend_from_slice(data);
                    return self.limit();
                }
            }
        }
        Ok(())
    }

    fn limit(&self) -> Result<(), Bad> {
        if self.partial.len() > MAX_HEAD {
            return Err(Bad(format!(
                "a response's head (or chunk line) ran past {} KiB",
                MAX_HEAD >> 10
            )));
        }
        Ok(())
    }

    /// Frames one piece (a head, some body, a chunk line) from the start of
    /// `data`: the bytes it used, or `None` if the piece is not all there
    /// (nothing is used then).
    fn frame_one(
        &mut self,
        data: &[u8],
        done: &mut impl FnMut(Response),
    ) -> Result<Option<usize>, Bad> {
        match self.part {
            Part::Head => self.head(data, done),
            Part::Body { left } => {
                let n = left.min(data.len() as u64);
                self.body(n);
                if n == left {
                    self.finish(done);
                } else {
                    self.part = Part::Body { left: left - n };
                }
                Ok(Some(n as usize))
            }
            Part::ChunkSize => match httparse::parse_chunk_size(data) {
                Ok(httparse::Status::Complete((used, 0))) => {
                    self.part = Part::Trailer;
                    Ok(Some(used))
                }
                Ok(httparse::Status::Complete((used, size))) => {
                    self.part = Part::Chunk {
                        left: size,
                        crlf: 2,
                    };
                    Ok(Some(used))
                }
                Ok(httparse::Status::Partial) => Ok(None),
                Err(_) => Err(Bad(format!(
                    "a chunk's size line is not one: {:?}",
                    String::from_utf8_lossy(&data[..data.len().min(40)])
                ))),
            },
            Part::Chunk { left, crlf } => {
                if left > 0 {
                    let n = left.min(data.len() as u64);
                    self.body(n);
                    self.part = Part::Chunk {
                        left: left - n,
                        crlf,
                    };
                    return Ok(Some(n as usize));
                }
                let want: &[u8] = &b"\r\n"[2 - crlf as usize..];
                let n = want.len().min(data.len());
                if data[..n] != want[..n] {
                    return Err(Bad("a chunk's data is not followed by CRLF".into()));
                }
                self.part = if n == want.len() {
                    Part::ChunkSize
                } else {
                    Part::Chunk {
                        left: 0,
                        crlf: crlf - n as u8,
                    }
                };
                Ok(Some(n))
            }
            Part::Trailer => match data.windows(2).position(|w| w == b"\r\n") {
                Some(0) => {
                    self.finish(done);
                    Ok(Some(2))
                }
                Some(at) => Ok(Some(at + 2)),
                None => Ok(None),
            },
            Part::UntilClose => {
                self.body(data.len() as u64);
                Ok(Some(data.len()))
            }
        }
    }

    fn head(&mut self, data: &[u8], done: &mut impl FnMut(Response)) -> Result<Option<usize>, Bad> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Response::new(&mut headers);
        let used = match parsed.parse(data) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => {
                return Err(Bad(format!(
                    "not an HTTP response ({e}): {:?}",
                    String::from_utf8_lossy(&data[..data.len().min(40)])
                )))
            }
        };
        let status = parsed.code.unwrap_or(0);
        let minor = parsed.version.unwrap_or(1);
        let (mut length, mut chunked, mut close, mut keep) = (None, false, false, false);
        for h in parsed.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let n = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .ok_or_else(|| {
                        Bad(format!(
                            "a Content-Length that is not a number: {:?}",
                            String::from_utf8_lossy(h.value)
                        ))
                    })?;
                if length.is_some_and(|l| l != n) {
                    return Err(Bad("two Content-Lengths that differ".into()));
                }
                length = Some(n);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = has_token(h.value, "chunked");
            } else if h.name.eq_ignore_ascii_case("connection") {
                close |= has_token(h.value, "close");
                keep |= has_token(h.value, "keep-alive");
            }
        }
        if (100..200).contains(&status) {
            // Interim: the response proper follows.
            return Ok(Some(used));
        }
        self.current = Some(Response {
            status,
            minor,
            closes: close || (minor == 0 && !keep),
            body: 0,
        });
        // No body whatever the headers say: 204, 304, and a HEAD's.
        let head = self.heads.pop_front().unwrap_or(false);
        let bodiless = head || status == 204 || status == 304;
        self.part = match (bodiless, chunked, length) {
            (true, _, _) => Part::Head,
            (false, true, _) => Part::ChunkSize,
            (false, false, Some(0)) => Part::Head,
            (false, false, Some(n)) => Part::Body { left: n },
            (false, false, None) => Part::UntilClose,
        };
        if self.part == Part::Head {
            self.finish(done);
        }
        Ok(Some(used))
    }

    fn body(&mut self, n: u64) {
        if let Some(r) = self.current.as_mut() {
            r.body += n;
        }
    }

    fn finish(&mut self, done: &mut impl FnMut(Response)) {
        self.part = Part::Head;
        if let Some(r) = self.current.take() {
            done(r);
        }
    }
}

/// Whether the comma-separated header value holds `token` (any case).
fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_all(pieces: &[&[u8]]) -> Result<Vec<Response>, Bad> {
        let mut f = Framer::new();
        let mut got = Vec::new();
        for p in pieces {
            f.feed(p, |r| got.push(r))?;
        }
        f.eof(|r| got.push(r))?;
        Ok(got)
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nServer: x\r\n\r\nHello, World!";

    #[test]
    fn pipelined_responses_split_anywhere_are_framed_alike() {
        let mut all = OK.repeat(3);
        all.extend_from_slice(b"HTTP/1.1 503 Busy\r\ncontent-length: 0\r\n\r\n");
        let whole = frame_all(&[&all]).expect("frames");
        assert_eq!(whole.len(), 4);
        assert!(whole[..3]
            .iter()
            .all(|r| r.status == 200 && r.body == 13 && !r.closes));
        assert_eq!(whole[3].status, 503);
        assert!(!whole[3].ok());
        for cut in 1..all.len() {
            let (a, b) = all.split_at(cut);
            assert_eq!(frame_all(&[a, b]).expect("frames"), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = all.chunks(1).collect();
        assert_eq!(frame_all(&bytes).expect("frames"), whole);
    }

    #[test]
    fn chunked_bodies_and_trailers_are_framed() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHello\r\n8;x=y\r\n, World!\r\n0\r\nX-T: 1\r\n\r\n";
        let mut all = r.to_vec();
        all.extend_from_slice(OK);
        let whole = frame_all(&[&all]).expect("frames");
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[0].body, 13);
        let bytes: Vec<&[u8]> = all.chunks(1).collect();
        assert_eq!(frame_all(&bytes).expect("frames"), whole);
    }

    #[test]
    fn close_and_http10_and_interim_and_until_close() {
        let got = frame_all(&[
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi",
        ])
        .expect("frames");
        assert_eq!(got.len(), 1);
        assert!(got[0].closes);
        let got = frame_all(&[b"HTTP/1.0 200 OK\r\n\r\nto the end"]).expect("frames");
        assert_eq!(got[0].body, 10);
        assert!(got[0].closes && got[0].minor == 0);
        let got =
            frame_all(&[b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"])
                .expect("frames");
        assert!(!got[0].closes, "HTTP/1.0 with keep-alive stays open");
    }

    #[test]
    fn a_heads_response_has_no_body() {
        let mut f = Framer::new();
        let mut got = Vec::new();
        f.expect(true);
        f.expect(false);
        let mut two = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n".to_vec();
        two.extend_from_slice(OK);
        f.feed(&two, |r| got.push(r)).expect("frames");
        assert_eq!(got.iter().map(|r| r.body).collect::<Vec<_>>(), [0, 13]);
        assert!(f.idle());
    }

    #[test]
    fn what_is_not_a_response_is_named() {
        assert!(frame_all(&[b"SSH-2.0-OpenSSH\r\n\r\n"]).is_err());
        assert!(frame_all(&[b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"]).is_err());
        assert!(frame_all(&[b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort"]).is_err());
        assert!(frame_all(&[b"HTTP/1.1 200 OK\r\n"]).is_err());
        let big = vec![b'a'; MAX_HEAD + 10];
        assert!(frame_all(&[b"HTTP/1.1 200 OK\r\nX: ", &big]).is_err());
    }

    #[test]
    fn a_post_carries_its_stated_body() {
        let r = request("127.0.0.1:80", 20);
        let text = String::from_utf8_lossy(&r);
        assert!(text.starts_with("POST / HTTP/1.1\r\n"));
        assert!(text.contains("Content-Length: 20\r\n\r\nHello, World!Hello,"));
        assert_eq!(request("h", 0), b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    }
}
