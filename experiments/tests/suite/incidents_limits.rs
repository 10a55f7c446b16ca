//! The incident library, limits and capacity (docs/domain.md §6, incidents 5, 6, 7, 10, 15, 16): each
//! `experiments/incidents/*.ron` file is loaded as a user would, shortened, run on its
//! first seeds (every variant on the same traffic), and the direction and size of the
//! effect asserted with bounds derived from the physics.

use crate::incident_support;
use incident_support::*;

/// Incident 5. 200 requests/s × a mean fan-out of 0.3·(3+4+5) + 0.1·8 = 4.4 = 880 LLM
/// calls/s offered, against a provider of 100 slots × 1/0.8 s = 125 calls/s.
/// * failure: the parallel fan-out sends every call (amplification 4.4; its standard error
///   over ~20,000 requests is ≈ 0.01, tolerance ±0.15), so the call rate measured at the
///   provider is 600–1000/s; the queue of 5,000 fills within a minute (755 calls/s
///   excess) and, 40 s deep, outlives the 30 s client timeout: calls get 429 or time out,
///   nothing succeeds while the surge lasts.
/// * fix: the gate holds at most 80 calls in flight; the excess falls back at once to the
///   small model (degraded); no 429, no timeout, and P0's p99 stays near the model's tail
///   (≤ 300 ms gate wait + the slowest of up to 8 log-normal 0.8 s calls: < 4 s).
#[test]
fn incident_05_promotion_surge_gate_at_the_convergence_point() {
    // 90 s warm-up (the ramp), 60 s of surge measured.
    let r = run("05-promotion-surge.ron", Some(150), 1, false);
    let amp = r.mean("failure", "source.promo.amplification");
    assert!((amp - 4.4).abs() <= 0.15, "amplification {amp}");
    let calls_per_s = r.mean("failure", "source.promo.upstream_calls") / 60.0;
    assert!((600.0..=1000.0).contains(&calls_per_s), "offered LLM call rate {calls_per_s}/s");
    let offered = r.mean("failure", "source.promo.offered");
    assert!(r.mean("failure", "source.promo.rejected_upstream_429") > 0.5 * offered);
    assert!(r.mean("failure", "source.promo.failed_timeout") > 0.0, "calls reach the 30 s timeout");
    assert!(r.mean("failure", "source.promo.success") < 0.01 * offered, "goodput collapses");
    assert!(r.series_max("failure", "station.provider.queue_depth.max") >= 5000.0);
    // Fix.
    assert!(r.series_max("fix", "gate.llm.in_use.max") <= 80.0);
    assert_eq!(r.mean("fix", "source.promo.rejected_upstream_429"), 0.0);
    assert_eq!(r.mean("fix", "source.promo.failed_timeout"), 0.0);
    let done =
        r.mean("fix", "source.promo.completed") + r.mean("fix", "source.promo.in_flight_end");
    assert!(done >= 0.99 * offered, "every request answered (most degraded): {done} of {offered}");
    assert!(r.mean("fix", "source.promo.latency_ms_p99") < 4000.0);
}

/// Incident 6. 150 requests/s of ~1 s calls want ~150 concurrent against a quota of 100.
/// * failure: 4 × 80 = 320 permits never bind, so ≈ 50 of the 150 calls/s get 429: a
///   share of 1 − 100/150 = 33 % (> 20 %, the threshold of the issue).
/// * fix: 4 × 20 = 80 < 100 in flight at any instant: not a single 429.
/// * cluster: one limit of 80 per second for the whole cluster.
#[test]
fn incident_06_per_instance_limit_times_four() {
    let r = run("06-per-instance-limit.ron", Some(40), 1, false);
    let share =
        |v: &str| r.mean(v, "source.chat.rejected_upstream_429") / r.mean(v, "source.chat.offered");
    assert!(share("failure") > 0.20, "429 share {}", share("failure"));
    assert_eq!(share("fix"), 0.0);
    assert!(r.mean("fix", "source.chat.rejected_gate_full") > 0.0, "refused locally instead");
    // cluster: ≤ 80 admissions per rolling second of ~1 s calls ≈ 80 in flight, under 100
    // but for rare bursts of long calls (CV 0.3): < 1 % 429, the excess `rate_limited`.
    assert!(share("cluster") < 0.01, "429 share {}", share("cluster"));
    assert!(r.mean("cluster", "source.chat.rejected_rate_limited") > 0.0);
}

/// Incident 7. 3,000 closed-loop users (think 5 s) offer ≈ 3000 / 5.4 s ≈ 550 calls/s to a
/// pacer of 100/s, so its queue is always full.
/// * failure: a request waits the full 30 s (+ 400 ms), three times the users' 10 s
///   patience: the median latency is 30.4 s and thousands of users give up.
/// * wait-8s: 8 s + 0.4 s, inside the patience.
/// * fix: 300 places ≈ 3 s at 100/s: median 3.4 s; nobody gives up.
#[test]
fn incident_07_queueing_too_long() {
    let r = run("07-queueing-too-long.ron", Some(120), 1, false);
    let p50 = |v: &str| r.mean(v, "source.users.latency_ms_p50");
    assert!((29_000.0..=31_000.0).contains(&p50("failure")), "{}", p50("failure"));
    assert!((8_000.0..=8_600.0).contains(&p50("wait-8s")), "{}", p50("wait-8s"));
    assert!((3_000.0..=3_600.0).contains(&p50("fix")), "{}", p50("fix"));
    assert!(r.mean("failure", "source.users.gave_up") > 1_000.0);
    assert_eq!(r.mean("fix", "source.users.gave_up"), 0.0);
    assert!(r.mean("fix", "source.users.rejected_rate_limited") > 0.0);
}

/// Incident 16. A prefill-bound request (128 tokens) costs one H200 forward pass of
/// ≈ 6.5 ms alone, ≈ 25 ms batched by 8 (fit of `data/gpu-profile-h200/e2e.csv`): ≈ 154
/// vs ≈ 312 requests/s with one call at a time in the GPU, ×2.0 (the article: ×2.1).
#[test]
fn incident_16_batching_doubles_throughput() {
    let r = run("16-batching.ron", Some(20), 1, false);
    let (one, eight) =
        (r.mean("failure", "source.chat.success"), r.mean("fix", "source.chat.success"));
    let ratio = eight / one;
    assert!((1.8..=2.3).contains(&ratio), "batching ×{ratio}");
    assert!(r.mean("fix", "gpu_server.gpu.mean_batch") > 7.0);
    assert_eq!(r.mean("failure", "gpu_server.gpu.mean_batch"), 1.0);
}

/// Incident 10. Bursts of 30 s at 5 requests/s every 90 s; 60 s of silence > the server's
/// 30 s idle timeout, so every pooled connection is dead at the start of a burst.
/// * failure: the first requests of each burst borrow dead connections (LIFO reuse, one
///   per connection the previous burst opened: ≈ 4 × 0.8 s ≈ 4–10 connections): ≥ 1
///   `connect_error` per burst after the first.
/// * fix (keep-alive 25 s < 30 s) and validate: not a single stale failure.
#[test]
fn incident_10_stale_connection_after_idle() {
    let r = run("10-stale-connection.ron", Some(600), 1, false);
    // 600 s: bursts at 0, 90, …, 540 s: 6 after an idle spell.
    assert!(r.mean("failure", "source.jobs.failed_connect_error") >= 6.0);
    assert_eq!(
        r.mean("failure", "source.jobs.failed_connect_error"),
        r.mean("failure", "connpool.http.stale_failures")
    );
    for v in ["fix", "validate"] {
        assert_eq!(r.mean(v, "source.jobs.failed_connect_error"), 0.0, "{v}");
    }
    assert!(r.mean("validate", "connpool.http.validations") > 0.0);
}

/// Incident 15. 10,000 identical misses at 60 s. Without single-flight each is an
/// upstream call: 10,000 ÷ (100 slots ÷ 1.5 s) ≈ 150 s to drain, so the flood's p99 is
/// ≈ 150 s. With it one call answers them all (plus at most a few leaders: "single-digit
/// model calls"): p99 ≈ one call (< 5 s), ≥ 9,990 followers.
#[test]
fn incident_15_hot_key_stampede_single_flight() {
    let r = run("15-hot-key-stampede.ron", Some(240), 1, false);
    assert!(r.mean("failure", "source.flood.latency_ms_p99") > 100_000.0);
    assert!(r.mean("failure", "station.llm.peak_queue") > 9_000.0);
    assert!(r.mean("fix", "single_flight.sf.followers") >= 9_990.0);
    assert!(r.mean("fix", "source.flood.latency_ms_p99") < 5_000.0);
    assert_eq!(r.mean("fix", "source.flood.success"), 10_000.0);
}
