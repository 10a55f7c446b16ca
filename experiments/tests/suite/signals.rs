//! A run that does not finish soon under signals, as a user (or a cluster's `timeout`)
//! sends them: a second signal, or the grace period after the first, ends it; it is saved
//! as an `interrupted` row, the manifest says so, the batch exits 130 (never hangs or
//! crashes), and `--resume` runs it again (I17).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormglass-signals-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One run of a stable M/M/1 (1,000 arrivals a simulated second, ρ = 0.5) for 1,000
/// simulated hours: 3.6·10⁹ requests, hours of wall time; no guard stops it.
fn spinning(dir: &Path) -> PathBuf {
    let f = dir.join("spin.ron");
    std::fs::write(
        &f,
        r#"Experiment(
    name: "spin",
    scenario: Inline(Scenario(
        name: "mm1",
        sources: [(name: "in", interarrival: Exponential(mean: "1ms"), target: "c")],
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 1, service: Exponential(mean: "500us"))],
    )),
    duration: "1000h",
    sample_every: "0s",
)"#,
    )
    .unwrap();
    f
}

fn term(pid: u32) {
    assert!(Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
}

/// Starts the batch, waits until its run is under way, applies `signal`, and returns the
/// exit code, stderr and the seconds from the first signal to the exit.
fn interrupt(out: &Path, grace: &str, signal: impl Fn(u32)) -> (Option<i32>, String, f64) {
    let file = spinning(out);
    let mut child = Command::new(env!("CARGO_BIN_EXE_stormglass"))
        .arg("run")
        .arg(&file)
        .args(["--jobs", "1", "--progress", "log", "--out"])
        .arg(out)
        .env("STORMGLASS_GRACE_SECONDS", grace)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The manifest is written just before the runs start.
    let t0 = Instant::now();
    while !out.join("spin/manifest.ron").exists() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the batch did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id();
    let t1 = Instant::now();
    signal(pid);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t1.elapsed() < Duration::from_secs(60), "the batch ignores the signals");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    (status.code(), err, t1.elapsed().as_secs_f64())
}

/// The message of the one run's row, which must say `interrupted` (as its manifest state).
fn the_interrupted_row(out: &Path) -> String {
    let df = experiments::results::load(out.join("spin")).unwrap();
    assert_eq!(df.height(), 1, "one run, recorded");
    let status = df.column("status").unwrap().str().unwrap().get(0).unwrap().to_string();
    assert_eq!(status, "interrupted");
    assert_eq!(states(&out.join("spin")), ["Interrupted"]);
    df.column("error").unwrap().str().unwrap().get(0).unwrap().to_string()
}

/// The `state` of every planned run in `manifest.ron`, in plan order.
fn states(root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root.join("manifest.ron")).unwrap();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("state: "))
        .map(|s| s.trim_end_matches(',').to_string())
        .collect()
}

#[test]
fn a_second_signal_ends_a_long_run_as_an_interrupted_row() {
    let out = tmp("twice");
    let (code, err, secs) = interrupt(&out, "600", |pid| {
        term(pid);
        std::thread::sleep(Duration::from_millis(300));
        term(pid);
    });
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("ending the runs in progress now"), "{err}");
    assert!(secs < 30.0, "ended {secs:.1}s after the first signal");
    let e = the_interrupted_row(&out);
    assert!(e.contains("interrupted at t="), "{e}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn the_grace_period_after_one_signal_ends_a_long_run() {
    let out = tmp("grace");
    let (code, err, secs) = interrupt(&out, "1", term);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("runs still going in 1s are ended"), "{err}");
    assert!((1.0..30.0).contains(&secs), "ended {secs:.1}s after the signal");
    assert!(the_interrupted_row(&out).contains("grace period"));
    std::fs::remove_dir_all(&out).unwrap();
}

/// Two runs, in plan order: `quick` (a few hundred requests, milliseconds) and `long`
/// (an M/M/1 at 100,000 arrivals a simulated second for 120 s: 1.2·10⁷ requests,
/// several seconds of wall time even on a fast machine).
fn quick_and_long(dir: &Path) -> PathBuf {
    let f = dir.join("two.ron");
    std::fs::write(
        &f,
        r#"Experiment(
    name: "two",
    scenario: Inline(Scenario(
        name: "mm1",
        sources: [(name: "in", interarrival: Exponential(mean: "10us"), target: "c")],
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 1, service: Exponential(mean: "5us"))],
    )),
    duration: "120s",
    sample_every: "1s",
    variants: [
        (name: "quick", set: [(path: "source.in.interarrival", value: Exponential(mean: "100ms"))]),
        (name: "long"),
    ],
)"#,
    )
    .unwrap();
    f
}

fn stormglass_run(file: &Path, out: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stormglass"));
    c.arg("run").arg(file).args(["--jobs", "1", "--progress", "log", "--out"]).arg(out);
    c
}

/// Every table's rows of a results folder (wall-clock `timings` left out), for comparison.
fn tables(root: &Path) -> Vec<polars::prelude::DataFrame> {
    use polars::prelude::*;
    ["runs", "timeseries", "events"]
        .iter()
        .map(|t| {
            let df = experiments::results::scan(root, t).unwrap().collect().unwrap();
            let sort: Vec<String> = df.get_column_names().iter().map(|c| c.to_string()).collect();
            df.sort(sort, SortMultipleOptions::default()).unwrap()
        })
        .collect()
}

/// I17: `timeout` sends SIGTERM 3 s into a batch, while its second run is going; the grace
/// period (1 s) ends that run. The batch exits non-zero, the manifest says `Done` for the
/// first run and `Interrupted` for the second, and `--resume` runs every run not done: the
/// folder then equals an uninterrupted batch's, and the summary counts both runs. (Before,
/// the cut run was an `error` row that `--resume` kept: a summary with fewer seeds, exit 0.)
#[test]
fn a_batch_cut_at_the_grace_deadline_resumes_to_an_uninterrupted_one() {
    let dir = tmp("timeout");
    let file = quick_and_long(&dir);
    let (full, cut) = (dir.join("full"), dir.join("cut"));
    let o = stormglass_run(&file, &full).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // As a user or a cluster job would: `timeout` sends SIGTERM; the batch's own exit
    // status is kept (`--preserve-status`).
    let o = Command::new("timeout")
        .args(["--preserve-status", "--signal=TERM", "3", env!("CARGO_BIN_EXE_stormglass")])
        .arg("run")
        .arg(&file)
        .args(["--jobs", "1", "--progress", "log", "--out"])
        .arg(&cut)
        .env("STORMGLASS_GRACE_SECONDS", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("1 cut short"), "{err}");
    let root = cut.join("two");
    assert_eq!(states(&root), ["Done", "Interrupted"], "{err}");
    assert!(!root.join("summary.parquet").exists(), "no summary while a run is interrupted");
    let o = stormglass_run(&file, &cut).arg("--resume").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("1 to run (1 done before)"), "{err}");
    assert_eq!(states(&root), ["Done", "Done"]);
    assert_eq!(tables(&full.join("two")), tables(&root), "resumed ≠ uninterrupted");
    let summary = |r: &Path| {
        use polars::prelude::{ParquetReader, SerReader};
        let f = std::fs::File::open(r.join("summary.parquet")).unwrap();
        ParquetReader::new(f).finish().unwrap()
    };
    assert!(summary(&full.join("two")).equals_missing(&summary(&root)));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A second process on the same shard of one folder is refused at once, naming the folder
/// and the first process; another shard of the same folder is not.
#[test]
fn a_second_process_on_one_shard_is_refused() {
    let dir = tmp("lock");
    let file = spinning(&dir);
    let mut first =
        stormglass_run(&file, &dir).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let t0 = Instant::now();
    while !dir.join("spin/manifest.ron").exists() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the batch did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    for extra in [&[][..], &["--resume"][..], &["--overwrite"][..]] {
        let o = stormglass_run(&file, &dir).args(extra).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(&dir.join("spin").display().to_string()), "{err}");
        assert!(err.contains(&format!("pid {}", first.id())), "{err}");
        assert!(err.contains("shard 0"), "{err}");
    }
    // Another shard runs beside it (shard 1 of 2 has no run of this one-run plan: it ends
    // at once).
    let o = stormglass_run(&file, &dir).args(["--shard", "1/2"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    first.kill().unwrap();
    first.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
