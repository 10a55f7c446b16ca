//! Sentinel flow rules on one resource: the [`FlowRules`] governor.
//!
//! Each [`FlowRule`] is Sentinel's `FlowRule` (field names in snake_case, same defaults):
//! THREAD grade → `DefaultController` on the concurrency; QPS grade → by
//! `control_behavior`: `DEFAULT` (reject when the rolling-second pass count + 1 > count),
//! `RATE_LIMITER` (uniform pacing, [`super::throttle`]), `WARM_UP` and
//! `WARM_UP_RATE_LIMITER` ([`super::warmup`]). All rules share one resource node
//! ([`NodeStats`]): passes are counted once a call has passed every rule, at the time it
//! passes, and the concurrency falls when its outcome comes back.
//!
//! The key design decision — composing rules: exactly as Sentinel's `FlowSlot`, the rules
//! are checked in order at the time the call reaches them and the first one that blocks
//! rejects (so with only reject-type rules, the strictest wins). A pacing rule
//! (`RATE_LIMITER`, `WARM_UP_RATE_LIMITER`) that makes the call wait parks it here
//! (`Wait { deadline: None }`; Sentinel sleeps the thread inside the check) and, at its pass
//! time, the *remaining* rules are checked: the call then resumes (all pass), parks again
//! (another pacing rule), or is answered `Rejected(RateLimited)` from here through
//! `take_answered`. A later rule that blocks does not give back the pacing slot (nor does
//! Sentinel's). Put reject-type rules first to reject before queueing.
//!
//! Architecture invariant: every call that passed (counted in `threads`) returns through
//! exactly one `on_outcome`, or one `on_abandon` if it was woken but not yet resumed.
//! Parked calls are bounded by each pacing rule's `max_queueing_time_ms / cost` (+1) and
//! its optional `max_queue_length`. Release order is (pass time, arrival sequence).
//!
//! API boundary: [`FlowRules`] implements [`Governor`]; run-time changes go through
//! its `ApplyParam` (`rule<i>.count` and the other run-time rows of `flow::params`: window
//! and token state kept) or
//! [`FlowRules::reset`] (a rule reload: controllers new, resource statistics kept).

use super::Verdict;
use super::qps::{NodeStats, qps_can_pass, thread_can_pass};
use super::throttle::Throttle;
use super::warmup::{WarmUp, WarmUpPacing};
use crate::governor::{CallDecision, CallInfo, GovEvent, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Deserializer, Serialize, de::Error};
use sim_core::SimTime;
use std::collections::BTreeMap;

crate::params::param_choices! {
    /// `grade`: what `count` limits.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum FlowGrade {
        /// Concurrent calls (`FLOW_GRADE_THREAD`).
        Thread = "THREAD",
        /// Passes per second (`FLOW_GRADE_QPS`, Sentinel's default).
        #[default]
        Qps = "QPS",
    }
}

crate::params::param_choices! {
    /// `controlBehavior` (QPS grade only; THREAD grade always rejects).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum ControlBehavior {
        #[default]
        Default = "DEFAULT",
        RateLimiter = "RATE_LIMITER",
        WarmUp = "WARM_UP",
        WarmUpRateLimiter = "WARM_UP_RATE_LIMITER",
    }
}

/// One Sentinel flow rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "FlowRule")]
pub struct FlowRule {
    /// QPS (default) or THREAD.
    #[serde(default)]
    pub grade: FlowGrade,
    /// The threshold (QPS or concurrent calls), in [0, 1e9].
    #[serde(deserialize_with = "R::count")]
    pub count: f64,
    #[serde(default)]
    pub control_behavior: ControlBehavior,
    /// Pacing: the longest wait before a call is rejected (Sentinel default 500).
    #[serde(default = "D::max_queueing_time_ms", deserialize_with = "R::max_queueing_time_ms")]
    pub max_queueing_time_ms: u64,
    /// Warm-up: seconds from cold to `count` (Sentinel default 10).
    #[serde(default = "D::warm_up_period_sec", deserialize_with = "R::warm_up_period_sec")]
    pub warm_up_period_sec: u64,
    /// Warm-up: the cold rate is count / cold_factor (Sentinel default 3, must be > 1).
    #[serde(default = "default_cold_factor", deserialize_with = "R::cold_factor")]
    pub cold_factor: u32,
    /// Pacing: at most this many calls parked at this rule (the sources' cap; Sentinel has
    /// none). Absent: bounded by the queueing time only.
    #[serde(
        default,
        deserialize_with = "crate::params::RangedSome::<FlowRule>::max_queue_length",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_queue_length: Option<u64>,
}

/// The defaults declared in the rule's parameter rows (`flow/params.rs`).
type D = crate::params::Defaults<FlowRule>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<FlowRule>;
/// The declared default cold factor, as the rule holds it (`u32`).
fn default_cold_factor() -> u32 {
    super::params::cold_factor(D::cold_factor())
}

impl FlowRule {
    /// `FlowRuleUtil.isValidRule`'s `checkControlBehaviorField` for a QPS rule: pacing
    /// (`RATE_LIMITER`, `WARM_UP_RATE_LIMITER`) needs `maxQueueingTimeMs > 0` (warm-up's
    /// `warmUpPeriodSec > 0` is the parameter's own range). THREAD rules ignore the
    /// control behaviour.
    pub fn valid_in_sentinel(&self) -> bool {
        let pacing = matches!(
            self.control_behavior,
            ControlBehavior::RateLimiter | ControlBehavior::WarmUpRateLimiter
        );
        self.grade == FlowGrade::Thread || !pacing || self.max_queueing_time_ms > 0
    }
    /// A QPS rule with every other field at Sentinel's default.
    pub fn qps(count: f64, control_behavior: ControlBehavior) -> Self {
        FlowRule {
            grade: FlowGrade::Qps,
            count,
            control_behavior,
            max_queueing_time_ms: 500,
            warm_up_period_sec: 10,
            cold_factor: 3,
            max_queue_length: None,
        }
    }
    /// A THREAD rule.
    pub fn thread(count: f64) -> Self {
        FlowRule { grade: FlowGrade::Thread, ..FlowRule::qps(count, ControlBehavior::Default) }
    }
}

/// Several flow rules on one resource, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "FlowRules")]
pub struct FlowRulesSpec {
    /// Name (the resource); parameters live under `flow.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// 1 to 16 rules, checked in this order.
    #[serde(deserialize_with = "rule_list")]
    pub rules: Vec<FlowRule>,
}

fn rule_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<FlowRule>, D::Error> {
    let v = Vec::<FlowRule>::deserialize(d)?;
    if !(1..=16).contains(&v.len()) {
        return Err(D::Error::custom(format!("expected 1 to 16 rules, found {}", v.len())));
    }
    check_valid_in_sentinel(&v, "rules").map_err(D::Error::custom)?;
    Ok(v)
}

/// Refuses a rule Sentinel would drop as invalid (`<list>[i]: …`).
pub(crate) fn check_valid_in_sentinel(v: &[FlowRule], list: &str) -> Result<(), String> {
    if let Some(i) = v.iter().position(|r| !r.valid_in_sentinel()) {
        return Err(format!(
            "{list}[{i}]: a {} rule with max_queueing_time_ms: 0 is invalid in Sentinel \
             (FlowRuleUtil.isValidRule → checkControlBehaviorField needs maxQueueingTimeMs > 0 \
             and drops the rule, so it would not limit at all); set it to at least 1 ms, or \
             remove the rule",
            match v[i].control_behavior {
                ControlBehavior::RateLimiter => "RATE_LIMITER",
                _ => "WARM_UP_RATE_LIMITER",
            }
        ));
    }
    Ok(())
}

#[derive(Clone, Debug)]
enum Controller {
    Default,
    Throttle(Throttle),
    WarmUp(WarmUp),
    WarmUpPacing(WarmUpPacing),
}

impl Controller {
    fn for_rule(r: &FlowRule) -> Self {
        if r.grade == FlowGrade::Thread {
            return Controller::Default;
        }
        match r.control_behavior {
            ControlBehavior::Default => Controller::Default,
            ControlBehavior::RateLimiter => Controller::Throttle(Throttle::new()),
            ControlBehavior::WarmUp => {
                Controller::WarmUp(WarmUp::new(r.count, r.warm_up_period_sec, r.cold_factor))
            }
            ControlBehavior::WarmUpRateLimiter => Controller::WarmUpPacing(WarmUpPacing::new(
                WarmUp::new(r.count, r.warm_up_period_sec, r.cold_factor),
            )),
        }
    }
}

/// One rule at run time: its `flow.<name>.rule<i>.*` rows' setters (`flow::params`).
#[derive(Clone, Debug)]
pub(super) struct RuleState {
    rule: FlowRule,
    ctl: Controller,
    /// Calls parked at this rule.
    parked: u64,
}

impl RuleState {
    /// Run-time change of the count; window, pacing and token state are kept.
    pub(super) fn set_count(&mut self, count: f64) {
        assert!(count.is_finite() && count >= 0.0);
        self.rule.count = count;
        let period = self.rule.warm_up_period_sec;
        match &mut self.ctl {
            Controller::WarmUp(w) => w.set_count(count, period),
            Controller::WarmUpPacing(p) => p.warm.set_count(count, period),
            _ => {}
        }
    }
    pub(super) fn set_max_queueing_time_ms(&mut self, ms: u64) {
        self.rule.max_queueing_time_ms = ms;
    }
    pub(super) fn set_max_queue_length(&mut self, cap: Option<u64>) {
        assert!(cap != Some(0));
        self.rule.max_queue_length = cap;
    }
}

#[derive(Clone, Copy, Debug)]
struct Waiter {
    call: CallId,
    /// The rule it waits at; checking resumes after it.
    rule: usize,
}

/// Where checking the rules from some index leads.
enum Step {
    AllPass,
    Block,
    Park(SimTime, usize),
}

/// Run-time state of a set of flow rules on one resource.
#[derive(Clone, Debug)]
pub struct FlowRules {
    rules: Vec<RuleState>,
    stats: NodeStats,
    /// Parked calls by (pass time, arrival sequence).
    waiters: BTreeMap<(SimTime, u64), Waiter>,
    by_call: BTreeMap<CallId, (SimTime, u64)>,
    seq: u64,
    woken: Vec<CallId>,
    answered: Vec<(CallId, Outcome)>,
    events: Vec<GovEvent>,
    /// `wake_at` (the first waiter) or the events may have changed since
    /// [`Governor::take_changed`]: set where waiters come or go (`park`, `on_wake`,
    /// `on_abandon`) and by a reload's event.
    changed: bool,
    /// Held passes (a `SentinelResource`'s flow slot): a call
    /// that passes every rule is not yet counted; the owner calls [`Self::commit_pass`]
    /// once the later slots let it through (Sentinel's `StatisticSlot` counts a pass only
    /// after the whole chain).
    hold: bool,
    /// Counters: calls passed every rule, blocked (at arrival or after a wait), parked.
    pub passed: u64,
    pub blocked: u64,
    pub queued: u64,
}

impl FlowRules {
    pub fn new(spec: &FlowRulesSpec) -> Self {
        assert!(!spec.rules.is_empty(), "validated: at least one rule");
        let rules = spec
            .rules
            .iter()
            .map(|r| {
                assert!(r.count >= 0.0 && r.cold_factor > 1, "validated rule");
                RuleState { rule: r.clone(), ctl: Controller::for_rule(r), parked: 0 }
            })
            .collect();
        FlowRules {
            rules,
            stats: NodeStats::default(),
            waiters: BTreeMap::new(),
            by_call: BTreeMap::new(),
            seq: 0,
            woken: Vec::new(),
            answered: Vec::new(),
            events: Vec::new(),
            changed: true,
            hold: false,
            passed: 0,
            blocked: 0,
            queued: 0,
        }
    }

    /// From now on passes are held for the owner ([`Self::commit_pass`]).
    pub fn hold_passes(&mut self) {
        self.hold = true;
    }

    /// Held mode: the call that passed every rule passed the whole chain at `now` (the
    /// pass and the thread are counted; its outcome or [`Self::exit_committed`] returns it).
    pub fn commit_pass(&mut self, now: SimTime) {
        assert!(self.hold, "passes are counted by the rules themselves");
        self.stats.record_pass(now);
        self.passed += 1;
    }

    /// Held mode: a committed call left without an outcome (abandoned before it resumed).
    pub fn exit_committed(&mut self) {
        assert!(self.hold, "only a held pass is committed by the owner");
        self.stats.record_exit();
    }

    /// Counts a pass, unless passes are held for the owner.
    fn passed_all(&mut self, now: SimTime) {
        if !self.hold {
            self.stats.record_pass(now);
            self.passed += 1;
        }
    }

    pub fn rule(&self, i: usize) -> &FlowRule {
        &self.rules[i].rule
    }
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }
    /// Calls passed and not yet returned (`curThreadNum`).
    pub fn threads(&self) -> u64 {
        self.stats.threads
    }
    /// Passes in the rolling second at `now` (`passQps`).
    pub fn pass_qps(&self, now: SimTime) -> u64 {
        self.stats.pass_qps(now)
    }
    /// Stored warm-up tokens of rule `i` (`None` for a rule without warm-up).
    pub fn warm_up_tokens(&self, i: usize) -> Option<i64> {
        match &self.rules[i].ctl {
            Controller::WarmUp(w) => Some(w.stored()),
            Controller::WarmUpPacing(p) => Some(p.warm.stored()),
            _ => None,
        }
    }

    /// Rule `i`'s run-time state, for a change of its parameters (`None`: no such rule).
    pub(super) fn rule_mut(&mut self, i: usize) -> Option<&mut RuleState> {
        self.rules.get_mut(i)
    }

    /// A rule reload (Sentinel's `FlowRuleManager.loadRules`): every controller is new
    /// (pacing "long ago", warm-up bucket refilled at the next sync: cold again); the
    /// resource's statistics survive, and parked calls keep their pass times.
    pub fn reset(&mut self, now: SimTime) {
        self.reset_controllers();
        self.changed = true;
        self.events.push(GovEvent {
            time: now,
            kind: "rule_reload",
            from: String::new(),
            to: format!("{} rules", self.rules.len()),
            closed: None,
        });
    }

    /// [`Self::reset`] without its event (the world records the reload itself).
    pub fn reset_controllers(&mut self) {
        for r in &mut self.rules {
            r.ctl = Controller::for_rule(&r.rule);
        }
    }

    fn check(&mut self, i: usize, now: SimTime) -> Verdict {
        let stats = &self.stats;
        let r = &mut self.rules[i];
        let ok = |b: bool| if b { Verdict::Pass } else { Verdict::Block };
        let pacing = matches!(r.ctl, Controller::Throttle(_) | Controller::WarmUpPacing(_));
        if pacing && r.rule.max_queue_length.is_some_and(|cap| r.parked >= cap) {
            // Parked calls imply a pass time in the future: this call would wait too.
            return Verdict::Block;
        }
        let (count, maxq) = (r.rule.count, r.rule.max_queueing_time_ms);
        match &mut r.ctl {
            Controller::Default if r.rule.grade == FlowGrade::Thread => {
                ok(thread_can_pass(stats, count))
            }
            Controller::Default => ok(qps_can_pass(stats, count, now)),
            Controller::Throttle(t) => t.check(count, maxq, now),
            Controller::WarmUp(w) => {
                ok(w.can_pass(stats.pass_qps(now), stats.previous_pass_qps(now), now))
            }
            Controller::WarmUpPacing(p) => p.check(stats.previous_pass_qps(now), maxq, now),
        }
    }

    fn evaluate(&mut self, from: usize, now: SimTime) -> Step {
        for i in from..self.rules.len() {
            match self.check(i, now) {
                Verdict::Pass => {}
                Verdict::Block => return Step::Block,
                Verdict::PassAt(t) => return Step::Park(t, i),
            }
        }
        Step::AllPass
    }

    fn park(&mut self, call: CallId, at: SimTime, rule: usize) {
        let key = (at, self.seq);
        self.seq += 1;
        self.changed = true;
        self.rules[rule].parked += 1;
        self.waiters.insert(key, Waiter { call, rule });
        let prev = self.by_call.insert(call, key);
        assert!(prev.is_none(), "call parked twice");
    }
}

impl Governor for FlowRules {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        match self.evaluate(0, now) {
            Step::AllPass => {
                self.passed_all(now);
                CallDecision::Pass
            }
            Step::Block => {
                self.blocked += 1;
                CallDecision::Reject(Reason::RateLimited)
            }
            Step::Park(at, rule) => {
                self.queued += 1;
                self.park(call.call, at, rule);
                CallDecision::Wait { deadline: None, on_deadline: Reason::RateLimited }
            }
        }
    }

    fn on_outcome(&mut self, _call: &CallInfo, outcome: Outcome, _now: SimTime) -> OutcomeDecision {
        self.stats.record_exit();
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        self.changed = true;
        if let Some(key) = self.by_call.remove(&call.call) {
            let w = self.waiters.remove(&key).expect("indexed waiter");
            self.rules[w.rule].parked -= 1;
        } else {
            // Woken in the same instant but not yet resumed: it had passed; give it back.
            let pos = self.woken.iter().position(|c| *c == call.call);
            self.woken.remove(pos.expect("abandoned call was not parked at these rules"));
            self.stats.record_exit();
        }
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }

    fn take_answered(&mut self, out: &mut Vec<(CallId, Outcome)>) {
        out.append(&mut self.answered);
    }

    fn waiting(&self) -> usize {
        self.waiters.len()
    }

    fn wake_at(&self) -> Option<SimTime> {
        self.waiters.keys().next().map(|k| k.0)
    }

    fn on_wake(&mut self, now: SimTime) {
        self.changed = true;
        while let Some(entry) = self.waiters.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let w = entry.remove();
            self.by_call.remove(&w.call);
            self.rules[w.rule].parked -= 1;
            match self.evaluate(w.rule + 1, now) {
                Step::AllPass => {
                    self.passed_all(now);
                    self.woken.push(w.call);
                }
                Step::Block => {
                    self.blocked += 1;
                    self.answered.push((w.call, Outcome::Rejected(Reason::RateLimited)));
                }
                Step::Park(at, rule) => self.park(w.call, at, rule),
            }
        }
    }

    fn take_events(&mut self, out: &mut Vec<GovEvent>) {
        out.append(&mut self.events);
    }

    fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    fn has_released(&self) -> bool {
        !self.woken.is_empty() || !self.answered.is_empty()
    }
}
