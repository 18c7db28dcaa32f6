//! `c10k compare BASE NEW`: did it get faster? Two runs (results
//! directories of `c10k run`, or `c10k load --json` reports) cell by cell,
//! each cell's figure as NEW/BASE with its 95 % interval and a verdict
//! (slower, faster, equivalent within the margin, or inconclusive), a
//! first line that says how many cells are slower and the worst, the
//! settings that differ named above everything, and a gate for CI
//! (`--fail-if-slower`).
//!
//! - [`input`]: reading a side (a run, or loads wrapped as one);
//! - [`settings`]: what differs between the sides, and what must not;
//! - [`cells`]: matching cells and testing their figures (the statistics
//!   and why);
//! - [`report`]: the result as one value, and its JSON schema;
//! - [`text`]: the result for the terminal and for a pull request;
//!   the page is [`crate::report::compare`].
//!
//! **Drift between sessions.** This machine's figures swing by a third
//! from hour to hour, and two sessions an hour apart can differ for every
//! model alike; the repeats within a session do not see that. So when
//! every tested cell moved the same way by about as much, the comparison
//! says so ([`Comparison::drift`]), and `--reference MODEL` (a model run
//! on both sides that did not change) divides every figure by that
//! model's in the same round, which cancels what the sessions share. The
//! strongest comparison is still one run holding both servers (`c10k run
//! --server old=… --server new=…`), whose rounds are paired.

pub mod at_target;
pub mod cells;
pub mod input;
pub mod report;
pub mod settings;
pub mod text;

use serde_json::Value;

use self::cells::Rules;
use self::input::Side;
use self::report::{Comparison, Gate, PrimaryInfo, SideInfo, Summary, Verdict, SCHEMA_VERSION};
use crate::analysis::summary::{margin_text, times, words};
use crate::present::units::format_count;

/// How to compare (from `c10k compare`'s or `c10k run --baseline`'s
/// flags).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Equivalent within ± this share; slower or faster only beyond it.
    pub margin: f64,
    /// Fail (exit 1) when a cell is slower by more than this share.
    pub fail_if_slower: Option<f64>,
    /// A model every figure is divided by, round by round.
    pub reference: Option<String>,
    pub command: String,
}

/// Why two sides cannot be compared.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// They measure different things, or share no cell (exit 2).
    Apart(String),
    /// No cell was measured on both sides (exit 5).
    NothingMeasured(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Apart(s) | Refusal::NothingMeasured(s) => f.write_str(s),
        }
    }
}

/// What a side's environment says of `key`.
fn env_text(env: &Value, key: &str) -> Option<String> {
    env.get(key).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

fn side_info(side: &Side) -> SideInfo {
    let env = &side.data.environment;
    SideInfo {
        path: side.path.display().to_string(),
        kind: side.kind,
        experiment: side.data.plan.experiment.clone(),
        runs: side
            .data
            .cells
            .iter()
            .map(|c| c.cell.run)
            .max()
            .unwrap_or(0),
        c10k_version: env_text(env, "c10k_version"),
        hostname: env_text(env, "hostname"),
        kernel: env_text(env, "kernel"),
        cpu_model: env_text(env, "cpu_model"),
    }
}

/// Whether the two sides can be compared as `settings` asks, from their
/// plans alone: the same kind of input, the same frame (loop, figure,
/// message), the `--reference` model on both, and a cell in common. `c10k
/// run --baseline` asks it of the plan it is about to run, before any cell.
pub fn comparable(settings: &Settings, base: &Side, new: &Side) -> Result<(), Refusal> {
    if base.kind != new.kind {
        return Err(Refusal::Apart(format!(
            "BASE {} is {}, NEW {} is {}: compare a run with a run, loads with loads",
            base.path.display(),
            kind_text(base.kind),
            new.path.display(),
            kind_text(new.kind)
        )));
    }
    let (bp, np) = (&base.data.plan, &new.data.plan);
    if let Some(why) = settings::frame(bp, np) {
        return Err(Refusal::Apart(why));
    }
    if let Some(r) = &settings.reference {
        if bp.capacity.is_some() {
            return Err(Refusal::Apart(format!(
                "--reference {r}: capacity searches are compared by the rates each decided, not round by round; leave --reference out"
            )));
        }
        for (name, side) in [("BASE", base), ("NEW", new)] {
            if !side.data.plan.cells.iter().any(|c| c.model == *r) {
                return Err(Refusal::Apart(format!(
                    "--reference {r}: {name} {} has no cell of {r}",
                    side.path.display()
                )));
            }
        }
    }
    if cells::matching(base, new).0.is_empty() {
        return Err(Refusal::Apart(format!(
            "BASE {} and NEW {} share no cell (model, connections and work)",
            base.path.display(),
            new.path.display()
        )));
    }
    Ok(())
}

/// The two sides compared.
pub fn compare(settings: &Settings, base: &Side, new: &Side) -> Result<Comparison, Refusal> {
    comparable(settings, base, new)?;
    let (bp, np) = (&base.data.plan, &new.data.plan);
    let (matched, only_base, only_new) = cells::matching(base, new);
    let rules = Rules {
        margin: settings.margin,
        fail_if_slower: settings.fail_if_slower,
        reference: settings.reference.as_deref(),
    };
    let searches = bp.capacity.is_some();
    let cells: Vec<report::Cell> = if searches {
        Vec::new()
    } else {
        matched
            .iter()
            .map(|k| cells::cell(base, new, k, &rules))
            .collect()
    };
    let capacity: Vec<report::Capacity> = if searches {
        at_target::cells(
            base,
            new,
            &matched,
            settings.margin,
            settings.fail_if_slower,
        )
    } else {
        Vec::new()
    };
    let measured = if searches {
        capacity
            .iter()
            .any(|c| c.base.measured > 0 && c.new.measured > 0)
    } else {
        cells
            .iter()
            .any(|c| !c.primary.base.values.is_empty() && !c.primary.new.values.is_empty())
    };
    if !measured {
        return Err(Refusal::NothingMeasured(format!(
            "no cell was measured on both sides ({} in common): nothing to compare",
            matched.len()
        )));
    }
    // A search's plan ranks by latency, but its comparison by the rate
    // held: higher is better.
    let higher = searches || bp.primary.higher_is_better();
    let (worse, better) = if searches {
        ("lower", "higher")
    } else {
        words(higher)
    };
    let rows: Vec<Row> = if searches {
        matched
            .iter()
            .zip(&capacity)
            .map(|(k, c)| Row {
                key: k.text(),
                verdict: c.verdict,
                worse: at_target::worse_by(c),
                ratio: at_target::range_text(c),
                gate_failed: c.gate_failed,
            })
            .collect()
    } else {
        matched
            .iter()
            .zip(&cells)
            .map(|(k, c)| Row {
                key: k.text(),
                verdict: c.primary.verdict,
                worse: c.primary.worse(higher).map_or(0.0, |w| w.0),
                ratio: ratio_text(&c.primary),
                gate_failed: c.gate_failed,
            })
            .collect()
    };
    let untested = if searches {
        "no rate decided on a side"
    } else {
        "a single run on a side"
    };
    let summary = summary(&rows, settings, (worse, better), untested);
    let gate = settings.fail_if_slower.map(|share| {
        let how = if searches {
            "tested by their decided rates"
        } else {
            "tested at 95 % each"
        };
        gate(&rows, share, worse, (how, untested))
    });
    let mut warnings = Vec::new();
    for (name, side) in [("BASE", base), ("NEW", new)] {
        for w in &side.warnings {
            warnings.push(format!("{name}: {w}"));
        }
    }
    Ok(Comparison {
        schema_version: SCHEMA_VERSION,
        command: settings.command.clone(),
        margin: settings.margin,
        fail_if_slower: settings.fail_if_slower,
        reference: settings.reference.clone(),
        test: if searches {
            capacity_test_text(settings)
        } else {
            test_text(settings)
        },
        base: side_info(base),
        new: side_info(new),
        primary: PrimaryInfo {
            figure: bp.primary,
            label: match &bp.capacity {
                Some(search) => format!("capacity at {}", search.slo.describe()),
                None => bp.figure_label().into(),
            },
            higher_is_better: higher,
            worse: worse.into(),
            better: better.into(),
        },
        differences: settings::differences(bp, &base.data.environment, np, &new.data.environment),
        other_machine: settings::other_machine(&base.data.environment, &new.data.environment),
        drift: drift(&cells, settings, higher),
        memory: if searches {
            Vec::new()
        } else {
            cells::memory(base, new, &matched)
        },
        summary,
        cells,
        capacity,
        only_base,
        only_new,
        warnings,
        gate,
    })
}

fn kind_text(k: input::Kind) -> &'static str {
    match k {
        input::Kind::Run => "a results directory of c10k run",
        input::Kind::Load => "c10k load reports",
    }
}

/// The test in a sentence.
fn test_text(s: &Settings) -> String {
    format!(
        "Welch's t on the logarithms of each side's runs (runs of two sessions are not \
         paired), 95 % interval of NEW/BASE; slower or faster only when the whole interval \
         lies beyond {}, equivalent when it lies within it{}",
        margin_text(s.margin),
        s.reference.as_ref().map_or_else(String::new, |r| format!(
            "; every figure taken over {r}'s in the same round (its own cells as measured)"
        ))
    )
}

/// The test of two capacity searches in a sentence.
fn capacity_test_text(s: &Settings) -> String {
    format!(
        "each side's capacity lies between the highest rate it held and the lowest it missed, \
         each decided by its own interval; NEW/BASE lies between NEW held / BASE missed and NEW \
         missed / BASE held, lower or higher only when that range lies beyond {}, equivalent \
         when it lies within it",
        margin_text(s.margin)
    )
}

/// `0.91× [0.88, 0.94]`, `0.0685× [0.0601, 0.0781]`: two decimals, or
/// three significant digits below 0.1.
pub fn ratio_text(f: &report::FigurePair) -> String {
    let t = crate::analysis::summary::small_times;
    match (f.ratio, f.interval) {
        (Some(r), Some((lo, hi))) => format!("{}× [{}, {}]", t(r), t(lo), t(hi)),
        (Some(r), None) => format!("{}×", t(r)),
        _ => "–".into(),
    }
}

/// A cell as the first line and the gate read it.
struct Row {
    /// `epoll at 1,000`.
    key: String,
    verdict: Verdict,
    /// How far worse, the worse-way ratio (the worst cell is named).
    worse: f64,
    /// The ratio as printed.
    ratio: String,
    gate_failed: bool,
}

/// The first line: how many cells are worse and the worst, then the
/// other verdicts; `untested`: why a cell is not tested.
fn summary(
    rows: &[Row],
    s: &Settings,
    (worse, better): (&str, &str),
    untested_why: &str,
) -> Summary {
    let count = |v: Verdict| rows.iter().filter(|c| c.verdict == v).count();
    let (slower, faster, equivalent, inconclusive, untested) = (
        count(Verdict::Slower),
        count(Verdict::Faster),
        count(Verdict::Equivalent),
        count(Verdict::Inconclusive),
        count(Verdict::Untested),
    );
    let tested = rows.len() - untested;
    let worst = rows
        .iter()
        .filter(|c| c.verdict == Verdict::Slower)
        .max_by(|a, b| a.worse.total_cmp(&b.worse));
    let mut line = match worst {
        Some(c) => format!(
            "{slower} of {tested} cells {worse}, worst {}: {}",
            c.key, c.ratio
        ),
        None if tested == 0 => "no cell tested".to_string(),
        None => format!("0 of {tested} cells {worse}"),
    };
    let mut rest = Vec::new();
    if faster > 0 {
        rest.push(format!("{faster} {better}"));
    }
    if equivalent > 0 {
        rest.push(format!(
            "{equivalent} equivalent ({})",
            margin_text(s.margin)
        ));
    }
    if inconclusive > 0 {
        rest.push(format!("{inconclusive} inconclusive"));
    }
    if untested > 0 {
        rest.push(format!("{untested} untested ({untested_why})"));
    }
    if !rest.is_empty() {
        line.push_str("; ");
        line.push_str(&rest.join(", "));
    }
    Summary {
        line,
        matched: rows.len(),
        tested,
        slower,
        faster,
        equivalent,
        inconclusive,
        untested,
    }
}

/// When every tested cell (three or more) moved the same way beyond the
/// margin by about as much (each within the margin of their median): a
/// line saying the machine likelier moved than every model.
fn drift(cells: &[report::Cell], s: &Settings, higher: bool) -> Option<String> {
    if s.reference.is_some() {
        return None;
    }
    let tested: Vec<&report::Cell> = cells
        .iter()
        .filter(|c| c.primary.verdict != Verdict::Untested)
        .collect();
    if tested.len() < 3 {
        return None;
    }
    let same = |v: Verdict| tested.iter().all(|c| c.primary.verdict == v);
    if !(same(Verdict::Slower) || same(Verdict::Faster)) {
        return None;
    }
    let mut ratios: Vec<f64> = tested.iter().filter_map(|c| c.primary.ratio).collect();
    ratios.sort_by(f64::total_cmp);
    let mid = crate::stats::quantile(&ratios, 0.5);
    let alike = ratios
        .iter()
        .all(|r| (r / mid).ln().abs() <= (1.0 + s.margin).ln());
    let (worse, better) = words(higher);
    alike.then(|| {
        format!(
            "every cell moved alike, by about {}×: a change of the machine between the two \
             sessions is likelier than of every model ({} each); compare with --reference \
             MODEL, a model you did not change, run on both sides",
            times(mid),
            if same(Verdict::Slower) { worse } else { better }
        )
    })
}

/// `--fail-if-slower`: the cells worse by more than `share` with 95 %
/// confidence (a capacity search: by its decided rates).
fn gate(rows: &[Row], share: f64, worse: &str, (how, untested_why): (&str, &str)) -> Gate {
    let failed: Vec<String> = rows
        .iter()
        .filter(|c| c.gate_failed)
        .map(|c| format!("{} ({})", c.key, c.ratio))
        .collect();
    let tested = rows
        .iter()
        .filter(|c| c.verdict != Verdict::Untested)
        .count();
    let untested = rows.len() - tested;
    let pct = crate::present::units::sig3(share * 100.0);
    let not_gated = if untested > 0 {
        format!("; {untested} not gated ({untested_why})")
    } else {
        String::new()
    };
    let line = if failed.is_empty() {
        format!(
            "--fail-if-slower {pct} %: passed, no cell {worse} by more than {pct} % \
             ({tested} cells {how}{not_gated})"
        )
    } else {
        format!(
            "--fail-if-slower {pct} %: FAILED, {} {worse} by more than {pct} % ({tested} \
             cells {how}{not_gated}): {}",
            if failed.len() == 1 {
                "1 cell".to_string()
            } else {
                format!("{} cells", format_count(failed.len() as f64))
            },
            failed.join("; ")
        )
    };
    Gate {
        share,
        failed,
        line,
    }
}
