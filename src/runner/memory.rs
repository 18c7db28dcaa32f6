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
//! and most arm64 Linux.) Cost: one pass over the results.

use super::cell::{CellResult, Status};
use super::results::RunData;
use crate::export::table::Table;
use crate::present::units::sig3;
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
    if c.status != Status::Ok || c.load.as_ref()?.workload == "churn" {
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

/// Every measured cell's delta of `kind`, in the order recorded.
pub(crate) fn deltas(data: &RunData, kind: Kind) -> Vec<CellDelta> {
    let cpus = cpus_online(data);
    crate::runner::series::latest(data)
        .into_iter()
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
    crate::runner::series::models(data)
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

/// The unit a KiB amount reads best in: (KiB per unit, name).
fn unit(kib: f64) -> (f64, &'static str) {
    let a = kib.abs();
    if a >= 1024.0 * 1024.0 {
        (1024.0 * 1024.0, "GiB")
    } else if a >= 1024.0 {
        (1024.0, "MiB")
    } else if a >= 1.0 {
        (1.0, "KiB")
    } else {
        (1.0 / 1024.0, "B")
    }
}

/// An amount of memory given in KiB, for people: `410 B`, `1.1 KiB`,
/// `8.2 MiB`.
pub fn kib(v: f64) -> String {
    if v == 0.0 {
        return "0 B".into();
    }
    let (per, name) = unit(v);
    format!("{} {name}", sig3(v / per))
}

/// `1.1 KiB [0.9, 1.3]`: a slope with its interval in the slope's unit.
pub(crate) fn slope_text(f: &LinearFit) -> String {
    let (per, name) = unit(f.slope.abs().max(f.slope_hi.abs()));
    format!(
        "{} {name} [{}, {}]",
        sig3(f.slope / per),
        sig3(f.slope_lo / per),
        sig3(f.slope_hi / per)
    )
}

/// What a model's slope says in a table cell; without a slope (one
/// connection count, or fewer than three cells), what its cells say.
pub(crate) fn slope_cell(s: &Slope, deltas: &[CellDelta]) -> String {
    if let Some(f) = &s.fit {
        return slope_text(f);
    }
    let mine: Vec<&CellDelta> = deltas.iter().filter(|d| d.model == s.model).collect();
    cells_text(&mine).unwrap_or_else(|| "–".into())
}

/// Per connection from cells alone: the median of those that resolve a
/// cost, or "below resolution (≤ X)" when none does; `None` without cells.
pub(crate) fn cells_text(cells: &[&CellDelta]) -> Option<String> {
    let resolved: Vec<f64> = cells
        .iter()
        .filter(|d| d.resolved())
        .map(|d| d.per_connection_kib())
        .collect();
    match crate::stats::Summary::of(&resolved) {
        Some(m) => Some(format!("{} (cells)", kib(m.median))),
        None => cells
            .iter()
            .map(|d| d.bound_kib())
            .reduce(f64::max)
            .map(|b| format!("below resolution (≤ {})", kib(b))),
    }
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
    for model in crate::runner::series::models(data) {
        let cells: Vec<Option<&Slope>> = per_kind
            .iter()
            .map(|s| s.iter().find(|s| s.model == model))
            .collect();
        let Some(count) = cells.iter().flatten().map(|s| s.cells).max() else {
            continue;
        };
        let mut row = vec![model.clone()];
        row.extend(
            cells
                .iter()
                .zip(&all)
                .map(|(s, d)| s.map_or_else(|| "–".to_string(), |s| slope_cell(s, d))),
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
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_in_their_unit() {
        assert_eq!(kib(0.4), "410 B");
        assert_eq!(kib(1.1), "1.1 KiB");
        assert_eq!(kib(8200.0), "8.01 MiB");
        assert_eq!(kib(0.0), "0 B");
        let f = LinearFit {
            slope: 1.1,
            intercept: 0.0,
            slope_lo: 0.9,
            slope_hi: 1.3,
            points: 9,
            x_min: 10.0,
            x_max: 1000.0,
        };
        assert_eq!(slope_text(&f), "1.1 KiB [0.9, 1.3]");
        let flat = LinearFit {
            slope: 0.02,
            slope_lo: -0.3,
            slope_hi: 0.34,
            ..f
        };
        assert_eq!(slope_text(&flat), "20.5 B [-307, 348]");
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
