//! The checks of HTTP/1.1's wire (`c10k conform --protocol http`): a
//! kept connection, pipelining in order, a request split byte by byte,
//! `Connection: close`, HTTP/1.0, a request that does not parse (400), a
//! header section past the limit (431), and requests never finished.
//! Responses are framed as the load generator frames them; the server is
//! asked `GET /` (and `HEAD /`, `POST /`), and any 2xx is an answer, so a
//! web server that serves something at `/` can be checked. A c10k model's
//! summary is held to what the clients saw.
//! Cost: about 2,500 requests and 40 connections per check.

use std::io::Write;
use std::net::Shutdown;

use super::subject::{Checking, Needs, Under};
use super::wire::{count, get, Responses};
use super::{ensure, Checked, Stop};
use crate::client::http::{request, Response};

/// `HEAD /`.
fn head() -> Vec<u8> {
    b"HEAD / HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec()
}

/// `resp` is a 2xx, or the failure naming `what` it answered.
fn ok(resp: Response, what: &str) -> Result<Response, Stop> {
    ensure(resp.ok(), || {
        format!("{what} got status {}, not 2xx", resp.status)
    })?;
    Ok(resp)
}

/// A c10k model's summary counts `requests` answered and `connections`
/// (when given); returns the evidence it adds.
fn summary_agrees(server: Under, requests: u64, connections: Option<u64>) -> Result<String, Stop> {
    let Some(summary) = server.stop()? else {
        return Ok(String::new());
    };
    ensure(summary.requests == requests, || {
        format!(
            "its summary says {} requests answered; the clients got {requests}",
            summary.requests
        )
    })?;
    if let Some(n) = connections {
        ensure(summary.connections == n, || {
            format!(
                "its summary says {} connections; the clients made {n}",
                summary.connections
            )
        })?;
    }
    Ok("; its summary agrees".into())
}

/// Four connections ask 50 times each, one request after another: every
/// answer 2xx, none saying it closes, every connection still open after.
pub(super) fn keep_alive(suite: &Checking) -> Checked {
    const CONNS: usize = 4;
    const EACH: usize = 50;
    let server = suite.start(Needs::default())?;
    let streams = server.connect_many(CONNS)?;
    let mut bodies = std::collections::BTreeSet::new();
    let asked = (|| -> Result<(), Stop> {
        for (i, s) in streams.iter().enumerate() {
            let mut r = Responses::new();
            for k in 0..EACH {
                (&*s).write_all(&get())?;
                let what = format!("connection {i}, request {}", k + 1);
                let resp = ok(r.next(s).map_err(|e| format!("{what}: {e}"))?, &what)?;
                ensure(!resp.closes, || {
                    format!("{what}: the response says the server closes; keep-alive is HTTP/1.1's default")
                })?;
                bodies.insert(resp.body);
            }
            s.shutdown(Shutdown::Write)?;
            r.then_eof(s).map_err(|e| format!("connection {i}: {e}"))?;
        }
        Ok(())
    })();
    if let Err(e) = asked {
        return Err(server.diagnose(e));
    }
    let sizes: Vec<String> = bodies.iter().map(|b| format!("{} B", count(*b))).collect();
    let agrees = summary_agrees(server, (CONNS * EACH) as u64, Some(CONNS as u64))?;
    Ok(format!(
        "{CONNS} connections × {EACH} requests one after another: all 2xx (bodies of {}), none closed before the client's shutdown{agrees}",
        sizes.join(", ")
    ))
}

/// 32 requests, GETs and HEADs mixed, in one write; then 2,000 GETs
/// written by one thread while another reads. Each response must frame as
/// the request in its place asked (a HEAD's has no body), in order.
pub(super) fn pipelined_in_order(suite: &Checking) -> Checked {
    const MIXED: usize = 32;
    const MORE: usize = 2000;
    let server = suite.start(Needs::default())?;
    let s = server.connect()?;
    let is_head = |k: usize| k % 3 == 1;
    let mut r = Responses::new();
    let mut burst = Vec::new();
    for k in 0..MIXED {
        burst.extend(if is_head(k) { head() } else { get() });
        r.expect(is_head(k));
    }
    let mut get_body = None;
    let checked = (|| -> Result<(), Stop> {
        (&s).write_all(&burst)?;
        for k in 0..MIXED {
            let what = format!(
                "pipelined request {} ({})",
                k + 1,
                if is_head(k) { "HEAD" } else { "GET" }
            );
            let resp = ok(r.next(&s).map_err(|e| format!("{what}: {e}"))?, &what)?;
            if !is_head(k) {
                ensure(*get_body.get_or_insert(resp.body) == resp.body, || {
                    format!("{what}: a body of {} B where the first GET's had {:?} B: answered out of order", resp.body, get_body)
                })?;
            }
        }
        for _ in 0..MORE {
            r.expect(false);
        }
        std::thread::scope(|t| -> Result<(), Stop> {
            let writer = t.spawn(|| -> std::io::Result<()> {
                let one = get();
                let batch: Vec<u8> = one.iter().copied().cycle().take(one.len() * 100).collect();
                for _ in 0..MORE / 100 {
                    (&s).write_all(&batch)?;
                }
                Ok(())
            });
            let read = (|| -> Result<(), Stop> {
                for k in 0..MORE {
                    let what = format!("pipelined GET {} of {MORE}", k + 1);
                    let resp = ok(r.next(&s).map_err(|e| format!("{what}: {e}"))?, &what)?;
                    ensure(Some(resp.body) == get_body, || {
                        format!("{what}: a body of {} B, not {get_body:?}", resp.body)
                    })?;
                }
                Ok(())
            })();
            if read.is_err() {
                // Unblock the writer.
                let _ = s.shutdown(Shutdown::Both);
            }
            let wrote = writer
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the writer panicked")));
            read?;
            wrote.map_err(|e| Stop::Fail(format!("writing the pipelined GETs: {e}")))
        })?;
        s.shutdown(Shutdown::Write)?;
        r.then_eof(&s)?;
        Ok(())
    })();
    if let Err(e) = checked {
        return Err(server.diagnose(e));
    }
    let agrees = summary_agrees(server, (MIXED + MORE) as u64, Some(1))?;
    Ok(format!(
        "{MIXED} GETs and HEADs in one write, then {} GETs 100 to a write while reading: every response in order, a GET's body {} B, a HEAD's none{agrees}",
        count(MORE as u64),
        get_body.unwrap_or(0)
    ))
}

/// A GET with a few headers, then a POST with a 16-byte body, written one
/// byte per segment (TCP_NODELAY): both answered 2xx.
pub(super) fn split_byte_by_byte(suite: &Checking) -> Checked {
    let server = suite.start(Needs::default())?;
    let s = server.connect()?;
    s.set_nodelay(true)?;
    let get = b"GET /split HTTP/1.1\r\nHost: localhost\r\nUser-Agent: c10k-conform\r\nAccept: */*\r\n\r\n";
    let post = request("localhost", 16);
    let mut r = Responses::new();
    let checked = (|| -> Result<(), Stop> {
        for (what, bytes) in [("the GET", &get[..]), ("the POST", &post[..])] {
            for b in bytes {
                (&s).write_all(std::slice::from_ref(b))?;
            }
            let resp = r
                .next(&s)
                .map_err(|e| format!("{what}, sent a byte at a time: {e}"))?;
            ok(resp, what)?;
        }
        s.shutdown(Shutdown::Write)?;
        r.then_eof(&s)?;
        Ok(())
    })();
    if let Err(e) = checked {
        return Err(server.diagnose(e));
    }
    let agrees = summary_agrees(server, 2, Some(1))?;
    Ok(format!(
        "a GET of {} B and a POST of {} B (16 B of body), one byte per write: both answered 2xx{agrees}",
        get.len(),
        post.len()
    ))
}

/// `Connection: close`: its response, then the server's close.
pub(super) fn connection_close(suite: &Checking) -> Checked {
    let server = suite.start(Needs::default())?;
    let s = server.connect()?;
    let mut r = Responses::new();
    let said = (|| -> Result<bool, Stop> {
        (&s).write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
        let resp = ok(r.next(&s)?, "GET with Connection: close")?;
        r.then_eof(&s)
            .map_err(|e| format!("after the response to Connection: close: {e}"))?;
        Ok(resp.closes)
    })();
    let said = match said {
        Ok(said) => said,
        Err(e) => return Err(server.diagnose(e)),
    };
    let agrees = summary_agrees(server, 1, Some(1))?;
    Ok(format!(
        "answered 2xx{}, then EOF without the client closing{agrees}",
        if said {
            " saying Connection: close"
        } else {
            " (without saying Connection: close)"
        }
    ))
}

/// HTTP/1.0 without keep-alive: answered, then closed. With
/// `Connection: keep-alive`: two requests answered on one connection.
pub(super) fn http10(suite: &Checking) -> Checked {
    let server = suite.start(Needs::default())?;
    let checked = (|| -> Result<u8, Stop> {
        let s = server.connect()?;
        let mut r = Responses::new();
        (&s).write_all(b"GET / HTTP/1.0\r\n\r\n")?;
        let resp = ok(r.next(&s)?, "an HTTP/1.0 GET")?;
        r.then_eof(&s)
            .map_err(|e| format!("after answering HTTP/1.0 without keep-alive: {e}"))?;
        let kept = server.connect()?;
        let mut r = Responses::new();
        for k in 1..=2 {
            (&kept).write_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")?;
            let what = format!("HTTP/1.0 keep-alive request {k}");
            let resp = ok(r.next(&kept).map_err(|e| format!("{what}: {e}"))?, &what)?;
            ensure(!resp.closes, || {
                format!("{what}: the response says it closes")
            })?;
        }
        kept.shutdown(Shutdown::Write)?;
        r.then_eof(&kept)?;
        Ok(resp.minor)
    })();
    let minor = match checked {
        Ok(m) => m,
        Err(e) => return Err(server.diagnose(e)),
    };
    let agrees = summary_agrees(server, 3, Some(2))?;
    Ok(format!(
        "HTTP/1.0: answered (as HTTP/1.{minor}) then closed; with Connection: keep-alive, 2 requests on one connection{agrees}"
    ))
}

/// A request line with a control byte in its method: 400, then the
/// close; a good connection beside it is served before and after.
pub(super) fn bad_request_400(suite: &Checking) -> Checked {
    let server = suite.start(Needs::default())?;
    let checked = (|| -> Result<(), Stop> {
        let good = server.connect()?;
        let mut g = Responses::new();
        (&good).write_all(&get())?;
        ok(g.next(&good)?, "the good connection's first GET")?;
        let bad = server.connect()?;
        let mut r = Responses::new();
        (&bad).write_all(b"G\x01T / HTTP/1.1\r\nHost: localhost\r\n\r\n")?;
        let resp = r.next(&bad).map_err(|e| format!("the bad request: {e}"))?;
        ensure(resp.status == 400, || {
            format!("the bad request got {}, not 400", resp.status)
        })?;
        r.then_eof(&bad)
            .map_err(|e| format!("after the 400: {e}"))?;
        (&good).write_all(&get())?;
        ok(g.next(&good)?, "the good connection's GET after the 400")?;
        Ok(())
    })();
    if let Err(e) = checked {
        return Err(server.diagnose(e));
    }
    let mut evidence = "\"G\\x01T / HTTP/1.1\" got 400, then EOF; a connection beside it was served before and after".to_string();
    if let Some(summary) = server.stop()? {
        ensure(summary.errors.bad_request == 1, || {
            format!(
                "its summary counts {} bad requests, 1 sent",
                summary.errors.bad_request
            )
        })?;
        evidence += "; its summary counts the one bad request";
    }
    Ok(evidence)
}

/// A header section past the server's limit (a c10k model's is its
/// `--buffer`; another server is sent past Go's 1 MiB): 431, then the
/// close (or a reset: the server closed with the rest unread). nginx
/// answers 400 (its own "Request Header Or Cookie Too Large"), which
/// passes for a server c10k did not write, and is said.
pub(super) fn header_too_large_431(suite: &Checking) -> Checked {
    let model_limit = match &suite.subject {
        super::Subject::Model { settings, .. } => Some(
            settings
                .buffer_bytes
                .unwrap_or(crate::server::settings::DEFAULT_BUFFER),
        ),
        _ => None,
    };
    let size = model_limit.map_or((1 << 20) + (64 << 10), |l| 2 * l + 1024);
    let server = suite.start(Needs::default())?;
    let s = server.connect()?;
    let mut huge = b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: ".to_vec();
    huge.resize(huge.len() + size, b'a');
    huge.extend_from_slice(b"\r\n\r\n");
    let (answer, ended) = std::thread::scope(|t| {
        // The server may stop reading once past its limit: write from a
        // thread, and let its errors be (a close is the expected end).
        let writer = t.spawn(|| {
            let _ = (&s).write_all(&huge);
        });
        let mut r = Responses::new();
        let answer = r.next(&s);
        let ended = match &answer {
            Ok(_) => r
                .then_eof(&s)
                .or_else(|e| if e.contains("reset") { Ok(()) } else { Err(e) }),
            Err(_) => Ok(()),
        };
        let _ = s.shutdown(Shutdown::Both);
        let _ = writer.join();
        (answer, ended)
    });
    let checked = (|| -> Result<u16, Stop> {
        let resp = answer.map_err(|e| format!("a header of {} B: {e}", count(size as u64)))?;
        let fine = resp.status == 431 || (model_limit.is_none() && resp.status == 400);
        ensure(fine, || {
            format!(
                "a header of {} B got {}, not 431",
                count(size as u64),
                resp.status
            )
        })?;
        ended.map_err(|e| format!("after the {}: {e}", resp.status))?;
        Ok(resp.status)
    })();
    let status = match checked {
        Ok(s) => s,
        Err(e) => return Err(server.diagnose(e)),
    };
    let limit = model_limit.map_or(String::new(), |l| {
        format!(" (its limit, --buffer: {} B)", count(l as u64))
    });
    let mut evidence = format!(
        "a header of {} B{limit} got {status}{}, then the close",
        count(size as u64),
        if status == 400 {
            " (RFC 6585 names 431; nginx answers 400)"
        } else {
            ""
        }
    );
    if let Some(summary) = server.stop()? {
        ensure(summary.errors.bad_request == 1, || {
            format!(
                "its summary counts {} bad requests, 1 sent",
                summary.errors.bad_request
            )
        })?;
        evidence += "; its summary counts it";
    }
    Ok(evidence)
}

/// Twenty connections send half a head, ten a head and half its body;
/// eight others are served three times meanwhile; then each unfinished
/// one finishes and is answered.
pub(super) fn unfinished_request(suite: &Checking) -> Checked {
    const HALF: usize = 20;
    const BODY: usize = 10;
    const GOOD: usize = 8;
    const ROUNDS: usize = 3;
    let server = suite.start(Needs::default())?;
    let checked = (|| -> Result<(), Stop> {
        let half = server.connect_many(HALF)?;
        for mut s in &half {
            s.write_all(b"GET / HTTP/1.1\r\nHost: loc")?;
        }
        let post = request("localhost", 100);
        let cut = post.len() - 50;
        let body = server.connect_many(BODY)?;
        for mut s in &body {
            s.write_all(&post[..cut])?;
        }
        let good = server.connect_many(GOOD)?;
        let mut readers: Vec<Responses> = (0..GOOD).map(|_| Responses::new()).collect();
        for round in 1..=ROUNDS {
            for (i, (s, r)) in good.iter().zip(&mut readers).enumerate() {
                (&*s).write_all(&get())?;
                let what = format!(
                    "good connection {i}, round {round}, beside {} unfinished requests",
                    HALF + BODY
                );
                ok(r.next(s).map_err(|e| format!("{what}: {e}"))?, &what)?;
            }
        }
        for (i, mut s) in half.iter().enumerate() {
            s.write_all(b"alhost\r\n\r\n")?;
            let what = format!("half-head connection {i}, finished");
            ok(
                Responses::new()
                    .next(s)
                    .map_err(|e| format!("{what}: {e}"))?,
                &what,
            )?;
        }
        for (i, mut s) in body.iter().enumerate() {
            s.write_all(&post[cut..])?;
            let what = format!("half-body connection {i}, finished");
            ok(
                Responses::new()
                    .next(s)
                    .map_err(|e| format!("{what}: {e}"))?,
                &what,
            )?;
        }
        Ok(())
    })();
    if let Err(e) = checked {
        return Err(server.diagnose(e));
    }
    let agrees = summary_agrees(
        server,
        (GOOD * ROUNDS + HALF + BODY) as u64,
        Some((HALF + BODY + GOOD) as u64),
    )?;
    Ok(format!(
        "{GOOD} connections served {ROUNDS} times beside {HALF} half-sent heads and {BODY} half-sent bodies; then all {} answered{agrees}",
        HALF + BODY
    ))
}
