//! The scenario: which components exist and how they are wired, as data.
//!
//! A scenario is parsed from RON by the experiments crate; this crate only defines the
//! types (serde derives, no file access). Structural errors (unknown fields, bad ranges)
//! surface during deserialization with positions; cross-reference errors (a call site
//! naming a station that does not exist) come from [`ScenarioSpec::check`] with the field
//! path of the offending value.
//!
//! The timeline's values are generic (`V`): the file layer parses them as raw text first
//! and then with the type the registry gives their path (`ParamType::deserialize_value`),
//! because the registry depends on the scenario being read.

use crate::components::{ComponentId, ComponentKind, Owner};
use crate::params::{ParamValue, Params, Registry};
use crate::source::SourceSpec;
use crate::station::StationSpec;
use crate::validate;

mod apps;
mod check;
pub mod govref;
mod load;
mod reach;
mod sites;
mod timeline;
mod warnings;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;
pub use sites::CallSiteSetters;
use std::collections::BTreeSet;
pub use timeline::{ChangeError, ChangeField, validate_change};

/// A scenario with typed timeline values, ready to run.
pub type Scenario = ScenarioSpec<ParamValue>;

/// Builds [`ScenarioSpec`] and its `map_timeline` with one list field per row of the
/// governor kind table (`kinds.rs`), in table order. `per_instance` keeps its place
/// before `time_limiters`: the serialized scenario is hashed into run ids.
macro_rules! scenario_spec {
    (@fields [$($acc:tt)*] [$($lists:ident)*]
        $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])?
        TimeLimiter { list: $list:ident, spec: $spec:ty, state: $state:ty $(,)? }
        $(, $($rest:tt)*)?) => {
        scenario_spec!(@fields [$($acc)*
            /// Governors (by component path, e.g. `"gate.llm"`) that each app instance has its
            /// own copy of: a request entering instance k of an app uses copy k, so a limit of
            /// 80 on 4 instances lets 320 through (docs/domain.md §6, incident 6). Every other governor is
            /// cluster-wide: one state shared by all instances (a token server, a shared
            /// semaphore). Requests from sources without an app use the declared instance
            /// itself.
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub per_instance: Vec<String>,
            $(#[doc = $doc])* #[serde(default)] $(#[serde($($serde)*)])? pub $list: Vec<$spec>,
        ] [$($lists)* $list] $($($rest)*)?);
    };
    (@fields [$($acc:tt)*] [$($lists:ident)*]
        $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])?
        $variant:ident { list: $list:ident, spec: $spec:ty, state: $state:ty $(,)? }
        $(, $($rest:tt)*)?) => {
        scenario_spec!(@fields [$($acc)*
            $(#[doc = $doc])* #[serde(default)] $(#[serde($($serde)*)])? pub $list: Vec<$spec>,
        ] [$($lists)* $list] $($($rest)*)?);
    };
    (@fields [$($acc:tt)*] [$($lists:ident)*]) => {
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields, rename = "Scenario")]
        pub struct ScenarioSpec<V> {
            pub name: String,
            #[serde(default)]
            pub description: String,
            /// Traffic classes, most important first (default: P0, P1, P2).
            #[serde(default = "crate::class::default_classes")]
            pub classes: Vec<crate::class::ClassSpec>,
            pub sources: Vec<SourceSpec>,
            $($acc)*
            /// Fan-out pipelines: what one request runs (a source may target a pipeline or,
            /// for a single call, a call site directly).
            #[serde(default)]
            pub pipelines: Vec<crate::pipeline::PipelineSpec>,
            pub call_sites: Vec<CallSiteSpec>,
            pub stations: Vec<StationSpec>,
            /// GPU-backed inference servers (continuous batching), upstreams like stations.
            #[serde(default)]
            pub gpu_servers: Vec<crate::gpu::ServerSpec>,
            /// HTTP connection pools (per-route and total caps, keep-alive, validation,
            /// connect cost, server-side idle close), referenced by call sites.
            #[serde(default)]
            pub connection_pools: Vec<crate::connpool::ConnPoolSpec>,
            /// Provider quotas (RPM, TPM, concurrency), referenced by stations.
            #[serde(default)]
            pub quotas: Vec<crate::quota::QuotaSpec>,
            /// A user population (ids, VIP share, segments); `None`: requests carry no user.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub users: Option<crate::users::UsersSpec>,
            /// Application instances (balancer, dispatcher, worker pool) requests enter first.
            #[serde(default)]
            pub apps: Vec<crate::app::AppSpec>,
            /// Correlated stalls: hosts (app instances, call sites' clients) that pause or
            /// slow down, delaying every thread, timer and call they have (`crate::stall`).
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub stalls: Vec<crate::stall::StallSpec>,
            /// Autoscalers: a station's servers as replicas of an HPA, with provisioning
            /// delay, warm-up and drain (`crate::autoscaler`).
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub autoscalers: Vec<crate::autoscaler::AutoscalerSpec>,
            /// GPU pools: replicas of one GPU server behind a router, upstreams like a GPU
            /// server (`crate::gpu::GpuPoolSpec`, `gpu/router.rs`).
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub gpu_pools: Vec<crate::gpu::GpuPoolSpec>,
            /// Parameter changes during the run.
            #[serde(default = "Vec::new")]
            pub timeline: Vec<SetParam<V>>,
            /// The trigger window of a metastability verdict (`recovery.<column>` summary
            /// columns); `None`: no verdict.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub recovery: Option<crate::recovery::RecoverySpec>,
            /// Production configurations (Resilience4j YAML, Sentinel rules, a gRPC service
            /// config) whose components join the governor lists at load, each file
            /// resolved relative to the scenario's (`crate::import`, docs/import.md); a
            /// name clash is an error. A loaded scenario has none left.
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub import: Vec<crate::import::ImportEntry>,
        }

        impl<V> ScenarioSpec<V> {
            /// Replaces the timeline's value type (the file layer resolves raw values with it).
            pub fn map_timeline<W, E>(
                self,
                mut f: impl FnMut(usize, SetParam<V>) -> Result<SetParam<W>, E>,
            ) -> Result<ScenarioSpec<W>, E> {
                let timeline = self
                    .timeline
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| f(i, s))
                    .collect::<Result<_, _>>()?;
                Ok(ScenarioSpec {
                    name: self.name,
                    description: self.description,
                    classes: self.classes,
                    sources: self.sources,
                    $( $lists: self.$lists, )*
                    per_instance: self.per_instance,
                    pipelines: self.pipelines,
                    call_sites: self.call_sites,
                    stations: self.stations,
                    gpu_servers: self.gpu_servers,
                    connection_pools: self.connection_pools,
                    quotas: self.quotas,
                    users: self.users,
                    apps: self.apps,
                    stalls: self.stalls,
                    autoscalers: self.autoscalers,
                    gpu_pools: self.gpu_pools,
                    timeline,
                    recovery: self.recovery,
                    import: self.import,
                })
            }
        }
    };
    ($($rows:tt)*) => { scenario_spec!(@fields [] [] $($rows)*); };
}
crate::with_governor_kinds!(scenario_spec);

/// A call site: the governors a call passes, in order, and the upstream at the end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "CallSite")]
pub struct CallSiteSpec {
    #[serde(deserialize_with = "validate::name")]
    pub name: String,
    /// Outermost first.
    #[serde(default)]
    pub governors: Vec<GovernorRef>,
    /// The station the call ends at.
    pub upstream: String,
    /// The connection pool its calls borrow a connection from (an entry of the scenario's
    /// `connection_pools`); none: connections are free and always fresh.
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub connection_pool: Option<String>,
    /// Weighted split of calls among upstreams — a gray release `[("gpt4", 95),
    /// ("gpt4-next", 5)]` or a multi-vendor mix; empty (default): every call goes to
    /// `upstream`. Each call's vendor is a keyed draw (the same under every policy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub split: Vec<(String, u32)>,
    /// A backup upstream: a call whose upstream fails (5xx, 429, full queue, timeout,
    /// connect error) is sent there once before its outcome climbs the stack.
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub backup: Option<String>,
    /// The client's timeout on the upstream call, from sending it until the answer
    /// (provider-side queueing included); `"0s"` = none. A timed-out call fails with
    /// `timeout`; whether the upstream keeps working on it is the station's `cancellation`.
    #[serde(default = "crate::params::Defaults::<CallSiteSpec>::timeout")]
    pub timeout: SimDuration,
    /// The client's read timeout between two chunks of a streamed answer (a `streaming`
    /// station; docs/domain.md §3.8: 20 s, or 15 s for a "no chunk for 15 s" rule), from the first chunk
    /// on: a longer gap closes the stream at (last chunk + this) and the call fails with
    /// `stream_interrupted`; `"0s"` (default) = none. `timeout` stays the total call
    /// timeout.
    #[serde(default = "crate::params::Defaults::<CallSiteSpec>::stream_read_timeout")]
    pub stream_read_timeout: SimDuration,
    /// The degradation chain's next layer for calls this site fails (`crate::fallback`):
    /// another call site (smaller model, trimmed context), a capped busy answer, a reject.
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub fallback: Option<crate::fallback::FallbackSpec>,
    /// The model is switched on (run-time `call_site.<name>.enabled`); off: every call that
    /// reaches the site goes straight to its fallback (`Rejected(shed)` without one).
    #[serde(
        default = "crate::fallback::enabled",
        skip_serializing_if = "crate::fallback::is_enabled"
    )]
    pub enabled: bool,
    /// Per-class overrides of `timeout` (docs/domain.md §3.9: "P1 no retry but +500 ms timeout
    /// tolerance"): `[("P1", "1.5s")]`. A class not listed uses `timeout`; `"0s"` = none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_timeouts: Vec<(String, SimDuration)>,
    /// Network delay each way between the client and the upstream (`crate::network`):
    /// inside `timeout`, outside the upstream's concurrency. None (default): zero.
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub network: Option<crate::network::NetworkSpec>,
    /// Network delay per route: `[("claude", (request: Constant("80ms")))]` — the legs of
    /// calls to that upstream (one of `upstream`, `split`, `backup`), in place of `network`
    /// (an upstream not listed uses `network`). Fixed for the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route_networks: Vec<(String, crate::network::NetworkSpec)>,
}

pub use govref::{Declared, GovernorRef, governor_kind_names, reloadable_kinds};
pub use load::LoadLine;

/// A run-time change: set `path` to `value` at simulated time `at`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetParam<V> {
    pub at: SimDuration,
    pub path: String,
    pub value: V,
    /// Emulate a real Sentinel rule reload with this change (`flow`, `param_flow`,
    /// `token_bucket` and `cluster_flow` parameters only): the governor's controllers are
    /// rebuilt — warm-up cold again, pacing's latest pass "long ago", hot-parameter buckets
    /// restarted, a token bucket full — and the event is a `rule_reload` instead of a
    /// `config_change`. Default `false`: the change keeps all window and controller state.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reload: bool,
}

impl<V> SetParam<V> {
    /// A plain change (no reload).
    pub fn new(at: SimDuration, path: impl Into<String>, value: V) -> Self {
        SetParam { at, path: path.into(), value, reload: false }
    }
}

/// A cross-reference or consistency error, with the field path of the culprit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SpecError {
    /// Field path such as `call_sites[0].upstream`.
    pub path: String,
    pub message: String,
}

pub(crate) fn unique<'a>(
    kind: &str,
    names: impl Iterator<Item = &'a str>,
) -> Result<(), SpecError> {
    let mut seen = BTreeSet::new();
    for (i, n) in names.enumerate() {
        if !seen.insert(n) {
            return Err(SpecError {
                path: format!("{kind}[{i}].name"),
                message: format!("duplicate name \"{n}\" (names must be unique among {kind})"),
            });
        }
    }
    Ok(())
}

// Every value against its registry type and range, with the field path.
pub(crate) fn ranges<P: Params>(list: &str, v: &[P]) -> Result<(), SpecError> {
    for (i, c) in v.iter().enumerate() {
        for d in P::decls() {
            let Some(value) = c.get(d.name) else { continue };
            d.ty.check(&value).map_err(|message| SpecError {
                path: format!("{list}[{i}].{}", P::field_of(d.name)),
                message,
            })?;
        }
    }
    Ok(())
}

impl<V> ScenarioSpec<V> {
    /// Every parameter of every component, each with its [`Owner`] typed here, once.
    pub fn registry(&self) -> Registry {
        use ComponentKind as K;
        fn list<P: Params>(r: &mut Registry, kind: ComponentKind, v: &[P]) {
            for (i, c) in v.iter().enumerate() {
                r.add_component(c, Owner::Component(ComponentId::at(kind, i)));
            }
        }
        let mut r = Registry::default();
        list(&mut r, K::Class, &self.classes);
        list(&mut r, K::Source, &self.sources);
        self.register_governors(&mut r);
        list(&mut r, K::Station, &self.stations);
        list(&mut r, K::Quota, &self.quotas);
        list(&mut r, K::GpuServer, &self.gpu_servers);
        list(&mut r, K::CallSite, &self.call_sites);
        list(&mut r, K::ConnPool, &self.connection_pools);
        if let Some(u) = &self.users {
            r.add_component(u, Owner::Component(ComponentId::at(K::Users, 0)));
            let classes: Vec<&str> = self.classes.iter().map(|c| c.name.as_str()).collect();
            list(&mut r, K::Segment, &u.segment_params(&classes));
        }
        list(&mut r, K::App, &self.apps);
        for (i, a) in self.apps.iter().enumerate() {
            if let Some(d) = &a.dispatcher {
                r.add_component(d, Owner::Component(ComponentId::at(K::Dispatcher, i)));
            }
        }
        for (i, a) in self.apps.iter().enumerate() {
            for (j, p) in a.pools().into_iter().enumerate() {
                r.add_component(p, Owner::Component(ComponentId::part_of(K::Pool, i, j)));
            }
        }
        for (i, a) in self.apps.iter().enumerate() {
            for (q, part) in crate::app::queue_params(a) {
                let kind = if q.is_pool() { K::PoolQueue } else { K::DispatcherQueue };
                q.register(&mut r, Owner::Component(ComponentId::part_of(kind, i, part)));
            }
        }
        list(&mut r, K::Stall, &self.stalls);
        list(&mut r, K::Autoscaler, &self.autoscalers);
        list(&mut r, K::GpuPool, &self.gpu_pools);
        r
    }

    /// The fields this scenario's components write that are neither a registered
    /// parameter (the root of its field path) nor declared scenario-only with a reason
    /// ([`Params::SCENARIO_ONLY`]), as `<kind>.<field>`, sorted, without repeats: empty
    /// when every configurable value written is a parameter
    /// (`models/tests/suite/every_component.rs` holds it for a scenario with every kind).
    pub fn unregistered_fields(&self) -> Vec<String> {
        fn of<P: Params + serde::Serialize>(v: &[&P], out: &mut Vec<String>) {
            for c in v {
                out.extend(
                    crate::params::fields::unregistered_fields(*c)
                        .unwrap_or_else(|e| vec![format!("{}: {e}", P::KIND)]),
                );
            }
        }
        let mut out = Vec::new();
        of(&self.classes.iter().collect::<Vec<_>>(), &mut out);
        of(&self.sources.iter().collect::<Vec<_>>(), &mut out);
        self.unregistered_governor_fields(&mut out);
        of(&self.stations.iter().collect::<Vec<_>>(), &mut out);
        of(&self.quotas.iter().collect::<Vec<_>>(), &mut out);
        of(&self.gpu_servers.iter().collect::<Vec<_>>(), &mut out);
        of(&self.call_sites.iter().collect::<Vec<_>>(), &mut out);
        of(&self.connection_pools.iter().collect::<Vec<_>>(), &mut out);
        of(&self.users.iter().collect::<Vec<_>>(), &mut out);
        of(&self.apps.iter().collect::<Vec<_>>(), &mut out);
        of(&self.apps.iter().filter_map(|a| a.dispatcher.as_ref()).collect::<Vec<_>>(), &mut out);
        of(&self.apps.iter().flat_map(|a| a.pools()).collect::<Vec<_>>(), &mut out);
        of(&self.stalls.iter().collect::<Vec<_>>(), &mut out);
        of(&self.autoscalers.iter().collect::<Vec<_>>(), &mut out);
        of(&self.gpu_pools.iter().collect::<Vec<_>>(), &mut out);
        out.sort();
        out.dedup();
        out
    }

    /// Checks the traffic attributes: populations, prompt prefixes, trace assignment rules.
    fn check_traffic(&self) -> Result<(), SpecError> {
        let classes: Vec<&str> = self.classes.iter().map(|c| c.name.as_str()).collect();
        if let Some(u) = &self.users {
            u.check(&classes)
                .map_err(|(f, message)| SpecError { path: format!("users.{f}"), message })?;
        }
        for (i, s) in self.sources.iter().enumerate() {
            crate::prompt_prefix::check(&s.prefix).map_err(|(f, message)| SpecError {
                path: format!("sources[{i}].prefix{f}"),
                message,
            })?;
            if let Some(a) = &s.assign {
                a.check(&classes).map_err(|(f, message)| SpecError {
                    path: format!("sources[{i}].assign.{f}"),
                    message,
                })?;
            }
            // A trace's class column names the scenario's classes.
            if let Some(t) = &s.trace
                && let (Some(col), Some(d)) = (&t.columns.class, &t.data)
            {
                d.check_classes(&classes, col).map_err(|m| SpecError {
                    path: format!("sources[{i}].trace.columns.class"),
                    message: format!("{}: {m}", t.file),
                })?;
            }
        }
        Ok(())
    }

    /// Sets a parameter by path, checking it against the registry (sweeps use this); the
    /// path is resolved once, to its typed owner.
    pub fn set_param(&mut self, path: &str, value: ParamValue) -> Result<(), String> {
        use ComponentKind as K;
        let reg = self.registry();
        let spec = reg.get(path).ok_or_else(|| reg.unknown(path))?;
        spec.ty.check(&value).map_err(|e| format!("{path}: {e}"))?;
        let (owner, param) = (spec.owner, spec.name);
        let c = match owner {
            Owner::Governor(g) => return self.set_governor_param(g, param, value),
            Owner::Component(c) => c,
        };
        let i = c.index();
        match c.kind {
            K::Class => self.classes[i].set(param, value),
            K::Source => self.sources[i].set(param, value),
            K::Station => self.stations[i].set(param, value),
            K::CallSite => self.call_sites[i].set(param, value),
            K::Quota => self.quotas[i].set(param, value),
            K::GpuServer => self.gpu_servers[i].set(param, value),
            K::ConnPool => self.connection_pools[i].set(param, value),
            K::Stall => self.stalls[i].set(param, value),
            K::Autoscaler => self.autoscalers[i].set(param, value),
            K::GpuPool => self.gpu_pools[i].set(param, value),
            K::Users => self.users.as_mut().expect("registered").set(param, value),
            K::Segment => {
                let classes: Vec<String> = self.classes.iter().map(|c| c.name.clone()).collect();
                let classes: Vec<&str> = classes.iter().map(|c| c.as_str()).collect();
                let users = self.users.as_mut().expect("registered");
                users.set_segment_param(i, param, value, &classes)
            }
            K::App | K::Dispatcher | K::Pool | K::DispatcherQueue | K::PoolQueue => {
                self.set_app_param(c, param, value)
            }
        }
    }

    /// Every registered parameter path can be set (sweeps, variants): a registry kind
    /// without an arm in [`Self::set_param`] is a bug this test-facing helper exposes.
    pub fn set_every_param_to_its_value(&mut self) -> Result<(), String> {
        let reg = self.registry();
        for p in reg.iter() {
            self.set_param(&p.path, p.value.clone())?;
        }
        Ok(())
    }
}
