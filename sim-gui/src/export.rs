//! "Export session": an experiment file whose headless `stormglass run` reproduces the
//! session's run exactly (same fingerprint).
//!
//! The file holds the session's scenario inline — the chosen variant and sweep point and
//! every parameter set before the start already applied — with the recorded changes
//! appended to its timeline, one seed, and the experiment's duration, warm-up and sampling.
//! Timeline values are written in scenario syntax (`0.6`, `Some(3)`, `"2s"`,
//! `Exponential(mean: "1s")`), the syntax the loader reads; trace files are made absolute
//! so the export can live anywhere.

use crate::session::Session;
use models::params::{ParamValue, dist_to_text};
use ron::value::RawValue;
use sim_core::DistSpec;
use std::path::Path;

/// A parameter value in the loader's scenario syntax; `None` for a value that has no such
/// text (an empirical distribution: its samples are not written back).
pub fn value_text(v: &ParamValue) -> Option<String> {
    Some(match v {
        ParamValue::Float(x) => format!("{x:?}"),
        ParamValue::DurationDist(d) => {
            if matches!(d.spec(), DistSpec::Empirical { .. }) {
                return None;
            }
            dist_to_text(d)
        }
        other => other.to_string(),
    })
}

/// The experiment text of a session (see the module doc).
pub fn session_text(s: &Session, name: &str) -> Result<String, String> {
    let exp = &s.selection().exp;
    let mut sc = s.scenario_with_changes();
    let base = exp.file.parent().unwrap_or(Path::new("."));
    for src in &mut sc.sources {
        if let Some(t) = src.trace.as_mut() {
            let p = base.join(&t.file);
            t.file = std::fs::canonicalize(&p).unwrap_or(p).display().to_string();
        }
    }
    let raw = sc.map_timeline(|i, set| {
        let text = value_text(&set.value).ok_or_else(|| {
            format!("timeline[{i}] ({}): an empirical distribution cannot be exported", set.path)
        })?;
        let value = RawValue::from_boxed_ron(text.into_boxed_str())
            .map_err(|e| format!("timeline[{i}]: {e}"))?;
        Ok::<_, String>(models::scenario::SetParam {
            at: set.at,
            path: set.path,
            value,
            reload: set.reload,
        })
    })?;
    let scenario =
        ron::ser::to_string_pretty(&raw, ron::ser::PrettyConfig::default().struct_names(false))
            .map_err(|e| format!("cannot write the scenario: {e}"))?;
    let sample = exp.sample_every.map(|d| d.to_string()).unwrap_or_else(|| "0s".into());
    let changes = s.changes().len();
    Ok(format!(
        "// A workbench session of `{exp_name}` (file {file}), seed {seed}, with {changes} recorded \
         change(s) on the timeline.\n\
         // Replay headless: stormglass run <this file>; open it in stormglass-gui to replay it there.\n\
         Experiment(\n    name: {name:?},\n    description: {desc:?},\n    scenario: Inline({scenario}),\n    \
         duration: \"{dur}\",\n    warmup: \"{warm}\",\n    sample_every: \"{sample}\",\n    seeds: List([{seed}]),\n)\n",
        exp_name = exp.name,
        file = exp.file.display(),
        seed = s.seed(),
        desc = format!("workbench session of {} (seed {})", exp.name, s.seed()),
        dur = exp.duration,
        warm = exp.warmup,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::{Dist, SimDuration};

    #[test]
    fn values_are_written_in_scenario_syntax() {
        let cases = [
            (ParamValue::Float(1.0), "1.0"),
            (ParamValue::Float(0.6), "0.6"),
            (ParamValue::Count(32), "32"),
            (ParamValue::OptCount(Some(3)), "Some(3)"),
            (ParamValue::OptCount(None), "None"),
            (ParamValue::Duration(SimDuration::from_ms(1500)), "\"1500ms\""),
            (ParamValue::Bool(true), "true"),
        ];
        for (v, want) in cases {
            assert_eq!(value_text(&v).as_deref(), Some(want));
        }
        let d: Dist<SimDuration> = ron::from_str("Exponential(mean: \"1s\")").unwrap();
        assert_eq!(
            value_text(&ParamValue::DurationDist(d)).as_deref(),
            Some("Exponential(mean: \"1s\")")
        );
    }
}
