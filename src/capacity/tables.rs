//! The capacity run's tables (`--slo`, the `capacity` preset), per count
//! of one work profile: the capacity table (each model's highest rate
//! held within the targets with the lowest missed above it, its knee,
//! its queueing bound and the share of it reached, against the model
//! that carried the most), the cost at the highest rate every model held
//! (CPU and memory, in paired rounds), and each model's curve (achieved,
//! p50, p99, p99.9 and the uncorrected p99, and CPU per message, against
//! the offered rate). And the lines of the answer at a glance. Cost: one
//! analysis of each model's slots per count.

use crate::capacity::search::{self as cap, end_text, state, Bound, End, RatePoint, State};
use crate::export::table::Table;
use crate::present::units::{format_count, seconds};
use crate::results::dir::RunData;
use crate::results::slo::Search;
use crate::server::work::Profile;
use crate::stats::paired::{self, Outcome, Sample};

use schemars::JsonSchema;
use serde::Serialize;

/// One model's search at one count, read whole.
pub struct Searched {
    pub model: String,
    /// As the tables name it: with the settings `--tune` kept.
    pub shown: String,
    pub state: State,
    pub points: Vec<RatePoint>,
    pub knee: Option<(f64, f64)>,
    pub estimate: Option<f64>,
    pub bound: Option<Bound>,
    /// A defect: measured above its bound.
    pub above: Option<String>,
}

impl Searched {
    /// The decided bracket, when there is one: (held, missed).
    pub fn bracket(&self) -> (Option<f64>, Option<f64>) {
        cap::end_of(&self.state, &self.points).map_or((None, None), |e| cap::bracket_of(&e))
    }
}

/// The work of a part's cells (`None` for none).
pub fn work_of(data: &RunData) -> Option<Profile> {
    data.plan.work.first().filter(|w| !w.is_none()).cloned()
}

/// Every model's search at `n` in `data` (one work profile's part).
pub fn searched(data: &RunData, n: usize) -> Vec<Searched> {
    let Some(search) = &data.plan.capacity else {
        return Vec::new();
    };
    let work = work_of(data);
    let targets = search.targets_under(work.as_ref());
    data.plan
        .models
        .iter()
        .map(|m| {
            // The search's own slots, as its call reads them: the cost
            // rounds are the cost table's.
            let slots = cap::phase_slots(data, search, m, n, work.as_ref()).0;
            let points = cap::rates(&slots, search, &targets);
            let state = state(data, m, n, work.as_ref());
            // With the pool `--tune` kept or the preset sized.
            let tuned = data.plan.tuned_at(m, n, work.as_ref()).map(|t| &t.settings);
            let bound = search
                .handlers_of(m, work.as_ref())
                .map(|c| tuned.map_or(c, |t| c.with_settings(t)))
                .and_then(|c| cap::bound(&c, n, work.as_ref(), &points, search, &targets));
            let above = match (&state, &bound) {
                (State::Ended(e), Some(b)) => cap::above_bound(e, b),
                _ => None,
            };
            Searched {
                model: m.clone(),
                shown: data.plan.shown(m, n),
                knee: cap::knee(&points),
                estimate: cap::estimate(&points, search, &targets),
                state,
                points,
                bound,
                above,
            }
        })
        .collect()
}

/// How a model compares with the one that carried the most.
#[derive(Debug, Clone, PartialEq)]
pub enum Versus {
    Best,
    /// This one missed a rate beyond the margin below one the best held:
    /// it carries less by more than the margin.
    Less,
    /// Every capacity both brackets allow lies within the margin of the
    /// best's.
    Equivalent,
    Inconclusive(String),
}

/// The model that held the highest decided rate, and each model against
/// it.
pub fn versus(all: &[Searched], margin: f64) -> (Option<usize>, Vec<Versus>) {
    let best = all
        .iter()
        .enumerate()
        .filter(|(_, s)| s.above.is_none())
        .filter_map(|(i, s)| Some((i, s.bracket().0?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i);
    let calls = all
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let Some(b) = best else {
                return Versus::Inconclusive("no model held a rate, decided".into());
            };
            if i == b {
                return Versus::Best;
            }
            let (bh, bm) = all[b].bracket();
            let (h, m) = s.bracket();
            let bh = bh.unwrap_or(0.0);
            // Its capacity lies below m, the best's at or above bh: less
            // by more than the margin when m is that far below, as a
            // model is slower than the best beyond noise and the margin.
            if m.is_some_and(|m| m * (1.0 + margin) <= bh) {
                return Versus::Less;
            }
            // The ratio of the two capacities lies within [h/bm, m/bh].
            match (h, m, bm) {
                (Some(h), Some(m), Some(bm))
                    if m / bh <= 1.0 + margin && bm / h <= 1.0 + margin =>
                {
                    Versus::Equivalent
                }
                (_, None, _) if h.is_none() => {
                    Versus::Inconclusive("no rate decided against the target".into())
                }
                _ => Versus::Inconclusive(format!(
                    "its bracket overlaps the best's ({} against {})",
                    bracket_text(h, m),
                    bracket_text(Some(bh), bm)
                )),
            }
        })
        .collect();
    (best, calls)
}

fn bracket_text(held: Option<f64>, missed: Option<f64>) -> String {
    let r = |v: Option<f64>| v.map_or("–".into(), |v| format!("{}/s", format_count(v)));
    format!("{} to {}", r(held), r(missed))
}

fn targets_text(search: &Search, work: Option<&Profile>) -> String {
    let parts: Vec<String> = search
        .slo
        .targets
        .iter()
        .map(|t| format!("{} ≤ {}", t.label(), seconds(t.seconds_under(work))))
        .collect();
    parts.join(", ")
}

/// How a model's search ended, as results.json says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// A rate held and the next missed, both decided.
    Found,
    /// Every rate up to the most tried held.
    HeldAll,
    /// Even the least rate tried missed.
    NeverMet,
    /// The search ended before both ends were decided.
    Inconclusive,
    /// Measured again at the end, an end of its bracket went the other
    /// way: the bracket is widened to what both measurements allow.
    Unstable,
    /// The budget stopped it before it ended.
    Stopped,
    /// Its server is gone or its slots kept failing.
    Failed,
}

/// A model against the one that carried the most ([`Versus`]), as
/// results.json says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    Best,
    /// It missed a rate beyond the margin below one the best held.
    CarriesLess,
    /// Both brackets lie within the margin of each other.
    Equivalent,
    Inconclusive,
}

/// A range of offered rates, per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct Rates {
    pub from: f64,
    pub to: f64,
}

/// The queueing bound of a model's handlers ([`cap::Bound`]).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct BoundAnswer {
    /// The queue's capacity c/S, per second.
    pub capacity: f64,
    /// What set it, in words.
    pub why: String,
    /// The highest rate at which the queue keeps every target, per
    /// second; `null` when none does.
    pub within_target: Option<f64>,
}

/// One model's search at one count: the row of the capacity table.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ModelAnswer {
    pub model: String,
    /// As the tables name it (with what `--tune` kept).
    pub shown: String,
    pub outcome: Ended,
    /// The highest rate decided to hold every target, per second.
    pub held: Option<f64>,
    /// The lowest rate decided to miss one, per second.
    pub missed: Option<f64>,
    /// The highest rate whose pooled shares meet every target.
    pub estimate: Option<f64>,
    /// Unstable: the bracket the search found before its recheck
    /// overturned an end, and the server's CPU per message at that end,
    /// measured again over first (the drift the run saw).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub searched: Option<(Option<f64>, Option<f64>)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<f64>,
    pub versus_best: Call,
    /// Why it is inconclusive against the best.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versus_why: Option<String>,
    /// Where p99 first passed twice its value at the lowest rate.
    pub knee: Option<Rates>,
    pub bound: Option<BoundAnswer>,
    /// Held (or the estimate) over the bound within target.
    pub share_of_bound: Option<f64>,
    /// Slots measured.
    pub slots: usize,
    /// Measured above its bound (a defect, never a win): how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub above_bound: Option<String>,
    /// The note the table prints (empty when found).
    pub note: String,
}

impl ModelAnswer {
    /// The capacity table's row.
    fn row(&self) -> Vec<String> {
        let rate = |v: Option<f64>| v.map_or("–".into(), |v| format!("{}/s", format_count(v)));
        vec![
            self.shown.clone(),
            rate(self.held),
            rate(self.missed),
            rate(self.estimate),
            match (self.versus_best, &self.versus_why) {
                (Call::Best, _) => "best".into(),
                (Call::CarriesLess, _) => "carries less".into(),
                (Call::Equivalent, _) => "equivalent".into(),
                (Call::Inconclusive, why) => {
                    format!("inconclusive: {}", why.as_deref().unwrap_or_default())
                }
            },
            self.knee.map_or("none seen".into(), |k| {
                format!("{} to {}/s", format_count(k.from), format_count(k.to))
            }),
            self.bound
                .as_ref()
                .map_or("– (handlers unknown)".into(), |b| {
                    format!("{}/s ({})", format_count(b.capacity), b.why)
                }),
            self.bound
                .as_ref()
                .map_or("–".into(), |b| rate(b.within_target)),
            self.share_of_bound
                .map_or("–".into(), |x| format!("{:.0} %", 100.0 * x)),
            self.slots.to_string(),
            self.note.clone(),
        ]
    }
}

/// Every model's answer at one count, highest held (or estimate) first.
fn model_answers(all: &[Searched], margin: f64) -> Vec<ModelAnswer> {
    let (_, calls) = versus(all, margin);
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&a, &b| {
        let k = |s: &Searched| s.bracket().0.or(s.estimate).unwrap_or(0.0);
        k(&all[b]).total_cmp(&k(&all[a]))
    });
    order
        .into_iter()
        .map(|i| {
            let s = &all[i];
            let (held, missed) = s.bracket();
            let (outcome, note) = match &s.state {
                State::Failed(why) => (Ended::Failed, format!("failed: {why}")),
                State::Measure(_) => (
                    Ended::Stopped,
                    "stopped by the budget before it ended".into(),
                ),
                State::Ended(e @ End::NeverMet(_)) => (Ended::NeverMet, end_text(e)),
                State::Ended(e @ End::Inconclusive { .. }) => (Ended::Inconclusive, end_text(e)),
                State::Ended(e @ End::Unstable { .. }) => (Ended::Unstable, end_text(e)),
                State::Ended(End::HeldAll(_)) => (Ended::HeldAll, "held every rate tried".into()),
                State::Ended(End::Found { .. }) => (Ended::Found, String::new()),
            };
            let note = match &s.above {
                Some(d) => format!("ABOVE ITS BOUND, a defect: {d}. {note}"),
                None => note,
            };
            let (versus_best, versus_why) = match &calls[i] {
                Versus::Best => (Call::Best, None),
                Versus::Less => (Call::CarriesLess, None),
                Versus::Equivalent => (Call::Equivalent, None),
                Versus::Inconclusive(why) => (Call::Inconclusive, Some(why.clone())),
            };
            ModelAnswer {
                model: s.model.clone(),
                shown: s.shown.clone(),
                outcome,
                held,
                missed,
                estimate: s.estimate,
                searched: match &s.state {
                    State::Ended(End::Unstable { searched, .. }) => Some(*searched),
                    _ => None,
                },
                drift: match &s.state {
                    State::Ended(End::Unstable { drift, .. }) => *drift,
                    _ => None,
                },
                versus_best,
                versus_why,
                knee: s.knee.map(|(from, to)| Rates { from, to }),
                bound: s.bound.as_ref().map(|b| BoundAnswer {
                    capacity: b.queue.capacity(),
                    why: b.why.clone(),
                    within_target: b.within,
                }),
                share_of_bound: match (&s.bound, held.or(s.estimate)) {
                    (Some(b), Some(h)) => b.within.map(|w| h / w),
                    _ => None,
                },
                slots: s.points.iter().map(|p| p.slots).sum(),
                above_bound: s.above.clone(),
                note,
            }
        })
        .collect()
}

/// A capacity search's answer at one count of one work profile: what
/// its capacity and cost tables print, as results.json carries it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Answer {
    pub connections: usize,
    /// The work profile (`null`: none).
    pub work: Option<String>,
    /// The targets under that work, in words (`p99 ≤ 5 ms`).
    pub targets: String,
    /// The model that held the highest decided rate, as shown; `null`
    /// when none held one.
    pub best: Option<String>,
    /// Every model, highest held (or estimate) first.
    pub models: Vec<ModelAnswer>,
    /// The cost at the highest rate every model that held one held.
    pub cost: Option<Cost>,
}

/// The capacity answers of one work profile's part, one per count.
pub fn answers(data: &RunData) -> Vec<Answer> {
    let Some(search) = &data.plan.capacity else {
        return Vec::new();
    };
    let work = work_of(data);
    data.plan
        .connections
        .iter()
        .map(|&n| {
            let all = searched(data, n);
            let (best, _) = versus(&all, data.plan.margin);
            Answer {
                connections: n,
                work: work.as_ref().map(|w| w.to_string()),
                targets: targets_text(search, work.as_ref()),
                best: best.map(|b| all[b].shown.clone()),
                models: model_answers(&all, data.plan.margin),
                cost: cost_of(data, n, &all),
            }
        })
        .collect()
}

/// The tables of one work profile's part.
pub fn tables(data: &RunData) -> Vec<Table> {
    let Some(search) = &data.plan.capacity else {
        return Vec::new();
    };
    let work = work_of(data);
    let mut out = Vec::new();
    for &n in &data.plan.connections {
        let all = searched(data, n);
        out.push(capacity_table(data, search, work.as_ref(), n, &all));
        if let Some((_, t)) = cost_table(data, n, &all) {
            out.push(t);
        }
        out.push(curve_table(search, work.as_ref(), n, &all));
    }
    out
}

fn capacity_table(
    data: &RunData,
    search: &Search,
    work: Option<&Profile>,
    n: usize,
    all: &[Searched],
) -> Table {
    let mut t = Table::new(
        format!(
            "Capacity at {} connections: the highest offered rate that holds {}",
            format_count(n as f64),
            targets_text(search, work)
        ),
        &[
            "model",
            "held",
            "missed",
            "estimate",
            "vs best",
            "knee (p99 ×2)",
            "bound c/S",
            "bound within target",
            "of bound",
            "slots",
            "note",
        ],
    );
    for a in model_answers(all, data.plan.margin) {
        t.rows.push(a.row());
    }
    t.notes.push(format!(
        "An open loop of Poisson arrivals at each offered rate, in resident slots ({} to {} s measured, about {} echoes each). A rate holds a target while the share of its echoes slower than the target stays within what the percentile allows (1 % for p99): pooled over its slots, decided when the Student's t interval of the slots' shares at {} (Pocock's level for the {} looks a rate may get) lies below; it misses when that interval lies above, or when the server answered under 95 % of the rate beyond four times the Poisson count's noise. \
         Held: the highest rate decided to hold; missed: the lowest decided to miss; a rate between them sits at the target within noise. \
         Estimate: the highest rate whose pooled shares meet every target. Vs best: carries less when it missed a rate beyond the margin below one the best held; equivalent when every ratio of capacities the two brackets allow lies within {}; inconclusive otherwise. Once every search at the count has ended, each bracket's ends are measured again, interleaved with every model's ({} rounds): an end that goes the other way makes the bracket unstable, widened to what both measurements allow (the host's drift moved the rate). \
         Knee: where p99 first passed twice its value at the lowest rate. Bound: an M/D/c queue of the model's handlers c (threads, processes, loops, a pool; one per connection for threads and fork), each taking S = the least CPU per message measured at any rate plus the part of the work that holds a handler, or the server's cores over the CPU alone, whichever binds; within target: the highest rate at which that queue's wait (Erlang C, exponential tail: it errs high for fixed service at moderate load), added to the model's own latency at its lowest rate, keeps every target; of bound: held (or the estimate) over it, as ZygOS reports it. Held past the queue's capacity c/S is a defect of the measurement or the bound, flagged, never a win.",
        search.least_measured,
        search.most_measured,
        search.samples,
        crate::analysis::summary::level_text(crate::stats::looks::level(
            search.most_per_rate.saturating_sub(search.confirm) + 1
        )),
        search.most_per_rate.saturating_sub(search.confirm) + 1,
        crate::analysis::summary::margin_text(data.plan.margin),
        search.recheck_rounds,
    ));
    t.notes.extend(floor_notes(search, work, all));
    t
}

/// What the host itself puts past each target: its stalls watched idle
/// before the search (an estimate: idle CPUs, without the load's own
/// wake-ups), and the share past it at each model's lowest rate, where
/// no queue forms (a model that missed even there left out); flagged when
/// its median is half of what the target allows or more (rates near it
/// then stay undecided on any server).
fn floor_notes(search: &Search, work: Option<&Profile>, all: &[Searched]) -> Vec<String> {
    use crate::present::units::sig3;
    let mut out: Vec<String> = Vec::new();
    let loud = search.floor_lines(work);
    for (j, tg) in search.slo.targets.iter().enumerate() {
        let allowed = 1.0 - tg.quantile();
        let name = format!("{} ≤ {}", tg.label(), seconds(tg.seconds_under(work)));
        if let Some((share, n, _)) = search.floor(j, work).filter(|_| loud.is_empty()) {
            out.push(if n == 0 {
                format!("The host's own stalls, watched idle before the search: no wake-up past the slack of {name}.")
            } else {
                format!(
                    "The host's own stalls, watched idle before the search: {} past the slack of {name}, an estimated {} % of echoes on any server (of the {} % it allows).",
                    if n == 1 {
                        "1 wake-up".to_string()
                    } else {
                        format!("{} wake-ups", format_count(n as f64))
                    },
                    sig3(share * 100.0),
                    sig3(allowed * 100.0)
                )
            });
        }
        // A model whose lowest rate already missed is its own limit there,
        // not the host.
        let mut lowest: Vec<f64> = all
            .iter()
            .filter_map(|s| s.points.first())
            .filter(|p| !matches!(p.call, cap::Call::Misses(_)))
            .filter_map(|p| p.above.get(j).map(|f| f.value))
            .collect();
        if lowest.is_empty() {
            continue;
        }
        lowest.sort_by(f64::total_cmp);
        let mid = crate::stats::quantile(&lowest, 0.5);
        let top = lowest[lowest.len() - 1];
        if top == 0.0 {
            out.push(format!(
                "At each model's lowest rate, no echo passed {name}."
            ));
            continue;
        }
        let range = format!(
            "{}–{} % (median {} %)",
            sig3(lowest[0] * 100.0),
            sig3(top * 100.0),
            sig3(mid * 100.0)
        );
        if mid >= allowed / 2.0 {
            out.push(format!(
                "⚠ At each model's lowest rate, where no queue forms, {range} of echoes already passed {name}, against the {} % it allows: the host's own floor sits near the target, and rates near it stay undecided (near) on any server; a looser target, or a quieter host, decides.",
                sig3(allowed * 100.0)
            ));
        } else {
            out.push(format!(
                "At each model's lowest rate, {range} of echoes passed {name}."
            ));
        }
    }
    out.extend(loud.into_iter().map(|l| format!("⚠ {l}")));
    out
}

/// A model's memory per connection ([`crate::analysis::memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct Memory {
    /// KiB per connection, or at most this when `at_most` (below what
    /// one sample resolves).
    pub kib: f64,
    pub at_most: bool,
}

/// A model's CPU per message against the least's, in paired rounds.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct VersusLeast {
    /// The model with the least CPU per message.
    pub least: String,
    /// This one over it (1 for the least itself).
    pub ratio: f64,
    /// `least` (this is it), `different`, `equivalent` or `inconclusive`.
    pub call: LeastCall,
}

/// The paired test's call of a model's CPU per message against the least.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LeastCall {
    Least,
    Different,
    Equivalent,
    Inconclusive,
}

/// One model at the common rate: the row of the cost table.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CostRow {
    pub model: String,
    pub shown: String,
    /// Medians over the rounds.
    pub p99_seconds: Option<f64>,
    /// The server tree's CPU over the slot's wall time.
    pub server_cpus_busy: Option<f64>,
    pub cpu_per_message_seconds: Option<f64>,
    pub versus_least: Option<VersusLeast>,
    pub memory_per_connection: Option<Memory>,
    pub rounds: usize,
}

impl CostRow {
    fn row(&self) -> Vec<String> {
        vec![
            self.shown.clone(),
            self.p99_seconds.map_or("–".into(), seconds),
            self.server_cpus_busy
                .map_or("–".into(), |b| format!("{b:.3}")),
            self.cpu_per_message_seconds.map_or("–".into(), seconds),
            self.versus_least
                .as_ref()
                .map_or("–".into(), |v| match v.call {
                    LeastCall::Least => "least".to_string(),
                    LeastCall::Different => format!("{:.2}× {}'s", v.ratio, v.least),
                    LeastCall::Equivalent => format!("equivalent to {}", v.least),
                    LeastCall::Inconclusive => {
                        format!("{:.2}× {}'s, inconclusive", v.ratio, v.least)
                    }
                }),
            self.memory_per_connection.map_or("–".into(), |m| {
                if m.at_most {
                    format!("≤ {}", crate::present::units::kib(m.kib))
                } else {
                    crate::present::units::kib(m.kib)
                }
            }),
            self.rounds.to_string(),
        ]
    }
}

/// The cost phase at one count: every model that held a rate, at the
/// least of their held rates, in paired rounds.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Cost {
    /// The common rate, per second.
    pub rate: f64,
    pub models: Vec<CostRow>,
}

/// The cost phase at `n`, from its rounds; `None` when none ran.
fn cost_of(data: &RunData, n: usize, all: &[Searched]) -> Option<Cost> {
    let work = work_of(data);
    let rounds: Vec<&crate::results::cell::CellResult> = data
        .cells
        .iter()
        .filter(|c| {
            c.cell.connections == n
                && c.cell.work.as_ref() == work.as_ref()
                && c.cell.offered.is_some_and(|o| o.cost_round.is_some())
        })
        .collect();
    let rate = rounds.first()?.cell.offered?.rate as f64;
    let per = |m: &str, f: &dyn Fn(&crate::results::cell::CellResult) -> Option<f64>| {
        rounds
            .iter()
            .filter(|c| c.cell.model == m)
            .filter_map(|c| Some((c.cell.offered?.cost_round?, f(c)?)))
            .collect::<Vec<(usize, f64)>>()
    };
    // Recorded in µs.
    let cpu = |c: &crate::results::cell::CellResult| {
        c.server_cpu_per_message()
            .and_then(Result::ok)
            .map(|us| us / 1e6)
    };
    let samples: Vec<(String, Option<Sample>)> = all
        .iter()
        .map(|s| (s.model.clone(), Sample::new(&per(&s.model, &cpu))))
        .collect();
    let least = samples
        .iter()
        .filter_map(|(m, s)| Some((m, s.as_ref()?)))
        .min_by(|a, b| a.1.median().total_cmp(&b.1.median()));
    let shown = |m: &str| {
        all.iter()
            .find(|s| s.model == m)
            .map_or(m.to_string(), |s| s.shown.clone())
    };
    let cpus = crate::metrics::cpu::machine_cpus();
    let mut models = Vec::new();
    for s in all {
        let cpu_per = per(&s.model, &cpu);
        if cpu_per.is_empty() && per(&s.model, &|c| c.metrics().latency_p99_us).is_empty() {
            continue;
        }
        let med = |v: Vec<(usize, f64)>| {
            crate::stats::Summary::of(&v.iter().map(|x| x.1).collect::<Vec<_>>()).map(|s| s.median)
        };
        let busy = med(per(&s.model, &|c| {
            let server = c.server.as_ref()?;
            let wall = c.wall_seconds;
            (wall > 0.0).then(|| server.cpu_user_seconds / wall)
        }));
        let p99 = med(per(&s.model, &|c| c.metrics().latency_p99_us));
        let mine = samples
            .iter()
            .find(|(m, _)| *m == s.model)
            .and_then(|(_, x)| x.as_ref());
        let versus_least = match (mine, least) {
            (Some(_), Some((lm, _))) if *lm == s.model => Some(VersusLeast {
                least: lm.clone(),
                ratio: 1.0,
                call: LeastCall::Least,
            }),
            (Some(a), Some((lm, b))) => {
                let c = paired::compare(a, b, data.plan.rule());
                Some(VersusLeast {
                    least: lm.clone(),
                    ratio: c.ratio,
                    call: match c.outcome {
                        Outcome::Different => LeastCall::Different,
                        Outcome::Equivalent => LeastCall::Equivalent,
                        _ => LeastCall::Inconclusive,
                    },
                })
            }
            _ => None,
        };
        let memory = data
            .cells
            .iter()
            .filter(|c| {
                c.cell.model == s.model
                    && c.cell.connections == n
                    && c.cell.work.as_ref() == work.as_ref()
                    && c.slot.as_ref().is_some_and(|s| s.first)
            })
            .find_map(|c| {
                crate::analysis::memory::delta(c, crate::analysis::memory::Kind::User, cpus)
            })
            .map(|d| {
                if d.resolved() {
                    Memory {
                        kib: d.per_connection_kib(),
                        at_most: false,
                    }
                } else {
                    Memory {
                        kib: d.bound_kib(),
                        at_most: true,
                    }
                }
            });
        models.push(CostRow {
            model: s.model.clone(),
            shown: shown(&s.model),
            p99_seconds: p99.map(|v| v / 1e6),
            server_cpus_busy: busy,
            cpu_per_message_seconds: med(cpu_per),
            versus_least,
            memory_per_connection: memory,
            rounds: per(&s.model, &|_| Some(1.0)).len(),
        });
    }
    Some(Cost { rate, models })
}

/// The cost table at `n` ([`cost_of`]).
fn cost_table(data: &RunData, n: usize, all: &[Searched]) -> Option<(f64, Table)> {
    let cost = cost_of(data, n, all)?;
    let mut t = Table::new(
        format!(
            "Cost at {}/s, the highest rate every model that held one held, {} connections",
            format_count(cost.rate),
            format_count(n as f64)
        ),
        &[
            "model",
            "p99",
            "server CPUs busy",
            "server CPU/msg",
            "vs least CPU/msg",
            "server memory/conn",
            "rounds",
        ],
    );
    t.rows = cost.models.iter().map(CostRow::row).collect();
    t.notes.push(
        "Each model's server at the same offered rate, once per round in the round's shuffled order; medians over the rounds. CPUs busy: the server tree's CPU over the slot's wall time. CPU/msg: that CPU over every echo of the slot; against the least, the geometric mean of the per-round ratios with its interval (paired rounds). Memory: the server tree's anonymous PSS its connections added, over the connections (≤: below what one sample resolves).".into(),
    );
    Some((cost.rate, t))
}

fn curve_table(search: &Search, work: Option<&Profile>, n: usize, all: &[Searched]) -> Table {
    let mut header: Vec<String> = ["model", "offered", "slots", "achieved"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(search.slo.targets.iter().map(|t| {
        format!(
            "slower than {} (of ≤ {:.1} %)",
            seconds(t.seconds_under(work)),
            100.0 * (1.0 - t.quantile())
        )
    }));
    header.extend(
        [
            "p50",
            "p99",
            "p99.9",
            "p99 uncorrected",
            "server CPU/msg",
            "call",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(
        format!(
            "Latency against offered load, {} connections",
            format_count(n as f64)
        ),
        &h,
    );
    let s_or = |v: f64| {
        if v.is_finite() {
            seconds(v)
        } else {
            "–".into()
        }
    };
    for s in all {
        for p in &s.points {
            let mut row = vec![
                s.shown.clone(),
                format!("{}/s", format_count(p.rate)),
                if p.failed > 0 {
                    format!("{} ({} failed)", p.slots, p.failed)
                } else {
                    p.slots.to_string()
                },
                format!("{:.1} %", 100.0 * p.share),
            ];
            let pct = |v: f64| format!("{:.2} %", 100.0 * v);
            for f in &p.above {
                row.push(match f.interval {
                    Some((lo, hi)) => format!("{} [{}, {}]", pct(f.value), pct(lo), pct(hi)),
                    None => pct(f.value),
                });
            }
            if p.above.is_empty() {
                row.extend(search.slo.targets.iter().map(|_| "–".to_string()));
            }
            row.extend([
                s_or(p.p50),
                s_or(p.p99),
                s_or(p.p999),
                s_or(p.p99_uncorrected),
                p.cpu_per_message.map_or("–".into(), seconds),
                call_text(p),
            ]);
            t.rows.push(row);
        }
    }
    t.notes.push(
        "Each offered rate a model was measured at: its slots, the share of the offered rate answered, the share of echoes slower than each target (pooled over the slots, [interval of the slots' shares] once it has enough; a target holds while that share stays within what its percentile allows, 1 % for p99), p50, p99 and p99.9 corrected for coordinated omission (from when each message was due) and the p99 from when it was written, and the server's CPU per message. Call: holds or misses, decided by the interval, or provisional (?) by the point figure; near: at the target within noise.".into(),
    );
    t
}

fn call_text(p: &RatePoint) -> String {
    use crate::capacity::search::{Call, Miss};
    let q = if p.decided { "" } else { "?" };
    match &p.call {
        Call::Holds => format!("holds{q}"),
        Call::Near => "near".into(),
        Call::Misses(Miss::Saturated(s)) => {
            format!("misses{q}: saturated ({:.0} % answered)", 100.0 * s)
        }
        Call::Misses(Miss::Over(_)) => format!("misses{q}"),
        Call::Misses(Miss::Failed(why)) => format!("failed: {why}"),
    }
}

/// The answer at a glance, one line per count.
pub fn glance(data: &RunData) -> Vec<String> {
    let Some(search) = &data.plan.capacity else {
        return Vec::new();
    };
    let work = work_of(data);
    let mut lines = Vec::new();
    for &n in &data.plan.connections {
        let all = searched(data, n);
        let (best, calls) = versus(&all, data.plan.margin);
        let at = format!(
            "{} connections, {}",
            format_count(n as f64),
            targets_text(search, work.as_ref())
        );
        let Some(b) = best else {
            let never: Vec<&str> = all
                .iter()
                .filter(|s| matches!(s.state, State::Ended(End::NeverMet(_))))
                .map(|s| s.shown.as_str())
                .collect();
            lines.push(if never.len() == all.len() && !all.is_empty() {
                format!("{at}: no model met the target even at the least rate tried")
            } else {
                format!("{at}: no model held a rate, decided")
            });
            continue;
        };
        let s = &all[b];
        let (h, m) = s.bracket();
        let mut line = format!(
            "{at}: {} carries the most ({})",
            s.shown,
            bracket_text(h, m)
        );
        let pick = |v: &Versus| {
            all.iter()
                .zip(&calls)
                .filter(|(_, c)| *c == v)
                .map(|(s, _)| s.shown.as_str())
                .collect::<Vec<_>>()
        };
        let eq = pick(&Versus::Equivalent);
        if !eq.is_empty() {
            line += &format!("; equivalent: {}", crate::present::words::and_list(&eq));
        }
        let less = pick(&Versus::Less);
        if !less.is_empty() {
            line += &format!("; less: {}", crate::present::words::and_list(&less));
        }
        let undecided: Vec<&str> = all
            .iter()
            .zip(&calls)
            .filter(|(_, c)| matches!(c, Versus::Inconclusive(_)))
            .map(|(s, _)| s.shown.as_str())
            .collect();
        if !undecided.is_empty() {
            line += &format!(
                "; not told apart: {}",
                crate::present::words::and_list(&undecided)
            );
        }
        let defects: Vec<&str> = all
            .iter()
            .filter(|s| s.above.is_some())
            .map(|s| s.shown.as_str())
            .collect();
        if !defects.is_empty() {
            line += &format!(
                "; ABOVE THEIR BOUND (a defect): {}",
                crate::present::words::and_list(&defects)
            );
        }
        lines.push(line);
        if let Some((rate, t)) = cost_table(data, n, &all) {
            let parts: Vec<String> = t
                .rows
                .iter()
                .map(|r| format!("{} {} CPUs ({}/msg)", r[0], r[2], r[3]))
                .collect();
            lines.push(format!(
                "{} connections at {}/s, which every model that held a rate held: {}",
                format_count(n as f64),
                format_count(rate),
                parts.join(", ")
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn searched_with(model: &str, end: End) -> Searched {
        Searched {
            model: model.into(),
            shown: model.into(),
            state: State::Ended(end),
            points: Vec::new(),
            knee: None,
            estimate: None,
            bound: None,
            above: None,
        }
    }

    fn found(held: f64, missed: f64) -> End {
        End::Found { held, missed }
    }

    #[test]
    fn a_model_carries_less_only_beyond_the_margin_and_is_equivalent_within_it() {
        // One server under two names (measured so on this host, one
        // instance each): the best held 256,000/s and the twin missed
        // 250,000/s, 2.4 % below: not less, and not told apart.
        let all = [
            searched_with("epoll", found(230_000.0, 250_000.0)),
            searched_with("epoll2", found(256_000.0, 273_000.0)),
        ];
        let (best, calls) = versus(&all, 0.05);
        assert_eq!(best, Some(1));
        assert!(
            matches!(calls[0], Versus::Inconclusive(_)),
            "{:?}",
            calls[0]
        );
        // Missed 200,000/s where the best held 256,000/s: less.
        let all = [
            searched_with("epoll", found(180_000.0, 200_000.0)),
            searched_with("epoll2", found(256_000.0, 273_000.0)),
        ];
        assert_eq!(versus(&all, 0.05).1[0], Versus::Less);
        // Brackets whose every ratio lies within ±5 %: equivalent.
        let all = [
            searched_with("epoll", found(250_000.0, 262_000.0)),
            searched_with("epoll2", found(256_000.0, 262_000.0)),
        ];
        assert_eq!(versus(&all, 0.05).1[0], Versus::Equivalent);
        // An unstable bracket is read as widened.
        let unstable = End::Unstable {
            held: Some(200_000.0),
            missed: Some(262_000.0),
            searched: (Some(250_000.0), Some(262_000.0)),
            overturned: cap::Overturned::Held,
            drift: Some(1.1),
        };
        let all = [
            searched_with("epoll", unstable),
            searched_with("epoll2", found(256_000.0, 262_000.0)),
        ];
        assert!(matches!(versus(&all, 0.05).1[0], Versus::Inconclusive(_)));
    }
}
