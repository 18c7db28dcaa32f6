//! `--runs auto`: a model at a connection count under a work profile (a
//! *group* of cells) is repeated until the 95 % interval of its median
//! lies within ±5 % of the median ([`crate::stats::median::settled`]), at
//! least 3 and at most 10 runs.
//!
//! The plan is the record of what to run. It starts with the minimum of
//! runs of every group; whenever a group has no cell left to run and has
//! not settled, [`extend`] adds its next run to the plan, and the runner
//! writes `plan.json` before running it. Where the cell goes keeps the
//! order asked for: interleaved, at the end (the next round, in the order
//! the groups finished this one); sequential, right after the group's last
//! cell (so the group's runs stay back to back). A resumed run first calls
//! [`extend`] too, so a run killed between recording a result and writing
//! the plan still adds what is needed; then `remaining()` is exactly the
//! cells to run. Since the decision depends only on the recorded results,
//! the plan and the results agree after any interruption.
//!
//! A group stops without settling when a run was skipped or failed, or at
//! the maximum of runs. Cost: a pass over the results per finished cell; the
//! states themselves are [`crate::analysis::settled`]'s.
//!
//! Over resident slots ([`crate::results::matrix::Looks`]), `--runs auto`
//! grows a count by looks instead: when a count's rounds are done, [`look`]
//! reads its ranking at the run's level, and the next look (`every` more
//! rounds, in the rounds' shuffled orders) runs the models not yet told
//! apart from the best, and the best, with their servers still up. A model
//! decided against the best runs no more: its pairs with the best stay
//! those of the rounds it ran. No look after the last one, nor one the
//! runner finds past the budget. Cost: a ranking of one count per look.

use crate::analysis::settled::{groups, Group};
use crate::results::cell::CellResult;
use crate::results::dir::RunData;
use crate::results::matrix::{CellSpec, Order, RunPlan};
use crate::server::work::Profile;
use crate::stats::paired::Outcome;

/// Adds to the plan the next run of every group that needs one (see the
/// module's doc for where it goes) and numbers the cells again in run
/// order. Returns how many cells were added; 0 for a plan without
/// `--runs auto`.
pub fn extend(plan: &mut RunPlan, cells: &[CellResult]) -> usize {
    if plan.auto_runs.is_none() {
        return 0;
    }
    let states = groups(plan, cells);
    let profiles = crate::results::matrix::profiles(&plan.work);
    // Interleaved rounds go by connection count, then work profile, then
    // model, as `expand`.
    let mut wanted: Vec<(String, Option<Profile>, usize, usize)> = Vec::new();
    for &n in &plan.connections {
        for w in &profiles {
            for m in &plan.models {
                if let Some(Group::NeedsMore { next }) = states.get(&(m.clone(), w.clone(), n)) {
                    wanted.push((m.clone(), w.clone(), n, *next));
                }
            }
        }
    }
    // Within a round, count and profile, in that round's shuffled order.
    wanted.sort_by_key(|(m, w, n, run)| {
        let place = crate::results::schedule::round_order(&plan.models, *run)
            .iter()
            .position(|x| *x == m);
        (
            *run,
            plan.connections.iter().position(|c| c == n),
            profiles.iter().position(|p| p == w),
            place,
        )
    });
    for (model, work, n, run) in &wanted {
        let spec = crate::results::schedule::slot(model, work.as_ref(), *n, *run, None);
        let at = match plan.order {
            Order::Interleaved => plan.cells.len(),
            Order::Sequential => plan
                .cells
                .iter()
                .rposition(|c| c.model == *model && c.work == *work && c.connections == *n)
                .map_or(plan.cells.len(), |i| i + 1),
        };
        plan.cells.insert(at, spec);
    }
    for (i, c) in plan.cells.iter_mut().enumerate() {
        c.index = i;
    }
    wanted.len()
}

/// What the next look at one count (and work profile) is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Look {
    /// Every model ranked is decided against the best (or there are fewer
    /// than two).
    Decided,
    /// Some are not, and the last look has run: these stay undecided.
    Last(Vec<String>),
    /// The next look's cells, for the models not yet decided (named), the
    /// best, and those decided against the best but not yet told apart
    /// from one of the undecided (`unsettled`).
    More {
        best: String,
        undecided: Vec<String>,
        unsettled: Vec<String>,
        cells: Vec<CellSpec>,
    },
}

/// The look after the rounds recorded at `n` connections under `work`, of
/// a plan with looks ([`Look::Decided`] for one without).
pub(crate) fn look(data: &RunData, n: usize, work: Option<&Profile>) -> Look {
    let Some(looks) = data.plan.looks else {
        return Look::Decided;
    };
    let rounds = data.plan.rounds_at(n, work);
    let Some(part) = crate::results::axis::parts(data)
        .into_iter()
        .find(|p| p.work.and_then(|w| (!w.is_none()).then_some(w)) == work)
    else {
        return Look::Decided;
    };
    let rows = crate::analysis::summary::standings(&part.data)
        .remove(&n)
        .unwrap_or_default();
    let ranked: Vec<_> = rows.iter().filter(|r| r.rank.is_some()).collect();
    let Some(best) = ranked.first() else {
        return Look::Decided;
    };
    let undecided: Vec<String> = ranked[1..]
        .iter()
        .filter(|r| {
            !r.versus_best
                .is_some_and(|c| matches!(c.outcome, Outcome::Different | Outcome::Equivalent))
        })
        .map(|r| r.model.clone())
        .collect();
    if undecided.is_empty() {
        return Look::Decided;
    }
    if rounds >= looks.every * looks.most {
        return Look::Last(undecided);
    }
    // A model told apart from the best but not yet from one of the
    // undecided that could take the best's place (within the margin of
    // it, by the point estimate) stays: were that one the best after the
    // next look, the comparison would rest on the rounds it left with (at
    // 5 rounds, threads at 1.4x was left undecided against a best that
    // came late). Those further off would cost every look their slots.
    let samples: Vec<(String, crate::stats::paired::Sample)> =
        crate::analysis::summary::ranked_by(&part.data, n)
            .rounds(&part.data, n)
            .into_iter()
            .filter_map(|(m, v)| Some((m, crate::stats::paired::Sample::new(&v)?)))
            .collect();
    let sample = |m: &str| samples.iter().find(|s| s.0 == m).map(|s| &s.1);
    let rule = data.plan.rule();
    let near: Vec<&String> = ranked[1..]
        .iter()
        .filter(|r| undecided.contains(&r.model))
        .filter(|r| {
            r.versus_best
                .is_some_and(|c| c.ratio.ln().abs() <= c.margin.ln_1p())
        })
        .map(|r| &r.model)
        .collect();
    let unsettled: Vec<String> = ranked[1..]
        .iter()
        .map(|r| &r.model)
        .filter(|m| !undecided.contains(m))
        .filter(|m| {
            near.iter().any(|u| match (sample(m), sample(u)) {
                (Some(a), Some(b)) => {
                    crate::stats::paired::compare(a, b, rule).outcome == Outcome::Inconclusive
                }
                _ => false,
            })
        })
        .cloned()
        .collect();
    let go = |m: &String| *m == best.model || undecided.contains(m) || unsettled.contains(m);
    let mut cells = Vec::new();
    for run in rounds + 1..=rounds + looks.every {
        for model in crate::results::schedule::round_order(&data.plan.models, run) {
            if go(model) {
                cells.push(crate::results::schedule::slot(model, work, n, run, None));
            }
        }
    }
    Look::More {
        best: best.model.clone(),
        undecided,
        unsettled,
        cells,
    }
}

/// Appends `cells` to the plan and numbers its cells again in run order.
pub(crate) fn append(plan: &mut RunPlan, cells: &[CellSpec]) {
    plan.cells.extend_from_slice(cells);
    for (i, c) in plan.cells.iter_mut().enumerate() {
        c.index = i;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::settled::{unsettled, unsettled_note};
    use crate::results::cell::Status;
    use crate::results::matrix::AutoRuns;
    use crate::results::matrix::{self, Primary, Workload, WorkloadKind};

    fn plan(order: Order) -> RunPlan {
        let auto = AutoRuns::default();
        let mut p = RunPlan::example(&["a", "b"], &[10, 100], auto.min);
        p.command = "c10k run --runs auto".into();
        p.cells = crate::results::schedule::expand(&p.models, &p.connections, &[], auto.min, order);
        p.auto_runs = Some(auto);
        p.order = order;
        p.workload = Workload {
            shape: matrix::Shape::of(WorkloadKind::Burst),
            messages_per_connection: Some(1),
            ..Workload::closed(0.0, 0.0)
        };
        p.primary = Primary::Time;
        p.bench = Some(matrix::Bench::Spawn);
        p
    }

    /// A measured micro-benchmark cell whose time is `t`.
    fn result(spec: &CellSpec, t: Option<f64>, status: Status) -> CellResult {
        CellResult {
            bench: Some(crate::results::cell::BenchFigures {
                time_seconds: t,
                ..Default::default()
            }),
            ..CellResult::new(spec.clone(), status)
        }
    }

    /// Runs the plan to the end as the runner does: each remaining cell in
    /// order, then `extend`. Group "a" at 10 connections never settles;
    /// "b" at 100 settles only at its 6th run; the rest at once.
    fn run_all(plan: &mut RunPlan, cells: &mut Vec<CellResult>) {
        let noisy = [1.0, 2.0, 1.5, 1.0, 2.0, 1.5, 1.0, 2.0, 1.5, 1.0, 2.0];
        let late = [1.0, 1.2, 1.0, 0.8, 1.0, 1.0];
        for _ in 0..100 {
            let done: std::collections::BTreeSet<String> =
                cells.iter().map(|c| c.cell.id.clone()).collect();
            let Some(spec) = plan.cells.iter().find(|c| !done.contains(&c.id)).cloned() else {
                if extend(plan, cells) == 0 {
                    return;
                }
                continue;
            };
            let t = match (spec.model.as_str(), spec.connections) {
                ("a", 10) => noisy[spec.run - 1],
                ("b", 100) if spec.run <= late.len() => late[spec.run - 1],
                ("b", 100) => 1.0,
                _ => 1.0 + spec.run as f64 * 0.001,
            };
            cells.push(result(&spec, Some(t), Status::Ok));
            extend(plan, cells);
        }
        panic!("the run did not end");
    }

    #[test]
    fn groups_run_until_settled_or_the_maximum() {
        for order in [Order::Interleaved, Order::Sequential] {
            let mut p = plan(order);
            let mut cells = Vec::new();
            run_all(&mut p, &mut cells);
            let count = |m: &str, n: usize| {
                p.cells
                    .iter()
                    .filter(|c| c.model == m && c.connections == n)
                    .count()
            };
            assert_eq!(count("a", 10), 10, "{order:?}");
            // b at 100: ±20 % over its range until the 9th run, when the
            // interval leaves out the smallest and the largest.
            assert_eq!(count("b", 100), 9, "{order:?}");
            assert_eq!(count("a", 100), 3, "{order:?}");
            assert_eq!(count("b", 10), 3, "{order:?}");
            // Plan and results agree, cell for cell, numbered in order.
            assert_eq!(p.cells.len(), cells.len());
            let mut planned: Vec<&str> = p.cells.iter().map(|c| c.id.as_str()).collect();
            let mut recorded: Vec<&str> = cells.iter().map(|c| c.cell.id.as_str()).collect();
            if order == Order::Sequential {
                // Sequential keeps each group's runs back to back.
                assert_eq!(planned, recorded);
            }
            planned.sort_unstable();
            recorded.sort_unstable();
            assert_eq!(planned, recorded);
            assert!(p.cells.iter().enumerate().all(|(i, c)| c.index == i));
            let left = unsettled(&p, &cells);
            assert_eq!(left.len(), 1);
            assert_eq!(left[0].0, ("a".to_string(), None, 10));
            assert_eq!(left[0].1, 10);
            let note = unsettled_note(&p, &cells).unwrap();
            assert!(
                note.contains("a at 10 connections (±33.3 %) stopped at 10 runs"),
                "{note}"
            );
            assert!(note.contains("3 of 4 settled"), "{note}");
        }
    }

    #[test]
    fn interleaved_rounds_follow_the_plan_order() {
        let mut p = plan(Order::Interleaved);
        let mut cells: Vec<CellResult> = p
            .cells
            .iter()
            .map(|s| {
                result(
                    s,
                    Some(if s.model == "a" { s.run as f64 } else { 1.0 }),
                    Status::Ok,
                )
            })
            .collect();
        assert_eq!(extend(&mut p, &cells), 2);
        let added: Vec<&str> = p.cells[12..].iter().map(|c| c.id.as_str()).collect();
        assert_eq!(added, ["a/c10/r4", "a/c100/r4"]);
        // Nothing more until a group's run has a result; each group's next
        // run then goes after the rest of this round.
        assert_eq!(extend(&mut p, &cells), 0);
        cells.push(result(&p.cells[12], Some(4.0), Status::Ok));
        assert_eq!(extend(&mut p, &cells), 1);
        cells.push(result(&p.cells[13], Some(4.0), Status::Ok));
        assert_eq!(extend(&mut p, &cells), 1);
        let added: Vec<&str> = p.cells[12..].iter().map(|c| c.id.as_str()).collect();
        assert_eq!(added, ["a/c10/r4", "a/c100/r4", "a/c10/r5", "a/c100/r5"]);
    }

    #[test]
    fn a_resumed_run_adds_what_the_results_call_for() {
        // Killed after recording run 3 of a group but before writing the
        // plan: the plan on disk has three runs of it; extend adds the
        // fourth and nothing twice.
        let mut p = plan(Order::Interleaved);
        let cells: Vec<CellResult> = p
            .cells
            .iter()
            .map(|s| {
                result(
                    s,
                    Some(if s.id.starts_with("b/c10/") {
                        s.run as f64
                    } else {
                        1.0
                    }),
                    Status::Ok,
                )
            })
            .collect();
        let saved = p.clone();
        assert_eq!(extend(&mut p, &cells), 1);
        assert_eq!(p.cells.last().map(|c| c.id.as_str()), Some("b/c10/r4"));
        let mut again = saved;
        extend(&mut again, &cells);
        assert_eq!(again, p);
        assert_eq!(extend(&mut p, &cells), 0);
    }

    #[test]
    fn failed_or_skipped_groups_stop() {
        let mut p = plan(Order::Interleaved);
        let cells: Vec<CellResult> = p
            .cells
            .iter()
            .map(|s| match (s.model.as_str(), s.connections, s.run) {
                ("a", 10, 2) => result(s, None, Status::Failed),
                ("b", _, _) => result(s, None, Status::Skipped),
                _ => result(s, Some(s.run as f64), Status::Ok),
            })
            .collect();
        let states = groups(&p, &cells);
        assert_eq!(states[&("a".to_string(), None, 10)], Group::Stopped);
        assert_eq!(states[&("b".to_string(), None, 100)], Group::Stopped);
        assert_eq!(
            states[&("a".to_string(), None, 100)],
            Group::NeedsMore { next: 4 }
        );
        assert_eq!(extend(&mut p, &cells), 1);
        assert!(unsettled(&p, &cells).is_empty());
    }

    #[test]
    fn each_work_profile_is_a_group_of_its_own() {
        let mut p = plan(Order::Interleaved);
        p.bench = None;
        p.work = vec!["none".parse().unwrap(), "block:1ms".parse().unwrap()];
        p.cells = crate::results::schedule::expand(
            &p.models,
            &p.connections,
            &p.work,
            3,
            Order::Interleaved,
        );
        // Only a/block:1ms at 10 varies: only it gets a fourth run.
        let cells: Vec<CellResult> = p
            .cells
            .iter()
            .map(|s| {
                let noisy = s.model == "a" && s.work.is_some() && s.connections == 10;
                result(s, Some(if noisy { s.run as f64 } else { 1.0 }), Status::Ok)
            })
            .collect();
        assert_eq!(extend(&mut p, &cells), 1);
        let last = p.cells.last().expect("a cell");
        assert_eq!(last.id, "a/block:1ms/c10/r4");
        assert_eq!(last.profile(), "block:1ms");
        assert_eq!(groups(&p, &cells).len(), 8);
    }

    #[test]
    fn fixed_runs_never_grow() {
        let mut p = plan(Order::Interleaved);
        p.auto_runs = None;
        let cells: Vec<CellResult> = p
            .cells
            .iter()
            .map(|s| result(s, Some(s.run as f64), Status::Ok))
            .collect();
        assert_eq!(extend(&mut p, &cells), 0);
        assert_eq!(unsettled_note(&p, &cells), None);
    }

    /// A run of models a, b and c at 10 connections with looks of 10
    /// rounds: a at 100,000/s (±1 % by round), b at half that, c at
    /// `c(run)`.
    fn looking(runs: usize, c: &dyn Fn(usize) -> f64) -> RunData {
        let wobble = |r: usize| 1.0 + 0.01 * ((r * 7 % 5) as f64 - 2.0) / 2.0;
        let figures = |f: &dyn Fn(usize) -> f64| -> Vec<crate::results::dir::Figures> {
            (1..=runs)
                .map(|r| crate::results::dir::Figures {
                    throughput: f(r),
                    ..Default::default()
                })
                .collect()
        };
        let mut data = RunData::example_of(&[
            ("a", figures(&|r| 100_000.0 * wobble(r))),
            ("b", figures(&|r| 50_000.0 * wobble(r))),
            ("c", figures(c)),
        ]);
        data.plan.looks = Some(crate::results::matrix::Looks {
            every: 10,
            most: 4,
            budget_seconds: 600.0,
        });
        data
    }

    /// b is 0.9 of a, told apart from it in 10 rounds, but c swings ±10 %
    /// about a, so b is not yet told apart from c: were c the best after
    /// the next look, b's comparison would rest on 10 rounds of noise.
    /// b runs in the next look too, named as such.
    #[test]
    fn a_model_told_apart_from_the_best_but_not_from_an_undecided_one_stays() {
        let figures = |f: &dyn Fn(usize) -> f64| -> Vec<crate::results::dir::Figures> {
            (1..=10)
                .map(|r| crate::results::dir::Figures {
                    throughput: f(r),
                    ..Default::default()
                })
                .collect()
        };
        let wobble = |r: usize, k: usize| 1.0 + 0.005 * ((r * k % 5) as f64 - 2.0);
        let mut data = RunData::example_of(&[
            ("a", figures(&|r| 100_000.0 * wobble(r, 7))),
            ("b", figures(&|r| 90_000.0 * wobble(r, 3))),
            (
                "c",
                figures(&|r| 100_000.0 * if r % 2 == 0 { 1.1 } else { 0.9 }),
            ),
        ]);
        data.plan.looks = Some(crate::results::matrix::Looks {
            every: 10,
            most: 4,
            budget_seconds: 600.0,
        });
        let Look::More {
            best,
            undecided,
            unsettled,
            cells,
        } = look(&data, 10, None)
        else {
            panic!("another look")
        };
        assert_eq!(
            (best.as_str(), undecided, unsettled),
            ("a", vec!["c".to_string()], vec!["b".to_string()])
        );
        assert_eq!(cells.iter().filter(|c| c.model == "b").count(), 10);
    }

    #[test]
    fn a_look_runs_the_undecided_and_the_best_until_the_last() {
        // c swings ±10 % about a: not told apart from it in 10 rounds.
        let swing = |r: usize| 100_000.0 * if r % 2 == 0 { 1.1 } else { 0.9 };
        let data = looking(10, &swing);
        let Look::More {
            best,
            undecided,
            cells,
            ..
        } = look(&data, 10, None)
        else {
            panic!("another look")
        };
        assert_eq!(best, "a");
        assert_eq!(undecided, ["c"]);
        // Rounds 11 to 20, of c and a only, each round in its own order.
        assert_eq!(cells.len(), 20);
        assert!(cells.iter().all(|c| (11..=20).contains(&c.run)));
        assert!(cells.iter().all(|c| c.model != "b" && c.connections == 10));
        for run in 11..=20 {
            let order: Vec<&str> = crate::results::schedule::round_order(&data.plan.models, run)
                .into_iter()
                .filter(|m| *m != "b")
                .map(String::as_str)
                .collect();
            let got: Vec<&str> = cells
                .iter()
                .filter(|c| c.run == run)
                .map(|c| c.model.as_str())
                .collect();
            assert_eq!(got, order, "round {run}");
        }
        // After the fourth look, no more.
        assert_eq!(
            look(&looking(40, &swing), 10, None),
            Look::Last(vec!["c".to_string()])
        );
        // A plan without looks never adds one.
        let mut plain = looking(10, &swing);
        plain.plan.looks = None;
        assert_eq!(look(&plain, 10, None), Look::Decided);
    }

    #[test]
    fn a_count_whose_models_are_all_decided_needs_no_look() {
        // c level with a within 1 %: equivalent; b twice as slow.
        let close = |r: usize| 100_000.0 * (1.0 + 0.002 * (r % 3) as f64);
        assert_eq!(look(&looking(10, &close), 10, None), Look::Decided);
    }
}
