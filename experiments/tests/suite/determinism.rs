//! Determinism of whole experiments, through the real binary in separate processes:
//! identical rows (and per-run file bytes) across repeats, thread counts and shard splits;
//! distinct fingerprints across seeds; fingerprints independent of sampling; common random
//! numbers across sweep points.

use experiments::results::{load, scan};
use polars::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const EXPERIMENT: &str = r#"Experiment(
    name: "det",
    scenario: Inline(Scenario(
        name: "gated-llm",
        sources: [(name: "chat", interarrival: Gamma(mean: "10ms", cv: 2.0), target: "llm_call")],
        gates: [(name: "llm", permits: 40, acquire_timeout: "300ms")],
        call_sites: [(name: "llm_call", governors: [Gate("llm")], upstream: "llm")],
        stations: [(name: "llm", servers: 48, queue_capacity: Some(50), service: LogNormal(mean: "400ms", cv: 1.0))],
        timeline: [(at: "20s", path: "gate.llm.permits", value: 20)],
    )),
    duration: "40s",
    warmup: "5s",
    sample_every: SAMPLE,
    seeds: Range(0, 3),
    sweep: [Grid(path: "gate.llm.permits", values: [30, 45])],
    outputs: (requests: true),
)"#;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormglass-det-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes the experiment into `dir` and runs the binary with `args`; returns the results folder.
fn run(dir: &Path, sample: &str, args: &[&str]) -> PathBuf {
    let file = dir.join("det.ron");
    std::fs::write(&file, EXPERIMENT.replace("SAMPLE", sample)).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_stormglass"))
        .arg("run")
        .arg(&file)
        .args(["--progress", "none", "--out"])
        .arg(dir.join("out"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    dir.join("out").join("det")
}

fn table(dir: &Path, t: &str, sort: &[&str]) -> DataFrame {
    let df = scan(dir, t).unwrap().collect().unwrap();
    let df = df.drop("shard").unwrap_or(df);
    let by: Vec<String> = sort.iter().map(|s| s.to_string()).collect();
    df.sort(by, SortMultipleOptions::default().with_maintain_order(true)).unwrap()
}

fn assert_same_results(a: &Path, b: &Path) {
    assert!(
        load(a)
            .unwrap()
            .drop("shard")
            .unwrap()
            .equals_missing(&load(b).unwrap().drop("shard").unwrap()),
        "runs differ"
    );
    for (t, sort) in [
        ("timeseries", &["run_id", "bucket_start_s", "metric"][..]),
        ("events", &["run_id", "time_s"][..]),
        ("requests", &["run_id", "request_id"][..]),
    ] {
        assert!(table(a, t, sort).equals_missing(&table(b, t, sort)), "{t} differs");
    }
}

#[test]
fn jobs_and_shards_give_identical_results() {
    let one = run(&tmp("jobs1"), "\"1s\"", &["--jobs", "1"]);
    let two = run(&tmp("jobs2"), "\"1s\"", &["--jobs", "2"]);
    assert_same_results(&one, &two);
    // Per-run files are byte-identical too.
    let runs = load(&one).unwrap();
    let ids: Vec<String> = runs
        .column("run_id")
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|s| s.unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 6);
    for id in &ids {
        for t in ["runs", "timeseries", "events", "requests"] {
            let f = |d: &Path| {
                std::fs::read(d.join(t).join("shard=0").join(format!("{id}.parquet"))).unwrap()
            };
            assert_eq!(f(&one), f(&two), "{t}/{id}");
        }
    }
    // Three shards as three processes into one folder = one process.
    let dir = tmp("shards");
    let mut split = PathBuf::new();
    for i in 0..3 {
        split = run(&dir, "\"1s\"", &["--shard", &format!("{i}/3")]);
    }
    assert_same_results(&one, &split);
    let shards = scan(&split, "runs").unwrap().collect().unwrap();
    let mut s: Vec<i64> = shards
        .column("shard")
        .unwrap()
        .cast(&DataType::Int64)
        .unwrap()
        .i64()
        .unwrap()
        .into_no_null_iter()
        .collect();
    s.sort();
    assert_eq!(s, vec![0, 0, 1, 1, 2, 2], "round-robin over 3 shards, with a hive `shard` column");
    // summary.parquet appears once every shard is in.
    assert!(split.join("summary.parquet").is_file());
}

#[test]
fn fingerprints_differ_by_seed_and_ignore_sampling() {
    let with = load(run(&tmp("s1"), "\"1s\"", &[])).unwrap();
    let without = load(run(&tmp("s0"), "\"0s\"", &[])).unwrap();
    let fp = |df: &DataFrame| -> Vec<String> {
        df.column("fingerprint")
            .unwrap()
            .str()
            .unwrap()
            .iter()
            .map(|s| s.unwrap().to_string())
            .collect()
    };
    assert_eq!(fp(&with), fp(&without), "sampling must not change fingerprints");
    let mut d = fp(&with);
    d.sort();
    d.dedup();
    assert_eq!(d.len(), 6, "every run (2 points × 3 seeds) has its own fingerprint");
}

/// Common random numbers: the same seed at two sweep points meets the same traffic.
#[test]
fn sweep_points_share_traffic() {
    let dir = run(&tmp("crn"), "\"0s\"", &[]);
    let runs = load(&dir).unwrap();
    let req = scan(&dir, "requests").unwrap().collect().unwrap();
    let id_of = |seed: u64, permits: u64| -> String {
        let r = runs
            .clone()
            .lazy()
            .filter(col("seed").eq(lit(seed)).and(col("param.gate.llm.permits").eq(lit(permits))))
            .collect()
            .unwrap();
        r.column("run_id").unwrap().str().unwrap().get(0).unwrap().to_string()
    };
    for seed in 0..3u64 {
        let arrivals = |run: String| -> DataFrame {
            req.clone()
                .lazy()
                .filter(col("run_id").eq(lit(run)))
                .select([col("seq"), col("arrival_ns")])
                .sort(["seq"], Default::default())
                .collect()
                .unwrap()
        };
        let (a, b) = (arrivals(id_of(seed, 30)), arrivals(id_of(seed, 45)));
        assert!(a.height() > 3000);
        assert!(a.equals(&b), "seed {seed}: arrival times differ between sweep points");
        // …and the same luck: a request served at both points has the same service time.
        let service = |run: String| -> DataFrame {
            req.clone()
                .lazy()
                .filter(col("run_id").eq(lit(run)).and(col("outcome").eq(lit("success"))))
                .select([col("seq"), (col("end_ns") - col("start_ns")).alias("service_ns")])
                .collect()
                .unwrap()
        };
        let both = service(id_of(seed, 30))
            .join(&service(id_of(seed, 45)), ["seq"], ["seq"], JoinArgs::new(JoinType::Inner), None)
            .unwrap();
        assert!(both.height() > 1000, "{} requests served at both points", both.height());
        let (x, y) = (both.column("service_ns").unwrap(), both.column("service_ns_right").unwrap());
        assert!(x.equals(y), "seed {seed}: service times differ between sweep points");
    }
    // …while the policy does change outcomes.
    let rejected: Vec<u64> =
        runs.column("source.chat.rejected").unwrap().u64().unwrap().into_no_null_iter().collect();
    assert_ne!(rejected[0], rejected[3]);
}
