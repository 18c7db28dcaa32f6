//! The c10k binary: parse flags, call the library, map errors to exit codes
//! (1 failure, 2 bad usage, 3 model not supported here, 4 `load
//! --fail-on-error` saw errors, 5 no result: `load` whose every connection
//! failed or got no echo, `run` with no cell measured; 130 `load` or `run`
//! interrupted).

#![forbid(unsafe_code)]

use std::io::Write as _;
use std::process::ExitCode;

use c10k::cli::{Cli, Command};
use c10k::plan::ServePlan;
use c10k::server::{self, run::ServeError};

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
        Command::Run(args) => run(&args),
        Command::Report(args) => report(&args.dir),
        Command::Compare(args) => compare(&args),
        Command::Micro(cmd) => match c10k::plan::micro::plan(&cmd) {
            Ok((b, json)) => bench("micro", c10k::micro::run(&b), json),
            Err(e) => {
                eprintln!("c10k micro: {e}");
                ExitCode::from(2)
            }
        },
        Command::Herd(args) => {
            let request = c10k::plan::herd::request(&args);
            bench("herd", c10k::herd::run(&request), request.json.clone())
        }
        Command::Conform(args) => conform(&args),
        Command::Agent => agent(),
        Command::Models(args) if args.knobs => {
            print!("{}", server::knobs::table().to_text());
            ExitCode::SUCCESS
        }
        Command::Models(_) => {
            for m in server::MODELS {
                println!("{:<14} {}", m.name(), m.about());
            }
            ExitCode::SUCCESS
        }
        Command::Completions(args) => completions(args.shell),
        Command::Man => man(),
    }
}

/// `c10k agent`: a load agent, its plan's arguments parsed as `c10k load`'s.
fn agent() -> ExitCode {
    let parse = |args: &[String]| -> Result<c10k::client::plan::LoadPlan, String> {
        let argv = std::iter::once("c10k".to_string()).chain(args.iter().cloned());
        match c10k::cli::try_parse_from(argv).map_err(|e| c10k::cli::one_line(&e))? {
            Cli {
                command: Command::Load(a),
            } => c10k::plan::load::plan(&a, format!("c10k {}", args.join(" "))),
            _ => Err("the plan is not a `c10k load` command".into()),
        }
    };
    match c10k::client::agent::serve(&parse) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("c10k agent: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// `c10k conform`: each check's row as it is done, the totals, the JSON;
/// exit 0 only when no check failed, 130 when SIGINT or SIGTERM cut it.
fn conform(args: &c10k::cli::ConformArgs) -> ExitCode {
    use c10k::conform::{Report, CHECKS};
    if args.list {
        for c in CHECKS {
            println!("{:<28} {}", c.name, c.about);
        }
        return ExitCode::SUCCESS;
    }
    let plan = match c10k::plan::conform::plan(args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("c10k conform: {e}");
            return ExitCode::from(2);
        }
    };
    // 1,100 connections at once: the client wants the hard limit.
    let _ = c10k::sys::rlimit::raise_nofile();
    println!("{}", Report::title(&plan.suite.subject.describe()));
    let report = plan.suite.run_all(&plan.checks, |row| {
        println!("{}", Report::line(row));
        let _ = std::io::stdout().flush();
    });
    println!("\n{}", report.totals());
    let _ = std::io::stdout().flush();
    if let Some(path) = &plan.json {
        if let Err(e) = c10k::export::write_json(path, &report) {
            eprintln!("c10k conform: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    if report.interrupted {
        // The same code as an interrupted `c10k run` or `c10k load`.
        eprintln!(
            "c10k conform: interrupted: {} of {} checks done; the one in progress was cut and its server stopped",
            report.checks.len(),
            plan.checks.len()
        );
        return ExitCode::from(130);
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `c10k load`: run, print the summary, write every output asked for.
fn load(args: &c10k::cli::LoadArgs) -> ExitCode {
    let command = c10k::cli::command_line();
    let plan = match c10k::plan::load::plan(args, command) {
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
    // Out before any output is written, which may be to /dev/stdout.
    let _ = std::io::stdout().flush();
    if let Err(e) = c10k::client::run::write_outputs(&plan, &outcome) {
        eprintln!("c10k load: {e:#}");
        return ExitCode::from(1);
    }
    if outcome.report.interrupted {
        // A cut-short run is not a whole one: the same code as `c10k run`.
        eprintln!("c10k load: interrupted: the results cover only the part measured");
        return ExitCode::from(130);
    }
    if !outcome.lost.is_empty() && !args.allow_partial {
        eprintln!(
            "c10k load: {} of the agents were lost: the figures are the others' (--allow-partial accepts that)",
            outcome.lost.len()
        );
        return ExitCode::from(1);
    }
    // No result, whatever --fail-on-error says: the cause, first and in
    // one line, and a code a script can tell from errors (4).
    if let Some(cause) = outcome.report.no_result() {
        eprintln!("c10k load: {cause}");
        return ExitCode::from(NO_RESULT);
    }
    if plan.fail_on_error && outcome.report.failures() > 0 {
        return ExitCode::from(4);
    }
    ExitCode::SUCCESS
}

/// The exit code of a `load` or `run` with no result: every connection
/// failed or none got an echo, or no cell was measured.
const NO_RESULT: u8 = 5;

/// `c10k run`: a preset or custom matrix, or `--resume DIR`.
fn run(args: &c10k::cli::RunArgs) -> ExitCode {
    use c10k::runner::{self, Finish};
    if args.list {
        for p in c10k::experiments::presets::all() {
            println!("{:<15} {}", p.name, p.title);
        }
        return ExitCode::SUCCESS;
    }
    let command = c10k::cli::command_line();
    // The baseline is read before anything runs: a long run is never
    // started against one that cannot be compared.
    let baseline = match &args.baseline {
        Some(dir) => match c10k::compare::input::open(dir, c10k::plan::check::check) {
            Ok(side) if side.kind == c10k::compare::input::Kind::Run => Some(side),
            Ok(_) => {
                eprintln!(
                    "c10k run: --baseline {}: not a results directory of c10k run",
                    dir.display()
                );
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("c10k run: --baseline: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    // Taken before anything is read or run, the appender holds the
    // directory's lock until this function returns: a second run on the
    // same directory is refused (exit 2: nothing ran, as for any request
    // that cannot be done as given).
    let (mut data, mut appender) = match &args.resume {
        Some(dir) => match runner::resume(dir, c10k::plan::check::check) {
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
                    return ExitCode::from(2);
                }
                if let Err(e) = fits_baseline(args, &r.data.plan, baseline.as_ref()) {
                    eprintln!("c10k run: {e}");
                    return ExitCode::from(2);
                }
                (r.data, r.appender)
            }
            Err(e) => {
                eprintln!("c10k run: {e:#}");
                return ExitCode::from(2);
            }
        },
        None => {
            let planned = match &baseline {
                Some(b) => c10k::plan::run::from_baseline(&b.data.plan, args, command.clone())
                    .and_then(|p| p.map_or_else(|| c10k::plan::run::plan(args, command), Ok)),
                None => c10k::plan::run::plan(args, command),
            };
            let plan = match planned {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("c10k run: {e}");
                    return ExitCode::from(2);
                }
            };
            if !preflight(&plan) {
                return ExitCode::from(2);
            }
            if let Err(e) = fits_baseline(args, &plan, baseline.as_ref()) {
                eprintln!("c10k run: {e}");
                return ExitCode::from(2);
            }
            match runner::create(plan, &args.out) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("c10k run: {e:#}");
                    let in_use = e.downcast_ref::<c10k::results::lock::InUse>().is_some();
                    return ExitCode::from(if in_use { 2 } else { 1 });
                }
            }
        }
    };
    eprint!("{}", runner::intro(&data));
    let finish = runner::execute(&mut data, &mut appender);
    // Whatever happened, what was measured is written out.
    let written = c10k::output::write_all(&data, &c10k::report::sections(&data), !args.no_report);
    // Written with errors ignored: `c10k run | head` must not turn a
    // finished run into a panic.
    let mut stdout = std::io::stdout();
    let _ = write!(stdout, "{}", c10k::report::outro(&data));
    let mut code = ExitCode::SUCCESS;
    match finish {
        Ok(Finish::Complete) => {
            if let Some(cause) = data.no_result() {
                eprintln!(
                    "c10k run: {cause} (the reports are in {})",
                    data.dir.display()
                );
                code = ExitCode::from(NO_RESULT);
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
            code = ExitCode::from(130);
        }
        Err(e) => {
            eprintln!(
                "c10k run: {e:#} (finish with: c10k run --resume {})",
                data.dir.display()
            );
            code = ExitCode::from(1);
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
            code = ExitCode::from(1);
        }
    }
    // Last, where the eye lands: the answer the report's page opens on.
    let _ = write!(stdout, "{}", c10k::report::glance(&data));
    if let Some(base) = baseline {
        let gate = against_baseline(args, &data, &base);
        if code == ExitCode::SUCCESS {
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
    args: &c10k::cli::RunArgs,
    plan: &c10k::results::matrix::RunPlan,
    base: Option<&c10k::compare::input::Side>,
) -> Result<(), String> {
    let Some(base) = base else {
        return Ok(());
    };
    let settings =
        c10k::plan::compare::settings(&args.gate, plan.margin, c10k::cli::command_line())?;
    let planned = c10k::compare::input::Side::of_run(
        "this run".into(),
        c10k::results::dir::RunData {
            dir: args.out.clone(),
            plan: plan.clone(),
            environment: serde_json::Value::Null,
            cells: Vec::new(),
            superseded: Vec::new(),
        },
    );
    c10k::compare::comparable(&settings, base, &planned).map_err(|e| e.to_string())
}

/// `c10k run --baseline DIR`, at the end: the run compared with DIR,
/// printed, and written beside the results (compare.json, .md, .html);
/// the exit code of the gate (or 1 when an output could not be written).
fn against_baseline(
    args: &c10k::cli::RunArgs,
    data: &c10k::results::dir::RunData,
    base: &c10k::compare::input::Side,
) -> ExitCode {
    let settings = match c10k::plan::compare::settings(
        &args.gate,
        data.plan.margin,
        c10k::cli::command_line(),
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("c10k run: {e}");
            return ExitCode::from(2);
        }
    };
    let new = c10k::compare::input::Side::of_run(data.dir.clone(), data.clone());
    let dir = &data.dir;
    let (json, md, html) = (
        dir.join("compare.json"),
        dir.join("compare.md"),
        dir.join("compare.html"),
    );
    compared(
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

/// Compares, prints the text (and on stderr what the reader must know
/// of the inputs), writes the outputs asked for, and says how it ended:
/// 0, 1 (the gate failed, or an output could not be written), 2 (the two
/// cannot be compared) or 5 (nothing measured on both sides).
fn compared(
    name: &str,
    settings: &c10k::compare::Settings,
    base: &c10k::compare::input::Side,
    new: &c10k::compare::input::Side,
    outputs: [Option<&std::path::Path>; 3],
) -> ExitCode {
    use c10k::compare::Refusal;
    let c = match c10k::compare::compare(settings, base, new) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::from(match e {
                Refusal::Apart(_) => 2,
                Refusal::NothingMeasured(_) => NO_RESULT,
            });
        }
    };
    for w in &c.warnings {
        eprintln!("{name}: {w}");
    }
    let mut stdout = std::io::stdout();
    let _ = write!(stdout, "{}", c10k::compare::text::text(&c));
    let _ = stdout.flush();
    let [json, md, html] = outputs;
    let (written, errors) = c10k::output::write_comparison(&c, json, md, html);
    for p in written {
        let _ = writeln!(stdout, "wrote {}", p.display());
    }
    for e in &errors {
        eprintln!("{name}: {e}");
    }
    let gate_failed = c.gate.as_ref().is_some_and(|g| !g.failed.is_empty());
    if gate_failed || !errors.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `c10k compare BASE NEW`.
fn compare(args: &c10k::cli::CompareArgs) -> ExitCode {
    let command = c10k::cli::command_line();
    let plan = match c10k::plan::compare::plan(args, command) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("c10k compare: {e}");
            return ExitCode::from(2);
        }
    };
    let open = |p: &std::path::Path| c10k::compare::input::open(p, c10k::plan::check::check);
    let (base, new) = match (open(&plan.base), open(&plan.new)) {
        (Ok(b), Ok(n)) => (b, n),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("c10k compare: {e}");
            return ExitCode::from(2);
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

/// The largest cell of `plan` against this machine, before anything
/// starts: what cannot fit refuses the run with its fix (false), the rest
/// are warnings.
fn preflight(plan: &c10k::results::matrix::RunPlan) -> bool {
    use c10k::runner::preflight;
    let findings = preflight::check(plan);
    if let Some(f) = preflight::blocking(&findings) {
        eprintln!("c10k run: {} (fix: {})", f.what, f.fix);
        return false;
    }
    for f in findings
        .iter()
        .filter(|f| f.level == c10k::client::preflight::Level::Warn)
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
/// ([`c10k::results::dir::Problem::refuses`]).
fn report(dir: &std::path::Path) -> ExitCode {
    let (data, problems) = match c10k::results::dir::load(dir, c10k::plan::check::check) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("c10k report: {e:#}");
            return ExitCode::from(2);
        }
    };
    for p in &problems {
        eprintln!("c10k report: {p}");
    }
    let mut code = if !problems.iter().any(|p| p.refuses()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    match c10k::output::write_all(&data, &c10k::report::sections(&data), true) {
        Ok(paths) => {
            for p in paths {
                println!("wrote {}", p.display());
            }
        }
        Err(e) => {
            eprintln!("c10k report: {e:#}");
            code = ExitCode::from(1);
        }
    }
    // The answer the page opens on, as `c10k run` ends.
    print!("{}", c10k::report::glance(&data));
    code
}

/// A micro-benchmark's or the herd's tables, and its JSON when asked.
fn bench(
    name: &str,
    result: Result<c10k::micro::Output, c10k::micro::BenchError>,
    json: Option<std::path::PathBuf>,
) -> ExitCode {
    use c10k::micro::BenchError;
    let out = match result {
        Ok(o) => o,
        Err(BenchError::Usage(e)) => {
            eprintln!("c10k {name}: {e}");
            return ExitCode::from(2);
        }
        Err(BenchError::Failed(e)) => {
            eprintln!("c10k {name}: {e:#}");
            return ExitCode::from(1);
        }
        Err(BenchError::Interrupted(e)) => {
            eprintln!("c10k {name}: {e}");
            return ExitCode::from(130);
        }
    };
    for (i, t) in out.tables.iter().enumerate() {
        if i > 0 {
            println!();
        }
        print!("{}", t.to_text());
    }
    // Out before the JSON is written, which may be to /dev/stdout.
    let _ = std::io::stdout().flush();
    if let Some(path) = json {
        if let Err(e) = c10k::export::write_json(&path, &out.json) {
            eprintln!("c10k {name}: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    // Interrupted: what was measured is above and in the JSON.
    if let Some(why) = out.interrupted {
        eprintln!("c10k {name}: {why}");
        return ExitCode::from(130);
    }
    ExitCode::SUCCESS
}

/// `c10k completions SHELL`: the shell's completion script, made from the
/// flag definitions.
fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut c10k::cli::command(), "c10k", &mut script);
    emit("completions", &script)
}

/// `c10k man`: one roff page made from the flag definitions: the command
/// and its options, its subcommands listed, then a section for each with
/// its synopsis, description and options (a nested one after its parent),
/// and the exit codes.
fn man() -> ExitCode {
    // `help` is clap's, and --help says all it would.
    fn without_help(cmd: clap::Command) -> clap::Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    let mut cmd = without_help(c10k::cli::command());
    // Built, every subcommand knows its whole name (`c10k micro spawn`).
    cmd.build();
    match manual(&cmd) {
        Ok(page) => emit("man", page.as_bytes()),
        Err(e) => {
            eprintln!("c10k man: {e}");
            ExitCode::from(1)
        }
    }
}

/// The page of `c10k man`, from a built command: clap_mangen renders each
/// part, and a subcommand's parts become subsections of its own section.
fn manual(cmd: &clap::Command) -> std::io::Result<String> {
    use clap_mangen::roff::{bold, roman, Roff};
    use clap_mangen::Man;

    /// What `render` wrote, without the definition of the apostrophe
    /// string that opens every render (the page has it once, first). In
    /// a subcommand's section (`nested`), its headings are subsections
    /// (SYNOPSIS becomes Synopsis), and its DESCRIPTION heading is left
    /// out: the text is the section's first paragraph.
    fn part(
        render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>,
        nested: bool,
    ) -> std::io::Result<String> {
        let mut out = Vec::new();
        render(&mut out)?;
        let text = String::from_utf8_lossy(&out);
        let mut part = String::new();
        let body = text
            .lines()
            .skip_while(|l| l.starts_with(".ie ") || l.starts_with(".el "));
        for line in body {
            match line.strip_prefix(".SH ") {
                Some("DESCRIPTION") if nested => continue,
                Some(heading) if nested => {
                    let lower = heading.to_lowercase();
                    let mut chars = lower.chars();
                    part.push_str(".SS ");
                    part.extend(chars.next().into_iter().flat_map(char::to_uppercase));
                    part.push_str(chars.as_str());
                }
                _ => part.push_str(line),
            }
            part.push('\n');
        }
        Ok(part)
    }

    /// A command's subcommands, each by its whole name and what it does.
    fn listed(cmd: &clap::Command, nested: bool) -> std::io::Result<String> {
        let mut roff = Roff::new();
        roff.control("SH", ["SUBCOMMANDS"]);
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            roff.control("TP", [])
                .text([bold(sub.get_bin_name().unwrap_or(sub.get_name()))]);
            if let Some(about) = sub.get_about() {
                roff.text([roman(about.to_string())]);
            }
        }
        part(|w| roff.to_writer(w), nested)
    }

    /// A subcommand's section, then its own subcommands'.
    fn section(sub: &clap::Command, page: &mut String) -> std::io::Result<()> {
        let man = Man::new(sub.clone());
        let mut heading = Roff::new();
        heading.control("SH", [sub.get_bin_name().unwrap_or(sub.get_name())]);
        page.push_str(&part(|w| heading.to_writer(w), false)?);
        page.push_str(&part(|w| man.render_description_section(w), true)?);
        page.push_str(&part(|w| man.render_synopsis_section(w), true)?);
        page.push_str(&part(|w| man.render_options_section(w), true)?);
        if sub.has_subcommands() {
            page.push_str(&listed(sub, true)?);
        }
        for s in sub.get_subcommands().filter(|s| !s.is_hide_set()) {
            section(s, page)?;
        }
        Ok(())
    }

    let man = Man::new(cmd.clone());
    // The apostrophe string's definition, once.
    let mut page = Roff::new().render();
    // The title by hand: clap_mangen's leaves an empty date unquoted,
    // which moves the source ("c10k 0.1.0") into the date's place.
    page.push_str(&format!(
        ".TH {name} 1 \"\" \"{name} {version}\"\n",
        name = cmd.get_name(),
        version = cmd.get_version().unwrap_or_default()
    ));
    page.push_str(&part(|w| man.render_name_section(w), false)?);
    page.push_str(&part(|w| man.render_synopsis_section(w), false)?);
    // The about is the NAME line already; a long about would say more.
    if cmd.get_long_about().is_some() {
        page.push_str(&part(|w| man.render_description_section(w), false)?);
    }
    page.push_str(&part(|w| man.render_options_section(w), false)?);
    page.push_str(&listed(cmd, false)?);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        section(sub, &mut page)?;
    }
    if let Some(codes) = cmd.get_after_help() {
        let mut exit = Roff::new();
        exit.control("SH", ["EXIT STATUS"])
            .text([roman(codes.to_string())]);
        page.push_str(&part(|w| exit.to_writer(w), false)?);
    }
    page.push_str(&part(|w| man.render_version_section(w), false)?);
    Ok(page)
}

/// Writes what was generated to stdout. A reader that stops early (`c10k
/// man | head`) is no failure; any other is, in one line.
fn emit(name: &str, bytes: &[u8]) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("c10k {name}: cannot write to stdout: {e}");
            ExitCode::from(1)
        }
    }
}
