//! `c10k agent`: a load agent, the other end of [`super::agents`]. It
//! says hello, takes its share of a run as `c10k load` arguments, opens
//! its connections, answers pings, starts on `go` after the delay it is
//! given (on its own clock), says `progress` with its running totals every
//! second from its plan to its end, and ends with its [`Measured`] and its
//! network namespace's TCP counters. Messages go
//! over stdout as [`super::protocol`] lines; stdin brings the controller's.
//!
//! An agent never outlives its controller: when its stdin closes before
//! its result is out, it exits at once, and the kernel closes its
//! connections; `stop` ends its measurement early, as Ctrl-C ends a
//! `c10k load`. Cost: one thread reading stdin.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::drive::{drive, Ask};
use super::plan::LoadPlan;
use super::preflight;
use super::protocol::{Finished, Hello, Msg};
use super::spawn;
use crate::sys;

/// Exit code of an agent whose controller went away.
pub const ORPHANED: i32 = 3;

/// The most agents a run has (`--agents`); a plan past it is refused.
pub const MAX_AGENTS: usize = 10_000;

/// Writes one message line to stdout.
fn say(msg: &Msg) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", msg.line())?;
    out.flush()
}

/// Runs the agent. `parse` turns the plan's `c10k load` arguments into a
/// plan (the flag layer's job, handed down by `main`).
pub fn serve(parse: &dyn Fn(&[String]) -> Result<LoadPlan, String>) -> anyhow::Result<()> {
    say(&Msg::Hello(Box::new(Hello::here())))?;
    // One reader of stdin: messages to this channel; at EOF before the
    // result is out, the agent ends (its controller is gone). Lines are
    // bytes: whatever a launcher puts before the controller's lines is
    // noise, in any encoding. `stop` interrupts the measurement: SIGINT to
    // this process alone, which the event loops already heed.
    let done = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<Msg>();
    let reader = {
        let done = Arc::clone(&done);
        spawn::thread("agent-stdin", Some(spawn::SMALL_STACK), move || {
            let mut input = std::io::stdin().lock();
            let mut line = Vec::new();
            while matches!(input.read_until(b'\n', &mut line), Ok(n) if n > 0) {
                let heard = match Msg::parse_bytes(&line) {
                    Some(Ok(Msg::Stop)) => {
                        let _ = sys::process::kill(std::process::id() as i32, libc::SIGINT);
                        true
                    }
                    Some(Ok(m)) => tx.send(m).is_ok(),
                    _ => true,
                };
                if !heard {
                    return;
                }
                line.clear();
            }
            if !done.load(Ordering::SeqCst) {
                // Not eprintln!, which panics when stderr is gone too (a
                // launcher's terminal torn down) and would end this thread
                // instead of the agent.
                let _ = writeln!(
                    std::io::stderr(),
                    "c10k agent: the controller went away; closing every connection"
                );
                sys::process::exit_now(ORPHANED);
            }
        })
    };
    if let Err(e) = reader {
        let _ = say(&Msg::Error {
            message: format!("{e:#}"),
        });
        return Err(e);
    }
    let result = (|| -> anyhow::Result<()> {
        let mut plan = match rx.recv().context("no plan came")? {
            Msg::Plan(p) => {
                if p.agents == 0 || p.agents > MAX_AGENTS || p.agent >= p.agents {
                    anyhow::bail!(
                        "a plan for agent {} of {}: the count must be from 1 to {MAX_AGENTS} and the index below it",
                        p.agent,
                        p.agents
                    );
                }
                let mut plan = parse(&p.args).map_err(anyhow::Error::msg)?;
                plan.process = Some((p.agent, p.agents));
                plan.quiet = true;
                plan.resident = p.resident;
                plan.validate().map_err(anyhow::Error::msg)?
            }
            m => anyhow::bail!("expected a plan, got {m:?}"),
        };
        // Several addresses on the way to the target: spread over them,
        // as a loopback run spreads over 127.0.0.x.
        if plan.sources.is_empty() {
            let own = super::source::interface_sources(plan.target);
            if own.len() > 1 {
                plan.sources = own;
            }
        }
        if let Some(cpus) = &plan.cpus {
            sys::affinity::pin_current(cpus)?;
        }
        let (k, n) = plan.process.unwrap_or((0, 1));
        let share = share_of(plan.connections + plan.idle, k, n);
        preflight::raise_nofile_for(share).context("raising the open-files limit")?;
        let tcp_before = crate::env::tcp_counters().ok();
        let since = Instant::now();
        let progress = |tick| {
            // A controller that stopped reading is seen by the stdin
            // reader; nothing to do here.
            let _ = say(&Msg::Progress {
                seconds: since.elapsed().as_secs_f64(),
                tick,
            });
        };
        // Pings answered until `go` (started after its delay, on this
        // clock) or, between resident windows, `end`.
        let next = || -> std::io::Result<Option<Ask>> {
            loop {
                match rx.recv() {
                    Ok(Msg::Ping { n }) => say(&Msg::Pong { n })?,
                    Ok(Msg::Go {
                        delay_seconds,
                        window,
                    }) => {
                        window.check().map_err(std::io::Error::other)?;
                        let delay = Duration::from_secs_f64(delay_seconds.clamp(0.0, 60.0));
                        std::thread::sleep(delay);
                        say(&Msg::Started)?;
                        return Ok(Some(window));
                    }
                    Ok(Msg::End) if plan.resident => return Ok(None),
                    Ok(m) => {
                        return Err(std::io::Error::other(format!(
                            "expected ping or go, got {m:?}"
                        )))
                    }
                    Err(_) => return Err(std::io::Error::other("the controller went away")),
                }
            }
        };
        let gate = &mut |seconds| {
            say(&Msg::Connected { seconds })?;
            next()?.ok_or_else(|| std::io::Error::other("told to end before any window"))
        };
        let window = &mut |m| {
            say(&Msg::Window(Box::new(m)))?;
            next()
        };
        let measured = drive(&plan, gate, window, &progress)?;
        let tcp = tcp_before.zip(crate::env::tcp_counters().ok());
        done.store(true, Ordering::SeqCst);
        let sources = plan.sources.iter().map(ToString::to_string).collect();
        say(&Msg::Result(Box::new(Finished {
            measured,
            tcp,
            sources,
        })))?;
        Ok(())
    })();
    if let Err(e) = &result {
        // Its end is this error, not the controller's going.
        done.store(true, Ordering::SeqCst);
        let _ = say(&Msg::Error {
            message: format!("{e:#}"),
        });
    }
    result
}

/// How many of `total` connections agent `k` of `n` holds: ids are
/// interleaved (id % n == k), so the shares sum to the total.
pub fn share_of(total: usize, k: usize, n: usize) -> usize {
    let n = n.max(1);
    total / n + usize::from(k < total % n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_sum_to_the_total() {
        for total in [0, 1, 7, 100, 1_000_001] {
            for n in 1..=17 {
                let sum: usize = (0..n).map(|k| share_of(total, k, n)).sum();
                assert_eq!(sum, total, "{total} over {n}");
                let most = (0..n).map(|k| share_of(total, k, n)).max().unwrap_or(0);
                assert_eq!(most, total.div_ceil(n));
            }
        }
    }
}
