//! A table of results, rendered as aligned text (terminal), Markdown and
//! HTML, so the study tables and the ranking read the same everywhere.

use std::fmt::Write as _;

/// A titled table: a header row, rows of cells, and notes under it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Sentences printed under the table (method, units, caveats).
    pub notes: Vec<String>,
    /// In HTML, long cells that end in a parenthesis show what comes
    /// before it, the rest one click away ([`cell_html`]): a ranking's or
    /// a verdict's rows stay one line high.
    #[serde(skip)]
    pub fold: bool,
}

impl Table {
    pub fn new(title: impl Into<String>, header: &[&str]) -> Table {
        Table {
            title: title.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            ..Table::default()
        }
    }

    /// Columns aligned with spaces: text left, numbers right, within the
    /// terminal's width ([`width`]), each note under the table.
    pub fn to_text(&self) -> String {
        let mut out = self.grid(width());
        for n in &self.notes {
            out += &wrap(n, width(), "  ", "  ");
        }
        out
    }

    /// The title and the rows, aligned, within `width` columns: a table
    /// wider than that wraps its widest columns of words inside their
    /// cells (a row then takes more than one line), so no line passes
    /// `width` unless one word does. The notes are the caller's.
    pub fn grid(&self, width: usize) -> String {
        let cols = self.header.len();
        let rows: Vec<&Vec<String>> = std::iter::once(&self.header).chain(&self.rows).collect();
        let mut widths = vec![0; cols];
        // The narrowest a column can wrap to: its longest word.
        let mut least = vec![1; cols];
        for row in &rows {
            for (i, cell) in row.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(cell.chars().count());
                let word = cell.split(' ').map(|w| w.chars().count()).max();
                least[i] = least[i].max(word.unwrap_or(0).min(MIN_WRAP));
            }
        }
        // Two spaces before the first column and between columns.
        let total = |w: &[usize]| w.iter().sum::<usize>() + 2 * w.len();
        // Words stay whole while they can; past that, the widest column
        // breaks its words too, down to a few characters.
        for floor in [None, Some(MIN_BROKEN)] {
            while total(&widths) > width {
                let Some(i) = (0..cols)
                    .filter(|&i| widths[i] > floor.unwrap_or(least[i]).min(least[i]))
                    .max_by_key(|&i| widths[i])
                else {
                    break;
                };
                widths[i] -= 1;
            }
        }
        let mut out = wrap(&self.title, width, "", "  ");
        for row in rows {
            let cells: Vec<Vec<String>> = row
                .iter()
                .take(cols)
                .enumerate()
                .map(|(i, c)| words_within(c, widths[i]))
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for k in 0..height {
                let mut line = String::new();
                for (i, cell) in cells.iter().enumerate() {
                    let part = cell.get(k).map_or("", String::as_str);
                    let pad = widths[i].saturating_sub(part.chars().count());
                    if i > 0 {
                        line.push_str("  ");
                    }
                    if i > 0 && looks_numeric(&row[i]) {
                        line.push_str(&" ".repeat(pad));
                        line.push_str(part);
                    } else {
                        line.push_str(part);
                        line.push_str(&" ".repeat(pad));
                    }
                }
                let _ = writeln!(out, "  {}", line.trim_end());
            }
        }
        out
    }

    /// A GitHub-flavoured Markdown table under a `###` heading.
    pub(crate) fn to_markdown(&self) -> String {
        let esc = |c: &str| escape_markdown(c);
        let mut out = format!("### {}\n\n", esc(&self.title));
        let _ = writeln!(
            out,
            "| {} |",
            self.header
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(
            out,
            "|{}|",
            self.header
                .iter()
                .enumerate()
                .map(|(i, _)| if i == 0 { "---" } else { "---:" })
                .collect::<Vec<_>>()
                .join("|")
        );
        for row in &self.rows {
            let _ = writeln!(
                out,
                "| {} |",
                row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            );
        }
        if !self.notes.is_empty() {
            out.push('\n');
            for n in &self.notes {
                let _ = writeln!(out, "{}  ", esc(n));
            }
        }
        out
    }

    /// An HTML `<table>` with a caption; every cell escaped.
    pub(crate) fn to_html(&self) -> String {
        let mut out = format!(
            "<table>\n<caption>{}</caption>\n<thead><tr>",
            escape_html(&self.title)
        );
        for h in &self.header {
            let _ = write!(out, "<th>{}</th>", escape_html(h));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for (i, c) in row.iter().enumerate() {
                let class = if i > 0 && looks_numeric(c) {
                    " class=\"num\""
                } else {
                    ""
                };
                let cell = if self.fold {
                    cell_html(c)
                } else {
                    escape_html(c)
                };
                let _ = write!(out, "<td{class}>{cell}</td>");
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        for n in &self.notes {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", escape_html(n));
        }
        out
    }
}

/// A cell's HTML: a long cell that ends in a parenthesis (`1.08× slower
/// (1.02–1.15×)`, `inconclusive (0.97–1.07×; ~25 runs)`, `unresolved (±
/// 20 ms CPU)`) shows what comes before it and keeps the rest one click
/// away, so that a table of twelve models fits a 1,280 px window and its
/// rows stay one line high; a short one is shown whole.
fn cell_html(text: &str) -> String {
    const LONG: usize = 16;
    match text.find(" (") {
        Some(i) if text.chars().count() > LONG && i > 0 => format!(
            "<details><summary>{}</summary>{}</details>",
            escape_html(&text[..i]),
            escape_html(&text[i + 1..])
        ),
        _ => escape_html(text),
    }
}

/// `text` as Markdown shows it literally: the characters that would make
/// a link, emphasis, code, an HTML tag or a table cell's end are
/// backslash-escaped, so a name (a `--server`, a `--variant`) renders as
/// written in any viewer.
pub fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '#'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` as a Markdown code span: fenced with one backtick more than its
/// longest run of them, so nothing in it ends the span.
pub fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    format!("{fence} {text} {fence}")
}

/// Escapes text for HTML element content and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A column narrower than this is not wrapped further for a long word.
const MIN_WRAP: usize = 24;

/// The narrowest a column gets when whole words cannot fit the width.
const MIN_BROKEN: usize = 4;

/// The columns a terminal's text is laid out in: `COLUMNS` when set, the
/// width of the terminal on stdout, or 120 when neither can be told (a
/// pipe, a file); never under 40.
pub fn width() -> usize {
    if let Some(c) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
    {
        return c.max(40);
    }
    let out = std::io::stdout();
    match rustix::termios::tcgetwinsize(&out) {
        Ok(w) if w.ws_col > 0 => (w.ws_col as usize).max(40),
        _ => 120,
    }
}

/// `text` in lines of at most `width` columns (a longer word stands
/// alone), the first after `first`, the rest after `rest`; each line ends
/// in a newline.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut lead = first;
    for line in words_within(
        text,
        width.saturating_sub(first.len().max(rest.len())).max(20),
    ) {
        out.push_str(lead);
        out.push_str(&line);
        out.push('\n');
        lead = rest;
    }
    out
}

/// `text`'s words in lines of at most `width` characters; a word longer
/// than that stands alone on its line. Empty text is one empty line.
fn words_within(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    // A word longer than the width is broken into pieces that fit.
    let words = text.split(' ').flat_map(|word| {
        let chars: Vec<char> = word.chars().collect();
        let piece = width.max(1);
        if chars.len() <= piece {
            vec![word.to_string()]
        } else {
            chars.chunks(piece).map(|c| c.iter().collect()).collect()
        }
    });
    for word in words {
        let word = word.as_str();
        let n = line.chars().count();
        if n > 0 && n + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

fn looks_numeric(cell: &str) -> bool {
    let c = cell.trim();
    !c.is_empty()
        && c.chars()
            .next()
            .is_some_and(|ch| ch.is_ascii_digit() || ch == '-' || ch == '+' || ch == '.')
        && c.chars().any(|ch| ch.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns whose longest words alone pass the width (the ranking's
    /// nine beside an "inconclusive" and a "limited" column, at 80) break
    /// their words rather than the width.
    #[test]
    fn words_that_cannot_fit_are_broken_not_the_width() {
        let header = [
            "#",
            "model",
            "round",
            "vs best",
            "p99",
            "server",
            "memory/conn",
            "idle",
            "limited",
        ];
        let mut t = Table::new("ranking", &header);
        t.rows.push(
            [
                "1?",
                "poll",
                "28,740",
                "inconclusive",
                "1.83 ms",
                "13.3 µs",
                "below",
                "0 %",
                "unknown",
            ]
            .map(String::from)
            .to_vec(),
        );
        let text = t.grid(60);
        assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
        let letters = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
        let kept: String = text.lines().skip(1).map(letters).collect();
        assert_eq!(
            kept.len(),
            letters(&(header.join("") + &t.rows[0].join(""))).len(),
            "{text}"
        );
    }

    /// A table wider than the width wraps its widest column of words
    /// inside the cells: no line passes the width, every word is kept,
    /// and a narrow table is laid out as it always was.
    #[test]
    fn a_wide_table_wraps_its_cells_within_the_width() {
        let mut t = Table::new("T", &["model", "figure", "why"]);
        t.rows.push(vec![
            "epoll".into(),
            "12,345".into(),
            "inconclusive: its bracket overlaps the best's (500/s to 1,000/s against 595/s to 1,000/s)"
                .into(),
        ]);
        let text = t.grid(50);
        assert!(text.lines().all(|l| l.chars().count() <= 50), "{text}");
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let kept: Vec<String> = text.lines().skip(2).flat_map(words).collect();
        assert_eq!(kept, words(&t.rows[0].join(" ")), "{text}");
        assert_eq!(text.lines().count(), 2 + 3, "{text}");
        let wide = t.grid(200);
        assert_eq!(wide.lines().count(), 3, "{wide}");
        assert!(wide
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("  epoll  12,345  inconclusive:"));
    }

    #[test]
    fn renders_text_markdown_and_escaped_html() {
        let mut t = Table::new("Burst <time>", &["model", "time"]);
        t.rows.push(vec!["a|b".into(), "12.5".into()]);
        t.notes.push("note & more".into());
        let text = t.to_text();
        assert!(text.contains("  a|b    12.5\n"), "{text}");
        let md = t.to_markdown();
        assert!(md.contains("| a\\|b | 12.5 |"), "{md}");
        assert!(md.contains("### Burst \\<time\\>"), "{md}");
        assert_eq!(
            escape_markdown("<b>x</b> *y* [z](u)"),
            "\\<b\\>x\\</b\\> \\*y\\* \\[z\\](u)"
        );
        assert_eq!(code_span("a `b` c"), "`` a `b` c ``");
        assert_eq!(code_span("plain"), "` plain `");
        assert!(md.contains("|---|---:|"), "{md}");
        let html = t.to_html();
        assert!(
            html.contains("<caption>Burst &lt;time&gt;</caption>"),
            "{html}"
        );
        assert!(html.contains("<td class=\"num\">12.5</td>"), "{html}");
        assert!(html.contains("note &amp; more"), "{html}");
    }
}
