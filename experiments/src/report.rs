//! `stormglass report RESULTS_DIR`: an experiment's results as a Markdown table of
//! variants (× sweep points) × the metrics that matter, each the mean over seeds with the
//! half-width of its 95% Student-t interval; optionally the differences against one
//! variant (or against the same variant in another results folder), paired by seed.
//!
//! **Why paired.** Every variant runs the same seeds, and a request's arrival and luck are
//! keyed by (seed, source, sequence, …), never drawn from a shared stream: with the same
//! sources, two variants see the same traffic (common random numbers). The difference of
//! a metric between two variants is therefore computed per seed and its interval is the
//! Student-t interval of those differences (n − 1 degrees of freedom, n = the seeds both
//! ran) — far narrower than comparing two independent intervals when the variants are
//! correlated, and exact in its assumption. A difference whose interval excludes zero is
//! marked `*`.
//!
//! The rows: per class with traffic, goodput (successful non-degraded completions per
//! second of measured time), p50 and p99 latency, failed / rejected / degraded per second
//! by reason; 429s
//! (quotas, GPU servers); amplification (upstream calls ÷ requests) per pipeline source;
//! breaker opens and time open (from `events`: transitions into `OPEN` or `FORCED_OPEN`
//! within the measured window); peak queue per station. A row that is zero in every run is
//! left out, except goodput and latency. Output is a pure function of the results files.

use crate::results;
use polars::prelude::*;
use sim_core::stats::Replications;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One run's values, by metric name.
type Row = BTreeMap<String, f64>;

/// The runs of one variant × sweep point.
struct Group {
    variant: String,
    point: u64,
    label: String,
    /// Seed → the run's metrics.
    runs: BTreeMap<u64, Row>,
}

/// An experiment's results read for reporting.
pub struct Results {
    experiment: String,
    groups: Vec<Group>,
    /// Row names in display order.
    metrics: Vec<(String, String)>,
    planned: usize,
}

fn f64s(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<f64>>> {
    Ok(df.column(name)?.cast(&DataType::Float64)?.f64()?.iter().collect())
}

fn strs(df: &DataFrame, name: &str) -> PolarsResult<Vec<String>> {
    let c = df.column(name)?.cast(&DataType::String)?;
    Ok(c.str()?.iter().map(|s| s.unwrap_or("").to_string()).collect())
}

/// Breaker opens and time open per run, from the events table: `(run_id, component) →
/// (opens, seconds open)` within [warm-up, duration].
fn breaker_times(
    dir: &Path,
    window: &BTreeMap<String, (f64, f64)>,
) -> PolarsResult<BTreeMap<(String, String), (f64, f64)>> {
    let mut out = BTreeMap::new();
    let Ok(lf) = results::scan(dir, "events") else { return Ok(out) };
    let ev = lf
        .filter(col("kind").eq(lit("state_change")))
        .sort(["run_id", "component", "time_s"], Default::default())
        .collect()?;
    let (ids, comps, tos) = (strs(&ev, "run_id")?, strs(&ev, "component")?, strs(&ev, "to")?);
    let times = f64s(&ev, "time_s")?;
    let is_open = |s: &str| s == "OPEN" || s == "FORCED_OPEN";
    // (run, component) → (opens, open seconds, open since)
    let mut state: BTreeMap<(String, String), (f64, f64, Option<f64>)> = BTreeMap::new();
    for i in 0..ev.height() {
        if !(comps[i].starts_with("circuit_breaker.") || comps[i].starts_with("degrade_rule.")) {
            continue;
        }
        let Some(&(w, end)) = window.get(&ids[i]) else { continue };
        let t = times[i].unwrap_or(0.0).clamp(w, end);
        let s = state.entry((ids[i].clone(), comps[i].clone())).or_insert((0.0, 0.0, None));
        match (s.2, is_open(&tos[i])) {
            (None, true) => {
                if times[i].unwrap_or(0.0) >= w {
                    s.0 += 1.0;
                }
                s.2 = Some(t);
            }
            (Some(since), false) => {
                s.1 += t - since;
                s.2 = None;
            }
            _ => {}
        }
    }
    for ((run, comp), (opens, open_s, since)) in state {
        let end = window.get(&run).map_or(0.0, |w| w.1);
        out.insert((run, comp), (opens, open_s + since.map_or(0.0, |s| end - s)));
    }
    Ok(out)
}

/// The class, source and station names of the runs table, in column order.
fn names(cols: &[String], family: &str, suffix: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in cols {
        if let Some(rest) = c.strip_prefix(family).and_then(|r| r.strip_suffix(suffix))
            && !rest.is_empty()
            && !out.iter().any(|o| o == rest)
        {
            out.push(rest.to_string());
        }
    }
    out
}

/// The reasons present as `<prefix>.<kind>_<reason>` columns.
fn reasons(cols: &[String], prefix: &str, kind: &str) -> Vec<String> {
    let p = format!("{prefix}.{kind}_");
    cols.iter().filter_map(|c| c.strip_prefix(&p)).map(str::to_string).collect()
}

/// Reads a results folder.
pub fn read(dir: &Path) -> Result<Results, String> {
    let e = |err: PolarsError| format!("{}: {err}", dir.display());
    let df = results::load(dir).map_err(e)?;
    let planned = df.height();
    let df = df.lazy().filter(col("status").eq(lit("ok"))).collect().map_err(e)?;
    let cols: Vec<String> = df.get_column_names().iter().map(|s| s.to_string()).collect();
    let run_ids = strs(&df, "run_id").map_err(e)?;
    let variants = strs(&df, "variant").map_err(e)?;
    let points = f64s(&df, "point").map_err(e)?;
    let seeds: Vec<u64> = df
        .column("seed")
        .and_then(|c| c.cast(&DataType::UInt64))
        .map_err(e)?
        .u64()
        .map_err(e)?
        .iter()
        .map(|s| s.unwrap_or(0))
        .collect();
    let dur = f64s(&df, "duration_s").map_err(e)?;
    let warm = f64s(&df, "warmup_s").map_err(e)?;
    let experiment = strs(&df, "experiment").map_err(e)?.first().cloned().unwrap_or_default();
    let params: Vec<String> = cols.iter().filter(|c| c.starts_with("param.")).cloned().collect();
    let param_vals: Vec<Vec<String>> = params
        .iter()
        .map(|p| {
            let c = df.column(p)?;
            Ok((0..df.height())
                .map(|i| c.get(i).map(|v| v.to_string()).unwrap_or_default())
                .collect())
        })
        .collect::<PolarsResult<_>>()
        .map_err(e)?;
    let window: BTreeMap<String, (f64, f64)> = (0..df.height())
        .map(|i| (run_ids[i].clone(), (warm[i].unwrap_or(0.0), dur[i].unwrap_or(0.0))))
        .collect();
    let breakers = breaker_times(dir, &window).map_err(e)?;

    // The metric rows: (column or derived name, label).
    let mut metrics: Vec<(String, String)> = Vec::new();
    // Classes without traffic in any run say nothing.
    let active = |c: &str| -> bool {
        f64s(&df, &format!("class.{c}.offered")).is_ok_and(|v| v.iter().flatten().any(|x| *x > 0.0))
    };
    for c in names(&cols, "class.", ".offered").into_iter().filter(|c| active(c)) {
        let p = format!("class.{c}");
        metrics.push((format!("{p}.goodput"), format!("{c} goodput/s")));
        metrics.push((format!("{p}.latency_ms_p50"), format!("{c} p50 ms")));
        metrics.push((format!("{p}.latency_ms_p99"), format!("{c} p99 ms")));
        for kind in ["failed", "rejected", "degraded"] {
            for r in reasons(&cols, &p, kind) {
                metrics.push((format!("{p}.{kind}_{r}"), format!("{c} {kind}/s {r}")));
            }
        }
    }
    for fam in ["quota.", "gpu_server."] {
        for n in names(&cols, fam, ".rejected_429") {
            metrics.push((format!("{fam}{n}.rejected_429"), format!("{fam}{n} 429s/s")));
        }
    }
    for s in names(&cols, "source.", ".amplification") {
        metrics.push((format!("source.{s}.amplification"), format!("{s} amplification")));
    }
    let breaker_names: Vec<String> = names(&cols, "circuit_breaker.", ".state_changes")
        .into_iter()
        .map(|n| format!("circuit_breaker.{n}"))
        .chain(
            names(&cols, "degrade_rule.", ".state_changes")
                .into_iter()
                .map(|n| format!("degrade_rule.{n}")),
        )
        .collect();
    for b in &breaker_names {
        metrics.push((format!("{b}.opens"), format!("{b} opens")));
        metrics.push((format!("{b}.time_open_s"), format!("{b} time open s")));
    }
    for st in names(&cols, "station.", ".peak_queue") {
        metrics.push((format!("station.{st}.peak_queue"), format!("{st} peak queue")));
    }

    let mut groups: Vec<Group> = Vec::new();
    for i in 0..df.height() {
        let point = points[i].unwrap_or(0.0) as u64;
        let measured = dur[i].unwrap_or(0.0) - warm[i].unwrap_or(0.0);
        let mut row = Row::new();
        for (m, _) in &metrics {
            let v = if let Some(class) = m.strip_suffix(".goodput") {
                let s = df
                    .column(&format!("{class}.success"))
                    .ok()
                    .and_then(|c| c.cast(&DataType::Float64).ok()?.f64().ok()?.get(i));
                s.map(|s| s / measured)
            } else if let Some(b) = m.strip_suffix(".opens") {
                Some(breakers.get(&(run_ids[i].clone(), b.to_string())).map_or(0.0, |x| x.0))
            } else if let Some(b) = m.strip_suffix(".time_open_s") {
                Some(breakers.get(&(run_ids[i].clone(), b.to_string())).map_or(0.0, |x| x.1))
            } else {
                let v = df
                    .column(m)
                    .ok()
                    .and_then(|c| c.cast(&DataType::Float64).ok()?.f64().ok()?.get(i));
                // Outcomes by reason as rates, like goodput.
                let rate =
                    m.contains(".failed_") || m.contains(".rejected_") || m.contains(".degraded_");
                if rate { v.map(|v| v / measured) } else { v }
            };
            if let Some(v) = v {
                row.insert(m.clone(), v);
            }
        }
        let g = match groups.iter_mut().find(|g| g.variant == variants[i] && g.point == point) {
            Some(g) => g,
            None => {
                let mut label = variants[i].clone();
                for (p, vals) in params.iter().zip(&param_vals) {
                    if vals[i] != "null" && !vals[i].is_empty() {
                        label.push_str(&format!(
                            " {}={}",
                            p.trim_start_matches("param."),
                            vals[i].trim_matches('"')
                        ));
                    }
                }
                groups.push(Group {
                    variant: variants[i].clone(),
                    point,
                    label,
                    runs: BTreeMap::new(),
                });
                groups.last_mut().expect("pushed")
            }
        };
        g.runs.insert(seeds[i], row);
    }
    // Rows zero everywhere say nothing (goodput and latency always shown).
    metrics.retain(|(m, _)| {
        m.ends_with(".goodput")
            || m.contains(".latency_ms_")
            || groups.iter().any(|g| g.runs.values().any(|r| r.get(m).is_some_and(|v| *v != 0.0)))
    });
    Ok(Results { experiment, groups, metrics, planned })
}

/// A number with three significant digits or so, stable across platforms.
pub(crate) fn num(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let a = x.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn mean_ci(xs: &[f64]) -> Option<(f64, Option<f64>)> {
    let r = Replications::of(xs)?;
    Some((r.mean, r.ci_half_width(0.95)))
}

fn cell(xs: &[f64]) -> String {
    match mean_ci(xs) {
        None => "—".into(),
        Some((m, Some(ci))) => format!("{} ± {}", num(m), num(ci)),
        Some((m, None)) => num(m),
    }
}

fn values(g: &Group, m: &str) -> Vec<f64> {
    g.runs.values().filter_map(|r| r.get(m).copied()).collect()
}

/// Paired-by-seed difference `a − b` of metric `m`: the mean and 95% half-width over the
/// seeds both groups ran, and whether the interval excludes zero.
fn paired(a: &Group, b: &Group, m: &str) -> String {
    let d: Vec<f64> =
        a.runs.iter().filter_map(|(s, r)| Some(r.get(m)? - b.runs.get(s)?.get(m)?)).collect();
    match mean_ci(&d) {
        None => "—".into(),
        Some((mean, Some(ci))) => {
            let star = if mean.abs() > ci { " *" } else { "" };
            format!("{}{} ± {}{star}", if mean >= 0.0 { "+" } else { "" }, num(mean), num(ci))
        }
        Some((mean, None)) => {
            format!("{}{} (n = 1)", if mean >= 0.0 { "+" } else { "" }, num(mean))
        }
    }
}

fn table(header: &[String], rows: Vec<(String, Vec<String>)>) -> String {
    let mut out =
        format!("| metric | {} |\n|---|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for (label, cells) in rows {
        out.push_str(&format!("| {label} | {} |\n", cells.join(" | ")));
    }
    out
}

/// What to compare with.
pub enum Against<'a> {
    /// Another variant of the same results (matched by sweep point).
    Variant(&'a str),
    /// The same variants and sweep points in another results folder.
    Results(&'a Results),
}

/// The report as Markdown.
pub fn markdown(r: &Results, against: Option<Against<'_>>) -> Result<String, String> {
    let ok: usize = r.groups.iter().map(|g| g.runs.len()).sum();
    let mut out = format!(
        "## {}\n\n{ok} of {} runs ok. Each cell: mean ± half-width of the 95% Student-t interval over seeds; per-second figures per second of measured time (duration − warm-up); goodput = successful, non-degraded completions.\n\n",
        r.experiment, r.planned
    );
    let header: Vec<String> = r.groups.iter().map(|g| g.label.clone()).collect();
    let rows = r
        .metrics
        .iter()
        .map(|(m, label)| (label.clone(), r.groups.iter().map(|g| cell(&values(g, m))).collect()))
        .collect();
    out.push_str(&table(&header, rows));
    let pairs: Vec<(&Group, &Group)> = match against {
        None => return Ok(out),
        Some(Against::Variant(v)) => {
            if !r.groups.iter().any(|g| g.variant == v) {
                let known: BTreeSet<&str> = r.groups.iter().map(|g| g.variant.as_str()).collect();
                return Err(format!(
                    "--against: no variant \"{v}\" in these results (variants: {})",
                    known.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
            out.push_str(&format!("\n### Differences against `{v}` (paired by seed)\n\n"));
            r.groups
                .iter()
                .filter(|g| g.variant != v)
                .filter_map(|g| {
                    let b = r.groups.iter().find(|b| b.variant == v && b.point == g.point)?;
                    Some((g, b))
                })
                .collect()
        }
        Some(Against::Results(other)) => {
            out.push_str(&format!(
                "\n### Differences against `{}` (same variant and sweep point, paired by seed)\n\n",
                other.experiment
            ));
            r.groups
                .iter()
                .filter_map(|g| {
                    let b = other
                        .groups
                        .iter()
                        .find(|b| b.variant == g.variant && b.point == g.point)?;
                    Some((g, b))
                })
                .collect()
        }
    };
    if pairs.is_empty() {
        return Err("nothing to compare: no variant × sweep point in common".into());
    }
    out.push_str("Each cell: mean of the per-seed differences ± half-width of their 95% Student-t interval (seeds are common random numbers); `*`: the interval excludes 0.\n\n");
    let header: Vec<String> =
        pairs.iter().map(|(a, b)| format!("{} − {}", a.label, b.label)).collect();
    let rows = r
        .metrics
        .iter()
        .map(|(m, label)| (label.clone(), pairs.iter().map(|(a, b)| paired(a, b, m)).collect()))
        .collect();
    out.push_str(&table(&header, rows));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(v: &str, xs: &[(u64, f64)]) -> Group {
        Group {
            variant: v.into(),
            point: 0,
            label: v.into(),
            runs: xs.iter().map(|&(s, x)| (s, Row::from([("m".to_string(), x)]))).collect(),
        }
    }

    #[test]
    fn paired_differences_use_common_seeds() {
        // Differences 1, 2, 3 (seed 4 only in `a`): mean 2, sd 1, t(0.975, 2) = 4.303 →
        // half-width 4.303 / √3 = 2.484: the interval [−0.48, 4.48] contains 0.
        let a = group("a", &[(1, 11.0), (2, 22.0), (3, 33.0), (4, 99.0)]);
        let b = group("b", &[(1, 10.0), (2, 20.0), (3, 30.0)]);
        assert_eq!(paired(&a, &b, "m"), "+2.00 ± 2.48");
        // Differences 10, 10.1, 9.9: the interval excludes 0.
        let c = group("c", &[(1, 20.0), (2, 30.1), (3, 39.9)]);
        assert_eq!(paired(&c, &b, "m"), "+10.0 ± 0.248 *");
        assert_eq!(paired(&b, &group("d", &[(9, 1.0)]), "m"), "—");
    }

    #[test]
    fn numbers_keep_three_digits() {
        assert_eq!(num(1234.4), "1234");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(1.2345), "1.23");
        assert_eq!(num(0.012345), "0.012");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(f64::NAN), "n/a");
    }
}
