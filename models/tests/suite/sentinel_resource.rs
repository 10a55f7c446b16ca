//! A Sentinel resource in a whole world: its rules written in two orders decide every call
//! alike (same fingerprint, same summary), it keeps every invariant after every event, and
//! its run-time parameters change mid-run.

use crate::support::{cfg, get, load, run_checked, stepped};

/// A resource with a pacing rule, a reject rule and two degrade rules in front of a
/// flaky, slow-ish upstream; `{flow}` and `{degrade}` are the two lists as written.
fn scenario(flow: &str, degrade: &str) -> String {
    format!(
        r#"Scenario(name: "resource",
        sources: [(name: "chat", interarrival: Exponential(mean: "8ms"), target: "site")],
        sentinel_resources: [SentinelResource(name: "chat", resource: "POST:/v1/chat",
            flow_rules: [{flow}], degrade_rules: [{degrade}])],
        call_sites: [(name: "site", governors: [SentinelResource("chat")], upstream: "llm",
            timeout: "2s")],
        stations: [(name: "llm", servers: 16, service: LogNormal(mean: "120ms", cv: 0.8),
            error_rate: 0.15)],
        timeline: [
            (at: "4s", path: "sentinel_resource.chat.rule0.count", value: Float(60.0)),
            (at: "5s", path: "sentinel_resource.chat.degrade1.time_window", value: Count(2)),
            (at: "6s", path: "station.llm.error_rate", value: Float(0.6)),
            (at: "8s", path: "station.llm.error_rate", value: Float(0.05)),
        ],
    )"#
    )
}

const PACE: &str = "FlowRule(count: 80, control_behavior: RATE_LIMITER, max_queueing_time_ms: 200)";
const CAP: &str = "FlowRule(count: 100)";
const RATIO: &str = r#"DegradeRule(name: "ratio", grade: ERROR_RATIO, count: 0.4, time_window: 1, min_request_amount: 20)"#;
const SLOW: &str = r#"DegradeRule(name: "slow", grade: SLOW_REQUEST_RATIO, count: 300, time_window: 1,
    slow_ratio_threshold: 0.3, min_request_amount: 20)"#;

/// Written [pace, cap] / [ratio, slow] and [cap, pace] / [slow, ratio], without the
/// timeline (its `rule0` names a different rule in each writing): one fingerprint, one
/// summary, over three seeds.
#[test]
fn the_order_written_does_not_change_the_run() {
    let strip = |s: String| {
        let i = s.find("timeline:").expect("a timeline");
        format!("{})", &s[..i])
    };
    let a = load(&strip(scenario(&format!("{PACE}, {CAP}"), &format!("{RATIO}, {SLOW}"))));
    let b = load(&strip(scenario(&format!("{CAP}, {PACE}"), &format!("{SLOW}, {RATIO}"))));
    for seed in 0..3 {
        let (ra, rb) = (run_checked(&a, &cfg(seed, 12)), run_checked(&b, &cfg(seed, 12)));
        assert_eq!(ra.summary, rb.summary, "seed {seed}");
        assert_eq!(ra.fingerprint, rb.fingerprint, "seed {seed}");
        // The run exercised every slot: pacing, both kinds of block, breaker episodes.
        for c in ["passed", "flow_blocked", "degrade_blocked", "queued", "state_changes"] {
            assert!(get(&ra, &format!("sentinel_resource.chat.{c}")) > 0.0, "seed {seed}: {c}");
        }
    }
}

/// Invariants after every event, stepping equal to one go, with the run-time changes.
#[test]
fn invariants_hold_with_run_time_changes() {
    let sc = load(&scenario(&format!("{PACE}, {CAP}"), &format!("{RATIO}, {SLOW}")));
    let one_go = run_checked(&sc, &cfg(7, 12));
    let step = stepped(&sc, &cfg(7, 12));
    assert_eq!(one_go.fingerprint, step.fingerprint);
}
