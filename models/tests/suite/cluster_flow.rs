//! Sentinel cluster flow control through the world (docs/domain.md §3.6 "local vs cluster", incident
//! 6) and the emulation of a rule reload on a timeline change (docs/domain.md §3.16).
//!
//! Incident 6's numbers: 4 app instances, 400 calls/s of exactly 1 s each, a provider
//! concurrency quota of 100 (with 1 s calls, calls admitted per second = concurrency).
//! A cluster rule (token server) caps the calls admitted cluster-wide per rolling second.

use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::{RunConfig, RunOutput, Scenario};
use sim_core::SimDuration;

/// `rule`: the ClusterFlowRule's fields after `name`; `outage`: the token server is down
/// from 20 s to 40 s of a 60 s run.
fn incident6(rule: &str, outage: bool) -> Scenario {
    let timeline = if outage {
        r#"timeline: [
        (at: "20s", path: "cluster_flow.llm.server_up", value: Bool(false)),
        (at: "40s", path: "cluster_flow.llm.server_up", value: Bool(true)),
    ],"#
    } else {
        ""
    };
    let text = format!(
        r#"Scenario(
    name: "cluster",
    sources: [(name: "chat", interarrival: Exponential(mean: "2500us"), target: "llm", app: "api")],
    apps: [App(name: "api", instances: 4)],
    cluster_flow_rules: [ClusterFlowRule(name: "llm", {rule})],
    per_instance: ["cluster_flow.llm"],
    quotas: [Quota(name: "provider", max_concurrency: Some(100))],
    call_sites: [(name: "llm", governors: [ClusterFlow("llm")], upstream: "provider")],
    stations: [(name: "provider", servers: 1000, service: Constant("1s"), quota: "provider")],
    {timeline}
)"#
    );
    let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).expect("valid scenario");
    sc.check().expect("consistent");
    sc.check_timeline().expect("timeline");
    sc
}

/// Runs 60 s; conservation (every invariant, I43/I44 included) and determinism.
fn run(sc: &Scenario) -> RunOutput {
    let cfg = RunConfig::new(6, SimDuration::from_secs(60));
    let r = models::run(sc, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.fingerprint, models::run(sc, &cfg).fingerprint, "determinism");
    let g = |k: &str| r.summary.get(&format!("source.chat.{k}")).unwrap();
    assert_eq!(g("offered"), g("completed") + g("failed") + g("rejected") + g("in_flight_end"));
    r
}

fn src(r: &RunOutput, k: &str) -> f64 {
    r.summary.get(&format!("source.chat.{k}")).unwrap()
}

/// Σ over the 4 instances' clients of a counter (`cluster_flow.llm@api.<k>.<counter>`).
fn clients(r: &RunOutput, counter: &str) -> f64 {
    (0..4).map(|k| r.summary.get(&format!("cluster_flow.llm@api.{k}.{counter}")).unwrap()).sum()
}

/// GLOBAL 80 (or AVG_LOCAL 20 × 4 connected clients = 80): at most 80 tokens per rolling
/// second cluster-wide, so the provider's 100 is never exceeded — no 429 — and 80 calls/s
/// pass: 60 s × 80 = 4 800 tokens (the rest are rejected `rate_limited` at the instances).
/// Measured (seed 6), both rules: 4 800 tokens, 4 720 completed + 80 in flight at the end,
/// 19 371 rejected `rate_limited`, 0 × 429.
#[test]
fn cluster_rule_keeps_four_instances_under_the_quota() {
    for rule in ["count: 80, threshold_type: GLOBAL", "count: 20, threshold_type: AVG_LOCAL"] {
        let r = run(&incident6(rule, false));
        assert_eq!(src(&r, "rejected_upstream_429"), 0.0, "{rule}");
        let done = src(&r, "completed");
        assert!((4_600.0..=4_800.0).contains(&done), "{rule}: completed {done}");
        assert_eq!(clients(&r, "token_ok"), 4_800.0, "{rule}");
        assert_eq!(clients(&r, "token_ok"), done + src(&r, "in_flight_end"), "{rule}");
        assert_eq!(clients(&r, "local_pass") + clients(&r, "pass_through"), 0.0);
    }
}

/// A 20 s token-server outage (20 s → 40 s). AVG_LOCAL 20 with fallback: each instance's
/// local rule (its own count, 20 per rolling second) admits 20/s × 4 = 80/s: 1 600 local
/// passes, and the provider sees almost no 429 — almost, because the local rule counts
/// over 2 × 500 ms buckets, so for a moment an instance can hold more than 20 calls of
/// 1 s (passes late in a bucket that just left the window are still in flight).
/// Without fallback the rule is off during the outage: 400 calls/s reach the provider,
/// which holds 100 and answers ~300/s with 429. Sentinel's gotcha: GLOBAL 80 *with*
/// fallback falls back to 80 per instance (320/s) and floods the quota too (~220/s).
/// Measured (seed 6): fallback — 15 × 429 (of 24 000 offered), 1 600 local passes,
/// 3 200 tokens; no fallback — 6 110 × 429, 8 051 unchecked passes; GLOBAL 80 + fallback
/// — 4 459 × 429, 6 400 local passes (20 s × 320).
#[test]
fn server_outage_with_and_without_local_fallback() {
    let safe = run(&incident6("count: 20, threshold_type: AVG_LOCAL", true));
    let s429 = src(&safe, "rejected_upstream_429");
    assert!(s429 <= 30.0, "429s with fallback {s429}");
    // 20 s × 4 instances × 20 per aligned second.
    assert_eq!(clients(&safe, "local_pass"), 1_600.0);
    assert_eq!(clients(&safe, "token_ok"), 3_200.0); // 40 s × 80
    let outage_events = safe
        .state_events
        .iter()
        .filter(|e| e.kind == "config_change" && e.component == "cluster_flow.llm")
        .count();
    assert_eq!(outage_events, 2);
    let fallbacks = safe
        .state_events
        .iter()
        .filter(|e| e.kind == "state_change" && e.to == "local_fallback")
        .count();
    assert_eq!(fallbacks, 4, "one per instance client");

    let off = run(&incident6(
        "count: 20, threshold_type: AVG_LOCAL, fallback_to_local_when_fail: false",
        true,
    ));
    let c429 = src(&off, "rejected_upstream_429");
    assert!((5_500.0..=6_500.0).contains(&c429), "429s without fallback {c429}");
    assert!(c429 > 100.0 * s429);
    assert!(clients(&off, "pass_through") > 7_500.0);

    let global = run(&incident6("count: 80, threshold_type: GLOBAL", true));
    let g429 = src(&global, "rejected_upstream_429");
    assert!((3_800.0..=4_800.0).contains(&g429), "GLOBAL + fallback 429s {g429}");
    assert_eq!(clients(&global, "local_pass"), 6_400.0);
}

/// A warm-up flow rule (count 100, 10 s, cold factor 3: warningToken 500, maxToken 1000,
/// slope 2/100/500) under 1 000 calls/s is warm by 20 s (100 admitted per second). At
/// 20 s the same rule is pushed again:
/// * plain change (`reload: false`, the default): window and token state kept — 100, 100;
/// * `reload: true` (a real Sentinel `loadRules`): the controller is new, the first sync
///   refills the bucket: stored = 1000 − 100 (last second's passes) = 900, warningQps =
///   1 / (400 · 0.00004 + 0.01) = 38.46 → 38 admitted in [20, 21); then no refill (38 ≥
///   100/3 = 33), stored = 900 − 38 = 862, 1 / (362 · 0.00004 + 0.01) = 40.85 → 40 in
///   [21, 22): cold again.
#[test]
fn rule_reload_resets_warm_up_plain_change_keeps_it() {
    let sc = |reload: bool| {
        let text = format!(
            r#"Scenario(
    name: "reload",
    sources: [(name: "chat", interarrival: Exponential(mean: "1ms"), target: "llm")],
    flow_rules: [FlowRules(name: "w", rules: [FlowRule(count: 100, control_behavior: WARM_UP)])],
    call_sites: [(name: "llm", governors: [FlowRules("w")], upstream: "provider")],
    stations: [(name: "provider", servers: 1000, service: Constant("10ms"))],
    timeline: [(at: "20s", path: "flow.w.rule0.count", value: Float(100), reload: {reload})],
)"#
        );
        let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).expect("valid scenario");
        sc.check().expect("consistent");
        sc.check_timeline().expect("timeline");
        sc
    };
    let admitted = |reload: bool| {
        let mut cfg = RunConfig::new(6, SimDuration::from_secs(30));
        cfg.record_requests = true;
        let s = sc(reload);
        let r = models::run(&s, &cfg);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.fingerprint, models::run(&s, &cfg).fingerprint, "determinism");
        let kinds: Vec<&str> =
            r.state_events.iter().filter(|e| e.component == "flow.w").map(|e| e.kind).collect();
        assert_eq!(kinds, [if reload { "rule_reload" } else { "config_change" }]);
        let per_second = |k: u64| {
            r.requests
                .iter()
                .filter(|q| q.arrival.as_ns() / 1_000_000_000 == k)
                .filter(|q| q.outcome == Some(models::Outcome::Success))
                .count()
        };
        [19, 20, 21].map(per_second)
    };
    assert_eq!(admitted(false), [100, 100, 100]);
    assert_eq!(admitted(true), [100, 38, 40]);
}

/// `reload: true` is refused for a parameter whose component has no rules to reload.
#[test]
fn reload_only_for_rule_kinds() {
    let text = r#"Scenario(
    name: "bad",
    sources: [(name: "chat", interarrival: Exponential(mean: "1ms"), target: "llm")],
    call_sites: [(name: "llm", upstream: "provider")],
    stations: [(name: "provider", servers: 10, service: Constant("10ms"))],
    timeline: [(at: "1s", path: "station.provider.servers", value: Count(5), reload: true)],
)"#;
    let sc: ScenarioSpec<ParamValue> = ron::from_str(text).expect("parses");
    let e = sc.check_timeline().unwrap_err();
    assert_eq!(e.path, "timeline[0].reload");
    assert!(e.message.contains("flow, param_flow, token_bucket, cluster_flow"), "{e}");
}

/// A shadow of the cluster rule has its own copy of the token server (one client, so
/// AVG_LOCAL 20 × 1 = 20/s): it never spends the real tokens — every non-shadow result is
/// the same — and it counts what it would have refused.
#[test]
fn a_shadow_cluster_rule_spends_no_real_tokens() {
    let plain = incident6("count: 20", false);
    let mut shadowed = plain.clone();
    shadowed.call_sites[0].governors.insert(
        0,
        models::scenario::GovernorRef::Shadow(Box::new(
            models::scenario::GovernorRef::ClusterFlow("llm".into()),
        )),
    );
    shadowed.check().expect("a cluster rule can be shadowed");
    let (a, b) = (run(&plain), run(&shadowed));
    // Every non-shadow summary value is identical (the fingerprint folds the extra
    // `shadow.*` columns in, so it differs by design).
    let rest: Vec<_> = b.summary.values.iter().filter(|(n, _)| !n.starts_with("shadow.")).collect();
    assert_eq!(rest, a.summary.values.iter().collect::<Vec<_>>());
    assert_eq!(clients(&a, "token_ok"), clients(&b, "token_ok"));
    let would = b.summary.get("shadow.cluster_flow.llm.would_reject").unwrap();
    // 400 calls/s offered, 20/s admitted by the shadow's own server: ≈ 380/s × 60 s.
    assert!(would > 20_000.0, "would_reject {would}");
}

/// A token server 2 ms away (within the 20 ms request timeout): the same 4 800 tokens and
/// no 429, every admitted call 2 ms later (mean latency 1 000 + 2 ms). A server 50 ms
/// away: every answer is later than the 20 ms timeout, so every call falls back when the
/// timeout fires (1 020 ms) — AVG_LOCAL 20: each instance's local rule admits 20/s — while
/// the server still spends its 80 tokens per second on answers nobody waits for.
/// Measured (seed 6): 2 ms — 4 800 tokens, mean 1 002 ms, 0 × 429; 50 ms — 24 166
/// timeouts of 24 171 calls (5 still waiting at the end), 4 800 local passes, 4 800 tokens
/// wasted, mean 1 020 ms, 24 × 429 (the local rule's coarse window, as in the outage).
#[test]
fn token_latency_and_request_timeout() {
    let near = run(&incident6("count: 20, token_rtt: \"2ms\"", false));
    assert_eq!(src(&near, "rejected_upstream_429"), 0.0);
    assert_eq!(clients(&near, "token_ok"), 4_800.0);
    assert_eq!(clients(&near, "timeouts"), 0.0);
    assert!((src(&near, "latency_ms_mean") - 1_002.0).abs() < 1e-6);

    let far = run(&incident6("count: 20, token_rtt: \"50ms\"", false));
    let offered = src(&far, "offered");
    // Every call times out, but those sent in the last 20 ms are still waiting at the end.
    let timeouts = clients(&far, "timeouts");
    assert!(offered - timeouts <= 20.0, "{timeouts} of {offered}");
    assert_eq!(clients(&far, "token_ok"), 4_800.0, "the server spent its tokens anyway");
    let local = clients(&far, "local_pass");
    assert!((4_700.0..=4_800.0).contains(&local), "local passes {local}");
    assert!((src(&far, "latency_ms_mean") - 1_020.0).abs() < 1e-6);
    assert!(src(&far, "rejected_upstream_429") <= 30.0);
}
