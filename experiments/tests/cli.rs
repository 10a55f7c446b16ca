//! The `stormglass` binary end to end: the README's run command and error exits.

use std::process::Command;

fn stormglass() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stormglass"))
}

#[test]
fn quickstart_runs_and_writes_results() {
    let out = std::env::temp_dir().join(format!("stormglass-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = stormglass()
        .args(["run", "quickstart", "--progress", "none", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("quickstart: 5/5 runs ok"), "{stdout}");
    for f in ["runs.parquet", "timings.parquet", "timeseries.parquet"] {
        assert!(out.join("quickstart").join(f).is_file(), "{f} written");
    }
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(out.join("quickstart"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn bad_input_exits_2_with_the_position() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bad_input/zero_servers.ron");
    let o = stormglass().args(["validate", dir]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "zero_servers.ron:8:43: scenario.stations[0].servers: expected an integer ≥ 1, found 0"
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
