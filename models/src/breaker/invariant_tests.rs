//! Long pseudo-random drives of both breakers (keyed by `mix64`, so reproducible) that
//! check the invariants after every step: the breaker's own (`check_invariants`), its
//! in-flight and waiting counts against an outside model, woken/answered calls being
//! exactly calls that waited, state-change events forming a chain, and conservation at
//! the end (every admitted call returned exactly once). Each drive must visit every
//! transition, so the test cannot pass vacuously.

use super::*;
use crate::governor::{CallDecision, CallInfo, GovEvent, Governor};
use crate::outcome::{Outcome, Reason};
use sim_core::SimTime;
use sim_core::rng::mix64;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Default)]
struct Model {
    in_flight: BTreeSet<u64>,
    waiting: BTreeMap<u64, SimTime>,
    transitions: BTreeSet<(String, String)>,
    woken: u64,
    answered: u64,
    last_state: Option<String>,
}

impl Model {
    fn drain<G: Governor>(&mut self, g: &mut G) {
        let mut w = vec![];
        g.take_woken(&mut w);
        for c in w {
            assert!(self.waiting.remove(&c.0).is_some(), "woke {c:?} that was not waiting");
            self.in_flight.insert(c.0);
            self.woken += 1;
        }
        let mut a = vec![];
        g.take_answered(&mut a);
        for (c, o) in a {
            assert_eq!(o, Outcome::Rejected(Reason::BreakerOpen));
            assert!(self.waiting.remove(&c.0).is_some(), "answered {c:?} that was not waiting");
            self.answered += 1;
        }
        let mut ev: Vec<GovEvent> = vec![];
        g.take_events(&mut ev);
        for e in ev {
            assert_eq!(e.kind, "state_change");
            let from = self.last_state.clone().unwrap_or_else(|| "CLOSED".into());
            assert_eq!(e.from, from, "events form a chain");
            self.transitions.insert((e.from.clone(), e.to.clone()));
            self.last_state = Some(e.to);
        }
    }

    fn pick(set: impl Iterator<Item = u64>, r: u64) -> Option<u64> {
        let v: Vec<u64> = set.collect();
        (!v.is_empty()).then(|| v[(r % v.len() as u64) as usize])
    }
}

/// Drives `g` for `steps` steps; `check` runs the breaker's own invariant checks.
fn drive<G: Governor>(g: &mut G, seed: u64, steps: u64, check: impl Fn(&G)) -> Model {
    let mut m = Model::default();
    let mut now = SimTime::ZERO;
    let mut next_call = 1;
    for i in 0..steps {
        let r = mix64(seed ^ mix64(i));
        now = SimTime(now.0 + (r % 40) * 1_000_000);
        if g.wake_at().is_some_and(|w| w <= now) {
            g.on_wake(now);
            m.drain(g);
        }
        let expired: Vec<u64> =
            m.waiting.iter().filter(|(_, d)| **d <= now).map(|(c, _)| *c).collect();
        for c in expired {
            m.waiting.remove(&c);
            g.on_abandon(&CallInfo::simple(c, 0), now);
            m.drain(g);
        }
        // Alternate bad (70% failures) and good (5%) phases of 3000 steps.
        let bad = (i / 3000) % 2 == 0;
        match (r >> 8) % 10 {
            0..=4 => {
                let call = CallInfo::simple(next_call, ((r >> 16) % 3) as u16);
                next_call += 1;
                match g.on_call(&call, now) {
                    CallDecision::Pass => {
                        m.in_flight.insert(call.call.0);
                    }
                    CallDecision::Wait { deadline, on_deadline } => {
                        assert_eq!(on_deadline, Reason::BreakerOpen);
                        m.waiting.insert(call.call.0, deadline.expect("bounded wait"));
                    }
                    CallDecision::Reject(r) => assert_eq!(r, Reason::BreakerOpen),
                    CallDecision::ServeLocally(_) | CallDecision::Fork => {
                        panic!("a breaker never serves")
                    }
                }
            }
            5..=8 => {
                if let Some(c) = Model::pick(m.in_flight.iter().copied(), r >> 20) {
                    m.in_flight.remove(&c);
                    let p = (r >> 32) % 100;
                    let o = match p {
                        _ if p < 5 => Outcome::Failed(Reason::BusinessError),
                        _ if p < 10 => Outcome::Rejected(Reason::Upstream429),
                        _ if bad && p < 70 || !bad && p < 15 => {
                            Outcome::Failed(Reason::Upstream5xx)
                        }
                        _ => Outcome::Success,
                    };
                    g.on_outcome(&CallInfo::simple(c, 0), o, now);
                }
            }
            _ => {
                if let Some(c) = Model::pick(m.in_flight.iter().copied(), r >> 20) {
                    m.in_flight.remove(&c);
                    g.on_abandon(&CallInfo::simple(c, 0), now);
                }
            }
        }
        m.drain(g);
        check(g);
        assert_eq!(g.waiting(), m.waiting.len(), "step {i}");
    }
    // Finish everything.
    for c in std::mem::take(&mut m.waiting).into_keys() {
        g.on_abandon(&CallInfo::simple(c, 0), now);
        m.drain(g);
    }
    for c in std::mem::take(&mut m.in_flight) {
        g.on_outcome(&CallInfo::simple(c, 0), Outcome::Success, now);
        m.drain(g);
    }
    assert!(m.waiting.is_empty() && m.in_flight.is_empty(), "late wake-ups drained");
    m
}

fn all_transitions(m: &Model) {
    for (f, t) in
        [("CLOSED", "OPEN"), ("OPEN", "HALF_OPEN"), ("HALF_OPEN", "CLOSED"), ("HALF_OPEN", "OPEN")]
    {
        assert!(m.transitions.contains(&(f.into(), t.into())), "never saw {f} → {t}");
    }
}

#[test]
fn resilience4j_invariants_under_a_long_drive() {
    for (window, automatic) in [("COUNT_BASED", false), ("TIME_BASED", true)] {
        let spec: CircuitBreakerSpec = ron::from_str(&format!(
            r#"CircuitBreaker(name: "b", sliding_window_type: {window}, sliding_window_size: 10,
               minimum_number_of_calls: 5, slow_call_rate_threshold: 80,
               slow_call_duration_threshold: "100ms", wait_duration_in_open_state: "500ms",
               enable_exponential_backoff: true, exponential_max_wait_duration_in_open_state: "3s",
               permitted_number_of_calls_in_half_open_state: 3,
               max_wait_duration_in_half_open_state: "2s",
               automatic_transition_from_open_to_half_open_enabled: {automatic},
               half_open_wait: HalfOpenWait(max_wait: "300ms", max_waiting: 4))"#
        ))
        .unwrap();
        let mut b = CircuitBreaker::new(&spec);
        let m = drive(&mut b, 7, 30_000, |b: &CircuitBreaker| b.check_invariants());
        all_transitions(&m);
        assert!(m.woken > 0 && m.answered > 0, "{window}: waiters woken and answered");
        assert_eq!(b.in_flight(), 0);
        let c = b.counters;
        assert_eq!(c.permitted, c.successful + c.failed + c.ignored + c.abandoned, "{c:?}");
        assert_eq!(m.last_state.as_deref().unwrap_or("CLOSED"), b.state().name());
    }
}

#[test]
fn sentinel_invariants_under_a_long_drive() {
    for grade in
        ["ERROR_RATIO, count: 0.4", "ERROR_COUNT, count: 4", "SLOW_REQUEST_RATIO, count: 20"]
    {
        let spec: DegradeRuleSpec = ron::from_str(&format!(
            r#"DegradeRule(name: "r", grade: {grade}, time_window: 1, slow_ratio_threshold: 0.5)"#
        ))
        .unwrap();
        let mut b = DegradeBreaker::new(&spec);
        let m = drive(&mut b, 11, 30_000, |b: &DegradeBreaker| {
            assert!(b.state() != BreakerState::HalfOpen || b.in_flight() >= 1)
        });
        all_transitions(&m);
        assert_eq!((m.woken, m.answered), (0, 0));
        assert_eq!(b.in_flight(), 0);
        let c = b.counters;
        // Ignored outcomes complete too (counted as non-errors, as Sentinel counts them).
        assert_eq!(c.passed, c.completed + c.abandoned, "{grade}: {c:?}");
        assert!(c.ignored > 0 && c.ignored <= c.completed, "{grade}: {c:?}");
        assert_eq!(m.last_state.as_deref().unwrap_or("CLOSED"), b.state().name());
    }
}

#[test]
fn unknown_calls_are_bugs() {
    let mut b = CircuitBreaker::new(&CircuitBreakerSpec::with_defaults("b"));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        b.on_outcome(&CallInfo::simple(9, 0), Outcome::Success, SimTime::ZERO)
    }));
    assert!(r.is_err(), "an outcome for a call never admitted panics");
}
