//! `c10k load`: the load generator.

pub mod preflight;
pub mod source;
