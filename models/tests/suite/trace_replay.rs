//! Trace replay of the bundled Azure LLM traces (data/traces), read as they are.

use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::trace::{TraceData, TraceSpec};
use models::{RunConfig, Scenario};
use sim_core::SimDuration;
use std::sync::Arc;

const TRACES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/traces/");

fn scenario(file: &str, rate_scale: f64) -> (Scenario, Arc<TraceData>) {
    let text = format!(
        r#"Scenario(name: "replay",
        sources: [(name: "t", target: "c", trace: Trace(file: "{file}", rate_scale: {rate_scale:?}))],
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 100000, service: Constant("1ms"))])"#
    );
    let mut sc: ScenarioSpec<ParamValue> = ron::from_str(&text).unwrap();
    let t: &mut TraceSpec = sc.sources[0].trace.as_mut().unwrap();
    let csv =
        std::fs::read_to_string(format!("{TRACES}{file}")).expect("the shared traces are present");
    let data = Arc::new(TraceData::parse_csv(&csv, t).unwrap());
    t.data = Some(data.clone());
    sc.check().unwrap();
    (sc, data)
}

#[test]
fn conversation_trace_replays_exactly_at_twice_the_rate() {
    let (sc, data) = scenario("azure-llm-2023-conv.csv", 2.0);
    // The README's figures for this file: 19,366 requests, prompt mean 1155, output mean 211.
    assert_eq!(data.arrival_ns.len(), 19_366);
    let mut cfg = RunConfig::new(1, SimDuration::from_secs(1900));
    cfg.record_requests = true;
    let r = models::run(&sc, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.requests.len(), 19_366, "every row replayed within half the trace's hour");
    let mut reqs = r.requests.clone();
    reqs.sort_by_key(|q| q.seq);
    for (i, q) in reqs.iter().enumerate() {
        let want = (data.arrival_ns[i] as f64 / 2.0).round() as u64;
        assert!(q.arrival.0.abs_diff(want) <= 1, "row {i}: {} vs {want}", q.arrival.0);
        assert_eq!(q.tokens.prompt, data.prompt_tokens[i]);
        assert_eq!(q.tokens.output, data.output_tokens[i]);
    }
    let mean = |f: &dyn Fn(&models::world::RequestRecord) -> Option<u32>| {
        reqs.iter().map(|q| f(q).unwrap() as f64).sum::<f64>() / reqs.len() as f64
    };
    let (p, o) = (mean(&|q| q.tokens.prompt), mean(&|q| q.tokens.output));
    assert!((p - 1155.0).abs() < 1.0, "prompt mean {p}");
    assert!((o - 211.0).abs() < 1.0, "output mean {o}");
}

#[test]
fn code_trace_is_bursty() {
    let (sc, data) = scenario("azure-llm-2023-code.csv", 1.0);
    assert_eq!(data.arrival_ns.len(), 8_819);
    // Inter-arrival coefficient of variation ≈ 13 (README): far from Poisson's 1.
    let gaps: Vec<f64> = data.arrival_ns.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    assert!((sd / m - 13.0).abs() < 1.0, "CV {}", sd / m);
    let r = models::run(&sc, &RunConfig::new(1, SimDuration::from_secs(600)));
    assert!(r.violations.is_empty());
    // The first ten minutes of the trace, exactly.
    let within = data.arrival_ns.iter().filter(|t| **t <= 600_000_000_000).count() as f64;
    assert_eq!(r.summary.get("source.t.offered").unwrap(), within);
}

#[test]
fn a_trace_source_takes_no_interarrival_and_no_profile() {
    let both = r#"Scenario(name: "x",
        sources: [(name: "t", target: "c", interarrival: Exponential(mean: "1s"), trace: Trace(file: "f.csv"))],
        call_sites: [(name: "c", upstream: "st")], stations: [(name: "st", servers: 1, service: Constant("1ms"))])"#;
    let sc: ScenarioSpec<ParamValue> = ron::from_str(both).unwrap();
    assert!(sc.check().unwrap_err().message.contains("exactly one of `interarrival"));
    let unloaded = both.replace(r#"interarrival: Exponential(mean: "1s"), "#, "");
    let sc: ScenarioSpec<ParamValue> = ron::from_str(&unloaded).unwrap();
    assert!(sc.check().unwrap_err().message.contains("was not loaded"));
}
