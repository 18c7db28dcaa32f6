//! `c10k run --tune [BUDGET]` checked and added to a run plan: what the
//! search can run on (resident slots of c10k models, a throughput to
//! rank, a capacity at the target with `--slo`) and a budget that holds at least the first step of every search
//! ([`crate::runner::tuner`] runs them). Errors are one line saying what to
//! change.

use crate::present::units::{parse_duration, seconds};
use crate::results::matrix::{self, RunPlan};
use crate::results::tuned::{Chosen, Tune};

/// What `--tune` alone may spend: this many times the first steps of its
/// searches (room for two more steps each, where most end), and at least
/// [`LEAST_AUTO_SECONDS`].
pub const AUTO_STEPS: f64 = 3.0;
pub const LEAST_AUTO_SECONDS: f64 = 60.0;

/// Makes `plan` tune its models within `text` (a duration, or `auto`:
/// [`AUTO_STEPS`] times the first steps) before the matrix runs.
pub(crate) fn tune_of(plan: &mut RunPlan, text: &str, knobs: &[String]) -> Result<(), String> {
    let given = if text == AUTO {
        None
    } else {
        let d = parse_duration(text).map_err(|e| format!("--tune: {e}"))?;
        if d.is_zero() {
            return Err("--tune must be given a budget above 0, e.g. --tune 10m".into());
        }
        Some(d.as_secs_f64())
    };
    if plan.bench.is_some() {
        return Err(format!(
            "--tune: the {} experiment runs a micro-benchmark, which has no server to tune",
            plan.experiment
        ));
    }
    if plan.slots.is_none() {
        return Err(
            "--tune with this workload: the search compares settings in resident slots, which a timed closed or open loop has (not --sequential, a burst, churn or a fixed count of messages)"
                .into(),
        );
    }
    let mut picked: Vec<Chosen> = Vec::new();
    for text in knobs {
        let c = chosen(plan, text)?;
        // One range a knob: a second would be dropped, and the user's
        // range with it.
        if let Some(j) = picked
            .iter()
            .position(|p| p.model == c.model && p.flag == c.flag)
        {
            return Err(format!(
                "--tune-knob {text}: {}:{} is given twice (also as --tune-knob {}); give each knob once",
                c.model, c.flag, knobs[j]
            ));
        }
        picked.push(c);
    }
    plan.tune = Some(Tune {
        budget_seconds: given.unwrap_or(0.0),
        rounds: Tune::ROUNDS,
        most_steps: Tune::MOST_STEPS,
        knobs: picked,
    });
    let jobs = crate::runner::tuner::jobs(plan);
    let searched: Vec<_> = jobs.iter().filter(|j| !j.ladders.is_empty()).collect();
    if searched.is_empty() {
        return Err(
            "--tune: no model here has a knob to search (c10k models --knobs lists them; servers of your own keep their own settings)"
                .into(),
        );
    }
    for j in &searched {
        let first = crate::runner::tuner::first_settings(plan, j);
        if let Some(why) = matrix::unfit(j.connections, first) {
            return Err(format!(
                "--tune at {} connections: the first step of {}'s search is {why}; tune at fewer connections",
                j.connections, j.model
            ));
        }
    }
    let least: f64 = searched
        .iter()
        .map(|j| crate::runner::tuner::first_step_seconds(plan, j))
        .sum();
    let budget = given.unwrap_or((AUTO_STEPS * least).max(LEAST_AUTO_SECONDS));
    if let Some(t) = plan.tune.as_mut() {
        t.budget_seconds = budget;
    }
    if !crate::results::schedule::fits(least, budget) {
        return Err(format!(
            "--tune {text}: too small for one step of each search: the first steps of its {} searches take at least {} of slots; give at least that, or fewer models, counts or profiles",
            searched.len(),
            seconds(least)
        ));
    }
    Ok(())
}

/// `--tune` without a budget.
pub const AUTO: &str = "auto";

/// `--tune-knob MODEL:FLAG[=LEAST..MOST]` checked against the run's
/// models and their knobs.
fn chosen(plan: &RunPlan, text: &str) -> Result<Chosen, String> {
    use crate::server::knobs::{self, Values};
    let at = |why: String| format!("--tune-knob {text}: {why}");
    let (model, rest) = text.split_once(':').ok_or_else(|| {
        at("give MODEL:FLAG, e.g. hybrid:--workers or hybrid:--workers=8..512".into())
    })?;
    if !plan.models.iter().any(|m| m == model) {
        return Err(at(format!(
            "{model} is not a model of this run ({})",
            plan.models.join(", ")
        )));
    }
    let (m, _) = plan.model(model).ok_or_else(|| {
        at(format!(
            "{model} is not a c10k model: its knobs are its own"
        ))
    })?;
    let (flag, range) = match rest.split_once('=') {
        Some((f, r)) => (f, Some(r)),
        None => (rest, None),
    };
    let all = knobs::of(m);
    let knob = all.iter().find(|k| k.flag() == flag).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|k| k.flag()).collect();
        at(if names.is_empty() {
            format!("{model} has no knob (c10k models --knobs)")
        } else {
            format!(
                "{model} has no knob {flag}; its knobs are {} (c10k models --knobs)",
                crate::present::words::and_list(&names)
            )
        })
    })?;
    if let Some(why) = knob.unsearched {
        return Err(at(format!("the search leaves {flag} alone: {why}")));
    }
    let range = match (range, knob.values) {
        (None, _) => None,
        (Some(r), Values::Count { least, most }) => {
            let bad = || at(format!("give a range as LEAST..MOST, e.g. {flag}=8..512"));
            let (lo, hi) = r.split_once("..").ok_or_else(bad)?;
            let lo: u64 = lo.trim().parse().map_err(|_| bad())?;
            let hi: u64 = hi.trim().parse().map_err(|_| bad())?;
            if lo > hi {
                return Err(at(format!("{lo} is above {hi}")));
            }
            if lo < least || hi > most {
                return Err(at(format!(
                    "out of range: {flag} of {model} takes {}",
                    knobs::values_text(&knob.values)
                )));
            }
            Some((lo, hi))
        }
        (Some(_), v) => {
            return Err(at(format!(
                "{flag} takes {}: name it without a range",
                knobs::values_text(&v)
            )))
        }
    };
    Ok(Chosen {
        model: model.to_string(),
        flag: flag.to_string(),
        range,
    })
}
