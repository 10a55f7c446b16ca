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

/// A trace with `class`, `user` and `key` columns (some cells empty) under a source whose
/// rules (`assign`) would give other values: the row's cells win, empty cells fall back.
fn columned(csv: &str) -> Result<Scenario, String> {
    let text = r#"Scenario(name: "columns",
        classes: [(name: "P0", sla: "3s"), (name: "P2", sla: "60s")],
        sources: [(name: "t", target: "c", class: "P2",
            trace: Trace(file: "inline.csv",
                columns: Columns(arrival: "t", prompt_tokens: None, output_tokens: None,
                    class: "prio", user: "uid", key: "qkey")),
            assign: Assign(class_shares: [("P2", 1.0)], hash_users: Some(1000), hash_keys: Some(50)))],
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 100, service: Constant("1ms"))])"#;
    let mut sc: ScenarioSpec<ParamValue> = ron::from_str(text).unwrap();
    let t: &mut TraceSpec = sc.sources[0].trace.as_mut().unwrap();
    t.data = Some(Arc::new(TraceData::parse_csv(csv, t)?));
    sc.check().map_err(|e| e.to_string())?;
    Ok(sc)
}

#[test]
fn trace_class_user_and_key_columns_win_over_the_rules() {
    let csv = "t,prio,uid,qkey\n0,P0,7,42\n1,,8,\n2,P2,,9\n3,P0,,\n";
    let sc = columned(csv).unwrap();
    let mut cfg = RunConfig::new(1, SimDuration::from_secs(10));
    cfg.record_requests = true;
    let r = models::run(&sc, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let mut q = r.requests.clone();
    q.sort_by_key(|q| q.seq);
    let got: Vec<(u16, u64, u64)> = q.iter().map(|q| (q.class, q.user, q.key)).collect();
    // The rules: class_shares → P2 (index 1), users and keys hashed into 1..=1000 / 1..=50.
    let hashed = |seq: usize| (q[seq].user, q[seq].key);
    assert_eq!(got[0], (0, 7, 42), "every cell given");
    assert_eq!(got[1].0, 1, "empty class cell: the rule's P2");
    assert_eq!(got[1].1, 8);
    assert!((1..=50).contains(&hashed(1).1), "empty key cell: hashed");
    assert_eq!((got[2].0, got[2].2), (1, 9));
    assert!((1..=1000).contains(&hashed(2).0), "empty user cell: hashed");
    assert_eq!(got[3].0, 0);
    // Without the columns the same rows get the rules' values everywhere: the columns move
    // nothing else (arrivals identical).
    let plain = "t,prio,uid,qkey\n0,,,\n1,,,\n2,,,\n3,,,\n";
    let r2 = models::run(&columned(plain).unwrap(), &cfg);
    let mut q2 = r2.requests.clone();
    q2.sort_by_key(|q| q.seq);
    assert!(q2.iter().all(|q| q.class == 1));
    assert_eq!(q2[1].key, q[1].key, "row 1's key came from the rule in both");
    assert_eq!(q2[2].user, q[2].user, "row 2's user came from the rule in both");
    let arrivals =
        |q: &[models::world::RequestRecord]| q.iter().map(|q| q.arrival).collect::<Vec<_>>();
    assert_eq!(arrivals(&q), arrivals(&q2));
}

#[test]
fn bad_class_user_and_key_cells_name_the_line() {
    let cases = [
        (
            "t,prio,uid,qkey\n0,P0,1,1\n1,P9,1,1\n",
            "line 3: column `prio`: no class named `P9`; the scenario's classes: P0, P2",
        ),
        (
            "t,prio,uid,qkey\n0,P0,x,1\n",
            "line 2: column `uid`: expected a user id (a whole number ≥ 1; an empty cell for none), found `x`",
        ),
        (
            "t,prio,uid,qkey\n0,P0,1,0\n",
            "line 2: column `qkey`: expected a key (a whole number ≥ 1; an empty cell for none), found `0`",
        ),
        ("t,prio,qkey\n0,P0,1\n", "line 1: no column named `uid`"),
    ];
    for (csv, want) in cases {
        let e = columned(csv).err().unwrap_or_else(|| panic!("{csv:?} accepted"));
        assert!(e.contains(want), "{csv:?}: {e}");
    }
}
