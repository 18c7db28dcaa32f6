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

use crate::analysis::verdict::Standing;
use crate::results::cell::CellResult;
use crate::results::dir::RunData;
use crate::results::matrix::{Primary, RunPlan};

/// The version of results.json's shape: raised when a field changes
/// meaning, disappears or is required anew (3: each ranking row's
/// `costs`, each tuned answer's `threads` and `processes`).
pub const SCHEMA_VERSION: u32 = 3;

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
        // Each row names its part's work profile itself.
        for (_, rows) in crate::analysis::verdict::standings(part_data) {
            summary.extend(rows);
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
