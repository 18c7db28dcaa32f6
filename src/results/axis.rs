//! The work axis (`c10k run --work none,cpu:20us,block:1ms`): every model
//! at every count runs under each work profile, and each profile is an
//! experiment of its own for everything that reads the results. The
//! rankings, ties, verdicts, memory slopes, tables and charts all group a
//! run's cells by model and connection count; [`parts`] splits a run into
//! one [`Part`] per profile (its plan's cells and its records), so each of
//! them groups by (work, model, connections) without knowing of the axis.
//! A run without the axis is one part, unheaded and not copied: it looks
//! exactly as it always did. Cost: one copy of the records per profile.

use std::borrow::Cow;

use super::dir::RunData;
use super::matrix::{self, CellSpec};
use crate::server::work::Profile;

/// The cells of one work profile, as a run of their own.
#[derive(Debug, Clone)]
pub struct Part<'a> {
    /// The profile (`none`, `block:1ms`); `None` for a run without the
    /// axis.
    pub work: Option<&'a Profile>,
    pub data: Cow<'a, RunData>,
}

impl Part<'_> {
    /// What the part's tables and charts stand under: `Work: block:1ms`;
    /// `None` without the axis.
    pub fn heading(&self) -> Option<String> {
        self.work.map(|w| format!("Work: {w}"))
    }
}

/// `data` split by work profile, in the axis's order.
pub fn parts(data: &RunData) -> Vec<Part<'_>> {
    if data.plan.work.is_empty() {
        return vec![Part {
            work: None,
            data: Cow::Borrowed(data),
        }];
    }
    data.plan
        .work
        .iter()
        .zip(matrix::profiles(&data.plan.work))
        .map(|(name, work)| {
            let mine = |c: &CellSpec| c.work == work;
            let mut plan = data.plan.clone();
            plan.work = vec![name.clone()];
            plan.cells.retain(mine);
            plan.tuned.retain(|t| t.work == work);
            let keep = |v: &[super::cell::CellResult]| {
                v.iter().filter(|c| mine(&c.cell)).cloned().collect()
            };
            Part {
                work: Some(name),
                data: Cow::Owned(RunData {
                    dir: data.dir.clone(),
                    plan,
                    environment: data.environment.clone(),
                    cells: keep(&data.cells),
                    superseded: keep(&data.superseded),
                }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::dir::Figures;
    use crate::results::matrix::{Order, RunPlan};
    use crate::results::schedule::expand;

    #[test]
    fn a_run_splits_by_profile_and_one_without_the_axis_stays_whole() {
        let f = Figures {
            throughput: 1000.0,
            ..Default::default()
        };
        let whole = RunData::example_of(&[("a", vec![f]), ("b", vec![f])]);
        let parts = parts(&whole);
        assert_eq!(parts.len(), 1);
        assert!(parts[0].heading().is_none());
        assert!(matches!(parts[0].data, Cow::Borrowed(_)));

        let mut plan = RunPlan::example(&["a", "b"], &[10], 1);
        plan.work = vec!["none".parse().unwrap(), "block:1ms".parse().unwrap()];
        plan.cells = expand(
            &plan.models,
            &plan.connections,
            &plan.work,
            1,
            Order::Interleaved,
        );
        let mut data = RunData::example(plan.clone());
        for spec in &plan.cells {
            let mut c = whole.cells[0].clone();
            c.cell = spec.clone();
            data.cells.push(c);
        }
        let parts = super::parts(&data);
        let headings: Vec<Option<String>> = parts.iter().map(Part::heading).collect();
        assert_eq!(
            headings,
            [Some("Work: none".into()), Some("Work: block:1ms".into())]
        );
        for p in &parts {
            assert_eq!(p.data.plan.cells.len(), 2);
            assert_eq!(p.data.cells.len(), 2);
            let want = p.work.filter(|w| !w.is_none()).cloned();
            assert!(p.data.cells.iter().all(|c| c.cell.work == want));
        }
    }
}
