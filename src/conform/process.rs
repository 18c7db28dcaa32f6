//! The checks that read the server's process, so they run only when c10k
//! started it: memory under a peer that never reads, running out of
//! descriptors, CPU when idle, SIGTERM; and `--max-conns`, a c10k-only
//! flag. CPU is the whole process tree's (/proc), memory its resident set.
//! Cost: 64 MiB of traffic, 100 connections, and about three seconds of
//! quiet windows in which the server's CPU is read.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::subject::Checking;
use super::subject::Needs;
use super::wire::{self, count, finish, pattern};
use super::{ensure, Checked, Stop, Suite};
use crate::child::server::GRACE;
use crate::server::settings::Settings;

/// A client sends up to 64 MiB and reads nothing: the server must stop
/// taking it in (the client's socket stays unwritable), its resident memory
/// grown by no more than a bound; then the client reads and every byte
/// arrives in order.
pub(super) fn slow_reader_bounded_memory(suite: &Checking) -> Checked {
    const TOTAL: u64 = 64 << 20;
    // A c10k model is told its buffer; another server is allowed 64 KiB
    // per buffer, the most a common runtime reads at once.
    let is_model = suite.subject.model().is_some();
    let buffer: u64 = if is_model { 16 << 10 } else { 64 << 10 };
    let server = suite.start(Needs {
        settings: Settings {
            buffer_bytes: Some(16 << 10),
            ..Settings::default()
        },
        process: Some("memory"),
        ..Needs::default()
    })?;
    let stream = server.connect()?;
    // One round trip so per-connection state (a thread, a child) exists.
    let warm = suite.message(b"warm-up");
    (&stream).write_all(&warm)?;
    wire::read_fully(&stream, &mut vec![0u8; warm.len()])?;
    let base = server.rss_kib();

    // Send until the socket stays unwritable for 300 ms: the server has
    // stopped reading because nobody reads its echo.
    stream.set_nonblocking(true)?;
    let mut sent = 0u64;
    let started = Instant::now();
    let mut buf = vec![0u8; 65536];
    loop {
        let n = (TOTAL - sent).min(65536) as usize;
        wire::fill(&mut buf[..n], sent);
        match (&stream).write(&buf[..n]) {
            Ok(n) => {
                sent += n as u64;
                if sent == TOTAL {
                    let grown = server.rss_kib().saturating_sub(base);
                    return Err(Stop::Fail(format!(
                        "it took in all 64 MiB from a client that reads nothing (its memory grew {} KiB): unbounded buffering",
                        count(grown)
                    )));
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let mut fds = [rustix::event::PollFd::new(
                    &stream,
                    rustix::event::PollFlags::OUT,
                )];
                let quiet = rustix::event::Timespec {
                    tv_sec: 0,
                    tv_nsec: 300_000_000,
                };
                if rustix::event::poll(&mut fds, Some(&quiet))? == 0 {
                    break;
                }
            }
            Err(e) => return Err(server.diagnose(format!("after {sent} bytes: {e}").into())),
        }
        if started.elapsed() > server.patience() {
            return Err(format!(
                "the client's socket never stayed unwritable: {} bytes taken in {} s",
                count(sent),
                server.patience().as_secs()
            )
            .into());
        }
    }
    let grown = server.rss_kib().saturating_sub(base);
    // One buffer per connection, plus allocator and runtime slack.
    let bound_kib = (64 * buffer + (8 << 20)) / 1024;
    ensure(grown <= bound_kib, || {
        format!(
            "its memory grew {} KiB while {} bytes were in flight; the bound is {} KiB",
            count(grown),
            count(sent),
            count(bound_kib)
        )
    })?;

    // Now read everything while sending the rest.
    stream.set_nonblocking(false)?;
    let checked = std::thread::scope(|s| {
        let w = s.spawn(|| -> std::io::Result<()> {
            let mut at = sent;
            let mut buf = vec![0u8; 65536];
            while at < TOTAL {
                let n = (TOTAL - at).min(65536) as usize;
                wire::fill(&mut buf[..n], at);
                (&stream).write_all(&buf[..n])?;
                at += n as u64;
            }
            Ok(())
        });
        let mut got = 0u64;
        let mut buf = vec![0u8; 65536];
        let read = (|| -> Result<(), String> {
            while got < TOTAL {
                let n = (&stream)
                    .read(&mut buf)
                    .map_err(|e| format!("after {} bytes: {}", count(got), wire::words(&e)))?;
                if n == 0 {
                    return Err(format!(
                        "EOF after {} of {} bytes",
                        count(got),
                        count(TOTAL)
                    ));
                }
                if let Some(j) = (0..n).find(|&j| buf[j] != pattern(got + j as u64)) {
                    return Err(format!(
                        "byte {} of the echo differs: a byte was lost or changed",
                        count(got + j as u64)
                    ));
                }
                got += n as u64;
            }
            Ok(())
        })();
        let wrote = w
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the writer panicked")));
        read.and(wrote.map_err(|e| e.to_string()))
    });
    if let Err(e) = checked {
        return Err(server.diagnose(e.into()));
    }
    drop(stream);
    server.stop()?;
    Ok(format!(
        "it stopped taking bytes after {} of 64 MiB; its memory grew {} KiB (bound {} KiB); then all 64 MiB came back in order",
        count(sent),
        count(grown),
        count(bound_kib)
    ))
}

/// A server with a soft open-files limit of 64 and 100 clients: those it
/// took keep echoing, it does not spin while it cannot accept, and every
/// waiting client is served once others leave.
pub(super) fn emfile(suite: &Checking) -> Checked {
    const CLIENTS: usize = 100;
    let server = suite.start(Needs {
        settings: Settings {
            workers: (suite.subject.model() == Some("prefork")).then_some(8),
            ..Settings::default()
        },
        process: Some("open-files limit and CPU"),
        nofile: Some(64),
        ..Needs::default()
    })?;
    let mut clients: Vec<Option<TcpStream>> = server
        .connect_many(CLIENTS)?
        .into_iter()
        .map(Some)
        .collect();
    for (i, c) in clients.iter().enumerate() {
        if let Some(mut s) = c.as_ref() {
            s.write_all(&vec![i as u8; suite.whole(16)])?;
        }
    }
    let mut served = vec![false; CLIENTS];
    // Read echoes until, some served, a quiet window passes with nothing
    // new: the server is saturated. Its CPU time over that window shows
    // whether it spins.
    let window = Duration::from_millis(500);
    let mut quiet = None;
    let started = Instant::now();
    while quiet.is_none() && started.elapsed() < server.patience() {
        let cpu0 = server.cpu();
        let t0 = Instant::now();
        let got = match read_echoes(&clients, &mut served, window, suite.whole(16)) {
            Ok(n) => n,
            Err(e) => return Err(server.diagnose(e)),
        };
        // Quiet once it has served some: a slow server (or a busy machine)
        // may take longer than a window for its first echo.
        if got == 0 && served.iter().any(|s| *s) {
            quiet = Some((server.cpu().saturating_sub(cpu0), t0.elapsed()));
        }
    }
    if served.iter().all(|s| *s) {
        // Never out of descriptors: a process per connection has a table
        // of its own.
        drop(clients);
        let mut evidence = format!(
            "it never ran out: all {CLIENTS} clients were served at once under a limit of 64"
        );
        let model = server.model().map(str::to_string);
        if let Some(summary) = server.stop()? {
            ensure(matches!(model.as_deref(), Some("fork" | "prefork")), || {
                format!(
                    "the server never ran out of descriptors (its summary: {} failed accepts): the check did not saturate it",
                    summary.errors.accept_exhausted
                )
            })?;
            evidence += &format!("; its summary: {} connections", summary.connections);
        }
        return Ok(evidence);
    }
    let (cpu, wall) = quiet.ok_or_else(|| {
        if served.iter().any(|s| *s) {
            format!(
                "it kept serving new clients slowly for {} s without a quiet window",
                server.patience().as_secs()
            )
        } else {
            format!(
                "no client was served within {} s",
                server.patience().as_secs()
            )
        }
    })?;
    let spins = spins(suite);
    ensure(spins.is_some() || cpu < wall / 2, || {
        format!(
            "it used {:.3} s of CPU in {:.3} s while it could not accept: it spins",
            cpu.as_secs_f64(),
            wall.as_secs_f64()
        )
    })?;
    let first: Vec<usize> = (0..CLIENTS).filter(|&i| served[i]).collect();

    // Clients it took keep echoing.
    let keep: Vec<usize> = first.iter().copied().take(2).collect();
    for &i in &keep {
        let Some(mut s) = clients[i].as_ref() else {
            continue;
        };
        let msg = suite.message(b"still here");
        s.write_all(&msg)?;
        let mut back = vec![0u8; msg.len()];
        wire::read_fully(s, &mut back)
            .map_err(|e| format!("client {i}, served before: {}", wire::words(&e)))?;
        ensure(back == msg, || format!("client {i} got other bytes"))?;
    }
    // Others leave; each newly served client leaves too, making room.
    for &i in &first {
        if !keep.contains(&i) {
            clients[i] = None;
        }
    }
    let started = Instant::now();
    while served.iter().any(|s| !s) && started.elapsed() < server.patience() {
        let before = served.clone();
        if let Err(e) = read_echoes(
            &clients,
            &mut served,
            Duration::from_millis(200),
            suite.whole(16),
        ) {
            return Err(server.diagnose(e));
        }
        for i in 0..CLIENTS {
            if served[i] && !before[i] {
                clients[i] = None;
            }
        }
    }
    let left = served.iter().filter(|s| !**s).count();
    ensure(left == 0, || {
        format!(
            "{left} waiting clients were never served in {} s after others left",
            server.patience().as_secs()
        )
    })?;
    drop(clients);
    let mut evidence = format!(
        "{} of {CLIENTS} clients served at first; {:.3} s of CPU in a {:.1} s window while saturated; the other {} served once others left",
        first.len(),
        cpu.as_secs_f64(),
        wall.as_secs_f64(),
        CLIENTS - first.len()
    );
    if spins.is_some() {
        evidence += " (its CPU not held to half: it spins by design)";
    }
    let model = server.model().map(str::to_string);
    if let Some(summary) = server.stop()? {
        let single_process = !matches!(model.as_deref(), Some("fork" | "prefork"));
        ensure(
            !single_process || summary.errors.accept_exhausted > 0,
            || "the server never ran out of descriptors: the check did not saturate it".into(),
        )?;
        evidence += &format!(
            "; its summary: {} accepts failed for lack of descriptors",
            summary.errors.accept_exhausted
        );
    }
    Ok(evidence)
}

/// Waits up to `window` for echoes on clients not yet served; marks and
/// checks each one that arrives. Returns how many arrived.
fn read_echoes(
    clients: &[Option<TcpStream>],
    served: &mut [bool],
    window: Duration,
    message: usize,
) -> Result<usize, Stop> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let waiting: Vec<usize> = (0..clients.len())
        .filter(|&i| !served[i] && clients[i].is_some())
        .collect();
    let mut fds: Vec<PollFd> = waiting
        .iter()
        .filter_map(|&i| clients[i].as_ref())
        .map(|s| PollFd::new(s, PollFlags::IN))
        .collect();
    if fds.is_empty() {
        return Ok(0);
    }
    let ts = Timespec::try_from(window).map_err(|e| e.to_string())?;
    if poll(&mut fds, Some(&ts))? == 0 {
        return Ok(0);
    }
    let ready: Vec<usize> = waiting
        .iter()
        .zip(&fds)
        .filter(|(_, p)| !p.revents().is_empty())
        .map(|(&i, _)| i)
        .collect();
    drop(fds);
    for &i in &ready {
        let Some(s) = clients[i].as_ref() else {
            continue;
        };
        let mut back = vec![0u8; message];
        wire::read_fully(s, &mut back).map_err(|e| {
            format!(
                "waiting client {i} was closed unserved ({}): the server dropped a queued connection instead of leaving it for later",
                wire::words(&e)
            )
        })?;
        ensure(back == vec![i as u8; back.len()], || {
            format!("client {i} got other bytes")
        })?;
        served[i] = true;
    }
    Ok(ready.len())
}

/// Ten connections are answered once and stay open with no traffic: over a second
/// the server's CPU must stay under half of it.
pub(super) fn idle_no_busy_loop(suite: &Checking) -> Checked {
    const CONNS: usize = 10;
    const WINDOW: Duration = Duration::from_secs(1);
    // Known before it starts: a second of a spinning CPU would only
    // disturb whatever runs beside the check.
    if let Some(why) = spins(suite) {
        return Err(Stop::Skip(why.to_string()));
    }
    let server = suite.start(Needs {
        process: Some("CPU"),
        ..Needs::default()
    })?;
    let streams = server.connect_served(suite, CONNS)?;
    let cpu0 = server.cpu();
    let t0 = Instant::now();
    // The measured window itself, not a wait for readiness.
    std::thread::sleep(WINDOW);
    let (cpu, wall) = (server.cpu().saturating_sub(cpu0), t0.elapsed());
    ensure(cpu < wall / 2, || {
        format!(
            "it used {:.3} s of CPU in {:.3} s with {CONNS} idle connections: it spins",
            cpu.as_secs_f64(),
            wall.as_secs_f64()
        )
    })?;
    drop(streams);
    server.stop()?;
    Ok(format!(
        "{:.3} s of CPU in {:.2} s with {CONNS} connections open and idle",
        cpu.as_secs_f64(),
        wall.as_secs_f64()
    ))
}

/// Why the subject uses CPU while idle, for a c10k model that never sleeps
/// by design (`busy`): its CPU is reported, not held to a bound.
fn spins(suite: &Suite) -> Option<&'static str> {
    suite
        .subject
        .model()
        .and_then(crate::server::find)
        .and_then(|m| m.spins())
}

/// SIGTERM to the server's process with five connections open: it exits
/// cleanly (a c10k model: 0 with its summary; another server: 0, or the
/// default death by SIGTERM) and no process of its tree is left.
pub(super) fn sigterm(suite: &Checking) -> Checked {
    const CONNS: usize = 5;
    let server = suite.start(Needs {
        process: Some("signals and process tree"),
        ..Needs::default()
    })?;
    let streams = server.connect_served(suite, CONNS)?;
    let model = server.model().map(str::to_string);
    // A c10k model has the launcher's patience; another server the grace
    // period the runner gives it.
    let grace = if model.is_some() {
        server.patience()
    } else {
        GRACE
    };
    let started = Instant::now();
    let done = server.terminate(grace)?;
    let took = started.elapsed();
    drop(streams);
    ensure(done.exited, || {
        format!(
            "it did not exit within {} s of SIGTERM and was killed",
            grace.as_secs()
        )
    })?;
    ensure(done.left.is_empty(), || {
        format!(
            "it exited, but {} of its processes were still running: {} (killed then)",
            done.left.len(),
            done.left.join(", ")
        )
    })?;
    let reaped = done.stopped.reaped.ok_or("it could not be reaped")?;
    let (code, signal) = (reaped.exit_code(), reaped.signal());
    let stderr_tail = done.stopped.stderr.lines().last().unwrap_or("").to_string();
    let mut evidence = match model {
        Some(model) => {
            let (status, summary) = done.stopped.checked()?;
            ensure(status.success(), || format!("it exited with {status}"))?;
            ensure(summary.model == model, || {
                format!("its summary names {}", summary.model)
            })?;
            ensure(summary.connections == CONNS as u64, || {
                format!(
                    "its summary counts {} connections, {CONNS} made",
                    summary.connections
                )
            })?;
            format!("exit 0 with its summary ({CONNS} connections)")
        }
        None => match (code, signal) {
            (Some(0), _) => "exit 0".to_string(),
            (Some(143), _) => "exit 143 (128 + SIGTERM)".to_string(),
            (_, Some(s)) if s == libc::SIGTERM => "ended by SIGTERM's default action".to_string(),
            (Some(c), _) => {
                return Err(format!("it exited with code {c} after SIGTERM: {stderr_tail}").into())
            }
            (_, Some(s)) => return Err(format!("it was killed by signal {s} after SIGTERM").into()),
            _ => return Err("it ended oddly after SIGTERM".into()),
        },
    };
    evidence += &format!(
        " {:.0} ms after SIGTERM with {CONNS} connections open; no process of its tree left",
        took.as_secs_f64() * 1e3
    );
    Ok(evidence)
}

/// `--max-conns 3`: three clients are served; connections past them are
/// closed at once and counted as refused; once one leaves, a new client
/// is served.
pub(super) fn max_conns_refuses_the_rest(suite: &Checking) -> Checked {
    let server = suite.start(Needs {
        settings: Settings {
            max_conns: Some(3),
            ..Settings::default()
        },
        c10k_only: Some("--max-conns"),
        ..Needs::default()
    })?;
    let mut served = server.connect_many(3)?;
    for (i, mut s) in served.iter().enumerate() {
        let msg = vec![i as u8; suite.whole(8)];
        s.write_all(&msg)?;
        let mut back = vec![0u8; msg.len()];
        wire::read_fully(s, &mut back)?;
        ensure(back == msg, || format!("client {i} got other bytes"))?;
    }
    for k in 0..2 {
        let extra = server.connect()?;
        // The server closes it without reading: EOF or a reset, never an echo.
        let _ = (&extra).write_all(b"let me in");
        let mut buf = [0u8; 9];
        match (&extra).read(&mut buf) {
            Ok(0) => {}
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {}
            Ok(n) => return Err(format!("refused client {k} got {n} bytes back").into()),
            Err(e) => return Err(format!("refused client {k}: {}", wire::words(&e)).into()),
        }
    }
    // One leaves (and the server has finished it once we see EOF).
    let gone = served.pop().ok_or("no client")?;
    finish(&gone)?;
    let late = server.connect()?;
    let msg = suite.message(b"my turn");
    (&late).write_all(&msg)?;
    let mut back = vec![0u8; msg.len()];
    wire::read_fully(&late, &mut back)?;
    ensure(back == msg, || "the late client got other bytes".into())?;
    drop((served, late));
    let summary = server.stop()?.ok_or("no summary")?;
    ensure(summary.refused.max_conns == 2, || {
        format!("{} refusals counted, 2 expected", summary.refused.max_conns)
    })?;
    ensure(summary.peak_connections == 3, || {
        format!("peak {} with --max-conns 3", summary.peak_connections)
    })?;
    Ok("3 served, 2 more closed unanswered and counted refused; a late client served after one left; peak 3".into())
}
