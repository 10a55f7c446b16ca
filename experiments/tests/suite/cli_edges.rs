//! The command line at its edges: flags that cannot apply are refused with the flag
//! named, no panic on a closed pipe.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn stormglass() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stormglass"))
}

fn bad(dir: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/bad_input").join(dir)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormglass-edges-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const BARE: &str = r#"Scenario(
    name: "bare",
    sources: [(name: "chat", interarrival: Exponential(mean: "10ms"), target: "call")],
    call_sites: [(name: "call", upstream: "llm")],
    stations: [(name: "llm", servers: 8, service: Exponential(mean: "50ms"))],
)"#;

/// (args, exit code, text stderr must contain).
#[test]
fn flags_that_cannot_apply_are_refused() {
    let dir = tmp("flags");
    let bare = dir.join("bare.ron");
    std::fs::write(&bare, BARE).unwrap();
    let bare = bare.to_str().unwrap();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["run", "quickstart", "--jobs", "0"],
            2,
            "--jobs: expected at least 1 run in parallel, found 0",
        ),
        (
            &["run", "quickstart", "--duration", "1s"],
            2,
            "--duration applies to a bare scenario file only",
        ),
        (
            &["explain", "quickstart", "--seeds", "1,2"],
            2,
            "--seeds applies to a bare scenario file only",
        ),
        (&["validate"], 2, "required arguments were not provided"),
        (
            &["explain", bare, "--warmup", "20m"],
            2,
            "bare.ron: --warmup: expected a warm-up shorter than the duration \"10m\", found \"20m\"",
        ),
        (
            &["explain", bare, "--sample-every", "1ns"],
            2,
            "bare.ron: --sample-every: expected at most 1000000",
        ),
        (
            &["explain", bare, "--duration", "0s"],
            2,
            "bare.ron: --duration: expected a duration > 0",
        ),
    ];
    for (args, code, want) in cases {
        let o = stormglass().args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `stormglass explain … | head`: the reader goes away after one line; the writer ends
/// quietly instead of panicking on EPIPE.
#[test]
fn explain_into_a_closed_pipe_ends_quietly() {
    let dir = tmp("pipe");
    let f = dir.join("many.ron");
    // 20 000 runs: an explanation far larger than a pipe's buffer.
    std::fs::write(
        &f,
        r#"Experiment(name: "many", duration: "1s", seeds: Range(0, 20000),
            scenario: Inline(Scenario(name: "s",
                sources: [(name: "c", interarrival: Exponential(mean: "10ms"), target: "call")],
                call_sites: [(name: "call", upstream: "llm")],
                stations: [(name: "llm", servers: 1, service: Constant("1ms"))])))"#,
    )
    .unwrap();
    let mut child = stormglass()
        .arg("explain")
        .arg(&f)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("experiment many"), "{first}");
    // The reader is dropped here: the pipe is closed.
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `validate` reports every independent error of a file, one line each.
#[test]
fn validate_reports_every_error_of_a_file() {
    let o = stormglass().arg("validate").arg(bad("three_errors.ron")).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 3, "{err}");
}

/// A trace of 1 GiB + 1 byte (sparse: no disk) is refused from its size before a byte is
/// read, naming its size; reading it first took 6–10 s (issue 32).
#[test]
fn a_trace_over_the_bound_is_refused_before_it_is_read() {
    let dir = std::env::temp_dir().join(format!("stormglass-huge-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("huge.csv");
    let f = std::fs::File::create(&trace).unwrap();
    f.set_len(models::trace::MAX_FILE_BYTES + 1).unwrap();
    let file = dir.join("huge.ron");
    std::fs::write(
        &file,
        r#"Scenario(name: "replay",
    sources: [(name: "t", target: "c", trace: Trace(file: "huge.csv"))],
    call_sites: [(name: "c", upstream: "st")],
    stations: [(name: "st", servers: 4, service: Constant("1ms"))])"#,
    )
    .unwrap();
    let started = std::time::Instant::now();
    let err = experiments::load(&file, &experiments::RunDefaults::default()).unwrap_err();
    let secs = started.elapsed().as_secs_f64();
    let msg = err.to_string();
    assert!(msg.contains("larger than 1073741824 bytes (1073741825 bytes)"), "{msg}");
    assert!(secs < 1.0, "{secs:.2} s");
    std::fs::remove_dir_all(&dir).unwrap();
}
