//! `c10k herd` flags turned into a [`Request`], which the herd's
//! [`Plan::new`](crate::herd::plan::Plan::new) checks with the machine's
//! process and descriptor limits before anything forks.

use crate::cli::HerdArgs;
use crate::herd::plan::Request;

/// What `a` asks the herd to measure.
pub fn request(a: &HerdArgs) -> Request {
    Request {
        workers: a.workers.clone(),
        dups: a.dups.clone(),
        methods: a.methods.clone(),
        rate: a.rate,
        connections: a.connections,
        runs: a.runs,
        svg: a.svg.clone(),
        json: a.output.json.clone(),
        skip_unfit: a.skip_unfit,
    }
}
