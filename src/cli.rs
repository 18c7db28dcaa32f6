//! Raw command-line flags (clap). Nothing here is validated beyond its type;
//! [`crate::plan`] turns flags into settings.

use clap::{Args, Parser, Subcommand};

use crate::server::AcceptMode;

/// c10k: which concurrency model should a network server use? Measured.
#[derive(Debug, Parser)]
#[command(name = "c10k", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a TCP echo server (RFC 862) in one concurrency model.
    Serve(ServeArgs),
    /// List the concurrency models and how each waits.
    Models,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Concurrency model (see `c10k models`).
    #[arg(short, long, default_value = "epoll")]
    pub model: String,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Port to bind; 0 picks a free one (printed on the READY line).
    #[arg(short, long, default_value_t = 0)]
    pub port: u16,
    /// Echo buffer per connection, e.g. 16KiB, 4096, 1MiB.
    #[arg(long, default_value = "16KiB")]
    pub buffer: String,
    /// Close connections past this many open at once (counted as refused).
    #[arg(long)]
    pub max_conns: Option<u64>,
    /// Threads or processes for prefork, epoll-workers, uring, tokio and
    /// hybrid [default: CPUs available; prefork: 64].
    #[arg(short, long)]
    pub workers: Option<usize>,
    /// Stack size of each connection thread (threads), e.g. 64KiB
    /// [default: the platform's, as glibc threads get it from RLIMIT_STACK].

    #[arg(long)]
    pub stack_size: Option<String>,
    /// Edge-triggered epoll (epoll, epoll-workers).
    #[arg(long)]
    pub edge: bool,
    /// How epoll-workers shares the listener.
    #[arg(long, value_enum, default_value = "reuseport")]
    pub accept: AcceptMode,
    /// listen(2) backlog (the kernel caps it at net.core.somaxconn).
    #[arg(long, default_value_t = 4096)]
    pub backlog: i32,
    /// Set SO_REUSEPORT so several servers can share one port.
    #[arg(long)]
    pub reuseport: bool,
    /// Set the soft open-files limit before serving (to study EMFILE).
    #[arg(long)]
    pub nofile: Option<u64>,
    /// Pin the server to these CPUs, e.g. 0 or 0-1.
    #[arg(long)]
    pub cpus: Option<String>,
}
