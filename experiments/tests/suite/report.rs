//! `stormglass report`, the console summary after a run and `stormglass list`, end to end
//! on a small experiment (`tests/report/tiny.ron`, run here): their outputs must equal the
//! golden files beside it. The outputs are pure functions of the results (deterministic
//! runs), so any difference is a change in the model or in the report; after an intended
//! change, rerun with `STORMGLASS_BLESS=1` and read the diff before committing.

use std::path::{Path, PathBuf};
use std::process::Command;

fn stormglass(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_stormglass")).args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn golden(name: &str, got: &str) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report").join(name);
    if std::env::var_os("STORMGLASS_BLESS").is_some() {
        std::fs::write(&p, got).unwrap();
    }
    let want = std::fs::read_to_string(&p).unwrap_or_default();
    assert_eq!(got, want, "{} differs (STORMGLASS_BLESS=1 rewrites it)", p.display());
}

#[test]
fn report_console_and_list_match_their_golden_files() {
    let out: PathBuf =
        std::env::temp_dir().join(format!("stormglass-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let exp = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report/tiny.ron");
    let console = stormglass(&[
        "run",
        exp.to_str().unwrap(),
        "--progress",
        "none",
        "--jobs",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    // The last line names the (temporary) results folder.
    let console: String =
        console.lines().filter(|l| !l.starts_with("results: ")).map(|l| format!("{l}\n")).collect();
    golden("tiny.console.txt", &console);
    let dir = out.join("tiny");
    golden("tiny.report.md", &stormglass(&["report", dir.to_str().unwrap()]));
    golden(
        "tiny.against.md",
        &stormglass(&["report", dir.to_str().unwrap(), "--against", "failure"]),
    );
    // Against itself in another folder: every difference is exactly zero.
    let same =
        stormglass(&["report", dir.to_str().unwrap(), "--against-results", dir.to_str().unwrap()]);
    assert!(same.contains("+0 ± 0"), "{same}");
    assert!(!same.contains(" *"), "no difference of a folder with itself excludes zero:\n{same}");
    let o = Command::new(env!("CARGO_BIN_EXE_stormglass"))
        .args(["report", dir.to_str().unwrap(), "--against", "nope"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no variant \"nope\""));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn list_groups_every_bundled_experiment() {
    let got = stormglass(&["list"]);
    assert_eq!(got, experiments::catalog::listing());
    assert!(got.starts_with("quick start:\n"), "{got}");
    for e in experiments::catalog::entries() {
        assert!(got.contains(e.name), "{} listed", e.name);
        // Each runs by name: explain resolves it.
        stormglass(&["explain", e.name]);
    }
}

#[test]
fn report_of_a_missing_folder_exits_2() {
    let o = Command::new(env!("CARGO_BIN_EXE_stormglass"))
        .args(["report", "/nonexistent-results-dir"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent-results-dir"));
}
