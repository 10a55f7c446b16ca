//! Running planned runs: each run single-threaded, runs in parallel on a rayon pool, a
//! panic in one run recorded as that run's error while the others go on.

use crate::experiment::{Experiment, PlannedRun};
use models::summary::Summary;
use models::world::{ModelEvent, RequestRecord};
use sim_core::metrics::SeriesRow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// The run failed (a guard, an invariant, a panic): running it again fails again.
    Error(String),
    /// Cut short by a signal (a second one, or the grace period after the first ran out):
    /// the run has no result, and `--resume` runs it again.
    Interrupted(String),
}

impl Status {
    /// The `status` column's value: `ok`, `error` or `interrupted`.
    pub fn name(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error(_) => "error",
            Status::Interrupted(_) => "interrupted",
        }
    }

    /// The `error` column's value (`None` when ok).
    pub fn message(&self) -> Option<&str> {
        match self {
            Status::Ok => None,
            Status::Error(m) | Status::Interrupted(m) => Some(m),
        }
    }

    /// `ok`, or the status in capitals and its message (progress lines).
    pub fn line(&self) -> String {
        match self.message() {
            None => "ok".into(),
            Some(m) => format!("{} {m}", self.name().to_uppercase()),
        }
    }
}

/// Everything recorded about one run.
#[derive(Clone, Debug)]
pub struct RunRecord {
    pub run_id: String,
    /// Position in the experiment's plan (rows are sorted by it when read back).
    pub run_index: usize,
    pub variant: String,
    pub point: usize,
    pub params: Vec<Option<models::params::ParamValue>>,
    pub seed: u64,
    pub status: Status,
    /// 16 hex digits; `None` when the run panicked.
    pub fingerprint: Option<String>,
    pub events: u64,
    pub summary: Summary,
    pub series: Vec<SeriesRow>,
    /// Per-request records (empty unless the experiment asks for them).
    pub requests: Vec<RequestRecord>,
    /// State changes during the run.
    pub state_events: Vec<ModelEvent>,
    /// Wall-clock seconds (the only non-deterministic figure; goes to timings.parquet).
    pub wall_seconds: f64,
}

/// Test-only fault injection: `STORMGLASS_TEST_PANIC_SEED=<seed>` makes runs with that seed
/// panic, to test that a panic is recorded as the run's error and the batch goes on.
fn injected_panic(seed: u64) {
    if std::env::var("STORMGLASS_TEST_PANIC_SEED").ok().and_then(|v| v.parse::<u64>().ok())
        == Some(seed)
    {
        panic!("injected test fault (STORMGLASS_TEST_PANIC_SEED={seed})");
    }
}

/// Set (by a second signal, or when the grace period after the first runs out) to end the
/// runs in progress: each stops within `sim_core::engine::CHECK_EVERY` events and is
/// recorded with status [`Status::Interrupted`], which `--resume` runs again.
pub static ABORT: AtomicBool = AtomicBool::new(false);

/// Runs one planned run, catching panics.
pub fn run_one(exp: &Experiment, index: usize, run: &PlannedRun) -> RunRecord {
    let mut cfg = exp.run_config(run.seed);
    cfg.limits.interrupt = Some(&ABORT);
    let started = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| {
        injected_panic(run.seed);
        models::run(&run.scenario, &cfg)
    }));
    let wall_seconds = started.elapsed().as_secs_f64();
    let mut rec = RunRecord {
        run_id: run.run_id.clone(),
        run_index: index,
        variant: run.variant.clone(),
        point: run.point,
        params: run.params.clone(),
        seed: run.seed,
        status: Status::Ok,
        fingerprint: None,
        events: 0,
        summary: Summary::default(),
        series: Vec::new(),
        requests: Vec::new(),
        state_events: Vec::new(),
        wall_seconds,
    };
    match result {
        Ok(out) => {
            rec.status = match (&out.error, out.violations.is_empty()) {
                (Some(e @ sim_core::SimError::Interrupted { .. }), _) => {
                    Status::Interrupted(e.to_string())
                }
                (Some(e), _) => Status::Error(e.to_string()),
                (None, false) => {
                    Status::Error(format!("invariant violated: {}", out.violations.join("; ")))
                }
                (None, true) => Status::Ok,
            };
            rec.fingerprint = Some(out.fingerprint.hex());
            rec.events = out.events;
            rec.summary = out.summary;
            rec.series = out.series;
            rec.requests = out.requests;
            rec.state_events = out.state_events;
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic with a non-string payload".into());
            rec.status = Status::Error(format!("panicked: {msg}"));
        }
    }
    rec
}

/// Runs the planned runs whose indices are listed, on `jobs` threads (rayon). `done` is
/// called on the caller's thread after each run, in completion order (it writes the run's
/// files and reports progress): writing never happens inside a rayon worker, where a
/// blocking call into polars' own pool would let the worker steal and start further runs.
/// Runs not yet started when `stop` becomes true are skipped. Records come back in the
/// order of `indices`, whatever the thread count.
pub fn run_all(
    exp: &Experiment,
    indices: &[usize],
    jobs: usize,
    stop: &AtomicBool,
    done: &mut dyn FnMut(&RunRecord),
) -> Vec<RunRecord> {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .expect("a thread pool of a few threads can be built");
    let (tx, rx) = std::sync::mpsc::channel::<RunRecord>();
    let mut out = std::thread::scope(|s| {
        s.spawn(move || {
            pool.install(|| {
                indices.par_iter().with_max_len(1).for_each_with(tx, |tx, &i| {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    // The receiver lives until every sender is gone.
                    let _ = tx.send(run_one(exp, i, &exp.runs[i]));
                });
            });
        });
        let mut out = Vec::with_capacity(indices.len());
        for rec in rx {
            done(&rec);
            out.push(rec);
        }
        out
    });
    let pos = |r: &RunRecord| indices.iter().position(|&i| i == r.run_index).unwrap_or(usize::MAX);
    out.sort_by_key(pos);
    out
}
