//! Each model tuned (`c10k run --tune`), in one room: the search of a
//! model's knobs at one count and work profile, and what it kept. What
//! is where:
//!
//! - [`climb`]: the search as a function of what has been measured — the
//!   ladder of each knob's values, Little's law for a pool's start, the
//!   climb, and the paired test the kept setting passes;
//! - [`answers`]: what each search kept beside the defaults, as data
//!   (`results.json`) and as the tuning table;
//! - the knobs themselves are declared by the models
//!   ([`crate::server::knobs`]) and move a field of
//!   [`crate::server::settings::Settings`]; the flags become a plan in
//!   `plan/tune.rs`, the plan records what was kept in `results/tuned.rs`,
//!   and the searches run in resident slots in `runner/tuner.rs`.
//!
//! Cost: none until a run tunes.

pub mod answers;
pub mod climb;
