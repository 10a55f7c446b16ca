//! The flow governors' parameters in the registry ([`crate::params::Params`]) and their
//! run-time application (`apply_param`, for the world's change handler).
//!
//! Paths: `flow.<name>.rule<i>.<field>` (i = 0‥15, the rule's index in `rules`),
//! `param_flow.<name>.<field>`, `token_bucket.<name>.<field>`. Run-time changes keep window,
//! pacing and token state (Sentinel's reload resets controllers: that is
//! [`FlowRules::reset`], not a parameter).
//!
//! Architecture invariant: every parameter declared `runtime: true` is handled by the
//! matching `apply_param`; the others are read at construction only.
//!
//! API boundary: names and types only; range checks happen in the registry.

use super::hot_param::{ParamFlow, ParamFlowRuleSpec};
use super::rules::{ControlBehavior, FlowGrade, FlowRule, FlowRules, FlowRulesSpec};
use super::token_bucket::{TokenBucket, TokenBucketSpec};
use crate::params::{ParamDecl, ParamRows, ParamValue as V, Params, indexed_decls, split_indexed};
use sim_core::{SimDuration, SimTime};
use std::sync::OnceLock;

crate::params::declare_params! {
    rows FlowRule: "flow rule";
    count: Float { min: 0.0, max: 1e9 }, "qps|threads", runtime,
        "the rule's threshold (QPS or concurrent calls)";
    max_queueing_time_ms: Count { min: 0, max: 3_600_000 }, "ms", runtime,
        "pacing: longest wait before a call is rejected", default = 500;
    max_queue_length: OptCount { min: 1, max: 100_000_000 }, "calls", runtime,
        "pacing: cap on calls parked at this rule";
    warm_up_period_sec: Count { min: 1, max: 86_400 }, "s", fixed,
        "warm-up: seconds from cold to count", default = 10;
    cold_factor: Count { min: 2, max: 100 }, "factor", fixed,
        "warm-up: cold rate = count / cold_factor", default = 3,
        get = |s| s.cold_factor as u64, set = |s, n| s.cold_factor = cold_factor(n);
    grade: Enum { choices: FlowGrade::CHOICES }, "", fixed,
        "what count limits: QPS (passes per second) or THREAD (concurrent calls)";
    control_behavior: Enum { choices: ControlBehavior::CHOICES }, "", fixed,
        "QPS rules: DEFAULT rejects, RATE_LIMITER paces, WARM_UP ramps, WARM_UP_RATE_LIMITER both";
}

/// A cold factor (declared in [2, 100]) as the rule holds it.
pub(super) fn cold_factor(n: u64) -> u32 {
    u32::try_from(n).expect("declared ≤ 100")
}

/// At most 16 rules per resource (the spec's bound): `rule0.*` ‥ `rule15.*`.
const MAX_RULES: usize = 16;

impl Params for FlowRulesSpec {
    const KIND: &'static str = "flow";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<ParamDecl> {
        static NAMES: OnceLock<Vec<ParamDecl>> = OnceLock::new();
        indexed_decls("rule", MAX_RULES, FlowRule::row_decls, &NAMES)
    }
    fn field_of(param: &str) -> String {
        match split_indexed("rule", param) {
            Some((i, f)) => format!("rules[{i}].{f}"),
            None => param.to_string(),
        }
    }
    fn get(&self, p: &str) -> Option<V> {
        let (i, f) = split_indexed("rule", p)?;
        self.rules.get(i)?.row_get(f)
    }
    fn set(&mut self, p: &str, v: V) -> Result<(), String> {
        let err = || format!("flow has no parameter `{p}`");
        let (i, f) = split_indexed("rule", p).ok_or_else(err)?;
        self.rules.get_mut(i).ok_or_else(err)?.row_set(f, v)
    }
}

impl FlowRules {
    /// Applies a run-time change (`rule<i>.count`, `.max_queueing_time_ms`,
    /// `.max_queue_length`). The caller drains `take_woken` afterwards (nothing is woken by
    /// these changes today, but the contract is the gate's).
    pub fn apply_param(&mut self, p: &str, v: V) -> Result<(), String> {
        let err = || format!("flow.{p} is not run-time changeable with {v:?}");
        let (i, f) = split_indexed("rule", p).ok_or_else(err)?;
        if i >= self.rule_count() {
            return Err(err());
        }
        match (f, &v) {
            ("count", V::Float(x)) => self.set_count(i, *x),
            ("max_queueing_time_ms", V::Count(n)) => self.set_max_queueing_time_ms(i, *n),
            ("max_queue_length", V::OptCount(n)) => self.set_max_queue_length(i, *n),
            _ => return Err(err()),
        }
        Ok(())
    }
}

crate::params::declare_params! {
    ParamFlowRuleSpec: "param_flow", name = |s| s.name,
        field_of = |p: &str| if p == "vip_count" { "vip.count".into() } else { p.to_string() };
    count: Float { min: 0.0, max: 1e9 }, "calls/duration", runtime,
        "threshold per value per duration_in_sec";
    burst_count: Count { min: 0, max: 1_000_000_000 }, "calls", runtime,
        "extra tokens a value may burst", default = 0;
    // Registered for rules with a `vip` list only.
    vip_count: Count { min: 0, max: 1_000_000_000 }, "calls/duration", runtime,
        "threshold per VIP value",
        opt_get = |s| s.vip.as_ref().map(|v| v.count),
        set = |s, n| match s.vip.as_mut() {
            Some(vip) => vip.count = n,
            None => return Err("param_flow: `vip_count` needs a `vip` list".into()),
        };
    duration_in_sec: Count { min: 1, max: 86_400 }, "s", fixed, "the statistics window",
        default = 1;
}

impl ParamFlow {
    /// Applies a run-time change (`count`, `burst_count`, `vip_count`); buckets are kept.
    pub fn apply_param(&mut self, p: &str, v: V) -> Result<(), String> {
        match (p, v) {
            ("count", V::Float(x)) => self.set_count(x),
            ("burst_count", V::Count(n)) => self.set_burst_count(n),
            ("vip_count", V::Count(n)) => self.set_vip_count(n),
            (p, v) => return Err(format!("param_flow.{p} is not run-time changeable ({v:?})")),
        }
        Ok(())
    }
}

crate::params::declare_params! {
    TokenBucketSpec: "token_bucket", name = |s| s.name;
    capacity: Count { min: 1, max: 1_000_000_000_000 }, "tokens", runtime, "bucket size";
    refill_tokens_per_minute: Count { min: 1, max: 1_000_000_000_000 }, "tokens/min", runtime,
        "continuous refill rate";
    max_wait: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        runtime, "longest wait for tokens (0 = reject at once)", default = SimDuration::ZERO;
    max_waiting: Count { min: 0, max: 100_000_000 }, "calls", fixed, "bound on parked calls",
        default = 100_000;
}

impl TokenBucket {
    /// Applies a run-time change at `now` (the level is brought up to date first).
    pub fn apply_param(&mut self, p: &str, v: V, now: SimTime) -> Result<(), String> {
        match (p, v) {
            ("capacity", V::Count(n)) => self.set_capacity(n, now),
            ("refill_tokens_per_minute", V::Count(n)) => self.set_refill_tokens_per_minute(n, now),
            ("max_wait", V::Duration(d)) => self.set_max_wait(d),
            (p, v) => return Err(format!("token_bucket.{p} is not run-time changeable ({v:?})")),
        }
        Ok(())
    }
}

use crate::governor::{BuildCtx, GovernorKindOps};
use crate::params::GovernorSpec;

impl GovernorSpec for FlowRulesSpec {
    const RELOADABLE: bool = true;
}
impl GovernorSpec for ParamFlowRuleSpec {
    const RELOADABLE: bool = true;
}
impl GovernorSpec for TokenBucketSpec {
    const RELOADABLE: bool = true;
}

impl GovernorKindOps for FlowRules {
    type Spec = FlowRulesSpec;
    fn build(spec: &FlowRulesSpec, _: &BuildCtx<'_>) -> Self {
        FlowRules::new(spec)
    }
    fn apply_param(&mut self, p: &str, v: V, _now: SimTime) -> Result<(), String> {
        self.apply_param(p, v)
    }
    /// Warm-up cold again, pacing "long ago"; the resource statistics survive, as
    /// Sentinel's nodes do.
    fn reload(&mut self, _now: SimTime) {
        self.reset_controllers()
    }
}

impl GovernorKindOps for ParamFlow {
    type Spec = ParamFlowRuleSpec;
    fn build(spec: &ParamFlowRuleSpec, _: &BuildCtx<'_>) -> Self {
        ParamFlow::new(spec)
    }
    fn apply_param(&mut self, p: &str, v: V, _now: SimTime) -> Result<(), String> {
        self.apply_param(p, v)
    }
    /// Every per-value bucket restarts.
    fn reload(&mut self, _now: SimTime) {
        self.reset()
    }
}

impl GovernorKindOps for TokenBucket {
    type Spec = TokenBucketSpec;
    fn build(spec: &TokenBucketSpec, _: &BuildCtx<'_>) -> Self {
        TokenBucket::new(spec)
    }
    fn apply_param(&mut self, p: &str, v: V, now: SimTime) -> Result<(), String> {
        self.apply_param(p, v, now)
    }
    /// The bucket is full again.
    fn reload(&mut self, now: SimTime) {
        self.reset(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Registry;

    #[test]
    fn registry_paths_and_runtime_application() {
        let spec = FlowRulesSpec {
            name: "llm".into(),
            rules: vec![FlowRule::thread(80.0), FlowRule::qps(10.0, ControlBehavior::Default)],
        };
        let mut reg = Registry::default();
        reg.add_component(&spec);
        // Two rules × 7 parameters; rules 2‥15 are absent.
        assert_eq!(reg.iter().count(), 14);
        assert_eq!(
            reg.get("flow.llm.rule0.grade").map(|p| p.value.clone()),
            Some(V::Enum("THREAD".into()))
        );
        assert_eq!(reg.get("flow.llm.rule1.count").map(|p| p.value.clone()), Some(V::Float(10.0)));
        assert!(reg.get("flow.llm.rule2.count").is_none());
        assert_eq!(FlowRulesSpec::field_of("rule1.count"), "rules[1].count");
        let mut s2 = spec.clone();
        s2.set("rule1.count", V::Float(5.0)).expect("settable");
        assert_eq!(s2.rules[1].count, 5.0);
        s2.set("rule1.control_behavior", V::Enum("WARM_UP".into())).expect("settable");
        assert_eq!(s2.rules[1].control_behavior, ControlBehavior::WarmUp);
        assert!(s2.set("rule1.control_behavior", V::Enum("SLOW".into())).is_err());
        let mut g = FlowRules::new(&spec);
        g.apply_param("rule1.count", V::Float(3.0)).expect("runtime");
        assert_eq!(g.rule(1).count, 3.0);
        assert!(g.apply_param("rule1.cold_factor", V::Count(4)).is_err());
        assert!(g.apply_param("rule7.count", V::Float(1.0)).is_err());
    }
}
