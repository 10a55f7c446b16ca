//! Governor declarations: every kind the scenario can declare, referenced by call sites as
//! `Kind("name")`, built into the world's governor arena and changed at run time through
//! one path (`<kind>.<name>.<param>`).
//!
//! The key design decision: adding a governor kind touches this file and the enum in
//! [`crate::callsite`] only; the scenario check, the arena, the registry and run-time
//! changes are generic over [`GovernorRef::path`].
//!
//! Architecture invariant: a governor's component path is `<Params::KIND>.<name>`, the
//! same string in the registry, in metric names and in `events.parquet`.

use crate::batcher::BatcherSpec;
use crate::batcher::governor::BatchGovernor;
use crate::breaker::sentinel_degrade::{DegradeBreaker, DegradeRuleSpec};
use crate::breaker::{CircuitBreaker, CircuitBreakerSpec};
use crate::cache::singleflight::{SingleFlight, SingleFlightSpec};
use crate::cache::{Cache, CacheSpec};
use crate::callsite::GovernorKind;
use crate::flow::cluster::{ClusterFlow, ClusterFlowRuleSpec};
use crate::flow::hot_param::{ParamFlow, ParamFlowRuleSpec};
use crate::flow::rules::{FlowRules, FlowRulesSpec};
use crate::flow::token_bucket::{TokenBucket, TokenBucketSpec};
use crate::gate::{Gate, GateSpec};
use crate::params::{ParamValue, Params, Registry};
use crate::retry::{Retry, RetrySpec};
use crate::scenario::ScenarioSpec;
use crate::time_limiter::{TimeLimiter, TimeLimiterSpec};
use serde::{Deserialize, Serialize};
use sim_core::SimTime;

/// A governor in a call-site stack, by the name it is declared under.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GovernorRef {
    /// A concurrency gate from `gates`.
    Gate(String),
    /// Sentinel flow rules from `flow_rules`.
    FlowRules(String),
    /// A Sentinel hot-parameter rule from `param_flow_rules`.
    ParamFlow(String),
    /// A token bucket (TPM) from `token_buckets`.
    TokenBucket(String),
    /// A retry policy from `retries`.
    Retry(String),
    /// A response cache from `caches`.
    Cache(String),
    /// Single-flight (concurrent identical misses share one call) from `single_flights`.
    SingleFlight(String),
    /// A Resilience4j circuit breaker from `circuit_breakers`.
    CircuitBreaker(String),
    /// A Sentinel degrade rule (circuit breaker) from `degrade_rules`.
    DegradeRule(String),
    /// A request batcher (window + max batch: one upstream call per batch) from `batchers`.
    Batcher(String),
    /// A Resilience4j time limiter from `time_limiters`.
    TimeLimiter(String),
    /// A Sentinel cluster flow rule (token server + local fallback) from
    /// `cluster_flow_rules`.
    ClusterFlow(String),
    /// Shadow mode ([`crate::shadow`]): a separate copy of the declared governor that
    /// records what it would do and never acts. Component path `shadow.<kind>.<name>`.
    Shadow(Box<GovernorRef>),
}

impl GovernorRef {
    pub fn name(&self) -> &str {
        match self {
            GovernorRef::Gate(n)
            | GovernorRef::FlowRules(n)
            | GovernorRef::ParamFlow(n)
            | GovernorRef::TokenBucket(n)
            | GovernorRef::Retry(n)
            | GovernorRef::Cache(n)
            | GovernorRef::SingleFlight(n)
            | GovernorRef::CircuitBreaker(n)
            | GovernorRef::DegradeRule(n)
            | GovernorRef::Batcher(n)
            | GovernorRef::TimeLimiter(n)
            | GovernorRef::ClusterFlow(n) => n,
            GovernorRef::Shadow(r) => r.name(),
        }
    }
    /// The registry kind (`gate`, `flow`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            GovernorRef::Gate(_) => GateSpec::KIND,
            GovernorRef::FlowRules(_) => FlowRulesSpec::KIND,
            GovernorRef::ParamFlow(_) => ParamFlowRuleSpec::KIND,
            GovernorRef::TokenBucket(_) => TokenBucketSpec::KIND,
            GovernorRef::Retry(_) => RetrySpec::KIND,
            GovernorRef::Cache(_) => CacheSpec::KIND,
            GovernorRef::SingleFlight(_) => SingleFlightSpec::KIND,
            GovernorRef::CircuitBreaker(_) => CircuitBreakerSpec::KIND,
            GovernorRef::DegradeRule(_) => DegradeRuleSpec::KIND,
            GovernorRef::Batcher(_) => BatcherSpec::KIND,
            GovernorRef::TimeLimiter(_) => TimeLimiterSpec::KIND,
            GovernorRef::ClusterFlow(_) => ClusterFlowRuleSpec::KIND,
            GovernorRef::Shadow(r) => r.kind(),
        }
    }
    /// The scenario list it is declared in.
    pub fn list(&self) -> &'static str {
        match self {
            GovernorRef::Gate(_) => "gates",
            GovernorRef::FlowRules(_) => "flow_rules",
            GovernorRef::ParamFlow(_) => "param_flow_rules",
            GovernorRef::TokenBucket(_) => "token_buckets",
            GovernorRef::Retry(_) => "retries",
            GovernorRef::Cache(_) => "caches",
            GovernorRef::SingleFlight(_) => "single_flights",
            GovernorRef::CircuitBreaker(_) => "circuit_breakers",
            GovernorRef::DegradeRule(_) => "degrade_rules",
            GovernorRef::Batcher(_) => "batchers",
            GovernorRef::TimeLimiter(_) => "time_limiters",
            GovernorRef::ClusterFlow(_) => "cluster_flow_rules",
            GovernorRef::Shadow(r) => r.list(),
        }
    }
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
    /// Every declared governor, in arena order: gates, flow rules, hot-parameter rules,
    /// token buckets, each in declaration order.
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
        of("gates", &self.gates, &mut out);
        of("flow_rules", &self.flow_rules, &mut out);
        of("param_flow_rules", &self.param_flow_rules, &mut out);
        of("token_buckets", &self.token_buckets, &mut out);
        of("retries", &self.retries, &mut out);
        of("caches", &self.caches, &mut out);
        of("single_flights", &self.single_flights, &mut out);
        of("circuit_breakers", &self.circuit_breakers, &mut out);
        of("degrade_rules", &self.degrade_rules, &mut out);
        of("batchers", &self.batchers, &mut out);
        of("time_limiters", &self.time_limiters, &mut out);
        of("cluster_flow_rules", &self.cluster_flow_rules, &mut out);
        out
    }

    /// The governors' run-time states, in [`Self::declared_governors`] order.
    pub fn build_governors(&self) -> Vec<GovernorKind> {
        let mut out: Vec<GovernorKind> = Vec::new();
        out.extend(self.gates.iter().map(|s| GovernorKind::Gate(Gate::new(s))));
        out.extend(self.flow_rules.iter().map(|s| GovernorKind::FlowRules(FlowRules::new(s))));
        out.extend(
            self.param_flow_rules.iter().map(|s| GovernorKind::ParamFlow(ParamFlow::new(s))),
        );
        out.extend(
            self.token_buckets.iter().map(|s| GovernorKind::TokenBucket(TokenBucket::new(s))),
        );
        let classes: Vec<&str> = self.classes.iter().map(|c| c.name.as_str()).collect();
        out.extend(self.retries.iter().map(|s| GovernorKind::Retry(Retry::new(s, &classes))));
        out.extend(self.caches.iter().map(|s| GovernorKind::Cache(Cache::new(s))));
        out.extend(
            self.single_flights.iter().map(|s| GovernorKind::SingleFlight(SingleFlight::new(s))),
        );
        out.extend(
            self.circuit_breakers
                .iter()
                .map(|s| GovernorKind::CircuitBreaker(CircuitBreaker::new(s))),
        );
        out.extend(
            self.degrade_rules.iter().map(|s| GovernorKind::DegradeRule(DegradeBreaker::new(s))),
        );
        out.extend(self.batchers.iter().map(|s| GovernorKind::Batcher(BatchGovernor::new(s))));
        out.extend(
            self.time_limiters.iter().map(|s| GovernorKind::TimeLimiter(TimeLimiter::new(s))),
        );
        out.extend(
            self.cluster_flow_rules.iter().map(|s| GovernorKind::ClusterFlow(ClusterFlow::new(s))),
        );
        assert_eq!(out.len(), self.declared_governors().len(), "arena order = declared order");
        out
    }

    pub(crate) fn register_governors(&self, r: &mut Registry) {
        self.gates.iter().for_each(|c| r.add_component(c));
        self.flow_rules.iter().for_each(|c| r.add_component(c));
        self.param_flow_rules.iter().for_each(|c| r.add_component(c));
        self.token_buckets.iter().for_each(|c| r.add_component(c));
        self.retries.iter().for_each(|c| r.add_component(c));
        self.caches.iter().for_each(|c| r.add_component(c));
        self.single_flights.iter().for_each(|c| r.add_component(c));
        self.circuit_breakers.iter().for_each(|c| r.add_component(c));
        self.degrade_rules.iter().for_each(|c| r.add_component(c));
        self.batchers.iter().for_each(|c| r.add_component(c));
        self.time_limiters.iter().for_each(|c| r.add_component(c));
        self.cluster_flow_rules.iter().for_each(|c| r.add_component(c));
    }
}

impl GovernorKind {
    /// Applies a run-time change (already checked against the registry: a run-time
    /// parameter of this governor, of the right type and range).
    pub fn apply_param(&mut self, param: &str, v: ParamValue, now: SimTime) -> Result<(), String> {
        match self {
            GovernorKind::Gate(g) => match (param, v) {
                ("permits", ParamValue::Count(n)) => g.set_permits(n),
                ("acquire_timeout", ParamValue::Duration(d)) => g.set_acquire_timeout(d),
                (p, v) => return Err(format!("gate.{p} = {v:?} is not run-time changeable")),
            },
            GovernorKind::FlowRules(f) => f.apply_param(param, v)?,
            GovernorKind::ParamFlow(f) => f.apply_param(param, v)?,
            GovernorKind::TokenBucket(t) => t.apply_param(param, v, now)?,
            GovernorKind::Retry(r) => match (param, v) {
                ("max_attempts", ParamValue::Count(n)) => r.set_max_attempts(n as u32),
                (p, v) => return Err(format!("retry.{p} = {v:?} is not run-time changeable")),
            },
            GovernorKind::Cache(c) => match (param, v) {
                ("capacity", ParamValue::Count(n)) => c.set_capacity(n),
                ("ttl", ParamValue::Duration(d)) => c.set_ttl(d),
                ("hit_probability", ParamValue::Float(x)) => c.set_hit_probability(x),
                ("serve_stale_on_error", ParamValue::Bool(b)) => c.set_serve_stale_on_error(b),
                (p, v) => return Err(format!("cache.{p} = {v:?} is not run-time changeable")),
            },
            GovernorKind::CircuitBreaker(b) => b.apply_param(param, v, now)?,
            GovernorKind::DegradeRule(b) => b.apply_param(param, v, now)?,
            GovernorKind::Batcher(b) => match (param, v) {
                ("window", ParamValue::Duration(d)) => b.batcher.set_window(d),
                // A batch already that full goes at its next member or window end.
                ("max_batch", ParamValue::Count(n)) => {
                    if let Some(batch) = b.batcher.set_max_batch(n, now) {
                        b.flushed(batch);
                    }
                }
                (p, v) => return Err(format!("batcher.{p} = {v:?} is not run-time changeable")),
            },
            GovernorKind::TimeLimiter(t) => t.apply_param(param, v)?,
            GovernorKind::ClusterFlow(c) => c.apply_param(param, v)?,
            GovernorKind::Shadow(s) => s.inner_mut().apply_param(param, v, now)?,
            GovernorKind::SingleFlight(f) => match (param, v) {
                ("share_errors", ParamValue::Bool(b)) => f.set_share_errors(b),
                (p, v) => {
                    return Err(format!("single_flight.{p} = {v:?} is not run-time changeable"));
                }
            },
        }
        Ok(())
    }
}

/// Kinds whose parameters may change with `reload: true` (a Sentinel rule reload).
pub const RELOADABLE_KINDS: [&str; 4] = ["flow", "param_flow", "token_bucket", "cluster_flow"];

impl GovernorKind {
    /// Emulates a Sentinel rule reload (`loadRules`) after a change: the controllers are
    /// rebuilt from the rule as it now stands — flow rules: warm-up cold again, pacing
    /// "long ago" (the resource statistics survive, as Sentinel's nodes do); hot-parameter
    /// rules: every per-value bucket restarts; token buckets: full; cluster flow rules: no
    /// state to rebuild (the server keeps the flow id's metric). `false`: the kind has no
    /// reload (the timeline check refuses `reload: true` for it).
    pub fn reload(&mut self, now: SimTime) -> bool {
        match self {
            GovernorKind::FlowRules(f) => f.reset_controllers(),
            GovernorKind::ParamFlow(f) => f.reset(),
            GovernorKind::TokenBucket(t) => t.reset(now),
            GovernorKind::ClusterFlow(c) => c.reload(now),
            GovernorKind::Shadow(s) => return s.inner_mut().reload(now),
            _ => return false,
        }
        true
    }

    /// A copy for a shadow: a clone, except that state a governor shares with its
    /// per-instance copies (a cluster rule's token server) is copied, not shared.
    pub fn detached_clone(&self) -> GovernorKind {
        match self {
            GovernorKind::ClusterFlow(c) => GovernorKind::ClusterFlow(c.detached()),
            g => g.clone(),
        }
    }

    /// The world gave this declared governor `copies` per-instance copies (clones): a
    /// cluster rule's token server then has that many connected clients.
    pub fn on_per_instance(&mut self, copies: usize) {
        if let GovernorKind::ClusterFlow(c) = self {
            c.set_connected(copies as u64);
        }
    }
}
