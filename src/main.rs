//! The c10k binary: parse flags, call the library, map errors to exit codes
//! (1 failure, 2 bad usage, 3 model not supported here).

use std::process::ExitCode;

use clap::Parser;

use c10k::cli::{Cli, Command};
use c10k::plan::ServePlan;
use c10k::server::{self, run::ServeError};

fn main() -> ExitCode {
    let cli = Cli::parse();
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
        Command::Load(_) => {
            eprintln!("c10k load: not built yet");
            ExitCode::from(1)
        }
        Command::Models => {

            for m in server::MODELS {
                println!("{:<14} {}", m.name(), m.about());
            }
            ExitCode::SUCCESS
        }
    }
}
