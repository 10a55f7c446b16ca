//! A fixed concurrency gate (a semaphore at the convergence point, docs/domain.md §3.5).
//!
//! `permits` calls may be past the gate at once. A call that finds no permit waits up to
//! `acquire_timeout` (Java's `tryAcquire(timeout)`) in FIFO order, or is rejected at once
//! when the timeout is zero (fail fast to the fallback).
//!
//! Fair (`fair: true`, the default; `new Semaphore(n, true)`): a released permit is handed
//! directly to the oldest waiter, so a newcomer can never overtake a waiter.
//!
//! Non-fair (`fair: false`; `new Semaphore(n)`, the JDK's default): `NonfairSync` acquires by
//! `nonfairTryAcquireShared` — a compare-and-set on the free count that never looks at the
//! queue — and `releaseShared` adds the permit to the count and then unparks the queue's
//! head (`AbstractQueuedSynchronizer.signalNext`), which retries only once the OS has
//! scheduled it. What matters in a discrete-event model is that window: a call arriving
//! between the release and the waiter's wake-up takes the permit (barging), and the woken
//! waiter, finding none, parks again at the head of the queue. The window is
//! `wake_latency` (default 50 µs, the order of a futex wake-up of a parked thread on a busy
//! Linux host; zero keeps barging to calls arriving at the release's own instant, which
//! the engine's phase order puts before the wake-up). Each release with waiters signals one
//! more waiter than are already signalled (at most one per free permit), in queue order; the
//! JDK propagates the wake-ups one after another (each woken thread wakes the next), the
//! model starts them side by side.
//!
//! Architecture invariant: `in_use ≤ max(permits, in_use at the last decrease)`, and every
//! permit granted is returned exactly once (on the outcome, or on abandon for waiters that
//! never got one). Lowering `permits` at run time never revokes a permit in use: new calls
//! wait until `in_use` falls below the new limit.

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// Configuration of a gate, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Gate")]
pub struct GateSpec {
    /// Name; the gate's parameters live under `gate.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Maximum concurrent calls past the gate (≥ 1).
    #[serde(deserialize_with = "crate::params::Ranged::<GateSpec>::permits")]
    pub permits: u64,
    /// How long a call waits for a permit; `"0s"` fails fast.
    #[serde(default = "D::acquire_timeout")]
    pub acquire_timeout: SimDuration,
    /// Bound on calls waiting for a permit; beyond it calls are rejected at once.
    #[serde(default = "D::max_waiting")]
    pub max_waiting: u64,
    /// FIFO hand-over (`new Semaphore(n, true)`); `false`: the JDK's default non-fair
    /// semaphore (barging during the waiter's wake-up).
    #[serde(default = "D::fair", skip_serializing_if = "is_true")]
    pub fair: bool,
    /// Non-fair only: from a release until the signalled waiter retries.
    #[serde(default = "D::wake_latency", skip_serializing_if = "is_default_wake")]
    pub wake_latency: SimDuration,
}

fn is_true(b: &bool) -> bool {
    *b
}
fn is_default_wake(d: &SimDuration) -> bool {
    *d == D::wake_latency()
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<GateSpec>;

/// Run-time state of a gate.
#[derive(Clone, Debug)]
pub struct Gate {
    permits: u64,
    acquire_timeout: SimDuration,
    max_waiting: u64,
    in_use: u64,
    waiters: VecDeque<CallId>,
    woken: Vec<CallId>,
    fair: bool,
    wake_latency: SimDuration,
    /// Non-fair: when each signalled waiter retries, in queue order (≤ waiters).
    signals: VecDeque<SimTime>,
    /// Non-fair: `signals` changed since the world last looked (`take_changed`).
    changed: bool,
    /// Permits granted and returned, for the conservation invariant.
    pub granted: u64,
    pub returned: u64,
}

impl Gate {
    pub fn new(spec: &GateSpec) -> Self {
        assert!(spec.permits >= 1, "validated: permits ≥ 1");
        Gate {
            permits: spec.permits,
            acquire_timeout: spec.acquire_timeout,
            max_waiting: spec.max_waiting,
            in_use: 0,
            waiters: VecDeque::new(),
            woken: Vec::new(),
            fair: spec.fair,
            wake_latency: spec.wake_latency,
            signals: VecDeque::new(),
            changed: false,
            granted: 0,
            returned: 0,
        }
    }

    pub fn in_use(&self) -> u64 {
        self.in_use
    }
    pub fn permits(&self) -> u64 {
        self.permits
    }
    pub fn acquire_timeout(&self) -> SimDuration {
        self.acquire_timeout
    }

    /// Run-time change of the permit count; raising it wakes waiters (non-fair: signals
    /// them).
    pub fn set_permits(&mut self, permits: u64, now: SimTime) {
        assert!(permits >= 1);
        self.permits = permits;
        self.release_to_waiters(now);
    }
    pub fn set_acquire_timeout(&mut self, d: SimDuration) {
        self.acquire_timeout = d;
    }
    pub fn set_wake_latency(&mut self, d: SimDuration) {
        self.wake_latency = d;
    }

    /// Free permits go to the waiters: handed over (fair) or signalled (non-fair).
    fn release_to_waiters(&mut self, now: SimTime) {
        if self.fair {
            self.hand_over();
            return;
        }
        let free = self.permits.saturating_sub(self.in_use);
        while self.signals.len() < self.waiters.len() && (self.signals.len() as u64) < free {
            self.signals.push_back(now + self.wake_latency);
            self.changed = true;
        }
    }

    fn hand_over(&mut self) {
        while self.in_use < self.permits {
            let Some(next) = self.waiters.pop_front() else { break };
            self.in_use += 1;
            self.granted += 1;
            self.woken.push(next);
        }
    }
}

impl Governor for Gate {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        // Fair: a free permit with waiters cannot be (handed over at once); non-fair: one
        // free during a waiter's wake-up is taken (barging).
        if self.in_use < self.permits && (self.waiters.is_empty() || !self.fair) {
            self.in_use += 1;
            self.granted += 1;
            return CallDecision::Pass;
        }
        if self.acquire_timeout == SimDuration::ZERO
            || self.waiters.len() as u64 >= self.max_waiting
        {
            return CallDecision::Reject(Reason::GateFull);
        }
        self.waiters.push_back(call.call);
        CallDecision::Wait {
            deadline: Some(now + self.acquire_timeout),
            on_deadline: Reason::GateFull,
        }
    }

    fn on_outcome(&mut self, _call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        assert!(self.in_use > 0, "gate released more permits than it granted");
        self.in_use -= 1;
        self.returned += 1;
        self.release_to_waiters(now);
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, now: SimTime) {
        if let Some(pos) = self.waiters.iter().position(|c| *c == call.call) {
            self.waiters.remove(pos);
            // Non-fair: a signal outlives no waiter (the earliest are kept).
            if self.signals.len() > self.waiters.len() {
                self.signals.truncate(self.waiters.len());
                self.changed = true;
            }
        } else {
            // Woken in the same instant but not yet resumed: give the permit back.
            let pos = self.woken.iter().position(|c| *c == call.call);
            assert!(pos.is_some(), "abandoned call was not parked at this gate");
            self.woken.remove(pos.expect("checked"));
            self.in_use -= 1;
            self.returned += 1;
            self.release_to_waiters(now);
        }
    }

    /// Non-fair: the earliest signalled waiter's retry.
    fn wake_at(&self) -> Option<SimTime> {
        self.signals.front().copied()
    }

    /// Non-fair: each signalled waiter due retries — the head takes a free permit, or (a
    /// newcomer took it) parks again, still the head.
    fn on_wake(&mut self, now: SimTime) {
        while self.signals.front().is_some_and(|&t| t <= now) {
            self.signals.pop_front();
            self.changed = true;
            if self.in_use < self.permits
                && let Some(next) = self.waiters.pop_front()
            {
                self.in_use += 1;
                self.granted += 1;
                self.woken.push(next);
            }
        }
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }

    fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// No events, no series (its gauges are read after every step anyway); a timer only
    /// when non-fair.
    fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    fn has_released(&self) -> bool {
        !self.woken.is_empty()
    }
}

crate::params::declare_params! {
    GateSpec: "gate", name = |s| s.name, state = Gate;
    permits: Count { min: 1, max: 10_000_000 }, "permits",
        runtime(apply = |g, n, now| g.set_permits(n, now)), "concurrent calls allowed past the gate";
    acquire_timeout: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) },
        "ns",
        runtime(apply = |g, d| g.set_acquire_timeout(d)),
        "how long a call waits for a permit (0 = fail fast)", default = SimDuration::ZERO;
    max_waiting: Count { min: 0, max: 100_000_000 }, "calls", fixed,
        "bound on calls waiting for a permit", default = 100_000;
    fair: Bool, "", fixed,
        "FIFO hand-over (new Semaphore(n, true)); false: the JDK's default non-fair semaphore, newcomers barge during a waiter's wake-up",
        default = true;
    wake_latency: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(1) }, "ns",
        runtime(apply = |g, d| g.set_wake_latency(d)),
        "non-fair only: from a release until the signalled waiter retries (a parked thread's wake-up)",
        default = SimDuration::from_us(50), opt_get = |s| (!s.fair).then_some(s.wake_latency);
}

impl crate::params::GovernorSpec for GateSpec {
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::GateFull]
    }
}

impl crate::governor::GovernorKindOps for Gate {
    type Spec = GateSpec;
    fn build(spec: &GateSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        Gate::new(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(i: u64) -> CallInfo {
        CallInfo::simple(i, 0)
    }

    /// Scripted: permits 2, timeout 300 ms. Input → expected decision per step.
    #[test]
    fn scripted_acquire_wait_handover() {
        let mut g = Gate::new(&GateSpec {
            name: "llm".into(),
            permits: 2,
            acquire_timeout: SimDuration::from_ms(300),
            max_waiting: 1,
            fair: true,
            wake_latency: SimDuration::ZERO,
        });
        let t = SimTime(0);
        assert_eq!(g.on_call(&call(1), t), CallDecision::Pass);
        assert_eq!(g.on_call(&call(2), t), CallDecision::Pass);
        assert_eq!(
            g.on_call(&call(3), t),
            CallDecision::Wait {
                deadline: Some(SimTime(300_000_000)),
                on_deadline: Reason::GateFull
            }
        );
        // max_waiting = 1: the next one is refused at once.
        assert_eq!(g.on_call(&call(4), t), CallDecision::Reject(Reason::GateFull));
        // Release hands the permit straight to call 3.
        let out = g.on_outcome(&call(1), Outcome::Success, t);
        assert_eq!(out, OutcomeDecision::PassUp(Outcome::Success));
        let mut woken = vec![];
        g.take_woken(&mut woken);
        assert_eq!(woken, vec![CallId(3)]);
        assert_eq!(g.in_use(), 2);
        assert_eq!((g.granted, g.returned), (3, 1));
    }

    /// Non-fair, wake latency 50 µs: a release signals the head (retry at +50 µs); a
    /// newcomer in between takes the permit and the head parks again; a signalled head that
    /// gives up passes its signal to the next waiter.
    #[test]
    fn non_fair_barging_and_signals() {
        let mut g = Gate::new(&GateSpec {
            name: "g".into(),
            permits: 1,
            acquire_timeout: SimDuration::from_ms(100),
            max_waiting: 10,
            fair: false,
            wake_latency: SimDuration::from_us(50),
        });
        let (t, us) = (SimTime(0), |n: u64| SimTime(n * 1000));
        assert_eq!(g.on_call(&call(1), t), CallDecision::Pass);
        assert!(matches!(g.on_call(&call(2), t), CallDecision::Wait { .. }));
        assert!(matches!(g.on_call(&call(3), t), CallDecision::Wait { .. }));
        g.on_outcome(&call(1), Outcome::Success, us(1000));
        assert_eq!(g.wake_at(), Some(us(1050)));
        assert!(g.take_changed());
        // A newcomer at 1010 µs barges.
        assert_eq!(g.on_call(&call(4), us(1010)), CallDecision::Pass);
        g.on_wake(us(1050));
        let mut woken = vec![];
        g.take_woken(&mut woken);
        assert!(woken.is_empty(), "the head found no permit and parks again");
        assert_eq!((g.wake_at(), g.waiting()), (None, 2));
        // The next release signals call 2; it gives up before its retry: call 3 takes it.
        g.on_outcome(&call(4), Outcome::Success, us(2000));
        g.on_abandon(&call(2), us(2020));
        assert_eq!(g.wake_at(), Some(us(2050)));
        g.on_wake(us(2050));
        g.take_woken(&mut woken);
        assert_eq!(woken, vec![CallId(3)]);
        assert_eq!((g.in_use(), g.granted - g.returned), (1, 1));
        // The last waiter gone, no signal outlives it.
        g.on_outcome(&call(3), Outcome::Success, us(3000));
        assert_eq!(g.wake_at(), None);
    }

    #[test]
    fn fail_fast_and_abandon() {
        let mut g = Gate::new(&GateSpec {
            name: "g".into(),
            permits: 1,
            acquire_timeout: SimDuration::ZERO,
            max_waiting: 10,
            fair: true,
            wake_latency: SimDuration::ZERO,
        });
        assert_eq!(g.on_call(&call(1), SimTime(0)), CallDecision::Pass);
        assert_eq!(g.on_call(&call(2), SimTime(0)), CallDecision::Reject(Reason::GateFull));
        g.set_acquire_timeout(SimDuration::from_ms(5));
        assert!(matches!(g.on_call(&call(3), SimTime(0)), CallDecision::Wait { .. }));
        g.on_abandon(&call(3), SimTime(5));
        assert_eq!(g.waiting(), 0);
        // Raising permits wakes nobody (no waiters) and lets the next call in.
        g.set_permits(2, SimTime(6));
        assert_eq!(g.on_call(&call(4), SimTime(6)), CallDecision::Pass);
        assert_eq!(g.in_use(), 2);
    }
}
