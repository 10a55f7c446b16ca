//! Resilience4j's `TimeLimiter` as a governor: it bounds the time from a call passing it to
//! the call's outcome coming back through it.
//!
//! Placed in a stack, every call that passes it gets a deadline `now + timeout_duration`.
//! If the outcome climbs back through it first, the deadline is forgotten and the outcome
//! passes up unchanged. If the deadline comes first, the limiter answers the call
//! `Failed(Timeout)` from its own level ([`Governor::take_answered`]): the levels above it
//! (a breaker, a retry) record a timeout, and the call below it is abandoned — with
//! `cancel_running_future = true` its upstream work is cancelled where the upstream allows
//! it (Resilience4j's `future.cancel(true)`), otherwise it runs on as abandoned work.
//!
//! Key design decision: the limiter answers a call that is *not* parked at its level (it is
//! below: parked at a lower governor, in a lower retry's back-off, or at its upstream). The
//! world cuts such a call short from the limiter's level (see "World hook" below); the
//! limiter itself only keeps the deadlines, in a bounded ordered set, and reports the
//! earliest through [`Governor::wake_at`].
//!
//! World hook (`world/cut.rs`, entered from `resume_woken` when a governor answers a call
//! that is not parked at its level): the call is abandoned where it is (parked at a lower
//! governor: `on_abandon` there; in a lower retry's back-off: the back-off timer cancelled
//! and the retry forgets it; waiting for or opening a connection: forgotten by the pool /
//! the connection closed; at its upstream: the client-timeout path without its answer,
//! cancelling the work per [`TimeLimiter::cancels_running_future`]), the levels strictly
//! between see `Failed(Timeout)` (a `RetryAfter` among them is refused with `on_abandon`),
//! and the limiter's answer climbs from its level with `callsite::ascend`.
//!
//! Architecture invariant: every call the limiter passed is tracked until exactly one of
//! `on_outcome` (the outcome came back first), `on_wake` (the deadline came first: answered
//! once) or `on_abandon` (forgotten) returns it; it never parks a call and never draws a
//! random number.
//!
//! API boundary: driven through [`Governor`]; the world reads
//! [`TimeLimiter::cancels_running_future`] when it cuts a call short, the summary reads the
//! counters, and `timeout_duration` / `cancel_running_future` change at run time (a new
//! timeout applies to calls passing from then on, as in Resilience4j where the config is
//! read per call).

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::{BTreeMap, BTreeSet};

/// Upper bound on calls between passing the limiter and their outcome (exceeding it is a
/// bug in the world: an outcome never delivered).
pub const MAX_IN_FLIGHT: usize = 1 << 24;

/// A time limiter, with Resilience4j's `TimeLimiterConfig` names and defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "TimeLimiter")]
pub struct TimeLimiterSpec {
    /// Name; parameters under `time_limiter.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// The longest a call may take from passing the limiter to its outcome (> 0; default
    /// 1 s, Resilience4j's `timeoutDuration`).
    #[serde(default = "D::timeout_duration", deserialize_with = "R::timeout_duration")]
    pub timeout_duration: SimDuration,
    /// Cancel the upstream work of a timed-out call (default true, Resilience4j's
    /// `cancelRunningFuture`); false: it runs on as abandoned work.
    #[serde(default = "D::cancel_running_future")]
    pub cancel_running_future: bool,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<TimeLimiterSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<TimeLimiterSpec>;

/// What the limiter did, over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeLimiterCounters {
    pub passed: u64,
    /// Outcomes that came back in time.
    pub in_time: u64,
    /// Calls answered `Failed(Timeout)` by the limiter.
    pub timeouts: u64,
}

/// Run-time state of a time limiter.
#[derive(Clone, Debug)]
pub struct TimeLimiter {
    timeout: SimDuration,
    cancel: bool,
    deadline_of: BTreeMap<CallId, SimTime>,
    /// (deadline, call): the earliest first; ties in call-id order.
    by_deadline: BTreeSet<(SimTime, CallId)>,
    answered: Vec<(CallId, Outcome)>,
    pub counters: TimeLimiterCounters,
}

impl TimeLimiter {
    pub fn new(spec: &TimeLimiterSpec) -> Self {
        assert!(spec.timeout_duration > SimDuration::ZERO, "validated");
        TimeLimiter {
            timeout: spec.timeout_duration,
            cancel: spec.cancel_running_future,
            deadline_of: BTreeMap::new(),
            by_deadline: BTreeSet::new(),
            answered: Vec::new(),
            counters: TimeLimiterCounters::default(),
        }
    }
    pub fn cancels_running_future(&self) -> bool {
        self.cancel
    }
    /// Calls between passing and their outcome.
    pub fn in_flight(&self) -> usize {
        self.deadline_of.len()
    }
    fn forget(&mut self, call: CallId) -> bool {
        match self.deadline_of.remove(&call) {
            Some(t) => {
                let removed = self.by_deadline.remove(&(t, call));
                assert!(removed, "both indexes hold the call");
                true
            }
            None => false,
        }
    }
}

impl Governor for TimeLimiter {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        let t = now + self.timeout;
        let fresh = self.deadline_of.insert(call.call, t).is_none();
        assert!(fresh, "a call passes a time limiter once per descent");
        self.by_deadline.insert((t, call.call));
        assert!(self.deadline_of.len() <= MAX_IN_FLIGHT, "time limiter in-flight bound");
        self.counters.passed += 1;
        CallDecision::Pass
    }
    fn on_outcome(&mut self, call: &CallInfo, o: Outcome, _now: SimTime) -> OutcomeDecision {
        let known = self.forget(call.call);
        assert!(known, "an outcome climbs through the limiter only for a call it passed");
        self.counters.in_time += 1;
        OutcomeDecision::PassUp(o)
    }
    /// Forgets a call it passed (cut short by another governor above it).
    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        self.forget(call.call);
    }
    fn take_woken(&mut self, _out: &mut Vec<CallId>) {}
    fn take_answered(&mut self, out: &mut Vec<(CallId, Outcome)>) {
        out.append(&mut self.answered);
    }
    fn waiting(&self) -> usize {
        0
    }
    fn wake_at(&self) -> Option<SimTime> {
        self.by_deadline.first().map(|&(t, _)| t)
    }
    fn on_wake(&mut self, now: SimTime) {
        while let Some(&(t, call)) = self.by_deadline.first() {
            if t > now {
                break;
            }
            self.forget(call);
            self.counters.timeouts += 1;
            self.answered.push((call, Outcome::Failed(Reason::Timeout)));
        }
    }
}

crate::params::declare_params! {
    TimeLimiterSpec: "time_limiter", name = |s| s.name, state = TimeLimiter;
    timeout_duration: Duration { min: SimDuration(1), max: SimDuration::from_secs(86_400) },
        "ns", runtime(apply = |t, d| t.timeout = d),
        "longest time from passing the limiter to the outcome", default = SimDuration::from_secs(1);
    cancel_running_future: Bool, "",
        runtime(apply = |t, on| t.cancel = on),
        "cancel the upstream work of a timed-out call", default = true;
}

impl crate::params::GovernorSpec for TimeLimiterSpec {
    const NOT_SHADOWABLE: Option<&'static str> = Some(
        "a time limiter cannot run in shadow mode (its timeouts are answers, which a shadow never gives); see its `timeouts` counter",
    );
}

impl crate::governor::GovernorKindOps for TimeLimiter {
    type Spec = TimeLimiterSpec;
    fn build(spec: &TimeLimiterSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        TimeLimiter::new(spec)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![("timeouts", self.counters.timeouts)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ApplyParam as _, ParamValue, Params as _};

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }
    fn c(i: u64) -> CallInfo {
        CallInfo::simple(i, 0)
    }
    fn limiter(text: &str) -> TimeLimiter {
        TimeLimiter::new(&ron::from_str::<TimeLimiterSpec>(text).unwrap())
    }

    #[test]
    fn defaults_are_resilience4j_s() {
        let s: TimeLimiterSpec = ron::from_str("(name: \"t\")").unwrap();
        assert_eq!(s.timeout_duration, SimDuration::from_secs(1));
        assert!(s.cancel_running_future);
        let e = ron::from_str::<TimeLimiterSpec>("(name: \"t\", timeout_duration: \"0s\")");
        assert!(e.unwrap_err().to_string().contains("in [\"1ns\", "));
    }

    /// timeout 500 ms. Script: call 1 at 0 (deadline 500), call 2 at 100 (600), call 3 at
    /// 200 (700); call 2's outcome at 550 comes in time; wake at 500 answers call 1; the
    /// next wake-up is call 3's 700; at 800 call 3 is answered.
    #[test]
    fn deadlines_answer_in_order_and_outcomes_in_time_pass() {
        let mut l = limiter("(name: \"t\", timeout_duration: \"500ms\")");
        for (i, t) in [(1, 0), (2, 100), (3, 200)] {
            assert_eq!(l.on_call(&c(i), ms(t)), CallDecision::Pass);
        }
        assert_eq!(l.wake_at(), Some(ms(500)));
        l.on_wake(ms(500));
        let mut a = Vec::new();
        l.take_answered(&mut a);
        assert_eq!(a, vec![(CallId(1), Outcome::Failed(Reason::Timeout))]);
        let s = Outcome::Success;
        assert_eq!(l.on_outcome(&c(2), s, ms(550)), OutcomeDecision::PassUp(s));
        assert_eq!(l.wake_at(), Some(ms(700)));
        l.on_wake(ms(800));
        a.clear();
        l.take_answered(&mut a);
        assert_eq!(a, vec![(CallId(3), Outcome::Failed(Reason::Timeout))]);
        assert_eq!((l.wake_at(), l.in_flight()), (None, 0));
        assert_eq!(l.counters, TimeLimiterCounters { passed: 3, in_time: 1, timeouts: 2 });
    }

    /// A timeout changed at run time applies to calls passing from then on.
    #[test]
    fn run_time_timeout_applies_to_new_calls() {
        let mut l =
            limiter("(name: \"t\", timeout_duration: \"1s\", cancel_running_future: false)");
        assert!(!l.cancels_running_future());
        l.on_call(&c(1), ms(0)); // deadline 1000
        let d = ParamValue::Duration(SimDuration::from_ms(100));
        l.apply_param("timeout_duration", d, ms(0)).unwrap();
        l.on_call(&c(2), ms(10)); // deadline 110
        assert_eq!(l.wake_at(), Some(ms(110)));
        l.on_abandon(&c(2), ms(50));
        assert_eq!(l.wake_at(), Some(ms(1000)));
        // A zero timeout never reaches the state: its row's range refuses it.
        let row = TimeLimiterSpec::decls().into_iter().find(|d| d.name == "timeout_duration");
        assert!(row.unwrap().ty.check(&ParamValue::Duration(SimDuration::ZERO)).is_err());
    }
}
