//! An adaptive concurrency limit: Netflix concurrency-limits' `VegasLimit` (TCP Vegas: the
//! queue a limit builds, estimated from the RTT against the no-load RTT) under the shared
//! `SimpleLimiter` (`adaptive.rs`), from `vegas_limits`.
//!
//! `VegasLimit._update` on each sample (`rtt` in ns, as the library's nanoTime):
//! * `probe_count += 1`; if `probe_jitter × probe_multiplier × estimate ≤ probe_count`
//!   the sample is a **probe**: `rtt_noload = rtt` (the no-load RTT is reset, so it can
//!   grow back after the upstream got slower for good), `probe_count = 0`, a new jitter
//!   (uniform in [0.5, 1)), the limit unchanged;
//! * else a first sample or one faster than `rtt_noload` sets `rtt_noload = rtt`, the limit
//!   unchanged;
//! * else `queue = (int) ceil(estimate × (1 − rtt_noload ÷ rtt))` and, with `L =
//!   LOG10((int) estimate)` (`Log10RootIntFunction`: `max(1, (int) log10 x)`):
//!   - a drop: `new = estimate − L` (the `decrease` function);
//!   - `inflight × 2 < estimate`: unchanged (app-limited);
//!   - `queue ≤ threshold` (default `L`): `new = estimate + beta` (fast growth, no queue);
//!   - `queue < alpha` (default `3L`): `new = estimate + L` (`increase`);
//!   - `queue > beta` (default `6L`): `new = estimate − L` (`decrease`);
//!   - else unchanged;
//!
//!   then `new = max(1, min(max_concurrency, new))`, smoothed `(1 − smoothing) × estimate +
//!   smoothing × new`; the limit is `(int) estimate`.
//!
//! `alpha`, `beta`, `threshold`: `None` is the library's default function of the limit
//! above; `Some(n)` a constant (`Builder.alpha(int)`, `beta(int)`, `threshold(x -> n)`).
//!
//! Deviations: the probe jitter is a keyed draw of the sampling call's random bits (the
//! library's `ThreadLocalRandom`), the first drawn at the first sample; a zero RTT (an
//! answer in the same nanosecond) takes no sample where the library throws
//! (`VegasLimit._update`: `rtt must be >0`). Neither leaks the permit: the library's
//! listener (`AbstractLimiter.createListener`) decrements `inFlight` before it calls
//! `onSample`, so the exception reaches the caller of `onSuccess` / `onDropped` with the
//! permit already given back (the gRPC server interceptor logs it, the client
//! interceptor's `onClose` and the servlet filter let it out); here the call leaves
//! `started` before the sample is taken (test `zero_rtt_returns_the_permit`); custom
//! `increase`/`decrease` functions are not modelled (the defaults are).
//!
//! Gauges `vegas_limit.<name>.{limit, in_flight, rtt_noload_us}`, `limit_increase` /
//! `limit_decrease` events and the summary counters (`probes` besides the limiter's).

use crate::adaptive::windowed::WindowedSpec;
use crate::adaptive::{LimitAlgorithm, LimiterOutcomes, MAX_LIMIT, Sample, SimpleLimiter};
use serde::{Deserialize, Serialize};
use sim_core::rng::{bits_to_open01, mix64};

/// Configuration, named as `VegasLimit.Builder` names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "VegasLimit")]
pub struct VegasLimitSpec {
    /// Name; parameters live under `vegas_limit.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// `initialLimit` (default 20).
    #[serde(default = "D::initial_limit")]
    pub initial_limit: u64,
    /// `maxConcurrency` (default 1000).
    #[serde(default = "D::max_concurrency")]
    pub max_concurrency: u64,
    /// `smoothing` (default 1.0: no smoothing).
    #[serde(default = "D::smoothing")]
    pub smoothing: f64,
    /// `alpha`: `None` = `3 × LOG10(limit)` (the default), `Some(n)` = `n`.
    #[serde(default = "D::alpha")]
    pub alpha: Option<u64>,
    /// `beta`: `None` = `6 × LOG10(limit)` (the default), `Some(n)` = `n`.
    #[serde(default = "D::beta")]
    pub beta: Option<u64>,
    /// `threshold`: `None` = `LOG10(limit)` (the default), `Some(n)` = `n`.
    #[serde(default = "D::threshold")]
    pub threshold: Option<u64>,
    /// `probeMultiplier`: a no-load RTT probe every `jitter × probe_multiplier × limit`
    /// samples (default 30).
    #[serde(default = "D::probe_multiplier")]
    pub probe_multiplier: u64,
    /// Which outcomes are `onSuccess` / `onDropped` / `onIgnore`: stormglass's mapping
    /// (the default) or a library integration's ([`LimiterOutcomes`]).
    #[serde(default, skip_serializing_if = "LimiterOutcomes::is_default")]
    pub outcomes: LimiterOutcomes,
    /// The library's `WindowedLimit` around the algorithm (`adaptive/windowed.rs`); `None` (the
    /// default): every sample goes to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windowed: Option<WindowedSpec>,
}

/// The defaults declared in the parameter rows below.
type D = crate::params::Defaults<VegasLimitSpec>;

impl VegasLimitSpec {
    /// The library's defaults under a name.
    pub fn defaults(name: &str) -> Self {
        VegasLimitSpec {
            name: name.into(),
            initial_limit: D::initial_limit(),
            max_concurrency: D::max_concurrency(),
            smoothing: D::smoothing(),
            alpha: D::alpha(),
            beta: D::beta(),
            threshold: D::threshold(),
            probe_multiplier: D::probe_multiplier(),
            outcomes: LimiterOutcomes::Stormglass,
            windowed: None,
        }
    }
}

/// `Log10RootIntFunction.create(0)`: `max(1, (int) log10 x)` (1 for 0: log10 0 = −∞).
pub fn log10_root(x: u64) -> u64 {
    let mut digits = 0;
    let mut v = x;
    while v >= 10 {
        v /= 10;
        digits += 1;
    }
    digits.max(1)
}

/// Salts of the two keyed draws of the probe jitter (the first, and each reset).
const FIRST_JITTER: u64 = 0x7665_6761_735f_6a31;
const RESET_JITTER: u64 = 0x7665_6761_735f_6a32;

/// `ThreadLocalRandom.nextDouble(0.5, 1)` from a call's bits.
fn jitter(bits: u64, salt: u64) -> f64 {
    0.5 + 0.5 * bits_to_open01(mix64(bits ^ salt))
}

/// The algorithm's state.
#[derive(Clone, Debug)]
pub struct Vegas {
    estimate: f64,
    /// ns; 0 before the first sample.
    rtt_noload: u64,
    probe_count: u64,
    /// `None` until the first sample draws it.
    probe_jitter: Option<f64>,
    probes: u64,
    max_limit: u64,
    smoothing: f64,
    alpha: Option<u64>,
    beta: Option<u64>,
    threshold: Option<u64>,
    probe_multiplier: u64,
}

/// The run-time state of a `VegasLimit`.
pub type VegasLimit = SimpleLimiter<Vegas>;

impl Vegas {
    /// `updateEstimatedLimit`.
    fn update_estimate(&mut self, rtt: u64, inflight: u64, did_drop: bool) -> u64 {
        let est = self.estimate;
        let queue = (est * (1.0 - self.rtt_noload as f64 / rtt as f64)).ceil() as i64;
        let l = log10_root(est as u64);
        let new = if did_drop {
            est - l as f64
        } else if ((inflight * 2) as f64) < est {
            return est as u64;
        } else {
            let alpha = self.alpha.unwrap_or(3 * l) as i64;
            let beta = self.beta.unwrap_or(6 * l) as i64;
            let threshold = self.threshold.unwrap_or(l) as i64;
            if queue <= threshold {
                est + beta as f64
            } else if queue < alpha {
                est + l as f64
            } else if queue > beta {
                est - l as f64
            } else {
                return est as u64;
            }
        };
        let new = new.min(self.max_limit as f64).max(1.0);
        self.estimate = (1.0 - self.smoothing) * est + self.smoothing * new;
        self.estimate as u64
    }
}

impl LimitAlgorithm for Vegas {
    type Spec = VegasLimitSpec;
    fn outcomes(spec: &VegasLimitSpec) -> LimiterOutcomes {
        spec.outcomes
    }
    fn windowed(spec: &VegasLimitSpec) -> Option<&WindowedSpec> {
        spec.windowed.as_ref()
    }
    fn new(spec: &VegasLimitSpec) -> (Self, u64) {
        let v = Vegas {
            estimate: spec.initial_limit as f64,
            rtt_noload: 0,
            probe_count: 0,
            probe_jitter: None,
            probes: 0,
            max_limit: spec.max_concurrency,
            smoothing: spec.smoothing,
            alpha: spec.alpha,
            beta: spec.beta,
            threshold: spec.threshold,
            probe_multiplier: spec.probe_multiplier,
        };
        (v, spec.initial_limit)
    }

    /// `VegasLimit._update`.
    fn update(&mut self, _limit: u64, s: &Sample) -> u64 {
        let rtt = s.rtt.0;
        if rtt == 0 {
            // The library refuses `rtt ≤ 0` with an exception: no sample.
            return self.estimate as u64;
        }
        self.probe_count += 1;
        let j = *self.probe_jitter.get_or_insert_with(|| jitter(s.draw, FIRST_JITTER));
        if j * self.probe_multiplier as f64 * self.estimate <= self.probe_count as f64 {
            self.probe_jitter = Some(jitter(s.draw, RESET_JITTER));
            self.probe_count = 0;
            self.probes += 1;
            self.rtt_noload = rtt;
            return self.estimate as u64;
        }
        if self.rtt_noload == 0 || rtt < self.rtt_noload {
            self.rtt_noload = rtt;
            return self.estimate as u64;
        }
        self.update_estimate(rtt, s.inflight, s.did_drop)
    }

    fn gauges(&self) -> Vec<(&'static str, i64)> {
        vec![("rtt_noload_us", (self.rtt_noload / 1000) as i64)]
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("probes", self.probes)]
    }
}

crate::params::declare_params! {
    VegasLimitSpec: "vegas_limit", name = |s| s.name, part = windowed[WindowedSpec],
        state = Vegas;
    outcomes: Enum { choices: LimiterOutcomes::CHOICES }, "", fixed,
        "which outcomes are onSuccess/onDropped/onIgnore: STORMGLASS (default), or as the library's GRPC_CLIENT, GRPC_SERVER, SERVLET integrations";
    initial_limit: Count { min: 1, max: MAX_LIMIT }, "calls", fixed,
        "the limit before the first sample (initialLimit)", default = 20;
    max_concurrency: Count { min: 1, max: MAX_LIMIT }, "calls",
        runtime(apply = |g, n| g.max_limit = n),
        "the highest limit (maxConcurrency)", default = 1000;
    smoothing: Float { min: 0.0, max: 1.0 }, "ratio", runtime(apply = |g, x| g.smoothing = x),
        "weight of a new estimate (smoothing; 1 = none)", default = 1.0;
    alpha: OptCount { min: 0, max: MAX_LIMIT }, "calls", runtime(apply = |g, n| g.alpha = n),
        "queue below which the limit grows by log10(limit); None = 3 × log10(limit) (alpha)", default = None;
    beta: OptCount { min: 0, max: MAX_LIMIT }, "calls", runtime(apply = |g, n| g.beta = n),
        "queue above which the limit shrinks by log10(limit); None = 6 × log10(limit) (beta)", default = None;
    threshold: OptCount { min: 0, max: MAX_LIMIT }, "calls",
        runtime(apply = |g, n| g.threshold = n),
        "queue at or below which the limit grows by beta; None = log10(limit) (threshold)", default = None;
    probe_multiplier: Count { min: 1, max: 1_000_000 }, "samples per call of limit",
        runtime(apply = |g, n| g.probe_multiplier = n),
        "a no-load RTT probe every jitter × probe_multiplier × limit samples (probeMultiplier)", default = 30;
}

impl crate::params::GovernorSpec for VegasLimitSpec {
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::GateFull]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::SimDuration;

    /// A Vegas state with a no-load RTT of 100 ms already measured and no probe due.
    fn warm(estimate: f64) -> Vegas {
        let (mut v, _) = Vegas::new(&VegasLimitSpec::defaults("v"));
        v.estimate = estimate;
        v.rtt_noload = 100_000_000;
        v.probe_jitter = Some(1.0);
        v
    }

    fn ms(n: u64) -> SimDuration {
        SimDuration::from_ms(n)
    }

    /// `Log10RootIntFunction`: max(1, (int) log10 x).
    #[test]
    fn log10_root_table() {
        for (x, want) in [(0, 1), (1, 1), (9, 1), (10, 1), (99, 1), (100, 2), (999, 2), (1000, 3)] {
            assert_eq!(log10_root(x), want, "LOG10({x})");
        }
    }

    /// `updateEstimatedLimit` row by row from the library's formula, defaults (smoothing 1,
    /// max 1000), no-load RTT 100 ms: (estimate, rtt ms, inflight, drop) → limit after.
    #[test]
    fn update_table() {
        #[rustfmt::skip]
        let rows: &[(f64, u64, u64, bool, u64, &str)] = &[
            // queue = ceil(20 × (1 − 100/100)) = 0 ≤ threshold LOG10(20) = 1: + beta (6).
            (20.0, 100, 10, false, 26, "no queue: + beta = 6 × 1"),
            // queue = ceil(20 × (1 − 100/110)) = ceil(1.82) = 2: > threshold 1, < alpha 3.
            (20.0, 110, 10, false, 21, "small queue: + LOG10 = 1"),
            // queue = ceil(20 × (1 − 100/125)) = 4: in [alpha 3, beta 6]: unchanged.
            (20.0, 125, 10, false, 20, "sweet spot: unchanged"),
            // queue = ceil(20 × (1 − 100/200)) = 10 > beta 6: − LOG10 = 1.
            (20.0, 200, 10, false, 19, "queueing: − LOG10"),
            (20.0, 100, 9, false, 20, "inflight × 2 = 18 < 20: app-limited"),
            (20.0, 100, 1, true, 19, "a drop decreases even app-limited"),
            // At 150 LOG10 = 2: alpha 6, beta 12, threshold 2. queue = ceil(150 × 0.2) = 30.
            (150.0, 125, 100, false, 148, "queue 30 > beta 12: − 2"),
            // queue = ceil(150 × (1 − 100/101)) = ceil(1.485) = 2 ≤ threshold 2: + 12.
            (150.0, 101, 100, false, 162, "queue 2 ≤ threshold 2: + beta 12"),
            (995.0, 100, 600, false, 1000, "+ beta 12 clamped to max 1000"),
            (1.0, 100, 1, true, 1, "− 1 from 1 clamped to 1"),
        ];
        for &(est, rtt, inflight, drop, after, why) in rows {
            let mut v = warm(est);
            assert_eq!(v.update(0, &Sample::of(ms(rtt), inflight, drop)), after, "{why}");
        }
    }

    /// Smoothing and fixed alpha/beta/threshold (`Builder.alpha(int)` …).
    #[test]
    fn smoothing_and_fixed_functions() {
        let mut v = warm(20.0);
        v.smoothing = 0.5;
        // + beta 6 smoothed: 0.5 × 20 + 0.5 × 26 = 23.
        assert_eq!(v.update(0, &Sample::of(ms(100), 10, false)), 23);
        assert_eq!(v.estimate, 23.0);
        let mut v = warm(20.0);
        (v.alpha, v.beta, v.threshold) = (Some(1), Some(2), Some(0));
        // queue = ceil(20 × (1 − 100/110)) = 2: not ≤ 0, not < 1, not > 2: unchanged.
        assert_eq!(v.update(0, &Sample::of(ms(110), 10, false)), 20);
        // queue 4 > beta 2: − LOG10(20) = 1 (the decrease function stays the default).
        assert_eq!(v.update(0, &Sample::of(ms(125), 10, false)), 19);
        // queue 0 ≤ threshold 0: + beta 2.
        assert_eq!(v.update(0, &Sample::of(ms(100), 10, false)), 21);
    }

    /// The no-load RTT: the first sample and faster ones set it without moving the limit;
    /// a probe every jitter × multiplier × limit samples resets it to the sample's RTT.
    #[test]
    fn rtt_noload_and_probe() {
        let (mut v, l) =
            Vegas::new(&VegasLimitSpec { probe_multiplier: 1, ..VegasLimitSpec::defaults("v") });
        assert_eq!(l, 20);
        assert_eq!(v.update(20, &Sample::of(ms(100), 10, false)), 20);
        assert_eq!(v.rtt_noload, 100_000_000);
        let j = v.probe_jitter.unwrap();
        assert!((0.5..1.0).contains(&j));
        assert_eq!(v.update(20, &Sample::of(ms(90), 10, false)), 20, "faster: new no-load");
        assert_eq!(v.rtt_noload, 90_000_000);
        // With multiplier 1 the probe is due once probe_count ≥ j × 20 (10–20 samples).
        let due = (j * 20.0).ceil() as u64;
        let mut n = 2;
        // App-limited samples (inflight 1): the estimate, and so the due count, stay put.
        while n + 1 < due {
            v.update(0, &Sample::of(ms(300), 1, false));
            n += 1;
        }
        assert_eq!(v.probes, 0);
        let before = v.estimate as u64;
        assert_eq!(v.update(0, &Sample::of(ms(500), 1, false)), before, "a probe keeps the limit");
        assert_eq!((v.probes, v.probe_count, v.rtt_noload), (1, 0, 500_000_000));
        // A zero RTT takes no sample.
        let c = v.probe_count;
        v.update(0, &Sample::of(SimDuration::ZERO, 10, false));
        assert_eq!(v.probe_count, c);
    }

    /// A zero-RTT answer (in the nanosecond its call passed) gives its permit back and
    /// moves nothing: `in_flight` returns to 0, the limit stays, no probe is counted (the
    /// library throws from `_update` after `AbstractLimiter`'s listener has already
    /// decremented `inFlight`: no permit is leaked there either).
    #[test]
    fn zero_rtt_returns_the_permit() {
        use crate::governor::{CallInfo, Governor};
        use crate::outcome::Outcome;
        use sim_core::SimTime;
        let mut l: VegasLimit = SimpleLimiter::new(&VegasLimitSpec::defaults("v"));
        let t = SimTime(5_000);
        for i in 0..3 {
            let c = CallInfo::simple(i, 0);
            l.on_call(&c, t);
            l.on_outcome(&c, Outcome::Success, t);
        }
        assert_eq!((l.in_flight(), l.limit(), l.succeeded), (0, 20, 3));
        assert_eq!(l.algorithm().probe_count, 0);
    }
}
