//! Scripted tests of the Sentinel 1.8.x degrade rules, expected values by hand (comments
//! show the arithmetic). Script syntax: [`super::script`].

use super::script::run;
use super::*;

fn rule(spec_ron: &str) -> DegradeBreaker {
    let spec: DegradeRuleSpec = ron::from_str(spec_ron).unwrap_or_else(|e| panic!("{e}"));
    spec.check().unwrap();
    DegradeBreaker::new(&spec)
}

/// ERROR_RATIO 0.5: opens on errors/total > 0.5 (not ≥) once min_request_amount (default 5)
/// completions are in; the single probe at or after openTime + time_window; a failed probe
/// re-opens with a new openTime; a good one closes with the bucket reset.
#[test]
fn error_ratio_strictly_greater_single_probe_and_reset() {
    let mut b = rule(
        r#"DegradeRule(name: "r", grade: ERROR_RATIO, count: 0.5, time_window: 2,
           stat_interval_ms: 10000)"#,
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
        (t: "0s", call: 7, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 20, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "100ms", call: 1, act: Failure, state: CLOSED),
        (t: "100ms", call: 2, act: Failure, state: CLOSED),
        (t: "100ms", call: 3, act: Failure, state: CLOSED),
        // 4 completions < 5: no verdict although 3/4 = 0.75
        (t: "100ms", call: 4, act: Success, state: CLOSED),
        // an abandoned call never completed: not counted, still 4 < 5
        (t: "100ms", call: 5, act: Abandon, state: CLOSED),
        // 3/5 = 0.6 > 0.5 → OPEN at 200 ms; retry at 200 + 2000 = 2200 ms
        (t: "200ms", call: 6, act: Failure, state: OPEN),
        (t: "2.199999999s", call: 8, act: Call, expect: Some(Reject), state: OPEN),
        // at (not after) the retry time: the probe
        (t: "2.2s", call: 8, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "2.2s", call: 9, act: Call, expect: Some(Reject), state: HALF_OPEN),
        // probe fails → OPEN, new retry at 2300 + 2000 = 4300 ms
        (t: "2.3s", call: 8, act: Failure, state: OPEN),
        (t: "4.299s", call: 10, act: Call, expect: Some(Reject), state: OPEN),
        (t: "4.3s", call: 10, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "4.4s", call: 10, act: Success, state: CLOSED),
        // bucket reset on close: without it 9 completions (5 bad) are in the 10 s bucket
        // and this failure would open at once; with it 1 < 5
        (t: "4.5s", call: 7, act: Failure, state: CLOSED),
    ]"#,
    );
    assert_eq!(b.bucket(), (1, 1));
    // The exact 0.5 case: 2 errors in 4 with min 4 stays CLOSED; a third error opens.
    let mut b = rule(
        r#"DegradeRule(name: "r", grade: ERROR_RATIO, count: 0.5, time_window: 1,
           min_request_amount: 4)"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 3, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 4, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 5, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "10ms", call: 1, act: Success, state: CLOSED),
        (t: "10ms", call: 2, act: Failure, state: CLOSED),
        (t: "10ms", call: 3, act: Refused, state: CLOSED),
        // 2/4 = 0.5, not > 0.5
        (t: "10ms", call: 4, act: Degraded, state: CLOSED),
        // 3/5 = 0.6 > 0.5
        (t: "10ms", call: 5, act: Timeout, state: OPEN),
    ]"#,
    );
}

/// ERROR_COUNT 2: errors > 2 in the current tumbling bucket (min 3, 1 s buckets); an
/// abandoned probe falls back to OPEN without a new openTime; any completion while
/// HALF_OPEN decides.
#[test]
fn error_count_tumbling_bucket_and_void_probes() {
    let mut b = rule(
        r#"DegradeRule(name: "r", grade: ERROR_COUNT, count: 2, time_window: 1,
           min_request_amount: 3)"#,
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
        (t: "0s", call: 7, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0.5s", call: 1, act: Failure, state: CLOSED),
        (t: "0.5s", call: 2, act: Failure, state: CLOSED),
        // bucket [0, 1000): 3 completions, 2 errors: not > 2
        (t: "0.5s", call: 3, act: Success, state: CLOSED),
        // bucket [1000, 2000) starts empty: 1 completion < 3
        (t: "1s", call: 4, act: Failure, state: CLOSED),
        (t: "1.1s", call: 5, act: Failure, state: CLOSED),
        // 3 errors > 2 → OPEN at 1100 ms, retry at 2100 ms
        (t: "1.1s", call: 6, act: Failure, state: OPEN),
        (t: "2.1s", call: 9, act: Call, expect: Some(Pass), state: HALF_OPEN),
        // the probe is abandoned: back to OPEN, retry time unchanged (2100 ms)
        (t: "2.2s", call: 9, act: Abandon, state: OPEN),
        (t: "2.2s", call: 10, act: Call, expect: Some(Pass), state: HALF_OPEN),
        (t: "2.3s", call: 10, act: Abandon, state: OPEN),
        (t: "2.3s", call: 11, act: Call, expect: Some(Pass), state: HALF_OPEN),
        // call 7 (admitted while CLOSED) completes first and decides: CLOSED, bucket reset
        (t: "2.4s", call: 7, act: Success, state: CLOSED),
        // the probe's later failure is an ordinary completion: 1 < 3
        (t: "2.5s", call: 11, act: Failure, state: CLOSED),
    ]"#,
    );
    assert_eq!(b.in_flight(), 0);
    assert_eq!((b.counters.blocked, b.counters.ignored, b.counters.abandoned), (0, 0, 2));
}

/// A business error (ignored: an exception the application does not trace) counts in the
/// total as a non-error — `ExceptionCircuitBreaker.onRequestComplete` adds every completed
/// entry to `totalCount` and to `errorCount` only when `entry.getError() != null` — and
/// closes the breaker when it ends the probe (`handleStateChangeWhenThresholdExceeded` with
/// no error: `fromHalfOpenToClose`). Dropping it instead would leave 3 < 5: CLOSED.
#[test]
fn business_errors_count_as_non_errors() {
    let mut b = rule(r#"DegradeRule(name: "r", grade: ERROR_RATIO, count: 0.5, time_window: 1)"#);
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 3, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 4, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 5, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "10ms", call: 1, act: Failure, state: CLOSED),
        (t: "10ms", call: 2, act: Ignored, state: CLOSED),
        (t: "10ms", call: 3, act: Failure, state: CLOSED),
        (t: "10ms", call: 4, act: Ignored, state: CLOSED),
        // 5 completions, 3 errors: 3/5 = 0.6 > 0.5 → OPEN at 10 ms, retry at 1010 ms
        (t: "10ms", call: 5, act: Failure, state: OPEN),
        (t: "1.01s", call: 6, act: Call, expect: Some(Pass), state: HALF_OPEN),
        // the probe ends with a business error: no traced error → CLOSED
        (t: "1.02s", call: 6, act: Ignored, state: CLOSED),
    ]"#,
    );
    assert_eq!(b.counters.ignored, 3);
    assert_eq!(b.bucket(), (0, 0), "reset on close");
}

/// SLOW_REQUEST_RATIO: slow when RT > 100 ms (whole ms), open when slow/total > 0.5; the
/// probe is judged by its RT.
#[test]
fn slow_request_ratio() {
    let mut b = rule(
        r#"DegradeRule(name: "r", grade: SLOW_REQUEST_RATIO, count: 100, time_window: 1,
           slow_ratio_threshold: 0.5, min_request_amount: 2)"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 3, act: Call, expect: Some(Pass), state: CLOSED),
        // RT 100 ms = count: not slow
        (t: "100ms", call: 1, act: Success, state: CLOSED),
        // RT 100.999999 ms → 100 whole ms: not slow; 0/2
        (t: "100.999999ms", call: 2, act: Failure, state: CLOSED),
        // RT 101 ms: slow; 1/3 = 0.33
        (t: "101ms", call: 3, act: Success, state: CLOSED),
        (t: "200ms", call: 4, act: Call, expect: Some(Pass), state: CLOSED),
        // RT 200 ms: slow; 2/4 = 0.5, not > 0.5
        (t: "400ms", call: 4, act: Success, state: CLOSED),
        (t: "400ms", call: 5, act: Call, expect: Some(Pass), state: CLOSED),
        // 3/5 = 0.6 > 0.5 → OPEN at 600 ms, retry 1600 ms
        (t: "600ms", call: 5, act: Success, state: OPEN),
        (t: "1.6s", call: 6, act: Call, expect: Some(Pass), state: HALF_OPEN),
        // probe RT 101 ms: slow → OPEN, retry 2701 ms
        (t: "1.701s", call: 6, act: Success, state: OPEN),
        (t: "2.7s", call: 7, act: Call, expect: Some(Reject), state: OPEN),
        (t: "2.701s", call: 7, act: Call, expect: Some(Pass), state: HALF_OPEN),
        // probe RT 100 ms, even failed: not slow → CLOSED
        (t: "2.801s", call: 7, act: Failure, state: CLOSED),
    ]"#,
    );
}

/// With slow_ratio_threshold 1.0 (the default), a ratio equal to 1.0 opens.
#[test]
fn slow_ratio_of_one_opens_on_equality() {
    let mut b = rule(
        r#"DegradeRule(name: "r", grade: SLOW_REQUEST_RATIO, count: 10, time_window: 1,
           min_request_amount: 2)"#,
    );
    run(
        &mut b,
        r#"[
        (t: "0s", call: 1, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 2, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "0s", call: 3, act: Call, expect: Some(Pass), state: CLOSED),
        (t: "5ms", call: 1, act: Success, state: CLOSED),
        // 1/2 slow
        (t: "20ms", call: 2, act: Success, state: CLOSED),
        // bucket rolls at 1 s: 1/1 slow, but 1 < 2
        (t: "1.02s", call: 3, act: Success, state: CLOSED),
        (t: "1.02s", call: 4, act: Call, expect: Some(Pass), state: CLOSED),
        // 2/2 = 1.0 = threshold 1.0 → OPEN
        (t: "1.04s", call: 4, act: Success, state: OPEN),
    ]"#,
    );
}

#[test]
fn spec_defaults_and_validation() {
    let s: DegradeRuleSpec =
        ron::from_str(r#"DegradeRule(name: "r", grade: ERROR_COUNT, count: 3, time_window: 10)"#)
            .unwrap();
    assert_eq!(s, DegradeRuleSpec::new("r", CircuitBreakerStrategy::ErrorCount, 3.0, 10));
    assert_eq!((s.min_request_amount, s.stat_interval_ms, s.slow_ratio_threshold), (5, 1000, 1.0));
    let round: DegradeRuleSpec = ron::from_str(&ron::to_string(&s).unwrap()).unwrap();
    assert_eq!(round, s);
    let r: DegradeRuleSpec =
        ron::from_str(r#"DegradeRule(name: "r", grade: ERROR_RATIO, count: 1.5, time_window: 1)"#)
            .unwrap();
    assert!(r.check().unwrap_err().contains("[0, 1]"));
    for (bad, msg) in [
        (
            r#"DegradeRule(name: "r", grade: ERROR_COUNT, count: -1, time_window: 1)"#,
            "in [0, 1000000000000], found -1",
        ),
        (
            r#"DegradeRule(name: "r", grade: ERROR_COUNT, count: 1, time_window: 0)"#,
            "in [1, 86400], found 0",
        ),
        (
            r#"DegradeRule(name: "r", grade: SLOW_REQUEST_RATIO, count: 1, time_window: 1,
               slow_ratio_threshold: 1.5)"#,
            "expected a number in [0, 1], found 1.5",
        ),
        (r#"DegradeRule(name: "r", grade: RT, count: 1, time_window: 1)"#, "variant"),
    ] {
        let e = ron::from_str::<DegradeRuleSpec>(bad).unwrap_err().to_string();
        assert!(e.contains(msg), "{bad}: {e}");
    }
}
