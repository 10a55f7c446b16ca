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

use crate::gate::GateSpec;
use crate::params::{ParamValue, Params, Registry, split_path};
use crate::source::SourceSpec;
use crate::station::StationSpec;
use crate::validate;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;
use std::collections::BTreeSet;

/// A scenario with typed timeline values, ready to run.
pub type Scenario = ScenarioSpec<ParamValue>;

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
    #[serde(default)]
    pub gates: Vec<GateSpec>,
    /// Sentinel flow rules (QPS, THREAD, pacing, warm-up), one resource each.
    #[serde(default)]
    pub flow_rules: Vec<crate::flow::rules::FlowRulesSpec>,
    /// Sentinel hot-parameter limits (per user or per key).
    #[serde(default)]
    pub param_flow_rules: Vec<crate::flow::hot_param::ParamFlowRuleSpec>,
    /// Token buckets on tokens (TPM-style).
    #[serde(default)]
    pub token_buckets: Vec<crate::flow::token_bucket::TokenBucketSpec>,
    /// Retry policies (Resilience4j names; budgets).
    #[serde(default)]
    pub retries: Vec<crate::retry::RetrySpec>,
    /// Response caches (TTL, LRU, semantic hit probability, stale serving).
    #[serde(default)]
    pub caches: Vec<crate::cache::CacheSpec>,
    /// Single-flight: concurrent identical misses share one upstream call.
    #[serde(default)]
    pub single_flights: Vec<crate::cache::singleflight::SingleFlightSpec>,
    /// Resilience4j circuit breakers.
    #[serde(default)]
    pub circuit_breakers: Vec<crate::breaker::CircuitBreakerSpec>,
    /// Sentinel degrade rules (circuit breakers).
    #[serde(default)]
    pub degrade_rules: Vec<crate::breaker::sentinel_degrade::DegradeRuleSpec>,
    /// Request batchers (window + max batch; one upstream call per batch).
    #[serde(default)]
    pub batchers: Vec<crate::batcher::BatcherSpec>,
    /// Governors (by component path, e.g. `"gate.llm"`) that each app instance has its own
    /// copy of: a request entering instance k of an app uses copy k, so a limit of 80 on 4
    /// instances lets 320 through (SPEC incident 6). Every other governor is cluster-wide:
    /// one state shared by all instances (a token server, a shared semaphore). Requests
    /// from sources without an app use the declared instance itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_instance: Vec<String>,
    /// Resilience4j time limiters (a deadline from passing to the outcome).
    #[serde(default)]
    pub time_limiters: Vec<crate::time_limiter::TimeLimiterSpec>,
    /// Sentinel cluster flow rules: one token server shared by all app instances; list
    /// `cluster_flow.<name>` in `per_instance` to give each instance its own client and
    /// local fallback rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_flow_rules: Vec<crate::flow::cluster::ClusterFlowRuleSpec>,
    /// Fan-out pipelines: what one request runs (a source may target a pipeline or,
    /// for a single call, a call site directly).
    #[serde(default)]
    pub pipelines: Vec<crate::pipeline::PipelineSpec>,
    pub call_sites: Vec<CallSiteSpec>,
    pub stations: Vec<StationSpec>,
    /// GPU-backed inference servers (continuous batching), upstreams like stations.
    #[serde(default)]
    pub gpu_servers: Vec<crate::gpu::ServerSpec>,
    /// HTTP connection pools (per-route and total caps, keep-alive, validation, connect
    /// cost, server-side idle close), referenced by call sites.
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
    /// Parameter changes during the run.
    #[serde(default = "Vec::new")]
    pub timeline: Vec<SetParam<V>>,
}

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
    #[serde(default)]
    pub timeout: SimDuration,
    /// The client's read timeout between two chunks of a streamed answer (a `streaming`
    /// station; SPEC: 20 s, or 15 s for a "no chunk for 15 s" rule), from the first chunk
    /// on: a longer gap closes the stream at (last chunk + this) and the call fails with
    /// `stream_interrupted`; `"0s"` (default) = none. `timeout` stays the total call
    /// timeout.
    #[serde(default)]
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
    /// Per-class overrides of `timeout` (SPEC §3.9: "P1 no retry but +500 ms timeout
    /// tolerance"): `[("P1", "1.5s")]`. A class not listed uses `timeout`; `"0s"` = none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_timeouts: Vec<(String, SimDuration)>,
}

pub use crate::govspec::GovernorRef;

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

fn unique<'a>(kind: &str, names: impl Iterator<Item = &'a str>) -> Result<(), SpecError> {
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

impl<V> ScenarioSpec<V> {
    /// Cross-reference checks. Range checks already ran during deserialization.
    pub fn check(&self) -> Result<(), SpecError> {
        if self.sources.is_empty() {
            return Err(SpecError {
                path: "sources".into(),
                message: "expected at least one source".into(),
            });
        }
        if self.classes.is_empty() || self.classes.len() > 64 {
            return Err(SpecError {
                path: "classes".into(),
                message: format!("expected 1 to 64 classes, found {}", self.classes.len()),
            });
        }
        unique("classes", self.classes.iter().map(|s| s.name.as_str()))?;
        unique("sources", self.sources.iter().map(|s| s.name.as_str()))?;
        unique("gates", self.gates.iter().map(|s| s.name.as_str()))?;
        unique("flow_rules", self.flow_rules.iter().map(|s| s.name.as_str()))?;
        unique("param_flow_rules", self.param_flow_rules.iter().map(|s| s.name.as_str()))?;
        unique("token_buckets", self.token_buckets.iter().map(|s| s.name.as_str()))?;
        unique("retries", self.retries.iter().map(|s| s.name.as_str()))?;
        unique("caches", self.caches.iter().map(|s| s.name.as_str()))?;
        unique("single_flights", self.single_flights.iter().map(|s| s.name.as_str()))?;
        unique("circuit_breakers", self.circuit_breakers.iter().map(|s| s.name.as_str()))?;
        unique("degrade_rules", self.degrade_rules.iter().map(|s| s.name.as_str()))?;
        unique("batchers", self.batchers.iter().map(|s| s.name.as_str()))?;
        unique("time_limiters", self.time_limiters.iter().map(|s| s.name.as_str()))?;
        unique("cluster_flow_rules", self.cluster_flow_rules.iter().map(|s| s.name.as_str()))?;
        for (i, c) in self.cluster_flow_rules.iter().enumerate() {
            c.check().map_err(|message| SpecError {
                path: format!("cluster_flow_rules[{i}].window_interval_ms"),
                message,
            })?;
        }
        for (i, d) in self.degrade_rules.iter().enumerate() {
            d.check()
                .map_err(|message| SpecError { path: format!("degrade_rules[{i}]"), message })?;
        }
        let class_names: Vec<&str> = self.classes.iter().map(|c| c.name.as_str()).collect();
        for (i, r) in self.retries.iter().enumerate() {
            r.check_classes(&class_names).map_err(|m| match m.split_once(": ") {
                Some((rel, message)) => {
                    SpecError { path: format!("retries[{i}].{rel}"), message: message.into() }
                }
                None => SpecError { path: format!("retries[{i}].class_policies"), message: m },
            })?;
        }
        unique("call_sites", self.call_sites.iter().map(|s| s.name.as_str()))?;
        let declared = self.declared_governors();
        for (i, p) in self.per_instance.iter().enumerate() {
            if !declared.iter().any(|d| &d.path == p) {
                return Err(SpecError {
                    path: format!("per_instance[{i}]"),
                    message: format!(
                        "no governor \"{p}\"; governors: [{}]",
                        declared.iter().map(|d| d.path.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
            if self.apps.is_empty() {
                return Err(SpecError {
                    path: format!("per_instance[{i}]"),
                    message: "per-instance copies need app instances (`apps`)".into(),
                });
            }
        }
        unique("pipelines", self.pipelines.iter().map(|s| s.name.as_str()))?;
        for (i, p) in self.pipelines.iter().enumerate() {
            if self.call_sites.iter().any(|c| c.name == p.name) {
                return Err(SpecError {
                    path: format!("pipelines[{i}].name"),
                    message: format!(
                        "\"{}\" names a call site too (a source's target must be unambiguous)",
                        p.name
                    ),
                });
            }
            for (j, stage) in p.stages.iter().enumerate() {
                for (k, step) in stage.steps().iter().enumerate() {
                    if !self.call_sites.iter().any(|c| c.name == step.call) {
                        let at = match stage {
                            crate::pipeline::Stage::Step { .. } => format!("stages[{j}]"),
                            crate::pipeline::Stage::Parallel(_) => format!("stages[{j}][{k}]"),
                        };
                        return Err(SpecError {
                            path: format!("pipelines[{i}].{at}.call"),
                            message: format!(
                                "no call site named \"{}\"; call sites: [{}]",
                                step.call,
                                self.call_sites
                                    .iter()
                                    .map(|c| c.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        });
                    }
                }
            }
        }
        unique("stations", self.stations.iter().map(|s| s.name.as_str()))?;
        unique("quotas", self.quotas.iter().map(|s| s.name.as_str()))?;
        unique("gpu_servers", self.gpu_servers.iter().map(|s| s.name.as_str()))?;
        unique("connection_pools", self.connection_pools.iter().map(|s| s.name.as_str()))?;
        for (i, c) in self.call_sites.iter().enumerate() {
            if let Some(p) = &c.connection_pool
                && !self.connection_pools.iter().any(|x| &x.name == p)
            {
                return Err(SpecError {
                    path: format!("call_sites[{i}].connection_pool"),
                    message: format!(
                        "no connection pool named \"{p}\"; connection_pools: [{}]",
                        self.connection_pools
                            .iter()
                            .map(|x| x.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
        }
        self.check_fallbacks()?;
        for (i, c) in self.call_sites.iter().enumerate() {
            for (j, (class, _)) in c.class_timeouts.iter().enumerate() {
                let path = format!("call_sites[{i}].class_timeouts[{j}]");
                if !self.classes.iter().any(|k| &k.name == class) {
                    return Err(SpecError {
                        path,
                        message: format!(
                            "no class named \"{class}\"; classes: [{}]",
                            self.classes
                                .iter()
                                .map(|k| k.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    });
                }
                if c.class_timeouts[..j].iter().any(|(k, _)| k == class) {
                    return Err(SpecError {
                        path,
                        message: format!("class \"{class}\" listed twice"),
                    });
                }
            }
        }
        for (i, g) in self.gpu_servers.iter().enumerate() {
            if self.stations.iter().any(|s| s.name == g.name) {
                return Err(SpecError {
                    path: format!("gpu_servers[{i}].name"),
                    message: format!(
                        "\"{}\" names a station too (a call site's upstream must be unambiguous)",
                        g.name
                    ),
                });
            }
            g.check()
                .map_err(|message| SpecError { path: format!("gpu_servers[{i}]"), message })?;
        }
        for (i, s) in self.stations.iter().enumerate() {
            if let Some(q) = &s.quota
                && !self.quotas.iter().any(|x| &x.name == q)
            {
                return Err(SpecError {
                    path: format!("stations[{i}].quota"),
                    message: format!(
                        "no quota named \"{q}\"; quotas: [{}]",
                        self.quotas.iter().map(|x| x.name.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
            if !s.streaming && (s.stall_rate > 0.0 || s.chunk_tokens != 1) {
                return Err(SpecError {
                    path: format!("stations[{i}].stall_rate"),
                    message: "stream settings (stall_rate, chunk_tokens) need `streaming: true`"
                        .into(),
                });
            }
        }
        // Every value against its registry type and range, with the field path.
        fn ranges<P: Params>(list: &str, v: &[P]) -> Result<(), SpecError> {
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
        for (i, s) in self.sources.iter().enumerate() {
            let at =
                |f: &str, message: String| SpecError { path: format!("sources[{i}].{f}"), message };
            if s.rate_multiplier != 1.0 && s.interarrival.is_none() {
                return Err(at(
                    "rate_multiplier",
                    "only a renewal source (`interarrival`) has a rate multiplier; a trace has `rate_scale`, closed-loop users pace themselves".into(),
                ));
            }
            if let Some(script) = &s.script {
                if s.interarrival.is_some()
                    || s.trace.is_some()
                    || s.closed_loop.is_some()
                    || s.profile.is_some()
                    || s.assign.is_some()
                {
                    return Err(at(
                        "script",
                        "a scripted source has no `interarrival`, `trace`, `closed_loop`, `profile` or `assign` (its rows give times, classes, users and keys)".into(),
                    ));
                }
                script
                    .check_classes(&self.classes)
                    .map_err(|(f, m)| at(&format!("script{f}"), m))?;
                continue;
            }
            if let Some(cl) = &s.closed_loop {
                if s.interarrival.is_some() || s.trace.is_some() || s.profile.is_some() {
                    return Err(at(
                        "closed_loop",
                        "a closed-loop source has no `interarrival`, `trace` or `profile` (its users pace themselves)".into(),
                    ));
                }
                cl.check().map_err(|(f, m)| at(&format!("closed_loop.{f}"), m))?;
                continue;
            }
            match (&s.interarrival, &s.trace) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(at(
                        "interarrival",
                        "expected exactly one of `interarrival: <distribution>` and `trace: Trace(...)`".into(),
                    ));
                }
                (None, Some(t)) => {
                    t.check().map_err(|m| at("trace", m))?;
                    if s.profile.is_some() {
                        return Err(at("profile", "a trace source replays its own times: use the trace's `rate_scale` instead of a profile".into()));
                    }
                }
                (Some(_), None) => {}
            }
            if s.limit.is_none()
                && s.interarrival.as_ref().is_some_and(|d| d.mean().is_some_and(|m| m <= 0.0))
            {
                return Err(SpecError {
                    path: format!("sources[{i}].interarrival"),
                    message: "expected a distribution with a mean > 0 (a zero inter-arrival time is an infinite rate; for a batch flood set a `limit`)".into(),
                });
            }
        }
        ranges("classes", &self.classes)?;
        ranges("sources", &self.sources)?;
        ranges("gates", &self.gates)?;
        ranges("flow_rules", &self.flow_rules)?;
        ranges("param_flow_rules", &self.param_flow_rules)?;
        ranges("token_buckets", &self.token_buckets)?;
        ranges("retries", &self.retries)?;
        ranges("caches", &self.caches)?;
        ranges("single_flights", &self.single_flights)?;
        ranges("circuit_breakers", &self.circuit_breakers)?;
        ranges("degrade_rules", &self.degrade_rules)?;
        ranges("batchers", &self.batchers)?;
        ranges("time_limiters", &self.time_limiters)?;
        ranges("cluster_flow_rules", &self.cluster_flow_rules)?;
        ranges("stations", &self.stations)?;
        ranges("quotas", &self.quotas)?;
        ranges("gpu_servers", &self.gpu_servers)?;
        ranges("connection_pools", &self.connection_pools)?;
        let names = |v: Vec<&str>| v.join(", ");
        for (i, s) in self.sources.iter().enumerate() {
            if !self.call_sites.iter().any(|c| c.name == s.target)
                && !self.pipelines.iter().any(|p| p.name == s.target)
            {
                let mut all: Vec<&str> = self.pipelines.iter().map(|p| p.name.as_str()).collect();
                all.extend(self.call_sites.iter().map(|c| c.name.as_str()));
                return Err(SpecError {
                    path: format!("sources[{i}].target"),
                    message: format!(
                        "no pipeline or call site named \"{}\"; pipelines and call sites: [{}]",
                        s.target,
                        names(all)
                    ),
                });
            }
        }
        for (i, s) in self.sources.iter().enumerate() {
            if let Some(c) = &s.class
                && !self.classes.iter().any(|k| &k.name == c)
            {
                return Err(SpecError {
                    path: format!("sources[{i}].class"),
                    message: format!(
                        "no class named \"{c}\"; classes: [{}]",
                        self.classes.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
        }
        self.check_traffic()?;
        for (i, c) in self.call_sites.iter().enumerate() {
            if !self.stations.iter().any(|s| s.name == c.upstream)
                && !self.gpu_servers.iter().any(|s| s.name == c.upstream)
            {
                let mut all: Vec<&str> = self.stations.iter().map(|s| s.name.as_str()).collect();
                let what = if self.gpu_servers.is_empty() {
                    "station"
                } else {
                    all.extend(self.gpu_servers.iter().map(|s| s.name.as_str()));
                    "station or GPU server"
                };
                return Err(SpecError {
                    path: format!("call_sites[{i}].upstream"),
                    message: format!(
                        "no {what} named \"{}\"; {what}s: [{}]",
                        c.upstream,
                        names(all)
                    ),
                });
            }
            let known = |n: &str| {
                self.stations.iter().any(|s| s.name == n)
                    || self.gpu_servers.iter().any(|s| s.name == n)
            };
            for (j, (n, w)) in c.split.iter().enumerate() {
                if !known(n) || *w == 0 {
                    return Err(SpecError {
                        path: format!("call_sites[{i}].split[{j}]"),
                        message: format!(
                            "expected (an upstream's name, a weight ≥ 1), found (\"{n}\", {w})"
                        ),
                    });
                }
            }
            if let Some(b) = &c.backup
                && !known(b)
            {
                return Err(SpecError {
                    path: format!("call_sites[{i}].backup"),
                    message: format!("no station or GPU server named \"{b}\""),
                });
            }
            let mut seen = BTreeSet::new();
            let declared = self.declared_governors();
            for (j, g) in c.governors.iter().enumerate() {
                if let Some(message) = crate::shadow::check_shadowable(g) {
                    return Err(SpecError {
                        path: format!("call_sites[{i}].governors[{j}]"),
                        message,
                    });
                }
                let path = g.path();
                if !declared.iter().any(|d| d.path == g.declared().path()) {
                    let same: Vec<&str> = declared
                        .iter()
                        .filter(|d| d.list == g.list())
                        .map(|d| d.name.as_str())
                        .collect();
                    return Err(SpecError {
                        path: format!("call_sites[{i}].governors[{j}]"),
                        message: format!(
                            "no {} named \"{}\"; {}: [{}]",
                            g.kind(),
                            g.name(),
                            g.list(),
                            names(same)
                        ),
                    });
                }
                if !seen.insert(path) {
                    return Err(SpecError {
                        path: format!("call_sites[{i}].governors[{j}]"),
                        message: format!(
                            "{} \"{}\" appears twice in one stack",
                            g.kind(),
                            g.name()
                        ),
                    });
                }
            }
        }
        crate::gpu::reach::check_gpu_tokens(self)?;
        self.check_apps()
    }

    /// Every parameter of every component.
    pub fn registry(&self) -> Registry {
        let mut r = Registry::default();
        self.classes.iter().for_each(|c| r.add_component(c));
        self.sources.iter().for_each(|c| r.add_component(c));
        self.register_governors(&mut r);
        self.stations.iter().for_each(|c| r.add_component(c));
        self.quotas.iter().for_each(|c| r.add_component(c));
        self.gpu_servers.iter().for_each(|c| r.add_component(c));
        self.call_sites.iter().for_each(|c| r.add_component(c));
        self.connection_pools.iter().for_each(|c| r.add_component(c));
        if let Some(u) = &self.users {
            let classes: Vec<&str> = self.classes.iter().map(|c| c.name.as_str()).collect();
            u.segment_params(&classes).iter().for_each(|c| r.add_component(c));
        }
        self.apps.iter().for_each(|c| r.add_component(c));
        self.apps.iter().filter_map(|a| a.dispatcher.as_ref()).for_each(|c| r.add_component(c));
        self.apps.iter().flat_map(|a| a.pools()).for_each(|c| r.add_component(c));
        for q in self.apps.iter().flat_map(crate::app::queue_params) {
            q.register(&mut r);
        }
        r
    }

    /// Checks the traffic attributes: populations, trace assignment rules.
    fn check_traffic(&self) -> Result<(), SpecError> {
        let classes: Vec<&str> = self.classes.iter().map(|c| c.name.as_str()).collect();
        if let Some(u) = &self.users {
            u.check(&classes)
                .map_err(|(f, message)| SpecError { path: format!("users.{f}"), message })?;
        }
        for (i, s) in self.sources.iter().enumerate() {
            if let Some(a) = &s.assign {
                a.check(&classes).map_err(|(f, message)| SpecError {
                    path: format!("sources[{i}].assign.{f}"),
                    message,
                })?;
            }
        }
        Ok(())
    }

    /// Sets a parameter by path, checking it against the registry (sweeps use this).
    pub fn set_param(&mut self, path: &str, value: ParamValue) -> Result<(), String> {
        let reg = self.registry();
        let spec = reg.get(path).ok_or_else(|| reg.unknown(path))?;
        spec.ty.check(&value).map_err(|e| format!("{path}: {e}"))?;
        let (kind, name, param) = split_path(path).expect("registered paths have three parts");
        fn find<'a, P: Params>(v: &'a mut [P], name: &str) -> &'a mut P {
            v.iter_mut().find(|c| c.instance_name() == name).expect("registered")
        }
        match kind {
            "class" => find(&mut self.classes, name).set(param, value),
            "source" => find(&mut self.sources, name).set(param, value),
            "gate" => find(&mut self.gates, name).set(param, value),
            "flow" => find(&mut self.flow_rules, name).set(param, value),
            "param_flow" => find(&mut self.param_flow_rules, name).set(param, value),
            "token_bucket" => find(&mut self.token_buckets, name).set(param, value),
            "retry" => find(&mut self.retries, name).set(param, value),
            "cache" => find(&mut self.caches, name).set(param, value),
            "single_flight" => find(&mut self.single_flights, name).set(param, value),
            "circuit_breaker" => find(&mut self.circuit_breakers, name).set(param, value),
            "degrade_rule" => find(&mut self.degrade_rules, name).set(param, value),
            "batcher" => find(&mut self.batchers, name).set(param, value),
            "time_limiter" => find(&mut self.time_limiters, name).set(param, value),
            "cluster_flow" => find(&mut self.cluster_flow_rules, name).set(param, value),
            "station" => find(&mut self.stations, name).set(param, value),
            "call_site" => find(&mut self.call_sites, name).set(param, value),
            "quota" => find(&mut self.quotas, name).set(param, value),
            "gpu_server" => find(&mut self.gpu_servers, name).set(param, value),
            "connpool" => find(&mut self.connection_pools, name).set(param, value),
            "segment" => {
                let classes: Vec<String> = self.classes.iter().map(|c| c.name.clone()).collect();
                let classes: Vec<&str> = classes.iter().map(|c| c.as_str()).collect();
                self.users.as_mut().expect("registered").set_segment_class(name, value, &classes)
            }
            "app" | "dispatcher" | "pool" | "dispatcher_queue" | "pool_queue" => {
                self.set_app_param(kind, name, param, value)
            }
            _ => unreachable!("registry kinds are listed here"),
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
            gates: self.gates,
            flow_rules: self.flow_rules,
            param_flow_rules: self.param_flow_rules,
            token_buckets: self.token_buckets,
            retries: self.retries,
            caches: self.caches,
            single_flights: self.single_flights,
            circuit_breakers: self.circuit_breakers,
            degrade_rules: self.degrade_rules,
            batchers: self.batchers,
            per_instance: self.per_instance,
            time_limiters: self.time_limiters,
            cluster_flow_rules: self.cluster_flow_rules,
            pipelines: self.pipelines,
            call_sites: self.call_sites,
            stations: self.stations,
            gpu_servers: self.gpu_servers,
            connection_pools: self.connection_pools,
            quotas: self.quotas,
            users: self.users,
            apps: self.apps,
            timeline,
        })
    }
}

impl Scenario {
    /// Checks the timeline against the registry: known paths, run-time changeable, typed.
    pub fn check_timeline(&self) -> Result<(), SpecError> {
        let reg = self.registry();
        for (i, s) in self.timeline.iter().enumerate() {
            self.check_change(&reg, s).map_err(|e| SpecError {
                path: format!("timeline[{i}].{}", e.path),
                message: e.message,
            })?;
        }
        Ok(())
    }

    /// Checks one run-time change against this scenario's registry `reg`: a known path,
    /// changeable during a run, a value of its type in range, a reload only where one
    /// exists. The error's `path` is the field at fault (`path`, `value` or `reload`).
    pub fn check_change(&self, reg: &Registry, s: &SetParam<ParamValue>) -> Result<(), SpecError> {
        let err = |field: &str, message: String| SpecError { path: field.into(), message };
        let spec = reg.get(&s.path).ok_or_else(|| err("path", reg.unknown(&s.path)))?;
        if !spec.runtime {
            return Err(err(
                "path",
                format!(
                    "`{}` cannot change during a run (set it in the scenario or sweep it)",
                    s.path
                ),
            ));
        }
        spec.ty.check(&s.value).map_err(|m| err("value", m))?;
        if s.reload {
            let kind = s.path.split('.').next().unwrap_or("");
            if !crate::govspec::RELOADABLE_KINDS.contains(&kind) {
                return Err(err(
                    "reload",
                    format!(
                        "a rule reload applies to {} parameters only, not `{}`",
                        crate::govspec::RELOADABLE_KINDS.join(", "),
                        s.path
                    ),
                ));
            }
        }
        if s.path.starts_with("segment.")
            && let ParamValue::OptCount(Some(k)) = s.value
            && k as usize >= self.classes.len()
        {
            return Err(err(
                "value",
                format!(
                    "expected None or Some(class index < {}), found Some({k})",
                    self.classes.len()
                ),
            ));
        }
        Ok(())
    }
}
