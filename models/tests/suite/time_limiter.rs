//! The time limiter through the world: calls cut short from its level wherever they are
//! below it (parked at a lower gate, queued or in service at the station, in a lower
//! retry's back-off), the levels above recording the timeout, with conservation (gate
//! permits, calls, requests) and determinism checked after every run.

use crate::support::load;
use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::{RunConfig, RunOutput, Scenario};
use sim_core::SimDuration;

fn run(sc: &Scenario, seed: u64, secs: u64) -> RunOutput {
    let cfg = RunConfig::new(seed, SimDuration::from_secs(secs));
    let a = models::run(sc, &cfg);
    assert!(a.error.is_none(), "{:?}", a.error);
    assert!(a.violations.is_empty(), "invariants: {:?}", a.violations);
    let b = models::run(sc, &cfg);
    assert_eq!(a.fingerprint, b.fingerprint, "same seed, same run");
    let g = |c: &str| a.summary.get(&format!("source.s.{c}")).unwrap();
    assert_eq!(g("offered"), g("completed") + g("failed") + g("rejected") + g("in_flight_end"));
    a
}

fn get(r: &RunOutput, name: &str) -> f64 {
    r.summary.get(name).unwrap_or_else(|| panic!("no summary column {name}"))
}

/// 50 req/s against 5 servers × 200 ms (25/s): calls queue at the gate (10 permits, long
/// wait) and at the station; the limiter (300 ms) cuts them wherever they are, and the
/// breaker above it records the timeouts and opens.
const OVERLOAD: &str = r#"Scenario(
    name: "time-limiter",
    sources: [(name: "s", interarrival: Exponential(mean: "20ms"), target: "c")],
    gates: [(name: "g", permits: 10, acquire_timeout: "5s", max_waiting: 1000)],
    time_limiters: [(name: "t", timeout_duration: "300ms", cancel_running_future: CANCEL)],
    circuit_breakers: [(name: "b", sliding_window_size: 20, minimum_number_of_calls: 20,
        wait_duration_in_open_state: "1s")],
    call_sites: [(name: "c", governors: [CircuitBreaker("b"), TimeLimiter("t"), Gate("g")],
        upstream: "llm")],
    stations: [(name: "llm", servers: 5, service: Constant("200ms"), cancellation: true)],
)"#;

#[test]
fn timeouts_are_answered_from_the_limiter_level_and_recorded_above() {
    for cancel in [true, false] {
        let sc = load(&OVERLOAD.replace("CANCEL", &cancel.to_string()));
        for seed in 0..3 {
            let r = run(&sc, seed, 20);
            let timeouts = get(&r, "time_limiter.t.timeouts");
            assert!(timeouts > 100.0, "{timeouts}");
            // Every timeout ends its request (no retry, no other timeout in the scenario).
            assert_eq!(get(&r, "source.s.failed_timeout"), timeouts);
            // No success took longer than the limit (the breaker above never parks).
            assert!(get(&r, "source.s.latency_ms_max") <= 300.0);
            // The breaker above saw the timeouts as failures and opened.
            assert!(get(&r, "circuit_breaker.b.state_changes") >= 1.0);
            assert!(get(&r, "source.s.rejected_breaker_open") > 0.0);
            // cancel_running_future: the station drops the work; otherwise it runs on.
            let wasted = get(&r, "station.llm.abandoned_work");
            if cancel {
                assert_eq!(wasted, 0.0, "seed {seed}");
            } else {
                assert!(wasted > 0.0, "seed {seed}");
            }
        }
    }
}

/// Every upstream call fails after 50 ms; the retry below the limiter backs off 100 ms:
/// attempts at 0, 150, 300 (failing at 50, 200, 350), the next due at 450 — the limiter
/// (400 ms) cuts the call in its third back-off. Every request fails with a timeout, after
/// 3 retries.
const RETRY_BELOW: &str = r#"Scenario(
    name: "time-limiter-retry",
    sources: [(name: "s", interarrival: Constant("100ms"), target: "c")],
    time_limiters: [(name: "t", timeout_duration: "400ms")],
    retries: [(name: "r", max_attempts: 10, backoff: Fixed(wait_duration: "100ms"))],
    call_sites: [(name: "c", governors: [TimeLimiter("t"), Retry("r")], upstream: "llm")],
    stations: [(name: "llm", servers: 100, service: Constant("50ms"), error_rate: 1.0)],
)"#;

#[test]
fn a_retry_back_off_below_the_limiter_is_cut() {
    let sc = load(RETRY_BELOW);
    let r = run(&sc, 1, 10);
    let ended = get(&r, "source.s.offered") - get(&r, "source.s.in_flight_end");
    assert!(ended >= 95.0, "{ended}");
    assert_eq!(get(&r, "source.s.failed_timeout"), ended);
    assert_eq!(get(&r, "time_limiter.t.timeouts"), ended);
    // 3 retries per ended request, plus those of the requests still in flight (≤ 4 of
    // them, arriving every 100 ms during the last 400 ms, ≤ 3 retries each).
    let retries = get(&r, "retry.r.retries");
    assert!(retries >= 3.0 * ended && retries <= 3.0 * ended + 12.0, "{retries}");
    assert_eq!(get(&r, "retry.r.exhausted"), 0.0);
}

#[test]
fn bad_timeout_points_at_the_value() {
    let text = RETRY_BELOW.replace("\"400ms\"", "\"0s\"");
    let e = ron::from_str::<ScenarioSpec<ParamValue>>(&text).unwrap_err();
    // The row's range (`time_limiter.<name>.timeout_duration`), at the value's position.
    let want = "4:52-4:55: expected a duration string in [\"1ns\", \"24h\"], found \"0s\"";
    assert!(e.to_string().contains(want), "{e}");
}

/// A pooled call site: 4 connections (connect = 2 round trips of 20 ms … TLS), 50 req/s
/// against 4 × 400 ms: calls wait for a connection, connect, queue and run; the limiter
/// (250 ms) cuts them in every one of those places. Invariants (connections leased = calls
/// holding one, permits, calls) are checked after every single event.
const POOLED: &str = r#"Scenario(
    name: "time-limiter-pool",
    sources: [(name: "s", interarrival: Exponential(mean: "20ms"), target: "c")],
    gates: [(name: "g", permits: 6, acquire_timeout: "1s")],
    time_limiters: [(name: "t", timeout_duration: "250ms")],
    connection_pools: [ConnPool(name: "http", max_total: 4, max_per_route: 4, tcp_rtt: "20ms",
                                tls_round_trips: 2, server_idle_timeout: "60s")],
    call_sites: [(name: "c", governors: [TimeLimiter("t"), Gate("g")], upstream: "llm",
                  connection_pool: "http", timeout: "5s")],
    stations: [(name: "llm", servers: 4, queue_capacity: Some(2), service: Exponential(mean: "200ms"),
                cancellation: true)],
)"#;

#[test]
fn invariants_hold_after_every_event_with_cuts_everywhere() {
    let overload = OVERLOAD.replace("CANCEL", "false");
    for (text, secs) in [(POOLED, 10), (overload.as_str(), 5)] {
        let sc = load(text);
        let cfg = RunConfig::new(3, SimDuration::from_secs(secs));
        // Invariants after every event, clean end, same fingerprint as the plain run.
        let out = crate::support::stepped(&sc, &cfg);
        assert!(get(&out, "time_limiter.t.timeouts") > 10.0);
        let _ = run(&sc, 3, secs);
    }
}
