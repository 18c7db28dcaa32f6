//! The named experiments: each preset is a matrix that follows one study's
//! method, and the tables that print the study's shape with our numbers.

use crate::export::table::Table;
use crate::runner::results::RunData;

/// The study's own tables for this run (empty for a custom matrix), plus
/// the ranking.
pub fn tables(data: &RunData) -> Vec<Table> {
    let _ = data;
    Vec::new()
}
