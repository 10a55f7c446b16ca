//! Analytic validation: M/M/1, M/M/c (Erlang C), M/M/c/K, M/D/1 and Little's law.
//!
//! Each case is data: a scenario (RON), the closed-form values, and which summary columns
//! they are compared with. Ten replications per case with seeds 1..=10, fixed before any
//! result was looked at; the first 10% of each run is warm-up. Tolerance: max(2% of the
//! closed form, 4 standard errors across replications).

use models::scenario::ScenarioSpec;
use models::{RunConfig, Scenario};
use sim_core::SimDuration;
use sim_core::stats::Replications;

const SEEDS: std::ops::RangeInclusive<u64> = 1..=10;

fn scenario(c: u64, capacity: &str, interarrival: &str, service: &str) -> Scenario {
    let text = format!(
        r#"Scenario(
            name: "mmc",
            sources: [(name: "in", interarrival: {interarrival}, target: "site")],
            call_sites: [(name: "site", upstream: "st")],
            stations: [(name: "st", servers: {c}, queue_capacity: {capacity}, service: {service})],
        )"#
    );
    let sc: ScenarioSpec<models::params::ParamValue> =
        ron::from_str(&text).expect("valid scenario");
    sc.check().expect("consistent");
    sc
}

/// Runs the replications and returns, per column, the replication values.
fn replicate(sc: &Scenario, duration_s: u64, columns: &[&str]) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::new(); columns.len()];
    for seed in SEEDS {
        let cfg = RunConfig {
            warmup: SimDuration::from_secs(duration_s / 10),
            ..RunConfig::new(seed, SimDuration::from_secs(duration_s))
        };
        let r = models::run(sc, &cfg);
        assert!(r.error.is_none(), "{:?}", r.error);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        let s = &r.summary;
        // Conservation, column-wise.
        let offered = s.get("source.in.offered").unwrap();
        let ended = s.get("source.in.completed").unwrap()
            + s.get("source.in.failed").unwrap()
            + s.get("source.in.rejected").unwrap()
            + s.get("source.in.in_flight_end").unwrap();
        assert_eq!(offered, ended, "arrivals = completed + rejected + in system");
        for (i, c) in columns.iter().enumerate() {
            out[i].push(s.get(c).unwrap_or_else(|| panic!("no column {c}")));
        }
    }
    out
}

fn assert_close(what: &str, xs: &[f64], expected: f64) {
    let r = Replications::of(xs).expect("finite values");
    let tol = (0.02 * expected.abs()).max(4.0 * r.std_err);
    println!(
        "{what}: mean {:.5} (se {:.5}) vs closed form {expected:.5}, tolerance {tol:.5}",
        r.mean, r.std_err
    );
    assert!((r.mean - expected).abs() <= tol, "{what}: {} vs {expected} (tolerance {tol})", r.mean);
}

fn erlang_c(c: u64, a: f64) -> f64 {
    // P(wait) for M/M/c with offered load a = λ/μ.
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..c {
        term *= a / k as f64;
        sum += term;
    }
    let last = term * a / c as f64 * (c as f64 / (c as f64 - a));
    last / (sum + last)
}

#[test]
fn mm1_mean_wait() {
    // λ = 8/s, μ = 10/s, ρ = 0.8: Wq = ρ/(μ − λ) = 0.4 s; P(wait) = ρ.
    let sc = scenario(1, "None", r#"Exponential(mean: "125ms")"#, r#"Exponential(mean: "100ms")"#);
    let v = replicate(
        &sc,
        4_000,
        &["source.in.wait_ms_mean", "source.in.p_wait", "station.st.utilization"],
    );
    assert_close("M/M/1 Wq (ms)", &v[0], 400.0);
    assert_close("M/M/1 P(wait)", &v[1], 0.8);
    assert_close("M/M/1 utilisation", &v[2], 0.8);
}

#[test]
fn mmc_erlang_c_and_littles_law() {
    // c = 8, λ = 70/s, μ = 10/s: a = 7, ρ = 0.875.
    let (c, lambda, mu) = (8u64, 70.0, 10.0);
    let a: f64 = lambda / mu;
    let pw = erlang_c(c, a);
    let wq = pw / (c as f64 * mu - lambda);
    let sc =
        scenario(c, "None", r#"Exponential(mean: "14285714ns")"#, r#"Exponential(mean: "100ms")"#);
    let v = replicate(
        &sc,
        2_000,
        &[
            "source.in.wait_ms_mean",
            "source.in.p_wait",
            "station.st.mean_in_system",
            "source.in.latency_ms_mean",
        ],
    );
    assert_close("M/M/8 Wq (ms)", &v[0], wq * 1e3);
    assert_close("M/M/8 P(wait) (Erlang C)", &v[1], pw);
    // Little's law: L = λ W with W = Wq + 1/μ.
    assert_close("M/M/8 L (time average)", &v[2], lambda * (wq + 1.0 / mu));
    // And empirically: L = λ × measured mean sojourn, per replication.
    let little: Vec<f64> = v[3].iter().map(|w_ms| lambda * w_ms / 1e3).collect();
    assert_close("M/M/8 λ·W (measured W)", &little, lambda * (wq + 1.0 / mu));
}

#[test]
fn mmck_blocking_probability() {
    // c = 4, K = 8 places in total (4 waiting), λ = 40/s, μ = 10/s: a = 4.
    let (c, k, a) = (4u64, 8u64, 4.0f64);
    let mut p = vec![1.0f64];
    for n in 1..=k {
        let prev = p[n as usize - 1];
        p.push(prev * a / (n.min(c) as f64));
    }
    let total: f64 = p.iter().sum();
    let blocking = p[k as usize] / total;
    let sc =
        scenario(c, "Some(4)", r#"Exponential(mean: "25ms")"#, r#"Exponential(mean: "100ms")"#);
    let v = replicate(&sc, 1_000, &["source.in.rejected_queue_full", "source.in.offered"]);
    let ratio: Vec<f64> = v[0].iter().zip(&v[1]).map(|(r, o)| r / o).collect();
    assert_close("M/M/4/8 blocking", &ratio, blocking);
}

#[test]
fn md1_pollaczek_khinchine() {
    // λ = 8/s, deterministic 100 ms: Wq = ρ/(2μ(1 − ρ)) = 0.2 s.
    let sc = scenario(1, "None", r#"Exponential(mean: "125ms")"#, r#"Constant("100ms")"#);
    let v = replicate(&sc, 4_000, &["source.in.wait_ms_mean"]);
    assert_close("M/D/1 Wq (ms)", &v[0], 200.0);
}

#[test]
fn mmcc_erlang_b_loss() {
    // c = 10 servers and no waiting places, λ = 80/s, μ = 10/s: a = 8 Erlangs.
    let (c, a) = (10u64, 8.0f64);
    let mut term = 1.0f64;
    let mut sum = 1.0f64;
    for k in 1..=c {
        term *= a / k as f64;
        sum += term;
    }
    let erlang_b = term / sum;
    let sc =
        scenario(c, "Some(0)", r#"Exponential(mean: "12500us")"#, r#"Exponential(mean: "100ms")"#);
    let v = replicate(&sc, 1_000, &["source.in.rejected_queue_full", "source.in.offered"]);
    let ratio: Vec<f64> = v[0].iter().zip(&v[1]).map(|(r, o)| r / o).collect();
    assert_close("M/M/10/10 blocking (Erlang B)", &ratio, erlang_b);
}
