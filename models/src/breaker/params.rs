//! The breakers' parameters in the registry: `circuit_breaker.<name>.*` (Resilience4j) and
//! `degrade_rule.<name>.*` (Sentinel).
//!
//! Architecture invariant: a parameter marked `runtime` has a setter on the run-time state
//! that keeps the window ([`super::CircuitBreaker`], [`super::DegradeBreaker`]); the
//! declared ranges are the ranges the scenario validation enforces.
//!
//! API boundary: the registry reads and writes specs by name; the world applies run-time
//! changes through the state's setters (see the integration notes in the final report).

use super::{
    CircuitBreakerSpec, CircuitBreakerStrategy, DegradeRuleSpec, SlidingWindowType,
    StateAfterMaxWait,
};
use sim_core::SimDuration;

const DAY: SimDuration = SimDuration::from_secs(86_400);

crate::params::declare_params! {
    CircuitBreakerSpec: "circuit_breaker", name = |s| s.name,
        scenario_only = [
            record_exceptions: "outcome patterns (`<kind>` or `<kind>:<reason>`): no parameter type for patterns",
            ignore_exceptions: "outcome patterns (`<kind>` or `<kind>:<reason>`): no parameter type for patterns",
        ],
        state = super::CircuitBreaker;
    failure_rate_threshold: FloatAbove { above: 0.0, max: 100.0 }, "%",
        runtime(apply = |b, x| b.set_failure_rate_threshold(x)),
        "open when the failure rate is ≥ this", default = 50.0;
    slow_call_rate_threshold: FloatAbove { above: 0.0, max: 100.0 }, "%",
        runtime(apply = |b, x| b.set_slow_call_rate_threshold(x)),
        "open when the slow-call rate is ≥ this", default = 100.0;
    slow_call_duration_threshold: Duration { min: SimDuration(1), max: DAY }, "ns",
        runtime(apply = |b, d| b.set_slow_call_duration_threshold(d)),
        "slow when strictly longer", default = SimDuration::from_secs(60);
    minimum_number_of_calls: Count { min: 1, max: 10_000_000 }, "calls",
        runtime(apply = |b, n| b.set_minimum_number_of_calls(n)),
        "results before a verdict", default = 100;
    wait_duration_in_open_state: Duration { min: SimDuration::from_ms(1), max: DAY }, "ns",
        runtime(apply = |b, d| b.set_wait_duration_in_open_state(d)),
        "OPEN wait (next opening)", default = SimDuration::from_secs(60);
    permitted_number_of_calls_in_half_open_state: Count { min: 1, max: 1_000_000 }, "calls",
        runtime(apply = |b, n| b.set_permitted_number_of_calls_in_half_open_state(n)),
        "probe permits (next HALF_OPEN)", default = 10;
    max_wait_duration_in_half_open_state: Duration { min: SimDuration::ZERO, max: DAY }, "ns",
        runtime(apply = |b, d| b.set_max_wait_duration_in_half_open_state(d)),
        "forced transition after this long in HALF_OPEN (0 = never; next HALF_OPEN)", default = SimDuration::ZERO;
    transition_to_state_after_wait_duration: Enum { choices: StateAfterMaxWait::CHOICES }, "",
        runtime(apply = |b, s| b.set_transition_after_max_wait(s)),
        "the state HALF_OPEN is forced into after max_wait_duration_in_half_open_state", default = "OPEN";
    automatic_transition_from_open_to_half_open_enabled: Bool, "",
        runtime(apply = |b, on| b.set_automatic_transition(on)),
        "OPEN → HALF_OPEN by timer instead of on the next call", default = false;
    sliding_window_type: Enum { choices: SlidingWindowType::CHOICES }, "", fixed,
        "COUNT_BASED: the last sliding_window_size calls; TIME_BASED: the last sliding_window_size seconds", default = "COUNT_BASED";
    sliding_window_size: Count { min: 1, max: 1_000_000 }, "calls or s", fixed, "window length", default = 100;
    enable_exponential_backoff: Bool, "", fixed,
        "the OPEN wait grows per re-open (Spring's enableExponentialBackoff)", default = false;
    exponential_backoff_multiplier: Float { min: 1.0, max: 1000.0 }, "×", fixed,
        "factor on the OPEN wait per re-open (exponentialBackoffMultiplier)", default = 1.5;
    // Registered where a cap is set.
    exponential_max_wait_duration_in_open_state: Duration { min: SimDuration::from_ms(1),
        max: SimDuration(u64::MAX) }, "ns", fixed, "cap of the exponential OPEN wait",
        opt_get = |s| s.exponential_max_wait_duration_in_open_state,
        set = |s, d| s.exponential_max_wait_duration_in_open_state = Some(d);
    // Registered for a breaker with a priority-aware half-open (`half_open_wait`).
    half_open_max_wait: Duration { min: SimDuration::ZERO, max: DAY }, "ns", fixed,
        "half_open_wait.max_wait: how long a call waits for a probe permit",
        opt_get = |s| s.half_open_wait.as_ref().map(|w| w.max_wait),
        set = |s, d| half_open(s)?.max_wait = d,
        field = "half_open_wait.max_wait";
    half_open_max_waiting: Count { min: 1, max: 100_000_000 }, "calls", fixed,
        "half_open_wait.max_waiting: bound on calls waiting for a probe permit",
        opt_get = |s| s.half_open_wait.as_ref().map(|w| w.max_waiting),
        set = |s, n| half_open(s)?.max_waiting = n,
        field = "half_open_wait.max_waiting";
    forced_open: Bool, "", runtime(apply = |b, on, now| b.set_forced_open(on, now)),
        "switched off: every call rejected (FORCED_OPEN); false → CLOSED", default = false;
    disabled: Bool, "", runtime(apply = |b, on, now| b.set_disabled(on, now)),
        "DISABLED: every call permitted, nothing recorded; false → CLOSED", default = false;
    metrics_only: Bool, "", runtime(apply = |b, on, now| b.set_metrics_only(on, now)),
        "METRICS_ONLY: every call permitted and recorded, never opened; false → CLOSED", default = false;
}

/// The priority-aware half-open of a breaker that has one.
fn half_open(s: &mut CircuitBreakerSpec) -> Result<&mut super::HalfOpenWaitSpec, String> {
    s.half_open_wait.as_mut().ok_or_else(|| "circuit_breaker: no `half_open_wait`".to_string())
}

/// An ERROR_RATIO rule's count is a ratio: the cross-field rule of a scenario's value and of
/// a run-time change.
fn error_ratio_count(grade: CircuitBreakerStrategy, x: f64) -> Result<(), String> {
    if grade == CircuitBreakerStrategy::ErrorRatio && x > 1.0 {
        return Err(format!("ERROR_RATIO count must be in [0, 1], found {x}"));
    }
    Ok(())
}

crate::params::declare_params! {
    DegradeRuleSpec: "degrade_rule", name = |s| s.name,
        check = |s: &DegradeRuleSpec| error_ratio_count(s.grade, s.count),
        scenario_only = [
            record_exceptions: "outcome patterns (`<kind>` or `<kind>:<reason>`): no parameter type for patterns",
            ignore_exceptions: "outcome patterns (`<kind>` or `<kind>:<reason>`): no parameter type for patterns",
        ],
        state = super::DegradeBreaker;
    grade: Enum { choices: CircuitBreakerStrategy::CHOICES }, "", fixed,
        "what `count` bounds: SLOW_REQUEST_RATIO (max RT, ms), ERROR_RATIO or ERROR_COUNT";
    count: Float { min: 0.0, max: 1e12 }, "ms | ratio | errors",
        runtime(apply = |b, x| {
            error_ratio_count(b.spec().grade, x)?;
            b.set_count(x)
        }),
        "max RT (SLOW_REQUEST_RATIO), error ratio ≤ 1 (ERROR_RATIO) or error count";
    // Registered for SLOW_REQUEST_RATIO rules only.
    slow_ratio_threshold: Float { min: 0.0, max: 1.0 }, "ratio",
        runtime(apply = |b, x| b.set_slow_ratio_threshold(x)),
        "slow-call ratio above which the rule opens", default = 1.0,
        opt_get = |s| {
            (s.grade == CircuitBreakerStrategy::SlowRequestRatio).then_some(s.slow_ratio_threshold)
        };
    time_window: Count { min: 1, max: 86_400 }, "s", runtime(apply = |b, n| b.set_time_window(n)),
        "OPEN duration before a probe (next opening)";
    min_request_amount: Count { min: 1, max: 10_000_000 }, "calls",
        runtime(apply = |b, n| b.set_min_request_amount(n)),
        "completions before a verdict", default = 5;
    stat_interval_ms: Count { min: 1, max: 86_400_000 }, "ms", fixed, "statistics bucket length", default = 1000;
}

impl crate::params::GovernorSpec for CircuitBreakerSpec {
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::BreakerOpen]
    }
    fn records_failure(&self, o: crate::outcome::Outcome) -> Option<bool> {
        Some(
            super::classify(&self.record_exceptions, &self.ignore_exceptions, o)
                == super::Classified::Failure,
        )
    }
}
impl crate::params::GovernorSpec for DegradeRuleSpec {
    fn local_refusals(&self) -> Vec<crate::outcome::Reason> {
        vec![crate::outcome::Reason::BreakerOpen]
    }
    fn records_failure(&self, o: crate::outcome::Outcome) -> Option<bool> {
        Some(
            super::classify(&self.record_exceptions, &self.ignore_exceptions, o)
                == super::Classified::Failure,
        )
    }
}

impl crate::governor::GovernorKindOps for super::CircuitBreaker {
    type Spec = CircuitBreakerSpec;
    fn build(spec: &CircuitBreakerSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        super::CircuitBreaker::new(spec)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("state_changes", self.counters.state_changes),
            ("not_permitted", self.counters.not_permitted),
        ]
    }
}

impl crate::governor::GovernorKindOps for super::DegradeBreaker {
    type Spec = DegradeRuleSpec;
    fn build(spec: &DegradeRuleSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        super::DegradeBreaker::new(spec)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![("state_changes", self.counters.state_changes), ("blocked", self.counters.blocked)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ApplyParam as _, ParamValue as V, Params, Registry};
    use sim_core::SimTime;

    /// Every declared parameter is listed with a value of its type, writes back unchanged,
    /// and the run-time ones apply to the state.
    #[test]
    fn registry_round_trip_and_runtime_apply() {
        // With the optional parts, so that every declared parameter is registered.
        let cb = CircuitBreakerSpec {
            exponential_max_wait_duration_in_open_state: Some(SimDuration::from_secs(10)),
            half_open_wait: Some(super::super::HalfOpenWaitSpec {
                max_wait: SimDuration::from_secs(1),
                max_waiting: 10,
            }),
            ..CircuitBreakerSpec::with_defaults("llm")
        };
        let dr = DegradeRuleSpec::new("llm", CircuitBreakerStrategy::SlowRequestRatio, 5000.0, 30);
        let mut reg = Registry::default();
        reg.add_component(&cb, crate::components::Owner::Governor(0));
        reg.add_component(&dr, crate::components::Owner::Governor(1));
        assert_eq!(reg.len(), CircuitBreakerSpec::decls().len() + DegradeRuleSpec::decls().len());
        for p in reg.iter() {
            p.ty.check(&p.value).unwrap_or_else(|e| panic!("{}: {e}", p.path));
        }
        assert_eq!(
            reg.get("circuit_breaker.llm.failure_rate_threshold").map(|p| p.value.clone()),
            Some(V::Float(50.0))
        );
        let mut cb2 = cb.clone();
        let mut state = super::super::CircuitBreaker::new(&cb);
        for d in CircuitBreakerSpec::decls() {
            let v = cb.get(d.name).unwrap();
            cb2.set(d.name, v.clone()).unwrap();
            assert_eq!(
                state.apply_param(d.name, v, SimTime::ZERO).is_ok(),
                d.runtime,
                "{}",
                d.name
            );
        }
        assert_eq!(cb2, cb);
        let mut dr2 = dr.clone();
        let mut rule = super::super::DegradeBreaker::new(&dr);
        for d in DegradeRuleSpec::decls() {
            let v = dr.get(d.name).unwrap();
            dr2.set(d.name, v.clone()).unwrap();
            assert_eq!(rule.apply_param(d.name, v, SimTime::ZERO).is_ok(), d.runtime, "{}", d.name);
        }
        assert_eq!(dr2, dr);
        state.apply_param("failure_rate_threshold", V::Float(25.0), SimTime::ZERO).unwrap();
        assert_eq!(state.spec().failure_rate_threshold, 25.0);
        assert!(cb2.set("failure_rate_threshold", V::Count(3)).is_err());
        let mut ratio = DegradeRuleSpec::new("r", CircuitBreakerStrategy::ErrorRatio, 0.5, 1);
        assert!(ratio.set("count", V::Float(2.0)).is_err());
        assert_eq!(ratio.get("slow_ratio_threshold"), None, "only for SLOW_REQUEST_RATIO");
        // The grade and the count are checked together (the header's `check`), either side set.
        let mut slow =
            DegradeRuleSpec::new("s", CircuitBreakerStrategy::SlowRequestRatio, 200.0, 1);
        assert!(slow.set("grade", V::Enum("ERROR_RATIO".into())).is_err(), "count 200 > 1");
        assert_eq!(slow.grade, CircuitBreakerStrategy::SlowRequestRatio, "refused, undone");
        slow.set("grade", V::Enum("ERROR_COUNT".into())).expect("200 errors is a count");
    }
}
