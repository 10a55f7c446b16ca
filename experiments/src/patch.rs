//! Structural variants at the text level: a scenario's fields merged with a `Patch(...)`,
//! components removed by `<kind>.<name>`, without a hand-written list of the scenario's
//! fields.
//!
//! The merge works on the RON text, not on typed values: the base scenario's fields and the
//! patch's fields are located by field path ([`crate::locate`]), and a new scenario text is
//! spliced from their spans:
//!
//! * a list field of the patch (its value starts with `[`) merges into the base's list of
//!   the same name: an element whose `name` matches a base element replaces it in place,
//!   the others are appended (a list the base does not have is added);
//! * any other field of the patch replaces the base's value;
//! * a removed component (`gate.llm`) is the list element whose `name` is `llm` and whose
//!   registered parameters are of kind `gate`; its kind is found by parsing that element
//!   alone into a one-element probe scenario and asking the registry — the kinds come from
//!   the components' own `Params::KIND`, so a new component kind needs no change here. A
//!   string element equal to a removed path (`per_instance: ["gate.llm"]`) goes with it;
//! * a call site of the base with governors to leave out of its stack (a variant's
//!   `remove_governors`, the unstack module) is written with its `governors` list spliced
//!   without those entries.
//!
//! The spliced text is then parsed and checked like any scenario, so every rule of the
//! scenario applies to the result. Each piece of the new text remembers where it came from
//! (file, offset, field path): an error in the result is reported where its text was
//! written, in the base scenario or in the patch.

use crate::locate::line_col;
use crate::ronfile::{InputError, Source};
/// The stack entries to drop, by call site (filled by the unstack module).
pub(crate) type Drops = std::collections::BTreeMap<String, Vec<String>>;
use models::scenario::ScenarioSpec;
use serde::Serialize;
use serde::de::IgnoredAny;
use std::collections::BTreeSet;

/// A scenario (or a patch) written inside a file: the file and the value's field path.
#[derive(Clone, Copy)]
pub(crate) struct Part<'a> {
    pub src: &'a Source<'a>,
    pub path: &'a str,
}

impl<'a> Part<'a> {
    pub(crate) fn text(&self, path: &str) -> Option<&'a str> {
        let r = self.src.locations().span(path)?;
        Some(&self.src.text[r])
    }
    /// The named fields of the value, `(name, full path)`, in text order.
    pub(crate) fn fields(&self) -> Vec<(String, String)> {
        self.src.locations().fields(self.path)
    }
    pub(crate) fn is_list(&self, path: &str) -> bool {
        self.text(path).is_some_and(|t| t.starts_with('['))
    }
    pub(crate) fn elements(&self, path: &str) -> Vec<String> {
        (0..self.src.locations().elements(path)).map(|k| format!("{path}[{k}]")).collect()
    }
    /// The `name` of a list element, when it has one.
    pub(crate) fn name_of(&self, element: &str) -> Option<String> {
        ron::from_str::<String>(self.text(&format!("{element}.name"))?).ok()
    }
}

/// What a variant changes in its scenario, for `explain` and provenance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Changes {
    /// Components removed, as written (`circuit_breaker.global`).
    pub removed: Vec<String>,
    /// List elements replaced in place, as `<field> "<name>"`.
    pub replaced: Vec<String>,
    /// List elements appended, as `<field> "<name>"` (or `<field>[<index>]` when unnamed).
    pub added: Vec<String>,
    /// Non-list fields whose value the patch replaces.
    pub fields: Vec<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty()
            && self.replaced.is_empty()
            && self.added.is_empty()
            && self.fields.is_empty()
    }
}

/// A spliced scenario text and where each of its pieces came from.
pub(crate) struct Merged {
    pub text: String,
    pub changes: Changes,
    /// Copied pieces: (offset in `text`, length, part index, offset in that part's text).
    segs: Vec<(usize, usize, usize, usize)>,
    /// Field paths: (path in `text`, part index, path in that part's file).
    fields: Vec<(String, usize, String)>,
}

/// Where an error in the merged text was written.
pub(crate) struct Origin {
    /// Index of the part (0 = base, 1 = patch).
    pub part: usize,
    pub offset: Option<usize>,
    pub field: String,
}

impl Merged {
    fn lit(&mut self, s: &str) {
        self.text.push_str(s);
    }
    fn copy(&mut self, parts: &[Part<'_>], part: usize, path: &str) {
        let r = parts[part].src.locations().span(path).expect("located");
        self.segs.push((self.text.len(), r.len(), part, r.start));
        self.text.push_str(&parts[part].src.text[r]);
    }
    fn field(&mut self, parts: &[Part<'_>], name: &str, part: usize, path: &str) {
        self.fields.push((name.to_string(), part, path.to_string()));
        self.lit(&format!("{name}: "));
        self.copy(parts, part, path);
        self.lit(",\n");
    }
    fn element(&mut self, parts: &[Part<'_>], synth: String, part: usize, path: &str) {
        self.fields.push((synth, part, path.to_string()));
        self.copy(parts, part, path);
        self.lit(", ");
    }
    fn copy_range(&mut self, parts: &[Part<'_>], part: usize, r: std::ops::Range<usize>) {
        self.segs.push((self.text.len(), r.len(), part, r.start));
        self.text.push_str(&parts[part].src.text[r]);
    }
    /// A call site of the base with the stack entries `drop` left out of its `governors`.
    fn element_without(&mut self, parts: &[Part<'_>], synth: String, path: &str, drop: &[String]) {
        self.fields.push((synth, 0, path.to_string()));
        let locations = parts[0].src.locations();
        let whole = locations.span(path).expect("located");
        let stack_path = format!("{path}.governors");
        let stack = locations.span(&stack_path).expect("a stack with entries to drop");
        self.copy_range(parts, 0, whole.start..stack.start);
        self.lit("[");
        for g in parts[0].elements(&stack_path) {
            if !drop.contains(&g) {
                self.copy(parts, 0, &g);
                self.lit(", ");
            }
        }
        self.lit("]");
        self.copy_range(parts, 0, stack.end..whole.end);
        self.lit(", ");
    }

    /// Where the text at `(line, col)` of the merged text, with field path `field`, came
    /// from: the copied piece holding that position, else (glue text such as a list's
    /// brackets) the part the field path was copied from.
    pub fn origin(&self, line: usize, col: usize, field: &str) -> Origin {
        let off = offset_of(&self.text, line, col);
        let seg = self.segs.iter().find(|s| s.0 <= off && off < s.0 + s.1.max(1));
        let best = self
            .fields
            .iter()
            .filter(|(s, _, _)| {
                field == s
                    || field.strip_prefix(s.as_str()).is_some_and(|r| r.starts_with(['.', '[']))
            })
            .max_by_key(|(s, _, _)| s.len());
        let mapped = best.map(|(s, p, orig)| (*p, join_rest(orig, &field[s.len()..])));
        match (seg, mapped) {
            (Some(&(at, _, part, orig)), Some((p, f))) if p == part => {
                Origin { part, offset: Some(orig + off - at), field: f }
            }
            (_, Some((part, field))) => Origin { part, offset: None, field },
            (Some(&(at, _, part, orig)), None) => {
                Origin { part, offset: Some(orig + off - at), field: field.to_string() }
            }
            (None, None) => Origin { part: 0, offset: None, field: field.to_string() },
        }
    }
}

fn join_rest(orig: &str, rest: &str) -> String {
    if orig.is_empty() { rest.trim_start_matches('.').to_string() } else { format!("{orig}{rest}") }
}

/// Byte offset of a 1-based line and column (in characters).
fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let mut off = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return off + l.char_indices().nth(col.saturating_sub(1)).map_or(l.len(), |c| c.0);
        }
        off += l.len();
    }
    text.len()
}

/// The component kinds an element of list `field` registers under its own name, found by
/// parsing it alone into a probe scenario.
fn kinds_of(element: &str, field: &str, name: &str) -> Vec<String> {
    let mut t = String::from("Scenario(name: \"probe\", ");
    for required in ["sources", "call_sites", "stations"] {
        if required != field {
            t.push_str(&format!("{required}: [], "));
        }
    }
    t.push_str(&format!("{field}: [{element}])"));
    let Ok(sc) = ron::from_str::<ScenarioSpec<IgnoredAny>>(&t) else { return vec![] };
    let mut kinds: Vec<String> = sc
        .registry()
        .iter()
        .filter_map(|p| {
            let (kind, rest) = p.path.split_once('.')?;
            let (n, _) = rest.rsplit_once('.')?;
            (n == name).then(|| kind.to_string())
        })
        .collect();
    kinds.dedup();
    kinds
}

/// Every `<kind>.<name>` component of the base's lists (for messages).
fn components(base: &Part<'_>) -> Vec<String> {
    let mut out = BTreeSet::new();
    for (field, path) in base.fields() {
        if !base.is_list(&path) {
            continue;
        }
        for e in base.elements(&path) {
            let (Some(name), Some(t)) = (base.name_of(&e), base.text(&e)) else { continue };
            for k in kinds_of(t, &field, &name) {
                out.insert(format!("{k}.{name}"));
            }
        }
    }
    out.into_iter().collect()
}

/// Splices `base`, minus the components in `remove` (each with the field path of its
/// entry in `exp`, for errors), with `patch` applied.
pub(crate) fn merge(
    base: Part<'_>,
    patch: Option<Part<'_>>,
    remove: &[(String, String)],
    drops: &Drops,
    exp: &Source<'_>,
) -> Result<Merged, InputError> {
    let parts: Vec<Part<'_>> = std::iter::once(base).chain(patch).collect();
    // Removals: (list field, element path).
    let mut removed: BTreeSet<String> = BTreeSet::new();
    let mut removed_paths: Vec<&str> = Vec::new();
    for (what, at) in remove {
        let Some((kind, name)) = what.split_once('.') else {
            return Err(exp.error_at(
                at,
                format!(
                    "expected a component path `<kind>.<name>` such as `gate.llm`, found \"{what}\""
                ),
            ));
        };
        let mut found = false;
        for (field, path) in base.fields().into_iter().filter(|(_, p)| base.is_list(p)) {
            for e in base.elements(&path) {
                if base.name_of(&e).as_deref() == Some(name)
                    && kinds_of(base.text(&e).unwrap_or(""), &field, name).iter().any(|k| k == kind)
                {
                    found |= removed.insert(e);
                }
            }
        }
        if !found {
            return Err(exp.error_at(
                at,
                format!(
                    "no component `{what}` to remove (listed twice, or not in the scenario); the scenario has: {}",
                    components(&base).join(", ")
                ),
            ));
        }
        removed_paths.push(what);
    }
    let patch_fields: Vec<(String, String)> = patch.map(|p| p.fields()).unwrap_or_default();
    let mut m = Merged {
        text: String::from("Scenario(\n"),
        changes: Changes {
            removed: remove.iter().map(|r| r.0.clone()).collect(),
            ..Changes::default()
        },
        segs: Vec::new(),
        fields: Vec::new(),
    };
    let base_fields = base.fields();
    for (field, bpath) in &base_fields {
        let pf = patch_fields.iter().find(|(f, _)| f == field).map(|(_, p)| p.as_str());
        match pf {
            Some(pp) if !parts[1].is_list(pp) => {
                m.changes.fields.push(field.clone());
                m.field(&parts, field, 1, pp);
            }
            _ if base.is_list(bpath) => {
                let rm = Removals { elements: &removed, paths: &removed_paths, drops };
                merge_list(&mut m, &parts, field, bpath, pf, &rm);
            }
            _ => m.field(&parts, field, 0, bpath),
        }
    }
    for (field, pp) in &patch_fields {
        if base_fields.iter().any(|(f, _)| f == field) {
            continue;
        }
        if parts[1].is_list(pp) {
            m.fields.push((field.clone(), 1, pp.clone()));
            m.lit(&format!("{field}: ["));
            for (k, e) in parts[1].elements(pp).iter().enumerate() {
                m.changes.added.push(label(&parts[1], field, e, k));
                m.element(&parts, format!("{field}[{k}]"), 1, e);
            }
            m.lit("],\n");
        } else {
            m.changes.fields.push(field.clone());
            m.field(&parts, field, 1, pp);
        }
    }
    m.lit(")");
    Ok(m)
}

fn label(part: &Part<'_>, field: &str, element: &str, k: usize) -> String {
    match part.name_of(element) {
        Some(n) => format!("{field} \"{n}\""),
        None => format!("{field}[{k}]"),
    }
}

/// What leaves the base: list elements by path, string elements equal to a removed
/// component's path, stack entries of call sites (the unstack module).
struct Removals<'r> {
    elements: &'r BTreeSet<String>,
    paths: &'r [&'r str],
    drops: &'r Drops,
}

/// Writes the base list `field` (at `bpath`) without removed elements, with the patch's
/// list (at `ppath`) merged in by name.
fn merge_list(
    m: &mut Merged,
    parts: &[Part<'_>],
    field: &str,
    bpath: &str,
    ppath: Option<&str>,
    rm: &Removals<'_>,
) {
    let base = &parts[0];
    let patch_elems: Vec<String> = ppath.map(|p| parts[1].elements(p)).unwrap_or_default();
    let patch_names: Vec<Option<String>> =
        patch_elems.iter().map(|e| parts[1].name_of(e)).collect();
    let mut used = vec![false; patch_elems.len()];
    m.lit(&format!("{field}: ["));
    m.fields.push((field.to_string(), 0, bpath.to_string()));
    let mut k = 0;
    for e in base.elements(bpath) {
        if rm.elements.contains(&e) {
            continue;
        }
        let text = base.text(&e).unwrap_or("");
        if text.starts_with('"')
            && ron::from_str::<String>(text).is_ok_and(|s| rm.paths.contains(&s.as_str()))
        {
            continue;
        }
        let name = base.name_of(&e);
        let hit = name.as_ref().and_then(|n| {
            (0..patch_elems.len()).find(|&j| !used[j] && patch_names[j].as_ref() == Some(n))
        });
        match hit {
            Some(j) => {
                used[j] = true;
                m.changes.replaced.push(label(&parts[1], field, &patch_elems[j], j));
                m.element(parts, format!("{field}[{k}]"), 1, &patch_elems[j]);
            }
            None => match rm.drops.get(&e) {
                Some(drop) => m.element_without(parts, format!("{field}[{k}]"), &e, drop),
                None => m.element(parts, format!("{field}[{k}]"), 0, &e),
            },
        }
        k += 1;
    }
    for (j, e) in patch_elems.iter().enumerate() {
        if !used[j] {
            m.changes.added.push(label(&parts[1], field, e, j));
            m.element(parts, format!("{field}[{k}]"), 1, e);
            k += 1;
        }
    }
    m.lit("],\n");
}

/// Where an origin stands in its file, as `file:line:col`.
pub(crate) fn position(part: &Part<'_>, o: &Origin) -> (usize, usize) {
    match o.offset {
        Some(off) => line_col(part.src.text, off),
        None => part
            .src
            .offset(&o.field)
            .or_else(|| part.src.offset(part.path))
            .map(|off| line_col(part.src.text, off))
            .unwrap_or((1, 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn offsets_of_lines_and_columns() {
        let t = "ab\ncdé\nf";
        assert_eq!(offset_of(t, 1, 1), 0);
        assert_eq!(offset_of(t, 2, 3), 5);
        assert_eq!(offset_of(t, 3, 1), 8);
        assert_eq!(offset_of(t, 9, 1), t.len());
    }

    #[test]
    fn kinds_come_from_the_registry() {
        let gate = r#"(name: "llm", permits: 4, acquire_timeout: "1s")"#;
        assert_eq!(kinds_of(gate, "gates", "llm"), ["gate"]);
        assert_eq!(kinds_of("(nonsense)", "gates", "llm"), Vec::<String>::new());
        let _ = Path::new("");
    }
}
