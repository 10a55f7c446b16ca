//! Variants, sweeps and constraints: which parameter values each run gets.
//!
//! * A **variant** is a named version of the scenario (`failure`, `fix`): see
//!   the `variant` module (which builds on this one); the sweep runs within each.
//! * The **sweep** is a list of dimensions; runs take the Cartesian product of the
//!   dimensions (the first one outermost), within every variant:
//!   `Grid(path, values)` — one parameter; `Zip([...])` — several parameters varying together
//!   (equal lengths); `List([[...], ...])` — explicit points, each a list of assignments;
//!   `Range(path, from, to, step)` — evenly spaced values of one parameter (`sweep_range`).
//! * **Constraints** drop combinations: `(left: PATH, op: Le, right: PATH)` or
//!   `(left: PATH, op: Le, value: V)` with `V` of `left`'s type.
//!
//! Values are parsed with their parameter's own type, in place in the file (see
//! `locate.rs`), never through an untyped value: `Exponential(mean: "1s")` stays a
//! distribution and `"300ms"` a duration.

use crate::ronfile::{InputError, Source};
use models::params::{ParamType, ParamValue, Registry};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "Sweep")]
pub(crate) enum SweepFile {
    Grid {
        path: String,
        values: Vec<IgnoredAny>,
    },
    /// `from`, `from + step`, … up to `to` included (counts, numbers, durations); the values
    /// are located and parsed in place (`sweep_range`).
    #[allow(dead_code)]
    Range {
        path: String,
        from: IgnoredAny,
        to: IgnoredAny,
        step: IgnoredAny,
    },
    Zip(Vec<AxisFile>),
    List(Vec<Vec<AssignFile>>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AxisFile {
    path: String,
    values: Vec<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AssignFile {
    pub(crate) path: String,
    #[allow(dead_code)] // located and parsed in place with the parameter's type
    value: IgnoredAny,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "Constraint")]
pub(crate) struct ConstraintFile {
    left: String,
    op: Op,
    #[serde(default, deserialize_with = "present")]
    right: Option<String>,
    #[serde(default, deserialize_with = "present")]
    value: Option<IgnoredAny>,
}

/// An optional field written without `Some(...)`: present means `Some`.
pub(crate) fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Lt,
    Le,
    Eq,
    Ne,
    Ge,
    Gt,
}

/// `path = value`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Assignment {
    pub path: String,
    pub value: ParamValue,
}

/// One sweep dimension: its points, each a list of assignments.
pub type Dimension = Vec<Vec<Assignment>>;

/// The right-hand side of a constraint.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Operand {
    Param(String),
    Value(ParamValue),
}

/// A filter on combinations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Constraint {
    pub left: String,
    pub op: Op,
    pub right: Operand,
    /// Field path in the file, for messages.
    pub field: String,
}

pub use crate::sweep_range::numeric;

fn type_kind(t: &ParamType) -> &'static str {
    match t {
        ParamType::Count { .. } | ParamType::OptCount { .. } => "count",
        ParamType::Duration { .. } => "duration",
        ParamType::DurationDist | ParamType::NumberDist => "distribution",
        ParamType::Float { .. } | ParamType::FloatAbove { .. } => "number",
        ParamType::Bool => "boolean",
        ParamType::Enum { .. } | ParamType::Name { .. } => "choice",
        ParamType::List { .. } => "list",
    }
}

impl Constraint {
    /// Does a combination (given by a lookup of current values) satisfy the constraint?
    pub fn holds(&self, get: &dyn Fn(&str) -> ParamValue) -> bool {
        let l = numeric(&get(&self.left)).expect("checked comparable at load");
        let r = match &self.right {
            Operand::Param(p) => numeric(&get(p)).expect("checked comparable at load"),
            Operand::Value(v) => numeric(v).expect("checked comparable at load"),
        };
        match self.op {
            Op::Lt => l < r,
            Op::Le => l <= r,
            Op::Eq => l == r,
            Op::Ne => l != r,
            Op::Ge => l >= r,
            Op::Gt => l > r,
        }
    }
}

pub(crate) fn assignment(
    src: &Source<'_>,
    reg: &Registry,
    field: &str,
    a: &AssignFile,
) -> Result<Assignment, InputError> {
    let spec = reg
        .get(&a.path)
        .ok_or_else(|| src.error_at(&format!("{field}.path"), reg.unknown(&a.path)))?;
    let value = src.parse_at(&format!("{field}.value"), &spec.ty)?;
    Ok(Assignment { path: a.path.clone(), value })
}

fn values(
    src: &Source<'_>,
    reg: &Registry,
    field: &str,
    path: &str,
    n: usize,
) -> Result<Vec<Assignment>, InputError> {
    let spec =
        reg.get(path).ok_or_else(|| src.error_at(&format!("{field}.path"), reg.unknown(path)))?;
    if n == 0 {
        return Err(src.error_at(
            &format!("{field}.values"),
            "expected at least one value, found none".into(),
        ));
    }
    (0..n)
        .map(|i| {
            let value = src.parse_at(&format!("{field}.values[{i}]"), &spec.ty)?;
            Ok(Assignment { path: path.to_string(), value })
        })
        .collect()
}

/// Resolves the sweep's dimensions; `prefix` is their field in the file (`sweep`, or a
/// search's `search.space`).
pub(crate) fn resolve_sweep(
    src: &Source<'_>,
    reg: &Registry,
    prefix: &str,
    files: &[SweepFile],
) -> Result<Vec<Dimension>, InputError> {
    let mut dims = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new(); // (path, field) to refuse sweeping one path twice
    let mut claim = |path: &str, field: String| -> Result<(), InputError> {
        if let Some((_, first)) = seen.iter().find(|(p, _)| p == path) {
            return Err(src.error_at(&field, format!("`{path}` is already swept at {first}")));
        }
        seen.push((path.to_string(), field));
        Ok(())
    };
    for (i, d) in files.iter().enumerate() {
        let field = format!("{prefix}[{i}]");
        let dim: Dimension = match d {
            SweepFile::Grid { path, values: vs } => {
                claim(path, format!("{field}.path"))?;
                values(src, reg, &field, path, vs.len())?.into_iter().map(|a| vec![a]).collect()
            }
            SweepFile::Range { path, .. } => {
                claim(path, format!("{field}.path"))?;
                crate::sweep_range::expand(src, reg, &field, path)?
                    .into_iter()
                    .map(|value| vec![Assignment { path: path.clone(), value }])
                    .collect()
            }
            SweepFile::Zip(axes) => {
                if axes.is_empty() {
                    return Err(src
                        .error_at(&field, "expected at least one axis in Zip, found none".into()));
                }
                let mut cols = Vec::new();
                for (j, ax) in axes.iter().enumerate() {
                    let f = format!("{field}[{j}]");
                    claim(&ax.path, format!("{f}.path"))?;
                    let col = values(src, reg, &f, &ax.path, ax.values.len())?;
                    if let Some(first) = cols.first().map(|c: &Vec<Assignment>| c.len())
                        && first != col.len()
                    {
                        return Err(src.error_at(
                            &format!("{f}.values"),
                            format!(
                                "Zip axes must have equal lengths: `{}` has {first} values, `{}` has {}",
                                axes[0].path,
                                ax.path,
                                col.len()
                            ),
                        ));
                    }
                    cols.push(col);
                }
                let n = cols[0].len();
                (0..n).map(|k| cols.iter().map(|c| c[k].clone()).collect()).collect()
            }
            SweepFile::List(points) => {
                if points.is_empty() {
                    return Err(src.error_at(
                        &field,
                        "expected at least one point in List, found none".into(),
                    ));
                }
                let mut pts = Vec::new();
                let mut paths: Option<Vec<String>> = None;
                for (j, p) in points.iter().enumerate() {
                    let pt = p
                        .iter()
                        .enumerate()
                        .map(|(k, a)| assignment(src, reg, &format!("{field}[{j}][{k}]"), a))
                        .collect::<Result<Vec<_>, _>>()?;
                    let mut ps: Vec<String> = pt.iter().map(|a| a.path.clone()).collect();
                    ps.sort();
                    match &paths {
                        None => {
                            for a in &pt {
                                claim(&a.path, format!("{field}[{j}]"))?;
                            }
                            paths = Some(ps);
                        }
                        Some(first) if *first != ps => {
                            return Err(src.error_at(
                                &format!("{field}[{j}]"),
                                format!(
                                    "every point of a List sets the same parameters; the first sets [{}], this one [{}]",
                                    first.join(", "),
                                    ps.join(", ")
                                ),
                            ));
                        }
                        Some(_) => {}
                    }
                    pts.push(pt);
                }
                pts
            }
        };
        dims.push(dim);
    }
    Ok(dims)
}

/// Resolves constraints: known, comparable paths of one kind; typed values.
pub(crate) fn resolve_constraints(
    src: &Source<'_>,
    reg: &Registry,
    files: &[ConstraintFile],
) -> Result<Vec<Constraint>, InputError> {
    files
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let field = format!("constraints[{i}]");
            let left = reg
                .get(&c.left)
                .ok_or_else(|| src.error_at(&format!("{field}.left"), reg.unknown(&c.left)))?;
            if let Some(what) = match left.ty {
                ParamType::DurationDist | ParamType::NumberDist => Some("a distribution"),
                ParamType::Bool => Some("a boolean"),
                ParamType::Enum { .. } | ParamType::Name { .. } => Some("a choice"),
                ParamType::List { .. } => Some("a list"),
                _ => None,
            } {
                return Err(src.error_at(
                    &format!("{field}.left"),
                    format!(
                        "constraints compare numbers, durations or counts; `{}` is {what}",
                        c.left
                    ),
                ));
            }
            let right = match (&c.right, &c.value) {
                (Some(p), None) => {
                    let r = reg
                        .get(p)
                        .ok_or_else(|| src.error_at(&format!("{field}.right"), reg.unknown(p)))?;
                    if type_kind(&r.ty) != type_kind(&left.ty) {
                        return Err(src.error_at(
                            &format!("{field}.right"),
                            format!(
                                "cannot compare `{}` (a {}) with `{p}` (a {})",
                                c.left,
                                type_kind(&left.ty),
                                type_kind(&r.ty)
                            ),
                        ));
                    }
                    Operand::Param(p.clone())
                }
                (None, Some(_)) => {
                    Operand::Value(src.parse_at(&format!("{field}.value"), &left.ty)?)
                }
                _ => {
                    return Err(src.error_at(
                        &field,
                        "expected exactly one of `right: \"<parameter path>\"` or `value: <value>`"
                            .into(),
                    ));
                }
            };
            Ok(Constraint { left: c.left.clone(), op: c.op, right, field })
        })
        .collect()
}

/// The Cartesian product of the dimensions, first dimension outermost.
pub fn points(dims: &[Dimension]) -> Vec<Vec<Assignment>> {
    let mut out: Vec<Vec<Assignment>> = vec![vec![]];
    for d in dims {
        let mut next = Vec::with_capacity(out.len() * d.len());
        for prefix in &out {
            for p in d {
                let mut v = prefix.clone();
                v.extend(p.iter().cloned());
                next.push(v);
            }
        }
        out = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(path: &str, n: u64) -> Assignment {
        Assignment { path: path.into(), value: ParamValue::Count(n) }
    }

    #[test]
    fn product_order_first_dimension_outermost() {
        let dims = vec![
            vec![vec![a("x", 1)], vec![a("x", 2)]],
            vec![vec![a("y", 7), a("z", 8)], vec![a("y", 9), a("z", 10)]],
        ];
        let got: Vec<Vec<u64>> = points(&dims)
            .iter()
            .map(|p| {
                p.iter().map(|a| if let ParamValue::Count(n) = a.value { n } else { 0 }).collect()
            })
            .collect();
        assert_eq!(got, vec![vec![1, 7, 8], vec![1, 9, 10], vec![2, 7, 8], vec![2, 9, 10]]);
        assert_eq!(points(&[]), vec![Vec::<Assignment>::new()]);
    }

    #[test]
    fn constraints_compare_numbers() {
        let c = Constraint {
            left: "a".into(),
            op: Op::Le,
            right: Operand::Param("b".into()),
            field: String::new(),
        };
        let get =
            |p: &str| if p == "a" { ParamValue::Count(3) } else { ParamValue::OptCount(None) };
        assert!(c.holds(&get), "None is unbounded");
        let c = Constraint {
            left: "a".into(),
            op: Op::Gt,
            right: Operand::Value(ParamValue::Count(3)),
            field: String::new(),
        };
        assert!(!c.holds(&get));
    }
}
