//! Failure injection on an upstream: an outage window and a slowdown, from the timeline.

use crate::support::load;
use models::params::ParamValue;
use models::{Outcome, Reason, RunConfig};
use sim_core::SimDuration;

const PROVIDER: &str = r#"Scenario(name: "faults",
    sources: [(name: "chat", interarrival: Exponential(mean: "20ms"), target: "c")],
    call_sites: [(name: "c", upstream: "llm")],
    stations: [(name: "llm", servers: 200, service: LogNormal(mean: "400ms", cv: 0.5), error_rate: 0.01)],
    timeline: [
        (at: "60s", path: "station.llm.error_rate", value: Float(1.0)),
        (at: "120s", path: "station.llm.error_rate", value: Float(0.01)),
        (at: "150s", path: "station.llm.latency_multiplier", value: Float(3.0)),
    ],
)"#;

#[test]
fn outage_window_and_slowdown_follow_the_timeline() {
    let sc = load(PROVIDER);
    let mut cfg = RunConfig::new(4, SimDuration::from_secs(210));
    cfg.record_requests = true;
    let r = models::run(&sc, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let s_ = |t: f64| (t * 1e9) as u64;
    let share_failed = |from: f64, to: f64| {
        let w: Vec<_> = r
            .requests
            .iter()
            .filter(|q| {
                q.start.is_some_and(|t| t.0 >= s_(from) && t.0 < s_(to)) && q.outcome.is_some()
            })
            .collect();
        let f =
            w.iter().filter(|q| q.outcome == Some(Outcome::Failed(Reason::Upstream5xx))).count();
        f as f64 / w.len() as f64
    };
    let (before, during, after) =
        (share_failed(0.0, 60.0), share_failed(60.0, 120.0), share_failed(121.0, 150.0));
    assert!(before > 0.005 && before < 0.02, "1% background errors: {before}");
    assert_eq!(during, 1.0, "every call started during the outage fails");
    assert!(after < 0.02, "recovered: {after}");
    // Slowdown: services started after 150 s take 3× as long on average.
    let mean_service = |from: f64, to: f64| {
        let v: Vec<f64> = r
            .requests
            .iter()
            .filter(|q| q.start.is_some_and(|t| t.0 >= s_(from) && t.0 < s_(to)) && q.end.is_some())
            .map(|q| (q.end.unwrap().0 - q.start.unwrap().0) as f64 / 1e6)
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let (normal, slow) = (mean_service(121.0, 150.0), mean_service(150.0, 200.0));
    assert!((normal - 400.0).abs() < 25.0, "normal {normal} ms");
    assert!((slow / normal - 3.0).abs() < 0.25, "slow {slow} ms vs normal {normal} ms");
    // The summary counts the failures by reason; events record the changes.
    assert!(r.summary.get("source.chat.failed_upstream_5xx").unwrap() > 2500.0);
    let kinds: Vec<String> =
        r.state_events.iter().map(|e| format!("{} {} -> {}", e.component, e.from, e.to)).collect();
    assert_eq!(
        kinds,
        [
            "station.llm error_rate = 0.01 -> error_rate = 1",
            "station.llm error_rate = 1 -> error_rate = 0.01",
            "station.llm latency_multiplier = 1 -> latency_multiplier = 3",
        ]
    );
}

/// Failure luck is keyed per request: the same seed at two error rates fails a nested set
/// of requests (every request failing at 5% also fails at 20%).
#[test]
fn failure_luck_is_common_across_rates() {
    let run = |rate: f64| {
        let mut sc = load(PROVIDER);
        sc.timeline.clear();
        sc.set_param("station.llm.error_rate", ParamValue::Float(rate)).unwrap();
        let mut cfg = RunConfig::new(9, SimDuration::from_secs(60));
        cfg.record_requests = true;
        let r = models::run(&sc, &cfg);
        let mut failed: Vec<u64> = r
            .requests
            .iter()
            .filter(|q| q.outcome == Some(Outcome::Failed(Reason::Upstream5xx)))
            .map(|q| q.seq)
            .collect();
        failed.sort_unstable();
        failed
    };
    let (low, high) = (run(0.05), run(0.2));
    assert!(low.len() > 100 && high.len() > 3 * low.len());
    assert!(low.iter().all(|s| high.binary_search(s).is_ok()), "failures at 5% ⊂ failures at 20%");
}

/// A provider's concurrency quota answers 429 beyond it and never below it.
#[test]
fn concurrency_quota_answers_429_only_beyond_it() {
    let run = |rate_per_s: u64| {
        let sc = load(&format!(
            r#"Scenario(name: "quota",
            sources: [(name: "chat", interarrival: Constant("{}us"), target: "c")],
            call_sites: [(name: "c", upstream: "llm")],
            stations: [(name: "llm", servers: 100, queue_capacity: Some(0), reject_as: Upstream429,
                        service: Constant("1s"))],
        )"#,
            1_000_000 / rate_per_s
        ));
        let r = models::run(&sc, &RunConfig::new(1, SimDuration::from_secs(60)));
        assert!(r.violations.is_empty());
        let s = r.summary;
        (s.get("source.chat.rejected_upstream_429").unwrap(), s.get("source.chat.offered").unwrap())
    };
    let (below, _) = run(80); // 80 concurrent calls against a quota of 100
    assert_eq!(below, 0.0);
    let (over, offered) = run(125); // 125 offered, 100 admitted per second
    let share = over / offered;
    assert!((share - 0.2).abs() < 0.01, "429 share {share}");
}
