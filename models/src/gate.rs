//! A fixed concurrency gate (a semaphore at the convergence point, SPEC §3.5).
//!
//! `permits` calls may be past the gate at once. A call that finds no permit waits up to
//! `acquire_timeout` (Java's `tryAcquire(timeout)`) in FIFO order, or is rejected at once
//! when the timeout is zero (fail fast to the fallback). A released permit is handed
//! directly to the oldest waiter, so a newcomer can never overtake a waiter.
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

    /// Run-time change of the permit count; raising it wakes waiters.
    pub fn set_permits(&mut self, permits: u64) {
        assert!(permits >= 1);
        self.permits = permits;
        self.hand_over();
    }
    pub fn set_acquire_timeout(&mut self, d: SimDuration) {
        self.acquire_timeout = d;
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
        if self.in_use < self.permits && self.waiters.is_empty() {
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

    fn on_outcome(&mut self, _call: &CallInfo, outcome: Outcome, _now: SimTime) -> OutcomeDecision {
        assert!(self.in_use > 0, "gate released more permits than it granted");
        self.in_use -= 1;
        self.returned += 1;
        self.hand_over();
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        if let Some(pos) = self.waiters.iter().position(|c| *c == call.call) {
            self.waiters.remove(pos);
        } else {
            // Woken in the same instant but not yet resumed: give the permit back.
            let pos = self.woken.iter().position(|c| *c == call.call);
            assert!(pos.is_some(), "abandoned call was not parked at this gate");
            self.woken.remove(pos.expect("checked"));
            self.in_use -= 1;
            self.returned += 1;
            self.hand_over();
        }
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }

    fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// No timer, no events, no series (its gauges are read after every step anyway).
    fn take_changed(&mut self) -> bool {
        false
    }

    fn has_released(&self) -> bool {
        !self.woken.is_empty()
    }
}

crate::params::declare_params! {
    GateSpec: "gate", name = |s| s.name, state = Gate;
    permits: Count { min: 1, max: 10_000_000 }, "permits",
        runtime(apply = |g, n| g.set_permits(n)), "concurrent calls allowed past the gate";
    acquire_timeout: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) },
        "ns",
        runtime(apply = |g, d| g.set_acquire_timeout(d)),
        "how long a call waits for a permit (0 = fail fast)", default = SimDuration::ZERO;
    max_waiting: Count { min: 0, max: 100_000_000 }, "calls", fixed,
        "bound on calls waiting for a permit", default = 100_000;
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

    #[test]
    fn fail_fast_and_abandon() {
        let mut g = Gate::new(&GateSpec {
            name: "g".into(),
            permits: 1,
            acquire_timeout: SimDuration::ZERO,
            max_waiting: 10,
        });
        assert_eq!(g.on_call(&call(1), SimTime(0)), CallDecision::Pass);
        assert_eq!(g.on_call(&call(2), SimTime(0)), CallDecision::Reject(Reason::GateFull));
        g.set_acquire_timeout(SimDuration::from_ms(5));
        assert!(matches!(g.on_call(&call(3), SimTime(0)), CallDecision::Wait { .. }));
        g.on_abandon(&call(3), SimTime(5));
        assert_eq!(g.waiting(), 0);
        // Raising permits wakes nobody (no waiters) and lets the next call in.
        g.set_permits(2);
        assert_eq!(g.on_call(&call(4), SimTime(6)), CallDecision::Pass);
        assert_eq!(g.in_use(), 2);
    }
}
