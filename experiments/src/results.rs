//! The results contract: Parquet tables in one folder per experiment (columns documented in
//! `docs/results.md`).
//!
//! ```text
//! results/<experiment>/
//!   manifest.ron                       code version, scenario hash, every planned run
//!   experiment.ron                     the resolved experiment (provenance)
//!   runs/shard=<i>/<run_id>.parquet    one row per run: model results only
//!   timeseries/shard=<i>/<run_id>.parquet
//!   events/shard=<i>/<run_id>.parquet
//!   timings/shard=<i>/<run_id>.parquet wall clock (the only non-deterministic table)
//!   requests/shard=<i>/<run_id>.parquet  (optional)
//!   summary.parquet                    across-seed means and 95% CIs, once every run is in
//! ```
//!
//! One part per run, written as the run finishes: a killed batch loses at most the runs in
//! progress, and `--resume` skips every run whose `runs` part exists. Each file is written
//! to a temporary name and renamed, and the `runs` part is written last, so a run's part
//! exists only when all of its tables do. Hive-style `shard=<i>` folders let
//! `pl.scan_parquet("results/<exp>/runs/")` read a whole split batch, with a `shard` column.

use crate::experiment::Experiment;
use crate::experiment::schema::SummaryKind;
use crate::runner::RunRecord;
use crate::staging::Staging;
use models::params::ParamValue;
use models::summary::Value;
use polars::prelude::*;
use std::path::{Path, PathBuf};

/// Fixed leading columns of `runs.parquet`, before the model's summary columns.
pub const RUN_COLUMNS: [&str; 13] = [
    "run_id",
    "run_index",
    "experiment",
    "variant",
    "point",
    "seed",
    "status",
    "error",
    "fingerprint",
    "events",
    "duration_s",
    "warmup_s",
    "scenario",
];

/// Writes `df` to `dir/name` atomically (temporary name, then rename), for files outside
/// the table folders (`summary.parquet`): the temporary is `dir/.<name>.tmp-<pid>`.
pub fn write_parquet(dir: &Path, name: &str, df: &mut DataFrame) -> PolarsResult<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let target = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    write_parquet_file(&tmp, df)?;
    std::fs::rename(&tmp, &target)?;
    Ok(target)
}

/// Writes a text file atomically.
pub fn write_text(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let tmp = path.with_file_name(format!(
        ".{}.tmp-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// The shard a run belongs to: round-robin over the plan, so every shard gets a similar
/// mix of sweep points.
pub fn shard_of(run_index: usize, shards: u32) -> u32 {
    (run_index % shards as usize) as u32
}

fn part_dir(root: &Path, table: &str, shard: u32) -> PathBuf {
    root.join(table).join(format!("shard={shard}"))
}

/// The tables of a results folder that hold one part per run.
pub const TABLES: [&str; 5] = ["runs", "timeseries", "events", "timings", "requests"];

/// Writes every table of one finished run into the experiment folder `root`. Each part is
/// written into `staging` (outside the table folders) and renamed into its table.
pub fn write_run(
    root: &Path,
    staging: &Staging,
    exp: &Experiment,
    shard: u32,
    rec: &RunRecord,
) -> PolarsResult<()> {
    let one = std::slice::from_ref(rec);
    let name = format!("{}.parquet", rec.run_id);
    let part = |table: &str, df: &mut DataFrame| -> PolarsResult<()> {
        let dir = part_dir(root, table, shard);
        std::fs::create_dir_all(&dir)?;
        let tmp = staging.dir().join(format!("{table}-{name}"));
        write_parquet_file(&tmp, df)?;
        std::fs::rename(&tmp, dir.join(&name))?;
        Ok(())
    };
    part("timeseries", &mut timeseries_frame(one)?)?;
    part("events", &mut events_frame(one)?)?;
    part("timings", &mut timings_frame(one)?)?;
    if exp.outputs.requests {
        part("requests", &mut requests_frame(exp, one)?)?;
    }
    // Last: its presence marks the run complete.
    part("runs", &mut runs_frame(exp, one)?)
}

/// Buffered: the parquet writer emits its page headers and metadata a few bytes at a time
/// (≈ 48,000 `write` calls for one run's `runs` part, measured with `strace -c`), so an
/// unbuffered file spent a quarter of a sweep's CPU in the kernel (bench/NOTES.md, (d)).
fn write_parquet_file(path: &Path, df: &mut DataFrame) -> PolarsResult<()> {
    use std::io::Write as _;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(path)?);
    ParquetWriter::new(&mut w).with_compression(ParquetCompression::Zstd(None)).finish(df)?;
    // Flushed here, not on drop, so that a write error is reported, never swallowed.
    w.flush()?;
    Ok(())
}

/// Every part file of one table: (run id, path), in any shard folder.
pub fn parts(root: &Path, table: &str) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let dir = root.join(table);
    if !dir.is_dir() {
        return Ok(out);
    }
    for shard in std::fs::read_dir(&dir)? {
        let shard = shard?;
        if !shard.file_type()?.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(shard.path())? {
            let f = f?;
            let name = f.file_name().into_string().unwrap_or_default();
            if let Some(id) = name.strip_suffix(".parquet")
                && !name.starts_with('.')
            {
                out.push((id.to_string(), f.path()));
            }
        }
    }
    Ok(out)
}

/// The `status` of the `runs` part at `path` (`ok`, `error`, `interrupted`); `None` when
/// the part cannot be read. Only that column is read.
pub fn part_status(path: &Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    let df = ParquetReader::new(f).with_columns(Some(vec!["status".into()])).finish().ok()?;
    Some(df.column("status").ok()?.str().ok()?.get(0)?.to_string())
}

/// The status of every run whose `runs` part exists (in any shard folder), by run id.
pub fn run_statuses(root: &Path) -> std::io::Result<std::collections::HashMap<String, String>> {
    Ok(parts(root, "runs")?
        .into_iter()
        .map(|(id, path)| {
            let status = part_status(&path).unwrap_or_else(|| "unreadable".into());
            (id, status)
        })
        .collect())
}

/// Run ids whose `runs` part exists and which ran to an end (`ok` or `error`): an
/// `interrupted` run has no result yet, so a summary waits for it.
pub fn completed_runs(root: &Path) -> std::io::Result<std::collections::BTreeSet<String>> {
    Ok(run_statuses(root)?
        .into_iter()
        .filter(|(_, s)| s == "ok" || s == "error")
        .map(|(id, _)| id)
        .collect())
}

/// Parts of any table whose run is not in `planned` (left by an earlier batch of an
/// edited experiment, or of another experiment of the same name).
pub fn foreign_parts(
    root: &Path,
    planned: &std::collections::HashSet<&str>,
) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for t in TABLES {
        out.extend(
            parts(root, t)?
                .into_iter()
                .filter(|(id, _)| !planned.contains(id.as_str()))
                .map(|p| p.1),
        );
    }
    out.sort();
    Ok(out)
}

/// Removes what a killed writer may have left: staging folders of processes that have
/// ended (never another live shard's) and root-level temporaries of this process's kind
/// (`.<name>.tmp-<pid>`) whose pid is not running.
pub fn remove_temporaries(root: &Path) -> std::io::Result<()> {
    if !root.is_dir() {
        return Ok(());
    }
    Staging::remove_dead(root)?;
    for e in std::fs::read_dir(root)? {
        let e = e?;
        let name = e.file_name().into_string().unwrap_or_default();
        let pid = name.rsplit_once(".tmp-").and_then(|(_, p)| p.parse::<u32>().ok());
        if name.starts_with('.')
            && e.file_type()?.is_file()
            && let Some(pid) = pid
            && !process_alive(pid)
        {
            std::fs::remove_file(e.path())?;
        }
    }
    Ok(())
}

/// The scenario a run ran (its variant's).
fn run_scenario<'a>(exp: &'a Experiment, r: &RunRecord) -> &'a models::Scenario {
    exp.runs.get(r.run_index).map_or(&exp.scenario, |p| &p.scenario)
}

/// Whether a process with this id runs (Linux: `/proc/<pid>`; elsewhere assumed alive, so
/// nothing is removed that might be in use).
fn process_alive(pid: u32) -> bool {
    pid == std::process::id()
        || !Path::new("/proc/self").exists()
        || Path::new(&format!("/proc/{pid}")).exists()
}

/// The runs table.
pub fn runs_frame(exp: &Experiment, records: &[RunRecord]) -> PolarsResult<DataFrame> {
    let n = records.len();
    let mut cols: Vec<Column> = vec![
        Column::new("run_id".into(), records.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>()),
        Column::new(
            "run_index".into(),
            records.iter().map(|r| r.run_index as u64).collect::<Vec<_>>(),
        ),
        Column::new("experiment".into(), vec![exp.name.as_str(); n]),
        Column::new(
            "variant".into(),
            records.iter().map(|r| r.variant.as_str()).collect::<Vec<_>>(),
        ),
        Column::new("point".into(), records.iter().map(|r| r.point as u64).collect::<Vec<_>>()),
        Column::new("seed".into(), records.iter().map(|r| r.seed).collect::<Vec<_>>()),
        Column::new("status".into(), records.iter().map(|r| r.status.name()).collect::<Vec<_>>()),
        Column::new("error".into(), records.iter().map(|r| r.status.message()).collect::<Vec<_>>()),
        Column::new(
            "fingerprint".into(),
            records.iter().map(|r| r.fingerprint.as_deref()).collect::<Vec<_>>(),
        ),
        Column::new("events".into(), records.iter().map(|r| r.events).collect::<Vec<_>>()),
        Column::new("duration_s".into(), vec![exp.duration.as_s_f64(); n]),
        Column::new("warmup_s".into(), vec![exp.warmup.as_s_f64(); n]),
        Column::new(
            "scenario".into(),
            records.iter().map(|r| run_scenario(exp, r).name.as_str()).collect::<Vec<_>>(),
        ),
    ];
    // One column per swept parameter, typed by its declared type (`crate::experiment::schema`).
    for (k, pc) in exp.columns.params.iter().enumerate() {
        let vals: Vec<Option<&ParamValue>> =
            records.iter().map(|r| r.params.get(k).and_then(Option::as_ref)).collect();
        cols.push(pc.column(&vals));
    }
    // Summary columns: those of the plan (the union over its scenarios: a run without a
    // component, or a run that failed, has nulls), then any a record has beyond them (a
    // scenario changed outside the plan: a live session's overrides).
    let mut names: Vec<(&str, SummaryKind)> =
        exp.columns.summary.iter().map(|(n, k)| (n.as_str(), *k)).collect();
    for r in records {
        for (name, v) in &r.summary.values {
            if !names.iter().any(|(n, _)| n == name) {
                names.push((name, SummaryKind::of(v)));
            }
        }
    }
    for (name, kind) in names {
        cols.push(summary_column(records, name, kind));
    }
    let goodput = goodput_columns(exp, &cols)?;
    cols.extend(goodput);
    DataFrame::new(n, cols)
}

/// `source.<s>.goodput` and `class.<c>.goodput`: successful, non-degraded completions per
/// second of measured time (`success ÷ (duration − warm-up)`), beside every `success`
/// column. Derived here, not in the model, so the run's fingerprint does not depend on it.
fn goodput_columns(exp: &Experiment, cols: &[Column]) -> PolarsResult<Vec<Column>> {
    let measured = exp.duration.as_s_f64() - exp.warmup.as_s_f64();
    let mut out = Vec::new();
    for c in cols {
        let Some(name) = goodput_name(c.name().as_str()) else { continue };
        let v: Vec<Option<f64>> =
            c.cast(&DataType::Float64)?.f64()?.iter().map(|s| Some(s? / measured)).collect();
        out.push(Column::new(name.into(), v));
    }
    Ok(out)
}

pub use crate::experiment::metric::goodput_name;

/// One summary column over `records`, typed `kind` (null where a record lacks it).
fn summary_column(records: &[RunRecord], name: &str, kind: SummaryKind) -> Column {
    fn find<'a>(r: &'a RunRecord, name: &str) -> Option<&'a Value> {
        r.summary.values.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
    match kind {
        SummaryKind::U64 => Column::new(
            name.into(),
            records
                .iter()
                .map(|r| if let Some(Value::U64(x)) = find(r, name) { Some(*x) } else { None })
                .collect::<Vec<_>>(),
        ),
        // A statistic of an empty set (no requests, steps, streams) is NaN in the model;
        // here it is null (docs/results.md).
        SummaryKind::F64 => Column::new(
            name.into(),
            records
                .iter()
                .map(|r| if let Some(Value::F64(x)) = find(r, name) { Some(*x) } else { None })
                .map(|x| x.filter(|x| !x.is_nan()))
                .collect::<Vec<_>>(),
        ),
    }
}

/// The events table: state changes (run-time configuration changes, later breaker
/// transitions and outages) with time, component, from and to.
pub fn events_frame(records: &[RunRecord]) -> PolarsResult<DataFrame> {
    let rows: usize = records.iter().map(|r| r.state_events.len()).sum();
    let mut run_id = Vec::with_capacity(rows);
    let (mut time, mut component, mut kind, mut from, mut to) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in records {
        for e in &r.state_events {
            run_id.push(r.run_id.as_str());
            time.push(e.time.as_s_f64());
            component.push(e.component.as_str());
            kind.push(e.kind);
            from.push(e.from.as_str());
            to.push(e.to.as_str());
        }
    }
    DataFrame::new(
        rows,
        vec![
            Column::new("run_id".into(), run_id),
            Column::new("time_s".into(), time),
            Column::new("component".into(), component),
            Column::new("kind".into(), kind),
            Column::new("from".into(), from),
            Column::new("to".into(), to),
        ],
    )
}

/// The timings table.
pub fn timings_frame(records: &[RunRecord]) -> PolarsResult<DataFrame> {
    let n = records.len();
    DataFrame::new(
        n,
        vec![
            Column::new(
                "run_id".into(),
                records.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>(),
            ),
            Column::new(
                "wall_seconds".into(),
                records.iter().map(|r| r.wall_seconds).collect::<Vec<_>>(),
            ),
            Column::new("events".into(), records.iter().map(|r| r.events).collect::<Vec<_>>()),
            Column::new(
                "events_per_second".into(),
                records
                    .iter()
                    .map(|r| (r.wall_seconds > 0.0).then(|| r.events as f64 / r.wall_seconds))
                    .collect::<Vec<_>>(),
            ),
        ],
    )
}

/// The long-format time series.
pub fn timeseries_frame(records: &[RunRecord]) -> PolarsResult<DataFrame> {
    let rows: usize = records.iter().map(|r| r.series.len()).sum();
    let mut run_id = Vec::with_capacity(rows);
    let mut start = Vec::with_capacity(rows);
    let mut metric = Vec::with_capacity(rows);
    let mut value = Vec::with_capacity(rows);
    for r in records {
        for row in &r.series {
            run_id.push(r.run_id.as_str());
            start.push(row.bucket_start_ns as f64 / 1e9);
            metric.push(row.metric.as_str());
            value.push(Some(row.value).filter(|v| !v.is_nan()));
        }
    }
    DataFrame::new(
        rows,
        vec![
            Column::new("run_id".into(), run_id),
            Column::new("bucket_start_s".into(), start),
            Column::new("metric".into(), metric),
            Column::new("value".into(), value),
        ],
    )
}

/// One row per request of every run (`requests.parquet`).
pub fn requests_frame(exp: &Experiment, records: &[RunRecord]) -> PolarsResult<DataFrame> {
    let rows: usize = records.iter().map(|r| r.requests.len()).sum();
    let mut run_id = Vec::with_capacity(rows);
    let mut request_id = Vec::with_capacity(rows);
    let mut source = Vec::with_capacity(rows);
    let mut seq = Vec::with_capacity(rows);
    let mut arrival = Vec::with_capacity(rows);
    let mut start = Vec::with_capacity(rows);
    let mut end = Vec::with_capacity(rows);
    let mut outcome = Vec::with_capacity(rows);
    let mut reason = Vec::with_capacity(rows);
    let warmup = exp.warmup.0;
    let mut measured = Vec::with_capacity(rows);
    let mut prompt = Vec::with_capacity(rows);
    let mut output = Vec::with_capacity(rows);
    let mut class = Vec::with_capacity(rows);
    let mut user = Vec::with_capacity(rows);
    let mut key = Vec::with_capacity(rows);
    for r in records {
        for q in &r.requests {
            let sc = run_scenario(exp, r);
            run_id.push(r.run_id.as_str());
            request_id.push(q.request_id);
            source.push(sc.sources[q.source as usize].name.as_str());
            class.push(sc.classes[q.class as usize].name.as_str());
            user.push((q.user != 0).then_some(q.user));
            key.push((q.key != 0).then_some(q.key));
            seq.push(q.seq);
            arrival.push(q.arrival.0);
            start.push(q.start.map(|t| t.0));
            end.push(q.end.map(|t| t.0));
            outcome.push(q.outcome.map_or("in_flight", |o| o.kind_name()));
            reason.push(q.outcome.and_then(|o| o.reason()).map(|r| r.name()));
            measured.push(q.arrival.0 >= warmup);
            prompt.push(q.tokens.prompt);
            output.push(q.tokens.output);
        }
    }
    DataFrame::new(
        rows,
        vec![
            Column::new("run_id".into(), run_id),
            Column::new("request_id".into(), request_id),
            Column::new("source".into(), source),
            Column::new("seq".into(), seq),
            Column::new("arrival_ns".into(), arrival),
            Column::new("start_ns".into(), start),
            Column::new("end_ns".into(), end),
            Column::new("outcome".into(), outcome),
            Column::new("reason".into(), reason),
            Column::new("measured".into(), measured),
            Column::new("prompt_tokens".into(), prompt),
            Column::new("output_tokens".into(), output),
            Column::new("class".into(), class),
            Column::new("user".into(), user),
            Column::new("key".into(), key),
        ],
    )
}

/// Reads the runs table of a results folder (all shards), in plan order.
pub fn load(dir: impl AsRef<Path>) -> PolarsResult<DataFrame> {
    scan(dir, "runs")?.sort(["run_index"], Default::default()).collect()
}

/// Whether `--resume` may keep the `runs` part at `path` for run `index`: the run ended
/// `ok` (an `error` or `interrupted` run is run again) and its part carries the labels the
/// current plan gives it (`run_index`, `point`, the swept-parameter columns). A run whose
/// resolved scenario did not change keeps its run id when the experiment is edited, but its
/// place in the plan (and the set of swept columns) may change: such a part must be written
/// again, or two points would share a `point` label.
pub fn reusable(path: &Path, exp: &Experiment, index: usize) -> bool {
    let Ok(f) = std::fs::File::open(path) else { return false };
    let Ok(df) = ParquetReader::new(f).finish() else { return false };
    let ok = df.column("status").ok().and_then(|c| c.str().ok()?.get(0).map(|s| s == "ok"));
    if ok != Some(true) {
        return false;
    }
    let run = &exp.runs[index];
    let u = |c: &str| df.column(c).ok()?.u64().ok()?.get(0);
    if u("run_index") != Some(index as u64) || u("point") != Some(run.point as u64) {
        return false;
    }
    let have = df.get_column_names().iter().filter(|n| n.starts_with("param.")).count();
    // Each swept column as this plan writes it (its name and declared type; null where
    // the run's variant has no such parameter).
    have == exp.columns.params.len()
        && exp.columns.params.iter().zip(&run.params).all(|(pc, v)| {
            let want = pc.column(&[v.as_ref()]);
            df.column(want.name())
                .is_ok_and(|c| c.dtype() == want.dtype() && c.equals_missing(&want))
        })
}

/// The runs table of the current plan only, in plan order: parts of runs the plan does
/// not list are left out, and every planned run must be present exactly once with the
/// plan's labels, so a summary counts exactly the runs `manifest.ron` lists.
pub fn load_planned(dir: impl AsRef<Path>, exp: &Experiment) -> PolarsResult<DataFrame> {
    let planned: std::collections::HashSet<&str> =
        exp.runs.iter().map(|r| r.run_id.as_str()).collect();
    let all = scan(dir, "runs")?.collect()?;
    let mask: BooleanChunked = all
        .column("run_id")?
        .str()?
        .iter()
        .map(|id| Some(id.is_some_and(|id| planned.contains(id))))
        .collect();
    let df = all
        .filter(&mask)?
        .unique_stable(Some(&["run_id".to_string()]), UniqueKeepStrategy::First, None)?
        .sort(["run_index"], Default::default())?;
    let got: Vec<(Option<&str>, Option<u64>, Option<u64>)> = df
        .column("run_id")?
        .str()?
        .iter()
        .zip(df.column("run_index")?.u64()?.iter())
        .zip(df.column("point")?.u64()?.iter())
        .map(|((a, b), c)| (a, b, c))
        .collect();
    let want: Vec<(Option<&str>, Option<u64>, Option<u64>)> = exp
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| (Some(r.run_id.as_str()), Some(i as u64), Some(r.point as u64)))
        .collect();
    if got != want {
        polars_bail!(ComputeError: "the runs table does not match the plan in manifest.ron ({} parts for {} planned runs, or labels of an earlier plan); rerun with --resume", got.len(), want.len());
    }
    Ok(df)
}

/// Reads one table of a results folder (`runs`, `timeseries`, `events`, `timings`,
/// `requests`), all shards, as a `LazyFrame` over the rows in memory, with a hive-style
/// `shard` column (Int64, last) from the folder names.
///
/// Every part this version writes for one plan has the same columns (`crate::experiment::schema`), but
/// a folder may hold parts written by an older version (lacking newer columns, or typing a
/// swept column by its values): the table has the union of the parts' columns, in
/// first-seen order over the parts sorted by path, a column a part lacks read as nulls.
/// Rows come part by part in that order.
///
/// The parts are read eagerly with `ParquetReader`, not with `LazyFrame::scan_parquet`:
/// polars 0.55 runs every file scan through its streaming engine, which compiles the whole
/// cloud stack (object_store, reqwest, hyper, rustls, tokio) into the CLI; a results table
/// of a batch fits in memory (bench/NOTES.md, "Session 4, build lane").
pub fn scan(dir: impl AsRef<Path>, table: &str) -> PolarsResult<LazyFrame> {
    let p = dir.as_ref().join(table);
    if !p.is_dir() {
        polars_bail!(ComputeError: "no table `{table}` in {} (expected a folder {})", dir.as_ref().display(), p.display());
    }
    let parts = table_parts(&p)?;
    if parts.is_empty() {
        polars_bail!(ComputeError: "table `{table}` in {} has no part (expected {}/shard=<i>/<run_id>.parquet)", dir.as_ref().display(), p.display());
    }
    let mut frames = Vec::with_capacity(parts.len());
    let mut union = Schema::default();
    for (shard, f) in &parts {
        let df = ParquetReader::new(std::fs::File::open(f)?).finish()?;
        for (name, dtype) in df.schema().iter() {
            if !union.contains(name) {
                union.with_column(name.clone(), dtype.clone());
            }
        }
        frames.push((*shard, df));
    }
    let mut all: Option<DataFrame> = None;
    for (shard, df) in frames {
        let n = df.height();
        let mut cols = Vec::with_capacity(union.len() + 1);
        for (name, dtype) in union.iter() {
            cols.push(match df.column(name) {
                Ok(c) if c.dtype() == dtype => c.clone(),
                Ok(c) => c.cast(dtype)?,
                Err(_) => Column::full_null(name.clone(), n, dtype),
            });
        }
        cols.push(Column::new("shard".into(), vec![shard; n]));
        let df = DataFrame::new(n, cols)?;
        match all.as_mut() {
            None => all = Some(df),
            Some(a) => {
                a.vstack_mut(&df)?;
            }
        }
    }
    let mut all = all.expect("at least one part");
    all.rechunk_mut();
    Ok(all.lazy())
}

/// The parts of a table (`<table>/shard=<i>/*.parquet`, hidden files left out) sorted by
/// path, each with its shard number.
fn table_parts(table: &Path) -> PolarsResult<Vec<(i64, PathBuf)>> {
    let mut parts: Vec<(i64, PathBuf)> = Vec::new();
    for shard in std::fs::read_dir(table)? {
        let shard = shard?.path();
        if !shard.is_dir() {
            continue;
        }
        let name = shard.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        let Some(i) = name.strip_prefix("shard=").and_then(|i| i.parse::<i64>().ok()) else {
            polars_bail!(ComputeError: "unexpected folder {} in a results table (expected shard=<i>)", shard.display());
        };
        for f in std::fs::read_dir(&shard)? {
            let f = f?.path();
            let visible =
                f.file_name().and_then(|n| n.to_str()).is_some_and(|n| !n.starts_with('.'));
            if visible && f.extension().is_some_and(|e| e == "parquet") {
                parts.push((i, f));
            }
        }
    }
    parts.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(parts)
}

/// Across-seed statistics of every summary metric, per variant × sweep point: `runs` (seeds
/// that ended ok), `<metric>.mean` and `<metric>.ci95` (half-width of the 95% Student-t
/// interval; null with fewer than two runs). Rows in plan order.
pub fn summarize(runs: &DataFrame) -> PolarsResult<DataFrame> {
    let names: Vec<String> = runs.get_column_names().iter().map(|s| s.to_string()).collect();
    let mut keys: Vec<String> = vec!["variant".into(), "point".into()];
    keys.extend(names.iter().filter(|n| n.starts_with("param.")).cloned());
    let metrics: Vec<String> = names
        .iter()
        .filter(|n| {
            n.starts_with("source.") || n.starts_with("class.") || n.starts_with("station.")
        })
        .filter(|n| runs.column(n).map(|c| c.dtype().is_primitive_numeric()).unwrap_or(false))
        .cloned()
        .collect();
    let mut aggs = vec![col("run_index").min().alias("first_run"), len().alias("runs")];
    for m in &metrics {
        aggs.push(col(m.as_str()).cast(DataType::Float64).mean().alias(format!("{m}.mean")));
        aggs.push(col(m.as_str()).cast(DataType::Float64).std(1).alias(format!("{m}.ci95")));
    }
    let key_exprs: Vec<Expr> = keys.iter().map(|k| col(k.as_str())).collect();
    let mut df = runs
        .clone()
        .lazy()
        .filter(col("status").eq(lit("ok")))
        .group_by(key_exprs)
        .agg(aggs)
        .sort(["first_run"], Default::default())
        .collect()?;
    let n: Vec<u64> =
        df.column("runs")?.cast(&DataType::UInt64)?.u64()?.into_no_null_iter().collect();
    let factor: Vec<Option<f64>> = n
        .iter()
        .map(|&n| {
            sim_core::stats::Replications {
                n: n as usize,
                mean: 0.0,
                std_dev: 1.0,
                std_err: 1.0 / (n as f64).sqrt(),
            }
            .ci_half_width(0.95)
        })
        .collect();
    for m in &metrics {
        let name = format!("{m}.ci95");
        let sd: Vec<Option<f64>> = df.column(&name)?.f64()?.iter().collect();
        let ci: Vec<Option<f64>> =
            sd.iter().zip(&factor).map(|(s, f)| Some((*s)? * (*f)?)).collect();
        df.replace(&name, Column::new(name.as_str().into(), ci))?;
    }
    df.drop_in_place("first_run")?;
    Ok(df)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two parts of one table with different columns (a structural variant's run reports a
    /// component the other lacks) read as one table: the union of the columns, nulls where
    /// a part has none.
    #[test]
    fn parts_with_different_columns_read_as_their_union() {
        let dir = std::env::temp_dir().join(format!("stormglass-union-{}", std::process::id()));
        let shard = dir.join("runs").join("shard=0");
        std::fs::create_dir_all(&shard).unwrap();
        let mut a = df!("run_index" => [0u64], "x" => [1.0f64]).unwrap();
        let mut b = df!("run_index" => [1u64], "x" => [2.0f64], "extra" => [3.0f64]).unwrap();
        for (name, df) in [("a.parquet", &mut a), ("b.parquet", &mut b)] {
            let f = std::fs::File::create(shard.join(name)).unwrap();
            ParquetWriter::new(f).finish(df).unwrap();
        }
        let got = load(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let cols: Vec<&str> = got.get_column_names().iter().map(|c| c.as_str()).collect();
        assert_eq!(cols, ["run_index", "x", "extra", "shard"]);
        let extra = got.column("extra").unwrap().f64().unwrap();
        assert_eq!((extra.get(0), extra.get(1)), (None, Some(3.0)));
    }
}
