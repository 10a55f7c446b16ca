//! The flow governors' parameters in the registry ([`crate::params::Params`]) and their
//! run-time application (`apply_param`, for the world's change handler).
//!
//! Paths: `flow.<name>.rule<i>.<field>` (i = 0‥15, the rule's index in `rules`),
//! `param_flow.<name>.<field>`, `token_bucket.<name>.<field>`. Run-time changes keep window,
//! pacing and token state (Sentinel's reload resets controllers: that is
//! [`FlowRules::reset`], not a parameter).
//!
//! Architecture invariant: every parameter declared `runtime` names its setter in its row
//! (`runtime(apply = …)`, the state's generated `ApplyParam`); the others are read at
//! construction only.
//!
//! API boundary: names and types only; range checks happen in the registry.

use super::hot_param::{ParamFlow, ParamFlowRuleSpec};
use super::rules::{ControlBehavior, FlowGrade, FlowRule, FlowRules, FlowRulesSpec, RuleState};
use super::token_bucket::{TokenBucket, TokenBucketSpec};
use crate::params::{ApplyParam, ParamValue as V, split_indexed};
use sim_core::{SimDuration, SimTime};

crate::params::declare_params! {
    rows FlowRule: "flow rule", state = RuleState;
    count: Float { min: 0.0, max: 1e9 }, "qps|threads", runtime(apply = |r, x| r.set_count(x)),
        "the rule's threshold (QPS or concurrent calls)";
    max_queueing_time_ms: Count { min: 0, max: 3_600_000 }, "ms",
        runtime(apply = |r, ms| r.set_max_queueing_time_ms(ms)),
        "pacing: longest wait before a call is rejected", default = 500;
    max_queue_length: OptCount { min: 1, max: 100_000_000 }, "calls",
        runtime(apply = |r, cap| r.set_max_queue_length(cap)),
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

/// The prefix of a rule's parameters: `rule<i>.<field>`.
pub(crate) const RULE: &str = "rule";

/// At most 16 rules per resource (the spec's bound): `rule0.*` ‥ `rule15.*`.
const MAX_RULES: usize = 16;

crate::params::declare_params! {
    FlowRulesSpec: "flow", name = |s| s.name, parts = RULE => rules[FlowRule; MAX_RULES];
}

impl ApplyParam for FlowRules {
    /// A change of `rule<i>.<field>` goes to rule i (its rows' setters). The caller drains
    /// `take_woken` afterwards (nothing is woken by these changes today, but the contract is
    /// the gate's).
    fn apply_param(&mut self, p: &str, v: V, now: SimTime) -> Result<(), String> {
        let (i, f) =
            split_indexed(RULE, p).ok_or_else(|| format!("flow.{p} is not run-time changeable"))?;
        let rule = self.rule_mut(i).ok_or_else(|| format!("flow.{p}: no rule {i}"))?;
        rule.apply_param(f, v, now)
    }
}

crate::params::declare_params! {
    ParamFlowRuleSpec: "param_flow", name = |s| s.name,
        scenario_only = [
            param_flow_item_list: "per-value exceptions (value, threshold): a list of records",
        ],
        state = ParamFlow;
    param: Enum { choices: super::hot_param::HotParam::CHOICES }, "", fixed,
        "which call attribute is the hot parameter: User or Key (Sentinel's paramIdx)";
    count: Float { min: 0.0, max: 1e9 }, "calls/duration", runtime(apply = |f, x| f.set_count(x)),
        "threshold per value per duration_in_sec";
    burst_count: Count { min: 0, max: 1_000_000_000 }, "calls",
        runtime(apply = |f, n| f.set_burst_count(n)), "extra tokens a value may burst", default = 0;
    // Registered for rules with a `vip` list only.
    vip_count: Count { min: 0, max: 1_000_000_000 }, "calls/duration",
        runtime(apply = |f, n| f.set_vip_count(n)), "threshold per VIP value",
        opt_get = |s| s.vip.as_ref().map(|v| v.count),
        set = |s, n| match s.vip.as_mut() {
            Some(vip) => vip.count = n,
            None => return Err("param_flow: `vip_count` needs a `vip` list".into()),
        },
        field = "vip.count";
    duration_in_sec: Count { min: 1, max: 86_400 }, "s", fixed, "the statistics window",
        default = 1;
    // Listed only where set (absent: min(4000 · duration_in_sec, 200 000), as Sentinel's CacheMap).
    max_tracked_values: Count { min: 1, max: 100_000_000 }, "values", fixed,
        "LRU cap on the parameter values tracked",
        opt_get = |s| s.max_tracked_values, set = |s, n| s.max_tracked_values = Some(n);
}

crate::params::declare_params! {
    TokenBucketSpec: "token_bucket", name = |s| s.name, state = TokenBucket;
    capacity: Count { min: 1, max: 1_000_000_000_000 }, "tokens",
        runtime(apply = |b, n, now| b.set_capacity(n, now)), "bucket size";
    refill_tokens_per_minute: Count { min: 1, max: 1_000_000_000_000 }, "tokens/min",
        runtime(apply = |b, n, now| b.set_refill_tokens_per_minute(n, now)),
        "continuous refill rate";
    max_wait: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        runtime(apply = |b, d| b.set_max_wait(d)),
        "longest wait for tokens (0 = reject at once)", default = SimDuration::ZERO;
    max_waiting: Count { min: 0, max: 100_000_000 }, "calls", fixed, "bound on parked calls",
        default = 100_000;
}

use crate::governor::{BuildCtx, GovernorKindOps};
use crate::params::GovernorSpec;

impl GovernorSpec for FlowRulesSpec {
    const RELOADABLE: bool = true;
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::RateLimited]
    }
}
impl GovernorSpec for ParamFlowRuleSpec {
    const RELOADABLE: bool = true;
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::RateLimited]
    }
}
impl GovernorSpec for TokenBucketSpec {
    const RELOADABLE: bool = true;
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::RateLimited]
    }
}

impl GovernorKindOps for FlowRules {
    type Spec = FlowRulesSpec;
    fn build(spec: &FlowRulesSpec, _: &BuildCtx<'_>) -> Self {
        FlowRules::new(spec)
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
    /// The bucket is full again.
    fn reload(&mut self, now: SimTime) {
        self.reset(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{Params, Registry};

    #[test]
    fn registry_paths_and_runtime_application() {
        let spec = FlowRulesSpec {
            name: "llm".into(),
            rules: vec![FlowRule::thread(80.0), FlowRule::qps(10.0, ControlBehavior::Default)],
        };
        let mut reg = Registry::default();
        reg.add_component(&spec, crate::components::Owner::Governor(0));
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
        let t = SimTime::ZERO;
        g.apply_param("rule1.count", V::Float(3.0), t).expect("runtime");
        assert_eq!(g.rule(1).count, 3.0);
        assert!(g.apply_param("rule1.cold_factor", V::Count(4), t).is_err());
        assert!(g.apply_param("rule7.count", V::Float(1.0), t).is_err());
    }
}
