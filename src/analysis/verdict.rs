//! The answer first: for each connection count, the models that lead by the
//! experiment's figure and what each model costs there, and then a verdict
//! on more than that figure: the best by throughput (or time), by tail
//! latency (p99), and by cost (the server's CPU per message, its memory per
//! connection, its CPU when idle), and the models that no other model
//! beats on one of those without losing on another (not dominated), with
//! why each other one is out ("tokio: p99 12× uring's"). Printed last by
//! `c10k run` and shown first in `report.html`.
//!
//! A model *beats* another on a figure only beyond noise and margin: on the
//! repeated figures (throughput, p99, CPU per message) by the comparison of
//! [`crate::stats::paired`]; on memory per connection when the two slopes'
//! intervals are disjoint and more than [`MEMORY_FLOOR_KIB`] apart; on idle
//! CPU when the two differ by more than [`IDLE_FLOOR_CPUS`]. An open loop
//! ranks by corrected p99, so p99 is its first figure. Costs what the
//! ranking costs, once per figure.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::memory::{self, Kind};
use super::summary::{self, Ranked, RankedBy};
use crate::client::limit::LimitedBy;
use crate::export::table::Table;
use crate::present::units::{format_count, sig3, Scale};
use crate::present::words::and_list;
use crate::results::cell::{CellResult, Metrics, RunsCost, RunsFigure, Status};
use crate::results::dir::RunData;
use crate::results::matrix::RunPlan;
use crate::stats::paired::{self, Comparison, Sample};
use crate::stats::Summary;

/// Memory per connection differs only past this (1 KiB: a sixth of what
/// the kernel holds for one loopback connection here).
pub(crate) const MEMORY_FLOOR_KIB: f64 = 1.0;

/// Idle CPU differs only past this share of one CPU (the idle window's
/// resolution is 5 %).
pub(crate) const IDLE_FLOOR_CPUS: f64 = 0.1;

/// What limited a model at one connection count (its measured cells
/// there): the verdict most of its runs had (`client` marked as a bound of
/// the server: a lower bound of a throughput, an upper bound of an open
/// loop's latency, which a late client adds to), how many runs disagreed,
/// and how many saw interference from outside the run. `None` when no cell
/// recorded one.
pub(crate) fn limit_note(cells: &[&CellResult]) -> Option<String> {
    let loads: Vec<&crate::client::report::Report> = cells
        .iter()
        .filter(|c| c.status == Status::Ok)
        .filter_map(|c| c.load.as_ref())
        .filter(|l| l.limits.why != "not recorded")
        .collect();
    let latency = loads.iter().any(|l| l.open_loop.is_some());
    let limits: Vec<&crate::client::limit::Limits> = loads.iter().map(|l| &l.limits).collect();
    if limits.is_empty() {
        return None;
    }
    let mut counts: Vec<(LimitedBy, usize)> = Vec::new();
    for l in &limits {
        match counts.iter_mut().find(|(v, _)| *v == l.verdict) {
            Some((_, k)) => *k += 1,
            None => counts.push((l.verdict, 1)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    let (verdict, k) = counts[0];
    let mut note = if k * 2 <= limits.len() {
        // No majority: every verdict with its count.
        let each: Vec<String> = counts.iter().map(|(v, k)| format!("{v} {k}")).collect();
        format!("mixed: {}", each.join(", "))
    } else {
        match verdict {
            LimitedBy::Client if latency => "client (an upper bound)".to_string(),
            LimitedBy::Client => "client (a lower bound)".to_string(),
            v => v.to_string(),
        }
    };
    if k < limits.len() && k * 2 > limits.len() {
        note += &format!(" in {k} of {} runs", limits.len());
    }
    let noisy = limits.iter().filter(|l| l.interference).count();
    if noisy > 0 {
        note += &format!("; interference in {noisy} of {}", limits.len());
    }
    Some(note)
}

/// The figures a model is judged on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aspect {
    /// The experiment's own (throughput, time, accept rate, or p99 in an
    /// open loop).
    Primary,
    P99,
    Cpu,
    Memory,
    Idle,
}

/// One model's figures at one count.
struct Judged {
    model: String,
    primary: Option<Sample>,
    p99: Option<Sample>,
    cpu: Option<Sample>,
    /// Slope per connection, KiB, with its interval.
    memory: Option<(f64, f64, f64)>,
    /// CPUs' worth when idle, each measurement.
    idle: Vec<f64>,
}

/// How the server's CPU is charged: per message, or per connection under
/// churn.
fn cpu_pick(churn: bool) -> fn(&Metrics) -> Option<f64> {
    if churn {
        |m| m.server_cpu_per_connection_us
    } else {
        |m| m.server_cpu_per_message_us
    }
}

/// Every measured model's figures at count `n`.
fn judged(data: &RunData, n: usize, slopes: &[memory::Slope]) -> Vec<Judged> {
    let p = data.plan.primary;
    let churn = data.plan.workload.kind() == crate::results::matrix::WorkloadKind::Churn;
    let cpu = cpu_pick(churn);
    let sample_of = |rows: &[(String, Vec<(usize, f64)>)], m: &str| {
        rows.iter()
            .find(|r| r.0 == m)
            .and_then(|r| Sample::new(&r.1))
    };
    let primary = summary::rounds(data, n, &|m| m.primary(p));
    let p99 = summary::rounds(data, n, &|m| m.latency_p99_us);
    let cpus = summary::rounds(data, n, &|m| cpu(m));
    primary
        .iter()
        .map(|(model, _)| Judged {
            model: model.clone(),
            primary: sample_of(&primary, model),
            p99: (p != crate::results::matrix::Primary::Latency)
                .then(|| sample_of(&p99, model))
                .flatten(),
            cpu: sample_of(&cpus, model),
            memory: slopes
                .iter()
                .find(|s| s.model == *model)
                .and_then(|s| s.fit.as_ref())
                .map(|f| (f.slope, f.slope_lo, f.slope_hi)),
            idle: data
                .cells
                .iter()
                .filter(|c| c.cell.model == *model && c.cell.connections == n)
                .filter(|c| c.status == Status::Ok)
                .filter_map(|c| c.metrics().server_idle_cpus)
                .collect(),
        })
        .collect()
}

/// `a` beats `b` on figure `f`, beyond noise and margin: how `b` falls
/// short, in words; `None` when it does not.
fn beats(data: &RunData, f: Aspect, a: &Judged, b: &Judged) -> Option<String> {
    let margin = data.plan.rule();
    let p = data.plan.primary;
    // How many times worse b is than a, when lower is better.
    let worse_lower = |x: &Option<Sample>, y: &Option<Sample>| -> Option<Comparison> {
        let c = paired::compare(y.as_ref()?, x.as_ref()?, margin);
        c.larger().then_some(c)
    };
    match f {
        Aspect::Primary => {
            let (x, y) = (a.primary.as_ref()?, b.primary.as_ref()?);
            let c = if p.higher_is_better() {
                paired::compare(x, y, margin)
            } else {
                paired::compare(y, x, margin)
            };
            c.larger().then(|| {
                let (worse, _) = summary::words(p.higher_is_better());
                format!("{}× {worse} than {}", summary::times(c.ratio), a.model)
            })
        }
        Aspect::P99 => worse_lower(&a.p99, &b.p99)
            .map(|c| format!("p99 {}× {}'s", summary::times(c.ratio), a.model)),
        Aspect::Cpu => worse_lower(&a.cpu, &b.cpu)
            .map(|c| format!("server CPU {}× {}'s", summary::times(c.ratio), a.model)),
        Aspect::Memory => {
            let ((xa, _, hi_a), (xb, lo_b, _)) = (a.memory?, b.memory?);
            (lo_b > hi_a && xb - xa > MEMORY_FLOOR_KIB).then(|| {
                format!(
                    "{}/connection against {}'s {}",
                    crate::present::units::kib(xb),
                    a.model,
                    crate::present::units::kib(xa.max(0.0))
                )
            })
        }
        Aspect::Idle => {
            let lo_b = b.idle.iter().copied().reduce(f64::min)?;
            let hi_a = a.idle.iter().copied().reduce(f64::max)?;
            let pct = cpu_pct;
            (lo_b - hi_a > IDLE_FLOOR_CPUS).then(|| {
                format!(
                    "{} when idle against {}'s {}",
                    if lo_b >= 0.9 {
                        "a full CPU".to_string()
                    } else {
                        format!("{} of a CPU", pct(lo_b))
                    },
                    a.model,
                    pct(hi_a.max(0.0))
                )
            })
        }
    }
}

/// A share of one CPU for people: `0 %`, `<1 %`, `96.9 %`.
fn cpu_pct(v: f64) -> String {
    let p = v * 100.0;
    if p <= 0.0 {
        "0 %".into()
    } else if p < 1.0 {
        "<1 %".into()
    } else {
        format!("{} %", sig3(p))
    }
}

const FIGURES: [Aspect; 5] = [
    Aspect::Primary,
    Aspect::P99,
    Aspect::Cpu,
    Aspect::Memory,
    Aspect::Idle,
];

/// The dominance verdict at one count: the models not dominated, then
/// each other one with the model that dominates it and how.
fn dominance(
    data: &RunData,
    all: &[Judged],
    order: &[String],
) -> (Vec<String>, Vec<(String, String)>) {
    let by_name = |m: &str| all.iter().find(|j| j.model == m);
    let ordered: Vec<&Judged> = order.iter().filter_map(|m| by_name(m)).collect();
    let dominates = |a: &Judged, b: &Judged| -> Vec<String> {
        let wins: Vec<String> = FIGURES
            .iter()
            .filter_map(|&f| beats(data, f, a, b))
            .collect();
        if wins.is_empty() || FIGURES.iter().any(|&f| beats(data, f, b, a).is_some()) {
            Vec::new()
        } else {
            wins
        }
    };
    let free: Vec<&Judged> = ordered
        .iter()
        .copied()
        .filter(|b| {
            !ordered
                .iter()
                .any(|a| a.model != b.model && !dominates(a, b).is_empty())
        })
        .collect();
    let out: Vec<(String, String)> = ordered
        .iter()
        .filter(|b| !free.iter().any(|f| f.model == b.model))
        .filter_map(|b| {
            // Named after a model that is itself not dominated, when one
            // dominates it, else after any that does.
            let why = free
                .iter()
                .chain(ordered.iter())
                .map(|a| dominates(a, b))
                .find(|w| !w.is_empty())?;
            Some((b.model.clone(), why.join(", ")))
        })
        .collect();
    (free.iter().map(|j| j.model.clone()).collect(), out)
}

/// The best group by a repeated figure, in words: `uring (epoll
/// equivalent; sigio not told apart)`; `None` when no model has it.
fn best_by(
    data: &RunData,
    n: usize,
    pick: &dyn Fn(&Metrics) -> Option<f64>,
    higher_is_better: bool,
) -> Option<String> {
    let rows = summary::rank(data, n, summary::rounds(data, n, pick), higher_is_better);
    let top = rows.first()?;
    if top.rank.is_none() {
        return Some(format!("{} (untested)", top.model));
    }
    let summary::TopGroup {
        equivalent,
        ahead,
        open,
    } = summary::top_group(&rows);
    let mut more = Vec::new();
    if !equivalent.is_empty() {
        more.push(format!("{} equivalent", and_list(&equivalent)));
    }
    if !ahead.is_empty() {
        more.push(format!("{} ahead by the paired rounds", and_list(&ahead)));
    }
    if !open.is_empty() {
        more.push(format!("{} not told apart", and_list(&open)));
    }
    Some(if more.is_empty() {
        top.model.clone()
    } else {
        format!("{} ({})", top.model, more.join("; "))
    })
}

/// The models no other one beats on a figure of its own (memory, idle
/// CPU): `every model but busy`, or the list.
fn least(data: &RunData, all: &[Judged], f: Aspect, order: &[String]) -> Option<String> {
    let has = |j: &Judged| match f {
        Aspect::Memory => j.memory.is_some(),
        _ => !j.idle.is_empty(),
    };
    let with: Vec<&Judged> = order
        .iter()
        .filter_map(|m| all.iter().find(|j| j.model == *m))
        .filter(|j| has(j))
        .collect();
    if with.len() < 2 {
        return None;
    }
    let (best, rest): (Vec<&Judged>, Vec<&Judged>) = with
        .iter()
        .partition(|b| !with.iter().any(|a| beats(data, f, a, b).is_some()));
    let names = |v: &[&Judged]| -> Vec<String> { v.iter().map(|j| j.model.clone()).collect() };
    Some(if rest.is_empty() {
        "every model alike".into()
    } else if rest.len() * 2 < with.len() {
        format!("every model but {}", and_list(&names(&rest)))
    } else {
        and_list(&names(&best))
    })
}

/// The lines under one count's table: the best by each figure, then who
/// is not dominated and why each other model is out.
/// `user`: every model's memory slope ([`memory::slopes`]).
fn judgement(data: &RunData, n: usize, rows: &[Ranked], user: &[memory::Slope]) -> Vec<String> {
    let order: Vec<String> = rows.iter().map(|r| r.model.clone()).collect();
    if rows.iter().all(|r| r.rank.is_none()) {
        return vec!["One run each: no model is shown to beat another (untested).".into()];
    }
    let all = judged(data, n, user);
    let churn = data.plan.workload.kind() == crate::results::matrix::WorkloadKind::Churn;
    let by = summary::ranked_by(data, n);
    let mut best = vec![format!(
        "{}: {}",
        by.label(&data.plan),
        summary::leaders(rows, data.plan.margin)
            .split(';')
            .next()
            .unwrap_or("")
            .trim_end_matches(" is best")
    )];
    if data.plan.primary != crate::results::matrix::Primary::Latency {
        if let Some(b) = best_by(data, n, &|m| m.latency_p99_us, false) {
            best.push(format!("p99: {b}"));
        }
    }
    match by {
        // Ranked by the server's CPU: throughput, the share each won, beside it.
        RankedBy::ServerCpu => {
            let p = data.plan.primary;
            if let Some(b) = best_by(data, n, &|m| m.primary(p), p.higher_is_better()) {
                best.push(format!(
                    "{} (the share of the busy CPUs each won): {b}",
                    data.plan.figure_label()
                ));
            }
        }
        RankedBy::Primary => {
            if let Some(b) = best_by(data, n, &|m| cpu_pick(churn)(m), false) {
                best.push(format!(
                    "server CPU/{}: {b}",
                    if churn { "connection" } else { "message" }
                ));
            }
        }
    }
    if let Some(b) = least(data, &all, Aspect::Memory, &order) {
        best.push(format!("memory/connection: {b}"));
    }
    if let Some(b) = least(data, &all, Aspect::Idle, &order) {
        best.push(format!("idle CPU: {b}"));
    }
    let (free, out) = dominance(data, &all, &order);
    let mut lines = vec![format!("Best by {}.", best.join(" · by "))];
    let mut line = if free.is_empty() {
        // Each call is a pair's, beyond noise, and they need not chain:
        // a may beat b, b c and c a, each on a figure of its own.
        "Not dominated: none (each model is beaten on a figure by another that it beats on none; pairwise calls beyond noise need not chain).".to_string()
    } else {
        format!("Not dominated: {}.", and_list(&free))
    };
    if !out.is_empty() {
        let each: Vec<String> = out.iter().map(|(m, why)| format!("{m} ({why})")).collect();
        line += &format!(" Out: {}.", each.join("; "));
    }
    lines.push(line);
    let models: Vec<&str> = order.iter().map(String::as_str).collect();
    lines.extend(super::bound::above_text(data, n, &models));
    lines
}

/// One model's place at one count (and work profile) in the ranking,
/// with what it costs there: a row of the ranking's table and of
/// results.json's `summary`, which hold the same values (the table is
/// rendered from these, [`ranking_rows`]).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Standing {
    pub model: String,
    pub connections: usize,
    /// The work profile; absent without a work axis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<String>,
    /// The figure that ranked the models at this count over its runs: the
    /// experiment's own, or the server's CPU per message (µs) where
    /// `ranked_by` says so.
    pub primary: Summary,
    /// What ranked the models at this count: absent for the experiment's
    /// figure, `server_cpu` where the machine was busy outside the run.
    #[serde(default, skip_serializing_if = "RankedBy::is_primary")]
    pub ranked_by: RankedBy,
    /// Ranked by the server's CPU: the experiment's figure (throughput)
    /// over its runs, which measured the share of the busy CPUs the model
    /// won.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<Summary>,
    /// Its group's rank; `null` when untested.
    pub rank: Option<usize>,
    /// Its group's first model.
    pub group_leader: String,
    /// How many times worse than the first row; `null` for that row.
    pub versus_best: Option<Comparison>,
    /// How many times worse than its group's first; `null` for that one.
    pub versus_leader: Option<Comparison>,
    /// For a group's first model below the top: what placed it there.
    pub placed_by: Option<summary::Beaten>,
    /// Disturbed runs that were run again (not counted).
    pub repeated: usize,
    /// Runs counted although disturbed.
    pub disturbed: usize,
    /// Under work: the throughput the work allows, and the term that set
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<crate::results::cell::Bound>,
    /// Throughput over that bound (`null`: nothing to set against it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_share: Option<Option<f64>>,
    /// Above the bound beyond noise and margin (a defect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above_bound: Option<bool>,
    /// What it costs there, as the table's columns give it.
    pub costs: Costs,
}

/// What a model costs at one count, over its measured runs: each `null`
/// where it has no figure (a `--target`'s server runs outside c10k, and
/// is not observed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Costs {
    /// The median p99 latency, µs.
    pub p99_us: Option<f64>,
    /// The server's CPU per message (per connection under churn).
    pub server_cpu: Option<RunsCost>,
    /// The server's user memory (PSS) per connection, KiB: its slope over
    /// the counts, or without one what its cells say.
    pub memory_per_connection: Option<memory::PerConnection>,
    /// The server's CPU while idle, in CPUs: the median.
    pub idle_cpus: Option<f64>,
    /// What limited it, in words (`server`, `client (a lower bound)`,
    /// `mixed: server 2, client 1`), from its runs' verdicts.
    pub limited_by: Option<String>,
}

impl Standing {
    /// Its place, as the ranking's words read it.
    fn ranked(&self) -> Ranked {
        Ranked {
            model: self.model.clone(),
            summary: self.primary,
            rank: self.rank,
            leader: self.group_leader.clone(),
            versus_best: self.versus_best,
            versus_leader: self.versus_leader,
            placed_by: self.placed_by.clone(),
            repeated: self.repeated,
            disturbed: self.disturbed,
        }
    }
}

/// Every count's standings in `data` (one work profile's part), best
/// first, each with its costs: what the ranking's tables print and
/// results.json's `summary` holds.
pub fn standings(data: &RunData) -> Vec<(usize, Vec<Standing>)> {
    standings_with(data, &memory::slopes(data, Kind::User))
}

/// [`standings`], with `user` the memory slopes of [`Kind::User`].
fn standings_with(data: &RunData, user: &[memory::Slope]) -> Vec<(usize, Vec<Standing>)> {
    let churn = data.plan.workload.kind() == crate::results::matrix::WorkloadKind::Churn;
    let deltas = memory::deltas(data, Kind::User);
    // A part of a run with a work axis has its one profile.
    let work = data.plan.work.first().map(ToString::to_string);
    summary::standings(data)
        .into_iter()
        .map(|(n, rows)| {
            let ranked_by = summary::ranked_by(data, n);
            let out = rows
                .into_iter()
                .map(|r| {
                    let cells: Vec<&CellResult> = data
                        .cells
                        .iter()
                        .filter(|c| c.cell.model == r.model && c.cell.connections == n)
                        .collect();
                    let median_summary = |pick: &dyn Fn(&Metrics) -> Option<f64>| {
                        let v: Vec<f64> = cells
                            .iter()
                            .filter(|c| c.status == Status::Ok)
                            .filter_map(|c| pick(&c.metrics()))
                            .filter(|v| v.is_finite())
                            .collect();
                        Summary::of(&v)
                    };
                    let median = |pick: &dyn Fn(&Metrics) -> Option<f64>| {
                        median_summary(pick).map(|s| s.median)
                    };
                    let server_cpu = if churn {
                        let v: Vec<f64> = cells
                            .iter()
                            .filter(|c| c.status == Status::Ok)
                            .filter_map(|c| c.metrics().server_cpu_per_connection_us)
                            .filter(|v| v.is_finite())
                            .collect();
                        Summary::of(&v).map(|s| RunsCost {
                            us: Some(s.median),
                            measured: s.n,
                            runs: s.n,
                            unmeasurable: None,
                        })
                    } else {
                        RunsFigure::of(&cells, CellResult::server_cpu_per_message).map(|f| f.cost())
                    };
                    let share = super::bound::share(data, &r.model, n);
                    Standing {
                        connections: n,
                        work: work.clone(),
                        primary: r.summary,
                        ranked_by,
                        share: (!ranked_by.is_primary())
                            .then(|| median_summary(&|m| m.primary(data.plan.primary)))
                            .flatten(),
                        rank: r.rank,
                        group_leader: r.leader,
                        versus_best: r.versus_best,
                        versus_leader: r.versus_leader,
                        placed_by: r.placed_by,
                        repeated: r.repeated,
                        disturbed: r.disturbed,
                        bound: share.as_ref().map(|b| b.bound.clone()),
                        bound_share: share.as_ref().map(|b| b.share),
                        above_bound: share.as_ref().map(|b| b.above.is_some()),
                        costs: Costs {
                            p99_us: median(&|m| m.latency_p99_us),
                            server_cpu,
                            memory_per_connection: memory::PerConnection::of(
                                user,
                                &deltas,
                                &r.model,
                                Some(n),
                            ),
                            idle_cpus: median(&|m| m.server_idle_cpus),
                            limited_by: limit_note(&cells),
                        },
                        model: r.model,
                    }
                })
                .collect();
            (n, out)
        })
        .collect()
}

/// The ranking's table at one count from its standings (best first) and
/// the plan: its header and rows, a function of what results.json holds
/// (`plan` and `summary`) alone. Columns no model has a figure for are
/// left out, and the p99 when it is the ranked figure.
pub fn ranking_rows(plan: &RunPlan, rows: &[Standing]) -> (Vec<String>, Vec<Vec<String>>) {
    let p = plan.primary;
    let by = rows.first().map_or(RankedBy::Primary, |r| r.ranked_by);
    let churn = plan.workload.kind() == crate::results::matrix::WorkloadKind::Churn;
    let mut header = vec![
        "#".to_string(),
        "model".to_string(),
        by.label(plan).to_string(),
        "vs best".to_string(),
        "p99 latency".to_string(),
        match by {
            RankedBy::ServerCpu => format!("{} (share)", plan.figure_label()),
            RankedBy::Primary if churn => "server CPU/conn".to_string(),
            RankedBy::Primary => "server CPU/msg".to_string(),
        },
        "memory/conn".to_string(),
        "idle CPU".to_string(),
        "of bound".to_string(),
        "limited by".to_string(),
        "at its defaults".to_string(),
    ];
    // Each column in one unit.
    let p99_scale = Scale::micros(rows.iter().filter_map(|r| r.costs.p99_us));
    let cpu_scale = Scale::micros(
        rows.iter()
            .filter_map(|r| r.costs.server_cpu.as_ref().and_then(|c| c.us)),
    );
    let mem_scale = Scale::kib(
        rows.iter()
            .filter_map(|r| r.costs.memory_per_connection.map(|m| m.magnitude())),
    );
    let primary = by.scale(plan, rows.iter().map(|r| r.primary.median));
    let mut body: Vec<Vec<String>> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let ranked = row.ranked();
        let dash = || "–".to_string();
        // A --target's server runs outside c10k: nothing of it is seen.
        let unseen = || {
            if plan.targets.iter().any(|t| t.name == row.model) {
                "not observed".to_string()
            } else {
                dash()
            }
        };
        let c = &row.costs;
        let of_bound = match (&row.bound, row.bound_share.flatten()) {
            (Some(b), Some(v)) => format!(
                "{} % of {}/s{}",
                sig3(v * 100.0),
                format_count(b.per_second),
                if row.above_bound == Some(true) {
                    " ⚠ a defect"
                } else {
                    ""
                }
            ),
            _ => dash(),
        };
        body.push(vec![
            summary::rank_text(&ranked),
            tuned_of(plan, row).map_or_else(|| row.model.clone(), |t| t.shown()),
            primary(row.primary.median),
            summary::versus_text(by.words(plan), &ranked, i == 0),
            c.p99_us.map(|v| p99_scale.format(v)).unwrap_or_else(dash),
            match by {
                RankedBy::ServerCpu => row
                    .share
                    .map(|s| summary::primary_scale(p, [s.median])(s.median))
                    .unwrap_or_else(dash),
                RankedBy::Primary => c
                    .server_cpu
                    .as_ref()
                    .map(|f| f.text(&cpu_scale))
                    .unwrap_or_else(unseen),
            },
            c.memory_per_connection
                .map(|m| m.text(&mem_scale, false))
                .unwrap_or_else(unseen),
            c.idle_cpus.map(cpu_pct).unwrap_or_else(dash),
            of_bound,
            c.limited_by.clone().unwrap_or_else(dash),
            at_defaults(plan, row).unwrap_or_else(dash),
        ]);
    }
    let keep: Vec<bool> = (0..header.len())
        .map(|i| {
            (i < 4 || body.iter().any(|r| r[i] != "–"))
                && !(i == 4 && p == crate::results::matrix::Primary::Latency)
        })
        .collect();
    header = only(header, &keep);
    (header, body.into_iter().map(|r| only(r, &keep)).collect())
}

/// One table per connection count: the best first, then every model with
/// its cost ([`ranking_rows`]), and under it the verdict on every figure;
/// the last carries the notes.
pub fn tables(data: &RunData) -> Vec<Table> {
    let user = memory::slopes(data, Kind::User);
    let mut out = Vec::new();
    for (n, rows) in standings_with(data, &user) {
        let ranked: Vec<Ranked> = rows.iter().map(Standing::ranked).collect();
        let (header, body) = ranking_rows(&data.plan, &rows);
        out.push(Table {
            title: title(data, n, &ranked),
            header,
            rows: body,
            notes: judgement(data, n, &ranked, &user),
            fold: true,
        });
    }
    if let Some(last) = out.last_mut() {
        last.notes.extend(notes(data));
    }
    out
}

/// A model `--tune` moved off its defaults at `n`: its defaults' figure
/// in the search's rounds, and what the settings kept gave beside it
/// (`1,820 (tuned 44.1×)`).
fn at_defaults(plan: &RunPlan, row: &Standing) -> Option<String> {
    let t = tuned_of(plan, row).filter(|t| t.changed())?;
    let figure = plan.primary.format(t.default_figure?);
    Some(match t.ratio {
        Some(r) => format!("{figure} (tuned {}×)", sig3(r)),
        None => figure,
    })
}

/// What `--tune` kept for `row`'s model at its count and work profile.
fn tuned_of<'p>(plan: &'p RunPlan, row: &Standing) -> Option<&'p crate::results::tuned::Tuned> {
    let profile = |w: Option<String>| w.unwrap_or_else(|| "none".into());
    plan.tuned.iter().find(|t| {
        t.model == row.model
            && t.connections == row.connections
            && profile(t.work.as_ref().map(ToString::to_string)) == profile(row.work.clone())
    })
}

/// The cells of `row` whose column is kept.
fn only(row: Vec<String>, keep: &[bool]) -> Vec<String> {
    row.into_iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| c)
        .collect()
}

/// `10 connections: epoll is best; poll equivalent to it (±5 %) (round
/// trips/s, higher is better)`.
fn title(data: &RunData, n: usize, rows: &[Ranked]) -> String {
    let by = summary::ranked_by(data, n);
    format!(
        "{} {}: {} ({}, {} is better)",
        format_count(n as f64),
        data.plan.size_label,
        summary::leaders(rows, data.plan.margin),
        by.label(&data.plan),
        if by.higher_is_better(&data.plan) {
            "higher"
        } else {
            "lower"
        }
    )
}

/// The rule, what the cost columns mean, and what `--runs auto` could
/// not settle.
fn notes(data: &RunData) -> Vec<String> {
    let mut notes = vec![summary::rule(&data.plan)];
    notes.push(format!(
        "Not dominated: no other model beats it on one figure (beyond noise and margin) \
         without losing on another; memory differs past disjoint intervals and {} per \
         connection, idle CPU past {} % of a CPU.",
        crate::present::units::kib(MEMORY_FLOOR_KIB),
        sig3(IDLE_FLOOR_CPUS * 100.0)
    ));
    notes.push(
        "Memory/conn: the slope of the server's anonymous PSS over the run's connection \
         counts (≤: no cost shown, at most that; no cost seen: the interval is wholly below \
         zero). CPU/msg: the server's tree over the measured window (a burst's rounds) per \
         message, or in resident slots over the whole slot, read while the server sleeps \
         (schedstat, to the nanosecond), per message; 'unresolved' where the kernel's accounting \
         cannot resolve it in the window; \
         'not measurable' above the window's wall time on the server's CPUs or the whole \
         cell's CPU. Idle CPU: the server with no connection, over 200 ms after it was ready \
         (each count's first run)."
            .to_string(),
    );
    if data.cells.iter().any(|c| c.work_done.is_some()) {
        notes.push(super::bound::NOTE.to_string());
    }
    notes.extend(super::settled::unsettled_note(&data.plan, &data.cells));
    notes.extend(queue_note(data));
    if data.plan.tune.is_some() {
        notes.push(
            "Each model ran with what its --tune search kept, named beside it; at its defaults: \
             its figure with the run's defaults in the search's paired rounds, and what the \
             settings kept gave over them there (the tuning table has every search)."
                .to_string(),
        );
    }
    notes
}

/// A worker's local run queue in tokio's multi-thread scheduler.
const LOCAL_QUEUE: usize = 256;

/// Why a model on a scheduler with a global queue (tokio) has a long tail
/// past [`LOCAL_QUEUE`] connections, when the run has one at its default
/// interval there: measured, not guessed
/// (docs/results/2026-11-28-tokio-tail.md).
fn queue_note(data: &RunData) -> Option<String> {
    let names: Vec<&str> = data
        .plan
        .models
        .iter()
        .filter(|m| {
            data.plan.model(m).is_some_and(|(model, settings)| {
                model.has_global_queue() && settings.global_queue_interval.is_none()
            })
        })
        .map(String::as_str)
        .collect();
    let past = data.plan.connections.iter().any(|&n| n > LOCAL_QUEUE);
    (past && !names.is_empty()).then(|| {
        format!(
            "{}: past {LOCAL_QUEUE} connections its p99 is tokio's scheduler's: ready tasks beyond a worker's {LOCAL_QUEUE}-slot local queue wait in the global queue, which the worker reads only every so many tasks (tuned long for short polls). tokio's own echo example has the same tail; --global-queue-interval 1 brings it to a plain epoll loop's, for 12–16 % of the throughput (docs/results/2026-11-28-tokio-tail.md).",
            and_list(&names)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokios_tail_past_its_local_queue_is_explained_where_it_applies() {
        let data = |models: &[&str], n: usize| {
            let mut plan = crate::results::matrix::RunPlan::example(models, &[n], 2);
            plan.variants.push(crate::results::matrix::Variant {
                name: "tokio@gq1".into(),
                model: "tokio".into(),
                settings: crate::server::settings::Settings {
                    global_queue_interval: Some(1),
                    ..Default::default()
                },
            });
            RunData::example(plan)
        };
        let note = queue_note(&data(&["epoll", "tokio"], 1000)).expect("tokio at 1,000");
        assert!(note.starts_with("tokio: past 256 connections"), "{note}");
        // Below the local queue, or only at an interval of 1, or no tokio.
        assert_eq!(queue_note(&data(&["epoll", "tokio"], 100)), None);
        assert_eq!(queue_note(&data(&["epoll", "tokio@gq1"], 1000)), None);
        assert_eq!(queue_note(&data(&["epoll", "poll"], 1000)), None);
    }

    #[test]
    fn the_limit_of_most_runs_is_named() {
        assert_eq!(limit_note(&[]), None);
        let cell = |verdict: LimitedBy, interference: bool| {
            let mut c: CellResult = serde_json::from_value(serde_json::json!({
                "version": 1, "id": "m/c1/r1", "index": 0, "model": "m", "connections": 1,
                "run": 1, "status": "ok", "reason": null, "started_unix": 0.0,
                "wall_seconds": 0.0, "server": null, "kernel_before": null,
                "kernel_loaded": null, "load": null, "per_connection_csv": null,
                "messages_per_connection": null
            }))
            .expect("a cell");
            let mut load = crate::client::report::example(1, 100, 6400);
            load.limits.verdict = verdict;
            load.limits.why = "figures".into();
            load.limits.interference = interference;
            c.load = Some(load);
            c
        };
        let (a, b, c) = (
            cell(LimitedBy::Client, false),
            cell(LimitedBy::Client, true),
            cell(LimitedBy::Server, false),
        );
        assert_eq!(
            limit_note(&[&a, &b, &c]).as_deref(),
            Some("client (a lower bound) in 2 of 3 runs; interference in 1 of 3")
        );
        assert_eq!(limit_note(&[&c]).as_deref(), Some("server"));
        // A late open loop's latency is at most the server's.
        let mut e = cell(LimitedBy::Client, false);
        if let Some(l) = e.load.as_mut() {
            l.open_loop = Some(crate::client::report::OpenLoop {
                target_rate: 1000.0,
                achieved_rate: 100.0,
                missed: 0,
                latency_uncorrected_us: Default::default(),
                send_lag_us: Default::default(),
                interval_us: 0.0,
            });
        }
        assert_eq!(
            limit_note(&[&e]).as_deref(),
            Some("client (an upper bound)")
        );
        let d = cell(LimitedBy::Both, false);
        assert_eq!(
            limit_note(&[&a, &c, &d]).as_deref(),
            Some("mixed: client 1, server 1, both 1")
        );
    }

    use crate::results::dir::Figures;

    fn judged_at_10(data: &RunData) -> Vec<Judged> {
        judged(data, 10, &memory::slopes(data, Kind::User))
    }

    /// Three rounds of each figure, wobbling by ±1 %.
    fn steady(throughput: f64, p99_us: f64, cpu_s: f64, idle: f64) -> Vec<Figures> {
        [1.0, 1.01, 0.99]
            .iter()
            .map(|w| Figures {
                throughput: throughput * w,
                p99_us: p99_us * w,
                server_cpu_s: cpu_s * w,
                idle_cpus: Some(idle),
            })
            .collect()
    }

    #[test]
    fn the_models_not_dominated_are_named_with_why_each_other_is_out() {
        let data = RunData::example_of(&[
            ("epoll", steady(200_000.0, 10_000.0, 0.5, 0.0)),
            // As fast, a tail ten times longer.
            ("tokio", steady(200_500.0, 100_000.0, 0.5, 0.0)),
            // As fast, a whole CPU when idle.
            ("busy", steady(199_000.0, 10_000.0, 0.5, 1.0)),
            // Slower, but the shortest tail: not dominated.
            ("threads", steady(120_000.0, 5_000.0, 0.5, 0.0)),
            // Slower and no better at anything.
            ("hybrid", steady(70_000.0, 20_000.0, 0.9, 0.0)),
        ]);
        let order: Vec<String> = summary::standings(&data)[&10]
            .iter()
            .map(|r| r.model.clone())
            .collect();
        let (free, out) = dominance(&data, &judged_at_10(&data), &order);
        assert_eq!(free, ["epoll", "threads"], "{out:?}");
        let why = |m: &str| out.iter().find(|o| o.0 == m).map(|o| o.1.clone()).unwrap();
        assert_eq!(why("tokio"), "p99 10× epoll's");
        assert_eq!(why("busy"), "a full CPU when idle against epoll's 0 %");
        assert!(why("hybrid").starts_with("2.86× slower than epoll, p99 2.00× epoll's"));
        // The lines under the table say the same.
        let lines = judgement(
            &data,
            10,
            &summary::standings(&data)[&10],
            &memory::slopes(&data, Kind::User),
        );
        assert!(lines[0].starts_with("Best by round trips/s: "), "{lines:?}");
        assert!(lines[0].contains("by p99: threads"), "{lines:?}");
        assert!(
            lines[0].contains("by idle CPU: every model but busy"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("Not dominated: epoll and threads. Out: "),
            "{lines:?}"
        );
    }

    #[test]
    fn noise_dominates_nothing() {
        // b's tail swings across a's: nothing is decided, nothing is out.
        let mut b = steady(200_000.0, 10_000.0, 0.5, 0.0);
        for (f, p) in b.iter_mut().zip([3_000.0, 30_000.0, 9_000.0]) {
            f.p99_us = p;
        }
        let data = RunData::example_of(&[("a", steady(200_000.0, 10_000.0, 0.5, 0.0)), ("b", b)]);
        let order = vec!["a".to_string(), "b".to_string()];
        let (free, out) = dominance(&data, &judged_at_10(&data), &order);
        assert_eq!(free, ["a", "b"]);
        assert!(out.is_empty());
    }

    #[test]
    fn one_run_dominates_nothing() {
        let one = |t: f64| {
            vec![Figures {
                throughput: t,
                p99_us: 10.0,
                ..Default::default()
            }]
        };
        let data = RunData::example_of(&[("a", one(200_000.0)), ("b", one(100_000.0))]);
        let lines = judgement(
            &data,
            10,
            &summary::standings(&data)[&10],
            &memory::slopes(&data, Kind::User),
        );
        assert_eq!(
            lines,
            ["One run each: no model is shown to beat another (untested)."]
        );
    }
}
