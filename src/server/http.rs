//! HTTP/1.1 for every model (`c10k serve --protocol http`): the bytes a
//! connection reads become requests and the requests responses, here, in
//! one place that holds no socket. The one connection state machine
//! ([`super::conn`]) reads into its buffer and writes what this returns;
//! the io_uring model hands it the bytes its receives queued. So the
//! models still differ only in how they wait and who runs the handler.
//!
//! A request's head is parsed with `httparse`; its body (`Content-Length`
//! bytes) is read and dropped as it streams past, so a body of any size
//! costs no memory. Each complete request gets its work (`--work`,
//! [`Requests`], as an echo's request does) and then its response, in the
//! order the requests came: pipelined requests are answered in order. The
//! response is `--response-size` bytes of `Hello, World!` (13 by default,
//! TechEmpower's plaintext) with `Server`, `Date`, `Content-Type` and
//! `Content-Length`. Keep-alive is the default; `Connection: close`, or
//! HTTP/1.0 without `Connection: keep-alive`, closes once the response is
//! sent. `Expect: 100-continue` gets its `100 Continue`; HEAD gets the
//! head alone.
//!
//! Bad input ends only its connection, after one response that says why:
//! a head that does not parse, a bad `Content-Length` or conflicting ones
//! get `400`; a head longer than [`Http::header_limit`] (the `--buffer`,
//! 16 KiB by default) or with more than [`MAX_HEADERS`] fields gets `431`;
//! a request body in `Transfer-Encoding` (chunked) gets `501`, as c10k
//! reads only bodies of a stated length. A request never finished holds its
//! own connection and its buffer, no one else's.
//!
//! Cost per request: one parse of its head (SIMD where the CPU has it), a
//! copy of the response (about 140 bytes by default) into the
//! connection's output, and a relaxed atomic add (the request count). The
//! response's head is rendered once a second per thread (for its `Date`);
//! reading the clock costs one vDSO call per response.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use super::work::{Http, Next, Requests, Work};
use super::Stats;
use crate::protocol::HELLO;

/// Header fields a request may have: more is a `431`.
pub const MAX_HEADERS: usize = 64;

/// Bytes of responses a connection queues before they are written: past
/// it, no more requests are answered until the socket takes them, so a
/// client that pipelines without reading holds the server's memory to
/// this (plus one response), as an echo's peer holds it to its buffer.
pub(crate) const OUT_LIMIT: usize = 64 << 10;

/// The most bytes of a response body (`--response-size`).
pub const MAX_RESPONSE: usize = 64 << 20;

/// What a parsed request asks of its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pending {
    /// The connection stays open after it.
    keep_alive: bool,
    /// HTTP/1.0: a kept connection says so in its response.
    old: bool,
    /// HEAD: the head alone.
    head: bool,
}

/// One connection's requests: where its bytes stand between heads,
/// bodies, work and responses.
#[derive(Debug, Default)]
pub(crate) struct Exchange {
    /// Bytes of the current request's body not yet read past.
    body_left: u64,
    /// The request whose head is read, waiting for its body or its work.
    pending: Option<Pending>,
    /// A response that ends the connection is queued: answer no more.
    closing: bool,
    requests: Requests,
}

impl Exchange {
    /// Answers the requests complete in `input` (the bytes read and not
    /// yet used), in order, appending their responses to `out`, until
    /// `out` holds [`OUT_LIMIT`], a request's work must wait, or the bytes
    /// run out; returns how many bytes of `input` it used and what is
    /// next. Bytes of a head not yet whole are left, for the caller to
    /// keep and hand back with what follows. After a response that closes
    /// the connection ([`Exchange::closing`]), the rest is used unread.
    pub fn answer(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        http: &Http,
        work: &Work,
        stats: &Stats,
    ) -> (usize, Next) {
        let mut used = 0;
        loop {
            if self.closing {
                return (input.len(), Next::Idle);
            }
            if self.body_left > 0 {
                let n = self.body_left.min((input.len() - used) as u64);
                used += n as usize;
                self.body_left -= n;
                if self.body_left > 0 {
                    return (used, Next::Idle);
                }
            }
            if let Some(p) = self.pending {
                if !work.is_none() {
                    if let Some(next) = self.requests.one(work) {
                        return (used, next);
                    }
                }
                self.pending = None;
                respond(out, http, p);
                stats.requested();
                if !p.keep_alive {
                    self.closing = true;
                    continue;
                }
            }
            let rest = &input[used..];
            if rest.is_empty() || out.len() >= OUT_LIMIT {
                return (used, Next::Idle);
            }
            match parse(rest, http.header_limit) {
                Head::Request {
                    len,
                    body,
                    pending,
                    expect,
                } => {
                    used += len;
                    self.body_left = body;
                    self.pending = Some(pending);
                    if expect && body > 0 {
                        out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                    }
                }
                Head::Partial => return (used, Next::Idle),
                Head::Refused(status) => {
                    refuse(out, status);
                    stats.bad_request();
                    self.closing = true;
                }
            }
        }
    }

    /// A response that ends the connection is queued: once it is
    /// written, close.
    pub fn closing(&self) -> bool {
        self.closing
    }

    /// A request is part-way through its body or its work.
    pub fn busy(&self) -> bool {
        self.pending.is_some() || self.requests.busy()
    }

    /// The blocking call handed out with [`Next::Block`] returned.
    pub fn blocked(&mut self) {
        self.requests.blocked();
    }
}

/// A status that refuses a request, and closes its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    BadRequest,
    HeadTooLarge,
    NotImplemented,
}

impl Refusal {
    fn status_line(self) -> &'static str {
        match self {
            Refusal::BadRequest => "400 Bad Request",
            Refusal::HeadTooLarge => "431 Request Header Fields Too Large",
            Refusal::NotImplemented => "501 Not Implemented",
        }
    }
}

/// What the bytes at the front of a connection's input hold.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    /// A whole head of `len` bytes, followed by `body` bytes of body.
    Request {
        len: usize,
        body: u64,
        pending: Pending,
        /// It asked for `100 Continue` before sending its body.
        expect: bool,
    },
    /// Not yet a whole head.
    Partial,
    /// A head refused with this status.
    Refused(Refusal),
}

/// Parses the head at the front of `bytes`.
fn parse(bytes: &[u8], limit: usize) -> Head {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    let len = match req.parse(bytes) {
        Ok(httparse::Status::Complete(len)) if len <= limit => len,
        Ok(httparse::Status::Complete(_)) => return Head::Refused(Refusal::HeadTooLarge),
        Ok(httparse::Status::Partial) if bytes.len() >= limit => {
            return Head::Refused(Refusal::HeadTooLarge)
        }
        Ok(httparse::Status::Partial) => return Head::Partial,
        Err(httparse::Error::TooManyHeaders) => return Head::Refused(Refusal::HeadTooLarge),
        Err(_) => return Head::Refused(Refusal::BadRequest),
    };
    let old = req.version == Some(0);
    let mut keep_alive = !old;
    let mut body: Option<u64> = None;
    let mut expect = false;
    for f in req.headers.iter() {
        let name = f.name;
        if name.eq_ignore_ascii_case("content-length") {
            let n = std::str::from_utf8(f.value)
                .ok()
                .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|t| t.parse::<u64>().ok());
            match (n, body) {
                (None, _) => return Head::Refused(Refusal::BadRequest),
                (Some(n), Some(b)) if n != b => return Head::Refused(Refusal::BadRequest),
                (Some(n), _) => body = Some(n),
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Head::Refused(Refusal::NotImplemented);
        } else if name.eq_ignore_ascii_case("connection") {
            for token in f.value.split(|b| *b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && old {
                    keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case("expect") {
            expect = f.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        }
    }
    Head::Request {
        len,
        body: body.unwrap_or(0),
        pending: Pending {
            keep_alive,
            old,
            head: req.method == Some("HEAD"),
        },
        expect,
    }
}

/// This thread's responses, rendered for the current second.
struct Rendered {
    /// Seconds since the epoch the heads were rendered for.
    second: u64,
    /// The body's size they were rendered for.
    size: usize,
    /// `HTTP/1.1 200 OK` to `Content-Length`, each line ended.
    head: Vec<u8>,
    /// `Server` and `Date`, for the refusals.
    common: Vec<u8>,
    body: Vec<u8>,
}

thread_local! {
    static RENDERED: RefCell<Rendered> = const {
        RefCell::new(Rendered {
            second: u64::MAX,
            size: usize::MAX,
            head: Vec::new(),
            common: Vec::new(),
            body: Vec::new(),
        })
    };
}

/// Runs `f` on this thread's responses, rendered afresh when the second
/// or the size changed.
fn with_rendered<T>(size: usize, f: impl FnOnce(&Rendered) -> T) -> T {
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    RENDERED.with(|r| {
        let mut r = r.borrow_mut();
        if r.second != second || r.size != size {
            r.second = second;
            r.common.clear();
            r.common.extend_from_slice(b"Server: c10k\r\nDate: ");
            r.common
                .extend_from_slice(httpdate::fmt_http_date(now).as_bytes());
            r.common.extend_from_slice(b"\r\n");
            let head = format!(
                "HTTP/1.1 200 OK\r\n{}Content-Type: text/plain\r\nContent-Length: {size}\r\n",
                String::from_utf8_lossy(&r.common)
            );
            r.head = head.into_bytes();
            if r.size != size {
                r.size = size;
                r.body = HELLO.iter().copied().cycle().take(size).collect();
            }
        }
        f(&r)
    })
}

/// Appends the `200` response `p` asks for.
fn respond(out: &mut Vec<u8>, http: &Http, p: Pending) {
    with_rendered(http.response, |r| {
        out.extend_from_slice(&r.head);
        if !p.keep_alive {
            out.extend_from_slice(b"Connection: close\r\n");
        } else if p.old {
            out.extend_from_slice(b"Connection: keep-alive\r\n");
        }
        out.extend_from_slice(b"\r\n");
        if !p.head {
            out.extend_from_slice(&r.body);
        }
    });
}

/// Appends the response that refuses a request and ends its connection.
fn refuse(out: &mut Vec<u8>, why: Refusal) {
    with_rendered(0, |r| {
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(why.status_line().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&r.common);
        out.extend_from_slice(b"Content-Length: 0\r\nConnection: close\r\n\r\n");
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const HTTP: Http = Http {
        response: 13,
        header_limit: 1024,
    };

    fn answer(ex: &mut Exchange, input: &[u8], work: &Work) -> (usize, Vec<u8>) {
        let mut out = Vec::new();
        let (used, next) = ex.answer(input, &mut out, &HTTP, work, &Stats::default());
        assert_eq!(next, Next::Idle);
        (used, out)
    }

    fn statuses(out: &[u8]) -> Vec<String> {
        String::from_utf8_lossy(out)
            .split("HTTP/1.1 ")
            .skip(1)
            .map(|r| r[..3].to_string())
            .collect()
    }

    #[test]
    fn pipelined_requests_are_answered_in_order_and_a_partial_head_waits() {
        let mut ex = Exchange::default();
        let two = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HT";
        let (used, out) = answer(&mut ex, two, &Work::default());
        assert_eq!(used, two.len() - 9, "the partial third head is left");
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("HTTP/1.1 200 OK\r\n").count(), 2);
        assert_eq!(text.matches("\r\n\r\nHello, World!").count(), 2);
        assert!(text.contains("Content-Length: 13\r\n") && text.contains("Date: "));
        assert!(text.contains("Server: c10k\r\n") && !text.contains("Connection:"));
        assert!(!ex.closing());
    }

    #[test]
    fn a_body_is_read_past_in_pieces_and_close_and_http_1_0_are_honoured() {
        let mut ex = Exchange::default();
        let (used, out) = answer(
            &mut ex,
            b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n12345",
            &Work::default(),
        );
        assert!(out.is_empty() && used == 44, "{used}");
        let (used, out) = answer(&mut ex, b"67890GET / HTTP/1.0\r\n\r\n", &Work::default());
        assert_eq!(used, 23);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(statuses(text.as_bytes()), ["200", "200"]);
        assert!(text.ends_with("Connection: close\r\n\r\nHello, World!"));
        assert!(ex.closing());
        // HTTP/1.0 asking to be kept; then Connection: close in 1.1.
        let mut ex = Exchange::default();
        let (_, out) = answer(
            &mut ex,
            b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nHEAD / HTTP/1.1\r\nConnection: close\r\n\r\n",
            &Work::default(),
        );
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Connection: keep-alive\r\n"));
        assert!(
            text.ends_with("Content-Length: 13\r\nConnection: close\r\n\r\n"),
            "HEAD has no body"
        );
        assert!(ex.closing());
    }

    #[test]
    fn bad_heads_are_refused_with_their_status_and_close() {
        for (input, status) in [
            (&b"GET / HTTP/1.1\r\nBad Header\r\n\r\n"[..], "400"),
            (b"\x00\x01\x02\r\n\r\n", "400"),
            (b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", "400"),
            (
                b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "400",
            ),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                "501",
            ),
        ] {
            let mut ex = Exchange::default();
            let stats = Stats::default();
            let mut out = Vec::new();
            let (used, _) = ex.answer(input, &mut out, &HTTP, &Work::default(), &stats);
            assert_eq!(used, input.len());
            assert_eq!(
                statuses(&out),
                [status],
                "{:?}",
                String::from_utf8_lossy(input)
            );
            assert!(String::from_utf8_lossy(&out).contains("Connection: close\r\n"));
            assert!(ex.closing());
            assert_eq!(stats.summary("t").errors.bad_request, 1);
        }
        // A head past the limit, whole or not yet ended.
        let long = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(2000));
        let (_, out) = answer(&mut Exchange::default(), long.as_bytes(), &Work::default());
        assert_eq!(statuses(&out), ["431"]);
        let (_, out) = answer(
            &mut Exchange::default(),
            &long.as_bytes()[..1500],
            &Work::default(),
        );
        assert_eq!(statuses(&out), ["431"]);
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("X{i}: y\r\n"))
            .collect();
        let (_, out) = answer(
            &mut Exchange::default(),
            format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes(),
            &Work::default(),
        );
        assert_eq!(statuses(&out), ["431"]);
    }

    #[test]
    fn a_request_waits_for_its_work_and_the_next_waits_behind_it() {
        let work = Work::parse("wait:2ms", 64).unwrap();
        let mut ex = Exchange::default();
        let stats = Stats::default();
        let input = b"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n";
        let mut out = Vec::new();
        let (used, next) = ex.answer(input, &mut out, &HTTP, &work, &stats);
        let Next::Wait(until) = next else {
            panic!("{next:?}")
        };
        assert!(out.is_empty() && used == 18 && ex.busy());
        std::thread::sleep(until.saturating_duration_since(std::time::Instant::now()));
        let (more, next) = ex.answer(&input[used..], &mut out, &HTTP, &work, &stats);
        assert!(matches!(next, Next::Wait(_)), "the second waits in turn");
        assert_eq!((statuses(&out).len(), more), (1, 18));
        assert_eq!(stats.summary("t").requests, 1);
    }

    #[test]
    fn expect_continue_is_answered_and_a_size_is_kept() {
        let http = Http {
            response: 30,
            ..HTTP
        };
        let mut ex = Exchange::default();
        let mut out = Vec::new();
        ex.answer(
            b"PUT / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab",
            &mut out,
            &http,
            &Work::default(),
            &Stats::default(),
        );
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
        assert!(text.ends_with("\r\n\r\nHello, World!Hello, World!Hell"));
        assert!(text.contains("Content-Length: 30\r\n"));
    }
}
