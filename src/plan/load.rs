//! `c10k load` flags turned into a [`LoadPlan`]: the target resolved, sizes
//! and durations parsed, source addresses, CPUs and server processes
//! checked against this machine, output paths checked before anything is
//! measured; the bounds are the plan's own ([`LoadPlan::validate`]).

use super::{parse_duration, DEFAULT_MESSAGE};
use crate::cli::{AgentArgs, LoadArgs};
use crate::client::launch::Launch;
use crate::client::launch::{self, Template};
use crate::client::plan::{LoadPlan, Stop, Workload, DEFAULT_DURATION, MAX_DEPTH};
use crate::present::units::parse_size;

/// The plan `a` asks for; `command` is the command line, for the results.
pub fn plan(a: &LoadArgs, command: String) -> Result<LoadPlan, String> {
    use std::net::ToSocketAddrs;
    let target = a
        .target
        .to_socket_addrs()
        .map_err(|e| format!("target '{}': {e} (expected HOST:PORT)", a.target))?
        .next()
        .ok_or_else(|| format!("target '{}' resolves to no address", a.target))?;
    // Checked for every workload, as the flag is given for any.
    if !(1..=MAX_DEPTH).contains(&a.depth) {
        return Err(format!(
            "--depth {}: must be from 1 to {}",
            a.depth, MAX_DEPTH
        ));
    }
    let (message_size, payload) = match &a.payload {
        Some(text) => (text.len(), Some(text.as_bytes().to_vec())),
        None => {
            let n = match &a.message_size {
                Some(m) => parse_size(m).map_err(|e| format!("--message-size: {e}"))?,
                None if a.protocol.is_echo() => DEFAULT_MESSAGE,
                None => 0,
            };
            (n, None)
        }
    };
    let workload = if a.burst {
        Workload::Burst { rounds: a.rounds }
    } else if a.churn {
        Workload::Churn { echo: a.churn_echo }
    } else if let Some(rate) = a.rate {
        Workload::Open {
            rate,
            depth: a.depth,
        }
    } else {
        Workload::Closed { depth: a.depth }
    };
    let stop = match (a.messages, &a.duration) {
        (Some(n), _) => Stop::Messages(n),
        (None, Some(d)) => {
            Stop::Duration(parse_duration(d).map_err(|e| format!("--duration: {e}"))?)
        }
        (None, None) => Stop::Duration(DEFAULT_DURATION),
    };
    let warmup = parse_duration(&a.warmup).map_err(|e| format!("--warmup: {e}"))?;
    let interval = parse_duration(&a.interval).map_err(|e| format!("--interval: {e}"))?;
    let timeout = parse_duration(&a.timeout).map_err(|e| format!("--timeout: {e}"))?;
    let sources = match &a.source {
        Some(s) => crate::client::source::parse_sources(s).map_err(|e| format!("--source: {e}"))?,
        None => Vec::new(),
    };
    if let Some(&pid) = a
        .server_pid
        .iter()
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
    {
        return Err(format!("--server-pid {pid}: no such process"));
    }
    let cpus = super::cpus_flag(a.cpus.as_deref())?;
    let threads = a.threads.unwrap_or_else(|| {
        cpus.as_ref()
            .map_or_else(crate::sys::affinity::cpus_available, Vec::len)
    });
    let plan = LoadPlan {
        target,
        protocol: a.protocol,
        connections: a.connections,
        idle: a.idle,
        threads,
        workload,
        stop,
        warmup,
        message_size,
        payload,
        connect_rate: a.connect_rate,
        interval,
        arrivals: a.arrivals,
        linger0: a.linger0,
        timeout,
        sources,
        cpus,
        json: a.json.clone(),
        csv: a.per_connection_csv.clone(),
        hdr: a.hdr.clone(),
        fail_on_error: a.fail_on_error,
        quiet: a.quiet,
        preflight_to_stderr: true,
        command,
        process: None,
        agents: agents(&a.agents)?,
        server_pids: a.server_pid.clone(),
        resident: false,
    }
    .validate()?;
    let flag = match plan.workload {
        Workload::Burst { .. } => Some("--burst"),
        Workload::Churn { .. } => Some("--churn"),
        _ => None,
    };
    in_one_process(flag, plan.agents.as_ref())?;
    // Checked before anything is measured, so a run is not thrown away at
    // the end for a path that could never be written.
    for (flag, path) in [
        ("--json", &plan.json),
        ("--per-connection-csv", &plan.csv),
        ("--hdr", &plan.hdr),
    ] {
        crate::export::target::check_flag(flag, path.as_deref())?;
    }
    Ok(plan)
}

/// `--agent`, `--agents-file` and `--agents`: how the agents are
/// started, when the run has any.
pub(super) fn agents(a: &AgentArgs) -> Result<Option<Launch>, String> {
    let mut templates = a
        .agent
        .iter()
        .map(|t| Template::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(path) = &a.agents_file {
        templates.extend(launch::read_file(path)?);
    }
    if templates.is_empty() {
        return match a.agents {
            Some(_) => Err("--agents needs --agent TEMPLATE or --agents-file".into()),
            None => Ok(None),
        };
    }
    let agents = a.agents.unwrap_or(templates.len());
    if agents == 0 || agents > MAX_AGENTS {
        return Err(format!("--agents {agents}: from 1 to {MAX_AGENTS}"));
    }
    Ok(Some(Launch { templates, agents }))
}

/// Refuses a workload that runs in one process (`flag`: burst, whose
/// rounds start together in one process, and churn) over several agents,
/// before any starts; `c10k load` and `c10k run` both ask.
pub(super) fn in_one_process(flag: Option<&str>, launch: Option<&Launch>) -> Result<(), String> {
    match (flag, launch) {
        (Some(flag), Some(l)) if l.agents > 1 => Err(format!(
            "--agents {}: {flag} keeps its connections in one process, so it runs on one agent (--agents 1)",
            l.agents
        )),
        _ => Ok(()),
    }
}

/// More agents than this is a mistake, not a run.
const MAX_AGENTS: usize = crate::client::agent::MAX_AGENTS;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser as _;

    use super::*;
    use crate::cli::{Cli, Command};

    /// The plan the command line `args` (from `load` on) gives.
    fn from_args(args: &[String]) -> Result<LoadPlan, String> {
        let cli = Cli::try_parse_from(std::iter::once("c10k".to_string()).chain(args.to_vec()))
            .map_err(|e| crate::cli::one_line(&e))?;
        match cli.command {
            Command::Load(a) => plan(&a, String::new()),
            _ => Err("not a load command".into()),
        }
    }

    fn base() -> LoadPlan {
        let target = "127.0.0.1:7".parse().expect("an address");
        LoadPlan {
            threads: 2,
            ..LoadPlan::new(target, 4, Workload::Closed { depth: 1 })
        }
    }

    /// Every plan reads back from its arguments as itself.
    #[test]
    fn a_plan_reads_back_from_its_arguments() {
        let dir = std::env::temp_dir();
        let cpus = crate::sys::affinity::current_cpus();
        let plans = [
            base(),
            LoadPlan {
                target: "[::1]:9000".parse().expect("an address"),
                connections: 1000,
                idle: 50,
                threads: 7,
                workload: Workload::Open {
                    rate: 12_345.5,
                    depth: 4,
                },
                stop: Stop::Duration(Duration::from_micros(2_500_300)),
                warmup: Duration::from_millis(250),
                message_size: 1 << 20,
                connect_rate: Some(0.5),
                linger0: true,
                timeout: Duration::from_millis(1500),
                sources: vec!["127.0.0.2".parse().expect("ip"), "::1".parse().expect("ip")],
                cpus: Some(cpus[..1].to_vec()),
                json: Some(dir.join("r.json")),
                csv: Some(dir.join("r.csv")),
                hdr: Some(dir.join("r.hdr")),
                fail_on_error: true,
                quiet: true,
                server_pids: vec![std::process::id()],
                ..base()
            },
            LoadPlan {
                workload: Workload::Closed { depth: 16 },
                stop: Stop::Messages(1000),
                payload: Some(b"it's a 'payload' with spaces".to_vec()),
                message_size: 28,
                ..base()
            },
            LoadPlan {
                workload: Workload::Burst { rounds: 3 },
                stop: Stop::Duration(Duration::from_secs_f64(0.3)),
                ..base()
            },
            LoadPlan {
                connections: 0,
                threads: 1,
                workload: Workload::Churn { echo: true },
                ..base()
            },
            LoadPlan {
                workload: Workload::Churn { echo: false },
                ..base()
            },
        ];
        for p in plans {
            let p = p.validate().expect("a valid plan");
            let args = p.to_args();
            assert_eq!(from_args(&args).as_ref(), Ok(&p), "{args:?}");
        }
    }

    #[test]
    fn the_bounds_are_the_plans() {
        let refused = |p: LoadPlan| p.validate().expect_err("refused");
        assert_eq!(
            refused(LoadPlan {
                connections: 0,
                ..base()
            }),
            "--connections must be at least 1"
        );
        assert!(refused(LoadPlan {
            workload: Workload::Closed { depth: 0 },
            ..base()
        })
        .starts_with("--depth 0:"));
        assert!(refused(LoadPlan {
            threads: 2000,
            ..base()
        })
        .starts_with("--threads 2000:"));
        let few = LoadPlan {
            connections: 1,
            threads: 8,
            ..base()
        };
        assert_eq!(few.validate().map(|p| p.threads), Ok(1));
    }
}
