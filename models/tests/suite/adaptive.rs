//! The AIMD adaptive concurrency limit through the world: a surge above the upstream's
//! capacity makes round trips exceed the limit's `timeout`, the limit backs off and the
//! excess is refused at once instead of queueing into the client's timeout.

use crate::support::{cfg, get, load, run_checked, stepped};
use models::RunConfig;
use sim_core::SimDuration;

/// 200 req/s (Poisson) into 10 servers × 40 ms (capacity 250/s, ρ = 0.8); from 20 s to
/// 40 s the rate doubles to 400/s (ρ = 1.6). Calls time out after 500 ms at the client.
/// GOVERNORS is the call site's stack.
const SURGE: &str = r#"Scenario(
    name: "aimd-surge",
    sources: [(name: "s", interarrival: Exponential(mean: "5ms"), target: "c")],
    aimd_limits: [AimdLimit(name: "a", initial_limit: 20, min_limit: 5, max_limit: 100,
                            backoff_ratio: 0.9, timeout: "200ms")],
    gradient2_limits: [Gradient2Limit(name: "g", initial_limit: 20, min_limit: 5, max_concurrency: 100)],
    call_sites: [(name: "c", governors: GOVERNORS, upstream: "llm", timeout: "500ms")],
    stations: [(name: "llm", servers: 10, service: Exponential(mean: "40ms"))],
    timeline: [
        (at: "20s", path: "source.s.rate_multiplier", value: Float(2.0)),
        (at: "40s", path: "source.s.rate_multiplier", value: Float(1.0)),
    ],
)"#;

fn config(seed: u64) -> RunConfig {
    let mut c = cfg(seed, 60);
    c.sample_every = Some(SimDuration::from_secs(1));
    c
}

#[test]
fn the_limit_backs_off_in_a_surge_and_sheds_the_excess_fast() {
    let with = load(&SURGE.replace("GOVERNORS", r#"[AimdLimit("a")]"#));
    let without = load(&SURGE.replace("GOVERNORS", "[]"));
    for seed in 0..3 {
        let a = run_checked(&with, &config(seed));
        let b = run_checked(&without, &config(seed));
        // Without a limit the surge's excess (≈ 150/s for 20 s) queues: waits pass 500 ms
        // and thousands of calls time out. With it, the round trips above 200 ms are drops
        // that cut the limit towards the servers (10) plus a short queue, so the excess is
        // refused at once and few calls ever wait 500 ms.
        let (ta, tb) = (get(&a, "source.s.failed_timeout"), get(&b, "source.s.failed_timeout"));
        assert!(tb > 1000.0, "seed {seed}: without a limit {tb} timeouts");
        assert!(ta * 4.0 < tb, "seed {seed}: {ta} timeouts with the limit vs {tb} without");
        assert!(get(&a, "source.s.rejected_gate_full") > 500.0, "the excess is refused");
        assert!(get(&a, "aimd_limit.a.dropped") > 0.0);
        assert_eq!(
            get(&a, "aimd_limit.a.passed"),
            get(&a, "aimd_limit.a.succeeded")
                + get(&a, "aimd_limit.a.dropped")
                + get(&a, "aimd_limit.a.ignored")
                + get(&a, "aimd_limit.a.in_flight_end"),
            "every passed call returns once or is still in flight"
        );
        // The limit is a gauge (time-weighted mean per 1 s bucket) within its bounds; it
        // falls during the surge.
        let limit: Vec<(u64, f64)> = a
            .series
            .iter()
            .filter(|r| r.metric == "aimd_limit.a.limit.mean")
            .map(|r| (r.bucket_start_ns / 1_000_000_000, r.value))
            .collect();
        assert!(!limit.is_empty(), "the limit is sampled");
        assert!(limit.iter().all(|&(_, v)| (5.0..=100.0).contains(&v)), "{limit:?}");
        let in_surge = limit.iter().filter(|(t, _)| (25..40).contains(t)).map(|p| p.1);
        assert!(in_surge.fold(f64::MAX, f64::min) < 60.0, "{limit:?}");
        // Each decrease is an event.
        let decreases = a.state_events.iter().filter(|e| e.kind == "limit_decrease").count();
        assert!(decreases > 0);
    }
}

#[test]
fn invariants_hold_after_every_event_and_bounds_change_at_run_time() {
    let text = SURGE.replace("GOVERNORS", r#"[AimdLimit("a")]"#).replace(
        r#"(at: "40s", path: "source.s.rate_multiplier", value: Float(1.0)),"#,
        r#"(at: "30s", path: "aimd_limit.a.max_limit", value: Count(12)),
        (at: "40s", path: "source.s.rate_multiplier", value: Float(1.0)),"#,
    );
    let sc = load(&text);
    let mut c = config(7);
    c.duration = SimDuration::from_secs(45);
    stepped(&sc, &c);
    let r = run_checked(&sc, &c);
    // From 30 s the limit is at most 12: the last sample before the end is ≤ 12.
    let last = r.series.iter().rfind(|s| s.metric == "aimd_limit.a.limit.mean").unwrap();
    assert!(last.value <= 12.0, "{}", last.value);
    assert!(r.state_events.iter().any(|e| e.kind == "config_change"));
}

#[test]
fn gradient2_shrinks_the_limit_when_latency_grows() {
    let with = load(&SURGE.replace("GOVERNORS", r#"[Gradient2Limit("g")]"#));
    let without = load(&SURGE.replace("GOVERNORS", "[]"));
    for seed in 0..3 {
        let a = run_checked(&with, &config(seed));
        let b = run_checked(&without, &config(seed));
        // Latency-based: in the surge queueing makes each sample's RTT exceed the long-term
        // average, the gradient (≥ 0.5) pulls the estimate down towards the servers plus
        // `queue_size`, so the excess is refused at once instead of timing out.
        let (ta, tb) = (get(&a, "source.s.failed_timeout"), get(&b, "source.s.failed_timeout"));
        assert!(ta * 4.0 < tb, "seed {seed}: {ta} timeouts with the limit vs {tb} without");
        assert!(get(&a, "source.s.rejected_gate_full") > 500.0, "the excess is refused");
        let limit = |from: u64, to: u64| -> f64 {
            let v: Vec<f64> = a
                .series
                .iter()
                .filter(|r| r.metric == "gradient2_limit.g.limit.mean")
                .filter(|r| (from..to).contains(&(r.bucket_start_ns / 1_000_000_000)))
                .map(|r| r.value)
                .collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        assert!((5.0..=100.0).contains(&limit(0, 60)));
        // The estimate grows (by `queue_size`, smoothed) only while the RTT stays within
        // `rtt_tolerance` (1.5×) of its long-term average: 10 servers at 40 ms admit about
        // 10 × 1.5 = 15 calls plus the growth step before the RTT crosses it, far below the
        // 100 the limit may reach. So in the surge it stays low.
        assert!(limit(25, 40) < 50.0, "{}", limit(25, 40));
    }
}
