//! The documentation's commands: every `c10k …` (or `cargo run --release
//! -- …`) line shown in a shell block of README.md or docs/ parses with
//! today's flags, so a reader who copies one gets a run, not a usage error.

use std::path::{Path, PathBuf};

use libtest_mimic::Failed;

tests![every_command_in_the_docs_parses];

/// README.md and every Markdown file under docs/.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The command of a shell line up to its first unquoted `|`, `>`, `<`,
/// `&&`, `;` or `#` (a pipe, a redirection, a second command, a comment).
fn command_part(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '|' | '>' | '<' | ';' | '#' | '&' if !single && !double => return &line[..i],
            _ => {}
        }
    }
    line
}

/// The c10k commands of one page: (line number, arguments after `c10k`).
fn commands(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(info) = line.strip_prefix("```") {
            block = match block {
                Some(_) => None,
                None => Some(info.trim().to_string()),
            };
            continue;
        }
        let Some(kind) = &block else { continue };
        if !matches!(kind.as_str(), "" | "sh" | "bash" | "shell" | "console") {
            continue;
        }
        if let Some((at, mut so_far)) = pending.take() {
            so_far.push(' ');
            so_far.push_str(line.trim_end_matches('\\'));
            match line.ends_with('\\') {
                true => pending = Some((at, so_far)),
                false => out.push((at, so_far)),
            }
            continue;
        }
        let shown = match line.strip_prefix("$ ") {
            Some(rest) => rest,
            None if kind == "console" => continue,
            None => line,
        };
        let args = ["c10k ", "cargo run --release -- "]
            .iter()
            .find_map(|p| shown.strip_prefix(p));
        let Some(args) = args else { continue };
        if let Some(head) = args.strip_suffix('\\') {
            pending = Some((i + 1, head.to_string()));
        } else {
            out.push((i + 1, args.to_string()));
        }
    }
    out
}

fn every_command_in_the_docs_parses() -> Result<(), Failed> {
    let mut seen = 0;
    let mut bad = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page)?;
        for (line, args) in commands(&text) {
            seen += 1;
            let words = shlex::split(command_part(&args))
                .ok_or_else(|| format!("{}:{line}: unbalanced quotes", page.display()))?;
            let argv = std::iter::once("c10k".to_string()).chain(words);
            if let Err(e) = c10k::cli::try_parse_from(argv) {
                let first = e.to_string();
                let first = first.lines().next().unwrap_or_default().to_string();
                bad.push(format!("{}:{line}: c10k {args}: {first}", page.display()));
            }
        }
    }
    // The reader sees the commands: README.md alone shows more than ten.
    if seen < 10 {
        return Err(format!("only {seen} commands found in README.md and docs/").into());
    }
    if !bad.is_empty() {
        return Err(format!(
            "{} of {seen} commands do not parse:\n{}",
            bad.len(),
            bad.join("\n")
        )
        .into());
    }
    Ok(())
}
