//! Shadow mode through the world: a shadow changes nothing, and counts what it would have
//! done.
//!
//! "Changes nothing" is checked precisely as: between the run without shadows and the run
//! with `Shadow(FlowRules("fr"))` and `Shadow(CircuitBreaker("b"))` added to the stack,
//! 1. the engine's event fingerprint (every processed event's time, kind and entity, before
//!    the summary is folded in) and the number of events processed are equal;
//! 2. every summary column of the run without shadows exists in the run with them, with the
//!    same value, in the same order, and the only extra columns are `shadow.*`;
//! 3. the state events (`events.parquet`) are equal once the `shadow.*` components' rows
//!    are removed;
//! 4. the per-request records are equal.
//!
//! The run fingerprint (`RunOutput::fingerprint`) folds the summary in, so it differs by
//! exactly the `shadow.*` columns: (1)–(2) are what must be identical.

use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::{RunConfig, Scenario};
use sim_core::{SimDuration, SimTime};

/// 100 req/s for 40 s; the upstream fails every call from 10 s to 20 s; the breaker's
/// threshold is changed at 25 s (the declaration configures the shadow copy too).
const SCENARIO: &str = r#"Scenario(
    name: "shadow",
    sources: [(name: "s", interarrival: Exponential(mean: "10ms"), target: "c")],
    gates: [(name: "g", permits: 200)],
    flow_rules: [(name: "fr", rules: [FlowRule(count: 50.0)])],
    circuit_breakers: [(name: "b", sliding_window_size: 50, minimum_number_of_calls: 20,
        wait_duration_in_open_state: "2s", permitted_number_of_calls_in_half_open_state: 5)],
    call_sites: [(name: "c", governors: GOVS, upstream: "llm", timeout: "5s")],
    stations: [(name: "llm", servers: 100, service: Constant("50ms"))],
    timeline: [
        (at: "10s", path: "station.llm.error_rate", value: Float(1.0)),
        (at: "20s", path: "station.llm.error_rate", value: Float(0.0)),
        (at: "25s", path: "circuit_breaker.b.failure_rate_threshold", value: Float(60.0)),
    ],
)"#;

const PLAIN: &str = r#"[Gate("g")]"#;
const SHADOWED: &str = r#"[Shadow(FlowRules("fr")), Shadow(CircuitBreaker("b")), Gate("g")]"#;
const REAL: &str = r#"[CircuitBreaker("b"), Gate("g")]"#;

fn load(govs: &str) -> Scenario {
    crate::support::load(&SCENARIO.replace("GOVS", govs))
}

struct Run {
    engine: u64,
    events: u64,
    out: models::RunOutput,
}

/// Runs 40 s; the engine fingerprint is read before the summary is folded in.
fn run(sc: &Scenario, seed: u64) -> Run {
    let mut cfg = RunConfig::new(seed, SimDuration::from_secs(40));
    cfg.record_requests = true;
    let end = SimTime::ZERO + cfg.duration;
    let mut sim = models::run::simulation(sc, &cfg);
    sim.run_until(end).unwrap();
    let out = models::run::finish(sim, end, None);
    assert!(out.error.is_none() && out.violations.is_empty(), "{:?}", out.violations);
    // The same run again (determinism), and its engine fingerprint.
    let mut again = models::run::simulation(sc, &cfg);
    again.run_until(end).unwrap();
    let done = again.finish(end);
    let engine = done.fingerprint.value();
    assert_eq!(models::run(sc, &cfg).fingerprint, out.fingerprint, "same seed, same run");
    Run { engine, events: done.events, out }
}

fn get(r: &Run, name: &str) -> f64 {
    r.out.summary.get(name).unwrap_or_else(|| panic!("no summary column {name}"))
}

#[test]
fn shadow_mode_changes_nothing_and_counts_what_it_would_have_done() {
    let (plain, shadowed) = (load(PLAIN), load(SHADOWED));
    for seed in 0..3 {
        let a = run(&plain, seed);
        let b = run(&shadowed, seed);
        // (1) The engine processed the same events at the same times.
        assert_eq!(a.engine, b.engine, "seed {seed}: engine fingerprint");
        assert_eq!(a.events, b.events);
        // (2) Every non-shadow summary value is identical; the extra columns are shadow.*.
        let extra: Vec<&(String, _)> =
            b.out.summary.values.iter().filter(|(n, _)| n.starts_with("shadow.")).collect();
        let rest: Vec<_> =
            b.out.summary.values.iter().filter(|(n, _)| !n.starts_with("shadow.")).collect();
        assert_eq!(rest, a.out.summary.values.iter().collect::<Vec<_>>(), "seed {seed}");
        assert_eq!(extra.len(), 2 * 5 + 2, "5 would_* each, + the breaker's 2 counters");
        // (3) The same state events, shadows' rows aside; (4) the same requests.
        let not_shadow = |r: &Run| {
            r.out
                .state_events
                .iter()
                .filter(|e| !e.component.starts_with("shadow."))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(not_shadow(&a), not_shadow(&b));
        assert!(!not_shadow(&a).is_empty(), "the timeline's config changes are events");
        assert_eq!(a.out.requests, b.out.requests);
        assert_ne!(a.out.fingerprint, b.out.fingerprint, "the shadow columns are folded in");

        // The shadow flow rule (50 QPS against ~100 req/s) would have refused about half:
        // it sees every call once (no retries), and passes at most 50 per second window.
        let offered = get(&b, "source.s.offered");
        let f = |c: &str| get(&b, &format!("shadow.flow.fr.{c}"));
        assert_eq!(f("would_pass") + f("would_reject") + f("would_wait"), offered);
        assert!(f("would_pass") <= 50.0 * 41.0, "{}", f("would_pass"));
        assert!(f("would_reject") > 0.3 * offered, "{} of {offered}", f("would_reject"));
        // The shadow breaker would have refused calls during the outage only: every mark
        // of a would-be refusal is at or after the outage began (10 s) and its first
        // opening too; it closed again after the outage.
        let br = |c: &str| get(&b, &format!("shadow.circuit_breaker.b.{c}"));
        assert!(br("would_reject") > 100.0, "{}", br("would_reject"));
        assert_eq!(br("would_reject"), br("not_permitted"));
        assert!(br("state_changes") >= 3.0, "CLOSED→OPEN→HALF_OPEN→CLOSED at least");
        let ev: Vec<_> = b
            .out
            .state_events
            .iter()
            .filter(|e| e.component == "shadow.circuit_breaker.b")
            .collect();
        let t10 = SimTime::ZERO + SimDuration::from_secs(10);
        assert!(ev.iter().all(|e| e.time >= t10), "nothing before the outage");
        assert!(ev.iter().any(|e| e.kind == "shadow_reject" && e.to == "breaker_open"));
        let last = ev.iter().rfind(|e| e.kind == "shadow:state_change").unwrap();
        assert_eq!(last.to, "CLOSED", "closed again on the real outcomes after 20 s");
        // Rate-limited marks: at most one shadow_reject per second per shadow.
        let marks = ev.iter().filter(|e| e.kind == "shadow_reject").count();
        assert!(marks <= 41 && (marks as f64) < br("would_reject"), "{marks}");

        // Its first opening is the real breaker's (everything is equal up to that moment).
        let c = run(&load(REAL), seed);
        let first_open = |r: &Run, comp: &str| {
            r.out.state_events.iter().find(|e| e.component == comp && e.to == "OPEN").unwrap().time
        };
        assert_eq!(
            first_open(&b, "shadow.circuit_breaker.b"),
            first_open(&c, "circuit_breaker.b"),
            "seed {seed}"
        );
        // The comparison can tell: a real breaker changes the engine's events.
        assert_ne!(a.engine, c.engine);
        // Real-breaker columns exist with the new counters (`<kind>.<name>.<counter>`).
        assert!(get(&c, "circuit_breaker.b.not_permitted") > 0.0);
    }
}

#[test]
fn a_shadow_and_the_real_governor_coexist_and_shadows_are_shared() {
    // The real breaker acts; its shadow copy, in the same stack and in a second site,
    // is one arena instance (one set of columns).
    let text = SCENARIO
        .replace("GOVS", r#"[Shadow(CircuitBreaker("b")), CircuitBreaker("b"), Gate("g")]"#)
        .replace(
            r#"upstream: "llm", timeout: "5s")],"#,
            r#"upstream: "llm", timeout: "5s"),
               (name: "c2", governors: [Shadow(CircuitBreaker("b"))], upstream: "llm")],"#,
        );
    let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).expect("valid scenario");
    sc.check().expect("consistent");
    let r = run(&sc, 1);
    let n = r.out.summary.values.iter().filter(|(n, _)| n.starts_with("shadow.")).count();
    assert_eq!(n, 7);
    // Above the real breaker, the shadow sees its refusals as outcomes: it counts them as
    // failures ("rejected" is recorded by default), so it opens at least as often.
    assert!(get(&r, "shadow.circuit_breaker.b.state_changes") >= 1.0);
    assert!(get(&r, "circuit_breaker.b.not_permitted") > 0.0);
}

#[test]
fn shadow_errors_point_at_the_reference() {
    let check = |govs: &str, extra: &str| {
        let text =
            SCENARIO.replace("GOVS", govs).replace("    gates:", &format!("{extra}    gates:"));
        let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).expect("parses");
        sc.check().unwrap_err()
    };
    let e = check(r#"[Shadow(Retry("r")), Gate("g")]"#, r#"retries: [(name: "r")],"#);
    assert_eq!(e.path, "call_sites[0].governors[0]");
    assert!(e.message.contains("cannot run in shadow mode"), "{}", e.message);
    let e = check(r#"[Gate("g"), Shadow(CircuitBreaker("nope"))]"#, "");
    assert_eq!(e.path, "call_sites[0].governors[1]");
    assert!(e.message.contains("no circuit_breaker named \"nope\""), "{}", e.message);
    let e = check(r#"[Shadow(Gate("g")), Shadow(Gate("g"))]"#, "");
    assert!(e.message.contains("appears twice"), "{}", e.message);
}
