//! The c10k binary: parse the flags, hand the command to its driver in
//! [`c10k::commands`], and turn how it ended ([`Exit`]) into the exit code
//! (1 failure, 2 bad usage, 3 model not supported here, 4 `load
//! --fail-on-error` saw errors, 5 no result: `load` whose every connection
//! failed or got no echo, `run` with no cell measured; 130 `load` or `run`
//! interrupted).

#![forbid(unsafe_code)]

use std::process::ExitCode;

use c10k::cli::Command;
use c10k::commands::{self, Exit};

fn main() -> ExitCode {
    let cli = match c10k::cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            // Bad input gets one line, not a page.
            eprintln!("c10k: {} (see --help)", c10k::cli::one_line(&e));
            return ExitCode::from(Exit::Usage.code());
        }
    };
    let exit = match cli.command {
        Command::Serve(args) => commands::serve(&args),
        Command::Models(args) => commands::models(&args),
        Command::Load(args) => commands::load::load(&args),
        Command::Agent => commands::load::agent(),
        Command::Run(args) => commands::run::run(&args),
        Command::Report(args) => commands::run::report(&args.dir),
        Command::Compare(args) => commands::compare::compare(&args),
        Command::Micro(cmd) => commands::bench::micro(&cmd),
        Command::Herd(args) => commands::bench::herd(&args),
        Command::Conform(args) => commands::conform::conform(&args),
        Command::Completions(args) => commands::man::completions(args.shell),
        Command::Man => commands::man::man(),
    };
    ExitCode::from(exit.code())
}
