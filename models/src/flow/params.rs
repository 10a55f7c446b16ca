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
use super::rules::{FlowRules, FlowRulesSpec};
use super::token_bucket::{TokenBucket, TokenBucketSpec};
use crate::params::{ParamDecl, ParamType, ParamValue as V, Params};
use sim_core::{SimDuration, SimTime};

macro_rules! rule_names {
    ($($i:literal)*) => {
        [$([
            concat!("rule", stringify!($i), ".count"),
            concat!("rule", stringify!($i), ".max_queueing_time_ms"),
            concat!("rule", stringify!($i), ".max_queue_length"),
            concat!("rule", stringify!($i), ".warm_up_period_sec"),
            concat!("rule", stringify!($i), ".cold_factor"),
        ]),*]
    };
}

/// Parameter names of rules 0‥15 (the spec allows at most 16 rules).
const RULE_NAMES: [[&str; 5]; 16] = rule_names!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);

/// `rule3.count` → (3, "count").
fn split_rule(p: &str) -> Option<(usize, &str)> {
    let (r, field) = p.split_once('.')?;
    Some((r.strip_prefix("rule")?.parse().ok()?, field))
}

impl Params for FlowRulesSpec {
    const KIND: &'static str = "flow";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<ParamDecl> {
        let mut v = Vec::new();
        for n in RULE_NAMES {
            let d = |name, ty, unit, runtime, doc| ParamDecl { name, ty, unit, runtime, doc };
            v.push(d(
                n[0],
                ParamType::Float { min: 0.0, max: 1e9 },
                "qps|threads",
                true,
                "the rule's threshold (QPS or concurrent calls)",
            ));
            v.push(d(
                n[1],
                ParamType::Count { min: 0, max: 3_600_000 },
                "ms",
                true,
                "pacing: longest wait before a call is rejected",
            ));
            v.push(d(
                n[2],
                ParamType::OptCount { min: 1, max: 100_000_000 },
                "calls",
                true,
                "pacing: cap on calls parked at this rule",
            ));
            v.push(d(
                n[3],
                ParamType::Count { min: 1, max: 86_400 },
                "s",
                false,
                "warm-up: seconds from cold to count",
            ));
            v.push(d(
                n[4],
                ParamType::Count { min: 2, max: 100 },
                "factor",
                false,
                "warm-up: cold rate = count / cold_factor",
            ));
        }
        v
    }
    fn field_of(param: &str) -> String {
        match split_rule(param) {
            Some((i, f)) => format!("rules[{i}].{f}"),
            None => param.to_string(),
        }
    }
    fn get(&self, p: &str) -> Option<V> {
        let (i, f) = split_rule(p)?;
        let r = self.rules.get(i)?;
        Some(match f {
            "count" => V::Float(r.count),
            "max_queueing_time_ms" => V::Count(r.max_queueing_time_ms),
            "max_queue_length" => V::OptCount(r.max_queue_length),
            "warm_up_period_sec" => V::Count(r.warm_up_period_sec),
            "cold_factor" => V::Count(r.cold_factor as u64),
            _ => return None,
        })
    }
    fn set(&mut self, p: &str, v: V) -> Result<(), String> {
        let err = || format!("flow has no parameter `{p}` of that type");
        let (i, f) = split_rule(p).ok_or_else(err)?;
        let r = self.rules.get_mut(i).ok_or_else(err)?;
        match (f, v) {
            ("count", V::Float(x)) => r.count = x,
            ("max_queueing_time_ms", V::Count(n)) => r.max_queueing_time_ms = n,
            ("max_queue_length", V::OptCount(n)) => r.max_queue_length = n,
            ("warm_up_period_sec", V::Count(n)) => r.warm_up_period_sec = n,
            ("cold_factor", V::Count(n)) => r.cold_factor = n as u32,
            _ => return Err(err()),
        }
        Ok(())
    }
}

impl FlowRules {
    /// Applies a run-time change (`rule<i>.count`, `.max_queueing_time_ms`,
    /// `.max_queue_length`). The caller drains `take_woken` afterwards (nothing is woken by
    /// these changes today, but the contract is the gate's).
    pub fn apply_param(&mut self, p: &str, v: V) -> Result<(), String> {
        let err = || format!("flow.{p} is not run-time changeable with {v:?}");
        let (i, f) = split_rule(p).ok_or_else(err)?;
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

impl Params for ParamFlowRuleSpec {
    const KIND: &'static str = "param_flow";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<ParamDecl> {
        let d = |name, ty, unit, runtime, doc| ParamDecl { name, ty, unit, runtime, doc };
        vec![
            d(
                "count",
                ParamType::Float { min: 0.0, max: 1e9 },
                "calls/duration",
                true,
                "threshold per value per duration_in_sec",
            ),
            d(
                "burst_count",
                ParamType::Count { min: 0, max: 1_000_000_000 },
                "calls",
                true,
                "extra tokens a value may burst",
            ),
            d(
                "vip_count",
                ParamType::Count { min: 0, max: 1_000_000_000 },
                "calls/duration",
                true,
                "threshold per VIP value",
            ),
            d(
                "duration_in_sec",
                ParamType::Count { min: 1, max: 86_400 },
                "s",
                false,
                "the statistics window",
            ),
        ]
    }
    fn field_of(param: &str) -> String {
        if param == "vip_count" { "vip.count".into() } else { param.into() }
    }
    fn get(&self, p: &str) -> Option<V> {
        Some(match p {
            "count" => V::Float(self.count),
            "burst_count" => V::Count(self.burst_count),
            "vip_count" => V::Count(self.vip.as_ref()?.count),
            "duration_in_sec" => V::Count(self.duration_in_sec),
            _ => return None,
        })
    }
    fn set(&mut self, p: &str, v: V) -> Result<(), String> {
        match (p, v) {
            ("count", V::Float(x)) => self.count = x,
            ("burst_count", V::Count(n)) => self.burst_count = n,
            ("vip_count", V::Count(n)) if self.vip.is_some() => {
                self.vip.as_mut().expect("checked").count = n
            }
            ("duration_in_sec", V::Count(n)) => self.duration_in_sec = n,
            (p, v) => return Err(format!("param_flow has no parameter `{p}` of type {v:?}")),
        }
        Ok(())
    }
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

impl Params for TokenBucketSpec {
    const KIND: &'static str = "token_bucket";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<ParamDecl> {
        let d = |name, ty, unit, runtime, doc| ParamDecl { name, ty, unit, runtime, doc };
        let day = SimDuration::from_secs(86_400);
        vec![
            d(
                "capacity",
                ParamType::Count { min: 1, max: 1_000_000_000_000 },
                "tokens",
                true,
                "bucket size",
            ),
            d(
                "refill_tokens_per_minute",
                ParamType::Count { min: 1, max: 1_000_000_000_000 },
                "tokens/min",
                true,
                "continuous refill rate",
            ),
            d(
                "max_wait",
                ParamType::Duration { min: SimDuration::ZERO, max: day },
                "ns",
                true,
                "longest wait for tokens (0 = reject at once)",
            ),
            d(
                "max_waiting",
                ParamType::Count { min: 0, max: 100_000_000 },
                "calls",
                false,
                "bound on parked calls",
            ),
        ]
    }
    fn get(&self, p: &str) -> Option<V> {
        Some(match p {
            "capacity" => V::Count(self.capacity),
            "refill_tokens_per_minute" => V::Count(self.refill_tokens_per_minute),
            "max_wait" => V::Duration(self.max_wait),
            "max_waiting" => V::Count(self.max_waiting),
            _ => return None,
        })
    }
    fn set(&mut self, p: &str, v: V) -> Result<(), String> {
        match (p, v) {
            ("capacity", V::Count(n)) => self.capacity = n,
            ("refill_tokens_per_minute", V::Count(n)) => self.refill_tokens_per_minute = n,
            ("max_wait", V::Duration(d)) => self.max_wait = d,
            ("max_waiting", V::Count(n)) => self.max_waiting = n,
            (p, v) => return Err(format!("token_bucket has no parameter `{p}` of type {v:?}")),
        }
        Ok(())
    }
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
    use crate::flow::rules::{ControlBehavior, FlowRule};
    use crate::params::Registry;

    #[test]
    fn registry_paths_and_runtime_application() {
        let spec = FlowRulesSpec {
            name: "llm".into(),
            rules: vec![FlowRule::thread(80.0), FlowRule::qps(10.0, ControlBehavior::Default)],
        };
        let mut reg = Registry::default();
        reg.add_component(&spec);
        // Two rules × 5 parameters; rules 2‥15 are absent.
        assert_eq!(reg.iter().count(), 10);
        assert_eq!(reg.get("flow.llm.rule1.count").map(|p| p.value.clone()), Some(V::Float(10.0)));
        assert!(reg.get("flow.llm.rule2.count").is_none());
        assert_eq!(FlowRulesSpec::field_of("rule1.count"), "rules[1].count");
        let mut s2 = spec.clone();
        s2.set("rule1.count", V::Float(5.0)).expect("settable");
        assert_eq!(s2.rules[1].count, 5.0);
        let mut g = FlowRules::new(&spec);
        g.apply_param("rule1.count", V::Float(3.0)).expect("runtime");
        assert_eq!(g.rule(1).count, 3.0);
        assert!(g.apply_param("rule1.cold_factor", V::Count(4)).is_err());
        assert!(g.apply_param("rule7.count", V::Float(1.0)).is_err());
    }
}
