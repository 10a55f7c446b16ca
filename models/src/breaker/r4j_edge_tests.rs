//! Edge cases of the Resilience4j breaker: stale probes, a woken call abandoned before
//! the drain, switching the breaker off and on at run time (FORCED_OPEN), and scripted
//! state changes (`act: To(STATE)`).

use super::r4j_tests::{PRIORITY, breaker};
use super::script::run;
use super::{BreakerState, DegradeBreaker, DegradeRuleSpec, state_event};
use crate::governor::{CallDecision, CallInfo, Governor};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use sim_core::SimTime;

/// A probe of an earlier HALF_OPEN episode that ends ignored frees a permit of the current
/// episode, beyond the configured count: Resilience4j's `onError` calls
/// `releasePermission()` for an ignored error, and `HalfOpenState.releasePermission`
/// increments `permittedNumberOfCalls` unconditionally.
#[test]
fn stale_probe_gives_a_permit_back_as_resilience4j_does() {
    let mut b = breaker(
        r#"CircuitBreaker(name: "b", sliding_window_size: 1, minimum_number_of_calls: 1,
           wait_duration_in_open_state: "1s", permitted_number_of_calls_in_half_open_state: 1,
           max_wait_duration_in_half_open_state: "1s")"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 1, act: Failure, state: OPEN),
        // episode 1: call 2 holds its only permit
        (t: "2s", call: 2, act: Call, expect: Some(Pass), state: HALF_OPEN),
        // forced OPEN at 3 s, until 4 s
        (t: "3s", act: Wake, state: OPEN),
        // episode 2: call 3 holds its only permit
        (t: "4.5s", call: 3, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "4.6s", call: 2, act: Ignored, state: HALF_OPEN),
        // a second probe in an episode of 1 permit
        (t: "4.6s", call: 4, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "4.6s", call: 5, act: Call, expect: Some(Reject), state: HALF_OPEN),
        // a late failure admitted in episode 1 is still recorded: [F] → OPEN
        (t: "4.7s", call: 3, act: Failure, state: OPEN),
    ]"#,
    );
    b.check_invariants();
}

/// A call woken with a permit and abandoned before the call site drained `take_woken` is
/// not reported woken; its permit goes to the next waiter.
#[test]
fn woken_then_abandoned_before_drain() {
    let mut b = breaker(PRIORITY);
    let t = |ms: u64| SimTime(ms * 1_000_000);
    let c = CallInfo::simple;
    assert_eq!(b.on_call(&c(1, 0), t(0)), CallDecision::Pass);
    b.on_outcome(&c(1, 0), Outcome::Failed(Reason::Timeout), t(0));
    assert_eq!(b.on_call(&c(2, 0), t(2000)), CallDecision::Pass);
    assert!(matches!(b.on_call(&c(3, 1), t(2000)), CallDecision::Wait { .. }));
    assert!(matches!(b.on_call(&c(4, 0), t(2000)), CallDecision::Wait { .. }));
    b.on_outcome(&c(2, 0), Outcome::Failed(Reason::BusinessError), t(2100)); // → call 4
    b.on_abandon(&c(4, 0), t(2100)); // before the drain → call 3
    let mut w = vec![];
    b.take_woken(&mut w);
    assert_eq!(w, vec![CallId(3)]);
    b.check_invariants();
}

/// FORCED_OPEN rejects everything and records nothing; switching back on closes with fresh
/// metrics; waiters of a HALF_OPEN episode are answered when it is switched off.
#[test]
fn forced_open_switches_the_breaker_off_and_on() {
    let mut b = breaker(PRIORITY);
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 1, act: Failure, state: OPEN),
        (t: "2s", call: 2, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "2s", call: 3, class: 1, act: Call, expect: Some(Wait("2.5s")), state: HALF_OPEN),
    ]"#,
    );
    b.set_forced_open(true, SimTime(2_100_000_000));
    let (mut a, mut e) = (vec![], vec![]);
    b.take_answered(&mut a);
    assert_eq!(a, vec![(CallId(3), Outcome::Rejected(Reason::BreakerOpen))]);
    b.take_events(&mut e);
    let t = SimTime(2_100_000_000);
    assert_eq!(e, vec![state_event(t, BreakerState::HalfOpen, BreakerState::ForcedOpen)]);
    run(
        &mut b,
        r#"[
        (t: "2.1s", call: 4, act: Call, expect: Some(Reject), state: FORCED_OPEN),
        // the probe's failure is not recorded (window of 1 would re-open on it)
        (t: "2.2s", call: 2, act: Failure, state: FORCED_OPEN, timer: Some(Off)),
        (t: "100s", call: 5, act: Call, expect: Some(Reject), state: FORCED_OPEN),
    ]"#,
    );
    b.set_forced_open(false, SimTime(101_000_000_000));
    b.take_events(&mut e);
    let t = SimTime(101_000_000_000);
    assert_eq!(e[1..], [state_event(t, BreakerState::ForcedOpen, BreakerState::Closed)]);
    run(
        &mut b,
        r#"[
        (t: "101s", call: 6, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "101s", call: 6, act: Success, state: CLOSED),
    ]"#,
    );
    assert_eq!(b.snapshot().calls, 1, "fresh metrics after switching back on");
    b.check_invariants();
}

/// HALF_OPEN metrics are COUNT_BASED of `permitted` even for a TIME_BASED breaker: two
/// probe results 100 s apart are judged together (a 10 s time window would have dropped
/// the first one and waited for a second result).
#[test]
fn half_open_metrics_are_count_based_for_time_based_breakers() {
    let mut b = breaker(
        r#"CircuitBreaker(name: "b", sliding_window_type: TIME_BASED, sliding_window_size: 10,
           minimum_number_of_calls: 2, wait_duration_in_open_state: "1s",
           permitted_number_of_calls_in_half_open_state: 2)"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 1, act: Failure, state: CLOSED),
        // seconds 0..=9: [F F] → OPEN until 1 s
        (t: "0s", call: 2, act: Failure, state: OPEN),
        (t: "2s", call: 3, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "2s", call: 4, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "100s", call: 3, act: Failure, state: HALF_OPEN),
        // [F S]: 2 = min(2, 2) results, 50% ≥ 50 → OPEN
        (t: "200s", call: 4, act: Success, state: OPEN),
    ]"#,
    );
}

/// `maxWaitDurationInHalfOpenState` in whole milliseconds (`HalfOpenState`'s constructor:
/// `toMillis()`, and a timer only when it is ≥ 1): 900 µs sets no timer, 1.5 ms a 1 ms one.
#[test]
fn half_open_timer_in_whole_milliseconds() {
    for (max_wait, timer) in [("900us", "Off"), ("1500us", r#"At("2.001s")"#)] {
        let mut b = breaker(&format!(
            r#"CircuitBreaker(name: "b", sliding_window_size: 1, minimum_number_of_calls: 1,
               wait_duration_in_open_state: "1s", max_wait_duration_in_half_open_state: "{max_wait}")"#
        ));
        run(
            &mut b,
            &format!(
                r#"[
            (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
            (t: "0s", call: 1, act: Failure, state: OPEN),
            (t: "2s", call: 2, act: Call, expect: Some(Pass), state: HALF_OPEN, timer: Some({timer})),
        ]"#
            ),
        );
    }
}

/// DISABLED (`transitionToDisabledState`): every call permitted, nothing recorded, no
/// transition; METRICS_ONLY (`transitionToMetricsOnlyState`): every call permitted and
/// recorded, the thresholds never open it. Switching one on leaves the others off;
/// switching it off closes the breaker with fresh metrics.
#[test]
fn disabled_and_metrics_only_states() {
    let mut b = breaker(
        r#"CircuitBreaker(name: "b", sliding_window_size: 2, minimum_number_of_calls: 2,
           wait_duration_in_open_state: "1s")"#,
    );
    let s = |secs: u64| SimTime(secs * 1_000_000_000);
    // Each switch is one `state_change` event (the script checks the others).
    let switch = |b: &mut super::CircuitBreaker, from, to, at| {
        let mut e = vec![];
        b.take_events(&mut e);
        assert_eq!(e, vec![state_event(at, from, to)]);
    };
    b.set_disabled(true, s(0));
    switch(&mut b, BreakerState::Closed, BreakerState::Disabled, s(0));
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: DISABLED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: DISABLED),
        (t: "1s", call: 1, act: Failure, state: DISABLED),
        // [F F] would open: nothing is recorded
        (t: "1s", call: 2, act: Failure, state: DISABLED),
    ]"#,
    );
    assert_eq!(b.snapshot().calls, 0);
    b.set_metrics_only(true, s(2));
    switch(&mut b, BreakerState::Disabled, BreakerState::MetricsOnly, s(2));
    assert!(!b.spec().disabled && b.spec().metrics_only, "one special state at a time");
    run(
        &mut b,
        r#"[
        (t: "2s", call: 3, act: Call, expect: Some(Pass), state: METRICS_ONLY),
        (t: "2s", call: 4, act: Call, expect: Some(Pass), state: METRICS_ONLY),
        (t: "3s", call: 3, act: Failure, state: METRICS_ONLY),
        // [F F]: 100% ≥ 50% but METRICS_ONLY never opens
        (t: "3s", call: 4, act: Failure, state: METRICS_ONLY),
        (t: "3s", call: 5, act: Call, expect: Some(Pass), state: METRICS_ONLY),
    ]"#,
    );
    assert_eq!((b.snapshot().calls, b.snapshot().failed), (2, 2), "recorded");
    b.set_metrics_only(false, s(4));
    switch(&mut b, BreakerState::MetricsOnly, BreakerState::Closed, s(4));
    assert_eq!(b.snapshot().calls, 0, "fresh metrics on CLOSED");
    run(
        &mut b,
        r#"[
        (t: "4s", call: 5, act: Failure, state: CLOSED),
        (t: "4s", call: 6, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "4s", call: 6, act: Failure, state: OPEN),
    ]"#,
    );
    b.check_invariants();
}

/// Scripted state changes (`act: To(STATE)`): Resilience4j's `transitionTo…State()` at an
/// instant, whatever the window says. Exponential open wait 1 s × 2 (attempt n waits
/// 2^(n−1) s): `transitionToOpenState` counts an attempt like an opening by the window,
/// `transitionToClosedState` resets the attempts, `transitionToHalfOpenState` starts an
/// episode with the full permits even before the open wait ends; a special state entered
/// this way is left by the next transition; a transition to the current state does nothing.
#[test]
fn scripted_state_changes_follow_the_librarys_transitions() {
    let mut b = breaker(
        r#"CircuitBreaker(name: "b", sliding_window_size: 4, minimum_number_of_calls: 4,
           wait_duration_in_open_state: "1s", enable_exponential_backoff: true,
           exponential_backoff_multiplier: 2.0, permitted_number_of_calls_in_half_open_state: 2)"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        // Forced open with an empty window: attempt 1, OPEN until 1 s + 1 s.
        (t: "1s", act: To(OPEN), state: OPEN, timer: Some(Off)),
        (t: "1s", call: 2, act: Call, expect: Some(Reject), state: OPEN),
        // A call admitted before: its result in OPEN is carried, not checked.
        (t: "1.5s", call: 1, act: Success, state: OPEN),
        // Exactly at 2 s still OPEN; a second To(OPEN) from OPEN is nothing.
        (t: "2s", call: 3, act: Call, expect: Some(Reject), state: OPEN),
        (t: "2s", act: To(OPEN), state: OPEN),
        // HALF_OPEN on demand: 2 permits.
        (t: "2s", act: To(HALF_OPEN), state: HALF_OPEN),
        (t: "2s", call: 4, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "2s", call: 5, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "2s", call: 6, act: Call, expect: Some(Reject), state: HALF_OPEN),
        // Back to OPEN from HALF_OPEN: attempt 2, waits 2 s → until 4.1 s.
        (t: "2.1s", act: To(OPEN), state: OPEN),
        (t: "4.1s", call: 7, act: Call, expect: Some(Reject), state: OPEN),
        (t: "4.100000001s", call: 8, act: Call, expect: Some(Pass), state: HALF_OPEN),
        // CLOSED resets the attempts; the old probes' results land in a fresh window.
        (t: "4.2s", act: To(CLOSED), state: CLOSED),
        (t: "4.2s", call: 4, act: Failure, state: CLOSED),
        (t: "4.2s", call: 5, act: Failure, state: CLOSED),
        (t: "4.2s", call: 8, act: Failure, state: CLOSED),
        // FORCED_OPEN, then OPEN (leaves it): attempt 1 again (reset), until 6 s + 1 s.
        (t: "5s", act: To(FORCED_OPEN), state: FORCED_OPEN),
        (t: "5s", call: 9, act: Call, expect: Some(Reject), state: FORCED_OPEN),
        (t: "6s", act: To(OPEN), state: OPEN),
        (t: "7s", call: 10, act: Call, expect: Some(Reject), state: OPEN),
        (t: "7.000000001s", call: 11, act: Call, expect: Some(Pass), state: HALF_OPEN),
        // DISABLED lets everything through; CLOSED leaves it.
        (t: "8s", act: To(DISABLED), state: DISABLED),
        (t: "8s", call: 12, act: Call, expect: Some(Pass), state: DISABLED),
        (t: "9s", act: To(CLOSED), state: CLOSED),
    ]"#,
    );
    // 10 changes: →OPEN, →HALF_OPEN, →OPEN, →HALF_OPEN (lazy), →CLOSED, →FORCED_OPEN,
    // →OPEN, →HALF_OPEN (lazy), →DISABLED, →CLOSED.
    assert_eq!(b.counters.state_changes, 10);
    assert!(!b.spec().forced_open && !b.spec().disabled && !b.spec().metrics_only);
}

/// A Sentinel degrade rule has no public transition: a script asking for one is refused.
#[test]
#[should_panic(expected = "a Sentinel degrade rule has no public state transition")]
fn a_degrade_rule_refuses_a_scripted_state_change() {
    let spec: DegradeRuleSpec =
        ron::from_str(r#"DegradeRule(name: "d", grade: ERROR_COUNT, count: 1, time_window: 1)"#)
            .unwrap();
    let mut d = DegradeBreaker::new(&spec);
    run(&mut d, r#"[(t: "1s", act: To(OPEN), state: OPEN)]"#);
}
