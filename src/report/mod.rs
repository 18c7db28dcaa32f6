//! `report.html`: one self-contained page (inline SVG charts, no network).
// (written by the report helper)
