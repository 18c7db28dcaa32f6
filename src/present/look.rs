//! How a model looks in every chart (its colour and marker), by its place
//! in the server registry: the report's figures and the herd's chart share
//! it, so a model has one look wherever it is drawn.

use plotters::style::RGBColor;

/// How a model looks in every chart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    pub color: RGBColor,
    pub marker: Marker,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    Cross,
}

/// Ten colours that stay apart for most readers (Tableau 10), one per
/// model of the registry, so a model has the same colour in every report.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xc9, 0xa2, 0x27),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0x55, 0x55, 0x55),
];
const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::Cross,
];

/// The look of `model`: by its place in the server registry, so it does
/// not change with the plan; a model the registry does not know takes the
/// colours after `fallback` (its place in the plan).
pub fn look(model: &str, fallback: usize) -> Look {
    let names = crate::server::names();
    let i = names
        .iter()
        .position(|n| *n == model)
        .unwrap_or(names.len() + fallback);
    Look {
        color: PALETTE[i % PALETTE.len()],
        // Colour and shape cycle at different lengths: no two of the first
        // fifty models look the same, and shape alone tells neighbours apart.
        marker: MARKERS[(i + i / PALETTE.len()) % MARKERS.len()],
    }
}
