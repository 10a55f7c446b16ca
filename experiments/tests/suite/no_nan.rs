//! No NaN in any results table: a statistic of an empty set (the latency of a class no
//! request belongs to, the mean batch of a GPU server that made no step, TTFT without a
//! stream) is null, as `docs/results.md` says. Every bundled experiment, shortened, one
//! run per variant × sweep point.

use experiments::experiment::RunDefaults;
use experiments::results::{runs_frame, timeseries_frame, timings_frame};
use experiments::runner::run_one;
use polars::prelude::*;
use sim_core::SimDuration;
use std::path::Path;

fn nan_columns(df: &DataFrame) -> Vec<String> {
    df.columns()
        .iter()
        .filter(|c| c.dtype() == &DataType::Float64)
        .filter(|c| c.f64().unwrap().iter().any(|v| v.is_some_and(f64::is_nan)))
        .map(|c| c.name().to_string())
        .collect()
}

#[test]
fn bundled_experiments_write_no_nan() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    let mut nulls = 0;
    for f in &files {
        let mut exp = experiments::load(f, &RunDefaults::default()).unwrap();
        // Short runs: what matters is which sets are empty, not their sizes.
        exp.duration = SimDuration::from_secs(10);
        exp.warmup = SimDuration::ZERO;
        exp.sample_every = Some(SimDuration::from_secs(1));
        let first_seed = exp.runs[0].seed;
        let records: Vec<_> = exp
            .runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.seed == first_seed)
            .map(|(i, r)| run_one(&exp, i, r))
            .collect();
        let runs = runs_frame(&exp, &records).unwrap();
        for (name, df) in [
            ("runs", &runs),
            ("timeseries", &timeseries_frame(&records).unwrap()),
            ("timings", &timings_frame(&records).unwrap()),
        ] {
            assert_eq!(nan_columns(df), Vec::<String>::new(), "{}: {name}", f.display());
        }
        nulls += runs
            .columns()
            .iter()
            .filter(|c| c.dtype() == &DataType::Float64)
            .map(|c| c.null_count())
            .sum::<usize>();
    }
    // The bundled scenarios do have empty sets (classes P1 and P2 carry no traffic in
    // most of them): the test would be vacuous otherwise.
    assert!(nulls > 0, "some statistic of an empty set is null");
}
