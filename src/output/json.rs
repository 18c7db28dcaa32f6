//! `results.json`: a run's whole record and every answer a person reads
//! of it, as data: the plan, the environment and the cells as recorded,
//! and beside them the answers the tables print (the ranking per count
//! and work profile, a capacity search's held and missed rates, estimate,
//! knee, bound, share of it, call and cost, what `--tune` kept), built by
//! the same code the tables are rendered from, so the two cannot
//! disagree. Its JSON Schema is `schema/results.v{SCHEMA_VERSION}.schema.json`
//! (a test keeps the file and [`Results`] together and validates real
//! runs against it). Cost: one analysis of the run, as the tables take.

use schemars::JsonSchema;
use serde::Serialize;

use crate::analysis::summary::Beaten;
use crate::results::cell::{Bound, CellResult};
use crate::results::dir::RunData;
use crate::results::matrix::{Primary, RunPlan};
use crate::stats::paired::Comparison;
use crate::stats::Summary;

/// The version of results.json's shape: raised when a field changes
/// meaning or disappears.
pub const SCHEMA_VERSION: u32 = 2;

/// The JSON Schema of [`Results`].
pub fn schema() -> schemars::Schema {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<Results>();
    schema.insert(
        "$id".into(),
        format!("urn:c10k:results:v{SCHEMA_VERSION}").into(),
    );
    schema.insert(
        "title".into(),
        "c10k run: a run's results and its answers".into(),
    );
    schema
}

/// Everything results.json holds.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Results<'a> {
    #[schemars(extend("const" = SCHEMA_VERSION))]
    pub schema_version: u32,
    /// The plan, as plan.json holds it (its own format, versioned by its
    /// `version`).
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub plan: &'a RunPlan,
    /// Where it ran: kernel, CPUs, limits, sysctls.
    pub environment: &'a serde_json::Value,
    /// Every cell recorded, as results.jsonl holds them (a cell run again
    /// counts once).
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    pub cells: &'a [CellResult],
    /// The figure that ranks the models.
    pub primary_figure: Primary,
    /// The ranking per count and work profile, as its tables print it;
    /// empty for a capacity search, whose slots ran at different offered
    /// rates and are ranked by what each held (`capacity`).
    pub summary: Vec<Standing>,
    /// A capacity search's answer (`--slo`), per work profile and count.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(default)]
    pub capacity: Vec<crate::capacity::tables::Answer>,
    /// What `--tune` kept (or the pools a preset sized), per model, count
    /// and work profile.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(default)]
    pub tuned: Vec<crate::tuning::answers::TunedAnswer>,
}

/// One model's place at one count (and work profile) in the ranking.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Standing {
    pub model: String,
    pub connections: usize,
    /// The work profile; absent without a work axis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work: Option<String>,
    /// The primary figure over its runs.
    pub primary: Summary,
    /// Its group's rank; `null` when untested.
    pub rank: Option<usize>,
    /// Its group's first model.
    pub group_leader: String,
    /// How many times worse than the first row; `null` for that row.
    pub versus_best: Option<Comparison>,
    /// How many times worse than its group's first; `null` for that one.
    pub versus_leader: Option<Comparison>,
    /// For a group's first model below the top: what placed it there.
    pub placed_by: Option<Beaten>,
    /// Disturbed runs that were run again (not counted).
    pub repeated: usize,
    /// Runs counted although disturbed.
    pub disturbed: usize,
    /// Under work: the throughput the work allows, and the term that set
    /// it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// Throughput over that bound (`null`: nothing to set against it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_share: Option<Option<f64>>,
    /// Above the bound beyond noise and margin (a defect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub above_bound: Option<bool>,
}

/// The whole of results.json for `data`.
pub fn results(data: &RunData) -> Results<'_> {
    let searched = data.plan.capacity.is_some();
    let mut summary = Vec::new();
    let mut capacity = Vec::new();
    for part in crate::results::axis::parts(data) {
        let part_data = &part.data;
        if searched {
            capacity.extend(crate::capacity::tables::answers(part_data));
            continue;
        }
        for (n, rows) in crate::analysis::summary::standings(part_data) {
            for r in rows {
                let share = crate::analysis::bound::share(part_data, &r.model, n);
                summary.push(Standing {
                    connections: n,
                    work: part.work.map(|w| w.to_string()),
                    primary: r.summary,
                    rank: r.rank,
                    group_leader: r.leader,
                    versus_best: r.versus_best,
                    versus_leader: r.versus_leader,
                    placed_by: r.placed_by,
                    repeated: r.repeated,
                    disturbed: r.disturbed,
                    bound: share.as_ref().map(|b| b.bound.clone()),
                    bound_share: share.as_ref().map(|b| b.share),
                    above_bound: share.as_ref().map(|b| b.above.is_some()),
                    model: r.model,
                });
            }
        }
    }
    Results {
        schema_version: SCHEMA_VERSION,
        plan: &data.plan,
        environment: &data.environment,
        cells: &data.cells,
        primary_figure: data.plan.primary,
        summary,
        capacity,
        tuned: crate::tuning::answers::answers(data),
    }
}
