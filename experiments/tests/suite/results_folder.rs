//! The results folder as a contract, end to end with the `stormglass` binary: no run is
//! lost, mixed in or mislabelled, whatever was in the folder before, whoever else writes
//! into it, and wherever a batch is killed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormglass-rf-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn stormglass() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stormglass"))
}

/// An experiment named `x`: a gated M/M/8, `servers` servers, the gate's permits swept over
/// `values`, seeds `seeds`, `duration` long.
fn experiment(
    dir: &Path,
    file: &str,
    servers: u32,
    values: &str,
    seeds: &str,
    duration: &str,
) -> PathBuf {
    let f = dir.join(file);
    std::fs::write(
        &f,
        format!(
            r#"Experiment(
    name: "x",
    scenario: Inline(Scenario(
        name: "s",
        sources: [(name: "chat", interarrival: Exponential(mean: "10ms"), target: "call")],
        gates: [(name: "g", permits: 4, acquire_timeout: "100ms")],
        call_sites: [(name: "call", governors: [Gate("g")], upstream: "llm")],
        stations: [(name: "llm", servers: {servers}, service: Exponential(mean: "50ms"))],
    )),
    duration: "{duration}",
    seeds: {seeds},
    sweep: [Grid(path: "gate.g.permits", values: [{values}])],
)"#
        ),
    )
    .unwrap();
    f
}

fn run(file: &Path, out: &Path, extra: &[&str]) -> Output {
    stormglass()
        .arg("run")
        .arg(file)
        .args(["--progress", "none", "--jobs", "2", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Run ids of the parts of one table (all shards).
fn part_ids(root: &Path, table: &str) -> BTreeSet<String> {
    experiments::results::parts(root, table).unwrap().into_iter().map(|p| p.0).collect()
}

/// Run ids `manifest.ron` lists.
fn manifest_ids(root: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root.join("manifest.ron")).unwrap();
    text.split("run_id: \"").skip(1).map(|s| s[..16].to_string()).collect()
}

/// (point, runs, param) rows of summary.parquet.
fn summary_rows(root: &Path) -> Vec<(u64, u64, u64)> {
    use polars::prelude::*;
    let f = std::fs::File::open(root.join("summary.parquet")).unwrap();
    let df = ParquetReader::new(f).finish().unwrap();
    let u = |c: &str| -> Vec<u64> {
        df.column(c)
            .unwrap()
            .cast(&DataType::UInt64)
            .unwrap()
            .u64()
            .unwrap()
            .into_no_null_iter()
            .collect()
    };
    let (p, r, v) = (u("point"), u("runs"), u("param.gate.g.permits"));
    (0..df.height()).map(|i| (p[i], r[i], v[i])).collect()
}

/// Editing an experiment and running it into the same folder never mixes the old runs in:
/// without `--overwrite` the command refuses; with it nothing of the old batch is left and
/// the summary counts exactly the runs of the manifest.
#[test]
fn an_edited_experiment_never_mixes_in_the_old_runs() {
    let dir = tmp("edited");
    let a = experiment(&dir, "a.ron", 8, "4, 8", "List([7, 9])", "5s");
    let b = experiment(&dir, "b.ron", 9, "4, 8", "List([7, 9])", "5s");
    let out = dir.join("out");
    let root = out.join("x");
    ok(&run(&a, &out, &[]));
    let old = part_ids(&root, "runs");
    for extra in [&[][..], &["--resume"][..]] {
        let o = run(&b, &out, extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("belong to runs this plan does not list"), "{err}");
    }
    ok(&run(&b, &out, &["--overwrite"]));
    let want = manifest_ids(&root);
    assert_eq!(want.len(), 4);
    for t in ["runs", "timeseries", "events", "timings"] {
        assert_eq!(part_ids(&root, t), want, "{t}: exactly the manifest's runs");
    }
    assert!(old.is_disjoint(&want), "the edit changed every run id");
    assert_eq!(summary_rows(&root), [(0, 2, 4), (1, 2, 8)], "two runs per point, as planned");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--resume` after an edit of the sweep: a dropped point's runs refuse the batch (or go
/// with `--overwrite`); runs that kept their id but moved in the plan are written again
/// with their new labels, so no two points share a `point`.
#[test]
fn resume_after_an_edited_sweep_never_shows_two_points_as_one() {
    let dir = tmp("resume-edit");
    let out = dir.join("out");
    let root = out.join("x");
    ok(&run(&experiment(&dir, "a.ron", 8, "4, 8", "List([7, 9])", "5s"), &out, &[]));
    // A new value in front: 4 and 8 keep their run ids but become points 1 and 2.
    let b = experiment(&dir, "b.ron", 8, "2, 4, 8", "List([7, 9])", "5s");
    ok(&run(&b, &out, &["--resume"]));
    assert_eq!(summary_rows(&root), [(0, 2, 2), (1, 2, 4), (2, 2, 8)]);
    let runs = experiments::results::load(&root).unwrap();
    let points: Vec<u64> =
        runs.column("point").unwrap().u64().unwrap().into_no_null_iter().collect();
    assert_eq!(points, [0, 0, 1, 1, 2, 2], "every part carries its current point");
    // Dropping a point: its runs are not in the plan.
    let c = experiment(&dir, "c.ron", 8, "8, 16", "List([7, 9])", "5s");
    let o = run(&c, &out, &["--resume"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    ok(&run(&c, &out, &["--overwrite"]));
    assert_eq!(summary_rows(&root), [(0, 2, 8), (1, 2, 16)]);
    assert_eq!(part_ids(&root, "runs"), manifest_ids(&root));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Another process's staging folder (held by its lock) survives a `run` into the same
/// folder; a dead one (its lock free) is removed.
#[test]
fn a_run_removes_only_dead_temporaries() {
    let dir = tmp("staging");
    let f = experiment(&dir, "a.ron", 8, "4", "List([1])", "2s");
    let root = dir.join("out/x");
    std::fs::create_dir_all(&root).unwrap();
    let live = experiments::staging::Staging::create(&root).unwrap();
    std::fs::write(live.dir().join("runs-0000000000000000.parquet"), b"half").unwrap();
    let dead = root.join(".staging/1-1");
    std::fs::create_dir_all(&dead).unwrap();
    std::fs::write(dead.join("runs-1111111111111111.parquet"), b"half").unwrap();
    std::fs::write(root.join(".staging/1-1.lock"), b"").unwrap();
    ok(&run(&f, &dir.join("out"), &[]));
    assert!(
        live.dir().join("runs-0000000000000000.parquet").exists(),
        "a live shard's file is kept"
    );
    assert!(!dead.exists(), "a dead process's files are removed");
    drop(live);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two shards writing into one folder at the same time: both succeed and every planned
/// run is there once.
#[test]
fn concurrent_shards_into_one_folder() {
    let dir = tmp("shards");
    let f = experiment(&dir, "a.ron", 8, "4, 8", "Range(0, 8)", "20s");
    let out = dir.join("out");
    let spawn = |s: &str| {
        stormglass()
            .arg("run")
            .arg(&f)
            .args(["--progress", "none", "--jobs", "1", "--shard", s, "--out"])
            .arg(&out)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("0/2"), spawn("1/2"));
    ok(&a.wait_with_output().unwrap());
    ok(&b.wait_with_output().unwrap());
    let root = out.join("x");
    let want = manifest_ids(&root);
    assert_eq!(want.len(), 16);
    for t in ["runs", "timeseries", "events", "timings"] {
        assert_eq!(part_ids(&root, t), want, "{t}");
    }
    assert_eq!(experiments::results::parts(&root, "runs").unwrap().len(), 16, "each run once");
    assert!(!root.join(".staging").exists(), "both staging folders are gone");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Python with polars, if this machine has it (the documented way to read results).
fn python_polars() -> bool {
    Command::new("python3").args(["-c", "import polars"]).output().is_ok_and(|o| o.status.success())
}

/// Every table that has a part reads with polars, from Rust and (when installed) Python.
fn every_table_reads(root: &Path) {
    for t in experiments::results::TABLES {
        if experiments::results::parts(root, t).unwrap().is_empty() {
            continue; // no run finished yet: the table does not exist
        }
        let df = experiments::results::scan(root, t).and_then(|l| l.collect());
        assert!(df.is_ok(), "{t}: {:?}", df.err());
        if python_polars() {
            let path = root.join(t);
            let o = Command::new("python3")
                .args([
                    "-c",
                    "import sys, polars as pl; pl.scan_parquet(sys.argv[1] + '/').collect()",
                ])
                .arg(&path)
                .output()
                .unwrap();
            assert!(o.status.success(), "{t}: {}", String::from_utf8_lossy(&o.stderr));
        }
    }
}

/// SIGKILL at many moments of a batch of short runs (writes are a large share of its
/// time): after each kill every table reads with polars, and the batch resumed to the end
/// equals an uninterrupted one.
#[test]
fn a_killed_batch_never_breaks_a_reader() {
    let dir = tmp("kill");
    let f = experiment(&dir, "a.ron", 8, "4, 8", "Range(0, 40)", "1s");
    let (full, killed) = (dir.join("full"), dir.join("killed"));
    ok(&run(&f, &full, &[]));
    let root = killed.join("x");
    // Delays spread over a batch's life (start-up, planning, runs, writes).
    for (k, ms) in [5u64, 30, 60, 90, 120, 170, 230, 300, 380, 470, 560, 700].iter().enumerate() {
        let mut c = stormglass();
        c.arg("run").arg(&f).args(["--progress", "none", "--jobs", "2", "--out"]).arg(&killed);
        if k > 0 {
            c.arg("--resume");
        }
        let mut child = c
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(*ms));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        if root.is_dir() {
            every_table_reads(&root);
        }
    }
    ok(&run(&f, &killed, &["--resume"]));
    every_table_reads(&root);
    let a = experiments::results::load(full.join("x")).unwrap();
    let b = experiments::results::load(&root).unwrap();
    assert!(a.equals_missing(&b), "resumed after 12 kills differs from an uninterrupted batch");
    assert!(!root.join(".staging").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
