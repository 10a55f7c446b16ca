//! Governors at run time, from the kind table (`kinds.rs`): building the
//! arena from the declarations (declared governors in table order, then shadow copies)
//! and the per-kind hooks of [`GovernorKind`] (run-time changes, rule reloads, summary
//! counters, shadow copies, per-instance copies), each delegating to the kind's
//! [`GovernorKindOps`]. Nothing here names a kind.
//!
//! API boundary: the schema side (references, declaration lists, checks) is
//! `scenario::govref`; this module only turns declarations into states.

use crate::callsite::GovernorKind;
use crate::governor::{BuildCtx, GovernorKindOps};
use crate::params::{GovernorSpec, ParamValue};
use crate::scenario::ScenarioSpec;
pub use crate::scenario::{Declared, GovernorRef, reloadable_kinds};
use crate::shadow::Shadow;
use sim_core::SimTime;

macro_rules! governor_runtime {
    ($( $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])?
        $variant:ident { list: $list:ident, spec: $spec:ty, state: $state:ty $(,)? } ),* $(,)?) => {
        impl<V> ScenarioSpec<V> {
            /// The governors' run-time states, in [`Self::declared_governors`] order.
            pub fn build_governors(&self) -> Vec<GovernorKind> {
                let classes: Vec<&str> = self.classes.iter().map(|c| c.name.as_str()).collect();
                let ctx = BuildCtx { classes: &classes };
                let mut out: Vec<GovernorKind> = Vec::new();
                $( out.extend(self.$list.iter().map(|s| {
                    GovernorKind::$variant(<$state as GovernorKindOps>::build(s, &ctx))
                })); )*
                assert_eq!(
                    out.len(),
                    self.declared_governors().len(),
                    "arena order = declared order"
                );
                out
            }

        }

        impl GovernorKind {
            /// Applies a run-time change (already checked against the registry: a run-time
            /// parameter of this governor, of the right type and range).
            pub fn apply_param(
                &mut self,
                param: &str,
                v: ParamValue,
                now: SimTime,
            ) -> Result<(), String> {
                match self {
                    $( GovernorKind::$variant(g) => {
                        <$state as crate::params::ApplyParam>::apply_param(g, param, v, now)
                    } )*
                    GovernorKind::Shadow(s) => s.inner_mut().apply_param(param, v, now),
                }
            }

            /// Emulates a Sentinel rule reload (`loadRules`) after a change (each
            /// reloadable kind's [`GovernorKindOps::reload`]). `false`: the kind has no
            /// reload (the timeline check refuses `reload: true` for it).
            pub fn reload(&mut self, now: SimTime) -> bool {
                match self {
                    $( GovernorKind::$variant(g) => {
                        if !<$spec as GovernorSpec>::RELOADABLE {
                            return false;
                        }
                        <$state as GovernorKindOps>::reload(g, now);
                        true
                    } )*
                    GovernorKind::Shadow(s) => s.inner_mut().reload(now),
                }
            }

            /// A copy for a shadow (see [`GovernorKindOps::detached_clone`]).
            pub fn detached_clone(&self) -> GovernorKind {
                match self {
                    $( GovernorKind::$variant(g) => {
                        GovernorKind::$variant(<$state as GovernorKindOps>::detached_clone(g))
                    } )*
                    GovernorKind::Shadow(s) => GovernorKind::Shadow(s.clone()),
                }
            }

            /// The world gave this declared governor `copies` per-instance copies (clones):
            /// a cluster rule's token server then has that many connected clients.
            pub fn on_per_instance(&mut self, copies: usize) {
                match self {
                    $( GovernorKind::$variant(g) => {
                        <$state as GovernorKindOps>::on_per_instance(g, copies)
                    } )*
                    GovernorKind::Shadow(_) => {}
                }
            }

            /// The governor's counters worth a summary column, in a stable order
            /// (`<kind>.<name>.<counter>`, a shadow's under `shadow.<kind>.<name>.`).
            pub fn summary_counters(&self) -> Vec<(&'static str, u64)> {
                match self {
                    $( GovernorKind::$variant(g) => {
                        <$state as GovernorKindOps>::summary_counters(g)
                    } )*
                    GovernorKind::Shadow(s) => {
                        let mut v = s.would_counters();
                        // A shadow flow rule or token bucket: its own would-verdicts say it all.
                        v.extend(s.inner().summary_counters());
                        v
                    }
                }
            }

            /// The governor's gauges ([`GovernorKindOps::gauges`]; a shadow's are its inner
            /// governor's).
            pub fn gauges(&self) -> Vec<(&'static str, i64)> {
                match self {
                    $( GovernorKind::$variant(g) => <$state as GovernorKindOps>::gauges(g), )*
                    GovernorKind::Shadow(s) => s.inner().gauges(),
                }
            }

            /// Calls in flight and the limit ([`GovernorKindOps::in_flight_limit`]).
            pub fn in_flight_limit(&self) -> Option<(u64, Option<u64>)> {
                match self {
                    $( GovernorKind::$variant(g) => {
                        <$state as GovernorKindOps>::in_flight_limit(g)
                    } )*
                    GovernorKind::Shadow(s) => s.inner().in_flight_limit(),
                }
            }

            /// The registry kind (`gate`; a shadow copy: `shadow`), from the kind table.
            pub fn kind_name(&self) -> &'static str {
                match self {
                    $( GovernorKind::$variant(_) => <$spec as crate::params::Params>::KIND, )*
                    GovernorKind::Shadow(_) => "shadow",
                }
            }

            /// Whether a shadow may wrap this governor.
            pub fn shadowable(&self) -> bool {
                match self {
                    $( GovernorKind::$variant(_) => {
                        <$spec as GovernorSpec>::NOT_SHADOWABLE.is_none()
                    } )*
                    GovernorKind::Shadow(_) => false,
                }
            }
        }
    };
}
crate::with_governor_kinds!(governor_runtime);

impl<V> ScenarioSpec<V> {
    /// Appends a shadow copy per [`ScenarioSpec::shadow_refs`] to the arena `govs` (built
    /// by `build_governors`) and its path to `names`; returns, per shadow, the arena index
    /// of the declared governor it copies.
    pub fn build_shadows(
        &self,
        govs: &mut Vec<GovernorKind>,
        names: &mut Vec<String>,
    ) -> Vec<usize> {
        let declared = self.declared_governors();
        assert_eq!(govs.len(), declared.len(), "shadows come after the declared governors");
        let mut bases = Vec::new();
        for r in self.shadow_refs() {
            let GovernorRef::Shadow(inner) = &r else { unreachable!() };
            let path = inner.path();
            let i = declared.iter().position(|d| d.path == path).expect("checked");
            // A fresh copy: `govs[i]` has not run yet (the world is being built).
            assert!(govs[i].shadowable(), "checked: the kind is shadowable (`check_shadowable`)");
            govs.push(GovernorKind::Shadow(Shadow::new(govs[i].detached_clone())));
            names.push(r.path());
            bases.push(i);
        }
        bases
    }
}
