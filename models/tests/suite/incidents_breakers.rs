//! Breaker incidents of docs/domain.md §6 as scenario pairs, through the whole world: the flapping
//! breaker (13) and half-open probes by priority (18). Every run is checked for
//! determinism and conservation.

use crate::support::*;
use models::world::RequestRecord;
use models::{Outcome, Reason, RunOutput};
use sim_core::SimTime;

/// Incident 13 — flapping breaker. 50 req/s, 200 ms calls; the provider fails every call
/// from 10 s to 30 s (a 20 s outage, then it recovers). Resilience4j breaker: COUNT_BASED
/// window of 20, opens at ≥ 50 % failures, 5 probes in HALF_OPEN.
const FLAPPING: &str = r#"Scenario(name: "flapping",
    sources: [(name: "chat", interarrival: Exponential(mean: "20ms"), target: "c")],
    circuit_breakers: [(name: "b", sliding_window_size: 20, minimum_number_of_calls: 20,
        permitted_number_of_calls_in_half_open_state: 5, wait_duration_in_open_state: "WAIT")],
    call_sites: [(name: "c", governors: [CircuitBreaker("b")], upstream: "llm", timeout: "5s")],
    stations: [(name: "llm", servers: 100, service: Constant("200ms"))],
    timeline: [
        (at: "10s", path: "station.llm.error_rate", value: Float(1.0)),
        (at: "30s", path: "station.llm.error_rate", value: Float(0.0)),
    ],
)"#;

/// The breaker's state changes as `(time in s, "FROM -> TO")`.
fn transitions(r: &RunOutput) -> Vec<(f64, String)> {
    let changes = r.state_events.iter().filter(|e| e.kind == "state_change");
    changes.map(|e| (e.time.0 as f64 / 1e9, format!("{} -> {}", e.from, e.to))).collect()
}

/// HALF_OPEN episodes as `[start, end)` in s.
fn half_open_episodes(r: &RunOutput) -> Vec<(f64, f64)> {
    let t = transitions(r);
    let mut out = Vec::new();
    for (i, (at, what)) in t.iter().enumerate() {
        if what.ends_with("-> HALF_OPEN") {
            out.push((*at, t.get(i + 1).map_or(f64::INFINITY, |x| x.0)));
        }
    }
    out
}

/// Per HALF_OPEN episode, its probes (calls admitted while HALF_OPEN: the breaker is the
/// first level, so a call reaches it at its request's arrival) that failed with a 5xx.
fn failed_probes(r: &RunOutput) -> Vec<usize> {
    let in_episode = |t: SimTime, (a, b): (f64, f64)| {
        let s = t.0 as f64 / 1e9;
        s >= a && s < b
    };
    let failed = |q: &&RequestRecord| q.outcome == Some(Outcome::Failed(Reason::Upstream5xx));
    let eps = half_open_episodes(r);
    eps.iter()
        .map(|&e| r.requests.iter().filter(failed).filter(|q| in_episode(q.arrival, e)).count())
        .collect()
}

#[test]
fn flapping_breaker_short_open_wait_probes_an_unrecovered_service() {
    let run = |wait: &str| run_checked(&load(&FLAPPING.replace("WAIT", wait)), &cfg(13, 60));
    let (short, long) = (run("3s"), run("10s"));
    let names = |r: &RunOutput| transitions(r).into_iter().map(|(_, w)| w).collect::<Vec<_>>();
    let cycle = ["OPEN -> HALF_OPEN", "HALF_OPEN -> OPEN"];
    // 3 s: opens at 10.44 s, then five failed HALF_OPEN episodes (13.5, 16.7, 20.1, 23.4,
    // 26.7 s) before the one at 30.0 s closes it at 30.23 s: 13 state changes, 25 failed
    // probes (5 permits × 5 episodes).
    let mut want = vec!["CLOSED -> OPEN"];
    (0..5).for_each(|_| want.extend(cycle));
    want.extend(["OPEN -> HALF_OPEN", "HALF_OPEN -> CLOSED"]);
    assert_eq!(names(&short), want);
    // Every probe of the five failed episodes failed; the last episode began 13 ms before
    // the recovery: its first 2 probes still failed, 2 of 5 < 50 %: CLOSED.
    expect("flapping_breaker_failed_probes_3s", format!("{:?}", failed_probes(&short)));
    // 10 s: one failed episode (20.4 s) inside the outage, then the episode at 30.7 s
    // meets a recovered service and closes it at 30.97 s: 5 state changes, 5 failed probes.
    let mut want = vec!["CLOSED -> OPEN"];
    want.extend(cycle);
    want.extend(["OPEN -> HALF_OPEN", "HALF_OPEN -> CLOSED"]);
    assert_eq!(names(&long), want);
    expect("flapping_breaker_failed_probes_10s", format!("{:?}", failed_probes(&long)));
    // The price of the longer wait: it closes 0.7 s later after the recovery at 30 s.
    let closed = |r: &RunOutput| transitions(r).last().unwrap().0;
    assert!((30.0..30.5).contains(&closed(&short)), "{}", closed(&short));
    assert!((30.5..31.0).contains(&closed(&long)), "{}", closed(&long));
}

/// Incident 18 — half-open probes by priority. P0 (20 req/s) and P2 batch (100 req/s)
/// share a provider call behind one breaker (wait 5 s, 5 probes of a 1 s call); the
/// provider fails from 10 s to 20 s and runs on 60 of its 130 servers until 30 s. When it has recovered, the breaker's next HALF_OPEN
/// episode lasts one probe (≈ 1 s): without `half_open_wait` every call arriving then
/// finds no permit and is rejected, P0 and batch alike; with it they wait, and on closing
/// the breaker releases P0 first: P0 reaches the provider ahead of the batch backlog.
const PRIORITY: &str = r#"Scenario(name: "half_open_priority",
    sources: [
        (name: "p0", interarrival: Exponential(mean: "50ms"), target: "c", class: "P0"),
        (name: "batch", interarrival: Exponential(mean: "10ms"), target: "c", class: "P2"),
    ],
    circuit_breakers: [(name: "b", sliding_window_size: 50, minimum_number_of_calls: 50,
        permitted_number_of_calls_in_half_open_state: 5, wait_duration_in_open_state: "5s"WAIT)],
    call_sites: [(name: "c", governors: [CircuitBreaker("b")], upstream: "llm", timeout: "30s")],
    stations: [(name: "llm", servers: 130, service: Constant("1s"))],
    timeline: [
        (at: "10s", path: "station.llm.error_rate", value: Float(1.0)),
        (at: "10s", path: "station.llm.servers", value: Count(60)),
        (at: "20s", path: "station.llm.error_rate", value: Float(0.0)),
        (at: "30s", path: "station.llm.servers", value: Count(130)),
    ],
)"#;

#[test]
fn half_open_priority_lets_p0_through_first() {
    let run = |w: &str| run_checked(&load(&PRIORITY.replace("WAIT", w)), &cfg(18, 40));
    let plain = run("");
    let prio = run(", half_open_wait: HalfOpenWait(max_wait: \"5s\", max_waiting: 2000)");
    // Both runs meet the same traffic and luck: the same transitions (open at 11.1 s, a
    // failed episode at 16.1 s, the episode after the recovery closes the breaker).
    assert_eq!(transitions(&plain), transitions(&prio));
    let &(ho, closed) = half_open_episodes(&prio).last().unwrap();
    assert!(ho > 20.0, "the last episode starts after the recovery at 20 s: {ho}");
    // Requests of `src` arriving during the last HALF_OPEN episode: (arrived, rejected
    // breaker_open, succeeded, mean latency of the successes in ms).
    let episode = |r: &RunOutput, src: u16| {
        let s = |t: SimTime| t.0 as f64 / 1e9;
        let v: Vec<&RequestRecord> = r
            .requests
            .iter()
            .filter(|q| q.source == src && s(q.arrival) >= ho && s(q.arrival) < closed)
            .collect();
        let rejected =
            v.iter().filter(|q| q.outcome == Some(Outcome::Rejected(Reason::BreakerOpen))).count();
        let ok: Vec<f64> = v
            .iter()
            .filter(|q| q.outcome == Some(Outcome::Success))
            .map(|q| (q.end.unwrap().0 - q.arrival.0) as f64 / 1e6)
            .collect();
        (v.len(), rejected, ok.len(), ok.iter().sum::<f64>() / ok.len().max(1) as f64)
    };
    let (p0_plain, batch_plain) = (episode(&plain, 0), episode(&plain, 1));
    let (p0_prio, batch_prio) = (episode(&prio, 0), episode(&prio, 1));
    // Without half_open_wait: of the 20 P0 requests arriving during the episode, 19 are
    // rejected (breaker_open) and 1 was a probe; batch: 90 of 94 rejected, 4 probes.
    assert_eq!((p0_plain.0, p0_plain.1, batch_plain.0, batch_plain.1), (20, 19, 94, 90));
    // With it: none rejected; they wait, and on closing the breaker releases P0 first.
    assert_eq!((p0_prio.0, p0_prio.1, p0_prio.2), (20, 0, 20));
    assert_eq!((batch_prio.0, batch_prio.1, batch_prio.2), (94, 0, 94));
    // The recovering provider has 60 servers (until 30 s): the 19 P0 waiters all start at
    // the closing instant, but only 41 of the 90 batch waiters; the others queue.
    let waiters_started_at_close = |src: u16| {
        let s = |t: SimTime| t.0 as f64 / 1e9;
        let w: Vec<&RequestRecord> = prio
            .requests
            .iter()
            .filter(|q| q.source == src && s(q.arrival) >= ho && s(q.arrival) < closed)
            .filter(|q| q.start.is_some_and(|t| s(t) >= closed))
            .collect();
        (w.len(), w.iter().filter(|q| s(q.start.unwrap()) == closed).count())
    };
    assert_eq!(waiters_started_at_close(0), (19, 19));
    assert_eq!(waiters_started_at_close(1), (90, 41));
    // Mean latency of the episode's requests: P0 1,376 ms, batch 1,998 ms.
    assert!(p0_prio.3 < 1_450.0 && batch_prio.3 > 1_900.0, "{} {}", p0_prio.3, batch_prio.3);
}
