//! The resource's parameters in the registry and their run-time application.
//!
//! Paths: `sentinel_resource.<name>.rule<i>.<field>` — the i-th flow rule as written, the
//! fields of `flow.<name>.rule<i>.*` ([`FlowRulesSpec`]'s declarations, reused) — and
//! `sentinel_resource.<name>.degrade<j>.<field>` — the j-th degrade rule, the fields of
//! `degrade_rule.<name>.*` ([`DegradeRuleSpec`]'s declarations, reused).
//!
//! Key design decision: a run-time change keeps the chain order fixed at build (Sentinel
//! re-sorts on a rule reload, since the count is part of a rule's hash: a deviation listed
//! in `docs/scenario-reference.md`); a sweep or variant value is a new declaration and is
//! ordered afresh, and refused when it makes two flow rules equal.
//!
//! API boundary: names and types only; range checks happen in the registry.

use super::{SentinelResource, SentinelResourceSpec};
use crate::breaker::DegradeRuleSpec;
use crate::flow::params::RULE;
use crate::flow::rules::FlowRulesSpec;
use crate::governor::{BuildCtx, GovernorKindOps};
use crate::params::{
    ApplyParam, GovernorSpec, ParamDecl, ParamValue as V, Params, indexed_decls, split_indexed,
};
use sim_core::SimTime;
use std::sync::OnceLock;

/// At most 16 degrade rules per resource: `degrade0.*` ‥ `degrade15.*`.
const MAX_DEGRADE_RULES: usize = 16;

/// `degrade3.count` → (3, "count").
fn split_degrade(p: &str) -> Option<(usize, &str)> {
    split_indexed("degrade", p)
}

impl SentinelResourceSpec {
    /// The flow rules as a [`FlowRulesSpec`] (written order), for its parameter code.
    fn flow_spec(&self) -> FlowRulesSpec {
        FlowRulesSpec { name: self.name.clone(), rules: self.flow_rules.clone() }
    }
}

impl Params for SentinelResourceSpec {
    const KIND: &'static str = "sentinel_resource";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<ParamDecl> {
        static DEGRADE: OnceLock<Vec<ParamDecl>> = OnceLock::new();
        let mut v = FlowRulesSpec::decls();
        v.extend(indexed_decls("degrade", MAX_DEGRADE_RULES, DegradeRuleSpec::decls, &DEGRADE));
        v
    }
    fn field_of(param: &str) -> String {
        match split_degrade(param) {
            Some((j, f)) => format!("degrade_rules[{j}].{f}"),
            None => format!("flow_{}", FlowRulesSpec::field_of(param)),
        }
    }
    fn get(&self, p: &str) -> Option<V> {
        match split_degrade(p) {
            Some((j, f)) => self.degrade_rules.get(j)?.get(f),
            None => self.flow_spec().get(p),
        }
    }
    fn set(&mut self, p: &str, v: V) -> Result<(), String> {
        let mut next = self.clone();
        match split_degrade(p) {
            Some((j, f)) => next
                .degrade_rules
                .get_mut(j)
                .ok_or_else(|| format!("sentinel_resource has no parameter `{p}`"))?
                .set(f, v)?,
            None => {
                let mut flow = self.flow_spec();
                flow.set(p, v)?;
                next.flow_rules = flow.rules;
            }
        }
        next.check()?;
        *self = next;
        Ok(())
    }
}

impl GovernorSpec for SentinelResourceSpec {
    const RELOADABLE: bool = true;
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::RateLimited, crate::outcome::Reason::BreakerOpen]
    }
}

impl ApplyParam for SentinelResource {
    /// A change of `rule<i>.*` (the i-th flow rule as written) or `degrade<j>.*`; windows,
    /// pacing, buckets and breaker states are kept.
    fn apply_param(&mut self, p: &str, v: V, now: SimTime) -> Result<(), String> {
        if let Some((j, f)) = split_degrade(p) {
            let d = self.degrade.get_mut(j).ok_or_else(|| format!("no degrade rule {j}"))?;
            return d.apply_param(f, v, now);
        }
        let (i, f) = split_indexed(RULE, p).ok_or_else(|| format!("unknown parameter `{p}`"))?;
        let pos = *self.flow_pos.get(i).ok_or_else(|| format!("no flow rule {i}"))?;
        let flow = self.flow.as_mut().expect("it has flow rules");
        flow.apply_param(&format!("rule{pos}.{f}"), v, now)
    }
}

impl GovernorKindOps for SentinelResource {
    type Spec = SentinelResourceSpec;
    fn build(spec: &SentinelResourceSpec, _: &BuildCtx<'_>) -> Self {
        SentinelResource::new(spec)
    }
    /// A flow rule reload (`FlowRuleManager.loadRules`): every flow controller is new, the
    /// resource statistics survive; degrade rules keep their state (Sentinel's
    /// `getExistingSameCbOrNew` keeps the breaker of an unchanged rule).
    fn reload(&mut self, _now: SimTime) {
        if let Some(f) = &mut self.flow {
            f.reset_controllers();
        }
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.counters;
        vec![
            ("passed", c.passed),
            ("flow_blocked", c.flow_blocked),
            ("degrade_blocked", c.degrade_blocked),
            ("queued", c.queued),
            ("state_changes", self.state_changes()),
        ]
    }
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        let open =
            self.degrade.iter().filter(|d| d.state() != crate::breaker::BreakerState::Closed);
        vec![
            ("threads", self.flow.as_ref().map_or(0, |f| f.threads() as i64)),
            ("degrade_not_closed", open.count() as i64),
        ]
    }
}
