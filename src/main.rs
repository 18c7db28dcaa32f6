//! The c10k binary: parse flags, call the library, map errors to exit codes
//! (1 failure, 2 bad usage, 3 model not supported here, 4 `load
//! --fail-on-error` saw errors).

use std::process::ExitCode;

use clap::Parser;

use c10k::cli::{Cli, Command};
use c10k::plan::ServePlan;
use c10k::server::{self, run::ServeError};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            // Bad input gets one line (clap's first), not a page.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("bad arguments");
            eprintln!("c10k: {} (see --help)", first.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Command::Serve(args) => {
            let plan = match ServePlan::from_args(&args) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("c10k serve: {e}");
                    return ExitCode::from(2);
                }
            };
            let mut out = std::io::stdout();
            match server::run::serve(plan.model, &plan.config, &plan.setup, &mut out) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e @ ServeError::Unsupported(_)) => {
                    eprintln!("c10k serve: {e}");
                    ExitCode::from(3)
                }
                Err(e) => {
                    eprintln!("c10k serve: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Load(args) => load(&args),
        Command::Models => {
            for m in server::MODELS {
                println!("{:<14} {}", m.name(), m.about());
            }
            ExitCode::SUCCESS
        }
    }
}

/// `c10k load`: run, print the summary, write every output asked for.
fn load(args: &c10k::cli::LoadArgs) -> ExitCode {
    if args.worker.is_some() {
        return match c10k::client::split::worker() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("c10k load worker: {e:#}");
                ExitCode::from(1)
            }
        };
    }
    let plan = match c10k::plan::LoadPlan::from_args(args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("c10k load: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = match c10k::client::run::run(plan.clone()) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("c10k load: {e:#}");
            return ExitCode::from(1);
        }
    };
    print!("{}", outcome.report.summary());
    if let Err(e) = c10k::client::run::write_outputs(&plan, &outcome) {
        eprintln!("c10k load: {e:#}");
        return ExitCode::from(1);
    }
    if plan.fail_on_error && outcome.report.failures() > 0 {
        return ExitCode::from(4);
    }
    ExitCode::SUCCESS
}
