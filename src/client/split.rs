//! Spreading a load run over worker processes, when one process may not
//! hold all its sockets (the open-files hard limit is per process).
//!
//! The parent re-executes this binary P times, as `c10k load …` with the
//! arguments of each worker's plan ([`LoadPlan::to_args`]: its share of the
//! threads, no outputs, quiet) and `--worker K/P`; the worker reads them
//! back into that plan. Connection ids are interleaved over the processes
//! and their threads, so ids (and the bytes each connection sends) stay
//! unique. The phases are kept in step over the pipes: each worker prints
//! `CONNECTED` once its connections are up; when all have, the parent
//! answers `GO` to every one, and they warm up and measure together. Each
//! worker ends with one `RESULT` line: its [`Measured`] as JSON (histograms
//! as HdrHistogram V2, base64), which the parent merges as each worker
//! merged its event loops'.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use anyhow::Context as _;

use super::drive::drive;
use super::measured::Measured;
use super::plan::{LoadPlan, Workload};
use super::preflight;
use crate::sys;

/// What a worker said on its standard output.
enum Said {
    Line(String),
    Gone,
}

/// The parent: runs `plan` over `processes` workers and merges their
/// measurements. `connected` is called once every worker has its
/// connections up, before any is told to go: the moment to look at a
/// server holding every connection.
pub fn run(
    plan: &LoadPlan,
    processes: usize,
    connected: &mut dyn FnMut(),
) -> anyhow::Result<Measured> {
    if processes > 1
        && matches!(
            plan.workload,
            Workload::Burst { .. } | Workload::Churn { .. }
        )
    {
        anyhow::bail!(
            "--burst and --churn keep their connections in one process, which holds at most {} here; use fewer connections",
            sys::rlimit::nofile().hard.unwrap_or(0).saturating_sub(preflight::HEADROOM)
        );
    }
    let exe = std::env::current_exe().context("finding this program to start workers")?;
    let threads = (plan.threads / processes).max(1);
    let (tx, rx) = mpsc::channel::<(usize, Said)>();
    let mut children = Vec::with_capacity(processes);
    let mut inputs = Vec::with_capacity(processes);
    for k in 0..processes {
        let worker_plan = LoadPlan {
            threads,
            quiet: true,
            json: None,
            csv: None,
            hdr: None,
            ..plan.clone()
        };
        let mut child = Command::new(&exe)
            .args(worker_plan.to_args())
            .args(["--worker", &format!("{k}/{processes}")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting worker process {k}"))?;
        let input = child.stdin.take().context("no stdin to the worker")?;
        let output = child.stdout.take().context("no stdout from the worker")?;
        inputs.push(input);
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines() {
                let Ok(line) = line else { break };
                if tx.send((k, Said::Line(line))).is_err() {
                    return;
                }
            }
            let _ = tx.send((k, Said::Gone));
        });
        children.push(child);
    }
    drop(tx);
    let result = converse(&rx, &mut inputs, processes, connected);
    drop(inputs);
    if result.is_err() {
        for c in &mut children {
            let _ = c.kill();
        }
    }
    for (k, c) in children.iter_mut().enumerate() {
        let status = c
            .wait()
            .with_context(|| format!("waiting for worker {k}"))?;
        if result.is_ok() && !status.success() {
            anyhow::bail!("worker process {k} failed ({status})");
        }
    }
    // The client's memory is its workers' (added by the merge): this
    // coordinating process is not the load generator, and in `c10k run` it
    // is the runner, whose memory is not the client's.
    let mut m = Measured::empty();
    for p in result? {
        m.merge(p);
    }
    Ok(m)
}

/// The parent's side of the protocol: every CONNECTED, then GO to all, then
/// every RESULT.
fn converse(
    rx: &mpsc::Receiver<(usize, Said)>,
    inputs: &mut [std::process::ChildStdin],
    processes: usize,
    on_connected: &mut dyn FnMut(),
) -> anyhow::Result<Vec<Measured>> {
    let mut connected = vec![false; processes];
    let mut results: Vec<Option<Measured>> = (0..processes).map(|_| None).collect();
    while connected.iter().any(|c| !c) {
        match rx.recv().context("every worker went away")? {
            (k, Said::Line(l)) if l.starts_with("CONNECTED") => connected[k] = true,
            (k, Said::Line(l)) => anyhow::bail!("worker {k} said {l:?} instead of CONNECTED"),
            (k, Said::Gone) => {
                anyhow::bail!("worker process {k} ended before its connections were up")
            }
        }
    }
    on_connected();
    for (k, input) in inputs.iter_mut().enumerate() {
        writeln!(input, "GO").with_context(|| format!("telling worker {k} to go"))?;
    }
    while results.iter().any(Option::is_none) {
        match rx.recv().context("every worker went away")? {
            (k, Said::Line(l)) => {
                let json = l
                    .strip_prefix("RESULT ")
                    .with_context(|| format!("worker {k} said {l:?} instead of RESULT"))?;
                results[k] = Some(
                    serde_json::from_str(json).with_context(|| format!("worker {k}'s result"))?,
                );
            }
            (k, Said::Gone) if results[k].is_none() => {
                anyhow::bail!("worker process {k} ended without its results")
            }
            // A worker that has reported closes its output: normal.
            (_, Said::Gone) => {}
        }
    }
    Ok(results.into_iter().flatten().collect())
}

/// A worker process (`c10k load … --worker K/P`): runs its share of the
/// connections of `plan` (read from its arguments), and reports back.
pub fn worker(plan: &LoadPlan) -> anyhow::Result<()> {
    let (_, processes) = plan.process.context("a worker's plan names its process")?;
    if let Some(cpus) = &plan.cpus {
        sys::affinity::pin_current(cpus)?;
    }
    let share = (plan.connections + plan.idle).div_ceil(processes);
    preflight::raise_nofile_for(share).context("raising the open-files limit")?;
    let m = drive(plan, &mut |secs| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "CONNECTED {secs}")?;
        out.flush()?;
        let mut go = String::new();
        std::io::stdin().lock().read_line(&mut go)?;
        if go.trim() == "GO" {
            Ok(())
        } else {
            Err(std::io::Error::other("the parent did not say GO"))
        }
    })?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "RESULT {}", serde_json::to_string(&m)?)?;
    out.flush()?;
    Ok(())
}
