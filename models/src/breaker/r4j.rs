//! Resilience4j's `CircuitBreaker` (2.x `CircuitBreakerStateMachine`), exactly as in
//! docs/domain.md §7.1, plus the sources' priority-aware half-open.
//!
//! * CLOSED admits every call and records each result in the sliding window
//!   ([`super::r4j_window`]); the verdict is evaluated only when a result is recorded.
//!   Open when failure rate ≥ `failure_rate_threshold` or slow rate ≥
//!   `slow_call_rate_threshold`, once `minimum_number_of_calls` results are in (capped at
//!   the window size for COUNT_BASED only). Slow = duration (from `on_call` to
//!   `on_outcome` at this level) strictly greater than `slow_call_duration_threshold`.
//! * OPEN rejects with `breaker_open` until strictly after openedAt + wait; the next call
//!   then moves it to HALF_OPEN (lazily), or a timer does at openedAt + wait when
//!   `automatic_transition_from_open_to_half_open_enabled`. The wait of the n-th opening
//!   since the last close is the interval function at attempt n: constant, or with
//!   `enable_exponential_backoff` `wait·multiplierⁿ⁻¹` computed like Resilience4j's
//!   `IntervalFunction` in whole milliseconds, each step truncated, capped by
//!   `exponential_max_wait_duration_in_open_state`.
//! * HALF_OPEN starts fresh COUNT_BASED metrics of `permitted_number_of_calls_in_half_open_state`
//!   results, admits exactly that many calls (probe permits) and rejects the others — or,
//!   with `half_open_wait`, parks them in a priority list ([`super::priority_wait`]).
//!   Probes ending in an ignored outcome, or abandoned, give their permit back (to the
//!   most important waiter first). Once min(minimum, permitted) results are in, the same
//!   thresholds decide OPEN or CLOSED. `max_wait_duration_in_half_open_state` (0 =
//!   unlimited) forces `transition_to_state_after_wait_duration` when it elapses.
//!   Leaving HALF_OPEN wakes the waiters (CLOSED) or answers them `rejected:breaker_open`
//!   (OPEN).
//! * FORCED_OPEN (`forced_open`, a run-time switch): every call rejected, nothing recorded;
//!   switching back on closes the breaker with fresh metrics. DISABLED (`disabled`): every
//!   call permitted, nothing recorded; METRICS_ONLY (`metrics_only`): every call permitted
//!   and recorded, never opened. Switching one on leaves the others off (one state at a
//!   time, as Resilience4j's `transitionTo…State`); switching it off closes the breaker.
//!
//! Key design decision: like Resilience4j, a result is recorded into the metrics of the
//! state current when it *arrives*, whatever state admitted the call (a slow call admitted
//! while CLOSED can decide a HALF_OPEN episode). Likewise an ignored error gives a permit
//! back unconditionally while HALF_OPEN (`CircuitBreakerStateMachine.onError` →
//! `releasePermission()` → `HalfOpenState.releasePermission`:
//! `permittedNumberOfCalls.incrementAndGet()`), even for a call admitted while CLOSED or in
//! an earlier episode, so the permits can exceed the configured count; an abandoned call
//! gives back only the permit it holds. Durations are Resilience4j's whole milliseconds:
//! the OPEN wait is `waitDurationInOpenState.toMillis()`, and the HALF_OPEN timer is set only
//! when `maxWaitDurationInHalfOpenState.toMillis() >= 1` (`HalfOpenState`'s constructor).
//!
//! Architecture invariant: `permits_left` + the episode's probes in flight ≤ `permitted` of
//! the episode + the permits ignored errors gave back in it; waiters exist only
//! in HALF_OPEN and only while `permits_left = 0`; every admitted call is in `in_flight`
//! (≤ [`super::MAX_IN_FLIGHT`]) until its outcome or abandon.
//!
//! API boundary: a [`Governor`]; the setters change thresholds at run time and keep the
//! window (wait and half-open settings apply from the next transition).

use super::priority_wait::PriorityWaitList;
use super::r4j_spec::{CircuitBreakerSpec, SlidingWindowType, StateAfterMaxWait, open_wait};
use super::r4j_window::{Snapshot, Window, verdict};
use super::{BreakerState, Classified, MAX_IN_FLIGHT, classify, state_event};
use crate::governor::{CallDecision, CallInfo, GovEvent, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use crate::slotmap::CallMap;
use sim_core::time::NS_PER_MS;
use sim_core::{SimDuration, SimTime};

#[derive(Clone, Copy, Debug)]
struct Flight {
    start: SimTime,
    /// The HALF_OPEN episode whose probe permit this call holds.
    probe: Option<u64>,
}

/// Counters worth exposing (stable names in the field names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BreakerCounters {
    pub permitted: u64,
    pub not_permitted: u64,
    /// `not_permitted` by the state that refused (index [`BreakerState::gauge`]; time series).
    pub not_permitted_in: [u64; 6],
    pub successful: u64,
    pub failed: u64,
    pub slow: u64,
    pub ignored: u64,
    pub abandoned: u64,
    pub state_changes: u64,
}

/// Run-time state of a Resilience4j circuit breaker.
#[derive(Clone, Debug)]
pub struct CircuitBreaker {
    spec: CircuitBreakerSpec,
    state: BreakerState,
    metrics: Window,
    attempts: u32,
    open_until: SimTime,
    half_open_deadline: Option<SimTime>,
    permits_left: u64,
    /// Probe permits of the current HALF_OPEN episode (the setting when it began).
    episode_permitted: u64,
    /// Permits given back in this episode by ignored errors of calls holding none.
    episode_released: u64,
    episode: u64,
    in_flight: CallMap<Flight>,
    waiters: PriorityWaitList,
    woken: Vec<CallId>,
    answered: Vec<(CallId, Outcome)>,
    events: Vec<GovEvent>,
    /// Something the world's hand-off reads (state, window totals, refusals by state,
    /// `wake_at`, events) may have changed since [`Governor::take_changed`]: set by
    /// `transition`, `record` (when the totals move), `not_permitted` and the
    /// automatic-transition switch, the only writers of
    /// those (besides the window replacements, each followed by a transition).
    changed: bool,
    pub counters: BreakerCounters,
}

impl CircuitBreaker {
    pub fn new(spec: &CircuitBreakerSpec) -> Self {
        assert!(spec.failure_rate_threshold > 0.0 && spec.failure_rate_threshold <= 100.0);
        assert!(spec.slow_call_rate_threshold > 0.0 && spec.slow_call_rate_threshold <= 100.0);
        assert!(spec.permitted_number_of_calls_in_half_open_state >= 1);
        assert!(spec.minimum_number_of_calls >= 1 && spec.sliding_window_size >= 1);
        assert!(spec.wait_duration_in_open_state.0 >= NS_PER_MS);
        let max_waiting = spec.half_open_wait.as_ref().map_or(0, |w| w.max_waiting as usize);
        CircuitBreaker {
            metrics: closed_window(spec),
            spec: spec.clone(),
            state: special_state(spec).unwrap_or(BreakerState::Closed),
            attempts: 0,
            open_until: SimTime::ZERO,
            half_open_deadline: None,
            permits_left: 0,
            episode_permitted: 0,
            episode_released: 0,
            episode: 0,
            in_flight: CallMap::new(),
            waiters: PriorityWaitList::new(max_waiting),
            woken: Vec::new(),
            answered: Vec::new(),
            events: Vec::new(),
            // The first hand-off publishes the initial state (a special state is not 0).
            changed: true,
            counters: BreakerCounters::default(),
        }
    }

    pub fn state(&self) -> BreakerState {
        self.state
    }
    /// The current settings (with run-time changes applied).
    pub fn spec(&self) -> &CircuitBreakerSpec {
        &self.spec
    }
    /// The metrics of the current state (gauges: calls, failure and slow rates).
    pub fn snapshot(&self) -> Snapshot {
        self.metrics.snapshot()
    }
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
    pub fn half_open_permits_left(&self) -> u64 {
        self.permits_left
    }
    /// Asserts the internal invariants (tests, the world's end-of-run checks).
    pub fn check_invariants(&self) {
        let probes =
            self.in_flight.values_unordered().filter(|f| f.probe == Some(self.episode)).count();
        match self.state {
            BreakerState::HalfOpen => {
                let bound = self.episode_permitted + self.episode_released;
                assert!(self.permits_left + probes as u64 <= bound);
                assert!(self.waiters.is_empty() || self.permits_left == 0);
            }
            _ => assert!(self.permits_left == 0 && self.waiters.is_empty()),
        }
        assert!(self.in_flight.len() <= MAX_IN_FLIGHT);
        assert!(self.woken.iter().all(|c| self.in_flight.contains_key(c)));
    }
    /// End of the current OPEN wait (meaningful while OPEN).
    pub fn open_until(&self) -> SimTime {
        self.open_until
    }

    pub fn set_failure_rate_threshold(&mut self, pct: f64) {
        assert!(pct > 0.0 && pct <= 100.0);
        self.spec.failure_rate_threshold = pct;
    }
    pub fn set_slow_call_rate_threshold(&mut self, pct: f64) {
        assert!(pct > 0.0 && pct <= 100.0);
        self.spec.slow_call_rate_threshold = pct;
    }
    pub fn set_slow_call_duration_threshold(&mut self, d: SimDuration) {
        assert!(d > SimDuration::ZERO);
        self.spec.slow_call_duration_threshold = d;
    }
    pub fn set_minimum_number_of_calls(&mut self, n: u64) {
        assert!(n >= 1);
        self.spec.minimum_number_of_calls = n;
    }
    /// Applies from the next opening.
    pub fn set_wait_duration_in_open_state(&mut self, d: SimDuration) {
        assert!(d.0 >= NS_PER_MS);
        self.spec.wait_duration_in_open_state = d;
    }
    /// Applies from the next HALF_OPEN episode.
    pub fn set_permitted_number_of_calls_in_half_open_state(&mut self, n: u64) {
        assert!(n >= 1);
        self.spec.permitted_number_of_calls_in_half_open_state = n;
    }
    /// Applies from the next HALF_OPEN episode.
    pub fn set_max_wait_duration_in_half_open_state(&mut self, d: SimDuration) {
        self.spec.max_wait_duration_in_half_open_state = d;
    }
    /// Read when the maximum wait in HALF_OPEN elapses: applies to the episode in progress.
    pub fn set_transition_after_max_wait(&mut self, s: StateAfterMaxWait) {
        self.spec.transition_to_state_after_wait_duration = s;
    }
    pub fn set_automatic_transition(&mut self, on: bool) {
        self.spec.automatic_transition_from_open_to_half_open_enabled = on;
        self.changed = true; // `wake_at` reads it
    }
    /// Switches the breaker off (FORCED_OPEN; waiters are answered `breaker_open`) or back
    /// on (CLOSED, fresh metrics, open-wait attempts reset).
    pub fn set_forced_open(&mut self, on: bool, now: SimTime) {
        self.set_special(BreakerState::ForcedOpen, on, now);
    }
    /// DISABLED on or off (`transitionToDisabledState` / `transitionToClosedState`).
    pub fn set_disabled(&mut self, on: bool, now: SimTime) {
        self.set_special(BreakerState::Disabled, on, now);
    }
    /// METRICS_ONLY on or off (`transitionToMetricsOnlyState` / `transitionToClosedState`).
    pub fn set_metrics_only(&mut self, on: bool, now: SimTime) {
        self.set_special(BreakerState::MetricsOnly, on, now);
    }

    /// Puts the breaker in `to` at `now`, as Resilience4j's `transitionToClosedState()`
    /// (fresh metrics, open-wait attempts reset, HALF_OPEN waiters let through),
    /// `transitionToOpenState()` (attempts + 1, so an exponential open wait grows; HALF_OPEN
    /// waiters refused), `transitionToHalfOpenState()` (a new probe episode) and
    /// `transitionTo{ForcedOpen,Disabled,MetricsOnly}State()`. Leaving a special state
    /// this way clears it. Already in `to`: nothing happens (no event).
    pub fn transition_to_state(&mut self, to: BreakerState, now: SimTime) {
        if self.state == to {
            return;
        }
        let special = [BreakerState::ForcedOpen, BreakerState::Disabled, BreakerState::MetricsOnly];
        if special.contains(&to) {
            return self.set_special(to, true, now);
        }
        (self.spec.forced_open, self.spec.disabled, self.spec.metrics_only) = (false, false, false);
        match to {
            BreakerState::Closed => self.enter_closed(now),
            BreakerState::Open => self.enter_open(now),
            // Waiters exist only in HALF_OPEN, which this is not: none to admit.
            _ => self.enter_half_open(now),
        }
    }

    /// Switches one of the special states on (leaving the others off) or off (→ CLOSED
    /// with fresh metrics, if the breaker is in it).
    fn set_special(&mut self, which: BreakerState, on: bool, now: SimTime) {
        let flag = |s: &mut CircuitBreakerSpec, st: BreakerState, v: bool| match st {
            BreakerState::ForcedOpen => s.forced_open = v,
            BreakerState::Disabled => s.disabled = v,
            _ => s.metrics_only = v,
        };
        if on {
            for st in [BreakerState::ForcedOpen, BreakerState::Disabled, BreakerState::MetricsOnly]
            {
                flag(&mut self.spec, st, st == which);
            }
        } else {
            flag(&mut self.spec, which, false);
        }
        match (on, self.state == which) {
            (true, true) => {}
            (false, true) => self.enter_closed(now),
            (false, false) => {} // not in it: nothing to undo
            (true, false) => {
                self.permits_left = 0;
                self.half_open_deadline = None;
                // Waiters exist only in HALF_OPEN: refused (FORCED_OPEN) or let through.
                while let Some(c) = self.waiters.pop() {
                    if which == BreakerState::ForcedOpen {
                        self.answered.push((c, Outcome::Rejected(Reason::BreakerOpen)));
                    } else {
                        self.admit(c, now, None);
                        self.woken.push(c);
                    }
                }
                if which != BreakerState::ForcedOpen {
                    // `DisabledState` / `MetricsOnlyState` start fresh metrics.
                    self.metrics = closed_window(&self.spec);
                }
                self.transition(which, now);
            }
        }
    }

    fn admit(&mut self, call: CallId, now: SimTime, probe: Option<u64>) {
        assert!(self.in_flight.len() < MAX_IN_FLIGHT, "breaker tracks too many calls in flight");
        let prev = self.in_flight.insert(call, Flight { start: now, probe });
        assert!(prev.is_none(), "call {call:?} admitted twice by one breaker");
        self.counters.permitted += 1;
    }

    fn transition(&mut self, to: BreakerState, now: SimTime) {
        let from = self.state;
        assert_ne!(from, to);
        self.state = to;
        self.changed = true;
        self.counters.state_changes += 1;
        self.events.push(state_event(now, from, to));
    }

    fn enter_open(&mut self, now: SimTime) {
        let from = self.state;
        self.attempts = self.attempts.saturating_add(1);
        self.open_until = now + open_wait(&self.spec, self.attempts);
        self.half_open_deadline = None;
        self.permits_left = 0;
        self.transition(BreakerState::Open, now);
        if from == BreakerState::HalfOpen {
            while let Some(c) = self.waiters.pop() {
                self.answered.push((c, Outcome::Rejected(Reason::BreakerOpen)));
            }
        }
        // The metrics are carried into OPEN (as Resilience4j does) but never checked there.
    }

    fn enter_half_open(&mut self, now: SimTime) {
        let permitted = self.spec.permitted_number_of_calls_in_half_open_state;
        self.episode += 1;
        self.permits_left = permitted;
        self.episode_permitted = permitted;
        self.episode_released = 0;
        self.metrics = Window::count(permitted);
        // `maxWaitDurationInHalfOpenState.toMillis()`, a timer only from 1 ms.
        let max_wait_ms = self.spec.max_wait_duration_in_half_open_state.0 / NS_PER_MS;
        self.half_open_deadline =
            (max_wait_ms >= 1).then(|| now + SimDuration(max_wait_ms * NS_PER_MS));
        self.transition(BreakerState::HalfOpen, now);
    }

    fn enter_closed(&mut self, now: SimTime) {
        self.attempts = 0;
        self.metrics = closed_window(&self.spec);
        self.half_open_deadline = None;
        self.permits_left = 0;
        self.transition(BreakerState::Closed, now);
        while let Some(c) = self.waiters.pop() {
            self.admit(c, now, None);
            self.woken.push(c);
        }
    }

    /// A probe permit of the current episode comes back: to the best waiter, if any.
    fn give_back(&mut self, f: Flight, now: SimTime) {
        if self.state != BreakerState::HalfOpen || f.probe != Some(self.episode) {
            return;
        }
        self.permits_left += 1;
        assert!(self.permits_left <= self.episode_permitted + self.episode_released);
        if let Some(c) = self.waiters.pop() {
            self.permits_left -= 1;
            self.admit(c, now, Some(self.episode));
            self.woken.push(c);
        }
    }

    fn record(&mut self, failed: bool, slow: bool, now: SimTime) {
        if matches!(self.state, BreakerState::ForcedOpen | BreakerState::Disabled) {
            return; // Resilience4j's ForcedOpenState and DisabledState record nothing
        }
        let before = self.metrics.snapshot();
        let snap = self.metrics.record(failed, slow, now);
        // A full window whose newest result equals the one it drops shows the same totals:
        // nothing to republish.
        self.changed |= snap != before;
        if matches!(self.state, BreakerState::Open | BreakerState::MetricsOnly) {
            return; // recorded (as Resilience4j does) but never checked
        }
        // CLOSED: capped at the window for COUNT_BASED only; HALF_OPEN: the window is
        // COUNT_BASED of `permitted`, so min(minimum, permitted).
        let min = self.metrics.effective_minimum(self.spec.minimum_number_of_calls);
        let v = verdict(
            &snap,
            min,
            self.spec.failure_rate_threshold as f32,
            self.spec.slow_call_rate_threshold as f32,
        );
        if v.exceeded() {
            self.enter_open(now);
        } else if self.state == BreakerState::HalfOpen
            && v == super::r4j_window::Verdict::BelowThresholds
        {
            self.enter_closed(now);
        }
    }
}

/// The special state a spec starts in, if any (FORCED_OPEN first).
fn special_state(spec: &CircuitBreakerSpec) -> Option<BreakerState> {
    [
        (spec.forced_open, BreakerState::ForcedOpen),
        (spec.disabled, BreakerState::Disabled),
        (spec.metrics_only, BreakerState::MetricsOnly),
    ]
    .into_iter()
    .find_map(|(on, st)| on.then_some(st))
}

fn closed_window(spec: &CircuitBreakerSpec) -> Window {
    match spec.sliding_window_type {
        SlidingWindowType::CountBased => Window::count(spec.sliding_window_size),
        SlidingWindowType::TimeBased => Window::time(spec.sliding_window_size),
    }
}

impl CircuitBreaker {
    /// Counts a refusal, in total and by the current state.
    fn not_permitted(&mut self) {
        self.changed = true;
        self.counters.not_permitted += 1;
        self.counters.not_permitted_in[self.state.gauge() as usize] += 1;
    }
}

impl Governor for CircuitBreaker {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        if self.state == BreakerState::ForcedOpen {
            self.not_permitted();
            return CallDecision::Reject(Reason::BreakerOpen);
        }
        if self.state == BreakerState::Open {
            if now > self.open_until {
                self.enter_half_open(now);
            } else {
                self.not_permitted();
                return CallDecision::Reject(Reason::BreakerOpen);
            }
        }
        match self.state {
            BreakerState::Closed | BreakerState::Disabled | BreakerState::MetricsOnly => {
                self.admit(call.call, now, None);
                CallDecision::Pass
            }
            BreakerState::HalfOpen if self.permits_left > 0 => {
                assert!(self.waiters.is_empty(), "a free permit while calls wait");
                self.permits_left -= 1;
                self.admit(call.call, now, Some(self.episode));
                CallDecision::Pass
            }
            _ => {
                if let Some(w) = &self.spec.half_open_wait {
                    let deadline = now + w.max_wait;
                    if self.waiters.push(call.class, call.call) {
                        return CallDecision::Wait {
                            deadline: Some(deadline),
                            on_deadline: Reason::BreakerOpen,
                        };
                    }
                }
                self.not_permitted();
                CallDecision::Reject(Reason::BreakerOpen)
            }
        }
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        let f = self
            .in_flight
            .remove(&call.call)
            .expect("outcome of a call this breaker did not admit");
        let duration = now.since(f.start);
        let slow = duration > self.spec.slow_call_duration_threshold;
        match classify(&self.spec.record_exceptions, &self.spec.ignore_exceptions, outcome) {
            Classified::Ignored => {
                self.counters.ignored += 1;
                if self.state == BreakerState::HalfOpen && f.probe != Some(self.episode) {
                    // `releasePermission()` whatever permit the call held (module doc).
                    self.episode_released += 1;
                    self.give_back(Flight { probe: Some(self.episode), ..f }, now);
                } else {
                    self.give_back(f, now);
                }
            }
            c => {
                let failed = c == Classified::Failure;
                if failed {
                    self.counters.failed += 1;
                } else {
                    self.counters.successful += 1;
                }
                self.counters.slow += slow as u64;
                self.record(failed, slow, now);
            }
        }
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, now: SimTime) {
        if self.waiters.remove(call.call) {
            return;
        }
        // Admitted (woken, or passed and cancelled): forget it and give its permit back.
        let f = self.in_flight.remove(&call.call).expect("abandoned call unknown to this breaker");
        self.woken.retain(|c| *c != call.call);
        self.counters.abandoned += 1;
        self.give_back(f, now);
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
        match self.state {
            BreakerState::Open if self.spec.automatic_transition_from_open_to_half_open_enabled => {
                Some(self.open_until)
            }
            BreakerState::HalfOpen => self.half_open_deadline,
            _ => None,
        }
    }

    fn on_wake(&mut self, now: SimTime) {
        match self.state {
            BreakerState::Open
                if self.spec.automatic_transition_from_open_to_half_open_enabled
                    && now >= self.open_until =>
            {
                self.enter_half_open(now)
            }
            BreakerState::HalfOpen if self.half_open_deadline.is_some_and(|d| now >= d) => {
                match self.spec.transition_to_state_after_wait_duration {
                    StateAfterMaxWait::Open => self.enter_open(now),
                    StateAfterMaxWait::Closed => self.enter_closed(now),
                }
            }
            _ => {} // a stale timer: the state moved on
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
