//! The retry storm with network delay against its closed form (issue 14, "must show"):
//! `data/retry_storm_delay.ron`, the server of incident 21.
//!
//! Derivation. One server, exponential service (μ = 100/s), no cancellation: every attempt
//! is served, so the server is M/M/1 with the attempts' arrival rate x. An attempt's
//! sojourn (wait + service) is exponential with rate μ − x. Its client gives up at
//! send + T, and the answer reaches the client d_req + sojourn + d_resp after the send, so
//! the attempt times out iff the sojourn exceeds τ = T − d_req − d_resp:
//!     p = P(sojourn > τ) = exp(−(μ − x) τ).
//! The delay enters only through τ, exactly.
//! * Without retries x = λ: p₀ = exp(−(μ − λ) τ), exact for M/M/1 (Poisson arrivals).
//! * With one retry, x = λ (1 + p) (a first attempt, plus a retry when it timed out): the
//!   mean-field fixed point x = λ (1 + exp(−(μ − x) τ)). It takes the retries for a Poisson
//!   stream independent of the queue; a U(0, 20 s) back-off spreads the retries of a burst
//!   of timeouts over 20 s, against a relaxation time of the queue ≈ 1/(μ (1 − √ρ)²) ≈
//!   0.2 s at ρ ≈ 0.6, so the approximation is close (measured: within 5 % on p).
//! * The fixed point exists below μ only while λ ≤ λ* = W(e^{μτ − 1}) / τ (tangency of
//!   f(x) = λ(1 + e^{−(μ − x)τ}) with the diagonal: f'(x) = λτ e^{−(μ − x)τ} = 1, so
//!   f(x) = λ + 1/τ = x, and λτ e^{λτ} = e^{μτ − 1}; W is Lambert's function). Beyond it,
//!   x climbs to 2λ > μ: the queue grows, every attempt times out — the storm.
//!   λ* = 70.5, 66.6, 58.5, 51.9 /s for a round trip of 0, 20, 50, 70 ms.
//!
//! Tolerances: a share over seeds within max(8 %, 4 standard errors over seeds) of the
//! closed form (timeouts come in bursts, so the seed-to-seed spread, not the binomial
//! one, is the error); the utilisation within 1.5 % (it is x/μ over the whole run).

use crate::support::{get, load};
use models::RunConfig;
use sim_core::SimDuration;
use sim_core::stats::Replications;

const MU: f64 = 100.0;
const T: f64 = 0.100;
const BASE: &str = include_str!("data/retry_storm_delay.ron");

/// Lambert's W on its principal branch, for z > 0 (Newton from ln z).
fn lambert_w(z: f64) -> f64 {
    let mut w = if z > 3.0 { z.ln() } else { 0.5 };
    for _ in 0..100 {
        w -= (w * w.exp() - z) / (w.exp() * (w + 1.0));
    }
    w
}

/// The storm threshold λ* for `tau` seconds left to the server.
fn lambda_star(tau: f64) -> f64 {
    lambert_w((MU * tau - 1.0).exp()) / tau
}

/// The mean-field attempt rate x = λ (1 + e^{−(μ − x)τ}), iterated from x = λ (it rises
/// monotonically to the lower fixed point); `None` beyond λ* (it passes μ).
fn fixed_point(lambda: f64, tau: f64) -> Option<f64> {
    let mut x = lambda;
    for _ in 0..100_000 {
        let next = lambda * (1.0 + (-(MU - x) * tau).exp());
        if next >= MU {
            return None;
        }
        if (next - x).abs() < 1e-12 {
            return Some(next);
        }
        x = next;
    }
    Some(x)
}

/// The scenario at `lambda` arrivals/s, `attempts` (1: no retry), legs in ms.
fn scenario(lambda: f64, attempts: u32, req_ms: u64, resp_ms: u64) -> models::Scenario {
    let text = BASE
        .replace("18181818ns", &format!("{}ns", (1e9 / lambda).round() as u64))
        .replace("max_attempts: 2", &format!("max_attempts: {attempts}"))
        .replace(
            r#"network: (request: Constant("0s"), response: Constant("0s"))"#,
            &format!(
                r#"network: (request: Constant("{req_ms}ms"), response: Constant("{resp_ms}ms"))"#
            ),
        );
    load(&text)
}

/// Per seed of `seeds` runs of `secs` s: (the share `num ÷ offered`, the utilisation).
fn measure(sc: &models::Scenario, num: &str, seeds: u64, secs: u64) -> (Vec<f64>, Vec<f64>) {
    (0..seeds)
        .map(|seed| {
            let r = models::run(sc, &RunConfig::new(seed, SimDuration::from_secs(secs)));
            assert!(r.error.is_none() && r.violations.is_empty(), "{:?}", r.violations);
            let share = get(&r, num) / get(&r, "source.chat.offered");
            (share, get(&r, "station.llm.utilization"))
        })
        .unzip()
}

fn assert_share(what: &str, xs: &[f64], want: f64) {
    let r = Replications::of(xs).expect("finite");
    let tol = (0.08 * want).max(4.0 * r.std_err);
    println!("{what}: {:.5} (se {:.5}) vs closed form {want:.5}", r.mean, r.std_err);
    assert!((r.mean - want).abs() <= tol, "{what}: {} vs {want} ± {tol}", r.mean);
}

/// The legs of each round trip (ms) the tests use, as (request, response).
const LEGS: [(u64, u64); 4] = [(0, 0), (10, 10), (20, 30), (35, 35)];

fn tau(legs: (u64, u64)) -> f64 {
    T - (legs.0 + legs.1) as f64 / 1000.0
}

#[test]
fn the_storm_threshold_falls_with_the_round_trip() {
    let l: Vec<f64> = LEGS.iter().map(|&d| lambda_star(tau(d))).collect();
    for (got, want) in l.iter().zip([70.47, 66.59, 58.53, 51.91]) {
        assert!((got - want).abs() < 0.01, "λ* {got} vs {want}");
    }
    // The tangency: at λ* the fixed point is x = λ* + 1/τ, where f'(x) = 1.
    for &d in &LEGS {
        let (t, ls) = (tau(d), lambda_star(tau(d)));
        let x = ls + 1.0 / t;
        assert!((ls * (1.0 + (-(MU - x) * t).exp()) - x).abs() < 1e-9);
        assert!(fixed_point(0.999 * ls, t).is_some() && fixed_point(1.001 * ls, t).is_none());
    }
}

/// No retry, λ = 55/s: the timeout share is the M/M/1 sojourn tail past τ (exact).
#[test]
fn without_retries_the_timeout_share_is_the_sojourn_tail_past_the_time_left() {
    for &d in &LEGS {
        let want = (-(MU - 55.0) * tau(d)).exp();
        let (p, _) = measure(&scenario(55.0, 1, d.0, d.1), "source.chat.failed_timeout", 4, 1000);
        assert_share(&format!("no retry, legs {d:?} ms: timeout share"), &p, want);
    }
}

/// One retry at 80 % of each round trip's threshold: the retries per request and the
/// server's utilisation are the fixed point's p and x/μ.
#[test]
fn below_the_threshold_retries_settle_at_the_fixed_point() {
    for &d in &LEGS {
        let lambda = 0.8 * lambda_star(tau(d));
        let x = fixed_point(lambda, tau(d)).expect("below λ*");
        let sc = scenario(lambda, 2, d.0, d.1);
        let (p, u) = measure(&sc, "retry.r.retries", 4, 1000);
        assert_share(
            &format!("λ {lambda:.1}, legs {d:?} ms: retries per request"),
            &p,
            x / lambda - 1.0,
        );
        let u = Replications::of(&u).expect("finite").mean;
        assert!((u - x / MU).abs() <= 0.015 * x / MU, "utilisation {u} vs {}", x / MU);
    }
}

/// Beyond the threshold the retries storm: at 110 % of λ* with no delay and with 70 ms of
/// round trip, and at the incident's 55/s, which is below λ* without delay (70.5) and above
/// it with 70 ms (51.9). The server saturates (x → 2λ > μ), nearly every attempt times out
/// (its sojourn grows without bound) and nearly nothing succeeds. Over 300 s from an
/// empty queue (the storm takes a while to start): ρ > 0.95 and p > 0.85, where the
/// fixed point of a calm run would be ρ ≈ 0.6, p < 0.3.
#[test]
fn beyond_the_threshold_the_retries_storm() {
    let cases = [
        (1.1 * lambda_star(tau(LEGS[0])), LEGS[0]),
        (1.1 * lambda_star(tau(LEGS[3])), LEGS[3]),
        (55.0, LEGS[3]),
    ];
    for (lambda, d) in cases {
        let (p, u) = measure(&scenario(lambda, 2, d.0, d.1), "retry.r.retries", 2, 300);
        for (p, u) in p.iter().zip(&u) {
            println!(
                "λ {lambda:.1}, legs {d:?} ms: retries per request {p:.3}, utilisation {u:.4}"
            );
            assert!(*p > 0.85 && *u > 0.95, "λ {lambda}, legs {d:?}: p {p}, ρ {u}");
        }
    }
    // The same 55/s without delay is calm: p at the fixed point's 0.012.
    let (p, _) = measure(&scenario(55.0, 2, 0, 0), "retry.r.retries", 2, 300);
    assert!(p.iter().all(|&p| p < 0.03), "{p:?}");
}
