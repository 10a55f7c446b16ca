//! KEDA's scale to zero (`crate::autoscaler` KEDA, `world/autoscalers.rs`): a station with
//! no replicas holds its requests until a check finds the trigger active; the replica
//! comes `provisioning_delay` later (the cold start); after `cooldown_period` without an
//! active check the replicas go back to zero.

use crate::support::{cfg, get, load, run_checked, stepped};
use models::RunConfig;

/// One request every 300 s from 0 s (three in all), 1 s of service; KEDA checks every 10 s with a
/// 60 s cooldown on the in-flight count (target 1 per replica); a replica is ready 20 s
/// after the ask.
fn idle(extra: &str) -> String {
    format!(
        r#"Scenario(
            name: "idle",
            sources: [(name: "in", interarrival: Constant("300s"), target: "svc", limit: Some(3))],
            call_sites: [(name: "svc", upstream: "svc", timeout: "1h")],
            stations: [(name: "svc", servers: 1, service: Constant("1s"))],
            autoscalers: [(name: "k", station: "svc", min_replicas: 0, max_replicas: 5,
                           metric: InFlight, target: 1.0, polling_interval: "10s",
                           cooldown_period: "60s", provisioning_delay: Constant("20s"){extra})],
        )"#
    )
}

fn secs(t: sim_core::SimTime) -> f64 {
    t.0 as f64 / 1e9
}

/// The sequence, derived from `RequestScale` (checks at 10 s multiples, a check after the
/// arrivals and readiness of its instant):
/// - 0 s: the first request is served at once by the replica the station starts with.
/// - 10 s: nothing in flight and no check was ever active (LastActiveTime nil): to zero.
/// - 300 s: the first request arrives and waits (no server); the check at 300 s sees it:
///   activate, one replica, ready at 320 s; served 320–321 s: a latency of exactly
///   20 s + 1 s, the cold start.
/// - 310 s (waiting) and 320 s (in service) are active: the last active check is 320 s;
///   330 s on nothing is in flight. 380 s: 320 + 60 is not before 380; 390 s: to zero.
/// - 600 s and 620 s likewise: activate at 600 s, answered at 621 s, to zero at 690 s.
///
/// The HPA stays out: disabled at zero replicas; at one it holds one (the in-flight count
/// 1 against a target of 1, then 0 over its 300 s down-stabilization).
#[test]
fn scale_to_zero_and_cold_start_sequence() {
    let r = run_checked(&load(&idle("")), &cfg(1, 800));
    let events: Vec<(f64, &str, &str)> = r
        .state_events
        .iter()
        .filter(|e| e.component == "autoscaler.k")
        .map(|e| (secs(e.time), e.kind, e.to.as_str()))
        .collect();
    let want = [
        (10.0, "scale_to_zero", "replicas = 0 (InFlight = 0)"),
        (300.0, "activate", "replicas = 1 (InFlight = 1)"),
        (390.0, "scale_to_zero", "replicas = 0 (InFlight = 0)"),
        (600.0, "activate", "replicas = 1 (InFlight = 1)"),
        (690.0, "scale_to_zero", "replicas = 0 (InFlight = 0)"),
    ];
    assert_eq!(events, want);
    let latencies: Vec<f64> =
        r.requests.iter().map(|q| secs(q.end.unwrap()) - secs(q.arrival)).collect();
    assert_eq!(latencies, [1.0, 21.0, 21.0], "then provisioning delay + service");
    assert_eq!(get(&r, "autoscaler.k.activations"), 2.0);
    assert_eq!(get(&r, "autoscaler.k.scale_to_zeros"), 3.0);
    assert_eq!(get(&r, "autoscaler.k.ready_end"), 0.0);
}

/// With `activation_threshold: 1`, one request in flight is not above it: the request of
/// 300 s waits until a second arrives at 600 s (2 > 1: activate), ready at 620 s, served
/// 620–621 s (latency 321 s), the third 621–622 s (22 s) — KEDA's trap for rare traffic.
/// One activation; to zero at 10 s and at 690 s (last active at 620 s with 2 in flight).
#[test]
fn an_activation_threshold_above_the_traffic_waits_for_company() {
    let r = run_checked(&load(&idle(", activation_threshold: 1.0")), &cfg(1, 800));
    let latencies: Vec<f64> =
        r.requests.iter().map(|q| secs(q.end.unwrap()) - secs(q.arrival)).collect();
    assert_eq!(latencies, [1.0, 321.0, 22.0]);
    assert_eq!(get(&r, "autoscaler.k.activations"), 1.0);
    assert_eq!(get(&r, "autoscaler.k.scale_to_zeros"), 2.0);
}

/// `min_replicas: 1`: KEDA never takes the station to zero and each request is served at
/// once (1 s).
#[test]
fn a_minimum_of_one_keeps_it_warm() {
    let r =
        run_checked(&load(&idle("").replace("min_replicas: 0", "min_replicas: 1")), &cfg(1, 800));
    let latencies: Vec<f64> =
        r.requests.iter().map(|q| secs(q.end.unwrap()) - secs(q.arrival)).collect();
    assert_eq!(latencies, [1.0, 1.0, 1.0]);
    assert_eq!(get(&r, "autoscaler.k.scale_to_zeros"), 0.0);
}

/// Stepped event by event with the invariants after each, the run equals one go.
#[test]
fn stepping_equals_one_go() {
    let sc = load(&idle(""));
    let c = RunConfig { record_requests: false, ..cfg(3, 800) };
    assert_eq!(stepped(&sc, &c).fingerprint, run_checked(&sc, &c).fingerprint);
}

/// Bad input: zero replicas with an HPA metric is refused with the field and the reason.
#[test]
fn zero_without_a_keda_metric_is_refused() {
    let text = idle("").replace("metric: InFlight, target: 1.0", "target: 50.0");
    let sc: models::scenario::ScenarioSpec<models::params::ParamValue> =
        ron::from_str(&text).expect("parses");
    let e = sc.check().unwrap_err();
    assert_eq!(e.path, "autoscalers[0].min_replicas", "{e}");
    assert!(e.message.contains("needs a KEDA metric"), "{e}");
}
