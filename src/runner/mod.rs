//! `c10k run`: experiments. A run is a matrix of cells (a model at a
//! connection count, under a work profile with `--work` ([`axis`]), one
//! repeat each); every cell starts the server as its
//! own process, waits for READY, measures it with the load generator, stops
//! and reaps it, and appends one line to `results.jsonl` at once
//! ([`mod@execute`], [`results`]). Ctrl-C ends the run between cells, the cell
//! in progress unrecorded, and `--resume` finishes it later. A run holds
//! its directory's lock from start to exit ([`lock`]), and a resume takes
//! only the results of the plan it finishes ([`identity`]). With `--runs
//! auto` the plan grows as cells settle or not ([`auto`]); with `--slo`
//! as each model's capacity search asks ([`crate::capacity::search`]). At the end:
//! the ranking with ties ([`summary`]), memory per connection as slopes
//! ([`memory`]) and the verdict ([`verdict`]), each per work profile, with
//! the bound the work allows beside the figure ([`bound`]).

pub mod auto;
pub mod bench;
pub mod execute;
pub mod preflight;
pub mod progress;
pub mod resident;
pub mod tuner;

use std::path::Path;
use std::sync::atomic::Ordering;

use anyhow::Context as _;

use crate::results::dir::{self as results, RunData};
use crate::results::schedule::fits;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    Complete,
    /// Ctrl-C or SIGTERM; this many cells are left for `--resume`, and
    /// the one abandoned in progress (not recorded), if any.
    Interrupted {
        left: usize,
        abandoned: Option<String>,
    },
}

/// Starts a new run of `plan` in a fresh directory under `out`; the
/// appender holds the directory's lock.
pub fn create(
    plan: crate::results::matrix::RunPlan,
    out: &Path,
) -> anyhow::Result<(RunData, results::Appender)> {
    let dir = out.join(format!("{}-{}", plan.experiment, timestamp()));
    let environment = serde_json::to_value(crate::env::capture())?;
    let appender = results::create(&dir, &plan, &environment)?;
    Ok((
        RunData {
            dir,
            plan,
            environment,
            cells: Vec::new(),
            superseded: Vec::new(),
        },
        appender,
    ))
}

/// A run opened to be finished.
pub struct Resumed {
    pub data: RunData,
    /// Holds the directory's lock; the file ends on a record boundary.
    pub appender: results::Appender,
    /// What was done to the end of `results.jsonl` before appending.
    pub repaired: Option<results::Repair>,
    /// Lines read past with a warning (a cell recorded again: its first
    /// result is kept), one line each.
    pub warnings: Vec<String>,
}

/// Opens `dir` to finish its run: takes the directory's lock before
/// reading anything, and refuses a directory with a line that is not a
/// result of its plan (unreadable, of another plan), naming the first: a
/// resume never mixes two plans nor buries a damaged line under new ones.
/// A partial last line (a run killed mid-write) is no reason to refuse: it
/// is cut, and a last result lacking its newline is completed; a cell
/// recorded again keeps its first result, with a warning, as `c10k report`
/// reads it ([`results::Problem::refuses`]).
pub fn resume(dir: &Path, check: results::PlanCheck) -> anyhow::Result<Resumed> {
    let mut appender = results::Appender::lock(dir, false)?;
    let (data, problems) = results::load(dir, check)?;
    let bad: Vec<&results::Problem> = problems.iter().filter(|p| p.refuses()).collect();
    if let Some(first) = bad.first() {
        let more = match bad.len() - 1 {
            0 => String::new(),
            n => format!(
                " (and {n} more line{}; c10k report {} lists each)",
                if n == 1 { "" } else { "s" },
                dir.display()
            ),
        };
        anyhow::bail!(
            "cannot resume {}: {first}{more}; remove or repair such lines first",
            dir.display()
        );
    }
    let repaired = appender.repair()?;
    let warnings = problems
        .iter()
        .filter(|p| !p.is_partial())
        .map(|p| format!("{}/{p}", dir.display()))
        .collect();
    Ok(Resumed {
        data,
        appender,
        repaired,
        warnings,
    })
}

/// Runs every cell of `data` that has no result yet, appending each result
/// to `results.jsonl` through `appender` as it finishes. With `--runs
/// auto`, cells the results call for are added to the plan (and
/// `plan.json` written) before they run, including on resume.
pub fn execute(data: &mut RunData, appender: &mut results::Appender) -> anyhow::Result<Finish> {
    if auto::extend(&mut data.plan, &data.cells) > 0 {
        results::save_plan(&data.dir, &data.plan)?;
    }
    let interrupted = crate::sys::signals::interrupt_flag()
        .context("installing the Ctrl-C and SIGTERM handlers")?;
    // `--tune`: every search the plan has not recorded runs first, so
    // every cell runs with what its model's search kept.
    if !tuner::run(data)? {
        return Ok(Finish::Interrupted {
            left: data.remaining().len(),
            abandoned: None,
        });
    }
    let clock = Clock::of(&data.cells);
    let mut progress = progress::Progress::new(
        data.plan.cells.len(),
        data.plan.cells.len() - data.remaining().len(),
        data.plan.primary,
    );
    // A resumed run with looks: a count whose cells are all recorded may
    // call for its next look (a run stopped between the two).
    if data.plan.looks.is_some() {
        let left: Vec<_> = data.remaining();
        for (n, work) in blocks(&data.plan.cells) {
            let open = left.iter().any(|c| c.connections == n && c.work == work);
            if !open && resident::unfit(n, data.plan.models.len()).is_none() {
                let later = data.plan.least_seconds(&data.remaining());
                let end = data
                    .plan
                    .looks
                    .map(|l| share_of(l.budget_seconds, clock.spent(), 0.0, later, 1));
                next_look(data, &progress, n, work.as_ref(), end, &clock, false)?;
            }
        }
        progress.set_total(data.plan.cells.len());
    }
    // A resumed capacity run: a block whose slots are all recorded may
    // owe its next round.
    if data.plan.capacity.is_some() {
        let left: Vec<_> = data.remaining();
        for (n, work) in blocks(&data.plan.cells) {
            let open = left.iter().any(|c| c.connections == n && c.work == work);
            if !open {
                let cells = crate::capacity::search::next_round(data, n, work.as_ref(), false);
                if !cells.is_empty() {
                    auto::append(&mut data.plan, &cells);
                    results::save_plan(&data.dir, &data.plan)?;
                }
            }
        }
        progress.set_total(data.plan.cells.len());
    }
    let mut todo: std::collections::VecDeque<_> = data.remaining().into();
    let runs = data.plan.runs_text();
    let mut abandoned = None;
    // A count run again once every count has had its looks: its turn,
    // and the end of its share.
    let (mut turn, mut again_end) = (0, None);
    loop {
        while let Some(spec) = todo.pop_front() {
            if interrupted.load(Ordering::Relaxed) {
                break;
            }
            // The first cell of a count (and work profile) not yet run: its
            // servers that can stay resident together run their slots now.
            let block = resident_block(&data.plan, &spec, &mut todo);
            if !block.is_empty() {
                let plan = data.plan.clone();
                let (n, work) = (spec.connections, spec.work.clone());
                let later = data.plan.least_seconds(todo.make_contiguous());
                // The blocks still to come (their cells come round by round,
                // so a block's are not next to each other).
                let others = blocks(todo.make_contiguous());
                let share = |budget: f64, first: f64| {
                    share_of(budget, clock.spent(), first, later, 1 + others.len())
                };
                // A capacity search's share of what the budget has left: this
                // block's and every block still to come's alike.
                let deadline = data
                    .plan
                    .capacity
                    .as_ref()
                    .map(|c| share(c.budget_seconds, 0.0));
                // The looks' share: what is left once every block's first
                // look is counted, split alike, so that the first count's
                // looks cannot take the last count's.
                let looks_end = again_end.or_else(|| {
                    data.plan
                        .looks
                        .map(|l| share(l.budget_seconds, data.plan.least_seconds(&block)))
                });
                let before = instances_before(data, n, work.as_ref());
                let shared = std::cell::RefCell::new((&mut *data, &mut progress, &mut *appender));
                let ended = resident::run(
                    &plan,
                    &block,
                    before,
                    &mut |s| shared.borrow().1.starting(s, &runs),
                    &mut |result| {
                        let mut guard = shared.borrow_mut();
                        let (data, progress, appender) = &mut *guard;
                        keep(data, appender, progress, result)
                    },
                    &mut || {
                        let mut guard = shared.borrow_mut();
                        let (data, progress, _) = &mut *guard;
                        let cells = match deadline {
                            Some(d) => capacity_round(data, progress, n, work.as_ref(), d, &clock)?,
                            None => next_look(
                                data,
                                progress,
                                n,
                                work.as_ref(),
                                looks_end,
                                &clock,
                                false,
                            )?,
                        };
                        progress.set_total(data.plan.cells.len());
                        Ok(cells)
                    },
                )?;
                if let resident::Ended::Interrupted(a) = ended {
                    abandoned = a;
                    break;
                }
                continue;
            }
            progress.starting(&spec, &runs);
            match execute::run_cell(&data.plan, &spec, &data.dir) {
                execute::Ended::Done(result) => {
                    if keep(data, appender, &mut progress, *result)? {
                        todo.push_front(spec);
                        continue;
                    }
                    if auto::extend(&mut data.plan, &data.cells) > 0 {
                        results::save_plan(&data.dir, &data.plan)?;
                        todo = data.remaining().into();
                        progress.set_total(data.plan.cells.len());
                    }
                }
                execute::Ended::Interrupted => {
                    abandoned = Some(spec.id.clone());
                    break;
                }
            }
        }
        if abandoned.is_some() || interrupted.load(Ordering::Relaxed) || !todo.is_empty() {
            break;
        }
        let Some((again, end)) = revisit(data, &progress, &clock, &mut turn)? else {
            break;
        };
        again_end = Some(end);
        progress.set_total(data.plan.cells.len());
        todo.extend(again);
    }
    progress.clear();
    let left = data.remaining().len();
    Ok(if left == 0 {
        Finish::Complete
    } else {
        Finish::Interrupted { left, abandoned }
    })
}

/// How long the run has taken: this process's time, and for a resumed
/// run, the span of what was recorded before.
struct Clock {
    started: std::time::Instant,
    before: f64,
}

impl Clock {
    fn of(cells: &[crate::results::cell::CellResult]) -> Clock {
        let start = cells
            .iter()
            .map(|c| c.started_unix)
            .fold(f64::INFINITY, f64::min);
        let end = cells
            .iter()
            .map(|c| c.started_unix + c.wall_seconds)
            .fold(f64::NEG_INFINITY, f64::max);
        Clock {
            started: std::time::Instant::now(),
            before: (end - start).max(0.0),
        }
    }

    fn spent(&self) -> f64 {
        self.before + self.started.elapsed().as_secs_f64()
    }
}

/// When a block that starts `spent` seconds into a run of `budget` must
/// end: its `first` seconds (its first look's, or none), and an equal
/// share of what is left once they and the `later` seconds of the blocks
/// still to come are counted, among the `blocks` left with it. What a
/// block does not use goes to the next.
fn share_of(budget: f64, spent: f64, first: f64, later: f64, blocks: usize) -> f64 {
    let spare = (budget - spent - first - later).max(0.0);
    spent + first + spare / blocks.max(1) as f64
}

/// With `--runs auto` over slots, the next look at `n` connections under
/// `work` ([`auto::look`]), when the count's rounds are done: its cells,
/// added to the plan (and `plan.json`) before they run, unless every
/// model is decided, the last look has run, or the look would end past
/// `end`, the count's share of the budget ([`share_of`]); each said on
/// the terminal.
fn next_look(
    data: &mut RunData,
    progress: &progress::Progress,
    n: usize,
    work: Option<&crate::server::work::Profile>,
    end: Option<f64>,
    clock: &Clock,
    again: bool,
) -> anyhow::Result<Vec<crate::results::matrix::CellSpec>> {
    use crate::present::units::seconds;
    let Some(looks) = data.plan.looks else {
        return Ok(Vec::new());
    };
    let here = |c: &crate::results::matrix::CellSpec| c.connections == n && c.work.as_ref() == work;
    let rounds = data.plan.rounds_at(n, work);
    let at = block_label(&data.plan, n, work);
    let (best, undecided, unsettled, cells) = match auto::look(data, n, work) {
        auto::Look::Decided => return Ok(Vec::new()),
        auto::Look::Last(undecided) => {
            progress.note(&format!(
                "{at}: after the last look ({rounds} rounds), not told apart from the best: {}",
                crate::present::words::and_list(&undecided)
            ));
            return Ok(Vec::new());
        }
        auto::Look::More {
            best,
            undecided,
            unsettled,
            cells,
        } => (best, undecided, unsettled, cells),
    };
    // What a slot of this count took, with the start of its instance
    // when it had one of its own (`--instances round`) and the repeats of
    // those disturbed from outside.
    let wall = |c: &&crate::results::cell::CellResult| {
        Some(c.wall_seconds + c.slot.as_ref()?.start_seconds.unwrap_or(0.0))
    };
    let kept = data
        .cells
        .iter()
        .filter(|c| here(&c.cell))
        .filter_map(|c| wall(&c));
    let slots = kept.clone().count();
    let repeats: f64 = data
        .superseded
        .iter()
        .filter(|c| here(&c.cell))
        .filter_map(|c| wall(&c))
        .sum();
    let per_slot = if slots == 0 {
        data.plan.least_seconds(&cells[..1])
    } else {
        (kept.sum::<f64>() + repeats) / slots as f64
    };
    // A count run again starts its servers anew: what each model's
    // starts took here, on average.
    let restart: f64 = if again {
        let mut models: Vec<&str> = cells.iter().map(|c| c.model.as_str()).collect();
        models.sort_unstable();
        models.dedup();
        models
            .iter()
            .filter_map(|m| {
                let starts: Vec<f64> = data
                    .cells
                    .iter()
                    .filter(|c| here(&c.cell) && c.cell.model == *m)
                    .filter_map(|c| c.slot.as_ref()?.start_seconds)
                    .collect();
                (!starts.is_empty()).then(|| starts.iter().sum::<f64>() / starts.len() as f64)
            })
            .sum()
    } else {
        0.0
    };
    let cost = per_slot * cells.len() as f64 + restart;
    let spent = clock.spent();
    let end = end.unwrap_or(looks.budget_seconds);
    if !fits(spent + cost, end) && again {
        // [`revisit`] says it once, for every count it tried.
        return Ok(Vec::new());
    }
    if !fits(spent + cost, end) {
        let whose = if end >= looks.budget_seconds - 1e-6 {
            format!(
                "the budget ({}), {} spent: stopping here",
                seconds(looks.budget_seconds),
                seconds(spent)
            )
        } else {
            format!(
                "this count's share of the budget (to {} of {}, the later counts' first looks and shares kept), {} spent: stopping here until the counts after it have had theirs",
                seconds(end),
                seconds(looks.budget_seconds),
                seconds(spent),
            )
        };
        progress.note(&format!(
            "{at}: after {rounds} rounds, {} not yet told apart from {best}; another look ({}) would pass {whose}",
            crate::present::words::and_list(&undecided),
            seconds(cost),
        ));
        return Ok(Vec::new());
    }
    progress.note(&format!(
        "{at}: after {rounds} rounds, {} not yet told apart from {best}{}: look {} of {}, {} more rounds of {} (about {}){}",
        crate::present::words::and_list(&undecided),
        if unsettled.is_empty() {
            String::new()
        } else {
            format!(
                " ({} told apart from {best}, not yet from all of them)",
                crate::present::words::and_list(&unsettled)
            )
        },
        rounds / looks.every + 1,
        looks.most,
        looks.every,
        crate::present::words::and_list(
            &undecided
                .iter()
                .chain([&best])
                .chain(&unsettled)
                .cloned()
                .collect::<Vec<_>>()
        ),
        seconds(cost),
        if again {
            ", its servers started anew with what the other counts left of the budget"
        } else {
            ""
        }
    ));
    auto::append(&mut data.plan, &cells);
    results::save_plan(&data.dir, &data.plan)?;
    Ok(cells)
}

/// Once every count has had its looks within its share, what the budget
/// has left goes back to the counts still undecided: the next look of
/// one of them, in turn from the one after the count `turn` last named,
/// within an equal share of what is left among them (with the end of that
/// share, for its later looks), its servers started anew (each as its
/// next instance). None when every count is decided,
/// at its last look, or no look fits. In a tour beside a hog, 10
/// connections stopped at its share, undecided, and 1,000 and 100 decided
/// with 37 s of the 3 minutes unused.
fn revisit(
    data: &mut RunData,
    progress: &progress::Progress,
    clock: &Clock,
    turn: &mut usize,
) -> anyhow::Result<Option<(Vec<crate::results::matrix::CellSpec>, f64)>> {
    let Some(looks) = data.plan.looks else {
        return Ok(None);
    };
    let all = blocks(&data.plan.cells);
    let open: Vec<usize> = (0..all.len())
        .map(|i| (*turn + i) % all.len())
        .filter(|&i| {
            let (n, work) = &all[i];
            resident::unfit(*n, data.plan.models.len()).is_none()
                && matches!(auto::look(data, *n, work.as_ref()), auto::Look::More { .. })
        })
        .collect();
    for (k, &i) in open.iter().enumerate() {
        let (n, work) = &all[i];
        let end = share_of(
            looks.budget_seconds,
            clock.spent(),
            0.0,
            0.0,
            open.len() - k,
        );
        let cells = next_look(data, progress, *n, work.as_ref(), Some(end), clock, true)?;
        if !cells.is_empty() {
            *turn = i + 1;
            return Ok(Some((cells, end)));
        }
    }
    if !open.is_empty() {
        let at: Vec<String> = open
            .iter()
            .map(|&i| {
                block_label(&data.plan, all[i].0, all[i].1.as_ref())
                    .trim_start()
                    .to_string()
            })
            .collect();
        progress.note(&format!(
            "  {}: still undecided; another look at any would pass what is left of the budget ({} of {} spent): stopping here",
            crate::present::words::and_list(&at),
            crate::present::units::seconds(clock.spent()),
            crate::present::units::seconds(looks.budget_seconds),
        ));
    }
    Ok(None)
}

/// What the slots recorded at `n` connections under `work` hold of each
/// model's instances: its last one and the first's idle CPU.
fn instances_before(
    data: &RunData,
    n: usize,
    work: Option<&crate::server::work::Profile>,
) -> resident::Before {
    let mut before = resident::Before::new();
    for c in data
        .cells
        .iter()
        .filter(|c| c.cell.connections == n && c.cell.work.as_ref() == work)
    {
        let Some(instance) = c.slot.as_ref().and_then(|s| s.instance) else {
            continue;
        };
        let idle = c.server.as_ref().and_then(|s| s.idle_cpus);
        let e = before
            .entry(c.cell.model.clone())
            .or_insert((instance, idle));
        e.0 = e.0.max(instance);
        e.1 = e.1.or(idle);
    }
    before
}

/// Records `result` (a cell's, or a slot's) and keeps it in `data`: a
/// repeat replaces the disturbed run it repeats, which stays in
/// `superseded`. True when it was disturbed from outside and has repeats
/// left ([`crate::analysis::disturbed::repeat`]): it runs again at once
/// (a slot beside its round's others).
fn keep(
    data: &mut RunData,
    appender: &mut results::Appender,
    progress: &mut progress::Progress,
    mut result: crate::results::cell::CellResult,
) -> anyhow::Result<bool> {
    let id = result.cell.id.clone();
    let before = data.cells.iter().position(|c| c.cell.id == id);
    if let Some(i) = before {
        result.repeat = data.cells[i].repeat + 1;
    }
    appender.append(&result)?;
    progress.finished(&result);
    let spec = result.cell.clone();
    match before {
        Some(i) => data
            .superseded
            .push(std::mem::replace(&mut data.cells[i], result)),
        None => data.cells.push(result),
    }
    let again = crate::analysis::disturbed::repeat(data, &id);
    if again {
        progress.repeating(&spec);
    }
    Ok(again)
}

/// `  1,000 connections under block:1ms`: a block's name on the terminal.
fn block_label(
    plan: &crate::results::matrix::RunPlan,
    n: usize,
    work: Option<&crate::server::work::Profile>,
) -> String {
    format!(
        "  {} {}{}",
        crate::present::units::format_count(n as f64),
        plan.size_label,
        work.map_or_else(String::new, |w| format!(" under {w}"))
    )
}

/// Every count and work profile of `cells`, in their order.
fn blocks(
    cells: &[crate::results::matrix::CellSpec],
) -> Vec<(usize, Option<crate::server::work::Profile>)> {
    let mut blocks = Vec::new();
    for c in cells {
        if !blocks.contains(&(c.connections, c.work.clone())) {
            blocks.push((c.connections, c.work.clone()));
        }
    }
    blocks
}

/// With `--slo`, the next round at `n` connections under `work`
/// ([`crate::capacity::search::next_round`]), added to the plan (and `plan.json`) before
/// it runs, unless it would run past `deadline` (the block's share of the
/// budget, on the run's clock); how the searches ended is said on the
/// terminal when they end.
fn capacity_round(
    data: &mut RunData,
    progress: &progress::Progress,
    n: usize,
    work: Option<&crate::server::work::Profile>,
    deadline: f64,
    clock: &Clock,
) -> anyhow::Result<Vec<crate::results::matrix::CellSpec>> {
    use crate::present::units::{format_count, seconds};
    let at = block_label(&data.plan, n, work);
    let mut cells = crate::capacity::search::next_round(data, n, work, false);
    let first_cost = cells
        .first()
        .and_then(|c| c.offered)
        .is_some_and(|o| o.cost_round == Some(1));
    let first_recheck = cells
        .first()
        .and_then(|c| c.offered)
        .is_some_and(|o| o.recheck == Some(1));
    let searching = cells
        .first()
        .and_then(|c| c.offered)
        .is_some_and(|o| o.cost_round.is_none() && o.recheck.is_none());
    let Some(search) = data.plan.capacity.as_ref() else {
        return Ok(Vec::new());
    };
    // What the round will take on the clock.
    let warmup = data.plan.slots.map_or(0.0, |s| s.warmup_seconds);
    let round_seconds = |cells: &[crate::results::matrix::CellSpec]| -> f64 {
        cells
            .iter()
            .filter_map(|c| c.offered)
            .map(|o| search.slot_wall_seconds(o.rate as f64, o.cost_round.is_some(), warmup))
            .sum()
    };
    let cost_note = |cells: &[crate::results::matrix::CellSpec]| {
        if let Some(o) = cells
            .first()
            .and_then(|c| c.offered)
            .filter(|o| o.cost_round == Some(1))
        {
            progress.note(&format!(
                "{at}: their cost at {}/s, the highest rate all that held one held: {} rounds",
                format_count(o.rate as f64),
                search.cost_rounds
            ));
        }
    };
    let recheck_note = |cells: &[crate::results::matrix::CellSpec]| {
        if cells
            .first()
            .and_then(|c| c.offered)
            .is_some_and(|o| o.recheck == Some(1))
        {
            progress.note(&format!(
                "{at}: each bracket's ends measured again, interleaved: {} rounds",
                search.recheck_rounds
            ));
        }
    };
    let cost = round_seconds(&cells);
    // A search leaves the recheck and the cost phase their rounds (the
    // recheck's slots as long as this round's).
    let reserve = if searching {
        let each = cost / cells.len().max(1) as f64;
        search.cost_reserve(data.plan.models.len(), warmup)
            + search.recheck_reserve(data.plan.models.len(), each)
    } else {
        0.0
    };
    let spent = clock.spent();
    if !cells.is_empty() && !fits(spent + cost + reserve, deadline) {
        let kept = if reserve > 0.0 {
            format!(
                " with the cost rounds kept in reserve ({})",
                seconds(reserve)
            )
        } else {
            String::new()
        };
        progress.note(&format!(
            "{at}: the next round ({}){kept} would pass this block's share of the budget (up to {} of {}, {} spent): {}",
            seconds(cost),
            seconds(deadline),
            seconds(search.budget_seconds),
            seconds(spent),
            if searching { "the searches stop here" } else { "stopping here" }
        ));
        if !searching {
            return Ok(Vec::new());
        }
        for l in crate::capacity::search::ended_lines(data, n, work) {
            progress.note(&l);
        }
        // The recheck and the cost phase still run, with the rates
        // decided so far.
        cells = crate::capacity::search::next_round(data, n, work, true);
        let rounds = match cells.first().and_then(|c| c.offered) {
            Some(o) if o.recheck.is_some() => search.recheck_rounds,
            _ => search.cost_rounds,
        };
        if cells.is_empty() || !fits(spent + rounds as f64 * round_seconds(&cells), deadline) {
            return Ok(Vec::new());
        }
        recheck_note(&cells);
        cost_note(&cells);
        auto::append(&mut data.plan, &cells);
        results::save_plan(&data.dir, &data.plan)?;
        return Ok(cells);
    }
    // How the searches ended, when they end, and again after the recheck.
    let ended = first_cost || (cells.is_empty() && !ran(data, n, work, |o| o.cost_round));
    let again = ran(data, n, work, |o| o.recheck);
    if first_recheck || (ended && !again) {
        progress.note(&format!("{at}: every search has ended"));
    } else if ended {
        progress.note(&format!("{at}: measured again"));
    }
    if first_recheck || ended {
        for l in crate::capacity::search::ended_lines(data, n, work) {
            progress.note(&l);
        }
    }
    recheck_note(&cells);
    cost_note(&cells);
    if !cells.is_empty() {
        auto::append(&mut data.plan, &cells);
        results::save_plan(&data.dir, &data.plan)?;
    }
    Ok(cells)
}

/// Whether a round of the phase `of` picks out (the recheck's, the cost
/// phase's) has been planned at `n` under `work`.
fn ran(
    data: &RunData,
    n: usize,
    work: Option<&crate::server::work::Profile>,
    of: fn(&crate::results::matrix::Offered) -> Option<usize>,
) -> bool {
    data.plan.cells.iter().any(|c| {
        c.connections == n && c.work.as_ref() == work && c.offered.as_ref().and_then(of).is_some()
    })
}

/// The cells `spec` heads that run resident: with `spec`, every cell left
/// in `todo` at its count and work profile whose model may stay resident,
/// taken out of `todo` in their order. Empty when the plan has no slots
/// or the count does not fit.
fn resident_block(
    plan: &crate::results::matrix::RunPlan,
    spec: &crate::results::matrix::CellSpec,
    todo: &mut std::collections::VecDeque<crate::results::matrix::CellSpec>,
) -> Vec<crate::results::matrix::CellSpec> {
    if plan.slots.is_none() {
        return Vec::new();
    }
    let same = |c: &crate::results::matrix::CellSpec| {
        c.connections == spec.connections && c.work == spec.work
    };
    let mut models: Vec<&str> = vec![&spec.model];
    for c in todo.iter().filter(|c| same(c)) {
        if !models.contains(&c.model.as_str()) {
            models.push(&c.model);
        }
    }
    if resident::unfit(spec.connections, models.len()).is_some() {
        return Vec::new();
    }
    let mut block = vec![spec.clone()];
    let (taken, left): (Vec<_>, Vec<_>) = std::mem::take(todo).into_iter().partition(same);
    block.extend(taken);
    *todo = left.into();
    block
}

/// What a run is about to do, for the terminal.
pub fn intro(data: &RunData) -> String {
    let p = &data.plan;
    let cpus = |c: &[usize]| {
        if c.is_empty() {
            "any CPU".to_string()
        } else {
            format!(
                "CPU {}",
                c.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
            )
        }
    };
    let placement = if p.bench.is_some() {
        "each benchmark places its own threads".to_string()
    } else {
        format!(
            "server on {}, client on {}",
            cpus(&p.server_cpus),
            cpus(&p.client_cpus)
        )
    };
    let profiles = match p.work.len() {
        0 => String::new(),
        k => format!(" x {k} work profile{}", if k == 1 { "" } else { "s" }),
    };
    let mut s = format!(
        "c10k run {}: {}\n  {} cells: {} models x {} {}{profiles} x {} runs{} ({:?} order); {placement}\n  results in {}\n",
        p.experiment,
        p.title,
        if p.auto_runs.is_some() {
            format!("{} or more", p.cells.len())
        } else {
            p.cells.len().to_string()
        },
        p.models.len(),
        p.connections.len(),
        if p.size_label == "connections" {
            "connection counts".to_string()
        } else {
            format!("sizes ({})", p.size_label)
        },
        p.runs_text(),
        match p.auto_runs {
            Some(a) => format!(
                ", each until its median is known to ±{} %",
                crate::present::units::sig3(a.tolerance * 100.0)
            ),
            None => String::new(),
        },
        p.order,
        data.dir.display()
    );
    s += &method_line(p);
    let hard = crate::sys::rlimit::nofile().hard;
    if let (Some(h), Some(&max)) = (hard, p.connections.iter().max()) {
        if crate::results::matrix::server_processes(max, Some(h)) > 1 {
            s += &format!(
                "  note: the open-files hard limit is {h} per process; cells past it run the server as several processes sharing the port (SO_REUSEPORT) and the client as several workers\n"
            );
        }
    }
    for r in &p.refused {
        s += &format!(
            "  refused up front: {} at {} {} and more: {}\n",
            r.model,
            crate::present::units::format_count(r.from as f64),
            p.size_label,
            r.why
        );
    }
    s
}

/// How long a slot is at the plan's counts: "300 ms a slot (100 ms of it
/// warm-up)", or the short slots' and the others' where the counts have
/// both.
fn slot_lengths(slots: &crate::results::matrix::Slots, counts: &[usize]) -> String {
    use crate::present::units::seconds;
    let one = |s: crate::results::matrix::Slots| {
        format!(
            "{} a slot ({} of it warm-up)",
            seconds(s.seconds),
            seconds(s.warmup_seconds)
        )
    };
    match slots.short {
        Some(short) if counts.iter().all(|&n| n < short.below) => one(slots.at(0)),
        Some(short) if counts.iter().any(|&n| n < short.below) => format!(
            "{} below {} connections, {} from {}",
            one(slots.at(0)),
            crate::present::units::format_count(short.below as f64),
            one(*slots),
            crate::present::units::format_count(short.below as f64)
        ),
        _ => one(*slots),
    }
}

/// How the cells are measured, one line: resident slots (and what runs
/// apart, and why), or one cell at a time.
fn method_line(p: &crate::results::matrix::RunPlan) -> String {
    use crate::present::units::seconds;
    let Some(slots) = p.slots else {
        return if p.bench.is_some() {
            String::new()
        } else {
            "  method: one cell at a time (its server started, measured, stopped)\n".to_string()
        };
    };
    let mut s = match &p.capacity {
        Some(c) => format!(
            "  method: a capacity search per model against {}: Poisson arrivals at each offered rate, one slot each per round ({} warm-up, then {} to {} measured, about {} echoes), shuffled every round, the rounds growing as the searches ask; at most {} slots a search, {} in all; then {} rounds measuring every bracket's ends again, interleaved; then {} paired rounds at the highest rate all held, for their cost\n",
            c.slo,
            seconds(slots.warmup_seconds),
            seconds(c.least_measured),
            seconds(c.most_measured),
            c.samples,
            c.most_slots,
            seconds(c.budget_seconds),
            c.recheck_rounds,
            c.cost_rounds
        ),
        None => format!(
            "  method: resident slots: a count's servers stay up together and the load moves between them, {}, one slot each per round, shuffled every round; {}\n",
            slot_lengths(&slots, &p.connections),
            slots.instances.said()
        ),
    };
    if let Some(l) = p.looks {
        s += &format!(
            "  --runs auto: looks of {} rounds at each count until every model is told apart from the best, at most {} looks ({} rounds) and within {} in all; every interval at {} (Pocock's boundary for {} looks, so that together they keep 5 %)\n",
            l.every,
            l.most,
            l.every * l.most,
            seconds(l.budget_seconds),
            crate::analysis::summary::level_text(l.level()),
            l.most
        );
    }
    if let Some(c) = &p.capacity {
        let mut lines: Vec<String> = Vec::new();
        for w in crate::results::matrix::profiles(&p.work) {
            for l in c.floor_lines(w.as_ref()) {
                if !lines.contains(&l) {
                    lines.push(l);
                }
            }
        }
        for l in lines {
            s += &format!("  ⚠ {l}\n");
        }
    }
    for why in p.models.iter().filter_map(|m| resident::frozen(p, m)) {
        s += &format!("  {why}\n");
    }
    for &n in &p.connections {
        if let Some(why) = resident::unfit(n, p.models.len()) {
            s += &format!("  one cell at a time at {n}: {why}\n");
        }
    }
    s
}

/// UTC now as `YYYYMMDD-HHMMSS`, for directory names that sort by time.
fn timestamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_method_line_gives_each_count_its_slot() {
        use crate::results::matrix::Slots;
        let d = Slots::DEFAULT;
        assert_eq!(
            slot_lengths(&d, &[10, 100, 1000]),
            "150 ms a slot (50 ms of it warm-up) below 1,000 connections, 300 ms a slot (100 ms of it warm-up) from 1,000"
        );
        assert_eq!(
            slot_lengths(&d, &[4, 100]),
            "150 ms a slot (50 ms of it warm-up)"
        );
        assert_eq!(
            slot_lengths(&d, &[1000, 10_000]),
            "300 ms a slot (100 ms of it warm-up)"
        );
        let given = Slots { short: None, ..d };
        assert_eq!(
            slot_lengths(&given, &[10, 1000]),
            "300 ms a slot (100 ms of it warm-up)"
        );
    }

    #[test]
    fn dates_from_day_counts() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_358), (2023, 1, 1));
        assert_eq!(civil_from_days(20_414), (2025, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    /// a at 100,000/s, c swinging ±10 % about it at 10 connections (not
    /// told apart in 10 rounds) and at half of it at 100 (decided), 10
    /// rounds of each, looks of 10 within 600 s.
    fn two_counts(dir: &std::path::Path) -> RunData {
        use crate::results::dir::Figures;
        let at = |f: &dyn Fn(usize) -> f64| -> Vec<Figures> {
            (1..=10)
                .map(|r| Figures {
                    throughput: f(r),
                    ..Default::default()
                })
                .collect()
        };
        let wobble = |r: usize| 100_000.0 * (1.0 + 0.005 * ((r * 7 % 5) as f64 - 2.0));
        let swing = |r: usize| 100_000.0 * if r % 2 == 0 { 1.1 } else { 0.9 };
        let mut data = RunData::example_of(&[("a", at(&wobble)), ("c", at(&swing))]);
        let half = RunData::example_of(&[("a", at(&wobble)), ("c", at(&|r| wobble(r) / 2.0))]);
        for mut c in half.cells {
            c.cell.connections = 100;
            c.cell.id = format!("{}/c100/r{}", c.cell.model, c.cell.run);
            data.plan.cells.push(c.cell.clone());
            data.cells.push(c);
        }
        data.plan.connections = vec![10, 100];
        data.plan.looks = Some(crate::results::matrix::Looks {
            every: 10,
            most: 4,
            budget_seconds: 600.0,
        });
        data.dir = dir.to_path_buf();
        data
    }

    /// Once every count has had its looks, what the budget has left goes
    /// back to the count still undecided (10 connections, not 100, which
    /// is decided), up to the budget's end when it is the only one; its
    /// servers start as their next instances. With nothing left, no look.
    #[test]
    fn a_count_left_undecided_gets_what_the_others_left() {
        let dir = std::env::temp_dir().join(format!("c10k-revisit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let mut data = two_counts(&dir);
        let progress = progress::Progress::new(0, 0, data.plan.primary);
        let clock = Clock {
            started: std::time::Instant::now(),
            before: 100.0,
        };
        let mut turn = 0;
        let (cells, end) = revisit(&mut data, &progress, &clock, &mut turn)
            .expect("a plan saved")
            .expect("another look at 10");
        assert!(cells
            .iter()
            .all(|c| c.connections == 10 && (11..=20).contains(&c.run)));
        assert_eq!(cells.len(), 20, "a and c, 10 rounds");
        assert!(
            (end - 600.0).abs() < 1e-6,
            "the only one undecided: to the budget's end, {end}"
        );
        assert_eq!(turn, 1, "the next turn starts after 10 connections");
        // The slots recorded ran on two instances of each model (the
        // second from round 6): the count run again starts the third.
        for c in &mut data.cells {
            c.slot = Some(crate::results::cell::Slot {
                position: 1,
                of: 2,
                first: c.cell.run == 1 || c.cell.run == 6,
                instance: Some(if c.cell.run > 5 { 2 } else { 1 }),
                start_seconds: None,
                outside_cpu_seconds: None,
                outside_seconds: None,
                stolen_seconds: None,
            });
        }
        let before = instances_before(&data, 10, None);
        assert_eq!(before.get("a").map(|b| b.0), Some(2));
        // No time left: no look, at 10 or anywhere.
        let spent = Clock {
            started: std::time::Instant::now(),
            before: 599.0,
        };
        let mut data = two_counts(&dir);
        assert!(revisit(&mut data, &progress, &spent, &mut 0)
            .expect("no error")
            .is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The tour's cells come round by round across its counts: once the
    /// first count's are taken, two blocks are left, not one per run of
    /// cells, and the first count's looks get a third of what the first
    /// looks leave (they once got a twelfth: 29.5 s of 180).
    #[test]
    fn the_first_count_shares_the_budget_with_the_two_counts_after_it() {
        use crate::results::matrix::Order;
        let models: Vec<String> = ["epoll", "poll", "select"].map(String::from).into();
        let cells =
            crate::results::schedule::expand(&models, &[10, 100, 1000], &[], 5, Order::Interleaved);
        let later: Vec<_> = cells.into_iter().filter(|c| c.connections != 10).collect();
        assert!(later
            .windows(2)
            .any(|w| w[0].connections != w[1].connections));
        assert_eq!(blocks(&later), [(100, None), (1000, None)]);
        let share = share_of(180.0, 0.0, 18.0, 36.0, 1 + blocks(&later).len());
        assert!((share - 60.0).abs() < 1e-9, "{share}");
    }
}
