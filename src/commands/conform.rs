//! `c10k conform`: the suite against any echo or HTTP/1.1 server, a row per check as
//! it is done.

use std::io::Write as _;

use super::Exit;

/// `c10k conform`: each check's row as it is done, the totals, the JSON;
/// exit 0 only when no check failed, 130 when SIGINT or SIGTERM cut it.
pub fn conform(args: &crate::cli::ConformArgs) -> Exit {
    use crate::conform::{checks, Report};
    if args.list {
        for c in checks(args.protocol) {
            println!("{:<28} {}", c.name, c.about);
        }
        return Exit::Done;
    }
    let plan = match crate::plan::conform::plan(args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("c10k conform: {e}");
            return Exit::Usage;
        }
    };
    // 1,100 connections at once: the client wants the hard limit.
    let _ = crate::sys::rlimit::raise_nofile();
    println!("{}", Report::title(&plan.suite.describe()));
    let report = plan.suite.run_all(&plan.checks, |row| {
        println!("{}", Report::line(row));
        let _ = std::io::stdout().flush();
    });
    println!("\n{}", report.totals());
    let _ = std::io::stdout().flush();
    if let Some(path) = &plan.json {
        if let Err(e) = crate::export::write_json(path, &report) {
            eprintln!("c10k conform: cannot write {}: {e}", path.display());
            return Exit::Failed;
        }
    }
    if report.interrupted {
        // The same code as an interrupted `c10k run` or `c10k load`.
        eprintln!(
            "c10k conform: interrupted: {} of {} checks done; the one in progress was cut and its server stopped",
            report.checks.len(),
            plan.checks.len()
        );
        return Exit::Interrupted;
    }
    if report.passed() {
        Exit::Done
    } else {
        Exit::Failed
    }
}
