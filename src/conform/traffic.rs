//! The checks that need only the wire, so they run on any subject, a bare
//! address included: echo equality in fragments, 1,100 connections at
//! once, half-close, resets mid-message, silent connections. A c10k
//! model's summary line is also held to what the clients saw.
//! Cost: up to 1,100 connections and about 20 MiB of traffic per check.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use super::subject::Checking;
use super::subject::Needs;
use super::wire::{self, count, echo_fragmented, expect_eof, finish, pattern, Rng};
use super::{ensure, Checked, Stop};
use crate::protocol::Protocol;
use crate::server::settings::Settings;

/// 1 B, 100 B, 64 KiB and 1 MiB, each written in random fragments, on 16
/// connections at once; every echo must equal what was sent.
pub(super) fn echo_sizes_in_fragments(suite: &Checking) -> Checked {
    const CONNS: usize = 16;
    const SIZES: [usize; 4] = [1, 100, 64 << 10, 1 << 20];
    let server = suite.start(Needs::default())?;
    let streams = server.connect_many(CONNS)?;
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = streams
            .iter()
            .enumerate()
            .map(|(i, stream)| {
                s.spawn(move || -> Result<(), String> {
                    let mut rng = Rng::new(i as u64);
                    for size in SIZES.map(|n| suite.whole(n)) {
                        let data = rng.bytes(size);
                        let back = echo_fragmented(stream, &data, &mut rng)
                            .map_err(|e| {
                                format!(
                                    "connection {i}, the {} B message: {}",
                                    count(size as u64),
                                    wire::words(&e)
                                )
                            })?;
                        if let Some(at) = (0..size).find(|&j| back[j] != data[j]) {
                            return Err(format!(
                                "connection {i}: the {size} B message came back different from byte {at}"
                            ));
                        }
                    }
                    finish(stream).map_err(|e| format!("connection {i}: {e}"))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a client thread panicked".into()))
            })
            .collect()
    });
    if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
        return Err(server.diagnose(e.into()));
    }
    let total = SIZES.iter().map(|&n| suite.whole(n)).sum::<usize>() as u64 * CONNS as u64;
    let mut evidence = format!(
        "{CONNS} connections × 1 B, 100 B, 64 KiB and 1 MiB in random fragments: {} bytes came back equal",
        count(total)
    );
    if let Some(summary) = server.stop()? {
        ensure(summary.bytes_echoed == total, || {
            format!(
                "the summary says {} bytes echoed; the clients got {}",
                count(summary.bytes_echoed),
                count(total)
            )
        })?;
        ensure(summary.connections == CONNS as u64, || {
            format!(
                "the summary says {} connections; the clients made {CONNS}",
                summary.connections
            )
        })?;
        evidence += "; its summary agrees";
    }
    Ok(evidence)
}

/// 1,100 connections open at once (past FD_SETSIZE), every message (or
/// request) sent before any answer is read.
pub(super) fn past_fd_setsize(suite: &Checking) -> Checked {
    const N: usize = 1100;
    // The client needs more than 1,100 descriptors.
    let _ = crate::sys::rlimit::raise_nofile();
    // prefork serves one connection per worker.
    let server = suite.start(Needs {
        settings: Settings {
            workers: (suite.subject.model() == Some("prefork")).then_some(N),
            ..Settings::default()
        },
        ..Needs::default()
    })?;
    let mut streams = server.connect_many(N)?;
    for (i, s) in streams.iter_mut().enumerate() {
        s.write_all(&wire::ask(suite, i))
            .map_err(|e| format!("connection {i}: {e}"))?;
    }
    for (i, s) in streams.iter().enumerate() {
        if let Err(e) = wire::answer(suite, s, i) {
            return Err(server.diagnose(format!("connection {i}: {e}").into()));
        }
    }
    let max_fd = streams
        .iter()
        .map(std::os::fd::AsRawFd::as_raw_fd)
        .max()
        .unwrap_or(0);
    for s in &streams {
        s.shutdown(Shutdown::Write)?;
    }
    for (i, s) in streams.iter().enumerate() {
        expect_eof(s).map_err(|e| format!("connection {i}: {e}"))?;
    }
    ensure(max_fd > 1024, || {
        format!("the client's descriptors stopped at {max_fd}, not past 1,024")
    })?;
    let asked = wire::ask(suite, 0).len() as u64;
    let answered = match suite.protocol {
        Protocol::Echo => format!("echoed its {} B", count(asked)),
        Protocol::Http => "was answered 2xx".to_string(),
    };
    let mut evidence = format!(
        "{} connections open at once (client descriptors up to {}): every one {answered} and saw EOF",
        count(N as u64),
        count(max_fd as u64),
    );
    if let Some(summary) = server.stop()? {
        ensure(summary.peak_connections >= N as u64, || {
            format!(
                "its summary's peak is {} < {N}: the connections were not open at once",
                summary.peak_connections
            )
        })?;
        let (said, want) = match suite.protocol {
            Protocol::Echo => (summary.bytes_echoed, asked * N as u64),
            Protocol::Http => (summary.requests, N as u64),
        };
        ensure(said == want, || {
            format!(
                "its summary says {said} {} where the clients got {want}",
                match suite.protocol {
                    Protocol::Echo => "bytes echoed",
                    Protocol::Http => "requests",
                }
            )
        })?;
        evidence += &format!("; its summary's peak: {}", count(summary.peak_connections));
    }
    Ok(evidence)
}

/// The client writes 200,000 bytes and shuts down its write side at once:
/// every byte must still come back, then EOF.
pub(super) fn half_close(suite: &Checking) -> Checked {
    let size = suite.whole(200_000) as u64;
    let server = suite.start(Needs::default())?;
    let stream = server.connect()?;
    let mut data = vec![0u8; size as usize];
    wire::fill(&mut data, 0);
    let (back, read) = std::thread::scope(|s| {
        let w = s.spawn(|| -> std::io::Result<()> {
            (&stream).write_all(&data)?;
            stream.shutdown(Shutdown::Write)
        });
        let mut back = Vec::new();
        let read = (&stream).read_to_end(&mut back);
        let wrote = w
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the writer thread panicked")));
        (back, wrote.and(read))
    });
    if let Err(e) = read {
        return Err(server.diagnose(
            format!(
                "after {} of {} bytes: {}",
                count(back.len() as u64),
                count(size),
                wire::words(&e)
            )
            .into(),
        ));
    }
    if let Some(at) = (0..back.len()).find(|&j| back[j] != data[j]) {
        return Err(format!(
            "{} bytes came back before EOF, differing from byte {}: a byte was lost or changed on the way",
            count(back.len() as u64),
            count(at as u64)
        )
        .into());
    }
    ensure(back.len() as u64 == size, || {
        format!(
            "EOF after {} of {} bytes: the rest was lost at the half-close",
            count(back.len() as u64),
            count(size)
        )
    })?;
    server.stop()?;
    Ok(format!(
        "{} bytes written then shutdown(SHUT_WR): all {} came back, then EOF",
        count(size),
        count(size)
    ))
}

/// Twenty clients reset (SO_LINGER 0) half-way through a 100 KB message,
/// every other one after part of its echo came back, while 8 others echo
/// between every reset: none of the 8 may notice.
pub(super) fn reset_mid_message(suite: &Checking) -> Checked {
    const GOOD: usize = 8;
    const RESETS: u64 = 20;
    let server = suite.start(Needs::default())?;
    let mut good = server.connect_many(GOOD)?;
    let mut rounds = 0;
    let mut round = |good: &mut Vec<TcpStream>, tag: u8| -> Result<(), Stop> {
        for (i, s) in good.iter_mut().enumerate() {
            let msg = vec![tag ^ i as u8; suite.whole(3000)];
            s.write_all(&msg)?;
            let mut back = vec![0u8; msg.len()];
            wire::read_fully(s, &mut back)
                .map_err(|e| format!("good connection {i}, round {tag}: {}", wire::words(&e)))?;
            ensure(back == msg, || {
                format!("good connection {i} got other bytes in round {tag}")
            })?;
        }
        rounds += 1;
        Ok(())
    };
    if let Err(e) = round(&mut good, 1) {
        return Err(server.diagnose(e));
    }
    let mut data = vec![0u8; 50_000];
    wire::fill(&mut data, 0);
    for k in 0..RESETS {
        let s = server.connect()?;
        (&s).write_all(&data)?;
        if k % 2 == 0 {
            let mut some = [0u8; 1000];
            wire::read_fully(&s, &mut some)
                .map_err(|e| format!("resetting client {k}: {}", wire::words(&e)))?;
        }
        socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO))?;
        drop(s);
        if let Err(e) = round(&mut good, k as u8 + 2) {
            return Err(server.diagnose(e));
        }
    }
    drop(good);
    let mut evidence = format!(
        "{RESETS} clients reset mid-message; {GOOD} others echoed {} messages of 3,000 B unharmed",
        rounds * GOOD
    );
    if let Some(summary) = server.stop()? {
        // The 8 good clients and the 10 resets that saw part of their echo
        // were accepted for sure; the other 10 may have been reset in the
        // backlog.
        let sure = GOOD as u64 + RESETS / 2;
        ensure(
            (sure..=GOOD as u64 + RESETS).contains(&summary.connections),
            || {
                format!(
                    "its summary counts {} connections; {sure} to {} expected",
                    summary.connections,
                    GOOD as u64 + RESETS
                )
            },
        )?;
        evidence += &format!(
            "; its summary: {} connections, {} reset",
            summary.connections, summary.errors.reset
        );
    }
    Ok(evidence)
}

/// Forty connections that send nothing and ten that stop half-way through
/// a message must not keep 8 others from echoing; then every one of them
/// is still served.
pub(super) fn silent_connections(suite: &Checking) -> Checked {
    const SILENT: usize = 40;
    const HALF: usize = 10;
    const GOOD: usize = 8;
    let server = suite.start(Needs::default())?;
    let silent = server.connect_many(SILENT)?;
    let half = server.connect_many(HALF)?;
    // Half of a 200-byte message each; the server may echo that half.
    let whole = suite.whole(200);
    for (i, mut s) in half.iter().enumerate() {
        s.write_all(&vec![i as u8; whole / 2])?;
    }
    let mut good = server.connect_many(GOOD)?;
    for round in 0..3u8 {
        for (i, s) in good.iter_mut().enumerate() {
            let msg = vec![round ^ i as u8; suite.whole(500)];
            s.write_all(&msg)?;
            let mut back = vec![0u8; msg.len()];
            if let Err(e) = wire::read_fully(s, &mut back) {
                return Err(server.diagnose(
                    format!(
                        "good connection {i}, round {round}, beside {SILENT} silent connections: {}",
                        wire::words(&e)
                    )
                    .into(),
                ));
            }
            ensure(back == msg, || {
                format!("good connection {i} got other bytes")
            })?;
        }
    }
    // The quiet ones were kept, not dropped: each finishes now.
    for (i, mut s) in half.iter().enumerate() {
        s.write_all(&vec![i as u8; whole - whole / 2])?;
        let mut back = vec![0u8; whole];
        wire::read_fully(s, &mut back)
            .map_err(|e| format!("half-message connection {i}: {}", wire::words(&e)))?;
        ensure(back == vec![i as u8; whole], || {
            format!("half-message connection {i} got other bytes")
        })?;
    }
    for (i, mut s) in silent.iter().enumerate() {
        let msg = vec![pattern(i as u64); suite.whole(10)];
        s.write_all(&msg)?;
        let mut back = vec![0u8; msg.len()];
        wire::read_fully(s, &mut back).map_err(|e| {
            format!(
                "silent connection {i}, at last speaking: {}",
                wire::words(&e)
            )
        })?;
        ensure(back == msg, || {
            format!("silent connection {i} got other bytes")
        })?;
    }
    drop((silent, half, good));
    server.stop()?;
    Ok(format!(
        "{GOOD} clients echoed {} messages beside {SILENT} silent connections and {HALF} stopped half-way; then all {} were served",
        3 * GOOD,
        SILENT + HALF
    ))
}
