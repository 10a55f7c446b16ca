//! The call path's series as a user reads them: `stormglass run` on a scenario with every
//! component issue 14 lists, then the written `timeseries` table (docs/results.md) read
//! with polars — each series present, its per-bucket values summing to the counter of the
//! same thing in the `runs` table (a derived identity, not a pinned number).

use polars::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Two sources: `chat` through a retry above a Resilience4j breaker to a station that
/// fails 30% and hangs past the 1 s timeout from 20 s to 40 s; `side` through a degrade
/// rule and a Sentinel resource to a station behind a 429 quota.
const SCENARIO: &str = r#"Scenario(name: "series",
    sources: [
        (name: "chat", interarrival: Exponential(mean: "20ms"), target: "site"),
        (name: "side", interarrival: Exponential(mean: "10ms"), target: "other"),
    ],
    retries: [(name: "r", max_attempts: 3, backoff: Fixed(wait_duration: "50ms"))],
    circuit_breakers: [(name: "b", sliding_window_size: 20, minimum_number_of_calls: 10,
        wait_duration_in_open_state: "2s", permitted_number_of_calls_in_half_open_state: 3)],
    degrade_rules: [DegradeRule(name: "d", grade: ERROR_RATIO, count: 0.2, time_window: 2,
        min_request_amount: 5)],
    sentinel_resources: [SentinelResource(name: "res", flow_rules: [FlowRule(count: 1000)],
        degrade_rules: [DegradeRule(name: "slow", grade: SLOW_REQUEST_RATIO, count: 60,
            time_window: 1, slow_ratio_threshold: 0.2, min_request_amount: 5)])],
    quotas: [Quota(name: "q", max_concurrency: Some(8))],
    call_sites: [
        (name: "site", governors: [Retry("r"), CircuitBreaker("b")], upstream: "llm",
         timeout: "1s"),
        (name: "other", governors: [DegradeRule("d"), SentinelResource("res")],
         upstream: "emb"),
    ],
    stations: [
        (name: "llm", servers: 100, service: Constant("100ms"), error_rate: 0.3),
        (name: "emb", servers: 20, service: Exponential(mean: "50ms"), error_rate: 0.3,
         quota: "q"),
    ],
    timeline: [
        (at: "20s", path: "station.llm.latency_multiplier", value: 20.0),
        (at: "40s", path: "station.llm.latency_multiplier", value: 1.0),
    ],
)"#;

fn tmp() -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormglass-series-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Sum over buckets of every `timeseries` metric, and the one run's `runs` row.
fn tables(root: &std::path::Path) -> (BTreeMap<String, f64>, DataFrame) {
    let ts = experiments::results::scan(root, "timeseries").unwrap().collect().unwrap();
    let (metric, value) = (ts.column("metric").unwrap(), ts.column("value").unwrap());
    let mut sums = BTreeMap::new();
    for (m, v) in metric.str().unwrap().iter().zip(value.f64().unwrap().iter()) {
        *sums.entry(m.unwrap().to_string()).or_insert(0.0) += v.unwrap();
    }
    (sums, experiments::results::load(root).unwrap())
}

#[test]
fn every_listed_series_is_in_the_timeseries_table_and_adds_up() {
    let dir = tmp();
    let file = dir.join("series.ron");
    std::fs::write(&file, SCENARIO).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_stormglass"))
        .args(["run", "--seeds", "0..1", "--duration", "60s", "--sample-every", "1s"])
        .args(["--progress", "none", "--out"])
        .arg(dir.join("out"))
        .arg(&file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (ts, runs) = tables(&dir.join("out").join("series"));
    let series = |m: &str| *ts.get(m).unwrap_or_else(|| panic!("no series {m} in timeseries"));
    let col = |c: &str| -> f64 {
        let s = runs.column(c).unwrap_or_else(|_| panic!("no runs column {c}"));
        s.cast(&DataType::Float64).unwrap().f64().unwrap().get(0).unwrap()
    };
    // Arrivals per source: no warm-up, so every arrival is offered.
    for s in ["chat", "side"] {
        assert_eq!(series(&format!("source.{s}.arrivals")), col(&format!("source.{s}.offered")));
    }
    // Per class: the requests that ended, by outcome and rejection reason, and those that
    // ended with a 429 whatever their outcome (no warm-up: every request is measured).
    let names: Vec<String> = runs.get_column_names().iter().map(|c| c.to_string()).collect();
    let classes: Vec<&str> =
        names.iter().filter_map(|c| c.strip_prefix("class.")?.strip_suffix(".offered")).collect();
    assert!(!classes.is_empty());
    for c in &classes {
        let mut leaves: Vec<String> =
            ["success", "degraded", "failed", "rejected"].map(String::from).to_vec();
        leaves.extend(models::outcome::Reason::ALL.map(|r| format!("rejected_{}", r.name())));
        for leaf in &leaves {
            assert_eq!(series(&format!("class.{c}.{leaf}")), col(&format!("class.{c}.{leaf}")));
        }
        let by_429: f64 = ["failed", "rejected", "degraded"]
            .iter()
            .map(|k| col(&format!("class.{c}.{k}_upstream_429")))
            .sum();
        assert_eq!(series(&format!("class.{c}.upstream_429")), by_429, "class {c}");
    }
    assert!(classes.iter().any(|c| series(&format!("class.{c}.upstream_429")) > 0.0));
    assert!(classes.iter().any(|c| series(&format!("class.{c}.rejected_breaker_open")) > 0.0));
    // Per call site: the first attempts and retries that the breaker permitted were sent.
    let (attempts, retries) = (series("call_site.site.attempts"), series("call_site.site.retries"));
    let refused = col("circuit_breaker.b.not_permitted");
    assert_eq!(attempts + refused, col("source.chat.offered") + retries);
    assert!(retries > 100.0, "5xx and timeouts are retried: {retries}");
    assert!(series("call_site.site.timeouts") > 10.0, "the 20 s hang times calls out");
    assert_eq!(series("call_site.other.timeouts"), 0.0, "no timeout on `other`");
    // Arrivals at each upstream: every attempt sent reaches its station.
    assert_eq!(series("station.llm.arrivals"), attempts);
    assert_eq!(series("station.emb.arrivals"), series("call_site.other.attempts"));
    // 429s: the quota's, seen by the call site.
    let r429 = series("call_site.other.upstream_429");
    assert!(r429 > 0.0);
    assert_eq!(r429, col("quota.q.rejected_429"));
    assert_eq!(series("call_site.site.upstream_429"), 0.0);
    // Breakers: refusals by state add up to the run's totals.
    let by_state = |p: &str, what: &str, states: &[&str]| -> f64 {
        states.iter().map(|s| series(&format!("{p}.{what}_{s}"))).sum()
    };
    let r4j = ["open", "half_open", "forced_open"];
    assert_eq!(by_state("circuit_breaker.b", "not_permitted", &r4j), refused);
    assert!(series("circuit_breaker.b.not_permitted_open") > 0.0);
    let sentinel = ["open", "half_open"];
    assert!(
        col("degrade_rule.d.blocked") > 0.0 && col("sentinel_resource.res.degrade_blocked") > 0.0
    );
    assert_eq!(by_state("degrade_rule.d", "blocked", &sentinel), col("degrade_rule.d.blocked"));
    assert_eq!(
        by_state("sentinel_resource.res.degrade0", "blocked", &sentinel),
        col("sentinel_resource.res.degrade_blocked")
    );
    // Gauges: a mean and a max per bucket for each breaker's state and window.
    for p in ["circuit_breaker.b", "degrade_rule.d", "sentinel_resource.res.degrade0"] {
        for g in ["state", "buffered_calls", "failed_calls", "slow_calls"] {
            for stat in ["mean", "max"] {
                series(&format!("{p}.{g}.{stat}"));
            }
        }
        for g in ["failure_rate_bp", "slow_call_rate_bp"] {
            let max = series(&format!("{p}.{g}.max")) / 60.0; // the mean over 60 buckets
            assert!((0.0..=10_000.0).contains(&max), "{p}.{g}: a rate in basis points");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
