//! Memory per connection of each model, as the slope of what the
//! connections added against how many there were, over every measured cell
//! of the model ([`crate::stats::slope`]: least squares, 95 % interval from
//! Student's t with n − 2 degrees of freedom).
//!
//! One cell alone cannot resolve what an event loop spends per connection:
//! at 10 connections, a few hundred bytes each is less than one page. Each
//! cell gives a delta, *loaded minus idle*: the server tree's anonymous PSS
//! ([`Kind::User`]) or virtual size ([`Kind::Virtual`]) with every
//! connection up minus just after start, or the kernel's slab plus TCP
//! buffer memory, system-wide, with every connection up minus before the
//! server started ([`Kind::Kernel`], both ends of each loopback
//! connection). Fitting the deltas rather than the loaded values takes each
//! cell's baseline out (the system's slab moves between cells). A slope
//! whose interval holds 0 shows no cost per connection.
//!
//! **Resolution.** Memory comes in pages: anonymous PSS and virtual size
//! change by whole pages per process (`smaps_rollup` reports KiB, a page is
//! 4 KiB), so a cell's delta is resolved only when it exceeds one page per
//! process of the tree ([`PAGE_KIB`] × processes). Kernel memory is coarser
//! than its units: /proc/meminfo's Slab folds per-CPU counters that may
//! each hold up to [`SLAB_PCPU_PAGES`] pages not yet counted, and TCP's
//! memory in /proc/net/sockstat is reserved per CPU in batches of up to
//! [`TCP_PCPU_PAGES`] pages (`net.core.mem_pcpu_rsv`), so a kernel delta is
//! resolved only past two pages plus both batches on every online CPU
//! (about 1.5 MiB per CPU; the run's `environment.json` gives the CPUs).
//! A cell at or below its resolution shows as "below resolution (≤ X)",
//! X the resolution over its connections, never as a number, and still
//! counts in the slope; and the slope's interval is widened by the most
//! these steps could move it ([`LinearFit::fit_rounded`]), so a model whose
//! every delta reads 0 gets "at most X", not "exactly 0". (The page size of
//! the machine that ran the cells is not recorded; 4 KiB is that of x86-64
//! and most arm64 Linux.)
//!
//! **Never a negative cost.** A cost is what its interval allows
//! ([`Cost`]): a slope whose interval is above zero is a cost; one whose
//! interval holds zero shows none, at most its upper end ("≤ X"); one
//! whose whole interval is below zero (memory the rest of the system gave
//! back while the connections came up: the kernel's slab is system-wide)
//! shows "no cost seen", with the size of that noise. The same for a
//! single count's cells. Each column of the table reads in one unit.
//!
//! **Identical slopes are real.** c10k's readiness loops (busy, select,
//! poll, sigio, epoll, hybrid) share one connection table
//! (`src/server/table.rs`: a slot per descriptor in a vector that doubles),
//! so their cells add the same whole pages at each count (none at 10 or
//! 100 connections, 19 at 1,000 in the tour), and what each one's way of
//! waiting adds (select's bitmap is sized at start, poll's array is 8 bytes
//! a connection) stays under a page: at page resolution their deltas are
//! the same up to a constant, and so are their slopes and intervals. The
//! table says so whenever two models' slopes above zero coincide
//! ([`identical`]). Cost: one pass over the results.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::client::plan::LoadKind;
use crate::export::table::Table;
use crate::present::units::{kib, sig3, Scale};
use crate::present::words::and_list;
use crate::results::cell::{CellResult, Status};
use crate::results::dir::RunData;
use crate::stats::slope::LinearFit;

/// A page, KiB: the step in which a process's memory changes.
pub(crate) const PAGE_KIB: f64 = 4.0;

/// The most pages a CPU's vmstat counter holds back from /proc/meminfo
/// (the kernel's `MAX_THRESHOLD`).
pub(crate) const SLAB_PCPU_PAGES: f64 = 125.0;

/// The most pages of TCP memory reserved ahead per CPU
/// (`net.core.mem_pcpu_rsv`, 1 MiB by default).
pub(crate) const TCP_PCPU_PAGES: f64 = 256.0;

/// Which memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The server tree's anonymous PSS (heap, stacks, buffers).
    User,
    /// The server tree's virtual size (thread stacks show here).
    Virtual,
    /// Slab plus TCP buffers, system-wide.
    Kernel,
}

impl Kind {
    pub(crate) const ALL: [Kind; 3] = [Kind::User, Kind::Virtual, Kind::Kernel];

    pub fn label(self) -> &'static str {
        match self {
            Kind::User => "user (PSS)",
            Kind::Virtual => "virtual",
            Kind::Kernel => "kernel",
        }
    }
}

/// What the connections of one cell added, and what one cell resolves.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CellDelta {
    pub model: String,
    pub connections: usize,
    pub run: usize,
    /// Loaded minus idle (or before), KiB.
    pub delta_kib: f64,
    /// The smallest delta a cell resolves, KiB.
    pub resolution_kib: f64,
}

impl CellDelta {
    pub(crate) fn per_connection_kib(&self) -> f64 {
        self.delta_kib / self.connections.max(1) as f64
    }

    /// The delta is larger than what one cell resolves.
    pub fn resolved(&self) -> bool {
        self.delta_kib.abs() > self.resolution_kib
    }

    /// The resolution per connection: what an unresolved cell is below.
    pub fn bound_kib(&self) -> f64 {
        self.resolution_kib / self.connections.max(1) as f64
    }
}

/// The delta of one cell, when it was measured with its connections held
/// (not churn, not a micro-benchmark); `cpus` online where it ran.
pub(crate) fn delta(c: &CellResult, kind: Kind, cpus: usize) -> Option<CellDelta> {
    if c.status != Status::Ok || c.load.as_ref()?.workload == LoadKind::Churn {
        return None;
    }
    let grew = |a: u64, b: u64| b as f64 - a as f64;
    let (delta_kib, resolution_kib) = match kind {
        Kind::User | Kind::Virtual => {
            let s = c.server.as_ref()?;
            let processes = s.idle.processes.max(s.loaded.processes).max(1) as f64;
            let d = if kind == Kind::User {
                grew(s.idle.pss_anon_kib, s.loaded.pss_anon_kib)
            } else {
                grew(s.idle.vm_size_kib, s.loaded.vm_size_kib)
            };
            (d, PAGE_KIB * processes)
        }
        Kind::Kernel => {
            let total = |k: crate::metrics::kernel::KernelMemory| k.slab_kib + k.tcp_buffers_kib;
            (
                grew(total(c.kernel_before?), total(c.kernel_loaded?)),
                kernel_resolution_kib(cpus),
            )
        }
    };
    Some(CellDelta {
        model: c.cell.model.clone(),
        connections: c.cell.connections,
        run: c.cell.run,
        delta_kib,
        resolution_kib,
    })
}

/// The smallest kernel delta a cell resolves with `cpus` online, KiB: two
/// pages, and each CPU's slab and TCP batches.
pub(crate) fn kernel_resolution_kib(cpus: usize) -> f64 {
    PAGE_KIB * (2.0 + cpus.max(1) as f64 * (SLAB_PCPU_PAGES + TCP_PCPU_PAGES))
}

/// CPUs online where the run took place (1 when not recorded).
fn cpus_online(data: &RunData) -> usize {
    data.environment["cpus_online"].as_u64().unwrap_or(1) as usize
}

/// Every measured cell's delta of `kind`, in the order recorded. A
/// resident server was sampled once, before its first slot: only that
/// slot's cell counts (its later slots carry the same samples, which
/// would count one measurement as many).
pub(crate) fn deltas(data: &RunData, kind: Kind) -> Vec<CellDelta> {
    let cpus = cpus_online(data);
    crate::results::series::latest(data)
        .into_iter()
        .filter(|c| c.slot.as_ref().is_none_or(|s| s.first))
        .filter_map(|c| delta(c, kind, cpus))
        .collect()
}

/// A model's memory per connection of one kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Slope {
    pub model: String,
    pub kind: Kind,
    /// KiB per connection; `None` with fewer than three cells or a single
    /// connection count.
    pub fit: Option<LinearFit>,
    /// Cells with this figure.
    pub cells: usize,
}

/// The slope of every model that has cells with this figure, in the plan's
/// order of models.
pub fn slopes(data: &RunData, kind: Kind) -> Vec<Slope> {
    let all = deltas(data, kind);
    crate::results::series::models(data)
        .into_iter()
        .filter_map(|model| {
            let points: Vec<(f64, f64, f64)> = all
                .iter()
                .filter(|d| d.model == model)
                .map(|d| (d.connections as f64, d.delta_kib, d.resolution_kib))
                .collect();
            (!points.is_empty()).then(|| Slope {
                fit: LinearFit::fit_rounded(&points),
                cells: points.len(),
                model,
                kind,
            })
        })
        .collect()
}

/// What a slope says of the cost per connection, KiB: never a negative
/// cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cost {
    /// The interval is above zero: a cost, with its interval.
    Per { slope: f64, lo: f64, hi: f64 },
    /// The interval holds zero: no cost shown, at most `hi`.
    AtMost { hi: f64 },
    /// The whole interval is below zero: no cost seen; memory fell as
    /// connections rose, by as much as `noise` a connection (what else the
    /// system freed meanwhile).
    NoneSeen { noise: f64 },
}

impl Cost {
    /// The cost a fitted slope shows.
    pub fn of(f: &LinearFit) -> Cost {
        if f.slope_lo > 0.0 {
            Cost::Per {
                slope: f.slope,
                lo: f.slope_lo,
                hi: f.slope_hi,
            }
        } else if f.slope_hi >= 0.0 {
            Cost::AtMost { hi: f.slope_hi }
        } else {
            Cost::NoneSeen {
                noise: f.slope_lo.abs(),
            }
        }
    }

    /// The size the column's unit is picked by.
    pub fn magnitude(&self) -> f64 {
        match *self {
            Cost::Per { slope, .. } => slope,
            Cost::AtMost { hi } => hi,
            Cost::NoneSeen { noise } => noise,
        }
    }

    /// In `scale`: `1.1 KiB [0.9, 1.3]` (with `interval`) or `1.1 KiB`;
    /// `≤ 0.34 KiB`; `no cost seen (noise ±40 KiB)`.
    pub fn text(&self, scale: &Scale, interval: bool) -> String {
        match *self {
            Cost::Per { slope, lo, hi } if interval => format!(
                "{} [{}, {}]",
                scale.format(slope),
                scale.number(lo),
                scale.number(hi)
            ),
            Cost::Per { slope, .. } => scale.format(slope),
            Cost::AtMost { hi } => format!("≤ {}", scale.format(hi)),
            Cost::NoneSeen { noise } => format!("no cost seen (noise ±{})", scale.format(noise)),
        }
    }
}

/// What one count's cells say per connection, without a slope.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CellsCost {
    /// The median of the cells that resolve a cost, above zero.
    Median(f64),
    /// Cells resolve only a fall (noise), at most this much.
    NoneSeen { noise: f64 },
    /// No cell resolves anything: each is below this.
    Below(f64),
}

impl CellsCost {
    /// The median of the cells that resolve a cost, or what else they say;
    /// `None` without cells.
    pub(crate) fn of(cells: &[&CellDelta]) -> Option<CellsCost> {
        let resolved: Vec<f64> = cells
            .iter()
            .filter(|d| d.resolved())
            .map(|d| d.per_connection_kib())
            .collect();
        match crate::stats::Summary::of(&resolved) {
            Some(m) if m.median > 0.0 => Some(CellsCost::Median(m.median)),
            Some(m) => Some(CellsCost::NoneSeen { noise: m.min.abs() }),
            None => cells
                .iter()
                .map(|d| d.bound_kib())
                .reduce(f64::max)
                .map(CellsCost::Below),
        }
    }

    pub fn magnitude(&self) -> f64 {
        match *self {
            CellsCost::Median(v) | CellsCost::Below(v) => v,
            CellsCost::NoneSeen { noise } => noise,
        }
    }

    /// In `scale`: `1.1 KiB`, `no cost seen (noise ±X)`, `below
    /// resolution (≤ X)`; `tagged` (beside slopes) says they are cells':
    /// `1.1 KiB (cells)`, `no cost seen (cells: noise ±X)`.
    pub fn text(&self, scale: &Scale, tagged: bool) -> String {
        let (tag, of) = if tagged {
            (" (cells)", "cells: ")
        } else {
            ("", "")
        };
        match *self {
            CellsCost::Median(v) => format!("{}{tag}", scale.format(v)),
            CellsCost::NoneSeen { noise } => {
                format!("no cost seen ({of}noise ±{})", scale.format(noise))
            }
            CellsCost::Below(b) => format!("below resolution (≤ {})", scale.format(b)),
        }
    }
}

/// A model's memory per connection, as a table shows it: its slope's cost
/// over the run, or without a slope, what its cells say.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PerConnection {
    Slope(Cost),
    Cells(CellsCost),
}

impl PerConnection {
    /// `model`'s: its slope among `slopes`, or without one, its cells in
    /// `deltas` (at `n` connections only, when given).
    pub(crate) fn of(
        slopes: &[Slope],
        deltas: &[CellDelta],
        model: &str,
        n: Option<usize>,
    ) -> Option<PerConnection> {
        let slope = slopes.iter().find(|s| s.model == model)?;
        if let Some(f) = &slope.fit {
            return Some(PerConnection::Slope(Cost::of(f)));
        }
        let mine: Vec<&CellDelta> = deltas
            .iter()
            .filter(|d| d.model == model && n.is_none_or(|n| d.connections == n))
            .collect();
        CellsCost::of(&mine).map(PerConnection::Cells)
    }

    /// The size a column's unit is picked by ([`Scale::kib`]).
    pub fn magnitude(&self) -> f64 {
        match self {
            PerConnection::Slope(c) => c.magnitude(),
            PerConnection::Cells(c) => c.magnitude(),
        }
    }

    /// In `scale`, a slope with its interval when `interval`.
    pub fn text(&self, scale: &Scale, interval: bool) -> String {
        match self {
            PerConnection::Slope(c) => c.text(scale, interval),
            PerConnection::Cells(c) => c.text(scale, true),
        }
    }
}

/// What one count's cells say, in their own unit ([`CellsCost`]); `None`
/// without cells. A column reads better through [`PerConnection`] and one
/// [`Scale`].
#[cfg(test)]
fn cells_text(cells: &[&CellDelta]) -> Option<String> {
    CellsCost::of(cells).map(|c| c.text(&Scale::kib([c.magnitude()]), true))
}

/// Groups of models whose slopes above zero read the same (slope and
/// interval to three digits): each group of two or more, in plan order.
pub(crate) fn identical(slopes: &[Slope]) -> Vec<Vec<String>> {
    let key = |f: &LinearFit| [f.slope, f.slope_lo, f.slope_hi].map(sig3);
    let mut groups: Vec<([String; 3], Vec<String>)> = Vec::new();
    for s in slopes {
        let Some(f) = s.fit.filter(|f| f.slope_lo > 0.0) else {
            continue;
        };
        let k = key(&f);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, models)) => models.push(s.model.clone()),
            None => groups.push((k, vec![s.model.clone()])),
        }
    }
    groups
        .into_iter()
        .map(|(_, m)| m)
        .filter(|m| m.len() > 1)
        .collect()
}

/// The smallest and largest connection count with memory figures.
fn span(data: &RunData) -> Option<(usize, usize)> {
    let d = deltas(data, Kind::User);
    let lo = d.iter().map(|d| d.connections).min()?;
    let hi = d.iter().map(|d| d.connections).max()?;
    Some((lo, hi))
}

/// The memory-per-connection table: one row per model, a slope with its
/// interval per kind of memory; `None` when no cell has memory figures.
pub fn table(data: &RunData) -> Option<Table> {
    let (lo, hi) = span(data)?;
    let per_kind: Vec<Vec<Slope>> = Kind::ALL.iter().map(|&k| slopes(data, k)).collect();
    let all: Vec<Vec<CellDelta>> = Kind::ALL.iter().map(|&k| deltas(data, k)).collect();
    let fmt = |n: usize| crate::present::units::format_count(n as f64);
    let mut t = Table::new(
        if lo == hi {
            format!(
                "Memory per connection at {} connections (one count: no slope, the cells' \
                 median)",
                fmt(lo)
            )
        } else {
            format!(
                "Memory per connection: slope over {}…{} connections (95 % interval)",
                fmt(lo),
                fmt(hi)
            )
        },
        &["model", "user (PSS)", "virtual", "kernel", "cells"],
    );
    let models = crate::results::series::models(data);
    // Each kind's column in one unit.
    let columns: Vec<Vec<Option<PerConnection>>> = per_kind
        .iter()
        .zip(&all)
        .map(|(slopes, deltas)| {
            models
                .iter()
                .map(|m| PerConnection::of(slopes, deltas, m, None))
                .collect()
        })
        .collect();
    let scales: Vec<Scale> = columns
        .iter()
        .map(|c| Scale::kib(c.iter().flatten().map(PerConnection::magnitude)))
        .collect();
    for (i, model) in models.iter().enumerate() {
        let Some(count) = per_kind
            .iter()
            .filter_map(|s| s.iter().find(|s| s.model == *model))
            .map(|s| s.cells)
            .max()
        else {
            continue;
        };
        let mut row = vec![model.clone()];
        row.extend(
            columns
                .iter()
                .zip(&scales)
                .map(|(c, scale)| c[i].map_or_else(|| "–".to_string(), |f| f.text(scale, true))),
        );
        row.push(count.to_string());
        t.rows.push(row);
    }
    t.notes.push(format!(
        "Least squares of what the connections added (loaded minus idle) against the \
         connections, over every measured cell of the model; the interval is Student's t \
         widened by what one cell's resolution could move the slope, and one holding 0 shows \
         no cost per connection. User: the server tree's anonymous PSS; virtual: its virtual \
         size; kernel: slab and TCP buffers, system-wide, both ends of each loopback \
         connection. One cell resolves a page ({}) per process for user and virtual memory; \
         for the kernel, the per-CPU batches in which Linux counts slab and TCP memory ({} \
         here).",
        kib(PAGE_KIB),
        kib(kernel_resolution_kib(cpus_online(data)))
    ));
    t.notes.push(
        "Never a negative cost: an interval holding 0 reads \"≤\" its upper end; one wholly \
         below 0 (memory that fell as connections rose: what the rest of the system freed \
         meanwhile, the kernel's slab above all) reads \"no cost seen\", with the size of that \
         noise. Each column reads in one unit."
            .to_string(),
    );
    for (kind, slopes) in Kind::ALL.iter().zip(&per_kind) {
        for group in identical(slopes) {
            // The models that run c10k's readiness loop
            // (`src/server/reactor.rs`) and its connection table.
            let readiness = |m: &String| crate::server::find(m).is_some_and(|m| m.readiness());
            let shared = if group.iter().all(readiness) {
                " (they share c10k's one connection table, a slot per descriptor in a vector \
                 that doubles)"
            } else {
                ""
            };
            t.notes.push(format!(
                "{} have the same {} slope, and it is real: their cells added the same whole \
                 pages at each count, up to a constant{shared}, and what each one's way of \
                 waiting adds per connection stays under the page one cell resolves.",
                and_list(&group),
                kind.label()
            ));
        }
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_read_in_their_unit() {
        let f = LinearFit {
            slope: 1.1,
            intercept: 0.0,
            slope_lo: 0.9,
            slope_hi: 1.3,
            points: 9,
            x_min: 10.0,
            x_max: 1000.0,
        };
        let scale = Scale::kib([1.1]);
        assert_eq!(Cost::of(&f).text(&scale, true), "1.1 KiB [0.9, 1.3]");
        assert_eq!(Cost::of(&f).text(&scale, false), "1.1 KiB");
    }

    fn fit(slope: f64, lo: f64, hi: f64) -> LinearFit {
        LinearFit {
            slope,
            intercept: 0.0,
            slope_lo: lo,
            slope_hi: hi,
            points: 9,
            x_min: 10.0,
            x_max: 1000.0,
        }
    }

    #[test]
    fn a_cost_is_never_negative() {
        // Above zero: a cost. Holding zero: at most its upper end, even
        // with a negative slope. Wholly below: no cost seen, the noise's
        // size said without a sign.
        let kib = Scale::kib([40.0]);
        assert_eq!(
            Cost::of(&fit(-10.4, -26.1, 5.36)).text(&kib, true),
            "≤ 5.36 KiB"
        );
        assert_eq!(
            Cost::of(&fit(-22.6, -40.0, -5.22)),
            Cost::NoneSeen { noise: 40.0 }
        );
        let text = Cost::of(&fit(-22.6, -40.0, -5.22)).text(&kib, true);
        assert_eq!(text, "no cost seen (noise ±40 KiB)");
        assert!(!text.contains('-'));
        assert_eq!(Cost::of(&fit(0.0, -1.0, 1.0)), Cost::AtMost { hi: 1.0 });
        assert_eq!(Cost::of(&fit(0.0, 0.0, 0.0)), Cost::AtMost { hi: 0.0 });
        // The same for one count's cells: a resolved fall is no cost.
        let d = |delta_kib: f64| CellDelta {
            model: "m".into(),
            connections: 10,
            run: 1,
            delta_kib,
            resolution_kib: PAGE_KIB,
        };
        let (fell, grew, flat) = (d(-80.0), d(80.0), d(0.0));
        assert_eq!(
            CellsCost::of(&[&fell]),
            Some(CellsCost::NoneSeen { noise: 8.0 })
        );
        assert_eq!(CellsCost::of(&[&grew]), Some(CellsCost::Median(8.0)));
        assert_eq!(CellsCost::of(&[&flat]), Some(CellsCost::Below(0.4)));
        assert_eq!(CellsCost::of(&[]), None);
        assert_eq!(
            cells_text(&[&fell]).as_deref(),
            Some("no cost seen (cells: noise ±8 KiB)")
        );
    }

    #[test]
    fn identical_slopes_above_zero_are_grouped() {
        let s = |model: &str, f: Option<LinearFit>| Slope {
            model: model.into(),
            kind: Kind::User,
            fit: f,
            cells: 9,
        };
        let same = fit(0.0799, 0.0656, 0.0942);
        let slopes = [
            s("busy", Some(same)),
            s("select", Some(fit(0.07991, 0.06561, 0.09419))),
            s("uring", Some(fit(0.189, 0.167, 0.212))),
            s("poll", Some(same)),
            // Holding zero: not a cost, not grouped however alike.
            s("a", Some(fit(0.0, -0.1, 0.1))),
            s("b", Some(fit(0.0, -0.1, 0.1))),
            s("c", None),
        ];
        assert_eq!(
            identical(&slopes),
            vec![vec!["busy".to_string(), "select".into(), "poll".into()]]
        );
    }

    #[test]
    fn kernel_resolution_counts_every_cpus_batches() {
        assert_eq!(kernel_resolution_kib(1), 4.0 * (2.0 + 381.0));
        assert_eq!(kernel_resolution_kib(2), 4.0 * (2.0 + 762.0));
        assert_eq!(kernel_resolution_kib(0), kernel_resolution_kib(1));
    }

    #[test]
    fn resolution_is_a_page_per_process_over_the_connections() {
        let d = CellDelta {
            model: "epoll".into(),
            connections: 10,
            run: 1,
            delta_kib: 4.0,
            resolution_kib: PAGE_KIB,
        };
        assert!(!d.resolved());
        assert!((d.bound_kib() - 0.4).abs() < 1e-12);
        assert!(CellDelta {
            delta_kib: 8.0,
            ..d.clone()
        }
        .resolved());
        assert!(CellDelta {
            delta_kib: -12.0,
            ..d
        }
        .resolved());
    }
}
