//! The results contract: Parquet files in one folder per experiment (columns documented in
//! `docs/results.md`).
//!
//! * `runs.parquet` — one row per run: model results only, so identical runs give
//!   identical bytes;
//! * `timings.parquet` — wall-clock seconds and events per run (non-deterministic);
//! * `timeseries.parquet` — long format: run × bucket × metric → value.
//!
//! Files are written to a temporary name and renamed, so a reader never sees a partial file.

use crate::experiment::Experiment;
use crate::runner::{RunRecord, Status};
use models::summary::Value;
use polars::prelude::*;
use std::path::{Path, PathBuf};

/// Fixed leading columns of `runs.parquet`, before the model's summary columns.
pub const RUN_COLUMNS: [&str; 10] = [
    "run_id",
    "experiment",
    "seed",
    "status",
    "error",
    "fingerprint",
    "events",
    "duration_s",
    "warmup_s",
    "scenario",
];

/// Writes `df` to `dir/name` atomically.
pub fn write_parquet(dir: &Path, name: &str, df: &mut DataFrame) -> PolarsResult<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let target = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        let f = std::fs::File::create(&tmp)?;
        ParquetWriter::new(f).with_compression(ParquetCompression::Zstd(None)).finish(df)?;
    }
    std::fs::rename(&tmp, &target)?;
    Ok(target)
}

/// The runs table.
pub fn runs_frame(exp: &Experiment, records: &[RunRecord]) -> PolarsResult<DataFrame> {
    let n = records.len();
    let mut cols: Vec<Column> = vec![
        Column::new("run_id".into(), records.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>()),
        Column::new("experiment".into(), vec![exp.name.as_str(); n]),
        Column::new("seed".into(), records.iter().map(|r| r.seed).collect::<Vec<_>>()),
        Column::new(
            "status".into(),
            records
                .iter()
                .map(|r| if r.status == Status::Ok { "ok" } else { "error" })
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "error".into(),
            records
                .iter()
                .map(|r| match &r.status {
                    Status::Ok => None,
                    Status::Error(e) => Some(e.as_str()),
                })
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "fingerprint".into(),
            records.iter().map(|r| r.fingerprint.as_deref()).collect::<Vec<_>>(),
        ),
        Column::new("events".into(), records.iter().map(|r| r.events).collect::<Vec<_>>()),
        Column::new("duration_s".into(), vec![exp.duration.as_s_f64(); n]),
        Column::new("warmup_s".into(), vec![exp.warmup.as_s_f64(); n]),
        Column::new("scenario".into(), vec![exp.scenario.name.as_str(); n]),
    ];
    // Summary columns: the union over runs, in first-seen order (runs that failed have
    // nulls). All ok runs of one scenario share one column list.
    let mut names: Vec<(&str, bool)> = Vec::new(); // (name, is_u64)
    for r in records {
        for (name, v) in &r.summary.values {
            if !names.iter().any(|(n, _)| n == name) {
                names.push((name, matches!(v, Value::U64(_))));
            }
        }
    }
    for (name, is_u64) in names {
        let find = |r: &RunRecord| {
            r.summary.values.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
        };
        let col = if is_u64 {
            let v: Vec<Option<u64>> = records
                .iter()
                .map(|r| find(r).and_then(|v| if let Value::U64(x) = v { Some(x) } else { None }))
                .collect();
            Column::new(name.into(), v)
        } else {
            let v: Vec<Option<f64>> = records
                .iter()
                .map(|r| find(r).and_then(|v| if let Value::F64(x) = v { Some(x) } else { None }))
                .collect();
            Column::new(name.into(), v)
        };
        cols.push(col);
    }
    DataFrame::new(n, cols)
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
                    .map(|r| {
                        if r.wall_seconds > 0.0 {
                            r.events as f64 / r.wall_seconds
                        } else {
                            f64::NAN
                        }
                    })
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
            value.push(row.value);
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
    for r in records {
        for q in &r.requests {
            run_id.push(r.run_id.as_str());
            request_id.push(q.request_id);
            source.push(exp.scenario.sources[q.source as usize].name.as_str());
            seq.push(q.seq);
            arrival.push(q.arrival.0);
            start.push(q.start.map(|t| t.0));
            end.push(q.end.map(|t| t.0));
            outcome.push(q.outcome.map_or("in_flight", |o| o.kind_name()));
            reason.push(q.outcome.and_then(|o| o.reason()).map(|r| r.name()));
            measured.push(q.arrival.0 >= warmup);
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
        ],
    )
}

/// Writes all result files of an experiment; returns the folder.
pub fn write_all(
    out_root: &Path,
    exp: &Experiment,
    records: &[RunRecord],
) -> PolarsResult<PathBuf> {
    let dir = out_root.join(&exp.name);
    write_parquet(&dir, "runs.parquet", &mut runs_frame(exp, records)?)?;
    write_parquet(&dir, "timeseries.parquet", &mut timeseries_frame(records)?)?;
    write_parquet(&dir, "timings.parquet", &mut timings_frame(records)?)?;
    if exp.outputs.requests {
        write_parquet(&dir, "requests.parquet", &mut requests_frame(exp, records)?)?;
    }
    Ok(dir)
}

/// Reads `runs.parquet` of a results folder.
pub fn load(dir: impl AsRef<Path>) -> PolarsResult<DataFrame> {
    scan(dir, "runs.parquet")?.collect()
}

/// Lazily scans one table (`runs.parquet`, `timeseries.parquet`, `timings.parquet`).
pub fn scan(dir: impl AsRef<Path>, table: &str) -> PolarsResult<LazyFrame> {
    let p = dir.as_ref().join(table);
    let path =
        p.to_str().ok_or_else(|| polars_err!(ComputeError: "non-UTF-8 path {}", p.display()))?;
    LazyFrame::scan_parquet(PlRefPath::new(path), ScanArgsParquet::default())
}
