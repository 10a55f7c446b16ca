//! Per-instance vs cluster-wide governors (docs/domain.md §3.2, incident 6): a limit of 80 configured
//! on each of 4 instances lets 320 calls through against a provider quota of 100.

use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::{RunConfig, RunOutput, Scenario};
use sim_core::SimDuration;

fn load(permits: u64, per_instance: bool) -> Scenario {
    let scope = if per_instance { r#"per_instance: ["gate.llm"],"# } else { "" };
    let text = format!(
        r#"Scenario(
    name: "instances",
    sources: [(name: "chat", interarrival: Exponential(mean: "2500us"), target: "llm", app: "api")],
    apps: [App(name: "api", instances: 4)],
    gates: [(name: "llm", permits: {permits}, acquire_timeout: "0s")],
    {scope}
    quotas: [Quota(name: "provider", max_concurrency: Some(100))],
    call_sites: [(name: "llm", governors: [Gate("llm")], upstream: "provider")],
    stations: [(name: "provider", servers: 1000, service: Constant("1s"), quota: "provider")],
)"#
    );
    let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).expect("valid scenario");
    sc.check().expect("consistent");
    sc
}

fn run(sc: &Scenario) -> RunOutput {
    let cfg = RunConfig::new(6, SimDuration::from_secs(60));
    let r = models::run(sc, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.fingerprint, models::run(sc, &cfg).fingerprint, "determinism");
    let g = |k: &str| r.summary.get(&format!("source.chat.{k}")).unwrap();
    assert_eq!(g("offered"), g("completed") + g("failed") + g("rejected") + g("in_flight_end"));
    r
}

fn get(r: &RunOutput, k: &str) -> f64 {
    r.summary.get(&format!("source.chat.{k}")).unwrap()
}

/// 400 calls/s of 1 s each want 400 concurrent slots. Per instance, 80 permits × 4
/// instances = 320 pass the gates, the provider's quota of 100 answers the rest with 429
/// (≈ 220/s); the same 80 as one cluster-wide gate (or 20 per instance) passes at most 80
/// and the provider never refuses. Throughput: ~100/s vs ~80/s — the gate's headroom.
#[test]
fn per_instance_limit_times_four_floods_the_quota() {
    let per = run(&load(80, true));
    let c429 = get(&per, "rejected_upstream_429");
    assert!(c429 > 200.0 * 55.0, "429s {c429}");
    for fixed in [run(&load(80, false)), run(&load(20, true))] {
        assert_eq!(get(&fixed, "rejected_upstream_429"), 0.0);
        let done = get(&fixed, "completed") / 60.0;
        assert!((75.0..=81.0).contains(&done), "completed/s {done}");
    }
}

/// A per-instance governor that answers a call parked at it (a pacing rule whose next rule
/// blocks at the pass time: `rate_limited` from there) answers it from the instance's own
/// copy; the world resumes it in the instance's stack, not the declared one (regression:
/// it was taken for a time limiter's cut and panicked).
#[test]
fn per_instance_copy_answers_its_parked_call() {
    let text = r#"Scenario(
    name: "answered",
    sources: [(name: "chat", interarrival: Exponential(mean: "20ms"), target: "llm", app: "api")],
    apps: [App(name: "api", instances: 2)],
    flow_rules: [FlowRules(name: "edge", rules: [
        FlowRule(count: 10, control_behavior: RATE_LIMITER, max_queueing_time_ms: 1000),
        FlowRule(grade: THREAD, count: 1),
    ])],
    per_instance: ["flow.edge"],
    call_sites: [(name: "llm", governors: [FlowRules("edge")], upstream: "provider")],
    stations: [(name: "provider", servers: 100, service: Constant("1s"))],
)"#;
    let sc: ScenarioSpec<ParamValue> = ron::from_str(text).expect("valid scenario");
    sc.check().expect("consistent");
    let r = run(&sc);
    // One call in flight per instance at a time (THREAD 1, calls of 1 s): ~2 per second.
    let done = get(&r, "completed");
    assert!((100.0..=120.0).contains(&done), "completed {done}");
    assert!(get(&r, "rejected_rate_limited") > 1_000.0);
}
