//! The incident library, the entry path (SPEC §6 incidents 1, 2, 8, 9, 12, 17): each
//! `experiments/incidents/*.ron` file is loaded as a user would, shortened, run on its
//! first seeds (every variant on the same traffic), and the direction and size of the
//! effect asserted with bounds derived from the physics.

mod incident_support;
use incident_support::*;

/// Incident 8. 40 requests/s × 3 parallel calls of ~0.4 s: the slowest of three takes
/// ≈ 0.6 s, so ≈ 24 threads are busy and want ≈ 72 permits.
/// * failure: 32 permits for ~72 wanted calls: a large share of the requests lose a
///   permit after 300 ms (≥ 30 % `gate_full`) while their other calls ran.
/// * fix: 96 = 3 × 32 permits can never be short for 32 threads: no `gate_full`, and
///   every call stays under the provider's 100 (no 429).
#[test]
fn incident_08_threads_and_semaphore_fight() {
    let r = run("08-threads-semaphore-fight.ron", Some(90), 1, false);
    let offered = r.mean("failure", "source.api.offered");
    assert!(r.mean("failure", "source.api.rejected_gate_full") > 0.3 * offered);
    assert_eq!(r.mean("fix", "source.api.rejected_gate_full"), 0.0);
    assert_eq!(r.mean("fix", "source.api.rejected_upstream_429"), 0.0);
    let (bad, good) =
        (r.mean("failure", "source.api.success"), r.mean("fix", "source.api.success"));
    assert!(good > 1.5 * bad, "goodput {bad} → {good}");
}

/// Incident 12. Capacity (requests/s) = min(N ÷ (0.178 + 0.012·s), 16 ÷ (0.012·s)) with
/// s = 1 + 0.0004·N: 1,047 (200), 1,190 (300), 1,075 (600). A closed loop of 2,000 users
/// keeps the service saturated, so throughput ≈ capacity (minus the requests still in
/// flight at the end: 2,000 over the 60 s measured, ≈ 3 %) and latency = 2,000 ÷ capacity:
/// 1.91, 1.68, 1.86 s.
#[test]
fn incident_12_more_threads_rise_then_fall() {
    let r = run("12-more-threads.ron", None, 1, false);
    let tps = |v: &str| r.mean(v, "source.load.completed") / 60.0;
    let (a, b, c) = (tps("threads-200"), tps("fix"), tps("failure"));
    assert!((980.0..=1050.0).contains(&a), "200 threads {a}/s");
    assert!((1120.0..=1195.0).contains(&b), "300 threads {b}/s");
    assert!((1010.0..=1080.0).contains(&c), "600 threads {c}/s");
    assert!(a < b && c < b, "non-monotonic in the thread count: {a} {b} {c}");
    let p99 = |v: &str| r.mean(v, "source.load.latency_ms_p99");
    assert!(p99("fix") < p99("threads-200") && p99("fix") < p99("failure"));
}
