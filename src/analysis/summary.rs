//! The ranking a person reads at the end of a run, in the manner of
//! hyperfine: at each connection count, the models by median of the
//! experiment's figure, best first, each with its spread over the repeats
//! and how it compares with the best: faster or slower beyond noise and
//! margin, equivalent within the margin, or inconclusive, with what would
//! settle it ([`crate::stats::paired`] holds the rules). The heading, the
//! rank column and every row say the same thing. Costs a comparison per
//! pair of models and connection count (microseconds).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::disturbed::{self, Tally};
use crate::export::table::Table;
use crate::present::units::{format_count, sig3};
use crate::present::words::and_list;
use crate::results::cell::{Metrics, Status};
use crate::results::dir::RunData;
use crate::stats::paired::{self, Comparison, Outcome, Sample};
use crate::stats::Summary;

/// The values of one figure, each with its round, of every model measured
/// at count `n`, in plan order of models (the cells that count: a disturbed
/// run's repeat, not the run; not a slot the hypervisor stole from in
/// every try, [`disturbed::left_out`]).
pub(crate) fn rounds(
    data: &RunData,
    n: usize,
    pick: &dyn Fn(&Metrics) -> Option<f64>,
) -> Vec<(String, Vec<(usize, f64)>)> {
    let out = disturbed::left_out(data);
    crate::results::series::models(data)
        .into_iter()
        .filter_map(|model| {
            let values: Vec<(usize, f64)> = data
                .cells
                .iter()
                .filter(|c| c.cell.model == model && c.cell.connections == n)
                .filter(|c| c.status == Status::Ok && !out.contains(&c.cell.id))
                .filter_map(|c| pick(&c.metrics()).map(|v| (c.cell.run, v)))
                .filter(|(_, v)| v.is_finite())
                .collect();
            (!values.is_empty()).then_some((model, values))
        })
        .collect()
}

/// A model that placed another in a lower group: it is better beyond
/// noise and margin.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Beaten {
    pub by: String,
    /// How many times worse the placed model is.
    pub comparison: Comparison,
}

/// One model's place at one connection count.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Ranked {
    pub model: String,
    pub summary: Summary,
    /// Its group's rank; `None` when untested (a single run, or no
    /// positive value).
    pub rank: Option<usize>,
    /// Its group's first model.
    pub leader: String,
    /// How many times worse than the first row, with its interval; `None`
    /// for the first row.
    pub versus_best: Option<Comparison>,
    /// How many times worse than its group's first model; `None` for that
    /// model.
    pub versus_leader: Option<Comparison>,
    /// For a group's first model below the top: what placed it there.
    pub placed_by: Option<Beaten>,
    /// Runs disturbed from outside that were run again (not counted).
    pub repeated: usize,
    /// Runs counted although disturbed (their repeats ran out).
    pub disturbed: usize,
}

impl Ranked {
    /// Shares the top group without being shown equivalent to its first.
    pub(crate) fn unsettled(&self) -> bool {
        self.versus_leader
            .is_some_and(|c| c.outcome != Outcome::Equivalent)
    }
}

/// The models at one count ranked by one figure, best first.
pub(crate) fn rank(
    data: &RunData,
    n: usize,
    values: Vec<(String, Vec<(usize, f64)>)>,
    higher_is_better: bool,
) -> Vec<Ranked> {
    let tallies = disturbed::tallies(data);
    let tally = |m: &str| {
        tallies
            .get(&(m.to_string(), n))
            .copied()
            .unwrap_or_default()
    };
    let mut testable = Vec::new();
    let mut samples = Vec::new();
    let mut rest = Vec::new();
    for (model, values) in values {
        let plain: Vec<f64> = values.iter().map(|v| v.1).collect();
        let Some(summary) = Summary::of(&plain) else {
            continue;
        };
        let Tally { repeated, kept, .. } = tally(&model);
        match Sample::new(&values) {
            Some(s) => {
                testable.push((model, summary, repeated, kept));
                samples.push(s);
            }
            None => rest.push(Ranked {
                leader: model.clone(),
                model,
                summary,
                rank: None,
                versus_best: None,
                versus_leader: None,
                placed_by: None,
                repeated,
                disturbed: kept,
            }),
        }
    }
    let mut out: Vec<Ranked> = paired::standings(&samples, higher_is_better, data.plan.rule())
        .into_iter()
        .map(|st| {
            let (model, summary, repeated, disturbed) = testable[st.index].clone();
            Ranked {
                model,
                summary,
                rank: st.rank,
                leader: testable[st.leader].0.clone(),
                versus_best: st.versus_best,
                versus_leader: st.versus_leader,
                placed_by: st.placed_by.map(|(i, comparison)| Beaten {
                    by: testable[i].0.clone(),
                    comparison,
                }),
                repeated,
                disturbed,
            }
        })
        .collect();
    out.extend(rest);
    out
}

/// CPUs' worth of work outside the run, on average over a count's slots,
/// past which the models there are ranked by the server's CPU per message
/// instead of throughput ([`ranked_by`]): a quarter of a CPU. On this
/// project's 2-CPU machine at rest the processes outside used 0.01–0.1;
/// one `yes` took 1.0, and the model that won most of the contended CPU
/// then led by throughput. Why the line is there: docs/method.md.
pub(crate) const BUSY_OUTSIDE: f64 = 0.25;

/// What the models at one count are ranked by.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RankedBy {
    /// The experiment's figure (throughput, time, accept rate, or an open
    /// loop's p99).
    #[default]
    Primary,
    /// The server's CPU per message, lower is better: the machine was busy
    /// outside the run, so throughput measured how much of the contended
    /// CPU each server won as much as what it costs; what a message costs
    /// the server does not depend on its neighbours.
    ServerCpu,
}

impl RankedBy {
    pub(crate) fn is_primary(&self) -> bool {
        *self == RankedBy::Primary
    }

    pub(crate) fn higher_is_better(self, plan: &crate::results::matrix::RunPlan) -> bool {
        match self {
            RankedBy::Primary => plan.primary.higher_is_better(),
            RankedBy::ServerCpu => false,
        }
    }

    /// What it is, for headings.
    pub(crate) fn label(self, plan: &crate::results::matrix::RunPlan) -> &'static str {
        match self {
            RankedBy::Primary => plan.figure_label(),
            RankedBy::ServerCpu => "server CPU/msg",
        }
    }

    /// The words for "worse" and "better" under it.
    pub(crate) fn words(
        self,
        plan: &crate::results::matrix::RunPlan,
    ) -> (&'static str, &'static str) {
        match self {
            RankedBy::Primary => words(plan.primary.higher_is_better()),
            RankedBy::ServerCpu => ("costlier", "cheaper"),
        }
    }

    /// How a column of it is written ([`primary_scale`]; CPU in µs).
    pub(crate) fn scale(
        self,
        plan: &crate::results::matrix::RunPlan,
        values: impl IntoIterator<Item = f64>,
    ) -> Box<dyn Fn(f64) -> String> {
        match self {
            RankedBy::Primary => primary_scale(plan.primary, values),
            RankedBy::ServerCpu => primary_scale(crate::results::matrix::Primary::Latency, values),
        }
    }

    /// Each model's values of it at count `n`.
    pub(crate) fn rounds(self, data: &RunData, n: usize) -> Vec<(String, Vec<(usize, f64)>)> {
        let p = data.plan.primary;
        match self {
            RankedBy::Primary => rounds(data, n, &|m| m.primary(p)),
            RankedBy::ServerCpu => rounds(data, n, &|m| m.server_cpu_per_message_us),
        }
    }
}

/// What ranks the models at count `n`: the server's CPU per message where
/// throughput is the figure, the machine was busy outside the run by more
/// than [`BUSY_OUTSIDE`] over the count's slots, and at least two models
/// have that CPU in two rounds or more; the experiment's figure otherwise.
pub(crate) fn ranked_by(data: &RunData, n: usize) -> RankedBy {
    let busy = data.plan.primary == crate::results::matrix::Primary::Throughput
        && data.plan.workload.kind() != crate::results::matrix::WorkloadKind::Churn
        && outside_cpus(data, n).is_some_and(|c| c > BUSY_OUTSIDE);
    if !busy {
        return RankedBy::Primary;
    }
    let with = RankedBy::ServerCpu
        .rounds(data, n)
        .iter()
        .filter(|(_, v)| v.len() >= 2)
        .count();
    if with >= 2 {
        RankedBy::ServerCpu
    } else {
        RankedBy::Primary
    }
}

/// The models at each connection count by the figure that ranks them
/// there ([`ranked_by`]).
pub(crate) fn standings(data: &RunData) -> BTreeMap<usize, Vec<Ranked>> {
    crate::results::series::connections(data)
        .into_iter()
        .map(|n| {
            let by = ranked_by(data, n);
            let values = by.rounds(data, n);
            (n, rank(data, n, values, by.higher_is_better(&data.plan)))
        })
        .filter(|(_, rows)| !rows.is_empty())
        .collect()
}

/// How a column of the experiment's figure is written: times in one unit
/// for the whole column (`0.206 ms` beside `5.44 ms`), counts in full.
pub(crate) fn primary_scale(
    p: crate::results::matrix::Primary,
    values: impl IntoIterator<Item = f64>,
) -> Box<dyn Fn(f64) -> String> {
    use crate::results::matrix::Primary;
    match p {
        Primary::Time => {
            let s = crate::present::units::Scale::seconds(values);
            Box::new(move |v| s.format(v))
        }
        Primary::Latency => {
            let s = crate::present::units::Scale::micros(values);
            Box::new(move |v| s.format(v))
        }
        Primary::Throughput | Primary::AcceptRate => Box::new(format_count),
    }
}

/// `1.42`, `0.973`, `120`: a ratio to three significant digits, at least
/// two decimals below 10.
pub fn times(x: f64) -> String {
    if x.is_finite() && x.abs() < 10.0 {
        format!("{x:.2}")
    } else {
        sig3(x)
    }
}

/// `0.91`, `0.0685`: [`times`], or three significant digits below 0.1
/// (where two decimals would read 0.00).
pub fn small_times(x: f64) -> String {
    if x.abs() < 0.1 {
        sig3(x)
    } else {
        times(x)
    }
}

/// The words for "worse" and "better" under a figure.
pub(crate) fn words(higher_is_better: bool) -> (&'static str, &'static str) {
    if higher_is_better {
        ("slower", "faster")
    } else {
        ("longer", "shorter")
    }
}

/// `±5 %`.
pub(crate) fn margin_text(margin: f64) -> String {
    format!("±{} %", sig3(margin * 100.0))
}

/// `0.97–1.05×`; an end that two decimals would round to 1 gets a third
/// (`1.004–3.31×`), so a decided interval never reads as holding 1.
fn span(c: &Comparison) -> String {
    let end = |x: f64| {
        if x != 1.0 && (x - 1.0).abs() < 0.005 {
            format!("{x:.3}")
        } else {
            times(x)
        }
    };
    c.interval
        .map_or_else(String::new, |(lo, hi)| format!("{}–{}×", end(lo), end(hi)))
}

/// What would settle an inconclusive comparison: `~16 runs` (the runs
/// per model at which, if the spread holds, it would be settled), or `runs
/// vary ±21 %` (more than 30 runs: only a quieter machine would).
pub(crate) fn settle_text(c: &Comparison) -> String {
    match c.settle_runs {
        Some(k) => format!("~{k} runs"),
        None => format!("runs vary ±{} %", sig3(c.noise * 100.0)),
    }
}

/// What a comparison says, for a row: `1.42× slower (1.31–1.55×)`,
/// `equivalent (0.98–1.03×, within ±5 %)`, `inconclusive (0.84–1.93×; ~7
/// runs)`; with `whom`, `1.07× slower than epoll (…)`. `c` is how many
/// times worse the row is.
/// `said`: the words for worse and better ([`words`], [`RankedBy::words`]).
pub(crate) fn against(c: &Comparison, whom: &str, said: (&str, &str)) -> String {
    let (worse, better) = said;
    let than = if whom.is_empty() {
        String::new()
    } else {
        format!(" than {whom}")
    };
    match c.outcome {
        Outcome::Untested => format!("{}× {worse}{than} (untested: 1 run)", times(c.ratio)),
        Outcome::Equivalent => format!(
            "equivalent{} ({}, within {})",
            if whom.is_empty() {
                String::new()
            } else {
                format!(" to {whom}")
            },
            span(c),
            margin_text(c.margin)
        ),
        Outcome::Different if c.larger() => {
            format!("{}× {worse}{than} ({})", times(c.ratio), span(c))
        }
        Outcome::Different => format!(
            "{}× {better}{than} by its rounds ({}), though its median is not",
            times(1.0 / c.ratio),
            span(&c.inverse())
        ),
        Outcome::Inconclusive => format!(
            "inconclusive{} ({}; {})",
            if whom.is_empty() {
                String::new()
            } else {
                format!(" against {whom}")
            },
            span(c),
            settle_text(c)
        ),
    }
}

/// What the "vs best" column says of a row.
/// `first`: the row is the table's first.
pub(crate) fn versus_text(said: (&str, &str), row: &Ranked, first: bool) -> String {
    if first {
        return if row.rank.is_some() {
            "best".into()
        } else {
            "best median (untested)".into()
        };
    }
    let Some(best) = row.versus_best else {
        return "untested: no positive value".into();
    };
    if best.outcome == Outcome::Untested {
        let (worse, _) = said;
        return format!(
            "{}× {worse} (untested: {})",
            times(best.ratio),
            if row.summary.n < 2 {
                "1 run"
            } else {
                "best had 1 run"
            }
        );
    }
    match &row.placed_by {
        // Below the top group though not told apart from a noisy best:
        // what placed it there.
        Some(b) if !best.larger() && row.rank != Some(1) => format!(
            "{}; vs best {}",
            against(&b.comparison, &b.by, said),
            against(&best, "", said)
        ),
        _ => against(&best, "", said),
    }
}

/// The rank column: the group's rank, `1?` for a model in a group it is
/// not shown equivalent to the first of, `–` untested.
pub(crate) fn rank_text(row: &Ranked) -> String {
    match row.rank {
        None => "–".into(),
        Some(r) if row.unsettled() => format!("{r}?"),
        Some(r) => r.to_string(),
    }
}

/// The top group beside its first row: the models shown equivalent to it,
/// those the paired rounds put ahead of it though their medians are not
/// ([`ahead_by_rounds`]), and those not told apart from it (inconclusive).
pub(crate) struct TopGroup<'a> {
    pub equivalent: Vec<&'a str>,
    pub ahead: Vec<&'a str>,
    pub open: Vec<&'a str>,
}

pub(crate) fn top_group(rows: &[Ranked]) -> TopGroup<'_> {
    let mut g = TopGroup {
        equivalent: Vec::new(),
        ahead: Vec::new(),
        open: Vec::new(),
    };
    for r in rows.iter().filter(|r| r.rank == Some(1)) {
        match r.versus_leader {
            Some(c) if ahead_by_rounds(&c) => g.ahead.push(r.model.as_str()),
            Some(_) if r.unsettled() => g.open.push(r.model.as_str()),
            Some(_) => g.equivalent.push(r.model.as_str()),
            None => {}
        }
    }
    g
}

/// Who leads, in words the rank column and the rows agree with: `uring is
/// best; epoll equivalent to it (±5 %); poll and select not told apart
/// from it (inconclusive)`.
pub(crate) fn leaders(rows: &[Ranked], margin: f64) -> String {
    let Some(top) = rows.first() else {
        return "nothing measured".into();
    };
    if top.rank.is_none() {
        return format!(
            "{} has the best median; {}: order not tested",
            top.model,
            if rows.iter().all(|r| r.summary.n < 2) {
                "1 run"
            } else {
                "too few runs"
            }
        );
    }
    let TopGroup {
        equivalent,
        ahead,
        open,
    } = top_group(rows);
    let mut s = format!("{} is best", top.model);
    if !equivalent.is_empty() {
        s += &format!(
            "; {} equivalent to it ({})",
            and_list(&equivalent),
            margin_text(margin)
        );
    }
    if !ahead.is_empty() {
        s += &format!(
            "; {} ahead of it by {} rounds, though not by {} median{}",
            and_list(&ahead),
            if ahead.len() == 1 { "its" } else { "their" },
            if ahead.len() == 1 { "its" } else { "their" },
            if ahead.len() == 1 { "" } else { "s" },
        );
    }
    if !open.is_empty() {
        s += &format!(
            "; {} not told apart from it (inconclusive)",
            and_list(&open)
        );
    }
    s
}

/// Different from the best beyond noise and margin, and better: the
/// paired rounds put it ahead of the model with the best median.
pub(crate) fn ahead_by_rounds(c: &Comparison) -> bool {
    c.outcome == Outcome::Different && !c.larger()
}

/// The rule, in one sentence under every ranking.
pub(crate) fn rule(plan: &crate::results::matrix::RunPlan) -> String {
    let looks = plan.looks.map_or_else(String::new, |l| {
        format!(
            ", the level of Pocock's boundary for {} looks at the rounds, so that they keep 5 % together",
            l.most
        )
    });
    format!(
        "Rows by median. Rank: a model's group; it starts a lower group when a model above is \
         better beyond noise and the {m} margin (paired rounds: Student's t on the per-round \
         ratios, from 10 rounds with the highest and lowest tenth left out, {level}{looks}); equivalent: the whole interval lies within {m}; inconclusive (rank \
         with ?): neither yet, with the runs per model that would likely settle it (~N runs) \
         or, past 30, how much the runs vary (a quieter machine would).",
        m = margin_text(plan.margin),
        level = level_text(plan.rule().level)
    )
}

/// A confidence level as a percentage: `95 %`, `98.2 %`.
pub(crate) fn level_text(level: f64) -> String {
    format!("{} %", sig3(level * 100.0))
}

/// The runs column: `3`, `3 (1 outlier; 2 repeated; 1 disturbed ⚠)`.
pub(crate) fn runs_text(row: &Ranked) -> String {
    let s = row.summary;
    let mut notes = Vec::new();
    if s.outliers > 0 {
        notes.push(format!(
            "{} outlier{}",
            s.outliers,
            if s.outliers == 1 { "" } else { "s" }
        ));
    }
    if row.repeated > 0 {
        notes.push(format!("{} repeated", row.repeated));
    }
    if row.disturbed > 0 {
        notes.push(format!("{} disturbed ⚠", row.disturbed));
    }
    if notes.is_empty() {
        s.n.to_string()
    } else {
        format!("{} ({})", s.n, notes.join("; "))
    }
}

/// The answer at one count in a line, as the forest plot draws it: the
/// best, the models equivalent to it, those worse beyond noise and margin
/// (each with how many times), and those not yet told apart from it;
/// `None` with fewer than two ranked models.
pub(crate) fn glance_line(data: &RunData, n: usize, rows: &[Ranked]) -> Option<String> {
    let ranked: Vec<&Ranked> = rows.iter().filter(|r| r.rank.is_some()).collect();
    let (best, rest) = ranked.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let by = ranked_by(data, n);
    let (worse, _) = by.words(&data.plan);
    let (mut equivalent, mut behind, mut ahead, mut open) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in rest {
        match r.versus_best {
            Some(c) if c.outcome == Outcome::Equivalent => equivalent.push(r.model.clone()),
            Some(c) if ahead_by_rounds(&c) => {
                ahead.push(format!("{} {}×", r.model, times(1.0 / c.ratio)))
            }
            Some(c) if c.outcome == Outcome::Different => {
                behind.push(format!("{} {}×", r.model, times(c.ratio)))
            }
            _ => open.push(r.model.clone()),
        }
    }
    let mut parts = vec![if ahead.is_empty() {
        format!("{} best", best.model)
    } else {
        format!("{} best by median", best.model)
    }];
    if !ahead.is_empty() {
        let (_, better) = by.words(&data.plan);
        parts.push(format!(
            "{better} by the paired rounds, though not by median: {}",
            ahead.join(", ")
        ));
    }
    if !equivalent.is_empty() {
        parts.push(format!("equivalent: {}", equivalent.join(", ")));
    }
    if !behind.is_empty() {
        parts.push(format!("{worse}: {}", behind.join(", ")));
    }
    if !open.is_empty() {
        parts.push(format!("undecided: {}", open.join(", ")));
    }
    // With looks, how far the count went.
    let rounds = data
        .plan
        .looks
        .and_then(|_| {
            data.cells
                .iter()
                .filter(|c| c.cell.connections == n)
                .map(|c| c.cell.run)
                .max()
        })
        .map_or_else(String::new, |r| format!(" after {r} rounds"));
    let busy = outside_cpus(data, n)
        .filter(|&c| c > crate::client::limit::INTERFERENCE)
        .map_or_else(String::new, |c| match by {
            RankedBy::ServerCpu => format!(
                " (by server CPU per message: {c:.2} CPUs busy outside the run, so {} measured each model's share of them)",
                data.plan.figure_label()
            ),
            RankedBy::Primary => format!(
                " ({c:.2} CPUs busy outside the run: throughput includes each model's share of them, CPU per message does not)"
            ),
        });
    Some(format!(
        "{} {}: {}; {} of {} decided{rounds}{busy}",
        format_count(n as f64),
        data.plan.size_label,
        parts.join("; "),
        rest.len() - open.len(),
        rest.len()
    ))
}

/// CPUs' worth the processes outside the run used, on average over the
/// resident slots at count `n` (their CPU over their wall time, summed:
/// each slot's clock ticks are coarse, their sum is not); `None` without
/// slots that recorded it.
pub(crate) fn outside_cpus(data: &RunData, n: usize) -> Option<f64> {
    let (cpu, wall) = data
        .cells
        .iter()
        .filter(|c| c.cell.connections == n)
        .filter_map(|c| c.slot.as_ref())
        .filter_map(|s| s.outside_cpu_seconds.zip(s.outside_seconds))
        .fold((0.0, 0.0), |(c, w), (x, y)| (c + x, w + y));
    (wall > 0.0).then(|| cpu / wall)
}

/// [`glance_line`] at every count, with what they compare and how, for
/// the last lines of the terminal.
pub fn glance(data: &RunData) -> Vec<String> {
    standings(data)
        .into_iter()
        .filter_map(|(n, rows)| glance_line(data, n, &rows))
        .collect()
}

/// One table per connection count, models by median, best first.
pub fn ranking(data: &RunData) -> Vec<Table> {
    let mut tables = Vec::new();
    for (n, rows) in standings(data) {
        let by = ranked_by(data, n);
        let higher = by.higher_is_better(&data.plan);
        let mut t = Table::new(
            format!(
                "{} {}: {} ({}, {} is better)",
                format_count(n as f64),
                data.plan.size_label,
                leaders(&rows, data.plan.margin),
                by.label(&data.plan),
                if higher { "higher" } else { "lower" },
            ),
            &[
                "#",
                "model",
                "median",
                "± stdev",
                "min … max",
                "runs",
                "vs best",
            ],
        );
        t.fold = true;
        let all = rows
            .iter()
            .flat_map(|r| [r.summary.median, r.summary.max, r.summary.stdev]);
        let fmt = by.scale(&data.plan, all.collect::<Vec<f64>>());
        // Under work: the bound beside each figure, and its share.
        let shares: Vec<Option<super::bound::Share>> = rows
            .iter()
            .map(|r| super::bound::share(data, &r.model, n))
            .collect();
        let bounded = shares.iter().any(Option::is_some);
        if bounded {
            t.header
                .extend(["bound".to_string(), "of bound".to_string()]);
        }
        for (i, row) in rows.iter().enumerate() {
            let s = row.summary;
            let mut cells = vec![
                rank_text(row),
                data.plan.shown(&row.model, n),
                fmt(s.median),
                fmt(s.stdev),
                format!("{} … {}", fmt(s.min), fmt(s.max)),
                runs_text(row),
                versus_text(by.words(&data.plan), row, i == 0),
            ];
            if bounded {
                let share = shares[i].as_ref();
                cells.push(share.map_or("–".into(), |s| super::bound::bound_text(&s.bound)));
                cells.push(share.map_or("–".into(), super::bound::share_text));
            }
            t.rows.push(cells);
        }
        t.notes.push(rule(&data.plan));
        if by == RankedBy::ServerCpu {
            t.notes.push(format!(
                "Ranked by the server's CPU per message: the machine was busy outside the run \
                 (more than {BUSY_OUTSIDE} CPUs' worth over the slots), so {} measured the share \
                 of the busy CPUs each model won as much as what it costs.",
                data.plan.figure_label()
            ));
        }
        if bounded {
            t.notes.push(super::bound::NOTE.to_string());
        }
        let missing: Vec<String> = data
            .plan
            .models
            .iter()
            .filter(|m| !rows.iter().any(|r| r.model == **m))
            .filter_map(|m| {
                let why = data.cells.iter().find(|c| {
                    c.cell.model == *m && c.cell.connections == n && c.status != Status::Ok
                })?;
                Some(format!(
                    "{m}: {} ({})",
                    match why.status {
                        Status::Skipped => "skipped",
                        _ => "failed",
                    },
                    why.reason.as_deref().unwrap_or("no reason recorded")
                ))
            })
            .collect();
        t.notes.extend(missing);
        tables.push(t);
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::*;
    fn run_of(models: &[(&str, &[f64])]) -> RunData {
        let figures: Vec<(&str, Vec<crate::results::dir::Figures>)> = models
            .iter()
            .map(|(m, v)| {
                let f = v
                    .iter()
                    .map(|&throughput| crate::results::dir::Figures {
                        throughput,
                        ..Default::default()
                    })
                    .collect();
                (*m, f)
            })
            .collect();
        RunData::example_of(&figures)
    }

    /// Every cell of `data` as a resident slot (one instance per run)
    /// over which the machine spent `cpu` seconds of every 0.31 outside
    /// the run.
    fn in_slots_beside(data: &mut RunData, cpu: f64) {
        for c in &mut data.cells {
            c.slot = Some(crate::results::cell::Slot {
                position: 1,
                of: 2,
                first: c.cell.run == 1,
                instance: None,
                start_seconds: None,
                outside_cpu_seconds: Some(cpu),
                outside_seconds: Some(0.31),
                stolen_seconds: None,
            });
        }
    }

    #[test]
    fn the_answer_says_when_the_machine_was_busy_outside_the_run() {
        let mut data = run_of(&[
            ("epoll", &[200_000.0, 201_000.0, 199_000.0]),
            ("threads", &[100_000.0, 101_000.0, 99_000.0]),
        ]);
        let line = |data: &RunData| {
            let rows = standings(data).remove(&10).expect("ranked");
            glance_line(data, 10, &rows).expect("a line")
        };
        // Not recorded (one cell at a time): nothing said.
        assert_eq!(outside_cpus(&data, 10), None);
        assert!(!line(&data).contains("outside the run"));
        // Slots beside a hog: 0.3 s of every 0.31 s, about a CPU.
        in_slots_beside(&mut data, 0.3);
        let busy = outside_cpus(&data, 10).expect("recorded");
        assert!((busy - 0.3 / 0.31).abs() < 1e-9, "{busy}");
        let said = line(&data);
        assert!(said.contains("(0.97 CPUs busy outside the run: throughput includes each model's share of them, CPU per message does not)"), "{said}");
        // A quiet machine's few ticks say nothing.
        for c in &mut data.cells {
            if let Some(s) = c.slot.as_mut() {
                s.outside_cpu_seconds = Some(0.01);
            }
        }
        assert!(!line(&data).contains("outside the run"));
    }

    /// Beside a hog, a model that wins more of the busy CPUs (more round
    /// trips/s) but costs its server more per message is not called best:
    /// the ranking, its heading and the answer's line go by the server's
    /// CPU per message; on a quiet machine the same figures rank by
    /// throughput.
    #[test]
    fn beside_a_hog_the_models_are_ranked_by_what_a_message_costs() {
        let figures = |tp: [f64; 4], cpu: [f64; 4]| -> Vec<crate::results::dir::Figures> {
            tp.iter()
                .zip(cpu)
                .map(|(&throughput, server_cpu_s)| crate::results::dir::Figures {
                    throughput,
                    server_cpu_s,
                    ..Default::default()
                })
                .collect()
        };
        let mut data = RunData::example_of(&[
            (
                "spinner",
                figures(
                    [200_000.0, 204_000.0, 198_000.0, 202_000.0],
                    [0.080, 0.081, 0.079, 0.080],
                ),
            ),
            (
                "lean",
                figures(
                    [150_000.0, 152_000.0, 149_000.0, 151_000.0],
                    [0.050, 0.051, 0.049, 0.050],
                ),
            ),
        ]);
        let outside = |data: &mut RunData, cpu: f64| {
            in_slots_beside(data, cpu);
            for c in &mut data.cells {
                if let Some(s) = c.server.as_mut() {
                    s.cpu_error_seconds = Some(1e-6);
                }
            }
        };
        outside(&mut data, 0.3);
        assert_eq!(ranked_by(&data, 10), RankedBy::ServerCpu);
        let rows = standings(&data).remove(&10).expect("ranked");
        assert_eq!(rows[0].model, "lean");
        let c = rows[1].versus_best.expect("compared");
        assert_eq!(c.outcome, Outcome::Different, "{c:?}");
        let said = glance_line(&data, 10, &rows).expect("a line");
        assert!(
            said.contains("lean best") && said.contains("costlier: spinner 1.6"),
            "{said}"
        );
        assert!(said.contains("(by server CPU per message: 0.97 CPUs busy outside the run, so round trips/s measured each model's share of them)"), "{said}");
        let t = &ranking(&data)[0];
        assert!(
            t.title.contains("(server CPU/msg, lower is better)"),
            "{}",
            t.title
        );
        let verdict = &crate::analysis::verdict::tables(&data)[0];
        assert!(verdict.title.contains("lean is best"), "{}", verdict.title);
        assert!(
            verdict
                .header
                .contains(&"round trips/s (share)".to_string()),
            "{:?}",
            verdict.header
        );
        assert!(
            verdict.notes[0]
                .contains("round trips/s (the share of the busy CPUs each won): spinner"),
            "{:?}",
            verdict.notes
        );
        // Quiet: throughput leads, as it should.
        outside(&mut data, 0.01);
        assert_eq!(ranked_by(&data, 10), RankedBy::Primary);
        let rows = standings(&data).remove(&10).expect("ranked");
        assert_eq!(rows[0].model, "spinner");
        assert!(ranking(&data)[0]
            .title
            .contains("(round trips/s, higher is better)"));
    }

    /// A model behind the best by its median but ahead of it in the paired
    /// rounds is said to be ahead by its rounds, never "slower" (the tour
    /// once printed "slower: uring 0.93×").
    #[test]
    fn ahead_by_the_rounds_is_never_called_slower() {
        // Three of every five rounds a leads a little, the other two b
        // leads by twice.
        let round = |i: usize, high: f64, low: f64| if i % 5 % 2 == 0 { high } else { low };
        let a: Vec<f64> = (0..20).map(|i| round(i, 200.0, 100.0)).collect();
        let b: Vec<f64> = (0..20).map(|i| round(i, 190.0, 200.0)).collect();
        let data = run_of(&[("a", &a), ("b", &b)]);
        let rows = standings(&data).remove(&10).expect("ranked");
        assert_eq!(rows[0].model, "a");
        let c = rows[1].versus_best.expect("compared");
        assert!(ahead_by_rounds(&c), "{c:?}");
        let line = glance_line(&data, 10, &rows).expect("a line");
        assert!(
            line.contains(
                "a best by median; faster by the paired rounds, though not by median: b 1."
            ) && !line.contains("slower"),
            "{line}"
        );
        let said = leaders(&rows, data.plan.margin);
        assert_eq!(
            said,
            "a is best; b ahead of it by its rounds, though not by its median"
        );
    }

    #[test]
    fn the_heading_the_rank_column_and_the_rows_agree() {
        let data = run_of(&[
            ("select", &[157_333.0, 162_397.0, 214_539.0]),
            ("epoll", &[212_731.0, 202_959.0, 215_595.0]),
            ("poll", &[213_000.0, 203_500.0, 216_000.0]),
            ("threads", &[113_755.0, 110_000.0, 116_000.0]),
        ]);
        let t = &ranking(&data)[0];
        assert!(
            t.title.contains(
                "poll is best; epoll equivalent to it (±5 %); select not told apart from it \
                 (inconclusive)"
            ),
            "{}",
            t.title
        );
        let col = |i: usize| -> Vec<&str> { t.rows.iter().map(|r| r[i].as_str()).collect() };
        assert_eq!(col(1), ["poll", "epoll", "select", "threads"]);
        assert_eq!(col(0), ["1", "1", "1?", "4"]);
        assert_eq!(col(6)[0], "best");
        assert!(col(6)[1].starts_with("equivalent ("), "{}", col(6)[1]);
        assert!(col(6)[2].starts_with("inconclusive ("), "{}", col(6)[2]);
        assert!(!col(6).iter().any(|v| v.contains("tied")), "{:?}", col(6));
        assert!(col(6)[3].contains("slower ("), "{}", col(6)[3]);
    }

    #[test]
    fn a_disturbed_run_is_marked_in_its_row() {
        let mut data = run_of(&[("a", &[100.0, 101.0, 99.0]), ("b", &[50.0, 51.0, 49.0])]);
        for c in data.cells.iter_mut().filter(|c| c.cell.model == "b") {
            if c.cell.run == 2 {
                c.load.as_mut().unwrap().limits.interference = true;
            }
        }
        let t = &ranking(&data)[0];
        assert_eq!(t.rows[1][5], "3 (1 disturbed ⚠)");
    }
}
