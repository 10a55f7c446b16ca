//! `stormglass gpu-model` end to end: the report's format and values, `--fit`, bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

fn gpu_model(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stormglass"))
        .arg("gpu-model")
        .args(args)
        // `--fit` reads data/gpu-profile-h200/ relative to the repository root.
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{:?}\n{}", o.status, String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// The number after `prefix` on the line that starts with it, up to `suffix`.
fn number(text: &str, prefix: &str, suffix: &str) -> f64 {
    let line = text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{text}"));
    let rest = &line[prefix.len()..];
    rest[..rest.find(suffix).unwrap()].trim().parse().unwrap()
}

#[test]
fn prints_the_step_time_and_the_fit_error() {
    let out = stdout(&gpu_model(&["--decode", "64", "--context", "2048", "--prefill", "512"]));
    println!("{out}");
    assert!(out.starts_with("model: shipped coefficients"), "{out}");
    assert!(
        out.contains("step: 64 decode sequences × 2048 cached tokens + prefill chunk of 512 tokens = 576 tokens in one forward pass"),
        "{out}"
    );
    // Measured: decode 64 × 2048 alone 8.88 ms, a 512-token prefill alone 13.57 ms; one
    // mixed pass costs more than either and less than both.
    let mixed = number(&out, "step time: ", " ms");
    assert!((14.0..22.0).contains(&mixed), "{mixed}");
    let separate = number(&out, "  as separate steps: decode ", " ms");
    assert!((8.0..10.0).contains(&separate), "decode alone {separate}");
    // The fit error on the 18 profile rows.
    let line = out.lines().find(|l| l.starts_with("fit error on ")).expect(&out);
    assert!(line.contains("e2e.csv: 18 rows, mean "), "{line}");
    let mean = number(line, &line[..line.find("mean ").unwrap() + 5], "%");
    assert!(mean > 0.0 && mean <= 5.0, "{line}");
    let worst = number(line, &line[..line.find("worst ").unwrap() + 6], "%");
    assert!(worst >= mean && worst <= 12.0, "{line}");
}

#[test]
fn decode_only_matches_the_spec_anchor() {
    let out = stdout(&gpu_model(&["--decode", "256", "--context", "512"]));
    let t = number(&out, "step time: ", " ms");
    assert!((11.8 - t).abs() / 11.8 <= 0.03, "{t} vs the sources' 11.8 ms\n{out}");
    assert!(!out.contains("separate"), "{out}");
    assert!(!out.contains("note:"), "within the profile\n{out}");
    let out = stdout(&gpu_model(&["--decode", "512", "--context", "512"]));
    assert!(out.contains("note: this step is larger than the profiled ones"), "{out}");
}

#[test]
fn refits_on_a_given_profile() {
    let dir = std::env::temp_dir().join(format!("stormglass-gpu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Columns in another order, without `tokens`: mapped by header name.
    let csv = dir.join("profile.csv");
    std::fs::write(
        &csv,
        "ms_median,phase,context,batch\n5,decode,512,1\n6,decode,512,64\n9,decode,2048,64\n\
         14,prefill,512,1\n52,prefill,2048,1\n230,prefill,8192,1\n",
    )
    .unwrap();
    let path = csv.to_str().unwrap();
    let out = stdout(&gpu_model(&["--fit", path, "--decode", "1", "--context", "512"]));
    assert!(out.starts_with(&format!("model: fitted to {path} (6 rows)")), "{out}");
    assert!(out.contains(&format!("fit error on {path}: 6 rows, mean ")), "{out}");
    let t = number(&out, "step time: ", " ms");
    assert!((4.0..6.0).contains(&t), "{t}\n{out}");

    // A bad row: the file, the line and what was expected; exit code 2.
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "phase,batch,context,ms_median\ndecode,1,512,4.7\ndecode,x,512,5\n")
        .unwrap();
    let o = gpu_model(&["--fit", bad.to_str().unwrap(), "--decode", "1", "--context", "512"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "{}:3: batch: expected a whole number ≥ 1, found `x`",
            bad.display()
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_arguments_exit_2_with_a_message() {
    let missing = PathBuf::from("/nonexistent/profile.csv");
    for (args, want) in [
        (vec!["--decode", "8"], "--context"),
        (vec!["--decode", "-1", "--context", "512"], "-1"),
        (vec!["--decode", "many", "--context", "512"], "many"),
        (vec!["--decode", "8", "--context", "512", "--prefill", "0"], "--prefill"),
        (vec!["--decode", "0", "--context", "512"], "empty step"),
        (vec!["--decode", "2000000", "--context", "512"], "2000000"),
        (
            vec!["--fit", missing.to_str().unwrap(), "--decode", "1", "--context", "1"],
            "/nonexistent/profile.csv: cannot read",
        ),
    ] {
        let o = gpu_model(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: `{err}` should mention `{want}`");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}
