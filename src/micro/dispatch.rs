//! `c10k micro dispatch` (to be written).

use super::{BenchError, Output};
use crate::cli::DispatchArgs;

pub fn run(args: &DispatchArgs) -> Result<Output, BenchError> {
    let _ = args;
    Err(BenchError::Usage(
        "c10k micro dispatch is not built yet".into(),
    ))
}
