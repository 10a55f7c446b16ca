//! The retry governor's scenario types: [`RetrySpec`] and its per-class overrides.

use super::Policy;
use super::backoff::{Backoff, Jitter};
use super::budget::RetryBudgetSpec;
use crate::outcome::Reason;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sim_core::SimDuration;

/// Reasons no retry policy may list.
pub const NEVER_RETRIED: [Reason; 2] = [Reason::BusinessError, Reason::BreakerOpen];

/// The reasons a policy may list, by their stable names: every reason but
/// [`NEVER_RETRIED`], in column order (a test holds it to `Reason::ALL`).
const RETRYABLE: &[&str] = &[
    "timeout",
    "queue_full",
    "gate_full",
    "pool_full",
    "rate_limited",
    "upstream_429",
    "upstream_5xx",
    "connect_error",
    "stream_interrupted",
    "shed",
];
/// An entry of `retry_on`.
const RETRY_REASON: crate::params::ParamType =
    crate::params::ParamType::Name { choices: RETRYABLE };

/// Configuration of a retry governor, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Retry")]
pub struct RetrySpec {
    /// Name; the parameters live under `retry.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Attempts including the first call (Resilience4j `maxAttempts`, default 3), 1..=100.
    #[serde(default = "D::max_attempts", deserialize_with = "R::max_attempts")]
    pub max_attempts: u64,
    /// Reasons (stable names) whose failures/rejections are retried.
    #[serde(default = "D::retry_on", with = "reason_list")]
    pub retry_on: Vec<Reason>,
    #[serde(default)]
    pub backoff: Backoff,
    #[serde(default)]
    pub jitter: Jitter,
    /// Total time from the first call within which every retry must be sent; absent =
    /// unlimited.
    #[serde(
        default,
        deserialize_with = "crate::params::RangedSome::<RetrySpec>::total_budget",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub total_budget: Option<SimDuration>,
    #[serde(default)]
    pub budget: RetryBudgetSpec,
    /// Overrides per traffic class (by class name), e.g. P0 2 attempts, P1/P2 1.
    #[serde(default)]
    pub class_policies: Vec<ClassRetryPolicy>,
    /// Bound on calls tracked at once.
    #[serde(default = "D::max_tracked_calls", deserialize_with = "R::max_tracked_calls")]
    pub max_tracked_calls: u64,
}

/// A class's overrides of the default policy (absent fields inherit it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "ClassRetryPolicy")]
pub struct ClassRetryPolicy {
    pub class: String,
    #[serde(
        default,
        deserialize_with = "crate::params::RangedSome::<RetrySpec>::max_attempts",
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::validate::ser_present"
    )]
    pub max_attempts: Option<u64>,
    #[serde(
        default,
        deserialize_with = "opt_reason_list",
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_opt_reason_list"
    )]
    pub retry_on: Option<Vec<Reason>>,
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::validate::ser_present"
    )]
    pub backoff: Option<Backoff>,
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::validate::ser_present"
    )]
    pub jitter: Option<Jitter>,
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::validate::ser_present"
    )]
    pub total_budget: Option<SimDuration>,
}

impl ClassRetryPolicy {
    pub(super) fn apply(&self, base: &Policy) -> Policy {
        Policy {
            max_attempts: self.max_attempts.map_or(base.max_attempts, |n| n as u32),
            retry_on: self.retry_on.clone().unwrap_or_else(|| base.retry_on.clone()),
            backoff: self.backoff.clone().unwrap_or_else(|| base.backoff.clone()),
            jitter: self.jitter.clone().unwrap_or_else(|| base.jitter.clone()),
            total_budget: self.total_budget.or(base.total_budget),
        }
    }
}

impl RetrySpec {
    /// A spec with every default (tests, builders).
    pub fn named(name: &str) -> RetrySpec {
        RetrySpec {
            name: name.into(),
            max_attempts: D::max_attempts(),
            retry_on: default_retry_on(),
            backoff: Backoff::default(),
            jitter: Jitter::None,
            total_budget: None,
            budget: RetryBudgetSpec::Unlimited,
            class_policies: vec![],
            max_tracked_calls: D::max_tracked_calls(),
        }
    }

    /// Cross-reference check: every override names a known class, at most once.
    pub fn check_classes(&self, classes: &[&str]) -> Result<(), String> {
        for (i, cp) in self.class_policies.iter().enumerate() {
            if !classes.contains(&cp.class.as_str()) {
                return Err(format!(
                    "class_policies[{i}].class: unknown class `{}` (classes: {})",
                    cp.class,
                    classes.join(", ")
                ));
            }
            if self.class_policies[..i].iter().any(|o| o.class == cp.class) {
                return Err(format!("class_policies[{i}].class: `{}` listed twice", cp.class));
            }
        }
        Ok(())
    }
}

/// The defaults declared in the parameter rows (`declare_params!` below).
pub(super) type D = crate::params::Defaults<RetrySpec>;
/// The fields parsed with their rows' types and ranges (`budget_*` rows for the budget's).
pub(super) type R = crate::params::Ranged<RetrySpec>;

/// Retried by default: failures that may go away (never business errors, never an open
/// breaker, never local refusals such as gate_full).
pub fn default_retry_on() -> Vec<Reason> {
    vec![
        Reason::Timeout,
        Reason::Upstream5xx,
        Reason::Upstream429,
        Reason::ConnectError,
        Reason::StreamInterrupted,
    ]
}

fn opt_reason_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Reason>>, D::Error> {
    reason_list::deserialize(d).map(Some)
}
fn ser_opt_reason_list<S: Serializer>(v: &Option<Vec<Reason>>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => reason_list::serialize(v, s),
        None => s.serialize_none(),
    }
}

/// `retry_on`: reason names (`crate::outcome::reason_names`), never the never-retried ones.
mod reason_list {
    use super::NEVER_RETRIED;
    use crate::outcome::{Reason, reason_names};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Reason], s: S) -> Result<S::Ok, S::Error> {
        reason_names::serialize(v, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Reason>, D::Error> {
        reason_names::parse(d, |r, n| {
            NEVER_RETRIED.contains(&r).then(|| {
                format!(
                    "\"{n}\" is never retried (business errors are not the upstream's fault; \
                     no retries while the breaker is open)"
                )
            })
        })
    }
}

crate::params::declare_params! {
    RetrySpec: "retry", name = |s| s.name,
        parts = CLASS_POLICY => class_policies[ClassRetryPolicy; MAX_CLASS_POLICIES],
        state = super::Retry;
    max_attempts: Count { min: 1, max: MAX_ATTEMPTS }, "attempts",
        runtime(apply = |r, n| r.set_max_attempts(n)),
        "attempts including the first call (classes without their own follow it)", default = 3;
    // Parsed by `reason_list` (its messages say why a reason is never retried).
    retry_on: List { of: &RETRY_REASON, min_len: 0, max_len: RETRYABLE.len() }, "", fixed,
        "reasons whose failures and rejections are retried (classes without their own follow it)",
        default = default_retry_on();
    wait_duration: Duration { min: SimDuration::ZERO, max: MAX_INTERVAL },
        "ns", fixed, "the (first) backoff interval",
        get = |s| s.backoff.wait_duration(),
        set = |s, d| s.backoff.set_wait_duration(d),
        field = "backoff.wait_duration";
    backoff_multiplier: Float { min: 1.0, max: 100.0 }, "×", fixed,
        "exponential backoff's factor per retry (exponentialBackoffMultiplier; Exponential only)",
        default = 1.5,
        opt_get = |s| s.backoff.multiplier(),
        set = |s, x| s.backoff.set_multiplier(x),
        field = "backoff.exponential_backoff_multiplier";
    backoff_max_wait: Duration { min: SimDuration::ZERO, max: SimDuration::MAX }, "ns", fixed,
        "exponential backoff's cap on one interval (exponentialMaxWaitDuration; where declared)",
        opt_get = |s| s.backoff.max_wait(),
        set = |s, d| s.backoff.set_max_wait(d),
        field = "backoff.exponential_max_wait_duration";
    randomized_wait_factor: Float { min: 0.0, max: 1.0 }, "ratio", fixed,
        "spread of a randomized interval (randomizedWaitFactor; Randomized jitter only)",
        default = 0.5,
        opt_get = |s| s.jitter.randomized_wait_factor(),
        set = |s, x| s.jitter.set_randomized_wait_factor(x),
        field = "jitter.randomized_wait_factor";
    jitter_cap: Duration { min: SimDuration::ZERO, max: MAX_INTERVAL }, "ns", fixed,
        "upper bound of a decorrelated-jitter interval (Decorrelated jitter only)",
        opt_get = |s| s.jitter.cap(),
        set = |s, d| s.jitter.set_cap(d),
        field = "jitter.cap";
    budget_max_ratio: Float { min: 0.0, max: 1.0 }, "ratio", fixed,
        "retries allowed per request in the window (Ratio budget only)", default = 0.1,
        opt_get = |s| s.budget.max_ratio(),
        set = |s, x| s.budget.set_float("max_ratio", x),
        field = "budget.max_ratio";
    budget_window: Duration { min: SimDuration(10), max: SimDuration::from_secs(86_400) }, "ns",
        fixed,
        "the ratio's sliding window, ten buckets (Ratio budget only)",
        default = SimDuration::from_secs(10),
        opt_get = |s| s.budget.window(),
        set = |s, d| s.budget.set_window(d),
        field = "budget.window";
    budget_max_tokens: FloatAbove { above: 0.0, max: 1000.0 }, "tokens", fixed,
        "gRPC retry throttling's bucket size (GrpcTokenBucket only)", default = 10.0,
        opt_get = |s| s.budget.max_tokens(),
        set = |s, x| s.budget.set_float("max_tokens", x),
        field = "budget.max_tokens";
    budget_token_ratio: FloatAbove { above: 0.0, max: 1.0 }, "tokens", fixed,
        "tokens a success gives back (GrpcTokenBucket only)", default = 0.1,
        opt_get = |s| s.budget.token_ratio(),
        set = |s, x| s.budget.set_float("token_ratio", x),
        field = "budget.token_ratio";
    budget_percent: Float { min: 0.0, max: 100.0 }, "%", fixed,
        "retries in flight allowed as a share of requests in flight (EnvoyBudget only)",
        default = 20.0,
        opt_get = |s| s.budget.budget_percent(),
        set = |s, x| s.budget.set_float("budget_percent", x),
        field = "budget.budget_percent";
    budget_min_retry_concurrency: Count { min: 0, max: 1_000_000 }, "retries", fixed,
        "retries in flight always allowed (EnvoyBudget only)", default = 3,
        opt_get = |s| s.budget.min_retry_concurrency(),
        set = |s, n| s.budget.set_min_retry_concurrency(n),
        field = "budget.min_retry_concurrency";
    // Registered where a total budget is set.
    total_budget: Duration { min: SimDuration::ZERO, max: SimDuration(u64::MAX) }, "ns", fixed,
        "time from the first call within which every retry must be sent",
        opt_get = |s| s.total_budget, set = |s, d| s.total_budget = Some(d);
    max_tracked_calls: Count { min: 1, max: 100_000_000 }, "calls", fixed,
        "bound on calls tracked at once", default = 1_000_000;
}

/// Attempts of a policy (the default's or a class's), the first call included.
const MAX_ATTEMPTS: u64 = 100;
/// Bound on a backoff interval or a jitter cap.
const MAX_INTERVAL: SimDuration = SimDuration::from_secs(86_400);
/// The prefix of a class override's parameters: `class_policy<i>.max_attempts` for the i-th
/// entry of `class_policies`.
const CLASS_POLICY: &str = "class_policy";
/// At most one override per class, and a scenario has at most 64 classes.
const MAX_CLASS_POLICIES: usize = 64;

// A class's override (`retry.<name>.class_policy<i>.<row>`), registered only where the
// override sets the value (absent fields follow the default policy's rows above).
crate::params::declare_params! {
    rows ClassRetryPolicy: "class retry policy";
    max_attempts: Count { min: 1, max: MAX_ATTEMPTS }, "attempts", fixed,
        "this class's attempts including the first call",
        opt_get = |s| s.max_attempts, set = |s, n| s.max_attempts = Some(n);
    retry_on: List { of: &RETRY_REASON, min_len: 0, max_len: RETRYABLE.len() }, "", fixed,
        "reasons retried for this class",
        opt_get = |s| s.retry_on.clone(), set = |s, v| s.retry_on = Some(v);
    total_budget: Duration { min: SimDuration::ZERO, max: SimDuration(u64::MAX) }, "ns", fixed,
        "this class's time from the first call within which every retry must be sent",
        opt_get = |s| s.total_budget, set = |s, d| s.total_budget = Some(d);
    wait_duration: Duration { min: SimDuration::ZERO, max: MAX_INTERVAL }, "ns", fixed,
        "this class's (first) backoff interval",
        opt_get = |s| s.backoff.as_ref().map(|b| b.wait_duration()),
        set = |s, d| own(&mut s.backoff)?.set_wait_duration(d),
        field = "backoff.wait_duration";
    backoff_multiplier: Float { min: 1.0, max: 100.0 }, "×", fixed,
        "this class's exponential backoff factor (Exponential only)",
        opt_get = |s| s.backoff.as_ref().and_then(|b| b.multiplier()),
        set = |s, x| own(&mut s.backoff)?.set_multiplier(x),
        field = "backoff.exponential_backoff_multiplier";
    randomized_wait_factor: Float { min: 0.0, max: 1.0 }, "ratio", fixed,
        "this class's randomized-interval spread (Randomized jitter only)",
        opt_get = |s| s.jitter.as_ref().and_then(|j| j.randomized_wait_factor()),
        set = |s, x| own(&mut s.jitter)?.set_randomized_wait_factor(x),
        field = "jitter.randomized_wait_factor";
    jitter_cap: Duration { min: SimDuration::ZERO, max: MAX_INTERVAL }, "ns", fixed,
        "this class's decorrelated-jitter cap (Decorrelated jitter only)",
        opt_get = |s| s.jitter.as_ref().and_then(|j| j.cap()),
        set = |s, d| own(&mut s.jitter)?.set_cap(d),
        field = "jitter.cap";
}

/// A class override's own backoff or jitter, to write one of its settings (registered only
/// where the class sets one, so a validated change always finds it).
fn own<T>(x: &mut Option<T>) -> Result<&mut T, String> {
    x.as_mut().ok_or_else(|| "class retry policy: the class follows the default here".into())
}

#[cfg(test)]
mod param_tests {
    use super::*;
    use crate::params::{ParamValue as V, Params};

    /// Backoff, jitter and budget settings are registered parameters, each only for the
    /// variant that has it, and a sweep's `set` writes them back into the spec.
    #[test]
    fn variant_settings_are_parameters_of_their_variant_only() {
        let text = r#"Retry(name: "r", backoff: Exponential(wait_duration: "100ms"),
            jitter: Randomized(randomized_wait_factor: 0.5),
            budget: Ratio(max_ratio: 0.1, window: "10s"))"#;
        let mut r: RetrySpec = ron::from_str(text).expect("a retry spec");
        assert_eq!(r.get("backoff_multiplier"), Some(V::Float(1.5)));
        assert_eq!(r.get("budget_window"), Some(V::Duration(SimDuration::from_secs(10))));
        assert_eq!(r.get("budget_max_tokens"), None, "not a token-bucket budget");
        assert_eq!(r.get("jitter_cap"), None, "not decorrelated jitter");
        r.set("budget_max_ratio", V::Float(0.2)).expect("settable");
        r.set("randomized_wait_factor", V::Float(0.25)).expect("settable");
        r.set("backoff_multiplier", V::Float(2.0)).expect("settable");
        assert_eq!(
            (r.budget.max_ratio(), r.jitter.randomized_wait_factor(), r.backoff.multiplier()),
            (Some(0.2), Some(0.25), Some(2.0))
        );
        assert!(r.set("budget_max_ratio", V::Count(1)).is_err(), "a value of another type");
    }

    /// The choices of `retry_on`'s entries are every reason but the never-retried ones.
    #[test]
    fn retryable_reasons_are_all_but_the_never_retried() {
        let expected: Vec<&str> =
            Reason::ALL.iter().filter(|r| !NEVER_RETRIED.contains(r)).map(|r| r.name()).collect();
        assert_eq!(RETRYABLE, expected.as_slice());
    }

    /// A class's overrides are parameters `class_policy<i>.<row>` where the class sets
    /// them; a sweep's `set` writes the override, never the default policy.
    #[test]
    fn class_overrides_are_indexed_parameters() {
        let text = r#"Retry(name: "r", max_attempts: 3, class_policies: [
            (class: "P0", max_attempts: 5, backoff: Exponential(wait_duration: "100ms")),
            (class: "P2", retry_on: ["timeout"])])"#;
        let mut r: RetrySpec = ron::from_str(text).unwrap();
        assert_eq!(r.get("class_policy0.max_attempts"), Some(V::Count(5)));
        assert_eq!(r.get("class_policy1.max_attempts"), None, "P2 follows the default");
        assert_eq!(r.get("class_policy0.backoff_multiplier"), Some(V::Float(1.5)));
        assert_eq!(r.get("class_policy1.retry_on"), Some(V::List(vec![V::Name("timeout".into())])));
        assert_eq!(RetrySpec::field_of("class_policy1.retry_on"), "class_policies[1].retry_on");
        // Values held in the backoff, jitter and budget choices name their place in the file
        // (`field = "…"` in their rows), so a range error points there.
        for (p, f) in [
            ("wait_duration", "backoff.wait_duration"),
            ("backoff_multiplier", "backoff.exponential_backoff_multiplier"),
            ("jitter_cap", "jitter.cap"),
            ("budget_max_ratio", "budget.max_ratio"),
            (
                "class_policy2.backoff_multiplier",
                "class_policies[2].backoff.exponential_backoff_multiplier",
            ),
        ] {
            assert_eq!(RetrySpec::field_of(p), f, "{p}");
        }
        r.set("class_policy0.max_attempts", V::Count(2)).unwrap();
        r.set("class_policy0.wait_duration", V::Duration(SimDuration::from_ms(50))).unwrap();
        assert_eq!(r.class_policies[0].max_attempts, Some(2));
        assert_eq!(r.class_policies[0].backoff.as_ref().unwrap().wait_duration().0, 50_000_000);
        assert_eq!(r.max_attempts, 3, "the default is untouched");
        assert!(r.set("class_policy5.max_attempts", V::Count(2)).is_err(), "no sixth override");
        assert!(r.set("class_policy1.wait_duration", V::Duration(SimDuration::ZERO)).is_err());
    }

    /// `retry_on` is a registered list parameter: read, swept (set) and checked as one.
    #[test]
    fn retry_on_is_a_list_parameter() {
        let mut r: RetrySpec =
            ron::from_str(r#"Retry(name: "r", retry_on: ["timeout", "upstream_429"])"#).unwrap();
        let listed = |xs: &[&str]| V::List(xs.iter().map(|x| V::Name(x.to_string())).collect());
        assert_eq!(r.get("retry_on"), Some(listed(&["timeout", "upstream_429"])));
        r.set("retry_on", listed(&["upstream_5xx"])).expect("settable");
        assert_eq!(r.retry_on, vec![Reason::Upstream5xx]);
        let ty = RetrySpec::decls().into_iter().find(|d| d.name == "retry_on").unwrap().ty;
        assert!(ty.check(&listed(&["timeout", "shed"])).is_ok());
        let e = ty.check(&listed(&["breaker_open"])).unwrap_err();
        assert!(e.contains(r#"one of "timeout", "queue_full""#), "{e}");
    }
}
