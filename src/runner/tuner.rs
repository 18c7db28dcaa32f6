//! `c10k run --tune`: before the matrix, each c10k model's knobs
//! ([`crate::server::knobs`]) are searched at every count and work
//! profile ([`crate::tuning::climb`] decides what to measure next), and
//! what each search keeps goes into the plan (`plan.json`), so the matrix
//! runs every model with it and a resumed run does not search again.
//!
//! A search runs its settings as resident servers of their own
//! ([`super::resident`]), each a variant of the model, its step's
//! settings measured once in every round in a shuffled order with the
//! run's defaults among them, so two settings are compared within
//! seconds. With `--slo`, the setting a climb found then gets a capacity
//! search at the target ([`crate::capacity::search`]), the defaults are measured
//! at the highest rate it held, and the setting is kept only when the
//! defaults missed that rate.
//! Every slot is kept in `tune.jsonl` beside the results. The
//! budget (`--tune 10m`) is shared among the searches still to run, each
//! in proportion to what its first step takes; a search stops adding
//! steps when the next would pass its share, and decides on what it has. Cost: the slots themselves, and a server per
//! setting tried, up until the search ends.

use std::cell::RefCell;
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::Context as _;

use super::execute::{default_workers, server_cores};
use super::resident;
use crate::present::units::{format_count, seconds};
use crate::results::cell::{CellResult, Status};
use crate::results::dir::{self as results, RunData};
use crate::results::matrix::{profiles, CellSpec, RunPlan, Variant};
use crate::results::schedule::{round_order, slot};
use crate::results::tuned::{AtTarget, Chosen, Tried, Tuned};
use crate::server::knobs::{self, Knob, Values};
use crate::server::settings::{Field, Settings, Value};
use crate::server::work::{Kind, Profile};
use crate::tuning::climb::{self as search, Holds, Ladder, Method, Setting, Step, Why};

/// One search: a c10k model at a count under a profile, and the ladders
/// of the knobs it searches (none: nothing to search, and why).
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub model: String,
    pub connections: usize,
    pub work: Option<Profile>,
    pub ladders: Vec<Ladder>,
    /// Why nothing is searched, where nothing is.
    pub nothing: Option<String>,
}

/// The searches of `plan` not yet recorded in it, in the matrix's order:
/// every c10k model at every count and profile (a server of another's,
/// or a running target, has knobs of its own c10k does not know).
pub(crate) fn jobs(plan: &RunPlan) -> Vec<Job> {
    let mut out = Vec::new();
    for &n in &plan.connections {
        for w in profiles(&plan.work) {
            for m in &plan.models {
                if plan.tuned_at(m, n, w.as_ref()).is_some() {
                    continue;
                }
                let Some((model, own)) = plan.model(m) else {
                    continue;
                };
                if plan.refused.iter().any(|r| r.model == *m && n >= r.from) {
                    continue;
                }
                let mut ladders = Vec::new();
                let mut fixed = Vec::new();
                let chosen: Vec<&Chosen> = plan
                    .tune
                    .iter()
                    .flat_map(|t| &t.knobs)
                    .filter(|c| c.model == *m)
                    .collect();
                for mut k in knobs::of(model) {
                    // Knobs chosen for this model are its only ones.
                    if !chosen.is_empty() {
                        let Some(c) = chosen.iter().find(|c| c.flag == k.flag()) else {
                            continue;
                        };
                        if let Some((least, most)) = c.range {
                            k.values = Values::Count { least, most };
                        }
                    }
                    if own.has(k.field) || plan.server_settings.has(k.field) {
                        fixed.push(k.flag());
                        continue;
                    }
                    let Some(default) = run_default(plan, model, &k, n) else {
                        continue;
                    };
                    let guess = holds(&k).and_then(|h| guess(plan, model, h, n, w.as_ref()));
                    if let Some(mut l) = Ladder::of(&k, default, guess) {
                        if model.worker_per_connection() && k.field == Field::Workers {
                            // One process per connection at a time: fewer
                            // than the connections leaves some unserved.
                            keep_from(&mut l, n as u64);
                        }
                        ladders.push(l);
                    }
                }
                let nothing = ladders.is_empty().then(|| {
                    if !fixed.is_empty() {
                        format!("its knobs are fixed by the run ({})", fixed.join(", "))
                    } else if knobs::of(model).is_empty() {
                        "no knob: one task per connection, nothing to size".to_string()
                    } else {
                        "no knob a throughput search moves".to_string()
                    }
                });
                out.push(Job {
                    model: m.clone(),
                    connections: n,
                    work: w.clone(),
                    ladders,
                    nothing,
                });
            }
        }
    }
    out
}

/// The pools of `plan`'s models sized for their work without a search:
/// each knob that sizes a pool set to Little's law's threads where that
/// is more than the run's default (one per CPU), recorded as a search
/// would record what it kept, so the cells run with it and the tables
/// name it. The handlers preset runs so unless `--tune` searches.
pub(crate) fn sized(plan: &RunPlan) -> Vec<Tuned> {
    let mut out = Vec::new();
    for job in jobs(plan) {
        let mut setting: Setting = job.ladders.iter().map(|l| l.default).collect();
        for (i, l) in job.ladders.iter().enumerate() {
            let more = |i: usize| match l.values[i] {
                Value::Count(n) => n,
                _ => 0,
            };
            if holds(&l.knob).is_some() && more(l.start) > more(l.default) {
                setting[i] = l.start;
            }
        }
        let settings = search::settings_of(&job.ladders, &setting);
        if settings.is_empty() {
            continue;
        }
        let kept = search::label_of(&job.ladders, &setting);
        out.push(Tuned {
            settings,
            kept: kept.clone(),
            best: kept.clone(),
            why: format!(
                "{kept}: sized by Little's law (threads ≥ the rate the loop can offer × the time a request holds one), not searched"
            ),
            ..Tuned::at_defaults(
                &job.model,
                job.connections,
                job.work.as_ref(),
                search::defaults_label(&job.ladders),
            )
        });
    }
    out
}

/// Drops the values of a count ladder below `least` (its default stays).
fn keep_from(l: &mut Ladder, least: u64) {
    let default = l.values[l.default];
    let start = l.values[l.start];
    l.values
        .retain(|v| *v == default || matches!(v, Value::Count(x) if *x >= least));
    l.default = l.values.iter().position(|v| *v == default).unwrap_or(0);
    l.start = l
        .values
        .iter()
        .position(|v| *v == start)
        .unwrap_or(l.default);
}

/// The value `knob` has in the run when nothing sets it; `None` where
/// its declared default is not a value of its kind (tokio's own).
fn run_default(
    plan: &RunPlan,
    model: &dyn crate::server::Model,
    k: &Knob,
    n: usize,
) -> Option<Value> {
    Some(match (k.field, k.values) {
        (Field::Workers, _) => Value::Count(default_workers(plan, model, n) as u64),
        (Field::BlockingThreads, _) => Value::Count(crate::server::TOKIO_BLOCKING_THREADS as u64),
        (_, Values::Switch) => Value::Switch(false),
        (_, Values::Count { .. } | Values::Bytes { .. }) => Value::Count(k.default.parse().ok()?),
        (_, Values::Micros { .. }) => Value::Micros(
            crate::present::units::parse_duration(k.default)
                .ok()?
                .as_micros() as u64,
        ),
        (_, Values::Choice(words)) => Value::Word(words.iter().find(|w| **w == k.default)?),
    })
}

/// What holds one of the threads a knob counts, for a knob that sizes a
/// pool.
fn holds(k: &Knob) -> Option<Holds> {
    match k.field {
        Field::Workers => Some(Holds::Handler),
        Field::BlockingThreads => Some(Holds::Block),
        _ => None,
    }
}

/// The starting size of a pool of `model` at `n` connections under
/// `work`: Little's law ([`search::little`]).
fn guess(
    plan: &RunPlan,
    model: &dyn crate::server::Model,
    h: Holds,
    n: usize,
    work: Option<&Profile>,
) -> Option<u64> {
    let part = |k: Kind| work.map_or(0.0, |w| w.mean(k).as_secs_f64());
    let (cpu, block, wait) = (part(Kind::Cpu), part(Kind::Block), part(Kind::Wait));
    let hold = match h {
        Holds::Block => block,
        Holds::Handler => {
            cpu + if model.offloads_blocking() {
                0.0
            } else {
                block
            } + if model.sleeps_through_waits() {
                wait
            } else {
                0.0
            }
        }
    };
    // A capacity search offers every rate up to what the model carries:
    // its pool is sized for the closed loop's.
    let offered = plan
        .workload
        .rate
        .filter(|_| plan.capacity.is_none())
        .map(|r| r.total(n));
    search::little(
        n * plan.workload.depth().max(1),
        offered,
        cpu + block + wait,
        hold,
        cpu,
        server_cores(plan),
    )
}

/// How a search is run, from the plan.
fn method(plan: &RunPlan) -> Option<Method> {
    let t = plan.tune.as_ref()?;
    Some(Method {
        rounds: t.rounds,
        most_steps: t.most_steps,
        rule: plan.rule(),
    })
}

/// How many settings the first step of `job` measures.
pub(crate) fn first_settings(plan: &RunPlan, job: &Job) -> usize {
    match method(plan).map(|m| search::next(&job.ladders, &m, &Default::default())) {
        Some(Step::Measure(s)) if !job.ladders.is_empty() => s.len(),
        _ => 0,
    }
}

/// The least time one step of `job` takes: every setting of its first
/// step in each of its rounds, a slot each (with `--slo`, the capacity
/// searches' share beside it).
pub(crate) fn first_step_seconds(plan: &RunPlan, job: &Job) -> f64 {
    let (Some(m), Some(slots)) = (method(plan), plan.slots) else {
        return 0.0;
    };
    let slot = slots.for_block(job.connections, job.work.as_ref()).seconds;
    let climb = (first_settings(plan, job) * m.rounds) as f64 * slot;
    climb + check_seconds(plan, job)
}

/// With `--slo`, what the check at the target takes ([`at_target`]):
/// [`CHECK_SLOTS`] slots at the search's first rate; 0 without, or for a
/// job with nothing to search.
fn check_seconds(plan: &RunPlan, job: &Job) -> f64 {
    let (Some(search), Some(slots)) = (&plan.capacity, plan.slots) else {
        return 0.0;
    };
    if job.ladders.is_empty() {
        return 0.0;
    }
    let slot = search.slot_wall_seconds(search.start_rate, false, slots.warmup_seconds);
    CHECK_SLOTS as f64 * slot
}

/// Runs every search of `data`'s plan not yet recorded, each recorded in
/// the plan as it ends; `false` when Ctrl-C stopped it.
pub(crate) fn run(data: &mut RunData) -> anyhow::Result<bool> {
    let Some(tune) = data.plan.tune.clone() else {
        return Ok(true);
    };
    let todo = jobs(&data.plan);
    if todo.is_empty() {
        return Ok(true);
    }
    let spent_before: f64 = data.plan.tuned.iter().map(|t| t.seconds).sum();
    let started = Instant::now();
    eprintln!(
        "tuning: {} searches within {} (each model's knobs at each count and profile; c10k models --knobs lists them)",
        todo.len(),
        seconds((tune.budget_seconds - spent_before).max(0.0))
    );
    // Each search's share of what is left is its first step's share of
    // the first steps still to run: a search at 1,000 connections under a
    // 1 ms block, whose slots are 1.35 s, gets more than one at 100.
    let costs: Vec<f64> = todo
        .iter()
        .map(|j| first_step_seconds(&data.plan, j))
        .collect();
    for (i, job) in todo.iter().enumerate() {
        if crate::sys::signals::interrupted() {
            return Ok(false);
        }
        let left = tune.budget_seconds - spent_before - started.elapsed().as_secs_f64();
        let still: f64 = costs[i..].iter().sum();
        let share = if still > 0.0 {
            left.max(0.0) * costs[i] / still
        } else {
            0.0
        };
        let Some(tuned) = one(&data.plan, &data.dir, job, share)? else {
            return Ok(false);
        };
        eprintln!("tuned {}", line(&tuned));
        data.plan.tuned.push(tuned);
        results::save_plan(&data.dir, &data.plan)?;
    }
    Ok(true)
}

/// One search's outcome in a line: `hybrid at 100 under block:1ms: pool
/// 128, 43.8× the defaults (pool 2) [40.1, 47.9]`.
pub(crate) fn line(t: &Tuned) -> String {
    let work = t
        .work
        .as_ref()
        .map_or_else(String::new, |w| format!(" under {w}"));
    format!(
        "{} at {}{work}: {}",
        t.model,
        format_count(t.connections as f64),
        t.why
    )
}

/// The name a setting's server runs under in the search, as a tuned
/// model is shown: the model's for its defaults, `hybrid (pool 128)`
/// else. A name only: the setting itself travels with each cell
/// ([`State::settings`]).
fn name_of(job: &Job, setting: &Setting) -> String {
    match search::label_of(&job.ladders, setting) {
        words if words == "defaults" => job.model.clone(),
        words => format!("{} ({words})", job.model),
    }
}

/// Every setting of `ladders`, each knob at each of its values.
fn every_setting(ladders: &[Ladder]) -> Vec<Setting> {
    let mut all: Vec<Setting> = vec![Vec::new()];
    for l in ladders {
        all = all
            .into_iter()
            .flat_map(|s| {
                (0..l.values.len()).map(move |i| {
                    let mut s = s.clone();
                    s.push(i);
                    s
                })
            })
            .collect();
    }
    all
}

/// Searches `job` within `share` seconds; `None` when Ctrl-C stopped it.
fn one(plan: &RunPlan, dir: &Path, job: &Job, share: f64) -> anyhow::Result<Option<Tuned>> {
    let t0 = Instant::now();
    let method = method(plan).context("a plan without --tune")?;
    let mut tuned = Tuned::at_defaults(
        &job.model,
        job.connections,
        job.work.as_ref(),
        search::defaults_label(&job.ladders),
    );
    if let Some(why) = &job.nothing {
        tuned.why = format!("defaults: {why}");
        return Ok(Some(tuned));
    }
    let (model, own) = plan.model(&job.model).context("a model the plan names")?;
    // Each setting a variant of the model's, with its settings.
    let mut sub = plan.clone();
    if sub.capacity.take().is_some() {
        // The climb ranks throughput in a closed loop; the capacity
        // search at the target decides after ([`at_target`]).
        sub.workload.rate = None;
        sub.workload.arrivals = Default::default();
        sub.primary = plan.tune_primary();
    }
    sub.tuned.clear();
    sub.cells.clear();
    sub.models.clear();
    // Every setting a server of its own, once.
    let every: Vec<(String, Setting)> = every_setting(&job.ladders)
        .into_iter()
        .map(|s| (name_of(job, &s), s))
        .collect();
    sub.variants
        .retain(|v| every.iter().all(|(name, _)| *name != v.name));
    for (name, s) in &every {
        sub.variants.push(Variant {
            name: name.clone(),
            model: model.name().into(),
            settings: own.over(&search::settings_of(&job.ladders, s)),
        });
        sub.models.push(name.clone());
    }
    let state = RefCell::new(State::default());
    let cells_of = |step: &[Setting], state: &mut State| -> Vec<CellSpec> {
        let named: Vec<(String, &Setting)> = step.iter().map(|s| (name_of(job, s), s)).collect();
        let mut cells = Vec::new();
        for _ in 0..method.rounds {
            state.round += 1;
            for (name, setting) in round_order(&named, state.round) {
                // Each cell's setting by its index, which the slot's
                // result carries back.
                state.settings.push((*setting).clone());
                cells.push(CellSpec {
                    index: state.settings.len() - 1,
                    ..slot(name, job.work.as_ref(), job.connections, state.round, None)
                });
            }
        }
        for s in step {
            if !state.order.contains(s) {
                state.order.push(s.clone());
                state.new_servers += 1;
            }
        }
        cells
    };
    let first = match search::next(&job.ladders, &method, &state.borrow().history) {
        Step::Measure(s) => s,
        Step::Done(_) => Vec::new(),
    };
    let first_cells = cells_of(&first, &mut state.borrow_mut());
    let mut log = open_log(dir)?;
    // With `--slo`, the capacity searches at the target get what the
    // climb leaves of the share, at least what they take; the climb at
    // least a quarter of it.
    let deadline = (share - check_seconds(plan, job)).max(share * 0.25);
    let ended = resident::run(
        &sub,
        &first_cells,
        resident::Before::new(),
        &mut |_| {},
        &mut |mut result: CellResult| {
            // The search's own plan (a variant per setting) is no plan of
            // the run's: the slot is kept without it.
            result.plan = None;
            let mut st = state.borrow_mut();
            let figure = (result.status == Status::Ok)
                .then(|| result.metrics().primary(sub.primary))
                .flatten();
            if let Some(s) = st.settings.get(result.cell.index).cloned() {
                st.history
                    .entry(s)
                    .or_default()
                    .push((result.cell.run, figure));
            }
            st.slots += 1;
            st.slot_seconds += result.wall_seconds;
            serde_json::to_writer(&mut log, &result)?;
            log.write_all(b"\n")?;
            Ok(false)
        },
        &mut || {
            let mut st = state.borrow_mut();
            if crate::sys::signals::interrupted() {
                return Ok(Vec::new());
            }
            let step = match search::next(&job.ladders, &method, &st.history) {
                Step::Measure(s) => s,
                Step::Done(_) => return Ok(Vec::new()),
            };
            let per_slot = st.slot_seconds / st.slots.max(1) as f64;
            // A server started and connected costs about a slot or two
            // more; the first step's time beyond its slots says how much.
            let per_server = ((t0.elapsed().as_secs_f64() - st.slot_seconds)
                / st.new_servers.max(1) as f64)
                .max(0.0);
            let fresh = step.iter().filter(|s| !st.order.contains(s)).count();
            let need = (step.len() * method.rounds) as f64 * per_slot + fresh as f64 * per_server;
            if t0.elapsed().as_secs_f64() + need > deadline {
                st.stopped = Some(format!(
                    "the budget: its next step would take about {}, past its share of {}",
                    seconds(need),
                    seconds(deadline)
                ));
                return Ok(Vec::new());
            }
            Ok(cells_of(&step, &mut st))
        },
    )?;
    if let resident::Ended::Interrupted(_) = ended {
        return Ok(None);
    }
    if crate::sys::signals::interrupted() {
        return Ok(None);
    }
    let st = state.into_inner();
    let found = match search::next(&job.ladders, &method, &st.history) {
        Step::Done(f) => f,
        Step::Measure(_) => search::so_far(&job.ladders, &method, &st.history),
    };
    let defaults: Setting = job.ladders.iter().map(|l| l.default).collect();
    tuned.settings = search::settings_of(&job.ladders, &found.setting);
    tuned.kept = search::label_of(&job.ladders, &found.setting);
    tuned.best = search::label_of(&job.ladders, &found.best);
    tuned.default_figure = search::median(&st.history, &defaults);
    tuned.best_figure = search::median(&st.history, &found.best);
    if let Some(c) = found.versus_default {
        tuned.ratio = Some(c.ratio);
        tuned.interval = c.interval;
    }
    tuned.tried = st
        .order
        .iter()
        .map(|s| {
            let slots = st.history.get(s).map_or(0, Vec::len);
            let failed = st
                .history
                .get(s)
                .map_or(0, |v| v.iter().filter(|x| x.1.is_none()).count());
            Tried {
                setting: search::label_of(&job.ladders, s),
                settings: search::settings_of(&job.ladders, s),
                median: search::median(&st.history, s),
                slots,
                failed,
            }
        })
        .collect();
    tuned.why = why(&tuned, found.why, plan);
    tuned.stopped = st.stopped;
    if plan.capacity.is_some() && found.setting != defaults {
        let names = [name_of(job, &defaults), name_of(job, &found.setting)];
        eprintln!(
            "  {} at {}: {} against its defaults at the target",
            job.model,
            format_count(job.connections as f64),
            tuned.kept
        );
        let Some(at) = at_target(
            &sub,
            plan,
            dir,
            job,
            (&names, &tuned.kept),
            share - t0.elapsed().as_secs_f64(),
        )?
        else {
            return Ok(None);
        };
        settle_at_target(&mut tuned, at);
    }
    tuned.seconds = t0.elapsed().as_secs_f64();
    Ok(Some(tuned))
}

/// Slots the check at the target takes, for its share of the budget: the
/// capacity search of the setting found (the capacity preset's took about
/// 20 here, docs/results/2026-11-28-capacity.md), and the defaults at
/// the rate it held (one to six).
const CHECK_SLOTS: usize = 26;

/// With `--slo`: the capacity search ([`crate::capacity::search`]) of the
/// setting the climb found (`names[1]`, a variant of `sub`'s) at the
/// job's count and profile, with no cost phase; then its defaults
/// (`names[0]`) at the highest rate it held, slot after slot until that
/// rate is decided for them (a pool a tenth the size misses it in one
/// slot, saturated; a second whole search of the defaults near their own
/// target spends its slots on rates the verdict does not need). Within
/// `seconds_left`; `None` when Ctrl-C stopped it. `found` is the
/// setting in words, as the result names it.
fn at_target(
    sub: &RunPlan,
    plan: &RunPlan,
    dir: &Path,
    job: &Job,
    (names, found): (&[String; 2], &str),
    seconds_left: f64,
) -> anyhow::Result<Option<AtTarget>> {
    use crate::capacity::search::{self as cap, Call};
    let t0 = Instant::now();
    let mut search = plan.capacity.clone().context("a plan without --slo")?;
    search.cost_rounds = 0;
    // The defaults are measured at the rate found right after, which
    // checks it as a recheck would.
    search.recheck_rounds = 0;
    search.handlers.clear();
    let (n, work) = (job.connections, job.work.as_ref());
    let mut p = sub.clone();
    p.workload = plan.workload.clone();
    p.primary = plan.primary;
    p.models = vec![names[1].clone()];
    let profiles: Vec<Profile> = job.work.iter().cloned().collect();
    p.cells = crate::capacity::search::first_cells(&p.models, &[n], &profiles, &search);
    p.capacity = Some(search.clone());
    let mut data = RunData {
        dir: dir.to_path_buf(),
        plan: p,
        environment: serde_json::Value::Null,
        cells: Vec::new(),
        superseded: Vec::new(),
    };
    let mut slots = Slots {
        log: open_log(dir)?,
        t0,
        seconds_left,
        stopped: None,
    };
    let first = data.plan.cells.clone();
    let next = &mut |d: &RunData| crate::capacity::search::next_round(d, n, work, false);
    if !slots.run(&mut data, &first, next)? {
        return Ok(None);
    }
    let (found_held, found_missed) = cap::decided(&data, &names[1], n, work);
    let (mut defaults_held, mut defaults_missed) = (None, None);
    if let (Some(h), None) = (found_held, &slots.stopped) {
        let targets = search.targets_under(work);
        let at_h = |d: &RunData| {
            let here = cap::slots_of(&d.cells, &search, &names[0], n, work);
            cap::rates(&here, &search, &targets)
                .into_iter()
                .find(|p| p.rate == h.round())
        };
        let next = &mut |d: &RunData| -> Vec<CellSpec> {
            let point = at_h(d);
            if point
                .as_ref()
                .is_some_and(|p| p.decided || p.slots >= search.most_per_rate)
            {
                return Vec::new();
            }
            let run = point.map_or(0, |p| p.slots) + 1;
            let offered = crate::results::matrix::Offered {
                rate: h.round() as u64,
                cost_round: None,
                recheck: None,
            };
            vec![slot(&names[0], work, n, run, Some(offered))]
        };
        data.plan.models.push(names[0].clone());
        let first = next(&data);
        super::auto::append(&mut data.plan, &first);
        if !slots.run(&mut data, &first, next)? {
            return Ok(None);
        }
        match at_h(&data) {
            Some(p) if p.decided && matches!(p.call, Call::Misses(_)) => defaults_missed = Some(h),
            Some(p) if p.decided && p.call == Call::Holds => defaults_held = Some(h),
            _ => {}
        }
    }
    Ok(Some(AtTarget {
        target: search.slo.describe(),
        found: found.to_string(),
        found_held,
        found_missed,
        defaults_held,
        defaults_missed,
        slots: data.cells.len(),
        stopped: slots.stopped,
    }))
}

/// The slots of [`at_target`]: each kept in `tune.jsonl`, none begun
/// past the search's time.
struct Slots {
    log: std::fs::File,
    t0: Instant,
    seconds_left: f64,
    stopped: Option<String>,
}

impl Slots {
    /// Runs `first` in resident slots, then what `next` asks of the slots
    /// so far, each round added to `data`'s plan, until it asks nothing
    /// or the next round would pass the time left; `false` when Ctrl-C
    /// stopped it.
    fn run(
        &mut self,
        data: &mut RunData,
        first: &[CellSpec],
        next: &mut dyn FnMut(&RunData) -> Vec<CellSpec>,
    ) -> anyhow::Result<bool> {
        let plan = data.plan.clone();
        let Some(search) = plan.capacity.as_ref() else {
            return Ok(true);
        };
        let warmup = plan.slots.map_or(0.0, |s| s.warmup_seconds);
        let shared = RefCell::new((data, self));
        let ended = resident::run(
            &plan,
            first,
            resident::Before::new(),
            &mut |_| {},
            &mut |mut result: CellResult| {
                let mut guard = shared.borrow_mut();
                let (data, me) = &mut *guard;
                result.plan = None;
                serde_json::to_writer(&mut me.log, &result)?;
                me.log.write_all(b"\n")?;
                data.cells.push(result);
                Ok(false)
            },
            &mut || {
                if crate::sys::signals::interrupted() {
                    return Ok(Vec::new());
                }
                let mut guard = shared.borrow_mut();
                let (data, me) = &mut *guard;
                let cells = next(data);
                let need: f64 = cells
                    .iter()
                    .filter_map(|c| c.offered)
                    .map(|o| search.slot_wall_seconds(o.rate as f64, false, warmup))
                    .sum();
                if !cells.is_empty() && me.t0.elapsed().as_secs_f64() + need > me.seconds_left {
                    me.stopped = Some(format!(
                        "the budget: the next round would take about {}, past what the search had left ({})",
                        seconds(need),
                        seconds(me.seconds_left.max(0.0))
                    ));
                    return Ok(Vec::new());
                }
                super::auto::append(&mut data.plan, &cells);
                Ok(cells)
            },
        )?;
        Ok(!(matches!(ended, resident::Ended::Interrupted(_))
            || crate::sys::signals::interrupted()))
    }
}

/// Keeps the climb's setting in `tuned` only when `at` shows it held a
/// rate at the target its defaults missed; else the defaults, and why.
fn settle_at_target(tuned: &mut Tuned, at: AtTarget) {
    let rate = |v: f64| format!("{}/s", format_count(v));
    let found = match (at.found_held, at.found_missed) {
        (Some(h), Some(m)) => format!("{} held {} (missed {})", at.found, rate(h), rate(m)),
        (Some(h), None) => format!("{} held {}", at.found, rate(h)),
        (None, _) => format!("{} held no rate, decided", at.found),
    };
    let defaults = match (at.found_held, at.defaults_held, at.defaults_missed) {
        (None, ..) => format!("the defaults ({}) were not measured", tuned.defaults),
        (Some(h), _, Some(_)) => format!("the defaults ({}) missed {}", tuned.defaults, rate(h)),
        (Some(h), Some(_), None) => {
            format!("the defaults ({}) held {} too", tuned.defaults, rate(h))
        }
        (Some(h), None, None) => format!(
            "the defaults ({}) were not decided at {}",
            tuned.defaults,
            rate(h)
        ),
    };
    if at.holds() {
        tuned.why = format!("{}; at {}, {found}, {defaults}", tuned.why, at.target);
    } else {
        tuned.why = format!(
            "defaults ({}): {} was faster in a closed loop ({}), but at {} {found} and {defaults}: not shown to carry more at the target{}",
            tuned.defaults,
            at.found,
            tuned.ratio.map_or_else(
                || "–".into(),
                |r| format!("{}×", crate::present::units::sig3(r))
            ),
            at.target,
            at.stopped
                .as_ref()
                .map_or_else(String::new, |s| format!(" before {s} ({} slots)", at.slots)),
        );
        tuned.settings = Settings::default();
        tuned.kept = "defaults".into();
    }
    tuned.at_target = Some(at);
}

/// `tune.jsonl` beside the results, to append slots to.
fn open_log(dir: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(TUNE_LOG))
        .with_context(|| format!("opening {}", dir.join(TUNE_LOG).display()))
}

/// The file beside `results.jsonl` that keeps every slot of the searches.
pub const TUNE_LOG: &str = "tune.jsonl";

/// A search's state through its slots.
#[derive(Default)]
struct State {
    history: search::History,
    /// Settings in the order first measured.
    order: Vec<Setting>,
    /// Each cell's setting, by the cell's index.
    settings: Vec<Setting>,
    round: usize,
    slots: usize,
    slot_seconds: f64,
    new_servers: usize,
    stopped: Option<String>,
}

/// Why the search kept what it kept, in a line.
fn why(t: &Tuned, why: Why, plan: &RunPlan) -> String {
    let figure = |v: Option<f64>| v.map_or_else(|| "–".into(), |v| plan.tune_primary().format(v));
    let against = match (t.ratio, t.interval) {
        (Some(r), Some((lo, hi))) => format!(
            "{}× the defaults ({}) [{}, {}]",
            crate::present::units::sig3(r),
            t.defaults,
            crate::present::units::sig3(lo),
            crate::present::units::sig3(hi)
        ),
        (Some(r), None) => format!(
            "{}× the defaults ({}), untested",
            crate::present::units::sig3(r),
            t.defaults
        ),
        _ => format!("against the defaults ({})", t.defaults),
    };
    match why {
        Why::Faster => format!(
            "{}: {} against {}, {against}",
            t.kept,
            figure(t.best_figure),
            figure(t.default_figure)
        ),
        Why::DefaultBest => format!(
            "defaults ({}): they measured best ({} settings tried)",
            t.defaults,
            t.tried.len()
        ),
        Why::NothingBetter => format!(
            "defaults ({}): nothing measured better; the best, {}, was {against}",
            t.defaults, t.best
        ),
        Why::DefaultsFailed if t.changed() => format!(
            "{}: the defaults ({}) failed every slot, {} held {}",
            t.kept,
            t.defaults,
            t.kept,
            figure(t.best_figure)
        ),
        Why::DefaultsFailed => format!(
            "defaults ({}): no setting held a figure in any slot",
            t.defaults
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(models: &[&str], n: usize, work: &str) -> RunPlan {
        let mut p = RunPlan::example(models, &[n], 1);
        p.work = vec![Profile::parse(work).unwrap()];
        p.server_cpus = vec![0, 1];
        p
    }

    fn workers_at(t: &[Tuned], model: &str) -> Option<usize> {
        t.iter()
            .find(|t| t.model == model)
            .and_then(|t| t.settings.workers)
    }

    #[test]
    fn pools_are_sized_by_littles_law_for_blocking_work_only() {
        let models = [
            "hybrid",
            "epoll-workers",
            "uring",
            "tokio",
            "threads",
            "epoll",
            "prefork",
        ];
        let t = sized(&plan(&models, 100, "block:1ms"));
        assert_eq!(workers_at(&t, "hybrid"), Some(100));
        assert_eq!(workers_at(&t, "epoll-workers"), Some(100));
        assert_eq!(workers_at(&t, "uring"), Some(100));
        // tokio hands blocks to its pool, whose 512 threads hold 100
        // blocks; one task per connection and a process per connection
        // already hold them; a single loop has nothing to size.
        for m in ["tokio", "threads", "epoll", "prefork"] {
            assert!(t.iter().all(|t| t.model != m), "{m}: {t:?}");
        }
        assert_eq!(
            t.iter().find(|t| t.model == "hybrid").map(Tuned::shown),
            Some("hybrid (pool 100)".into())
        );
        // 1,000 blocking calls at once pass tokio's 512; uring's rings
        // stop at their range's end.
        let t = sized(&plan(&models, 1000, "block:1ms"));
        let tokio = t.iter().find(|t| t.model == "tokio").map(|t| &t.settings);
        assert_eq!(
            tokio.map(|s| (s.blocking_threads, s.workers)),
            Some((Some(1000), None))
        );
        assert_eq!(workers_at(&t, "uring"), Some(256));
        // CPU work needs a thread per CPU, the default: nothing sized.
        assert!(sized(&plan(&models, 1000, "cpu:100us")).is_empty());
    }

    #[test]
    fn a_knob_fixed_by_the_run_is_not_searched() {
        let mut p = plan(&["hybrid", "fork"], 16, "block:1ms");
        p.server_settings.workers = Some(4);
        let jobs = jobs(&p);
        let h = jobs.iter().find(|j| j.model == "hybrid").unwrap();
        assert!(h.ladders.iter().all(|l| l.knob.field != Field::Workers));
        assert!(h.ladders.iter().any(|l| l.knob.field == Field::Interval));
        let f = jobs.iter().find(|j| j.model == "fork").unwrap();
        assert!(f.ladders.is_empty() && f.nothing.is_some());
    }
}
