//! The SRE book's client-side adaptive throttler (`SreThrottler`) through the world: its
//! steady state when demand far exceeds the backend's capacity, against the closed form.

use crate::support::{cfg, get, load, run_checked, stepped};
use models::RunConfig;
use sim_core::SimDuration;

/// Poisson demand D = 200 calls/s into a backend whose quota admits C = 600 rpm = 10 calls/s
/// (a continuously refilled bucket: once empty, exactly C/s are admitted; the rest are
/// answered 429 at once); 100 servers × 10 ms, so nothing queues. One call per request, no
/// retry. The throttler: K = 2, window 120 s in 120 buckets of 1 s.
const STEADY: &str = r#"Scenario(
    name: "sre-throttle-steady",
    sources: [(name: "s", interarrival: Exponential(mean: "5ms"), target: "c")],
    sre_throttlers: [SreThrottler(name: "t", k: KVALUE)],
    call_sites: [(name: "c", governors: [SreThrottler("t")], upstream: "b", timeout: "10s")],
    stations: [(name: "b", servers: 100, service: Constant("10ms"), quota: "q")],
    quotas: [Quota(name: "q", rpm: Some(600))],
)"#;

const D: f64 = 200.0;
const C: f64 = 10.0;
const W: f64 = 120.0;
const WARMUP_S: u64 = 250;
const RUN_S: u64 = 850;

fn config(seed: u64) -> RunConfig {
    let mut c = RunConfig::new(seed, SimDuration::from_secs(RUN_S));
    c.warmup = SimDuration::from_secs(WARMUP_S);
    c.sample_every = Some(SimDuration::from_secs(10));
    c
}

/// The closed form. Over the trailing window W the throttler counts every call that
/// reached it, so `requests = D·W` whatever it rejects; the backend accepts
/// `min(x, C)` of the `x` calls/s it is offered. If x > C, `accepts = C·W`, and the
/// probability every call meets is `p = (D·W − K·C·W) / (D·W + 1)` (positive iff D > K·C),
/// which does not depend on x (no feedback loop: this is why the book counts the locally
/// rejected requests; counting only the calls sent, as failsafe-go does (and go-zero did,
/// #3837), makes it x = D(1 + KCW)/(xW + 1), x ≈ √(D·K·C)). Hence:
/// * the backend is offered x = D(1 − p) = D(1 + K·C·W) / (D·W + 1) ≈ K·C (here 20.0075/s
///   for K = 2), consistent with x > C iff K > 1;
/// * it accepts C/s and rejects x − C ≈ (K − 1)·C with 429 (10.0075/s for K = 2);
/// * the client drops D − x ≈ D − K·C locally (179.99/s);
/// * p ≈ 1 − K·C/D (0.89996 for K = 2).
///
/// The window's length cancels (R and A are counted over the same buckets); the quota's
/// initial burst (600 admitted at once) leaves the window after 120 s, inside the 250 s
/// warm-up. Each is checked per measured second (requests arriving after the warm-up, over
/// 600 s) within max(2 %, 4 standard errors over 5 seeds), for K = 2 and K = 3.
#[test]
fn steady_state_under_overload_matches_the_closed_form() {
    let secs = (RUN_S - WARMUP_S) as f64;
    for k in [2.0, 3.0] {
        let x = D * (1.0 + k * C * W) / (D * W + 1.0);
        let p = 1.0 - x / D;
        let sc = load(&STEADY.replace("KVALUE", &format!("{k:?}")));
        let mut rows: Vec<[f64; 4]> = Vec::new();
        for seed in 0..5 {
            let r = run_checked(&sc, &config(seed));
            let src = |c: &str| get(&r, &format!("source.s.{c}"));
            assert_eq!(src("failed"), 0.0, "nothing fails: the quota refuses, the servers idle");
            let gauge: Vec<f64> = r
                .series
                .iter()
                .filter(|s| {
                    s.metric == "sre_throttler.t.rejection_ppm.mean"
                        && s.bucket_start_ns >= WARMUP_S * 1_000_000_000
                })
                .map(|s| s.value / 1e6)
                .collect();
            assert!(gauge.len() >= 50, "the gauge is sampled: {}", gauge.len());
            rows.push([
                (src("completed") + src("rejected_upstream_429")) / secs,
                src("rejected_upstream_429") / secs,
                src("rejected_rate_limited") / secs,
                gauge.iter().sum::<f64>() / gauge.len() as f64,
            ]);
        }
        let want = [("offered to the backend", x), ("429", x - C), ("dropped", D - x), ("p", p)];
        for (i, (what, expect)) in want.into_iter().enumerate() {
            let v: Vec<f64> = rows.iter().map(|r| r[i]).collect();
            let n = v.len() as f64;
            let mean = v.iter().sum::<f64>() / n;
            let sd = (v.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            let tol = (0.02 * expect).max(4.0 * sd / n.sqrt());
            eprintln!("K = {k}: {what}: {mean:.4} (closed form {expect:.4}, tolerance {tol:.4})");
            assert!((mean - expect).abs() <= tol, "K = {k}: {what} {mean} vs {expect} ± {tol}");
        }
    }
}

/// Invariants after every event, with K and the cap changed at run time; the cap holds the
/// gauge at most 0.5 from the change on, and the throttler's counters add up.
#[test]
fn invariants_hold_and_parameters_change_at_run_time() {
    let text = STEADY.replace("KVALUE", "2.0").replace(
        r#"quotas: [Quota(name: "q", rpm: Some(600))],"#,
        r#"quotas: [Quota(name: "q", rpm: Some(600))],
    timeline: [
        (at: "20s", path: "sre_throttler.t.k", value: Float(1.5)),
        (at: "30s", path: "sre_throttler.t.max_rejection_probability", value: Float(0.5)),
    ],"#,
    );
    let sc = load(&text);
    let mut c = cfg(3, 60);
    c.sample_every = Some(SimDuration::from_secs(1));
    stepped(&sc, &c);
    let r = run_checked(&sc, &c);
    let changes = r.state_events.iter().filter(|e| e.kind == "config_change").count();
    assert_eq!(changes, 2);
    let after: Vec<f64> = r
        .series
        .iter()
        .filter(|s| {
            s.metric == "sre_throttler.t.rejection_ppm.max" && s.bucket_start_ns >= 31_000_000_000
        })
        .map(|s| s.value)
        .collect();
    assert!(!after.is_empty() && after.iter().all(|&v| v <= 500_000.0), "{after:?}");
    // Every call reached the throttler once (one call per request, no retry): requests =
    // offered; each was rejected locally or passed and was answered.
    let g = |k: &str| get(&r, &format!("sre_throttler.t.{k}"));
    let src = |k: &str| get(&r, &format!("source.s.{k}"));
    assert_eq!(g("requests"), src("offered"));
    assert_eq!(g("rejected"), src("rejected_rate_limited"));
    assert_eq!(g("accepts"), src("completed"));
}

/// A session changing both run-time parameters mid-run (one mid-instant) exports a
/// scenario whose headless run has the live fingerprint; the changes mattered.
#[test]
fn a_session_changing_the_throttler_replays_to_its_fingerprint() {
    use models::Session;
    use models::params::ParamValue;
    let sc = load(&STEADY.replace("KVALUE", "2.0"));
    let c = cfg(5, 60);
    let mut s = Session::new(sc.clone(), c);
    s.run_until(sim_core::SimTime::ZERO + SimDuration::from_secs(20)).unwrap();
    s.apply("sre_throttler.t.k", ParamValue::Float(1.25)).unwrap();
    s.run_for(777).unwrap();
    s.apply("sre_throttler.t.max_rejection_probability", ParamValue::Float(0.6)).unwrap();
    let replay = s.replay_scenario();
    replay.check_timeline().expect("the replay's timeline is valid");
    let live = s.finish();
    assert_eq!(live.fingerprint, models::run(&replay, &c).fingerprint);
    assert_ne!(live.fingerprint, models::run(&sc, &c).fingerprint, "the changes mattered");
}
