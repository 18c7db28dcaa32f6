//! `c10k micro spawn` (to be written).

use super::{BenchError, Output};
use crate::cli::SpawnArgs;

pub fn run(args: &SpawnArgs) -> Result<Output, BenchError> {
    let _ = args;
    Err(BenchError::Usage(
        "c10k micro spawn is not built yet".into(),
    ))
}
