//! The dispatcher's scenario types: class queues, overflow, policy and the deferred queue,
//! with range checks inside deserialization and the cross-field checks in
//! [`DispatcherSpec::validate`].

use serde::{Deserialize, Deserializer, Serialize, de::Error as _};
use sim_core::SimDuration;

/// What happens to a task whose class queue is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Overflow {
    /// Refuse at once ("system busy").
    Reject,
    /// Move to the bounded async queue, replayed when healthy.
    Defer,
    /// The submitter runs it on its own thread (the world does; back-pressure).
    CallerRuns,
}

/// One class's queue, in class order (index = `ClassId`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "ClassQueue")]
pub struct ClassQueueSpec {
    /// The class name (for readability and for the integrator's lookup).
    #[serde(deserialize_with = "crate::validate::name")]
    pub class: String,
    /// Bound on waiting tasks of this class (≥ 1).
    #[serde(deserialize_with = "crate::validate::at_least_one")]
    pub capacity: u64,
    /// Policy when the queue is full.
    #[serde(default = "default_overflow")]
    pub overflow: Overflow,
    /// Queue-wait timeout: a task waiting longer than this in its class queue (from when it
    /// entered it) is removed and its request rejected with `timeout` (`None`: waits for
    /// ever). Run-time changeable (`dispatcher_queue.<dispatcher>-<class>.max_queue_wait`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::params::RangedOpt::<crate::timeouts::DispatcherQueue>::max_queue_wait"
    )]
    pub max_queue_wait: Option<SimDuration>,
}

fn default_overflow() -> Overflow {
    Overflow::Reject
}

/// The order in which waiting tasks are handed out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum DispatchPolicy {
    /// Highest non-empty class first (a single priority heap).
    Strict,
    /// The source's loop: for i in 0..rounds poll class c when i % poll_every[c] == 0, in
    /// class order; sleep `idle_sleep` after each iteration that found nothing; after
    /// `rounds` iterations block on P0 for `final_poll`; then start again at i = 0.
    WeightedPolling {
        #[serde(default = "default_poll_every", deserialize_with = "all_at_least_one")]
        poll_every: Vec<u64>,
        #[serde(default = "default_rounds", deserialize_with = "crate::validate::at_least_one")]
        rounds: u64,
        #[serde(default = "default_idle_sleep", deserialize_with = "positive_duration")]
        idle_sleep: SimDuration,
        #[serde(default = "default_final_poll")]
        final_poll: SimDuration,
    },
    /// Smooth weighted round robin over non-empty classes (shares weight[c] / Σ weights).
    WeightedRoundRobin {
        #[serde(deserialize_with = "all_at_least_one")]
        weights: Vec<u64>,
    },
    /// Earliest latest-start deadline (enqueue + start_within[c]); ties: higher weight, then
    /// lower class.
    DeadlineFirst {
        #[serde(default = "default_start_within")]
        start_within: Vec<SimDuration>,
        #[serde(default = "default_weights", deserialize_with = "all_at_least_one")]
        weights: Vec<u64>,
    },
    /// Head of class c scores c·aging_step − wait (lower wins; `"0s"` step = strict); a head
    /// that has waited ≥ max_wait is served next (oldest such first).
    Aging {
        #[serde(default)]
        aging_step: SimDuration,
        #[serde(deserialize_with = "R::max_wait")]
        max_wait: SimDuration,
    },
}

fn default_poll_every() -> Vec<u64> {
    vec![1, 3, 7]
}
fn default_rounds() -> u64 {
    100
}
fn default_idle_sleep() -> SimDuration {
    SimDuration::from_ms(5)
}
fn default_final_poll() -> SimDuration {
    SimDuration::from_ms(50)
}
pub fn default_start_within() -> Vec<SimDuration> {
    vec![SimDuration::from_ms(500), SimDuration::from_secs(5), SimDuration::from_secs(30)]
}
fn default_weights() -> Vec<u64> {
    vec![3, 2, 1]
}

fn all_at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    let v = Vec::<u64>::deserialize(d)?;
    if v.is_empty() || v.contains(&0) {
        return Err(D::Error::custom(format!(
            "expected a non-empty list of integers ≥ 1, found {v:?}"
        )));
    }
    Ok(v)
}

fn positive_duration<'de, D: Deserializer<'de>>(d: D) -> Result<SimDuration, D::Error> {
    let x = SimDuration::deserialize(d)?;
    if x == SimDuration::ZERO {
        return Err(D::Error::custom("expected a duration > 0, found \"0s\""));
    }
    Ok(x)
}

/// The bounded async queue of deferred tasks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Defer")]
pub struct DeferSpec {
    /// Bound on deferred tasks; beyond it a deferral is refused (`RejectedDeferFull`).
    #[serde(default = "D::defer_capacity")]
    pub capacity: u64,
    /// Replay rate while healthy (tasks per second).
    #[serde(default = "D::drain_rate_per_s", deserialize_with = "R::drain_rate_per_s")]
    pub drain_rate_per_s: f64,
}

/// The defaults declared in the dispatcher's parameter rows (`declare_params!` below).
type D = crate::params::Defaults<DispatcherSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<DispatcherSpec>;

impl Default for DeferSpec {
    fn default() -> Self {
        DeferSpec { capacity: D::defer_capacity(), drain_rate_per_s: D::drain_rate_per_s() }
    }
}

/// Configuration of a dispatcher, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Dispatcher")]
pub struct DispatcherSpec {
    /// Name; parameters live under `dispatcher.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// One queue per class, P0 first.
    pub queues: Vec<ClassQueueSpec>,
    pub policy: DispatchPolicy,
    #[serde(default)]
    pub defer: DeferSpec,
}

impl DispatcherSpec {
    /// Cross-field checks serde cannot do field by field: per-class lists match `queues`.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.queues.len();
        if n == 0 || n > u16::MAX as usize {
            return Err(format!(
                "dispatcher `{}`: expected 1..=65535 queues, found {n}",
                self.name
            ));
        }
        let len = match &self.policy {
            DispatchPolicy::Strict | DispatchPolicy::Aging { .. } => None,
            DispatchPolicy::WeightedPolling { poll_every, .. } => {
                Some(("poll_every", poll_every.len()))
            }
            DispatchPolicy::WeightedRoundRobin { weights } => Some(("weights", weights.len())),
            DispatchPolicy::DeadlineFirst { start_within, weights } => {
                if start_within.len() != n {
                    Some(("start_within", start_within.len()))
                } else {
                    Some(("weights", weights.len()))
                }
            }
        };
        match len {
            Some((field, k)) if k != n => Err(format!(
                "dispatcher `{}`: `{field}` has {k} entries but there are {n} class queues",
                self.name
            )),
            _ => Ok(()),
        }
    }
}

crate::params::declare_params! {
    DispatcherSpec: "dispatcher", name = |s| s.name,
        field_of = |p: &str| match p {
            "defer_capacity" => "defer.capacity".into(),
            "drain_rate_per_s" => "defer.drain_rate_per_s".into(),
            "max_wait" => "policy.max_wait".into(),
            p => p.to_string(),
        };
    defer_capacity: Count { min: 0, max: 100_000_000 }, "tasks", runtime,
        "bound on the async (deferred) queue; lowering it evicts nothing", default = 10_000,
        get = |s| s.defer.capacity, set = |s, n| s.defer.capacity = n;
    drain_rate_per_s: Float { min: 1e-6, max: 1e9 }, "1/s", runtime,
        "replay rate of deferred tasks while healthy", default = 10.0,
        get = |s| s.defer.drain_rate_per_s, set = |s, x| s.defer.drain_rate_per_s = x;
    // The Aging policy only.
    max_wait: Duration { min: SimDuration::from_ns(1), max: SimDuration::from_secs(86_400) },
        "ns", runtime, "Aging policy only: a task waiting this long is served next",
        opt_get = |s| match s.policy {
            DispatchPolicy::Aging { max_wait, .. } => Some(max_wait),
            _ => None,
        },
        set = |s, d| match &mut s.policy {
            DispatchPolicy::Aging { max_wait, .. } => *max_wait = d,
            _ => return Err("dispatcher: `max_wait` is a parameter of the Aging policy only".into()),
        };
}
