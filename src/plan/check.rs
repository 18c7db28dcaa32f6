//! A [`RunPlan`] checked as a whole, the one way for a plan made from flags
//! ([`super::run::plan`]) and one read back from `plan.json` (`--resume`,
//! `c10k report`, `c10k compare`, `--baseline`), which anyone may edit: a
//! resumed plan with a cell of a billion connections, a variant with a
//! flag `c10k serve` refuses, or a buffer of a gibibyte is refused before
//! anything starts, naming the field, instead of starting thousands of
//! servers or running every cell to a failure. Cost: parsing each server's
//! flags once and a pass over the cells.

use std::collections::BTreeSet;

use crate::results::matrix::{self, CellSpec, RunPlan};

/// Longest name of a variant, server or target: it becomes part of file
/// names (per-connection CSVs) and of every table.
pub const MAX_NAME: usize = 40;

/// Most connections in one cell.
pub const MAX_CONNECTIONS: usize = 10_000_000;

/// A name a variant, `--server` or `--target` may have (`extra`: the
/// punctuation its kind allows beside letters and digits); `Err` says why
/// not, after `what`.
pub fn name(what: &str, name: &str, extra: &str) -> Result<(), String> {
    let fine = |c: char| c.is_ascii_alphanumeric() || extra.contains(c);
    if name.is_empty() || name.chars().count() > MAX_NAME || !name.chars().all(fine) {
        let allowed: Vec<String> = extra.chars().map(|c| c.to_string()).collect();
        return Err(format!(
            "{what}: the name must be 1 to {MAX_NAME} letters, digits and {}",
            allowed.join(" ")
        ));
    }
    if crate::server::find(name).is_some() {
        return Err(format!("{what}: {name} is a model's own name"));
    }
    Ok(())
}

/// Every check a plan must pass, with the field at fault named
/// (`cells[1].connections 1000000000 is not one of connections [2, 4]`).
pub fn check(plan: &RunPlan) -> Result<(), String> {
    plan.workload.check()?;
    let bytes =
        crate::present::units::parse_size(&plan.buffer).map_err(|e| format!("buffer: {e}"))?;
    if !(64..=64 << 20).contains(&bytes) {
        return Err(format!(
            "buffer {}: must be from 64 B to 64 MiB",
            plan.buffer
        ));
    }
    plan.check_work()?;
    // Names: unique across variants, servers and targets, each a name.
    let mut named = BTreeSet::new();
    for (i, v) in plan.variants.iter().enumerate() {
        let at = format!("variants[{i}]");
        name(&format!("{at}.name"), &v.name, "-_+@.")?;
        if crate::server::find(&v.model).is_none() {
            return Err(format!("{at}.model: unknown model '{}'", v.model));
        }
        super::check_settings(&format!("{at}.settings"), &v.model, &v.settings)?;
        if !named.insert(v.name.as_str()) {
            return Err(format!("{at}.name: '{}' names two servers", v.name));
        }
    }
    // The run's settings with each model's own (a variant's under it).
    for (model, own) in plan.models.iter().filter_map(|m| plan.model(m)) {
        let settings = own.over(&plan.server_settings);
        super::check_settings("server_settings", model.name(), &settings)?;
    }
    for (i, s) in plan.servers.iter().enumerate() {
        let at = format!("servers[{i}]");
        name(&format!("{at}.name"), &s.name, "-_")?;
        // A peer that cannot run here has no command; its cells are
        // skipped with `unavailable` as the reason.
        if s.unavailable.is_none() && !s.command.iter().any(|w| w.contains("{port}")) {
            return Err(format!("{at}.command: must contain {{port}}"));
        }
        if !named.insert(s.name.as_str()) {
            return Err(format!("{at}.name: '{}' names two servers", s.name));
        }
    }
    for (i, t) in plan.targets.iter().enumerate() {
        let at = format!("targets[{i}]");
        name(&format!("{at}.name"), &t.name, "-_")?;
        if !named.insert(t.name.as_str()) {
            return Err(format!("{at}.name: '{}' names two servers", t.name));
        }
    }
    // Models: each one of c10k's, a variant, a server or a target (or a
    // micro-benchmark's variant), once.
    let mut seen = BTreeSet::new();
    for (i, m) in plan.models.iter().enumerate() {
        let known =
            plan.bench.is_some() || crate::server::find(m).is_some() || named.contains(m.as_str());
        if !known {
            return Err(format!("models[{i}]: unknown model '{m}'"));
        }
        if !seen.insert(m.as_str()) {
            return Err(format!("models[{i}]: '{m}' is listed twice"));
        }
    }
    if plan.models.is_empty() {
        return Err("models: none".into());
    }
    if plan.connections.is_empty() {
        return Err("connections: none".into());
    }
    if let Some(&c) = plan
        .connections
        .iter()
        .find(|&&c| c == 0 || c > MAX_CONNECTIONS)
    {
        return Err(format!(
            "connections: {c} is not a count from 1 to {}",
            crate::present::units::format_count(MAX_CONNECTIONS as f64)
        ));
    }
    tuning(plan)?;
    if let Some(c) = &plan.capacity {
        c.check()?;
        if plan.slots.is_none() || plan.looks.is_some() || plan.auto_runs.is_some() {
            return Err(
                "capacity: a search runs in resident slots, without looks or --runs auto".into(),
            );
        }
        if let Some(c) = plan.cells.iter().find(|c| c.offered.is_none()) {
            return Err(format!(
                "cells: {} offers no rate in a capacity search",
                c.id
            ));
        }
    } else if let Some(c) = plan.cells.iter().find(|c| c.offered.is_some()) {
        return Err(format!(
            "cells: {} offers a rate outside a capacity search",
            c.id
        ));
    }
    let most_runs = most_runs(plan);
    if !(1..=1000).contains(&plan.runs) || most_runs > 1000 {
        return Err(format!("runs {}: must be from 1 to 1000", plan.runs));
    }
    if let Some(l) = plan.looks {
        if l.every != plan.runs
            || !(1..=crate::stats::looks::MOST_LOOKS).contains(&l.most)
            || !(l.budget_seconds.is_finite() && l.budget_seconds > 0.0)
        {
            return Err(format!(
                "looks: every {} most {} budget {} s are not the plan's runs, 1 to {} looks and a time above 0",
                l.every,
                l.most,
                l.budget_seconds,
                crate::stats::looks::MOST_LOOKS
            ));
        }
    }
    if let Some(a) = plan.auto_runs {
        if a.min < 1 || a.min > a.max || !(a.tolerance > 0.0 && a.tolerance < 1.0) {
            return Err(format!(
                "auto_runs: min {} max {} tolerance {} are not runs from 1 up and a share",
                a.min, a.max, a.tolerance
            ));
        }
    }
    if !(0.001..=0.5).contains(&plan.margin) {
        return Err(format!("margin {}: must be from 0.001 to 0.5", plan.margin));
    }
    if plan.repeat_disturbed > 10 {
        return Err(format!(
            "repeat_disturbed {}: at most 10",
            plan.repeat_disturbed
        ));
    }
    if !(plan.ready_timeout_seconds.is_finite()
        && (0.01..=3600.0).contains(&plan.ready_timeout_seconds))
    {
        return Err(format!(
            "ready_timeout_seconds {}: must be from 0.01 to 3600",
            plan.ready_timeout_seconds
        ));
    }
    let online = crate::sys::affinity::current_cpus();
    for (field, cpus) in [
        ("server_cpus", &plan.server_cpus),
        ("client_cpus", &plan.client_cpus),
    ] {
        if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
            return Err(format!(
                "{field}: CPU {c} is not one this process may use here ({online:?})"
            ));
        }
    }
    if let Some(a) = &plan.agents {
        if a.agents == 0 || a.templates.is_empty() {
            return Err("agents: no agent to run on".into());
        }
    }
    cells(plan)
}

/// Every cell is one of the matrix's (its model, count, work profile and
/// run), under the id it would have, once.
/// `--tune`'s sections, `tune` (how to search) and `tuned` (what each
/// search kept), checked as the flags were: rounds a paired test reads, a
/// budget, knobs of the run's models, and every kept setting one the
/// model takes, for a model, count and profile of the plan, once.
fn tuning(plan: &RunPlan) -> Result<(), String> {
    use crate::server::knobs::{self, Values};
    if let Some(t) = &plan.tune {
        if !(2..=100).contains(&t.rounds) {
            return Err(format!(
                "tune.rounds {}: must be from 2 to 100 (a paired test needs two rounds)",
                t.rounds
            ));
        }
        if !(1..=100).contains(&t.most_steps) {
            return Err(format!(
                "tune.most_steps {}: must be from 1 to 100",
                t.most_steps
            ));
        }
        if !(t.budget_seconds.is_finite() && t.budget_seconds > 0.0) {
            return Err(format!(
                "tune.budget_seconds {}: must be a time above 0",
                t.budget_seconds
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, c) in t.knobs.iter().enumerate() {
            let at = format!("tune.knobs[{i}]");
            let model = plan
                .models
                .contains(&c.model)
                .then(|| plan.model(&c.model))
                .flatten()
                .ok_or_else(|| format!("{at}: {} is not a c10k model of this run", c.model))?
                .0;
            let knob = knobs::of(model)
                .into_iter()
                .find(|k| k.flag() == c.flag && k.unsearched.is_none())
                .ok_or_else(|| format!("{at}: {} has no knob {} to search", c.model, c.flag))?;
            if let Some((lo, hi)) = c.range {
                let fits = match knob.values {
                    Values::Count { least, most } => least <= lo && lo <= hi && hi <= most,
                    _ => false,
                };
                if !fits {
                    return Err(format!(
                        "{at}: {lo}..{hi} is not a range of {} {} ({})",
                        c.model,
                        c.flag,
                        knobs::values_text(&knob.values)
                    ));
                }
            }
            if !seen.insert((c.model.as_str(), c.flag.as_str())) {
                return Err(format!("{at}: {}:{} is given twice", c.model, c.flag));
            }
        }
    }
    let profiles = matrix::profiles(&plan.work);
    let mut seen = BTreeSet::new();
    for (i, t) in plan.tuned.iter().enumerate() {
        let at = format!("tuned[{i}]");
        let Some((model, own)) = plan
            .models
            .contains(&t.model)
            .then(|| plan.model(&t.model))
            .flatten()
        else {
            return Err(format!(
                "{at}.model: {} is not a c10k model of this run",
                t.model
            ));
        };
        if !plan.connections.contains(&t.connections) {
            return Err(format!(
                "{at}.connections {} is not one of connections {:?}",
                t.connections, plan.connections
            ));
        }
        if !profiles.contains(&t.work) {
            return Err(format!("{at}.work: not one of the plan's profiles"));
        }
        let settings = own.over(&t.settings).over(&plan.server_settings);
        super::check_settings(&format!("{at}.settings"), model.name(), &settings)?;
        if !seen.insert((t.model.as_str(), t.connections, t.work.clone())) {
            return Err(format!(
                "{at}: {} at {} is tuned twice",
                t.model, t.connections
            ));
        }
    }
    Ok(())
}

fn cells(plan: &RunPlan) -> Result<(), String> {
    let profiles = matrix::profiles(&plan.work);
    let most_runs = most_runs(plan);
    let mut ids = BTreeSet::new();
    for (i, c) in plan.cells.iter().enumerate() {
        let at = format!("cells[{i}]");
        if !plan.models.contains(&c.model) {
            return Err(format!("{at}.model '{}' is not one of models", c.model));
        }
        if !plan.connections.contains(&c.connections) {
            return Err(format!(
                "{at}.connections {} is not one of connections {:?}",
                c.connections, plan.connections
            ));
        }
        if !profiles.contains(&c.work) {
            return Err(format!("{at}.work '{}' is not one of work", c.profile()));
        }
        if !(1..=most_runs).contains(&c.run) {
            return Err(format!("{at}.run {} is not from 1 to {most_runs}", c.run));
        }
        let id = CellSpec::id_of(&c.model, c.work.as_ref(), c.connections, c.run);
        if c.id != id {
            return Err(format!("{at}.id '{}' should be '{id}'", c.id));
        }
        if !ids.insert(id) {
            return Err(format!("{at}: cell {} is listed twice", c.id));
        }
    }
    Ok(())
}

/// The most runs a cell of `plan` may have: its runs, or what `--runs
/// auto` may grow to (the maximum of a cell one at a time, every look's
/// rounds over slots).
fn most_runs(plan: &RunPlan) -> usize {
    if let Some(c) = &plan.capacity {
        // A recheck round gives a model a slot at each end of its bracket.
        return c.most_slots + 2 * c.recheck_rounds + c.cost_rounds;
    }
    match (plan.auto_runs, plan.looks) {
        (Some(a), _) => a.max.max(plan.runs),
        (None, Some(l)) => (l.every * l.most).max(plan.runs),
        (None, None) => plan.runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_edited_by_hand_is_refused_by_its_field() {
        let good = RunPlan::example(&["epoll", "poll"], &[2, 4], 2);
        assert_eq!(check(&good), Ok(()));
        let mut p = good.clone();
        p.cells[1].connections = 1_000_000_000;
        let e = check(&p).unwrap_err();
        assert!(
            e.starts_with("cells[1].connections 1000000000 is not one of"),
            "{e}"
        );
        let mut p = good.clone();
        p.connections.push(1_000_000_000);
        assert!(check(&p).unwrap_err().starts_with("connections: "));
        let mut p = good.clone();
        p.variants.push(matrix::Variant {
            name: "poll@1ms".into(),
            model: "poll".into(),
            settings: crate::server::settings::Settings {
                ring_entries: Some(64),
                ..Default::default()
            },
        });
        p.models.push("poll@1ms".into());
        let e = check(&p).unwrap_err();
        assert!(
            e.starts_with("variants[0].settings: --ring-entries: poll has no io_uring ring"),
            "{e}"
        );
        let mut p = good.clone();
        p.buffer = "1GiB".into();
        assert!(check(&p).unwrap_err().starts_with("buffer 1GiB"));
        let mut p = good.clone();
        p.models.push("nonesuch".into());
        assert!(check(&p).unwrap_err().starts_with("models[2]: unknown"));
        let mut p = good;
        p.cells.push(p.cells[0].clone());
        assert!(check(&p).unwrap_err().contains("listed twice"));
    }

    #[test]
    fn a_plan_with_looks_holds_every_look_and_no_more() {
        let mut p = RunPlan::example(&["epoll", "poll"], &[2], 10);
        p.looks = Some(crate::results::matrix::Looks {
            every: 10,
            most: 4,
            budget_seconds: 180.0,
        });
        let add = |p: &mut RunPlan, run: usize| {
            for m in ["epoll", "poll"] {
                p.cells.push(crate::results::matrix::CellSpec {
                    offered: None,
                    id: crate::results::matrix::CellSpec::id_of(m, None, 2, run),
                    index: p.cells.len(),
                    model: m.into(),
                    work: None,
                    connections: 2,
                    run,
                });
            }
        };
        for run in 11..=40 {
            add(&mut p, run);
        }
        assert_eq!(check(&p), Ok(()));
        add(&mut p, 41);
        assert!(check(&p)
            .unwrap_err()
            .contains("run 41 is not from 1 to 40"));
        p.cells.truncate(80);
        p.looks = p
            .looks
            .map(|l| crate::results::matrix::Looks { most: 21, ..l });
        assert!(check(&p).unwrap_err().starts_with("looks: "));
    }

    /// plan.json's tuning sections are refused as the flags would be:
    /// a kept setting the model does not take, rounds no test reads, a
    /// budget below zero, a knob a model lacks.
    #[test]
    fn the_tuning_sections_are_checked_as_the_flags_were() {
        use crate::results::tuned::{Chosen, Tune, Tuned};
        let mut good = RunPlan::example(&["epoll", "hybrid"], &[2], 1);
        good.tune = Some(Tune {
            budget_seconds: 60.0,
            rounds: Tune::ROUNDS,
            most_steps: Tune::MOST_STEPS,
            knobs: vec![Chosen {
                model: "hybrid".into(),
                flag: "--workers".into(),
                range: Some((8, 64)),
            }],
        });
        let mut kept = Tuned::at_defaults("hybrid", 2, None, "pool 2".into());
        kept.settings.workers = Some(16);
        good.tuned = vec![kept];
        check(&good).expect("a good tuned plan");
        let refused = |edit: &dyn Fn(&mut RunPlan), says: &str| {
            let mut p = good.clone();
            edit(&mut p);
            let e = check(&p).unwrap_err();
            assert!(e.starts_with(says), "{says}: {e}");
        };
        refused(
            &|p| p.tuned[0].settings.workers = Some(0),
            "tuned[0].settings: --workers 0",
        );
        refused(
            &|p| p.tuned[0].settings.ring_entries = Some(64),
            "tuned[0].settings: --ring-entries: hybrid has no io_uring ring",
        );
        refused(
            &|p| p.tuned[0].model = "fork".into(),
            "tuned[0].model: fork",
        );
        refused(
            &|p| p.tuned.push(p.tuned[0].clone()),
            "tuned[1]: hybrid at 2 is tuned twice",
        );
        fn tune(p: &mut RunPlan) -> &mut Tune {
            p.tune.as_mut().expect("a tune section")
        }
        refused(&|p| tune(p).rounds = 0, "tune.rounds 0");
        refused(&|p| tune(p).budget_seconds = -5.0, "tune.budget_seconds -5");
        refused(
            &|p| tune(p).knobs[0].flag = "--nosuch".into(),
            "tune.knobs[0]: hybrid has no knob --nosuch",
        );
        refused(
            &|p| tune(p).knobs[0].range = Some((8, 100_000)),
            "tune.knobs[0]: 8..100000",
        );
    }

    #[test]
    fn names_are_capped_and_unique() {
        assert!(name("x", &"a".repeat(41), "-_").is_err());
        assert!(name("x", &"a".repeat(40), "-_").is_ok());
        assert!(name("x", "epoll", "-_").is_err());
        let mut p = RunPlan::example(&["epoll", "dup"], &[2], 1);
        p.variants.push(matrix::Variant {
            name: "dup".into(),
            model: "poll".into(),
            settings: Default::default(),
        });
        p.targets.push(crate::child::foreign::Target {
            name: "dup".into(),
            given: "127.0.0.1:9".into(),
            addr: "127.0.0.1:9".parse().unwrap(),
        });
        assert!(check(&p).unwrap_err().contains("'dup' names two servers"));
    }

    #[test]
    fn a_peer_that_cannot_run_here_needs_no_command() {
        let mut p = RunPlan::example(&["epoll", "go"], &[2], 1);
        p.servers.push(crate::child::foreign::Foreign {
            name: "go".into(),
            command: vec![],
            unavailable: Some("the go peer needs golang-go (apt-get install golang-go)".into()),
        });
        assert_eq!(check(&p), Ok(()));
        p.servers[0].unavailable = None;
        assert_eq!(
            check(&p).unwrap_err(),
            "servers[0].command: must contain {port}"
        );
    }
}
