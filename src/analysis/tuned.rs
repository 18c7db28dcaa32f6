//! What `c10k run --tune` kept, as a table for one work profile: each
//! model at each count with the settings it ran with, its defaults, the
//! two figures from the search's paired rounds and their ratio, and why
//! the search kept what it kept. Reads the plan only.

use crate::export::table::Table;
use crate::present::units::{format_count, sig3};
use crate::results::dir::RunData;

/// The tuning table: what `--tune` kept, or the pools a preset sized
/// ([`crate::runner::tune::sized`]); `None` when neither.
pub fn table(data: &RunData) -> Option<Table> {
    let tune = data.plan.tune.as_ref();
    let p = data.plan.tune_primary();
    let mut t = Table::new(
        if tune.is_some() {
            format!(
                "Each model at its best (--tune): the settings each ran with, beside its defaults ({})",
                p.label()
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
    // What the model costs as it ran: the threads and processes of its
    // server holding its connections, in the matrix's cells.
    let tasks = |model: &str, n: usize| -> Option<String> {
        let mut v: Vec<(u64, u64)> = data
            .cells
            .iter()
            .filter(|c| c.cell.model == model && c.cell.connections == n)
            .filter_map(|c| c.server.as_ref())
            .map(|s| (s.loaded.threads, s.loaded.processes))
            .filter(|(t, _)| *t > 0)
            .collect();
        v.sort_unstable();
        let (t, p) = *v.get(v.len() / 2)?;
        Some(format!(
            "{}, {}",
            format_count(t as f64),
            format_count(p as f64)
        ))
    };
    let dash = || "–".to_string();
    for r in sorted(data) {
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
            r.tried.len().to_string(),
            tasks(&r.model, r.connections).unwrap_or_else(dash),
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
        for (row, r) in t.rows.iter_mut().zip(sorted(data)) {
            row.insert(
                7,
                r.at_target.as_ref().map_or_else(dash, |a| {
                    let defaults = match (a.defaults_held, a.defaults_missed) {
                        (_, Some(_)) => "missed it",
                        (Some(_), _) => "held it",
                        _ if a.found_held.is_some() => "undecided",
                        _ => "not measured",
                    };
                    format!(
                        "{}, {} (defaults {defaults})",
                        rate(a.found_held),
                        rate(a.found_missed),
                    )
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
fn sorted(data: &RunData) -> Vec<&crate::results::tune::Tuned> {
    let mut rows: Vec<&crate::results::tune::Tuned> = data.plan.tuned.iter().collect();
    rows.sort_by_key(|r| {
        (
            r.connections,
            data.plan.models.iter().position(|m| *m == r.model),
        )
    });
    rows
}
