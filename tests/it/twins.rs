//! `bench/grid.py` end to end: the C twins in `bench/c` build with the
//! system compiler and serve, and the grid puts c10k's model beside each
//! in paired rounds with its p50 and p99, at a tiny point (0.3 s measured:
//! this checks the script and the twins, not their figures); a model it
//! has no twin for is refused in a line. `--settled` opens each window once
//! every connection has been answered, and says when that was.

use std::process::Command;

use libtest_mimic::Failed;

use crate::support::bin;

tests![
    the_grid_puts_each_model_beside_its_c_twin,
    settled_opens_the_window_once_every_connection_is_answered
];

fn grid(args: &[&str]) -> Result<(Option<i32>, String, String), Failed> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/grid.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(bin())
        .args(args)
        .env("GRID_WARMUP", "0.2")
        .env("GRID_MEASURE", "0.3")
        .env("GRID_SEED", "7")
        .output()
        .map_err(|e| format!("python3 {script}: {e}"))?;
    Ok((
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

fn the_grid_puts_each_model_beside_its_c_twin() -> Result<(), Failed> {
    let (code, text, err) = grid(&["2", "20:1", "--models", "hybrid,epoll-workers,prefork"])?;
    // 0: nothing behind; 1: something behind (a figure, not checked here).
    if !matches!(code, Some(0 | 1)) {
        return Err(format!("exit {code:?}: {text}{err}").into());
    }
    for m in ["hybrid", "epoll-workers", "prefork"] {
        let head = format!("{m} N=20 D=1: C {m} ");
        let rate: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix(&head))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|r| r.replace(',', "").parse().ok())
            .ok_or_else(|| format!("no {head:?} row: {text}"))?;
        if rate <= 0.0 {
            return Err(format!("{m}'s twin echoed nothing: {text}").into());
        }
        let ours = format!("c10k {m}");
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with(&ours))
            .ok_or_else(|| format!("no {ours} row: {text}"))?;
        if !row.contains('×') || !["ahead", "level", "behind"].iter().any(|v| row.contains(v)) {
            return Err(format!("{ours}: {row}").into());
        }
    }
    for q in ["p50", "p99"] {
        let rows = text
            .lines()
            .filter(|l| l.trim_start().starts_with(q))
            .count();
        if rows != 3 {
            return Err(format!("{rows} {q} rows, not 3: {text}").into());
        }
    }
    if !text
        .trim_end()
        .lines()
        .last()
        .is_some_and(|l| l.starts_with("behind: "))
    {
        return Err(format!("no last line: {text}").into());
    }
    // A model it has no twin for: one line, before anything runs.
    let (code, text, err) = grid(&["2", "20:1", "--models", "busy"])?;
    if code != Some(1) || !err.contains("no C twin is known for busy") || !text.is_empty() {
        return Err(format!("busy: exit {code:?}: {text}{err}").into());
    }
    Ok(())
}

/// `--settled`: each side's client says when its last connection was first
/// answered, the point prints both times and an `all answered` row, and the
/// client grid, which has no such window, refuses the flag in one line.
fn settled_opens_the_window_once_every_connection_is_answered() -> Result<(), Failed> {
    let (code, text, err) = grid(&["2", "20:1", "--models", "threads", "--settled"])?;
    if !matches!(code, Some(0 | 1)) {
        return Err(format!("exit {code:?}: {text}{err}").into());
    }
    let line = text
        .lines()
        .find_map(|l| {
            l.trim_start()
                .strip_prefix("every connection answered after, median: ")
        })
        .ok_or_else(|| format!("no answered line: {text}"))?;
    // Both sides answered all 20, long before the limit: a time each, in s.
    for side in ["C threads ", "c10k threads "] {
        let secs: Option<f64> = line
            .split(", ")
            .find_map(|part| part.strip_prefix(side))
            .and_then(|t| t.strip_suffix(" s"))
            .and_then(|t| t.parse().ok());
        if !secs.is_some_and(|s| s >= 0.0) {
            return Err(format!("{side}had no time in {line:?}").into());
        }
    }
    if !text
        .lines()
        .any(|l| l.trim_start().starts_with("all answered") && l.contains('×'))
    {
        return Err(format!("no all answered row: {text}").into());
    }
    let (code, text, err) = grid(&["2", "20:1", "--settled"])?;
    if code != Some(1) || !err.contains("--settled") || !text.is_empty() || err.lines().count() != 1
    {
        return Err(format!("client grid: exit {code:?}: {text}{err}").into());
    }
    Ok(())
}
