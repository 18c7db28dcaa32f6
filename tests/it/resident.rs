//! `c10k run` in resident slots, end to end on real servers: every slot
//! recorded with its place in its round, a model that spins stopped
//! between its slots (it takes no CPU from the others' then),
//! a resident server that dies losing its own cells only, SIGTERM
//! stopping every resident server and client at once, `--runs auto`
//! adding looks of rounds with the plan written before they run, a
//! model decided stopping before the next look, and a server of hundreds
//! of processes up for its own slots only.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use libtest_mimic::Failed;

use crate::runner::{has_word, marked, spawn_marked, terminate, wait_for_marked};
use crate::support::{
    bin, ensure, expect_contains, expect_eq, lines, results_dir, scratch, succeeded, PATIENCE,
};

tests![
    slots_record_their_place_and_a_spinning_model_sleeps_between_its_own,
    a_resident_server_that_dies_loses_only_its_own_cells,
    a_server_gone_between_its_slots_is_not_said_to_die_during_one,
    sigterm_stops_every_resident_server_and_client,
    twins_serve_from_new_instances_each_round_when_asked_and_from_one_by_default,
    runs_auto_adds_looks_of_rounds_to_the_undecided_and_the_plan_says_so_first,
    a_model_decided_stops_before_the_next_look,
    a_server_of_hundreds_of_processes_is_up_for_its_own_slots_only,
];

/// Looks over twins at 3 connections that a margin of 0.1 % keeps
/// looking: 60 ms slots within 12 s.
const TWIN_LOOKS: [&str; 12] = [
    "-c",
    "3",
    "--runs",
    "auto",
    "--margin",
    "0.1%",
    "--slot",
    "60ms",
    "--slot-warmup",
    "20ms",
    "--budget",
    "12s",
];

/// Runs `c10k run ARGS --no-report --out DIR` to success; its records.
fn run_ok(dir: &Path, args: &[&str]) -> Result<Vec<serde_json::Value>, Failed> {
    let o = Command::new(bin())
        .arg("run")
        .args(args)
        .args(["--no-report", "--out"])
        .arg(dir)
        .output()?;
    succeeded(&o, "")?;
    lines(&results_dir(dir)?)
}

/// The server's pid a cell's client was given (`--server-pid N` in its
/// command).
fn server_pid(cell: &serde_json::Value) -> Option<u64> {
    let command = cell["load"]["command"].as_str()?;
    let mut words = command.split_whitespace();
    words.find(|w| *w == "--server-pid")?;
    words.next()?.parse().ok()
}

/// An A/A pair (one model under two names): with `--instances round`
/// every round serves each twin from a new instance (its own process,
/// listener and connections), numbered, its start timed; by default
/// (`run`) one instance of each serves every round.
fn twins_serve_from_new_instances_each_round_when_asked_and_from_one_by_default(
) -> Result<(), Failed> {
    for (instances, rounds) in [(Some("round"), 3), (None, 3)] {
        let dir = scratch(&format!(
            "resident-instances-{}",
            instances.unwrap_or("run")
        ))?;
        let mut args = vec![
            "--models",
            "epoll",
            "--variant",
            "epoll2=epoll",
            "-c",
            "4",
            "--runs",
            "3",
            // A slot the host stole from would run again on an instance
            // of its own, and the instances counted would skip one.
            "--repeat-disturbed",
            "0",
        ];
        if let Some(i) = instances {
            args.extend(["--instances", i]);
        }
        let cells = run_ok(&dir, &args)?;
        let plan: serde_json::Value =
            serde_json::from_slice(&std::fs::read(results_dir(&dir)?.join("plan.json"))?)?;
        expect_eq(
            "the plan's instances",
            instances.unwrap_or("run"),
            plan["slots"]["instances"].as_str().unwrap_or(""),
        )?;
        let mut pids = std::collections::BTreeSet::new();
        for model in ["epoll", "epoll2"] {
            let mut mine: Vec<&serde_json::Value> =
                cells.iter().filter(|c| c["model"] == model).collect();
            mine.sort_by_key(|c| c["run"].as_u64());
            ensure(
                mine.len() == rounds && mine.iter().all(|c| c["status"] == "ok"),
                || format!("{model}: {rounds} measured slots: {mine:?}"),
            )?;
            let numbers: Vec<u64> = mine
                .iter()
                .filter_map(|c| c["slot"]["instance"].as_u64())
                .collect();
            let own: std::collections::BTreeSet<u64> =
                mine.iter().filter_map(|c| server_pid(c)).collect();
            let timed = mine
                .iter()
                .filter(|c| c["slot"]["start_seconds"].as_f64().is_some_and(|s| s > 0.0))
                .count();
            let fresh = instances.is_some();
            let (want_numbers, want_pids, want_timed) = if fresh {
                (vec![1, 2, 3], 3, 3)
            } else {
                (vec![1, 1, 1], 1, 1)
            };
            expect_eq(format!("{model}'s instances"), want_numbers, numbers)?;
            expect_eq(format!("{model}'s server pids"), want_pids, own.len())?;
            expect_eq(format!("{model}'s timed starts"), want_timed, timed)?;
            pids.extend(own);
        }
        // No instance of one twin served the other.
        expect_eq(
            "server pids across the twins",
            if instances.is_some() { 6 } else { 2 },
            pids.len(),
        )?;
    }
    Ok(())
}

fn slots_record_their_place_and_a_spinning_model_sleeps_between_its_own() -> Result<(), Failed> {
    let dir = scratch("resident-slots")?;
    let mark = format!("C10K_TEST_MARK=resident-slots-{}", std::process::id());
    let mut child = spawn_marked(
        &[
            "--models",
            "epoll,poll,busy",
            "-c",
            "3",
            "--runs",
            "3",
            "--slot",
            "300ms",
            "--slot-warmup",
            "100ms",
        ],
        &dir,
        &mark,
    )?;
    // Busy's server is seen stopped (state T) while the run goes on: it
    // sleeps through the others' slots. Watched, bounded, until the run
    // ends.
    let started = std::time::Instant::now();
    let mut seen_stopped = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > PATIENCE * 4 {
            let _ = child.kill();
            return Err("the run did not end".into());
        }
        seen_stopped |= marked(&mark).iter().any(|p| {
            has_word(p, "busy")
                && std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                    s.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('T')
                })
        });
        std::thread::yield_now();
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().ok_or("no stderr")?, &mut err)?;
    if !status.success() {
        return Err(format!("exit {:?}: {err}", status.code()).into());
    }
    if !seen_stopped {
        return Err("busy's server was never seen stopped between its slots".into());
    }
    let cells = lines(&results_dir(&dir)?)?;
    for want in [
        "method: resident slots",
        "300 ms a slot (100 ms of it warm-up)",
        "busy spins on a CPU when idle: it is stopped (SIGSTOP) outside its own slots",
    ] {
        if !err.contains(want) {
            return Err(format!("the intro lacks {want:?}: {err}").into());
        }
    }
    if cells.len() != 9 || cells.iter().any(|c| c["status"] != "ok") {
        return Err(format!("9 measured cells expected: {cells:?}").into());
    }
    // The ranking is data too, under its schema, as results.md prints it.
    crate::schema::results_agree(&results_dir(&dir)?)?;
    for model in ["epoll", "poll", "busy"] {
        let mine: Vec<&serde_json::Value> = cells.iter().filter(|c| c["model"] == model).collect();
        let firsts = mine.iter().filter(|c| c["slot"]["first"] == true).count();
        if mine.len() != 3 || firsts != 1 {
            return Err(format!("{model}: 3 slots, the first marked once: {mine:?}").into());
        }
        for c in &mine {
            let s = &c["slot"];
            let p = s["position"].as_u64().unwrap_or(0);
            if s["of"] != 3 || !(1..=3).contains(&p) {
                return Err(format!("{model}: a slot of 3 at places 1 to 3: {s}").into());
            }
            // The slot's window, not the one-at-a-time method's.
            let measured = c["load"]["measured_seconds"].as_f64().unwrap_or(0.0);
            if !(0.15..0.3).contains(&measured) {
                return Err(format!("{model}: a 200 ms window, measured {measured} s").into());
            }
            if c["load"]["messages"].as_u64().unwrap_or(0) == 0 {
                return Err(format!("{model}: a slot without a message: {c}").into());
            }
        }
    }
    // Each round's three slots took places 1 to 3.
    for run in 1..=3 {
        let mut places: Vec<u64> = cells
            .iter()
            .filter(|c| c["run"] == run)
            .filter_map(|c| c["slot"]["position"].as_u64())
            .collect();
        places.sort_unstable();
        if places != [1, 2, 3] {
            return Err(format!("round {run}: places {places:?}").into());
        }
    }
    expect_eq(
        "processes of the run left behind",
        Vec::<String>::new(),
        marked(&mark),
    )?;
    Ok(())
}

fn a_resident_server_that_dies_loses_only_its_own_cells() -> Result<(), Failed> {
    let dir = scratch("resident-dies")?;
    // A copy under this test's directory, so what it leaves running can be
    // told from any other test's.
    let script = dir.join("dies_echoing.py");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/dies_echoing.py"),
        &script,
    )?;
    let spec = format!("dies=python3 {} {{port}}", script.display());
    let cells = run_ok(
        &dir.join("out"),
        &[
            "--models", "epoll", "--server", &spec, "-c", "4", "--runs", "3", "--slot", "100ms",
        ],
    )?;
    let of = |m: &str| -> Vec<&serde_json::Value> {
        let mut v: Vec<&serde_json::Value> = cells.iter().filter(|c| c["model"] == m).collect();
        v.sort_by_key(|c| c["run"].as_u64());
        v
    };
    let epoll = of("epoll");
    if epoll.len() != 3 || epoll.iter().any(|c| c["status"] != "ok") {
        return Err(format!("epoll's cells are all measured: {epoll:?}").into());
    }
    let dies = of("dies");
    if dies.len() != 3 || dies.iter().any(|c| c["status"] != "failed") {
        return Err(format!("every cell of the dead server failed: {dies:?}").into());
    }
    let first = dies[0]["reason"].as_str().unwrap_or("");
    if !first.contains("exited with code 3") || !first.contains("echoed 4") {
        return Err(format!("the first says how it died, in its words: {first}").into());
    }
    for c in &dies[1..] {
        let why = c["reason"].as_str().unwrap_or("");
        if !why.starts_with("its server stopped in an earlier slot: ") {
            return Err(format!("a later cell names the earlier death: {why}").into());
        }
    }
    let left = crate::foreign::left_running(&dir);
    if !left.is_empty() {
        return Err(format!("the dead server's processes are left: {left:?}").into());
    }
    Ok(())
}

/// A resident server killed between its slots (while epoll has the
/// slot) fails the slot it misses with when it died, not "during the
/// slot" (issue 58.12); epoll's slots are all measured.
fn a_server_gone_between_its_slots_is_not_said_to_die_during_one() -> Result<(), Failed> {
    let dir = scratch("resident-between")?;
    let script = dir.join("dies_echoing.py");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/dies_echoing.py"),
        &script,
    )?;
    let pidfile = dir.join("server.pid");
    // It would echo a terabyte before dying of itself.
    let spec = format!(
        "dies=python3 {} {{port}} 1000000000000 {}",
        script.display(),
        pidfile.display()
    );
    let out = dir.join("out");
    let mut child = Command::new(bin())
        .arg("run")
        .args([
            "--models",
            "dies,epoll",
            "--server",
            &spec,
            "-c",
            "4",
            "--runs",
            "3",
            "--slot",
            "1s",
            // The kill is timed to the slot after dies' first: a repeat of
            // a slot the host disturbed would move it.
            "--repeat-disturbed",
            "0",
            "--no-report",
            "--out",
        ])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    // dies runs first in the first round: once its slot is recorded,
    // epoll's second-long slot has begun, and the kill lands in it.
    let recorded = |id: &str| {
        results_dir(&out)
            .ok()
            .and_then(|d| std::fs::read_to_string(d.join("results.jsonl")).ok())
            .is_some_and(|t| {
                t.lines()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .any(|r| r["id"] == id)
            })
    };
    let started = Instant::now();
    while !recorded("dies/c4/r1") {
        if started.elapsed() > PATIENCE || child.try_wait()?.is_some() {
            let _ = child.kill();
            return Err("the first slot of dies was never recorded".into());
        }
        std::thread::yield_now();
    }
    let pid: i32 = std::fs::read_to_string(&pidfile)?
        .trim()
        .parse()
        .map_err(|e| format!("{}: {e}", pidfile.display()))?;
    c10k::sys::process::kill(pid, 9)?;
    let status = crate::support::wait_bounded(&mut child)?;
    ensure(status.success(), || format!("the run exited {status}"))?;
    let cells = lines(&results_dir(&out)?)?;
    let reason = |id: &str| -> Result<String, Failed> {
        let c = cells
            .iter()
            .find(|c| c["id"] == id)
            .ok_or_else(|| format!("no record of {id}"))?;
        Ok(format!(
            "{} {}",
            c["status"],
            c["reason"].as_str().unwrap_or("")
        ))
    };
    expect_eq(
        "dies' first slot",
        &reason("dies/c4/r1")?.as_str(),
        &"\"ok\" ",
    )?;
    let second = reason("dies/c4/r2")?;
    expect_contains(
        "dies' second slot",
        &second,
        "\"failed\" the server was killed by signal 9 between its slots 1 and 2",
    )?;
    ensure(!second.contains("during"), || second.clone())?;
    expect_contains(
        "dies' third slot",
        &reason("dies/c4/r3")?,
        "its server stopped earlier: the server was killed by signal 9 between its slots 1 and 2",
    )?;
    for run in 1..=3 {
        expect_eq(
            "epoll's slots",
            &reason(&format!("epoll/c4/r{run}"))?.as_str(),
            &"\"ok\" ",
        )?;
    }
    Ok(())
}

fn sigterm_stops_every_resident_server_and_client() -> Result<(), Failed> {
    let out = scratch("resident-sigterm")?;
    let mark = format!("C10K_TEST_MARK=resident-sigterm-{}", std::process::id());
    // Slots of a minute: SIGTERM comes in the first.
    let mut child = spawn_marked(
        &[
            "--models",
            "epoll,poll",
            "-c",
            "2",
            "--runs",
            "1",
            "--slot",
            "60s",
        ],
        &out,
        &mark,
    )?;
    // Both servers resident, each with its client's worker (`c10k agent`).
    wait_for_marked(&mark, "agent", 2, &mut child)?;
    let (status, err) = terminate(child)?;
    if status.code() != Some(130) {
        return Err(format!("exit {:?}: {err}", status.code()).into());
    }
    // In the first slot (abandoned) or while the second server came up.
    if !err.contains("c10k run: interrupted") || !err.contains("--resume") {
        return Err(format!("stderr says it was interrupted and how to resume: {err}").into());
    }
    let recorded: Vec<String> = lines(&results_dir(&out)?)?
        .iter()
        .map(|c| c["id"].to_string())
        .collect();
    expect_eq(
        "slots recorded (one was abandoned)",
        Vec::<String>::new(),
        recorded,
    )?;
    let left = marked(&mark);
    if !left.is_empty() {
        return Err(format!("processes of the run left behind: {left:?}").into());
    }
    Ok(())
}

/// One model under two names, told apart only within ±0.1 %: never
/// equivalent, rarely different, so the count takes look after look. The
/// plan holds every cell before it runs, each look is named on the
/// terminal, and the rounds come in whole looks.
fn runs_auto_adds_looks_of_rounds_to_the_undecided_and_the_plan_says_so_first() -> Result<(), Failed>
{
    let dir = scratch("resident-looks")?;
    let o = Command::new(bin())
        .args([
            "run",
            "--models",
            "epoll,epoll2",
            "--variant",
            "epoll2=epoll",
        ])
        .args(TWIN_LOOKS)
        .args(["--no-report", "--out"])
        .arg(&dir)
        .output()?;
    succeeded(&o, "")?;
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    // Two short slots a round: three quarters of 12 s hold 60 rounds and
    // more, so 12 looks of 5 (the table's next is 15), each at 99 %.
    if !err.contains("--runs auto: looks of 5 rounds at each count")
        || !err.contains("at most 12 looks (60 rounds)")
        || !err.contains("at 99 %")
    {
        return Err(format!("the intro lacks the looks: {err}").into());
    }
    let run = results_dir(&dir)?;
    let cells = lines(&run)?;
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("plan.json"))?)?;
    if plan["looks"]["every"] != 5 || plan["looks"]["most"] != 12 {
        return Err(format!("plan.json lacks its looks: {}", plan["looks"]).into());
    }
    let mut planned: Vec<&str> = plan["cells"]
        .as_array()
        .ok_or("no cells")?
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    let mut recorded: Vec<&str> = cells.iter().filter_map(|c| c["id"].as_str()).collect();
    planned.sort_unstable();
    recorded.sort_unstable();
    if planned != recorded {
        return Err(format!("plan and results differ: {planned:?} against {recorded:?}").into());
    }
    let rounds = cells
        .iter()
        .filter_map(|c| c["run"].as_u64())
        .max()
        .unwrap_or(0);
    if rounds % 5 != 0 || !(5..=60).contains(&rounds) {
        return Err(format!("rounds in whole looks of 5: {rounds}").into());
    }
    for look in 2..=rounds / 5 {
        if !err.contains(&format!("look {look} of 12, 5 more rounds of epoll")) {
            return Err(format!("look {look} not named: {err}").into());
        }
    }
    if !out.contains(&format!("after {rounds} rounds")) {
        return Err(format!("the answer lacks the rounds run: {out}").into());
    }
    Ok(())
}

/// Three servers, one far slower (a 20 ms wait between its loop's
/// turns): decided after the first look, it stops, and the next look's
/// slots run beside the twins only (`of`, the servers up). The twins'
/// margin of 0.1 % keeps them looking, unless one instance happens to
/// differ from the other beyond it: then the run is tried again (three
/// times at most).
fn a_model_decided_stops_before_the_next_look() -> Result<(), Failed> {
    for attempt in 1..=3 {
        let dir = scratch(&format!("resident-retire-{attempt}"))?;
        let mut args = vec![
            "--models",
            "epoll",
            "--variant",
            "epoll2=epoll",
            "--variant",
            "slow=epoll --interval 20ms",
            "--repeat-disturbed",
            "0",
        ];
        args.extend(TWIN_LOOKS);
        let cells = run_ok(&dir, &args)?;
        let rounds = cells.iter().filter_map(|c| c["run"].as_u64()).max();
        if rounds.is_none_or(|r| r <= 5) {
            continue;
        }
        let slow: Vec<_> = cells.iter().filter(|c| c["model"] == "slow").collect();
        expect_eq("slow's slots (one look of 5 rounds)", 5, slow.len())?;
        for c in &cells {
            let run = c["run"].as_u64().unwrap_or(0);
            let want = if run <= 5 { 3 } else { 2 };
            expect_eq(
                format!("servers up at {}", c["id"]),
                Some(want),
                c["slot"]["of"].as_u64(),
            )?;
        }
        return Ok(());
    }
    Err("the twins were told apart after the first look in three runs: no second look".into())
}

/// `fork` at 500 connections holds 500 processes: beside `epoll` it is
/// started for each of its slots and stopped after it (each slot a new,
/// timed instance), while `epoll` keeps its one instance.
fn a_server_of_hundreds_of_processes_is_up_for_its_own_slots_only() -> Result<(), Failed> {
    let dir = scratch("resident-crowd")?;
    let cells = run_ok(
        &dir,
        &[
            "--models",
            "fork,epoll",
            "-c",
            "500",
            "--runs",
            "3",
            "--repeat-disturbed",
            "0",
        ],
    )?;
    for (model, instances) in [("fork", vec![1, 2, 3]), ("epoll", vec![1, 1, 1])] {
        let mut mine: Vec<&serde_json::Value> =
            cells.iter().filter(|c| c["model"] == model).collect();
        mine.sort_by_key(|c| c["run"].as_u64());
        ensure(mine.iter().all(|c| c["status"] == "ok"), || {
            format!("{model}: measured slots: {mine:?}")
        })?;
        let numbers: Vec<u64> = mine
            .iter()
            .filter_map(|c| c["slot"]["instance"].as_u64())
            .collect();
        expect_eq(format!("{model}'s instances"), instances.clone(), numbers)?;
        let pids: std::collections::BTreeSet<u64> =
            mine.iter().filter_map(|c| server_pid(c)).collect();
        let distinct = instances
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        expect_eq(format!("{model}'s server pids"), distinct, pids.len())?;
        let timed = mine
            .iter()
            .filter(|c| c["slot"]["start_seconds"].as_f64().is_some_and(|s| s > 0.0))
            .count();
        expect_eq(format!("{model}'s timed starts"), distinct, timed)?;
    }
    Ok(())
}
