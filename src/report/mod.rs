//! `report.html`: one self-contained page (inline SVG charts, no network).
//!
//! The page is a polyglot document: HTML5 that is also well-formed XML, so a
//! strict XML parser can check it. Its style is inline; it has no script, no
//! link, no image file, no `url(...)` and no URL of any kind: the
//! `xmlns="http://www.w3.org/2000/svg"` that plotters writes on each `<svg>`
//! is removed, since SVG inline in HTML is in the SVG namespace without it.
//!
//! Charts are drawn with plotters' SVG backend, built without any font
//! feature (`ttf`, `ab_glyph`): plotters then only estimates text widths for
//! its layout and writes text as SVG `<text>` with a generic
//! `font-family="sans-serif"`, which the browser sets with whatever font it
//! has. Nothing reads a font file while the report is made, so it builds and
//! runs on a system with no fonts installed.
//!
//! - [`crate::results::series`] (read here): the cells that count, grouped by model and connections;
//! - [`forest`]: the answer at the top, each model against the best with
//!   its interval over the margin's band, per count;
//! - [`figures`]: which charts the run gets and their data;
//! - [`memory`]: the memory-per-connection chart (slopes, cells below
//!   resolution listed);
//! - [`curves`]: a capacity run's curves against the offered rate;
//! - [`charts`]: drawing a figure with plotters;
//! - [`summary`]: the primary figure per model × connections, and the
//!   skipped and failed cells;
//! - [`environment`]: where the run took place;
//! - [`tables`]: every table of the run, for the page, the exports and the
//!   terminal;
//! - [`page`]: the HTML around them; [`crate::present::units`]: numbers for people;
//! - [`compare`]: the page of `c10k compare`.

pub mod charts;
pub mod compare;
pub mod curves;
pub mod environment;
pub mod figures;
pub mod forest;
pub mod memory;
pub mod page;
pub mod summary;
pub mod tables;

use std::path::PathBuf;

use anyhow::Context as _;

use crate::results::dir::RunData;

pub use summary::summary_table;
pub use tables::{glance, outro, sections, RunTables, Section};

/// The report of a run as one HTML page.
pub fn render(data: &RunData) -> anyhow::Result<String> {
    page::render(data)
}

/// Writes `report.html` into the results directory (atomically) and returns
/// its path.
pub fn write(data: &RunData) -> anyhow::Result<PathBuf> {
    let html = render(data)?;
    let path = data.dir.join("report.html");
    crate::export::target::write(&path, html.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
