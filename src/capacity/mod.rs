//! Capacity at a latency target (`c10k run --slo p99=5ms`), in one room:
//! the highest rate each model holds at the target, decided in paired
//! resident slots. What is where:
//!
//! - the target and the search's settings, as a plan records them:
//!   [`crate::results::slo`] (data, read back with the plan);
//! - [`search`]: what each offered rate did, where the search goes next,
//!   what it found, the knee, and the rounds it runs (first and next);
//! - [`queue`]: the queueing bound beside each answer (M/M/c);
//! - [`tables`]: the answers (held, missed, estimate, knee, bound, call,
//!   cost at the common rate) as data and as the tables people read;
//! - the flag becomes a plan in `plan/run.rs` (`capacity_of`), the slots
//!   run in `runner/resident.rs`, the curves are drawn in
//!   `report/curves.rs`, and two runs' searches are compared in
//!   `compare/at_target.rs`.
//!
//! Cost: none until a run has a target.

pub mod queue;
pub mod search;
pub mod tables;
