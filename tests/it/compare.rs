//! `c10k compare` and `c10k run --baseline` from the command line: a real
//! results directory (a short run of two models at two counts, made once)
//! is the template, and each test writes sides from it with figures it
//! chooses (every run's throughput set, nothing disturbed), so a verdict
//! can be asserted; the loads are real `c10k load --json --hdr` runs.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libtest_mimic::Failed;
use serde_json::Value;

use crate::support::{
    bin, ensure, results_dir, run_c10k, scratch, shared_scratch, Ran, Server, Started,
};

tests![
    itself_is_equivalent,
    twenty_percent_slower_fails_the_gate,
    two_percent_inside_noise_is_never_slower,
    one_side_only_cells_are_listed,
    differing_settings_are_named,
    another_loop_is_refused,
    damaged_inputs_name_file_and_line,
    load_reports_compare,
    json_follows_its_schema,
    run_baseline_reruns_the_plan,
    an_impossible_figure_or_a_link_loop_is_named,
    a_figure_past_any_measurement_prints_as_itself,
];

/// A real results directory of `models` at 2 and 4 connections, 3 runs,
/// made once per model list, in a [`shared_scratch`] directory: the tests
/// after the one that made it read it too.
fn template(models: &'static str) -> Result<PathBuf, Failed> {
    static EPOLL_POLL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    static EPOLL_SELECT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let cell = match models {
        "epoll,poll" => &EPOLL_POLL,
        _ => &EPOLL_SELECT,
    };
    let made = cell.get_or_init(|| {
        let out = shared_scratch(&format!("compare-template-{}", models.replace(',', "-")))
            .map_err(|e| format!("{e:?}"))?;
        let out_s = out.to_string_lossy().into_owned();
        let ran = run_c10k(&[
            "run",
            "--models",
            models,
            "-c",
            "2,4",
            "--runs",
            "3",
            "-d",
            "50ms",
            "--warmup",
            "0",
            "--pin",
            "none",
            "--no-report",
            "--out",
            &out_s,
        ])?;
        if ran.code != Some(0) {
            return Err(format!("the template run failed: {}", ran.stderr));
        }
        results_dir(&out).map_err(|e| format!("{e:?}"))
    });
    Ok(made.clone()?)
}

/// The records of a results directory that count (a disturbed run's
/// repeat, not the run), each once.
fn records(dir: &Path) -> Result<Vec<Value>, Failed> {
    crate::support::lines(dir)
}

/// Writes a side at `to` from `from`: the plan and environment copied
/// (then changed by `edit`), one record per cell with `repeat` 0, nothing
/// disturbed, and throughput `figure(model, connections, run)`.
fn side(
    from: &Path,
    to: &Path,
    figure: &dyn Fn(&str, u64, u64) -> f64,
    edit: &dyn Fn(&mut Value, &mut Value),
) -> Result<(), Failed> {
    std::fs::create_dir_all(to)?;
    let mut plan: Value = serde_json::from_slice(&std::fs::read(from.join("plan.json"))?)?;
    let mut env: Value = serde_json::from_slice(&std::fs::read(from.join("environment.json"))?)?;
    edit(&mut plan, &mut env);
    let mut lines = String::new();
    for mut r in records(from)? {
        let model = r["model"].as_str().unwrap_or_default().to_string();
        let (n, run) = (
            r["connections"].as_u64().unwrap_or(0),
            r["run"].as_u64().unwrap_or(0),
        );
        r["repeat"] = 0.into();
        r["load"]["limits"]["interference"] = false.into();
        r["load"]["throughput"]["messages_per_second"] = figure(&model, n, run).into();
        // Every record carries the plan's settings: the edited ones.
        let mut settings = plan.clone();
        for k in ["cells", "command", "title"] {
            settings.as_object_mut().map(|m| m.remove(k));
        }
        r["plan"] = settings;
        lines.push_str(&serde_json::to_string(&r)?);
        lines.push('\n');
    }
    std::fs::write(to.join("plan.json"), serde_json::to_vec_pretty(&plan)?)?;
    std::fs::write(
        to.join("environment.json"),
        serde_json::to_vec_pretty(&env)?,
    )?;
    std::fs::write(to.join("results.jsonl"), lines)?;
    Ok(())
}

/// 10,000/s at every cell, each run off by `noise[run - 1]`.
fn steady(noise: [f64; 3]) -> impl Fn(&str, u64, u64) -> f64 {
    move |_, _, run| 10_000.0 * noise[(run as usize - 1).min(2)]
}

fn no_edit(_: &mut Value, _: &mut Value) {}

fn compare(args: &[&str]) -> Result<Ran, Failed> {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    let ran = run_c10k(&all)?;
    if ran.panicked() {
        return Err(format!("c10k compare panicked: {}", ran.stderr).into());
    }
    Ok(ran)
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn expect(ran: &Ran, code: i32, what: &str) -> Result<(), Failed> {
    if ran.code != Some(code) {
        return Err(format!(
            "{what}: exit {:?}, expected {code}\nstdout: {}\nstderr: {}",
            ran.code, ran.stdout, ran.stderr
        )
        .into());
    }
    Ok(())
}

fn has(text: &str, needle: &str, what: &str) -> Result<(), Failed> {
    if !text.contains(needle) {
        return Err(format!("{what} lacks {needle:?}:\n{text}").into());
    }
    Ok(())
}

/// The second line of the output: the summary.
fn summary(ran: &Ran) -> String {
    ran.stdout.lines().nth(1).unwrap_or_default().to_string()
}

fn itself_is_equivalent() -> Result<(), Failed> {
    let dir = template("epoll,poll")?;
    let ran = compare(&[&s(&dir), &s(&dir), "--fail-if-slower", "5"])?;
    expect(&ran, 0, "a run against itself")?;
    let line = summary(&ran);
    has(
        &line,
        "0 of 4 cells slower; 4 equivalent (±5 %)",
        "the summary",
    )?;
    has(&ran.stdout, "equivalent (the same runs)", "the table")?;
    has(&ran.stdout, "--fail-if-slower 5 %: passed", "the gate")?;
    if ran.stdout.contains("differs:") {
        return Err(format!("a run differs from itself:\n{}", ran.stdout).into());
    }
    Ok(())
}

fn twenty_percent_slower_fails_the_gate() -> Result<(), Failed> {
    let t = template("epoll,poll")?;
    let work = scratch("compare-twenty")?;
    let (base, new) = (work.join("base"), work.join("new"));
    side(&t, &base, &steady([1.0, 1.01, 0.99]), &no_edit)?;
    let slower = |m: &str, _: u64, run: u64| {
        let noise = [1.005, 0.995, 1.0][run as usize - 1];
        10_000.0 * noise * if m == "epoll" { 0.8 } else { 1.0 }
    };
    side(&t, &new, &slower, &no_edit)?;
    let ran = compare(&[&s(&base), &s(&new)])?;
    expect(&ran, 0, "without a gate")?;
    let line = summary(&ran);
    has(&line, "2 of 4 cells slower, worst epoll at ", "the summary")?;
    has(&line, "2 equivalent (±5 %)", "the summary")?;
    let ran = compare(&[&s(&base), &s(&new), "--fail-if-slower", "5%"])?;
    expect(&ran, 1, "with --fail-if-slower 5")?;
    has(
        &ran.stdout,
        "--fail-if-slower 5 %: FAILED, 2 cells slower by more than 5 % (4 cells tested at 95 % each): epoll at 2 (0.80×",
        "the gate",
    )?;
    // Beyond what the gate allows: passes.
    let ran = compare(&[&s(&base), &s(&new), "--fail-if-slower", "30"])?;
    expect(&ran, 0, "with --fail-if-slower 30")?;
    // The other way round, epoll is faster.
    let ran = compare(&[&s(&new), &s(&base)])?;
    has(
        &summary(&ran),
        "0 of 4 cells slower; 2 faster",
        "NEW and BASE swapped",
    )?;
    Ok(())
}

fn two_percent_inside_noise_is_never_slower() -> Result<(), Failed> {
    let t = template("epoll,poll")?;
    let work = scratch("compare-two")?;
    let (base, new) = (work.join("base"), work.join("new"));
    side(&t, &base, &steady([1.05, 0.95, 1.0]), &no_edit)?;
    side(
        &t,
        &new,
        &steady([0.98 * 0.95, 0.98 * 1.05, 0.98]),
        &no_edit,
    )?;
    let ran = compare(&[&s(&base), &s(&new), "--fail-if-slower", "5"])?;
    expect(&ran, 0, "2 % inside ±5 % noise")?;
    has(
        &summary(&ran),
        "0 of 4 cells slower; 4 inconclusive",
        "the summary",
    )?;
    has(&ran.stdout, "--fail-if-slower 5 %: passed", "the gate")?;
    Ok(())
}

fn one_side_only_cells_are_listed() -> Result<(), Failed> {
    let (a, b) = (template("epoll,poll")?, template("epoll,select")?);
    let ran = compare(&[&s(&a), &s(&b)])?;
    expect(&ran, 0, "two runs sharing epoll")?;
    has(&ran.stdout, "only in BASE: poll at 2 and 4", "the head")?;
    has(&ran.stdout, "only in NEW: select at 2 and 4", "the head")?;
    has(&summary(&ran), "of 2 cells slower", "the summary")?;
    // A variant defined otherwise on each side is not the same model.
    let work = scratch("compare-variant")?;
    let (base, new) = (work.join("base"), work.join("new"));
    let variant = |ns: u64| {
        move |plan: &mut Value, _: &mut Value| {
            plan["variants"] = serde_json::json!([{"name": "poll@v", "model": "poll",
                "settings": {"interval_ns": ns}}]);
        }
    };
    side(&a, &base, &steady([1.0; 3]), &variant(1_000_000))?;
    side(&a, &new, &steady([1.0; 3]), &variant(2_000_000))?;
    // poll becomes the variant poll@v in the plan and its records.
    for dir in [&base, &new] {
        for f in ["plan.json", "results.jsonl"] {
            let text = std::fs::read_to_string(dir.join(f))?
                .replace("\"poll\"", "\"poll@v\"")
                .replace("\"poll/c", "\"poll@v/c")
                // The variant's own model stays poll (keys are sorted).
                .replace(
                    "\"model\": \"poll@v\",\n      \"name\"",
                    "\"model\": \"poll\",\n      \"name\"",
                )
                .replace(
                    "\"model\":\"poll@v\",\"name\"",
                    "\"model\":\"poll\",\"name\"",
                );
            std::fs::write(dir.join(f), text)?;
        }
    }
    let ran = compare(&[&s(&base), &s(&new)])?;
    has(
        &ran.stdout,
        "only in BASE: poll@v at 2 and 4 (poll@v is poll --interval 1ms in BASE, poll --interval 2ms in NEW)",
        "the head",
    )?;
    Ok(())
}

fn differing_settings_are_named() -> Result<(), Failed> {
    let t = template("epoll,poll")?;
    let work = scratch("compare-settings")?;
    let (base, new) = (work.join("base"), work.join("new"));
    side(&t, &base, &steady([1.0; 3]), &no_edit)?;
    let other = |plan: &mut Value, env: &mut Value| {
        plan["server_settings"] = serde_json::json!({"interval_ns": 1_000_000});
        plan["workload"]["duration_seconds"] = 0.06.into();
        env["kernel"] = "Linux 9.9.9 #1 SMP x86_64".into();
        env["cpu_model"] = "Another CPU".into();
    };
    side(&t, &new, &steady([1.0; 3]), &other)?;
    let ran = compare(&[&s(&base), &s(&new)])?;
    expect(&ran, 0, "settings that differ")?;
    has(
        &ran.stdout,
        "server_settings.interval_ns null → 1000000",
        "the head",
    )?;
    has(
        &ran.stdout,
        "workload.duration_seconds 0.05 → 0.06",
        "the head",
    )?;
    has(&ran.stdout, "environment.kernel ", "the head")?;
    has(&ran.stdout, "⚠ other machine: ", "the head")?;
    has(&ran.stdout, "→ Another CPU (", "the head")?;
    Ok(())
}

fn another_loop_is_refused() -> Result<(), Failed> {
    let t = template("epoll,poll")?;
    let work = scratch("compare-frame")?;
    let (base, new) = (work.join("base"), work.join("new"));
    side(&t, &base, &steady([1.0; 3]), &no_edit)?;
    let open = |plan: &mut Value, _: &mut Value| {
        plan["primary"] = "latency".into();
    };
    side(&t, &new, &steady([1.0; 3]), &open)?;
    let ran = compare(&[&s(&base), &s(&new)])?;
    expect(&ran, 2, "a closed loop against an open one")?;
    has(
        &ran.stderr,
        "c10k compare: BASE measured round trips/s (closed loop",
        "stderr",
    )?;
    if ran.stderr.lines().count() != 1 {
        return Err(format!("more than one line: {}", ran.stderr).into());
    }
    Ok(())
}

fn damaged_inputs_name_file_and_line() -> Result<(), Failed> {
    let t = template("epoll,poll")?;
    let work = scratch("compare-damaged")?;
    let good = work.join("good");
    side(&t, &good, &steady([1.0; 3]), &no_edit)?;
    let text = std::fs::read_to_string(good.join("results.jsonl"))?;
    let lines: Vec<&str> = text.lines().collect();
    // A partial last line: a run killed while writing. A warning, exit 0.
    let partial = work.join("partial");
    side(&t, &partial, &steady([1.0; 3]), &no_edit)?;
    let mut cut = lines[..lines.len() - 1].join("\n");
    cut.push('\n');
    cut.push_str(&lines[lines.len() - 1][..40]);
    std::fs::write(partial.join("results.jsonl"), cut)?;
    let ran = compare(&[&s(&good), &s(&partial)])?;
    expect(&ran, 0, "a partial last line")?;
    has(
        &ran.stderr,
        &format!("results.jsonl line {}: a partial last line", lines.len()),
        "stderr",
    )?;
    // A damaged line in the middle: refused, naming it.
    let broken = work.join("broken");
    side(&t, &broken, &steady([1.0; 3]), &no_edit)?;
    let mut bad: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    bad[1] = "{\"version\": 1, \"id\": ".into();
    std::fs::write(broken.join("results.jsonl"), bad.join("\n") + "\n")?;
    let ran = compare(&[&s(&good), &s(&broken)])?;
    expect(&ran, 2, "a damaged line")?;
    has(
        &ran.stderr,
        "broken/results.jsonl line 2: not a result",
        "stderr",
    )?;
    // A plan that does not parse.
    let plan = work.join("plan");
    side(&t, &plan, &steady([1.0; 3]), &no_edit)?;
    std::fs::write(
        plan.join("plan.json"),
        "{\"version\": 1,\n \"experiment\": }",
    )?;
    let ran = compare(&[&s(&plan), &s(&good)])?;
    expect(&ran, 2, "a plan that does not parse")?;
    has(&ran.stderr, "plan/plan.json does not parse", "stderr")?;
    has(&ran.stderr, "line 2", "stderr")?;
    // Another kind of JSON given as a load report.
    let other = work.join("results.json");
    std::fs::write(&other, "{\n  \"plan\": {}\n}\n")?;
    let ran = compare(&[&s(&other), &s(&other)])?;
    expect(&ran, 2, "an export given as a load")?;
    has(
        &ran.stderr,
        "results.json: not a c10k load report (no schema_version)",
        "stderr",
    )?;
    let old = work.join("old.json");
    std::fs::write(&old, "{\n  \"x\": 1,\n  \"schema_version\": 1\n}\n")?;
    let ran = compare(&[&s(&old), &s(&old)])?;
    expect(&ran, 2, "a report of another schema")?;
    has(
        &ran.stderr,
        "old.json line 3: a load report of schema v1, this c10k reads v2",
        "stderr",
    )?;
    if ran.stderr.lines().count() != 1 {
        return Err(format!("more than one line: {}", ran.stderr).into());
    }
    Ok(())
}

/// `c10k load --json --hdr` into `dir/NAME.json`, `.hdr`.
fn load_into(server: &Server, dir: &Path, name: &str) -> Result<(), Failed> {
    let json = dir.join(format!("{name}.json"));
    let hdr = dir.join(format!("{name}.hdr"));
    let o = std::process::Command::new(bin())
        .args([
            "load",
            &server.addr.to_string(),
            "-c",
            "4",
            "-d",
            "100ms",
            "--warmup",
            "0",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--hdr")
        .arg(&hdr)
        .output()?;
    crate::support::succeeded(&o, "c10k load: ")
}

fn load_reports_compare() -> Result<(), Failed> {
    let server = match Server::start(&["--model".into(), "epoll".into()])? {
        Started::Running(s) => s,
        Started::Unsupported(why) => return Err(why.into()),
    };
    let work = scratch("compare-loads")?;
    let (a, b) = (work.join("a"), work.join("b"));
    std::fs::create_dir_all(&a)?;
    std::fs::create_dir_all(&b)?;
    for i in 1..=3 {
        load_into(&server, &a, &format!("{i}"))?;
        load_into(&server, &b, &format!("{i}"))?;
    }
    drop(server);
    // One file a side: shown, not tested, never gated.
    let ran = compare(&[
        &s(&a.join("1.json")),
        &s(&b.join("1.json")),
        "--fail-if-slower",
        "5",
    ])?;
    expect(&ran, 0, "two load reports")?;
    has(
        &summary(&ran),
        "no cell tested; 1 untested (a single run on a side)",
        "the summary",
    )?;
    has(
        &ran.stdout,
        "1 not gated (a single run on a side)",
        "the gate",
    )?;
    // Three a side: tested; the histograms give the curves.
    let html = work.join("loads.html");
    let json = work.join("loads.json");
    let ran = compare(&[&s(&a), &s(&b), "--html", &s(&html), "--json", &s(&json)])?;
    expect(&ran, 0, "two directories of loads")?;
    has(&summary(&ran), "of 1 cells slower", "the summary")?;
    has(&ran.stdout, "\n  load ", "the table")?;
    let c: Value = serde_json::from_slice(&std::fs::read(&json)?)?;
    let cell = &c["cells"][0];
    if cell["curve"]["base"]["source"] != "hdr" || cell["curve"]["new"]["source"] != "hdr" {
        return Err(format!("the curves are not the histograms': {}", cell["curve"]).into());
    }
    ensure(!cell["primary"]["interval"].is_null(), || {
        format!("three loads a side were not tested: {}", cell["primary"])
    })?;
    // A run against loads: refused.
    let run = template("epoll,poll")?;
    let ran = compare(&[&s(&run), &s(&a)])?;
    expect(&ran, 2, "a run against loads")?;
    has(
        &ran.stderr,
        "compare a run with a run, loads with loads",
        "stderr",
    )?;
    // A histogram log that is not the report's is left out, with a warning.
    std::fs::copy(a.join("1.hdr"), b.join("2.hdr"))?;
    std::fs::copy(a.join("2.hdr"), b.join("1.hdr"))?;
    let ran = compare(&[&s(&a), &s(&b)])?;
    expect(&ran, 0, "a swapped histogram")?;
    has(&ran.stderr, "not this run's, left out", "stderr")?;
    Ok(())
}

fn json_follows_its_schema() -> Result<(), Failed> {
    let t = template("epoll,poll")?;
    let work = scratch("compare-json")?;
    let (base, new) = (work.join("base"), work.join("new"));
    side(&t, &base, &steady([1.0, 1.01, 0.99]), &no_edit)?;
    side(&t, &new, &steady([0.8, 0.81, 0.79]), &no_edit)?;
    let (json, md) = (work.join("c.json"), work.join("c.md"));
    let ran = compare(&[
        &s(&base),
        &s(&new),
        "--fail-if-slower",
        "5",
        "--json",
        &s(&json),
        "--markdown",
        &s(&md),
    ])?;
    expect(&ran, 1, "every cell 20 % slower")?;
    let doc: Value = serde_json::from_slice(&std::fs::read(&json)?)?;
    crate::schema::validate_compare(&doc)?;
    if doc["summary"]["slower"] != 4 || doc["gate"]["failed"].as_array().map(Vec::len) != Some(4) {
        return Err(format!("wrong counts: {}", doc["summary"]).into());
    }
    // Every cell slower by as much: the machine, likelier.
    has(
        doc["drift"].as_str().unwrap_or_default(),
        "every cell moved alike",
        "drift",
    )?;
    let md = std::fs::read_to_string(&md)?;
    has(&md, "**4 of 4 cells slower, worst ", "the Markdown")?;
    has(&md, "| model | connections | BASE | NEW |", "the Markdown")?;
    // Bad flags, before anything is read.
    let ran = compare(&[&s(&base), &s(&new), "--fail-if-slower", "80"])?;
    expect(&ran, 2, "--fail-if-slower 80")?;
    has(
        &ran.stderr,
        "--fail-if-slower 80: give a percentage from 0.1% to 50%",
        "stderr",
    )?;
    let ran = compare(&[&s(&base), &s(&new), "--json", "/nonexistent/x.json"])?;
    expect(&ran, 2, "--json to a missing directory")?;
    let ran = compare(&[&s(&base), &s(&new), "--reference", "select"])?;
    expect(&ran, 2, "--reference to a model not run")?;
    has(&ran.stderr, "--reference select: BASE ", "stderr")?;
    // With a reference that moved as much, the others did not move.
    let ran = compare(&[&s(&base), &s(&new), "--reference", "poll"])?;
    expect(&ran, 0, "--reference poll")?;
    has(
        &summary(&ran),
        "2 of 4 cells slower, worst poll",
        "the summary",
    )?;
    has(&ran.stdout, "2 equivalent", "the summary")?;
    Ok(())
}

fn run_baseline_reruns_the_plan() -> Result<(), Failed> {
    let work = scratch("compare-baseline")?;
    let (first, second) = (work.join("first"), work.join("second"));
    let ran = run_c10k(&[
        "run",
        "--models",
        "epoll",
        "-c",
        "2",
        "--runs",
        "2",
        "-d",
        "50ms",
        "--warmup",
        "0",
        "--pin",
        "none",
        "--no-report",
        "--out",
        &s(&first),
    ])?;
    expect(&ran, 0, "the first run")?;
    let base = results_dir(&first)?;
    let ran = run_c10k(&["run", "--baseline", &s(&base), "--out", &s(&second)])?;
    expect(&ran, 0, "c10k run --baseline")?;
    let new = results_dir(&second)?;
    let plan = |d: &Path| -> Result<Value, Failed> {
        Ok(serde_json::from_slice(&std::fs::read(
            d.join("plan.json"),
        )?)?)
    };
    let (p, q) = (plan(&base)?, plan(&new)?);
    if p["cells"] != q["cells"] || p["workload"] != q["workload"] {
        return Err(format!(
            "not the baseline's plan: {} against {}",
            q["cells"], p["cells"]
        )
        .into());
    }
    has(
        &ran.stdout,
        &format!("c10k compare {} → {}", base.display(), new.display()),
        "stdout",
    )?;
    for f in ["compare.json", "compare.md", "compare.html"] {
        if !new.join(f).is_file() {
            return Err(format!("{f} was not written in {}", new.display()).into());
        }
    }
    // A broken baseline is refused before anything runs.
    let ran = run_c10k(&[
        "run",
        "--baseline",
        &s(&work),
        "--out",
        &s(&work.join("third")),
    ])?;
    expect(&ran, 2, "a baseline that is not a results directory")?;
    if work.join("third").exists() {
        return Err("a run started against a broken baseline".into());
    }
    // Everything the comparison at the end needs is checked before any
    // cell: a gate out of range, a reference the baseline lacks, another
    // loop, no cell in common. Each is one line, exit 2, nothing run.
    let base_s = s(&base);
    let never = s(&work.join("never"));
    for (args, want) in [
        (&["--fail-if-slower", "500%"][..], "--fail-if-slower"),
        (
            &["--reference", "poll", "--models", "epoll,poll", "-c", "2"],
            "--reference poll",
        ),
        (&["--models", "epoll", "-c", "2", "-r", "1000"], "loop"),
        (&["--models", "poll", "-c", "2"], "share no cell"),
        // A flag that shapes the plan makes the run the command's own,
        // never DIR's again with the flag dropped: here each makes one
        // DIR cannot be compared with, refused with the flag named.
        (&["--slo", "p99=5ms"], "--slo shapes the plan"),
        (&["--tune"], "--tune shapes the plan"),
        (&["--work", "cpu:1us"], "--work shapes the plan"),
        (&["-c", "3"], "--connections shapes the plan"),
    ] {
        let mut all = vec!["run", "--baseline", &base_s, "--out", &never];
        all.extend(args);
        let ran = run_c10k(&all)?;
        expect(&ran, 2, &args.join(" "))?;
        if ran.stderr.lines().count() != 1 || !ran.stderr.contains(want) {
            return Err(format!("{args:?}: stderr {:?}", ran.stderr).into());
        }
        if work.join("never").exists() {
            return Err(format!("{args:?}: the run started").into());
        }
    }
    Ok(())
}

/// A run whose figure no run can produce (negative) is named on stderr and
/// left out, never dropped in silence; a path that is a symlink loop is
/// said to be one, not "no such file".
fn an_impossible_figure_or_a_link_loop_is_named() -> Result<(), Failed> {
    let t = template("epoll,poll")?;
    let work = scratch("compare-impossible")?;
    let (base, new) = (work.join("base"), work.join("new"));
    side(&t, &base, &steady([1.0, 1.01, 0.99]), &no_edit)?;
    let forged = |m: &str, n: u64, run: u64| {
        let v = 10_000.0 * [1.0, 1.01, 0.99][run as usize - 1];
        if (m, n, run) == ("epoll", 2, 3) {
            -v
        } else {
            v
        }
    };
    side(&t, &new, &forged, &no_edit)?;
    let ran = compare(&[&s(&base), &s(&new)])?;
    has(&ran.stderr, "cell epoll/c2/r3", "stderr")?;
    has(
        &ran.stderr,
        "is not a measurement; that run is left out",
        "stderr",
    )?;
    let looped = work.join("loop");
    std::os::unix::fs::symlink(&looped, &looped)?;
    let ran = compare(&[&s(&looped), &s(&base)])?;
    expect(&ran, 2, "a symlink loop")?;
    has(&ran.stderr, "symbolic links", "stderr")?;
    Ok(())
}

/// A forged figure of 1e300 prints as 1.00e300, not as a 39-digit integer
/// (the largest i128, which is what a saturating cast made of it).
fn a_figure_past_any_measurement_prints_as_itself() -> Result<(), Failed> {
    let t = template("epoll,poll")?;
    let work = scratch("compare-huge")?;
    let (base, new) = (work.join("base"), work.join("new"));
    side(&t, &base, &steady([1.0, 1.01, 0.99]), &no_edit)?;
    let huge = |m: &str, n: u64, run: u64| {
        let v = 10_000.0 * [1.0, 1.01, 0.99][run as usize - 1];
        if (m, n) == ("epoll", 2) {
            v * 1e296
        } else {
            v
        }
    };
    side(&t, &new, &huge, &no_edit)?;
    let ran = compare(&[&s(&base), &s(&new)])?;
    has(&ran.stdout, "e300", "stdout")?;
    if ran.stdout.contains("170,141,183") || ran.stdout.contains("170141183") {
        return Err(format!("a figure printed as the largest i128:\n{}", ran.stdout).into());
    }
    Ok(())
}
