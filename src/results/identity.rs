//! Whether a record of `results.jsonl` is a result of the plan in
//! `plan.json`: its cell is the plan's cell of that id (model, work,
//! connections, run), it was measured with the plan's workload, and under the plan's
//! settings, which every record carries ([`settings`]). A record of another
//! plan is never counted: `--resume` refuses the directory and `c10k report`
//! names the line, so two experiments never mix and "N of M cells" never
//! counts past M.
//!
//! A cell's `index` (its place in the run order) is not compared: `--runs
//! auto` numbers the cells again as it adds runs. Settings are compared key
//! by key where both sides have the key, so a record from a c10k that knew
//! fewer (or more) settings is judged on those it shares; a record with no
//! settings at all (written before records carried them) is judged on its
//! cell and its workload.

use std::collections::HashMap;

use serde_json::Value;

use super::cell::CellResult;
use super::matrix::{CellSpec, RunPlan};
use crate::client::plan::LoadKind;

/// What every cell of `plan` is measured under: `plan.json` without its
/// cells (which `--runs auto` grows), the command line and the title (how
/// the run was started and described, not what it measures). `auto_runs`
/// is present even when off, so a record says that it ran without it.
pub fn settings(plan: &RunPlan) -> Value {
    let mut v = serde_json::to_value(plan).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        for k in ["cells", "command", "title"] {
            m.remove(k);
        }
        m.entry("auto_runs").or_insert(Value::Null);
    }
    v
}

/// A plan, ready to judge records.
pub(crate) struct Identity<'a> {
    cells: HashMap<&'a str, &'a CellSpec>,
    settings: Value,
    /// The workload as a load report names it.
    workload: LoadKind,
    size_label: &'a str,
}

impl<'a> Identity<'a> {
    pub fn of(plan: &'a RunPlan) -> Identity<'a> {
        Identity {
            cells: plan.cells.iter().map(|c| (c.id.as_str(), c)).collect(),
            settings: settings(plan),
            workload: plan.workload.load_kind(),
            size_label: &plan.size_label,
        }
    }

    /// Why `record` is not a result of the plan; `None` when it is.
    pub fn mismatch(&self, record: &CellResult) -> Option<String> {
        let r = &record.cell;
        let id = &r.id;
        let Some(p) = self.cells.get(id.as_str()) else {
            return Some(format!("cell {id} is not in plan.json"));
        };
        if (&r.model, r.connections, r.run) != (&p.model, p.connections, p.run) {
            return Some(format!(
                "cell {id} is {} at {} {}, run {} here, but {} at {}, run {} in plan.json",
                r.model, r.connections, self.size_label, r.run, p.model, p.connections, p.run
            ));
        }
        if r.work != p.work {
            return Some(format!(
                "cell {id} was measured under work {}, plan.json's is {}",
                r.profile(),
                p.profile()
            ));
        }
        if let Some(load) = &record.load {
            if load.workload != self.workload {
                return Some(format!(
                    "cell {id} was measured with a {} workload, plan.json's is {}",
                    load.workload, self.workload
                ));
            }
        }
        let (key, here, there) = differs("", record.plan.as_ref()?, &self.settings)?;
        Some(format!(
            "cell {id} was measured with {key} {here}, plan.json has {there}"
        ))
    }
}

/// The first setting `recorded` and `planned` both have and disagree on:
/// its dotted name and both values.
fn differs(path: &str, recorded: &Value, planned: &Value) -> Option<(String, String, String)> {
    if let (Value::Object(r), Value::Object(p)) = (recorded, planned) {
        return r.iter().find_map(|(k, rv)| {
            let name = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            differs(&name, rv, p.get(k)?)
        });
    }
    (!same(recorded, planned)).then(|| (path.to_string(), text(recorded), text(planned)))
}

/// Equal, with numbers equal to the last bits a decimal round trip may
/// change.
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y
                || match (x.as_f64(), y.as_f64()) {
                    (Some(x), Some(y)) => (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                    _ => false,
                }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// A value for a message: strings without their quotes.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_differing_setting_is_named_by_its_path() {
        let planned = json!({"experiment": "tour", "workload": {"kind": "burst", "depth": 1}});
        let recorded = json!({"experiment": "tour", "workload": {"kind": "closed", "depth": 1}});
        assert_eq!(
            differs("", &recorded, &planned),
            Some(("workload.kind".into(), "closed".into(), "burst".into()))
        );
        assert_eq!(differs("", &planned, &planned), None);
    }

    #[test]
    fn settings_one_side_lacks_are_not_judged() {
        let planned = json!({"runs": 3, "new_setting": true});
        let recorded = json!({"runs": 3, "old_setting": 7});
        assert_eq!(differs("", &recorded, &planned), None);
        let recorded = json!({"runs": 2});
        assert_eq!(
            differs("", &recorded, &planned),
            Some(("runs".into(), "2".into(), "3".into()))
        );
    }

    #[test]
    fn numbers_compare_past_a_decimal_round_trip_only() {
        let x = 0.1f64 + 0.2;
        let y = f64::from_bits(x.to_bits() + 1);
        assert!(same(&json!(x), &json!(y)));
        assert!(!same(&json!(0.3), &json!(0.31)));
        assert!(!same(&json!(10), &json!(11)));
        assert!(!same(&json!([1, 2]), &json!([1, 2, 3])));
    }
}
