//! The cluster flow rule's parameters in the registry (`cluster_flow.<name>.<field>`) and
//! their run-time application.
//!
//! Architecture invariant: every parameter declared `runtime` names its setter on
//! [`ClusterFlow`] (its generated `ApplyParam`); a change reaches the declared rule and all its per-instance
//! copies (the world applies it to each), and a server-side value written by each copy is
//! the same value (idempotent on the shared server).
//!
//! API boundary: names and types only; range checks happen in the registry.

use super::cluster::{ClusterFlow, ClusterFlowRuleSpec};
use sim_core::SimDuration;

crate::params::declare_params! {
    ClusterFlowRuleSpec: "cluster_flow", name = |s| s.name, state = ClusterFlow;
    threshold_type: Enum { choices: super::cluster_spec::ThresholdType::CHOICES }, "", fixed,
        "what `count` bounds: AVG_LOCAL (per connected client) or GLOBAL (the whole cluster)",
        default = "AVG_LOCAL";
    count: Float { min: 0.0, max: 1e9 }, "qps", runtime(apply = |c, x| c.set_count(x)),
        "threshold: cluster-wide (GLOBAL) or per client (AVG_LOCAL); the local fallback's";
    server_up: Bool, "bool", runtime(apply = |c, up| c.set_server_up(up)),
        "the token server is reachable (false: clients fall back)", default = true;
    fallback_to_local_when_fail: Bool, "bool", runtime(apply = |c, on| c.set_fallback(on)),
        "server failed: local check (true) or pass unchecked (false)", default = true;
    exceed_count: Float { min: 0.01, max: 100.0 }, "factor",
        runtime(apply = |c, x| c.set_exceed_count(x)),
        "server: thresholds × this (exceedCount)", default = 1.0;
    max_allowed_qps: Float { min: 0.0, max: 1e9 }, "qps",
        runtime(apply = |c, x| c.set_max_allowed_qps(x)),
        "server: requests per second it answers (maxAllowedQps)", default = 30_000.0;
    token_rtt: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(60) }, "ns",
        runtime(apply = |c, d| c.set_token_rtt(d)),
        "round trip of a token request (0 = immediate)", default = SimDuration::ZERO;
    request_timeout_ms: Count { min: 1, max: 3_600_000 }, "ms",
        runtime(apply = |c, ms| c.set_request_timeout_ms(ms)),
        "client: an answer slower than this is a failure (requestTimeout)", default = 20;
    sample_count: Count { min: 1, max: 1000 }, "buckets", fixed, "server window: buckets",
        default = 10;
    window_interval_ms: Count { min: 1, max: 3_600_000 }, "ms", fixed, "server window: length",
        default = 1000;
}

impl crate::params::GovernorSpec for ClusterFlowRuleSpec {
    const RELOADABLE: bool = true;
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::RateLimited]
    }
}

impl crate::governor::GovernorKindOps for ClusterFlow {
    type Spec = ClusterFlowRuleSpec;
    fn build(spec: &ClusterFlowRuleSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        ClusterFlow::new(spec)
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
