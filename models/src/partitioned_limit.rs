//! Netflix concurrency-limits' partitioned limiter (`AbstractPartitionedLimiter`) over a
//! `FixedLimit`, from `partitioned_limits`: a concurrency limit whose request classes each
//! have a guaranteed share, borrowing the others' idle share.
//!
//! Read from `AbstractPartitionedLimiter` (concurrency-limits-core, `limiter/`):
//!
//! * `Builder.partition(name, percent)`: a partition's share, `percent` in [0, 1]; the
//!   constructor refuses a sum above 1 (`Preconditions.checkArgument`).
//! * `Partition.updateLimit(totalLimit)`: a partition's limit is `max(1, ceil(totalLimit ×
//!   percent))` in `double` arithmetic (so 100 × 0.07 = 7.000000000000001 gives 8; "the sum of
//!   bin limits may end up being higher than the concurrency limit"), recomputed on each new
//!   limit (`onNewLimit`).
//! * `resolvePartition`: the resolvers in order, the first name with a partition; else the
//!   `unknown` partition. Here one resolver, the call's class (`partitionResolver` by request
//!   class): the first partition listing it. The unknown partition has percent 0 and is never
//!   updated (`onNewLimit` walks only the declared ones): its limit stays 0.
//! * `acquire`: if the limiter's in-flight count is at or above the limit, the partition
//!   must have room (`tryAcquire`: busy < its limit), else the call is rejected; below the
//!   limit the partition's busy count is raised unconditionally (`acquire`: "the partition is
//!   not a hard limit ... only applied if the global limit is exceeded"). So a call of a
//!   partition under its share passes even when the global limit is reached, and in flight
//!   may exceed the limit by the partitions' unused guarantees.
//! * A passed call counts in flight (`AbstractLimiter.createListener`) and in its
//!   partition's busy count until its outcome (`onSuccess`, `onIgnore`, `onDropped` all
//!   release both) or its cancellation; a rejected one counts nowhere.
//!
//! The limit is a `FixedLimit` (`limit`, changeable at run time: `onNewLimit`); not
//! modelled: `partitionRejectDelay` (a sleep before the rejection), the bypass resolver, and
//! adaptive limit algorithms under the partitions. Rejections are `rejected:gate_full`.
//!
//! Summary counters `partitioned_limit.<name>.{passed, rejected, borrowed}` (`borrowed`: a
//! call passed while its partition was at or above its own limit, i.e. on another's idle
//! share); gauge `in_flight`.
//!
//! Architecture invariant: in flight = the sum of the partitions' busy counts = calls passed
//! and not yet returned; every passed call returns exactly once.

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::SimTime;
use std::collections::BTreeMap;

/// At most this many partitions (a bound; Netflix's builder has none).
pub const MAX_PARTITIONS: usize = 64;

/// One partition, as written: its share and the classes it serves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Partition")]
pub struct PartitionSpec {
    pub name: String,
    /// The guaranteed share of the limit, in [0, 1].
    pub percent: f64,
    /// The request classes resolved to it.
    pub classes: Vec<String>,
}

/// Configuration, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "PartitionedLimit")]
pub struct PartitionedLimitSpec {
    /// Name; parameters live under `partitioned_limit.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// The concurrency limit (`FixedLimit`).
    #[serde(deserialize_with = "crate::params::Ranged::<PartitionedLimitSpec>::limit")]
    pub limit: u64,
    /// The partitions, in resolution order.
    pub partitions: Vec<PartitionSpec>,
}

impl PartitionedLimitSpec {
    /// The builder's preconditions and the classes' existence: `Err((field, message))`.
    pub fn check(&self, classes: &[&str]) -> Result<(), (String, String)> {
        if self.partitions.is_empty() || self.partitions.len() > MAX_PARTITIONS {
            let m = format!("1 to {MAX_PARTITIONS} partitions (\"No partitions specified\")");
            return Err(("partitions".into(), m));
        }
        let mut sum = 0.0;
        for (i, p) in self.partitions.iter().enumerate() {
            if !(0.0..=1.0).contains(&p.percent) {
                let m = format!("{} is outside [0, 1]", p.percent);
                return Err((format!("partitions[{i}].percent"), m));
            }
            if self.partitions[..i].iter().any(|q| q.name == p.name) {
                return Err((format!("partitions[{i}].name"), format!("`{}` twice", p.name)));
            }
            if let Some(c) = p.classes.iter().find(|c| !classes.contains(&c.as_str())) {
                let m = format!("unknown class `{c}` (classes: {})", classes.join(", "));
                return Err((format!("partitions[{i}].classes"), m));
            }
            sum += p.percent;
        }
        if sum > 1.0 {
            let m =
                format!("the percentages add up to {sum} (\"Sum of percentages must be <= 1.0\")");
            return Err(("partitions".into(), m));
        }
        Ok(())
    }
}

/// `Partition.updateLimit`: `max(1, ceil(total × percent))` in `double` arithmetic.
pub fn partition_limit(total: u64, percent: f64) -> u64 {
    (total as f64 * percent).ceil().max(1.0) as u64
}

/// A partition's run-time state (`Partition`: `percent`, `limit`, `busy`).
#[derive(Clone, Debug)]
struct Part {
    percent: f64,
    limit: u64,
    busy: u64,
}

/// Run-time state of a `PartitionedLimit`.
#[derive(Clone, Debug)]
pub struct PartitionedLimit {
    limit: u64,
    /// The declared partitions, then the unknown one (last, limit 0, never updated).
    parts: Vec<Part>,
    /// Per class index: its partition (`parts.len() − 1`: unknown).
    by_class: Vec<usize>,
    /// Calls in flight and their partition.
    started: BTreeMap<CallId, usize>,
    pub passed: u64,
    pub rejected: u64,
    pub borrowed: u64,
}

impl PartitionedLimit {
    pub fn new(spec: &PartitionedLimitSpec, classes: &[&str]) -> Self {
        let mut parts: Vec<Part> = spec
            .partitions
            .iter()
            .map(|p| Part { percent: p.percent, limit: 0, busy: 0 })
            .collect();
        parts.push(Part { percent: 0.0, limit: 0, busy: 0 });
        let unknown = parts.len() - 1;
        let by_class = classes
            .iter()
            .map(|c| {
                let found = spec.partitions.iter().position(|p| p.classes.iter().any(|x| x == c));
                found.unwrap_or(unknown)
            })
            .collect();
        let mut l = PartitionedLimit {
            limit: spec.limit,
            parts,
            by_class,
            started: BTreeMap::new(),
            passed: 0,
            rejected: 0,
            borrowed: 0,
        };
        l.set_limit(spec.limit);
        l
    }

    /// `onNewLimit`: the declared partitions' limits follow (the unknown one stays 0).
    pub fn set_limit(&mut self, limit: u64) {
        self.limit = limit;
        let declared = self.parts.len() - 1;
        for p in &mut self.parts[..declared] {
            p.limit = partition_limit(limit, p.percent);
        }
    }

    pub fn in_flight(&self) -> u64 {
        self.started.len() as u64
    }

    /// Each partition's (limit, busy), the unknown one last.
    pub fn partitions(&self) -> Vec<(u64, u64)> {
        self.parts.iter().map(|p| (p.limit, p.busy)).collect()
    }

    fn release(&mut self, call: CallId) {
        let part = self.started.remove(&call).expect("a call that passed this limit");
        self.parts[part].busy -= 1;
    }
}

impl Governor for PartitionedLimit {
    fn on_call(&mut self, call: &CallInfo, _now: SimTime) -> CallDecision {
        let unknown = self.parts.len() - 1;
        let part = self.by_class.get(call.class.0 as usize).copied().unwrap_or(unknown);
        let p = &mut self.parts[part];
        if p.busy >= p.limit {
            // Only below the global limit, where the partition is not enforced.
            if self.started.len() as u64 >= self.limit {
                // `tryAcquire` failed: over the global limit and the partition's.
                self.rejected += 1;
                return CallDecision::Reject(Reason::GateFull);
            }
            self.borrowed += 1;
        }
        p.busy += 1;
        let prev = self.started.insert(call.call, part);
        assert!(prev.is_none(), "call {:?} passed the limit twice", call.call);
        self.passed += 1;
        CallDecision::Pass
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, _now: SimTime) -> OutcomeDecision {
        self.release(call.call);
        OutcomeDecision::PassUp(outcome)
    }

    /// Cancelled from above: released like any outcome.
    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        self.release(call.call);
    }

    fn take_woken(&mut self, _out: &mut Vec<CallId>) {}

    fn waiting(&self) -> usize {
        0
    }

    /// No timer, no events.
    fn take_changed(&mut self) -> bool {
        false
    }

    /// Parks nothing.
    fn has_released(&self) -> bool {
        false
    }
}

crate::params::declare_params! {
    PartitionedLimitSpec: "partitioned_limit", name = |s| s.name,
        scenario_only = [partitions: "the partitions (names, shares summing to at most 1, classes): valid only as a whole"],
        state = PartitionedLimit;
    limit: Count { min: 1, max: 10_000_000 }, "calls",
        runtime(apply = |l, n| l.set_limit(n)),
        "the concurrency limit (FixedLimit); each partition's limit is max(1, ceil(limit x percent))";
}

impl crate::params::GovernorSpec for PartitionedLimitSpec {
    fn local_refusals(&self) -> Vec<Reason> {
        vec![Reason::GateFull]
    }
}

impl crate::governor::GovernorKindOps for PartitionedLimit {
    type Spec = PartitionedLimitSpec;
    fn build(spec: &PartitionedLimitSpec, ctx: &crate::governor::BuildCtx<'_>) -> Self {
        PartitionedLimit::new(spec, ctx.classes)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![("passed", self.passed), ("rejected", self.rejected), ("borrowed", self.borrowed)]
    }
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        vec![("in_flight", self.in_flight() as i64)]
    }
    fn in_flight_limit(&self) -> Option<(u64, Option<u64>)> {
        Some((self.in_flight(), Some(self.limit)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLASSES: [&str; 3] = ["live", "other", "batch"];

    fn spec(limit: u64) -> PartitionedLimitSpec {
        let part = |name: &str, percent: f64, class: &str| PartitionSpec {
            name: name.into(),
            percent,
            classes: vec![class.into()],
        };
        PartitionedLimitSpec {
            name: "p".into(),
            limit,
            partitions: vec![part("live", 0.7, "live"), part("batch", 0.3, "batch")],
        }
    }

    fn call(i: u64, class: u16) -> CallInfo {
        CallInfo::simple(i, class)
    }

    /// `Math.ceil(totalLimit * percent)` in doubles, at least 1.
    #[test]
    fn partition_limits_round_up_in_double_arithmetic() {
        for (total, pct, want) in [
            (10, 0.7, 7),
            (10, 0.3, 3),
            (100, 0.07, 8),  // 7.000000000000001
            (100, 0.29, 29), // 28.999999999999996
            (20, 0.14, 3),   // 2.8000000000000003
            (5, 0.0, 1),
            (1, 0.01, 1),
        ] {
            assert_eq!(partition_limit(total, pct), want, "{total} × {pct}");
        }
    }

    /// Limit 10 (live 7, batch 3, the unknown class `other` 0). Below the limit every call
    /// passes, batch borrowing beyond its 3; at the limit a live call still passes (live busy
    /// 0 < 7, in flight 11), a batch call (busy 10 ≥ 3) and an unknown one (limit 0) are
    /// rejected; two returns bring in flight to 9 < 10: the unknown class passes again.
    #[test]
    fn guarantees_hold_at_the_limit_and_idle_shares_are_borrowed() {
        let mut l = PartitionedLimit::new(&spec(10), &CLASSES);
        let t = SimTime(0);
        for i in 0..10 {
            assert_eq!(l.on_call(&call(i, 2), t), CallDecision::Pass);
        }
        assert_eq!((l.borrowed, l.in_flight()), (7, 10));
        assert_eq!(l.on_call(&call(10, 0), t), CallDecision::Pass);
        assert_eq!(l.on_call(&call(11, 2), t), CallDecision::Reject(Reason::GateFull));
        assert_eq!(l.on_call(&call(12, 1), t), CallDecision::Reject(Reason::GateFull));
        assert_eq!(l.partitions(), vec![(7, 1), (3, 10), (0, 0)]);
        l.on_outcome(&call(0, 2), Outcome::Success, t);
        l.on_abandon(&call(1, 2), t);
        assert_eq!(l.on_call(&call(13, 1), t), CallDecision::Pass);
        assert_eq!(l.partitions(), vec![(7, 1), (3, 8), (0, 1)]);
        assert_eq!((l.passed, l.rejected, l.in_flight()), (12, 2, 10));
        // A new limit recomputes the declared partitions only.
        l.set_limit(100);
        assert_eq!(l.partitions(), vec![(70, 1), (30, 8), (0, 1)]);
    }

    #[test]
    fn the_builders_preconditions_are_checked_with_the_field() {
        assert_eq!(spec(10).check(&CLASSES), Ok(()));
        let mut s = spec(10);
        s.partitions[1].percent = 0.31;
        assert_eq!(s.check(&CLASSES).unwrap_err().0, "partitions");
        let mut s = spec(10);
        s.partitions[0].classes = vec!["vip".into()];
        let (field, m) = s.check(&CLASSES).unwrap_err();
        assert_eq!(field, "partitions[0].classes");
        assert!(m.contains("unknown class `vip`"), "{m}");
        let mut s = spec(10);
        s.partitions[1].percent = -0.1;
        assert_eq!(s.check(&CLASSES).unwrap_err().0, "partitions[1].percent");
    }
}
