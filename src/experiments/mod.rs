//! The named experiments: each preset ([`presets`]) is a matrix that
//! follows one study's method, and [`tables()`] prints the study's table shape
//! with our numbers; a capacity run (`--slo`) has its own
//! ([`crate::capacity::tables`]). [`crate::plan::run`] turns `c10k run` flags and a
//! preset into the run plan.

mod c1m;
mod cells;
pub mod peers;
pub mod presets;
pub mod tables;

pub use tables::tables;
