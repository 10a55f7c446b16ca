//! The one test-support module of every `models` integration test: load a scenario from
//! RON text, run it twice (determinism) with the invariants and per-source conservation
//! checked, step it event by event with the invariants checked after every event, and
//! measure goodput over a window from the per-request records.

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

/// Steps `sc` event by event to the end of `cfg` through a live session, with
/// `check_invariants()` after every event; then checks that the stepped run equals one
/// plain `models::run` (same fingerprint) and ended clean. Returns the stepped run's output
/// and its event count, or what went wrong (for tests that hunt over many seeds).
pub fn try_stepped(sc: &Scenario, cfg: &RunConfig) -> Result<(RunOutput, u64), String> {
    let mut s = models::Session::new(sc.clone(), *cfg);
    let mut n = 0u64;
    while s.step().map_err(|e| format!("engine error after event {n}: {e:?}"))? {
        n += 1;
        let v = s.world().check_invariants();
        if !v.is_empty() {
            return Err(format!("after event {n} at {}: {v:?}", s.now()));
        }
    }
    let stepped = s.finish();
    if let Some(e) = &stepped.error {
        return Err(format!("run error: {e:?}"));
    }
    if !stepped.violations.is_empty() {
        return Err(format!("end violations: {:?}", stepped.violations));
    }
    if models::run(sc, cfg).fingerprint != stepped.fingerprint {
        return Err("stepped and plain runs differ (fingerprint)".into());
    }
    Ok((stepped, n))
}

/// [`try_stepped`], panicking with its message.
pub fn stepped(sc: &Scenario, cfg: &RunConfig) -> RunOutput {
    try_stepped(sc, cfg).unwrap_or_else(|e| panic!("{e}")).0
}

/// Checks a measured value against its expectation file `tests/suite/expect/<name>.txt`
/// (the value's text plus a newline). `UPDATE_EXPECT=1 cargo test -p models --test suite`
/// rewrites every expectation file with the values measured now (after a deliberate change
/// of behaviour; review the diff).
pub fn expect(name: &str, measured: impl std::fmt::Display) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/suite/expect")
        .join(format!("{name}.txt"));
    let measured = format!("{measured}\n");
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::create_dir_all(path.parent().expect("a directory")).expect("writable");
        std::fs::write(&path, &measured).expect("writable");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{}: {e}; run with UPDATE_EXPECT=1 to record the value", path.display())
    });
    assert_eq!(
        want,
        measured,
        "{name}: the measured value differs from {} (UPDATE_EXPECT=1 rewrites it after a deliberate change)",
        path.display()
    );
}
