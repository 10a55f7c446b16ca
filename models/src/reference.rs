//! The parameter catalogue: every component kind that registers parameters, with its
//! declarations, for tools that enumerate knobs without a scenario (the GUI, generated
//! docs). `docs/scenario-reference.md`'s parameter table is [`parameter_table`]'s output
//! (`models/tests/docs.rs` fails when they differ; `UPDATE_EXPECT=1 cargo test -p models
//! --test docs` rewrites it).
//!
//! Key design decision: the governor kinds come from the kind table (`kinds.rs`), so a
//! new kind is catalogued (and documented) without an edit here; the other kinds are listed
//! once in [`param_kinds`]. `models/tests/docs.rs` also checks that every kind a scenario
//! with every component registers is catalogued.
//!
//! API boundary: reads [`Params::decls`] only; knows nothing of instances or the world.

use crate::params::{ParamDecl, Params};

/// One component kind's parameters, as a scenario registers them under
/// `<kind>.<instance>.<param>`.
#[derive(Clone, Debug)]
pub struct KindParams {
    /// The registry kind (`gate`, `station`, …): the first path segment.
    pub kind: &'static str,
    /// The component group it belongs to (`governor`, `upstream`, `traffic`, `entry`,
    /// `site`), for grouping knobs.
    pub group: &'static str,
    /// How the instance segment is written in docs (`<name>`, `<dispatcher>-<class>`).
    pub instance: &'static str,
    pub decls: Vec<ParamDecl>,
    /// The declaration's fields set in the scenario only, with the reason
    /// ([`Params::SCENARIO_ONLY`]).
    pub scenario_only: &'static [(&'static str, &'static str)],
}

fn of<P: Params>(group: &'static str, instance: &'static str) -> KindParams {
    KindParams {
        kind: P::KIND,
        group,
        instance,
        decls: P::decls(),
        scenario_only: P::SCENARIO_ONLY,
    }
}

macro_rules! governor_params {
    ($( $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])?
        $variant:ident { list: $list:ident, spec: $spec:ty, state: $state:ty $(,)? } ),* $(,)?) => {
        /// The governor kinds' parameters, in kind-table order.
        fn governor_kinds() -> Vec<KindParams> {
            vec![$( of::<$spec>("governor", "<name>") ),*]
        }
    };
}
crate::with_governor_kinds!(governor_params);

/// Every component kind that registers parameters, in the order of the reference table:
/// traffic, call sites, upstreams, governors, entry path.
pub fn param_kinds() -> Vec<KindParams> {
    let mut v = vec![
        of::<crate::class::ClassSpec>("traffic", "<name>"),
        of::<crate::source::SourceSpec>("traffic", "<name>"),
        of::<crate::users::UsersSpec>("traffic", "all"),
        of::<crate::users::SegmentParams>("traffic", "<name>"),
        of::<crate::scenario::CallSiteSpec>("site", "<name>"),
        of::<crate::station::StationSpec>("upstream", "<name>"),
        of::<crate::quota::QuotaSpec>("upstream", "<name>"),
        of::<crate::gpu::ServerSpec>("upstream", "<name>"),
        of::<crate::connpool::ConnPoolSpec>("upstream", "<name>"),
    ];
    v.extend(governor_kinds());
    v.extend([
        of::<crate::app::AppSpec>("entry", "<name>"),
        of::<crate::dispatch::DispatcherSpec>("entry", "<name>"),
        of::<crate::pool::worker::ThreadPoolSpec>("entry", "<name>"),
        of::<crate::timeouts::DispatcherQueue>("entry", "<dispatcher>-<class>"),
        of::<crate::timeouts::PoolQueue>("entry", "<pool>"),
        of::<crate::stall::StallSpec>("entry", "<name>"),
    ]);
    v
}

/// `rule7.count` → `rule<i>.count` (a flow rule's index), `degrade3.count` →
/// `degrade<j>.count` (a resource's degrade rule), `queue2.capacity` → `queue<c>.capacity`
/// (a dispatcher's class queue), `class_policy1.max_attempts` → `class_policy<k>.max_attempts`
/// (a retry's class override): one row for all.
fn generic_name(name: &str) -> Option<String> {
    for (prefix, index) in [("rule", "i"), ("degrade", "j"), ("queue", "c"), ("class_policy", "k")]
    {
        if let Some((r, field)) = name.split_once('.')
            && let Some(n) = r.strip_prefix(prefix)
            && n.parse::<u32>().is_ok()
        {
            return (n == "0").then(|| format!("{prefix}<{index}>.{field}"));
        }
    }
    Some(name.to_string())
}

/// The reference table of every parameter path (Markdown): path, type and range, unit,
/// the declared default (blank: required, or given by other fields), run-time, meaning.
pub fn parameter_table() -> String {
    let mut out = String::from(
        "| path | type and range | unit | default | run-time | meaning |\n|---|---|---|---|---|---|\n",
    );
    for k in param_kinds() {
        for d in &k.decls {
            let Some(name) = generic_name(d.name) else { continue };
            out.push_str(&format!(
                "| `{}.{}.{}` | {} | {} | {} | {} | {} |\n",
                k.kind,
                k.instance,
                name,
                d.ty.describe(),
                d.unit.replace('|', "\\|"),
                d.default.as_ref().map_or(String::new(), |v| format!("`{v}`")),
                if d.runtime { "yes" } else { "no" },
                d.doc.replace('|', "\\|"),
            ));
        }
    }
    out.push_str(
        "\nFields a declaration writes that are set in the scenario only, not parameters (every \
         other field is the root of a parameter's field path: \
         `models/tests/suite/every_component.rs` checks a scenario with every kind):\n\n\
         | field | why it is not a parameter |\n|---|---|\n",
    );
    for k in param_kinds() {
        for (field, why) in k.scenario_only {
            out.push_str(&format!("| `{}.{field}` | {} |\n", k.kind, why.replace('|', "\\|")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// Every declared default has its parameter's type and lies in its range.
    #[test]
    fn declared_defaults_are_in_range() {
        let mut n = 0;
        for k in super::param_kinds() {
            for d in &k.decls {
                if let Some(v) = &d.default {
                    d.ty.check(v).unwrap_or_else(|e| panic!("{}.{}: {e}", k.kind, d.name));
                    n += 1;
                }
            }
        }
        assert!(n >= 40, "{n} declared defaults");
    }
}
