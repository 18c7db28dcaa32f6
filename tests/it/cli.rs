//! Command-line behaviour: bad input gets one clear line and exit code 2.

use std::process::Command;

use libtest_mimic::Failed;

use crate::support::{bin, Test};

pub const TESTS: &[(&str, Test)] = &[
    ("unknown_model_is_one_line_exit_2", unknown_model),
    ("bad_sizes_are_refused", bad_sizes),
    ("models_lists_every_model", models_list),
];

fn serve(args: &[&str]) -> Result<(Option<i32>, String), Failed> {
    let out = Command::new(bin()).arg("serve").args(args).output()?;
    Ok((
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

fn unknown_model() -> Result<(), Failed> {
    let (code, err) = serve(&["--model", "carrier-pigeon"])?;
    if code != Some(2) || err.lines().count() != 1 || !err.contains("carrier-pigeon") {
        return Err(format!("exit {code:?}, stderr {err:?}").into());
    }
    Ok(())
}

fn bad_sizes() -> Result<(), Failed> {
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

fn models_list() -> Result<(), Failed> {
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
