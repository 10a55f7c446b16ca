//! The cluster flow rule's parameters in the registry (`cluster_flow.<name>.<field>`) and
//! their run-time application.
//!
//! Architecture invariant: every parameter declared `runtime: true` is handled by
//! [`ClusterFlow::apply_param`]; a change reaches the declared rule and all its per-instance
//! copies (the world applies it to each), and a server-side value written by each copy is
//! the same value (idempotent on the shared server).
//!
//! API boundary: names and types only; range checks happen in the registry.

use super::cluster::{ClusterFlow, ClusterFlowRuleSpec};
use crate::params::ParamValue as V;
use sim_core::SimDuration;

crate::params::declare_params! {
    ClusterFlowRuleSpec: "cluster_flow", name = |s| s.name;
    count: Float { min: 0.0, max: 1e9 }, "qps", runtime,
        "threshold: cluster-wide (GLOBAL) or per client (AVG_LOCAL); the local fallback's";
    server_up: Bool, "bool", runtime, "the token server is reachable (false: clients fall back)",
        default = true;
    fallback_to_local_when_fail: Bool, "bool", runtime,
        "server failed: local check (true) or pass unchecked (false)", default = true;
    exceed_count: Float { min: 0.01, max: 100.0 }, "factor", runtime,
        "server: thresholds × this (exceedCount)", default = 1.0;
    max_allowed_qps: Float { min: 0.0, max: 1e9 }, "qps", runtime,
        "server: requests per second it answers (maxAllowedQps)", default = 30_000.0;
    token_rtt: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(60) }, "ns", runtime,
        "round trip of a token request (0 = immediate)", default = SimDuration::ZERO;
    request_timeout_ms: Count { min: 1, max: 3_600_000 }, "ms", runtime,
        "client: an answer slower than this is a failure (requestTimeout)", default = 20;
    sample_count: Count { min: 1, max: 1000 }, "buckets", fixed, "server window: buckets",
        default = 10;
    window_interval_ms: Count { min: 1, max: 3_600_000 }, "ms", fixed, "server window: length",
        default = 1000;
}

impl ClusterFlow {
    /// Applies a run-time change; every window is kept.
    pub fn apply_param(&mut self, p: &str, v: V) -> Result<(), String> {
        match (p, v) {
            ("count", V::Float(x)) => self.set_count(x),
            ("server_up", V::Bool(b)) => self.set_server_up(b),
            ("fallback_to_local_when_fail", V::Bool(b)) => self.set_fallback(b),
            ("exceed_count", V::Float(x)) => self.set_exceed_count(x),
            ("max_allowed_qps", V::Float(x)) => self.set_max_allowed_qps(x),
            ("token_rtt", V::Duration(d)) => self.set_token_rtt(d),
            ("request_timeout_ms", V::Count(n)) => self.set_request_timeout_ms(n),
            (p, v) => return Err(format!("cluster_flow.{p} = {v:?} is not run-time changeable")),
        }
        Ok(())
    }
}

impl crate::params::GovernorSpec for ClusterFlowRuleSpec {
    const RELOADABLE: bool = true;
}

impl crate::governor::GovernorKindOps for ClusterFlow {
    type Spec = ClusterFlowRuleSpec;
    fn build(spec: &ClusterFlowRuleSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        ClusterFlow::new(spec)
    }
    fn apply_param(&mut self, p: &str, v: V, _now: sim_core::SimTime) -> Result<(), String> {
        self.apply_param(p, v)
    }
    fn reload(&mut self, now: sim_core::SimTime) {
        ClusterFlow::reload(self, now)
    }
    /// The shadow's copy gets its own token server (it must not count in the real one).
    fn detached_clone(&self) -> Self {
        self.detached()
    }
    /// The token server has one connected client per per-instance copy.
    fn on_per_instance(&mut self, copies: usize) {
        self.set_connected(copies as u64)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        let k = self.counters;
        vec![
            ("token_ok", k.token_ok),
            ("token_blocked", k.token_blocked),
            ("too_many", k.too_many),
            ("timeouts", k.timeouts),
            ("local_pass", k.local_pass),
            ("local_block", k.local_block),
            ("pass_through", k.pass_through),
        ]
    }
}
