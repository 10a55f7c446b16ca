//! The columns of an experiment's `runs` table, known from its plan before any run: every
//! part of the table carries the same columns with the same types, so a reader that wants
//! one schema for all files (`pl.scan_parquet("results/<exp>/runs/")`) reads any bundled
//! or user experiment, whatever its variants remove or add.
//!
//! * A swept parameter's column is typed by the parameter's declared type in the registry
//!   ([`models::params::ParamType`]), never by the value one run happens to have: a run
//!   whose variant lacks the component writes a typed null.
//! * The summary columns are the union, in plan order, of every planned scenario's
//!   columns ([`models::run::summary_template`]: a scenario's column set is a function of
//!   its configuration, never of its luck); a run without a component writes typed nulls.
//!
//! Architecture invariant: the column list depends on the plan only (variants × sweep
//! points), never on which runs a batch or shard runs, nor on their results.
//!
//! API boundary: [`plan_columns`] (called once when the plan is made, kept in
//! [`Experiment::columns`]); `results::runs_frame` writes by it.

use super::Experiment;
use models::params::{ParamType, ParamValue};
use models::summary::Value;
use polars::prelude::Column;

/// How a swept parameter's values are written (`docs/results.md`, `runs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// Counts: u64, null = unbounded (`OptCount(None)`) or no such parameter.
    Count,
    /// Durations: f64 milliseconds, the column named `param.<path>_ms`.
    Millis,
    /// Real numbers: f64.
    Number,
    /// `true` / `false`: boolean.
    Bool,
    /// Distributions, choices, names and lists: their text in scenario syntax.
    Text,
}

impl ParamKind {
    /// The column kind of a declared parameter type.
    pub fn of(ty: &ParamType) -> ParamKind {
        match ty {
            ParamType::Count { .. } | ParamType::OptCount { .. } => ParamKind::Count,
            ParamType::Duration { .. } => ParamKind::Millis,
            ParamType::Float { .. } | ParamType::FloatAbove { .. } => ParamKind::Number,
            ParamType::Bool => ParamKind::Bool,
            ParamType::DurationDist
            | ParamType::NumberDist
            | ParamType::Enum { .. }
            | ParamType::Name { .. }
            | ParamType::List { .. } => ParamKind::Text,
        }
    }
}

/// The column of one swept parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamColumn {
    /// The registry path (`gate.llm.permits`).
    pub path: String,
    /// The column's name: `param.<path>`, or `param.<path>_ms` for a duration.
    pub name: String,
    pub kind: ParamKind,
}

impl ParamColumn {
    pub fn new(path: &str, kind: ParamKind) -> ParamColumn {
        let name = match kind {
            ParamKind::Millis => format!("param.{path}_ms"),
            _ => format!("param.{path}"),
        };
        ParamColumn { path: path.to_string(), name, kind }
    }

    /// The column of these runs' values (`None`: the run's variant has no such
    /// parameter), typed by the declared type whatever the values.
    pub fn column(&self, vals: &[Option<&ParamValue>]) -> Column {
        let name = self.name.as_str().into();
        match self.kind {
            ParamKind::Count => Column::new(
                name,
                vals.iter()
                    .map(|v| match v {
                        Some(ParamValue::Count(n)) => Some(*n),
                        Some(ParamValue::OptCount(n)) => *n,
                        _ => None,
                    })
                    .collect::<Vec<_>>(),
            ),
            ParamKind::Millis => Column::new(
                name,
                vals.iter()
                    .map(|v| match v {
                        Some(ParamValue::Duration(d)) => Some(d.as_ms_f64()),
                        _ => None,
                    })
                    .collect::<Vec<_>>(),
            ),
            ParamKind::Number => Column::new(
                name,
                vals.iter()
                    .map(|v| if let Some(ParamValue::Float(x)) = v { Some(*x) } else { None })
                    .collect::<Vec<_>>(),
            ),
            ParamKind::Bool => Column::new(
                name,
                vals.iter()
                    .map(|v| if let Some(ParamValue::Bool(b)) = v { Some(*b) } else { None })
                    .collect::<Vec<_>>(),
            ),
            ParamKind::Text => {
                Column::new(name, vals.iter().map(|v| v.map(|v| v.to_string())).collect::<Vec<_>>())
            }
        }
    }
}

/// The type of a summary column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryKind {
    U64,
    F64,
}

impl SummaryKind {
    pub fn of(v: &Value) -> SummaryKind {
        match v {
            Value::U64(_) => SummaryKind::U64,
            Value::F64(_) => SummaryKind::F64,
        }
    }
}

/// Every column of the `runs` table after the fixed ones (`RUN_COLUMNS` of the results module),
/// before the derived goodput columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunColumns {
    /// One per swept parameter, in [`Experiment::swept`] order.
    pub params: Vec<ParamColumn>,
    /// The model's summary columns: the union over the planned scenarios, first seen first.
    pub summary: Vec<(String, SummaryKind)>,
}

/// The columns of `exp`'s `runs` table, from its plan (`exp.runs`, `exp.swept`).
pub fn plan_columns(exp: &Experiment) -> RunColumns {
    // Distinct scenarios in plan order: a point's seeds share one `Arc`.
    let mut scenarios: Vec<&models::Scenario> = Vec::new();
    for r in &exp.runs {
        if !scenarios.last().is_some_and(|s| std::ptr::eq(*s, &*r.scenario)) {
            scenarios.push(&r.scenario);
        }
    }
    let params = exp
        .swept
        .iter()
        .enumerate()
        .map(|(k, path)| ParamColumn::new(path, param_kind(exp, &scenarios, k, path)))
        .collect();
    let mut summary: Vec<(String, SummaryKind)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for sc in &scenarios {
        for (name, v) in models::run::summary_template(sc).values {
            if seen.insert(name.clone()) {
                summary.push((name, SummaryKind::of(&v)));
            }
        }
    }
    RunColumns { params, summary }
}

/// The declared type of swept parameter `k` (`path`): from the first planned scenario that
/// has it, else the base scenario or a variant's (the plan may hold no run with it when
/// constraints exclude them).
fn param_kind(exp: &Experiment, planned: &[&models::Scenario], k: usize, path: &str) -> ParamKind {
    let first_with = exp
        .runs
        .iter()
        .find(|r| r.params.get(k).is_some_and(Option::is_some))
        .map(|r| &*r.scenario);
    let others = std::iter::once(&*exp.scenario)
        .chain(exp.variants.iter().map(|v| &**v.scenario_or(&exp.scenario)))
        .chain(planned.iter().copied());
    first_with
        .into_iter()
        .chain(others)
        .find_map(|sc| sc.registry().get(path).map(|s| ParamKind::of(&s.ty)))
        .unwrap_or(ParamKind::Text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::SimDuration;

    /// A parameter's column has its declared type whether or not the run has a value: a
    /// count is u64 (a removed component: null, never the text "None"), a duration f64 ms
    /// under `_ms`.
    #[test]
    fn a_missing_value_is_a_null_of_the_declared_type() {
        use polars::prelude::DataType;
        let count = ParamColumn::new("gate.g.permits", ParamKind::Count);
        let c = count.column(&[None]);
        assert_eq!((c.name().as_str(), c.dtype()), ("param.gate.g.permits", &DataType::UInt64));
        assert_eq!(c.null_count(), 1);
        let unbounded = ParamValue::OptCount(None);
        assert_eq!(count.column(&[Some(&unbounded)]).null_count(), 1);
        let ms = ParamColumn::new("call_site.s.timeout", ParamKind::Millis);
        let d = ParamValue::Duration(SimDuration::from_ms(1500));
        let c = ms.column(&[Some(&d), None]);
        assert_eq!(
            (c.name().as_str(), c.dtype()),
            ("param.call_site.s.timeout_ms", &DataType::Float64)
        );
        assert_eq!(c.f64().unwrap().get(0), Some(1500.0));
        let b = ParamColumn::new("x.y.z", ParamKind::Bool).column(&[None]);
        assert_eq!(b.dtype(), &DataType::Boolean);
    }
}
