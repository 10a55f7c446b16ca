//! One schema across variants and sweeps (docs/results.md, "One schema for every part"):
//! every bundled experiment, shortened to a few seconds and one seed (the column set is a
//! function of the configuration, never of a run's length or luck), written part by part as
//! `stormglass run` writes them; every part of a table has the same columns and types, and
//! `results::scan` reads each table with one row per run in `runs`. Python polars reads
//! the same tables in CI (`scripts/check_schemas.py`).

use experiments::experiment::RunDefaults;
use experiments::results::{self, TABLES};
use experiments::runner::run_one;
use polars::prelude::*;
use sim_core::SimDuration;
use std::path::Path;

/// The schema of every part of `table` under `root`, by part path.
fn part_schemas(root: &Path, table: &str) -> Vec<(String, Schema)> {
    let mut out: Vec<(String, Schema)> = results::parts(root, table)
        .unwrap()
        .into_iter()
        .map(|(_, p)| {
            let df = ParquetReader::new(std::fs::File::open(&p).unwrap()).finish().unwrap();
            (p.display().to_string(), df.schema().as_ref().clone())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn every_part_of_every_bundled_table_has_one_schema() {
    let tmp = std::env::temp_dir().join(format!("stormglass-schema-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let mut structural = 0;
    for entry in experiments::catalog::entries() {
        let path = entry.source_path().expect("tests run in the source tree");
        let mut exp = experiments::load(&path, &RunDefaults::default()).unwrap();
        exp.duration = SimDuration::from_secs(5);
        exp.warmup = SimDuration::ZERO;
        let first_seed = exp.runs[0].seed;
        let root = tmp.join(entry.name);
        let staging = experiments::staging::Staging::create(&root).unwrap();
        let mut ran = 0;
        for (i, r) in exp.runs.iter().enumerate().filter(|(_, r)| r.seed == first_seed) {
            let rec = run_one(&exp, i, r);
            results::write_run(&root, &staging, &exp, 0, &rec).unwrap();
            ran += 1;
        }
        drop(staging);
        for table in TABLES {
            let schemas = part_schemas(&root, table);
            let Some((first, want)) = schemas.first() else { continue };
            for (part, got) in &schemas[1..] {
                assert_eq!(got, want, "{}: {table}: {part} differs from {first}", entry.name);
            }
            let df = results::scan(&root, table).unwrap().collect().unwrap();
            if table == "runs" {
                assert_eq!(df.height(), ran, "{}", entry.name);
            }
        }
        // An experiment whose variants differ in structure: some part holds nulls where
        // another has a component (the test would be vacuous without one).
        let runs = results::load(&root).unwrap();
        let summary_cols = runs.columns().iter().skip(results::RUN_COLUMNS.len());
        if summary_cols.filter(|c| !c.name().starts_with("param.")).any(|c| {
            c.null_count() > 0 && c.null_count() < c.len() && c.dtype() == &DataType::UInt64
        }) {
            structural += 1;
        }
    }
    std::fs::remove_dir_all(&tmp).unwrap();
    assert!(structural >= 3, "{structural} bundled experiments with structural variants");
}
