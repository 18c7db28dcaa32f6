//! `c10k micro accept` (to be written).

use super::{BenchError, Output};
use crate::cli::MicroAcceptArgs;

pub fn run(args: &MicroAcceptArgs) -> Result<Output, BenchError> {
    let _ = args;
    Err(BenchError::Usage(
        "c10k micro accept is not built yet".into(),
    ))
}
