//! Running a race over files: each round's runs through the batch machinery (staging,
//! one part per run, `--resume` skips the runs whose parts say `ok`), each run's metrics read
//! back from its `runs` part (so a resumed run and a fresh one are read alike), then
//! `rounds.parquet` and `summary.parquet`.

use super::race::{Fate, Race, Row, Sample};
use super::{Search, report};
use crate::batch::{PrepareError, Prepared, prepare};
use crate::runner::{RunRecord, Status, run_all};
use crate::{provenance, results};
use polars::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// How to run.
#[derive(Clone, Debug)]
pub struct Options {
    pub jobs: usize,
    pub resume: bool,
    pub overwrite: bool,
    /// A line per run on stderr.
    pub log: bool,
}

/// What a race did.
pub struct Outcome {
    pub folder: PathBuf,
    /// Every round's rows, in round order.
    pub rows: Vec<Row>,
    pub fates: Vec<Fate>,
    /// Seeds every candidate ran (the Pareto front's common seeds).
    pub common_seeds: usize,
    /// Each run's metrics, by plan index (every run the race used).
    pub samples: BTreeMap<usize, Sample>,
    /// Runs made now, and runs found done (`--resume`).
    pub ran: usize,
    pub reused: usize,
    pub wall_seconds: f64,
    /// Stopped by a signal before the end.
    pub interrupted: bool,
}

/// Why a race did not start or finish.
#[derive(Debug)]
pub enum DriveError {
    /// The folder holds results the command would mix with or replace (exit 2).
    Refused(String),
    Other(String),
}

impl std::fmt::Display for DriveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriveError::Refused(m) | DriveError::Other(m) => f.write_str(m),
        }
    }
}

fn other(root: &Path) -> impl Fn(String) -> DriveError + '_ {
    move |e| DriveError::Other(format!("{}: {e}", root.display()))
}

/// Runs the race (or, with `grid`, every candidate on every seed in one round) into the
/// results folder `root`.
pub fn drive(
    search: &Search,
    root: &Path,
    grid: bool,
    opts: &Options,
    stop: &AtomicBool,
) -> Result<Outcome, DriveError> {
    let plan = &search.plan;
    let err = other(root);
    let _lock = crate::shard_lock::ShardLock::take(root, 0).map_err(|e| match e {
        crate::shard_lock::LockError::Busy(m) => DriveError::Refused(m),
        e => err(e.to_string()),
    })?;
    results::remove_temporaries(root).map_err(|e| err(e.to_string()))?;
    let Prepared { mine, todo } = prepare(root, plan, (0, 1), opts.resume, opts.overwrite)
        .map_err(|e| match e {
            PrepareError::Refused(m) => DriveError::Refused(m),
            e => err(e.to_string()),
        })?;
    let todo: HashSet<usize> = todo.into_iter().collect();
    let mut done: HashSet<usize> = mine.into_iter().filter(|i| !todo.contains(i)).collect();
    provenance::write(root, plan, 1).map_err(|e| err(format!("cannot write the manifest: {e}")))?;
    let staging = crate::staging::Staging::create(root)
        .map_err(|e| err(format!("cannot create a staging folder: {e}")))?;
    let mut race = if grid { Race::grid(search) } else { Race::new(search) };
    let seeds = plan.seeds.len();
    let metrics = search.metrics();
    let started = Instant::now();
    let mut out = Outcome {
        folder: root.to_path_buf(),
        rows: Vec::new(),
        fates: Vec::new(),
        common_seeds: 0,
        samples: BTreeMap::new(),
        ran: 0,
        reused: 0,
        wall_seconds: 0.0,
        interrupted: false,
    };
    while let Some((from, to, alive)) = race.next() {
        let needed: Vec<usize> =
            alive.iter().flat_map(|&c| (from..to).map(move |j| c * seeds + j)).collect();
        let fresh: Vec<usize> = needed.iter().copied().filter(|i| !done.contains(i)).collect();
        out.reused += needed.len() - fresh.len();
        let mut write_errors = Vec::new();
        let mut k = 0;
        let mut write = |r: &RunRecord| {
            if let Err(e) = results::write_run(root, &staging, plan, 0, r) {
                write_errors.push(format!("run {}: {e}", r.run_id));
            }
            k += 1;
            if opts.log {
                let status = r.status.line();
                eprintln!(
                    "[round {} {k}/{}] run {} {} point {} seed {} {status} ({:.2}s)",
                    race.round + 1,
                    fresh.len(),
                    r.run_id,
                    r.variant,
                    r.point,
                    r.seed,
                    r.wall_seconds
                );
            }
        };
        let records = run_all(plan, &fresh, opts.jobs, stop, &mut write);
        if let Some(e) = write_errors.first() {
            return Err(err(format!("writing results: {e}")));
        }
        out.ran += records.len();
        done.extend(records.iter().map(|r| r.run_index));
        let cut = records.iter().any(|r| matches!(r.status, Status::Interrupted(_)));
        if stop.load(Ordering::SeqCst) || cut || records.len() < fresh.len() {
            out.interrupted = true;
            break;
        }
        let paths: BTreeMap<String, PathBuf> =
            results::parts(root, "runs").map_err(|e| err(e.to_string()))?.into_iter().collect();
        for &i in &needed {
            if let std::collections::btree_map::Entry::Vacant(slot) = out.samples.entry(i) {
                let id = &plan.runs[i].run_id;
                slot.insert(match paths.get(id) {
                    Some(p) => read_sample(p, &metrics).map_err(|e| err(e.to_string()))?,
                    None => Err(format!("run {id}: no `runs` part after it ran")),
                });
            }
        }
        let samples = &out.samples;
        out.rows.extend(race.judge(to, &|c, j| samples[&(c * seeds + j)].clone()));
        if out.common_seeds == 0 {
            out.common_seeds = to;
        }
    }
    out.fates = race.fates.clone();
    out.wall_seconds = started.elapsed().as_secs_f64();
    provenance::write(root, plan, 1).map_err(|e| err(format!("cannot write the manifest: {e}")))?;
    if !out.interrupted {
        let mut rounds = report::rounds_frame(search, &out.rows).map_err(|e| err(e.to_string()))?;
        results::write_parquet(root, "rounds.parquet", &mut rounds)
            .map_err(|e| err(e.to_string()))?;
        let mut summary = results::load(root)
            .and_then(|df| results::summarize(&df))
            .map_err(|e| err(format!("summarising: {e}")))?;
        results::write_parquet(root, "summary.parquet", &mut summary)
            .map_err(|e| err(e.to_string()))?;
    }
    Ok(out)
}

/// One run's metrics from its `runs` part; `Err` with the run's error when it failed.
fn read_sample(path: &Path, metrics: &[&super::metric::Metric]) -> PolarsResult<Sample> {
    let df = ParquetReader::new(std::fs::File::open(path)?).finish()?;
    let status = df.column("status")?.str()?.get(0).unwrap_or("error").to_string();
    if status != "ok" {
        let why = df.column("error")?.str()?.get(0).unwrap_or("no message").to_string();
        let seed = df.column("seed")?.u64()?.get(0).unwrap_or(0);
        return Ok(Err(format!("the run of seed {seed} ended with an error: {why}")));
    }
    Ok(Ok(metrics.iter().map(|m| m.value(&df)).collect()))
}
