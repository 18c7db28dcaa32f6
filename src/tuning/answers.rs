//! What `c10k run --tune` kept, as a table for one work profile: each
//! model at each count with the settings it ran with, its defaults, the
//! two figures from the search's paired rounds and their ratio, and why
//! the search kept what it kept; and the same as data ([`answers`]), for
//! results.json. Reads the plan only.

use schemars::JsonSchema;
use serde::Serialize;

use crate::export::table::Table;
use crate::present::units::{format_count, sig3};
use crate::results::dir::RunData;

/// The tuning table: what `--tune` kept, or the pools a preset sized
/// ([`crate::runner::tuner::sized`]); `None` when neither.
pub fn table(data: &RunData) -> Option<Table> {
    let tune = data.plan.tune.as_ref();
    let p = data.plan.tune_primary();
    let mut t = Table::new(
        if tune.is_some() {
            format!(
                "Each model at its best (--tune): the settings each ran with, beside its defaults ({})",
                p.label_over(data.plan.workload.protocol)
            )
        } else {
            "Pools sized for the work: the settings each model ran with (c10k run --tune searches them)".to_string()
        },
        &[
            "model",
            "connections",
            "ran with",
            "defaults",
            "defaults' figure",
            "best's figure",
            "best / defaults",
            "tried",
            "threads, processes",
            "why",
        ],
    );
    let dash = || "–".to_string();
    let all = answers(data);
    for r in &all {
        t.rows.push(vec![
            r.model.clone(),
            format_count(r.connections as f64),
            r.kept.clone(),
            if r.defaults.is_empty() {
                dash()
            } else {
                r.defaults.clone()
            },
            r.default_figure.map_or_else(dash, |v| p.format(v)),
            r.best_figure.map_or_else(dash, |v| p.format(v)),
            match (r.ratio, r.interval) {
                (Some(x), Some((lo, hi))) => {
                    format!("{}× [{}, {}]", sig3(x), sig3(lo), sig3(hi))
                }
                (Some(x), None) => format!("{}×", sig3(x)),
                _ => dash(),
            },
            r.tried.to_string(),
            match (r.threads, r.processes) {
                (Some(t), Some(p)) => {
                    format!("{}, {}", format_count(t as f64), format_count(p as f64))
                }
                _ => dash(),
            },
            match &r.stopped {
                Some(s) => format!("{} (stopped by {s})", r.why),
                None => r.why.clone(),
            },
        ]);
    }
    if t.rows.is_empty() {
        return None;
    }
    let Some(tune) = tune else {
        // Nothing was searched: no figures of the defaults to show.
        let keep = [0, 1, 2, 3, 8, 9];
        let only = |row: &[String]| keep.iter().map(|i| row[*i].clone()).collect();
        t.header = only(&t.header);
        t.rows = t.rows.iter().map(|r| only(r)).collect();
        t.notes.push(
            "A pool one thread per CPU caps a handler that blocks at CPUs / block; each pool here was sized by Little's law for the work, as a practitioner would size it, and not searched: the defaults' figure was not measured."
                .into(),
        );
        return Some(t);
    };
    t.notes.push(format!(
        "Each search measured a model's settings as resident servers side by side, {} rounds a step in a shuffled order with its defaults in every round; a knob moved to a neighbouring value only when it was faster than the current one in every round they shared and by more than the {} margin at the median, and the settings found were kept only when the paired test (95 %) showed them faster than the defaults. A pool started from Little's law (threads ≥ the rate the loop can offer × the time a request holds one). The figures here are the search's own slots; every other table measured the model with the settings it ran with.",
        tune.rounds,
        crate::analysis::summary::margin_text(data.plan.margin),
    ));
    if let Some(search) = &data.plan.capacity {
        let rate =
            |v: Option<f64>| v.map_or_else(|| "–".into(), |v| format!("{}/s", format_count(v)));
        t.header.insert(
            7,
            "at the target: held, missed (defaults at that rate)".into(),
        );
        for (row, r) in t.rows.iter_mut().zip(&all) {
            row.insert(
                7,
                r.at_target.as_ref().map_or_else(dash, |a| {
                    let defaults = match a.defaults {
                        Defaults::Missed => "missed it",
                        Defaults::Held => "held it",
                        Defaults::Undecided => "undecided",
                        Defaults::NotMeasured => "not measured",
                    };
                    format!("{}, {} (defaults {defaults})", rate(a.held), rate(a.missed),)
                }),
            );
        }
        t.notes.push(format!(
            "With --slo the climb ranks closed-loop throughput, and a setting it found is kept only when its own capacity search held a rate at {} that the defaults, measured at that rate until it was decided, missed; the capacity table measured each model again with what it kept.",
            search.slo.describe()
        ));
    }
    t.notes.push(format!(
        "The searches took {} of a {} budget; every slot is in tune.jsonl beside the results.",
        crate::present::units::seconds(data.plan.tuned.iter().map(|r| r.seconds).sum()),
        crate::present::units::seconds(tune.budget_seconds)
    ));
    Some(t)
}

/// What the plan's searches kept, by count and then the plan's order.
fn sorted(data: &RunData) -> Vec<&crate::results::tuned::Tuned> {
    let mut rows: Vec<&crate::results::tuned::Tuned> = data.plan.tuned.iter().collect();
    rows.sort_by_key(|r| {
        (
            r.connections,
            data.plan.models.iter().position(|m| *m == r.model),
        )
    });
    rows
}

/// The defaults at the rate the setting found held, with `--slo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Defaults {
    /// They missed it: the setting found is kept.
    Missed,
    Held,
    Undecided,
    NotMeasured,
}

impl Defaults {
    fn of(a: &crate::results::tuned::AtTarget) -> Defaults {
        match (a.defaults_held, a.defaults_missed) {
            (_, Some(_)) => Defaults::Missed,
            (Some(_), _) => Defaults::Held,
            _ if a.found_held.is_some() => Defaults::Undecided,
            _ => Defaults::NotMeasured,
        }
    }
}

/// With `--slo`: the setting found against the defaults at the target.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AtTarget {
    /// The targets, in words.
    pub target: String,
    /// The setting found, in words.
    pub found: String,
    /// Its capacity search's highest rate held and lowest missed.
    pub held: Option<f64>,
    pub missed: Option<f64>,
    pub defaults: Defaults,
}

/// What `--tune` kept for one model at one count and work profile (or
/// the pool a preset sized): the row of the tuning table.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TunedAnswer {
    pub model: String,
    pub connections: usize,
    /// The work profile (`null`: none).
    pub work: Option<String>,
    /// The setting kept, in words (`pool 128`), or `defaults`.
    pub kept: String,
    /// The settings the matrix ran it with beside the run's (none: its
    /// defaults).
    pub settings: crate::server::settings::Settings,
    /// The run's defaults in words (empty: no knob to search).
    pub defaults: String,
    /// The figure the search ranked by (`throughput`, …).
    pub figure: crate::results::matrix::Primary,
    /// The defaults' median figure and the best's, in the search's rounds.
    pub default_figure: Option<f64>,
    pub best_figure: Option<f64>,
    /// The best over the defaults, paired, with its 95 % interval.
    pub ratio: Option<f64>,
    pub interval: Option<(f64, f64)>,
    /// Settings measured.
    pub tried: usize,
    /// The threads and processes of its server holding its connections
    /// in the matrix's cells (the median cell's), as it ran.
    pub threads: Option<u64>,
    pub processes: Option<u64>,
    /// Why the setting kept is kept.
    pub why: String,
    /// The search stopped before it ended, in words.
    pub stopped: Option<String>,
    pub at_target: Option<AtTarget>,
}

/// What every search of the plan kept (or the pools a preset sized), in
/// the tuning table's order.
pub fn answers(data: &RunData) -> Vec<TunedAnswer> {
    let figure = data.plan.tune_primary();
    sorted(data)
        .into_iter()
        .map(|r| (r, tasks(data, &r.model, r.connections)))
        .map(|(r, tasks)| TunedAnswer {
            threads: tasks.map(|t| t.0),
            processes: tasks.map(|t| t.1),
            model: r.model.clone(),
            connections: r.connections,
            work: r.work.as_ref().map(|w| w.to_string()),
            kept: r.kept.clone(),
            settings: r.settings.clone(),
            defaults: r.defaults.clone(),
            figure,
            default_figure: r.default_figure,
            best_figure: r.best_figure,
            ratio: r.ratio,
            interval: r.interval,
            tried: r.tried.len(),
            why: r.why.clone(),
            stopped: r.stopped.clone(),
            at_target: r.at_target.as_ref().map(|a| AtTarget {
                target: a.target.clone(),
                found: a.found.clone(),
                held: a.found_held,
                missed: a.found_missed,
                defaults: Defaults::of(a),
            }),
        })
        .collect()
}

/// What `model` costs as it ran at `n`: the threads and processes of its
/// server holding its connections, the median of the matrix's cells.
fn tasks(data: &RunData, model: &str, n: usize) -> Option<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = data
        .cells
        .iter()
        .filter(|c| c.cell.model == model && c.cell.connections == n)
        .filter_map(|c| c.server.as_ref())
        .map(|s| (s.loaded.threads, s.loaded.processes))
        .filter(|(t, _)| *t > 0)
        .collect();
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}
