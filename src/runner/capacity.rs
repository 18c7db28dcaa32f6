//! The capacity search over resident slots (`--slo`): the servers of one
//! count and work profile stay up, and each round gives every model still
//! searching one slot at the rate its search asks for next
//! ([`crate::analysis::capacity::next`]), in the round's shuffled order.
//! When every search has ended, the cost phase runs every model that held
//! a rate at the highest rate all of them held, in paired rounds, for
//! their CPU per message and memory at one load.
//!
//! Each round is added to the plan (and `plan.json` written) before it
//! runs; since the next round depends only on the recorded slots, a
//! resumed run adds the round a stopped one owed. The run's budget is
//! shared among the counts and profiles still to search: a block stops
//! adding rounds when the next would pass its share, and the searches
//! still open are then inconclusive, said on the terminal and in the
//! tables. Cost: the analysis of every model's slots per round.

use crate::analysis::capacity::{common_rate, state, State};
use crate::results::dir::RunData;
use crate::results::matrix::{round_order, CellSpec, Offered};
use crate::results::slo::Search;
use crate::server::work::Profile;

/// The next round at `n` under `work`: a slot for every model still
/// searching, or a round of the cost phase; empty when both are done.
/// The search phase is over once a cost round is planned, or when
/// `stop_search` says (the budget).
pub(crate) fn next_round(
    data: &RunData,
    n: usize,
    work: Option<&Profile>,
    stop_search: bool,
) -> Vec<CellSpec> {
    let Some(search) = &data.plan.capacity else {
        return Vec::new();
    };
    let here = |c: &&CellSpec| c.connections == n && c.work.as_ref() == work;
    let last_run = |m: &str| {
        data.plan
            .cells
            .iter()
            .filter(here)
            .filter(|c| c.model == m)
            .map(|c| c.run)
            .max()
            .unwrap_or(0)
    };
    let costing = data
        .plan
        .cells
        .iter()
        .filter(here)
        .any(|c| c.offered.is_some_and(|o| o.cost_round.is_some()));
    let mut wanted: Vec<(String, f64, Option<usize>)> = Vec::new();
    if !(stop_search || costing) {
        for m in &data.plan.models {
            if let State::Measure(r) = state(data, m, n, work) {
                wanted.push((m.clone(), r, None));
            }
        }
    }
    let round = data
        .plan
        .cells
        .iter()
        .filter(here)
        .map(|c| c.run)
        .max()
        .unwrap_or(0)
        + 1;
    if wanted.is_empty() {
        let done = data
            .plan
            .cells
            .iter()
            .filter(here)
            .filter_map(|c| c.offered.and_then(|o| o.cost_round))
            .max()
            .unwrap_or(0);
        if done >= search.cost_rounds {
            return Vec::new();
        }
        let Some((rate, models)) = common_rate(data, n, work) else {
            return Vec::new();
        };
        for m in models {
            wanted.push((m, rate, Some(done + 1)));
        }
    }
    let order = round_order(&data.plan.models, round);
    wanted.sort_by_key(|(m, _, _)| order.iter().position(|x| *x == m));
    wanted
        .into_iter()
        .map(|(model, rate, cost_round)| {
            let run = last_run(&model) + 1;
            CellSpec {
                id: CellSpec::id_of(&model, work, n, run),
                index: 0,
                model,
                work: work.cloned(),
                connections: n,
                run,
                offered: Some(Offered {
                    rate: rate.round().max(1.0) as u64,
                    cost_round,
                }),
            }
        })
        .collect()
}

/// The first slot of every model at every count and profile: the search's
/// first rate, in the plan's order.
pub(crate) fn first_cells(
    models: &[String],
    connections: &[usize],
    work: &[Profile],
    search: &Search,
) -> Vec<CellSpec> {
    let mut cells = Vec::new();
    for &n in connections {
        for w in crate::results::matrix::profiles(work) {
            for m in models {
                cells.push(CellSpec {
                    id: CellSpec::id_of(m, w.as_ref(), n, 1),
                    index: cells.len(),
                    model: m.clone(),
                    work: w.clone(),
                    connections: n,
                    run: 1,
                    offered: Some(Offered {
                        rate: search.start_rate.round() as u64,
                        cost_round: None,
                    }),
                });
            }
        }
    }
    cells
}
