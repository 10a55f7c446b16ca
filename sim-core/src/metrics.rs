//! Metric primitives: counters, time-weighted gauges, latency histograms (HdrHistogram, 1%
//! relative precision), and the bucketed time series sampled by the run loop.
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
use hdrhistogram::Histogram;

/// Significant decimal digits kept by every latency histogram: 2 ⇒ any quantile is within
/// 1% (relative) of the exact value.
pub const HISTOGRAM_SIGNIFICANT_DIGITS: u8 = 2;
/// Largest trackable value: 10⁶ s in ns (larger values are clamped to it).
const HISTOGRAM_MAX_NS: u64 = 1_000_000 * 1_000_000_000;

/// A latency histogram in nanoseconds with ≤ 1% relative error on every quantile.
///
/// Built on `hdrhistogram` (log-linear buckets chosen from the value's bits: recording
/// costs a few ns and no logarithm, which matters at one record per request).
#[derive(Clone)]
pub struct Quantiles(Histogram<u64>);

impl Default for Quantiles {
    fn default() -> Self {
        Self::new()
    }
}

impl Quantiles {
    pub fn new() -> Self {
        Quantiles(
            Histogram::new_with_bounds(1, HISTOGRAM_MAX_NS, HISTOGRAM_SIGNIFICANT_DIGITS)
                .expect("valid static histogram bounds"),
        )
    }
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns.clamp(1, HISTOGRAM_MAX_NS));
    }
    pub fn count(&self) -> u64 {
        self.0.len()
    }
    /// The `q`-quantile in ns (`None` when empty). Reports the upper edge of the value's
    /// bucket, so the error is at most 1%, upwards.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        (!self.0.is_empty()).then(|| self.0.value_at_quantile(q) as f64)
    }
    pub fn reset(&mut self) {
        self.0.reset();
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
                let q = |q: f64| b.and_then(|b| b.quantile(q));
                MetricReading::Histogram {
                    bucket_count: b.map_or(0, |b| b.count()),
                    p50_ns: q(0.5),
                    p95_ns: q(0.95),
                    p99_ns: q(0.99),
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

    #[inline]
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
            if n > 0 {
                for (q, name) in [(0.5, "p50"), (0.95, "p95"), (0.99, "p99")] {
                    let v = s.quantile(q).unwrap_or(f64::NAN);
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

    #[test]
    fn quantiles_within_one_percent() {
        // Values spanning 1 µs … 100 s, log-spaced; exact quantiles from the sorted list.
        let mut s = Quantiles::new();
        let mut xs: Vec<u64> =
            (0..200_000u64).map(|i| (1_000.0 * 1e8f64.powf(i as f64 / 200_000.0)) as u64).collect();
        for &x in &xs {
            s.record(x);
        }
        xs.sort_unstable();
        for q in [0.01, 0.5, 0.9, 0.95, 0.99, 0.999] {
            let exact = xs[((q * xs.len() as f64).ceil() as usize).saturating_sub(1)] as f64;
            let got = s.quantile(q).unwrap();
            assert!((got - exact).abs() / exact <= 0.01, "q{q}: {got} vs {exact}");
        }
        assert_eq!(s.count(), 200_000);
        assert_eq!(Quantiles::new().quantile(0.5), None);
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
        assert!((p50 - 1_000.0).abs() <= 10.0, "within 1%: {p50}");
        assert_eq!(m.read("s.nothing"), None);
    }

    #[test]
    #[should_panic(expected = "registered twice")]
    fn duplicate_paths_are_refused() {
        let mut m = Metrics::new();
        m.counter("a.b");
        m.gauge("a.b");
    }
}
