//! The request entry path: apps (instances behind a balancer), the priority dispatcher and
//! the worker pool per instance, between a request's arrival and its pipeline.
//! Every run here is checked for conservation (`check_invariants()` empty, I1 and I23) and
//! determinism (same seed ⇒ same fingerprint).

use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::summary::Summary;
use models::{RunConfig, Scenario};
use sim_core::{SimDuration, SimTime};

fn load(text: &str) -> Scenario {
    let sc: ScenarioSpec<ParamValue> = ron::from_str(text).expect("valid scenario");
    sc.check().expect("consistent");
    sc.check_timeline().expect("timeline ok");
    sc
}

/// Runs twice: no invariant violation, and the same fingerprint both times.
fn run(sc: &Scenario, seed: u64, secs: u64, warmup_s: u64) -> Summary {
    let cfg = RunConfig {
        warmup: SimDuration::from_secs(warmup_s),
        ..RunConfig::new(seed, SimDuration::from_secs(secs))
    };
    let a = models::run(sc, &cfg);
    assert!(a.error.is_none(), "{:?}", a.error);
    assert!(a.violations.is_empty(), "{:?}", a.violations);
    let b = models::run(sc, &cfg);
    assert_eq!(a.fingerprint, b.fingerprint, "determinism");
    a.summary
}

/// Steps event by event, checking every invariant after each.
fn stepped(sc: &Scenario, seed: u64, secs: u64) {
    let cfg = RunConfig::new(seed, SimDuration::from_secs(secs));
    let mut sim = models::run::simulation(sc, &cfg);
    let end = SimTime(secs * 1_000_000_000);
    let mut n = 0u64;
    while sim.next_event_time().is_some_and(|t| t <= end) {
        sim.step().unwrap();
        n += 1;
        let v = sim.world().check_invariants();
        assert!(v.is_empty(), "event {n} at {}: {v:?}", sim.now());
    }
    sim.run_until(end).unwrap();
    let out = models::run::finish(sim, end, None);
    assert_eq!(out.fingerprint, models::run(sc, &cfg).fingerprint, "stepping = one go");
}

fn get(s: &Summary, name: &str) -> f64 {
    s.get(name).unwrap_or_else(|| panic!("no column {name}"))
}

/// P0 at 125/s (Exponential) and P2 at 5/s into one instance with 4 threads of 40 ms each
/// (capacity 4 / 0.04 s = 100/s). The P0 queue holds 20 (overflow Reject), so it is always
/// full and its head waits ≈ 20 × 10 ms = 200 ms.
fn priority(policy: &str) -> String {
    format!(
        r#"Scenario(
    name: "priority",
    sources: [
        (name: "chat", interarrival: Exponential(mean: "8ms"), target: "llm", class: "P0", app: "svc"),
        (name: "batch", interarrival: Exponential(mean: "200ms"), target: "llm", class: "P2", app: "svc"),
    ],
    apps: [(
        name: "svc",
        dispatcher: Some((name: "d", policy: {policy}, queues: [
            (class: "P0", capacity: 20), (class: "P1", capacity: 1000), (class: "P2", capacity: 1000),
        ])),
        pool: Some(Shared((name: "workers", core_pool_size: 4, maximum_pool_size: 4, queue_capacity: 0))),
    )],
    call_sites: [(name: "llm", upstream: "llm")],
    stations: [(name: "llm", servers: 1000, service: Constant("40ms"))],
)"#
    )
}

/// (a) Strict: P0 always waits, so P2 is never dispatched once the P0 queue has filled (at
/// most the first P2, if it came before P0 filled the queue). The SPEC's WeightedPolling
/// restarts its loop at iteration 0 (which polls P0) after every task: strict under
/// sustained P0 load, the same starvation. WeightedRoundRobin [3, 2, 1]: P2 gets 1 pick in
/// 4 while P0 and P2 both wait, so every P2 is taken within a few dispatches (one dispatch
/// per 10 ms). Aging (step 0 = strict, max_wait 300 ms): P2 always waits behind P0 until
/// promoted at 300 ms (the P0 head waits only ≈ 200 ms), then takes the next free worker.
#[test]
fn strict_starves_p2_wrr_and_aging_bound_its_wait() {
    for (policy, bound) in [
        ("Strict", None),
        ("WeightedPolling()", None),
        ("WeightedRoundRobin(weights: [3, 2, 1])", Some((0.0, 200.0))),
        ("Aging(max_wait: \"300ms\")", Some((300.0, 345.0))),
    ] {
        let s = run(&load(&priority(policy)), 1, 20, 0);
        let offered = get(&s, "class.P2.offered");
        let dispatched = get(&s, "class.P2.dispatched");
        let max = get(&s, "class.P2.dispatch_wait_ms_max");
        let mean = get(&s, "class.P2.dispatch_wait_ms_mean");
        println!(
            "{policy}: P2 offered {offered} dispatched {dispatched} wait mean {mean} max {max}; P0 shed {}",
            get(&s, "class.P0.rejected_shed")
        );
        assert!((80.0..=120.0).contains(&offered), "{policy}: ≈ 100 P2 in 20 s, got {offered}");
        // P0 overloads 125/s vs 100/s: a fifth or more is shed under every policy.
        assert!(get(&s, "class.P0.rejected_shed") > 0.15 * get(&s, "class.P0.offered"));
        match bound {
            None => {
                assert!(dispatched <= 1.0, "{policy}: P2 starves, dispatched {dispatched}");
                assert!(get(&s, "class.P2.in_flight_end") >= offered - 1.0);
            }
            Some((lo, hi)) => {
                assert!(dispatched >= offered - 2.0, "{policy}: P2 served, {dispatched}/{offered}");
                assert!(max <= hi && mean >= lo, "{policy}: P2 wait mean {mean} max {max}");
            }
        }
    }
}
