//! One process's share of a load run: its event loops driven through their
//! phases ([`drive`]) into what they measured ([`Measured`], merged from
//! each loop's), with its running totals once a second ([`super::live`]). [`super::run`] drives
//! one process and [`super::agent`] each agent through it; both import
//! this file, neither the other (run starts agents through
//! [`super::agents`]).

use std::io::IsTerminal;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use super::engine::{self, Schedule, Shared};
use super::live::{Live, Tick};
use super::measured::Measured;
use super::plan::{LoadPlan, Stop, Workload};
use super::spawn;
use crate::metrics::cpu::Snapshot;
use anyhow::Context as _;

/// Runs this process's share of `plan`: its event loops, through their
/// phases. `connected` is called once every loop has its connections up,
/// with the seconds that took, and the measured phase starts when it
/// returns (a worker process waits there for its parent's go). Once a
/// second the loops' running totals go to `sink` (an agent's progress
/// messages). A resident plan measures window after window: each one's
/// [`Measured`] goes to `window`, which returns once the next may start,
/// or `false` when none follows; the result is then what the connections
/// recorded as they closed. Each window is the plan's unless its [`Ask`]
/// (from `connected` for the first, from `window` for the next) says.
pub(crate) fn drive(
    plan: &LoadPlan,
    connected: &mut dyn FnMut(f64) -> std::io::Result<Ask>,
    window: &mut dyn FnMut(Measured) -> std::io::Result<Option<Ask>>,
    sink: &(dyn Fn(Tick) + Sync),
) -> anyhow::Result<Measured> {
    let show = !plan.quiet && plan.process.is_none() && std::io::stderr().is_terminal();
    let mut shared = Shared::new(plan.clone());
    shared.live_progress = show;
    let interrupted = crate::sys::signals::interrupt_flag()
        .context("installing the Ctrl-C and SIGTERM handlers")?;
    let t0 = shared.origin;
    // CPU (this process, the machine, the server) is counted over the
    // measured window only: a snapshot at each end.
    let pids = &plan.server_pids;
    let mut window_start = Snapshot::start(pids, false);
    let mut schedule = None;
    let mut gate_error = None;
    let finished = std::sync::atomic::AtomicBool::new(false);
    let results: anyhow::Result<(Vec<std::io::Result<Measured>>, Instant, Snapshot)> =
        std::thread::scope(|scope| {
            // The progress thread first: when it cannot start, nothing else
            // has, and the run ends with the reason.
            spawn::scoped(scope, "load-progress", || {
                progress(&shared, &interrupted, &finished, show, sink)
            })?;
            // Each loop says when its traffic has ended (before it closes
            // its connections) and holds a sender until it returns: the
            // receiver hears "disconnected" the moment the last loop ends.
            let (ended_tx, ended_rx) = std::sync::mpsc::channel::<Option<Measured>>();
            let handles: Vec<_> = (0..plan.threads)
                .map(|i| {
                    let shared = &shared;
                    let ended_tx = ended_tx.clone();
                    spawn::scoped(scope, &format!("load-{i}"), move || {
                        engine::run(shared, i, &|m| {
                            let _ = ended_tx.send(m);
                        })
                    })
                    // A loop that never started must not be waited for, and
                    // the others end at once: the run has failed.
                    .inspect_err(|_| {
                        shared.interrupted.store(true, Relaxed);
                        shared.barrier.leave();
                    })
                })
                .collect();
            drop(ended_tx);
            // Every loop has its connections up (or failed).
            shared.barrier.wait();
            let mut ask = Ask::default();
            if let Err(e) = connected(t0.elapsed().as_secs_f64()).map(|a| ask = a) {
                // The parent is gone: measure nothing, end at once.
                shared.interrupted.store(true, Relaxed);
                gate_error = Some(e);
            }
            if plan.resident {
                let mut alive = plan.threads;
                loop {
                    let w = resident_window(&shared, ask, &ended_rx, &mut alive);
                    let more = !shared.interrupted.load(Relaxed) && alive > 0;
                    let more = more
                        && match window(w) {
                            Ok(Some(next)) => {
                                ask = next;
                                true
                            }
                            Ok(None) => false,
                            Err(e) => {
                                shared.interrupted.store(true, Relaxed);
                                gate_error = Some(e);
                                false
                            }
                        };
                    if !more {
                        shared.more_rounds.store(false, Relaxed);
                        shared.barrier.wait();
                        break;
                    }
                }
                let results = handles.into_iter().map(joined).collect();
                finished.store(true, Relaxed);
                let now = Snapshot::end(pids, false);
                schedule = Some(window_schedule(plan, ask));
                return Ok((results, Instant::now(), now));
            }
            let s = window_schedule(plan, ask);
            let Schedule {
                measure_from,
                until,
                ..
            } = s;
            let burst = matches!(plan.workload, Workload::Burst { .. });
            shared.set_schedule(s);
            schedule = Some(s);
            // A timed window ends at `until` (the loops then drain what is
            // owed, which is not measured); a burst's when its last round is
            // in, with the loops parked at the rendezvous (a parked thread's
            // CPU time is exact, and its wait for a CPU is still counted);
            // any other when the loops end.
            let mut window_end = None;
            if let Workload::Burst { rounds } = plan.workload {
                shared.barrier.wait();
                shared.barrier.others_waiting();
                window_start = Snapshot::start(pids, true);
                let mut r = 0;
                loop {
                    let more = r < rounds && !shared.interrupted.load(Relaxed);
                    if !more {
                        shared.barrier.others_waiting();
                        window_end = Some(Snapshot::end(pids, true));
                    }
                    shared.more_rounds.store(more, Relaxed);
                    shared.barrier.wait();
                    if !more {
                        break;
                    }
                    shared.barrier.wait();
                    r += 1;
                }
            } else {
                shared.barrier.wait();
                std::thread::sleep(measure_from.saturating_duration_since(Instant::now()));
                window_start = Snapshot::start(pids, false);
            }
            let mut traffic_ended = None;
            if !burst {
                // At `until`, or when every loop's traffic has ended
                // (Ctrl-C, every connection done; a fixed count's window
                // always ends so): not after the loops have closed their
                // connections, which at a million connections takes
                // seconds of both sides' CPU that is no message's.
                let mut left = plan.threads;
                while left > 0 {
                    let got = match until {
                        Some(u) => ended_rx
                            .recv_timeout(u.saturating_duration_since(Instant::now()))
                            .is_ok(),
                        None => ended_rx.recv().is_ok(),
                    };
                    if !got {
                        break;
                    }
                    left -= 1;
                }
                traffic_ended = Some(Instant::now());
                window_end = Some(Snapshot::end(pids, false));
            }
            let results = handles.into_iter().map(joined).collect();
            // The run ends when its loops do, not when the progress thread next
            // wakes (it sleeps up to 100 ms, and the scope waits for it).
            let ended = traffic_ended.unwrap_or_else(Instant::now);
            let window_end = window_end.unwrap_or_else(|| Snapshot::end(pids, false));
            finished.store(true, Relaxed);
            Ok((results, ended, window_end))
        });
    let (results, ended, window_end) = results?;
    let cpu_end = window_end.own;
    if let Some(e) = gate_error {
        return Err(e).context("lost the parent process");
    }
    // The loops' measurements, merged as a parent merges its workers'.
    let mut m = Measured::empty();
    for r in results {
        m.merge(r.context("an event loop failed")?);
    }
    let schedule = schedule.context("the run never started")?;
    // Then what only this process sees.
    if !plan.resident {
        window_figures(&mut m, &schedule, ended, &window_start, &window_end);
    }
    m.max_rss_kib = cpu_end.max_rss_kib;
    m.interrupted |= shared.interrupted.load(Relaxed) || interrupted.load(Relaxed);
    Ok(m)
}

/// An event loop's end, joined.
fn joined(
    h: anyhow::Result<std::thread::ScopedJoinHandle<'_, std::io::Result<Measured>>>,
) -> std::io::Result<Measured> {
    match h {
        Ok(h) => h
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("an event loop panicked"))),
        Err(e) => Err(std::io::Error::other(format!("{e:#}"))),
    }
}

/// What the coordinator asks of one resident window beyond its plan (the
/// capacity search's slots: each at a rate of its own, measured as long
/// as that rate needs); the default asks nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Ask {
    /// Open loop: messages per second on each connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_connection: Option<f64>,
    /// The measured part, after the plan's warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_seconds: Option<f64>,
}

impl Ask {
    /// Refuses what no window could run: a rate or a length that is not
    /// a positive finite number within the flags' bounds.
    pub(crate) fn check(&self) -> Result<(), String> {
        if let Some(r) = self.rate_per_connection {
            super::plan::per_second("a window's rate", r, super::plan::MAX_RATE)?;
        }
        if let Some(d) = self.measured_seconds {
            if !(d.is_finite() && d > 0.0 && d <= super::plan::MAX_SECONDS) {
                return Err(format!(
                    "a window of {d} s: must be above 0 and at most a year"
                ));
            }
        }
        Ok(())
    }
}

/// A window starting now: its warm-up, then its measured part (to the end
/// of `--duration` or of what `ask` says, or open-ended for a fixed count
/// or a burst).
fn window_schedule(plan: &LoadPlan, ask: Ask) -> Schedule {
    let start = Instant::now();
    let burst = matches!(plan.workload, Workload::Burst { .. });
    let measure_from = start + if burst { Duration::ZERO } else { plan.warmup };
    let until = match plan.stop {
        Stop::Duration(d) if !burst => {
            Some(measure_from + ask.measured_seconds.map_or(d, Duration::from_secs_f64))
        }
        _ => None,
    };
    let open = matches!(plan.workload, Workload::Open { .. });
    Schedule {
        start,
        measure_from,
        until,
        rate_per_connection: ask.rate_per_connection.filter(|_| open),
    }
}

/// What only the process sees of a window: its length (to `until`, or to
/// when the traffic ended first), this process's CPU over it, and the
/// machine's and the server's.
fn window_figures(
    m: &mut Measured,
    schedule: &Schedule,
    ended: Instant,
    start: &Snapshot,
    end: &Snapshot,
) {
    m.measured_seconds = schedule
        .until
        .map_or(ended, |u| u.min(ended))
        .saturating_duration_since(schedule.measure_from)
        .as_secs_f64();
    (m.cpu_user, m.cpu_system) = end.own_cpu_since(start);
    m.window = end.since(start);
}

/// One window of a resident plan: published to the loops (`alive` of them
/// still running), timed as a single run's window is (snapshots at the
/// window's edges, not after the drain), and merged from every loop's
/// share; a loop that ended for good is no longer waited for.
fn resident_window(
    shared: &Shared,
    ask: Ask,
    ended: &std::sync::mpsc::Receiver<Option<Measured>>,
    alive: &mut usize,
) -> Measured {
    let plan = &shared.plan;
    let pids = &plan.server_pids;
    let s = window_schedule(plan, ask);
    shared.set_schedule(s);
    shared.more_rounds.store(true, Relaxed);
    shared.barrier.wait();
    std::thread::sleep(s.measure_from.saturating_duration_since(Instant::now()));
    let start = Snapshot::start(pids, false);
    let mut got = Measured::empty();
    let mut reported = 0;
    let mut edge: Option<(Instant, Snapshot)> = None;
    while reported < *alive {
        let heard = match (edge.is_none(), s.until) {
            (true, Some(u)) => {
                match ended.recv_timeout(u.saturating_duration_since(Instant::now())) {
                    Ok(m) => Ok(m),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        edge = Some((Instant::now(), Snapshot::end(pids, false)));
                        continue;
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(()),
                }
            }
            _ => ended.recv().map_err(|_| ()),
        };
        match heard {
            Ok(Some(m)) => {
                got.merge(m);
                reported += 1;
            }
            Ok(None) => *alive -= 1,
            Err(()) => {
                *alive = 0;
                break;
            }
        }
    }
    let (at, end) = edge.unwrap_or_else(|| (Instant::now(), Snapshot::end(pids, false)));
    window_figures(&mut got, &s, at, &start, &end);
    got.interrupted = shared.interrupted.load(Relaxed);
    got
}

/// Once a second until `finished`: tallies the loops into a [`Tick`],
/// hands it to `sink` and shows it on a terminal; forwards Ctrl-C to the
/// event loops.
fn progress(
    shared: &Shared,
    interrupted: &std::sync::atomic::AtomicBool,
    finished: &std::sync::atomic::AtomicBool,
    show: bool,
    sink: &(dyn Fn(Tick) + Sync),
) {
    let mut live = Live::new(show, shared.plan.connections + shared.plan.idle);
    let mut ticks = 0u32;
    while !finished.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if interrupted.load(Relaxed) {
            shared.interrupted.store(true, Relaxed);
        }
        ticks += 1;
        if ticks % 10 != 0 {
            continue;
        }
        let tick = Tick {
            up: shared.up.load(Relaxed),
            completed: shared.completed.load(Relaxed),
            failed: shared.failed.load(Relaxed),
        };
        sink(tick);
        if live.shown() {
            let latency = match shared.live.lock() {
                Ok(h) if !h.is_empty() => Some((
                    h.value_at_quantile(0.5) as f64 / 1e3,
                    h.value_at_quantile(0.99) as f64 / 1e3,
                )),
                _ => None,
            };
            live.show(tick, latency, "");
        }
    }
    live.finish();
}
