//! `c10k run --tune` as a plan records it: the search's settings
//! ([`Tune`]) and, per model, count and work profile, what it kept and
//! what it measured on the way ([`Tuned`]), so the matrix runs each model
//! with its settings and every table can say which they were and what
//! they bought. The search itself is [`crate::tuning::climb`]; the
//! runner is [`crate::runner::tuner`]. Data only.

use serde::{Deserialize, Serialize};

use crate::server::settings::Settings;
use crate::server::work::Profile;

/// How the knobs are searched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tune {
    /// What the whole search may take, shared among its searches.
    pub budget_seconds: f64,
    /// Rounds of each step.
    pub rounds: usize,
    /// Steps a knob's ladder may climb past its first.
    pub most_steps: usize,
    /// `--tune-knob`: the only knobs searched of the models they name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knobs: Vec<Chosen>,
}

/// A knob the user chose to search (`--tune-knob hybrid:--workers=8..512`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chosen {
    pub model: String,
    pub flag: String,
    /// A count's range of the user's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<(u64, u64)>,
}

impl Tune {
    /// Three rounds a step (the fewest a paired test reads), six steps.
    pub const ROUNDS: usize = 3;
    pub const MOST_STEPS: usize = 6;
}

/// What the search of one model at one count and profile kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tuned {
    pub model: String,
    pub connections: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<Profile>,
    /// The settings the matrix runs the model with here (none: the run's
    /// defaults).
    #[serde(default, skip_serializing_if = "Settings::is_empty")]
    pub settings: Settings,
    /// The setting kept, in words (`pool 128`), or `defaults`.
    pub kept: String,
    /// The run's defaults in words (`pool 2`); empty for a model without
    /// a knob to search.
    pub defaults: String,
    /// The best setting measured, kept or not.
    pub best: String,
    /// Why the setting kept is kept, one line.
    pub why: String,
    /// The defaults' median figure, and the best's, in the rounds of the
    /// search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_figure: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_figure: Option<f64>,
    /// The best over the defaults, paired: ratio and its interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
    /// Every setting measured, in the order first measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tried: Vec<Tried>,
    /// The search stopped before it ended (the budget), said in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// With `--slo`: the setting found against the defaults at the
    /// target, each by its own capacity search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_target: Option<AtTarget>,
    /// What the search took, in seconds.
    pub seconds: f64,
}

/// With `--slo`, the climb's setting against the run's defaults at the
/// target: its capacity search's highest rate held and lowest missed
/// ([`crate::capacity::search`]), and the defaults at the rate it held:
/// held there (`defaults_held`), missed (`defaults_missed`), or neither,
/// undecided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AtTarget {
    /// The targets, in words (`p99 ≤ 5 ms beyond the work`).
    pub target: String,
    /// The setting the climb found, in words.
    pub found: String,
    pub found_held: Option<f64>,
    pub found_missed: Option<f64>,
    pub defaults_held: Option<f64>,
    pub defaults_missed: Option<f64>,
    /// Slots the two searches took.
    pub slots: usize,
    /// The budget ended them before they decided, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

impl AtTarget {
    /// Whether the setting found held a rate at the target the defaults
    /// missed.
    pub fn holds(&self) -> bool {
        self.found_held
            .zip(self.defaults_missed)
            .is_some_and(|(h, m)| m <= h)
    }
}

impl Tuned {
    /// `model` at `connections` under `work` kept at the run's
    /// `defaults` (in words), nothing measured yet.
    pub fn at_defaults(
        model: &str,
        connections: usize,
        work: Option<&Profile>,
        defaults: String,
    ) -> Tuned {
        Tuned {
            model: model.to_string(),
            connections,
            work: work.cloned(),
            settings: Settings::default(),
            kept: "defaults".into(),
            defaults,
            best: "defaults".into(),
            why: String::new(),
            default_figure: None,
            best_figure: None,
            ratio: None,
            interval: None,
            tried: Vec::new(),
            stopped: None,
            at_target: None,
            seconds: 0.0,
        }
    }

    /// Whether the matrix runs the model with settings of the search's.
    pub fn changed(&self) -> bool {
        !self.settings.is_empty()
    }

    /// The model as the tables name it: `hybrid (pool 128)`, or its name
    /// where the defaults were kept.
    pub fn shown(&self) -> String {
        if self.changed() {
            format!("{} ({})", self.model, self.kept)
        } else {
            self.model.clone()
        }
    }
}

/// One setting the search measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tried {
    /// In words (`pool 64`, `defaults`).
    pub setting: String,
    #[serde(default, skip_serializing_if = "Settings::is_empty")]
    pub settings: Settings,
    /// Its median figure over the slots that held one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<f64>,
    /// Slots measured, and of them failed.
    pub slots: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
