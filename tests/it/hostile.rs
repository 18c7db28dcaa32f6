//! Hostile and careless input, each case as a careless or hostile user
//! would meet it: bad flags, lying and dying servers, signals, odd output
//! paths, damaged results directories, two runs on one directory. Every
//! case asserts the exit code, the one-line message and that nothing
//! already measured was lost; a panic anywhere fails the case.

use libtest_mimic::Failed;

use crate::support::{run_c10k, Ran, Test};

pub const TESTS: &[(&str, Test)] = &[
    ("cpus_this_machine_lacks", cpus_this_machine_lacks),
    ("missing_arguments_are_named", missing_arguments_are_named),
];

/// Runs `c10k ARGS…`; a panic or a hang is a failure whatever the case
/// expects.
fn c10k(args: &[&str]) -> Result<Ran, Failed> {
    let r = run_c10k(args)?;
    if r.panicked() {
        return Err(format!("c10k {} panicked: {}{}", args.join(" "), r.stdout, r.stderr).into());
    }
    Ok(r)
}

/// Asserts that `r` exited with `code` and said one line on stderr that
/// contains every one of `words`.
fn refused(r: &Ran, code: i32, words: &[&str]) -> Result<(), Failed> {
    let lines: Vec<&str> = r.stderr.lines().collect();
    if r.code != Some(code) || lines.len() != 1 || !words.iter().all(|w| lines[0].contains(w)) {
        return Err(format!(
            "expected exit {code} and one line with {words:?}; got exit {:?}, stderr {:?}",
            r.code, r.stderr
        )
        .into());
    }
    Ok(())
}

// ---- flags -------------------------------------------------------------

/// A CPU list naming CPUs the process may not use is exit 2 naming the
/// CPUs there are, and a huge range is refused before it is built.
fn cpus_this_machine_lacks() -> Result<(), Failed> {
    for cmd in [&["load", "127.0.0.1:9"][..], &["serve"][..]] {
        let with = |cpus: &'static str| [cmd, &["--cpus", cpus]].concat();
        refused(
            &c10k(&with("99"))?,
            2,
            &["--cpus", "CPU 99", "may use CPUs"],
        )?;
        refused(
            &c10k(&with("0-99999999999"))?,
            2,
            &["--cpus", "99999999999"],
        )?;
        refused(&c10k(&with("2-1"))?, 2, &["--cpus", "bad CPU list"])?;
    }
    Ok(())
}

/// A missing argument is named, not only "were not provided".
fn missing_arguments_are_named() -> Result<(), Failed> {
    refused(&c10k(&["load"])?, 2, &["<TARGET>"])?;
    refused(&c10k(&["report"])?, 2, &["<DIR>"])?;
    refused(
        &c10k(&["load", "127.0.0.1:9", "--churn-echo"])?,
        2,
        &["--churn"],
    )?;
    refused(
        &c10k(&["load", "127.0.0.1:9", "--rounds", "3"])?,
        2,
        &["--burst"],
    )?;
    Ok(())
}
