//! The page of `c10k compare … --html FILE`: the report's look (one
//! polyglot, self-contained document, no URL), with the summary line
//! first, what differs, and per work profile the tables of
//! [`crate::compare::text`], so the page, the terminal and the Markdown
//! say the same.

use std::fmt::Write as _;

use super::page::{boxed, head};
use crate::compare::report::Comparison;
use crate::compare::text;
use crate::export::table::escape_html;

/// The whole page.
pub fn render(c: &Comparison) -> anyhow::Result<String> {
    let mut out = head(&format!("c10k compare: {}", c.summary.line));
    let _ = write!(
        out,
        "<header>\n<h1>c10k compare</h1>\n<p class=\"subtitle\">{} → {}</p>\n</header>\n",
        escape_html(&c.base.path),
        escape_html(&c.new.path)
    );
    let _ = writeln!(
        out,
        "<section id=\"summary\">\n<p class=\"counts\"><span>{}</span></p>",
        escape_html(&c.summary.line)
    );
    out.push_str("<ul>\n");
    for l in text::head_lines(c).iter().chain(&text::tail_lines(c)) {
        let _ = writeln!(out, "<li>{}</li>", escape_html(l));
    }
    out.push_str("</ul>\n</section>\n");
    for (work, cells) in text::by_work(c) {
        if let Some(w) = &work {
            let _ = writeln!(out, "<h2>Work: {}</h2>", escape_html(w));
        }
        for t in text::tables(c, work.as_deref(), &cells) {
            out.push_str(&boxed(&t));
        }
    }
    let _ = writeln!(
        out,
        "<section id=\"command\">\n<h2>Command</h2>\n<pre><code>{}</code></pre>\n</section>\n\
         </body>\n</html>",
        escape_html(&c.command)
    );
    Ok(out)
}
