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

use crate::components::ComponentKind;
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

/// A non-governor kind's parameters: its row of the component table
/// (`crate::components`) and its declaration type, named here once.
pub fn component_params(k: ComponentKind) -> KindParams {
    use ComponentKind as K;
    let row = k.row();
    let of = match k {
        K::Class => of::<crate::class::ClassSpec>,
        K::Source => of::<crate::source::SourceSpec>,
        K::Users => of::<crate::users::UsersSpec>,
        K::Segment => of::<crate::users::SegmentParams>,
        K::CallSite => of::<crate::scenario::CallSiteSpec>,
        K::Station => of::<crate::station::StationSpec>,
        K::Quota => of::<crate::quota::QuotaSpec>,
        K::GpuServer => of::<crate::gpu::ServerSpec>,
        K::ConnPool => of::<crate::connpool::ConnPoolSpec>,
        K::App => of::<crate::app::AppSpec>,
        K::Dispatcher => of::<crate::dispatch::DispatcherSpec>,
        K::Pool => of::<crate::pool::worker::ThreadPoolSpec>,
        K::DispatcherQueue => of::<crate::timeouts::DispatcherQueue>,
        K::PoolQueue => of::<crate::timeouts::PoolQueue>,
        K::Stall => of::<crate::stall::StallSpec>,
        K::Autoscaler => of::<crate::autoscaler::AutoscalerSpec>,
        K::GpuPool => of::<crate::gpu::GpuPoolSpec>,
    };
    of(row.group, row.instance)
}

/// Every component kind that registers parameters, in the order of the reference table:
/// the component table's traffic, site and upstream kinds, the governor kinds, then the
/// entry path's.
pub fn param_kinds() -> Vec<KindParams> {
    let (entry, rest): (Vec<ComponentKind>, Vec<ComponentKind>) =
        ComponentKind::ALL.iter().copied().partition(|k| k.row().group == "entry");
    let mut v: Vec<KindParams> = rest.into_iter().map(component_params).collect();
    v.extend(governor_kinds());
    v.extend(entry.into_iter().map(component_params));
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
    /// The component table's names are its declarations' `Params::KIND`: a parameter path's
    /// first segment and its typed owner's kind agree.
    #[test]
    fn component_rows_name_their_declarations_kind() {
        for &k in crate::components::ComponentKind::ALL {
            assert_eq!(super::component_params(k).kind, k.name(), "{k:?}");
        }
    }

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
