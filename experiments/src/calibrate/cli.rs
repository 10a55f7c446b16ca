//! `stormglass calibrate LOG` and `stormglass call-log FILE`: the commands, the replay of a
//! calibrated scenario, and the goodness-of-fit report.

use super::fit::Fitted;
use super::log::{self, Call, Columns};
use super::{Calibration, calibrate, gof, scenario};
use crate::experiment::{Experiment, RunDefaults, load_text};
use std::fmt::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Clone, Debug)]
pub struct CalibrateArgs {
    /// The call log (CSV, one row per upstream call, a header line).
    pub log: PathBuf,
    /// Column mapping `field=column,…` over the defaults timestamp=timestamp_s, class=class,
    /// prompt_tokens=prompt_tokens, output_tokens=output_tokens, latency=latency_ms,
    /// status=status (`class=` with nothing: no class column).
    #[arg(long, default_value = "")]
    pub columns: String,
    /// Unit of the timestamp column: s, ms, us, ns.
    #[arg(long, default_value = "s")]
    pub time_unit: String,
    /// Unit of the latency column: s, ms, us, ns.
    #[arg(long, default_value = "ms")]
    pub latency_unit: String,
    /// Steps of the fitted rate profile over the log's span.
    #[arg(long, default_value_t = 10)]
    pub buckets: usize,
    /// Where to write the scenario.
    #[arg(long, default_value = "calibrated.ron")]
    pub out: PathBuf,
    /// The scenario's name.
    #[arg(long, default_value = "calibrated")]
    pub name: String,
    /// Seed of the replay run.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// The log's calls, the fit, the scenario text, and the report (replay included).
pub struct Done {
    pub calls: Vec<Call>,
    pub fit: Calibration,
    pub scenario: String,
    pub replayed: Vec<f64>,
    pub report: String,
}

/// Calibrates, writes the scenario, replays it; `Err` is a message for the user.
pub fn run(a: &CalibrateArgs) -> Result<Done, String> {
    let cols = Columns {
        time_unit: log::unit(&a.time_unit).map_err(|e| format!("--time-unit: {e}"))?,
        latency_unit: log::unit(&a.latency_unit).map_err(|e| format!("--latency-unit: {e}"))?,
        ..Columns::mapped(&a.columns).map_err(|e| format!("--columns: {e}"))?
    };
    if a.buckets == 0 {
        return Err("--buckets: expected at least 1 step, found 0".into());
    }
    let calls = log::read(&a.log, &cols)?;
    let fit = calibrate(&calls, a.buckets).map_err(|e| format!("{}: {e}", a.log.display()))?;
    let text = scenario::ron(&fit, &a.name, &a.log.display().to_string());
    let exp = check(&a.out, &text, fit.arrivals.span)?;
    crate::results::write_text(&a.out, &text)
        .map_err(|e| format!("{}: cannot write: {e}", a.out.display()))?;
    let replayed = replay(&exp, a.seed)?;
    let report = report(&calls, &fit, &replayed, &a.out);
    Ok(Done { calls, fit, scenario: text, replayed, report })
}

/// Loads the scenario text back (every check of a scenario file), to run over `span`.
fn check(path: &Path, text: &str, span: f64) -> Result<Experiment, String> {
    let defaults = RunDefaults {
        duration: sim_core::SimDuration((span.ceil().max(1.0) as u64) * 1_000_000_000),
        sample_every: sim_core::SimDuration::ZERO,
        outputs: crate::experiment::Outputs { requests: true },
        ..RunDefaults::default()
    };
    load_text(path, text, &defaults)
        .map_err(|e| format!("the calibrated scenario does not validate (a bug): {e}"))
}

/// Served latencies (s) of one run of the calibrated scenario, as the log counts them.
fn replay(exp: &Experiment, seed: u64) -> Result<Vec<f64>, String> {
    let sc = &exp.runs[0].scenario;
    let out = models::run(sc, &exp.run_config(seed));
    if let Some(e) = out.error {
        return Err(format!("replaying the calibrated scenario: {e}"));
    }
    let text = super::calllog::csv(sc, &out.requests);
    let calls = log::parse(&text, &Columns::default()).map_err(|e| format!("replay log: {e}"))?;
    Ok(gof::sorted(calls.iter().filter(|c| super::in_regression(c)).filter_map(|c| c.latency)))
}

fn dist(f: &Fitted, unit: &str, scale: f64) -> String {
    format!(
        "{:?}(mean {:.4}{unit}, cv {:.4}); KS D = {:.4} (n = {}, 5% critical {:.4})",
        f.family,
        f.mean * scale,
        f.cv,
        f.ks,
        f.n,
        gof::critical(f.n.max(1), None)
    )
}

/// The goodness-of-fit report.
pub fn report(calls: &[Call], c: &Calibration, replayed: &[f64], out: &Path) -> String {
    let mut t = String::new();
    let a = &c.arrivals;
    let _ = writeln!(
        t,
        "{} calls over {:.1} s; {} served, {} refused (429)",
        a.calls, a.span, c.served, c.refused
    );
    let ms: Vec<String> = a.multipliers.iter().map(|m| format!("{m:.2}")).collect();
    let _ = writeln!(
        t,
        "arrivals: {:.3}/s; profile {} steps of {:.1} s: [{}]",
        a.rate,
        a.multipliers.len(),
        a.bucket,
        ms.join(", ")
    );
    let _ = writeln!(
        t,
        "  rescaled gaps: CV {:.4}, index of dispersion {:.3} (windows of {} expected calls); vs Exponential(1): {}",
        a.gap_cv,
        a.dispersion,
        a.window,
        dist(&a.gaps, "", 1.0).split("; ").nth(1).unwrap_or("")
    );
    let _ = writeln!(t, "  interarrival family: {:?} (cv {:.4})", c.gaps.family, c.gaps.cv);
    for k in &c.classes {
        let _ = writeln!(t, "class {}: share {:.4} ({} calls)", k.name, k.share, k.calls);
        let _ = writeln!(t, "  prompt tokens: {}", dist(&k.prompt, "", 1.0));
        let _ = writeln!(t, "  output tokens: {}", dist(&k.output, "", 1.0));
    }
    let l = &c.latency;
    let _ = writeln!(t, "latency (least squares over {} served calls, R² {:.4}):", l.n, l.r2);
    for (i, name) in
        ["base", "per_prompt_token", "per_output_token", "load_slope"].iter().enumerate()
    {
        let _ = writeln!(
            t,
            "  {name:<17} {:>12.6} ms ± {:.6} (standard error)",
            l.beta[i] * 1e3,
            l.se[i] * 1e3
        );
    }
    let _ = writeln!(t, "  base service: {}", dist(&c.base, " ms", 1e3));
    let _ = writeln!(t, "  most calls in service at once: {}", l.max_load + 1);
    let _ = writeln!(
        t,
        "errors: 5xx {:.4} and business {:.4} of served calls; 429 {:.4} of all",
        c.error_rate, c.business_rate, c.rate_429
    );
    let base = gof::sorted(l.base.iter().copied());
    let _ = writeln!(t, "QQ base service (p: logged ms, fitted ms):");
    let qq: Vec<String> = gof::qq(&base, &|p| c.base.quantile(p))
        .iter()
        .map(|(p, x, y)| format!("{p}: {:.1}, {:.1}", x * 1e3, y * 1e3))
        .collect();
    let _ = writeln!(t, "  {}", qq.join("; "));
    let logged =
        gof::sorted(calls.iter().filter(|c| super::in_regression(c)).filter_map(|c| c.latency));
    let _ = writeln!(
        t,
        "latency replayed vs logged ({} vs {} served calls):",
        replayed.len(),
        logged.len()
    );
    for q in [0.5, 0.9, 0.95, 0.99] {
        let (r, g) = (gof::quantile(replayed, q), gof::quantile(&logged, q));
        let _ = writeln!(
            t,
            "  p{:<3} {:>10.1} ms {:>10.1} ms  ({:+.2}%)",
            (q * 100.0) as u32,
            r * 1e3,
            g * 1e3,
            100.0 * (r - g) / g
        );
    }
    let _ = writeln!(
        t,
        "  KS D = {:.4} (5% critical {:.4})",
        gof::ks2(replayed, &logged),
        gof::critical(replayed.len().max(1), Some(logged.len().max(1)))
    );
    let _ = writeln!(t, "scenario: {}", out.display());
    t
}

/// `stormglass call-log`: one seed of `exp` (its first, or `seed`) as a call log at `out`.
pub fn write_call_log(exp: &Experiment, seed: Option<u64>, out: &Path) -> Result<usize, String> {
    let seed = seed.unwrap_or(exp.seeds[0]);
    let mut cfg = exp.run_config(seed);
    cfg.record_requests = true;
    let sc = &exp.runs[0].scenario;
    let o = models::run(sc, &cfg);
    if let Some(e) = o.error {
        return Err(format!("{}: the run failed: {e}", exp.file.display()));
    }
    let text = super::calllog::csv(sc, &o.requests);
    crate::results::write_text(out, &text)
        .map_err(|e| format!("{}: cannot write: {e}", out.display()))?;
    Ok(text.lines().count() - 1)
}
