//! A run that never finishes — spinning at one instant — under SIGTERM: a second signal, or
//! the grace period after the first, ends it; it is recorded as that run's error row and
//! the batch exits 130, never hangs or crashes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormglass-signals-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One run of a batch flood of 2⁶⁴ − 1 requests into a loss station: every request is
/// refused at once, so the run spins at t = 0 until the same-instant guard's 3.2·10⁸
/// events (minutes of wall time).
fn spinning(dir: &Path) -> PathBuf {
    let f = dir.join("spin.ron");
    std::fs::write(
        &f,
        r#"Experiment(
    name: "spin",
    scenario: Inline(Scenario(
        name: "flood",
        sources: [(name: "flood", interarrival: Constant("0s"), limit: Some(18446744073709551615), target: "c")],
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 2, queue_capacity: Some(0), service: Constant("1ms"))],
    )),
    duration: "1s",
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

fn the_error_row(out: &Path) -> String {
    let df = experiments::results::load(out.join("spin")).unwrap();
    assert_eq!(df.height(), 1, "one run, recorded");
    let status = df.column("status").unwrap().str().unwrap().get(0).unwrap().to_string();
    assert_eq!(status, "error");
    df.column("error").unwrap().str().unwrap().get(0).unwrap().to_string()
}

#[test]
fn a_second_signal_ends_a_spinning_run_as_an_error_row() {
    let out = tmp("twice");
    let (code, err, secs) = interrupt(&out, "600", |pid| {
        term(pid);
        std::thread::sleep(Duration::from_millis(300));
        term(pid);
    });
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("ending the runs in progress now"), "{err}");
    assert!(secs < 30.0, "ended {secs:.1}s after the first signal");
    let e = the_error_row(&out);
    assert!(e.contains("interrupted at t=0s after"), "{e}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn the_grace_period_after_one_signal_ends_a_spinning_run() {
    let out = tmp("grace");
    let (code, err, secs) = interrupt(&out, "1", term);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("runs still going in 1s are ended"), "{err}");
    assert!((1.0..30.0).contains(&secs), "ended {secs:.1}s after the signal");
    assert!(the_error_row(&out).contains("grace period"));
    std::fs::remove_dir_all(&out).unwrap();
}
