//! The dispatcher's scenario types: class queues, overflow, policy and the deferred queue,
//! with range checks inside deserialization and the cross-field checks in
//! [`DispatcherSpec::validate`].

use crate::params::ParamType;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

crate::params::param_choices! {
    /// What happens to a task whose class queue is full.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Overflow {
        /// Refuse at once ("system busy").
        Reject = "Reject",
        /// Move to the bounded async queue, replayed when healthy.
        Defer = "Defer",
        /// The submitter runs it on its own thread (the world does; back-pressure).
        CallerRuns = "CallerRuns",
    }
}

/// One class's queue, in class order (index = `ClassId`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "ClassQueue")]
pub struct ClassQueueSpec {
    /// The class name (for readability and for the integrator's lookup).
    #[serde(deserialize_with = "crate::validate::name")]
    pub class: String,
    /// Bound on waiting tasks of this class.
    #[serde(deserialize_with = "crate::params::Ranged::<ClassQueueSpec>::capacity")]
    pub capacity: u64,
    /// Policy when the queue is full.
    #[serde(default = "crate::params::Defaults::<ClassQueueSpec>::overflow")]
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

crate::params::declare_params! {
    rows ClassQueueSpec: "class queue";
    capacity: Count { min: 1, max: 100_000_000 }, "tasks", fixed,
        "bound on waiting tasks of the class";
    overflow: Enum { choices: Overflow::CHOICES }, "", fixed,
        "a full queue's task: Reject (system busy), Defer (async queue) or CallerRuns",
        default = "Reject";
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
        #[serde(default = "D::poll_every", deserialize_with = "R::poll_every")]
        poll_every: Vec<u64>,
        #[serde(default = "D::rounds", deserialize_with = "R::rounds")]
        rounds: u64,
        #[serde(default = "D::idle_sleep", deserialize_with = "R::idle_sleep")]
        idle_sleep: SimDuration,
        #[serde(default = "D::final_poll", deserialize_with = "R::final_poll")]
        final_poll: SimDuration,
    },
    /// Smooth weighted round robin over non-empty classes (shares weight[c] / Σ weights).
    WeightedRoundRobin {
        #[serde(deserialize_with = "R::weights")]
        weights: Vec<u64>,
    },
    /// Earliest latest-start deadline (enqueue + start_within[c]); ties: higher weight, then
    /// lower class.
    DeadlineFirst {
        #[serde(default = "D::start_within", deserialize_with = "R::start_within")]
        start_within: Vec<SimDuration>,
        #[serde(default = "D::weights", deserialize_with = "R::weights")]
        weights: Vec<u64>,
    },
    /// Head of class c scores c·aging_step − wait (lower wins; `"0s"` step = strict); a head
    /// that has waited ≥ max_wait is served next (oldest such first).
    Aging {
        #[serde(default = "D::aging_step", deserialize_with = "R::aging_step")]
        aging_step: SimDuration,
        #[serde(deserialize_with = "R::max_wait")]
        max_wait: SimDuration,
    },
}

/// The `DeadlineFirst` policy's default deadlines (P0, P1, P2), also its row's default.
pub fn default_start_within() -> Vec<SimDuration> {
    vec![SimDuration::from_ms(500), SimDuration::from_secs(5), SimDuration::from_secs(30)]
}

/// An entry of a per-class list of counts (`poll_every`, `weights`).
const PER_CLASS_COUNT: ParamType = ParamType::Count { min: 1, max: 1_000_000 };
/// An entry of `start_within` (enqueue + 24 h at most: the deadline never overflows).
const PER_CLASS_DEADLINE: ParamType =
    ParamType::Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) };

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

/// The prefix of a class queue's parameters: `queue<i>.capacity` for the i-th class.
const QUEUE: &str = "queue";
/// At most 64 classes (a scenario's bound), so as many queues.
const MAX_QUEUES: usize = 64;

crate::params::declare_params! {
    DispatcherSpec: "dispatcher", name = |s| s.name,
        check = DispatcherSpec::validate,
        parts = QUEUE => queues[ClassQueueSpec; MAX_QUEUES],
        state = super::Dispatcher<T>, generics = [T];
    defer_capacity: Count { min: 0, max: 100_000_000 }, "tasks",
        runtime(apply = |d, n| d.set_defer_capacity(n)),
        "bound on the async (deferred) queue; lowering it evicts nothing", default = 10_000,
        get = |s| s.defer.capacity, set = |s, n| s.defer.capacity = n,
        field = "defer.capacity";
    drain_rate_per_s: Float { min: 1e-6, max: 1e9 }, "1/s",
        runtime(apply = |d, x| d.set_drain_rate_per_s(x)),
        "replay rate of deferred tasks while healthy", default = 10.0,
        get = |s| s.defer.drain_rate_per_s, set = |s, x| s.defer.drain_rate_per_s = x,
        field = "defer.drain_rate_per_s";
    // The Aging policy only.
    max_wait: Duration { min: SimDuration::from_ns(1), max: SimDuration::from_secs(86_400) },
        "ns", runtime(apply = |d, w| d.set_max_wait(w)),
        "Aging policy only: a task waiting this long is served next",
        opt_get = |s| aging_of(&s.policy).map(|p| p.1), set = |s, d| *aging(s)?.1 = d,
        field = "policy.max_wait";
    aging_step: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        fixed, "Aging only: score per class index (0 = strict priority)", default = SimDuration::ZERO,
        opt_get = |s| aging_of(&s.policy).map(|p| p.0), set = |s, d| *aging(s)?.0 = d,
        field = "policy.aging_step";
    // The WeightedPolling policy only.
    rounds: Count { min: 1, max: 1_000_000 }, "iterations", fixed,
        "WeightedPolling only: polling iterations before the blocking poll on P0", default = 100,
        opt_get = |s| polling_of(&s.policy).map(|p| p.0), set = |s, n| *polling(s)?.0 = n,
        field = "policy.rounds";
    idle_sleep: Duration { min: SimDuration::from_ns(1), max: SimDuration::from_secs(86_400) },
        "ns", fixed, "WeightedPolling only: sleep after an iteration that found nothing",
        default = SimDuration::from_ms(5),
        opt_get = |s| polling_of(&s.policy).map(|p| p.1), set = |s, d| *polling(s)?.1 = d,
        field = "policy.idle_sleep";
    final_poll: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        fixed, "WeightedPolling only: the blocking poll on P0 after the rounds",
        default = SimDuration::from_ms(50),
        opt_get = |s| polling_of(&s.policy).map(|p| p.2), set = |s, d| *polling(s)?.2 = d,
        field = "policy.final_poll";
    // Per-class lists, one entry per class queue in class order.
    poll_every: List { of: &PER_CLASS_COUNT, min_len: 1, max_len: MAX_QUEUES }, "iterations",
        fixed, "WeightedPolling only: class c is polled on iterations i with i % poll_every[c] == 0",
        default = vec![1u64, 3, 7],
        opt_get = |s| match &s.policy {
            DispatchPolicy::WeightedPolling { poll_every, .. } => Some(poll_every.clone()),
            _ => None,
        },
        set = |s, v| match &mut s.policy {
            DispatchPolicy::WeightedPolling { poll_every, .. } => *poll_every = v,
            _ => return Err("dispatcher: a parameter of the WeightedPolling policy only".into()),
        },
        field = "policy.poll_every";
    weights: List { of: &PER_CLASS_COUNT, min_len: 1, max_len: MAX_QUEUES }, "",
        fixed, "WeightedRoundRobin: class c's share is weights[c] / Σ weights; DeadlineFirst: the tie-break (higher first)",
        default = vec![3u64, 2, 1],
        opt_get = |s| match &s.policy {
            DispatchPolicy::WeightedRoundRobin { weights }
            | DispatchPolicy::DeadlineFirst { weights, .. } => Some(weights.clone()),
            _ => None,
        },
        set = |s, v| match &mut s.policy {
            DispatchPolicy::WeightedRoundRobin { weights }
            | DispatchPolicy::DeadlineFirst { weights, .. } => *weights = v,
            _ => return Err("dispatcher: a parameter of the weighted policies only".into()),
        },
        field = "policy.weights";
    start_within: List { of: &PER_CLASS_DEADLINE, min_len: 1, max_len: MAX_QUEUES }, "ns",
        fixed, "DeadlineFirst only: class c's task must start within start_within[c] of entering its queue",
        default = default_start_within(),
        opt_get = |s| match &s.policy {
            DispatchPolicy::DeadlineFirst { start_within, .. } => Some(start_within.clone()),
            _ => None,
        },
        set = |s, v| match &mut s.policy {
            DispatchPolicy::DeadlineFirst { start_within, .. } => *start_within = v,
            _ => return Err("dispatcher: a parameter of the DeadlineFirst policy only".into()),
        },
        field = "policy.start_within";
}

/// The Aging policy's `aging_step` and `max_wait`.
fn aging_of(p: &DispatchPolicy) -> Option<(SimDuration, SimDuration)> {
    match *p {
        DispatchPolicy::Aging { aging_step, max_wait } => Some((aging_step, max_wait)),
        _ => None,
    }
}

/// The same, to write one.
fn aging(s: &mut DispatcherSpec) -> Result<(&mut SimDuration, &mut SimDuration), String> {
    match &mut s.policy {
        DispatchPolicy::Aging { aging_step, max_wait } => Ok((aging_step, max_wait)),
        _ => Err("dispatcher: a parameter of the Aging policy only".into()),
    }
}

/// The WeightedPolling policy's `rounds`, `idle_sleep` and `final_poll`.
fn polling_of(p: &DispatchPolicy) -> Option<(u64, SimDuration, SimDuration)> {
    match *p {
        DispatchPolicy::WeightedPolling { rounds, idle_sleep, final_poll, .. } => {
            Some((rounds, idle_sleep, final_poll))
        }
        _ => None,
    }
}

/// The same, to write one.
fn polling(
    s: &mut DispatcherSpec,
) -> Result<(&mut u64, &mut SimDuration, &mut SimDuration), String> {
    match &mut s.policy {
        DispatchPolicy::WeightedPolling { rounds, idle_sleep, final_poll, .. } => {
            Ok((rounds, idle_sleep, final_poll))
        }
        _ => Err("dispatcher: a parameter of the WeightedPolling policy only".into()),
    }
}
