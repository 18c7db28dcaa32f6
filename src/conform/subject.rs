//! What the conformance suite checks, and one running instance of it: a
//! c10k model started as `c10k serve`, a foreign server started through
//! the one launcher ([`crate::child::server::Launcher`]), or an address
//! some server already listens on. Each check says what it needs ([`Needs`]:
//! a c10k-only flag, the server's process, a low open-files limit) and
//! gets a fresh server, or a skip saying why it cannot have one.
//! Cost: one server start per check.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use super::watch::Watch;
use super::{ensure, wire, Stop, Suite};
use crate::child::foreign::{free_port, Foreign};
use crate::child::server::{Launcher, ServerChild, StartError, Terminated};
use crate::server::settings::Settings;
use crate::server::Summary;

/// What the suite checks.
#[derive(Debug, Clone)]
pub enum Subject {
    /// A c10k model: `c10k serve --model MODEL` with these settings.
    Model { model: String, settings: Settings },
    /// A server c10k starts from a command (`--server`, `--peer`).
    Command(Foreign),
    /// A server already listening: only the wire can be checked.
    Address(SocketAddr),
}

impl Subject {
    /// The subject in words, for the table's title.
    pub fn describe(&self) -> String {
        match self {
            Subject::Model { model, settings } if *settings == Settings::default() => {
                format!("c10k model {model}")
            }
            Subject::Model { model, settings } => {
                format!("c10k model {model} ({})", settings.text())
            }
            Subject::Command(f) => format!("{} ({})", f.name, f.command.join(" ")),
            Subject::Address(a) => format!("the server at {a}"),
        }
    }

    /// The c10k model, when the subject is one.
    pub(crate) fn model(&self) -> Option<&str> {
        match self {
            Subject::Model { model, .. } => Some(model),
            _ => None,
        }
    }
}

/// What a check needs of its server.
#[derive(Debug, Default, Clone)]
pub(crate) struct Needs {
    /// Settings a model gets, laid over the subject's own; other servers
    /// start without them.
    pub settings: Settings,
    /// The check tests a c10k-only flag, named here: other servers skip it.
    pub c10k_only: Option<&'static str>,
    /// The check reads the server's process, for this: a bare address
    /// skips it.
    pub process: Option<&'static str>,
    /// A soft open-files limit to start the server with.
    pub nofile: Option<u64>,
}

/// A server started (or found) for one check.
pub(crate) struct Under {
    pub addr: SocketAddr,
    child: Option<ServerChild>,
    model: Option<String>,
    patience: Duration,
}

/// The suite as one check sees it: its settings, and the watch that cuts
/// the check when its time is up ([`super::watch`]).
pub(crate) struct Checking {
    suite: Suite,
    watch: Arc<Watch>,
}

impl std::ops::Deref for Checking {
    type Target = Suite;
    fn deref(&self) -> &Suite {
        &self.suite
    }
}

impl Checking {
    pub(crate) fn new(suite: Suite, watch: Arc<Watch>) -> Checking {
        Checking { suite, watch }
    }

    /// A fresh server for one check, or why the check is skipped (the model
    /// cannot run here, the peer's toolchain is missing, or the subject
    /// lacks what the check needs). The check's time starts once it is
    /// ready.
    pub(crate) fn start(&self, needs: Needs) -> Result<Under, Stop> {
        let under = self.start_server(needs)?;
        self.watch.ready();
        Ok(under)
    }

    fn start_server(&self, needs: Needs) -> Result<Under, Stop> {
        let spawned = |pid: u32| self.watch.spawned(pid);
        let launcher = Launcher {
            program: self.program.clone(),
            patience: self.patience,
        };
        if let (Some(flag), None) = (needs.c10k_only, self.subject.model()) {
            return Err(Stop::Skip(format!(
                "it checks c10k serve's {flag}, which this server does not have"
            )));
        }
        let (child, model) = match &self.subject {
            Subject::Model { model, settings } => {
                // It speaks the suite's protocol.
                let settings = settings.over(&Settings {
                    protocol: (!self.protocol.is_echo()).then_some(self.protocol),
                    ..Settings::default()
                });
                let args = serve_args(model, &settings, &needs);
                let child = launcher
                    .start_telling(&args, &spawned)
                    .map_err(|e| match e {
                        StartError::Unsupported(why) => Stop::Skip(why),
                        StartError::Failed(why) => Stop::Fail(why),
                    })?;
                (child, Some(model.clone()))
            }
            Subject::Command(f) => {
                if let Some(why) = &f.unavailable {
                    return Err(Stop::Skip(why.clone()));
                }
                let port = free_port()?;
                let cpus = crate::sys::affinity::current_cpus();
                let argv = f.argv(port, &crate::sys::affinity::format_cpu_list(&cpus));
                let child = launcher
                    .start_foreign_telling(&argv, port, &[], needs.nofile, &spawned)
                    .map_err(|e| Stop::Fail(e.to_string()))?;
                (child, None)
            }
            Subject::Address(addr) => {
                if let Some(what) = needs.process {
                    return Err(Stop::Skip(format!(
                        "it reads the server's {what}: it runs only when c10k starts the server (--model, --server, --peer)"
                    )));
                }
                return Ok(Under {
                    addr: *addr,
                    child: None,
                    model: None,
                    patience: self.patience,
                });
            }
        };
        Ok(Under {
            addr: child.addr,
            child: Some(child),
            model,
            patience: self.patience,
        })
    }
}

/// `--model MODEL`, the subject's flags, then the check's (a check's flag
/// replaces the subject's flag of the same name), then `--nofile`.
fn serve_args(model: &str, own: &Settings, needs: &Needs) -> Vec<String> {
    let settings = own.over(&Settings {
        nofile: needs.nofile,
        ..needs.settings.clone()
    });
    let mut args = vec!["--model".to_string(), model.to_string()];
    args.extend(settings.args());
    args
}

impl Under {
    /// A blocking connection whose reads and writes fail after the suite's
    /// patience instead of hanging.
    pub fn connect(&self) -> Result<TcpStream, Stop> {
        wire::connect(self.addr, self.patience)
            .map_err(|e| Stop::Fail(format!("connect to {}: {e}", self.addr)))
    }

    /// `n` connections, or why the k-th failed.
    pub fn connect_many(&self, n: usize) -> Result<Vec<TcpStream>, Stop> {
        (0..n)
            .map(|k| {
                self.connect().map_err(|e| match e {
                    Stop::Fail(m) => Stop::Fail(format!("connection {k} of {n}: {m}")),
                    s => s,
                })
            })
            .collect()
    }

    /// `n` connections, each of which has been answered once in the
    /// suite's protocol (so the server holds every one of them).
    pub fn connect_served(&self, suite: &Suite, n: usize) -> Result<Vec<TcpStream>, Stop> {
        let streams = self.connect_many(n)?;
        for (i, mut s) in streams.iter().enumerate() {
            s.write_all(&wire::ask(suite, i))?;
            wire::answer(suite, s, i).map_err(|e| format!("connection {i}: {e}"))?;
        }
        Ok(streams)
    }

    pub fn patience(&self) -> Duration {
        self.patience
    }

    /// The c10k model serving, if it is one.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The server's pid (only when c10k started it).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(ServerChild::pid)
    }

    fn roots(&self) -> Vec<u32> {
        self.pid().into_iter().collect()
    }

    /// Resident memory of the server's whole process tree, in KiB.
    pub fn rss_kib(&self) -> u64 {
        crate::metrics::tree::sample(&self.roots()).rss_kib
    }

    /// CPU time of the server's whole tree, reaped children included.
    pub fn cpu(&self) -> Duration {
        crate::metrics::cpu::tree(&self.roots())
            .map_or(Duration::ZERO, |t| Duration::from_secs_f64(t.seconds))
    }

    /// Stops the server. A c10k model must exit 0 with a summary that
    /// names it, which is returned; any server that died before it was
    /// stopped fails the check with how it ended.
    pub fn stop(self) -> Result<Option<Summary>, Stop> {
        let Some(child) = self.child else {
            return Ok(None);
        };
        if !child.running() {
            let how = child.stop().trouble().unwrap_or_else(|| "exited".into());
            return Err(Stop::Fail(format!("during the check, {how}")));
        }
        let stopped = child.stop();
        let Some(model) = self.model else {
            return Ok(None);
        };
        let (status, summary) = stopped.checked()?;
        ensure(status.success(), || {
            format!("the server exited with {status}")
        })?;
        ensure(summary.model == model, || {
            format!("the summary names {}, not {model}", summary.model)
        })?;
        Ok(Some(summary))
    }

    /// Adds what the server says when stopped (its summary, or how it
    /// ended) to a failure, so a failed check shows the server's side too.
    pub fn diagnose(self, failure: Stop) -> Stop {
        let Stop::Fail(msg) = failure else {
            return failure;
        };
        let Some(child) = self.child else {
            return Stop::Fail(msg);
        };
        let stopped = child.stop();
        let told = match (&stopped.summary, stopped.trouble()) {
            (Some(s), _) => format!("; the server's summary: {s}"),
            (None, Some(t)) => format!("; {t}"),
            (None, None) => String::new(),
        };
        Stop::Fail(format!("{msg}{told}"))
    }

    /// Sends SIGTERM to the server's own process (not its group: as `kill
    /// PID` or a container stop would) and waits up to `grace` for it to
    /// exit; the processes of its tree seen just before that still run are
    /// named (and killed), then the server is stopped.
    pub fn terminate(mut self, grace: Duration) -> Result<Terminated, Stop> {
        let child = self
            .child
            .take()
            .ok_or("no process to signal (a bare address)")?;
        Ok(child.terminate(grace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_setting_replaces_the_subject_one() {
        let needs = Needs {
            settings: Settings {
                workers: Some(8),
                ..Settings::default()
            },
            nofile: Some(64),
            ..Needs::default()
        };
        let own = Settings {
            workers: Some(2),
            edge: true,
            ..Settings::default()
        };
        let want = Settings {
            workers: Some(8),
            edge: true,
            nofile: Some(64),
            ..Settings::default()
        };
        let mut args = vec!["--model".to_string(), "prefork".to_string()];
        args.extend(want.args());
        assert_eq!(serve_args("prefork", &own, &needs), args);
    }
}
