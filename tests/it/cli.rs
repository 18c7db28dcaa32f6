//! Command-line behaviour: bad input gets one clear line and exit code 2.

use std::process::Command;

use libtest_mimic::Failed;

use crate::support::bin;

tests![
    unknown_model_is_one_line_exit_2,
    bad_sizes_are_refused,
    models_lists_every_model,
    help_shows_placeholders_in_braces,
    typos_get_a_suggestion,
];

fn serve(args: &[&str]) -> Result<(Option<i32>, String), Failed> {
    let out = Command::new(bin()).arg("serve").args(args).output()?;
    Ok((
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

fn unknown_model_is_one_line_exit_2() -> Result<(), Failed> {
    let (code, err) = serve(&["--model", "carrier-pigeon"])?;
    if code != Some(2) || err.lines().count() != 1 || !err.contains("carrier-pigeon") {
        return Err(format!("exit {code:?}, stderr {err:?}").into());
    }
    Ok(())
}

fn bad_sizes_are_refused() -> Result<(), Failed> {
    for args in [
        &["--buffer", "12 parsecs"][..],
        &["--buffer", "1"],
        &["--stack-size", "1KiB", "--model", "threads"],
        &["--max-conns", "0"],
        &["--cpus", "1-0"],
    ] {
        let (code, err) = serve(args)?;
        if code != Some(2) || err.lines().count() != 1 {
            return Err(format!("{args:?}: exit {code:?}, stderr {err:?}").into());
        }
    }
    Ok(())
}

fn models_lists_every_model() -> Result<(), Failed> {
    let out = Command::new(bin()).arg("models").output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    for name in c10k::server::names() {
        if !text
            .lines()
            .any(|l| l.split_whitespace().next() == Some(name))
        {
            return Err(format!("`c10k models` does not list {name}").into());
        }
    }
    Ok(())
}

/// Clap reads `{n}` in a help text as a line break; the agent template's
/// `{n}` (and every other placeholder) must show as written.
fn help_shows_placeholders_in_braces() -> Result<(), Failed> {
    for sub in ["load", "run"] {
        let out = Command::new(bin()).args([sub, "--help"]).output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        for want in ["{i}: the agent's index, {n}: the agent count", "{cmd_sh}"] {
            if !out.status.success() || !text.contains(want) {
                return Err(format!("`c10k {sub} --help` lacks {want:?}:\n{text}").into());
            }
        }
        if text.contains('\u{1b}') {
            return Err(format!("`c10k {sub} --help` prints an escape sequence").into());
        }
    }
    let out = Command::new(bin()).args(["run", "--help"]).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !text.contains("{port}: a free port") || !text.contains("Exit codes:") {
        return Err(format!("`c10k run --help`:\n{text}").into());
    }
    Ok(())
}

/// A mistyped flag or subcommand: exit 2, one line, and clap's tip.
fn typos_get_a_suggestion() -> Result<(), Failed> {
    for (args, tip) in [
        (
            &["run", "--model", "epoll"][..],
            "tip: a similar argument exists: '--models'",
        ),
        (&["rnu"], "tip: a similar subcommand exists: 'run'"),
        (&["lod"], "tip: a similar subcommand exists: 'load'"),
        (
            &["load", "127.0.0.1:7", "--fial-on-error"],
            "tip: a similar argument exists: '--fail-on-error'",
        ),
    ] {
        let out = Command::new(bin()).args(args).output()?;
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(2) || err.lines().count() != 1 || !err.contains(tip) {
            return Err(format!("{args:?}: exit {:?}, stderr {err:?}", out.status.code()).into());
        }
    }
    Ok(())
}
