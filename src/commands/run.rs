//! `c10k run` and `c10k report`: a plan made (or resumed, or a
//! baseline's again), checked against this machine, run, written out, and
//! with `--baseline DIR` compared with DIR at the end (the gate). The
//! comparison itself is [`crate::compare`].

use std::io::Write as _;

use super::Exit;

/// `c10k run`: a preset or custom matrix, or `--resume DIR`.
pub fn run(args: &crate::cli::RunArgs) -> Exit {
    use crate::runner::{self, Finish};
    if args.list {
        for p in crate::experiments::presets::all() {
            println!("{:<15} {}", p.name, p.title);
        }
        return Exit::Done;
    }
    let command = crate::cli::command_line();
    // The baseline is read before anything runs: a long run is never
    // started against one that cannot be compared.
    let baseline = match &args.baseline {
        Some(dir) => match crate::compare::input::open(dir, crate::plan::check::check) {
            Ok(side) if side.kind == crate::compare::input::Kind::Run => Some(side),
            Ok(_) => {
                eprintln!(
                    "c10k run: --baseline {}: not a results directory of c10k run",
                    dir.display()
                );
                return Exit::Usage;
            }
            Err(e) => {
                eprintln!("c10k run: --baseline: {e}");
                return Exit::Usage;
            }
        },
        None => None,
    };
    // Taken before anything is read or run, the appender holds the
    // directory's lock until this function returns: a second run on the
    // same directory is refused (exit 2: nothing ran, as for any request
    // that cannot be done as given).
    let (mut data, mut appender) = match &args.resume {
        Some(dir) => match runner::resume(dir, crate::plan::check::check) {
            Ok(r) => {
                if let Some(repair) = r.repaired {
                    eprintln!("c10k run: {repair}");
                }
                for w in &r.warnings {
                    eprintln!("c10k run: {w}");
                }
                eprintln!(
                    "c10k run: resuming {}: {} of {} cells recorded",
                    dir.display(),
                    r.data.cells.len(),
                    r.data.plan.cells.len()
                );
                // A resumed plan is checked against this machine as a
                // fresh one is: it may have been edited, or moved here.
                if !preflight(&r.data.plan) {
                    return Exit::Usage;
                }
                if let Err(e) = fits_baseline(args, &r.data.plan, baseline.as_ref()) {
                    eprintln!("c10k run: {e}");
                    return Exit::Usage;
                }
                (r.data, r.appender)
            }
            Err(e) => {
                eprintln!("c10k run: {e:#}");
                return Exit::Usage;
            }
        },
        None => {
            let planned = match &baseline {
                Some(b) => crate::plan::run::from_baseline(&b.data.plan, args, command.clone())
                    .and_then(|p| p.map_or_else(|| crate::plan::run::plan(args, command), Ok)),
                None => crate::plan::run::plan(args, command),
            };
            let plan = match planned {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("c10k run: {e}");
                    return Exit::Usage;
                }
            };
            if !preflight(&plan) {
                return Exit::Usage;
            }
            if let Err(e) = fits_baseline(args, &plan, baseline.as_ref()) {
                eprintln!("c10k run: {e}");
                return Exit::Usage;
            }
            match runner::create(plan, &args.out) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("c10k run: {e:#}");
                    let in_use = e.downcast_ref::<crate::results::lock::InUse>().is_some();
                    return if in_use { Exit::Usage } else { Exit::Failed };
                }
            }
        }
    };
    eprint!("{}", runner::intro(&data));
    let finish = runner::execute(&mut data, &mut appender);
    // Whatever happened, what was measured is written out.
    let written = crate::output::write_all(&data, &crate::report::sections(&data), !args.no_report);
    // Written with errors ignored: `c10k run | head` must not turn a
    // finished run into a panic.
    let mut stdout = std::io::stdout();
    let _ = write!(stdout, "{}", crate::report::outro(&data));
    let mut code = Exit::Done;
    match finish {
        Ok(Finish::Complete) => {
            if let Some(cause) = data.no_result() {
                eprintln!(
                    "c10k run: {cause} (the reports are in {})",
                    data.dir.display()
                );
                code = Exit::NoResult;
            }
        }
        Ok(Finish::Interrupted { left, abandoned }) => {
            let during = abandoned.map_or_else(String::new, |id| {
                format!(" during {id} (abandoned, not recorded)")
            });
            eprintln!(
                "c10k run: interrupted{during} with {left} cells left; finish with: c10k run --resume {}",
                data.dir.display()
            );
            code = Exit::Interrupted;
        }
        Err(e) => {
            eprintln!(
                "c10k run: {e:#} (finish with: c10k run --resume {})",
                data.dir.display()
            );
            code = Exit::Failed;
        }
    }
    match written {
        Ok(paths) => {
            for p in paths {
                let _ = writeln!(stdout, "wrote {}", p.display());
            }
        }
        Err(e) => {
            eprintln!("c10k run: {e:#}");
            code = Exit::Failed;
        }
    }
    // Last, where the eye lands: the answer the report's page opens on.
    let _ = write!(stdout, "{}", crate::report::glance(&data));
    if let Some(base) = baseline {
        let gate = against_baseline(args, &data, &base);
        if code == Exit::Done {
            code = gate;
        }
    }
    code
}

/// `c10k run --baseline DIR`, before any cell: everything the comparison
/// at the end will need, asked of the plan about to run (the gate's
/// settings, and the two sides comparable: one loop, the reference model on
/// both, a cell in common), so a long run never ends in a refusal.
fn fits_baseline(
    args: &crate::cli::RunArgs,
    plan: &crate::results::matrix::RunPlan,
    base: Option<&crate::compare::input::Side>,
) -> Result<(), String> {
    let Some(base) = base else {
        return Ok(());
    };
    let settings =
        crate::plan::compare::settings(&args.gate, plan.margin, crate::cli::command_line())?;
    let planned = crate::compare::input::Side::of_run(
        "this run".into(),
        crate::results::dir::RunData {
            dir: args.out.clone(),
            plan: plan.clone(),
            environment: serde_json::Value::Null,
            cells: Vec::new(),
            superseded: Vec::new(),
        },
    );
    crate::compare::comparable(&settings, base, &planned).map_err(|e| {
        // A flag that shapes the plan makes it this command's own, not
        // the baseline's again: said, with the flags as typed, so a
        // refusal never reads as the baseline's own plan failing.
        let given = &args.given.shaping;
        if given.is_empty() || args.resume.is_some() {
            return e.to_string();
        }
        format!(
            "{e} ({} {} the plan, so this run is the command's own plan, not {} again; without {}, --baseline runs its plan again)",
            given.join(", "),
            if given.len() == 1 { "shapes" } else { "shape" },
            base.path.display(),
            if given.len() == 1 { "it" } else { "them" },
        )
    })
}

/// `c10k run --baseline DIR`, at the end: the run compared with DIR,
/// printed, and written beside the results (compare.json, .md, .html);
/// the exit code of the gate (or 1 when an output could not be written).
fn against_baseline(
    args: &crate::cli::RunArgs,
    data: &crate::results::dir::RunData,
    base: &crate::compare::input::Side,
) -> Exit {
    let settings = match crate::plan::compare::settings(
        &args.gate,
        data.plan.margin,
        crate::cli::command_line(),
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("c10k run: {e}");
            return Exit::Usage;
        }
    };
    let new = crate::compare::input::Side::of_run(data.dir.clone(), data.clone());
    let dir = &data.dir;
    let (json, md, html) = (
        dir.join("compare.json"),
        dir.join("compare.md"),
        dir.join("compare.html"),
    );
    super::compare::compared(
        "c10k run",
        &settings,
        base,
        &new,
        [
            Some(json.as_path()),
            Some(md.as_path()),
            Some(html.as_path()),
        ],
    )
}

/// The largest cell of `plan` against this machine, before anything
/// starts: what cannot fit refuses the run with its fix (false), the rest
/// are warnings.
fn preflight(plan: &crate::results::matrix::RunPlan) -> bool {
    use crate::runner::preflight;
    let findings = preflight::check(plan);
    if let Some(f) = preflight::blocking(&findings) {
        eprintln!("c10k run: {} (fix: {})", f.what, f.fix);
        return false;
    }
    for f in findings
        .iter()
        .filter(|f| f.level == crate::client::preflight::Level::Warn)
    {
        eprintln!("c10k run: {f}");
    }
    true
}

/// `c10k report DIR`: the exports and report.html again, from the results
/// of the plan. Every line of results.jsonl that is not one is named on
/// stderr, and makes the exit 1 (the report lacks it), except a partial
/// last line (the trace of a run killed mid-write, which lost only the
/// cell it was writing) and a cell recorded again (its first result is
/// kept): warnings, exit 0, as `--resume` reads them
/// ([`crate::results::dir::Problem::refuses`]).
pub fn report(dir: &std::path::Path) -> Exit {
    let (data, problems) = match crate::results::dir::load(dir, crate::plan::check::check) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("c10k report: {e:#}");
            return Exit::Usage;
        }
    };
    for p in &problems {
        eprintln!("c10k report: {p}");
    }
    let mut code = if !problems.iter().any(|p| p.refuses()) {
        Exit::Done
    } else {
        Exit::Failed
    };
    match crate::output::write_all(&data, &crate::report::sections(&data), true) {
        Ok(paths) => {
            for p in paths {
                println!("wrote {}", p.display());
            }
        }
        Err(e) => {
            eprintln!("c10k report: {e:#}");
            code = Exit::Failed;
        }
    }
    // The answer the page opens on, as `c10k run` ends.
    print!("{}", crate::report::glance(&data));
    code
}
