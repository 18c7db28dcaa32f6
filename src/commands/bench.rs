//! `c10k micro` and `c10k herd`: a micro-benchmark's tables, and its
//! JSON when asked.

use std::io::Write as _;

use super::Exit;

/// `c10k micro …`.
pub fn micro(cmd: &crate::cli::MicroCommand) -> Exit {
    match crate::plan::micro::plan(cmd) {
        Ok((b, json)) => bench("micro", crate::micro::run(&b), json),
        Err(e) => {
            eprintln!("c10k micro: {e}");
            Exit::Usage
        }
    }
}

/// `c10k herd`.
pub fn herd(args: &crate::cli::HerdArgs) -> Exit {
    let request = crate::plan::herd::request(args);
    bench("herd", crate::herd::run(&request), request.json.clone())
}

/// A micro-benchmark's or the herd's tables, and its JSON when asked.
pub fn bench(
    name: &str,
    result: Result<crate::micro::Output, crate::micro::BenchError>,
    json: Option<std::path::PathBuf>,
) -> Exit {
    use crate::micro::BenchError;
    let out = match result {
        Ok(o) => o,
        Err(BenchError::Usage(e)) => {
            eprintln!("c10k {name}: {e}");
            return Exit::Usage;
        }
        Err(BenchError::Failed(e)) => {
            eprintln!("c10k {name}: {e:#}");
            return Exit::Failed;
        }
        Err(BenchError::Interrupted(e)) => {
            eprintln!("c10k {name}: {e}");
            return Exit::Interrupted;
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
        if let Err(e) = crate::export::write_json(&path, &out.json) {
            eprintln!("c10k {name}: cannot write {}: {e}", path.display());
            return Exit::Failed;
        }
    }
    // Interrupted: what was measured is above and in the JSON.
    if let Some(why) = out.interrupted {
        eprintln!("c10k {name}: {why}");
        return Exit::Interrupted;
    }
    Exit::Done
}
