//! Abandoned work: a call whose client timed out keeps the upstream busy until it ends,
//! unless the upstream supports cancellation — the mechanism behind retry-driven
//! metastable collapse (docs/domain.md §4).

use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::{Outcome, Reason, RunConfig, Scenario};
use sim_core::SimDuration;

fn scenario(cancellation: bool) -> Scenario {
    // One server, calls of exactly 3 s, a client timeout of 1 s, a call every 2 s.
    let text = format!(
        r#"Scenario(name: "abandon",
        sources: [(name: "c", interarrival: Constant("2s"), target: "site")],
        call_sites: [(name: "site", upstream: "llm", timeout: "1s")],
        stations: [(name: "llm", servers: 1, service: Constant("3s"), cancellation: {cancellation})],
    )"#
    );
    let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).unwrap();
    sc.check().unwrap();
    sc
}

fn run_checked(sc: &Scenario, secs: u64) -> models::RunOutput {
    let mut cfg = RunConfig::new(1, SimDuration::from_secs(secs));
    cfg.record_requests = true;
    // Invariants after every event, not only at the end; stepped = one go.
    crate::support::stepped(sc, &cfg)
}

#[test]
fn without_cancellation_abandoned_calls_keep_the_server_busy() {
    let r = run_checked(&scenario(false), 600);
    let s = &r.summary;
    // Every call times out (3 s of work > 1 s of patience); the server works 3 s for each
    // call that reaches it while calls arrive every 2 s: it never idles again.
    assert_eq!(s.get("source.c.completed").unwrap(), 0.0);
    assert!(
        r.requests
            .iter()
            .filter(|q| q.outcome.is_some())
            .all(|q| q.outcome == Some(Outcome::Failed(Reason::Timeout)))
    );
    let util = s.get("station.llm.utilization").unwrap();
    assert!(util > 0.99, "utilisation {util}: abandoned work occupies the server");
    assert!(s.get("station.llm.abandoned_work").unwrap() > 190.0);
    assert!(s.get("station.llm.peak_queue").unwrap() > 50.0, "a backlog of dead calls builds up");
}

#[test]
fn with_cancellation_the_server_is_freed_at_the_timeout() {
    let r = run_checked(&scenario(true), 600);
    let s = &r.summary;
    assert_eq!(s.get("source.c.completed").unwrap(), 0.0);
    // Each call holds the server for exactly its 1 s of patience, every 2 s: 50%.
    let util = s.get("station.llm.utilization").unwrap();
    assert!((util - 0.5).abs() < 0.01, "utilisation {util}");
    assert_eq!(s.get("station.llm.abandoned_work").unwrap(), 0.0);
    assert_eq!(s.get("station.llm.peak_queue").unwrap(), 0.0);
}

/// A call answered exactly at its timeout is answered (completions precede timeouts).
#[test]
fn an_answer_at_the_timeout_instant_wins() {
    let text = r#"Scenario(name: "tie",
        sources: [(name: "c", interarrival: Constant("5s"), target: "site", limit: Some(3))],
        call_sites: [(name: "site", upstream: "llm", timeout: "1s")],
        stations: [(name: "llm", servers: 1, service: Constant("1s"), cancellation: true)],
    )"#;
    let sc: ScenarioSpec<ParamValue> = ron::from_str(text).unwrap();
    let r = run_checked(&sc, 20);
    assert_eq!(r.summary.get("source.c.completed").unwrap(), 3.0);
    assert_eq!(r.summary.get("source.c.failed_timeout").unwrap(), 0.0);
}

/// Review case: timeouts without cancellation under two stacked gates make a long but
/// finite cascade of wake-ups (permits released by timed-out calls, waiters rejected by a
/// station full of abandoned work); it must run, not trip the wake-up guard.
#[test]
fn wake_up_cascades_with_stacked_gates_are_finite() {
    for (cap, reject) in [("Some(1)", "QueueFull"), ("Some(0)", "Upstream429")] {
        let text = format!(
            r#"Scenario(name: "cascade",
            sources: [(name: "c", interarrival: Constant("100us"), target: "site")],
            gates: [(name: "outer", permits: 10, acquire_timeout: "100ms"),
                    (name: "inner", permits: 2, acquire_timeout: "100ms")],
            call_sites: [(name: "site", governors: [Gate("outer"), Gate("inner")], upstream: "llm", timeout: "5ms")],
            stations: [(name: "llm", servers: 2, queue_capacity: {cap}, reject_as: {reject}, service: Constant("50ms"))],
        )"#
        );
        let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).unwrap();
        sc.check().unwrap();
        let r = run_checked(&sc, 2);
        assert!(r.summary.get("source.c.failed_timeout").unwrap() > 0.0);
    }
}

/// A service follows the cancellation setting in force when it started.
#[test]
fn switching_cancellation_off_keeps_services_started_under_it_cancellable() {
    let text = r#"Scenario(name: "switch",
        sources: [(name: "c", interarrival: Constant("10s"), target: "site", limit: Some(1))],
        call_sites: [(name: "site", upstream: "llm", timeout: "1s")],
        stations: [(name: "llm", servers: 1, service: Constant("3s"), cancellation: true)],
        timeline: [(at: "500ms", path: "station.llm.cancellation", value: Bool(false))],
    )"#;
    let sc: ScenarioSpec<ParamValue> = ron::from_str(text).unwrap();
    sc.check().unwrap();
    sc.check_timeline().unwrap();
    let r = run_checked(&sc, 10);
    assert_eq!(r.summary.get("station.llm.abandoned_work").unwrap(), 0.0);
    let u = r.summary.get("station.llm.utilization").unwrap();
    assert!((u - 0.1).abs() < 1e-9, "1 s of work in 10 s: {u}");
}
