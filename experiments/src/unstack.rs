//! A variant's `remove_governors`: governors taken out of call-site stacks in one line,
//! without a patch repeating the call site (docs/experiments.md, "Variants").
//!
//! An entry is either
//!
//! * `<kind>.<name>` (`circuit_breaker.global`): the governor leaves every stack that holds
//!   it (a `Shadow(..)` of it too) and its declaration goes, as with `remove`; or
//! * `call_site.<site>.<kind>.<name>` (`call_site.sum.circuit_breaker.global`): it leaves
//!   that one call site's stack; its declaration stays (other stacks may hold it).
//!
//! A reference is matched by its component path ([`GovernorRef::path`], the registry's
//! `<Params::KIND>.<name>`), so a new governor kind needs no change here. The stacks are
//! rewritten at the text level by [`crate::patch::merge`], before the patch: a call site
//! the patch replaces is taken as the patch writes it.

use crate::patch::Part;
use crate::ronfile::{InputError, Source};
use models::scenario::GovernorRef;

/// Governor references to drop: call-site element path (in the base) → paths of the
/// stack entries to leave out.
pub(crate) use crate::patch::Drops;

/// One `remove_governors` entry, read.
struct Entry<'e> {
    /// `call_site.<site>` scope, or every call site.
    site: Option<&'e str>,
    /// `<kind>.<name>` of the governor.
    governor: &'e str,
}

fn entry<'e>(exp: &Source<'_>, what: &'e str, at: &str) -> Result<Entry<'e>, InputError> {
    let (site, governor) = match what.strip_prefix("call_site.") {
        Some(rest) => match rest.split_once('.') {
            Some((site, g)) => (Some(site), g),
            None => (None, ""),
        },
        None => (None, what),
    };
    let well_formed = |s: &str| {
        s.split_once('.').is_some_and(|(k, n)| !k.is_empty() && !n.is_empty() && !n.contains('.'))
    };
    if !well_formed(governor) {
        return Err(exp.error_at(
            at,
            format!(
                "expected a governor `<kind>.<name>` (`circuit_breaker.global`: out of every \
                 stack) or `call_site.<site>.<kind>.<name>` (out of one stack), found \"{what}\""
            ),
        ));
    }
    Ok(Entry { site, governor })
}

/// The stack entries the variant's `remove_governors` leave out of the base's call sites,
/// and the governors whose declarations go too (`(path, field of the entry)`, for
/// `remove`). Each entry must match at least one stack entry.
pub(crate) fn drops(
    base: &Part<'_>,
    entries: &[(String, String)],
    exp: &Source<'_>,
) -> Result<(Drops, Vec<(String, String)>), InputError> {
    let stacks = stacks(base);
    let mut out = Drops::new();
    let mut declarations = Vec::new();
    for (what, at) in entries {
        let e = entry(exp, what, at)?;
        let mut found = false;
        for (site, element, refs) in &stacks {
            if e.site.is_some_and(|s| s != site.as_str()) {
                continue;
            }
            for (path, r) in refs {
                if r.declared().path() == e.governor {
                    let list = out.entry(element.clone()).or_default();
                    if !list.contains(path) {
                        list.push(path.clone());
                    }
                    found = true;
                }
            }
        }
        if !found {
            let held: Vec<String> = stacks
                .iter()
                .flat_map(|(s, _, refs)| {
                    refs.iter().map(move |(_, r)| format!("{s}: {}", r.path()))
                })
                .collect();
            return Err(exp.error_at(
                at,
                format!(
                    "no governor stack holds `{}`{}; the stacks hold: {}",
                    e.governor,
                    e.site.map(|s| format!(" in call site \"{s}\"")).unwrap_or_default(),
                    if held.is_empty() { "nothing".to_string() } else { held.join(", ") }
                ),
            ));
        }
        if e.site.is_none() {
            declarations.push((e.governor.to_string(), at.clone()));
        }
    }
    Ok((out, declarations))
}

/// Every call site of the base with its stack: `(name, element path, [(entry path, ref)])`.
#[allow(clippy::type_complexity)]
fn stacks(base: &Part<'_>) -> Vec<(String, String, Vec<(String, GovernorRef)>)> {
    let Some((_, sites)) = base.fields().into_iter().find(|(f, _)| f == "call_sites") else {
        return vec![];
    };
    let mut out = Vec::new();
    for element in base.elements(&sites) {
        let Some(name) = base.name_of(&element) else { continue };
        let refs = base
            .elements(&format!("{element}.governors"))
            .into_iter()
            .filter_map(|g| Some((g.clone(), ron::from_str::<GovernorRef>(base.text(&g)?).ok()?)))
            .collect();
        out.push((name, element, refs));
    }
    out
}
