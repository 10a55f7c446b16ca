//! A Sentinel resource as Sentinel runs it: the [`SentinelResource`] governor.
//!
//! In Sentinel 1.8.x the rules of one resource are not separate layers: one entry runs
//! one slot chain (`StatisticSlot` → … → `FlowSlot` → `DegradeSlot`). This governor is
//! that chain over stormglass's own rule implementations, composed, not copied:
//!
//! 1. **Flow slot** — the resource's flow rules as one [`FlowRules`], checked in the order
//!    Sentinel's `FlowRuleUtil.buildFlowRuleMap` leaves them ([`rule_order`]: the
//!    `HashSet` order of `FlowRule.hashCode()`, so the order written does not matter, as
//!    in Sentinel). A pacing rule parks the call (Sentinel sleeps the thread inside
//!    `FlowSlot`); the rest of the chain runs at its pass time.
//! 2. **Degrade slot** — the resource's degrade rules ([`DegradeBreaker`]s) in declaration
//!    order (`DegradeRuleManager` keeps a list per resource), each asked
//!    `CircuitBreaker.tryPass`; the first that refuses blocks the call.
//!
//! Recording, as `StatisticSlot` and `DegradeSlot` do it:
//! * a call blocked by any slot is counted as no pass (the flow rules' pass count and
//!   concurrency only count a call once it passed every slot: [`FlowRules::hold_passes`])
//!   and recorded by no degrade rule (`DegradeSlot.exit` skips an entry with a block
//!   error);
//! * a degrade rule sees the RT from the entry (`completeTime − entry.createTimestamp`):
//!   a pacing wait in the flow slot is part of it;
//! * a degrade rule that went HALF_OPEN for a call (its probe) which a later degrade rule
//!   then blocks falls back to OPEN with its retry time unchanged
//!   (`AbstractCircuitBreaker.fromOpenToHalfOpen`'s `whenTerminate` hook), so the next
//!   call may probe again.
//!
//! With these, the chain's decisions do not depend on the order the degrade rules are
//! written in either: a call passes iff every rule lets it, a rule that refuses changes no
//! state, and a probe the chain refuses is undone.
//!
//! Hot-parameter rules: `ParamFlowSlot` runs before `FlowSlot` and records nothing a later
//! slot undoes, so a `ParamFlow` governor directly above the resource in the stack is
//! Sentinel's chain. Sentinel's system rules do not exist in stormglass.
//!
//! Architecture invariant: every call the chain passed returns through exactly one
//! `on_outcome` (or one `on_abandon` if it was woken but not yet resumed) to the flow
//! rules and to every degrade rule; every call parked in the flow slot is in `entries`.
//!
//! API boundary: a [`Governor`]; its declaration is [`SentinelResourceSpec`] (parameters
//! `sentinel_resource.<name>.rule<i>.*` for the i-th flow rule as written and
//! `sentinel_resource.<name>.degrade<j>.*` for the j-th degrade rule).

use crate::breaker::{DegradeBreaker, DegradeRuleSpec};
use crate::flow::rule_order::{sentinel_equal, sentinel_flow_order};
use crate::flow::rules::{FlowRule, FlowRules, FlowRulesSpec, check_valid_in_sentinel};
use crate::governor::{CallDecision, CallInfo, GovEvent, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::SimTime;
use std::collections::BTreeMap;

mod params;
#[cfg(test)]
mod tests;

/// A Sentinel resource with its flow and degrade rules, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Raw", rename = "SentinelResource")]
pub struct SentinelResourceSpec {
    /// The component name; parameters live under `sentinel_resource.<name>.*`.
    pub name: String,
    /// Sentinel's resource name (e.g. `"GET:/v1/chat"`), which decides the flow rules'
    /// order (its `String.hashCode()` is part of every rule's hash); default `name`.
    #[serde(
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub resource: Option<String>,
    /// 0 to 16 Sentinel flow rules (`FlowRuleManager.loadRules`), any order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow_rules: Vec<FlowRule>,
    /// 0 to 16 Sentinel degrade rules (`DegradeRuleManager.loadRules`); `name` labels a
    /// rule in events (`<name>:OPEN`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub degrade_rules: Vec<DegradeRuleSpec>,
}

/// The declaration as parsed, before the cross-field checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "SentinelResource")]
struct Raw {
    #[serde(deserialize_with = "crate::validate::name")]
    name: String,
    #[serde(default, deserialize_with = "crate::validate::present")]
    resource: Option<String>,
    #[serde(default)]
    flow_rules: Vec<FlowRule>,
    #[serde(default)]
    degrade_rules: Vec<DegradeRuleSpec>,
}

impl TryFrom<Raw> for SentinelResourceSpec {
    type Error = String;
    fn try_from(r: Raw) -> Result<Self, String> {
        let spec = SentinelResourceSpec {
            name: r.name,
            resource: r.resource,
            flow_rules: r.flow_rules,
            degrade_rules: r.degrade_rules,
        };
        spec.check()?;
        Ok(spec)
    }
}

/// At most this many rules of each kind on one resource.
pub const MAX_RULES: usize = 16;

impl SentinelResourceSpec {
    /// Sentinel's resource name.
    pub fn resource(&self) -> &str {
        self.resource.as_deref().unwrap_or(&self.name)
    }

    /// The cross-field rules: 1 to 32 rules (at most 16 of each kind), each valid in
    /// Sentinel, no two flow rules equal in Sentinel's fields (its `HashSet` would keep
    /// one), an order Sentinel's set gives reproducibly, unique degrade rule names.
    pub fn check(&self) -> Result<(), String> {
        let (nf, nd) = (self.flow_rules.len(), self.degrade_rules.len());
        if nf + nd == 0 || nf > MAX_RULES || nd > MAX_RULES {
            return Err(format!(
                "expected 1 to {MAX_RULES} flow_rules and 0 to {MAX_RULES} degrade_rules (at \
                 least one rule), found {nf} and {nd}"
            ));
        }
        if self.resource.as_ref().is_some_and(|r| r.is_empty()) {
            return Err("resource: expected a non-empty Sentinel resource name".into());
        }
        check_valid_in_sentinel(&self.flow_rules, "flow_rules")?;
        for (i, a) in self.flow_rules.iter().enumerate() {
            if let Some(j) = self.flow_rules[..i].iter().position(|b| sentinel_equal(a, b)) {
                return Err(format!(
                    "flow_rules[{i}]: equal to flow_rules[{j}] in Sentinel's fields (grade, \
                     count, control_behavior, warm_up_period_sec, max_queueing_time_ms): \
                     FlowRuleUtil keeps one of them (a HashSet); remove one"
                ));
            }
        }
        sentinel_flow_order(self.resource(), &self.flow_rules)
            .map_err(|e| format!("flow_rules: {e}"))?;
        for (i, d) in self.degrade_rules.iter().enumerate() {
            d.check().map_err(|e| format!("degrade_rules[{i}]: {e}"))?;
            if self.degrade_rules[..i].iter().any(|o| o.name == d.name) {
                return Err(format!("degrade_rules[{i}]: duplicate name \"{}\"", d.name));
            }
        }
        Ok(())
    }
}

/// Counters worth a summary column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceCounters {
    /// Calls that passed the whole chain.
    pub passed: u64,
    /// Blocked by a flow rule (at arrival or at the end of a pacing wait).
    pub flow_blocked: u64,
    /// Blocked by a degrade rule.
    pub degrade_blocked: u64,
    /// Parked by a pacing flow rule.
    pub queued: u64,
}

/// Run-time state of one Sentinel resource.
#[derive(Clone, Debug)]
pub struct SentinelResource {
    /// The flow slot (`None`: the resource has no flow rule).
    flow: Option<FlowRules>,
    /// Flow rule as written → its position in the chain.
    flow_pos: Vec<usize>,
    degrade: Vec<DegradeBreaker>,
    /// Calls parked in the flow slot → their entry time.
    entries: BTreeMap<CallId, SimTime>,
    woken: Vec<CallId>,
    answered: Vec<(CallId, Outcome)>,
    events: Vec<GovEvent>,
    pub counters: ResourceCounters,
}

impl SentinelResource {
    pub fn new(spec: &SentinelResourceSpec) -> Self {
        assert!(spec.check().is_ok(), "validated: {:?}", spec.check());
        let order = sentinel_flow_order(spec.resource(), &spec.flow_rules).expect("checked");
        let mut flow_pos = vec![0; order.len()];
        for (pos, &written) in order.iter().enumerate() {
            flow_pos[written] = pos;
        }
        let flow = (!order.is_empty()).then(|| {
            let rules = order.iter().map(|&i| spec.flow_rules[i].clone()).collect();
            let mut f = FlowRules::new(&FlowRulesSpec { name: spec.name.clone(), rules });
            f.hold_passes();
            f
        });
        SentinelResource {
            flow,
            flow_pos,
            degrade: spec.degrade_rules.iter().map(DegradeBreaker::new).collect(),
            entries: BTreeMap::new(),
            woken: Vec::new(),
            answered: Vec::new(),
            events: Vec::new(),
            counters: ResourceCounters::default(),
        }
    }

    /// The flow slot (rules in chain order), if the resource has flow rules.
    pub fn flow(&self) -> Option<&FlowRules> {
        self.flow.as_ref()
    }
    /// The chain position of the flow rule written `i`-th.
    pub fn flow_position(&self, i: usize) -> usize {
        self.flow_pos[i]
    }
    /// The degrade rules, as written.
    pub fn degrade(&self) -> &[DegradeBreaker] {
        &self.degrade
    }

    /// The degrade slot for a call that entered at `entry` and passed the flow slot at
    /// `now`: every rule admits it (then the pass is counted) or the first refusal blocks
    /// it and the rules before it forget it.
    fn degrade_slot(&mut self, call: CallId, entry: SimTime, now: SimTime) -> bool {
        for i in 0..self.degrade.len() {
            if !self.degrade[i].try_enter(call, entry, now) {
                for d in &mut self.degrade[..i] {
                    d.blocked_later(call, now);
                }
                self.counters.degrade_blocked += 1;
                return false;
            }
        }
        if let Some(f) = &mut self.flow {
            f.commit_pass(now);
        }
        self.counters.passed += 1;
        true
    }

    /// Events of the inner rules: the flow slot's as they are, a degrade rule's state
    /// changes as `rule_state_change` labelled with its name.
    fn collect_events(&mut self) {
        if let Some(f) = &mut self.flow {
            f.take_events(&mut self.events);
        }
        let mut evs = Vec::new();
        for d in &mut self.degrade {
            let label = d.spec().name.clone();
            d.take_events(&mut evs);
            for e in evs.drain(..) {
                self.events.push(GovEvent {
                    time: e.time,
                    kind: if e.kind == "state_change" { "rule_state_change" } else { e.kind },
                    from: format!("{label}:{}", e.from),
                    to: format!("{label}:{}", e.to),
                    // One rule of several: the resource is no `health_from` breaker.
                    closed: None,
                });
            }
        }
    }

    /// Sum of the degrade rules' state changes.
    pub fn state_changes(&self) -> u64 {
        self.degrade.iter().map(|d| d.counters.state_changes).sum()
    }
}

impl Governor for SentinelResource {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        let d = match &mut self.flow {
            Some(f) => f.on_call(call, now),
            None => CallDecision::Pass,
        };
        let d = match d {
            CallDecision::Pass if self.degrade_slot(call.call, now, now) => CallDecision::Pass,
            CallDecision::Pass => CallDecision::Reject(Reason::BreakerOpen),
            CallDecision::Reject(r) => {
                self.counters.flow_blocked += 1;
                CallDecision::Reject(r)
            }
            w @ CallDecision::Wait { .. } => {
                self.counters.queued += 1;
                self.entries.insert(call.call, now);
                w
            }
            CallDecision::ServeLocally(_) | CallDecision::Fork => {
                unreachable!("flow rules never answer locally nor fork")
            }
        };
        self.collect_events();
        d
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        if let Some(f) = &mut self.flow {
            f.on_outcome(call, outcome, now);
        }
        for d in &mut self.degrade {
            d.on_outcome(call, outcome, now);
        }
        self.collect_events();
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, now: SimTime) {
        if self.entries.remove(&call.call).is_some() {
            self.flow.as_mut().expect("parked in the flow slot").on_abandon(call, now);
        } else {
            // Woken in the same instant but not yet resumed: it passed the whole chain.
            let pos = self.woken.iter().position(|c| *c == call.call);
            self.woken.remove(pos.expect("abandoned call was not parked at this resource"));
            if let Some(f) = &mut self.flow {
                f.exit_committed();
            }
            for d in &mut self.degrade {
                d.on_abandon(call, now);
            }
        }
        self.collect_events();
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }

    fn take_answered(&mut self, out: &mut Vec<(CallId, Outcome)>) {
        out.append(&mut self.answered);
    }

    fn waiting(&self) -> usize {
        self.entries.len()
    }

    fn wake_at(&self) -> Option<SimTime> {
        self.flow.as_ref().and_then(|f| f.wake_at())
    }

    /// Pacing waits that ended: the flow slot lets each call go (the remaining flow rules
    /// checked at its pass time), then the degrade slot decides at that time.
    fn on_wake(&mut self, now: SimTime) {
        let Some(f) = &mut self.flow else { return };
        f.on_wake(now);
        let (mut passed, mut blocked) = (Vec::new(), Vec::new());
        f.take_woken(&mut passed);
        f.take_answered(&mut blocked);
        for call in passed {
            let entry = self.entries.remove(&call).expect("a parked call");
            if self.degrade_slot(call, entry, now) {
                self.woken.push(call);
            } else {
                self.answered.push((call, Outcome::Rejected(Reason::BreakerOpen)));
            }
        }
        for (call, o) in blocked {
            self.entries.remove(&call).expect("a parked call");
            self.counters.flow_blocked += 1;
            self.answered.push((call, o));
        }
        self.collect_events();
    }

    fn take_events(&mut self, out: &mut Vec<GovEvent>) {
        out.append(&mut self.events);
    }
}
