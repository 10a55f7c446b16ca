//! A queue's discipline through the world: a station's CoDel queue (`codel: Some((…))`,
//! `models::codel`) on a standing queue of constant sojourn, end to end.

use crate::support::{get, load, run_checked};
use models::{Outcome, RunConfig};
use sim_core::SimDuration;

/// One server; a call arrives every 1 ms from 0; the first service is scripted to take
/// 100 ms, every later one 1 ms. So at 100 ms calls 1–99 wait, and from then on each
/// service end (every 1 ms, completions before arrivals at one instant) dequeues the call
/// that arrived 99 ms earlier: a standing queue of constant sojourn 99 ms ≥ target 5 ms
/// (each drop shifts it by one call: 99 − k ms after k drops, still ≥ target). The law
/// first sees it at t₀ = 100 ms, so (the derivation in `models/src/codel_tests.rs`) the
/// k-th drop is due at t₀ + D_k, D₁ = I, D_{k+1} = D_k + ⌊I/√k⌋ ns, I = 100 ms, and
/// happens at the first dequeue at or after it: rounded up to the millisecond. The dropped
/// call is answered `rejected:shed` at that instant.
const SCENARIO: &str = r#"Scenario(
    name: "codel-station",
    sources: [(name: "s", interarrival: Constant("1ms"), target: "c")],
    call_sites: [(name: "c", upstream: "b", timeout: "1h")],
    stations: [(name: "b", servers: 1, service: Constant("1ms"), CODEL
                script: Some([Answer(duration: "100ms", outcome: Success)]))],
)"#;

const MS: u64 = 1_000_000;

fn due(until: u64) -> Vec<u64> {
    let (t0, i) = (100 * MS, 100 * MS);
    let mut d = vec![i];
    for k in 1..100u32 {
        d.push(d[k as usize - 1] + (i as f64 / f64::from(k).sqrt()) as u64);
    }
    d.iter().map(|d| (t0 + d).div_ceil(MS) * MS).filter(|t| *t < until).collect()
}

fn shed_at(r: &models::RunOutput) -> Vec<u64> {
    let shed = Some(Outcome::Rejected(models::outcome::Reason::Shed));
    let mut t: Vec<u64> =
        r.requests.iter().filter(|q| q.outcome == shed).map(|q| q.end.unwrap().0).collect();
    t.sort();
    t
}

/// The scenario with `codel` (a field, or nothing: FIFO), run for 1.1 s with records.
fn run(codel: &str) -> models::RunOutput {
    let mut cfg = RunConfig::new(1, SimDuration::from_ms(1100));
    cfg.record_requests = true;
    run_checked(&load(&SCENARIO.replace("CODEL", codel)), &cfg)
}

#[test]
fn a_station_codel_queue_drops_a_constant_sojourn_on_the_control_law() {
    let r = run(r#"codel: Some((target: "5ms", interval: "100ms")),"#);
    let want = due(1100 * MS);
    assert_eq!(&want[..4], &[200 * MS, 300 * MS, 371 * MS, 429 * MS]);
    assert_eq!(shed_at(&r), want);
    assert_eq!(want.len(), 27, "Σ_{{j≤26}} 1/√j = 8.84 ≤ 9.0 < Σ_{{j≤27}} = 9.03 intervals");
    assert_eq!(get(&r, "station.b.codel_dropped"), 27.0);
    assert_eq!(get(&r, "station.b.lifo_takes"), 0.0);
    assert_eq!(get(&r, "source.s.rejected_shed"), 27.0);
    // FIFO (no `codel`): nothing is shed and no CoDel column is written.
    let fifo = run("");
    assert!(shed_at(&fifo).is_empty());
    assert!(fifo.summary.get("station.b.codel_dropped").is_none());
}

/// With adaptive LIFO the same queue serves the newest call while the law is dropping:
/// from the first drop (200 ms) the calls served are fresh (latency ≈ their 1 ms service
/// plus at most the 1 ms until the next dequeue), while the stale head keeps being dropped
/// on the same schedule (the law judges the head). Before 200 ms every served call waited
/// 99 ms.
#[test]
fn adaptive_lifo_serves_fresh_calls_while_the_law_drops_the_stale_head() {
    let r = run(r#"codel: Some((target: "5ms", interval: "100ms", lifo_when_overloaded: true)),"#);
    assert_eq!(shed_at(&r), due(1100 * MS));
    let served_after = |from: u64| {
        r.requests
            .iter()
            .filter(|q| q.outcome == Some(Outcome::Success) && q.end.unwrap().0 > from)
            .map(|q| q.end.unwrap().0 - q.arrival.0)
            .max()
            .unwrap()
    };
    assert!(served_after(202 * MS) <= 2 * MS, "fresh calls: {} ns", served_after(202 * MS));
    assert!(get(&r, "station.b.lifo_takes") > 800.0);
}
