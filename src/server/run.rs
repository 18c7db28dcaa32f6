//! `c10k serve`: set the process up, bind, print READY, run the model until
//! SIGTERM or SIGINT, print the JSON summary.
//!
//! The READY line is the contract with whoever started us (the runner, the
//! tests, a person): it appears once the model serves connections with
//! everything it was asked for (every worker thread, ring, pool process or
//! runtime: the model says so itself, `ctx.ready()`, once its setup is
//! done) and carries the bound address, so nobody has to sleep and hope. A
//! setup that fails prints no READY: its error is the one line on stderr.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Mutex, Once};

use socket2::{Domain, Socket, Type};

use super::{Config, Context, Model, Stats, Summary, Unsupported};
use crate::sys;

/// Process-wide settings applied before the server starts.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Soft open-files limit to set (to study EMFILE).
    pub nofile: Option<u64>,
    /// RLIMIT_SIGPENDING to set (to study sigio's queue overflow).
    pub sigpending: Option<u64>,
    /// CPUs to pin the server (and its threads and children) to.
    pub cpus: Option<Vec<usize>>,
}

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    #[error("{0}")]
    Setup(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// Runs `model` with `config`, writing READY and the summary to `out`.
pub fn serve(
    model: &dyn Model,
    config: &Config,
    setup: &Setup,
    out: &mut (dyn Write + Send),
) -> Result<Summary, ServeError> {
    if let Some(n) = setup.nofile {
        sys::rlimit::set_nofile_soft(n)
            .map_err(|e| ServeError::Setup(format!("cannot set the open-files limit: {e}")))?;
    }
    if let Some(n) = setup.sigpending {
        sys::rlimit::set_sigpending_soft(n)
            .map_err(|e| ServeError::Setup(format!("cannot set the signal queue limit: {e}")))?;
    }
    if let Some(cpus) = &setup.cpus {
        sys::affinity::pin_current(cpus)
            .map_err(|e| ServeError::Setup(format!("cannot pin to CPUs {cpus:?}: {e}")))?;
    }
    model.probe(config).map_err(|reason| Unsupported {
        model: model.name(),
        reason,
    })?;
    let reuseport = config.reuseport || model.needs_reuseport(config);
    let listener =
        listen(config.bind, config.backlog, reuseport).map_err(|source| ServeError::Bind {
            addr: config.bind,
            source,
        })?;
    let addr = listener.local_addr().map_err(anyhow::Error::from)?;
    let stats: &'static Stats = sys::shared::shared().map_err(anyhow::Error::from)?;
    if let Some(kind) = config.shared_state {
        stats.state.enable(kind).map_err(|e| {
            ServeError::Setup(format!(
                "cannot make the shared state's {} lock: {e}",
                kind.name()
            ))
        })?;
    }
    let shutdown = sys::signals::Shutdown::install(model.forks()).map_err(anyhow::Error::from)?;
    let out = Mutex::new(out);
    let say = |line: &str| -> io::Result<()> {
        let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
        writeln!(out, "{line}")?;
        out.flush()
    };
    let announced = Once::new();
    // A reader that went away is no reason to stop serving.
    let ready = || announced.call_once(|| drop(say(&format!("READY {addr}"))));
    let config = Config {
        bind: addr,
        ..config.clone()
    };
    let ctx = Context {
        config: &config,
        stats,
        shutdown: &shutdown,
        ready: &ready,
    };
    model.serve(listener, &ctx)?;
    let mut summary = stats.summary(model.name());
    if !config.work.is_none() {
        summary.work = Some(super::stats::WorkSummary {
            spec: config.work.to_string(),
            request_bytes: config.work.request,
            capacity: super::work::Capacity::of(model, &config, sys::affinity::cpus_available()),
        });
    }
    let line = serde_json::to_string(&summary).map_err(anyhow::Error::from)?;
    say(&line).map_err(anyhow::Error::from)?;
    Ok(summary)
}

/// A non-blocking listener on `addr` with SO_REUSEADDR (and SO_REUSEPORT
/// when asked). Models that want a listener per worker call this again with
/// the bound address.
pub(crate) fn listen(addr: SocketAddr, backlog: i32, reuseport: bool) -> io::Result<TcpListener> {
    let socket = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking().cloexec(),
        None,
    )?;
    socket.set_reuse_address(true)?;
    if reuseport {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    Ok(socket.into())
}
