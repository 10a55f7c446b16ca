//! The adaptive concurrency limits through the world: a surge above the upstream's
//! capacity makes round trips grow (AIMD: past its `timeout`; Gradient2, Vegas, Envoy's
//! gradient controller: against their RTT baselines), the limit backs off and the excess is
//! refused at once instead of queueing into the client's timeout.

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
    vegas_limits: [VegasLimit(name: "v", max_concurrency: 100)],
    adaptive_concurrency_filters: [AdaptiveConcurrency(name: "e", concurrency_update_interval: "100ms",
                                                       min_rtt_calc_interval: "10s", max_concurrency_limit: 100)],
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
    for seed in 0..3 {
        // Latency-based: in the surge queueing makes each sample's RTT exceed the long-term
        // average, the gradient (≥ 0.5) pulls the estimate down towards the servers plus
        // `queue_size`, so the excess is refused at once instead of timing out.
        let a = with_fewer_timeouts(r#"[Gradient2Limit("g")]"#, seed);
        assert!(get(&a, "source.s.rejected_gate_full") > 500.0, "the excess is refused");
        let limit = |from, to| mean_gauge(&a, "gradient2_limit.g.limit.mean", from, to);
        assert!((5.0..=100.0).contains(&limit(0, 60)));
        // The estimate grows (by `queue_size`, smoothed) only while the RTT stays within
        // `rtt_tolerance` (1.5×) of its long-term average: 10 servers at 40 ms admit about
        // 10 × 1.5 = 15 calls plus the growth step before the RTT crosses it, far below the
        // 100 the limit may reach. So in the surge it stays low.
        assert!(limit(25, 40) < 50.0, "{}", limit(25, 40));
    }
}

/// Runs the surge with `governors` and without any, on one seed: the limit cuts the client
/// timeouts at least fourfold. Returns the run with the limit.
fn with_fewer_timeouts(governors: &str, seed: u64) -> models::RunOutput {
    let a = run_checked(&load(&SURGE.replace("GOVERNORS", governors)), &config(seed));
    let b = run_checked(&load(&SURGE.replace("GOVERNORS", "[]")), &config(seed));
    let (ta, tb) = (get(&a, "source.s.failed_timeout"), get(&b, "source.s.failed_timeout"));
    assert!(ta * 4.0 < tb, "{governors}, seed {seed}: {ta} timeouts vs {tb} without");
    a
}

/// The limit gauge's mean over buckets starting in `[from, to)` seconds.
fn mean_gauge(r: &models::RunOutput, metric: &str, from: u64, to: u64) -> f64 {
    let v: Vec<f64> = r
        .series
        .iter()
        .filter(|s| s.metric == metric)
        .filter(|s| (from..to).contains(&(s.bucket_start_ns / 1_000_000_000)))
        .map(|s| s.value)
        .collect();
    assert!(!v.is_empty(), "{metric} sampled");
    v.iter().sum::<f64>() / v.len() as f64
}

/// Every change of the limit is an event, and replaying the events from the initial limit
/// ends at `limit_end`.
fn events_replay_the_limit(r: &models::RunOutput, component: &str, initial: u64) {
    let mut limit = initial;
    let mut n = 0;
    for e in r.state_events.iter().filter(|e| e.component == component) {
        if e.kind == "limit_increase" || e.kind == "limit_decrease" {
            assert_eq!(e.from, limit.to_string(), "{component}: events chain");
            let to: u64 = e.to.parse().unwrap();
            assert_eq!(e.kind == "limit_increase", to > limit);
            limit = to;
            n += 1;
        }
    }
    assert!(n > 0, "{component}: the limit moved");
    assert_eq!(limit as f64, get(r, &format!("{component}.limit_end")));
}

#[test]
fn vegas_backs_off_on_queueing() {
    for seed in 0..3 {
        // Latency-based: once the servers (10) are busy every extra call queues, the RTT
        // exceeds the no-load RTT and `queue = limit × (1 − noload ÷ rtt)` passes beta,
        // so the limit falls by log10 steps and the surge's excess is refused at once.
        let a = with_fewer_timeouts(r#"[VegasLimit("v")]"#, seed);
        assert!(get(&a, "source.s.rejected_gate_full") > 500.0, "the excess is refused");
        assert!(mean_gauge(&a, "vegas_limit.v.limit.mean", 25, 40) < 50.0);
        assert!(get(&a, "vegas_limit.v.probes") > 0.0, "the no-load RTT is probed");
        events_replay_the_limit(&a, "vegas_limit.v", 20);
    }
}

#[test]
fn envoy_gradient_controller_pins_then_tracks_the_min_rtt() {
    for seed in 0..3 {
        let a = with_fewer_timeouts(r#"[AdaptiveConcurrency("e")]"#, seed);
        // A minRTT window every 10 s (+ up to 15 % jitter) over 60 s: 5 or 6 of them,
        // each pinning the limit to 3 until 50 samples are in.
        let windows = get(&a, "adaptive_concurrency.e.min_rtt_calculations");
        assert!((5.0..=7.0).contains(&windows), "{windows} minRTT windows");
        // The limit stays within [min_concurrency, max_concurrency_limit] and is lower in
        // the surge than in the calm.
        let (calm, surge) = (
            mean_gauge(&a, "adaptive_concurrency.e.limit.mean", 5, 20),
            mean_gauge(&a, "adaptive_concurrency.e.limit.mean", 25, 40),
        );
        assert!((3.0..=100.0).contains(&calm) && surge < calm, "calm {calm}, surge {surge}");
        let min_rtt = mean_gauge(&a, "adaptive_concurrency.e.min_rtt_msecs.mean", 5, 60);
        assert!((10.0..=60.0).contains(&min_rtt), "minRTT {min_rtt} ms (p50 of 40 ms service)");
        events_replay_the_limit(&a, "adaptive_concurrency.e", 3);
    }
}

/// Each Netflix limit wrapped in a `WindowedLimit` (window 10 samples, 1 s): the algorithm
/// takes a sample only when a window closes, and a window closes strictly after
/// `nextUpdateTime` = the previous close + `min(max(minRtt × 2, 1 s), 1 s)` = + 1 s. So
/// two changes of the limit are more than 1 s apart, and a 60 s run has fewer than 60 —
/// where the unwrapped limit, sampling every call (≈ 200 a second), changes many more
/// times. The events still chain to `limit_end`.
#[test]
fn a_windowed_limit_changes_at_most_once_a_window() {
    let w = r#"windowed: Some((window_size: 10, min_window_time: "1s", max_window_time: "1s")), "#;
    let kinds = [
        ("AimdLimit(name: \"a\", ", "AimdLimit(\"a\")", "aimd_limit.a"),
        ("Gradient2Limit(name: \"g\", ", "Gradient2Limit(\"g\")", "gradient2_limit.g"),
        ("VegasLimit(name: \"v\", ", "VegasLimit(\"v\")", "vegas_limit.v"),
    ];
    for (decl, governor, component) in kinds {
        let governors = format!("[{governor}]");
        let plain = SURGE.replace("GOVERNORS", &governors);
        let windowed = plain.replacen(decl, &format!("{decl}{w}"), 1);
        assert_ne!(plain, windowed);
        let changes = |text: &str| {
            let r = run_checked(&load(text), &config(1));
            events_replay_the_limit(&r, component, 20);
            let at: Vec<u64> = r
                .state_events
                .iter()
                .filter(|e| e.component == component && e.kind.starts_with("limit_"))
                .map(|e| e.time.0)
                .collect();
            at
        };
        let (p, q) = (changes(&plain), changes(&windowed));
        assert!(q.len() < 60, "{component}: {} changes in 60 s", q.len());
        assert!(q.windows(2).all(|t| t[1] - t[0] > 1_000_000_000), "{component}: {q:?}");
        assert!(p.len() > 2 * q.len(), "{component}: {} plain vs {} windowed", p.len(), q.len());
    }
}
