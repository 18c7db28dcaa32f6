//! The page of `c10k compare … --html FILE`: the report's look (one
//! polyglot, self-contained document, no URL), with the summary line
//! first, what differs, and per work profile the charts of [`figures`]
//! (BASE and NEW against connections, NEW/BASE with its interval over
//! the margin), the tables of [`crate::compare::text`] (so the page, the
//! terminal and the Markdown say the same), then the latency spectra.
//! Cost: a chart drawn per figure, in memory.

mod figures;

use std::fmt::Write as _;

use super::page::{boxed, chart_html, head};
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
    for (i, (work, cells)) in text::by_work(c).into_iter().enumerate() {
        if let Some(w) = &work {
            let _ = writeln!(out, "<h2>Work: {}</h2>", escape_html(w));
        }
        // Ids stay unique across the profiles: `fig-ratio-w2`.
        let suffix = work
            .as_ref()
            .map_or_else(String::new, |_| format!("-w{}", i + 1));
        let w = work.as_deref();
        for chart in [
            figures::before_after(c, w, &cells),
            figures::ratios(c, w, &cells),
        ] {
            out.push_str(&chart_html(&chart, &suffix)?);
        }
        for t in text::tables(c, w, &cells) {
            out.push_str(&boxed(&t));
        }
        out.push_str(&chart_html(&figures::spectra(c, w, &cells), &suffix)?);
    }
    for (i, (work, t)) in text::capacity_tables(c).into_iter().enumerate() {
        if let Some(w) = &work {
            let _ = writeln!(out, "<h2>Work: {}</h2>", escape_html(w));
        }
        let suffix = work
            .as_ref()
            .map_or_else(String::new, |_| format!("-w{}", i + 1));
        let cells: Vec<_> = c.capacity.iter().filter(|k| k.work == work).collect();
        out.push_str(&chart_html(
            &figures::capacity(c, work.as_deref(), &cells),
            &suffix,
        )?);
        out.push_str(&boxed(&t));
    }
    let _ = writeln!(
        out,
        "<section id=\"command\">\n<h2>Command</h2>\n<pre><code>{}</code></pre>\n</section>\n\
         </body>\n</html>",
        escape_html(&c.command)
    );
    Ok(out)
}
