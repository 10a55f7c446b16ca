//! Resilience4j's `RateLimiter` (`AtomicRateLimiter`) through the world: the admitted rate
//! under steady Poisson overload against the closed form, the `Blocking` refusal's wait,
//! run-time changes, invariants after every event and determinism.

use crate::support::{cfg, get, load, run_checked, stepped};
use models::outcome::{Outcome, Reason};

/// Poisson arrivals λ = 200/s (mean gap 5 ms) into a limiter of 10 permits per 100 ms
/// (100/s: demand is twice the limit); one call per request, 1 ms of service on 100 servers
/// (nothing queues downstream).
const STEADY: &str = r#"Scenario(
    name: "r4j-rate-limiter",
    sources: [(name: "s", interarrival: Exponential(mean: "5ms"), target: "c")],
    rate_limiters: [RateLimiter(name: "r", limit_for_period: 10, limit_refresh_period: "100ms",
                                timeout_duration: "TIMEOUT", mode: MODE)],
    call_sites: [(name: "c", governors: [RateLimiter("r")], upstream: "b", timeout: "10s")],
    stations: [(name: "b", servers: 100, service: Constant("1ms"))],
)"#;

const LIMIT: u64 = 10;
const MEAN_ARRIVALS: f64 = 20.0; // λ × period = 200/s × 0.1 s
const RUN_S: u64 = 100;
const CYCLES: u64 = RUN_S * 10;

fn scenario(timeout: &str, mode: &str) -> models::Scenario {
    load(&STEADY.replace("TIMEOUT", timeout).replace("MODE", mode))
}

/// Mean and variance of min(N, L) for N ~ Poisson(m).
fn capped_poisson(m: f64, l: u64) -> (f64, f64) {
    let (mut pk, mut e, mut e2, mut below) = ((-m).exp(), 0.0, 0.0, 0.0);
    for k in 0..l {
        e += k as f64 * pk;
        e2 += (k * k) as f64 * pk;
        below += pk;
        pk *= m / (k + 1) as f64;
    }
    let (l, above) = (l as f64, 1.0 - below);
    let (mean, second) = (e + l * above, e2 + l * l * above);
    (mean, second - mean * mean)
}

/// Without a wait (`timeout_duration` 0) every cycle starts with exactly L = 10 permits
/// (`calculateNextState`: min(p + n·L, L) with p ≥ 0) and admits min(Nᵢ, L) of its Nᵢ
/// arrivals, Nᵢ ~ Poisson(λ·period = 20) independent across cycles (Poisson increments).
/// So over 1000 cycles `passed` has mean 1000·E[min(N, 10)] and variance
/// 1000·Var(min(N, 10)); each seed within 5 standard deviations, never above 10 per cycle
/// (the admitted rate is limit/period = 100/s less the cycles with fewer than 10 arrivals).
#[test]
fn admitted_rate_without_waiting_matches_the_closed_form() {
    let (mean, var) = capped_poisson(MEAN_ARRIVALS, LIMIT);
    let expect = CYCLES as f64 * mean;
    let tol = 5.0 * (CYCLES as f64 * var).sqrt();
    let sc = scenario("0s", "Reactive");
    for seed in 0..3 {
        let r = run_checked(&sc, &cfg(seed, RUN_S));
        let passed = get(&r, "rate_limiter.r.passed");
        eprintln!("seed {seed}: passed {passed} (closed form {expect:.1} ± {tol:.1})");
        assert!((passed - expect).abs() <= tol, "{passed} vs {expect} ± {tol}");
        assert!(passed <= (CYCLES * LIMIT) as f64);
        assert_eq!(get(&r, "rate_limiter.r.reserved"), 0.0, "no wait allowed");
        let src = |k: &str| get(&r, &format!("source.s.{k}"));
        assert_eq!(get(&r, "rate_limiter.r.rejected"), src("rejected_rate_limited"));
    }
}

/// With `timeout_duration` 1 s (ten cycles of reservations) under overload every cycle's
/// permits are taken (reserved up to 1 s ahead by the 200 calls/s): completions by T =
/// 100 s are the permits of the cycles starting before T, 10 × 1000 = 10,000 at most (a
/// call woken at T itself completes 1 ms later), and at least 10,000 − 10 (only cycle 0 can
/// find fewer than 10 calls: its permits are not reserved ahead; P(N < 10) = 0.5 %).
/// Decisions (passed + reserved) are bounded by the permits of the cycles starting before
/// T + 1 s: 10 × 1011. `Blocking`: every refused request ends exactly 1 s after it arrived
/// (`waitForPermission(timeoutInNanos)`), every admitted one within 1 s + 1 ms.
#[test]
fn admitted_rate_with_reservations_is_the_limit() {
    let sc = scenario("1s", "Blocking");
    let r = run_checked(&sc, &cfg(7, RUN_S));
    let src = |k: &str| get(&r, &format!("source.s.{k}"));
    let completed = src("completed");
    eprintln!("completed {completed} (limit·cycles = {})", CYCLES * LIMIT);
    assert!(completed <= (CYCLES * LIMIT) as f64 && completed >= (CYCLES * LIMIT - LIMIT) as f64);
    let decided = get(&r, "rate_limiter.r.passed") + get(&r, "rate_limiter.r.reserved");
    assert!(decided <= (LIMIT * (CYCLES + 11)) as f64, "{decided}");
    let second = 1_000_000_000;
    let (mut refused, mut ok) = (0, 0);
    for q in r.requests.iter().filter(|q| q.end.is_some()) {
        let took = q.end.unwrap().0 - q.arrival.0;
        match q.outcome {
            Some(Outcome::Rejected(Reason::RateLimited)) => {
                assert_eq!(took, second, "a refusal waits out the timeout");
                refused += 1;
            }
            Some(Outcome::Success) => {
                assert!(took <= second + 1_000_000, "{took}");
                ok += 1;
            }
            o => panic!("unexpected outcome {o:?}"),
        }
    }
    assert!(refused > 0 && ok as f64 == completed, "{refused} refused, {ok} ok");
}

/// Invariants after every event with both run-time parameters changed; the changes were
/// applied (recorded) and mattered; same seed, same fingerprint (`run_checked` runs twice).
#[test]
fn invariants_hold_and_parameters_change_at_run_time() {
    let text = STEADY.replace("TIMEOUT", "200ms").replace("MODE", "Blocking").replace(
        r#"stations: [(name: "b", servers: 100, service: Constant("1ms"))],"#,
        r#"stations: [(name: "b", servers: 100, service: Constant("1ms"))],
    timeline: [
        (at: "10s", path: "rate_limiter.r.limit_for_period", value: Count(30)),
        (at: "20s", path: "rate_limiter.r.timeout_duration", value: Duration("0s")),
    ],"#,
    );
    let sc = load(&text);
    let c = cfg(3, 30);
    stepped(&sc, &c);
    let r = run_checked(&sc, &c);
    let changes = r.state_events.iter().filter(|e| e.kind == "config_change").count();
    assert_eq!(changes, 2);
    let base = scenario("200ms", "Blocking");
    assert_ne!(r.fingerprint, models::run(&base, &c).fingerprint, "the changes mattered");
    // From 20 s on nothing waits: every refusal after it is at once (latency 0).
    let mut late_refusals = r
        .requests
        .iter()
        .filter(|q| q.arrival.0 >= 20_000_000_000 && q.end.is_some())
        .filter(|q| q.outcome == Some(Outcome::Rejected(Reason::RateLimited)));
    assert!(late_refusals.clone().count() > 0);
    assert!(late_refusals.all(|q| q.end == Some(q.arrival)));
}

/// Import → run: Resilience4j's documented Spring Boot example
/// (`experiments/examples/import/application.yml`), imported with `partial` (its breaker's
/// Java predicate is left out) and pasted into a scenario whose call goes through its rate
/// limiter `backendA` (10 permits per 1 s, `timeoutDuration: 0`) and thread-pool bulkhead
/// `backendC` (1 thread, queue 1). Poisson arrivals at 50/s: a cycle of 1 s meets Poisson(50)
/// calls, fewer than 10 with probability ~1e-11, so exactly 10 pass per cycle: 300 in 30 s.
/// They are the first 10 arrivals of their cycle (~20 ms apart), each served 10 ms on the
/// bulkhead's single thread: the pool never exceeds 1 thread; a call finding the thread
/// busy and the queue full is refused `pool_full`; every passed call completes or is refused
/// there (the run ends 1 s after the last cycle's burst).
#[test]
fn the_documented_example_imports_and_runs() {
    let yml = include_str!("../../../experiments/examples/import/application.yml");
    let opts = models::import::Options { partial: true, ..Default::default() };
    let fragment = models::import::import(yml, &opts).expect("imports with partial");
    let text = format!(
        r#"Scenario(
    name: "r4j-docs-round-trip",
    sources: [(name: "api", interarrival: Exponential(mean: "20ms"), target: "backend")],
    {}
    call_sites: [(name: "backend", governors: [RateLimiter("backendA"), ThreadPoolBulkhead("backendC")],
                  upstream: "b")],
    stations: [(name: "b", servers: 4, service: Constant("10ms"))],
)"#,
        fragment.to_ron()
    );
    let sc = load(&text);
    let r = run_checked(&sc, &cfg(11, 30));
    let g = |k: &str| get(&r, k);
    assert_eq!(g("rate_limiter.backendA.passed"), 300.0);
    assert_eq!(g("rate_limiter.backendA.reserved"), 0.0, "timeoutDuration: 0");
    assert_eq!(g("thread_pool_bulkhead.backendC.largest_pool_size"), 1.0);
    let (done, full) = (g("source.api.completed"), g("source.api.rejected_pool_full"));
    eprintln!("completed {done}, refused by the bulkhead {full}");
    assert_eq!(done + full, 300.0);
    assert_eq!(full, g("thread_pool_bulkhead.backendC.rejected"));
    assert_eq!(g("source.api.rejected_rate_limited"), g("rate_limiter.backendA.rejected"));
}
