//! The round trip: the simulator writes a call log (`data/calls/sample-calls.csv`, from
//! `experiments/call-log-sample.ron`), `calibrate` fits it, and the fit recovers the
//! generating parameters within tolerances derived from the sample sizes.

use experiments::calibrate::cli::{CalibrateArgs, run, write_call_log};
use experiments::calibrate::fit::Family;
use experiments::experiment::{RunDefaults, load};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormglass-cal-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sample_log() -> PathBuf {
    root().join("../data/calls/sample-calls.csv")
}

/// The shipped log is what the generator writes (seed 0, 6 minutes), byte for byte.
#[test]
fn the_sample_log_is_the_generators() {
    let d = RunDefaults { duration: sim_core::SimDuration::from_secs(360), ..Default::default() };
    let exp = load(&root().join("call-log-sample.ron"), &d).unwrap();
    let dir = tmp("log");
    let out = dir.join("calls.csv");
    let n = write_call_log(&exp, None, &out).unwrap();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(sample_log()).unwrap()
    );
    assert_eq!(n, 5041);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `|got − want| ≤ tol`, with the figures in the message.
fn near(what: &str, got: f64, want: f64, tol: f64) {
    assert!((got - want).abs() <= tol, "{what}: {got} is not within {tol} of {want}");
}

/// Four standard errors of a sample CV from n values: cv·√((1 + 2cv²)/(2n)) (the
/// large-sample standard error of the CV, exact for normal data and close for the
/// moderately skewed laws here).
fn cv_tol(cv: f64, n: usize) -> f64 {
    4.0 * cv * ((1.0 + 2.0 * cv * cv) / (2.0 * n as f64)).sqrt()
}

#[test]
fn calibrating_the_sample_recovers_the_generator() {
    let dir = tmp("fit");
    let args = CalibrateArgs {
        log: sample_log(),
        columns: String::new(),
        time_unit: "s".into(),
        latency_unit: "ms".into(),
        buckets: 6,
        out: dir.join("calibrated.ron"),
        name: "calibrated".into(),
        seed: 0,
    };
    let done = run(&args).unwrap();
    let c = &done.fit;
    let a = &c.arrivals;
    // Rate: 14/s × 360 s ≈ 5,040 Poisson arrivals, relative s.d. 1/√5040 = 1.4%: 4 s.d.
    near("rate", a.rate, 14.0, 4.0 * 14.0 / (a.calls as f64).sqrt());
    // Steps: bucket k holds ~840·m_k calls (relative s.d. 1/√(840 m_k)); the fitted
    // buckets split the log's span (359.1 s, not 360) in six, so their edges drift from the
    // true minute marks by up to 5 s: up to 5/60 of a neighbouring step's jump (≤ 0.4), 0.04.
    for (k, (&got, want)) in a.multipliers.iter().zip([0.6, 1.0, 1.4, 1.2, 0.8, 1.0]).enumerate() {
        near(&format!("step {k}"), got, want, 4.0 * want / (840.0 * want).sqrt() + 0.04);
    }
    // Poisson after the profile: gaps CV 1 ± 4/√n, exponential.
    near("gap cv", a.gap_cv, 1.0, 4.0 / (a.calls as f64).sqrt());
    assert_eq!(c.gaps.family, Family::Exponential);
    assert!(a.gaps.ks < experiments::calibrate::gof::critical(a.gaps.n, None));
    // Classes: shares 10/14 and 4/14, binomial s.d. √(p(1−p)/n).
    let n = a.calls as f64;
    let (p0, p1) = (&c.classes[0], &c.classes[1]);
    assert_eq!((p0.name.as_str(), p1.name.as_str()), ("P0", "P1"));
    let p = 10.0 / 14.0;
    near("P0 share", p0.share, p, 4.0 * (p * (1.0 - p) / n).sqrt());
    // Token sizes: mean within 4 s.e. (σ/√n = mean·cv/√n), CV within cv_tol; on this
    // sample the smallest KS picks each generating family.
    for (what, f, fam, mean, cv) in [
        ("P0 prompt", &p0.prompt, Family::LogNormal, 400.0, 0.8),
        ("P0 output", &p0.output, Family::Gamma, 150.0, 0.6),
        ("P1 prompt", &p1.prompt, Family::LogNormal, 1500.0, 0.5),
        ("P1 output", &p1.output, Family::Exponential, 300.0, 1.0),
    ] {
        assert_eq!(f.family, fam, "{what}");
        near(&format!("{what} mean"), f.mean, mean, 4.0 * mean * cv / (f.n as f64).sqrt());
        near(&format!("{what} cv"), f.cv, cv, cv_tol(cv, f.n));
    }
    // Latency: each least-squares coefficient within 4 of its own standard errors (the
    // base service is independent of tokens and load, so OLS is unbiased).
    let l = &c.latency;
    for (i, want) in [0.300, 50e-6, 4e-3, 10e-3].into_iter().enumerate() {
        near(&format!("beta[{i}]"), l.beta[i], want, 4.0 * l.se[i]);
    }
    near("base cv", c.base.cv, 0.4, cv_tol(0.4, c.base.n));
    assert_eq!(c.base.family, Family::LogNormal);
    // The 30-slot quota: the log saw it full (it has 429s), so the most in service is 30.
    assert!(c.refused > 0);
    assert_eq!(l.max_load + 1, 30);
    // 2% of served calls fail: binomial s.d. √(0.02·0.98/n).
    near("error rate", c.error_rate, 0.02, 4.0 * (0.02 * 0.98 / c.served as f64).sqrt());
    // The replay (seed 0 of the fitted scenario) and the log are samples of one latency
    // law if the fit is right: the two-sample KS statistic stays under its 5% critical value.
    let logged: Vec<f64> = {
        let mut v: Vec<f64> = done
            .calls
            .iter()
            .filter(|k| k.status == 200 || k.status == 500)
            .filter_map(|k| k.latency)
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let d = experiments::calibrate::gof::ks2(&done.replayed, &logged);
    assert!(
        d < experiments::calibrate::gof::critical(done.replayed.len(), Some(logged.len())),
        "{d}\n{}",
        done.report
    );
    assert!(done.scenario.contains("servers: 30, queue_capacity: Some(0), reject_as: Upstream429"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_log_without_the_mapped_column_is_refused() {
    let dir = tmp("bad");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_stormglass"))
        .arg("calibrate")
        .arg(sample_log())
        .args(["--columns", "latency=upstream_ms", "--out"])
        .arg(dir.join("x.ron"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("sample-calls.csv:1: no column named `upstream_ms`; the header has: timestamp_s, class, prompt_tokens, output_tokens, latency_ms, status"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
