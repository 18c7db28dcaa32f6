//! `c10k compare BASE NEW`, and the printing and writing of a comparison
//! that `run --baseline` shares with it.

use std::io::Write as _;

use super::Exit;

/// Compares, prints the text (and on stderr what the reader must know
/// of the inputs), writes the outputs asked for, and says how it ended:
/// 0, 1 (the gate failed, or an output could not be written), 2 (the two
/// cannot be compared) or 5 (nothing measured on both sides).
pub fn compared(
    name: &str,
    settings: &crate::compare::Settings,
    base: &crate::compare::input::Side,
    new: &crate::compare::input::Side,
    outputs: [Option<&std::path::Path>; 3],
) -> Exit {
    use crate::compare::Refusal;
    let c = match crate::compare::compare(settings, base, new) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{name}: {e}");
            return match e {
                Refusal::Apart(_) => Exit::Usage,
                Refusal::NothingMeasured(_) => Exit::NoResult,
            };
        }
    };
    for w in &c.warnings {
        eprintln!("{name}: {w}");
    }
    let mut stdout = std::io::stdout();
    let _ = write!(stdout, "{}", crate::compare::text::text(&c));
    let _ = stdout.flush();
    let [json, md, html] = outputs;
    let (written, errors) = crate::output::write_comparison(&c, json, md, html);
    for p in written {
        let _ = writeln!(stdout, "wrote {}", p.display());
    }
    for e in &errors {
        eprintln!("{name}: {e}");
    }
    let gate_failed = c.gate.as_ref().is_some_and(|g| !g.failed.is_empty());
    if gate_failed || !errors.is_empty() {
        Exit::Failed
    } else {
        Exit::Done
    }
}

/// `c10k compare BASE NEW`.
pub fn compare(args: &crate::cli::CompareArgs) -> Exit {
    let command = crate::cli::command_line();
    let plan = match crate::plan::compare::plan(args, command) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("c10k compare: {e}");
            return Exit::Usage;
        }
    };
    let open = |p: &std::path::Path| crate::compare::input::open(p, crate::plan::check::check);
    let (base, new) = match (open(&plan.base), open(&plan.new)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("c10k compare: {e}");
            return Exit::Usage;
        }
    };
    compared(
        "c10k compare",
        &plan.settings,
        &base,
        &new,
        [
            plan.json.as_deref(),
            plan.markdown.as_deref(),
            plan.html.as_deref(),
        ],
    )
}
