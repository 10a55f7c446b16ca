//! The console output after a run: each run's fingerprint ([`fingerprints_text`]), then
//! the summary: per variant × sweep point, one line per source
//! and per class that had traffic — offered, goodput, failed / rejected / degraded (with
//! their top reasons), still in flight at the end, p50 and p99 — from `summary.parquet`'s
//! across-seed means (± the 95% half-width where it matters). Rates are per second of
//! measured time (duration − warm-up); goodput counts successful, non-degraded answers.
//! When more than [`IN_FLIGHT_WARN_SHARE`] of a row's measured requests are still in flight
//! at the end, a warning follows the table: its latency and SLA figures describe the
//! survivors only, and the warning quotes the censored ones (`*_with_in_flight`).

use crate::experiment::Experiment;
use crate::report::num;
use crate::runner::RunRecord;
use polars::prelude::*;

/// How many reasons are named after a failed / rejected / degraded rate.
const TOP_REASONS: usize = 2;
/// Share of a row's measured requests still in flight at the end above which the summary
/// warns that its latency and SLA figures count answered requests only.
pub const IN_FLIGHT_WARN_SHARE: f64 = 0.05;

struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    fn render(&self, indent: &str) -> String {
        let cols = self.rows.iter().map(|r| r.len()).max().unwrap_or(0);
        let width: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for r in &self.rows {
            let cells: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(c, s)| format!("{s}{}", " ".repeat(width[c] - s.chars().count())))
                .collect();
            out.push_str(indent);
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        out
    }
}

/// The summary as text (one block per row of `summary`).
pub fn summary_text(exp: &Experiment, summary: &DataFrame) -> String {
    let measured_s = (exp.duration.0 - exp.warmup.0) as f64 / 1e9;
    let names: Vec<String> = summary.get_column_names().iter().map(|s| s.to_string()).collect();
    let get = |col: &str, row: usize| -> Option<f64> {
        summary.column(col).ok()?.cast(&DataType::Float64).ok()?.f64().ok()?.get(row)
    };
    let params: Vec<&String> = names.iter().filter(|n| n.starts_with("param.")).collect();
    let mut out = String::new();
    for row in 0..summary.height() {
        let variant = summary
            .column("variant")
            .ok()
            .and_then(|c| c.str().ok()?.get(row).map(|s| s.to_string()))
            .unwrap_or_default();
        let mut label = variant;
        for p in &params {
            if let Ok(c) = summary.column(p) {
                let v = c.get(row).map(|v| v.to_string()).unwrap_or_default();
                if v != "null" {
                    label.push_str(&format!("  {}={v}", p.trim_start_matches("param.")));
                }
            }
        }
        let runs = get("runs", row).unwrap_or(0.0);
        out.push_str(&format!(
            "{label}  ({runs} runs; means over seeds ± 95% CI; per second of {} s measured)\n",
            num(measured_s)
        ));
        let rate = |prefix: &str, m: &str, with_ci: bool| -> String {
            let mean = get(&format!("{prefix}.{m}.mean"), row);
            let ci = get(&format!("{prefix}.{m}.ci95"), row);
            match (mean, ci) {
                (Some(x), Some(c)) if with_ci && c > 0.0 => {
                    format!("{} ± {}", num(x / measured_s), num(c / measured_s))
                }
                (Some(x), _) => num(x / measured_s),
                _ => "n/a".into(),
            }
        };
        let plain = |prefix: &str, m: &str| -> String {
            let mean = get(&format!("{prefix}.{m}.mean"), row);
            let ci = get(&format!("{prefix}.{m}.ci95"), row);
            match (mean, ci) {
                (Some(x), Some(c)) if c > 0.0 => format!("{} ± {}", num(x), num(c)),
                (Some(x), _) => num(x),
                _ => "n/a".into(),
            }
        };
        // "1.20 (gate_full 1.00, timeout 0.20)"
        let by_reason = |prefix: &str, kind: &str| -> String {
            let total = get(&format!("{prefix}.{kind}.mean"), row).unwrap_or(0.0);
            let head = format!("{prefix}.{kind}_");
            let mut rs: Vec<(f64, String)> = names
                .iter()
                .filter_map(|n| {
                    let reason = n.strip_prefix(&head)?.strip_suffix(".mean")?;
                    let v = get(n, row)?;
                    (v > 0.0).then(|| (v, reason.to_string()))
                })
                .collect();
            rs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let top: Vec<String> = rs
                .iter()
                .take(TOP_REASONS)
                .map(|(v, r)| format!("{r} {}", num(v / measured_s)))
                .collect();
            if top.is_empty() {
                num(total / measured_s)
            } else {
                format!("{} ({})", num(total / measured_s), top.join(", "))
            }
        };
        let mut t = Table {
            rows: vec![
                [
                    "",
                    "offered/s",
                    "goodput/s",
                    "failed/s",
                    "rejected/s",
                    "degraded/s",
                    "in flight at end",
                    "p50 ms",
                    "p99 ms",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            ],
        };
        let scenarios = || exp.variants.iter().map(|v| v.scenario_or(&exp.scenario));
        let sources = scenarios().flat_map(|s| s.sources.iter().map(|s| s.name.clone()));
        let classes = scenarios().flat_map(|s| s.classes.iter().map(|c| c.name.clone()));
        let mut seen: Vec<String> = Vec::new();
        let mut warnings: Vec<String> = Vec::new();
        let all =
            sources.map(|s| format!("source.{s}")).chain(classes.map(|c| format!("class.{c}")));
        for prefix in all {
            if seen.contains(&prefix) {
                continue;
            }
            seen.push(prefix.clone());
            let offered = get(&format!("{prefix}.offered.mean"), row);
            if !offered.is_some_and(|o| o > 0.0) {
                continue; // no traffic (or not in this variant)
            }
            let in_flight = get(&format!("{prefix}.in_flight_end.mean"), row).unwrap_or(0.0);
            let offered = offered.unwrap_or(0.0);
            if in_flight > IN_FLIGHT_WARN_SHARE * offered {
                let mean =
                    |m: &str| get(&format!("{prefix}.{m}.mean"), row).map_or("n/a".into(), num);
                let mut w = format!(
                    "warning: {}: {} of {} measured requests ({}%) still in flight at the end, \
                     the oldest {} ms old; latency and SLA figures count answered requests only \
                     (p99 with the in-flight ones at their age: {} ms",
                    prefix.replacen('.', " ", 1),
                    num(in_flight),
                    num(offered),
                    num(100.0 * in_flight / offered),
                    mean("in_flight_oldest_age_ms"),
                    mean("latency_ms_p99_with_in_flight"),
                );
                if let Some(s) = get(&format!("{prefix}.sla_met_with_in_flight.mean"), row)
                    .filter(|s| !s.is_nan())
                {
                    w.push_str(&format!("; SLA met, certain misses in flight counted: {}", num(s)));
                }
                w.push(')');
                warnings.push(w);
            }
            t.rows.push(vec![
                prefix.replacen('.', " ", 1),
                rate(&prefix, "offered", false),
                rate(&prefix, "success", true),
                by_reason(&prefix, "failed"),
                by_reason(&prefix, "rejected"),
                by_reason(&prefix, "degraded"),
                plain(&prefix, "in_flight_end"),
                plain(&prefix, "latency_ms_p50"),
                plain(&prefix, "latency_ms_p99"),
            ]);
        }
        out.push_str(&t.render("  "));
        for w in warnings {
            out.push_str(&format!("  {w}\n"));
        }
    }
    out
}

/// Each run's fingerprint, one line per run in plan order (run id, variant, point, seed,
/// fingerprint; `-` for a run that panicked): what to compare to tell whether a change of
/// code or input changed a run. Printed on stdout after every `stormglass run`, whatever
/// `--progress` says, so a script reads it from a quiet run (`--progress none`).
pub fn fingerprints_text(records: &[RunRecord]) -> String {
    let mut sorted: Vec<&RunRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.run_index);
    let mut t = Table {
        rows: vec![["run", "variant", "point", "seed", "fingerprint"].map(String::from).to_vec()],
    };
    for r in sorted {
        t.rows.push(vec![
            r.run_id.clone(),
            r.variant.clone(),
            r.point.to_string(),
            r.seed.to_string(),
            r.fingerprint.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    format!("fingerprints:\n{}", t.render("  "))
}

/// The scenario warnings of an experiment's plan (`ScenarioSpec::breaker_warnings`, then
/// `load_warnings`), each
/// once, naming the variants it applies to when not all of them: `validate` prints them
/// after its line, `run` before it starts.
pub fn scenario_warnings(exp: &Experiment) -> Vec<String> {
    let mut found: Vec<(String, Vec<&str>)> = Vec::new();
    let mut last: Option<&models::Scenario> = None;
    for r in &exp.runs {
        if last.is_some_and(|l| std::ptr::eq(l, &*r.scenario)) {
            continue;
        }
        last = Some(&r.scenario);
        for w in r.scenario.breaker_warnings().into_iter().chain(r.scenario.load_warnings()) {
            match found.iter_mut().find(|(f, _)| *f == w) {
                Some((_, vs)) if !vs.contains(&r.variant.as_str()) => vs.push(&r.variant),
                Some(_) => {}
                None => found.push((w, vec![&r.variant])),
            }
        }
    }
    found
        .into_iter()
        .map(|(w, vs)| {
            if vs.len() == exp.variants.len() {
                w
            } else {
                format!("{w} (variants {})", vs.join(", "))
            }
        })
        .collect()
}

/// The load check of each variant (`ScenarioSpec::load_check`): per call site and limit,
/// the first-attempt calls/s offered at the sources' peak against what the limit serves
/// (Little's law for concurrency limits). Variants whose table equals the one before are
/// folded into it. For `explain`.
pub fn load_text(exp: &Experiment) -> String {
    let mut tables: Vec<(Vec<Vec<String>>, Vec<&str>)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for r in &exp.runs {
        if !seen.insert(r.variant.as_str()) {
            continue;
        }
        let rows: Vec<Vec<String>> = r
            .scenario
            .load_check()
            .iter()
            .map(|l| {
                let over = if l.utilisation() > 1.0 + 1e-9 { "  over" } else { "" };
                vec![
                    l.site.clone(),
                    format!("{:.1}", l.offered_per_s),
                    l.limit.clone(),
                    format!("{:.1}", l.capacity_per_s),
                    format!("{:.2}{over}", l.utilisation()),
                    l.basis.clone(),
                ]
            })
            .collect();
        match tables.iter_mut().find(|(t, _)| *t == rows) {
            Some((_, vs)) => vs.push(&r.variant),
            None => tables.push((rows, vec![&r.variant])),
        }
    }
    let mut out = String::new();
    for (rows, variants) in tables {
        out.push_str(&format!("load check (variants {}):\n", variants.join(", ")));
        if rows.is_empty() {
            out.push_str("  no call site with a renewal source's load and a limit to weigh it\n");
            continue;
        }
        let head = ["call site", "offered/s", "limit", "serves/s", "load", "from"];
        let mut t = Table { rows: vec![head.map(String::from).to_vec()] };
        t.rows.extend(rows);
        out.push_str(&t.render("  "));
    }
    let uncounted = exp.scenario.load_uncounted_sources();
    if !uncounted.is_empty() {
        out.push_str(&format!(
            "  not counted (rate known only at run time: trace, script, closed loop): {}\n",
            uncounted.join(", ")
        ));
    }
    out.push_str("  first attempts only (retries, hedges and fallbacks add load); a concurrency limit serves at most limit / mean hold (Little's law, the upstream's mean service as the hold)\n");
    out
}
