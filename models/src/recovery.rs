//! The metastability verdict: did the system come back after a trigger ended?
//!
//! A scenario may declare `recovery: Some(Recovery(trigger_start: "30s", trigger_end:
//! "40s", ...))`, the window of its trigger (an outage, a surge, a slowdown on its
//! timeline). After the run, from the time series (one bucket per `sample_every`):
//! * the **baseline** is the `baseline` window before the trigger: mean goodput (requests
//!   answered per second, all sources) and mean p99 latency (per bucket, the largest p99
//!   of the sources that answered in it);
//! * the run **recovered** at the first window of `hold` length, starting at or after
//!   `trigger_end` and ending within `trigger_end + horizon` (and the run), whose mean
//!   goodput is ≥ (1 − tolerance) × baseline and mean p99 ≤ (1 + tolerance) × baseline;
//!   `time_to_recover_s` = that window's start − `trigger_end`;
//! * the sustaining loop's **signature**, over the baseline window and over the last `hold`
//!   of the run: amplification (upstream services completed ÷ requests arrived) and the
//!   retry share (retries ÷ attempts sent upstream, all call sites: the series
//!   `call_site.<c>.retries` and `.attempts`). A system stuck in a retry loop ends with
//!   amplification near its attempt cap, most attempts retries and goodput near zero; one
//!   that recovered ends at its baseline.
//!
//! Summary columns (f64; NaN — null in Parquet — when the run has no time series or a
//! window is empty): `recovery.recovered` (1 or 0), `recovery.time_to_recover_s`,
//! `recovery.baseline_goodput`, `recovery.end_goodput`, `recovery.baseline_p99_ms`,
//! `recovery.end_p99_ms`, `recovery.baseline_amplification`, `recovery.end_amplification`,
//! `recovery.baseline_retry_share`, `recovery.end_retry_share` (NaN when no attempt was sent).
//!
//! Architecture invariant: a pure function of the run's series and the spec; it reads
//! nothing else and never changes the run. Its columns are *reported* summary columns (not
//! folded into the fingerprint): they depend on the sampling interval, and observing a run
//! never changes its fingerprint (I9).

use crate::summary::Summary;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;
use sim_core::metrics::SeriesRow;
use std::collections::BTreeMap;

/// The trigger window and the verdict's tolerances, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Recovery")]
pub struct RecoverySpec {
    /// When the trigger begins (from the start of the run).
    pub trigger_start: SimDuration,
    /// When the trigger ends.
    pub trigger_end: SimDuration,
    /// The window before the trigger the baseline is measured over (default 10 s).
    #[serde(default = "ten_seconds")]
    pub baseline: SimDuration,
    /// Relative tolerance on goodput and p99 (default 0.1).
    #[serde(default = "point_one")]
    pub tolerance: f64,
    /// How long after the trigger's end a recovery counts (default 120 s).
    #[serde(default = "two_minutes")]
    pub horizon: SimDuration,
    /// How long goodput and latency must hold at the baseline (default 10 s).
    #[serde(default = "ten_seconds")]
    pub hold: SimDuration,
}

fn ten_seconds() -> SimDuration {
    SimDuration::from_secs(10)
}
fn point_one() -> f64 {
    0.1
}
fn two_minutes() -> SimDuration {
    SimDuration::from_secs(120)
}

impl RecoverySpec {
    /// Cross-field checks (field path relative to `recovery`, message).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.trigger_end <= self.trigger_start {
            return Err((
                "trigger_end",
                format!(
                    "expected a trigger end after its start \"{}\", found \"{}\"",
                    self.trigger_start, self.trigger_end
                ),
            ));
        }
        if self.baseline.0 == 0 || self.baseline > self.trigger_start {
            return Err((
                "baseline",
                format!(
                    "expected a baseline window > 0 and no longer than the time before the trigger (\"{}\"), found \"{}\"",
                    self.trigger_start, self.baseline
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.tolerance) {
            return Err((
                "tolerance",
                format!("expected a number in [0, 1], found {}", self.tolerance),
            ));
        }
        if self.hold.0 == 0 || self.hold > self.horizon {
            return Err((
                "hold",
                format!(
                    "expected a hold > 0 and no longer than the horizon \"{}\", found \"{}\"",
                    self.horizon, self.hold
                ),
            ));
        }
        Ok(())
    }
}

/// The verdict of one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    pub recovered: f64,
    pub time_to_recover_s: f64,
    pub baseline_goodput: f64,
    pub end_goodput: f64,
    pub baseline_p99_ms: f64,
    pub end_p99_ms: f64,
    pub baseline_amplification: f64,
    pub end_amplification: f64,
    pub baseline_retry_share: f64,
    pub end_retry_share: f64,
}

/// Per bucket: requests answered, worst p99 of the sources, arrivals, upstream services,
/// attempts sent upstream and retries among them.
#[derive(Clone, Copy, Default)]
struct Bucket {
    answered: f64,
    p99_ms: Option<f64>,
    arrivals: f64,
    services: f64,
    attempts: f64,
    retries: f64,
}

/// Means over a window: goodput (1/s), p99 (ms), amplification, retry share.
struct Window {
    goodput: f64,
    p99_ms: f64,
    amplification: f64,
    retry_share: f64,
}

/// The buckets of a run's series, by start time (ns), and their width.
fn buckets(series: &[SeriesRow]) -> (BTreeMap<u64, Bucket>, u64) {
    let mut out: BTreeMap<u64, Bucket> = BTreeMap::new();
    for r in series {
        let b = out.entry(r.bucket_start_ns).or_default();
        let m = r.metric.as_str();
        if m.starts_with("source.") {
            if m.ends_with(".latency.count") {
                b.answered += r.value;
            } else if m.ends_with(".latency.p99_ms") {
                b.p99_ms = Some(b.p99_ms.map_or(r.value, |p| p.max(r.value)));
            } else if m.ends_with(".arrivals") {
                b.arrivals += r.value;
            }
        } else if m.starts_with("station.") && m.ends_with(".completed") {
            b.services += r.value;
        } else if m.starts_with("call_site.") {
            if m.ends_with(".attempts") {
                b.attempts += r.value;
            } else if m.ends_with(".retries") {
                b.retries += r.value;
            }
        }
    }
    let width = out.keys().zip(out.keys().skip(1)).map(|(a, b)| b - a).min().unwrap_or(0);
    (out, width)
}

/// Means over the buckets that start in `[from, to)` (ns); NaN for an empty window (and a
/// ratio whose denominator is 0).
fn window(b: &BTreeMap<u64, Bucket>, width: u64, from: u64, to: u64) -> Window {
    let mut n = 0.0;
    let mut sum = Bucket::default();
    let (mut p99_sum, mut p99_n) = (0.0, 0.0);
    for (_, x) in b.range(from..to) {
        n += 1.0;
        sum.answered += x.answered;
        sum.arrivals += x.arrivals;
        sum.services += x.services;
        sum.attempts += x.attempts;
        sum.retries += x.retries;
        if let Some(p) = x.p99_ms {
            p99_sum += p;
            p99_n += 1.0;
        }
    }
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    if n == 0.0 {
        let nan = f64::NAN;
        return Window { goodput: nan, p99_ms: nan, amplification: nan, retry_share: nan };
    }
    let secs = n * width as f64 / 1e9;
    Window {
        goodput: sum.answered / secs,
        p99_ms: if p99_n > 0.0 { p99_sum / p99_n } else { f64::NAN },
        amplification: ratio(sum.services, sum.arrivals),
        retry_share: ratio(sum.retries, sum.attempts),
    }
}

/// The verdict from a run's series (`end`: the run's simulated length).
pub fn verdict(spec: &RecoverySpec, series: &[SeriesRow], end: SimDuration) -> Verdict {
    let nan = Verdict {
        recovered: f64::NAN,
        time_to_recover_s: f64::NAN,
        baseline_goodput: f64::NAN,
        end_goodput: f64::NAN,
        baseline_p99_ms: f64::NAN,
        end_p99_ms: f64::NAN,
        baseline_amplification: f64::NAN,
        end_amplification: f64::NAN,
        baseline_retry_share: f64::NAN,
        end_retry_share: f64::NAN,
    };
    let (b, width) = buckets(series);
    if width == 0 {
        return nan;
    }
    let start = spec.trigger_start.0;
    let w0 = window(&b, width, start - spec.baseline.0, start);
    let end_ns = end.0;
    let we = window(&b, width, end_ns.saturating_sub(spec.hold.0), end_ns);
    let (g0, p0) = (w0.goodput, w0.p99_ms);
    let mut v = Verdict {
        baseline_goodput: g0,
        end_goodput: we.goodput,
        baseline_p99_ms: p0,
        end_p99_ms: we.p99_ms,
        baseline_amplification: w0.amplification,
        end_amplification: we.amplification,
        baseline_retry_share: w0.retry_share,
        end_retry_share: we.retry_share,
        ..nan
    };
    if g0.is_nan() {
        return v;
    }
    let tol = spec.tolerance;
    let limit = (spec.trigger_end.0 + spec.horizon.0).min(end_ns);
    v.recovered = 0.0;
    // Windows start on bucket boundaries at or after the trigger's end.
    for (&s, _) in b.range(spec.trigger_end.0..) {
        if s + spec.hold.0 > limit {
            break;
        }
        let w = window(&b, width, s, s + spec.hold.0);
        let (g, p) = (w.goodput, w.p99_ms);
        // Latency holds if it is within tolerance, or if the baseline had no answers to
        // measure it (then goodput alone decides).
        let latency_ok = p0.is_nan() || (!p.is_nan() && p <= (1.0 + tol) * p0);
        if g >= (1.0 - tol) * g0 && latency_ok {
            v.recovered = 1.0;
            v.time_to_recover_s = (s - spec.trigger_end.0) as f64 / 1e9;
            break;
        }
    }
    v
}

/// Appends the verdict's columns to a summary (names in the module doc).
pub fn push_columns(s: &mut Summary, v: &Verdict) {
    for (name, x) in [
        ("recovered", v.recovered),
        ("time_to_recover_s", v.time_to_recover_s),
        ("baseline_goodput", v.baseline_goodput),
        ("end_goodput", v.end_goodput),
        ("baseline_p99_ms", v.baseline_p99_ms),
        ("end_p99_ms", v.end_p99_ms),
        ("baseline_amplification", v.baseline_amplification),
        ("end_amplification", v.end_amplification),
        ("baseline_retry_share", v.baseline_retry_share),
        ("end_retry_share", v.end_retry_share),
    ] {
        // Reported, not folded: the verdict reads the time series, and observing a run (its
        // sampling interval) must never change its fingerprint (I9).
        s.push_reported_f64(format!("recovery.{name}"), x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RecoverySpec {
        RecoverySpec {
            trigger_start: SimDuration::from_secs(10),
            trigger_end: SimDuration::from_secs(20),
            baseline: SimDuration::from_secs(10),
            tolerance: 0.1,
            horizon: SimDuration::from_secs(30),
            hold: SimDuration::from_secs(5),
        }
    }

    /// One series row per metric per 1 s bucket: answered, p99, arrivals, services; the
    /// services are the call site's attempts, those beyond the arrivals its retries.
    fn series(per_second: &[(f64, f64, f64, f64)]) -> Vec<SeriesRow> {
        let mut out = Vec::new();
        for (i, &(answered, p99, arrivals, services)) in per_second.iter().enumerate() {
            let t = i as u64 * 1_000_000_000;
            for (m, v) in [
                ("source.s.latency.count", answered),
                ("source.s.latency.p99_ms", p99),
                ("source.s.arrivals", arrivals),
                ("station.llm.completed", services),
                ("call_site.c.attempts", services),
                ("call_site.c.retries", services - arrivals),
            ] {
                out.push(SeriesRow { bucket_start_ns: t, metric: m.into(), value: v });
            }
        }
        out
    }

    /// 10 s healthy (100/s, p99 50 ms), 10 s of trigger, then `after` for 30 s.
    fn run(after: (f64, f64, f64, f64), recover_at: usize) -> Verdict {
        let mut s = vec![(100.0, 50.0, 100.0, 100.0); 10];
        s.extend(vec![(0.0, 900.0, 100.0, 200.0); 10]);
        for i in 0..30 {
            s.push(if i >= recover_at { (100.0, 50.0, 100.0, 100.0) } else { after });
        }
        verdict(&spec(), &series(&s), SimDuration::from_secs(50))
    }

    #[test]
    fn verdict_table() {
        // Recovers 7 s after the trigger ends: the first 5 s window at baseline starts at 27 s.
        let v = run((10.0, 900.0, 100.0, 200.0), 7);
        assert_eq!((v.recovered, v.time_to_recover_s), (1.0, 7.0));
        assert_eq!(
            (v.baseline_goodput, v.baseline_p99_ms, v.baseline_amplification),
            (100.0, 50.0, 1.0)
        );
        assert_eq!((v.end_goodput, v.end_amplification), (100.0, 1.0));
        assert_eq!((v.baseline_retry_share, v.end_retry_share), (0.0, 0.0));
        // Stuck: goodput 10/s and every request tried twice until the end: half the
        // attempts are retries.
        let v = run((10.0, 900.0, 100.0, 200.0), 99);
        assert_eq!((v.recovered, v.end_goodput, v.end_amplification), (0.0, 10.0, 2.0));
        assert_eq!((v.baseline_retry_share, v.end_retry_share), (0.0, 0.5));
        assert!(v.time_to_recover_s.is_nan());
        // Goodput back within 10 % (91/s) but p99 at 56 ms (> 55): not recovered.
        let v = run((91.0, 56.0, 100.0, 100.0), 99);
        assert_eq!(v.recovered, 0.0);
        // 91/s and 55 ms: both within tolerance at once, right at the trigger's end.
        let v = run((91.0, 55.0, 100.0, 100.0), 99);
        assert_eq!((v.recovered, v.time_to_recover_s), (1.0, 0.0));
        // Recovering later than the horizon (30 s after 20 s = the run's end at 50 s, and
        // a 5 s window must fit): 26 s after the end is too late.
        let v = run((10.0, 900.0, 100.0, 200.0), 26);
        assert_eq!(v.recovered, 0.0);
        // No series (sampling off): every column NaN.
        let v = verdict(&spec(), &[], SimDuration::from_secs(50));
        assert!(v.recovered.is_nan() && v.baseline_goodput.is_nan());
    }

    #[test]
    fn checks() {
        let bad = |f: fn(&mut RecoverySpec)| {
            let mut s = spec();
            f(&mut s);
            s.check().unwrap_err().0
        };
        assert_eq!(bad(|s| s.trigger_end = s.trigger_start), "trigger_end");
        assert_eq!(bad(|s| s.baseline = SimDuration::from_secs(11)), "baseline");
        assert_eq!(bad(|s| s.tolerance = 1.5), "tolerance");
        assert_eq!(bad(|s| s.hold = SimDuration::from_secs(31)), "hold");
        assert!(spec().check().is_ok());
    }
}
