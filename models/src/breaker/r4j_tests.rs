//! Scripted tests of the Resilience4j breaker: every rule of docs/domain.md §7.1, expected values by
//! hand (the comments show the arithmetic). Script syntax: [`super::script`].

use super::script::run;
use super::*;
use crate::governor::Governor;
use sim_core::SimDuration;

pub(super) fn breaker(spec_ron: &str) -> CircuitBreaker {
    let spec: CircuitBreakerSpec = ron::from_str(spec_ron).unwrap_or_else(|e| panic!("{e}"));
    CircuitBreaker::new(&spec)
}

/// COUNT_BASED window of 4 (minimum 10 capped at 4), failure threshold 50% inclusive,
/// the ring dropping its oldest result, OPEN until strictly after openedAt + 5 s, then
/// exactly 2 probe permits and a verdict after min(10, 2) = 2 results.
#[test]
fn count_window_inclusive_threshold_lazy_half_open() {
    let mut b = breaker(
        r#"CircuitBreaker(name: "b", sliding_window_size: 4, minimum_number_of_calls: 10,
           wait_duration_in_open_state: "5s", permitted_number_of_calls_in_half_open_state: 2)"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 3, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 4, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 5, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 6, act: Call, expect: Some(Pass), state: CLOSED),
        // ring [F]: 1 < min(10, 4) = 4, no verdict
        (t: "10ms", call: 1, act: Failure, state: CLOSED),
        (t: "10ms", call: 2, act: Success, state: CLOSED),
        (t: "10ms", call: 3, act: Success, state: CLOSED),
        // [F S S S]: 1/4 = 25% < 50
        (t: "10ms", call: 4, act: Success, state: CLOSED),
        // [S S S F]: the first F fell out, 25%
        (t: "10ms", call: 5, act: Failure, state: CLOSED),
        // [S S F F]: 2/4 = 50% ≥ 50 → OPEN at 20 ms, until 5.02 s
        (t: "20ms", call: 6, act: Failure, state: OPEN, timer: Some(Off)),
        (t: "20ms", call: 7, act: Call, expect: Some(Reject), state: OPEN),
        // exactly openedAt + wait: still OPEN
        (t: "5.02s", call: 8, act: Call, expect: Some(Reject), state: OPEN),
        // 1 ns later: HALF_OPEN, first permit (2 → 1)
        (t: "5.020000001s", call: 9, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "5.020000001s", call: 10, act: Call, expect: Some(Pass), state: HALF_OPEN),
        // permits exhausted
        (t: "5.020000001s", call: 11, act: Call, expect: Some(Reject), state: HALF_OPEN),
        // 1 of 2 results; a recorded result does not give its permit back
        (t: "5.1s", call: 9, act: Success, state: HALF_OPEN),
        (t: "5.1s", call: 12, act: Call, expect: Some(Reject), state: HALF_OPEN),
        // 2 results, 0% < 50 → CLOSED (fresh window)
        (t: "5.2s", call: 10, act: Success, state: CLOSED),
        (t: "5.2s", call: 13, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "5.3s", call: 13, act: Failure, state: CLOSED),
    ]"#,
    );
    assert_eq!(b.snapshot().calls, 1, "the window was reset on close");
    assert_eq!((b.counters.not_permitted, b.counters.state_changes), (4, 3));
}

/// COUNT_BASED caps the minimum at the window size: window 2, minimum 3 → verdict after 2.
#[test]
fn count_window_caps_minimum() {
    let mut b =
        breaker(r#"CircuitBreaker(name: "b", sliding_window_size: 2, minimum_number_of_calls: 3)"#);
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "1s", call: 1, act: Failure, state: CLOSED),
        // 2 results = min(3, 2): 2/2 failed → OPEN
        (t: "1s", call: 2, act: Failure, state: OPEN),
    ]"#,
    );
}

/// TIME_BASED window of 2 one-second buckets; the minimum (3) is not capped; buckets are
/// whole seconds since t = 0.
#[test]
fn time_window_buckets_and_uncapped_minimum() {
    let mut b = breaker(
        r#"CircuitBreaker(name: "b", sliding_window_type: TIME_BASED, sliding_window_size: 2,
           minimum_number_of_calls: 3, wait_duration_in_open_state: "1s")"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 3, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 4, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 5, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0.5s", call: 1, act: Failure, state: CLOSED),
        // 2 results, 2 failed: a COUNT window of 2 would open (cap), TIME needs 3
        (t: "0.9s", call: 2, act: Failure, state: CLOSED),
        // second 2: window = seconds 1..=2, second 0 dropped → [S]
        (t: "2.5s", call: 3, act: Success, state: CLOSED),
        // [S F]: 2 < 3
        (t: "2.6s", call: 4, act: Failure, state: CLOSED),
        // second 3: seconds 2..=3 → [S F F] = 3 calls, 2/3 = 66.7% ≥ 50 → OPEN
        (t: "3.2s", call: 5, act: Failure, state: OPEN),
    ]"#,
    );
}

/// Slow = duration strictly greater than the threshold; slow failures count in both rates.
#[test]
fn slow_calls_are_strictly_longer_and_counted_in_both_rates() {
    let spec = r#"CircuitBreaker(name: "b", sliding_window_size: 2, minimum_number_of_calls: 2,
           failure_rate_threshold: 100, slow_call_rate_threshold: 50,
           slow_call_duration_threshold: "1s")"#;
    let mut b = breaker(spec);
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        // duration exactly 1 s: not slow
        (t: "1s", call: 1, act: Success, state: CLOSED),
        // [fast fast]: 0% slow
        (t: "1s", call: 2, act: Success, state: CLOSED),
        (t: "1s", call: 3, act: Call, expect: Some(Pass), state: CLOSED),
        // 1.000000001 s > 1 s: slow; [fast slow] = 50% ≥ 50 → OPEN
        (t: "2.000000001s", call: 3, act: Success, state: OPEN),
    ]"#,
    );
    // failure 100%, slow 100%: [slow F, slow S] has failure 50% < 100 but slow 2/2 = 100%
    // only if the slow failure counts as slow.
    let mut b =
        breaker(&spec.replace("slow_call_rate_threshold: 50", "slow_call_rate_threshold: 100"));
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "2s", call: 1, act: Failure, state: CLOSED),
        (t: "2s", call: 2, act: Success, state: OPEN),
    ]"#,
    );
}

/// Ignored outcomes are not recorded; rejected and failed outcomes from below are failures,
/// degraded ones successes (the default classification).
#[test]
fn classification_of_outcomes() {
    let mut b =
        breaker(r#"CircuitBreaker(name: "b", sliding_window_size: 2, minimum_number_of_calls: 2)"#);
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 3, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 4, act: Call, expect: Some(Pass), state: CLOSED),
        // business error: not recorded (else [S F] below would be 50% → OPEN one step early)
        (t: "1s", call: 1, act: Ignored, state: CLOSED),
        (t: "1s", call: 2, act: Degraded, state: CLOSED),
        // [S(degraded) F(429)]: 50% → OPEN
        (t: "1s", call: 3, act: Refused, state: OPEN),
        // late result while OPEN: recorded nowhere that matters
        (t: "1s", call: 4, act: Timeout, state: OPEN),
    ]"#,
    );
    assert_eq!((b.counters.ignored, b.counters.successful, b.counters.failed), (1, 1, 2));
}

/// HALF_OPEN permits given back by ignored outcomes and abandoned calls; a failing
/// half-open verdict re-opens with the same (constant) wait.
#[test]
fn half_open_permits_returned_by_ignored_and_abandoned_calls() {
    let mut b = breaker(
        r#"CircuitBreaker(name: "b", sliding_window_size: 2, minimum_number_of_calls: 2,
           wait_duration_in_open_state: "1s", permitted_number_of_calls_in_half_open_state: 2)"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "10ms", call: 1, act: Failure, state: CLOSED),
        // [F F] → OPEN until 1.01 s
        (t: "10ms", call: 2, act: Failure, state: OPEN),
        (t: "1.02s", call: 4, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "1.02s", call: 5, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "1.02s", call: 6, act: Call, expect: Some(Reject), state: HALF_OPEN),
        // ignored: permit back (0 → 1), nothing recorded
        (t: "1.1s", call: 4, act: Ignored, state: HALF_OPEN),
        (t: "1.1s", call: 7, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "1.1s", call: 8, act: Call, expect: Some(Reject), state: HALF_OPEN),
        // a cancelled probe gives its permit back too
        (t: "1.2s", call: 5, act: Abandon, state: HALF_OPEN),
        (t: "1.2s", call: 9, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "1.2s", call: 10, act: Call, expect: Some(Reject), state: HALF_OPEN),
        // [F]: 1 < min(2, 2)
        (t: "1.3s", call: 7, act: Failure, state: HALF_OPEN),
        // [F S]: 50% ≥ 50 → OPEN again, until 1.3 + 1 = 2.3 s
        (t: "1.3s", call: 9, act: Success, state: OPEN),
        (t: "2.3s", call: 11, act: Call, expect: Some(Reject), state: OPEN),
        (t: "2.300000001s", call: 11, act: Call, expect: Some(Pass), state: HALF_OPEN),
    ]"#,
    );
    assert_eq!(b.in_flight(), 1);
}

/// Automatic transition: the timer fires at openedAt + wait; a call at exactly that time
/// before the timer is still rejected.
#[test]
fn automatic_transition_by_timer() {
    let mut b = breaker(
        r#"CircuitBreaker(name: "b", sliding_window_size: 1, minimum_number_of_calls: 1,
           wait_duration_in_open_state: "5s", permitted_number_of_calls_in_half_open_state: 1,
           automatic_transition_from_open_to_half_open_enabled: true)"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED, timer: Some(Off)),
        (t: "1s", call: 1, act: Failure, state: OPEN, timer: Some(At("6s"))),
        (t: "6s", call: 2, act: Call, expect: Some(Reject), state: OPEN),
        (t: "6s", act: Wake, state: HALF_OPEN, timer: Some(Off)),
        (t: "6s", call: 3, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "7s", call: 3, act: Success, state: CLOSED, timer: Some(Off)),
    ]"#,
    );
}

/// Exponential open wait 5 s × 1.5 per re-open (5 s, 7.5 s, 11.25 s), reset on close.
#[test]
fn exponential_open_wait_grows_and_resets_on_close() {
    let mut b = breaker(
        r#"CircuitBreaker(name: "b", sliding_window_size: 1, minimum_number_of_calls: 1,
           wait_duration_in_open_state: "5s", enable_exponential_backoff: true,
           permitted_number_of_calls_in_half_open_state: 1)"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        // attempt 1: 5 s → until 5 s
        (t: "0s", call: 1, act: Failure, state: OPEN),
        (t: "5s", call: 2, act: Call, expect: Some(Reject), state: OPEN),
        (t: "5.000000001s", call: 2, act: Call, expect: Some(Pass), state: HALF_OPEN),
        // attempt 2: 5000 ms × 1.5 = 7500 ms → until 12.500000001 s
        (t: "5.000000001s", call: 2, act: Failure, state: OPEN),
        (t: "12.500000001s", call: 3, act: Call, expect: Some(Reject), state: OPEN),
        (t: "12.500000002s", call: 3, act: Call, expect: Some(Pass), state: HALF_OPEN),
        // attempt 3: 7500 × 1.5 = 11250 ms → until 23.750000002 s
        (t: "12.500000002s", call: 3, act: Failure, state: OPEN),
        (t: "23.750000002s", call: 4, act: Call, expect: Some(Reject), state: OPEN),
        (t: "23.750000003s", call: 4, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "24s", call: 4, act: Success, state: CLOSED),
        // attempts reset: 5 s again → until 29 s
        (t: "24s", call: 5, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "24s", call: 5, act: Failure, state: OPEN),
        (t: "29s", call: 6, act: Call, expect: Some(Reject), state: OPEN),
        (t: "29.000000001s", call: 6, act: Call, expect: Some(Pass), state: HALF_OPEN),
    ]"#,
    );
}

/// `IntervalFunction.ofExponentialBackoff` in whole ms, truncated per step, with a cap.
#[test]
fn open_wait_interval_function_table() {
    let mut s = CircuitBreakerSpec::with_defaults("b");
    assert_eq!(open_wait(&s, 7), SimDuration::from_secs(60), "constant by default");
    // Whole milliseconds (`Duration.toMillis()`): 1.9 ms waits 1 ms, 2.5 s 2,500 ms.
    for (ns, want_ms) in [(1_900_000, 1), (2_500_000_999, 2500), (1_000_000, 1)] {
        s.wait_duration_in_open_state = SimDuration(ns);
        assert_eq!(open_wait(&s, 1), SimDuration::from_ms(want_ms), "{ns} ns");
    }
    s.enable_exponential_backoff = true;
    s.wait_duration_in_open_state = SimDuration::from_ms(1001);
    // 1001 → 1501 (1501.5) → 2251 (2251.5) → 3376 (3376.5)
    for (attempt, ms) in [(1, 1001), (2, 1501), (3, 2251), (4, 3376)] {
        assert_eq!(open_wait(&s, attempt), SimDuration::from_ms(ms), "attempt {attempt}");
    }
    s.wait_duration_in_open_state = SimDuration::from_secs(5);
    s.exponential_max_wait_duration_in_open_state = Some(SimDuration::from_secs(10));
    // 5000, 7500, min(11250, 10000), stays at the cap
    for (attempt, ms) in [(1, 5000), (2, 7500), (3, 10_000), (50, 10_000)] {
        assert_eq!(open_wait(&s, attempt), SimDuration::from_ms(ms), "attempt {attempt}");
    }
    s.exponential_max_wait_duration_in_open_state = None;
    s.exponential_backoff_multiplier = 2.0;
    // 5000·2^(n−1) ms saturates at the longest duration instead of overflowing
    assert_eq!(open_wait(&s, 1000), SimDuration::MAX);
}

/// maxWaitDurationInHalfOpenState forces OPEN (default) or CLOSED when it elapses.
#[test]
fn max_wait_in_half_open_forces_a_state() {
    let spec = r#"CircuitBreaker(name: "b", sliding_window_size: 1, minimum_number_of_calls: 1,
           wait_duration_in_open_state: "1s", permitted_number_of_calls_in_half_open_state: 2,
           max_wait_duration_in_half_open_state: "2s")"#;
    let mut b = breaker(spec);
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 1, act: Failure, state: OPEN, timer: Some(Off)),
        (t: "1.5s", call: 2, act: Call, expect: Some(Pass), state: HALF_OPEN, timer: Some(At("3.5s"))),
        // forced OPEN at 3.5 s, until 4.5 s
        (t: "3.5s", act: Wake, state: OPEN, timer: Some(Off)),
        (t: "4.5s", call: 3, act: Call, expect: Some(Reject), state: OPEN),
        // the old probe's result lands in OPEN: no effect
        (t: "4.6s", call: 2, act: Success, state: OPEN),
        (t: "4.6s", call: 3, act: Call, expect: Some(Pass), state: HALF_OPEN, timer: Some(At("6.6s"))),
    ]"#,
    );
    let mut b = breaker(&spec.replace(
        "max_wait_duration_in_half_open_state",
        "transition_to_state_after_wait_duration: CLOSED, max_wait_duration_in_half_open_state",
    ));
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 1, act: Failure, state: OPEN),
        (t: "1.5s", call: 2, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "3.4s", act: Wake, state: HALF_OPEN),
        (t: "3.5s", act: Wake, state: CLOSED, timer: Some(Off)),
        (t: "3.6s", call: 3, act: Call, expect: Some(Pass), state: CLOSED),
    ]"#,
    );
}

pub(super) const PRIORITY: &str = r#"CircuitBreaker(name: "b", sliding_window_size: 1,
    minimum_number_of_calls: 1, wait_duration_in_open_state: "1s",
    permitted_number_of_calls_in_half_open_state: 1,
    half_open_wait: HalfOpenWait(max_wait: "500ms", max_waiting: 2))"#;

/// A P2 waiting first, a P0 arriving later: the freed permit goes to the P0; a woken call
/// that is cancelled passes the permit on; a full wait list rejects.
#[test]
fn priority_half_open_hands_permits_to_the_most_important() {
    let mut b = breaker(PRIORITY);
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 1, act: Failure, state: OPEN),
        (t: "2s", call: 2, class: 0, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "2s", call: 3, class: 2, act: Call, expect: Some(Wait("2.5s")), state: HALF_OPEN),
        (t: "2.1s", call: 4, class: 0, act: Call, expect: Some(Wait("2.6s")), state: HALF_OPEN),
        // max_waiting = 2
        (t: "2.1s", call: 5, class: 1, act: Call, expect: Some(Reject), state: HALF_OPEN),
        // the probe's business error frees its permit: P0 (call 4) before P2 (call 3)
        (t: "2.2s", call: 2, act: Ignored, state: HALF_OPEN, woken: [4]),
        // call 4 is cancelled: its permit goes to call 3
        (t: "2.3s", call: 4, act: Abandon, state: HALF_OPEN, woken: [3]),
        (t: "2.4s", call: 3, act: Success, state: CLOSED),
    ]"#,
    );
    assert_eq!(b.waiting(), 0);
}

/// Leaving HALF_OPEN: CLOSED wakes every waiter (priority order), OPEN answers them
/// rejected; a waiter whose deadline passes is forgotten.
#[test]
fn priority_half_open_waiters_fate() {
    let mut b = breaker(PRIORITY);
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 1, act: Failure, state: OPEN),
        (t: "2s", call: 2, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "2s", call: 3, class: 2, act: Call, expect: Some(Wait("2.5s")), state: HALF_OPEN),
        (t: "2s", call: 4, class: 1, act: Call, expect: Some(Wait("2.5s")), state: HALF_OPEN),
        (t: "2.1s", call: 2, act: Success, state: CLOSED, woken: [4, 3]),
        // the woken calls were admitted while CLOSED
        (t: "2.2s", call: 4, act: Success, state: CLOSED),
        (t: "2.2s", call: 3, act: Failure, state: OPEN),
        (t: "3.3s", call: 5, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "3.3s", call: 6, class: 2, act: Call, expect: Some(Wait("3.8s")), state: HALF_OPEN),
        (t: "3.3s", call: 7, class: 0, act: Call, expect: Some(Wait("3.8s")), state: HALF_OPEN),
        // call 6's deadline passes
        (t: "3.8s", call: 6, act: Abandon, state: HALF_OPEN),
        (t: "3.8s", call: 8, class: 2, act: Call, expect: Some(Wait("4.3s")), state: HALF_OPEN),
        (t: "3.9s", call: 5, act: Failure, state: OPEN, answered: [7, 8]),
    ]"#,
    );
    assert_eq!((b.waiting(), b.in_flight()), (0, 0));
}

/// Run-time threshold changes keep the window; the verdict waits for the next result.
#[test]
fn runtime_threshold_change_keeps_the_window() {
    let mut b = breaker(
        r#"CircuitBreaker(name: "b", sliding_window_size: 4, minimum_number_of_calls: 4,
           failure_rate_threshold: 60)"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 3, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 4, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 5, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 6, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "1s", call: 1, act: Success, state: CLOSED),
        (t: "1s", call: 2, act: Success, state: CLOSED),
        (t: "1s", call: 3, act: Failure, state: CLOSED),
        // [S S F F]: 50% < 60
        (t: "1s", call: 4, act: Failure, state: CLOSED),
    ]"#,
    );
    b.set_failure_rate_threshold(50.0);
    assert_eq!(b.state(), BreakerState::Closed, "no verdict without a result");
    run(
        &mut b,
        r#"[
        // [S F F S]: 50% ≥ 50 → OPEN
        (t: "2s", call: 5, act: Success, state: OPEN),
        (t: "2s", call: 6, act: Success, state: OPEN),
    ]"#,
    );
}

#[test]
fn spec_defaults_and_validation() {
    let s: CircuitBreakerSpec = ron::from_str(r#"CircuitBreaker(name: "llm")"#).unwrap();
    assert_eq!(s, CircuitBreakerSpec::with_defaults("llm"));
    let round: CircuitBreakerSpec = ron::from_str(&ron::to_string(&s).unwrap()).unwrap();
    assert_eq!(round, s);
    for (bad, msg) in [
        (
            r#"CircuitBreaker(name: "b", failure_rate_threshold: 0)"#,
            "expected a number in (0, 100], found 0",
        ),
        (
            r#"CircuitBreaker(name: "b", slow_call_rate_threshold: 100.5)"#,
            "in (0, 100], found 100.5",
        ),
        (
            r#"CircuitBreaker(name: "b", sliding_window_size: 0)"#,
            "an integer in [1, 1000000], found 0",
        ),
        (r#"CircuitBreaker(name: "b", wait_duration_in_open_state: "0s")"#, "[\"1ms\", "),
        (r#"CircuitBreaker(name: "b", minimum_number_of_calls: 0)"#, "in [1, 10000000], found 0"),
        (
            r#"CircuitBreaker(name: "b", exponential_backoff_multiplier: 0.5)"#,
            "a number in [1, 1000], found 0.5",
        ),
        (r#"CircuitBreaker(name: "b", record_exceptions: ["failed:oops"])"#, "unknown reason"),
        (r#"CircuitBreaker(name: "b", sliding_window_type: SLIDING)"#, "variant"),
        (r#"CircuitBreaker(name: "b", bogus: 1)"#, "bogus"),
    ] {
        let e = ron::from_str::<CircuitBreakerSpec>(bad).unwrap_err().to_string();
        assert!(e.contains(msg), "{bad}: {e}");
    }
}
