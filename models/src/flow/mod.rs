//! Rate limiters as governors, with the semantics of Alibaba Sentinel 1.8.x (docs/domain.md §3.6,
//! docs/domain.md §7.2).
//!
//! * [`rules::FlowRules`] — one resource guarded by several [`rules::FlowRule`]s (QPS or
//!   THREAD grade; reject, uniform-rate pacing, warm-up, warm-up + pacing). Every rule must
//!   pass; the rules are checked in order as Sentinel's `FlowSlot` does.
//! * [`hot_param::ParamFlow`] — hot-parameter limits: a token bucket per user or per key,
//!   with per-value exceptions and a "VIP" group (Sentinel's `ParamFlowChecker`).
//! * [`token_bucket::TokenBucket`] — a token bucket on LLM tokens (TPM), optionally waiting.
//! * [`cluster::ClusterFlow`] — cluster mode: a token server shared by the app instances,
//!   each with a local fallback rule used while the server is unavailable.
//!
//! The key design decision: the arithmetic is Sentinel's own, including its integer
//! truncations and its millisecond clock (`TimeUtil.currentTimeMillis()`): every controller
//! reads the simulation time floored to whole milliseconds, except the uniform-rate
//! controller in the cases where docs/domain.md §7.2 says Sentinel switches to nanoseconds. Where
//! Sentinel's behaviour depends on the epoch clock being huge (the first call through a
//! pacing controller, the first warm-up token sync), "long ago" is an explicit `None`, so a
//! simulation starting at t = 0 behaves as a production system that just started.
//! A call that Sentinel would put to sleep inside the check (pacing) is parked here with
//! `Wait { deadline: None }` and released through [`crate::governor::Governor::wake_at`].
//!
//! Architecture invariant: no controller keeps an unbounded collection — parked calls are
//! bounded by `max_queueing_time_ms / cost` and the optional `max_queue_length`, hot
//! parameter values by `max_tracked_values` (LRU eviction in a deterministic order); all
//! maps are `BTreeMap`s and every tie is broken by a sequence number.
//!
//! API boundary: the governors see [`crate::governor::CallInfo`] (`user`, `key`, `tokens`)
//! and the time only; statistics (the leap arrays) are private to each governor, i.e. one
//! governor instance is one Sentinel resource node.

pub mod cluster;
pub mod cluster_params;
pub mod cluster_server;
pub mod cluster_spec;
pub mod hot_param;
pub mod leap_array;
pub mod params;
pub mod qps;
pub mod rule_order;
pub mod rules;
pub mod throttle;
pub mod token_bucket;
pub mod warmup;

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod rules_tests;

pub use hot_param::{HotParam, ParamFlow, ParamFlowItem, ParamFlowRuleSpec, VipGroup};
pub use rules::{ControlBehavior, FlowGrade, FlowRule, FlowRules, FlowRulesSpec};
pub use token_bucket::{TokenBucket, TokenBucketSpec};

use sim_core::SimTime;

/// Nanoseconds per millisecond.
pub(crate) const NS_PER_MS: u64 = 1_000_000;

/// Sentinel's clock: the time in whole milliseconds (`TimeUtil.currentTimeMillis()`).
pub(crate) fn now_ms(now: SimTime) -> u64 {
    now.as_ns() / NS_PER_MS
}

/// What one controller says about one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Passes now.
    Pass,
    /// Passes at this (strictly later) time: Sentinel sleeps the thread until then.
    PassAt(SimTime),
    /// Blocked (a `FlowException`).
    Block,
}
