//! A scenario as a file names it: inline or by path ([`ScenarioRef`]), read with its
//! trace files and checked into a typed [`Scenario`] ([`resolve_scenario`]). Shared by the
//! experiment loader and the structural variants, so neither imports the other for it.

pub(crate) use crate::bounded::join;
pub use crate::bounded::{MAX_INPUT_BYTES, read_bounded};
use crate::ronfile::{InputError, Source};
use models::Scenario;
use models::params::ParamValue;
use models::scenario::{ScenarioSpec, SetParam};
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::path::Path;
use std::sync::Arc;

#[derive(Deserialize)]
pub(crate) enum ScenarioRef {
    /// A scenario file, relative to the experiment file.
    File(String),
    Inline(Box<ScenarioSpec<IgnoredAny>>),
}

/// Turns a scenario whose timeline values are unparsed into a checked, typed scenario.
/// `prefix` is the scenario's field path inside `src` (`"scenario"` when inline).
pub fn resolve_scenario(
    src: &Source<'_>,
    mut spec: ScenarioSpec<IgnoredAny>,
    prefix: &str,
) -> Result<Scenario, InputError> {
    crate::import_file::load_imports(src, &mut spec, prefix)?;
    load_traces(src, &mut spec, prefix)?;
    spec.check().map_err(|e| src.error_at(&join(prefix, &e.path), e.message))?;
    let registry = spec.registry();
    let sc = spec.map_timeline(|i, s: SetParam<IgnoredAny>| {
        let p = registry.get(&s.path).ok_or_else(|| {
            src.error_at(&join(prefix, &format!("timeline[{i}].path")), registry.unknown(&s.path))
        })?;
        let value: ParamValue =
            src.parse_at(&join(prefix, &format!("timeline[{i}].value")), &p.ty)?;
        Ok::<_, InputError>(SetParam { at: s.at, path: s.path, value, reload: s.reload })
    })?;
    sc.check_timeline().map_err(|e| src.error_at(&join(prefix, &e.path), e.message))?;
    Ok(sc)
}

/// Reads every trace file a source names (relative to the file that names it).
fn load_traces(
    src: &Source<'_>,
    spec: &mut ScenarioSpec<IgnoredAny>,
    prefix: &str,
) -> Result<(), InputError> {
    let dir = src.file.parent().unwrap_or(Path::new("."));
    for (i, s) in spec.sources.iter_mut().enumerate() {
        let Some(t) = s.trace.as_mut() else { continue };
        let field = join(prefix, &format!("sources[{i}].trace.file"));
        let path = dir.join(&t.file);
        let bytes = read_bounded(&path, models::trace::MAX_FILE_BYTES).map_err(|e| {
            src.error_at(&field, format!("cannot read trace {}: {e}", path.display()))
        })?;
        let text = crate::ronfile::utf8(&path, bytes).map_err(|e| {
            src.error_at(
                &field,
                format!("{}: line {}, column {}: {}", path.display(), e.line, e.col, e.message),
            )
        })?;
        let data = models::trace::TraceData::parse_csv(&text, t)
            .map_err(|e| src.error_at(&field, format!("{}: {e}", path.display())))?;
        t.data = Some(Arc::new(data));
    }
    Ok(())
}
