//! The retry governor's scenario types: [`RetrySpec`] and its per-class overrides.

use super::Policy;
use super::backoff::{Backoff, Jitter};
use super::budget::RetryBudgetSpec;
use crate::outcome::Reason;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sim_core::SimDuration;

/// Reasons no retry policy may list.
pub const NEVER_RETRIED: [Reason; 2] = [Reason::BusinessError, Reason::BreakerOpen];

/// Configuration of a retry governor, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Retry")]
pub struct RetrySpec {
    /// Name; the parameters live under `retry.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Attempts including the first call (Resilience4j `maxAttempts`, default 3), 1..=100.
    #[serde(default = "default_max_attempts", deserialize_with = "max_attempts_range")]
    pub max_attempts: u64,
    /// Reasons (stable names) whose failures/rejections are retried.
    #[serde(default = "default_retry_on", with = "reason_list")]
    pub retry_on: Vec<Reason>,
    #[serde(default)]
    pub backoff: Backoff,
    #[serde(default)]
    pub jitter: Jitter,
    /// Total time from the first call within which every retry must be sent; absent =
    /// unlimited.
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
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
    #[serde(default = "default_max_tracked", deserialize_with = "crate::validate::at_least_one")]
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
        deserialize_with = "opt_max_attempts",
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
            max_attempts: default_max_attempts(),
            retry_on: default_retry_on(),
            backoff: Backoff::default(),
            jitter: Jitter::None,
            total_budget: None,
            budget: RetryBudgetSpec::Unlimited,
            class_policies: vec![],
            max_tracked_calls: default_max_tracked(),
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

fn default_max_attempts() -> u64 {
    3
}
fn default_max_tracked() -> u64 {
    1_000_000
}

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

fn check_max_attempts<E: serde::de::Error>(n: u64) -> Result<u64, E> {
    if !(1..=100).contains(&n) {
        return Err(E::custom(format!("expected max_attempts in [1, 100], found {n}")));
    }
    Ok(n)
}
fn max_attempts_range<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    check_max_attempts(u64::deserialize(d)?)
}
fn opt_max_attempts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    check_max_attempts(u64::deserialize(d)?).map(Some)
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

impl crate::params::Params for RetrySpec {
    const KIND: &'static str = "retry";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<crate::params::ParamDecl> {
        use crate::params::{ParamDecl, ParamType};
        vec![
            ParamDecl {
                name: "max_attempts",
                ty: ParamType::Count { min: 1, max: 100 },
                unit: "attempts",
                runtime: true,
                doc: "attempts including the first call (classes without their own follow it)",
            },
            ParamDecl {
                name: "wait_duration",
                ty: ParamType::Duration {
                    min: SimDuration::ZERO,
                    max: SimDuration::from_secs(86_400),
                },
                unit: "ns",
                runtime: false,
                doc: "the (first) backoff interval",
            },
        ]
    }
    fn get(&self, p: &str) -> Option<crate::params::ParamValue> {
        use crate::params::ParamValue as V;
        Some(match p {
            "max_attempts" => V::Count(self.max_attempts),
            "wait_duration" => V::Duration(self.backoff.wait_duration()),
            _ => return None,
        })
    }
    fn set(&mut self, p: &str, v: crate::params::ParamValue) -> Result<(), String> {
        use crate::params::ParamValue as V;
        match (p, v) {
            ("max_attempts", V::Count(n)) => self.max_attempts = n,
            ("wait_duration", V::Duration(d)) => self.backoff.set_wait_duration(d),
            (p, v) => return Err(format!("retry has no parameter `{p}` of type {v:?}")),
        }
        Ok(())
    }
}
