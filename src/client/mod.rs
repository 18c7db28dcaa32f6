//! `c10k load`: the load generator.

pub mod conn;
pub mod drive;
pub mod engine;
pub mod limit;
pub mod measured;
pub mod plan;
pub mod preflight;
pub mod record;
pub mod report;
pub mod run;
pub mod source;
pub mod split;
