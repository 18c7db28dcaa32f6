//! Hostile and careless input, each case as a careless or hostile user
//! would meet it: bad flags, lying and dying servers, signals, odd output
//! paths, damaged results directories, two runs on one directory. Every
//! case asserts the exit code, the one-line message and that nothing
//! already measured was lost; a panic anywhere fails the case.

use std::path::{Path, PathBuf};

use libtest_mimic::Failed;

use crate::support::{run_c10k, Ran, Test};

pub const TESTS: &[(&str, Test)] = &[
    ("cpus_this_machine_lacks", cpus_this_machine_lacks),
    ("missing_arguments_are_named", missing_arguments_are_named),
    (
        "resume_completes_a_last_result_without_its_newline",
        resume_completes_a_last_result_without_its_newline,
    ),
    (
        "resume_refuses_results_of_another_plan",
        resume_refuses_results_of_another_plan,
    ),
    (
        "report_names_every_unreadable_line",
        report_names_every_unreadable_line,
    ),
    (
        "a_second_run_on_a_directory_is_refused",
        a_second_run_on_a_directory_is_refused,
    ),
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

// ---- result files ------------------------------------------------------

/// A real results directory of 2 cells (epoll at 2 connections, 2 runs),
/// made by `c10k run` under a fresh scratch directory: (scratch, results).
fn measured(name: &str) -> Result<(PathBuf, PathBuf), Failed> {
    let out = std::env::temp_dir().join(format!("c10k-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out)?;
    let r = c10k(&[
        "run",
        "--models",
        "epoll",
        "--connections",
        "2",
        "--runs",
        "2",
        "--duration",
        "50ms",
        "--warmup",
        "0ms",
        "--no-report",
        "--out",
        text(&out)?,
    ])?;
    if r.code != Some(0) {
        return Err(format!("c10k run: exit {:?}: {}", r.code, r.stderr).into());
    }
    let dirs: Vec<PathBuf> = std::fs::read_dir(&out)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    match dirs.as_slice() {
        [one] if results(one)?.len() == 2 => Ok((out.clone(), one.clone())),
        _ => Err(format!("expected one directory of 2 results in {}", out.display()).into()),
    }
}

fn text(p: &Path) -> Result<&str, Failed> {
    Ok(p.to_str().ok_or("a temporary path that is not UTF-8")?)
}

/// The lines of `results.jsonl`, each with its newline when it has one.
fn results(dir: &Path) -> Result<Vec<String>, Failed> {
    let t = std::fs::read_to_string(dir.join("results.jsonl"))?;
    Ok(t.split_inclusive('\n').map(str::to_string).collect())
}

/// The cell ids of the results in `results.json`, as `c10k report` wrote it.
fn reported(dir: &Path) -> Result<Vec<String>, Failed> {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json"))?)?;
    let cells = json["cells"].as_array().ok_or("results.json lacks cells")?;
    Ok(cells
        .iter()
        .map(|c| c["id"].as_str().unwrap_or("").to_string())
        .collect())
}

/// `c10k report DIR`, which must write its exports whatever it says.
fn report(dir: &Path) -> Result<Ran, Failed> {
    let r = c10k(&["report", text(dir)?])?;
    if !r.stdout.contains("wrote") {
        return Err(format!("c10k report wrote nothing: {}{}", r.stdout, r.stderr).into());
    }
    Ok(r)
}

/// Every stderr line of `r` is `c10k report: results.jsonl line N: …` for
/// the lines `numbers` in order, each saying `what`.
fn named_lines(r: &Ran, numbers: &[usize], what: &[&str]) -> Result<(), Failed> {
    let lines: Vec<&str> = r.stderr.lines().collect();
    let ok = lines.len() == numbers.len()
        && lines.iter().zip(numbers).zip(what).all(|((l, n), w)| {
            l.starts_with(&format!("c10k report: results.jsonl line {n}: ")) && l.contains(w)
        });
    if !ok {
        return Err(format!("expected lines {numbers:?} named ({what:?}); got {lines:#?}").into());
    }
    Ok(())
}

/// A killed run whose last result was written whole but for its newline:
/// resuming counts that cell as done, completes the line instead of
/// cutting it, and runs only the other cell.
fn resume_completes_a_last_result_without_its_newline() -> Result<(), Failed> {
    let (out, dir) = measured("newline")?;
    let before = results(&dir)?;
    std::fs::write(dir.join("results.jsonl"), before[0].trim_end())?;
    let r = c10k(&["run", "--resume", text(&dir)?, "--no-report"])?;
    if r.code != Some(0)
        || !r
            .stderr
            .contains("results.jsonl line 1: the last result lacked its newline; completed")
        || !r.stderr.contains("1 of 2 cells recorded")
    {
        return Err(format!("resume: exit {:?}: {}", r.code, r.stderr).into());
    }
    let after = results(&dir)?;
    if after.len() != 2 || after[0] != before[0] || !after[1].contains("\"id\":\"epoll/c2/r2\"") {
        return Err(format!("after the resume: {after:#?}").into());
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}

/// A plan that is not the one these results were measured under: another
/// workload (a closed-loop cell taken for a burst cell), or fewer cells
/// than were recorded. A resume refuses, naming the first line, and
/// changes nothing; a report names every line, counts only results of the
/// plan, and exits 1.
fn resume_refuses_results_of_another_plan() -> Result<(), Failed> {
    let (out, dir) = measured("plan")?;
    let original = std::fs::read(dir.join("plan.json"))?;
    let before = std::fs::read(dir.join("results.jsonl"))?;
    let edit = |f: &dyn Fn(&mut serde_json::Value)| -> Result<(), Failed> {
        let mut plan: serde_json::Value = serde_json::from_slice(&original)?;
        f(&mut plan);
        std::fs::write(dir.join("plan.json"), serde_json::to_vec(&plan)?)?;
        Ok(())
    };
    let resume = || c10k(&["run", "--resume", text(&dir)?, "--no-report"]);

    edit(&|p| p["workload"]["kind"] = "burst".into())?;
    refused(
        &resume()?,
        2,
        &[
            "cannot resume",
            "results.jsonl line 1: not a result of this plan: cell epoll/c2/r1 was measured with a closed workload, plan.json's is burst",
            "(and 1 more line;",
        ],
    )?;
    let r = report(&dir)?;
    named_lines(&r, &[1, 2], &["closed workload, plan.json's is burst"; 2])?;
    if r.code != Some(1) || !reported(&dir)?.is_empty() {
        return Err(format!("report: exit {:?}, {:?}", r.code, reported(&dir)?).into());
    }

    // The same settings, but a plan of one cell over two results: "2 of
    // 1 cells" before.
    edit(&|p| {
        if let Some(cells) = p["cells"].as_array_mut() {
            cells.truncate(1);
        }
    })?;
    refused(
        &resume()?,
        2,
        &[
            "cannot resume",
            "results.jsonl line 2: not a result of this plan: cell epoll/c2/r2 is not in plan.json",
        ],
    )?;
    let r = report(&dir)?;
    named_lines(&r, &[2], &["cell epoll/c2/r2 is not in plan.json"])?;
    if r.code != Some(1) || reported(&dir)? != ["epoll/c2/r1"] {
        return Err(format!("report: exit {:?}, {:?}", r.code, reported(&dir)?).into());
    }
    if std::fs::read(dir.join("results.jsonl"))? != before {
        return Err("a refused resume changed results.jsonl".into());
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}

/// NaN and Infinity (which JSON has not) and a damaged line: a report
/// names each line, still reports the readable results, and exits 1; a
/// resume refuses. A partial last line alone (a killed run) is a warning
/// and exit 0.
fn report_names_every_unreadable_line() -> Result<(), Failed> {
    let (out, dir) = measured("unreadable")?;
    let lines = results(&dir)?;
    let with = |line: &str, key: &str, token: &str| -> Result<String, Failed> {
        let mut v: serde_json::Value = serde_json::from_str(line)?;
        v[key] = 123_456.5.into();
        Ok(v.to_string().replace("123456.5", token) + "\n")
    };
    let damaged = [
        lines[0].clone(),
        with(&lines[0], "wall_seconds", "NaN")?,
        format!("{}\n", &lines[1][..lines[1].len() / 2]),
        with(&lines[1], "started_unix", "-Infinity")?,
        lines[1].clone(),
    ]
    .concat();
    std::fs::write(dir.join("results.jsonl"), &damaged)?;
    let r = report(&dir)?;
    named_lines(&r, &[2, 3, 4], &["not a result: "; 3])?;
    if r.code != Some(1) || reported(&dir)? != ["epoll/c2/r1", "epoll/c2/r2"] {
        return Err(format!("report: exit {:?}, {:?}", r.code, reported(&dir)?).into());
    }
    refused(
        &c10k(&["run", "--resume", text(&dir)?, "--no-report"])?,
        2,
        &[
            "cannot resume",
            "results.jsonl line 2: ",
            "(and 2 more lines;",
        ],
    )?;
    if std::fs::read_to_string(dir.join("results.jsonl"))? != damaged {
        return Err("a refused resume changed results.jsonl".into());
    }

    let killed = [lines[0].as_str(), &lines[1], &lines[1][..100]].concat();
    std::fs::write(dir.join("results.jsonl"), &killed)?;
    let r = report(&dir)?;
    named_lines(&r, &[3], &["a partial last line"])?;
    if r.code != Some(0) || reported(&dir)? != ["epoll/c2/r1", "epoll/c2/r2"] {
        return Err(format!("report: exit {:?}, {:?}", r.code, reported(&dir)?).into());
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}

/// While one run holds a directory (here the test holds its lock), a
/// second `--resume` of it is refused before it runs or writes anything;
/// `c10k report` still reads it. Once the lock is gone, the resume runs.
fn a_second_run_on_a_directory_is_refused() -> Result<(), Failed> {
    let (out, dir) = measured("lock")?;
    let before = results(&dir)?;
    std::fs::write(dir.join("results.jsonl"), &before[0])?;
    let plan = std::fs::read(dir.join("plan.json"))?;
    let held = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(dir.join("results.jsonl"))?;
    rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
    let pid = format!("(pid {})", std::process::id());
    refused(
        &c10k(&["run", "--resume", text(&dir)?, "--no-report"])?,
        2,
        &[
            &format!("c10k run: {} is in use by another c10k run", dir.display()),
            &pid,
        ],
    )?;
    if results(&dir)? != before[..1] || std::fs::read(dir.join("plan.json"))? != plan {
        return Err("a refused run changed the directory".into());
    }
    let r = report(&dir)?;
    if r.code != Some(0) || reported(&dir)? != ["epoll/c2/r1"] {
        return Err(format!("report beside a run: exit {:?}: {}", r.code, r.stderr).into());
    }
    drop(held);
    let r = c10k(&["run", "--resume", text(&dir)?, "--no-report"])?;
    let after = results(&dir)?;
    if r.code != Some(0) || after.len() != 2 || after[0] != before[0] {
        return Err(format!("resume after the lock: exit {:?}: {}", r.code, r.stderr).into());
    }
    let _ = std::fs::remove_dir_all(&out);
    Ok(())
}
