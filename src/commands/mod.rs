//! The commands' drivers: each subcommand from its flags to its outputs
//! and its [`Exit`], with its one-line errors on stderr, so that `main.rs`
//! only parses, dispatches and turns an [`Exit`] into the process's code.
//! At the top of the crate, beside `cli.rs`: a driver sees the flags,
//! turns them into a plan ([`crate::plan`]), runs the engine and writes
//! what it measured ([`crate::output`], [`crate::report`]). Costs nothing
//! of its own.

pub mod bench;
pub mod compare;
pub mod conform;
pub mod load;
pub mod man;
pub mod run;

/// How a command ended, as the process's exit code says it (`--help`
/// lists them: [`crate::cli`]). A caller branches on this, never on text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Done.
    Done = 0,
    /// A failure, its cause on stderr (or `compare`'s gate failed).
    Failed = 1,
    /// Bad flags, or a request that cannot be done as given.
    Usage = 2,
    /// The kernel or a sandbox refuses the model (`serve`).
    Unsupported = 3,
    /// `load --fail-on-error` saw errors.
    Errors = 4,
    /// No result: every connection failed or got no echo (`load`), no
    /// cell measured (`run`), none on both sides (`compare`).
    NoResult = 5,
    /// Cut by SIGINT or SIGTERM (`load`, `run`, `conform`, the
    /// micro-benchmarks); what was measured is written.
    Interrupted = 130,
}

impl Exit {
    /// The process's exit code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// `c10k serve`: the model's server until SIGTERM or SIGINT.
pub fn serve(args: &crate::cli::ServeArgs) -> Exit {
    use crate::server::run::ServeError;
    let plan = match crate::plan::ServePlan::from_args(args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("c10k serve: {e}");
            return Exit::Usage;
        }
    };
    let mut out = std::io::stdout();
    match crate::server::run::serve(plan.model, &plan.config, &plan.setup, &mut out) {
        Ok(_) => Exit::Done,
        Err(e @ ServeError::Unsupported(_)) => {
            eprintln!("c10k serve: {e}");
            Exit::Unsupported
        }
        Err(e) => {
            eprintln!("c10k serve: {e:#}");
            Exit::Failed
        }
    }
}

/// `c10k models`: each model and how it waits, or with `--knobs` each
/// model's knobs and their ranges.
pub fn models(args: &crate::cli::ModelsArgs) -> Exit {
    if args.knobs {
        print!("{}", crate::server::knobs::table().to_text());
    } else {
        for m in crate::server::MODELS {
            println!("{:<14} {}", m.name(), m.about());
        }
    }
    Exit::Done
}
