//! An adaptive concurrency limit: Netflix concurrency-limits' `Gradient2Limit` (latency
//! gradient against a long-term RTT) under the shared `SimpleLimiter` (`adaptive.rs`),
//! from `gradient2_limits`.
//!
//! `Gradient2Limit._update` on each sample (`rtt` in ns, as the library's nanoTime):
//! * `long` = the exponential average of the RTTs (`ExpAvgMeasurement(long_window, 10)`:
//!   the plain mean of the first 10 samples, then factor 2 ÷ (long_window + 1));
//! * if `long ÷ rtt > 2` the stored average is scaled by 0.95 (recovering after a long
//!   overload), the sample's `long` unchanged;
//! * if `inflight < estimate ÷ 2` the limit stays (app-limited);
//! * else `gradient = max(0.5, min(1, rtt_tolerance × long ÷ rtt))`, `new = estimate ×
//!   gradient + queue_size`, smoothed `estimate × (1 − smoothing) + new × smoothing`,
//!   clamped to `[min_limit, max_concurrency]`; the limit is `(int) estimate`.
//!
//! Drops take a sample like any other (the algorithm ignores `didDrop`).
//!
//! Zero RTT (an answer in the nanosecond its call passed): with a long-term average of 0
//! (every sample so far 0) `rtt_tolerance × long ÷ rtt` is 0 ÷ 0. In the library
//! (`Gradient2Limit._update`) that NaN passes `Math.min`/`Math.max` into
//! `estimatedLimit`, where it stays for good — every later update multiplies it — and
//! `(int) NaN = 0` is the limit: `SimpleLimiter` refuses every call from then on, so no
//! sample could ever come to change it. stormglass takes a gradient of 1 there instead (a
//! listed deviation). With a long-term average above 0 a zero RTT gives `+∞`, a gradient
//! of 1, in both. `windowed: Some((…))` puts the library's `WindowedLimit` in front
//! (`adaptive/windowed.rs`: one averaged sample per ready window), as its README configures
//! Gradient2. Not modelled: a `queueSize` function of the limit (the fixed
//! `queueSize(int)` form is).

use crate::adaptive::windowed::WindowedSpec;
use crate::adaptive::{LimitAlgorithm, LimiterOutcomes, MAX_LIMIT, Sample, SimpleLimiter};
use serde::{Deserialize, Serialize};

/// Configuration, named as `Gradient2Limit.Builder` names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Gradient2Limit")]
pub struct Gradient2LimitSpec {
    /// Name; parameters live under `gradient2_limit.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// `initialLimit` (default 20).
    #[serde(default = "D::initial_limit")]
    pub initial_limit: u64,
    /// `minLimit` (default 20).
    #[serde(default = "D::min_limit")]
    pub min_limit: u64,
    /// `maxConcurrency` (default 200).
    #[serde(default = "D::max_concurrency")]
    pub max_concurrency: u64,
    /// `smoothing` (default 0.2).
    #[serde(default = "D::smoothing")]
    pub smoothing: f64,
    /// `queueSize` (default 4).
    #[serde(default = "D::queue_size")]
    pub queue_size: u64,
    /// `longWindow`, in samples (default 600).
    #[serde(default = "D::long_window")]
    pub long_window: u64,
    /// `rttTolerance` (≥ 1, default 1.5).
    #[serde(default = "D::rtt_tolerance")]
    pub rtt_tolerance: f64,
    /// Which outcomes are `onSuccess` / `onDropped` / `onIgnore`: stormglass's mapping
    /// (the default) or a library integration's ([`LimiterOutcomes`]).
    #[serde(default, skip_serializing_if = "LimiterOutcomes::is_default")]
    pub outcomes: LimiterOutcomes,
    /// The library's `WindowedLimit` around the algorithm (`adaptive/windowed.rs`); `None` (the
    /// default): every sample goes to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windowed: Option<WindowedSpec>,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<Gradient2LimitSpec>;

impl Gradient2LimitSpec {
    /// The library's defaults under a name.
    pub fn defaults(name: &str) -> Self {
        Gradient2LimitSpec {
            name: name.into(),
            initial_limit: D::initial_limit(),
            min_limit: D::min_limit(),
            max_concurrency: D::max_concurrency(),
            smoothing: D::smoothing(),
            queue_size: D::queue_size(),
            long_window: D::long_window(),
            rtt_tolerance: D::rtt_tolerance(),
            outcomes: LimiterOutcomes::Stormglass,
            windowed: None,
        }
    }
}

/// `ExpAvgMeasurement`: the mean of the first `warmup` samples, then an exponential average.
#[derive(Clone, Debug)]
struct ExpAvg {
    value: f64,
    sum: f64,
    count: u32,
    window: u64,
}

impl ExpAvg {
    /// `ExpAvgMeasurement.add`.
    fn add(&mut self, sample: f64) -> f64 {
        const WARMUP: u32 = 10;
        if self.count < WARMUP {
            self.count += 1;
            self.sum += sample;
            self.value = self.sum / self.count as f64;
        } else {
            let factor = 2.0 / (self.window as f64 + 1.0);
            self.value = self.value * (1.0 - factor) + sample * factor;
        }
        self.value
    }
}

/// The algorithm's state.
#[derive(Clone, Debug)]
pub struct Gradient2 {
    estimate: f64,
    long_rtt: ExpAvg,
    min_limit: u64,
    max_limit: u64,
    smoothing: f64,
    queue_size: u64,
    tolerance: f64,
}

/// The run-time state of a `Gradient2Limit`.
pub type Gradient2Limit = SimpleLimiter<Gradient2>;

impl LimitAlgorithm for Gradient2 {
    type Spec = Gradient2LimitSpec;
    fn outcomes(spec: &Gradient2LimitSpec) -> LimiterOutcomes {
        spec.outcomes
    }
    fn windowed(spec: &Gradient2LimitSpec) -> Option<&WindowedSpec> {
        spec.windowed.as_ref()
    }
    fn new(spec: &Gradient2LimitSpec) -> (Self, u64) {
        let g = Gradient2 {
            estimate: spec.initial_limit as f64,
            long_rtt: ExpAvg { value: 0.0, sum: 0.0, count: 0, window: spec.long_window },
            min_limit: spec.min_limit,
            max_limit: spec.max_concurrency,
            smoothing: spec.smoothing,
            queue_size: spec.queue_size,
            tolerance: spec.rtt_tolerance,
        };
        (g, spec.initial_limit)
    }

    /// `Gradient2Limit._update`.
    fn update(&mut self, _limit: u64, s: &Sample) -> u64 {
        let queue = self.queue_size as f64;
        let short = s.rtt.0 as f64;
        let long = self.long_rtt.add(short);
        if long / short > 2.0 {
            self.long_rtt.value *= 0.95;
        }
        if (s.inflight as f64) < self.estimate / 2.0 {
            return self.estimate as u64;
        }
        // 0 ÷ 0 (a zero RTT with a zero average) is NaN: Java's Math.min/max would carry it
        // into the limit ((int) NaN = 0, refusing everything); here it is a gradient of 1
        // (no change but the growth), listed as a deviation in the reference.
        let ratio = self.tolerance * long / short;
        let gradient = if ratio.is_nan() { 1.0 } else { ratio.clamp(0.5, 1.0) };
        let new = self.estimate * gradient + queue;
        let new = self.estimate * (1.0 - self.smoothing) + new * self.smoothing;
        // Not `clamp`: with min_limit > max_concurrency the library's order gives min_limit.
        self.estimate = new.min(self.max_limit as f64).max(self.min_limit as f64);
        self.estimate as u64
    }
}

crate::params::declare_params! {
    Gradient2LimitSpec: "gradient2_limit", name = |s| s.name, part = windowed[WindowedSpec],
        state = Gradient2;
    outcomes: Enum { choices: LimiterOutcomes::CHOICES }, "", fixed,
        "which outcomes are onSuccess/onDropped/onIgnore: STORMGLASS (default), or as the library's GRPC_CLIENT, GRPC_SERVER, SERVLET integrations";
    initial_limit: Count { min: 1, max: MAX_LIMIT }, "calls", fixed,
        "the limit before the first sample (initialLimit)", default = 20;
    min_limit: Count { min: 1, max: MAX_LIMIT }, "calls",
        runtime(apply = |g, n| g.min_limit = n), "the lowest limit (minLimit)", default = 20;
    max_concurrency: Count { min: 1, max: MAX_LIMIT }, "calls",
        runtime(apply = |g, n| g.max_limit = n),
        "the highest limit (maxConcurrency)", default = 200;
    smoothing: Float { min: 0.0, max: 1.0 }, "ratio", runtime(apply = |g, x| g.smoothing = x),
        "weight of a new estimate (smoothing)", default = 0.2;
    queue_size: Count { min: 0, max: MAX_LIMIT }, "calls", runtime(apply = |g, n| g.queue_size = n),
        "growth allowed while latency stays low (queueSize)", default = 4;
    long_window: Count { min: 1, max: 1_000_000 }, "samples", fixed,
        "window of the long-term RTT average (longWindow)", default = 600;
    rtt_tolerance: Float { min: 1.0, max: 100.0 }, "ratio", runtime(apply = |g, x| g.tolerance = x),
        "acceptable RTT growth over the long-term average (rttTolerance)", default = 1.5;
}

impl crate::params::GovernorSpec for Gradient2LimitSpec {
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::GateFull]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::SimDuration;

    fn algo() -> Gradient2 {
        Gradient2::new(&Gradient2LimitSpec::defaults("g")).0
    }

    /// `Gradient2Limit._update` by hand from the library's formula, defaults (initial 20,
    /// min 20, max 200, smoothing 0.2, queue 4, tolerance 1.5).
    #[test]
    fn update_by_the_formula() {
        let ms = SimDuration::from_ms;
        // App-limited: inflight 9 < 20 / 2 = 10 → unchanged (the RTT is still averaged).
        let mut g = algo();
        assert_eq!(g.update(20, &Sample::of(ms(100), 9, false)), 20);
        assert_eq!(g.long_rtt.value, 100e6);
        // First sample at the average (long = short): gradient min(1, 1.5) = 1; new = 20 + 4
        // = 24, smoothed 20 × 0.8 + 24 × 0.2 = 20.8 → limit 20.
        let mut g = algo();
        assert_eq!(g.update(20, &Sample::of(ms(100), 10, false)), 20);
        assert!((g.estimate - 20.8).abs() < 1e-12);
        // Five more equal samples: each adds 4 × 0.2 = 0.8 → 24.8 → 24.
        for _ in 0..5 {
            g.update(0, &Sample::of(ms(100), 30, false));
        }
        assert!((g.estimate - 24.8).abs() < 1e-9, "{}", g.estimate);
        // A sample 3× the average (warm-up mean: (6 × 100 + 300) / 7 = 128.57 ms): gradient
        // max(0.5, 1.5 × 128.57 / 300 = 0.643) → new = 24.8 × 0.643 + 4, smoothed.
        let long = (600.0 + 300.0) / 7.0;
        let gradient: f64 = 1.5 * long / 300.0;
        let want = 24.8 * 0.8 + (24.8 * gradient + 4.0) * 0.2;
        g.update(0, &Sample::of(ms(300), 30, false));
        assert!((g.estimate - want).abs() < 1e-9, "{} vs {want}", g.estimate);
        // A sample ten times faster than the average: long ÷ short > 2 → the stored average
        // is scaled by 0.95 after the sample is folded in.
        let before = g.long_rtt.value;
        let folded = (before * 7.0 + 10e6) / 8.0;
        g.update(0, &Sample::of(ms(10), 30, false));
        assert!((g.long_rtt.value - folded * 0.95).abs() < 1e-3);
        // Bounds: never below min_limit.
        let mut g = algo();
        for _ in 0..50 {
            g.update(0, &Sample::of(ms(1000), 100, false));
            g.update(0, &Sample::of(ms(5000), 100, false));
        }
        assert!(g.estimate >= 20.0);
    }

    /// `ExpAvgMeasurement(600, 10)`: the plain mean while warming up, then factor 2/601.
    #[test]
    fn exp_avg_warms_up_then_decays() {
        let mut a = ExpAvg { value: 0.0, sum: 0.0, count: 0, window: 600 };
        for i in 1..=10 {
            a.add(i as f64);
        }
        assert_eq!(a.value, 5.5);
        let f = 2.0 / 601.0;
        assert_eq!(a.add(100.0), 5.5 * (1.0 - f) + 100.0 * f);
    }
}
