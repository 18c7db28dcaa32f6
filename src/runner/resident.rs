//! Resident slots: the servers of one connection count (under one work
//! profile) stay up together, each holding its connections, and the load
//! moves from one to the next in short slots, one per server in each
//! round, in the round's shuffled order ([`crate::results::schedule::round_order`]).
//! Two models are then measured within a round of a few seconds, so the
//! machine's drift, which moves in seconds, is shared by both and cancels
//! in their ratio (the pairing of [`crate::stats::paired`]); one at a time,
//! a round spanned tens of seconds and it did not.
//!
//! Each server is started, sampled idle (memory, and its CPU when it holds
//! nothing), given its connections by a client session of its own (worker
//! processes that keep them up between slots: [`crate::client::run::Session`]),
//! and sampled loaded, once; every slot is then a window of that session,
//! recorded at once as the cell of its round, with the server's CPU over
//! the slot. A resident client sends nothing outside its slot, so an idle
//! resident costs the measured one nothing but memory.
//!
//! A model that spins when idle ([`crate::server::Model::spins`]) would
//! take a CPU from every other server's slot: it is stopped (SIGSTOP to
//! its process group) outside its own slots and continued (SIGCONT) for
//! them, its slot's warm-up absorbing the wake. A count whose servers
//! together would hold more than [`crate::results::matrix::MAX_RESIDENT_CONNECTIONS`] does not
//! fit: it runs one cell at a time, as before, and its records say so
//! (they have no `slot`).
//!
//! A model the next look does not name is decided: its server and
//! client stop then ([`retire`]), and start anew if a later look names it
//! again (the best changed). A server whose tree holds [`CROWD`]
//! processes or more (the fork family at high counts) is up for its own
//! slots only: it stops after each and starts again for its next, a new
//! instance each time, since the host's memory monitor walks every
//! mapping of the pages it shares, in the others' slots too.
//!
//! With `--instances round` ([`crate::results::matrix::Instances`]),
//! each model's server and client session are replaced right after each
//! of its slots ([`renew`]), so every round draws new instances and the
//! paired interval covers how two instances of one model differ; each
//! slot then follows one stop and start (timed in `slot.start_seconds`,
//! which the looks' budget counts). The default keeps one for the run.
//!
//! A server that dies loses its own cells only, each naming the cause; the
//! others go on. Ctrl-C ends the slot in progress unrecorded and stops
//! every resident server and session (the runner's signal handling, and
//! dropping the sessions, which kills their workers).
//!
//! Cost per slot, beside the window itself: a `go` and a result line per
//! worker, and a read of the server's tree before and after (`/proc`, one
//! file per thread).

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

use super::execute::{self, Started, Trouble};
use crate::child::server::{ServerChild, Stopped};
use crate::client::run::Session;
use crate::metrics::kernel::{self, KernelMemory};
use crate::metrics::tree::{self, TreeMemory};
use crate::results::cell::{CellResult, Quantile, ServerSide, Slot, Status};
use crate::results::matrix::{CellSpec, RunPlan};
use crate::sys;

pub(crate) use crate::results::matrix::unfit;

/// Why `model` is stopped between its slots, if it is: it spins when
/// idle.
pub(crate) fn frozen(plan: &RunPlan, model: &str) -> Option<String> {
    let (m, _) = plan.model(model)?;
    m.spins().map(|_| {
        format!(
            "{model} spins on a CPU when idle: it is stopped (SIGSTOP) outside its own slots, so it takes nothing from the others'"
        )
    })
}

/// Stops (`on`) or continues a resident's servers, each with its process
/// group.
fn freeze(servers: &[ServerChild], on: bool) {
    let signal = if on { libc::SIGSTOP } else { libc::SIGCONT };
    for s in servers {
        let _ = sys::process::kill(-(s.pid() as i32), signal);
    }
}

/// One server kept up through the rounds, with its client.
struct Resident {
    started: Started,
    pids: Vec<u32>,
    session: Session,
    idle: TreeMemory,
    loaded: TreeMemory,
    idle_cpus: Option<f64>,
    kernel_before: Option<KernelMemory>,
    kernel_loaded: Option<KernelMemory>,
    all_accepted: bool,
    slots: usize,
    /// Stopped between its slots ([`frozen`]).
    frozen: bool,
    /// Which of its model's instances at this count it is (from 1), and
    /// the seconds it took to start and connect.
    instance: usize,
    start_seconds: f64,
}

/// A model's state through the rounds.
enum State {
    Up(Box<Resident>),
    /// Never up, or gone: every cell of it left gets this.
    Out(Status, String),
}

/// How a block of slots ended.
pub(crate) enum Ended {
    Done,
    /// Ctrl-C: the cell in progress is not recorded.
    Interrupted(Option<String>),
}

/// Each model's last instance at a count and its first instance's idle
/// CPU, for an instance started after it.
pub(crate) type Before = BTreeMap<String, (usize, Option<f64>)>;

/// Runs `cells` (one count and work profile, every round of it, in the
/// plan's order) resident, handing each result to `record` as it comes;
/// `starting` is told of each cell before it runs. When they are done,
/// `more` may give more cells of the same servers (the next look of
/// `--runs auto`), run as the first were; none ends the block. A model
/// in `before` (a count run again, once every count has had its looks)
/// starts as its next instance, with the first's idle CPU.
pub(crate) fn run(
    plan: &RunPlan,
    cells: &[CellSpec],
    before: Before,
    starting: &mut dyn FnMut(&CellSpec),
    record: &mut dyn FnMut(CellResult) -> anyhow::Result<bool>,
    more: &mut dyn FnMut() -> anyhow::Result<Vec<CellSpec>>,
) -> anyhow::Result<Ended> {
    let hard = sys::rlimit::nofile().hard;
    let mut states: BTreeMap<String, State> = BTreeMap::new();
    // Each model stopped once decided: its last instance and idle CPU.
    let mut retired = before;
    // Up in the order of the first round; each once.
    for spec in cells {
        if states.contains_key(&spec.model) {
            continue;
        }
        if sys::signals::interrupted() {
            stop_all(states);
            return Ok(Ended::Interrupted(None));
        }
        let Some(state) = start_after(plan, spec, hard, &retired) else {
            stop_all(states);
            return Ok(Ended::Interrupted(None));
        };
        states.insert(spec.model.clone(), state);
    }
    let fresh = plan
        .slots
        .is_some_and(|s| s.instances == crate::results::matrix::Instances::Round);

    let mut position = BTreeMap::<usize, usize>::new();
    let mut queue: std::collections::VecDeque<CellSpec> = cells.iter().cloned().collect();
    loop {
        let Some(spec) = queue.pop_front() else {
            if sys::signals::interrupted() {
                break;
            }
            let added = more()?;
            if added.is_empty() {
                break;
            }
            // A model the next cells do not name is decided: its server
            // and client stop now, so that what they hold costs the
            // models still measured nothing (a thousand processes of the
            // fork family made the host's memory monitor walk their
            // pages 30 times as long, in the slots of every other model).
            retire(&added, &mut states, &mut retired);
            // The next look's models, whose last slot had no later one
            // queued, start on new instances now.
            if fresh && renew(plan, &added.iter().collect::<Vec<_>>(), &mut states, hard).is_none()
            {
                stop_all(states);
                return Ok(Ended::Interrupted(None));
            }
            queue.extend(added);
            continue;
        };
        let spec = &spec;
        if sys::signals::interrupted() {
            stop_all(states);
            return Ok(Ended::Interrupted(None));
        }
        let of = states
            .values()
            .filter(|s| matches!(s, State::Up(_)))
            .count();
        starting(spec);
        let mut result = CellResult {
            started_unix: unix_now(),
            plan: Some(crate::results::identity::settings(plan)),
            ..CellResult::new(spec.clone(), Status::Failed)
        };
        // A server first named by a later round (a tuning search's next
        // setting), or named again after it was retired, starts now, and
        // stays up as the others.
        let state = match states.remove(&spec.model) {
            Some(s) => s,
            None => match start_after(plan, spec, hard, &retired) {
                Some(s) => s,
                None => {
                    stop_all(states);
                    return Ok(Ended::Interrupted(None));
                }
            },
        };
        let next = match state {
            // Gone since its last slot (or since it started): this slot
            // never ran, and its reason says when the server died.
            State::Up(r) if r.started.servers.iter().any(|s| !s.running()) => {
                let gone = r.started.servers.iter().position(|s| !s.running());
                let when = match r.slots {
                    0 => "after it started, before its first slot".to_string(),
                    n => format!("between its slots {n} and {}", n + 1),
                };
                let stopped = stop(*r);
                let cause = gone
                    .and_then(|i| stopped.get(i))
                    .and_then(Stopped::trouble)
                    .unwrap_or_else(|| "the server exited".into());
                let cause = format!("{cause} {when}");
                result.reason = Some(cause.clone());
                State::Out(
                    Status::Failed,
                    format!("its server stopped earlier: {cause}"),
                )
            }
            State::Out(status, why) => {
                result.status = status;
                result.reason = Some(why.clone());
                State::Out(status, why)
            }
            State::Up(mut r) => {
                let t0 = Instant::now();
                let cpu0 = sys::process::Usage::of_self();
                let mut slot = Slot {
                    // Among the servers up, as `of` counts them.
                    position: {
                        let k = position.entry(spec.run).or_default();
                        *k += 1;
                        *k
                    },
                    of,
                    first: r.slots == 0,
                    instance: Some(r.instance),
                    start_seconds: (r.slots == 0).then_some(r.start_seconds),
                    outside_cpu_seconds: None,
                    outside_seconds: None,
                    stolen_seconds: None,
                };
                if r.frozen {
                    freeze(&r.started.servers, false);
                }
                let outside = crate::metrics::cpu::Outside::read();
                let outcome = measure(spec, ask(plan, spec), &mut r, &mut result);
                let after = crate::metrics::cpu::Outside::read();
                let (cpu, wall) = after.since(&outside);
                (slot.outside_cpu_seconds, slot.outside_seconds) = (Some(cpu), Some(wall));
                slot.stolen_seconds = after.stolen_since(&outside);
                if r.frozen {
                    freeze(&r.started.servers, true);
                }
                result.wall_seconds = t0.elapsed().as_secs_f64();
                result.runner_cpu_seconds = Some(sys::process::Usage::of_self().cpu_since(&cpu0));
                result.slot = Some(slot);
                r.slots += 1;
                match outcome {
                    Ok(()) => {
                        result.status = Status::Ok;
                        State::Up(r)
                    }
                    Err(Trouble::Interrupted) => {
                        states.insert(spec.model.clone(), State::Up(r));
                        stop_all(states);
                        return Ok(Ended::Interrupted(Some(spec.id.clone())));
                    }
                    Err(Trouble::Skipped(why)) | Err(Trouble::Failed(why)) => {
                        result.status = Status::Failed;
                        // A server gone, or a client session broken: the
                        // model's later slots cannot be measured.
                        let gone = r.started.servers.iter().position(|s| !s.running());
                        let broken = gone.is_some() || why.starts_with(SESSION);
                        if broken {
                            let stopped = stop(*r);
                            let cause = gone
                                .and_then(|i| stopped.get(i))
                                .and_then(Stopped::trouble)
                                .map_or(why.clone(), |t| format!("{t} during the slot"));
                            result.reason = Some(cause.clone());
                            State::Out(
                                Status::Failed,
                                format!("its server stopped in an earlier slot: {cause}"),
                            )
                        } else {
                            result.reason = Some(why);
                            State::Up(r)
                        }
                    }
                }
            }
        };
        states.insert(spec.model.clone(), next);
        // Disturbed from outside, with repeats left: again, now, beside
        // the round's other slots.
        if record(result)? {
            queue.push_front(spec.clone());
        }
        // A server of many processes is up for its own slots only.
        if crowds(&states, &spec.model) {
            retire_one(&spec.model, &mut states, &mut retired);
        }
        // Its next slot will be on a new instance, started now: what a
        // start and a stop leave behind then falls in the next slot,
        // whichever model's, as every slot follows one.
        if fresh {
            let later: Vec<&CellSpec> = queue
                .iter()
                .filter(|c| c.model == spec.model)
                .take(1)
                .collect();
            if renew(plan, &later, &mut states, hard).is_none() {
                stop_all(states);
                return Ok(Ended::Interrupted(None));
            }
        }
    }
    stop_all(states);
    Ok(Ended::Done)
}

/// Stops each model up in `states` that no cell of `next` names,
/// noting in `retired` its instance and idle CPU for a start if a later
/// cell names it again.
fn retire(
    next: &[CellSpec],
    states: &mut BTreeMap<String, State>,
    retired: &mut BTreeMap<String, (usize, Option<f64>)>,
) {
    let done: Vec<String> = states
        .iter()
        .filter(|(m, s)| matches!(s, State::Up(_)) && !next.iter().any(|c| &c.model == *m))
        .map(|(m, _)| m.clone())
        .collect();
    for model in done {
        retire_one(&model, states, retired);
    }
}

fn retire_one(
    model: &str,
    states: &mut BTreeMap<String, State>,
    retired: &mut BTreeMap<String, (usize, Option<f64>)>,
) {
    if let Some(State::Up(r)) = states.remove(model) {
        retired.insert(model.to_string(), (r.instance, r.idle_cpus));
        stop(*r);
    }
}

/// Processes a resident may hold (loaded) and stay up between its slots
/// beside other servers. The host's memory monitor (DAMON, `kdamond`)
/// checks a sampled page's every mapping, and a process per connection
/// maps each page of its parent's: measured here, at 1,000 connections
/// with `fork` and `prefork` resident it took 50–86 ms of CPU a second
/// (5–20 % of some slots, in every other model's slots too) against 2 ms
/// without them; 15 ms at 300, 5 ms at 100.
pub(crate) const CROWD: u64 = 500;

/// Whether `model`'s server, up, holds [`CROWD`] processes or more while
/// another model is up beside it: it then stops after each slot and
/// starts again for its next, a new instance each time (its start timed
/// in `slot.start_seconds`), so the others' slots run without it.
fn crowds(states: &BTreeMap<String, State>, model: &str) -> bool {
    let many = matches!(states.get(model), Some(State::Up(r)) if r.loaded.processes >= CROWD);
    many && states
        .iter()
        .any(|(m, s)| m != model && matches!(s, State::Up(_)))
}

/// Replaces the instance of each model of `cells` that is up and has
/// served a slot with a new one (its idle CPU is the first instance's;
/// `--instances round`); a server found gone is left for its next slot
/// to report. `None` when Ctrl-C stopped a start.
fn renew(
    plan: &RunPlan,
    cells: &[&CellSpec],
    states: &mut BTreeMap<String, State>,
    hard: Option<u64>,
) -> Option<()> {
    for spec in cells {
        let r = match states.remove(&spec.model) {
            Some(State::Up(r))
                if r.slots > 0 && r.started.servers.iter().all(ServerChild::running) =>
            {
                r
            }
            Some(other) => {
                states.insert(spec.model.clone(), other);
                continue;
            }
            None => continue,
        };
        let (instance, idle_cpus) = (r.instance + 1, r.idle_cpus);
        let t0 = Instant::now();
        stop(*r);
        let mut state = start(plan, spec, hard, instance)?;
        if let State::Up(r) = &mut state {
            r.idle_cpus = idle_cpus;
            // What the new instance cost the run: the old one's stop too.
            r.start_seconds = t0.elapsed().as_secs_f64();
        }
        states.insert(spec.model.clone(), state);
    }
    Some(())
}

/// [`start`] as the instance after the one `retired` notes for `spec`'s
/// model (its first if none), with that one's idle CPU.
fn start_after(
    plan: &RunPlan,
    spec: &CellSpec,
    hard: Option<u64>,
    retired: &Before,
) -> Option<State> {
    let before = retired.get(&spec.model).copied();
    let mut state = start(plan, spec, hard, before.map_or(1, |b| b.0 + 1))?;
    if let (State::Up(r), Some((_, idle))) = (&mut state, before) {
        r.idle_cpus = idle;
    }
    Some(state)
}

/// The state of `spec`'s model once started ([`up`]) as its `instance`th
/// instance: up, or out with why; `None` when Ctrl-C stopped the start.
fn start(plan: &RunPlan, spec: &CellSpec, hard: Option<u64>, instance: usize) -> Option<State> {
    Some(match up(plan, spec, hard, instance) {
        Ok(r) => State::Up(Box::new(r)),
        Err(Trouble::Interrupted) => return None,
        Err(Trouble::Skipped(why)) => State::Out(Status::Skipped, why),
        Err(Trouble::Failed(why)) => State::Out(Status::Failed, why),
    })
}

/// What a broken client session's reason starts with.
const SESSION: &str = "the load generator failed";

/// Starts the server of `spec`'s model, samples it idle (its CPU only as
/// the first instance: 200 ms), opens its client's connections and
/// samples it again holding them.
fn up(
    plan: &RunPlan,
    spec: &CellSpec,
    hard: Option<u64>,
    instance: usize,
) -> Result<Resident, Trouble> {
    let t0 = Instant::now();
    let kernel_before = kernel::sample();
    let started = execute::start_servers(plan, spec, hard)?;
    let pids: Vec<u32> = started.servers.iter().map(ServerChild::pid).collect();
    let observed = !pids.is_empty();
    let idle = tree::sample(&pids);
    let idle_cpus = (observed && instance == 1)
        .then(|| execute::idle_cpu(&pids))
        .flatten();
    let slots = plan
        .slots
        .map(|s| s.for_block(spec.connections, spec.work.as_ref()));
    let client = match execute::load_plan(plan, spec, started.addr, pids.clone(), slots) {
        Ok(p) => p,
        Err(e) => {
            stop_servers(started.servers);
            return Err(Trouble::Failed(format!("the client's plan: {e}")));
        }
    };
    let mut loaded = TreeMemory::default();
    let mut kernel_loaded = None;
    let mut all_accepted = true;
    let n = spec.connections;
    let per_task = started.task_per_connection;
    let session = Session::open(client, &mut || {
        if observed {
            let sockets = idle.sockets as usize + n;
            let threads = if per_task { idle.threads + n as u64 } else { 0 };
            let others = idle.fds.saturating_sub(idle.sockets);
            all_accepted =
                tree::wait_for(&pids, sockets, others, threads, execute::ACCEPT_PATIENCE);
        }
        loaded = tree::sample(&pids);
        kernel_loaded = kernel::sample();
    });
    let session = match session {
        Ok(s) => s,
        Err(e) => {
            let interrupted = sys::signals::interrupted();
            let stopped = stop_servers(started.servers);
            if interrupted {
                return Err(Trouble::Interrupted);
            }
            let mut why = execute::one_line(&format!("connecting its client: {e:#}"));
            if let Some(t) = stopped.iter().find_map(Stopped::trouble) {
                why = format!("{t}; {why}");
            }
            return Err(Trouble::Failed(why));
        }
    };
    let frozen = frozen(plan, &spec.model).is_some();
    if frozen {
        freeze(&started.servers, true);
    }
    Ok(Resident {
        frozen,
        started,
        pids,
        session,
        idle,
        loaded,
        idle_cpus,
        kernel_before,
        kernel_loaded,
        all_accepted,
        slots: 0,
        instance,
        start_seconds: t0.elapsed().as_secs_f64(),
    })
}

/// One slot of resident `r`: a window of its session, the server's CPU
/// over it, judged as any cell is.
fn measure(
    spec: &CellSpec,
    ask: SlotAsk,
    r: &mut Resident,
    result: &mut CellResult,
) -> Result<(), Trouble> {
    let cpu0 = crate::metrics::cpu::tree(&r.pids);
    let outcome = r.session.window(ask.window);
    let cpu1 = crate::metrics::cpu::tree(&r.pids);
    result.runner_traffic_cpu_seconds = None;
    let observed = !r.pids.is_empty();
    let end = if observed {
        tree::memory(&r.pids)
    } else {
        TreeMemory::default()
    };
    result.kernel_before = r.kernel_before;
    result.kernel_loaded = r.kernel_loaded;
    // Read while the server sleeps (the previous slot drained, and this
    // one): to the nanosecond, but for a thread on a CPU at either read.
    let (slot_cpu, slot_error) = match (cpu0, cpu1) {
        (Some(a), Some(b)) => {
            let (cpu, error) = b.since(&a);
            (cpu, Some(error))
        }
        _ => (0.0, None),
    };
    result.server = observed.then(|| ServerSide {
        instances: r.started.instances,
        args: r.started.args.clone(),
        cpu_user_seconds: slot_cpu,
        cpu_system_seconds: 0.0,
        max_rss_kib: end.vm_hwm_kib,
        idle: r.idle,
        loaded: r.loaded,
        end,
        summaries: Vec::new(),
        idle_cpus: r.idle_cpus,
        cpu_error_seconds: slot_error,
    });
    let gone = r.started.servers.iter().any(|s| !s.running());
    let server_trouble = gone.then(|| "the server exited during the slot".to_string());
    let mut outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            if sys::signals::interrupted() {
                return Err(Trouble::Interrupted);
            }
            let why = execute::one_line(&format!("{SESSION}: {e:#}"));
            return Err(Trouble::Failed(match server_trouble {
                Some(t) => format!("{t}; {why}"),
                None => why,
            }));
        }
    };
    if outcome.report.interrupted || sys::signals::interrupted() {
        return Err(Trouble::Interrupted);
    }
    if let Some(targets) = &ask.targets {
        let h = &outcome.latency;
        result.quantiles = targets
            .iter()
            .map(|&(percentile, target)| Quantile {
                percentile,
                us: h.value_at_quantile((percentile / 100.0).min(1.0)) as f64 / 1e3,
                above: (!h.is_empty()).then(|| {
                    let within = h.count_between(0, (target * 1e9) as u64);
                    h.len().saturating_sub(within) as f64 / h.len() as f64
                }),
            })
            .collect();
    }
    let report = &mut outcome.report;
    report.environment = serde_json::Value::Null;
    if !r.all_accepted {
        report.warnings.push(format!(
            "the server stopped accepting for {} s: memory was sampled with {} of {} connections",
            execute::ACCEPT_PATIENCE.as_secs(),
            r.loaded.sockets.saturating_sub(r.idle.sockets),
            spec.connections
        ));
    }
    let judged = execute::judge(report, spec, &[], server_trouble);
    result.load = Some(outcome.report);
    judged
}

/// What the window of `spec` asks of its client: a capacity search's
/// slot offers its own rate (Poisson arrivals, as the plan's open loop),
/// measured as long as that rate needs, and reads the latency at the
/// targets' percentiles.
struct SlotAsk {
    window: crate::client::run::Ask,
    /// Each target's percentile and seconds.
    targets: Option<Vec<(f64, f64)>>,
}

fn ask(plan: &RunPlan, spec: &CellSpec) -> SlotAsk {
    match (&plan.capacity, spec.offered) {
        (Some(search), Some(o)) => {
            let rate = o.rate as f64;
            SlotAsk {
                window: crate::client::run::Ask {
                    rate_per_connection: Some(rate / spec.connections.max(1) as f64),
                    measured_seconds: Some(search.slot_seconds(rate, o.cost_round.is_some())),
                },
                targets: Some(
                    search
                        .slo
                        .targets
                        .iter()
                        .map(|t| (t.percentile, t.seconds_under(spec.work.as_ref())))
                        .collect(),
                ),
            }
        }
        _ => SlotAsk {
            window: Default::default(),
            targets: None,
        },
    }
}

/// Stops a resident: its session (its workers close their connections,
/// unless the run is interrupted: then they are killed at once), then its
/// servers, reaped.
fn stop(r: Resident) -> Vec<Stopped> {
    if r.frozen {
        // A stopped process cannot take its SIGTERM.
        freeze(&r.started.servers, false);
    }
    if sys::signals::interrupted() {
        drop(r.session);
    } else {
        r.session.close();
    }
    stop_servers(r.started.servers)
}

fn stop_servers(servers: Vec<ServerChild>) -> Vec<Stopped> {
    servers.into_iter().map(ServerChild::stop).collect()
}

fn stop_all(states: BTreeMap<String, State>) {
    for state in states.into_values() {
        if let State::Up(r) = state {
            stop(*r);
        }
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
