//! `c10k load`: the load generator.

pub mod agent;
pub mod agents;
pub mod conn;
pub mod drive;
pub mod engine;
pub mod http;
pub mod launch;
pub mod limit;
pub mod live;
pub mod measured;
pub mod plan;
pub mod preflight;
pub mod protocol;
pub mod record;
pub mod report;
pub mod run;
pub mod source;
pub mod spawn;
