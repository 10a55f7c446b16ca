//! Metric primitives: counters, time-weighted gauges, latency histograms (DDSketch), and the
//! bucketed time series sampled by the run loop.
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
use sketches_ddsketch::{Config, DDSketch};

/// Relative accuracy of every quantile sketch: ≤ 1% relative error on any quantile.
pub const SKETCH_RELATIVE_ACCURACY: f64 = 0.01;
/// Bins per sketch: covers 1 ns … 10⁶ s at 1% accuracy with room to spare.
const SKETCH_MAX_BINS: u32 = 4096;

/// A fresh quantile sketch with the project's accuracy.
pub fn new_sketch() -> DDSketch {
    DDSketch::new(Config::new(SKETCH_RELATIVE_ACCURACY, SKETCH_MAX_BINS, 1.0))
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
    bucket: Option<DDSketch>,
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
    paths: std::collections::BTreeSet<String>,
}

impl Metrics {
    pub fn new() -> Self {
        Self::default()
    }

    fn claim(&mut self, path: &str) {
        assert!(self.paths.insert(path.to_string()), "metric path registered twice: {path}");
    }

    pub fn counter(&mut self, path: &str) -> CounterId {
        self.claim(path);
        self.counters.push(Counter { path: path.into(), value: 0, at_last_sample: 0 });
        CounterId((self.counters.len() - 1) as u32)
    }
    pub fn gauge(&mut self, path: &str) -> GaugeId {
        self.claim(path);
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
        self.claim(path);
        let bucket = self.sampling.then(new_sketch);
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
        debug_assert!(now >= g.since, "gauge {} updated in the past", g.path);
        g.integral = g.integral_at(now);
        g.since = now;
        g.value = value;
        g.max_in_bucket = g.max_in_bucket.max(value);
    }
    pub fn gauge_value(&self, id: GaugeId) -> i64 {
        self.gauges[id.0 as usize].value
    }
    /// Time-weighted mean of the gauge over [from, to], given its integral at `from`.
    pub fn gauge_integral(&self, id: GaugeId, at: SimTime) -> i128 {
        self.gauges[id.0 as usize].integral_at(at)
    }

    #[inline]
    pub fn record(&mut self, id: HistId, value_ns: u64) {
        if let Some(s) = &mut self.hists[id.0 as usize].bucket {
            s.add(value_ns.max(1) as f64);
        }
    }

    /// Turns on per-bucket sampling state. Must be called before histograms are registered
    /// (the run loop does it when sampling is configured).
    pub(crate) fn enable_sampling(&mut self) {
        self.sampling = true;
        for h in &mut self.hists {
            h.bucket.get_or_insert_with(new_sketch);
        }
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
                    let v = s.quantile(q).ok().flatten().unwrap_or(f64::NAN);
                    out.push(row(format!("{}.{name}_ms", h.path), v / 1e6));
                }
            }
            *s = new_sketch();
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
    fn sketch_quantiles_within_one_percent() {
        let mut s = new_sketch();
        for i in 1..=100_000u64 {
            s.add((i * 1_000) as f64);
        }
        for q in [0.5, 0.95, 0.99] {
            let exact = q * 100_000.0 * 1_000.0;
            let got = s.quantile(q).unwrap().unwrap();
            assert!((got - exact).abs() / exact <= 0.0101, "q{q}: {got} vs {exact}");
        }
    }

    #[test]
    #[should_panic(expected = "registered twice")]
    fn duplicate_paths_are_refused() {
        let mut m = Metrics::new();
        m.counter("a.b");
        m.gauge("a.b");
    }
}
