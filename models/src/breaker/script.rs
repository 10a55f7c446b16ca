//! Test harness: a breaker driven by a RON script of steps, each with the expected
//! decision, state, woken/answered calls and state changes written by hand.
//!
//! A step: `(t: "5s", call: 1, class: 0, act: Call, expect: Some(Pass), state: CLOSED)`.
//! Acts: `Call` (expects `Pass`, `Reject` (breaker_open) or `Wait("deadline")`), outcomes
//! `Success`, `Failure` (failed:upstream_5xx), `Timeout` (failed:timeout), `Ignored`
//! (failed:business_error), `Refused` (rejected:upstream_429), `Degraded`
//! (degraded:timeout), and `Abandon`, `Wake` (the world's timer). `woken` / `answered`
//! list the calls the step must release (all answered as rejected:breaker_open); a state
//! change is expected exactly when `state` differs from the previous step's (override the
//! chain with `ev: Some([OPEN, …])`); `timer: Some(At("60s"))` / `Some(Off)` checks `wake_at`.
//! A call's duration is the difference of its outcome's and its call's `t`.
//! A scripted state change — `(t: "2s", act: To(OPEN), state: OPEN)` — puts the breaker in
//! a state at that instant, as the library's public transition does (Resilience4j's
//! `transitionTo…State()`, [`super::CircuitBreaker::transition_to_state`]); Sentinel's
//! degrade rules have no such public method, so a script refuses it for them.

use super::BreakerState;
use crate::governor::{CallDecision, CallInfo, GovEvent, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::Deserialize;
use sim_core::{SimDuration, SimTime};

pub(super) trait Scripted: Governor {
    fn state(&self) -> BreakerState;
    /// The library's public "put it in this state now", if it has one.
    fn transition_to(&mut self, to: BreakerState, now: SimTime) -> Result<(), &'static str>;
}

impl Scripted for super::CircuitBreaker {
    fn state(&self) -> BreakerState {
        super::CircuitBreaker::state(self)
    }
    fn transition_to(&mut self, to: BreakerState, now: SimTime) -> Result<(), &'static str> {
        self.transition_to_state(to, now);
        Ok(())
    }
}
impl Scripted for super::DegradeBreaker {
    fn state(&self) -> BreakerState {
        super::DegradeBreaker::state(self)
    }
    fn transition_to(&mut self, _: BreakerState, _: SimTime) -> Result<(), &'static str> {
        Err("a Sentinel degrade rule has no public state transition")
    }
}

#[derive(Debug, Deserialize)]
enum Act {
    Call,
    Success,
    Failure,
    Timeout,
    Ignored,
    Refused,
    Degraded,
    Abandon,
    Wake,
    /// A scripted state change.
    To(BreakerState),
}

#[derive(Debug, Deserialize)]
enum Expect {
    Pass,
    Reject,
    Wait(SimDuration),
}

#[derive(Debug, Deserialize)]
enum Timer {
    Off,
    At(SimDuration),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    t: SimDuration,
    #[serde(default)]
    call: u64,
    #[serde(default)]
    class: u16,
    act: Act,
    #[serde(default)]
    expect: Option<Expect>,
    state: BreakerState,
    #[serde(default)]
    woken: Vec<u64>,
    #[serde(default)]
    answered: Vec<u64>,
    #[serde(default)]
    ev: Option<Vec<BreakerState>>,
    #[serde(default)]
    timer: Option<Timer>,
}

/// Runs `script` (a RON list of steps) against `g`, panicking at the first mismatch.
pub(super) fn run<G: Scripted>(g: &mut G, script: &str) {
    let steps: Vec<Step> = ron::from_str(script).unwrap_or_else(|e| panic!("bad script: {e}"));
    assert!(!steps.is_empty());
    let mut prev_state = g.state();
    let mut last_t = SimTime::ZERO;
    for (i, s) in steps.iter().enumerate() {
        let now = SimTime(s.t.0);
        assert!(now >= last_t, "step {i}: time goes backwards");
        last_t = now;
        let ctx = format!("step {i} {s:?}");
        let call = CallInfo::simple(s.call, s.class);
        let outcome = match s.act {
            Act::Success => Some(Outcome::Success),
            Act::Failure => Some(Outcome::Failed(Reason::Upstream5xx)),
            Act::Timeout => Some(Outcome::Failed(Reason::Timeout)),
            Act::Ignored => Some(Outcome::Failed(Reason::BusinessError)),
            Act::Refused => Some(Outcome::Rejected(Reason::Upstream429)),
            Act::Degraded => Some(Outcome::Degraded(Reason::Timeout)),
            _ => None,
        };
        match (&s.act, outcome) {
            (Act::Call, _) => {
                let want = match s.expect.as_ref().unwrap_or_else(|| panic!("{ctx}: no expect")) {
                    Expect::Pass => CallDecision::Pass,
                    Expect::Reject => CallDecision::Reject(Reason::BreakerOpen),
                    Expect::Wait(d) => CallDecision::Wait {
                        deadline: Some(SimTime(d.0)),
                        on_deadline: Reason::BreakerOpen,
                    },
                };
                assert_eq!(g.on_call(&call, now), want, "{ctx}");
            }
            (Act::Abandon, _) => g.on_abandon(&call, now),
            (Act::Wake, _) => g.on_wake(now),
            (Act::To(to), _) => g.transition_to(*to, now).unwrap_or_else(|e| panic!("{ctx}: {e}")),
            (_, Some(o)) => {
                assert_eq!(g.on_outcome(&call, o, now), OutcomeDecision::PassUp(o), "{ctx}");
            }
            (_, None) => unreachable!(),
        }
        assert_eq!(g.state(), s.state, "{ctx}: state");
        let mut woken = vec![];
        g.take_woken(&mut woken);
        assert_eq!(woken, s.woken.iter().map(|c| CallId(*c)).collect::<Vec<_>>(), "{ctx}: woken");
        let mut answered = vec![];
        g.take_answered(&mut answered);
        let want: Vec<_> = s
            .answered
            .iter()
            .map(|c| (CallId(*c), Outcome::Rejected(Reason::BreakerOpen)))
            .collect();
        assert_eq!(answered, want, "{ctx}: answered");
        let mut events = vec![];
        g.take_events(&mut events);
        let chain = match &s.ev {
            Some(c) => c.clone(),
            None if s.state != prev_state => vec![s.state],
            None => vec![],
        };
        let mut from = prev_state;
        let want: Vec<GovEvent> = chain
            .iter()
            .map(|to| {
                let e = super::state_event(now, from, *to);
                from = *to;
                e
            })
            .collect();
        assert_eq!(events, want, "{ctx}: events");
        match &s.timer {
            None => {}
            Some(Timer::Off) => assert_eq!(g.wake_at(), None, "{ctx}: timer"),
            Some(Timer::At(d)) => assert_eq!(g.wake_at(), Some(SimTime(d.0)), "{ctx}: timer"),
        }
        prev_state = s.state;
    }
}
