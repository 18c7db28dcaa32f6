//! `bench/grid.py` end to end: the C twins in `bench/c` build with the
//! system compiler and serve, and the grid puts c10k's model beside each
//! in paired rounds with its p50 and p99, at a tiny point (0.3 s measured:
//! this checks the script and the twins, not how their figures fall:
//! ahead, level or behind, each ratio is a positive figure inside its
//! interval, with the verdict that interval gives, and the exit code says
//! whether anything is behind); a model it has no twin for is refused in
//! a line, as is every argument it cannot run (exit 2, before anything is
//! built or run). `--settled` opens each window once
//! every connection has been answered, and says when that was.

use std::process::Command;

use libtest_mimic::Failed;

use crate::support::bin;

tests![
    the_grid_puts_each_model_beside_its_c_twin,
    settled_opens_the_window_once_every_connection_is_answered,
    arguments_it_cannot_run_are_one_line_before_anything_runs,
];

fn grid(args: &[&str]) -> Result<(Option<i32>, String, String), Failed> {
    grid_with(args, &[])
}

/// [`grid`] with `env` set after the quick settings (so it may override
/// them).
fn grid_with(args: &[&str], env: &[(&str, &str)]) -> Result<(Option<i32>, String, String), Failed> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/grid.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(bin())
        .args(args)
        .env("GRID_WARMUP", "0.2")
        .env("GRID_MEASURE", "0.3")
        .env("GRID_SEED", "7")
        .envs(env.iter().copied())
        .output()
        .map_err(|e| format!("python3 {script}: {e}"))?;
    Ok((
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// A row's `G× [LO, HI] VERDICT`: the ratio positive, its interval
/// finite, 0 ≤ LO ≤ G ≤ HI, and the verdict the interval gives as the grid
/// gives it (ahead when it lies on the better side of 1, behind on the
/// worse, level when it holds 1; for a latency, `lower_is_better`, lower
/// is the better side), read at the two decimals printed.
fn ratio_row(row: &str, lower_is_better: bool) -> Result<(), Failed> {
    let (g, lo, hi, said) =
        ratio_of(row).ok_or_else(|| format!("no ratio with its interval: {row:?}"))?;
    // Two decimals: a wide interval's LO, from two rounds, may read 0.00.
    let ordered = hi.is_finite() && g > 0.0 && 0.0 <= lo && lo <= g && g <= hi;
    if !ordered {
        return Err(format!("the ratio and its interval out of order: {row:?}").into());
    }
    let (better, worse) = if lower_is_better {
        (hi <= 1.0, lo >= 1.0)
    } else {
        (lo >= 1.0, hi <= 1.0)
    };
    let fits = match said {
        "ahead" => better,
        "behind" => worse,
        "level" => lo <= 1.0 && hi >= 1.0,
        _ => false,
    };
    if !fits {
        return Err(format!("{said:?} is not what [{lo}, {hi}] gives: {row:?}").into());
    }
    Ok(())
}

/// `G× [LO, HI] VERDICT` in a row: (G, LO, HI, VERDICT).
fn ratio_of(row: &str) -> Option<(f64, f64, f64, &str)> {
    let (before, after) = row.split_once("× [")?;
    let g = before.split_whitespace().last()?.parse().ok()?;
    let (interval, rest) = after.split_once(']')?;
    let (lo, hi) = interval.split_once(", ")?;
    Some((
        g,
        lo.parse().ok()?,
        hi.parse().ok()?,
        rest.split_whitespace().next()?,
    ))
}

fn the_grid_puts_each_model_beside_its_c_twin() -> Result<(), Failed> {
    let (code, text, err) = grid(&["2", "20:1", "--models", "hybrid,epoll-workers,prefork"])?;
    // 0: nothing behind; 1: something behind (either, as the rounds fell).
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
        // Ahead, level or behind, as this host's rounds fell: whichever,
        // the ratio and its interval are figures, and the verdict is the
        // one they give.
        ratio_row(row, false)?;
    }
    for q in ["p50", "p99"] {
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with(q))
            .collect();
        if rows.len() != 3 {
            return Err(format!("{} {q} rows, not 3: {text}", rows.len()).into());
        }
        for row in rows {
            ratio_row(row, true)?;
        }
    }
    // The last line names what is behind, and the exit code agrees.
    let last = text.trim_end().lines().last().unwrap_or("");
    let behind = last
        .strip_prefix("behind: ")
        .ok_or_else(|| format!("no last line: {text}"))?;
    if (behind == "none") != (code == Some(0)) {
        return Err(format!("exit {code:?} with {last:?}").into());
    }
    // A model it has no twin for: one line, before anything runs.
    let (code, text, err) = grid(&["2", "20:1", "--models", "busy"])?;
    if code != Some(2) || !err.contains("no C twin is known for busy") || !text.is_empty() {
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
    if code != Some(2) || !err.contains("--settled") || !text.is_empty() || err.lines().count() != 1
    {
        return Err(format!("client grid: exit {code:?}: {text}{err}").into());
    }
    Ok(())
}

/// A point that is not N:D, a round count that gives no interval (0 would
/// run nothing and call every row behind), a flag it does not have and a
/// setting that is not seconds: each is exit 2 (1 means something is
/// behind) with one line on stderr naming what was typed, and nothing on
/// stdout, where a grid that started prints its seed first.
fn arguments_it_cannot_run_are_one_line_before_anything_runs() -> Result<(), Failed> {
    /// The arguments after BIN, the environment and what the line says.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        (&["2", "abc:1"], &[], "abc:1: a point is N:D"),
        (&["2", "100:1:5"], &[], "100:1:5: a point is N:D"),
        (&["2", "0:1"], &[], "0:1: a point is N:D"),
        (&["2", "20:1", "7"], &[], "7: a point is N:D"),
        (
            &["0", "20:1"],
            &[],
            "ROUNDS 0: a ratio and its interval need at least 2 rounds",
        ),
        (&["1", "20:1"], &[], "ROUNDS 1:"),
        (&["abc"], &[], "abc: not a number of rounds nor a point N:D"),
        (
            &["2", "20:1", "--tail"],
            &[],
            "--tail: not a flag of bench/grid.py",
        ),
        (
            &["2", "20:1"],
            &[("GRID_MEASURE", "abc")],
            "GRID_MEASURE=abc: not a number of seconds",
        ),
        (
            &["2", "20:1"],
            &[("GRID_MEASURE", "0")],
            "GRID_MEASURE=0: not a number of seconds above 0",
        ),
        (
            &["2", "20:1"],
            &[("GRID_WARMUP", "-1")],
            "GRID_WARMUP=-1: not a number of seconds",
        ),
        (
            &["2", "20:1"],
            &[("GRID_SEED", "x")],
            "GRID_SEED=x: not a whole number",
        ),
    ];
    for &(args, env, says) in cases {
        let (code, text, err) = grid_with(args, env)?;
        if code != Some(2) || !text.is_empty() || err.lines().count() != 1 || !err.contains(says) {
            return Err(format!(
                "{env:?} {args:?}: expected exit 2 and one line with {says:?}; got exit {code:?}, \
                 stdout {text:?}, stderr {err:?}"
            )
            .into());
        }
    }
    Ok(())
}
