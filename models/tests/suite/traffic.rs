//! Time-varying load and batch floods, end to end through the world.

use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::{Outcome, RunConfig, Scenario};
use sim_core::{SimDuration, SimTime};

use crate::support::load;

/// Arrivals per `bucket_s`-second window (from per-request records).
fn arrivals(sc: &Scenario, seed: u64, secs: u64, bucket_s: u64) -> Vec<u64> {
    let mut cfg = RunConfig::new(seed, SimDuration::from_secs(secs));
    cfg.record_requests = true;
    let r = models::run(sc, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let mut n = vec![0u64; (secs / bucket_s) as usize];
    for q in &r.requests {
        n[(q.arrival.0 / (bucket_s * 1_000_000_000)) as usize] += 1;
    }
    n
}

fn within(got: u64, want: f64, what: &str) {
    // Poisson counts: 4 standard deviations.
    let tol = 4.0 * want.sqrt();
    assert!((got as f64 - want).abs() <= tol, "{what}: {got} vs {want} ± {tol:.0}");
}

const BIG: &str = r#"stations: [(name: "st", servers: 100000, service: Constant("1ms"))],
    call_sites: [(name: "c", upstream: "st")],"#;

/// A ×10 promotion surge ramped over 2 minutes, held, then back: a non-homogeneous
/// Poisson process whose counts follow ∫ λ·m(t) dt.
#[test]
fn surge_profile_follows_the_integrated_rate() {
    let sc = load(&format!(
        r#"Scenario(name: "surge", {BIG}
        sources: [(name: "chat", interarrival: Exponential(mean: "20ms"), target: "c",
                   profile: Some(Profile(points: [("2m", 1.0), ("4m", 10.0), ("6m", 10.0), ("7m", 1.0)], shape: Linear)))],
    )"#
    ));
    let n = arrivals(&sc, 1, 600, 60); // per minute; base rate 50/s = 3000/min
    let expect = [
        3000.0,
        3000.0,
        3000.0 * 3.25,
        3000.0 * 7.75,
        30000.0,
        30000.0,
        3000.0 * 5.5,
        3000.0,
        3000.0,
        3000.0,
    ];
    for (i, (g, w)) in n.iter().zip(expect).enumerate() {
        within(*g, w, &format!("minute {i}"));
    }
}

/// On/off traffic repeating every minute: 20 s on at ×3, 40 s off.
#[test]
fn periodic_on_off_profile() {
    let sc = load(&format!(
        r#"Scenario(name: "onoff", {BIG}
        sources: [(name: "batch", interarrival: Exponential(mean: "10ms"), target: "c",
                   profile: Some(Profile(points: [("0s", 3.0), ("20s", 0.0)], shape: Step, period: Some("1m"))))],
    )"#
    ));
    let n = arrivals(&sc, 2, 300, 20);
    for (i, g) in n.iter().enumerate() {
        if i % 3 == 0 {
            within(*g, 6000.0, &format!("on window {i}"));
        } else {
            assert!(*g <= 1, "off window {i}: {g} arrivals"); // only the arrival at t = 0
        }
    }
}

/// Bursty traffic keeps its burstiness under a profile: gamma gaps (CV 3) at ×2.
#[test]
fn profile_scales_a_bursty_source() {
    let sc = load(&format!(
        r#"Scenario(name: "bursty", {BIG}
        sources: [(name: "code", interarrival: Gamma(mean: "10ms", cv: 3.0), target: "c",
                   profile: Some(Profile(points: [("0s", 2.0)], shape: Step)))],
    )"#
    ));
    let total: u64 = (0..8).map(|seed| arrivals(&sc, seed, 200, 200)[0]).sum();
    // 8 runs × 200 s × 200/s = 320,000; gamma(CV 3) counts vary 9× more than Poisson.
    let mean = total as f64 / 8.0;
    assert!((mean - 40_000.0).abs() < 0.03 * 40_000.0, "mean arrivals {mean}");
}

/// docs/domain.md §6, incident 1's shape: 20,000 analysis requests submitted at once into the pool that
/// also serves real-time chat. All arrive at the same instant (the same-instant guard
/// counts a flood's pending requests as live entities), and chat waits behind them.
#[test]
fn batch_flood_delays_chat_in_a_shared_pool() {
    let sc = load(
        r#"Scenario(name: "flood",
        sources: [
            (name: "chat", interarrival: Exponential(mean: "100ms"), target: "c"),
            (name: "analysis", interarrival: Constant("0s"), target: "c", start: "60s", limit: Some(20000)),
        ],
        call_sites: [(name: "c", upstream: "pool")],
        stations: [(name: "pool", servers: 200, service: LogNormal(mean: "800ms", cv: 0.5))],
    )"#,
    );
    let mut cfg = RunConfig::new(3, SimDuration::from_secs(240));
    cfg.record_requests = true;
    let r = models::run(&sc, &cfg);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let flood: Vec<_> = r.requests.iter().filter(|q| q.source == 1).collect();
    assert_eq!(flood.len(), 20_000);
    assert!(flood.iter().all(|q| q.arrival == SimTime(60_000_000_000)));
    // 20,000 × 0.8 s / 200 servers ≈ 80 s of backlog: chat arriving during it waits.
    let chat_wait = |from_s: u64, to_s: u64| {
        let w: Vec<f64> = r
            .requests
            .iter()
            .filter(|q| q.source == 0 && q.outcome == Some(Outcome::Success))
            .filter(|q| q.arrival.0 >= from_s * 1_000_000_000 && q.arrival.0 < to_s * 1_000_000_000)
            .map(|q| (q.start.unwrap().0 - q.arrival.0) as f64 / 1e9)
            .collect();
        w.iter().sum::<f64>() / w.len() as f64
    };
    let before = chat_wait(0, 60);
    let during = chat_wait(70, 120);
    assert_eq!(before, 0.0, "idle pool: chat never waits");
    assert!(during > 20.0, "chat waits behind the flood: {during:.1} s on average");
}

/// A zero gap without a limit is refused; with one it is a flood.
#[test]
fn zero_gap_needs_a_limit() {
    let text = |limit: &str| {
        format!(
            r#"Scenario(name: "z", sources: [(name: "a", interarrival: Constant("0s"), target: "c"{limit})],
               call_sites: [(name: "c", upstream: "st")], stations: [(name: "st", servers: 1, service: Constant("1ms"))])"#
        )
    };
    let sc: ScenarioSpec<ParamValue> = ron::from_str(&text("")).unwrap();
    assert!(sc.check().unwrap_err().message.contains("for a batch flood set a `limit`"));
    let sc: ScenarioSpec<ParamValue> = ron::from_str(&text(", limit: Some(5)")).unwrap();
    assert!(sc.check().is_ok());
}

/// Requests carry their source's class; results are reported per class, with the share of
/// answers within the class's SLA.
#[test]
fn classes_report_their_own_results_and_sla() {
    let sc = load(
        r#"Scenario(name: "classes",
        classes: [(name: "vip", weight: 5, sla: "1s"), (name: "batch")],
        sources: [
            (name: "chat", class: "vip", interarrival: Exponential(mean: "100ms"), target: "c"),
            (name: "app", class: "vip", interarrival: Exponential(mean: "200ms"), target: "c"),
            (name: "jobs", class: "batch", interarrival: Exponential(mean: "50ms"), target: "c"),
        ],
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 40, service: Exponential(mean: "500ms"))],
    )"#,
    );
    let r = models::run(&sc, &RunConfig::new(2, SimDuration::from_secs(300)));
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let g = |k: &str| r.summary.get(k).unwrap();
    for col in ["offered", "completed", "in_flight_end"] {
        assert_eq!(
            g(&format!("class.vip.{col}")),
            g(&format!("source.chat.{col}")) + g(&format!("source.app.{col}"))
        );
        assert_eq!(g(&format!("class.batch.{col}")), g(&format!("source.jobs.{col}")));
    }
    // Service is exponential with mean 0.5 s and no queueing to speak of: P(latency ≤ 1 s) ≈ 1 − e⁻² ≈ 0.865.
    let met = g("class.vip.sla_met");
    assert!((met - 0.8647).abs() < 0.02, "SLA met {met}");
    assert!(g("class.batch.sla_met").is_nan(), "no SLA, no share");
}

/// `Poisson(rate)` runs exactly as the `Exponential(mean)` of its mean gap: the same
/// fingerprint when the gap is exact (200/s: 5 ms) and when it is rounded to the nearest
/// nanosecond (55/s: 18,181,818.18 ns → `"18181818ns"`, incident 21's gap), so writing an
/// existing scenario's rate moves no fingerprint.
#[test]
fn poisson_rate_runs_as_its_exponential() {
    for (rate, mean) in [("200/s", "5ms"), ("55/s", "18181818ns"), ("9000/min", "6666667ns")] {
        let sc = |gap: &str| {
            load(&format!(
                r#"Scenario(name: "r", {BIG}
                sources: [(name: "chat", interarrival: {gap}, target: "c")])"#
            ))
        };
        let c = RunConfig::new(3, SimDuration::from_secs(20));
        let by_rate = models::run(&sc(&format!("Poisson(rate: \"{rate}\")")), &c);
        let by_mean = models::run(&sc(&format!("Exponential(mean: \"{mean}\")")), &c);
        assert!(by_rate.violations.is_empty() && by_rate.error.is_none());
        assert_eq!(by_rate.fingerprint, by_mean.fingerprint, "{rate} vs {mean}");
        assert_eq!(by_rate.summary, by_mean.summary, "{rate} vs {mean}");
    }
}

/// A surge written in rates is the same surge as the multipliers it stands for: a base of
/// 50/s with points at "50/s" and "500/s" is the ×1 → ×10 profile over `Exponential(mean:
/// "20ms")` (the gap is exact, so the multipliers are exactly 1 and 10: the same
/// fingerprint).
#[test]
fn surge_written_in_rates_is_the_multiplier_surge() {
    let sc = |gap: &str, a: &str, b: &str| {
        load(&format!(
            r#"Scenario(name: "surge", {BIG}
            sources: [(name: "chat", interarrival: {gap}, target: "c",
                       profile: Some(Profile(points: [("20s", {a}), ("40s", {b})], shape: Linear)))])"#
        ))
    };
    let c = RunConfig::new(5, SimDuration::from_secs(60));
    let rates = models::run(&sc(r#"Poisson(rate: "50/s")"#, r#""50/s""#, r#""500/s""#), &c);
    let mults = models::run(&sc(r#"Exponential(mean: "20ms")"#, "1.0", "10.0"), &c);
    assert!(rates.violations.is_empty() && rates.error.is_none());
    assert_eq!(rates.fingerprint, mults.fingerprint);
}

/// A profile in rates needs a mean gap to scale: a Pareto without a finite mean is refused
/// at the check, at the source's `profile`.
#[test]
fn a_profile_in_rates_needs_a_finite_mean() {
    let text = format!(
        r#"Scenario(name: "r", {BIG}
        sources: [(name: "chat", interarrival: Pareto(scale: "1ms", shape: 0.9), target: "c",
                   profile: Some(Profile(points: [("0s", "50/s")], shape: Step)))])"#
    );
    let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).unwrap();
    let e = sc.check().unwrap_err();
    assert_eq!(e.path, "sources[0].profile");
    assert!(e.message.contains("needs a finite mean"), "{}", e.message);
}
