//! A scenario as a file names it: inline or by path ([`ScenarioRef`]), read with its
//! trace files and checked into a typed [`Scenario`] ([`resolve_scenario`]). Shared by the
//! experiment loader and the structural variants, so neither imports the other for it.

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

/// `prefix.path`, or `path` when the prefix is empty.
pub(crate) fn join(prefix: &str, path: &str) -> String {
    if prefix.is_empty() { path.to_string() } else { format!("{prefix}.{path}") }
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

/// Most bytes of a scenario or experiment file.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Reads a regular file of at most `max` bytes: a device (`/dev/zero`), a FIFO, a file
/// larger than the bound (from its size, before reading) or one growing past it is refused
/// instead of being read until memory runs out. The bytes
/// are returned as read: [`crate::ronfile::utf8`] turns them into text with a positioned
/// error.
pub fn read_bounded(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    // Looked at before opening: opening a FIFO blocks until something writes to it.
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "not a regular file (a device, a pipe or a directory is never read)",
        ));
    }
    // A file too large is refused before a byte is read (reading a gigabyte takes seconds);
    // one growing past the bound while it is read is refused by the bounded read below.
    if meta.len() > max {
        return Err(too_large(max, Some(meta.len())));
    }
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large(max, None));
    }
    Ok(bytes)
}

/// The refusal of a file over `max` bytes (`size`: as its metadata gives it).
fn too_large(max: u64, size: Option<u64>) -> std::io::Error {
    let size = size.map_or(String::new(), |s| format!(" ({s} bytes)"));
    std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("larger than {max} bytes{size}"))
}
