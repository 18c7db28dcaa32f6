//! Command-line behaviour: bad input gets one clear line and exit code 2;
//! the completion scripts and the man page are made from the flags.

use std::process::Command;

use libtest_mimic::Failed;

use crate::support::bin;

tests![
    unknown_model_is_one_line_exit_2,
    bad_sizes_are_refused,
    models_lists_every_model,
    models_knobs_lists_each_models_knobs,
    help_shows_placeholders_in_braces,
    typos_get_a_suggestion,
    completions_name_the_subcommands,
    completions_for_an_unknown_shell_is_one_line_exit_2,
    man_page_has_a_title_and_every_subcommand,
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

/// `c10k models --knobs`: every model has a row, hybrid's pool and
/// epoll-workers' accept modes among them, and fork says it has none.
fn models_knobs_lists_each_models_knobs() -> Result<(), Failed> {
    let out = Command::new(bin()).args(["models", "--knobs"]).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let row = |model: &str, flag: &str| {
        text.lines().any(|l| {
            let mut w = l.split_whitespace();
            w.next() == Some(model) && w.next() == Some(flag)
        })
    };
    let every = c10k::server::names().iter().all(|m| {
        text.lines()
            .any(|l| l.split_whitespace().next() == Some(*m))
    });
    if !out.status.success()
        || !every
        || !row("hybrid", "--workers")
        || !row("epoll-workers", "--accept")
        || !row("threads", "--stack-size")
        || !row("fork", "–")
    {
        return Err(format!("`c10k models --knobs`:\n{text}").into());
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

/// Every shell gets a script; bash's completes the subcommands.
fn completions_name_the_subcommands() -> Result<(), Failed> {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = Command::new(bin()).args(["completions", shell]).output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !text.contains("serve") || !text.contains("load") {
            return Err(format!("`c10k completions {shell}`: {:?}\n{text}", out.status).into());
        }
        // Help texts go into zsh's and fish's: the `{n}` kept from clap
        // must not bring its escape sequence.
        if text.contains('\u{1b}') {
            return Err(format!("`c10k completions {shell}` holds an escape sequence").into());
        }
        if shell == "bash"
            && !text
                .lines()
                .any(|l| l.trim_start().starts_with("complete -F"))
        {
            return Err(
                format!("`c10k completions bash` has no `complete -F` line:\n{text}").into(),
            );
        }
    }
    Ok(())
}

fn completions_for_an_unknown_shell_is_one_line_exit_2() -> Result<(), Failed> {
    let out = Command::new(bin())
        .args(["completions", "nosuch"])
        .output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(2)
        || err.lines().count() != 1
        || !err.contains("nosuch")
        || !out.stdout.is_empty()
    {
        return Err(format!("exit {:?}, stderr {err:?}", out.status.code()).into());
    }
    Ok(())
}

/// The page opens (after roff's definition of the apostrophe string) with
/// `.TH c10k 1`, lists every subcommand, and gives each, nested ones
/// too, a section of its own.
fn man_page_has_a_title_and_every_subcommand() -> Result<(), Failed> {
    let out = Command::new(bin()).arg("man").output()?;
    let page = String::from_utf8_lossy(&out.stdout);
    let first = page
        .lines()
        .find(|l| !l.starts_with(".ie ") && !l.starts_with(".el "));
    if !out.status.success() || !first.is_some_and(|l| l.starts_with(".TH c10k 1 ")) {
        return Err(format!("`c10k man`: {:?}, opens with {first:?}", out.status).into());
    }
    let cmd = c10k::cli::command();
    let mut names: Vec<String> = Vec::new();
    for sub in cmd.get_subcommands() {
        names.push(format!("c10k {}", sub.get_name()));
        for nested in sub.get_subcommands() {
            names.push(format!("c10k {} {}", sub.get_name(), nested.get_name()));
        }
    }
    if !names.iter().any(|n| n == "c10k micro spawn") {
        return Err(format!("the subcommands read from cli: {names:?}").into());
    }
    for name in &names {
        let listed = format!("\\fB{name}\\fR");
        let section = format!(".SH \"{name}\"");
        if !page.contains(&listed) || !page.lines().any(|l| l == section) {
            return Err(format!("`c10k man` lacks {name} (listed or its section):\n{page}").into());
        }
    }
    if page.contains("c10k help") || page.contains('\u{1b}') {
        return Err(format!("`c10k man` lists help or holds an escape sequence:\n{page}").into());
    }
    Ok(())
}
