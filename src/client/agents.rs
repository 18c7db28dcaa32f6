//! Spreading a load run over agents: local worker processes when one
//! process cannot hold every socket (the open-files hard limit is per
//! process), or programs on other hosts started through a launcher
//! (`--agent 'ssh -T host{i} -- {cmd_sh}'`, [`super::launch`]). Either way
//! this is the one path: each agent is started from its template, speaks
//! the protocol of [`super::protocol`] on its stdin and stdout, runs its
//! share of the connections (ids interleaved over agents and their
//! threads, so the shares sum to the total and every connection's bytes
//! stay unique), and its [`Measured`] is merged as a process merges its
//! event loops' (histograms added, never percentiles averaged).
//!
//! Phases are kept in step: every agent reports `connected`; each one's
//! round trip is measured; `go` tells each to start after a delay that
//! makes them start together on their own clocks; the start skew is
//! measured from their `started`. An agent that fails before `go` aborts
//! the run: every launcher is killed and reaped, so every agent's
//! connections close. Cost: a reader thread per agent, a few lines each.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::launch::Template;
use super::measured::Measured;
use super::plan::{LoadPlan, Workload};
use super::preflight;
use super::protocol::{Hello, Msg, Plan};
use crate::sys;

/// How long an agent may take to say hello (a launcher that logs in
/// somewhere may be slow), and to answer a ping.
pub const HELLO_WITHIN: Duration = Duration::from_secs(60);

/// An agent silent this long after `go` is lost (it says `progress`
/// every second).
pub const SILENCE: Duration = Duration::from_secs(3);

/// Pings per agent; the fastest round trip counts.
const PINGS: u32 = 3;

/// How the agents of a run are started: a template each (the last one
/// repeated when there are more agents than templates).
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub templates: Vec<Template>,
    pub agents: usize,
}

/// What the agents gave: the merged measurement, the agents lost, and
/// each agent's own figures with their start skew.
#[derive(Debug)]
pub(crate) struct Merged {
    pub measured: Measured,
    /// Agents lost after `go`: the figures are the others'.
    pub lost: Vec<Lost>,
    /// Each agent's own figures, for the report.
    pub report: super::report::Agents,
}

/// An agent lost mid-run, and the share of the run that went with it.
#[derive(Debug, Clone)]
pub(crate) struct Lost {
    pub agent: usize,
    pub launched: String,
    pub connections: usize,
    pub why: String,
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "agent {} ({}) was lost after it started: {}; its {} connections are missing from these figures",
            self.agent, self.launched, self.why, self.connections
        )
    }
}

/// The event-loop threads each of `agents` runs: the run's threads
/// shared out, at least one each.
pub(crate) fn threads_each(threads: usize, agents: usize) -> usize {
    (threads / agents.max(1)).max(1)
}

/// What an agent said on its standard output.
enum Said {
    Msg(Msg),
    /// A tagged line that is not a message of this protocol.
    Bad(String),
    Gone,
}

/// The running agents: their processes, stdins and one channel of what
/// they say.
struct Agents {
    children: Vec<Child>,
    inputs: Vec<ChildStdin>,
    said: Receiver<(usize, Said)>,
    launched: Vec<String>,
    /// Which agents have given their result (and may close their output).
    reported: Vec<bool>,
}

/// Runs `plan` over the agents `launch` starts and merges their
/// measurements. `connected` is called once every agent has its
/// connections up, before any is told to go: the moment to look at a
/// server holding every connection.
pub(crate) fn run(
    plan: &LoadPlan,
    launch: &Launch,
    connected: &mut dyn FnMut(),
) -> anyhow::Result<Merged> {
    let n = launch.agents.max(1);
    if n > 1
        && matches!(
            plan.workload,
            Workload::Burst { .. } | Workload::Churn { .. }
        )
    {
        anyhow::bail!(
            "--burst and --churn keep their connections in one process, which holds at most {} here; use fewer connections",
            sys::rlimit::nofile().hard.unwrap_or(0).saturating_sub(preflight::HEADROOM)
        );
    }
    let mut agents = start(launch, n)?;
    let result = converse(&mut agents, plan, n, connected);
    // After a failure every agent is killed, a lost one too; closing
    // their stdin then tells any still running to close its connections
    // and exit.
    let lost: Vec<usize> = match &result {
        Ok(m) => m.lost.iter().map(|l| l.agent).collect(),
        Err(_) => (0..agents.children.len()).collect(),
    };
    for &k in &lost {
        agents.kill(k);
    }
    agents.inputs.clear();
    for (k, c) in agents.children.iter_mut().enumerate() {
        let status = c.wait().with_context(|| format!("waiting for agent {k}"))?;
        if result.is_ok() && !lost.contains(&k) && !status.success() {
            anyhow::bail!("agent {k} ({}) failed ({status})", agents.launched[k]);
        }
    }
    result
}

/// Starts `n` agents, each from its template, with a reader thread on its
/// stdout.
fn start(launch: &Launch, n: usize) -> anyhow::Result<Agents> {
    let exe = std::env::current_exe().context("finding this program to start agents")?;
    let cmd = vec![exe.display().to_string(), "agent".to_string()];
    let (tx, said) = mpsc::channel();
    let mut agents = Agents {
        children: Vec::with_capacity(n),
        inputs: Vec::with_capacity(n),
        said,
        launched: Vec::with_capacity(n),
        reported: vec![false; n],
    };
    for k in 0..n {
        let template = launch
            .templates
            .get(k)
            .or(launch.templates.last())
            .context("no launcher template")?;
        let argv = template.argv(&cmd, k, n);
        let (program, args) = argv.split_first().context("an empty launcher command")?;
        // Its own process group: what the launcher starts (a shell, the
        // agent under it) is stopped with it.
        let started = Command::new(program)
            .args(args)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let mut child = match started {
            Ok(c) => c,
            Err(e) => {
                for j in 0..agents.children.len() {
                    agents.kill(j);
                    let _ = agents.children[j].wait();
                }
                anyhow::bail!("cannot start agent {k} with {:?}: {e}", argv.join(" "));
            }
        };
        let input = child.stdin.take().context("no stdin to the agent")?;
        let output = child.stdout.take().context("no stdout from the agent")?;
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines() {
                let Ok(line) = line else { break };
                let said = match Msg::parse(&line) {
                    None => continue,
                    Some(Ok(m)) => Said::Msg(m),
                    Some(Err(e)) => Said::Bad(e),
                };
                if tx.send((k, said)).is_err() {
                    return;
                }
            }
            let _ = tx.send((k, Said::Gone));
        });
        agents.children.push(child);
        agents.inputs.push(input);
        agents.launched.push(argv.join(" "));
    }
    Ok(agents)
}

impl Agents {
    /// Kills agent `k`'s launcher and everything in its process group.
    fn kill(&mut self, k: usize) {
        if let Some(c) = self.children.get_mut(k) {
            let _ = sys::process::kill(-(c.id() as i32), libc::SIGKILL);
            let _ = c.kill();
        }
    }

    /// Sends `msg` to agent `k`.
    fn tell(&mut self, k: usize, msg: &Msg) -> anyhow::Result<()> {
        writeln!(self.inputs[k], "{}", msg.line())
            .and_then(|()| self.inputs[k].flush())
            .with_context(|| format!("agent {k} ({}) stopped listening", self.launched[k]))
    }

    /// The next message from any agent, waiting at most `within`.
    fn next(&self, within: Option<Duration>) -> anyhow::Result<(usize, Msg)> {
        loop {
            match self.heard(within)? {
                // An agent that has reported closes its output: normal.
                (k, Said::Gone) if self.reported[k] => continue,
                got => return self.read(got),
            }
        }
    }

    /// What any agent said next, waiting at most `within`.
    fn heard(&self, within: Option<Duration>) -> anyhow::Result<(usize, Said)> {
        Ok(match within {
            Some(t) => self.said.recv_timeout(t).map_err(|e| match e {
                RecvTimeoutError::Timeout => {
                    anyhow::anyhow!("no agent said anything within {} s", t.as_secs())
                }
                RecvTimeoutError::Disconnected => anyhow::anyhow!("every agent went away"),
            })?,
            None => self.said.recv().context("every agent went away")?,
        })
    }

    /// A message, or the error an agent's words or silence mean.
    fn read(&self, got: (usize, Said)) -> anyhow::Result<(usize, Msg)> {
        match got {
            (k, Said::Msg(Msg::Error { message })) => {
                anyhow::bail!("agent {k} ({}): {message}", self.launched[k])
            }
            (k, Said::Msg(m)) => Ok((k, m)),
            (k, Said::Bad(e)) => anyhow::bail!("agent {k} ({}): {e}", self.launched[k]),
            (k, Said::Gone) => anyhow::bail!(
                "agent {k} ({}) ended before it reported its results",
                self.launched[k]
            ),
        }
    }
}

/// The controller's side of the protocol.
fn converse(
    agents: &mut Agents,
    plan: &LoadPlan,
    n: usize,
    on_connected: &mut dyn FnMut(),
) -> anyhow::Result<Merged> {
    // 1. Every agent's hello: its protocol, and room for its share.
    let mut hellos: Vec<Option<Hello>> = (0..n).map(|_| None).collect();
    let total = plan.connections + plan.idle;
    while hellos.iter().any(Option::is_none) {
        match agents.next(Some(HELLO_WITHIN))? {
            (k, Msg::Hello(h)) => {
                h.check()
                    .map_err(|e| anyhow::anyhow!("agent {k} ({}): {e}", agents.launched[k]))?;
                let share = super::agent::share_of(total, k, n) as u64;
                // One port per connection from each source address to the
                // one target.
                let (lo, hi) = h.environment.ephemeral_ports;
                let ports = (u64::from(hi) + 1).saturating_sub(u64::from(lo));
                let ports = ports * plan.sources.len().max(1) as u64;
                if lo > 0 && share > ports {
                    anyhow::bail!(
                        "agent {k} ({}) has {ports} ports to reach {} (its port range {lo}-{hi}, {} source address(es)); its share is {share} connections: use more agents, --source, or widen net.ipv4.ip_local_port_range there",
                        agents.launched[k],
                        plan.target,
                        plan.sources.len().max(1)
                    );
                }
                if let Some(hard) = h.environment.nofile_hard {
                    let room = hard.saturating_sub(preflight::HEADROOM);
                    if share > room {
                        anyhow::bail!(
                            "agent {k} ({}) can open {hard} files (its hard limit), {room} of them for connections; its share is {share}: use more agents or raise its limit",
                            agents.launched[k]
                        );
                    }
                }
                hellos[k] = Some(*h);
            }
            (k, m) => anyhow::bail!("agent {k} said {m:?} before hello"),
        }
    }
    // 2. Each agent's share, as `c10k load` arguments.
    let share = LoadPlan {
        threads: threads_each(plan.threads, n),
        quiet: true,
        json: None,
        csv: None,
        hdr: None,
        ..plan.clone()
    };
    for k in 0..n {
        let msg = Msg::Plan(Plan {
            args: share.to_args(),
            agent: k,
            agents: n,
        });
        agents.tell(k, &msg)?;
    }
    // 3. Every agent connected.
    let mut connected = vec![false; n];
    while connected.iter().any(|c| !c) {
        match agents.next(None)? {
            (k, Msg::Connected { .. }) => connected[k] = true,
            (k, m) => anyhow::bail!("agent {k} said {m:?} instead of connected"),
        }
    }
    on_connected();
    // 4. Each agent's round trip: the fastest of a few pings.
    let mut rtt = Vec::with_capacity(n);
    for k in 0..n {
        let mut fastest = Duration::MAX;
        for p in 0..PINGS {
            let sent = Instant::now();
            agents.tell(k, &Msg::Ping { n: p })?;
            match agents.next(Some(HELLO_WITHIN))? {
                (j, Msg::Pong { n: q }) if j == k && q == p => {
                    fastest = fastest.min(sent.elapsed());
                }
                (j, m) => anyhow::bail!("agent {j} said {m:?} instead of pong"),
            }
        }
        rtt.push(fastest);
    }
    // 5. GO: every agent starts at the same moment, `lead` from now, each
    // counting its delay on its own clock from when GO reaches it.
    let slowest = rtt.iter().max().copied().unwrap_or_default();
    let lead = slowest / 2 + Duration::from_millis(5);
    let t0 = Instant::now();
    for (k, r) in rtt.iter().enumerate() {
        let at = t0.elapsed() + *r / 2;
        let delay = lead.saturating_sub(at);
        agents.tell(
            k,
            &Msg::Go {
                delay_seconds: delay.as_secs_f64(),
            },
        )?;
    }
    // 6. Their starts, then their results. From here an agent that ends,
    // errs or falls silent is lost, and the others go on.
    let mut starts: Vec<Option<f64>> = vec![None; n];
    let mut results: Vec<Option<Measured>> = (0..n).map(|_| None).collect();
    let mut lost: Vec<Lost> = Vec::new();
    let mut last_heard = vec![Instant::now(); n];
    let settled = |results: &[Option<Measured>], lost: &[Lost]| {
        (0..n).all(|k| results[k].is_some() || lost.iter().any(|l| l.agent == k))
    };
    while !settled(&results, &lost) {
        let heard = match agents.said.recv_timeout(Duration::from_millis(250)) {
            Ok(h) => Some(h),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => anyhow::bail!("every agent went away"),
        };
        // Who is lost by what was heard, and why.
        let mut losing: Vec<(usize, String)> = Vec::new();
        match heard {
            Some((k, Said::Msg(m))) => {
                last_heard[k] = Instant::now();
                match m {
                    Msg::Started => {
                        let heard = t0.elapsed().saturating_sub(rtt[k] / 2);
                        starts[k] = Some(heard.as_secs_f64());
                    }
                    Msg::Progress { .. } => {}
                    Msg::Result(m) => {
                        results[k] = Some(*m);
                        agents.reported[k] = true;
                    }
                    Msg::Error { message } => losing.push((k, message)),
                    m => losing.push((k, format!("it said {m:?} instead of its results"))),
                }
            }
            Some((k, Said::Bad(e))) => losing.push((k, e)),
            Some((k, Said::Gone)) => losing.push((
                k,
                "its output closed (it ended, or its launcher did)".into(),
            )),
            None => {}
        }
        for (k, heard) in last_heard.iter().enumerate() {
            if heard.elapsed() > SILENCE {
                losing.push((k, format!("no progress for {} s", SILENCE.as_secs())));
            }
        }
        for (k, why) in losing {
            if results[k].is_none() && !lost.iter().any(|l| l.agent == k) {
                lost.push(Lost {
                    agent: k,
                    launched: agents.launched[k].clone(),
                    connections: super::agent::share_of(total, k, n),
                    why,
                });
            }
        }
    }
    if lost.len() == n {
        let first = lost.first().map(ToString::to_string).unwrap_or_default();
        anyhow::bail!("every agent was lost: {first}");
    }
    let known: Vec<f64> = starts.iter().flatten().copied().collect();
    let start_skew_seconds = match (
        known.iter().copied().reduce(f64::min),
        known.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) => hi - lo,
        _ => 0.0,
    };
    let each = (0..n)
        .map(|k| {
            figures(
                k,
                &agents.launched[k],
                hellos[k].as_ref(),
                rtt[k],
                results[k].as_ref(),
                &lost,
            )
        })
        .collect();
    let report = super::report::Agents {
        start_skew_us: start_skew_seconds * 1e6,
        each,
    };
    // The client's memory is its agents' (added by the merge): this
    // coordinating process is not the load generator, and in `c10k run` it
    // is the runner, whose memory is not the client's.
    let mut measured = Measured::empty();
    for m in results.into_iter().flatten() {
        measured.merge(m);
    }
    Ok(Merged {
        measured,
        lost,
        report,
    })
}

/// Agent `k`'s own figures: what it measured, or why it was lost.
fn figures(
    k: usize,
    launched: &str,
    hello: Option<&Hello>,
    rtt: Duration,
    measured: Option<&Measured>,
    lost: &[Lost],
) -> super::report::Agent {
    let latency = measured.map(|m| super::report::Percentiles::of(&m.latency));
    super::report::Agent {
        agent: k,
        launched: launched.to_string(),
        hostname: hello.map_or_else(String::new, |h| h.environment.hostname.clone()),
        round_trip_us: rtt.as_secs_f64() * 1e6,
        connections: measured.map_or(0, |m| m.records.established()),
        messages: latency.as_ref().map_or(0, |l| l.count),
        p99_us: latency.filter(|l| l.count > 0).map(|l| l.p99),
        cpu_seconds: measured.map_or(0.0, |m| m.cpu_user + m.cpu_system),
        errors: measured.map_or(0, |m| m.records.errors().values().sum()),
        lost: lost.iter().find(|l| l.agent == k).map(|l| l.why.clone()),
    }
}
