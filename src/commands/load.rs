//! `c10k load` and `c10k agent` (a load agent: its plan's arguments
//! parsed as `c10k load`'s).

use std::io::Write as _;

use super::Exit;
use crate::cli::{Cli, Command};

/// `c10k load`: run, print the summary, write every output asked for.
pub fn load(args: &crate::cli::LoadArgs) -> Exit {
    let command = crate::cli::command_line();
    let plan = match crate::plan::load::plan(args, command) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("c10k load: {e}");
            return Exit::Usage;
        }
    };
    let outcome = match crate::client::run::run(plan.clone()) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("c10k load: {e:#}");
            return Exit::Failed;
        }
    };
    print!("{}", outcome.report.summary());
    // Out before any output is written, which may be to /dev/stdout.
    let _ = std::io::stdout().flush();
    if let Err(e) = crate::client::run::write_outputs(&plan, &outcome) {
        eprintln!("c10k load: {e:#}");
        return Exit::Failed;
    }
    if outcome.report.interrupted {
        // A cut-short run is not a whole one: the same code as `c10k run`.
        eprintln!("c10k load: interrupted: the results cover only the part measured");
        return Exit::Interrupted;
    }
    if !outcome.lost.is_empty() && !args.allow_partial {
        eprintln!(
            "c10k load: {} of the agents were lost: the figures are the others' (--allow-partial accepts that)",
            outcome.lost.len()
        );
        return Exit::Failed;
    }
    // No result, whatever --fail-on-error says: the cause, first and in
    // one line, and a code a script can tell from errors (4).
    if let Some(cause) = outcome.report.no_result() {
        eprintln!("c10k load: {cause}");
        return Exit::NoResult;
    }
    let http_errors = outcome
        .report
        .http
        .as_ref()
        .map_or(0, |h| h.errors + h.cut_short);
    if plan.fail_on_error && outcome.report.failures() + http_errors > 0 {
        return Exit::Errors;
    }
    Exit::Done
}

/// `c10k agent`: a load agent, its plan's arguments parsed as `c10k load`'s.
pub fn agent() -> Exit {
    let parse = |args: &[String]| -> Result<crate::client::plan::LoadPlan, String> {
        let argv = std::iter::once("c10k".to_string()).chain(args.iter().cloned());
        match crate::cli::try_parse_from(argv).map_err(|e| crate::cli::one_line(&e))? {
            Cli {
                command: Command::Load(a),
            } => crate::plan::load::plan(&a, format!("c10k {}", args.join(" "))),
            _ => Err("the plan is not a `c10k load` command".into()),
        }
    };
    match crate::client::agent::serve(&parse) {
        Ok(()) => Exit::Done,
        Err(e) => {
            eprintln!("c10k agent: {e:#}");
            Exit::Failed
        }
    }
}
