//! Envoy's adaptive concurrency filter (`envoy.filters.http.adaptive_concurrency`) with its
//! gradient controller (`GradientController`), under the shared limiter (`adaptive.rs`),
//! from `adaptive_concurrency_filters`.
//!
//! A call is forwarded while fewer than `limit` calls are outstanding, else refused at once
//! (`gate_full`; Envoy answers 503). Every answer from below is a latency sample (Envoy
//! samples every response it encodes, errors and local replies included); a call cancelled
//! from above takes none (`cancelLatencySample`). Samples are µs, truncated.
//!
//! The controller works in windows, on timers:
//! * **minRTT window** (at the start, then every `min_rtt_calc_interval` + jitter): the
//!   limit in force is saved and pinned to `min_concurrency`; samples of calls forwarded
//!   since the window began are collected until there are `request_count` of them; their
//!   `sample_aggregate_percentile` is the new `minRTT` and the saved limit comes back. The
//!   next window starts `interval + (random % ceil(interval × jitter))` ms later.
//! * **sample window** (every `concurrency_update_interval`, not during a minRTT window):
//!   the percentile of the samples since the last window is `sampleRTT`, and
//!   `gradient = max(0.5, min(2, minRTT × (1 + buffer) ÷ sampleRTT))`,
//!   `limit' = limit × gradient`, `limit = (uint32) (limit' + sqrt(limit'))` clamped to
//!   `[min_concurrency, max_concurrency_limit]`. A window without samples changes nothing.
//! * the limit set to `min_concurrency` five windows in a row outside a minRTT window
//!   starts a minRTT window at once (the measured minRTT may be wrong).
//!
//! The percentile is that of Envoy's histogram (libcircllhist: two significant digits per
//! bin, `hist_approx_quantile` interpolating linearly in the bin), truncated to whole µs.
//! The two timers fire in time order; at one instant the sample window first.
//! Percentages (`jitter`, `buffer`, `sample_aggregate_percentile`) are written as in the
//! proto, 0–100. Intervals are whole milliseconds (Envoy's `durationToMilliseconds`).
//!
//! Not modelled: `min_rtt_calc_params.fixed_value` (a fixed minRTT, `interval: 0`), the
//! separate `min_concurrency_limit` of recent releases, the runtime `enabled` flag. The
//! random number of the jitter is a keyed draw of the call that closed the minRTT window.
//!
//! Gauges `adaptive_concurrency.<name>.{limit, in_flight, min_rtt_calculation_active,
//! min_rtt_msecs, sample_rtt_msecs}` (Envoy's stat names), `limit_increase` /
//! `limit_decrease` events; counters `min_rtt_calculations` besides the limiter's.

use crate::adaptive::{LimitAlgorithm, MAX_LIMIT, Sample, SimpleLimiter};
use crate::outcome::Outcome;
use serde::{Deserialize, Serialize};
use sim_core::rng::mix64;
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// Configuration: the filter's `gradient_controller_config`, flattened (field paths of the
/// proto in the docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "AdaptiveConcurrency")]
pub struct AdaptiveConcurrencySpec {
    /// Name; parameters live under `adaptive_concurrency.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// `sample_aggregate_percentile`, percent (default 50).
    #[serde(default = "D::sample_aggregate_percentile")]
    pub sample_aggregate_percentile: f64,
    /// `concurrency_limit_params.max_concurrency_limit` (default 1000).
    #[serde(default = "D::max_concurrency_limit")]
    pub max_concurrency_limit: u64,
    /// `concurrency_limit_params.concurrency_update_interval` (required).
    pub concurrency_update_interval: SimDuration,
    /// `min_rtt_calc_params.interval` (required).
    pub min_rtt_calc_interval: SimDuration,
    /// `min_rtt_calc_params.request_count` (default 50).
    #[serde(default = "D::request_count")]
    pub request_count: u64,
    /// `min_rtt_calc_params.jitter`, percent (default 15).
    #[serde(default = "D::jitter")]
    pub jitter: f64,
    /// `min_rtt_calc_params.min_concurrency` (default 3).
    #[serde(default = "D::min_concurrency")]
    pub min_concurrency: u64,
    /// `min_rtt_calc_params.buffer`, percent (default 25).
    #[serde(default = "D::buffer")]
    pub buffer: f64,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<AdaptiveConcurrencySpec>;

impl AdaptiveConcurrencySpec {
    /// The proto's defaults with the two required intervals.
    pub fn defaults(name: &str, update: SimDuration, min_rtt: SimDuration) -> Self {
        AdaptiveConcurrencySpec {
            name: name.into(),
            sample_aggregate_percentile: D::sample_aggregate_percentile(),
            max_concurrency_limit: D::max_concurrency_limit(),
            concurrency_update_interval: update,
            min_rtt_calc_interval: min_rtt,
            request_count: D::request_count(),
            jitter: D::jitter(),
            min_concurrency: D::min_concurrency(),
            buffer: D::buffer(),
        }
    }
}

/// libcircllhist's log-linear histogram of µs samples: bins of two significant digits
/// (`[12, 13)`, `[1200, 1300)`…; below 10 µs bins of 0.1 µs), keyed by their left edge in
/// tenths of a µs, holding (width in tenths, count).
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    bins: BTreeMap<u64, (u64, u64)>,
    count: u64,
}

impl Histogram {
    /// `hist_insert` of `v` µs.
    pub fn insert(&mut self, v: u64) {
        let (left, width) = if v == 0 {
            (0, 0)
        } else if v < 10 {
            (v * 10, 1)
        } else {
            let (mut m, mut scale) = (v, 1u64);
            while m >= 100 {
                m /= 10;
                scale *= 10;
            }
            (m * scale * 10, scale * 10)
        };
        self.bins.entry(left).or_insert((width, 0)).1 += 1;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn clear(&mut self) {
        self.bins.clear();
        self.count = 0;
    }

    /// `hist_approx_quantile` for `q` in [0, 1], in µs (`None` when empty).
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let target = self.count as f64 * q;
        let mut bins = self.bins.iter();
        let (&l, &(w, c)) = bins.next()?;
        let (mut left, mut width, mut lower, mut upper) = (l, w, 0.0, c as f64);
        // Walk the bins until the cumulative count reaches the target (or the last bin).
        while upper < target {
            let Some((&l, &(w, c))) = bins.next() else { break };
            (left, width, lower, upper) = (l, w, upper, upper + c as f64);
        }
        let (left, width) = (left as f64 / 10.0, width as f64 / 10.0);
        Some(if lower == target {
            left
        } else if upper == target {
            left + width
        } else if width == 0.0 {
            left
        } else {
            left + (target - lower) / (upper - lower) * width
        })
    }

    /// `processLatencySamplesAndClear`: the percentile, truncated to whole µs, and clear.
    fn take_quantile(&mut self, q: f64) -> u64 {
        let v = self.quantile(q).unwrap_or(0.0);
        self.clear();
        v as u64
    }
}

/// C++ `std::min` / `std::max` (`(b < a) ? b : a`): a NaN argument in second place loses.
fn cpp_min(a: f64, b: f64) -> f64 {
    if b < a { b } else { a }
}
fn cpp_max(a: f64, b: f64) -> f64 {
    if a < b { b } else { a }
}

/// Whole milliseconds of a duration, as Envoy reads its config.
fn whole_ms(d: SimDuration) -> u64 {
    d.0 / 1_000_000
}

/// The gradient controller's state (the limit itself is the limiter's).
#[derive(Clone, Debug)]
pub struct GradientController {
    sample_aggregate_percentile: f64,
    max_concurrency_limit: u64,
    update_interval_ms: u64,
    min_rtt_interval_ms: u64,
    request_count: u64,
    jitter: f64,
    min_concurrency: u64,
    buffer: f64,
    /// The limit saved while a minRTT window pins it; 0 outside one.
    deferred: u64,
    min_rtt_us: u64,
    sample_rtt_us: u64,
    hist: Histogram,
    /// Calls forwarded before this take no sample (`min_rtt_epoch_`).
    epoch: SimTime,
    sample_reset_at: Option<SimTime>,
    min_rtt_calc_at: Option<SimTime>,
    consecutive_min: u32,
    min_rtt_calculations: u64,
}

/// The run-time state of an `AdaptiveConcurrency` filter.
pub type AdaptiveConcurrency = SimpleLimiter<GradientController>;

const JITTER_SALT: u64 = 0x656e_766f_795f_6a74;

impl GradientController {
    fn in_min_rtt_window(&self) -> bool {
        self.deferred > 0
    }

    /// `updateConcurrencyLimit`: the limit becomes `new`; five windows in a row at the
    /// minimum outside a minRTT window start one now.
    fn set_limit(&mut self, old: u64, new: u64, now: SimTime) -> u64 {
        if !self.in_min_rtt_window() && old == self.min_concurrency && new == self.min_concurrency {
            self.consecutive_min += 1;
        } else {
            self.consecutive_min = 0;
        }
        if self.consecutive_min >= 5 {
            self.min_rtt_calc_at = Some(now);
        }
        new
    }

    /// `enterMinRTTSamplingWindow`.
    fn enter_min_rtt_window(&mut self, limit: u64, now: SimTime) -> u64 {
        if self.in_min_rtt_window() {
            return limit;
        }
        self.deferred = limit;
        let l = self.set_limit(limit, self.min_concurrency, now);
        self.hist.clear();
        self.epoch = now;
        l
    }

    /// The sample window's timer: `resetSampleWindow` and re-arm (not in a minRTT window).
    fn on_sample_reset(&mut self, limit: u64, now: SimTime) -> u64 {
        if self.in_min_rtt_window() {
            return limit;
        }
        let mut l = limit;
        if self.hist.count() > 0 {
            self.sample_rtt_us = self.hist.take_quantile(self.sample_aggregate_percentile / 100.0);
            let new = self.new_limit(limit);
            l = self.set_limit(limit, new, now);
        }
        self.sample_reset_at = Some(now + SimDuration::from_ms(self.update_interval_ms));
        l
    }

    /// `calculateNewLimit`.
    pub fn new_limit(&self, limit: u64) -> u64 {
        let min_rtt = self.min_rtt_us as f64;
        let buffered = min_rtt + min_rtt * (self.buffer / 100.0);
        let raw = buffered / self.sample_rtt_us as f64;
        let gradient = cpp_max(0.5, cpp_min(2.0, raw));
        let l = limit as f64 * gradient;
        let new = (l + l.sqrt()) as u64;
        self.min_concurrency.max(self.max_concurrency_limit.min(new))
    }

    /// `applyJitter`: the next minRTT window's delay, ms.
    fn jittered_interval_ms(&self, draw: u64) -> u64 {
        if self.jitter == 0.0 {
            return self.min_rtt_interval_ms;
        }
        let range = (self.min_rtt_interval_ms as f64 * self.jitter / 100.0).ceil() as u64;
        self.min_rtt_interval_ms + mix64(draw ^ JITTER_SALT) % range.max(1)
    }
}

impl LimitAlgorithm for GradientController {
    type Spec = AdaptiveConcurrencySpec;
    fn new(spec: &AdaptiveConcurrencySpec) -> (Self, u64) {
        let mut g = GradientController {
            sample_aggregate_percentile: spec.sample_aggregate_percentile,
            max_concurrency_limit: spec.max_concurrency_limit,
            update_interval_ms: whole_ms(spec.concurrency_update_interval),
            min_rtt_interval_ms: whole_ms(spec.min_rtt_calc_interval),
            request_count: spec.request_count,
            jitter: spec.jitter,
            min_concurrency: spec.min_concurrency,
            buffer: spec.buffer,
            deferred: 0,
            min_rtt_us: 0,
            sample_rtt_us: 0,
            hist: Histogram::default(),
            epoch: SimTime::ZERO,
            sample_reset_at: None,
            min_rtt_calc_at: None,
            consecutive_min: 0,
            min_rtt_calculations: 0,
        };
        // The constructor: a minRTT window at once (the limit starts at min_concurrency),
        // and the sample timer armed.
        let start = SimTime::ZERO;
        let limit = g.enter_min_rtt_window(spec.min_concurrency, start);
        g.sample_reset_at = Some(start + SimDuration::from_ms(g.update_interval_ms));
        (g, limit)
    }

    /// `recordLatencySample` (+ `updateMinRTT`).
    fn update(&mut self, limit: u64, s: &Sample) -> u64 {
        if s.start < self.epoch {
            return limit;
        }
        self.hist.insert(s.rtt.0 / 1000);
        if !self.in_min_rtt_window() || self.hist.count() < self.request_count {
            return limit;
        }
        self.min_rtt_us = self.hist.take_quantile(self.sample_aggregate_percentile / 100.0);
        self.min_rtt_calculations += 1;
        let l = self.set_limit(limit, self.deferred, s.now);
        self.deferred = 0;
        self.min_rtt_calc_at =
            Some(s.now + SimDuration::from_ms(self.jittered_interval_ms(s.draw)));
        self.sample_reset_at = Some(s.now + SimDuration::from_ms(self.update_interval_ms));
        l
    }

    /// Every answer is a sample (the filter samples what it encodes); the drop flag only
    /// feeds the limiter's counters.
    fn classify(_: crate::adaptive::LimiterOutcomes, o: Outcome) -> Option<bool> {
        Some(o != Outcome::Success)
    }

    fn wake_at(&self) -> Option<SimTime> {
        match (self.sample_reset_at, self.min_rtt_calc_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_wake(&mut self, limit: u64, now: SimTime) -> u64 {
        let mut l = limit;
        // Every timer due by now, in time order; the sample window first at one instant.
        loop {
            let reset = self.sample_reset_at.filter(|&t| t <= now);
            let calc = self.min_rtt_calc_at.filter(|&t| t <= now);
            match (reset, calc) {
                (Some(r), c) if c.is_none_or(|c| r <= c) => {
                    self.sample_reset_at = None;
                    l = self.on_sample_reset(l, r);
                }
                (_, Some(c)) => {
                    self.min_rtt_calc_at = None;
                    l = self.enter_min_rtt_window(l, c);
                }
                (None, None) => return l,
                (Some(_), None) => unreachable!("matched by the first arm"),
            }
        }
    }

    fn gauges(&self) -> Vec<(&'static str, i64)> {
        vec![
            ("min_rtt_calculation_active", self.in_min_rtt_window() as i64),
            ("min_rtt_msecs", (self.min_rtt_us / 1000) as i64),
            ("sample_rtt_msecs", (self.sample_rtt_us / 1000) as i64),
        ]
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("min_rtt_calculations", self.min_rtt_calculations)]
    }
}

const INTERVAL_MIN: SimDuration = SimDuration::from_ms(1);
const INTERVAL_MAX: SimDuration = SimDuration::from_secs(86_400);

crate::params::declare_params! {
    AdaptiveConcurrencySpec: "adaptive_concurrency", name = |s| s.name, state = GradientController;
    sample_aggregate_percentile: Float { min: 0.0, max: 100.0 }, "percent",
        runtime(apply = |g, x| g.sample_aggregate_percentile = x),
        "the percentile summarising a window's samples (sample_aggregate_percentile)", default = 50.0;
    max_concurrency_limit: Count { min: 1, max: MAX_LIMIT }, "calls",
        runtime(apply = |g, n| g.max_concurrency_limit = n),
        "the highest limit (concurrency_limit_params.max_concurrency_limit)", default = 1000;
    concurrency_update_interval: Duration { min: INTERVAL_MIN, max: INTERVAL_MAX }, "ns",
        runtime(apply = |g, d| g.update_interval_ms = whole_ms(d)),
        "the sample window, whole ms (concurrency_limit_params.concurrency_update_interval)";
    min_rtt_calc_interval: Duration { min: INTERVAL_MIN, max: INTERVAL_MAX }, "ns",
        runtime(apply = |g, d| g.min_rtt_interval_ms = whole_ms(d)),
        "time between minRTT windows, whole ms (min_rtt_calc_params.interval)";
    request_count: Count { min: 1, max: 1_000_000 }, "samples",
        runtime(apply = |g, n| g.request_count = n),
        "samples a minRTT window collects (min_rtt_calc_params.request_count)", default = 50;
    jitter: Float { min: 0.0, max: 100.0 }, "percent", runtime(apply = |g, x| g.jitter = x),
        "random delay added to a minRTT window's start, of the interval (min_rtt_calc_params.jitter)", default = 15.0;
    min_concurrency: Count { min: 1, max: MAX_LIMIT }, "calls", fixed,
        "the limit during a minRTT window and the lowest limit (min_rtt_calc_params.min_concurrency)", default = 3;
    buffer: Float { min: 0.0, max: 100.0 }, "percent", runtime(apply = |g, x| g.buffer = x),
        "tolerance added to the minRTT (min_rtt_calc_params.buffer)", default = 25.0;
}

impl crate::params::GovernorSpec for AdaptiveConcurrencySpec {
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::GateFull]
    }
}

#[cfg(test)]
#[path = "adaptive_concurrency_tests.rs"]
mod tests;
