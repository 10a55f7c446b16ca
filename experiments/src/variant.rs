//! Variants: named versions of an experiment's scenario that share its seeds and results
//! folder (docs/experiments.md, "Variants").
//!
//! A variant applies, in this order: `scenario` (another scenario, `File(path)` relative to
//! the experiment file or `Inline(Scenario(..))`, instead of the base), `remove` (components
//! by `<kind>.<name>`) and `remove_governors` (governors out of call-site stacks, see
//! [`crate::unstack`]), `patch` (`Patch(<scenario fields>)`, merged by element name — see
//! [`crate::patch`]), `set` (registered parameters). A variant that changes structure is
//! resolved and checked as a scenario of its own at load; an error in it names the variant
//! and points where the offending text was written.

use crate::patch::{self, Changes, Part};
use crate::ronfile::{InputError, Source};
use crate::scenario_file::{MAX_INPUT_BYTES, ScenarioRef, read_bounded, resolve_scenario};
use crate::sweep::{AssignFile, Assignment, assignment};
use models::Scenario;
use models::params::Registry;
use models::scenario::ScenarioSpec;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VariantFile {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    scenario: Option<ScenarioRef>,
    #[serde(default)]
    remove: Vec<String>,
    /// Governors out of call-site stacks, in one line ([`crate::unstack`]).
    #[serde(default)]
    remove_governors: Vec<String>,
    /// Located and merged as text (`crate::patch`); the merged scenario is typed.
    #[serde(default)]
    patch: Option<IgnoredAny>,
    #[serde(default)]
    set: Vec<AssignFile>,
}

/// A named version of the experiment's scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Variant {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The scenario the variant runs when it changes structure (another scenario, removals
    /// or a patch); `None`: the experiment's base scenario.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<Arc<Scenario>>,
    /// The other scenario it starts from, as written (`File("x.ron")`, `Inline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// What it removes, replaces and adds.
    #[serde(skip_serializing_if = "Changes::is_empty")]
    pub changes: Changes,
    pub set: Vec<Assignment>,
}

impl Variant {
    /// A variant running the base scenario with `set` only.
    pub fn plain(name: &str, set: Vec<Assignment>) -> Variant {
        Variant {
            name: name.into(),
            description: String::new(),
            scenario: None,
            from: None,
            changes: Changes::default(),
            set,
        }
    }
    /// The scenario this variant runs (before `set` and the sweep).
    pub fn scenario_or<'a>(&'a self, base: &'a Arc<Scenario>) -> &'a Arc<Scenario> {
        self.scenario.as_ref().unwrap_or(base)
    }
}

/// The experiment's own scenario, as written: where its text is (the experiment file at
/// `scenario`, or its own file at the top level).
pub(crate) struct Base<'a> {
    pub part: Part<'a>,
    pub scenario: &'a Arc<Scenario>,
}

fn check_name(src: &Source<'_>, field: &str, name: &str) -> Result<(), InputError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c)) {
        return Err(src.error_at(
            &format!("{field}.name"),
            format!("expected a name of letters, digits, '_' or '-', found \"{name}\""),
        ));
    }
    Ok(())
}

/// Resolves variants: unique names, each structural variant's scenario resolved and
/// checked, `set` typed and checked against the variant's own parameters. No variants =
/// one variant named `default`.
pub(crate) fn resolve_variants(
    src: &Source<'_>,
    base: &Base<'_>,
    files: &[VariantFile],
) -> Result<Vec<Variant>, InputError> {
    if files.is_empty() {
        return Ok(vec![Variant::plain("default", vec![])]);
    }
    let mut out: Vec<Variant> = Vec::new();
    for (i, v) in files.iter().enumerate() {
        let field = format!("variants[{i}]");
        check_name(src, &field, &v.name)?;
        if out.iter().any(|o| o.name == v.name) {
            return Err(src.error_at(
                &format!("{field}.name"),
                format!("variant \"{}\" is defined twice", v.name),
            ));
        }
        let structural = v.scenario.is_some()
            || !v.remove.is_empty()
            || !v.remove_governors.is_empty()
            || v.patch.is_some();
        let (scenario, from, changes) = if structural {
            let (sc, from, changes) = structural_scenario(src, base, v, &field)?;
            (Some(Arc::new(sc)), from, changes)
        } else {
            (None, None, Changes::default())
        };
        let reg = scenario.as_deref().unwrap_or(base.scenario).registry();
        let set = v
            .set
            .iter()
            .enumerate()
            .map(|(j, a)| assignment(src, &reg, &format!("{field}.set[{j}]"), a))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| if structural { tag(&v.name, e) } else { e })?;
        out.push(Variant {
            name: v.name.clone(),
            description: v.description.clone(),
            scenario,
            from,
            changes,
            set,
        });
    }
    Ok(out)
}

/// Prefixes an error's message with the variant it concerns.
pub(crate) fn tag(variant: &str, mut e: InputError) -> InputError {
    e.message = format!("variant \"{variant}\": {}", e.message);
    e
}

/// Resolves something (the sweep, the constraints) against every variant's parameters:
/// the result for the first, an error naming the variant for any that refuses it.
pub(crate) fn for_every_variant<T>(
    variants: &[Variant],
    base: &Arc<Scenario>,
    f: impl Fn(&Registry) -> Result<T, InputError>,
) -> Result<T, InputError> {
    let base_reg = variants.iter().any(|v| v.scenario.is_none()).then(|| base.registry());
    let first = match &base_reg {
        Some(r) => Some(f(r)?),
        None => None,
    };
    let mut first = first;
    for v in variants.iter().filter(|v| v.scenario.is_some()) {
        let r = f(&v.scenario_or(base).registry()).map_err(|e| tag(&v.name, e))?;
        first.get_or_insert(r);
    }
    Ok(first.expect("at least one variant"))
}

fn structural_scenario(
    src: &Source<'_>,
    base: &Base<'_>,
    v: &VariantFile,
    field: &str,
) -> Result<(Scenario, Option<String>, Changes), InputError> {
    let own_path = format!("{field}.scenario");
    // Another scenario's text, read here so that it outlives the merge.
    let (file_text, from) = match &v.scenario {
        Some(ScenarioRef::File(rel)) => {
            let p = src.file.parent().unwrap_or(Path::new(".")).join(rel);
            let bytes = read_bounded(&p, MAX_INPUT_BYTES).map_err(|e| {
                tag(
                    &v.name,
                    src.error_at(
                        &own_path,
                        format!("scenario file \"{rel}\": {}: cannot read: {e}", p.display()),
                    ),
                )
            })?;
            // Invalid UTF-8 is that file's own positioned error.
            let text = crate::ronfile::utf8(&p, bytes).map_err(|e| tag(&v.name, e))?;
            (Some((p, text)), Some(format!("File(\"{rel}\")")))
        }
        Some(ScenarioRef::Inline(_)) => (None, Some("Inline".to_string())),
        None => (None, None),
    };
    let file_src = file_text.as_ref().map(|(p, t)| Source::new(p, t));
    let start = match (&file_src, &v.scenario) {
        (Some(fs), _) => {
            // The file must be a scenario on its own first: its errors are its own.
            let spec: ScenarioSpec<IgnoredAny> =
                fs.parse().map_err(|e| nested(src, v, field, e))?;
            resolve_scenario(fs, spec, "").map_err(|e| nested(src, v, field, e))?;
            Part { src: fs, path: "" }
        }
        (None, Some(_)) => Part { src, path: &own_path },
        (None, None) => base.part,
    };
    let patch_path = format!("{field}.patch");
    if let Some(t) = v.patch.as_ref().and(src.locations().span(&patch_path)).map(|r| &src.text[r]) {
        let inner = t.strip_prefix("Some").map(str::trim_start).and_then(|t| t.strip_prefix('('));
        let ident: String = inner
            .unwrap_or(t)
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ident != "Patch" {
            return Err(src.error_at(
                &patch_path,
                format!(
                    "expected `Some(Patch(<scenario fields>))`, found `{}`",
                    t.chars().take(24).collect::<String>()
                ),
            ));
        }
    }
    let patch = v.patch.is_some().then_some(Part { src, path: &patch_path });
    let (remove, drops) = removals(src, &start, v, field).map_err(|e| tag(&v.name, e))?;
    let mut merged =
        patch::merge(start, patch, &remove, &drops, src).map_err(|e| tag(&v.name, e))?;
    // Out of one stack only: named as written (the others are in `remove`).
    let scoped = v.remove_governors.iter().filter(|r| r.starts_with("call_site."));
    merged.changes.removed.extend(scoped.cloned());
    let parts: Vec<Part<'_>> = std::iter::once(start).chain(patch).collect();
    let msrc = Source::new(start.src.file, &merged.text);
    let locate = |e: InputError| -> InputError {
        let o = merged.origin(e.line, e.col, &e.field);
        let part = &parts[o.part];
        let (line, col) = patch::position(part, &o);
        let inside = std::ptr::eq(part.src, src)
            && o.offset
                .or_else(|| src.offset(&o.field))
                .is_some_and(|off| src.locations().span(field).is_some_and(|r| r.contains(&off)));
        let err = InputError {
            file: part.src.file.to_path_buf(),
            line,
            col,
            field: o.field,
            message: e.message,
        };
        if inside { tag(&v.name, err) } else { nested(src, v, field, err) }
    };
    let spec: ScenarioSpec<IgnoredAny> = msrc.parse().map_err(locate)?;
    let sc = resolve_scenario(&msrc, spec, "").map_err(locate)?;
    Ok((sc, from, merged.changes))
}

/// The components a variant removes (`remove`, and the governors `remove_governors` takes
/// out of every stack), each with the field of its entry, and the stack entries it drops.
#[allow(clippy::type_complexity)]
fn removals(
    src: &Source<'_>,
    start: &Part<'_>,
    v: &VariantFile,
    field: &str,
) -> Result<(Vec<(String, String)>, crate::unstack::Drops), InputError> {
    let at = |list: &str, k: usize| format!("{field}.{list}[{k}]");
    let mut remove: Vec<(String, String)> =
        v.remove.iter().enumerate().map(|(k, r)| (r.clone(), at("remove", k))).collect();
    let unstack: Vec<(String, String)> = v
        .remove_governors
        .iter()
        .enumerate()
        .map(|(k, r)| (r.clone(), at("remove_governors", k)))
        .collect();
    let (drops, declarations) = crate::unstack::drops(start, &unstack, src)?;
    remove.extend(declarations);
    Ok((remove, drops))
}

/// An error written outside the variant (in the base scenario, or another file), reported
/// at the variant's field that caused it, with where the error itself lies.
fn nested(src: &Source<'_>, v: &VariantFile, field: &str, e: InputError) -> InputError {
    let anchor = if !v.remove.is_empty() {
        "remove"
    } else if !v.remove_governors.is_empty() {
        "remove_governors"
    } else if v.patch.is_some() {
        "patch"
    } else {
        "scenario"
    };
    tag(&v.name, src.error_at(&format!("{field}.{anchor}"), e.to_string()))
}

/// What each variant runs, one block per variant (`stormglass explain`): the scenario it
/// starts from, what it removes, replaces and adds, and what it sets.
pub fn describe(variants: &[Variant]) -> String {
    let mut out = String::new();
    for v in variants {
        out.push_str(&format!("  {}", v.name));
        if !v.description.is_empty() {
            out.push_str(&format!(" — {}", v.description));
        }
        out.push('\n');
        let mut line = |what: &str, items: &[String]| {
            if !items.is_empty() {
                out.push_str(&format!("    {what:<9} {}\n", items.join(", ")));
            }
        };
        match &v.from {
            Some(f) => line("scenario", std::slice::from_ref(f)),
            None => line("scenario", &["the experiment's".to_string()]),
        }
        line("removes", &v.changes.removed);
        line("replaces", &v.changes.replaced);
        line("adds", &v.changes.added);
        line("rewrites", &v.changes.fields);
        let sets: Vec<String> = v.set.iter().map(|a| format!("{} = {}", a.path, a.value)).collect();
        line("sets", &sets);
    }
    out
}
