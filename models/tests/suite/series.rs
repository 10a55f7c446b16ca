//! The call path's time series (docs/results.md, `timeseries`): per-bucket attempts,
//! retries, timeouts and 429s per call site, arrivals per upstream, breaker gauges and
//! refusals by state — each summed over the buckets equal to the run's own totals, and
//! none of them moving the fingerprint.

use crate::support::{get, load, run_checked, series_total};
use models::outcome::Outcome;
use models::{RunConfig, Scenario};
use sim_core::SimDuration;

/// `chat` calls `llm` through a retry (3 attempts) above a Resilience4j breaker; `llm`
/// fails 30% and from 20 s to 40 s hangs past the 1 s timeout (the breaker opens, refuses,
/// half-opens). `bulk` calls a GPU server with a queue of 4: 429s.
fn scenario() -> Scenario {
    load(
        r#"Scenario(name: "series",
        sources: [
            (name: "chat", interarrival: Exponential(mean: "20ms"), target: "site"),
            (name: "bulk", interarrival: Exponential(mean: "2ms"), target: "infer",
             prompt_tokens: Constant(512.0), output_tokens: Constant(64.0)),
        ],
        retries: [(name: "r", max_attempts: 3, backoff: Fixed(wait_duration: "50ms"))],
        circuit_breakers: [(name: "b", sliding_window_size: 20, minimum_number_of_calls: 10,
            wait_duration_in_open_state: "2s", permitted_number_of_calls_in_half_open_state: 3)],
        call_sites: [
            (name: "site", governors: [Retry("r"), CircuitBreaker("b")], upstream: "llm",
             timeout: "1s"),
            (name: "infer", upstream: "gpu"),
        ],
        stations: [(name: "llm", servers: 100, service: Constant("100ms"), error_rate: 0.3)],
        gpu_servers: [GpuServer(name: "gpu", max_num_seqs: 8, max_queue: 4)],
        timeline: [
            (at: "20s", path: "station.llm.latency_multiplier", value: Float(20.0)),
            (at: "40s", path: "station.llm.latency_multiplier", value: Float(1.0)),
        ],
    )"#,
    )
}

fn cfg(sample: bool) -> RunConfig {
    let mut c = RunConfig::new(3, SimDuration::from_secs(60));
    c.sample_every = sample.then(|| SimDuration::from_secs(1));
    c
}

#[test]
fn call_path_series_add_up_to_the_run_totals() {
    let sc = scenario();
    let r = run_checked(&sc, &cfg(true));
    let total = |m: &str| series_total(&r, m);
    // Every request's first attempt and every retry meet the breaker: those it permits are
    // sent (the attempts), the others refused.
    let attempts = total("call_site.site.attempts");
    let retries = total("call_site.site.retries");
    let refused = get(&r, "circuit_breaker.b.not_permitted");
    assert_eq!(attempts + refused, get(&r, "source.chat.offered") + retries);
    assert_eq!(total("station.llm.arrivals"), attempts, "one upstream behind the site");
    // The retry counts a retry when it decides it; the series when its back-off ends: the
    // difference is at most the requests still in their back-off at the end.
    let pending = get(&r, "retry.r.retries") - retries;
    assert!((0.0..=get(&r, "source.chat.in_flight_end")).contains(&pending), "{pending}");
    assert!(retries > 100.0, "5xx and timeouts are retried");
    // Timeouts: only while the station hangs (2 s > 1 s), none outside [20 s, 42 s).
    assert!(total("call_site.site.timeouts") > 10.0);
    let bucket = |m: &str, s: f64| {
        r.series
            .iter()
            .find(|row| row.metric == m && row.bucket_start_ns == (s * 1e9) as u64)
            .map_or(f64::NAN, |row| row.value)
    };
    for s in (0..19).chain(43..60) {
        assert_eq!(bucket("call_site.site.timeouts", s as f64), 0.0, "bucket {s}");
    }
    // 429s from the GPU server's full queue.
    let r429 = total("call_site.infer.upstream_429");
    assert!(r429 > 0.0);
    assert_eq!(r429, get(&r, "gpu_server.gpu.rejected_429"));
    assert_eq!(total("gpu_server.gpu.arrivals"), total("call_site.infer.attempts"));
    // The breaker: refusals by state add up to not_permitted; it opened (state 1) and
    // buffered at most its window.
    let refused: f64 = ["open", "half_open", "forced_open"]
        .iter()
        .map(|s| total(&format!("circuit_breaker.b.not_permitted_{s}")))
        .sum();
    assert_eq!(refused, get(&r, "circuit_breaker.b.not_permitted"));
    assert!(total("circuit_breaker.b.not_permitted_open") > 0.0);
    assert_eq!(total("circuit_breaker.b.not_permitted_forced_open"), 0.0);
    let max_of = |m: &str| {
        r.series.iter().filter(|row| row.metric == m).map(|row| row.value).fold(0.0, f64::max)
    };
    assert!(max_of("circuit_breaker.b.state.max") >= 1.0, "opened");
    assert!(max_of("circuit_breaker.b.buffered_calls.max") <= 20.0);
    // Failure rate in basis points: at least the 50% threshold when it opened.
    assert!(max_of("circuit_breaker.b.failure_rate_bp.max") >= 5_000.0);
    assert!(max_of("circuit_breaker.b.failed_calls.max") >= 10.0);
    // Observers only: the fingerprint with the series equals the one without sampling.
    let plain = models::run(&sc, &cfg(false));
    assert_eq!(plain.fingerprint, r.fingerprint);
}

/// A Sentinel degrade rule publishes its bucket (total, bad as failed or slow calls) and
/// blocks by state.
#[test]
fn degrade_rule_series() {
    let sc = load(
        r#"Scenario(name: "degrade",
        sources: [(name: "chat", interarrival: Exponential(mean: "10ms"), target: "site")],
        degrade_rules: [DegradeRule(name: "d", grade: ERROR_RATIO, count: 0.2, time_window: 2,
            min_request_amount: 5)],
        call_sites: [(name: "site", governors: [DegradeRule("d")], upstream: "llm")],
        stations: [(name: "llm", servers: 100, service: Constant("50ms"), error_rate: 0.3)],
    )"#,
    );
    let r = run_checked(&sc, &cfg(true));
    let blocked = series_total(&r, "degrade_rule.d.blocked_open")
        + series_total(&r, "degrade_rule.d.blocked_half_open");
    assert!(blocked > 0.0);
    assert_eq!(blocked, get(&r, "degrade_rule.d.blocked"));
    let max_of = |m: &str| {
        r.series.iter().filter(|row| row.metric == m).map(|row| row.value).fold(0.0, f64::max)
    };
    assert!(max_of("degrade_rule.d.failed_calls.max") >= 1.0);
    assert_eq!(max_of("degrade_rule.d.slow_calls.max"), 0.0, "an error-ratio rule");
    assert!(max_of("degrade_rule.d.failure_rate_bp.max") > 2_000.0);
}

/// Resilience4j's DISABLED and METRICS_ONLY set from the timeline (so from a session too):
/// a failing upstream opens the breaker; DISABLED from 10 s lets every call through and
/// records nothing, METRICS_ONLY from 20 s records but never opens, off at 30 s → CLOSED,
/// and it opens again. The state gauge and the `state_change` events show each step.
#[test]
fn special_states_from_the_timeline() {
    let sc = load(
        r#"Scenario(name: "special",
        sources: [(name: "chat", interarrival: Constant("10ms"), target: "site")],
        circuit_breakers: [(name: "b", sliding_window_size: 10, minimum_number_of_calls: 10,
            wait_duration_in_open_state: "1s")],
        call_sites: [(name: "site", governors: [CircuitBreaker("b")], upstream: "llm")],
        stations: [(name: "llm", servers: 100, service: Constant("20ms"), error_rate: 1.0)],
        timeline: [
            (at: "10s", path: "circuit_breaker.b.disabled", value: Bool(true)),
            (at: "20s", path: "circuit_breaker.b.metrics_only", value: Bool(true)),
            (at: "30s", path: "circuit_breaker.b.metrics_only", value: Bool(false)),
        ],
    )"#,
    );
    let r = run_checked(
        &sc,
        &RunConfig { sample_every: Some(SimDuration::from_secs(1)), ..cfg(false) },
    );
    let bucket = |m: &str, s: u64| {
        r.series
            .iter()
            .find(|row| row.metric == m && row.bucket_start_ns == s * 1_000_000_000)
            .map_or(f64::NAN, |row| row.value)
    };
    for s in 11..30 {
        let refused = bucket("circuit_breaker.b.not_permitted_open", s)
            + bucket("circuit_breaker.b.not_permitted_half_open", s);
        assert_eq!(refused, 0.0, "bucket {s}: every call permitted");
        assert_eq!(bucket("call_site.site.attempts", s), 100.0, "bucket {s}");
    }
    assert_eq!(bucket("circuit_breaker.b.state.max", 15), 4.0, "DISABLED");
    assert_eq!(bucket("circuit_breaker.b.buffered_calls.max", 15), 0.0, "nothing recorded");
    assert_eq!(bucket("circuit_breaker.b.state.max", 25), 5.0, "METRICS_ONLY");
    assert_eq!(bucket("circuit_breaker.b.buffered_calls.max", 25), 10.0, "recorded");
    assert!(bucket("circuit_breaker.b.not_permitted_open", 40) > 0.0, "open again after 30 s");
    let changes: Vec<String> = r
        .state_events
        .iter()
        .filter(|e| e.kind == "state_change" && e.time.0 >= 10_000_000_000)
        .take(3)
        .map(|e| format!("{}→{}", e.from, e.to))
        .collect();
    assert_eq!(changes[1..], ["DISABLED→METRICS_ONLY", "METRICS_ONLY→CLOSED"]);
    assert!(changes[0].ends_with("→DISABLED"), "{changes:?}");
}

/// Each degrade rule of a Sentinel resource publishes the series of a `DegradeRule` under
/// `sentinel_resource.<n>.degrade<j>.*`: the blocks of all its rules by state add up to the
/// resource's `degrade_blocked` (the chain's first refusal blocks, once), the error-ratio
/// rule's bad completions are failed calls, the slow-ratio rule's slow calls. The source's
/// arrivals series sums to `offered` (no warm-up).
#[test]
fn sentinel_resource_degrade_rules_publish_their_series() {
    let sc = load(
        r#"Scenario(name: "resource",
        sources: [(name: "chat", interarrival: Exponential(mean: "8ms"), target: "site")],
        sentinel_resources: [SentinelResource(name: "chat",
            flow_rules: [FlowRule(count: 100)],
            degrade_rules: [
                DegradeRule(name: "ratio", grade: ERROR_RATIO, count: 0.4, time_window: 1,
                    min_request_amount: 20),
                DegradeRule(name: "slow", grade: SLOW_REQUEST_RATIO, count: 300, time_window: 1,
                    slow_ratio_threshold: 0.3, min_request_amount: 20)])],
        call_sites: [(name: "site", governors: [SentinelResource("chat")], upstream: "llm")],
        stations: [(name: "llm", servers: 16, service: LogNormal(mean: "120ms", cv: 0.8),
            error_rate: 0.15)],
        timeline: [
            (at: "20s", path: "station.llm.error_rate", value: Float(0.6)),
            (at: "30s", path: "station.llm.error_rate", value: Float(0.05)),
            (at: "40s", path: "station.llm.latency_multiplier", value: Float(4.0)),
        ],
    )"#,
    );
    let r = run_checked(&sc, &cfg(true));
    let total = |m: &str| series_total(&r, m);
    let max_of = |m: &str| {
        r.series.iter().filter(|row| row.metric == m).map(|row| row.value).fold(0.0, f64::max)
    };
    assert_eq!(total("source.chat.arrivals"), get(&r, "source.chat.offered"));
    let p = "sentinel_resource.chat";
    let blocked: Vec<f64> = ["degrade0", "degrade1"]
        .iter()
        .map(|j| {
            total(&format!("{p}.{j}.blocked_open")) + total(&format!("{p}.{j}.blocked_half_open"))
        })
        .collect();
    assert!(blocked.iter().all(|&b| b > 0.0), "both rules blocked: {blocked:?}");
    assert_eq!(blocked.iter().sum::<f64>(), get(&r, &format!("{p}.degrade_blocked")));
    for j in ["degrade0", "degrade1"] {
        assert!(max_of(&format!("{p}.{j}.state.max")) >= 1.0, "{j} opened");
    }
    // The error-ratio rule opened on a failure rate above 40%; it sees no slow calls, the
    // slow-ratio rule no failed ones.
    assert!(max_of(&format!("{p}.degrade0.failure_rate_bp.max")) > 4_000.0);
    assert_eq!(max_of(&format!("{p}.degrade0.slow_calls.max")), 0.0);
    assert!(max_of(&format!("{p}.degrade1.slow_call_rate_bp.max")) > 3_000.0);
    assert_eq!(max_of(&format!("{p}.degrade1.failed_calls.max")), 0.0);
}

/// A time limiter's cut is a client timeout of its call site: with no `timeout` on the
/// site, `call_site.<n>.timeouts` sums to the limiter's `timeouts`.
#[test]
fn time_limiter_cuts_count_as_call_site_timeouts() {
    let sc = load(
        r#"Scenario(name: "tl",
        sources: [(name: "chat", interarrival: Exponential(mean: "20ms"), target: "c")],
        time_limiters: [(name: "t", timeout_duration: "150ms")],
        call_sites: [(name: "c", governors: [TimeLimiter("t")], upstream: "llm")],
        stations: [(name: "llm", servers: 100, service: Exponential(mean: "100ms"))],
    )"#,
    );
    let r = run_checked(&sc, &cfg(true));
    let timeouts = series_total(&r, "call_site.c.timeouts");
    assert!(timeouts > 100.0, "e^-1.5 of the calls: {timeouts}");
    assert_eq!(timeouts, get(&r, "time_limiter.t.timeouts"));
}

/// A class with two sources has its own latency histogram (`class.<c>.latency`): per
/// bucket its count is the sources' counts together and its p50/p95/p99 are the exact
/// nearest-rank quantiles of all the class's answered requests that ended in the bucket
/// (fewer than 4,096 a bucket, so the histogram is exact) — not one source's figure. The
/// sources differ tenfold in service time, so the class's median is neither source's.
#[test]
fn a_class_with_several_sources_has_its_own_latency_quantiles() {
    let sc = load(
        r#"Scenario(name: "class-latency",
        classes: [(name: "chat"), (name: "bulk")],
        sources: [
            (name: "fast", class: "chat", interarrival: Exponential(mean: "10ms"), target: "f"),
            (name: "slow", class: "chat", interarrival: Exponential(mean: "20ms"), target: "s"),
            (name: "batch", class: "bulk", interarrival: Exponential(mean: "50ms"), target: "f"),
        ],
        call_sites: [(name: "f", upstream: "quick"), (name: "s", upstream: "slow")],
        stations: [
            (name: "quick", servers: 100, service: Exponential(mean: "20ms")),
            (name: "slow", servers: 100, service: Exponential(mean: "200ms")),
        ],
    )"#,
    );
    let mut c = cfg(true);
    c.record_requests = true;
    let r = run_checked(&sc, &c);
    let value = |m: &str, b: u64| {
        r.series.iter().find(|row| row.metric == m && row.bucket_start_ns == b).map(|row| row.value)
    };
    let second = 1_000_000_000u64;
    let (mut checked, mut neither) = (0, 0);
    for b in (0..60).map(|s| s * second) {
        // The answered requests of class `chat` (index 0) that ended in the bucket.
        let mut lat: Vec<u64> = r
            .requests
            .iter()
            .filter(|q| q.class == 0)
            .filter(|q| matches!(q.outcome, Some(Outcome::Success | Outcome::Degraded(_))))
            .filter_map(|q| q.end.filter(|e| (b..b + second).contains(&e.0)).map(|e| e - q.arrival))
            .map(|d| d.0)
            .collect();
        lat.sort_unstable();
        let n = lat.len() as f64;
        assert_eq!(value("class.chat.latency.count", b), Some(n), "bucket {b}");
        let sources = value("source.fast.latency.count", b).unwrap_or(0.0)
            + value("source.slow.latency.count", b).unwrap_or(0.0);
        assert_eq!(sources, n, "bucket {b}: the class counts its sources' answers");
        if lat.is_empty() {
            continue;
        }
        for (q, name) in [(0.5, "p50"), (0.95, "p95"), (0.99, "p99")] {
            let rank = ((q * n).ceil() as usize).clamp(1, lat.len());
            let want = lat[rank - 1] as f64 / 1e6;
            assert_eq!(value(&format!("class.chat.latency.{name}_ms"), b), Some(want), "{b} {q}");
        }
        let p50 = value("class.chat.latency.p50_ms", b);
        if p50 != value("source.fast.latency.p50_ms", b)
            && p50 != value("source.slow.latency.p50_ms", b)
        {
            neither += 1;
        }
        checked += 1;
    }
    assert!(checked >= 55, "{checked} buckets with answers");
    assert!(neither > checked / 2, "the class median is its own ({neither} of {checked})");
    // A class with one source: its series is that source's.
    for q in ["count", "p50_ms", "p95_ms", "p99_ms"] {
        for b in (0..60).map(|s| s * second) {
            let m = |x: &str| value(&format!("{x}.latency.{q}"), b);
            assert_eq!(m("class.bulk"), m("source.batch"), "{q} {b}");
        }
    }
    // Observers only: the fingerprint with the class series equals the one without sampling.
    assert_eq!(models::run(&sc, &cfg(false)).fingerprint, r.fingerprint);
}
