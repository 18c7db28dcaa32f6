//! `c10k run`: experiments. A run is a matrix of cells (a model at a
//! connection count, one repeat each); every cell starts the server as its
//! own process, waits for READY, measures it with the load generator, stops
//! and reaps it, and appends one line to `results.jsonl` at once.

pub mod cell;
pub mod matrix;
pub mod results;
