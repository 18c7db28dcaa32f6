//! `c10k run` flags turned into a [`RunPlan`]: the preset's matrix with
//! every flag applied and checked (models known, counts in range, the
//! workload changed as asked, CPUs to pin to found).

use super::parse_duration;
use crate::child::foreign::{Foreign, Target};
use crate::cli::{self, RunArgs};
use crate::experiments::presets;
use crate::present::units::parse_size;
use crate::protocol::Protocol;
use crate::results::matrix::{self, Order, Pin, RunPlan, WorkloadKind, RESULTS_VERSION};
use crate::server::settings::Settings;
use crate::server::work::Profile;

/// The run plan for `args`: the preset's matrix with every flag applied,
/// checked, one axis at a time (the models and their servers, the counts,
/// the repeats, the workload, the work, the placement). Errors are one line
/// saying what to change.
pub fn plan(args: &RunArgs, command: String) -> Result<RunPlan, String> {
    let preset = preset_of(args)?;
    let name = preset.name;
    let Servers {
        servers,
        targets,
        variants,
        ready_timeout_seconds,
    } = servers_of(args, &preset)?;
    let models = models_of(args, &preset, &variants, &servers, &targets)?;
    // A preset's variant the matrix does not run is not part of its plan.
    let variants: Vec<matrix::Variant> = variants
        .into_iter()
        .filter(|v| models.contains(&v.name))
        .collect();
    let connections = connections_of(args, &preset)?;
    let Repeats {
        runs,
        auto_runs,
        margin,
        repeat_disturbed,
    } = repeats_of(args, &preset)?;
    let (workload, primary) = workload_of(args, &preset)?;
    let mut server_settings = super::serve_settings("--server-arg", None, &args.server_args)?;
    // Every model serves what the client speaks.
    match server_settings.protocol {
        Some(p) if p != workload.protocol => {
            return Err(format!(
                "--server-arg=--protocol {p} disagrees with the run's protocol, {}: give --protocol {p} alone",
                workload.protocol
            ))
        }
        _ if workload.protocol.is_echo() => {}
        _ => server_settings.protocol = Some(workload.protocol),
    }
    for peer in preset.peers {
        if let Some(speaks) = crate::experiments::peers::find(peer)
            .map(|p| p.speaks)
            .filter(|s| *s != workload.protocol)
        {
            return Err(format!(
                "--protocol {}: the {name} experiment's peers speak {speaks} ({peer} among them); run it over {speaks}, or name your own servers with --server",
                workload.protocol
            ));
        }
    }
    let buffer = server_settings
        .buffer_bytes
        .map_or_else(|| "16KiB".to_string(), |b| b.to_string());
    let work = work_of(args, &preset, &variants, &server_settings)?;
    let pin = args.pin.unwrap_or(preset.pin);
    // A micro-benchmark places its own threads; the runner pins nothing.
    let (server_cpus, client_cpus) = if preset.bench.is_some() {
        (Vec::new(), Vec::new())
    } else {
        cpus_for(pin)?
    };
    let order = args.order.unwrap_or(Order::Interleaved);
    let slots = slots_of(args, &workload, preset.bench.is_some(), order)?;
    let budget = match args.budget.as_deref() {
        None => None,
        Some(t) => Some(budget_of(t)?),
    };
    // Over slots, `--runs auto` adds rounds look by look, each read at
    // the stricter level that keeps every look together to 5 %.
    // A preset may look by default (the tour), unless --runs says.
    let by_default = args.runs.is_none() && preset.looks_budget.is_some();
    let looks = (slots.is_some() && (auto_runs.is_some() || by_default)).then(|| matrix::Looks {
        every: preset.rounds,
        most: crate::stats::looks::MOST_LOOKS,
        budget_seconds: budget
            .or(preset.looks_budget)
            .unwrap_or(matrix::DEFAULT_BUDGET_SECONDS),
    });
    let auto_runs = if looks.is_some() { None } else { auto_runs };
    let runs = match (slots, &args.runs) {
        (Some(_), None) => preset.rounds,
        (Some(_), Some(_)) if looks.is_some() => preset.rounds,
        _ => runs,
    };
    let customised = args.given.customises;
    let agents = super::load::agents(&args.agents)?;
    if agents.is_some() && preset.bench.is_some() {
        return Err(format!(
            "--agent: the {name} experiment runs a micro-benchmark, which has no client to place"
        ));
    }
    let one_process = match workload.kind() {
        WorkloadKind::Burst => Some("the burst workload"),
        WorkloadKind::Churn => Some("the churn workload"),
        _ => None,
    };
    super::load::in_one_process(one_process, agents.as_ref())?;
    if let Some(ip) = args.bind {
        if std::net::TcpListener::bind((ip, 0)).is_err() {
            return Err(format!(
                "--bind {ip}: not an address of this host (the servers run here)"
            ));
        }
    }
    let cells = crate::results::schedule::expand(&models, &connections, &work, runs, order);
    let refused = if preset.bench.is_some() {
        Vec::new()
    } else {
        crate::runner::preflight::refusals(
            &models,
            &variants,
            &connections,
            &crate::client::preflight::System::read(),
            &mut crate::runner::preflight::TaskCost::measure,
        )
    };
    // No experiment named and a matrix of one's own (other models or
    // counts, or servers of one's own): not the tour, and not named one.
    let custom = args.experiment.is_none() && args.given.own_matrix;
    let (experiment, title) = if custom {
        (
            CUSTOM.to_string(),
            custom_title(&models, &connections, &work, &workload, None),
        )
    } else if customised {
        (
            preset.name.to_string(),
            format!("{} (customised)", preset.title),
        )
    } else {
        (preset.name.to_string(), preset.title.to_string())
    };
    let plan = RunPlan {
        capacity: None,
        tune: None,
        tuned: Vec::new(),
        version: RESULTS_VERSION,
        experiment,
        title,
        command,
        models,
        connections,
        work,
        runs,
        auto_runs,
        order,
        slots,
        looks,
        margin,
        repeat_disturbed,
        pin,
        server_cpus,
        client_cpus,
        workload,
        primary,
        per_connection_csv: preset.per_connection_csv || args.per_connection_csv,
        buffer,
        server_settings,
        variants,
        servers,
        targets,
        agents,
        bind: args.bind,
        ready_timeout_seconds,
        bench: preset.bench,
        bench_args: preset.bench_args.iter().map(|a| a.to_string()).collect(),
        size_label: preset.size_label.to_string(),
        refused,
        cells,
    };
    // Targets of the user's own keep the preset's budget, if it has one.
    let preset_budget = preset.slo.map(|(_, b)| b);
    let slo = args
        .slo
        .as_deref()
        .map(|t| (t.to_string(), preset_budget))
        .or(preset.slo.map(|(t, b)| (t.to_string(), Some(b))));
    let mut plan = plan;
    if let Some((text, preset_budget)) = slo {
        capacity_of(&mut plan, args, &text, budget.or(preset_budget))?;
    }
    if let Some(text) = &args.tune {
        super::tune::tune_of(&mut plan, text, &args.tune_knob)?;
    } else if preset.size_pools && plan.bench.is_none() {
        plan.tuned = crate::runner::tuner::sized(&plan);
    }
    plan_looks(&mut plan);
    // Its errors name the plan's field, `work`: here, the flag.
    plan.check_work().map_err(|e| format!("--{e}"))?;
    // What a plan read back must pass, this one passes too (names unique
    // across --variant, --server and --target among them).
    super::check::check(&plan)?;
    if let Some(b) = budget {
        within_budget(&plan, b)?;
    }
    Ok(plan)
}

/// Of the budget, the share the looks' slots may plan on: the rest goes
/// to starting servers, connecting and reading /proc between slots.
const SLOTS_SHARE: f64 = 0.75;

/// Plans as many looks as the budget holds ([`crate::stats::looks::planned`]):
/// a round of the first look's cells again and again. A look is 5 rounds
/// (`Looks::EVERY`), so a model clearly apart from the best is decided
/// and stops after 5 rounds rather than 10, where the budget holds at
/// most 100 rounds (the tour's 3 minutes hold about 12); past that, 10
/// (`Looks::WIDE`), so twenty looks still reach 200 rounds. At least 40
/// rounds' worth of looks (`Looks::LEAST_ROUNDS`), at most twenty, each
/// at the level that many keep to 5 %. A pair of models given minutes
/// then looks until noise of 15 % a round is told equivalent, where four
/// looks stopped at 40 rounds.
fn plan_looks(plan: &mut RunPlan) {
    let Some(l) = plan.looks else {
        return;
    };
    if plan.capacity.is_some() || l.every == 0 {
        return;
    }
    let round = plan.least_seconds(&plan.cells) / l.every as f64;
    let rounds = if round > 0.0 {
        (SLOTS_SHARE * l.budget_seconds / round).floor() as usize
    } else {
        0
    };
    let every = if rounds <= matrix::Looks::EVERY * crate::stats::looks::MOST_LOOKS {
        matrix::Looks::EVERY
    } else {
        matrix::Looks::WIDE
    };
    if every != l.every {
        set_runs(plan, every);
    }
    let least = matrix::Looks::LEAST_ROUNDS.div_ceil(every);
    let most = crate::stats::looks::planned(rounds / every, least);
    plan.looks = Some(matrix::Looks {
        every,
        most,
        budget_seconds: l.budget_seconds,
    });
}

/// Makes `plan` `runs` rounds (or repeats) of each cell, its cells laid
/// out anew in its order.
fn set_runs(plan: &mut RunPlan, runs: usize) {
    plan.runs = runs;
    plan.cells = crate::results::schedule::expand(
        &plan.models,
        &plan.connections,
        &plan.work,
        runs,
        plan.order,
    );
}

/// Makes `plan` a capacity search against `--slo` `text` within `budget`
/// seconds (10 minutes unless given): its workload an open loop of
/// Poisson arrivals, its cells each model's first slot, the handlers of
/// every c10k model recorded for its bound. Refuses what a search cannot
/// be (one line each): another method or loop, a count whose servers do
/// not fit resident together, and a target below this machine's unloaded
/// round trip.
fn capacity_of(
    plan: &mut RunPlan,
    args: &RunArgs,
    text: &str,
    budget: Option<f64>,
) -> Result<(), String> {
    use crate::present::units::seconds;
    let slo: crate::results::slo::Slo = text.parse().map_err(|e| format!("--slo {e}"))?;
    let refuse = |flag: &str, why: &str| Err(format!("--slo with {flag}: {why}"));
    if plan.bench.is_some() {
        return Err(format!(
            "--slo: the {} experiment runs a micro-benchmark, which has no server to load",
            plan.experiment
        ));
    }
    if args.runs.is_some() {
        return refuse(
            "--runs",
            "a search measures each rate until it is decided; give --budget to bound it",
        );
    }
    if args.rate.is_some() || args.rate_per_connection.is_some() {
        return refuse("--rate", "the search chooses the offered rates");
    }
    if plan.workload.kind() != WorkloadKind::Closed || plan.workload.messages_for(1).is_some() {
        return refuse(
            "this workload",
            "the search offers an open loop on the connections it keeps (a timed closed loop's)",
        );
    }
    if plan.slots.is_none() {
        return refuse(
            "--sequential or --duration",
            "the search runs in resident slots, each rate a slot",
        );
    }
    // The search times its slots by the rate offered; a count's shorter
    // slots are for rounds of equal slots.
    if let Some(s) = plan.slots.as_mut() {
        s.short = None;
    }
    if let Some(&n) = plan
        .connections
        .iter()
        .find(|&&n| matrix::unfit(n, plan.models.len()).is_some())
    {
        return Err(format!(
            "--slo: {}; search fewer models or counts at once",
            matrix::unfit(n, plan.models.len()).unwrap_or_default()
        ));
    }
    let budget = budget.unwrap_or(matrix::DEFAULT_BUDGET_SECONDS);
    let mut search = crate::results::slo::Search::new(slo, budget);
    // No server on this machine answers faster than its own round trip
    // over loopback, whether its clients run here, from agents (a network
    // only adds to it) or to another of its addresses (--bind).
    {
        let trips = crate::micro::round_trip::measure(&plan.server_cpus, &plan.client_cpus)
            .map_err(|e| format!("--slo: measuring this machine's round trip: {e}"))?;
        // And no server answers past the host's own stalls.
        search.stalls = crate::micro::stalls::measure(
            &plan.server_cpus,
            &plan.client_cpus,
            crate::micro::stalls::SECONDS,
        )
        .map_err(|e| format!("--slo: watching this machine's stalls: {e}"))?;
        search.round_trip = Some(crate::micro::round_trip::quantile(&trips, 0.5));
        for t in &search.slo.targets {
            let rtt = crate::micro::round_trip::quantile(&trips, t.quantile());
            for w in matrix::profiles(&plan.work) {
                // Every request waits for its work, and for the round trip.
                let work = w.as_ref().map_or(0.0, crate::results::slo::work_seconds);
                if t.seconds_under(w.as_ref()) <= rtt + work {
                    let plus = w
                        .as_ref()
                        .filter(|_| work > 0.0)
                        .map_or_else(String::new, |w| {
                            format!(", plus {} of work under {w}", seconds(work))
                        });
                    return Err(format!(
                        "--slo {t}: below what this machine allows: its unloaded round trip is {} at {} (64 B over loopback, server CPUs {:?}, client CPUs {:?}){plus}; no server can meet it",
                        seconds(rtt),
                        t.label(),
                        plan.server_cpus,
                        plan.client_cpus,
                    ));
                }
            }
        }
    }
    for m in &plan.models {
        let Some((model, own)) = matrix::resolve(&plan.variants, m) else {
            continue;
        };
        let settings = own.over(&plan.server_settings);
        for w in matrix::profiles(&plan.work) {
            let capacity =
                super::handlers_of(model.name(), &settings, w.as_ref(), &plan.server_cpus)?;
            search.handlers.push(crate::results::slo::Handlers {
                model: m.clone(),
                work: w,
                capacity,
            });
        }
    }
    plan.workload.rate = Some(matrix::Rate::Total(search.start_rate));
    plan.workload.arrivals = crate::client::plan::Arrivals::Poisson;
    plan.primary = matrix::Primary::Latency;
    plan.runs = 1;
    plan.looks = None;
    plan.auto_runs = None;
    plan.cells =
        crate::capacity::search::first_cells(&plan.models, &plan.connections, &plan.work, &search);
    // A custom matrix's title names the search it runs now.
    if plan.experiment == CUSTOM {
        plan.title = custom_title(
            &plan.models,
            &plan.connections,
            &plan.work,
            &plan.workload,
            Some(&search),
        );
    }
    plan.capacity = Some(search);
    Ok(())
}

/// `--budget`'s seconds: a duration above 0.
fn budget_of(text: &str) -> Result<f64, String> {
    let d = parse_duration(text).map_err(|e| format!("--budget: {e}"))?;
    if d.is_zero() {
        return Err("--budget must be above 0".into());
    }
    Ok(d.as_secs_f64())
}

/// Refuses a plan whose cells (the first look's, with `--runs auto`)
/// cannot fit in `budget` seconds.
fn within_budget(plan: &RunPlan, budget: f64) -> Result<(), String> {
    use crate::present::units::seconds;
    let mut least = plan.least_seconds(&plan.cells);
    // A search keeps each block's cost rounds in reserve from its first
    // round (`runner` times both the same way).
    let blocks = matrix::profiles(&plan.work).len() * plan.connections.len();
    let reserve = plan.capacity.as_ref().map(|s| {
        let warmup = plan.slots.map_or(0.0, |s| s.warmup_seconds);
        blocks as f64 * s.cost_reserve(plan.models.len(), warmup)
    });
    least += reserve.unwrap_or(0.0);
    if crate::results::schedule::fits(least, budget) {
        return Ok(());
    }
    let what = if plan.looks.is_some() {
        "the first look's"
    } else if plan.capacity.is_some() {
        "the first search round's"
    } else {
        "its"
    };
    let how = match (reserve, plan.slots.is_some()) {
        (Some(r), _) => format!("slots and {} of cost rounds kept in reserve", seconds(r)),
        (None, true) => "slots".into(),
        (None, false) => "warm-ups and windows".into(),
    };
    let fewer = if plan.capacity.is_some() {
        "search fewer models, counts or profiles"
    } else {
        "lower --runs, the models or the counts"
    };
    Err(format!(
        "--budget {}: the plan's {} cells take at least {} ({what} {how} alone); {fewer}, or raise --budget",
        seconds(budget),
        plan.cells.len(),
        seconds(least)
    ))
}

/// Every model of the registry, each of `variants` (a preset's, `NAME`,
/// `MODEL FLAGS`) right after the model it varies.
fn every_model(variants: &[(&str, &str)]) -> Vec<String> {
    let base = |spec: &str| {
        spec.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let mut models = Vec::new();
    for name in crate::server::names() {
        models.push(name.to_string());
        let of_it = variants.iter().filter(|(_, spec)| base(spec) == name);
        models.extend(of_it.map(|(v, _)| v.to_string()));
    }
    models
}

/// The preset `args` names (the tour when none).
fn preset_of(args: &RunArgs) -> Result<presets::Preset, String> {
    let name = args.experiment.as_deref().unwrap_or("tour");
    presets::find(name).ok_or_else(|| {
        let names: Vec<_> = presets::all().iter().map(|p| p.name).collect();
        let tip =
            cli::similar("experiment", name, &names).map_or_else(String::new, |t| format!("; {t}"));
        format!(
            "unknown experiment '{name}': expected one of {} (see --list){tip}",
            names.join(", ")
        )
    })
}

/// The servers beside the models: the user's (`--server`, `--target`), the
/// preset's peers, and the variants (the preset's, then `--variant`).
struct Servers {
    servers: Vec<Foreign>,
    targets: Vec<Target>,
    variants: Vec<matrix::Variant>,
    ready_timeout_seconds: f64,
}

fn servers_of(args: &RunArgs, preset: &presets::Preset) -> Result<Servers, String> {
    let name = preset.name;
    let mut servers = args
        .servers
        .iter()
        .map(|s| Foreign::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let ready_timeout_seconds = match &args.ready_timeout {
        None => crate::child::foreign::default_ready_seconds(),
        Some(t) => {
            let t = parse_duration(t).map_err(|e| format!("--ready-timeout: {e}"))?;
            if t < std::time::Duration::from_millis(10) || t > std::time::Duration::from_secs(3600)
            {
                return Err("--ready-timeout must be from 10ms to 1h".into());
            }
            t.as_secs_f64()
        }
    };
    // A preset's peers join as foreign servers, unless --server names one
    // of them itself.
    let cache = crate::experiments::peers::cache_dir();
    for name in preset.peers {
        let Some(peer) = crate::experiments::peers::find(name) else {
            continue;
        };
        if !servers.iter().any(|s| s.name == *name) {
            servers.push(peer.resolve(&cache));
        }
    }
    let mut variants = Vec::new();
    let given = preset.variants.iter().map(|(n, v)| format!("{n}={v}"));
    for text in given.chain(args.variants.iter().cloned()) {
        let v = variant(&text)?;
        if variants.iter().any(|o: &matrix::Variant| o.name == v.name) {
            return Err(format!("--variant names '{}' twice", v.name));
        }
        variants.push(v);
    }
    let targets = args
        .targets
        .iter()
        .map(|s| Target::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    if (!servers.is_empty() || !targets.is_empty()) && preset.bench.is_some() {
        return Err(format!(
            "--server, --target: the {name} experiment runs a micro-benchmark, not servers"
        ));
    }
    Ok(Servers {
        servers,
        targets,
        variants,
        ready_timeout_seconds,
    })
}

/// The models of the matrix: `--models` or the preset's, each known, once,
/// then the user's variants and servers where `--models` does not place
/// them.
fn models_of(
    args: &RunArgs,
    preset: &presets::Preset,
    variants: &[matrix::Variant],
    servers: &[Foreign],
    targets: &[Target],
) -> Result<Vec<String>, String> {
    let mut models: Vec<String> = match &args.models {
        Some(m) => m
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        None if preset.models.is_empty() => every_model(preset.variants),
        None => preset.models.iter().map(|s| s.to_string()).collect(),
    };
    if models.is_empty() && servers.is_empty() && targets.is_empty() {
        return Err("--models names no model".into());
    }
    for m in &models {
        let known = match preset.bench {
            Some(_) => preset.models.contains(&m.as_str()),
            None => {
                matrix::resolve(variants, m).is_some()
                    || servers.iter().any(|s| s.name == *m)
                    || targets.iter().any(|t| t.name == *m)
            }
        };
        if !known {
            let names = match preset.bench {
                Some(_) => preset.models.to_vec(),
                None => crate::server::names(),
            };
            let tip =
                cli::similar("model", m, &names).map_or_else(String::new, |t| format!("; {t}"));
            return Err(format!(
                "unknown model '{m}': expected one of {}{tip}",
                names.join(", ")
            ));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(m) = models.iter().find(|m| !seen.insert(m.as_str())) {
        return Err(format!("--models names '{m}' twice"));
    }
    // Each server of the user's runs beside the models: where --models
    // places it, or after them.
    // The user's variants (after the preset's) run beside the models.
    for v in &variants[preset.variants.len()..] {
        if !models.contains(&v.name) {
            models.push(v.name.clone());
        }
    }
    // One name, one server: a --variant, --server or --target of the same
    // name as another would never run.
    let mut named: std::collections::BTreeMap<&str, &str> = variants
        .iter()
        .map(|v| (v.name.as_str(), "--variant"))
        .collect();
    let names = servers.iter().map(|s| ("--server", &s.name));
    for (flag, name) in names.chain(targets.iter().map(|t| ("--target", &t.name))) {
        if let Some(first) = named.insert(name.as_str(), flag) {
            return Err(if first == flag {
                format!("{flag} names '{name}' twice")
            } else {
                format!("{first} and {flag} both name '{name}': give each server a name of its own")
            });
        }
        if !models.contains(name) {
            models.push(name.clone());
        }
    }
    Ok(models)
}

/// The connection counts, sorted, each once.
fn connections_of(args: &RunArgs, preset: &presets::Preset) -> Result<Vec<usize>, String> {
    let mut connections = args
        .connections
        .clone()
        .unwrap_or_else(|| preset.connections.to_vec());
    if connections.is_empty() || connections.contains(&0) {
        return Err("--connections must list counts of at least 1, e.g. 2,4,8".into());
    }
    if let Some(&c) = connections.iter().find(|&&c| c > 10_000_000) {
        return Err(format!(
            "--connections {c}: more than 10,000,000 is beyond any machine"
        ));
    }
    connections.sort_unstable();
    connections.dedup();
    Ok(connections)
}

/// Resident slots, where the plan can have them: a timed closed or open
/// loop of servers (not a micro-benchmark, a burst, a fixed count of
/// messages), in interleaved order, and unless the flags ask for the
/// one-at-a-time method (`--sequential`, or the window flags that are
/// its: `--duration`, `--warmup`).
fn slots_of(
    args: &RunArgs,
    workload: &matrix::Workload,
    bench: bool,
    order: Order,
) -> Result<Option<matrix::Slots>, String> {
    let asked: Vec<&str> = [
        ("--slot", args.slot.is_some()),
        ("--slot-warmup", args.slot_warmup.is_some()),
        ("--instances", args.instances.is_some()),
    ]
    .into_iter()
    .filter_map(|(flag, given)| given.then_some(flag))
    .collect();
    let why_not = if bench {
        Some("a micro-benchmark has no slots")
    } else if workload.kind() == WorkloadKind::Burst {
        Some("the burst workload times its own rounds")
    } else if workload.kind() == WorkloadKind::Churn {
        Some("the churn workload keeps no connections")
    } else if workload.messages_for(1).is_some() {
        Some("a fixed count of messages is not a timed slot")
    } else if order == Order::Sequential {
        Some("--order sequential runs each model's repeats together")
    } else if args.duration.is_some() || args.warmup.is_some() {
        Some("--duration and --warmup set the window of a cell measured on its own")
    } else {
        None
    };
    if let Some(why) = why_not {
        if !asked.is_empty() {
            return Err(format!(
                "{}: {why}; give one or the other",
                asked.join(", ")
            ));
        }
        return Ok(None);
    }
    if args.sequential {
        return Ok(None);
    }
    let d = matrix::Slots::DEFAULT;
    let seconds = match &args.slot {
        Some(t) => parse_duration(t)
            .map_err(|e| format!("--slot: {e}"))?
            .as_secs_f64(),
        None => d.seconds,
    };
    let warmup_seconds = match &args.slot_warmup {
        Some(t) => parse_duration(t)
            .map_err(|e| format!("--slot-warmup: {e}"))?
            .as_secs_f64(),
        // A third of a slot shorter than the default's three warm-ups
        // (compared with a nanosecond to spare: 0.3 / 3 is not 0.1).
        None if seconds + 1e-9 < 3.0 * d.warmup_seconds => seconds / 3.0,
        None => d.warmup_seconds,
    };
    if seconds <= 0.0 {
        return Err("--slot must be above 0".into());
    }
    if seconds > 60.0 {
        return Err(format!(
            "--slot {}: at most 60s (a slot is one model's turn within a round)",
            crate::present::units::seconds(seconds)
        ));
    }
    if warmup_seconds >= seconds {
        return Err(format!(
            "--slot {} is not longer than its warm-up ({}): nothing of it would be measured",
            crate::present::units::seconds(seconds),
            crate::present::units::seconds(warmup_seconds)
        ));
    }
    Ok(Some(matrix::Slots {
        seconds,
        warmup_seconds,
        instances: args.instances.unwrap_or(d.instances),
        // A slot given is the slot at every count.
        short: d
            .short
            .filter(|_| args.slot.is_none() && args.slot_warmup.is_none()),
    }))
}

/// How often each cell runs, and how the runs are judged.
struct Repeats {
    runs: usize,
    auto_runs: Option<matrix::AutoRuns>,
    margin: f64,
    repeat_disturbed: usize,
}

fn repeats_of(args: &RunArgs, preset: &presets::Preset) -> Result<Repeats, String> {
    let (runs, auto_runs) = match args.runs.as_deref().map(str::trim) {
        None => (preset.runs, None),
        Some("auto") => {
            let a = matrix::AutoRuns::default();
            (a.min, Some(a))
        }
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=1000).contains(&n) => (n, None),
            _ => {
                return Err(format!(
                    "--runs {text}: must be a count from 1 to 1000, or auto"
                ))
            }
        },
    };
    let margin = match args.margin.as_deref() {
        None => crate::stats::paired::DEFAULT_MARGIN,
        Some(text) => parse_percent("--margin", text)?,
    };
    let repeat_disturbed = match args.repeat_disturbed {
        None => matrix::DEFAULT_REPEAT_DISTURBED,
        Some(n) if n <= 10 => n,
        Some(n) => {
            return Err(format!(
                "--repeat-disturbed {n}: at most 10 (each repeat is a whole cell again)"
            ))
        }
    };
    Ok(Repeats {
        runs,
        auto_runs,
        margin,
        repeat_disturbed,
    })
}

/// The preset's workload changed by the flags, and the figure it ranks by.
fn workload_of(
    args: &RunArgs,
    preset: &presets::Preset,
) -> Result<(matrix::Workload, matrix::Primary), String> {
    let mut workload = preset.workload.clone();
    if let Some(kind) = args.workload {
        if kind != workload.kind() {
            workload.shape = matrix::Shape::of(kind);
            // A preset's open loop is of its closed workload.
            workload.rate = None;
            workload.total_messages = None;
            workload.messages_per_connection = None;
            if workload.duration_seconds == 0.0 {
                workload.duration_seconds = 1.0;
                workload.warmup_seconds = 0.25;
            }
        }
    }
    if let Some(n) = args.messages {
        if n == 0 {
            return Err("--messages must be at least 1".into());
        }
        if workload.kind() != WorkloadKind::Closed {
            return Err("--messages applies to the closed workload only".into());
        }
        workload.messages_per_connection = Some(n);
        workload.total_messages = None;
    }
    if let Some(d) = &args.duration {
        let d = parse_duration(d).map_err(|e| format!("--duration: {e}"))?;
        if d.is_zero() {
            return Err("--duration must be above 0".into());
        }
        if workload.messages_for(1).is_some() && args.messages.is_none() {
            // A duration replaces the preset's fixed amount of work.
            workload.messages_per_connection = None;
            workload.total_messages = None;
        }
        workload.duration_seconds = d.as_secs_f64();
    }
    if let Some(w) = &args.warmup {
        workload.warmup_seconds = parse_duration(w)
            .map_err(|e| format!("--warmup: {e}"))?
            .as_secs_f64();
    }
    if let Some(p) = args.protocol {
        if p != workload.protocol {
            workload.protocol = p;
            // A GET unless -m says; an echo's text is not a request.
            workload.message_bytes = if p == Protocol::Http {
                0
            } else {
                super::DEFAULT_MESSAGE
            };
            workload.payload = None;
        }
    }
    let http = workload.protocol == Protocol::Http;
    if let Some(m) = &args.message_size {
        let n = parse_size(m).map_err(|e| format!("--message-size: {e}"))?;
        let least = usize::from(!http);
        if !(least..=crate::client::plan::MAX_MESSAGE).contains(&n) {
            return Err(if http {
                format!("--message-size {n}: a request body must be from 0 (a GET) to 64 MiB")
            } else {
                format!("--message-size {n}: must be from 1 B to 64 MiB")
            });
        }
        workload.message_bytes = n;
        workload.payload = None;
    }
    if let Some(t) = &args.timeout {
        let t = parse_duration(t).map_err(|e| format!("--timeout: {e}"))?;
        if t < std::time::Duration::from_millis(1) {
            return Err("--timeout must be at least 1ms".into());
        }
        workload.timeout_seconds = t.as_secs_f64();
    }
    use crate::client::plan::{per_second, MAX_RATE};
    let rate = match (args.rate, args.rate_per_connection) {
        (Some(r), _) => Some(matrix::Rate::Total(per_second("--rate", r, MAX_RATE)?)),
        (None, Some(r)) => Some(matrix::Rate::PerConnection(per_second(
            "--rate-per-connection",
            r,
            MAX_RATE,
        )?)),
        (None, None) => None,
    };
    if rate.is_some() {
        if workload.kind() != WorkloadKind::Closed {
            return Err(format!(
                "--rate: an open loop sends messages on connections it keeps; the {} workload \
                 has none (use it with --workload closed)",
                workload.load_kind()
            ));
        }
        workload.rate = rate;
        if workload.duration_seconds <= 0.0 && workload.messages_for(1).is_none() {
            workload.duration_seconds = 1.0;
        }
    }
    if let Some(r) = args.connect_rate {
        workload.connect_rate = Some(per_second("--connect-rate", r, MAX_RATE)?);
    }
    if let Some(text) = &args.client_interval {
        let d = parse_duration(text).map_err(|e| format!("--client-interval: {e}"))?;
        if d > crate::server::pace::MAX_INTERVAL {
            return Err(format!("--client-interval {text}: must be at most 1s"));
        }
        if workload.rate.is_none() {
            return Err(
                "--client-interval paces an open loop: give --rate or --rate-per-connection".into(),
            );
        }
        workload.client_interval_seconds = (!d.is_zero()).then_some(d.as_secs_f64());
    }
    if workload.kind() != WorkloadKind::Burst
        && workload.messages_for(1).is_none()
        && workload.duration_seconds <= 0.0
    {
        workload.duration_seconds = 1.0;
    }
    // From the workload as changed by the flags: a preset's fixed amount of
    // work turned into a timed window is ranked by throughput, not time.
    let primary = match workload.kind() {
        _ if preset.bench == Some(matrix::Bench::Accept) => matrix::Primary::AcceptRate,
        _ if preset.bench.is_some() => matrix::Primary::Time,
        WorkloadKind::Burst => matrix::Primary::Time,
        WorkloadKind::Closed if workload.rate.is_some() => matrix::Primary::Latency,
        WorkloadKind::Churn => matrix::Primary::AcceptRate,
        WorkloadKind::Closed if workload.messages_for(1).is_some() => matrix::Primary::Time,
        WorkloadKind::Closed => matrix::Primary::Throughput,
    };
    Ok((workload, primary))
}

/// The work axis (`--work` or the preset's), checked; the serve flags of
/// `--server-arg` and `--variant` may not give work of their own beside it.
fn work_of(
    args: &RunArgs,
    preset: &presets::Preset,
    variants: &[matrix::Variant],
    server_settings: &Settings,
) -> Result<Vec<Profile>, String> {
    let work = match &args.work {
        Some(list) => list.clone(),
        None => preset.work.iter().map(|w| w.to_string()).collect(),
    };
    let work = work_axis(&work)?;
    refuse_work_flags("--server-arg", server_settings)?;
    for v in variants {
        refuse_work_flags(&format!("--variant {}", v.name), &v.settings)?;
    }
    Ok(work)
}

/// What a run of one's own matrix is called (its results directory is
/// `custom-TIME`): no preset is named.
pub const CUSTOM: &str = "custom";

/// The title of a custom matrix: `a custom matrix: epoll, poll at 10
/// connections, closed loop` (`…, under work none, block:1ms` with the
/// axis).
fn custom_title(
    models: &[String],
    connections: &[usize],
    work: &[Profile],
    workload: &matrix::Workload,
    capacity: Option<&crate::results::slo::Search>,
) -> String {
    let mut every = crate::server::names();
    every.sort_unstable();
    let mut given: Vec<&str> = models.iter().map(String::as_str).collect();
    given.sort_unstable();
    let models = if given == every {
        "every model".to_string()
    } else {
        models.join(", ")
    };
    let counts: Vec<String> = connections
        .iter()
        .map(|&n| crate::present::units::format_count(n as f64))
        .collect();
    let how = match (workload.kind(), workload.rate) {
        _ if capacity.is_some() => format!(
            "capacity at {} (Poisson arrivals)",
            capacity.map_or_else(String::new, |c| c.slo.describe())
        ),
        (WorkloadKind::Closed, Some(rate)) => format!("open loop at {}", rate.text()),
        (WorkloadKind::Closed, None) => "closed loop".to_string(),
        (WorkloadKind::Burst, _) => "burst".to_string(),
        (WorkloadKind::Churn, _) => "connection churn".to_string(),
    };
    let under = if work.is_empty() {
        String::new()
    } else {
        format!(", under work {}", crate::present::words::list(work))
    };
    let over = if workload.protocol == Protocol::Http {
        " over HTTP/1.1"
    } else {
        ""
    };
    format!(
        "a custom matrix: {models} at {} connection{}, {how}{over}{under}",
        counts.join(", "),
        if connections == [1] { "" } else { "s" }
    )
}

/// `--work`: the profiles, each parsed as `c10k serve --work` parses it; the rest (named
/// once, a request that fits the echo buffer, no micro-benchmark) is
/// [`RunPlan::check_work`], as for a plan read back.
fn work_axis(list: &[String]) -> Result<Vec<Profile>, String> {
    let given: Vec<&str> = list
        .iter()
        .map(|w| w.trim())
        .filter(|w| !w.is_empty())
        .collect();
    if given.is_empty() && !list.is_empty() {
        return Err("--work names no profile: give none or specs, e.g. none,block:1ms".into());
    }
    given
        .into_iter()
        .map(|w| Profile::parse(w).map_err(|e| format!("--work: {e}")))
        .collect()
}

/// c10k gives each cell's server its `--work` and `--message-size` from
/// the work axis, which files the cell under its profile and sets its
/// bound: flags of `what` (`--server-arg`, a `--variant`) may not set them
/// too, with the axis or without it (their cells would be filed under
/// `none`, with no bound and nothing saying what the server did).
fn refuse_work_flags(what: &str, s: &Settings) -> Result<(), String> {
    let flag = if s.work.is_some() {
        "--work"
    } else if s.message_size.is_some() {
        "--message-size"
    } else {
        return Ok(());
    };
    Err(format!(
        "{what}: {flag} is set per cell by --work (each cell's work, a request of one \
         message); give the profiles to --work"
    ))
}

/// CPUs for the server and the client under `pin`, from the CPUs this
/// process may use: split gives the server the first half and the client
/// the rest; same gives both the first half; all gives both all of them.
fn cpus_for(pin: Pin) -> Result<(Vec<usize>, Vec<usize>), String> {
    let cpus = crate::sys::affinity::current_cpus();
    let half = cpus.len().div_ceil(2).max(1);
    match pin {
        Pin::None => Ok((Vec::new(), Vec::new())),
        Pin::Split if cpus.len() < 2 => Err(format!(
            "--pin split needs two CPUs, this process may use {}; use --pin same or none",
            cpus.len()
        )),
        Pin::Split => Ok((cpus[..half].to_vec(), cpus[half..].to_vec())),
        Pin::Same | Pin::All if cpus.is_empty() => Err("cannot read this process's CPUs".into()),
        Pin::Same => Ok((cpus[..half].to_vec(), cpus[..half].to_vec())),
        Pin::All => Ok((cpus.clone(), cpus)),
    }
}

/// `--variant NAME='MODEL FLAGS'`: a c10k model with more `serve` flags
/// under a name of its own, the flags checked as `serve` would.
fn variant(text: &str) -> Result<matrix::Variant, String> {
    let (name, rest) = text
        .split_once('=')
        .ok_or_else(|| format!("--variant {text}: expected NAME='MODEL FLAGS'"))?;
    let name = name.trim();
    super::check::name(&format!("--variant {text}"), name, "-_+@.")?;
    let words = shlex::split(rest)
        .ok_or_else(|| format!("--variant {name}: unbalanced quotes in '{rest}'"))?;
    let Some((model, args)) = words.split_first() else {
        return Err(format!("--variant {name}: no model after '='"));
    };
    if crate::server::find(model).is_none() {
        return Err(format!(
            "--variant {name}: unknown model '{model}': expected one of {}",
            crate::server::names().join(", ")
        ));
    }
    let settings = super::serve_settings(&format!("--variant {name}"), Some(model), args)?;
    Ok(matrix::Variant {
        name: name.to_string(),
        model: model.clone(),
        settings,
    })
}

/// `c10k run --baseline DIR` with no flag that shapes a plan: DIR's plan
/// again, made for this machine (its cells afresh, the CPUs to pin and
/// the models refused from a count on measured here), under this command.
/// `None` when the flags shape the plan themselves ([`plan`]).
pub fn from_baseline(
    base: &RunPlan,
    args: &RunArgs,
    command: String,
) -> Result<Option<RunPlan>, String> {
    if !args.given.shaping.is_empty() {
        return Ok(None);
    }
    let mut plan = base.clone();
    plan.command = command;
    let runs = plan.auto_runs.map_or(plan.runs, |a| a.min);
    set_runs(&mut plan, runs);
    (plan.server_cpus, plan.client_cpus) = if plan.bench.is_some() {
        (Vec::new(), Vec::new())
    } else {
        cpus_for(plan.pin)?
    };
    plan.refused = if plan.bench.is_some() {
        Vec::new()
    } else {
        crate::runner::preflight::refusals(
            &plan.models,
            &plan.variants,
            &plan.connections,
            &crate::client::preflight::System::read(),
            &mut crate::runner::preflight::TaskCost::measure,
        )
    };
    if let Some(ip) = plan.bind {
        if std::net::TcpListener::bind((ip, 0)).is_err() {
            return Err(format!(
                "the baseline's --bind {ip} is not an address of this host"
            ));
        }
    }
    plan.check_work()?;
    Ok(Some(plan))
}

/// `--margin 5%` (or `5`, `0.5%`; `--fail-if-slower` alike): a share from
/// 0.1 % to 50 %.
pub(super) fn parse_percent(flag: &str, text: &str) -> Result<f64, String> {
    let t = text.trim();
    let number = t.strip_suffix('%').unwrap_or(t).trim();
    match number.parse::<f64>() {
        Ok(v) if (0.1..=50.0).contains(&v) => Ok(v / 100.0),
        _ => Err(format!(
            "{flag} {text}: give a percentage from 0.1% to 50%, e.g. 5%"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Command;

    /// The plan `c10k run ARGS` gives.
    fn from_args(args: &[&str]) -> Result<RunPlan, String> {
        let argv = ["c10k", "run"].iter().chain(args);
        let cli = crate::cli::try_parse_from(argv).map_err(|e| crate::cli::one_line(&e))?;
        match cli.command {
            Command::Run(a) => plan(&a, String::new()),
            _ => Err("not a run command".into()),
        }
    }

    #[test]
    fn a_matrix_of_ones_own_is_custom_not_the_tour() {
        let p = from_args(&["--models", "epoll,poll", "-c", "10", "--pin", "none"])
            .expect("a custom plan");
        assert_eq!(p.experiment, "custom");
        assert_eq!(
            p.title,
            "a custom matrix: epoll, poll at 10 connections, closed loop"
        );
        assert!(!p.title.contains("tour"), "{}", p.title);
        let p = from_args(&["-c", "2,1000", "-r", "500", "--pin", "none"]).expect("a plan");
        assert_eq!(p.experiment, "custom");
        assert_eq!(
            p.title,
            "a custom matrix: every model at 2, 1,000 connections, open loop at 500 messages/s in total"
        );
    }

    #[test]
    fn over_http_every_model_serves_it_and_the_web_peers_join() {
        let p = from_args(&["web", "--pin", "none"]).expect("the web preset");
        assert_eq!(p.workload.protocol, Protocol::Http);
        assert_eq!(p.workload.message_bytes, 0, "a GET");
        assert_eq!(p.server_settings.protocol, Some(Protocol::Http));
        assert_eq!(p.connections, [10, 100, 1000]);
        let peers: Vec<&str> = p.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(peers, ["nginx", "go-http", "node-http"]);
        assert!(p.looks.is_some(), "decided as the tour is");
        let p = from_args(&[
            "--protocol",
            "http",
            "--models",
            "epoll",
            "-c",
            "10",
            "-m",
            "100",
        ])
        .expect("a POST of 100 B");
        assert_eq!(p.workload.message_bytes, 100);
        assert!(
            p.title.ends_with("closed loop over HTTP/1.1"),
            "{}",
            p.title
        );
        let e = from_args(&["peers", "--protocol", "http"]).expect_err("echo peers");
        assert!(e.contains("peers speak echo"), "{e}");
        let e = from_args(&["--protocol", "http", "--server-arg=--protocol=echo"])
            .expect_err("disagrees");
        assert!(e.contains("disagrees with the run's protocol"), "{e}");
        let e = from_args(&["--models", "epoll", "-m", "0"]).expect_err("an empty echo");
        assert!(e.contains("from 1 B"), "{e}");
    }

    /// Slots that sum to the budget fit it, whatever floating point makes
    /// of their sum (twenty 0.1 s slots are 2.0000000000000004 s); a
    /// budget a slot short is refused (issue 58.4).
    #[test]
    fn slots_that_sum_to_the_budget_fit_it() {
        let args = |budget: &'static str| {
            [
                "--models",
                "epoll,poll",
                "-c",
                "4",
                "--runs",
                "10",
                "--slot",
                "100ms",
                "--slot-warmup",
                "50ms",
                "--pin",
                "none",
                "--budget",
                budget,
            ]
        };
        let p = from_args(&args("2s")).expect("twenty 0.1 s slots in 2 s");
        assert_eq!(p.cells.len(), 20);
        let e = from_args(&args("1.95s")).err().unwrap_or_default();
        assert!(
            e.starts_with("--budget 1.95 s: the plan's 20 cells take at least 2 s"),
            "{e}"
        );
    }

    #[test]
    fn a_pair_given_minutes_plans_more_looks_than_the_tour() {
        // Two models at one count: a round is two 0.15 s slots (below 1,000 connections), so 3
        // minutes hold twenty looks of 10, each read at 99.25 %.
        let pair = ["--models", "epoll,poll", "-c", "4", "--pin", "none"];
        let p = from_args(&pair).expect("a pair");
        let looks = p.looks.expect("looks by default");
        assert_eq!((looks.every, looks.most), (10, 20));
        assert!((p.rule().level - 0.9925).abs() < 1e-3, "{}", p.rule().level);
        // 10 s hold 25 rounds at three quarters: looks of 5, at least
        // the tour's eight (40 rounds), with the first look's 5 cells.
        let p = from_args(&[&pair[..], &["--budget", "10s"]].concat()).expect("a pair");
        assert_eq!(p.looks.map(|l| (l.every, l.most)), Some((5, 8)));
        assert_eq!((p.runs, p.cells.len()), (5, 10));
        // 20 s hold ten looks of 5, 30 s fifteen (the table's, for 15),
        // 35 s 17.5: the table's 15.
        let p = from_args(&[&pair[..], &["--budget", "20s"]].concat()).expect("a pair");
        assert_eq!(p.looks.map(|l| (l.every, l.most)), Some((5, 10)));
        let p = from_args(&[&pair[..], &["--budget", "30s"]].concat()).expect("a pair");
        assert_eq!(p.looks.map(|l| (l.every, l.most)), Some((5, 15)));
        let p = from_args(&[&pair[..], &["--budget", "35s"]].concat()).expect("a pair");
        assert_eq!(p.looks.map(|l| (l.every, l.most)), Some((5, 15)));
    }

    #[test]
    fn the_tour_stays_the_tour() {
        let p = from_args(&["--pin", "none"]).expect("the tour");
        let tour = presets::find("tour").expect("the tour preset");
        assert_eq!(
            (p.experiment.as_str(), p.title.as_str()),
            ("tour", tour.title)
        );
        // It looks until decided, within 3 minutes, at Pocock's level:
        // eight looks of 5 rounds, the first look's cells 5 rounds.
        let looks = p.looks.expect("looks by default");
        assert_eq!(
            (looks.every, looks.most, looks.budget_seconds),
            (5, 8, 180.0)
        );
        assert_eq!(p.runs, 5);
        assert!(p.cells.iter().all(|c| c.run <= 5) && p.cells.iter().any(|c| c.run == 5));
        assert!((p.rule().level - 0.988).abs() < 1e-3, "{}", p.rule().level);
        let p = from_args(&["--budget", "5m", "--pin", "none"]).expect("the tour");
        assert_eq!(p.looks.map(|l| l.budget_seconds), Some(300.0));
        // Another number of runs is still the tour's matrix, without looks.
        let p = from_args(&["--runs", "5", "--pin", "none"]).expect("the tour");
        assert_eq!((p.runs, p.looks), (5, None));
        assert_eq!(p.rule().level, 0.95);
        assert_eq!(p.experiment, "tour");
        assert_eq!(p.title, format!("{} (customised)", tour.title));
        // A preset named keeps its name, whatever the flags change.
        let p = from_args(&["thesis", "--models", "select,epoll", "--pin", "none"])
            .expect("the thesis");
        assert_eq!(p.experiment, "thesis");
        assert!(p.title.ends_with(" (customised)"), "{}", p.title);
    }

    #[test]
    fn the_handlers_preset_has_its_work_axis_and_every_cpu() {
        let p = from_args(&["handlers"]).expect("the handlers preset");
        // Six fixed rounds: one look is most of its budget already.
        assert_eq!((p.runs, p.looks), (6, None));
        assert_eq!(
            p.work,
            ["none", "cpu:10us", "cpu:100us", "block:1ms", "wait:1ms"]
        );
        assert_eq!(p.pin, Pin::All);
        assert_eq!(p.server_cpus, crate::sys::affinity::current_cpus());
        assert_eq!(p.server_cpus, p.client_cpus);
        assert!(p.models.iter().any(|m| m == "tokio-inline"));
        // Resident slots: six rounds of every model, count and profile.
        assert!(p.slots.is_some());
        assert_eq!(p.cells.len(), 13 * 3 * 5 * 6);
        // Flags give the axis canonically; a bad spec is one line.
        let p = from_args(&[
            "--models",
            "epoll",
            "--work",
            " none , block:1000us",
            "--pin",
            "none",
        ])
        .expect("a plan");
        assert_eq!(p.work, ["none", "block:1ms"]);
        assert!(
            p.title.ends_with(", under work none, block:1ms"),
            "{}",
            p.title
        );
        let e = from_args(&["--work", "block:1ms", "--variant", "x=epoll --work cpu:1ms"])
            .err()
            .unwrap_or_default();
        assert!(e.starts_with("--variant x: --work is set per cell"), "{e}");
    }

    #[test]
    fn a_preset_variant_the_matrix_does_not_run_is_not_in_the_plan() {
        let p = from_args(&["handlers", "--models", "epoll"]).expect("a plan");
        assert!(p.variants.is_empty(), "{:?}", p.variants);
        let p = from_args(&["handlers"]).expect("a plan");
        assert!(p.variants.iter().any(|v| v.name == "tokio-inline"));
    }

    #[test]
    fn a_mistyped_name_gets_a_tip() {
        let e = from_args(&["toru"]).err().unwrap_or_default();
        assert!(
            e.contains("tip: a similar experiment exists: 'tour'"),
            "{e}"
        );
        let e = from_args(&["--models", "epol", "--pin", "none"])
            .err()
            .unwrap_or_default();
        assert!(e.contains("tip: a similar model exists: 'epoll'"), "{e}");
        let e = from_args(&["nothing-like-it"]).err().unwrap_or_default();
        assert!(
            e.starts_with("unknown experiment") && !e.contains("tip"),
            "{e}"
        );
    }
}
