//! Governance incidents of docs/domain.md §6 as scenario pairs (the failure, and the fix), run
//! through the whole world: retry storm (11), hot-key stampede (15), queueing too long (7).
//! Breakers (13, 18) are in `incidents_breakers.rs`, quotas and fan-out (5) in
//! `incidents_quota.rs`. Every run is checked for determinism and conservation.

use crate::support::*;

/// Incident 11 — retry storm. A provider with a load curve: latency = 500 ms + 10 ms per
/// call in service (200 servers, so at most 0.5 + 199 × 0.01 = 2.49 s, above the 2 s
/// client timeout); no cancellation (timed-out work keeps its server). 50 req/s offered:
/// healthy, N = λ·S with S = 0.5 + 0.01·N ⇒ N = 25 / 0.5 = 50 in service, S ≈ 1 s.
/// A 10 s slowdown (×4, 30–40 s) makes every call time out.
/// * Naive retries (3 attempts, no backoff, no budget): every timed-out call is sent
///   again at once, 3 × 50 = 150 calls/s against a saturated capacity of 200 / 2.49 s ≈
///   80 calls/s: the station's queue grows for ever, every call times out, goodput stays
///   zero after the slowdown ended (metastable failure).
/// * Capped, jittered, budgeted retries (exponential 100 ms × 2 up to 2 s, full jitter,
///   retry budget ratio 0.1): at most 55 calls/s < 80: the backlog drains and the system
///   recovers to its 50 req/s goodput. The same with equal jitter and a gRPC retry
///   token bucket (10 tokens, ratio 0.1) instead of the ratio budget.
const STORM: &str = r#"Scenario(name: "retry_storm",
    sources: [(name: "chat", interarrival: Exponential(mean: "20ms"), target: "c")],
    retries: [RETRY],
    call_sites: [(name: "c", governors: [Retry("r")], upstream: "llm", timeout: "2s")],
    stations: [(name: "llm", servers: 200, service: Constant("500ms"), load_slope: "10ms")],
    timeline: [
        (at: "30s", path: "station.llm.latency_multiplier", value: Float(4.0)),
        (at: "40s", path: "station.llm.latency_multiplier", value: Float(1.0)),
    ],
)"#;

const NAIVE: &str = r#"(name: "r", max_attempts: 3, backoff: Fixed(wait_duration: "0s"))"#;
const SAFE_RATIO: &str = r#"(name: "r", max_attempts: 3,
    backoff: Exponential(wait_duration: "100ms", exponential_backoff_multiplier: 2.0,
                         exponential_max_wait_duration: "2s"),
    jitter: Full, budget: Ratio(max_ratio: 0.1, window: "10s"))"#;
const SAFE_GRPC: &str = r#"(name: "r", max_attempts: 3,
    backoff: Exponential(wait_duration: "100ms", exponential_backoff_multiplier: 2.0,
                         exponential_max_wait_duration: "2s"),
    jitter: Equal, budget: GrpcTokenBucket(max_tokens: 10.0, token_ratio: 0.1))"#;

#[test]
fn retry_storm_naive_retries_stay_collapsed_budgeted_ones_recover() {
    let run = |retry: &str| {
        let mut c = cfg(11, 120);
        c.sample_every = Some(sim_core::SimDuration::from_secs(10));
        run_checked(&load(&STORM.replace("RETRY", retry)), &c)
    };
    let (naive, ratio, grpc) = (run(NAIVE), run(SAFE_RATIO), run(SAFE_GRPC));
    // Goodput (successful requests per second, by end time) before, during and after.
    let g = |r: &models::RunOutput| {
        (goodput(r, 10.0, 30.0), goodput(r, 30.0, 40.0), goodput(r, 60.0, 120.0))
    };
    let (n, q, t) = (g(&naive), g(&ratio), g(&grpc));
    // Measured (seed 11): before 50.7/s for all three (the same traffic and luck); during
    // the slowdown 5.1/s for all three; 20–80 s after it ended: naive 0.0/s, ratio
    // budget 49.3/s, gRPC token bucket 50.9/s.
    for (before, during, _) in [n, q, t] {
        assert!((45.0..=56.0).contains(&before), "healthy before: {before}/s");
        assert!(during < 10.0, "the slowdown hurts everyone: {during}/s");
    }
    assert!(n.2 < 0.5, "naive retries stay collapsed after the slowdown: {}/s", n.2);
    assert!(q.2 > 45.0, "budgeted (ratio 0.1) retries recover: {}/s", q.2);
    assert!(t.2 > 45.0, "budgeted (gRPC tokens) retries recover: {}/s", t.2);
    // Collapsed: the station's queue (mean over the last 10 s) is long and still growing;
    // recovered: empty.
    let depth = |r: &models::RunOutput, at_s: u64| {
        let row = r.series.iter().find(|row| {
            row.metric == "station.llm.queue_depth.mean"
                && row.bucket_start_ns == at_s * 1_000_000_000
        });
        row.expect("sampled").value
    };
    // Measured: naive 5,767 → 6,447 waiting (100–110 s → 110–120 s; growing by ≈ 150 − 80
    // = 70 calls/s); budgeted 0.
    assert!(depth(&naive, 100) > 3000.0 && depth(&naive, 110) > depth(&naive, 100));
    assert_eq!((depth(&ratio, 110), depth(&grpc, 110)), (0.0, 0.0));
}

/// Incident 11, third fix: the same naive retries, but above a circuit breaker (no retry
/// while it is open: a `breaker_open` rejection is never retried). The breaker opens
/// during the slowdown, the load falls to the probes, the backlog drains, and the system
/// recovers although the retry policy itself is still naive.
const STORM_BREAKER: &str = r#"Scenario(name: "retry_storm_breaker",
    sources: [(name: "chat", interarrival: Exponential(mean: "20ms"), target: "c")],
    retries: [(name: "r", max_attempts: 3, backoff: Fixed(wait_duration: "0s"))],
    circuit_breakers: [(name: "b", sliding_window_size: 100, minimum_number_of_calls: 50,
        wait_duration_in_open_state: "5s", permitted_number_of_calls_in_half_open_state: 10)],
    call_sites: [(name: "c", governors: [Retry("r"), CircuitBreaker("b")], upstream: "llm",
                  timeout: "2s")],
    stations: [(name: "llm", servers: 200, service: Constant("500ms"), load_slope: "10ms")],
    timeline: [
        (at: "30s", path: "station.llm.latency_multiplier", value: Float(4.0)),
        (at: "40s", path: "station.llm.latency_multiplier", value: Float(1.0)),
    ],
)"#;

#[test]
fn retry_storm_no_retry_while_the_breaker_is_open_recovers() {
    let r = run_checked(&load(STORM_BREAKER), &cfg(11, 120));
    // Measured (seed 11): open at 33.1 s, a failed probe episode at 38.2 s (still slow),
    // another at 45.3 s closes it at 46.0 s. Goodput: 16.7/s in 40–50 s, 47.9/s in 50–60 s,
    // 50.5/s in 60–120 s (naive retries alone: 0.0/s).
    let changes: Vec<String> = r
        .state_events
        .iter()
        .filter(|e| e.kind == "state_change")
        .map(|e| format!("{} -> {}", e.from, e.to))
        .collect();
    let want = ["CLOSED -> OPEN", "OPEN -> HALF_OPEN", "HALF_OPEN -> OPEN"];
    assert_eq!(changes[..3], want);
    assert_eq!(changes.last().map(|s| s.as_str()), Some("HALF_OPEN -> CLOSED"));
    let closed = r.state_events.last().unwrap().time.0 as f64 / 1e9;
    assert!((40.0..50.0).contains(&closed), "closed at {closed} s");
    assert!(get(&r, "source.chat.rejected_breaker_open") > 500.0);
    let after = goodput(&r, 60.0, 120.0);
    assert!(after > 45.0, "recovered: {after}/s");
}

/// Incident 15 — hot-key stampede. 10,000 identical misses at one instant (a batch flood,
/// every request with key 1): without single-flight they all go upstream (100 servers ×
/// 200 ms: 10,000 / (100 / 0.2 s) = 20 s to serve them); with it, exactly one upstream call
/// answers all 10,000 at 200 ms.
const STAMPEDE: &str = r#"Scenario(name: "stampede",
    sources: [(name: "flood", interarrival: Constant("0s"), limit: Some(10000), target: "c",
               keys: Zipf(n: 1, s: 1.0))],
    single_flights: [(name: "sf")],
    call_sites: [(name: "c", governors: GOVS, upstream: "db")],
    stations: [(name: "db", servers: 100, service: Constant("200ms"))],
)"#;

#[test]
fn stampede_single_flight_makes_one_upstream_call() {
    let run = |govs: &str| {
        let mut c = cfg(15, 60);
        c.sample_every = Some(sim_core::SimDuration::from_secs(1));
        run_checked(&load(&STAMPEDE.replace("GOVS", govs)), &c)
    };
    let (plain, sf) = (run("[]"), run(r#"[SingleFlight("sf")]"#));
    // Without single-flight: 10,000 upstream calls, the last answered after 20 s.
    assert_eq!(series_total(&plain, "station.db.completed"), 10_000.0);
    assert_eq!(get(&plain, "source.flood.success"), 10_000.0);
    assert_eq!(get(&plain, "source.flood.latency_ms_max"), 20_000.0);
    // With it: exactly one upstream call; all 10,000 answered by it at 200 ms.
    assert_eq!(series_total(&sf, "station.db.completed"), 1.0);
    assert_eq!(get(&sf, "source.flood.offered"), 10_000.0);
    assert_eq!(get(&sf, "source.flood.success"), 10_000.0);
    assert_eq!(get(&sf, "source.flood.latency_ms_max"), 200.0);
    assert!(sf.requests.iter().all(|q| q.end == Some(sim_core::SimTime(200_000_000))));
}

/// Incident 7 — queueing too long. 1,500 closed-loop users (think 5 s, give up after
/// 10 s) call an LLM behind a Sentinel RATE_LIMITER rule of 100 QPS (10 ms apart). Offered
/// while answered at once: 1500 / 5.4 s ≈ 280 req/s, 2.8× the rate.
/// * `max_queueing_time_ms: 30000`: up to 3,000 calls wait in the pacing queue, each up to
///   30 s — long after its user gave up at 10 s: the answers come, but to nobody.
/// * `max_queueing_time_ms: 8000` and `max_queue_length: 300`: at most 300 wait, ≤ 3 s;
///   the others are rejected at once (`rate_limited`), users are answered either way.
const QUEUEING: &str = r#"Scenario(name: "queueing_too_long",
    sources: [(name: "users", target: "c",
               closed_loop: ClosedLoop(users: 3000, think_time: Exponential(mean: "5s"), give_up: "10s"))],
    flow_rules: [(name: "llm", rules: [RULE])],
    call_sites: [(name: "c", governors: [FlowRules("llm")], upstream: "llm", timeout: "10s")],
    stations: [(name: "llm", servers: 1000, service: Constant("400ms"))],
)"#;

#[test]
fn queueing_too_long_fails_on_client_timeout_capped_queue_rejects_fast() {
    let run = |rule: &str| run_checked(&load(&QUEUEING.replace("RULE", rule)), &cfg(7, 120));
    let long = run("(count: 100.0, control_behavior: RATE_LIMITER, max_queueing_time_ms: 30000)");
    let short = run(
        "(count: 100.0, control_behavior: RATE_LIMITER, max_queueing_time_ms: 8000, max_queue_length: 300)",
    );
    // Requests answered while their user still waited (≤ 10 s), 60–120 s. Measured (seed
    // 7): 30 s queue 0/s; 8 s + cap 100.0/s (the rule's full rate).
    let (late, fast) = (in_time(&long, 60.0, 120.0, 10.0), in_time(&short, 60.0, 120.0, 10.0));
    assert_eq!(late, 0.0, "with a 30 s queue every answer comes after its user left");
    assert!((99.0..=101.0).contains(&fast), "{fast}/s");
    // 30 s: median latency 30.5 s (30 s queue + 400 ms call), 12,798 users gave up;
    // 8 s + cap: median 3.4 s (300 places × 10 ms + 400 ms), nobody gave up.
    let (p50_long, p50_short) =
        (get(&long, "source.users.latency_ms_p50"), get(&short, "source.users.latency_ms_p50"));
    assert!((29_000.0..=31_000.0).contains(&p50_long), "{p50_long} ms");
    assert!((3_000.0..=3_500.0).contains(&p50_short), "{p50_short} ms");
    assert!(get(&long, "source.users.gave_up") > 10_000.0);
    assert_eq!(get(&short, "source.users.gave_up"), 0.0);
    // The fix rejects the excess at once (51,604 rate_limited, each at its arrival instant).
    assert!(get(&short, "source.users.rejected_rate_limited") > 40_000.0);
    let rejected_waits = short
        .requests
        .iter()
        .filter(|q| q.outcome == Some(models::Outcome::Rejected(models::Reason::RateLimited)))
        .map(|q| q.end.unwrap().0 - q.arrival.0);
    assert_eq!(rejected_waits.max(), Some(0), "rejection is immediate");
}
