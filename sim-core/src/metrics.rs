//! Metric primitives: counters, time-weighted gauges, latency quantiles (exact order
//! statistics up to 4,096 values, HdrHistogram within 2⁻¹⁰ relative error beyond, never
//! outside the observed range), and the bucketed time series sampled by the run loop.
//!
//! Architecture invariant: metrics are write-only for the model. Components update them
//! through ids handed out at registration; no model decision reads a metric. The sampler
//! touches only sampling state (bucket sketches, per-bucket maxima), so turning sampling on
//! or off cannot change a run (tested via the fingerprint).
//!
//! Names are component paths with a metric leaf: `station.llm.queue_depth`. Time-series rows
//! add the statistic as a final segment: `.mean`/`.max` for gauges, `.count`/`.p50`/`.p95`/
//! `.p99` for histograms; counters appear under their own path as per-bucket deltas.
//!
//! Gauges hold integers and integrate exactly (`i128` value × ns), so a time-weighted mean
//! has no accumulated rounding.

use crate::time::{SimDuration, SimTime};

/// Up to this many values a [`Quantiles`] keeps them all and reports exact order
/// statistics; beyond, it switches to a histogram.
pub const EXACT_QUANTILES_UP_TO: usize = 4096;
/// Significant decimal digits of the histogram beyond [`EXACT_QUANTILES_UP_TO`] values:
/// 3 ⇒ buckets of relative width ≤ 2⁻¹⁰ (HdrHistogram's 2,048 sub-buckets per power of
/// two, the upper half of which spans one octave).
pub const HISTOGRAM_SIGNIFICANT_DIGITS: u8 = 3;
/// The stated error of a quantile from the histogram: |reported − exact| ≤
/// `QUANTILE_RELATIVE_ERROR` × exact, or 1 ns for values below 2,048 ns (unit buckets).
pub const QUANTILE_RELATIVE_ERROR: f64 = 1.0 / 1024.0;
/// Largest trackable value: 10⁶ s in ns (larger values are clamped to it).
const HISTOGRAM_MAX_NS: u64 = 1_000_000 * 1_000_000_000;

/// The log-linear buckets beyond [`EXACT_QUANTILES_UP_TO`] values: HdrHistogram's layout
/// for values in `[1, HISTOGRAM_MAX_NS]` at [`HISTOGRAM_SIGNIFICANT_DIGITS`] (unit magnitude
/// 0, 2,048 sub-buckets, the upper half of each further bucket used), computed here from the
/// value's bits so that a record is a handful of instructions. The counts per bucket are the
/// ones an `hdrhistogram::Histogram::new_with_bounds(1, HISTOGRAM_MAX_NS, 3)` would hold
/// (checked against it in the tests), so the quantiles are those of that histogram.
mod buckets {
    /// log2 of half the sub-bucket count (1,024).
    const HALF_MAGNITUDE: u32 = 10;
    const HALF: usize = 1 << HALF_MAGNITUDE;
    /// Values below 2,048 share bucket 0 (unit width).
    const SUB_BUCKET_MASK: u64 = (2 * HALF as u64) - 1;
    /// 64 − unit magnitude (0) − log2(sub-bucket count) (11).
    const LEADING_ZERO_BASE: u32 = 53;

    /// The bucket (power of two) of `v` ≥ 1: its width is `1 << bucket`.
    #[inline]
    fn bucket_of(v: u64) -> u32 {
        LEADING_ZERO_BASE - (v | SUB_BUCKET_MASK).leading_zeros()
    }

    /// The index of the count of `v` (≥ 1).
    #[inline]
    pub fn index_of(v: u64) -> usize {
        let bucket = bucket_of(v);
        (((bucket as usize) + 1) << HALF_MAGNITUDE) + (v >> bucket) as usize - HALF
    }

    /// The range `[low, high]` of the values counted at `index`.
    pub fn range_of(index: usize) -> (u64, u64) {
        let (bucket, sub) = match (index >> HALF_MAGNITUDE).checked_sub(1) {
            Some(b) => (b as u32, (index & (HALF - 1)) + HALF),
            None => (0, index),
        };
        let low = (sub as u64) << bucket;
        (low, low + (1u64 << bucket) - 1)
    }
}

/// Latency quantiles in nanoseconds: exact for small samples, within
/// [`QUANTILE_RELATIVE_ERROR`] otherwise, and never outside [min, max] of what was recorded.
///
/// The quantile `q` is the nearest-rank order statistic: the `k`-th smallest value with
/// `k = max(1, ⌈q·n⌉)` (the smallest `x` with F(x) ≥ q). Up to [`EXACT_QUANTILES_UP_TO`]
/// values it is exactly that value. Beyond, the values are counted in HdrHistogram's
/// log-linear buckets (chosen from the value's bits: recording costs a few instructions and
/// no logarithm; `buckets` above), whose counts are exact: the `k`-th value lies in the
/// bucket where the running count reaches `k`, and the reported value is placed inside that
/// bucket by its rank among the bucket's values (`low + (high − low)·(j − ½)/c` for the
/// `j`-th of `c`, the bucket's range `[low, high]` narrowed to the observed `[min, max]`),
/// so it is within one bucket width of the exact value, moves smoothly with the data instead
/// of snapping to bucket edges, and never leaves `[min, max]`; the first and last order
/// statistics are the exact minimum and maximum.
#[derive(Clone, Default)]
pub struct Quantiles {
    /// Every value while there are at most [`EXACT_QUANTILES_UP_TO`] (empty afterwards).
    exact: Vec<u64>,
    /// The bucket counts, allocated the first time there were more (kept across resets).
    counts: Vec<u64>,
    /// The values are in `counts` (not in `exact`).
    spilled: bool,
    count: u64,
    min: u64,
    max: u64,
}

impl Quantiles {
    pub fn new() -> Self {
        Self::default()
    }
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        self.min = if self.count == 1 { ns } else { self.min.min(ns) };
        self.max = self.max.max(ns);
        if self.spilled {
            self.counts[buckets::index_of(ns.clamp(1, HISTOGRAM_MAX_NS))] += 1;
        } else if self.exact.len() < EXACT_QUANTILES_UP_TO {
            self.exact.push(ns);
        } else {
            self.spill(ns);
        }
    }
    /// Moves the exact values into the bucket counts (the first time there are too many).
    #[cold]
    fn spill(&mut self, ns: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; buckets::index_of(HISTOGRAM_MAX_NS) + 1];
        }
        for &x in self.exact.iter().chain([&ns]) {
            self.counts[buckets::index_of(x.clamp(1, HISTOGRAM_MAX_NS))] += 1;
        }
        self.exact.clear();
        self.spilled = true;
    }
    pub fn count(&self) -> u64 {
        self.count
    }
    /// Whether the quantiles are exact order statistics (at most
    /// [`EXACT_QUANTILES_UP_TO`] values recorded since the last reset).
    pub fn is_exact(&self) -> bool {
        !self.spilled
    }
    /// The largest value recorded (`None` when empty).
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }
    /// The `q`-quantile in ns (`None` when empty).
    pub fn quantile(&self, q: f64) -> Option<f64> {
        self.quantiles(&[q]).map(|v| v[0])
    }
    /// Several quantiles at once (one sort or one pass over the buckets), in the order
    /// asked; `None` when empty.
    pub fn quantiles(&self, qs: &[f64]) -> Option<Vec<f64>> {
        if self.count == 0 {
            return None;
        }
        let n = self.count;
        let rank = |q: f64| ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).clamp(1, n);
        if !self.spilled {
            let mut xs = self.exact.clone();
            xs.sort_unstable();
            return Some(qs.iter().map(|&q| xs[rank(q) as usize - 1] as f64).collect());
        }
        // Ranks ascending, answered in one pass over the non-empty buckets.
        let mut order: Vec<usize> = (0..qs.len()).collect();
        order.sort_by_key(|&i| rank(qs[i]));
        let mut out = vec![self.max as f64; qs.len()];
        let mut next = order.iter().peekable();
        let mut below = 0u64;
        for (index, &c) in self.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
            while let Some(&&i) = next.peek() {
                let k = rank(qs[i]);
                if k > below + c {
                    break;
                }
                if k == n || k == 1 {
                    // The extremes are known exactly.
                    out[i] = if k == n { self.max } else { self.min } as f64;
                    next.next();
                    continue;
                }
                // The bucket's range, narrowed to what was observed (the lowest and
                // highest buckets are often partly empty).
                let (low, high) = buckets::range_of(index);
                let low = low.max(self.min) as f64;
                let high = high.min(self.max) as f64;
                let j = (k - below) as f64;
                let x = low + (high - low).max(0.0) * (j - 0.5) / c as f64;
                out[i] = x.clamp(self.min as f64, self.max as f64);
                next.next();
            }
            below += c;
            if next.peek().is_none() {
                break;
            }
        }
        Some(out)
    }
    /// Forgets every value (a new time-series bucket); keeps the counts' memory.
    pub fn reset(&mut self) {
        self.exact.clear();
        if self.spilled {
            // Back to exact values (the next bucket may be small); the counts' memory is
            // kept for the next spill.
            self.counts.fill(0);
            self.spilled = false;
        }
        self.count = 0;
        self.min = 0;
        self.max = 0;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterId(u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GaugeId(u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HistId(u32);

struct Counter {
    path: String,
    value: u64,
    at_last_sample: u64,
}

struct Gauge {
    path: String,
    value: i64,
    since: SimTime,
    /// ∫ value dt up to `since`, in value·ns.
    integral: i128,
    integral_at_last_sample: i128,
    max_in_bucket: i64,
}

impl Gauge {
    fn integral_at(&self, t: SimTime) -> i128 {
        self.integral + self.value as i128 * (t.0.saturating_sub(self.since.0)) as i128
    }
}

struct Hist {
    path: String,
    bucket: Option<Quantiles>,
}

/// One row of the long-format time series.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesRow {
    pub bucket_start_ns: u64,
    pub metric: String,
    pub value: f64,
}

/// All metrics of one run.
#[derive(Default)]
pub struct Metrics {
    counters: Vec<Counter>,
    gauges: Vec<Gauge>,
    hists: Vec<Hist>,
    sampling: bool,
    /// Every registered path and what it names (lookup by path for observers).
    paths: std::collections::BTreeMap<String, MetricRef>,
}

/// What a metric path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MetricRef {
    kind: MetricKind,
    index: u32,
}

/// A metric's value now, read by path ([`Metrics::read`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MetricReading {
    /// The count since the start of the run.
    Counter(u64),
    /// The value now.
    Gauge(i64),
    /// Values recorded in the open time-series bucket and their quantiles in ns (`None`
    /// when the bucket is empty). Histograms keep no state when sampling is off: the count
    /// is then 0.
    Histogram { bucket_count: u64, p50_ns: Option<f64>, p95_ns: Option<f64>, p99_ns: Option<f64> },
}

impl Metrics {
    pub fn new() -> Self {
        Self::default()
    }

    fn claim(&mut self, path: &str, kind: MetricKind) {
        let index = match kind {
            MetricKind::Counter => self.counters.len(),
            MetricKind::Gauge => self.gauges.len(),
            MetricKind::Histogram => self.hists.len(),
        } as u32;
        let prev = self.paths.insert(path.to_string(), MetricRef { kind, index });
        assert!(prev.is_none(), "metric path registered twice: {path}");
    }

    /// Every registered metric path with its kind, sorted by path.
    pub fn list(&self) -> impl Iterator<Item = (&str, MetricKind)> {
        self.paths.iter().map(|(p, r)| (p.as_str(), r.kind))
    }

    /// The value of the metric registered under `path` now (`None`: no such metric).
    /// Reading never changes a metric: observers (a live session, a GUI) may read at any
    /// time without changing the run.
    pub fn read(&self, path: &str) -> Option<MetricReading> {
        let r = self.paths.get(path)?;
        let i = r.index as usize;
        Some(match r.kind {
            MetricKind::Counter => MetricReading::Counter(self.counters[i].value),
            MetricKind::Gauge => MetricReading::Gauge(self.gauges[i].value),
            MetricKind::Histogram => {
                let b = self.hists[i].bucket.as_ref();
                let q = b.and_then(|b| b.quantiles(&[0.5, 0.95, 0.99]));
                let at = |k: usize| q.as_ref().map(|q| q[k]);
                MetricReading::Histogram {
                    bucket_count: b.map_or(0, |b| b.count()),
                    p50_ns: at(0),
                    p95_ns: at(1),
                    p99_ns: at(2),
                }
            }
        })
    }

    pub fn counter(&mut self, path: &str) -> CounterId {
        self.claim(path, MetricKind::Counter);
        self.counters.push(Counter { path: path.into(), value: 0, at_last_sample: 0 });
        CounterId((self.counters.len() - 1) as u32)
    }
    pub fn gauge(&mut self, path: &str) -> GaugeId {
        self.claim(path, MetricKind::Gauge);
        self.gauges.push(Gauge {
            path: path.into(),
            value: 0,
            since: SimTime::ZERO,
            integral: 0,
            integral_at_last_sample: 0,
            max_in_bucket: 0,
        });
        GaugeId((self.gauges.len() - 1) as u32)
    }
    pub fn histogram(&mut self, path: &str) -> HistId {
        self.claim(path, MetricKind::Histogram);
        let bucket = self.sampling.then(Quantiles::new);
        self.hists.push(Hist { path: path.into(), bucket });
        HistId((self.hists.len() - 1) as u32)
    }

    #[inline]
    pub fn add(&mut self, id: CounterId, n: u64) {
        self.counters[id.0 as usize].value += n;
    }
    #[inline]
    pub fn incr(&mut self, id: CounterId) {
        self.add(id, 1);
    }
    pub fn counter_value(&self, id: CounterId) -> u64 {
        self.counters[id.0 as usize].value
    }

    #[inline]
    pub fn set(&mut self, id: GaugeId, now: SimTime, value: i64) {
        let g = &mut self.gauges[id.0 as usize];
        if self.sampling {
            // Integration serves only the time series; skip it when nobody samples.
            debug_assert!(now >= g.since, "gauge {} updated in the past", g.path);
            g.integral = g.integral_at(now);
            g.since = now;
            g.max_in_bucket = g.max_in_bucket.max(value);
        }
        g.value = value;
    }
    pub fn gauge_value(&self, id: GaugeId) -> i64 {
        self.gauges[id.0 as usize].value
    }

    #[inline(always)]
    pub fn record(&mut self, id: HistId, value_ns: u64) {
        if let Some(s) = &mut self.hists[id.0 as usize].bucket {
            s.record(value_ns);
        }
    }

    /// Turns on per-bucket sampling state. Must be called before histograms are registered
    /// (the run loop does it when sampling is configured).
    pub(crate) fn enable_sampling(&mut self) {
        assert!(
            self.counters.is_empty() && self.gauges.is_empty() && self.hists.is_empty(),
            "sampling is enabled before any metric is registered"
        );
        self.sampling = true;
    }

    /// Closes the bucket `[start, end)` and appends its rows.
    pub(crate) fn sample_bucket(&mut self, start: SimTime, end: SimTime, out: &mut Vec<SeriesRow>) {
        let width = end.0.saturating_sub(start.0);
        if width == 0 {
            return;
        }
        let row =
            |metric: String, value: f64| SeriesRow { bucket_start_ns: start.0, metric, value };
        for c in &mut self.counters {
            out.push(row(c.path.clone(), (c.value - c.at_last_sample) as f64));
            c.at_last_sample = c.value;
        }
        for g in &mut self.gauges {
            let integral = g.integral_at(end);
            let mean = (integral - g.integral_at_last_sample) as f64 / width as f64;
            out.push(row(format!("{}.mean", g.path), mean));
            out.push(row(format!("{}.max", g.path), g.max_in_bucket as f64));
            g.integral_at_last_sample = integral;
            g.max_in_bucket = g.value;
        }
        for h in &mut self.hists {
            let Some(s) = &mut h.bucket else { continue };
            let n = s.count();
            out.push(row(format!("{}.count", h.path), n as f64));
            if let Some(v) = s.quantiles(&[0.5, 0.95, 0.99]) {
                for (v, name) in v.iter().zip(["p50", "p95", "p99"]) {
                    out.push(row(format!("{}.{name}_ms", h.path), v / 1e6));
                }
            }
            s.reset();
        }
    }
}

/// The configuration of time-series sampling.
#[derive(Clone, Copy, Debug)]
pub struct Sampling {
    pub every: SimDuration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauge_time_weighted_mean_is_exact() {
        let mut m = Metrics::new();
        m.enable_sampling();
        let g = m.gauge("q.depth");
        let c = m.counter("q.arrivals");
        // Depth 0 on [0,2), 3 on [2,5), 1 on [5,10): mean over [0,10) = (0+9+5)/10 = 1.4
        m.set(g, SimTime(2), 3);
        m.add(c, 4);
        m.set(g, SimTime(5), 1);
        let mut rows = vec![];
        m.sample_bucket(SimTime(0), SimTime(10), &mut rows);
        let get = |name: &str| rows.iter().find(|r| r.metric == name).unwrap().value;
        assert_eq!(get("q.depth.mean"), 1.4);
        assert_eq!(get("q.depth.max"), 3.0);
        assert_eq!(get("q.arrivals"), 4.0);
        rows.clear();
        m.sample_bucket(SimTime(10), SimTime(20), &mut rows);
        let get = |name: &str| rows.iter().find(|r| r.metric == name).unwrap().value;
        assert_eq!(get("q.depth.mean"), 1.0);
        assert_eq!(get("q.depth.max"), 1.0);
        assert_eq!(get("q.arrivals"), 0.0);
    }

    /// Nearest-rank order statistic of a sorted list: the `max(1, ⌈q·n⌉)`-th smallest.
    fn nearest_rank(sorted: &[u64], q: f64) -> f64 {
        let n = sorted.len() as f64;
        sorted[((q * n).ceil() as usize).clamp(1, sorted.len()) - 1] as f64
    }

    /// Small samples: exact order statistics (table: values, q, expected), never a bucket
    /// edge — 2,147,483,647 ns was once reported for values near 2.1 s — and never above
    /// the maximum (a p99 of 461.37 ms beside a max of 460.0 ms was once reported).
    #[test]
    fn small_samples_give_exact_order_statistics() {
        let table: &[(&[u64], f64, u64)] = &[
            (&[5, 1, 3, 2, 4], 0.5, 3),
            (&[5, 1, 3, 2, 4], 0.2, 1),
            (&[5, 1, 3, 2, 4], 0.21, 2),
            (&[5, 1, 3, 2, 4], 0.99, 5),
            (&[5, 1, 3, 2, 4], 1.0, 5),
            (&[5, 1, 3, 2, 4], 0.0, 1),
            (&[7], 0.5, 7),
            (&[0, 0, 9], 0.5, 0),
            (&[2_100_000_001, 2_100_000_002, 2_100_000_003], 0.99, 2_100_000_003),
            (&[460_000_000, 455_000_000, 300_000_000], 0.99, 460_000_000),
        ];
        for &(xs, q, want) in table {
            let mut s = Quantiles::new();
            xs.iter().for_each(|&x| s.record(x));
            assert!(s.is_exact());
            assert_eq!(s.quantile(q), Some(want as f64), "{xs:?} q{q}");
        }
        // The largest exact sample: 4,096 distinct values, each quantile exact.
        let mut s = Quantiles::new();
        let xs: Vec<u64> = (1..=EXACT_QUANTILES_UP_TO as u64).map(|i| i * 1_000_003).collect();
        xs.iter().rev().for_each(|&x| s.record(x));
        assert!(s.is_exact());
        for q in [0.5, 0.95, 0.99, 0.999] {
            assert_eq!(s.quantile(q).unwrap(), nearest_rank(&xs, q), "q{q}");
        }
        s.record(1);
        assert!(!s.is_exact(), "one more spills into the histogram");
    }

    #[test]
    fn large_samples_are_within_the_stated_error() {
        // Values spanning 1 µs … 100 s, log-spaced; exact quantiles from the sorted list.
        let mut s = Quantiles::new();
        let mut xs: Vec<u64> =
            (0..200_000u64).map(|i| (1_000.0 * 1e8f64.powf(i as f64 / 200_000.0)) as u64).collect();
        for &x in &xs {
            s.record(x);
        }
        xs.sort_unstable();
        for q in [0.0, 0.01, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
            let exact = nearest_rank(&xs, q);
            let got = s.quantile(q).unwrap();
            assert!(
                (got - exact).abs() <= exact * QUANTILE_RELATIVE_ERROR,
                "q{q}: {got} vs {exact}"
            );
        }
        assert_eq!(s.quantile(1.0), Some(*xs.last().unwrap() as f64), "the maximum, exactly");
        assert_eq!(s.quantile(0.0), Some(xs[0] as f64), "the minimum, exactly");
        assert_eq!(s.count(), 200_000);
        assert_eq!(Quantiles::new().quantile(0.5), None);
    }

    /// A property over pseudo-random samples (sizes around the exact limit, heavy-tailed
    /// values, ties): every quantile within the stated error of the exact order statistic
    /// (1 ns below 2,048 ns), inside [min, max], monotone in q; one pass = one at a time.
    #[test]
    fn quantiles_property_over_random_samples() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state = crate::rng::mix64(state);
            state
        };
        let qs = [0.0, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0];
        for case in 0..60 {
            let n = 1 + (next() % 12_000) as usize;
            let mut s = Quantiles::new();
            let mut xs: Vec<u64> = (0..n)
                .map(|_| {
                    let u = (next() >> 11) as f64 / (1u64 << 53) as f64;
                    // Pareto-like tail over 100 ns … ~1000 s, rounded to coarse steps in
                    // some cases so that ties are common.
                    let x = (100.0 / (1.0 - u).max(1e-10).powf(1.4)) as u64;
                    if case % 3 == 0 { x / 1000 * 1000 } else { x }
                })
                .collect();
            xs.iter().for_each(|&x| s.record(x));
            xs.sort_unstable();
            let all = s.quantiles(&qs).unwrap();
            let (lo, hi) = (xs[0] as f64, *xs.last().unwrap() as f64);
            for (k, &q) in qs.iter().enumerate() {
                let exact = nearest_rank(&xs, q);
                let got = all[k];
                assert_eq!(s.quantile(q), Some(got), "case {case} q{q}: one pass = one at a time");
                let tol =
                    if s.is_exact() { 0.0 } else { (exact * QUANTILE_RELATIVE_ERROR).max(1.0) };
                assert!((got - exact).abs() <= tol, "case {case} n {n} q{q}: {got} vs {exact}");
                assert!(lo <= got && got <= hi, "case {case} q{q}: {got} outside [{lo}, {hi}]");
                if k > 0 {
                    assert!(all[k - 1] <= got, "case {case}: monotone in q");
                }
            }
        }
    }

    /// Beyond the exact limit, quantiles are placed inside their bucket by rank: values
    /// spread inside one histogram bucket give distinct, increasing quantiles instead of
    /// the bucket's edge for all of them.
    #[test]
    fn histogram_quantiles_are_not_snapped_to_bucket_edges() {
        let mut s = Quantiles::new();
        // 2 s + 0 … 0.5 ms in 10,000 steps: one bucket of width 2²⁰ ns ≈ 1.05 ms at 2 s.
        let xs: Vec<u64> = (0..10_000u64).map(|i| 2_000_000_000 + i * 50).collect();
        xs.iter().for_each(|&x| s.record(x));
        assert!(!s.is_exact());
        let got = s.quantiles(&[0.5, 0.95, 0.99]).unwrap();
        assert!(got[0] < got[1] && got[1] < got[2], "{got:?}");
        for (g, q) in got.iter().zip([0.5, 0.95, 0.99]) {
            let exact = nearest_rank(&xs, q);
            assert!((g - exact).abs() <= exact * QUANTILE_RELATIVE_ERROR, "q{q}: {g} vs {exact}");
        }
        assert!(got[2] <= *xs.last().unwrap() as f64);
    }

    /// A reset (a new time-series bucket) goes back to exact values.
    #[test]
    fn reset_returns_to_exact_values() {
        let mut s = Quantiles::new();
        (0..10_000u64).for_each(|i| s.record(i * 997));
        assert!(!s.is_exact());
        s.reset();
        assert_eq!(s.quantile(0.5), None);
        [30, 10, 20].iter().for_each(|&x| s.record(x));
        assert!(s.is_exact());
        assert_eq!(s.quantiles(&[0.5, 1.0]), Some(vec![20.0, 30.0]));
        assert_eq!(s.max(), Some(30));
    }

    #[test]
    fn metrics_are_listed_and_read_by_path() {
        let mut m = Metrics::new();
        m.enable_sampling();
        let c = m.counter("s.done");
        let g = m.gauge("s.depth");
        let h = m.histogram("s.latency");
        m.add(c, 3);
        m.set(g, SimTime(5), -2);
        m.record(h, 1_000);
        let listed: Vec<_> = m.list().collect();
        assert_eq!(
            listed,
            [
                ("s.depth", MetricKind::Gauge),
                ("s.done", MetricKind::Counter),
                ("s.latency", MetricKind::Histogram)
            ]
        );
        assert_eq!(m.read("s.done"), Some(MetricReading::Counter(3)));
        assert_eq!(m.read("s.depth"), Some(MetricReading::Gauge(-2)));
        let Some(MetricReading::Histogram { bucket_count: 1, p50_ns: Some(p50), .. }) =
            m.read("s.latency")
        else {
            panic!("{:?}", m.read("s.latency"))
        };
        assert_eq!(p50, 1_000.0, "exact for one value");
        assert_eq!(m.read("s.nothing"), None);
    }

    #[test]
    #[should_panic(expected = "registered twice")]
    fn duplicate_paths_are_refused() {
        let mut m = Metrics::new();
        m.counter("a.b");
        m.gauge("a.b");
    }

    /// The quantiles beyond the exact range are those of the HdrHistogram whose layout
    /// `buckets` computes: the same counts per bucket and the same bucket ranges give the
    /// same quantiles, bit for bit. Reference: the previous implementation over
    /// `hdrhistogram::Histogram::new_with_bounds(1, HISTOGRAM_MAX_NS, 3)`.
    #[test]
    fn bucket_counts_match_hdrhistogram() {
        use hdrhistogram::Histogram;
        fn reference(values: &[u64], qs: &[f64]) -> Vec<f64> {
            let mut h = Histogram::<u64>::new_with_bounds(1, HISTOGRAM_MAX_NS, 3).unwrap();
            for &v in values {
                h.saturating_record(v.clamp(1, HISTOGRAM_MAX_NS));
            }
            let (min, max) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
            let n = values.len() as u64;
            let rank = |q: f64| ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).clamp(1, n);
            let mut order: Vec<usize> = (0..qs.len()).collect();
            order.sort_by_key(|&i| rank(qs[i]));
            let mut out = vec![max as f64; qs.len()];
            let mut next = order.iter().peekable();
            let mut below = 0u64;
            for b in h.iter_recorded() {
                let c = b.count_at_value();
                while let Some(&&i) = next.peek() {
                    let k = rank(qs[i]);
                    if k > below + c {
                        break;
                    }
                    if k == n || k == 1 {
                        out[i] = if k == n { max } else { min } as f64;
                        next.next();
                        continue;
                    }
                    let v = b.value_iterated_to();
                    let low = h.lowest_equivalent(v).max(min) as f64;
                    let high = h.highest_equivalent(v).min(max) as f64;
                    let j = (k - below) as f64;
                    let x = low + (high - low).max(0.0) * (j - 0.5) / c as f64;
                    out[i] = x.clamp(min as f64, max as f64);
                    next.next();
                }
                below += c;
                if next.peek().is_none() {
                    break;
                }
            }
            out
        }
        // Each bucket boundary of the layout and its neighbours, then random samples over
        // many scales (0, unit buckets, every octave, beyond the largest trackable value).
        let mut edges = Vec::new();
        for b in 0..45u32 {
            for base in [1024u64, 2047, 2048] {
                let v = base << b;
                edges.extend([v.saturating_sub(1), v, v.saturating_add(1)]);
            }
        }
        edges.extend([0, 1, 2, HISTOGRAM_MAX_NS - 1, HISTOGRAM_MAX_NS, u64::MAX]);
        for &v in &edges {
            let v = v.clamp(1, HISTOGRAM_MAX_NS);
            let h = Histogram::<u64>::new_with_bounds(1, HISTOGRAM_MAX_NS, 3).unwrap();
            let (low, high) = buckets::range_of(buckets::index_of(v));
            assert_eq!((low, high), (h.lowest_equivalent(v), h.highest_equivalent(v)), "{v}");
        }
        let qs = [0.0, 0.001, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (n, scale) in [(5_000, 12), (20_000, 20), (50_000, 35), (10_000, 50), (8_000, 63)] {
            let values: Vec<u64> =
                (0..n).map(|_| next() >> (64 - scale)).chain(edges.iter().copied()).collect();
            let mut q = Quantiles::new();
            for &v in &values {
                q.record(v);
            }
            assert!(!q.is_exact());
            let got = q.quantiles(&qs).unwrap();
            let want = reference(&values, &qs);
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.to_bits(), w.to_bits(), "n {n} scale {scale}: {got:?} vs {want:?}");
            }
        }
    }
}
