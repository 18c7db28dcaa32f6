//! How a series looks in every chart (its colour, marker and line dash):
//! a model of the server registry by its place there, so a model has one
//! look wherever it is drawn (the report's figures, the herd's chart); any
//! other series (a peer, a variant, a server of the user's, a herd method)
//! takes the first look no series of its chart has. The palette has 24
//! colours, so up to 24 series never share one; past them the line is
//! dashed, then dotted, and the marker differs too.

use plotters::style::RGBColor;

/// How a series looks in every chart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    pub color: RGBColor,
    pub marker: Marker,
    pub dash: Dash,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
    Cross,
}

/// How a line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
}

impl Dash {
    /// Dash and gap lengths in pixels; `None` for a solid line.
    pub fn pattern(self) -> Option<(u32, u32)> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some((9, 5)),
            Dash::Dotted => Some((2, 4)),
        }
    }
}

/// Twenty-four colours for a white page. The first ten are Tableau 10,
/// the registry's first models' colours since the first report; the rest
/// (from ColorBrewer's Paired, D3's category 10 and a few dark ones) were
/// picked so that no two of the 24 are closer than 16 CIELAB units.
const PALETTE: [RGBColor; 24] = [
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
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x6a, 0x3d, 0x9a),
    RGBColor(0x1f, 0x3a, 0x93),
    RGBColor(0xb1, 0x59, 0x28),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0xa6, 0xce, 0xe3),
    RGBColor(0xb2, 0xdf, 0x8a),
    RGBColor(0xfd, 0xbf, 0x6f),
    RGBColor(0xca, 0xb2, 0xd6),
    RGBColor(0x8b, 0x00, 0x00),
    RGBColor(0x00, 0x6d, 0x2c),
    RGBColor(0x00, 0x00, 0xff),
];
/// The markers, in the order looks take them.
pub const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::Cross,
];
/// The dashes, in the order looks take them.
pub const DASHES: [Dash; 3] = [Dash::Solid, Dash::Dashed, Dash::Dotted];

/// The `k`th look: colour `k` of the palette, round again past its end
/// with the next dash; the marker cycles at its own length, shifted each
/// time round, so neighbours differ in shape as well as colour and no two
/// of the first 360 looks are the same.
fn slot(k: usize) -> Look {
    let round = k / PALETTE.len();
    Look {
        color: PALETTE[k % PALETTE.len()],
        marker: MARKERS[(k + 2 * round) % MARKERS.len()],
        dash: DASHES[round % DASHES.len()],
    }
}

/// The look of each of `series`, drawn together in one chart: a model of
/// the registry (`names`, the server models in their order) has its own
/// (by its place there, so it does not change with the plan); every other
/// series takes the first look that no series of the chart has, after the
/// registry's (so it does not take a model's colour while free ones
/// remain). No two series share a colour until there are more than 24, nor
/// a look at all.
pub fn looks<S: AsRef<str>>(names: &[&str], series: &[S]) -> Vec<Look> {
    let own: Vec<Option<usize>> = series
        .iter()
        .map(|s| names.iter().position(|n| *n == s.as_ref()))
        .collect();
    let taken: Vec<usize> = own.iter().flatten().copied().collect();
    let mut free = (names.len()..PALETTE.len())
        .chain(0..names.len().min(PALETTE.len()))
        .chain(PALETTE.len()..)
        .filter(|k| !taken.contains(k));
    own.iter()
        .map(|o| slot(o.unwrap_or_else(|| free.next().unwrap_or(0))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_models_keep_their_look() {
        let alone = looks(&crate::server::names(), &["threads"]);
        let among = looks(&crate::server::names(), &["epoll", "go", "threads"]);
        assert_eq!(alone[0], among[2]);
        assert_ne!(among[0].color, among[2].color);
        // The registry's order decides, not the chart's.
        assert_eq!(looks(&crate::server::names(), &["fork", "threads"]), {
            let mut v = looks(&crate::server::names(), &["threads", "fork"]);
            v.reverse();
            v
        });
    }

    #[test]
    fn up_to_24_series_never_share_a_colour() {
        // Every model of the registry with the peers and more, in any mix.
        let mut series: Vec<String> = crate::server::names()
            .iter()
            .map(|s| s.to_string())
            .collect();
        series.extend((0..12).map(|i| format!("peer-{i}")));
        assert_eq!(series.len(), 24);
        for take in [10, 12, 13, 24] {
            let mixed: Vec<&String> = series.iter().rev().take(take).collect();
            let l = looks(&crate::server::names(), &mixed);
            for i in 0..l.len() {
                for j in 0..i {
                    assert_ne!(l[i].color, l[j].color, "{} and {}", mixed[i], mixed[j]);
                }
            }
        }
    }

    #[test]
    fn past_24_series_every_look_is_its_own() {
        let series: Vec<String> = (0..100).map(|i| format!("s{i}")).collect();
        let l = looks(&crate::server::names(), &series);
        for i in 0..l.len() {
            for j in 0..i {
                assert_ne!(l[i], l[j], "series {i} and {j}");
            }
        }
        // The 25th is drawn dashed.
        assert_eq!(l[24].dash, Dash::Dashed);
        assert_eq!(l[0].dash, Dash::Solid);
    }

    #[test]
    fn no_two_palette_colours_are_alike() {
        // CIELAB distance (CIE76) between every two colours of the palette.
        fn lab(c: RGBColor) -> [f64; 3] {
            let lin = |v: u8| {
                let c = f64::from(v) / 255.0;
                if c <= 0.04045 {
                    c / 12.92
                } else {
                    ((c + 0.055) / 1.055).powf(2.4)
                }
            };
            let (r, g, b) = (lin(c.0), lin(c.1), lin(c.2));
            let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
            let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
            let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
            let f = |t: f64| {
                if t > 0.008856 {
                    t.cbrt()
                } else {
                    7.787 * t + 16.0 / 116.0
                }
            };
            [
                116.0 * f(y) - 16.0,
                500.0 * (f(x) - f(y)),
                200.0 * (f(y) - f(z)),
            ]
        }
        for (i, &ci) in PALETTE.iter().enumerate() {
            for (j, &cj) in PALETTE[..i].iter().enumerate() {
                let (a, b) = (lab(ci), lab(cj));
                let d =
                    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt();
                assert!(d > 15.0, "colours {j} and {i} are {d:.1} apart");
            }
        }
    }
}
