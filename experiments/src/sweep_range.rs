//! `Range(path: P, from: A, to: B, step: S)`: the values `A, A + S, A + 2S, …` up to `B`
//! included, of a count, number or duration parameter — a sweep dimension or a search space
//! axis written without listing every value.
//!
//! `from` and `to` are read with the parameter's own type (so in its range: `gate.g.permits`
//! from `0` is refused like a `Grid` value of `0`); `step` with the same kind of type but any
//! positive size. Numbers are `A + i·S` (never accumulated, so `0.1` steps do not drift),
//! the last kept when it exceeds `B` by less than 10⁻⁹ of a step (rounding of `(B − A)/S`).

use crate::ronfile::{InputError, Source};
use models::params::{ParamType, ParamValue, Registry};
use sim_core::SimDuration;

/// Most values one `Range` may give (beyond, split the sweep or use a coarser step).
pub const MAX_RANGE_VALUES: u64 = 10_000;

/// The values of the `Range` at `field` (`sweep[0]`) over parameter `path`.
pub(crate) fn expand(
    src: &Source<'_>,
    reg: &Registry,
    field: &str,
    path: &str,
) -> Result<Vec<ParamValue>, InputError> {
    let spec =
        reg.get(path).ok_or_else(|| src.error_at(&format!("{field}.path"), reg.unknown(path)))?;
    let step_ty = match spec.ty {
        ParamType::Count { .. } | ParamType::OptCount { .. } => {
            ParamType::Count { min: 0, max: u64::MAX }
        }
        ParamType::Duration { .. } => {
            ParamType::Duration { min: SimDuration(0), max: SimDuration(u64::MAX) }
        }
        ParamType::Float { .. } | ParamType::FloatAbove { .. } => {
            ParamType::Float { min: 0.0, max: f64::MAX }
        }
        ParamType::DurationDist
        | ParamType::NumberDist
        | ParamType::Bool
        | ParamType::Enum { .. }
        | ParamType::Name { .. }
        | ParamType::List { .. } => {
            return Err(src.error_at(
                &format!("{field}.path"),
                format!(
                    "a Range needs a count, number or duration parameter; `{path}` is {}: list its values with Grid",
                    spec.ty.describe()
                ),
            ));
        }
    };
    let from = src.parse_at(&format!("{field}.from"), &spec.ty)?;
    let to = src.parse_at(&format!("{field}.to"), &spec.ty)?;
    let step = src.parse_at(&format!("{field}.step"), &step_ty)?;
    if numeric(&step) == Some(0.0) {
        return Err(
            src.error_at(&format!("{field}.step"), format!("expected a step > 0, found {step}"))
        );
    }
    let too_many = |n: u64| {
        src.error_at(
            &format!("{field}.step"),
            format!("expected at most {MAX_RANGE_VALUES} values in a Range, found {n}; use a coarser step"),
        )
    };
    let before = |a: &dyn std::fmt::Display, b: &dyn std::fmt::Display| {
        src.error_at(&format!("{field}.to"), format!("expected `to` ≥ `from` ({a}), found {b}"))
    };
    let ints = |a: u64, b: u64, s: u64| -> Result<Vec<u64>, InputError> {
        let n = (b - a) / s + 1;
        if n > MAX_RANGE_VALUES {
            return Err(too_many(n));
        }
        Ok((0..n).map(|i| a + i * s).collect())
    };
    let out = match (&from, &to, &step) {
        (ParamValue::Count(a), ParamValue::Count(b), ParamValue::Count(s)) => {
            if b < a {
                return Err(before(a, b));
            }
            ints(*a, *b, *s)?.into_iter().map(ParamValue::Count).collect()
        }
        (ParamValue::OptCount(a), ParamValue::OptCount(b), ParamValue::Count(s)) => {
            let (Some(a), Some(b)) = (a, b) else {
                let f = if a.is_none() { "from" } else { "to" };
                return Err(src.error_at(
                    &format!("{field}.{f}"),
                    "expected `Some(n)` at both ends of a Range, found `None` (unbounded)".into(),
                ));
            };
            if b < a {
                return Err(before(a, b));
            }
            ints(*a, *b, *s)?.into_iter().map(|n| ParamValue::OptCount(Some(n))).collect()
        }
        (ParamValue::Duration(a), ParamValue::Duration(b), ParamValue::Duration(s)) => {
            if b < a {
                return Err(before(&format!("\"{a}\""), &format!("\"{b}\"")));
            }
            ints(a.0, b.0, s.0)?.into_iter().map(|n| ParamValue::Duration(SimDuration(n))).collect()
        }
        (ParamValue::Float(a), ParamValue::Float(b), ParamValue::Float(s)) => {
            if b < a {
                return Err(before(a, b));
            }
            let n = ((b - a) / s + 1e-9).floor() + 1.0;
            if n > MAX_RANGE_VALUES as f64 {
                return Err(too_many(n as u64));
            }
            // Rounding may put the last value a hair above `to` (and out of range): clamp.
            (0..n as u64).map(|i| ParamValue::Float((a + i as f64 * s).min(*b))).collect()
        }
        _ => unreachable!("from, to and step were read with matching types"),
    };
    Ok(out)
}

/// A comparable number for a value: counts and floats as themselves, durations in ns,
/// `None` (unbounded) as +∞. Distributions are not comparable.
pub fn numeric(v: &ParamValue) -> Option<f64> {
    match v {
        ParamValue::Count(n) => Some(*n as f64),
        ParamValue::OptCount(n) => Some(n.map_or(f64::INFINITY, |n| n as f64)),
        ParamValue::Duration(d) => Some(d.0 as f64),
        ParamValue::Float(x) => Some(*x),
        ParamValue::DurationDist(_)
        | ParamValue::NumberDist(_)
        | ParamValue::Bool(_)
        | ParamValue::Enum(_)
        | ParamValue::Name(_)
        | ParamValue::List(_) => None,
    }
}
