//! Running planned runs: each run single-threaded, runs in parallel on a rayon pool, a
//! panic in one run recorded as that run's error while the others go on.

use crate::experiment::{Experiment, PlannedRun};
use models::summary::Summary;
use models::world::RequestRecord;
use sim_core::metrics::SeriesRow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Error(String),
}

/// Everything recorded about one run.
#[derive(Clone, Debug)]
pub struct RunRecord {
    pub run_id: String,
    pub seed: u64,
    pub status: Status,
    /// 16 hex digits; `None` when the run panicked.
    pub fingerprint: Option<String>,
    pub events: u64,
    pub summary: Summary,
    pub series: Vec<SeriesRow>,
    /// Per-request records (empty unless the experiment asks for them).
    pub requests: Vec<RequestRecord>,
    /// Wall-clock seconds (the only non-deterministic figure; goes to timings.parquet).
    pub wall_seconds: f64,
}

/// Runs one planned run, catching panics.
pub fn run_one(exp: &Experiment, run: &PlannedRun) -> RunRecord {
    let cfg = exp.run_config(run.seed);
    let started = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| models::run(&run.scenario, &cfg)));
    let wall_seconds = started.elapsed().as_secs_f64();
    match result {
        Ok(out) => {
            let status = match (&out.error, out.violations.is_empty()) {
                (Some(e), _) => Status::Error(e.to_string()),
                (None, false) => {
                    Status::Error(format!("invariant violated: {}", out.violations.join("; ")))
                }
                (None, true) => Status::Ok,
            };
            RunRecord {
                run_id: run.run_id.clone(),
                seed: run.seed,
                status,
                fingerprint: Some(out.fingerprint.hex()),
                events: out.events,
                summary: out.summary,
                series: out.series,
                requests: out.requests,
                wall_seconds,
            }
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic with a non-string payload".into());
            RunRecord {
                run_id: run.run_id.clone(),
                seed: run.seed,
                status: Status::Error(format!("panicked: {msg}")),
                fingerprint: None,
                events: 0,
                summary: Summary::default(),
                series: Vec::new(),
                requests: Vec::new(),
                wall_seconds,
            }
        }
    }
}

/// Runs all `runs` on `jobs` threads; `done` is called after each run (in completion
/// order). Records come back in plan order, whatever the thread count.
pub fn run_all(
    exp: &Experiment,
    runs: &[PlannedRun],
    jobs: usize,
    done: &(dyn Fn(&RunRecord) + Sync),
) -> Vec<RunRecord> {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .expect("a thread pool of a few threads can be built");
    pool.install(|| {
        runs.par_iter()
            .map(|r| {
                let rec = run_one(exp, r);
                done(&rec);
                rec
            })
            .collect()
    })
}
