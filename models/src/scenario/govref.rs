//! Governor references and declarations in the scenario (the schema side of the kind
//! table, `kinds.rs`): [`GovernorRef`] (`Gate("name")` in a call-site
//! stack), the declaration lists in arena order, registration, uniqueness and range
//! checks and `set_param` for governor parameters — all expanded from the table.
//!
//! Architecture invariant: a governor's component path is `<Params::KIND>.<name>`, the
//! same string in the registry, in metric names and in `events.parquet`.

use super::{ScenarioSpec, SpecError};
use crate::params::{GovernorSpec, ParamValue, Params, Registry};
use serde::{Deserialize, Serialize};

macro_rules! governor_ref {
    ($( $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])?
        $variant:ident { list: $list:ident, spec: $spec:ty, state: $state:ty $(,)? } ),* $(,)?) => {
        /// A governor in a call-site stack, by the name it is declared under.
        #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
        pub enum GovernorRef {
            $( $(#[doc = $doc])* $variant(String), )*
            /// Shadow mode ([`crate::shadow`]): a separate copy of the declared governor
            /// that records what it would do and never acts. Component path
            /// `shadow.<kind>.<name>`.
            Shadow(Box<GovernorRef>),
        }

        impl GovernorRef {
            pub fn name(&self) -> &str {
                match self {
                    $( GovernorRef::$variant(n) => n, )*
                    GovernorRef::Shadow(r) => r.name(),
                }
            }
            /// The registry kind (`gate`, `flow`, …).
            pub fn kind(&self) -> &'static str {
                match self {
                    $( GovernorRef::$variant(_) => <$spec as Params>::KIND, )*
                    GovernorRef::Shadow(r) => r.kind(),
                }
            }
            /// The scenario list it is declared in.
            pub fn list(&self) -> &'static str {
                match self {
                    $( GovernorRef::$variant(_) => stringify!($list), )*
                    GovernorRef::Shadow(r) => r.list(),
                }
            }
            /// Why a shadow cannot wrap this reference (`None`: it can).
            pub fn not_shadowable(&self) -> Option<String> {
                match self {
                    $( GovernorRef::$variant(n) => <$spec as GovernorSpec>::NOT_SHADOWABLE
                        .map(|why| format!("Shadow({}(\"{n}\")): {why}", stringify!($variant))), )*
                    GovernorRef::Shadow(_) => {
                        Some("Shadow(Shadow(..)): shadows do not nest".into())
                    }
                }
            }
        }

        /// Kinds whose parameters may change with `reload: true` (a Sentinel rule reload),
        /// in table order.
        pub fn reloadable_kinds() -> Vec<&'static str> {
            let mut out = Vec::new();
            $( if <$spec as GovernorSpec>::RELOADABLE {
                out.push(<$spec as Params>::KIND);
            } )*
            out
        }

        /// Every governor kind's registry name, in table order.
        pub fn governor_kind_names() -> Vec<&'static str> {
            vec![$( <$spec as Params>::KIND ),*]
        }

        impl<V> ScenarioSpec<V> {
            /// Every declared governor, in arena order: the kind table's order, each kind
            /// in declaration order.
            pub fn declared_governors(&self) -> Vec<Declared> {
                fn of<P: Params>(list: &'static str, v: &[P], out: &mut Vec<Declared>) {
                    for (index, p) in v.iter().enumerate() {
                        out.push(Declared {
                            path: format!("{}.{}", P::KIND, p.instance_name()),
                            list,
                            index,
                            name: p.instance_name().to_string(),
                        });
                    }
                }
                let mut out = Vec::new();
                $( of(stringify!($list), &self.$list, &mut out); )*
                out
            }

            /// Registers every declared governor's parameters, owned by its arena index
            /// (the declaration order of [`Self::declared_governors`]).
            pub(crate) fn register_governors(&self, r: &mut Registry) {
                let mut g = 0;
                $( for c in &self.$list {
                    r.add_component(c, crate::components::Owner::Governor(g));
                    g += 1;
                } )*
            }

            /// The governors' fields that are neither a parameter nor declared
            /// scenario-only ([`crate::params::fields::unregistered_fields`]).
            pub(crate) fn unregistered_governor_fields(&self, out: &mut Vec<String>) {
                $( for c in &self.$list {
                    out.extend(crate::params::fields::unregistered_fields(c)
                        .unwrap_or_else(|e| vec![format!("{}: {e}", <$spec as Params>::KIND)]));
                } )*
            }

            /// Names unique within each governor list.
            pub(crate) fn check_governor_names(&self) -> Result<(), SpecError> {
                $( super::unique(
                    stringify!($list),
                    self.$list.iter().map(|s| s.instance_name()),
                )?; )*
                Ok(())
            }

            /// Every governor parameter against its registry type and range.
            pub(crate) fn check_governor_ranges(&self) -> Result<(), SpecError> {
                $( super::ranges(stringify!($list), &self.$list)?; )*
                Ok(())
            }

            /// A referenced governor's local refusals ([`GovernorSpec::local_refusals`]);
            /// none for a shadow (it never acts) or an unknown name.
            pub fn governor_local_refusals(&self, r: &GovernorRef) -> Vec<crate::outcome::Reason> {
                match r {
                    $( GovernorRef::$variant(n) => self.$list.iter()
                        .find(|c| c.instance_name() == n.as_str())
                        .map_or_else(Vec::new, |c| c.local_refusals()), )*
                    GovernorRef::Shadow(_) => Vec::new(),
                }
            }

            /// Whether a referenced breaker records `o` as a failure
            /// ([`GovernorSpec::records_failure`]; `None`: not a breaker, or a shadow).
            pub fn governor_records_failure(
                &self,
                r: &GovernorRef,
                o: crate::outcome::Outcome,
            ) -> Option<bool> {
                match r {
                    $( GovernorRef::$variant(n) => self.$list.iter()
                        .find(|c| c.instance_name() == n.as_str())?
                        .records_failure(o), )*
                    GovernorRef::Shadow(_) => None,
                }
            }

            /// Sets a parameter of declared governor `g` (its arena index, as registered)
            /// in its declaration.
            pub(crate) fn set_governor_param(
                &mut self,
                g: usize,
                param: &str,
                value: ParamValue,
            ) -> Result<(), String> {
                let mut g = g;
                $( if g < self.$list.len() {
                    return self.$list[g].set(param, value);
                }
                g -= self.$list.len(); )*
                unreachable!("registered: a declared governor")
            }
        }

    };
}
crate::with_governor_kinds!(governor_ref);

impl GovernorRef {
    /// `<kind>.<name>`: its component path.
    pub fn path(&self) -> String {
        match self {
            GovernorRef::Shadow(r) => format!("shadow.{}", r.path()),
            _ => format!("{}.{}", self.kind(), self.name()),
        }
    }
    /// The declared governor it refers to (itself, or the one a shadow copies).
    pub fn declared(&self) -> &GovernorRef {
        match self {
            GovernorRef::Shadow(r) => r.declared(),
            r => r,
        }
    }
}

/// One declared governor.
pub struct Declared {
    /// `<kind>.<name>`.
    pub path: String,
    /// The list it is declared in and its index there (for error paths).
    pub list: &'static str,
    pub index: usize,
    pub name: String,
}

impl<V> ScenarioSpec<V> {
    /// Every distinct shadow referenced by a call site, in order of first reference (call
    /// sites in order, each stack top to bottom): the arena slots after the declared
    /// governors.
    pub fn shadow_refs(&self) -> Vec<GovernorRef> {
        let mut out: Vec<GovernorRef> = Vec::new();
        for c in &self.call_sites {
            for g in &c.governors {
                if matches!(g, GovernorRef::Shadow(_)) && !out.contains(g) {
                    out.push(g.clone());
                }
            }
        }
        out
    }
}

/// Why a reference cannot be shadowed (`None`: it can): the kind's
/// [`GovernorSpec::NOT_SHADOWABLE`], or a nested shadow.
pub fn check_shadowable(r: &GovernorRef) -> Option<String> {
    match r {
        GovernorRef::Shadow(inner) => inner.not_shadowable(),
        _ => None,
    }
}
