//! The plan layer: each command's parsed flags ([`crate::cli`]) turned into
//! the validated settings the engine takes, before anything runs. Every
//! range and name is checked here (or by the settings' own constructor),
//! with a one-line error that says what to change. Only this layer,
//! `cli.rs`, the commands' drivers (`commands/`) and `main.rs` see a flag: nothing below imports `crate::cli`
//! or clap (a test below holds every other file to that).
//!
//! - this file: `c10k serve`, the `--server-arg`s of `c10k run`, and the
//!   parsers of sizes and durations every command shares;
//! - [`load`]: `c10k load` into a [`crate::client::plan::LoadPlan`];
//! - [`run`]: `c10k run` into a [`crate::results::matrix::RunPlan`];
//! - [`compare`]: `c10k compare` (and `run --baseline`'s comparison);
//! - [`check`]: a run's plan checked whole, made from flags or read back;
//! - [`micro`], [`herd`]: the micro-benchmarks and the herd;
//! - [`conform`]: `c10k conform` into a suite and its checks.

pub mod check;
pub mod compare;
pub mod conform;
pub mod herd;
pub mod load;
pub mod micro;
pub mod run;
pub mod tune;

use std::net::SocketAddr;

use crate::cli::ServeArgs;
use crate::present::units::parse_size;
use crate::server::{self, run::Setup, work::Work, Config, Model};
use crate::sys::affinity::cpus_available;

/// A validated `c10k serve`.
pub struct ServePlan {
    pub model: &'static dyn Model,
    pub config: Config,
    pub setup: Setup,
}

impl ServePlan {
    pub fn from_args(a: &ServeArgs) -> Result<ServePlan, String> {
        let model = server::find(&a.model).ok_or_else(|| {
            format!(
                "unknown model '{}': expected one of {}",
                a.model,
                server::names().join(", ")
            )
        })?;
        let buffer = parse_size(&a.buffer).map_err(|e| format!("--buffer: {e}"))?;
        if !(64..=64 << 20).contains(&buffer) {
            return Err(format!("--buffer {buffer}: must be from 64 B to 64 MiB"));
        }
        let stack_size = match &a.stack_size {
            Some(s) => {
                let n = parse_size(s).map_err(|e| format!("--stack-size: {e}"))?;
                if n < 16 << 10 {
                    return Err(format!("--stack-size {n}: must be at least 16 KiB"));
                }
                Some(n)
            }
            None => None,
        };
        let cpus = cpus_flag(a.cpus.as_deref())?;
        // One per CPU it may use: pinned to one CPU, two uring rings or
        // two epoll loops only take turns on it (as `c10k run` already
        // passes --workers for the CPUs it gives the server).
        let default_workers = if model.worker_per_connection() {
            64
        } else {
            cpus.as_ref().map_or_else(cpus_available, Vec::len)
        };
        let workers = a.workers.unwrap_or(default_workers);
        if !(1..=100_000).contains(&workers) {
            return Err(format!("--workers {workers}: must be from 1 to 100000"));
        }
        if a.max_conns == Some(0) {
            return Err("--max-conns 0 would refuse every connection".into());
        }
        if a.backlog < 1 {
            return Err(format!("--backlog {}: must be at least 1", a.backlog));
        }
        if a.nofile.is_some_and(|n| n < 16) {
            return Err("--nofile: below 16 descriptors the server cannot start".into());
        }
        if a.sigpending == Some(0) {
            return Err("--sigpending 0 would leave no room for a single signal".into());
        }
        let interval = parse_duration(&a.interval).map_err(|e| format!("--interval: {e}"))?;
        if interval > server::pace::MAX_INTERVAL {
            return Err(format!("--interval {}: must be at most 1s", a.interval));
        }
        if !interval.is_zero() && !model.readiness() {
            return Err(format!(
                "--interval: {} does not wait for readiness in a loop; interval control is for {}",
                model.name(),
                server::MODELS
                    .iter()
                    .filter(|m| m.readiness())
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if a.global_queue_interval == Some(0) {
            return Err(
                "--global-queue-interval 0: a worker must run at least 1 task between looks".into(),
            );
        }
        if a.global_queue_interval.is_some() && !model.has_global_queue() {
            return Err(format!(
                "--global-queue-interval: {} has no runtime with a global queue; it is tokio's",
                model.name()
            ));
        }
        if a.blocking_threads == Some(0) {
            return Err("--blocking-threads 0: the blocking pool needs at least 1 thread".into());
        }
        if a.blocking_threads.is_some() && !model.offloads_blocking() {
            return Err(format!(
                "--blocking-threads: {} has no blocking pool; it is tokio's",
                model.name()
            ));
        }
        ring_flag(
            model,
            "--ring-entries",
            a.ring_entries.map(u64::from),
            (8, 4096),
        )?;
        ring_flag(
            model,
            "--ring-buffers",
            a.ring_buffers.map(u64::from),
            (16, 32_768),
        )?;
        if a.ring_recv.is_some() {
            uring_only(model, "--ring-recv")?;
        }
        if a.hand_back.is_some() {
            only_for(model, "--hand-back", "pool fed by a poll loop", "hybrid")?;
        }
        let work = work_flags(model, a, buffer)?;
        Ok(ServePlan {
            model,
            config: Config {
                bind: SocketAddr::new(a.bind, a.port),
                buffer,
                max_conns: a.max_conns,
                workers,
                stack_size,
                edge: a.edge,
                accept: a.accept,
                backlog: a.backlog,
                reuseport: a.reuseport,
                interval,
                shared_state: a.shared_state.then_some(a.lock),
                work,
                global_queue_interval: a.global_queue_interval,
                blocking_threads: a.blocking_threads,
                ring_entries: a.ring_entries,
                ring_buffers: a.ring_buffers,
                ring_recv_once: a.ring_recv == Some(crate::cli::RingRecv::Once),
                hand_back_each: a.hand_back == Some(crate::cli::HandBack::Each),
            },
            setup: Setup {
                nofile: a.nofile,
                sigpending: a.sigpending,
                cpus,
            },
        })
    }
}

/// A ring flag given to a model that does not declare it (only uring has
/// a ring) is refused in one line.
fn uring_only(model: &dyn Model, flag: &str) -> Result<(), String> {
    only_for(model, flag, "io_uring ring", "uring")
}

/// A flag that only the model declaring it as a knob takes; the others
/// are told what they lack and whose flag it is.
fn only_for(model: &dyn Model, flag: &str, lacks: &str, owner: &str) -> Result<(), String> {
    if model.knobs().iter().any(|k| k.flag == flag) {
        Ok(())
    } else {
        Err(format!(
            "{flag}: {} has no {lacks}; it is {owner}'s",
            model.name()
        ))
    }
}

/// A ring size (`--ring-entries`, `--ring-buffers`): only for a model
/// that declares the knob, a power of two within `range`.
fn ring_flag(
    model: &dyn Model,
    flag: &str,
    value: Option<u64>,
    (least, most): (u64, u64),
) -> Result<(), String> {
    let Some(v) = value else {
        return Ok(());
    };
    uring_only(model, flag)?;
    if !v.is_power_of_two() || !(least..=most).contains(&v) {
        return Err(format!(
            "{flag} {v}: must be a power of two from {least} to {most}"
        ));
    }
    Ok(())
}

/// `--work`, `--message-size` and `--block-inline`, checked together: a
/// request must fit in the echo buffer, and only tokio hands blocking
/// calls off.
fn work_flags(model: &dyn Model, a: &ServeArgs, buffer: usize) -> Result<Work, String> {
    let mut work = Work::parse(&a.work, a.message_size).map_err(|e| format!("--work: {e}"))?;
    if !work.is_none() && (a.message_size == 0 || a.message_size > buffer) {
        return Err(format!(
            "--message-size {}: a request must be from 1 B to the --buffer ({buffer} B)",
            a.message_size
        ));
    }
    if a.block_inline && !model.offloads_blocking() {
        return Err(format!(
            "--block-inline: {} makes blocking calls where its handler runs already; the flag is for {}",
            model.name(),
            server::MODELS
                .iter()
                .filter(|m| m.offloads_blocking())
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    work.offload_block = model.offloads_blocking() && !a.block_inline;
    Ok(work)
}

/// `c10k serve` flags each `c10k run` cell sets itself: a `--server-arg`
/// may not override them (one naming another model was measured and
/// recorded under the cell's model).
const CELL_OWNED: [&str; 5] = ["model", "port", "cpus", "bind", "reuseport"];

/// Checks `c10k run --server-arg`s once, with the plan, before any cell
/// runs (and `c10k conform`'s, before any check): they must be `c10k
/// serve` flags with valid values, and none may set what each cell sets
/// itself. Returns the echo buffer the servers will have (`--buffer` among
/// them, or serve's default).
pub fn check_server_args(args: &[String]) -> Result<String, String> {
    check_serve_flags("--server-arg", None, args).map(|(buffer, _)| buffer)
}

/// The bytes of one request a `c10k serve` of `model` with `args` works on
/// (`--work` with its `--message-size`); 1 for a plain echo, whose every
/// byte may come back on its own.
pub(crate) fn request_bytes(model: &str, args: &[String]) -> Result<usize, String> {
    let (_, plan) = check_serve_flags("--server-arg", Some(model), args)?;
    let work = &plan.config.work;
    Ok(if work.is_none() { 1 } else { work.request })
}

/// What a `c10k serve` of `model` with `args`, under `work`, on
/// `server_cpus` (empty: every CPU) can do at once: its handlers, cores,
/// and whether a block or a wait holds a handler (the capacity search's
/// queueing bound).
pub(crate) fn handlers_of(
    model: &str,
    args: &[String],
    work: Option<&crate::server::work::Profile>,
    server_cpus: &[usize],
) -> Result<crate::server::work::Capacity, String> {
    let mut all: Vec<String> = args.to_vec();
    if let Some(w) = work {
        all.extend(["--work".to_string(), w.to_string()]);
    }
    if !server_cpus.is_empty() {
        let list: Vec<String> = server_cpus.iter().map(ToString::to_string).collect();
        all.extend(["--cpus".to_string(), list.join(",")]);
    }
    let mut line = vec!["--model".to_string(), model.to_string()];
    line.extend(all);
    use clap::{Args, FromArgMatches};
    let m = ServeArgs::augment_args(clap::Command::new("serve").no_binary_name(true))
        .try_get_matches_from(&line)
        .map_err(|e| format!("{model}: {}", crate::cli::one_line(&e)))?;
    let a = ServeArgs::from_arg_matches(&m).map_err(|e| format!("{model}: {e}"))?;
    let plan = ServePlan::from_args(&a).map_err(|e| format!("{model}: {e}"))?;
    let cores = if server_cpus.is_empty() {
        cpus_available()
    } else {
        server_cpus.len()
    };
    Ok(crate::server::work::Capacity::of(
        plan.model,
        &plan.config,
        cores,
    ))
}

/// Checks the flags of a `--variant` of `model` as [`check_server_args`]
/// does, with its model (so a flag the model does not take is refused).
pub(crate) fn check_variant_args(name: &str, model: &str, args: &[String]) -> Result<(), String> {
    check_serve_flags(&format!("--variant {name}"), Some(model), args).map(drop)
}

/// `args` as `c10k serve` flags of `model` (serve's default when `None`),
/// none of them one a cell sets; errors start with `flag`. Returns the
/// echo buffer as written and the validated plan.
fn check_serve_flags(
    flag: &str,
    model: Option<&str>,
    args: &[String],
) -> Result<(String, ServePlan), String> {
    use clap::{parser::ValueSource, Args, FromArgMatches};
    let parse = |args: &[String]| {
        ServeArgs::augment_args(clap::Command::new("serve").no_binary_name(true))
            .try_get_matches_from(args)
            .map_err(|e| format!("{flag}: {}", crate::cli::one_line(&e)))
    };
    let m = parse(args)?;
    if let Some(id) = CELL_OWNED
        .iter()
        .find(|id| m.value_source(id) == Some(ValueSource::CommandLine))
    {
        return Err(format!(
            "{flag}: --{id} is set by c10k for each server it starts (its model, port and CPUs), not by hand"
        ));
    }
    let m = match model {
        Some(model) => {
            let mut all = vec!["--model".to_string(), model.to_string()];
            all.extend(args.iter().cloned());
            parse(&all)?
        }
        None => m,
    };
    let a = ServeArgs::from_arg_matches(&m).map_err(|e| format!("{flag}: {e}"))?;
    let plan = ServePlan::from_args(&a).map_err(|e| format!("{flag}: {e}"))?;
    Ok((a.buffer, plan))
}

/// `--cpus LIST`: the CPUs named, each one this process may use.
fn cpus_flag(list: Option<&str>) -> Result<Option<Vec<usize>>, String> {
    list.map(crate::sys::affinity::usable_cpu_list)
        .transpose()
        .map_err(|e| format!("--cpus: {e}"))
}

pub(crate) use crate::present::units::parse_duration;

#[cfg(test)]
mod tests {
    use super::parse_size;

    /// Every knob of every model (`server::knobs`) makes a valid plan of
    /// `c10k serve --model MODEL FLAG VALUE` at both ends of its range and
    /// at every choice: the registry names only what the server takes.
    #[test]
    fn every_knob_is_a_serve_flag_over_its_whole_range() {
        use crate::server::knobs::{of, Values};
        let mut seen = 0;
        for m in crate::server::MODELS {
            for k in of(*m) {
                let values: Vec<Vec<String>> = match k.values {
                    Values::Count { least, most } | Values::Bytes { least, most } => {
                        vec![vec![least.to_string()], vec![most.to_string()]]
                    }
                    Values::Micros { least, most } => {
                        vec![vec![format!("{least}us")], vec![format!("{most}us")]]
                    }
                    Values::Switch => vec![vec![]],
                    Values::Choice(words) => words.iter().map(|w| vec![w.to_string()]).collect(),
                };
                for v in values {
                    let mut args = vec!["--model", m.name(), k.flag];
                    args.extend(v.iter().map(String::as_str));
                    // The plan refuses what the server would not take.
                    let _ = serve(&args);
                    seen += 1;
                }
            }
        }
        assert!(seen >= 20, "only {seen} knob values");
    }

    /// The plan `c10k serve ARGS` makes.
    fn serve(args: &[&str]) -> super::ServePlan {
        try_serve(args).expect("a plan")
    }

    /// The plan `c10k serve ARGS` makes, or its one-line refusal.
    fn try_serve(args: &[&str]) -> Result<super::ServePlan, String> {
        use clap::{Args, FromArgMatches};
        let m =
            crate::cli::ServeArgs::augment_args(clap::Command::new("serve").no_binary_name(true))
                .try_get_matches_from(args)
                .expect("flags");
        let a = crate::cli::ServeArgs::from_arg_matches(&m).expect("flags");
        super::ServePlan::from_args(&a)
    }

    #[test]
    fn pool_and_ring_sizes_go_only_to_the_models_that_have_them() {
        let refused = |args: &[&str], words: &str| {
            let e = try_serve(args).err().unwrap_or_default();
            assert!(e.contains(words), "{args:?}: {e:?}");
        };
        refused(
            &["--model", "epoll", "--ring-entries", "8"],
            "epoll has no io_uring ring",
        );
        refused(
            &["--model", "uring", "--ring-entries", "100"],
            "power of two from 8 to 4096",
        );
        refused(
            &["--model", "uring", "--ring-buffers", "8"],
            "power of two from 16",
        );
        refused(
            &["--model", "poll", "--ring-recv", "once"],
            "poll has no io_uring ring",
        );
        assert!(
            serve(&["--model", "uring", "--ring-recv", "once"])
                .config
                .ring_recv_once
        );
        assert!(
            !serve(&["--model", "uring", "--ring-recv", "multishot"])
                .config
                .ring_recv_once
        );
        refused(
            &["--model", "epoll-workers", "--hand-back", "each"],
            "epoll-workers has no pool fed by a poll loop; it is hybrid's",
        );
        assert!(
            serve(&["--model", "hybrid", "--hand-back", "each"])
                .config
                .hand_back_each
        );
        assert!(!serve(&["--model", "hybrid"]).config.hand_back_each);
        refused(
            &["--model", "threads", "--blocking-threads", "8"],
            "threads has no blocking pool",
        );
        refused(
            &["--model", "tokio", "--blocking-threads", "0"],
            "at least 1 thread",
        );
        let p = serve(&["--model", "tokio", "--blocking-threads", "1000"]);
        assert_eq!(p.config.blocking_threads, Some(1000));
        let p = serve(&[
            "--model",
            "uring",
            "--ring-entries",
            "64",
            "--ring-buffers",
            "1024",
        ]);
        assert_eq!(
            (p.config.ring_entries, p.config.ring_buffers),
            (Some(64), Some(1024))
        );
    }

    #[test]
    fn workers_default_to_the_cpus_the_server_may_use() {
        let first = crate::sys::affinity::current_cpus()[0].to_string();
        // Every model but the one with a worker per connection (prefork),
        // whose pool is sized for connections, not CPUs.
        let pools = crate::server::MODELS
            .iter()
            .filter(|m| !m.worker_per_connection())
            .map(|m| m.name());
        for model in pools {
            let pinned = serve(&["--model", model, "--cpus", &first]);
            assert_eq!(pinned.config.workers, 1, "{model} on one CPU");
            let free = serve(&["--model", model]);
            assert_eq!(
                free.config.workers,
                crate::sys::affinity::cpus_available(),
                "{model}"
            );
            let asked = serve(&["--model", model, "--cpus", &first, "--workers", "3"]);
            assert_eq!(asked.config.workers, 3, "{model}: --workers wins");
        }
        for m in crate::server::MODELS
            .iter()
            .filter(|m| m.worker_per_connection())
        {
            let plan = serve(&["--model", m.name(), "--cpus", &first]);
            assert_eq!(plan.config.workers, 64, "{}", m.name());
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("16KiB"), Ok(16384));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
    }

    /// The files under src/ that name `crate::cli` or clap: every one but
    /// main.rs, cli.rs, commands/ and the plan layer is a flag seen below the plan.
    fn flag_readers(dir: &std::path::Path, src: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("src/ is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                flag_readers(&path, src, out);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source file");
            if names_a_flag(&text) {
                let name = path.strip_prefix(src).expect("under src/");
                out.push(name.to_string_lossy().into_owned());
            }
        }
    }

    /// Whether `text` names the module `cli` (`crate::cli`, `c10k::cli`,
    /// not `crate::client`) or the crate `clap`.
    fn names_a_flag(text: &str) -> bool {
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        ["crate::cli", "c10k::cli", "clap"].iter().any(|name| {
            text.match_indices(name).any(|(at, _)| {
                let before = text[..at].chars().next_back();
                let after = text[at + name.len()..].chars().next();
                let word = !before.is_some_and(ident) && !after.is_some_and(ident);
                // `clap` alone is a word in prose too: only as a path.
                word && (*name != "clap" || text[at..].starts_with("clap::"))
            })
        })
    }

    #[test]
    fn flag_names_are_told_from_their_neighbours() {
        assert!(names_a_flag("use crate::cli::LoadArgs;"));
        assert!(names_a_flag("use crate::cli;"));
        assert!(names_a_flag("#[derive(clap::ValueEnum)]"));
        assert!(names_a_flag("use clap::Parser;"));
        assert!(!names_a_flag("use crate::client::plan::LoadPlan;"));
        assert!(!names_a_flag("// a flag that clap parses"));
        assert!(!names_a_flag("myclap::X"));
    }

    /// Only main.rs, cli.rs, commands/ and the plan layer see a flag: the engine takes
    /// settings, never a clap type.
    #[test]
    fn nothing_below_the_plan_sees_a_flag() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        flag_readers(&src, &src, &mut found);
        found.retain(|f| {
            !(f == "main.rs"
                || f == "cli.rs"
                || f.starts_with("plan/")
                || f.starts_with("commands/"))
        });
        found.sort();
        assert!(
            found.is_empty(),
            "these files name crate::cli or clap; turn the flags into settings in src/plan/: {found:?}"
        );
    }
}
