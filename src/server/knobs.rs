//! The settings a practitioner would tune in each model, declared in one
//! place: each is a `c10k serve` flag with its range and the model's
//! default, so that a comparison can put each model at its best rather
//! than at its defaults (`c10k models --knobs` lists them). The range is
//! the one `serve` takes (the plan refuses a value outside it) and the
//! one `--tune` searches within.
//! A model declares its own ([`super::Model::knobs`]); `--interval`
//! belongs to every readiness loop and is added here. Cost: none until
//! read.

use super::settings::Field;
use super::Model;

/// What values a knob takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Values {
    /// A whole number from `least` to `most`.
    Count { least: u64, most: u64 },
    /// Bytes from `least` to `most`.
    Bytes { least: u64, most: u64 },
    /// A duration from `least` to `most` microseconds.
    Micros { least: u64, most: u64 },
    /// Given or not.
    Switch,
    /// One of these words.
    Choice(&'static [&'static str]),
}

/// One setting of a model worth tuning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Knob {
    /// The setting it moves (its `c10k serve` flag: [`Knob::flag`]).
    pub field: Field,
    /// What it sets, in a few words.
    pub what: &'static str,
    pub values: Values,
    /// The model's default, as the flag would take it (`CPUs`: one per
    /// CPU the server may use).
    pub default: &'static str,
    /// A word or two naming it beside a value, as a tuned model is shown:
    /// `pool` in "hybrid (pool 128)".
    pub short: &'static str,
    /// Why `c10k run --tune` leaves it at its default, where it does.
    pub unsearched: Option<&'static str>,
}

/// The pool of `--workers` threads, sized for blocking work.
pub const POOL: Knob = Knob {
    field: Field::Workers,
    what: "handler threads in the pool",
    values: Values::Count {
        least: 1,
        most: 4096,
    },
    default: "CPUs",
    short: "pool",
    unsearched: None,
};

/// One event loop per `--workers`, each on its own thread: past the CPUs
/// they help only where a handler blocks its loop (a loop per connection
/// at most).
pub const LOOPS: Knob = Knob {
    field: Field::Workers,
    what: "event loops, one thread each",
    values: Values::Count {
        least: 1,
        most: 1024,
    },
    default: "CPUs",
    short: "loops",
    unsearched: None,
};

/// Edge- rather than level-triggered epoll.
pub const EDGE: Knob = Knob {
    field: Field::Edge,
    what: "edge-triggered epoll (else level)",
    values: Values::Switch,
    default: "off",
    short: "edge",
    unsearched: None,
};

/// Every readiness loop's least time between two waits.
pub const INTERVAL: Knob = Knob {
    field: Field::Interval,
    what: "least time between two waits (batches readiness)",
    values: Values::Micros {
        least: 0,
        most: super::pace::MAX_INTERVAL.as_micros() as u64,
    },
    default: "0",
    short: "interval",
    unsearched: None,
};

impl Knob {
    /// The `c10k serve` flag that sets it.
    pub fn flag(&self) -> &'static str {
        self.field.flag()
    }
}

/// Every knob of `model`: its own, then `--interval` for a readiness
/// loop.
pub fn of(model: &dyn Model) -> Vec<Knob> {
    let mut out = model.knobs().to_vec();
    if model.readiness() {
        out.push(INTERVAL);
    }
    out
}

/// A knob's values in words: `1–4,096`, `16 KiB–1 GiB`, `0–1 s`,
/// `on or off`, `acceptor, shared, exclusive or reuseport`.
pub fn values_text(v: &Values) -> String {
    use crate::present::units::{format_count, kib, seconds};
    match *v {
        Values::Count { least, most } => {
            format!(
                "{}–{}",
                format_count(least as f64),
                format_count(most as f64)
            )
        }
        Values::Bytes { least, most } => {
            format!(
                "{}–{}",
                kib(least as f64 / 1024.0),
                kib(most as f64 / 1024.0)
            )
        }
        Values::Micros { least, most } => {
            let t = |us: u64| {
                if us == 0 {
                    "0".to_string()
                } else {
                    seconds(us as f64 / 1e6)
                }
            };
            format!("{}–{}", t(least), t(most))
        }
        Values::Switch => "on or off".into(),
        Values::Choice(words) => crate::present::words::and_list(words).replace(" and ", " or "),
    }
}

/// The registry as a table, model by model.
pub fn table() -> crate::export::table::Table {
    let mut t = crate::export::table::Table::new(
        "The knobs of each model: what a practitioner would tune",
        &["model", "flag", "sets", "values", "default", "--tune"],
    );
    for m in super::MODELS {
        let knobs = of(*m);
        if knobs.is_empty() {
            t.rows.push(vec![
                m.name().into(),
                "–".into(),
                "none: one task per connection, nothing to size".into(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
        for k in knobs {
            t.rows.push(vec![
                m.name().into(),
                k.flag().into(),
                k.what.into(),
                values_text(&k.values),
                k.default.into(),
                k.unsearched.map_or_else(
                    || "searched".to_string(),
                    |why| format!("left alone: {why}"),
                ),
            ]);
        }
    }
    t.notes.push(
        "Each flag goes to `c10k serve --model MODEL` (or a run's `--variant 'NAME=MODEL FLAG \
         VALUE'`); CPUs: one per CPU the server may use."
            .into(),
    );
    t.notes.push(
        "`c10k run --tune` searches each knob marked searched, one after another, pools from \
         Little's law; `--tune-knob MODEL:FLAG[=LEAST..MOST]` narrows it."
            .into(),
    );
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pools_and_loops_are_declared_where_they_are() {
        let flags = |name: &str| -> Vec<&'static str> {
            of(crate::server::find(name).unwrap())
                .iter()
                .map(|k| k.flag())
                .collect()
        };
        assert_eq!(flags("hybrid"), ["--workers", "--hand-back", "--interval"]);
        assert_eq!(flags("fork"), Vec::<&str>::new());
        assert!(flags("epoll-workers").contains(&"--accept"));
        assert!(flags("threads").contains(&"--stack-size"));
        assert!(flags("tokio").contains(&"--global-queue-interval"));
        let t = table();
        assert!(t.rows.iter().any(|r| r[0] == "fork" && r[1] == "–"));
    }
}
