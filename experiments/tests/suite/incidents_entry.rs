//! The incident library, the entry path (docs/domain.md §6, incidents 1, 2, 8, 9, 12, 17): each
//! `experiments/incidents/*.ron` file is loaded as a user would, shortened, run on its
//! first seeds (every variant on the same traffic), and the direction and size of the
//! effect asserted with bounds derived from the physics.

use crate::incident_support;
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

/// Incident 1. From 2 min the flood's 20,000 × 3 s of work sits in the shared pool's FIFO
/// queue (≈ 20,000 × 3 s ÷ ~155 threads free ≈ 6.5 min of backlog): every chat request
/// arriving after it waits behind it — minutes — so the P0 p99 over the whole run (10 min:
/// the backlog has drained, the waiting requests have completed) is over a minute. With per-class pools P0 has 60 threads for ≈ 55 × 0.8 = 44 busy: its
/// p99 stays near the model's tail (< 5 s) — ≥ 10× better — while P2 works through its
/// own 130 threads (130 ÷ 3 s ≈ 43/s).
#[test]
fn incident_01_batch_flood_per_class_pools() {
    let r = run("01-batch-flood.ron", None, 1, false);
    let (bad, good) =
        (r.mean("failure", "class.P0.latency_ms_p99"), r.mean("fix", "class.P0.latency_ms_p99"));
    assert!(bad > 60_000.0, "P0 p99 behind the flood: {bad} ms");
    assert!(good < 5_000.0, "P0 p99 with its own pool: {good} ms");
    assert!(bad >= 10.0 * good);
    assert_eq!(r.mean("fix", "class.P2.completed"), 20_000.0, "the batch still gets through");
}

/// Incident 2. P0 at 12/s against a capacity of 8 ÷ 0.8 s = 10/s keeps the P0 queue full
/// the whole run.
/// * failure (strict) and the source's weighted polling (its loop restarts at P0 after
///   every task): a P2 job starts only if it came before the P0 queue filled (≤ 2), the
///   oldest waits the whole 15 min (> 10 min).
/// * deadline-first: a P2 task's latest start is arrival + 30 s; P0 tasks in the queue
///   are at most 50 ÷ 10/s = 5 s old, so P2 starts within 30 + 5 + 1 s.
/// * aging: a P2 task waiting 30 s is served next, when one of 8 threads frees
///   (≈ every 0.1 s): within 32 s.
#[test]
fn incident_02_starvation_strict_vs_aging() {
    let r = run("02-starvation.ron", None, 1, false);
    for v in ["failure", "weighted-polling"] {
        assert!(r.mean(v, "class.P2.dispatched") <= 2.0, "{v}: P2 starves");
        assert!(r.mean(v, "class.P2.in_flight_oldest_age_ms") > 600_000.0, "{v}: > 10 min");
    }
    for (v, bound) in [("deadline", 36_000.0), ("fix", 32_000.0)] {
        let oldest = r.mean(v, "class.P2.in_flight_oldest_age_ms");
        assert!(oldest <= bound, "{v}: no P2 waits longer than the bound: {oldest} ms");
        let max = r.mean(v, "class.P2.dispatch_wait_ms_max");
        assert!((30_000.0..=bound).contains(&max), "{v}: P2 max wait {max} ms");
    }
}

/// Incident 9. 105 requests/s against 100/s of capacity, after a burst of 150 (1.5 s of
/// queue): the queue grows until requests expire in it (a request whose 2.5 s budget runs
/// out while queued leaves it), so its wait settles just under 2.5 s. A request that
/// reaches the model after waiting more than 2.1 s (2.5 s − the 400 ms call) is cut
/// mid-call — after the model started on it.
/// * failure: more than a fifth of the requests cut mid-call, each cut call's work run on
///   (abandoned work; a call cut just before the end may still be running).
/// * fix: no call cut or timed out (400 ms ≪ 1 s read timeout); the excess is turned away
///   after exactly 2 s in the queue, before costing the model anything; more successes.
#[test]
fn incident_09_global_timeout_vs_per_stage() {
    let r = run("09-global-timeout.ron", Some(60), 1, false);
    let cut = r.mean("failure", "source.s.calls_cut_by_budget");
    assert!(cut > 0.2 * r.mean("failure", "source.s.offered"), "cut {cut}");
    let wasted = r.mean("failure", "station.llm.abandoned_work");
    assert!(wasted <= cut && wasted > 0.95 * cut, "the cut calls' work ran on: {wasted}");
    assert_eq!(r.mean("fix", "source.s.failed_timeout"), 0.0);
    assert_eq!(r.mean("fix", "station.llm.abandoned_work"), 0.0);
    assert!(r.mean("fix", "class.P0.queue_timeouts") > 0.0);
    assert!(r.mean("fix", "source.s.success") > r.mean("failure", "source.s.success"));
}

/// Incident 17. 8 threads: synchronous 8 ÷ 0.8 s = 10/s; asynchronous 8 ÷ 0.2 s = 40/s
/// (offered 38.5/s, all served); breaker open 8 ÷ 25 ms = 320/s of fallbacks. Requests
/// measured for 25 s; those still in flight at the end (≤ 8 + 64 queued) are counted
/// with the served ones.
#[test]
fn incident_17_pod_capacity_sync_async_fallback() {
    let r = run("17-pod-capacity.ron", Some(30), 1, false);
    let rate = |v: &str, col: &str| {
        (r.mean(v, &format!("source.s.{col}")) + r.mean(v, "source.s.in_flight_end")) / 25.0
    };
    let (sync, asyn, open) =
        (rate("failure", "success"), rate("fix", "success"), rate("breaker-open", "degraded"));
    assert!((9.0..=11.0).contains(&sync), "synchronous {sync}/s");
    assert!((36.0..=40.0).contains(&asyn), "asynchronous {asyn}/s");
    assert!((290.0..=325.0).contains(&open), "fallbacks {open}/s");
}
