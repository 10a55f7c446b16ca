//! The metastability verdict on the published retry-storm threshold: a server of capacity
//! 300 req/s, callers that retry once after 1 s, a 10 s slowdown. After it, a system that
//! has a backlog times out every first attempt, so each request costs two services; it
//! drains only if 2λ < 300, i.e. it recovers only below λ = 150 req/s.

use crate::support::{get, load, run_checked};
use models::RunConfig;
use sim_core::SimDuration;

/// 30 servers × 100 ms (capacity exactly 300/s), unbounded queue, no cancellation (a
/// timed-out call keeps its place and its server). Base rate 100/s, scaled by RATE. Calls
/// time out at 1 s and are retried once after 1 s. From 30 s to 40 s every service starts
/// 10× slower (1 s: capacity 30/s), so a backlog of about 10 × (2λ − 30) calls builds.
pub const STORM: &str = r#"Scenario(
    name: "retry-storm-threshold",
    sources: [(name: "s", interarrival: Exponential(mean: "10ms"), target: "c", rate_multiplier: RATE)],
    retries: [(name: "r", max_attempts: 2, backoff: Fixed(wait_duration: "1s"))],
    call_sites: [(name: "c", governors: [Retry("r")], upstream: "llm", timeout: "1s")],
    stations: [(name: "llm", servers: 30, service: Constant("100ms"))],
    timeline: [
        (at: "30s", path: "station.llm.latency_multiplier", value: Float(10.0)),
        (at: "40s", path: "station.llm.latency_multiplier", value: Float(1.0)),
    ],
    recovery: Some(Recovery(trigger_start: "30s", trigger_end: "40s", baseline: "20s",
                            tolerance: 0.1, horizon: "240s", hold: "10s")),
)"#;

fn run(rate: f64, seed: u64) -> models::RunOutput {
    let sc = load(&STORM.replace("RATE", &format!("{rate:?}")));
    let mut c = RunConfig::new(seed, SimDuration::from_secs(300));
    c.warmup = SimDuration::from_secs(10);
    c.sample_every = Some(SimDuration::from_secs(1));
    run_checked(&sc, &c)
}

#[test]
fn recovers_only_below_half_the_capacity() {
    for seed in 0..2 {
        // Below the threshold the backlog (≈ 10 × (2λ − 30) ≤ 2,500 calls) drains at
        // 300 − 2λ ≥ 20/s: well within the 240 s horizon (≤ 125 s, then a 10 s hold).
        for rate in [1.0, 1.2, 1.4] {
            let r = run(rate, seed);
            assert_eq!(get(&r, "recovery.recovered"), 1.0, "λ = {}/s, seed {seed}", 100.0 * rate);
            let t = get(&r, "recovery.time_to_recover_s");
            assert!((0.0..=230.0).contains(&t), "λ = {}: {t}", 100.0 * rate);
            // Back at the baseline: amplification ≈ 1 (no retries), goodput ≈ λ.
            assert!(get(&r, "recovery.end_amplification") < 1.05);
            // … and almost no retries, before as after (a first attempt times out only
            // when its wait passes 1 s: none at ρ ≤ 0.47 with 30 servers).
            assert!(get(&r, "recovery.baseline_retry_share") < 0.01);
            assert!(get(&r, "recovery.end_retry_share") < 0.01);
            let g0 = get(&r, "recovery.baseline_goodput");
            assert!((g0 - 100.0 * rate).abs() < 0.1 * 100.0 * rate, "{g0}");
        }
        // Above it every request costs two services (300 > ... < 2λ): the queue grows at
        // 2λ − 300 ≥ 20/s for ever, every call times out, goodput stays near zero while
        // the server is busy with abandoned work (amplification ≈ 2, the attempt cap).
        for rate in [1.6, 2.0] {
            let r = run(rate, seed);
            assert_eq!(get(&r, "recovery.recovered"), 0.0, "λ = {}/s, seed {seed}", 100.0 * rate);
            assert!(get(&r, "recovery.time_to_recover_s").is_nan());
            assert!(get(&r, "recovery.end_goodput") < 0.1 * get(&r, "recovery.baseline_goodput"));
            let amp = get(&r, "recovery.end_amplification");
            assert!((1.4..=2.05).contains(&amp), "λ = {}: amplification {amp}", 100.0 * rate);
            // The loop's signature: every first attempt times out and is retried once, so
            // half the attempts sent are retries (vs none before the trigger).
            let share = get(&r, "recovery.end_retry_share");
            assert!((0.45..=0.55).contains(&share), "λ = {}: retry share {share}", 100.0 * rate);
            assert!(get(&r, "recovery.baseline_retry_share") < 0.01);
        }
    }
}

#[test]
fn without_series_the_verdict_is_empty_and_the_columns_stay() {
    let sc = load(&STORM.replace("RATE", "1.0"));
    let r = run_checked(&sc, &RunConfig::new(1, SimDuration::from_secs(60)));
    // No sampling: NaN (null in Parquet), the same columns as the template.
    assert!(get(&r, "recovery.recovered").is_nan());
    let names = |s: &models::summary::Summary| -> Vec<String> {
        s.values.iter().map(|(n, _)| n.clone()).collect()
    };
    assert_eq!(names(&r.summary), names(&models::run::summary_template(&sc)));
}

#[test]
fn the_verdict_never_changes_the_fingerprint() {
    // I9: observing a run does not change it. The verdict reads the time series, so its
    // columns are reported, not folded: sampling every 1 s, every 2 s or not at all gives
    // the same fingerprint (the verdict's values differ, the run does not).
    let sc = load(&STORM.replace("RATE", "1.0"));
    let at = |every: Option<u64>| {
        let mut c = RunConfig::new(3, SimDuration::from_secs(120));
        c.sample_every = every.map(SimDuration::from_secs);
        models::run(&sc, &c)
    };
    let (a, b, c) = (at(Some(1)), at(Some(2)), at(None));
    assert_eq!(a.fingerprint, b.fingerprint);
    assert_eq!(a.fingerprint, c.fingerprint);
    assert_eq!(get(&a, "recovery.recovered"), 1.0);
    assert!(get(&c, "recovery.recovered").is_nan());
}
