//! An adaptive concurrency limit: Netflix concurrency-limits' `AIMDLimit` (additive
//! increase, multiplicative decrease) under the shared `SimpleLimiter` (`adaptive.rs`),
//! from `aimd_limits`.
//!
//! `AIMDLimit._update` on each sample:
//! * a drop or `rtt > timeout`: `limit = (int)(limit × backoff_ratio)`;
//! * else, if `inflight × 2 ≥ limit`: `limit + 1` (grow only while the limit is used);
//! * the result clamped, `min(max_limit, max(min_limit, x))` (with `min_limit >
//!   max_limit` the limit is `max_limit`, as in the library).
//!
//! Gauges `aimd_limit.<name>.{limit, in_flight}`, `limit_increase`/`limit_decrease` events and the
//! summary counters come from the limiter.

use crate::adaptive::windowed::WindowedSpec;
use crate::adaptive::{LimitAlgorithm, LimiterOutcomes, MAX_LIMIT, Sample, SimpleLimiter};
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// Configuration, named as `AIMDLimit.Builder` names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "AimdLimit")]
pub struct AimdLimitSpec {
    /// Name; parameters live under `aimd_limit.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// The limit before the first sample (`initialLimit`, default 20).
    #[serde(default = "D::initial_limit")]
    pub initial_limit: u64,
    /// The lowest limit (`minLimit`, default 20).
    #[serde(default = "D::min_limit")]
    pub min_limit: u64,
    /// The highest limit (`maxLimit`, default 200).
    #[serde(default = "D::max_limit")]
    pub max_limit: u64,
    /// Factor applied on a drop (`backoffRatio`, [0.5, 1.0), default 0.9).
    #[serde(default = "D::backoff_ratio")]
    pub backoff_ratio: f64,
    /// A round trip longer than this counts as a drop (`timeout`, default 5 s).
    #[serde(default = "D::timeout")]
    pub timeout: SimDuration,
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
type D = crate::params::Defaults<AimdLimitSpec>;

impl AimdLimitSpec {
    /// The library's defaults under a name.
    pub fn defaults(name: &str) -> Self {
        AimdLimitSpec {
            name: name.into(),
            initial_limit: D::initial_limit(),
            min_limit: D::min_limit(),
            max_limit: D::max_limit(),
            backoff_ratio: D::backoff_ratio(),
            timeout: D::timeout(),
            outcomes: LimiterOutcomes::Stormglass,
            windowed: None,
        }
    }
}

/// The algorithm's state: its parameters in force.
#[derive(Clone, Debug)]
pub struct Aimd {
    min_limit: u64,
    max_limit: u64,
    backoff_ratio: f64,
    timeout: SimDuration,
}

/// The run-time state of an `AimdLimit`.
pub type AimdLimit = SimpleLimiter<Aimd>;

impl LimitAlgorithm for Aimd {
    type Spec = AimdLimitSpec;
    fn outcomes(spec: &AimdLimitSpec) -> LimiterOutcomes {
        spec.outcomes
    }
    fn windowed(spec: &AimdLimitSpec) -> Option<&WindowedSpec> {
        spec.windowed.as_ref()
    }
    fn new(spec: &AimdLimitSpec) -> (Self, u64) {
        let a = Aimd {
            min_limit: spec.min_limit,
            max_limit: spec.max_limit,
            backoff_ratio: spec.backoff_ratio,
            timeout: spec.timeout,
        };
        (a, spec.initial_limit)
    }

    /// `AIMDLimit._update`.
    fn update(&mut self, limit: u64, s: &Sample) -> u64 {
        let mut l = limit;
        if s.did_drop || s.rtt > self.timeout {
            // Java's `(int) (currentLimit * backoffRatio)`: truncation toward zero.
            l = (l as f64 * self.backoff_ratio) as u64;
        } else if s.inflight * 2 >= l {
            l += 1;
        }
        l.max(self.min_limit).min(self.max_limit)
    }
}

crate::params::declare_params! {
    AimdLimitSpec: "aimd_limit", name = |s| s.name, part = windowed[WindowedSpec],
        state = Aimd;
    outcomes: Enum { choices: LimiterOutcomes::CHOICES }, "", fixed,
        "which outcomes are onSuccess/onDropped/onIgnore: STORMGLASS (default), or as the library's GRPC_CLIENT, GRPC_SERVER, SERVLET integrations";
    initial_limit: Count { min: 1, max: MAX_LIMIT }, "calls", fixed,
        "the limit before the first sample (initialLimit)", default = 20;
    min_limit: Count { min: 1, max: MAX_LIMIT }, "calls",
        runtime(apply = |a, n| a.min_limit = n), "the lowest limit (minLimit)", default = 20;
    max_limit: Count { min: 1, max: MAX_LIMIT }, "calls",
        runtime(apply = |a, n| a.max_limit = n), "the highest limit (maxLimit)", default = 200;
    backoff_ratio: Float { min: 0.5, max: 0.999_999 }, "ratio",
        runtime(apply = |a, x| a.backoff_ratio = x),
        "factor applied to the limit on a drop, in [0.5, 1.0) (backoffRatio)", default = 0.9;
    timeout: Duration { min: SimDuration::from_ns(1), max: SimDuration::from_secs(86_400) },
        "ns",
        runtime(apply = |a, d| a.timeout = d),
        "a round trip longer than this counts as a drop (timeout)", default = SimDuration::from_secs(5);
}

impl crate::params::GovernorSpec for AimdLimitSpec {
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::GateFull]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (limit before, min, max, rtt ms, inflight, drop, limit after, why).
    type Row = (u64, u64, u64, u64, u64, bool, u64, &'static str);

    /// `AIMDLimit._update(startTime, rtt, inflight, didDrop)`, row by row from the
    /// library's formula: (limit before, min, max, rtt ms, inflight, drop) → limit after.
    #[test]
    fn update_table() {
        #[rustfmt::skip]
        let rows: &[Row] = &[
            (20, 20, 200, 10, 10, false, 21, "inflight×2 = 20 ≥ 20: additive increase"),
            (20, 20, 200, 10, 9, false, 20, "inflight×2 = 18 < 20: app-limited, unchanged"),
            (100, 20, 200, 10, 60, true, 90, "drop: ×0.9"),
            (25, 20, 200, 10, 20, true, 22, "drop: (int)22.5 = 22, truncated"),
            (21, 20, 200, 10, 20, true, 20, "drop: (int)18.9 = 18, raised to min 20"),
            (100, 20, 200, 5001, 60, false, 90, "rtt 5.001 s > timeout 5 s: a drop"),
            (100, 20, 200, 5000, 60, false, 101, "rtt = timeout is no drop (strictly greater)"),
            (200, 20, 200, 10, 150, false, 200, "at max: clamped"),
            (55, 20, 50, 10, 1, false, 50, "above max (initial): clamped on the first sample"),
            (30, 40, 30, 10, 1, false, 30, "min > max: min(max, max(min, x)) = max"),
            (11, 1, 200, 10, 5, true, 9, "(int)9.9 = 9: truncation, not rounding"),
        ];
        for &(before, min, max, rtt_ms, inflight, drop, after, why) in rows {
            let spec =
                AimdLimitSpec { min_limit: min, max_limit: max, ..AimdLimitSpec::defaults("a") };
            let (mut a, _) = Aimd::new(&spec);
            assert_eq!(
                a.update(before, &Sample::of(SimDuration::from_ms(rtt_ms), inflight, drop)),
                after,
                "{why}"
            );
        }
    }
}
