//! Embedding stormglass in a Rust program: load a file, run it, get the results as polars
//! DataFrames (the tables of the results contract, `docs/results.md`, in memory; nothing is
//! written to disk).
//!
//! ```
//! # fn main() -> Result<(), experiments::embed::Error> {
//! let results = experiments::embed::run_file("quickstart.ron")?;
//! println!("{}", results.runs.head(Some(5)));
//! let wait = results.runs.column("source.chat.wait_ms_mean")?;
//! assert_eq!(wait.len(), 5); // one row per seed
//! # Ok(()) }
//! ```
//!
//! For one run driven step by step (watch it, change it, export it), open a live session
//! instead: [`crate::session::open`].

use crate::experiment::{Experiment, LoadError, RunDefaults};
use crate::results;
use crate::runner::{RunRecord, run_all};
use polars::prelude::{DataFrame, PolarsError};
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// Why an embedded run produced no results.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Load(#[from] LoadError),
    #[error("building the result tables: {0}")]
    Polars(#[from] PolarsError),
}

/// Every run of an experiment, as DataFrames.
pub struct Results {
    /// One row per run: `run_id`, variant, point, seed, status, fingerprint, parameters,
    /// every summary column (`runs.parquet`).
    pub runs: DataFrame,
    /// Long-format time series: `run_id`, `bucket_start_s`, `metric`, `value`.
    pub timeseries: DataFrame,
    /// Model events (state changes, configuration changes) of every run.
    pub events: DataFrame,
    /// One row per request, when the experiment asks for them (`outputs: (requests: true)`).
    pub requests: Option<DataFrame>,
    /// The runs' records, in plan order (fingerprints, summaries, raw series).
    pub records: Vec<RunRecord>,
}

/// Loads an experiment or bare scenario file (bare scenarios with [`RunDefaults`]) and
/// runs every planned run on all cores.
pub fn run_file(path: impl AsRef<Path>) -> Result<Results, Error> {
    let exp = crate::experiment::load(path.as_ref(), &RunDefaults::default())?;
    Ok(run_experiment(&exp, std::thread::available_parallelism().map_or(1, |n| n.get()))?)
}

/// Runs every planned run of a loaded experiment on `jobs` threads.
pub fn run_experiment(exp: &Experiment, jobs: usize) -> Result<Results, PolarsError> {
    let all: Vec<usize> = (0..exp.runs.len()).collect();
    let records = run_all(exp, &all, jobs, &AtomicBool::new(false), &mut |_| {});
    Ok(Results {
        runs: results::runs_frame(exp, &records)?,
        timeseries: results::timeseries_frame(&records)?,
        events: results::events_frame(&records)?,
        requests: if exp.outputs.requests {
            Some(results::requests_frame(exp, &records)?)
        } else {
            None
        },
        records,
    })
}
