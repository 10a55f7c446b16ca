//! Shadow mode: a governor that records what another governor *would* have done to each
//! call — reject it, park it, answer it from a cache — without acting on any call.
//!
//! A scenario puts a shadow in a call-site stack by wrapping any reference:
//! `governors: [Shadow(CircuitBreaker("llm-cb")), Gate("llm")]`. The shadowed governor is a
//! *separate copy* of the declared one, built from the same declaration into its own arena
//! slot under the component path `shadow.<kind>.<name>` (shared, like any governor, by every
//! stack that names the same shadow), so the real instance (if any stack uses it) is never
//! touched. Run-time changes of `<kind>.<name>.<param>` apply to the real instance and to its
//! shadow copy alike: the declaration is the configuration.
//!
//! Key design decision: the wrapper always answers `Pass`, asks its inner governor first, and
//! feeds the inner governor the real outcomes of the calls the inner governor admitted — so
//! a shadow breaker opens, probes and closes on the real traffic, exactly like the real one
//! would up to the first moment it would have acted. What the inner governor would have done
//! is counted (`would_pass`, `would_reject`, `would_wait`, `would_serve_locally`,
//! `would_change_outcome`) and marked in `events.parquet`. A verdict of `Wait` is cancelled
//! at once (`on_abandon`): a shadow never holds a call, a permit or a place in a queue, and
//! such a call counts as not admitted (its outcome is not fed to the inner governor). Calls
//! the inner governor wakes or answers are discarded, never forwarded.
//!
//! Events (bounded): the wrapper emits `shadow_reject` (`from: "pass"`, `to: <reason>`) and
//! `shadow_wait` (`from: "pass"`, `to: <reason on deadline>`) at most once per simulated
//! second per kind (a would-be refusal is marked when none was marked in the second before
//! it; the summary holds the exact totals), so a shadow adds at most two rows per second plus its inner
//! governor's own state changes. Those pass through with their kind prefixed by `shadow:`
//! (`shadow:state_change`, `shadow:rule_reload`; an unknown kind becomes `shadow:other`
//! with `from` prefixed by the original kind), under the component `shadow.<kind>.<name>`.
//!
//! Timers: a shadow has no timer of its own (`wake_at` is always `None`): a timer would be
//! an engine event and change the run's event fingerprint. The inner governor's timers run
//! lazily: before every interaction with the inner governor at time `now`, each wake-up
//! it asked for at or before `now` is delivered at its own time (`on_wake(t)`), so its state
//! is exactly what it would be with a timer; only its events may reach the world later than
//! events of other components stamped after them (every row carries its own time).
//!
//! Architecture invariant: a shadow changes nothing outside itself: every decision it returns
//! is `Pass` / `PassUp(the outcome it received)`, it parks nothing, wakes nothing, answers
//! nothing and schedules nothing, and draws no random number (its inner governor gets the
//! same [`CallInfo`], whose `draw` is the call's own bits). The calls its inner governor
//! admitted are tracked in a bounded set until their outcome arrives.
//!
//! API boundary: generic over the governor it wraps (the world's `GovernorKind`, so this
//! module does not depend on the kind set); the world sees a shadow as any other governor; the scenario check
//! refuses `Shadow(Retry(..))`, `Shadow(Batcher(..))`, `Shadow(TimeLimiter(..))` and
//! nested shadows
//! (`scenario::govref::check_shadowable`); the summary reads [`Shadow::would_counters`] through
//! `GovernorKind::summary_counters`.

use crate::governor::{CallDecision, CallInfo, GovEvent, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::Outcome;
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeSet;

/// Bound on the calls a shadow's inner governor admitted and still awaits the outcome of
/// (as the breakers' own bound: exceeding it is a bug in the world).
pub const MAX_IN_FLIGHT: usize = 1 << 24;
/// Bound on events buffered between two drains by the world (it drains after every
/// interaction; the inner governor emits a handful per interaction at most).
const MAX_BUFFERED_EVENTS: usize = 1 << 16;
/// Bound on the inner governor's wake-ups delivered in one catch-up.
const MAX_CATCH_UP: u32 = 1 << 16;
/// At most one `shadow_reject` (and one `shadow_wait`) event per this much simulated time.
pub const EVENT_INTERVAL: SimDuration = SimDuration(1_000_000_000);

/// What the inner governor would have done, counted over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShadowCounters {
    /// Calls the inner governor let through.
    pub would_pass: u64,
    /// Calls it would have refused.
    pub would_reject: u64,
    /// Calls it would have parked (cancelled at once).
    pub would_wait: u64,
    /// Calls it would have answered itself (cache hit, fallback).
    pub would_serve_locally: u64,
    /// Outcomes it would have transformed on the way up (e.g. failed → stale cache hit).
    pub would_change_outcome: u64,
}

/// The shadow wrapper (see the module documentation).
#[derive(Clone, Debug)]
pub struct Shadow<G> {
    inner: Box<G>,
    /// Calls the inner governor admitted whose outcome it has not seen yet.
    admitted: BTreeSet<CallId>,
    pub counters: ShadowCounters,
    /// When the last `shadow_reject` / `shadow_wait` event was emitted.
    last_event: [Option<SimTime>; 2],
    events: Vec<GovEvent>,
    scratch_woken: Vec<CallId>,
    scratch_answered: Vec<(CallId, Outcome)>,
}

impl<G: Governor> Shadow<G> {
    /// Wraps a fresh copy of a declared governor.
    /// The caller checked that the kind is shadowable (`GovernorKind::shadowable`).
    pub fn new(inner: G) -> Self {
        Shadow {
            inner: Box::new(inner),
            admitted: BTreeSet::new(),
            counters: ShadowCounters::default(),
            last_event: [None, None],
            events: Vec::new(),
            scratch_woken: Vec::new(),
            scratch_answered: Vec::new(),
        }
    }

    /// The wrapper's would-verdict counters (the world appends the inner governor's own).
    pub fn would_counters(&self) -> Vec<(&'static str, u64)> {
        let c = self.counters;
        let v = vec![
            ("would_pass", c.would_pass),
            ("would_reject", c.would_reject),
            ("would_wait", c.would_wait),
            ("would_serve_locally", c.would_serve_locally),
            ("would_change_outcome", c.would_change_outcome),
        ];
        v
    }

    pub fn inner(&self) -> &G {
        &self.inner
    }

    /// For run-time parameter changes (the caller drains events afterwards, as for any
    /// governor).
    pub fn inner_mut(&mut self) -> &mut G {
        &mut self.inner
    }

    /// Calls whose outcome the inner governor awaits.
    pub fn admitted(&self) -> usize {
        self.admitted.len()
    }

    /// Delivers the inner governor's wake-ups due at or before `now`, each at its own time.
    fn catch_up(&mut self, now: SimTime) {
        let mut n = 0;
        while let Some(t) = self.inner.wake_at().filter(|&t| t <= now) {
            n += 1;
            assert!(n <= MAX_CATCH_UP, "shadow catch-up loop");
            self.inner.on_wake(t);
            self.settle();
            if self.inner.wake_at().is_some_and(|t2| t2 <= t) {
                // No progress at its own time: deliver `now` once and stop.
                self.inner.on_wake(now);
                self.settle();
                break;
            }
        }
    }

    /// After any interaction with the inner governor: discard what it woke or answered
    /// (a shadow holds no parked call) and collect its events.
    fn settle(&mut self) {
        self.inner.take_woken(&mut self.scratch_woken);
        self.inner.take_answered(&mut self.scratch_answered);
        self.scratch_woken.clear();
        self.scratch_answered.clear();
        let mut evs = Vec::new();
        self.inner.take_events(&mut evs);
        self.events.extend(evs.into_iter().map(prefixed));
        assert!(self.events.len() <= MAX_BUFFERED_EVENTS, "shadow events are drained");
    }

    fn mark(&mut self, which: usize, now: SimTime, kind: &'static str, to: &'static str) {
        let due = self.last_event[which].is_none_or(|t| now >= t + EVENT_INTERVAL);
        if due {
            self.last_event[which] = Some(now);
            self.events.push(GovEvent {
                time: now,
                kind,
                from: "pass".into(),
                to: to.into(),
                closed: None,
            });
        }
    }
}

/// An inner governor's event under the shadow's name.
fn prefixed(e: GovEvent) -> GovEvent {
    let kind = match e.kind {
        "state_change" => "shadow:state_change",
        "rule_reload" => "shadow:rule_reload",
        "config_change" => "shadow:config_change",
        other => {
            return GovEvent {
                kind: "shadow:other",
                from: format!("{other}: {}", e.from),
                closed: None,
                ..e
            };
        }
    };
    // A shadow's breaker never moves an app's health.
    GovEvent { kind, closed: None, ..e }
}

impl<G: Governor> Governor for Shadow<G> {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        self.catch_up(now);
        match self.inner.on_call(call, now) {
            CallDecision::Pass => {
                self.counters.would_pass += 1;
                let fresh = self.admitted.insert(call.call);
                assert!(fresh, "a call passes a level once per descent");
                assert!(self.admitted.len() <= MAX_IN_FLIGHT, "shadow in-flight bound");
            }
            CallDecision::Wait { on_deadline, .. } => {
                self.counters.would_wait += 1;
                self.inner.on_abandon(call, now);
                self.mark(1, now, "shadow_wait", on_deadline.name());
            }
            CallDecision::ServeLocally(_) => self.counters.would_serve_locally += 1,
            // A forking kind is refused in shadow mode (`GovernorSpec::NOT_SHADOWABLE`).
            CallDecision::Fork => unreachable!("a hedging governor is never shadowed"),
            CallDecision::Reject(r) => {
                self.counters.would_reject += 1;
                self.mark(0, now, "shadow_reject", r.name());
            }
        }
        self.settle();
        CallDecision::Pass
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        if self.admitted.remove(&call.call) {
            self.catch_up(now);
            match self.inner.on_outcome(call, outcome, now) {
                OutcomeDecision::PassUp(o) => {
                    if o != outcome {
                        self.counters.would_change_outcome += 1;
                    }
                }
                OutcomeDecision::RetryAfter(_) => {
                    unreachable!("checked: a shadowed governor never retries")
                }
            }
            self.settle();
        }
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, _call: &CallInfo, _now: SimTime) {
        unreachable!("a shadow never parks a call")
    }
    fn take_woken(&mut self, _out: &mut Vec<CallId>) {}
    fn waiting(&self) -> usize {
        0
    }
    fn take_events(&mut self, out: &mut Vec<GovEvent>) {
        // Run-time changes reach the inner governor directly: collect what they emitted.
        self.settle();
        out.append(&mut self.events);
    }
}

#[cfg(test)]
#[path = "shadow_tests.rs"]
mod tests;
