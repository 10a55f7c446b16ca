//! Scripted tests of the shadow wrapper: (time, input) → expected decision, counters,
//! inner state and events, written down by hand.

use super::*;
use crate::breaker::{CircuitBreaker, CircuitBreakerSpec};
use crate::callsite::GovernorKind;
use crate::gate::{Gate, GateSpec};
use crate::outcome::Reason;
use crate::scenario::GovernorRef;
use crate::scenario::govref::check_shadowable;

fn ms(x: u64) -> SimTime {
    SimTime(x * 1_000_000)
}
fn c(i: u64) -> CallInfo {
    CallInfo::simple(i, 0)
}
fn gate(permits: u64, wait_ms: u64) -> Shadow<GovernorKind> {
    Shadow::new(GovernorKind::Gate(Gate::new(&GateSpec {
        name: "g".into(),
        permits,
        acquire_timeout: SimDuration::from_ms(wait_ms),
        max_waiting: 10,
        fair: true,
        wake_latency: SimDuration::ZERO,
    })))
}
fn in_use(s: &Shadow<GovernorKind>) -> u64 {
    s.inner().as_gate().unwrap().in_use()
}
fn events(s: &mut Shadow<GovernorKind>) -> Vec<(u64, &'static str, String, String)> {
    let mut v = Vec::new();
    s.take_events(&mut v);
    v.into_iter().map(|e| (e.time.0 / 1_000_000, e.kind, e.from, e.to)).collect()
}

/// A one-permit gate that waits: the second call would wait; the wait is cancelled at once,
/// the call passes, and its outcome is not fed to the gate (it never held the permit).
#[test]
fn waiting_gate_parks_nothing_and_counts() {
    let mut s = gate(1, 100);
    assert_eq!(s.on_call(&c(1), ms(0)), CallDecision::Pass);
    assert_eq!((in_use(&s), s.admitted()), (1, 1));
    assert_eq!(s.on_call(&c(2), ms(10)), CallDecision::Pass);
    assert_eq!(s.inner().waiting(), 0, "the wait was cancelled");
    assert_eq!(s.waiting(), 0);
    // Call 3 also would wait, 500 ms later: counted, but no second event within 1 s.
    assert_eq!(s.on_call(&c(3), ms(510)), CallDecision::Pass);
    assert_eq!(s.counters, ShadowCounters { would_pass: 1, would_wait: 2, ..Default::default() });
    assert_eq!(events(&mut s), vec![(10, "shadow_wait", "pass".into(), "gate_full".into())]);
    // Call 2's outcome climbs: passed up unchanged, the gate untouched (still 1 in use).
    let failed = Outcome::Failed(Reason::Upstream5xx);
    assert_eq!(s.on_outcome(&c(2), failed, ms(600)), OutcomeDecision::PassUp(failed));
    assert_eq!(in_use(&s), 1);
    // Call 1's outcome frees the permit; nobody is woken (nobody waits in a shadow).
    assert_eq!(
        s.on_outcome(&c(1), Outcome::Success, ms(700)),
        OutcomeDecision::PassUp(Outcome::Success)
    );
    assert_eq!((in_use(&s), s.admitted()), (0, 0));
    let mut w = Vec::new();
    s.take_woken(&mut w);
    assert!(w.is_empty());
    // 1 s after the first event: the next would-wait is marked again.
    assert_eq!(s.on_call(&c(4), ms(800)), CallDecision::Pass); // takes the permit
    assert_eq!(s.on_call(&c(5), ms(1010)), CallDecision::Pass); // would wait: 1010 ≥ 10 + 1000
    assert_eq!(events(&mut s), vec![(1010, "shadow_wait", "pass".into(), "gate_full".into())]);
    assert_eq!(s.counters.would_wait, 3);
}

/// A fail-fast gate: the would-be refusal is counted and marked; the call passes.
#[test]
fn fail_fast_gate_counts_rejects() {
    let mut s = gate(1, 0);
    s.on_call(&c(1), ms(0));
    assert_eq!(s.on_call(&c(2), ms(1)), CallDecision::Pass);
    assert_eq!(s.counters.would_reject, 1);
    assert_eq!(events(&mut s), vec![(1, "shadow_reject", "pass".into(), "gate_full".into())]);
}

fn breaker(auto: bool) -> Shadow<GovernorKind> {
    let spec: CircuitBreakerSpec = ron::from_str(&format!(
        "(name: \"b\", sliding_window_size: 2, minimum_number_of_calls: 2, \
         wait_duration_in_open_state: \"10s\", \
         automatic_transition_from_open_to_half_open_enabled: {auto})"
    ))
    .unwrap();
    Shadow::new(GovernorKind::CircuitBreaker(CircuitBreaker::new(&spec)))
}

/// A shadow breaker opens on the real outcomes (2 failures of 2: 100% ≥ 50%), would then
/// refuse (marked at most once per second), has no timer of its own, and makes its
/// automatic OPEN → HALF_OPEN transition at its exact time (10 s after opening at 0) when
/// the next call reaches it at 15 s.
#[test]
fn breaker_opens_on_real_outcomes_and_wakes_lazily() {
    let mut s = breaker(true);
    let failed = Outcome::Failed(Reason::Upstream5xx);
    for i in 1..=2 {
        assert_eq!(s.on_call(&c(i), ms(0)), CallDecision::Pass);
        assert_eq!(s.on_outcome(&c(i), failed, ms(0)), OutcomeDecision::PassUp(failed));
    }
    assert_eq!(s.wake_at(), None, "a shadow never asks the world for a timer");
    assert_eq!(s.inner().wake_at(), Some(ms(10_000)));
    for (i, t) in [(3, 1000), (4, 1500), (5, 2000)] {
        assert_eq!(s.on_call(&c(i), ms(t)), CallDecision::Pass);
        // Refused calls are not the breaker's: their outcome is not recorded.
        assert_eq!(
            s.on_outcome(&c(i), Outcome::Success, ms(t)),
            OutcomeDecision::PassUp(Outcome::Success)
        );
    }
    assert_eq!(s.admitted(), 0);
    assert_eq!(s.on_call(&c(6), ms(15_000)), CallDecision::Pass);
    assert_eq!(s.counters, ShadowCounters { would_pass: 3, would_reject: 3, ..Default::default() });
    let sc = |t, from: &str, to: &str| (t, "shadow:state_change", from.to_string(), to.to_string());
    let rej = |t| (t, "shadow_reject", "pass".to_string(), "breaker_open".to_string());
    assert_eq!(
        events(&mut s),
        vec![
            sc(0, "CLOSED", "OPEN"),
            rej(1000), // 1500 is within 1 s of it; 2000 is not
            rej(2000),
            sc(10_000, "OPEN", "HALF_OPEN"),
        ]
    );
}

/// Without the automatic transition the breaker has no timer: OPEN until a call comes
/// after the wait (Resilience4j), the same with or without the shadow.
#[test]
fn breaker_without_timer_transitions_on_the_next_call() {
    let mut s = breaker(false);
    for i in 1..=2 {
        s.on_call(&c(i), ms(0));
        s.on_outcome(&c(i), Outcome::Failed(Reason::Timeout), ms(0));
    }
    assert_eq!(s.inner().wake_at(), None);
    s.on_call(&c(3), ms(10_001));
    let ev = events(&mut s);
    assert_eq!(ev.last().unwrap().0, 10_001);
    assert_eq!(ev.last().unwrap().3, "HALF_OPEN");
    assert_eq!(s.counters.would_pass, 3);
}

#[test]
fn unknown_inner_event_kinds_keep_their_name() {
    let e = GovEvent { time: ms(1), kind: "drift", from: "a".into(), to: "b".into(), closed: None };
    let p = prefixed(e);
    assert_eq!((p.kind, p.from.as_str(), p.to.as_str()), ("shadow:other", "drift: a", "b"));
    let e = GovEvent {
        time: ms(1),
        kind: "rule_reload",
        from: "a".into(),
        to: "b".into(),
        closed: None,
    };
    assert_eq!(prefixed(e).kind, "shadow:rule_reload");
}

#[test]
fn retries_batchers_and_nesting_are_refused() {
    let sh = |r: GovernorRef| GovernorRef::Shadow(Box::new(r));
    let msg = check_shadowable(&sh(GovernorRef::Retry("r".into()))).unwrap();
    assert!(msg.contains("Shadow(Retry(\"r\"))") && msg.contains("cannot run in shadow"), "{msg}");
    assert!(check_shadowable(&sh(GovernorRef::Batcher("b".into()))).is_some());
    assert!(check_shadowable(&sh(GovernorRef::TimeLimiter("t".into()))).is_some());
    assert!(check_shadowable(&sh(sh(GovernorRef::Gate("g".into())))).is_some());
    assert_eq!(check_shadowable(&sh(GovernorRef::CircuitBreaker("b".into()))), None);
    assert_eq!(check_shadowable(&GovernorRef::Retry("r".into())), None);
    assert_eq!(sh(GovernorRef::CircuitBreaker("b".into())).path(), "shadow.circuit_breaker.b");
}

// Governor summary counters (`<kind>.<name>.<counter>`, a shadow copy's under
// `shadow.<kind>.<name>.`): the kind table reads `GovernorKindOps::summary_counters`.

fn breaker_kind() -> GovernorKind {
    let spec: CircuitBreakerSpec = ron::from_str(
        "(name: \"b\", sliding_window_size: 2, minimum_number_of_calls: 2, \
         wait_duration_in_open_state: \"10s\")",
    )
    .unwrap();
    GovernorKind::CircuitBreaker(CircuitBreaker::new(&spec))
}

/// Two failures open a window-2 breaker (rate 100% ≥ 50%); the third call is refused.
#[test]
fn breaker_and_shadow_counters_are_named_and_counted() {
    let t = SimTime(0);
    for shadowed in [false, true] {
        let mut g = breaker_kind();
        if shadowed {
            g = GovernorKind::Shadow(Shadow::new(g));
        }
        for i in 1..=2 {
            let c = CallInfo::simple(i, 0);
            g.on_call(&c, t);
            g.on_outcome(&c, Outcome::Failed(Reason::Upstream5xx), t);
        }
        g.on_call(&CallInfo::simple(3, 0), t);
        let got = g.summary_counters();
        // CLOSED → OPEN: 1 state change; call 3 not permitted.
        let want_breaker = [("state_changes", 1), ("not_permitted", 1)];
        if shadowed {
            let want = [
                ("would_pass", 2),
                ("would_reject", 1),
                ("would_wait", 0),
                ("would_serve_locally", 0),
                ("would_change_outcome", 0),
            ];
            assert_eq!(got[..5], want);
            assert_eq!(got[5..], want_breaker);
        } else {
            assert_eq!(got, want_breaker);
        }
    }
}
