//! What a comparison found, as one value: printed as text and Markdown
//! ([`super::text`]), drawn as a page ([`crate::report::compare`]), and
//! written as JSON under a versioned schema
//! (`schema/compare-report.v{SCHEMA_VERSION}.schema.json`; a test keeps the
//! file and [`schema`] equal, `C10K_BLESS=1` rewrites it). Ratios are
//! always NEW over BASE; a verdict says which way is worse for the figure.

use schemars::JsonSchema;
use serde::Serialize;

use super::input::Kind;
use super::settings::Difference;

/// The version of this format, bumped whenever a field changes meaning or
/// disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON Schema of [`Comparison`].
pub fn schema() -> schemars::Schema {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<Comparison>();
    schema.insert(
        "$id".into(),
        format!("urn:c10k:compare-report:v{SCHEMA_VERSION}").into(),
    );
    schema.insert("title".into(), "c10k compare: two runs cell by cell".into());
    schema
}

/// Everything `c10k compare` found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Comparison {
    pub schema_version: u32,
    /// The command line.
    pub command: String,
    /// A cell is equivalent when the 95 % interval of NEW/BASE lies within
    /// ± this share, slower or faster only when it lies wholly beyond it.
    pub margin: f64,
    /// `--fail-if-slower` as a share; absent when not given.
    pub fail_if_slower: Option<f64>,
    /// `--reference`: the model every figure was divided by, round by
    /// round, on each side.
    pub reference: Option<String>,
    /// The test, in a sentence.
    pub test: String,
    pub base: SideInfo,
    pub new: SideInfo,
    pub primary: PrimaryInfo,
    /// Settings that differ between the two sides (plan, then machine).
    pub differences: Vec<Difference>,
    /// Set when the two ran on different machines: every ratio holds it.
    pub other_machine: Option<String>,
    /// Set when every tested cell moved alike: a change of the machine
    /// between the sessions is then likelier than of every model.
    pub drift: Option<String>,
    pub summary: Summary,
    /// Each cell's runs compared; empty when the sides are capacity
    /// searches, whose decided rates are compared instead (`capacity`).
    pub cells: Vec<Cell>,
    /// Two capacity searches (`--slo`) cell by cell; empty otherwise.
    pub capacity: Vec<Capacity>,
    /// Memory per connection of each model (a slope over the counts).
    pub memory: Vec<Memory>,
    /// Cells one side measured or planned and the other did not.
    pub only_base: Vec<Unmatched>,
    pub only_new: Vec<Unmatched>,
    /// What the reader must know of the inputs (one line each).
    pub warnings: Vec<String>,
    /// `--fail-if-slower`'s outcome; absent when not given.
    pub gate: Option<Gate>,
}

/// One input.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SideInfo {
    pub path: String,
    pub kind: Kind,
    /// The preset (`tour`, `custom`), or `load`.
    pub experiment: String,
    /// Most repeats of a cell.
    pub runs: usize,
    pub c10k_version: Option<String>,
    pub hostname: Option<String>,
    pub kernel: Option<String>,
    pub cpu_model: Option<String>,
}

/// The figure that ranks the cells.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PrimaryInfo {
    /// Throughput (round trips/s), latency (corrected p99, µs), time
    /// (seconds), accept rate (connections/s).
    pub figure: crate::results::matrix::Primary,
    /// `round trips/s`, `p99 latency`, `time`, `connections/s`.
    pub label: String,
    pub higher_is_better: bool,
    /// What worse and better are called: `slower`/`faster` or
    /// `longer`/`shorter`.
    pub worse: String,
    pub better: String,
}

/// The counts of verdicts and the line that says them first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Summary {
    /// `3 of 12 cells slower, worst epoll at 1,000: 0.91× [0.88, 0.94]; …`
    pub line: String,
    /// Cells on both sides.
    pub matched: usize,
    /// Matched cells with at least two measured runs a side.
    pub tested: usize,
    pub slower: usize,
    pub faster: usize,
    pub equivalent: usize,
    pub inconclusive: usize,
    /// Matched cells with a single run (or none) on a side.
    pub untested: usize,
}

/// What a figure did between the two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Worse beyond the margin with 95 % confidence (for a time: longer).
    Slower,
    /// Better beyond the margin with 95 % confidence.
    Faster,
    /// The whole 95 % interval lies within the margin.
    Equivalent,
    /// Neither: the runs do not settle it.
    Inconclusive,
    /// Fewer than two runs with the figure on a side: no test.
    Untested,
}

/// A figure's runs on one side.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Runs {
    /// (run, value) of each run with the figure.
    pub values: Vec<(usize, f64)>,
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// A figure on both sides, and what changed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "Figure")]
pub struct FigurePair {
    pub base: Runs,
    pub new: Runs,
    /// NEW over BASE: the ratio of geometric means (tested), or of medians.
    pub ratio: Option<f64>,
    /// Its 95 % interval (Welch's t on the logarithms); absent untested.
    pub interval: Option<(f64, f64)>,
    pub verdict: Verdict,
    /// Inconclusive only: runs a side that would likely settle it.
    pub settle_runs: Option<usize>,
    /// The spread of one run against another, as a share.
    pub noise: Option<f64>,
}

/// One quantile of the latency on both sides.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Quantile {
    /// `p50`, `p90`, `p99`, `p99.9`.
    pub name: String,
    pub q: f64,
    /// Lower is better; untested where a run has fewer than 10/(1−q)
    /// latencies.
    pub figure: FigurePair,
}

/// A value on each side.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Pair<T> {
    pub base: T,
    pub new: T,
}

/// A latency spectrum: (quantile, µs), from the histograms when the loads
/// left them (`--hdr`), else the quantiles every run records (the median
/// over the runs).
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Curve {
    pub points: Vec<(f64, f64)>,
    /// From histograms (`hdr`) or recorded quantiles (`quantiles`).
    pub source: String,
}

/// One cell (work, model, connections) measured on both sides.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Cell {
    /// The work profile; absent without a work axis.
    pub work: Option<String>,
    pub model: String,
    pub connections: usize,
    /// The figure that ranks (see `primary`).
    pub primary: FigurePair,
    /// Does `--fail-if-slower` fail on this cell.
    pub gate_failed: bool,
    /// The round trip's quantiles (corrected in an open loop).
    pub latency: Vec<Quantile>,
    /// The latency's shift in a word, each quantile at 95 %: `longer
    /// throughout`, `shorter in the tail`, `equivalent throughout`, `not
    /// told apart`, `untested`.
    pub shift: String,
    /// The server's CPU per message, µs (lower is better); absent where
    /// not measured.
    pub server_cpu_per_message_us: Option<FigurePair>,
    /// Why the server's CPU per message is not a figure on either side
    /// (`unresolved (± 4 ms CPU)`: below the kernel's accounting), when
    /// it is not.
    pub server_cpu_why: Option<String>,
    /// Jain's index of round trips over the connections (median of runs).
    pub jain: Pair<Option<f64>>,
    /// Connections with no round trip in the window (most in a run).
    pub starved: Pair<Option<u64>>,
    /// What limited the figure on each side.
    pub limited_by: Pair<Option<String>>,
    /// Runs kept though disturbed from outside, on each side.
    pub disturbed: Pair<usize>,
    pub curve: Pair<Curve>,
}

/// What one side's capacity search decided for a cell.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Bracket {
    /// The highest offered rate decided to hold every target, /s.
    pub held: Option<f64>,
    /// The lowest offered rate decided to miss one, /s.
    pub missed: Option<f64>,
    /// Slots the search measured (cost rounds apart).
    pub slots: usize,
    /// Slots that measured (every slot, cost rounds included, that ended
    /// well).
    pub measured: usize,
    /// How the search ended, in words.
    pub end: String,
}

/// One cell of two capacity searches: NEW's capacity over BASE's lies
/// between `low` and `high` (an end absent where a side left it open).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Capacity {
    pub work: Option<String>,
    pub model: String,
    pub connections: usize,
    pub base: Bracket,
    pub new: Bracket,
    /// NEW held over BASE missed: NEW's capacity is at least this share
    /// of BASE's.
    pub low: Option<f64>,
    /// NEW missed over BASE held: at most this share.
    pub high: Option<f64>,
    /// `slower` here means lower capacity, `faster` higher.
    pub verdict: Verdict,
    /// Does `--fail-if-slower` fail on this cell.
    pub gate_failed: bool,
}

/// A model's memory per connection on both sides (anonymous PSS of the
/// server, the slope over the counts, KiB).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Memory {
    pub work: Option<String>,
    pub model: String,
    /// (slope, low, high) of its 95 % interval.
    pub base: Option<(f64, f64, f64)>,
    pub new: Option<(f64, f64, f64)>,
    /// `more`, `less` (intervals apart), `not told apart`, `untested`.
    pub verdict: String,
}

/// A cell, model or profile on one side only.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Unmatched {
    pub work: Option<String>,
    pub model: String,
    pub connections: Vec<usize>,
    /// Why, when not simply absent (a variant defined otherwise).
    pub why: Option<String>,
}

/// `--fail-if-slower PCT`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Gate {
    pub share: f64,
    /// The cells slower by more than the share, with 95 % confidence.
    pub failed: Vec<String>,
    /// The verdict of the gate in a line.
    pub line: String,
}
