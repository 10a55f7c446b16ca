//! Sentinel 1.8.x degrade rules (`DegradeRule` → `ResponseTimeCircuitBreaker` /
//! `ExceptionCircuitBreaker`), exactly as in docs/domain.md §7.3.
//!
//! * Statistics: one tumbling bucket of `stat_interval_ms` (Sentinel's `LeapArray` with one
//!   sample), aligned to multiples of the interval since t = 0 (Sentinel aligns to epoch
//!   milliseconds). Every completion is counted in the bucket current at completion time.
//! * CLOSED: after each completion, with at least `min_request_amount` completions in the
//!   bucket: SLOW_REQUEST_RATIO opens when slow/total > `slow_ratio_threshold` (or = when
//!   the threshold is 1.0), slow meaning RT > `round(count)` ms; ERROR_RATIO opens when
//!   errors/total > `count`; ERROR_COUNT when errors > `count` (Java `double` arithmetic).
//! * OPEN rejects with `breaker_open`; the first call at or after openTime + `time_window`
//!   seconds moves it to HALF_OPEN and is the single probe; every other call is rejected
//!   while HALF_OPEN. The next completion decides: bad (slow, or an error) → OPEN with a
//!   new openTime; good → CLOSED with the bucket reset.
//!
//! Key design decision: Sentinel's clock is `System.currentTimeMillis()`, so this model
//! works in whole milliseconds (`now_ms = ⌊now / 1 ms⌋`): RT = ⌊end⌋ − ⌊start⌋ ms, the bucket
//! start, openTime and the retry time. Outcomes are classified as for Resilience4j
//! ([`super::classify`]): `record_exceptions` are the errors the application traces
//! (`Tracer.trace`), and an *ignored* outcome (a business error by default) is an exception
//! it does not trace. Sentinel counts every completed entry: `ExceptionCircuitBreaker.
//! onRequestComplete` adds 1 to `totalCount` for every entry and 1 to `errorCount` only
//! when `entry.getError() != null`, and `ResponseTimeCircuitBreaker.onRequestComplete`
//! judges every completion by its RT — so an ignored outcome counts in the total as a
//! non-error (as a success in HALF_OPEN: the probe closes the breaker). An abandoned probe
//! (the call never completed) falls back to OPEN without a new openTime (Sentinel's
//! `whenTerminate` hook for an entry that did not complete), so the next call probes again.
//! Like Sentinel, any completion while HALF_OPEN decides, not only the probe's.
//!
//! Architecture invariant: at most one probe; every admitted call is tracked (≤
//! [`super::MAX_IN_FLIGHT`]) until its outcome or abandon; no timers.
//!
//! API boundary: a [`Governor`]; setters change the thresholds at run time and keep the
//! bucket.

use super::{BreakerState, Classified, MAX_IN_FLIGHT, OutcomePattern, classify, state_event};
use crate::governor::{CallDecision, CallInfo, GovEvent, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use crate::slotmap::CallMap;
use serde::{Deserialize, Serialize};
use sim_core::SimTime;
use sim_core::time::NS_PER_MS;

crate::params::param_choices! {
    /// Sentinel's `CircuitBreakerStrategy` (the rule's `grade`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub enum CircuitBreakerStrategy {
        /// `count` = maximum RT in ms; `slow_ratio_threshold` the ratio.
        SlowRequestRatio = "SLOW_REQUEST_RATIO",
        /// `count` = the error ratio in [0, 1].
        ErrorRatio = "ERROR_RATIO",
        /// `count` = the number of errors.
        ErrorCount = "ERROR_COUNT",
    }
}

/// A Sentinel degrade rule as written in scenarios (Sentinel's names, its defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "DegradeRule")]
pub struct DegradeRuleSpec {
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    pub grade: CircuitBreakerStrategy,
    /// Max RT in ms (SLOW_REQUEST_RATIO), ratio in [0, 1] (ERROR_RATIO) or error count.
    #[serde(deserialize_with = "R::count")]
    pub count: f64,
    /// Seconds the breaker stays OPEN before a probe.
    #[serde(deserialize_with = "R::time_window")]
    pub time_window: u64,
    #[serde(default = "D::min_request_amount", deserialize_with = "R::min_request_amount")]
    pub min_request_amount: u64,
    #[serde(default = "D::stat_interval_ms", deserialize_with = "R::stat_interval_ms")]
    pub stat_interval_ms: u64,
    #[serde(default = "D::slow_ratio_threshold", deserialize_with = "R::slow_ratio_threshold")]
    pub slow_ratio_threshold: f64,
    #[serde(default = "super::default_record_exceptions", deserialize_with = "super::patterns")]
    pub record_exceptions: Vec<OutcomePattern>,
    #[serde(default = "super::default_ignore_exceptions", deserialize_with = "super::patterns")]
    pub ignore_exceptions: Vec<OutcomePattern>,
}

/// The defaults and ranges declared in the parameter rows (`super::params`).
type D = crate::params::Defaults<DegradeRuleSpec>;
type R = crate::params::Ranged<DegradeRuleSpec>;

impl DegradeRuleSpec {
    /// A rule with Sentinel's defaults for the optional fields.
    pub fn new(name: &str, grade: CircuitBreakerStrategy, count: f64, time_window: u64) -> Self {
        DegradeRuleSpec {
            name: name.into(),
            grade,
            count,
            time_window,
            min_request_amount: D::min_request_amount(),
            stat_interval_ms: D::stat_interval_ms(),
            slow_ratio_threshold: D::slow_ratio_threshold(),
            record_exceptions: super::default_record_exceptions(),
            ignore_exceptions: super::default_ignore_exceptions(),
        }
    }

    /// Cross-field check (Sentinel's `isValidRule`): an error ratio is at most 1.
    pub fn check(&self) -> Result<(), String> {
        if self.grade == CircuitBreakerStrategy::ErrorRatio && self.count > 1.0 {
            return Err(format!("ERROR_RATIO count must be in [0, 1], found {}", self.count));
        }
        Ok(())
    }
}

/// Counters worth exposing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DegradeCounters {
    pub passed: u64,
    pub blocked: u64,
    /// `blocked` by the state that blocked (index [`BreakerState::gauge`]; time series).
    pub blocked_in: [u64; 6],
    pub completed: u64,
    /// Slow (SLOW_REQUEST_RATIO) or erroneous completions.
    pub bad: u64,
    pub ignored: u64,
    pub abandoned: u64,
    pub state_changes: u64,
}

/// Run-time state of a Sentinel degrade rule.
#[derive(Clone, Debug)]
pub struct DegradeBreaker {
    spec: DegradeRuleSpec,
    state: BreakerState,
    next_retry_ms: u64,
    probe: Option<CallId>,
    bucket_start_ms: u64,
    total: u64,
    bad: u64,
    /// Admitted calls → their start in whole ms.
    in_flight: CallMap<u64>,
    events: Vec<GovEvent>,
    pub counters: DegradeCounters,
}

fn ms(t: SimTime) -> u64 {
    t.0 / NS_PER_MS
}

impl DegradeBreaker {
    pub fn new(spec: &DegradeRuleSpec) -> Self {
        assert!(spec.time_window >= 1 && spec.min_request_amount >= 1);
        assert!(spec.stat_interval_ms >= 1 && spec.count >= 0.0);
        assert!(spec.check().is_ok(), "validated: {:?}", spec.check());
        DegradeBreaker {
            spec: spec.clone(),
            state: BreakerState::Closed,
            next_retry_ms: 0,
            probe: None,
            bucket_start_ms: 0,
            total: 0,
            bad: 0,
            in_flight: CallMap::new(),
            events: Vec::new(),
            counters: DegradeCounters::default(),
        }
    }

    pub fn state(&self) -> BreakerState {
        self.state
    }
    pub fn spec(&self) -> &DegradeRuleSpec {
        &self.spec
    }
    /// (total, bad) completions in the current bucket as last recorded.
    pub fn bucket(&self) -> (u64, u64) {
        (self.total, self.bad)
    }
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    pub fn set_count(&mut self, count: f64) {
        assert!(count >= 0.0);
        assert!(self.spec.grade != CircuitBreakerStrategy::ErrorRatio || count <= 1.0);
        self.spec.count = count;
    }
    pub fn set_slow_ratio_threshold(&mut self, r: f64) {
        assert!((0.0..=1.0).contains(&r));
        self.spec.slow_ratio_threshold = r;
    }
    /// Applies from the next opening.
    pub fn set_time_window(&mut self, s: u64) {
        assert!(s >= 1);
        self.spec.time_window = s;
    }
    pub fn set_min_request_amount(&mut self, n: u64) {
        assert!(n >= 1);
        self.spec.min_request_amount = n;
    }

    /// Sentinel's `Math.round(count)`: the maximum RT in ms.
    fn max_allowed_rt_ms(&self) -> u64 {
        (self.spec.count + 0.5).floor() as u64
    }

    fn transition(&mut self, to: BreakerState, now: SimTime) {
        let from = self.state;
        assert_ne!(from, to);
        self.state = to;
        self.counters.state_changes += 1;
        self.events.push(state_event(now, from, to));
        if to != BreakerState::HalfOpen {
            self.probe = None;
        }
    }

    fn enter_open(&mut self, now: SimTime) {
        self.next_retry_ms = ms(now) + self.spec.time_window * 1000;
        self.transition(BreakerState::Open, now);
    }

    /// Rolls the tumbling bucket to the one containing `now_ms`.
    fn roll(&mut self, now_ms: u64) {
        let start = now_ms - now_ms % self.spec.stat_interval_ms;
        if start != self.bucket_start_ms {
            self.bucket_start_ms = start;
            self.total = 0;
            self.bad = 0;
        }
    }

    /// The probe ended without a verdict (blocked below, ignored, abandoned).
    fn probe_void(&mut self, call: CallId, now: SimTime) {
        if self.state == BreakerState::HalfOpen && self.probe == Some(call) {
            self.transition(BreakerState::Open, now); // openTime unchanged
        }
    }

    fn opens(&self) -> bool {
        if self.total < self.spec.min_request_amount {
            return false;
        }
        let (bad, total) = (self.bad as f64, self.total as f64);
        match self.spec.grade {
            CircuitBreakerStrategy::SlowRequestRatio => {
                let ratio = bad * 1.0 / total;
                let thr = self.spec.slow_ratio_threshold;
                ratio > thr || (ratio == thr && thr == 1.0)
            }
            CircuitBreakerStrategy::ErrorRatio => bad * 1.0 / total > self.spec.count,
            CircuitBreakerStrategy::ErrorCount => bad > self.spec.count,
        }
    }
}

impl DegradeBreaker {
    /// `CircuitBreaker.tryPass` for a call that entered the resource at `entry` and reaches
    /// this rule at `now` (later than `entry` after a pacing wait in a
    /// `SentinelResource`): OPEN past the retry time becomes
    /// HALF_OPEN with this call as the probe. An admitted call's RT is measured from
    /// `entry` (`completeTime − entry.createTimestamp`).
    pub fn try_enter(&mut self, call: CallId, entry: SimTime, now: SimTime) -> bool {
        let pass = match self.state {
            BreakerState::Closed => true,
            BreakerState::Open if ms(now) >= self.next_retry_ms => {
                self.transition(BreakerState::HalfOpen, now);
                self.probe = Some(call);
                true
            }
            _ => false,
        };
        if !pass {
            self.counters.blocked += 1;
            self.counters.blocked_in[self.state.gauge() as usize] += 1;
            return false;
        }
        assert!(self.in_flight.len() < MAX_IN_FLIGHT, "degrade rule tracks too many calls");
        let prev = self.in_flight.insert(call, ms(entry));
        assert!(prev.is_none(), "call {call:?} admitted twice by one degrade rule");
        self.counters.passed += 1;
        true
    }

    /// A call this rule admitted was blocked by a later slot of the same chain: it is
    /// recorded nowhere, and if it was this rule's probe the rule falls back to OPEN with
    /// its retry time unchanged (`AbstractCircuitBreaker.fromOpenToHalfOpen`'s
    /// `whenTerminate` hook: the entry ended with a block error).
    pub fn blocked_later(&mut self, call: CallId, now: SimTime) {
        self.in_flight.remove(&call).expect("a call this rule admitted");
        self.counters.passed -= 1;
        self.probe_void(call, now);
    }
}

impl Governor for DegradeBreaker {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        if self.try_enter(call.call, now, now) {
            CallDecision::Pass
        } else {
            CallDecision::Reject(Reason::BreakerOpen)
        }
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        let start_ms =
            self.in_flight.remove(&call.call).expect("outcome of a call this rule did not admit");
        let c = classify(&self.spec.record_exceptions, &self.spec.ignore_exceptions, outcome);
        // Ignored = not traced as an exception: counted, as a non-error (see the module doc).
        self.counters.ignored += (c == Classified::Ignored) as u64;
        let now_ms = ms(now);
        let bad = match self.spec.grade {
            CircuitBreakerStrategy::SlowRequestRatio => {
                now_ms - start_ms > self.max_allowed_rt_ms()
            }
            _ => c == Classified::Failure,
        };
        self.roll(now_ms);
        self.total += 1;
        self.bad += bad as u64;
        self.counters.completed += 1;
        self.counters.bad += bad as u64;
        match self.state {
            // (A degrade rule is never in Resilience4j's special states.)
            BreakerState::Open
            | BreakerState::ForcedOpen
            | BreakerState::Disabled
            | BreakerState::MetricsOnly => {}
            BreakerState::HalfOpen => {
                if bad {
                    self.enter_open(now);
                } else {
                    self.transition(BreakerState::Closed, now);
                    // resetStat(): the current bucket starts over.
                    self.total = 0;
                    self.bad = 0;
                }
            }
            BreakerState::Closed => {
                if self.opens() {
                    self.enter_open(now);
                }
            }
        }
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, now: SimTime) {
        self.in_flight.remove(&call.call).expect("abandoned call unknown to this degrade rule");
        self.counters.abandoned += 1;
        self.probe_void(call.call, now);
    }

    fn take_woken(&mut self, _out: &mut Vec<CallId>) {}

    fn waiting(&self) -> usize {
        0
    }

    fn take_events(&mut self, out: &mut Vec<GovEvent>) {
        out.append(&mut self.events);
    }
}
