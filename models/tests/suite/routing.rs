//! Multi-vendor routing: a weighted (gray-release) split and a primary/backup failover.

use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::{RunConfig, RunOutput, Scenario};
use sim_core::SimDuration;

fn load(site: &str, timeline: &str) -> Scenario {
    let text = format!(
        r#"Scenario(
    name: "vendors",
    sources: [(name: "chat", interarrival: Exponential(mean: "5ms"), target: "llm")],
    call_sites: [(name: "llm", upstream: "gpt", timeout: "5s", {site})],
    stations: [
        (name: "gpt", servers: 200, service: Exponential(mean: "300ms")),
        (name: "gpt-next", servers: 200, service: Exponential(mean: "300ms")),
        (name: "claude", servers: 200, service: Exponential(mean: "400ms")),
    ],
    timeline: [{timeline}],
)"#
    );
    let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).expect("valid scenario");
    sc.check().expect("consistent");
    sc.check_timeline().expect("timeline");
    sc
}

fn run(sc: &Scenario) -> RunOutput {
    let cfg = RunConfig::new(9, SimDuration::from_secs(100));
    let r = models::run(sc, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.fingerprint, models::run(sc, &cfg).fingerprint, "determinism");
    let g = |k: &str| r.summary.get(&format!("source.chat.{k}")).unwrap();
    assert_eq!(g("offered"), g("completed") + g("failed") + g("rejected") + g("in_flight_end"));
    r
}

/// A 5% gray release: of ~20,000 calls, the new model serves 5% (±0.5 points, ~3.3 SE).
#[test]
fn weighted_split_sends_the_configured_share() {
    let r = run(&load(r#"split: [("gpt", 95), ("gpt-next", 5)]"#, ""));
    let done = |s: &str| r.summary.get(&format!("station.{s}.utilization")).unwrap();
    let share = done("gpt-next") / (done("gpt") + done("gpt-next"));
    assert!((0.045..0.055).contains(&share), "gray share {share}");
}

/// The primary is down from 30 s to 60 s (every call 5xx): each failing call goes once to
/// the backup vendor, so users see no failure; outside the outage nothing fails over.
#[test]
fn failover_to_the_backup_hides_an_outage() {
    let outage = r#"(at: "30s", path: "station.gpt.error_rate", value: Float(1.0)),
                    (at: "60s", path: "station.gpt.error_rate", value: Float(0.0))"#;
    let with = run(&load(r#"backup: "claude""#, outage));
    let s = &with.summary;
    assert_eq!(s.get("source.chat.failed").unwrap(), 0.0);
    let fo = s.get("call_site.llm.failovers").unwrap();
    // ~200 calls/s × 30 s, give or take the calls in service at the edges.
    assert!((5_400.0..6_600.0).contains(&fo), "failovers {fo}");
    let without = run(&load("", outage));
    let failed = without.summary.get("source.chat.failed_upstream_5xx").unwrap();
    assert!((fo - failed).abs() < 0.05 * fo, "the same calls fail without a backup: {failed}");
}
