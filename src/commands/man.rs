//! `c10k completions SHELL` and `c10k man`: made from the flag
//! definitions ([`crate::cli::command`]), so they never drift from
//! `--help`.

use std::io::Write as _;

use super::Exit;

/// `c10k completions SHELL`: the shell's completion script, made from the
/// flag definitions.
pub fn completions(shell: clap_complete::Shell) -> Exit {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut crate::cli::command(), "c10k", &mut script);
    emit("completions", &script)
}

/// `c10k man`: one roff page made from the flag definitions: the command
/// and its options, its subcommands listed, then a section for each with
/// its synopsis, description and options (a nested one after its parent),
/// and the exit codes.
pub fn man() -> Exit {
    // `help` is clap's, and --help says all it would.
    fn without_help(cmd: clap::Command) -> clap::Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    let mut cmd = without_help(crate::cli::command());
    // Built, every subcommand knows its whole name (`c10k micro spawn`).
    cmd.build();
    match manual(&cmd) {
        Ok(page) => emit("man", page.as_bytes()),
        Err(e) => {
            eprintln!("c10k man: {e}");
            Exit::Failed
        }
    }
}

/// The page of `c10k man`, from a built command: clap_mangen renders each
/// part, and a subcommand's parts become subsections of its own section.
pub fn manual(cmd: &clap::Command) -> std::io::Result<String> {
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
pub fn emit(name: &str, bytes: &[u8]) -> Exit {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Exit::Done,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Exit::Done,
        Err(e) => {
            eprintln!("c10k {name}: cannot write to stdout: {e}");
            Exit::Failed
        }
    }
}
