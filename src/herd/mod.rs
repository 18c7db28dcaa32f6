//! `c10k herd`: the thundering herd (to be written).

use crate::cli::HerdArgs;
use crate::micro::{BenchError, Output};

pub fn run(args: &HerdArgs) -> Result<Output, BenchError> {
    let _ = args;
    Err(BenchError::Usage("c10k herd is not built yet".into()))
}
