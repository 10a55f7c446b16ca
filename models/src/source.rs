//! An open-loop traffic source: a renewal process of arrivals.
//!
//! Inter-arrival times come from the source's own ChaCha stream (`arrivals/<name>`), so the
//! arrival times do not depend on anything else in the run. A [`Profile`] warps the gaps
//! through a time-varying rate multiplier (exactly, by inversion). The first arrival is at
//! `start`. Per-request attributes are
//! keyed by `(seed, source, sequence)`, never drawn from this stream.

use crate::attributes::{AssignSpec, KeySpec};
use crate::closed_loop::ClosedLoopSpec;
use crate::params::{ParamDecl, ParamType, ParamValue, Params};
use crate::profile::Profile;
use crate::trace::TraceSpec;
use crate::validate;
use serde::{Deserialize, Serialize};
use sim_core::{Dist, SimDuration};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Source")]
pub struct SourceSpec {
    #[serde(deserialize_with = "validate::name")]
    pub name: String,
    /// Inter-arrival time distribution (`Exponential` = Poisson arrivals). Exactly one of
    /// `interarrival` and `trace`.
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub interarrival: Option<Dist<SimDuration>>,
    /// Replay of a recorded trace (arrival times, prompt and output tokens).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub trace: Option<TraceSpec>,
    /// The call site its requests enter.
    pub target: String,
    /// First arrival at this time (default 0).
    #[serde(default)]
    pub start: SimDuration,
    /// Stop generating after this many requests (default: no limit). With a finite limit
    /// a zero gap is allowed: `interarrival: Constant("0s"), limit: Some(20000)` is a batch
    /// flood of 20,000 requests at `start`; `Constant("5ms")` spreads them.
    #[serde(default, deserialize_with = "validate::opt_at_least_one")]
    pub limit: Option<u64>,
    /// The class of its requests (default: the scenario's first class).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub class: Option<String>,
    /// Time-varying load: a rate multiplier that warps the arrival process (diurnal cycles,
    /// surges, on/off). `None`: constant.
    #[serde(default)]
    pub profile: Option<Profile>,
    /// The app (instances behind a balancer) its requests enter before their pipeline;
    /// `None`: the pipeline starts at arrival.
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub app: Option<String>,
    /// Closed-loop users instead of an arrival process (exclusive with `interarrival` and
    /// `trace`).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub closed_loop: Option<ClosedLoopSpec>,
    /// Total budget of each request from its arrival (`budget: "20s"`), overriding its
    /// pipeline's; default: the pipeline's (none for a call-site target). See
    /// [`crate::timeouts`].
    #[serde(
        default,
        deserialize_with = "crate::timeouts::budget",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub budget: Option<SimDuration>,
    /// Scripted calls instead of an arrival process (exclusive with `interarrival`,
    /// `trace` and `closed_loop`): `script: Script([Call(at: "1.5s", class: "P0", key: 42,
    /// user: 7), ...])`, one request per row at `start + at` with the row's class, user
    /// and key (`crate::scripted`).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub script: Option<crate::scripted::Script>,
    /// Prompt tokens per request (rounded; a trace's own column takes precedence).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_tokens: Option<Dist<f64>>,
    /// Output tokens per request (rounded; a trace's own column takes precedence).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_tokens: Option<Dist<f64>>,
    /// Conversation history tokens per request (rounded).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_tokens: Option<Dist<f64>>,
    /// Cache key popularity, e.g. `keys: Zipf(n: 10000, s: 1.1)` (key = rank, 1 = hottest).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub keys: Option<KeySpec>,
    /// Weight of every request of this source, overriding its class's (an urgent batch).
    #[serde(
        default,
        deserialize_with = "validate::opt_at_least_one",
        skip_serializing_if = "Option::is_none"
    )]
    pub weight: Option<u64>,
    /// Class, user and key of a trace's rows by rule (bands, shares, hashing).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub assign: Option<AssignSpec>,
    /// Scales the arrival rate (renewal sources; composes with `profile`; run-time
    /// changeable, applied exactly to the pending arrival). In [0.001, 1000].
    #[serde(
        default = "one",
        deserialize_with = "validate::multiplier",
        skip_serializing_if = "is_one"
    )]
    pub rate_multiplier: f64,
}

fn one() -> f64 {
    1.0
}
fn is_one(x: &f64) -> bool {
    *x == 1.0
}

/// The one rule for a renewal source's rate, wherever its gap or limit is set: the
/// scenario's check (and so every resolved variant and sweep point) and the timeline's. A
/// gap with a mean of zero is an infinite rate, allowed only with a `limit` (a batch flood
/// of `limit` requests at one instant).
pub fn check_rate(
    interarrival: Option<&Dist<SimDuration>>,
    limit: Option<u64>,
) -> Result<(), String> {
    if limit.is_none() && interarrival.is_some_and(|d| d.mean().is_some_and(|m| m <= 0.0)) {
        return Err("expected a distribution with a mean > 0 (a zero inter-arrival time is an infinite rate; for a batch flood set a `limit`)".into());
    }
    Ok(())
}

impl Params for SourceSpec {
    const KIND: &'static str = "source";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<ParamDecl> {
        vec![
            ParamDecl {
                name: "interarrival",
                ty: ParamType::DurationDist,
                unit: "ns",
                runtime: true,
                doc: "time between arrivals (takes effect from the next arrival; renewal sources only)",
            },
            ParamDecl {
                name: "start",
                ty: ParamType::Duration { min: SimDuration::ZERO, max: SimDuration::MAX },
                unit: "ns",
                runtime: false,
                doc: "time of the first arrival",
            },
            ParamDecl {
                name: "limit",
                ty: ParamType::OptCount { min: 1, max: u64::MAX },
                unit: "requests",
                runtime: false,
                doc: "stop after this many requests (None = unlimited)",
            },
            ParamDecl {
                name: "trace_rate_scale",
                ty: ParamType::Float { min: 1e-6, max: 1e6 },
                unit: "×",
                runtime: false,
                doc: "replay speed of a trace source (2 = twice the recorded rate)",
            },
            ParamDecl {
                name: "rate_multiplier",
                ty: ParamType::Float { min: 1e-3, max: 1e3 },
                unit: "×",
                runtime: true,
                doc: "scales the arrival rate (renewal sources; composes with the profile; the pending arrival is rescaled exactly)",
            },
            ParamDecl {
                name: "users",
                ty: ParamType::Count { min: 1, max: crate::closed_loop::MAX_CLIENTS },
                unit: "users",
                runtime: true,
                doc: "closed-loop users (more start at once; fewer stop after their current request)",
            },
            ParamDecl {
                name: "think_time",
                ty: ParamType::DurationDist,
                unit: "ns",
                runtime: true,
                doc: "closed-loop think time (takes effect from the next think)",
            },
        ]
    }
    fn field_of(param: &str) -> String {
        match param {
            "trace_rate_scale" => "trace.rate_scale".into(),
            "users" => "closed_loop.users".into(),
            "think_time" => "closed_loop.think_time".into(),
            p => p.into(),
        }
    }
    fn get(&self, p: &str) -> Option<ParamValue> {
        Some(match p {
            "interarrival" => ParamValue::DurationDist(self.interarrival.clone()?),
            "trace_rate_scale" => ParamValue::Float(self.trace.as_ref()?.rate_scale),
            "start" => ParamValue::Duration(self.start),
            "limit" => ParamValue::OptCount(self.limit),
            "rate_multiplier" if self.interarrival.is_some() => {
                ParamValue::Float(self.rate_multiplier)
            }
            "users" => ParamValue::Count(self.closed_loop.as_ref()?.users),
            "think_time" => ParamValue::DurationDist(self.closed_loop.as_ref()?.think_time.clone()),
            _ => return None,
        })
    }
    fn set(&mut self, p: &str, v: ParamValue) -> Result<(), String> {
        match (p, v) {
            ("interarrival", ParamValue::DurationDist(d)) => self.interarrival = Some(d),
            ("trace_rate_scale", ParamValue::Float(x)) if self.trace.is_some() => {
                self.trace.as_mut().expect("checked").rate_scale = x;
            }
            ("start", ParamValue::Duration(d)) => self.start = d,
            ("limit", ParamValue::OptCount(n)) => self.limit = n,
            ("rate_multiplier", ParamValue::Float(x)) => self.rate_multiplier = x,
            ("users", ParamValue::Count(n)) if self.closed_loop.is_some() => {
                self.closed_loop.as_mut().expect("checked").users = n;
            }
            ("think_time", ParamValue::DurationDist(d)) if self.closed_loop.is_some() => {
                self.closed_loop.as_mut().expect("checked").think_time = d;
            }
            (p, v) => return Err(format!("source has no parameter `{p}` of type {v:?}")),
        }
        Ok(())
    }
}
