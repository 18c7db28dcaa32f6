//! The slot schedule: which server gets which slot in which round, in
//! one place. A round gives every server of a count and work profile one
//! slot, in an order shuffled from the round's number ([`round_order`]);
//! a plan's first rounds are [`expand`]ed from its axes, and every later
//! round (a look of `--runs auto`, the capacity search's next rate, a
//! tuning step) is made of [`slot`]s in that same order. Cost: a shuffle
//! per round.

use super::matrix::{profiles, CellSpec, Offered, Order};
use crate::server::work::Profile;

/// Whether `seconds` of slots fit in `budget` seconds, to the
/// microsecond: twenty 0.1 s slots fit in 2 s, though their sum in
/// floating point is 2.0000000000000004. Every budget compares this way.
pub fn fits(seconds: f64, budget: f64) -> bool {
    seconds <= budget + 1e-6
}

/// The slot of `model` at `n` connections under `work` in round `run`,
/// at the rate `offered` where a capacity search gives one (its index is
/// set when it joins a plan).
pub fn slot(
    model: &str,
    work: Option<&Profile>,
    n: usize,
    run: usize,
    offered: Option<Offered>,
) -> CellSpec {
    CellSpec {
        id: CellSpec::id_of(model, work, n, run),
        index: 0,
        model: model.to_string(),
        work: work.cloned(),
        connections: n,
        run,
        offered,
    }
}

/// The order in which round `run` of an interleaved plan runs `models`:
/// the plan's order in the first round, then a shuffle of it drawn from
/// the round's number (the same on every machine and on resume), so that
/// no model always follows the same one, and what one model leaves behind
/// (dirty caches, sockets in TIME_WAIT, a CPU's frequency) does not fall
/// on the same neighbour in every round, where pairing could not cancel it.
pub fn round_order<T>(models: &[T], run: usize) -> Vec<&T> {
    let mut order: Vec<&T> = models.iter().collect();
    if run > 1 {
        let seed = crate::stats::rng::mix(0xc10c_0de5 ^ run as u64);
        crate::stats::rng::SplitMix64::new(seed).shuffle(&mut order);
    }
    order
}

/// The cells of `models` × `connections` × `work` profiles × `runs` in the
/// order asked for (`work` empty: no axis). Interleaved, each round runs
/// every model once at each count under each profile, so the models of
/// one profile at one count pair within the round.
pub fn expand(
    models: &[String],
    connections: &[usize],
    work: &[Profile],
    runs: usize,
    order: Order,
) -> Vec<CellSpec> {
    let profiles = profiles(work);
    let mut cells = Vec::with_capacity(models.len() * connections.len() * profiles.len() * runs);
    match order {
        Order::Interleaved => {
            for run in 1..=runs {
                for &c in connections {
                    for w in &profiles {
                        for m in round_order(models, run) {
                            cells.push((m.clone(), w.clone(), c, run));
                        }
                    }
                }
            }
        }
        Order::Sequential => {
            for m in models {
                for w in &profiles {
                    for &c in connections {
                        for run in 1..=runs {
                            cells.push((m.clone(), w.clone(), c, run));
                        }
                    }
                }
            }
        }
    }
    cells
        .into_iter()
        .enumerate()
        .map(|(index, (model, work, connections, run))| CellSpec {
            index,
            ..slot(&model, work.as_ref(), connections, run, None)
        })
        .collect()
}

/// The plans of unit tests, expanded from their axes here.
#[cfg(test)]
mod example {
    use super::expand;
    use crate::results::matrix::*;
    use crate::server::settings::Settings;

    impl RunPlan {
        /// A plan for unit tests: `models` × `connections`, `runs` each,
        /// interleaved, a 50 ms closed loop, unpinned, nothing else.
        pub(crate) fn example(models: &[&str], connections: &[usize], runs: usize) -> RunPlan {
            let models: Vec<String> = models.iter().map(|m| m.to_string()).collect();
            RunPlan {
                capacity: None,
                tune: None,
                tuned: Vec::new(),
                version: RESULTS_VERSION,
                experiment: "custom".into(),
                title: "t".into(),
                command: "c10k run".into(),
                cells: expand(&models, connections, &[], runs, Order::Interleaved),
                models,
                connections: connections.to_vec(),
                work: Vec::new(),
                runs,
                auto_runs: None,
                order: Order::Interleaved,
                slots: None,
                looks: None,
                margin: default_margin(),
                repeat_disturbed: DEFAULT_REPEAT_DISTURBED,
                pin: Pin::None,
                server_cpus: Vec::new(),
                client_cpus: Vec::new(),
                workload: Workload::closed(0.05, 0.0),
                primary: Primary::Throughput,
                per_connection_csv: false,
                buffer: "16KiB".into(),
                server_settings: Settings::default(),
                variants: Vec::new(),
                servers: Vec::new(),
                targets: Vec::new(),
                agents: None,
                bind: None,
                ready_timeout_seconds: 60.0,
                bench: None,
                bench_args: Vec::new(),
                size_label: "connections".into(),
                refused: Vec::new(),
            }
        }
    }
}
