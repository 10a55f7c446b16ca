//! The retry governor (docs/domain.md §3.10, §7.4).
//!
//! A call passes this level at once (`on_call` always passes and starts tracking it). When
//! its outcome climbs back, the governor either passes it up or answers
//! `RetryAfter(delay)`: the call site re-sends the call from the level below after
//! `delay`, so the levels below (breaker, limiter, gate…) see every retry as a fresh call —
//! retries go through the same limiters, as in production. The governor itself never sees
//! `on_call` for a retry; its per-call state says which attempt it is.
//!
//! An outcome is retried iff, in this order:
//! 1. its reason is in the class's `retry_on` (default: timeout, upstream_5xx,
//!    upstream_429, connect_error, stream_interrupted; `Success` and `Degraded` never).
//!    `business_error` and `breaker_open` can never be listed (validation refuses them):
//!    a `Rejected(BreakerOpen)` from a breaker below is how this governor detects an open
//!    breaker, and it is passed up at once — "no retry while the breaker is open";
//! 2. attempts so far `< max_attempts` (Resilience4j's meaning, the first call counts:
//!    3 = one call + two retries; otherwise counted in `exhausted`);
//! 3. the delay — backoff with jitter ([`backoff`]), raised to the upstream's Retry-After
//!    when that is longer (a lower bound) — fits the time budget: `now + delay ≤ first call
//!    + total_budget` (equality allowed; otherwise `gave_up_time_budget`);
//! 4. the retry budget ([`budget`]) admits it (otherwise `retries_denied_by_budget`).
//!
//! Jitter randomness: retry `n` of a call uses `u = bits_to_open01(mix64(draw ^ n·K))` with
//! `K` a fixed odd constant: a pure function of the call's own bits, so a policy change
//! never changes the luck of other calls.
//!
//! Architecture invariant: per-call state lives in a `CallMap` keyed by `CallId`, bounded
//! by `max_tracked_calls` (when full, the call tracked longest is forgotten: its outcome
//! later passes up un-retried, counted in `evicted`). The eviction order (a FIFO of first
//! sightings) is kept only from the moment the table is half full, built then from the
//! table sorted by (first time, call id): below half of the bound no call can be evicted,
//! and the FIFO's upkeep (a push per call, dead entries behind a long call, compactions)
//! was a tenth of the surge bench's governor cost (bench/NOTES.md, session 6). An entry is removed when the call's
//! outcome passes up or the call is forgotten ([`Governor::on_abandon`] / [`Retry::forget`]).
//! `active() == calls.len()`; the Envoy budget's retries in flight ≤ `active()`.
//!
//! API boundary: [`RetrySpec`] (serde), [`Retry`] (`impl Governor`, counters as pub
//! fields). Per-class overrides name classes; [`Retry::new`] resolves them against the
//! scenario's class names.

pub mod backoff;
pub mod budget;
mod spec;
#[cfg(test)]
mod tests;

pub use backoff::{Backoff, Jitter};
pub use budget::{BudgetState, RetryBudgetSpec};
pub use spec::{ClassRetryPolicy, RetrySpec, default_retry_on};

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use crate::slotmap::CallMap;
use sim_core::rng::{bits_to_open01, mix64};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// Odd constant separating the jitter draws of successive retries.
const JITTER_SALT: u64 = 0x9E37_79B9_7F4A_7C15;

/// The uniform in (0, 1) that retry `n` of a call with bits `draw` uses for its jitter.
pub fn jitter_uniform(draw: u64, n: u32) -> f64 {
    bits_to_open01(mix64(draw ^ JITTER_SALT.wrapping_mul(n as u64)))
}

/// An effective policy (the default one, or a class's with its overrides applied).
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub max_attempts: u32,
    pub retry_on: Vec<Reason>,
    pub backoff: Backoff,
    pub jitter: Jitter,
    pub total_budget: Option<SimDuration>,
}

#[derive(Clone, Debug)]
struct CallState {
    /// Attempts sent so far (1 after the first call).
    attempts: u32,
    first: SimTime,
    prev_delay: SimDuration,
    /// The current attempt is a retry (holds an Envoy in-flight slot).
    retry_in_flight: bool,
}

/// Run-time state of a retry governor.
#[derive(Clone, Debug)]
pub struct Retry {
    /// `policies[0]` is the default; `by_class[c]` indexes the policy of class `c`.
    policies: Vec<Policy>,
    by_class: Vec<usize>,
    /// Per policy: does it set its own `max_attempts` (run-time changes leave it alone)?
    own_max_attempts: Vec<bool>,
    budget: BudgetState,
    max_tracked: usize,
    calls: CallMap<CallState>,
    /// Eviction order, once `ordered`: (first-call time, call) in the order calls were
    /// first seen, which is time order. Forgotten calls stay until they reach the front or
    /// a compaction (`tidy_order`); an entry is live while its call is tracked with that
    /// first time. Empty while not `ordered`.
    order: VecDeque<(SimTime, CallId)>,
    /// Is `order` kept? From the first time the table is half full (`keep_order`) on.
    ordered: bool,
    /// Attempts sent (first calls + retries).
    pub attempts: u64,
    /// Retries decided (`retry.<n>.retries`): over the whole run, warm-up included, like
    /// every governor counter (the `source.*` columns count measured requests only).
    pub retries: u64,
    pub retries_denied_by_budget: u64,
    /// Retryable outcomes that had used all their attempts.
    pub exhausted: u64,
    pub gave_up_time_budget: u64,
    /// Calls forgotten because the table was full.
    pub evicted: u64,
}

impl Retry {
    /// `classes`: the scenario's class names, in `ClassId` order (overrides name them).
    pub fn new(spec: &RetrySpec, classes: &[&str]) -> Self {
        assert!(spec.max_attempts >= 1 && spec.max_tracked_calls >= 1, "validated");
        if let Err(e) = spec.check_classes(classes) {
            panic!("checked by the scenario: {e}");
        }
        let base = Policy {
            max_attempts: spec.max_attempts as u32,
            retry_on: spec.retry_on.clone(),
            backoff: spec.backoff.clone(),
            jitter: spec.jitter.clone(),
            total_budget: spec.total_budget,
        };
        let mut policies = vec![base.clone()];
        let mut by_class = vec![0; classes.len()];
        let mut own_max_attempts = vec![true];
        for cp in &spec.class_policies {
            let c = classes.iter().position(|n| *n == cp.class).expect("checked");
            by_class[c] = policies.len();
            policies.push(cp.apply(&base));
            own_max_attempts.push(cp.max_attempts.is_some());
        }
        for p in &policies {
            assert!(p.retry_on.iter().all(|r| !spec::NEVER_RETRIED.contains(r)), "validated");
        }
        Retry {
            policies,
            by_class,
            own_max_attempts,
            budget: BudgetState::new(&spec.budget),
            max_tracked: spec.max_tracked_calls as usize,
            calls: CallMap::new(),
            order: VecDeque::new(),
            ordered: false,
            attempts: 0,
            retries: 0,
            retries_denied_by_budget: 0,
            exhausted: 0,
            gave_up_time_budget: 0,
            evicted: 0,
        }
    }

    /// The policy a class gets (classes beyond the list get the default).
    pub fn policy(&self, class: crate::ids::ClassId) -> &Policy {
        &self.policies[self.by_class.get(class.0 as usize).copied().unwrap_or(0)]
    }

    /// Calls being tracked (first attempt sent, final outcome not yet passed up).
    pub fn active(&self) -> usize {
        self.calls.len()
    }

    pub fn budget(&self) -> &BudgetState {
        &self.budget
    }

    /// Run-time change of the default policy's `max_attempts` (class overrides that set
    /// their own keep it).
    pub fn set_max_attempts(&mut self, n: u32) {
        assert!(n >= 1);
        self.policies[0].max_attempts = n;
        for (p, own) in self.policies.iter_mut().zip(&self.own_max_attempts).skip(1) {
            if !own {
                p.max_attempts = n;
            }
        }
    }

    /// Forgets a call (cancelled while in backoff or anywhere below): its entry goes and
    /// its Envoy slot, if any, is returned.
    #[inline]
    pub fn forget(&mut self, call: CallId) {
        // Inlined: at every first call the lookup misses (a fresh id), at every final
        // outcome it hits.
        if let Some(st) = self.calls.remove(&call) {
            self.forgotten(st);
        }
    }

    /// [`Self::forget`] of a tracked call: its Envoy slot back, the eviction order tidied.
    fn forgotten(&mut self, st: CallState) {
        if st.retry_in_flight {
            self.budget.on_retry_done();
        }
        if self.ordered {
            self.tidy_order();
        }
    }

    /// Starts keeping the eviction order when the table is half full: built from the
    /// table sorted by (first time, call id), the order an ordered set of both gives, as
    /// [`Self::oldest`] reads it. A call can be evicted only at a full table, and the
    /// table grows by one call at a time, so the order exists before any eviction.
    fn keep_order(&mut self) {
        if self.ordered || 2 * self.calls.len() < self.max_tracked {
            return;
        }
        let mut all: Vec<(SimTime, CallId)> =
            self.calls.iter_unordered().map(|(c, st)| (st.first, c)).collect();
        all.sort_unstable();
        self.order = all.into();
        self.ordered = true;
    }

    fn is_live(&self, (first, call): (SimTime, CallId)) -> bool {
        self.calls.get(&call).is_some_and(|st| st.first == first)
    }

    /// Drops forgotten entries from the front of `order`, and compacts it when forgotten
    /// entries behind a long-lived call make up more than half of it (amortised O(1)).
    fn tidy_order(&mut self) {
        while let Some(&e) = self.order.front() {
            if self.is_live(e) {
                break;
            }
            self.order.pop_front();
        }
        if self.order.len() > 2 * self.calls.len() + 1024 {
            let calls = &self.calls;
            self.order
                .retain(|&(first, call)| calls.get(&call).is_some_and(|st| st.first == first));
        }
    }

    /// The oldest tracked call: the smallest (first time, call id), as an ordered set of
    /// both would give (entries of one instant may have been seen in any id order).
    fn oldest(&self) -> Option<CallId> {
        let mut live = self.order.iter().copied().filter(|&e| self.is_live(e));
        let first = live.next()?;
        Some(live.take_while(|e| e.0 == first.0).fold(first, |a, b| a.min(b)).1)
    }

    fn check(&self) {
        assert!(!self.ordered || self.calls.len() <= self.order.len());
        assert!(self.calls.len() <= self.max_tracked);
        if let Some(n) = self.budget.retries_in_flight() {
            assert!(n as usize <= self.calls.len(), "retries in flight ≤ active calls");
        }
    }

    fn finish(&mut self, call: CallId, outcome: Outcome) -> OutcomeDecision {
        self.forget(call);
        OutcomeDecision::PassUp(outcome)
    }
}

impl Governor for Retry {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        // A stale entry under the same id (never expected: ids carry a generation) is
        // replaced.
        self.forget(call.call);
        if self.calls.len() >= self.max_tracked {
            let oldest = self.oldest().expect("full table is non-empty");
            self.forget(oldest);
            self.evicted += 1;
        }
        let st = CallState {
            attempts: 1,
            first: now,
            prev_delay: SimDuration::ZERO,
            retry_in_flight: false,
        };
        self.calls.insert(call.call, st);
        if self.ordered {
            self.order.push_back((now, call.call));
        } else {
            self.keep_order();
        }
        self.attempts += 1;
        self.budget.on_request(now);
        self.check();
        CallDecision::Pass
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        let Some(st) = self.calls.get_mut(&call.call) else {
            // Untracked (evicted): pass up un-retried.
            return OutcomeDecision::PassUp(outcome);
        };
        if st.retry_in_flight {
            st.retry_in_flight = false;
            self.budget.on_retry_done();
        }
        let policy = &self.policies[self.by_class.get(call.class.0 as usize).copied().unwrap_or(0)];
        let retryable = match outcome {
            Outcome::Failed(r) | Outcome::Rejected(r) => policy.retry_on.contains(&r),
            Outcome::Success | Outcome::Degraded(_) => false,
        };
        self.budget.on_result(outcome.is_success(), retryable);
        if !retryable {
            return self.finish(call.call, outcome);
        }
        if st.attempts >= policy.max_attempts {
            self.exhausted += 1;
            return self.finish(call.call, outcome);
        }
        let n = st.attempts; // this will be retry number n
        let prev = if n == 1 { policy.backoff.wait_duration() } else { st.prev_delay };
        let mut delay =
            backoff::delay(&policy.backoff, &policy.jitter, n, prev, jitter_uniform(call.draw, n));
        if let Some(ra) = call.retry_after {
            delay = delay.max(ra);
        }
        if let Some(b) = policy.total_budget
            && now + delay > st.first + b
        {
            self.gave_up_time_budget += 1;
            return self.finish(call.call, outcome);
        }
        if !self.budget.admit(now, self.calls.len() as u64) {
            self.retries_denied_by_budget += 1;
            return self.finish(call.call, outcome);
        }
        let st = self.calls.get_mut(&call.call).expect("present");
        st.attempts += 1;
        st.prev_delay = delay;
        st.retry_in_flight = matches!(self.budget, BudgetState::Envoy { .. });
        self.budget.on_retry_sent(now);
        self.attempts += 1;
        self.retries += 1;
        self.check();
        OutcomeDecision::RetryAfter(delay)
    }

    /// The retry governor never parks calls; the world calls this when a call it tracks
    /// is cancelled (e.g. during its backoff).
    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        self.forget(call.call);
    }

    fn take_woken(&mut self, _out: &mut Vec<CallId>) {}

    fn waiting(&self) -> usize {
        0
    }

    /// No timer, no events, no series: nothing for the world's hand-off, ever.
    fn take_changed(&mut self) -> bool {
        false
    }

    /// Never parks a call.
    fn has_released(&self) -> bool {
        false
    }
}

impl crate::params::GovernorSpec for RetrySpec {
    const NOT_SHADOWABLE: Option<&'static str> = Some(
        "a retry cannot run in shadow mode (a shadow never re-sends a call, so there is nothing to record); use the retry itself",
    );
}

impl crate::governor::GovernorKindOps for Retry {
    type Spec = RetrySpec;
    fn build(spec: &RetrySpec, ctx: &crate::governor::BuildCtx<'_>) -> Self {
        Retry::new(spec, ctx.classes)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("retries", self.retries),
            ("retries_denied_by_budget", self.retries_denied_by_budget),
            ("exhausted", self.exhausted),
        ]
    }
}
