//! The Resilience4j circuit breaker's configuration as written in scenarios: Resilience4j's
//! parameter names in snake_case (Spring Boot's for the exponential open wait), its
//! defaults, range checks inside deserialization, and the open-wait interval function.
//!
//! Architecture invariant: every value a [`CircuitBreakerSpec`] holds after deserialization
//! is in the range [`super::CircuitBreaker::new`] asserts.
//!
//! API boundary: plain data; the run-time state lives in [`super::r4j`].

use super::OutcomePattern;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;
use sim_core::time::NS_PER_MS;

crate::params::param_choices! {
    /// `slidingWindowType` (a registered enum parameter, `circuit_breaker.<name>.sliding_window_type`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub enum SlidingWindowType {
        CountBased = "COUNT_BASED",
        TimeBased = "TIME_BASED",
    }
}

crate::params::param_choices! {
    /// `transitionToStateAfterWaitDuration`: the state a HALF_OPEN breaker is forced into
    /// after `max_wait_duration_in_half_open_state` (a registered enum parameter, run-time).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub enum StateAfterMaxWait {
        Open = "OPEN",
        Closed = "CLOSED",
    }
}

/// The priority-aware half-open (not in Resilience4j).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "HalfOpenWait")]
pub struct HalfOpenWaitSpec {
    /// How long a call waits for a probe permit before it is rejected (`breaker_open`).
    #[serde(deserialize_with = "R::half_open_max_wait")]
    pub max_wait: SimDuration,
    /// Bound on waiting calls; beyond it calls are rejected at once.
    #[serde(deserialize_with = "R::half_open_max_waiting")]
    pub max_waiting: u64,
}

/// A Resilience4j circuit breaker as written in scenarios (Resilience4j's names in
/// snake_case, its defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "CircuitBreaker")]
pub struct CircuitBreakerSpec {
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Open when the failure rate (percent) is ≥ this.
    #[serde(default = "D::failure_rate_threshold", deserialize_with = "R::failure_rate_threshold")]
    pub failure_rate_threshold: f64,
    /// Open when the slow-call rate (percent) is ≥ this.
    #[serde(
        default = "D::slow_call_rate_threshold",
        deserialize_with = "R::slow_call_rate_threshold"
    )]
    pub slow_call_rate_threshold: f64,
    /// A call is slow when its duration is strictly greater than this.
    #[serde(
        default = "D::slow_call_duration_threshold",
        deserialize_with = "R::slow_call_duration_threshold"
    )]
    pub slow_call_duration_threshold: SimDuration,
    #[serde(
        default = "D::permitted_number_of_calls_in_half_open_state",
        deserialize_with = "R::permitted_number_of_calls_in_half_open_state"
    )]
    pub permitted_number_of_calls_in_half_open_state: u64,
    /// `"0s"` = unlimited.
    #[serde(default = "D::max_wait_duration_in_half_open_state")]
    pub max_wait_duration_in_half_open_state: SimDuration,
    #[serde(default = "D::transition_to_state_after_wait_duration")]
    pub transition_to_state_after_wait_duration: StateAfterMaxWait,
    #[serde(default = "D::sliding_window_type")]
    pub sliding_window_type: SlidingWindowType,
    /// Results (COUNT_BASED) or seconds (TIME_BASED).
    #[serde(default = "D::sliding_window_size", deserialize_with = "R::sliding_window_size")]
    pub sliding_window_size: u64,
    #[serde(
        default = "D::minimum_number_of_calls",
        deserialize_with = "R::minimum_number_of_calls"
    )]
    pub minimum_number_of_calls: u64,
    #[serde(
        default = "D::wait_duration_in_open_state",
        deserialize_with = "R::wait_duration_in_open_state"
    )]
    pub wait_duration_in_open_state: SimDuration,
    /// Spring's `enableExponentialBackoff`: the open wait grows per re-open.
    #[serde(default = "D::enable_exponential_backoff")]
    pub enable_exponential_backoff: bool,
    /// Resilience4j's `IntervalFunction.DEFAULT_MULTIPLIER` 1.5 by default.
    #[serde(
        default = "D::exponential_backoff_multiplier",
        deserialize_with = "R::exponential_backoff_multiplier"
    )]
    pub exponential_backoff_multiplier: f64,
    /// Cap of the exponential wait; none by default.
    #[serde(
        default,
        deserialize_with = "crate::params::RangedSome::<CircuitBreakerSpec>::exponential_max_wait_duration_in_open_state",
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::validate::ser_present"
    )]
    pub exponential_max_wait_duration_in_open_state: Option<SimDuration>,
    #[serde(default = "D::automatic_transition_from_open_to_half_open_enabled")]
    pub automatic_transition_from_open_to_half_open_enabled: bool,
    #[serde(default = "super::default_record_exceptions", deserialize_with = "super::patterns")]
    pub record_exceptions: Vec<OutcomePattern>,
    #[serde(default = "super::default_ignore_exceptions", deserialize_with = "super::patterns")]
    pub ignore_exceptions: Vec<OutcomePattern>,
    /// Priority-aware half-open; none = Resilience4j's immediate rejection.
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::validate::ser_present"
    )]
    pub half_open_wait: Option<HalfOpenWaitSpec>,
    /// Switched off (Resilience4j's `transitionToForcedOpenState`): every call is rejected
    /// with `breaker_open` and nothing is recorded; switching it back on closes the breaker
    /// with fresh metrics. A run-time knob (docs/domain.md §3.16: a model switched off).
    #[serde(default = "D::forced_open")]
    pub forced_open: bool,
    /// DISABLED (`transitionToDisabledState`): every call permitted, nothing recorded;
    /// switching it off closes the breaker with fresh metrics. A run-time knob.
    #[serde(default = "D::disabled", skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// METRICS_ONLY (`transitionToMetricsOnlyState`): every call permitted and recorded, the
    /// thresholds never open it; switching it off closes the breaker with fresh metrics.
    #[serde(default = "D::metrics_only", skip_serializing_if = "std::ops::Not::not")]
    pub metrics_only: bool,
}

/// The defaults declared in the parameter rows (`super::params`).
type D = crate::params::Defaults<CircuitBreakerSpec>;
/// The fields parsed with their rows' types and ranges (`super::params`).
type R = crate::params::Ranged<CircuitBreakerSpec>;

impl CircuitBreakerSpec {
    /// A spec with every default (tests, programmatic construction).
    pub fn with_defaults(name: &str) -> Self {
        CircuitBreakerSpec {
            name: name.into(),
            failure_rate_threshold: D::failure_rate_threshold(),
            slow_call_rate_threshold: D::slow_call_rate_threshold(),
            slow_call_duration_threshold: D::slow_call_duration_threshold(),
            permitted_number_of_calls_in_half_open_state:
                D::permitted_number_of_calls_in_half_open_state(),
            max_wait_duration_in_half_open_state: D::max_wait_duration_in_half_open_state(),
            transition_to_state_after_wait_duration: D::transition_to_state_after_wait_duration(),
            sliding_window_type: D::sliding_window_type(),
            sliding_window_size: D::sliding_window_size(),
            minimum_number_of_calls: D::minimum_number_of_calls(),
            wait_duration_in_open_state: D::wait_duration_in_open_state(),
            enable_exponential_backoff: D::enable_exponential_backoff(),
            exponential_backoff_multiplier: D::exponential_backoff_multiplier(),
            exponential_max_wait_duration_in_open_state: None,
            automatic_transition_from_open_to_half_open_enabled:
                D::automatic_transition_from_open_to_half_open_enabled(),
            record_exceptions: super::default_record_exceptions(),
            ignore_exceptions: super::default_ignore_exceptions(),
            half_open_wait: None,
            forced_open: D::forced_open(),
            disabled: D::disabled(),
            metrics_only: D::metrics_only(),
        }
    }
}

/// Resilience4j's `IntervalFunction` at `attempt` (≥ 1): constant, or exponential in whole
/// milliseconds with every step truncated (`(long) Math.min(x * multiplier, max)`).
pub fn open_wait(spec: &CircuitBreakerSpec, attempt: u32) -> SimDuration {
    assert!(attempt >= 1);
    if !spec.enable_exponential_backoff {
        // `IntervalFunction.of(waitDurationInOpenState)`: `Duration.toMillis()`.
        return SimDuration(spec.wait_duration_in_open_state.0 / NS_PER_MS * NS_PER_MS);
    }
    let max_ms =
        spec.exponential_max_wait_duration_in_open_state.map_or(u64::MAX, |m| m.0 / NS_PER_MS);
    let mut x = spec.wait_duration_in_open_state.0 / NS_PER_MS;
    for _ in 1..attempt {
        let next = (x as f64 * spec.exponential_backoff_multiplier).min(max_ms as f64) as u64;
        if next == x {
            break; // saturated (cap reached, or the product truncates back to x)
        }
        x = next;
    }
    SimDuration(x.min(max_ms).saturating_mul(NS_PER_MS))
}
