//! A gate's fairness (`gate.rs`): the JDK's default non-fair `Semaphore` lets a newcomer take
//! a released permit before the queued head wakes (barging); a fair one hands it over.

use crate::support::{cfg, get, load, stepped};
use models::{Outcome, Reason};
use sim_core::SimTime;

/// One permit held back to back: "steady" sends a call every 10 ms from 0, each served
/// 10 ms, so each release at 10k ms meets a steady arrival at the same instant. "late"
/// sends one call at 5 ms and waits up to 100 ms for the permit.
fn scenario(gate_extra: &str) -> String {
    format!(
        r#"Scenario(
            name: "fairness",
            sources: [
                (name: "steady", interarrival: Constant("10ms"), target: "site"),
                (name: "late", interarrival: Constant("10s"), start: "5ms", limit: Some(1), target: "site"),
            ],
            gates: [(name: "g", permits: 1, acquire_timeout: "100ms", {gate_extra})],
            call_sites: [(name: "site", governors: [Gate("g")], upstream: "st")],
            stations: [(name: "st", servers: 4, service: Constant("10ms"))],
        )"#
    )
}

fn late(r: &models::RunOutput) -> (Option<Outcome>, Option<SimTime>) {
    let q = r.requests.iter().find(|q| q.arrival == SimTime(5_000_000)).expect("late");
    (q.outcome, q.end)
}

/// Fair: the release at 10 ms goes to the waiting late call (it ends at 20 ms); each steady
/// call then waits one service behind. Non-fair, at any wake latency (zero included: the
/// waiter's retry is a dispatch-phase wake-up, after the same instant's arrivals): every
/// release is taken by the steady arrival of its instant, the head re-parks, and the late
/// call is refused at its deadline, 5 + 100 ms — starved although it came first.
#[test]
fn a_non_fair_semaphore_lets_newcomers_barge_past_the_queue() {
    let fair = stepped(&load(&scenario("")), &cfg(1, 1));
    assert_eq!(late(&fair), (Some(Outcome::Success), Some(SimTime(20_000_000))));
    for latency in ["0s", "50us", "3ms"] {
        let text = scenario(&format!(r#"fair: false, wake_latency: "{latency}""#));
        let r = stepped(&load(&text), &cfg(1, 1));
        assert_eq!(
            late(&r),
            (Some(Outcome::Rejected(Reason::GateFull)), Some(SimTime(105_000_000))),
            "wake latency {latency}"
        );
        // The steady calls never wait: each finds the permit its predecessor just freed.
        assert_eq!(get(&r, "source.steady.rejected"), 0.0, "wake latency {latency}");
        assert_eq!(get(&r, "source.steady.latency_ms_max"), 10.0, "wake latency {latency}");
    }
}
