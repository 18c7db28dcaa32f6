//! The bound beside the figure: under `--work`, the throughput the work
//! alone allows a cell ([`WorkDone`], recorded with each cell from its
//! servers' summaries: the model's own capacity, the cell's connections
//! and depth, an open loop's offered rate; [`bound`] says how), and
//! the share of it a model reached at one count ([`Share`]). A model far
//! below its bound shows its own overhead; one above it beyond noise and
//! margin is a defect (the work was not done as asked, or the bound is
//! wrong), flagged in every table that shows it and never a win. Costs a
//! comparison per model and count.

use std::time::Duration;

use crate::present::units::{format_count, sig3};
use crate::results::cell::Bound;
use crate::results::cell::{Status, WorkDone};
use crate::results::dir::RunData;
use crate::results::matrix::{CellSpec, RunPlan, WorkloadKind};
use crate::server::stats::WorkSummary;
use crate::server::work::{Capacity, Kind, Profile};
use crate::stats::paired::{self, Comparison, Sample};

/// The work record of a cell of `plan` under `spec`'s work, from the JSON
/// summaries its servers printed; `None` for a cell without work or
/// without a summary that reports it (a server that died).
pub(crate) fn of_cell(
    plan: &RunPlan,
    spec: &CellSpec,
    summaries: &[serde_json::Value],
) -> Option<WorkDone> {
    let profile = spec.work.as_ref()?;
    let reported: Vec<(u64, WorkSummary)> = summaries
        .iter()
        .filter_map(|s| {
            let w = serde_json::from_value(s.get("work")?.clone()).ok()?;
            Some((s["requests"].as_u64().unwrap_or(0), w))
        })
        .collect();
    let (_, first) = reported.first()?;
    let mut capacity = first.capacity;
    capacity.handlers = capacity.handlers.map(|h| h * reported.len());
    let w = &plan.workload;
    // Churn measures connections a second, which the work per request
    // does not bound: no bound stands beside it.
    let mut bound = match w.kind() {
        WorkloadKind::Churn => None,
        _ => bound(profile, &capacity, spec.connections, w.depth()),
    };
    if let (WorkloadKind::Closed, Some(rate)) = (w.kind(), w.rate) {
        let offered = rate.total(spec.connections);
        if bound.as_ref().is_none_or(|b| offered < b.per_second) {
            bound = Some(Bound {
                per_second: offered,
                why: "the open loop's offered rate".into(),
            });
        }
    }
    Some(WorkDone {
        requests: reported.iter().map(|r| r.0).sum(),
        request_bytes: first.request_bytes,
        capacity,
        bound,
    })
}

/// The throughput (requests per second) the work of `profile` alone
/// allows a model
/// with `capacity` serving `connections` connections with `depth`
/// requests in flight on each (a closed loop), and why; `None` with no
/// work. The least of: the closed loop's N·depth / (all the parts),
/// the handlers' H / (what holds one), and the cores' C / cpu.
pub fn bound(
    profile: &Profile,
    capacity: &Capacity,
    connections: usize,
    depth: usize,
) -> Option<Bound> {
    if profile.is_none() {
        return None;
    }
    let secs = |d: Duration| d.as_secs_f64();
    let (cpu, block, wait) = (
        secs(profile.mean(Kind::Cpu)),
        secs(profile.mean(Kind::Block)),
        secs(profile.mean(Kind::Wait)),
    );
    let in_flight = (connections * depth.max(1)) as f64;
    let mut best: Option<Bound> = None;
    let mut consider = |per_second: f64, why: String| {
        if per_second.is_finite() && best.as_ref().is_none_or(|b| per_second < b.per_second) {
            best = Some(Bound { per_second, why });
        }
    };
    let all = cpu + block + wait;
    if all > 0.0 {
        consider(
            in_flight / all,
            format!("{} in flight / {}", in_flight as u64, seconds(all)),
        );
    }
    let handlers = capacity
        .handlers
        .map_or(connections, |h| h.min(connections.max(1)))
        .max(1);
    let hold = cpu
        + if capacity.block_holds { block } else { 0.0 }
        + if capacity.wait_holds { wait } else { 0.0 };
    let who = match capacity.handlers {
        None => "a thread per connection".to_string(),
        Some(1) => "1 thread".to_string(),
        Some(_) => format!("{handlers} handlers"),
    };
    if hold > 0.0 {
        consider(
            handlers as f64 / hold,
            format!("{who} / {} each", seconds(hold)),
        );
    }
    // A block handed to a pool that grows to a cap (tokio's 512): the
    // pool's threads over the block.
    if let (false, Some(b), true) = (capacity.block_holds, capacity.blockers, block > 0.0) {
        let b = b.min(connections.max(1) * depth.max(1));
        consider(
            b as f64 / block,
            format!("{b} blocking threads / {} each", seconds(block)),
        );
    }
    if cpu > 0.0 {
        let cores = handlers.min(capacity.cores.max(1));
        consider(
            cores as f64 / cpu,
            format!("{cores} core{} / {} of CPU", plural(cores), seconds(cpu)),
        );
    }
    best
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn seconds(s: f64) -> String {
    crate::present::units::seconds(s)
}

/// A model's bound at one count and the share of it its runs reached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Share {
    /// The bound, the median of its runs' (they agree unless the model's
    /// capacity changed between them), with the first run's term.
    pub bound: Bound,
    /// The median over the runs of throughput ÷ bound; `None` when no run
    /// has a throughput to set against it (a burst, churn).
    pub share: Option<f64>,
    /// Above the bound beyond noise and margin (the paired comparison of
    /// throughput with bound, [`compare`]): how many times above.
    pub above: Option<Comparison>,
}

/// The bound of `model` at count `n` in `data` and its share of it, over
/// the measured runs; `None` where no run recorded a bound.
pub(crate) fn share(data: &RunData, model: &str, n: usize) -> Option<Share> {
    // Each measured run: its round, its bound, and its throughput where a
    // share of the bound applies to it (a timed loop).
    let runs: Vec<(usize, &Bound, Option<f64>)> = data
        .cells
        .iter()
        .filter(|c| c.cell.model == model && c.cell.connections == n && c.status == Status::Ok)
        .filter_map(|c| {
            let b = c.work_done.as_ref()?.bound.as_ref()?;
            let m = c.metrics();
            Some((c.cell.run, b, m.work_bound_share.and(m.throughput)))
        })
        .collect();
    let (_, first, _) = runs.first()?;
    let limit: Vec<(usize, f64)> = runs.iter().map(|r| (r.0, r.1.per_second)).collect();
    let measured: Vec<(usize, f64)> = runs.iter().filter_map(|r| Some((r.0, r.2?))).collect();
    let shares: Vec<f64> = runs
        .iter()
        .filter_map(|r| Some(r.2? / r.1.per_second))
        .filter(|s| s.is_finite())
        .collect();
    let median = |v: &[f64]| crate::stats::Summary::of(v).map(|s| s.median);
    let above = match (Sample::new(&measured), Sample::new(&limit)) {
        (Some(m), Some(b)) => Some(paired::compare(&m, &b, data.plan.rule())),
        _ => None,
    }
    .filter(Comparison::larger);
    Some(Share {
        bound: Bound {
            per_second: median(&limit.iter().map(|l| l.1).collect::<Vec<_>>())?,
            why: first.why.clone(),
        },
        share: median(&shares),
        above,
    })
}

/// What the bound columns mean, under a table that has them.
pub(crate) const NOTE: &str = "Bound: the throughput the work alone allows the model \
     (its handlers over the time a request holds one, its cores over the CPU a request takes, \
     the closed loop's requests in flight over the work's whole time, an open loop's offered \
     rate: the least), with the term that set it; of bound: the median over the runs of the \
     measured throughput over it. Far below: the model's own overhead, or a client that could \
     not keep up (see limited by). The round trip itself is not in the bound: a closed loop \
     waiting 1 ms per request also spends a loopback round trip (tens of µs) and the timer's \
     slack on each. Above it beyond noise and margin: a defect, flagged ⚠.";

/// `1,000/s: 1 thread / 1 ms each`.
pub(crate) fn bound_text(b: &Bound) -> String {
    format!("{}/s: {}", format_count(b.per_second), b.why)
}

/// `97.2 %`; above the bound beyond noise, `112 % ⚠ above its bound: a
/// defect`; `–` with no throughput to set against it.
pub(crate) fn share_text(s: &Share) -> String {
    match (s.share, s.above) {
        (Some(v), Some(_)) => format!("{} % ⚠ above its bound: a defect", sig3(v * 100.0)),
        (Some(v), None) => format!("{} %", sig3(v * 100.0)),
        (None, _) => "–".into(),
    }
}

/// The models above their bound beyond noise, for the line under a
/// verdict: `select (112 %)`.
pub(crate) fn above_text(data: &RunData, n: usize, models: &[&str]) -> Option<String> {
    let above: Vec<String> = models
        .iter()
        .filter_map(|m| {
            let s = share(data, m, n)?;
            s.above?;
            Some(format!("{m} ({} %)", sig3(s.share? * 100.0)))
        })
        .collect();
    (!above.is_empty()).then(|| {
        format!(
            "Above the bound the work allows, beyond noise and margin (a defect to find, not a \
             win): {}.",
            crate::present::words::and_list(&above)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::dir::Figures;
    use crate::server::work::Capacity;

    /// A run of `model` under block:1ms on one loop (bound 1,000/s) whose
    /// rounds measured `throughputs`.
    fn run(throughputs: &[f64]) -> RunData {
        let figures: Vec<Figures> = throughputs
            .iter()
            .map(|&throughput| Figures {
                throughput,
                ..Default::default()
            })
            .collect();
        let mut data = RunData::example_of(&[("select", figures)]);
        for c in &mut data.cells {
            c.cell.work = Some("block:1ms".parse().unwrap());
            c.work_done = Some(WorkDone {
                requests: 1000,
                request_bytes: 64,
                capacity: Capacity {
                    handlers: Some(1),
                    cores: 2,
                    block_holds: true,
                    wait_holds: false,
                    blockers: None,
                },
                bound: Some(Bound {
                    per_second: 1000.0,
                    why: "1 thread / 1 ms each".into(),
                }),
            });
        }
        data
    }

    #[test]
    fn bounds_follow_the_model_shape() {
        let loop1 = Capacity {
            handlers: Some(1),
            cores: 2,
            block_holds: true,
            wait_holds: false,
            blockers: None,
        };
        let per_conn = Capacity {
            handlers: None,
            wait_holds: true,
            ..loop1
        };
        let block = Profile::parse("block:1ms").unwrap();
        let b = bound(&block, &loop1, 100, 1).unwrap();
        assert!((b.per_second - 1000.0).abs() < 1e-6, "{b:?}");
        let b = bound(&block, &per_conn, 100, 1).unwrap();
        assert!((b.per_second - 100_000.0).abs() < 1e-3, "{b:?}");
        let wait = Profile::parse("wait:1ms").unwrap();
        // A loop waits without holding: only the closed loop bounds it.
        let b = bound(&wait, &loop1, 10, 1).unwrap();
        assert!((b.per_second - 10_000.0).abs() < 1e-3, "{b:?}");
        let cpu = Profile::parse("cpu:100us").unwrap();
        let two = Capacity {
            handlers: Some(2),
            ..loop1
        };
        assert!((bound(&cpu, &two, 100, 1).unwrap().per_second - 20_000.0).abs() < 1e-3);
        assert!((bound(&cpu, &loop1, 100, 1).unwrap().per_second - 10_000.0).abs() < 1e-3);
        assert!(bound(&Profile::default(), &loop1, 10, 1).is_none());
        // tokio hands a block to its pool: 512 threads cap it, not the
        // connections.
        let tokio = Capacity {
            block_holds: false,
            blockers: Some(512),
            ..two
        };
        let b = bound(&block, &tokio, 1000, 1).unwrap();
        assert!((b.per_second - 512_000.0).abs() < 1e-3, "{b:?}");
        assert_eq!(b.why, "512 blocking threads / 1 ms each");
        let b = bound(&block, &tokio, 100, 1).unwrap();
        assert!((b.per_second - 100_000.0).abs() < 1e-3, "{b:?}");
    }

    #[test]
    fn a_share_below_or_within_noise_of_the_bound_is_no_defect() {
        let data = run(&[970.0, 975.0, 965.0]);
        let s = share(&data, "select", 10).expect("a bound");
        assert_eq!(bound_text(&s.bound), "1,000/s: 1 thread / 1 ms each");
        assert_eq!(share_text(&s), "97 %");
        assert!(s.above.is_none());
        let data = run(&[1010.0, 990.0, 1020.0]);
        assert!(share(&data, "select", 10).expect("a bound").above.is_none());
        assert_eq!(above_text(&data, 10, &["select"]), None);
    }

    #[test]
    fn a_share_clearly_above_the_bound_is_flagged() {
        let data = run(&[1300.0, 1310.0, 1290.0]);
        let s = share(&data, "select", 10).expect("a bound");
        assert!(s.above.is_some(), "{s:?}");
        assert_eq!(share_text(&s), "130 % ⚠ above its bound: a defect");
        let line = above_text(&data, 10, &["select"]).unwrap_or_default();
        assert!(line.contains("select (130 %)"), "{line}");
        // One run tests nothing: shown, not flagged.
        let one = run(&[1300.0]);
        let s = share(&one, "select", 10).expect("a bound");
        assert_eq!(share_text(&s), "130 %");
    }

    #[test]
    fn the_record_adds_instances_and_the_offered_rate() {
        let mut plan = RunPlan::example(&["epoll"], &[100], 1);
        plan.work = vec!["block:1ms".parse().unwrap()];
        let spec = CellSpec {
            offered: None,
            id: "epoll/block:1ms/c100/r1".into(),
            index: 0,
            model: "epoll".into(),
            work: Some("block:1ms".parse().unwrap()),
            connections: 100,
            run: 1,
        };
        let summary = serde_json::json!({
            "requests": 700,
            "work": {"spec": "block:1ms", "request_bytes": 64, "capacity":
                {"handlers": 1, "cores": 2, "block_holds": true, "wait_holds": false}}
        });
        let w = of_cell(&plan, &spec, &[summary.clone(), summary.clone()]).expect("work");
        assert_eq!((w.requests, w.capacity.handlers), (1400, Some(2)));
        let b = w.bound.expect("a bound");
        assert!((b.per_second - 2000.0).abs() < 1e-6, "{b:?}");
        plan.workload.rate = Some(crate::results::matrix::Rate::Total(500.0));
        let b = of_cell(&plan, &spec, std::slice::from_ref(&summary)).and_then(|w| w.bound);
        assert_eq!(
            b.map(|b| b.why),
            Some("the open loop's offered rate".into())
        );
        let mut none = spec.clone();
        none.work = None;
        assert_eq!(of_cell(&plan, &none, &[]), None);
        // Churn counts connections a second: the work is recorded, with no
        // bound beside it.
        plan.workload = crate::results::matrix::Workload {
            shape: crate::results::matrix::Shape::of(WorkloadKind::Churn),
            ..plan.workload.clone()
        };
        let w = of_cell(&plan, &spec, &[summary]).expect("work");
        assert_eq!((w.requests, w.bound), (700, None));
    }
}
