//! What the model flags add to the echo, on real sockets: `sigio` under a
//! real-time signal queue too small for its events (the overflow path,
//! polling every connection) still echoes every byte and counts the
//! overflows; `--shared-state` on every model keeps every byte and its
//! counters add up to the bytes echoed; `--interval` on every readiness
//! model keeps every byte and spaces its waits; hybrid's pool, with either
//! `--hand-back`, gives back every connection under a long lockstep load
//! on two pool threads (a lost wake-up of its loop stalls the load).

use c10k::server::{Summary, MODELS};
use libtest_mimic::Failed;

use crate::support::{load_json as load, Server, Started};

tests![
    sigio_overflowing_its_signal_queue_polls_and_keeps_every_byte,
    shared_state_on_every_model_adds_up_to_the_bytes_echoed,
    interval_on_every_readiness_model_keeps_every_byte,
    hybrid_gives_every_connection_back_with_either_hand_back,
];

/// Starts `c10k serve --model MODEL FLAGS…`.
fn serve(model: &str, flags: &[&str]) -> Result<Server, Failed> {
    let mut args = vec!["--model".to_string(), model.to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    match Server::start(&args)? {
        Started::Running(s) => Ok(s),
        Started::Unsupported(why) => Err(format!("{model} cannot run here: {why}").into()),
    }
}

fn sigio_overflowing_its_signal_queue_polls_and_keeps_every_byte() -> Result<(), Failed> {
    const CONNS: u64 = 200;
    const MESSAGES: u64 = 50;
    const SIZE: u64 = 100;
    let server = serve("sigio", &["--sigpending", "2"])?;
    let (c, n, m) = (CONNS.to_string(), MESSAGES.to_string(), SIZE.to_string());
    let j = load(
        &server,
        "sigio-overflow",
        &["-c", &c, "-n", &n, "-m", &m, "--depth", "2"],
    )?;
    let (_, summary) = server.stop()?;
    let sent = CONNS * MESSAGES * SIZE;
    if j["messages"] != CONNS * MESSAGES || j["bytes_received"] != sent {
        return Err(format!(
            "the client got {} messages, {} bytes back, of {} and {sent}",
            j["messages"],
            j["bytes_received"],
            CONNS * MESSAGES
        )
        .into());
    }
    if summary.bytes_echoed != sent || summary.connections != CONNS {
        return Err(format!(
            "the server echoed {} bytes on {} connections, not {sent} on {CONNS}",
            summary.bytes_echoed, summary.connections
        )
        .into());
    }
    if summary.waits.overflows == 0 {
        return Err(format!(
            "a queue of 2 signals never overflowed in {} waits: the poll rescan was not exercised",
            summary.waits.waits
        )
        .into());
    }
    Ok(())
}

/// `c10k load -c CONNS -n MESSAGES -m SIZE` against `model` served with
/// `flags`: every message and byte back to the client and counted by the
/// server; its summary, or `None` when the model cannot run here.
fn echo_all(model: &str, flags: &[&str]) -> Result<Option<Summary>, Failed> {
    const CONNS: u64 = 20;
    const MESSAGES: u64 = 50;
    const SIZE: u64 = 300;
    let mut args = vec!["--model".to_string(), model.to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    let server = match Server::start(&args)? {
        Started::Running(s) => s,
        Started::Unsupported(_) => return Ok(None),
    };
    let (c, n, m) = (CONNS.to_string(), MESSAGES.to_string(), SIZE.to_string());
    let name = format!("flags-{model}");
    let j = load(
        &server,
        &name,
        &["-c", &c, "-n", &n, "-m", &m, "--depth", "2"],
    )?;
    let (_, summary) = server.stop()?;
    let sent = CONNS * MESSAGES * SIZE;
    if j["bytes_received"] != sent || summary.bytes_echoed != sent {
        return Err(format!(
            "{model} {flags:?}: the client got {} bytes back and the server echoed {}, of {sent}",
            j["bytes_received"], summary.bytes_echoed
        )
        .into());
    }
    Ok(Some(summary))
}

/// Every model, each lock kind in turn: the total, the table and the bytes
/// echoed agree, one update per read, one number per connection.
fn shared_state_on_every_model_adds_up_to_the_bytes_echoed() -> Result<(), Failed> {
    let locks = ["mutex", "spin", "rwlock"];
    let mut ran = 0;
    for (i, model) in MODELS.iter().enumerate() {
        let lock = locks[i % locks.len()];
        let flags = ["--shared-state", "--lock", lock];
        let Some(summary) = echo_all(model.name(), &flags)? else {
            continue;
        };
        ran += 1;
        let Some(state) = &summary.shared_state else {
            return Err(format!("{}: no shared_state in its summary", model.name()).into());
        };
        if state.lock != lock
            || state.total != summary.bytes_echoed
            || state.table_sum != state.total
            || state.updates == 0
            || state.updates > state.total
            || state.contended > state.updates
            || state.connections != summary.connections
        {
            return Err(format!(
                "{} with a {lock}: its shared state {state:?} does not add up to {} bytes echoed on {} connections",
                model.name(),
                summary.bytes_echoed,
                summary.connections
            )
            .into());
        }
    }
    if ran == 0 {
        return Err("no model could run".into());
    }
    Ok(())
}

/// hybrid with two pool threads and the loop free to run beside them:
/// 100 connections, each 3,000 round trips one after another, so the
/// pool gives connections back hundreds of thousands of times while other
/// threads ring. A wake-up of the loop lost in a race (once: the doorbell
/// cleared before the eventfd was read) strands the connections given back
/// after it, and their echoes time out.
fn hybrid_gives_every_connection_back_with_either_hand_back() -> Result<(), Failed> {
    const CONNS: u64 = 100;
    const MESSAGES: u64 = 3_000;
    for when in ["idle", "each"] {
        let server = serve("hybrid", &["--workers", "2", "--hand-back", when])?;
        let (c, n) = (CONNS.to_string(), MESSAGES.to_string());
        let j = load(
            &server,
            &format!("hand-back-{when}"),
            &["-c", &c, "-n", &n, "-m", "64", "--depth", "1"],
        )?;
        let (_, summary) = server.stop()?;
        let sent = CONNS * MESSAGES * 64;
        if j["messages"] != CONNS * MESSAGES || summary.bytes_echoed != sent {
            return Err(format!(
                "--hand-back {when}: the client got {} of {} echoes, the server echoed {} of {sent} bytes",
                j["messages"],
                CONNS * MESSAGES,
                summary.bytes_echoed
            )
            .into());
        }
    }
    Ok(())
}

/// Every readiness model with 1 ms between waits: every byte back, and no
/// more waits than one a millisecond of the server's life. One connection
/// doing 1,000 round trips one after another makes an unpaced loop wait
/// about once a round trip (75 µs here), far past that bound.
fn interval_on_every_readiness_model_keeps_every_byte() -> Result<(), Failed> {
    const TRIPS: u64 = 1000;
    let readiness: Vec<_> = MODELS.iter().filter(|m| m.readiness()).collect();
    if readiness.len() < 5 {
        return Err(format!("only {} readiness models", readiness.len()).into());
    }
    for model in readiness {
        let name = model.name();
        let started = std::time::Instant::now();
        let server = serve(name, &["--interval", "1ms", "--workers", "2"])?;
        let trips = TRIPS.to_string();
        let many = load(
            &server,
            &format!("interval-{name}"),
            &["-c", "20", "-n", "20", "-m", "300", "--depth", "2"],
        )?;
        let one = load(
            &server,
            &format!("interval-one-{name}"),
            &["-c", "1", "-n", &trips, "-m", "64"],
        )?;
        let (_, summary) = server.stop()?;
        let sent = 20 * 20 * 300 + TRIPS * 64;
        let got = many["bytes_received"].as_u64().unwrap_or(0)
            + one["bytes_received"].as_u64().unwrap_or(0);
        if got != sent || summary.bytes_echoed != sent {
            return Err(format!(
                "{name} --interval 1ms: the client got {got} bytes back and the server echoed {}, of {sent}",
                summary.bytes_echoed
            )
            .into());
        }
        // A loop per worker in epoll-workers, one in the others, each
        // waiting at most once a millisecond, plus its first.
        let loops = if name == "epoll-workers" { 2 } else { 1 };
        let lived_ms = started.elapsed().as_millis() as u64 + 1;
        if summary.waits.waits == 0 || summary.waits.waits > loops * (lived_ms + 1) {
            return Err(format!(
                "{name} --interval 1ms: {} waits in {lived_ms} ms",
                summary.waits.waits
            )
            .into());
        }
    }
    Ok(())
}
