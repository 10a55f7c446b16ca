//! Run-time changes against the registry: [`validate_change`] (the one check a timeline
//! entry, a session change or a GUI knob needs) and the scenario's timeline check.

use super::{Scenario, SetParam, SpecError, reloadable_kinds};
use crate::params::{ParamValue, Registry};

/// Which part of a run-time change was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeField {
    /// An unknown path, or one that cannot change during a run.
    Path,
    /// A value of the wrong type or out of range.
    Value,
    /// `reload: true` on a kind without rule reloads.
    Reload,
}

/// A refused run-time change: the path, the part refused and why (the expected type and
/// range for a bad value).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("`{path}`: {message}")]
pub struct ChangeError {
    pub path: String,
    pub field: ChangeField,
    pub message: String,
}

/// Checks one run-time change (timeline entry, session change) against the scenario's
/// registry: a known path, a parameter that may change during a run, a value of its type
/// in its range, `reload` only for reloadable kinds. `classes`: the scenario's class count
/// (a segment's class index must name one). This is the only check a change needs: a
/// change it accepts is applied without panicking.
pub fn validate_change(
    reg: &Registry,
    classes: usize,
    path: &str,
    value: &ParamValue,
    reload: bool,
) -> Result<(), ChangeError> {
    let err = |field, message| ChangeError { path: path.to_string(), field, message };
    let spec = reg.get(path).ok_or_else(|| err(ChangeField::Path, reg.unknown(path)))?;
    if !spec.runtime {
        return Err(err(
            ChangeField::Path,
            format!("`{path}` cannot change during a run (set it in the scenario or sweep it)"),
        ));
    }
    spec.ty.check(value).map_err(|m| err(ChangeField::Value, m))?;
    if reload {
        let kind = spec.kind;
        let reloadable = reloadable_kinds();
        if !reloadable.contains(&kind) {
            return Err(err(
                ChangeField::Reload,
                format!(
                    "a rule reload applies to {} parameters only, not `{path}`",
                    reloadable.join(", ")
                ),
            ));
        }
    }
    if spec.owner.component_kind() == Some(crate::components::ComponentKind::Segment)
        && let ParamValue::OptCount(Some(k)) = value
        && *k as usize >= classes
    {
        return Err(err(
            ChangeField::Value,
            format!("expected None or Some(class index < {classes}), found Some({k})"),
        ));
    }
    Ok(())
}

impl Scenario {
    /// Checks the timeline against the registry ([`Scenario::check_change`] for each
    /// entry).
    pub fn check_timeline(&self) -> Result<(), SpecError> {
        let reg = self.registry();
        for (i, s) in self.timeline.iter().enumerate() {
            self.check_change(&reg, s).map_err(|e| SpecError {
                path: format!("timeline[{i}].{}", e.path),
                message: e.message,
            })?;
        }
        Ok(())
    }

    /// Checks one run-time change against this scenario's registry `reg`
    /// ([`validate_change`]). The error's `path` is the field at fault (`path`, `value` or
    /// `reload`).
    pub fn check_change(&self, reg: &Registry, s: &SetParam<ParamValue>) -> Result<(), SpecError> {
        validate_change(reg, self.classes.len(), &s.path, &s.value, s.reload).map_err(|e| {
            let field = match e.field {
                ChangeField::Path => "path",
                ChangeField::Value => "value",
                ChangeField::Reload => "reload",
            };
            SpecError { path: field.into(), message: e.message }
        })?;
        // A source's rate is checked on the timeline as in the scenario body (a zero gap
        // without a `limit` is an infinite rate; no rate over `MAX_ARRIVAL_RATE`), against
        // the source's other values as the scenario declares them.
        let Some(("source", name, param)) = crate::params::split_path(&s.path) else {
            return Ok(());
        };
        let Some(src) = self.sources.iter().find(|x| x.name == name) else { return Ok(()) };
        let mut changed = src.clone();
        match (param, &s.value) {
            ("interarrival", ParamValue::DurationDist(d)) => changed.interarrival = Some(d.clone()),
            ("rate_multiplier", ParamValue::Float(x)) => changed.rate_multiplier = *x,
            _ => return Ok(()),
        }
        let peak = crate::source::peak_multiplier(&changed);
        crate::source::check_rate(changed.interarrival.as_ref(), changed.limit, peak)
            .map_err(|message| SpecError { path: "value".into(), message })?;
        Ok(())
    }
}
