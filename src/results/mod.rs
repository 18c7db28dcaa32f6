//! The results of a run, as data: what it runs ([`matrix`]: the plan, its
//! cells and workload), what one cell gave ([`cell`]: one line of
//! `results.jsonl`), the results directory and how it is read back and
//! resumed ([`dir`]), its lock ([`lock`]), which plan a record belongs to
//! ([`identity`]), and the records arranged by work profile ([`axis`]) and
//! for charts ([`series`]), and the latency target a capacity run
//! searches against ([`slo`]), and the settings `--tune` kept ([`tuned`]).
//! Nothing here measures or runs anything.

pub mod axis;
pub mod cell;
pub mod dir;
pub mod identity;
pub mod lock;
pub mod matrix;
pub mod schedule;
pub mod series;
pub mod slo;
pub mod tuned;
