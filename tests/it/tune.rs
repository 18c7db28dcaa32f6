//! `c10k run --tune`, end to end on real servers: a pool under blocking
//! work, whose best size is known (hybrid's poll loop hands each request
//! to one of `--workers` threads, and a 1 ms block holds its thread, so
//! 16 connections need about 16 threads where the run's default gives
//! one per server CPU), searched from its defaults and Little's law; the
//! setting kept recorded in plan.json, every slot of the search in
//! tune.jsonl, the matrix run with it and the tables naming it; a model
//! without a knob kept at its defaults and said so; and the bad inputs,
//! each refused in one line before anything runs.

use libtest_mimic::Failed;

use crate::support::{lines, results_dir, run_c10k, run_c10k_within, scratch, PATIENCE};

tests![
    a_pool_is_sized_for_blocking_work_and_the_matrix_runs_with_it,
    with_a_target_the_setting_kept_held_more_at_it,
    bad_tune_inputs_are_refused_in_one_line,
];

fn a_pool_is_sized_for_blocking_work_and_the_matrix_runs_with_it() -> Result<(), Failed> {
    let out = scratch("tune-pool")?;
    let out_text = out.to_string_lossy().into_owned();
    let r = run_c10k(&[
        "run",
        "--models",
        "hybrid,fork",
        "-c",
        "16",
        "--work",
        "block:1ms",
        "--runs",
        "3",
        "--tune",
        "2m",
        "--out",
        &out_text,
    ])?;
    let (dir, plan) = finished(&r, &out)?;
    let tuned = plan["tuned"].as_array().ok_or("plan.json has no tuned")?;
    let of = |m: &str| {
        tuned
            .iter()
            .find(|t| t["model"] == m)
            .ok_or_else(|| format!("no search of {m} in {tuned:?}"))
    };
    // hybrid: a pool of at least 8 (1 ms blocks, 16 connections), kept
    // because it beat the defaults in the paired rounds.
    let h = of("hybrid")?;
    let pool = h["settings"]["workers"].as_u64().unwrap_or(0);
    if pool < 8 {
        return Err(format!("hybrid kept {}: {h}", h["settings"]).into());
    }
    let lo = h["interval"][0].as_f64().ok_or("no interval")?;
    if lo <= 1.0 || h["kept"] != format!("pool {pool}") {
        return Err(format!("hybrid's search: {h}").into());
    }
    if h["tried"].as_array().map_or(0, Vec::len) < 3 {
        return Err(format!("hybrid tried too little: {h}").into());
    }
    // fork: nothing to size, its defaults kept, and why.
    let f = of("fork")?;
    if f.get("settings").is_some() || !f["why"].as_str().unwrap_or("").contains("no knob") {
        return Err(format!("fork's search: {f}").into());
    }
    // Every slot of the search is kept beside the results.
    let log = std::fs::read_to_string(dir.join("tune.jsonl"))?;
    let slots: Vec<serde_json::Value> = log
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    if slots.len() < 9 || slots.iter().any(|s| s["status"] != "ok") {
        return Err(format!("tune.jsonl: {} slots: {log}", slots.len()).into());
    }
    // The matrix ran hybrid with what its search kept.
    for rec in lines(&dir)? {
        if rec["cell"]["model"] != "hybrid" {
            continue;
        }
        let served: Vec<&str> = rec["server"]["args"]
            .as_array()
            .ok_or("a cell without its server's args")?
            .iter()
            .filter_map(|a| a.as_str())
            .collect();
        let last = served.iter().rposition(|a| *a == "--workers");
        if last.and_then(|i| served.get(i + 1)) != Some(&pool.to_string().as_str()) {
            return Err(format!("hybrid ran with {served:?}, not pool {pool}").into());
        }
    }
    // The tables name it with its setting, beside its defaults' figure.
    let shown = format!("hybrid (pool {pool})");
    if !r.stdout.contains(&shown) || !r.stdout.contains("Each model at its best (--tune)") {
        return Err(format!("no {shown} or tuning table on the terminal:\n{}", r.stdout).into());
    }
    // Its tables are data too: results.json's answers, cell for cell.
    crate::schema::results_agree(&dir)?;
    let md = std::fs::read_to_string(dir.join("results.md"))?;
    if !md.contains(&shown) {
        return Err(format!("results.md does not name {shown}").into());
    }
    Ok(())
}

/// With `--slo`, the climb's setting is kept because its own capacity
/// search held a rate at the target the defaults' missed, both recorded,
/// and the capacity search of the run then measures the model with it.
fn with_a_target_the_setting_kept_held_more_at_it() -> Result<(), Failed> {
    let out = scratch("tune-slo")?;
    let out_text = out.to_string_lossy().into_owned();
    // Its budgets (2 minutes each) bound it, not the 30 s guard of a
    // quick command: it takes 20 to 30 s alone, more beside other tests.
    let r = run_c10k_within(
        &[
            "run",
            "--models",
            "hybrid",
            "-c",
            "16",
            "--work",
            "block:1ms",
            "--slo",
            "p99=50ms",
            "--budget",
            "2m",
            "--tune",
            "2m",
            "--out",
            &out_text,
        ],
        PATIENCE * 10,
    )?;
    let (dir, plan) = finished(&r, &out)?;
    let h = plan["tuned"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["model"] == "hybrid"))
        .ok_or("plan.json has no search of hybrid")?;
    let at = &h["at_target"];
    // What it kept is an answer in results.json, under its schema, as
    // the capacity table it then measured is.
    let doc = crate::schema::results_agree(&dir)?;
    let kept = doc["tuned"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["model"] == "hybrid"))
        .ok_or("results.json has no answer of hybrid's search")?;
    if kept["kept"] != h["kept"] || kept["at_target"]["held"] != at["found_held"] {
        return Err(format!("results.json's tuned answer {kept} against plan.json's {h}").into());
    }
    let held = at["found_held"]
        .as_f64()
        .ok_or(format!("no held rate: {h}"))?;
    let missed = at["defaults_missed"]
        .as_f64()
        .ok_or(format!("the defaults missed no rate: {h}"))?;
    // 1 ms blocks on one thread per server CPU miss past 1,000/s a CPU.
    if held < missed || !h["kept"].as_str().unwrap_or("").starts_with("pool ") {
        return Err(format!("hybrid's search at the target: {h}").into());
    }
    // Both searches' slots offered a rate, kept beside the climb's.
    let log = std::fs::read_to_string(dir.join("tune.jsonl"))?;
    let offered = log
        .lines()
        .map(serde_json::from_str::<serde_json::Value>)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|s| s["offered"]["rate"].as_u64().is_some())
        .count();
    if offered < 4 || at["slots"].as_u64() != Some(offered as u64) {
        return Err(format!("{offered} slots at a rate in tune.jsonl: {at}").into());
    }
    // The capacity table names the model with its setting, and the
    // tuning table shows both capacities.
    let shown = format!("hybrid ({})", h["kept"].as_str().unwrap_or(""));
    let md = std::fs::read_to_string(dir.join("results.md"))?;
    for want in [shown.as_str(), "at the target: held, missed"] {
        if !r.stdout.contains(want) || !md.contains(want) {
            return Err(format!(
                "no {want:?} on the terminal or in results.md:\n{}",
                r.stdout
            )
            .into());
        }
    }
    Ok(())
}

/// A run that exited 0: its results directory and its plan.json.
fn finished(
    r: &crate::support::Ran,
    out: &std::path::Path,
) -> Result<(std::path::PathBuf, serde_json::Value), Failed> {
    if r.code != Some(0) {
        return Err(format!("exit {:?}: {}", r.code, r.stderr).into());
    }
    let dir = results_dir(out)?;
    let plan = serde_json::from_str(&std::fs::read_to_string(dir.join("plan.json"))?)?;
    Ok((dir, plan))
}

fn bad_tune_inputs_are_refused_in_one_line() -> Result<(), Failed> {
    let base = [
        "run",
        "--models",
        "hybrid,epoll,threads",
        "-c",
        "10",
        "--out",
        "/nonexistent-c10k",
    ];
    for (extra, words) in [
        (
            &["--tune", "0"][..],
            &["--tune must be given a budget above 0"][..],
        ),
        (
            &["--tune", "1ms"],
            &["too small for one step", "give at least"],
        ),
        (
            &["--tune", "1ms", "--slo", "p99=50ms"],
            &["too small for one step", "give at least"],
        ),
        (&["--tune", "--sequential"], &["resident slots"]),
        (
            &["--tune", "--tune-knob", "epoll:--workers"],
            &["epoll has no knob --workers", "--edge and --interval"],
        ),
        (
            &["--tune", "--tune-knob", "hybrid:--workers=0..10"],
            &["out of range", "1–4,096"],
        ),
        (
            &["--tune", "--tune-knob", "hybrid:--workers=64..8"],
            &["64 is above 8"],
        ),
        (
            &["--tune", "--tune-knob", "epoll:--edge=1..2"],
            &["name it without a range"],
        ),
        (
            &["--tune", "--tune-knob", "threads:--stack-size"],
            &["leaves --stack-size alone"],
        ),
        (
            &["--tune", "--tune-knob", "poll:--interval"],
            &["poll is not a model of this run"],
        ),
        (
            &[
                "--tune",
                "--tune-knob",
                "hybrid:--workers=8..64",
                "--tune-knob",
                "hybrid:--workers=16..512",
            ],
            &["hybrid:--workers is given twice", "give each knob once"],
        ),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(extra);
        let r = run_c10k(&args)?;
        let lines: Vec<&str> = r.stderr.lines().collect();
        if r.code != Some(2) || lines.len() != 1 || !words.iter().all(|w| lines[0].contains(w)) {
            return Err(format!(
                "{extra:?}: expected exit 2 and one line with {words:?}; got {:?}: {:?}",
                r.code, r.stderr
            )
            .into());
        }
    }
    // Only models without a knob to search: nothing to tune.
    let r = run_c10k(&[
        "run",
        "--models",
        "fork",
        "-c",
        "10",
        "--tune",
        "--out",
        "/nonexistent-c10k",
    ])?;
    if r.code != Some(2) || !r.stderr.contains("no model here has a knob to search") {
        return Err(format!("fork alone: {:?} {:?}", r.code, r.stderr).into());
    }
    // A micro-benchmark has no server to tune.
    let r = run_c10k(&["run", "spawn", "--tune", "--out", "/nonexistent-c10k"])?;
    if r.code != Some(2) || !r.stderr.contains("no server to tune") {
        return Err(format!("spawn: {:?} {:?}", r.code, r.stderr).into());
    }
    Ok(())
}
