//! World-level governor edge cases (after an independent review): several gates in one
//! stack, a gate shared by two call sites, permits lowered below those in use and raised
//! again, servers cut and restored, a completion exactly at a waiter's deadline — with every
//! invariant checked after every single event, and stepping equal to one go.

use crate::support::load;
use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::{Outcome, RunConfig};
use sim_core::{SimDuration, SimTime};

const MULTI: &str = r#"Scenario(
    name: "multi",
    sources: [
        (name: "a", interarrival: Exponential(mean: "5ms"), target: "site_a"),
        (name: "b", interarrival: Exponential(mean: "7ms"), target: "site_b"),
    ],
    gates: [
        (name: "outer", permits: 30, acquire_timeout: "200ms", max_waiting: 50),
        (name: "shared", permits: 20, acquire_timeout: "100ms"),
        (name: "inner", permits: 10, acquire_timeout: "50ms"),
    ],
    call_sites: [
        (name: "site_a", governors: [Gate("outer"), Gate("shared"), Gate("inner")], upstream: "st"),
        (name: "site_b", governors: [Gate("shared")], upstream: "st2"),
    ],
    stations: [
        (name: "st", servers: 8, queue_capacity: Some(3), service: Constant("50ms")),
        (name: "st2", servers: 50, service: Constant("100ms")),
    ],
    timeline: [
        (at: "2s", path: "gate.shared.permits", value: Count(1)),
        (at: "3s", path: "gate.inner.permits", value: Count(1)),
        (at: "4s", path: "gate.shared.permits", value: Count(40)),
        (at: "4s", path: "gate.inner.acquire_timeout", value: Duration("0s")),
        (at: "5s", path: "gate.inner.permits", value: Count(100)),
        (at: "6s", path: "station.st.servers", value: Count(1)),
        (at: "7s", path: "station.st.servers", value: Count(20)),
    ],
)"#;

#[test]
fn invariants_hold_after_every_event() {
    let sc = load(MULTI);
    for seed in 0..5 {
        let mut cfg = RunConfig::new(seed, SimDuration::from_secs(10));
        cfg.sample_every = Some(SimDuration::from_ms(100));
        // Invariants after every event, clean end, same fingerprint as the plain run.
        let (stepped, n) =
            crate::support::try_stepped(&sc, &cfg).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let u = stepped.summary.get("station.st.utilization").unwrap();
        assert!(u > 0.0 && u <= 1.0, "utilisation {u} with servers changed at run time");
        // Every gate's time series shows the lowered limits biting.
        assert!(stepped.summary.get("source.a.rejected_gate_full").unwrap() > 0.0);
        assert!(n > 1000);
    }
}

/// Stepping until idle never applies a change stamped after the last event.
#[test]
fn stepping_to_idle_stays_at_the_last_event() {
    let sc = load(
        r#"Scenario(
        name: "lim",
        sources: [(name: "a", interarrival: Exponential(mean: "10ms"), target: "c", limit: Some(100))],
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 1, service: Exponential(mean: "5ms"))],
        timeline: [(at: "1h", path: "station.st.servers", value: Count(2))],
    )"#,
    );
    let cfg = RunConfig::new(1, SimDuration::from_secs(10));
    let one = models::run(&sc, &cfg);
    let mut sim = models::run::simulation(&sc, &cfg);
    while sim.step().unwrap() {}
    assert!(sim.now() < SimTime(10_000_000_000), "clock jumped to {}", sim.now());
    let end = SimTime(10_000_000_000);
    sim.run_until(end).unwrap();
    let stepped = models::run::finish(sim, end, None);
    assert_eq!(one.fingerprint, stepped.fingerprint);
    assert_eq!(one.summary, stepped.summary);
}

/// Phases: a call completing exactly at a waiter's deadline completes first, so the permit
/// is handed over and the waiter is served.
#[test]
fn completion_at_the_deadline_hands_the_permit_over() {
    let sc = load(
        r#"Scenario(
        name: "tie",
        sources: [
            (name: "a", interarrival: Constant("1s"), target: "c", limit: Some(1)),
            (name: "b", interarrival: Constant("1s"), target: "c", limit: Some(1)),
        ],
        gates: [(name: "g", permits: 1, acquire_timeout: "50ms")],
        call_sites: [(name: "c", governors: [Gate("g")], upstream: "st")],
        stations: [(name: "st", servers: 4, service: Constant("50ms"))],
    )"#,
    );
    let mut cfg = RunConfig::new(1, SimDuration::from_secs(1));
    cfg.record_requests = true;
    let r = models::run(&sc, &cfg);
    assert_eq!(r.requests.len(), 2);
    assert!(r.requests.iter().all(|q| q.outcome == Some(Outcome::Success)), "{:?}", r.requests);
    let second = r.requests.iter().find(|q| q.source == 1).unwrap();
    assert_eq!(second.start, Some(SimTime(50_000_000)), "started at the deadline instant");
}

/// A source that would spin at one instant is refused at load; the engine guard is the
/// second line of defence (sim-core tests).
#[test]
fn zero_interarrival_is_refused() {
    let sc: ScenarioSpec<ParamValue> = ron::from_str(
        r#"Scenario(name: "z", sources: [(name: "a", interarrival: Constant("0s"), target: "c")],
           call_sites: [(name: "c", upstream: "st")],
           stations: [(name: "st", servers: 1, service: Constant("1ms"))])"#,
    )
    .unwrap();
    let e = sc.check().unwrap_err();
    assert_eq!(e.path, "sources[0].interarrival");
}
