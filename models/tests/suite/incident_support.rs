//! Shared helpers of the governance-incident scenario tests (SPEC §6): load a scenario
//! from RON, run it twice (determinism), check the invariants and conservation per source,
//! and measure goodput over a window from the per-request records.

#![allow(dead_code)]

use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::{Outcome, RunConfig, RunOutput, Scenario};
use sim_core::SimDuration;

pub fn load(text: &str) -> Scenario {
    let sc: ScenarioSpec<ParamValue> = ron::from_str(text).expect("valid scenario");
    sc.check().expect("consistent");
    sc.check_timeline().expect("timeline ok");
    sc
}

/// A run of `secs` seconds with per-request records.
pub fn cfg(seed: u64, secs: u64) -> RunConfig {
    let mut c = RunConfig::new(seed, SimDuration::from_secs(secs));
    c.record_requests = true;
    c
}

pub fn get(r: &RunOutput, name: &str) -> f64 {
    r.summary.get(name).unwrap_or_else(|| panic!("no summary column {name}"))
}

/// Runs `sc` twice with the same seed and checks: no error, no invariant violation, the
/// same fingerprint and summary (determinism), and per source `offered = completed +
/// failed + rejected + in flight` (conservation, column-wise in the summary).
pub fn run_checked(sc: &Scenario, cfg: &RunConfig) -> RunOutput {
    let a = models::run(sc, cfg);
    assert!(a.error.is_none(), "run error: {:?}", a.error);
    assert!(a.violations.is_empty(), "invariants: {:?}", a.violations);
    let b = models::run(sc, cfg);
    assert_eq!(a.fingerprint, b.fingerprint, "same seed, same fingerprint");
    assert_eq!(a.summary, b.summary, "same seed, same summary");
    for s in &sc.sources {
        let p = format!("source.{}", s.name);
        let col = |c: &str| get(&a, &format!("{p}.{c}"));
        let (offered, completed, failed, rejected, in_flight) = (
            col("offered"),
            col("completed"),
            col("failed"),
            col("rejected"),
            col("in_flight_end"),
        );
        assert_eq!(
            offered,
            completed + failed + rejected + in_flight,
            "{p}: offered {offered} ≠ completed {completed} + failed {failed} + rejected {rejected} + in flight {in_flight}"
        );
    }
    a
}

/// Successful requests per second among those that ended in `[from_s, to_s)`.
pub fn goodput(r: &RunOutput, from_s: f64, to_s: f64) -> f64 {
    let (a, b) = ((from_s * 1e9) as u64, (to_s * 1e9) as u64);
    let n = r
        .requests
        .iter()
        .filter(|q| {
            q.outcome == Some(Outcome::Success) && q.end.is_some_and(|t| t.0 >= a && t.0 < b)
        })
        .count();
    n as f64 / (to_s - from_s)
}

/// Sum of a counter's time-series buckets (`sample_every` set) over the whole run.
pub fn series_total(r: &RunOutput, metric: &str) -> f64 {
    r.series.iter().filter(|row| row.metric == metric).map(|row| row.value).sum()
}

/// Successful requests per second, among those that ended in `[from_s, to_s)`, answered
/// within `deadline_s` of their arrival (while a client with that patience still waited).
pub fn in_time(r: &RunOutput, from_s: f64, to_s: f64, deadline_s: f64) -> f64 {
    let (a, b, d) = ((from_s * 1e9) as u64, (to_s * 1e9) as u64, (deadline_s * 1e9) as u64);
    let n = r
        .requests
        .iter()
        .filter(|q| {
            q.outcome == Some(Outcome::Success)
                && q.end.is_some_and(|t| t.0 >= a && t.0 < b && t.0 - q.arrival.0 <= d)
        })
        .count();
    n as f64 / (to_s - from_s)
}
