//! A micro-benchmark cell: `c10k micro …` or `c10k herd` run once as a
//! child process for one size, its JSON read back, and the figures of the
//! cell's variant taken from it. The benchmarks measure every variant in
//! one go, so a cell measures all of them and keeps its own: simple, and
//! each variant still runs in its own cell, interleaved with the others.

use std::process::Command;

use crate::results::cell::{BenchFigures, CellResult};
use crate::results::matrix::{Bench, CellSpec, RunPlan};

/// Why a bench cell has no figures.
pub enum Trouble {
    Skipped(String),
    Failed(String),
}

/// Runs `bench` at the cell's size and fills `result.bench`.
pub(crate) fn measure(
    bench: Bench,
    plan: &RunPlan,
    spec: &CellSpec,
    result: &mut CellResult,
) -> Result<(), Trouble> {
    let failed = |m: String| Trouble::Failed(m);
    let json = std::env::temp_dir().join(format!(
        "c10k-bench-{}-{}.json",
        std::process::id(),
        spec.index
    ));
    let n = spec.connections.to_string();
    let mut args: Vec<String> = match bench {
        Bench::Spawn => vec!["micro".into(), "spawn".into(), "--counts".into(), n],
        Bench::Dispatch => vec!["micro".into(), "dispatch".into(), "--fds".into(), n],
        Bench::Accept => vec![
            "micro".into(),
            "accept".into(),
            "--clients".into(),
            n,
            "--duration".into(),
            format!(
                "{}ms",
                (plan.workload.duration_seconds * 1000.0).round().max(10.0)
            ),
        ],
        Bench::Herd => vec![
            "herd".into(),
            "-w".into(),
            n,
            "--methods".into(),
            spec.model.clone(),
        ],
    };
    args.extend(plan.bench_args.iter().cloned());
    args.extend([
        "--runs".into(),
        "1".into(),
        "--json".into(),
        json.display().to_string(),
    ]);
    let exe =
        std::env::current_exe().map_err(|e| failed(format!("cannot find this program: {e}")))?;
    let mut cmd = Command::new(exe);
    cmd.args(&args);
    crate::sys::process::tie_to_parent(&mut cmd);
    let out = cmd
        .output()
        .map_err(|e| failed(format!("cannot start c10k {}: {e}", args[0])))?;
    let text = std::fs::read_to_string(&json);
    let _ = std::fs::remove_file(&json);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("").trim().to_string();
        return Err(failed(format!(
            "c10k {} exited with {}: {last}",
            args[..2].join(" "),
            out.status
        )));
    }
    let v: serde_json::Value = text
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| failed("the benchmark wrote no JSON".into()))?;
    let figures = extract(bench, &spec.model, &v)?;
    result.bench = Some(figures);
    result.status = crate::results::cell::Status::Ok;
    Ok(())
}

/// The figures of `model` in a benchmark's JSON.
fn extract(bench: Bench, model: &str, v: &serde_json::Value) -> Result<BenchFigures, Trouble> {
    let missing = || {
        Trouble::Failed(format!(
            "no figures for '{model}' in the benchmark's output"
        ))
    };
    let median = |x: &serde_json::Value| x["median"].as_f64();
    let arr = |key: &str| v[key].as_array().cloned().unwrap_or_default();
    match bench {
        Bench::Spawn => {
            let (family, kind, key, per) = match model {
                "thread" => ("threads", "default", "stack", "per_thread_us"),
                "thread-small" => ("threads", "small", "stack", "per_thread_us"),
                "fork" => ("forks", "small", "parent", "per_process_us"),
                "fork-large" => ("forks", "large", "parent", "per_process_us"),
                _ => return Err(missing()),
            };
            let row = arr(family)
                .into_iter()
                .find(|r| r[key] == kind)
                .ok_or_else(missing)?;
            Ok(BenchFigures {
                time_seconds: median(&row[per]).map(|us| us / 1e6),
                raw: row,
                ..BenchFigures::default()
            })
        }
        Bench::Dispatch => {
            if let Some(s) = arr("skipped").into_iter().find(|s| s["method"] == model) {
                return Err(Trouble::Skipped(s.to_string()));
            }
            let row = arr("cells")
                .into_iter()
                .find(|r| r["method"] == model)
                .ok_or_else(missing)?;
            Ok(BenchFigures {
                time_seconds: median(&row["wait_ns"]).map(|ns| ns / 1e9),
                raw: row,
                ..BenchFigures::default()
            })
        }
        Bench::Accept => {
            // The JSON names modes in kebab case ("one-interval").
            let row = arr("modes")
                .into_iter()
                .find(|r| r["mode"].as_str().map(|m| m.replace('-', "+")).as_deref() == Some(model))
                .ok_or_else(missing)?;
            if let Some(why) = row["skipped"].as_str() {
                return Err(Trouble::Skipped(why.to_string()));
            }
            Ok(BenchFigures {
                connects_per_second: median(&row["accepts_per_second"]),
                raw: row,
                ..BenchFigures::default()
            })
        }
        Bench::Herd => {
            let row = arr("cells")
                .into_iter()
                .find(|r| r["method"] == model)
                .ok_or_else(missing)?;
            let p50 = row["connect_us"]["p50"].as_f64();
            Ok(BenchFigures {
                time_seconds: p50.map(|us| us / 1e6),
                connect_p50_us: p50,
                connect_p99_us: row["connect_us"]["p99"].as_f64(),
                wakeups_per_connection: row["wakeups_per_connection"].as_f64(),
                failed_accepts_per_connection: row["failed_accepts_per_connection"].as_f64(),
                jain: row["spread"]["jain"].as_f64(),
                raw: row,
                ..BenchFigures::default()
            })
        }
    }
}
