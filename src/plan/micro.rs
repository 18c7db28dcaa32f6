//! `c10k micro` flags turned into a [`Bench`]: the `--json` path checked
//! first, then each benchmark's own flags (those of spawn and dispatch are
//! checked against the machine by the benchmark's `Plan::new`).

use std::path::PathBuf;
use std::time::Duration;

use super::parse_duration;
use crate::cli::{MicroAcceptArgs, MicroCommand};
use crate::micro::{accept, dispatch, spawn, Bench};

/// The benchmark `cmd` names, and where to write its JSON when asked.
pub fn plan(cmd: &MicroCommand) -> Result<(Bench, Option<PathBuf>), String> {
    let json = match cmd {
        MicroCommand::Spawn(a) => &a.output.json,
        MicroCommand::Dispatch(a) => &a.output.json,
        MicroCommand::Accept(a) => &a.output.json,
    };
    crate::export::target::check_flag("--json", json.as_deref())?;
    let bench = match cmd {
        MicroCommand::Spawn(a) => Bench::Spawn(spawn::Request {
            counts: a.counts.clone(),
            small_stack: a.small_stack.clone(),
            large_rss: a.large_rss.clone(),
            runs: a.runs,
            parked: a.parked,
        }),
        MicroCommand::Dispatch(a) => Bench::Dispatch(dispatch::Request {
            fds: a.fds.clone(),
            active: a.active.clone(),
            calls: a.calls,
            runs: a.runs,
        }),
        MicroCommand::Accept(a) => Bench::Accept(accept_settings(a)?),
    };
    Ok((bench, json.clone()))
}

/// `c10k micro accept`'s flags, checked.
fn accept_settings(a: &MicroAcceptArgs) -> Result<accept::Settings, String> {
    if !(1..=256).contains(&a.clients) {
        return Err(format!("--clients {}: must be from 1 to 256", a.clients));
    }
    if !(1..=100).contains(&a.runs) {
        return Err(format!("--runs {}: must be from 1 to 100", a.runs));
    }
    let duration = parse_duration(&a.duration).map_err(|e| format!("--duration: {e}"))?;
    if duration < Duration::from_millis(10) || duration > Duration::from_secs(600) {
        return Err("--duration must be from 10ms to 10m".into());
    }
    let interval = parse_duration(&a.interval).map_err(|e| format!("--interval: {e}"))?;
    if interval > crate::server::pace::MAX_INTERVAL {
        return Err("--interval must be at most 1s".into());
    }
    Ok(accept::Settings {
        clients: a.clients,
        duration,
        interval,
        runs: a.runs,
    })
}
