//! The `stormglass` binary end to end: the README's run command and error exits.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Temporary files anywhere below `root` (none may survive a run).
fn leftovers(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if e.file_name().to_string_lossy().starts_with('.') {
                out.push(e.path());
            }
        }
    }
    out
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormglass-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A 12-run batch whose runs take a noticeable time each (for interruption tests).
fn slow_batch(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let f = dir.join("slow.ron");
    std::fs::write(
        &f,
        r#"Experiment(
    name: "slow",
    scenario: Inline(Scenario(
        name: "mm8",
        sources: [(name: "in", interarrival: Exponential(mean: "1ms"), target: "site")],
        call_sites: [(name: "site", upstream: "st")],
        stations: [(name: "st", servers: 8, service: Exponential(mean: "7ms"))],
    )),
    duration: "3m",
    sample_every: "1s",
    seeds: Range(0, 12),
)"#,
    )
    .unwrap();
    f
}

fn stormglass() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stormglass"))
}

#[test]
fn quickstart_runs_and_writes_results() {
    let out = tmp("quickstart");
    let o = stormglass()
        .args(["run", "quickstart", "--progress", "none", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("default  (5 runs; means over seeds ± 95% CI"), "{stdout}");
    assert!(stdout.contains("goodput/s") && stdout.contains("in flight at end"), "{stdout}");
    assert!(!stdout.contains("warning:"), "a healthy run warns of nothing: {stdout}");
    let root = out.join("quickstart");
    for t in ["runs", "timings", "timeseries", "events"] {
        let n = std::fs::read_dir(root.join(t).join("shard=0")).unwrap().count();
        assert_eq!(n, 5, "{t}: one part per run");
    }
    for f in ["manifest.ron", "experiment.ron", "summary.parquet"] {
        assert!(root.join(f).is_file(), "{f} written");
    }
    assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
    // Each run's fingerprint on stdout, even with `--progress none`: one line per run.
    let runs = experiments::results::load(&root).unwrap();
    let ids = runs.column("run_id").unwrap().str().unwrap().clone();
    let fps = runs.column("fingerprint").unwrap().str().unwrap().clone();
    for (id, fp) in ids.iter().zip(fps.iter()) {
        let (id, fp) = (id.unwrap(), fp.unwrap());
        assert!(
            stdout.lines().any(|l| l.contains(id) && l.trim_end().ends_with(fp)),
            "run {id}'s fingerprint {fp} in {stdout}"
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
}

/// An overloaded station (10 arrivals/s, 1 served/s): after 60 s ~90% of the requests are
/// still queued, so the summary warns that its p99 counts the answered ones only and
/// quotes the censored p99 and SLA share. A healthy run (quickstart, above) gets no warning.
#[test]
fn a_flood_run_warns_that_latency_counts_survivors_only() {
    let dir = tmp("flood");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("flood.ron");
    std::fs::write(
        &f,
        r#"Experiment(
    name: "flood",
    scenario: Inline(Scenario(
        name: "flood",
        classes: [(name: "chat", sla: "2s")],
        sources: [(name: "in", class: "chat", interarrival: Constant("100ms"), target: "site")],
        call_sites: [(name: "site", upstream: "st")],
        stations: [(name: "st", servers: 1, service: Constant("1s"))],
    )),
    duration: "60s",
)"#,
    )
    .unwrap();
    let o = stormglass()
        .args(["run", "--progress", "none", "--out"])
        .arg(dir.join("out"))
        .arg(&f)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    for want in [
        "warning: source in: ",
        "warning: class chat: ",
        "still in flight at the end",
        "p99 with the in-flight ones at their age",
        "SLA met, certain misses in flight counted",
    ] {
        assert!(stdout.contains(want), "{want:?} in {stdout}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A breaker before a gate in a call site's stack counts the gate's refusals as failures
/// (the default `record_exceptions`): `validate` accepts the file and warns, naming the
/// setting that ignores them; with `ignore_exceptions: ["rejected:gate_full"]` (a variant
/// that sets it) the warning names only the variant that still counts them.
/// The user's trap: 430 calls/s offered to a provider whose concurrency quota of 100 at a
/// 1 s mean service serves 100/s (Little's law): `validate` and `run` say 4.30 ×, and
/// `explain` prints the load table; the variant under capacity is not warned about.
#[test]
fn validate_run_and_explain_weigh_the_offered_load_against_each_limit() {
    let dir = tmp("load-check");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("load.ron");
    std::fs::write(
        &f,
        r#"Experiment(name: "load", duration: "2s", seeds: Range(0, 1),
    scenario: Inline(Scenario(name: "load",
        sources: [(name: "s", interarrival: Poisson(rate: "430/s"), target: "llm")],
        quotas: [(name: "provider", max_concurrency: Some(100))],
        call_sites: [(name: "llm", upstream: "provider")],
        stations: [(name: "provider", servers: 1000, service: Constant("1s"), quota: "provider")],
    )),
    variants: [(name: "flood"), (name: "calm", set: [(path: "source.s.interarrival", value: Poisson(rate: "50/s"))])])"#,
    )
    .unwrap();
    let want = "call site \"llm\" is offered 430.0 calls/s at its sources' peak, 4.30 × what quota.provider can serve (100.0/s: 100 concurrent / 1000 ms mean hold)";
    let o = stormglass().arg("validate").arg(&f).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    let warnings: Vec<&str> = out.lines().filter(|l| l.contains("load check")).collect();
    assert_eq!(warnings.len(), 1, "{out}");
    assert!(warnings[0].contains(want) && warnings[0].ends_with("(variants flood)"), "{out}");
    let run = dir.join("out");
    let o = stormglass()
        .args(["run", "--progress", "none", "--out"])
        .arg(&run)
        .arg(&f)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains(want), "{err}");
    let o = stormglass().arg("explain").arg(&f).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    for row in [
        "llm        430.0      quota.provider    100.0     4.30  over",
        "load check (variants calm)",
    ] {
        assert!(out.contains(row), "{row:?} in {out}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn validate_warns_when_a_breaker_counts_a_gate_s_refusals() {
    let dir = tmp("breaker-warning");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("trap.ron");
    let scenario = |ignore: &str| {
        format!(
            r#"Inline(Scenario(name: "trap",
        sources: [(name: "s", interarrival: Exponential(mean: "10ms"), target: "site")],
        gates: [(name: "g", permits: 4)],
        circuit_breakers: [(name: "b"{ignore})],
        call_sites: [(name: "site", governors: [CircuitBreaker("b"), Gate("g")], upstream: "st")],
        stations: [(name: "st", servers: 8, service: Constant("50ms"))],
    ))"#
        )
    };
    let text = format!(
        r#"Experiment(name: "trap", scenario: {}, duration: "10s",
    variants: [(name: "default"), (name: "ignoring", scenario: Some({}))])"#,
        scenario(""),
        scenario(r#", ignore_exceptions: ["rejected:gate_full"]"#)
    );
    std::fs::write(&f, text).unwrap();
    let o = stormglass().arg("validate").arg(&f).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    // (The gate's 4 permits / 50 ms = 80/s under 100/s offered also has its load warning.)
    let warnings: Vec<&str> = out.lines().filter(|l| l.contains("counts the refusals")).collect();
    assert_eq!(warnings.len(), 1, "{out}");
    for want in [
        "circuit_breaker.b counts the refusals of gate.g",
        "ignore_exceptions",
        "\"rejected:gate_full\"",
        "(variants default)",
    ] {
        assert!(warnings[0].contains(want), "{want:?} in {out}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_exits_2_with_the_position() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bad_input/zero_servers.ron");
    let o = stormglass().args(["validate", dir]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "zero_servers.ron:8:43: scenario.stations[0].servers: expected an integer in [1, 1000000], found 0"
        ),
        "{err}"
    );
    let o = stormglass().args(["run", "no-such-thing"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("no such file, and no bundled scenario of that name")
    );
}

#[test]
fn explain_lists_parameters_and_runs() {
    let o = stormglass().args(["explain", "quickstart"]).output().unwrap();
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("station.provider.servers"), "{s}");
    assert!(s.contains("runs (5):"), "{s}");
}

/// A run that panics becomes an error row; the other runs finish; the exit code says so.
#[test]
fn a_panicking_run_is_recorded_and_the_batch_goes_on() {
    let out = tmp("panic");
    let o = stormglass()
        .args(["run", "quickstart", "--progress", "log", "--out"])
        .arg(&out)
        .env("STORMGLASS_TEST_PANIC_SEED", "2")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = experiments::results::load(out.join("quickstart")).unwrap();
    assert_eq!(runs.height(), 5);
    let status: Vec<String> = runs
        .column("status")
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|s| s.unwrap().to_string())
        .collect();
    assert_eq!(status, ["ok", "ok", "error", "ok", "ok"]);
    let err = runs.column("error").unwrap().str().unwrap().get(2).unwrap().to_string();
    assert!(err.contains("panicked: injected test fault"), "{err}");
    std::fs::remove_dir_all(&out).unwrap();
}

/// SIGINT mid-batch leaves only complete files; `--resume` finishes the batch, and the
/// result equals an uninterrupted batch.
#[test]
fn interrupted_batch_resumes_to_the_same_results() {
    let dir = tmp("resume");
    let file = slow_batch(&dir);
    let (a, b) = (dir.join("a"), dir.join("b"));
    let run = |out: &Path, extra: &[&str]| {
        stormglass()
            .arg("run")
            .arg(&file)
            .args(["--jobs", "1", "--progress", "none", "--out"])
            .arg(out)
            .args(extra)
            .output()
            .unwrap()
    };
    assert!(run(&a, &[]).status.success());
    // Interrupted batch: start, wait for the first runs, send SIGINT.
    let child = stormglass()
        .arg("run")
        .arg(&file)
        .args(["--jobs", "1", "--progress", "none", "--out"])
        .arg(&b)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let parts = b.join("slow/runs/shard=0");
    let t0 = std::time::Instant::now();
    while std::fs::read_dir(&parts).map(|d| d.count()).unwrap_or(0) < 2 {
        assert!(t0.elapsed().as_secs() < 120, "no run finished in 2 minutes");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("rerun the same command with --resume"), "{err}");
    let done = std::fs::read_dir(&parts).unwrap().count();
    assert!(done < 12, "interrupted before the end ({done} runs)");
    assert!(leftovers(&b).is_empty(), "{:?}", leftovers(&b));
    // Without --resume the command refuses to mix old and new results.
    let o = run(&b, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("add --resume"));
    let o = run(&b, &["--resume"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let la = experiments::results::load(a.join("slow")).unwrap();
    let lb = experiments::results::load(b.join("slow")).unwrap();
    assert!(la.equals_missing(&lb), "resumed batch differs from an uninterrupted one");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--shard auto/N` reads Slurm's 1-based array ids and Kubernetes' completion index.
#[test]
fn shard_auto_reads_slurm_and_kubernetes() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_MIN", "1")], "shard 0/2 has 3"),
        (&[("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_MIN", "1")], "shard 1/2 has 2"),
        (&[("JOB_COMPLETION_INDEX", "1")], "shard 1/2 has 2"),
    ];
    for (env, want) in cases {
        let out = tmp("auto");
        let mut c = stormglass();
        c.args(["run", "quickstart", "--progress", "none", "--shard", "auto/2", "--out"]).arg(&out);
        c.env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("SLURM_ARRAY_TASK_MIN")
            .env_remove("JOB_COMPLETION_INDEX");
        for (k, v) in *env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{env:?}: {err}");
        assert!(err.contains(want), "{env:?}: {err}");
        std::fs::remove_dir_all(&out).unwrap();
    }
    let o = stormglass()
        .args(["run", "quickstart", "--shard", "auto/2"])
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("auto needs JOB_COMPLETION_INDEX"));
}
