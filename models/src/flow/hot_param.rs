//! Hot-parameter limits (Sentinel's `ParamFlowRule`, QPS grade, default behaviour): a
//! token bucket per parameter value — per user (`CallInfo::user`) or per key
//! (`CallInfo::key`) — with per-value exceptions (`param_flow_item_list`) and a "VIP" group
//! (the sources' VIP vs normal quotas: users below an id bound or listed, with their own
//! count).
//!
//! Semantics of `ParamFlowChecker.passDefaultLocalCheck` (acquire count 1, ms clock):
//! `tokenCount = (long) count` (or the value's exception count); 0 blocks everything;
//! `maxCount = tokenCount + burst_count`. A value seen for the first time passes and keeps
//! `maxCount − 1` tokens. Otherwise, with `passTime = now − lastAddTokenTime`: if
//! `passTime > duration_in_sec·1000` the bucket is refilled by
//! `passTime·tokenCount / (duration_in_sec·1000)` (integer division) — to `maxCount − 1`
//! when that would exceed `maxCount`, else `rest + toAdd − 1` — and the call passes unless
//! that is negative (then nothing changes); within the duration the call takes one token
//! if one is left. Note Sentinel's strict `>`: at exactly one duration after the last
//! refill nothing is added yet.
//!
//! The key design decision: the tracked values are bounded like Sentinel's `CacheMap`
//! (an LRU of `min(4000·duration_in_sec, 200 000)` values by default, `max_tracked_values`
//! to override): touching a value makes it most recent; inserting beyond the cap evicts the
//! least recently touched value, which comes back later with a full bucket. Recency is a
//! sequence number, so eviction is deterministic. A value of 0 means "no parameter" and
//! passes unchecked (Sentinel passes a null argument).
//!
//! Architecture invariant: `tracked() ≤ max_tracked_values`; the two maps (values, recency)
//! always hold the same entries.
//!
//! API boundary: a governor that never parks; run-time `set_count`, `reset`.

use super::now_ms;
use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::SimTime;
use std::collections::BTreeMap;

crate::params::param_choices! {
    /// Which call attribute is the hot parameter (Sentinel's `paramIdx`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub enum HotParam {
        /// `CallInfo::user`.
        User = "User",
        /// `CallInfo::key`.
        Key = "Key",
    }
}

/// An exception for one value (`ParamFlowItem`: `object`, `count`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "ParamFlowItem")]
pub struct ParamFlowItem {
    pub object: u64,
    pub count: u64,
}

/// A VIP group: values below `user_id_below` or in `values` get `count` (each value still
/// has its own bucket). Exceptions in `param_flow_item_list` take precedence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "VipGroup")]
pub struct VipGroup {
    /// Values 1..user_id_below are VIP (absent: none by bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::validate::present")]
    #[serde(serialize_with = "crate::validate::ser_present")]
    pub user_id_below: Option<u64>,
    /// Explicit VIP values (≤ 10 000).
    #[serde(default)]
    pub values: Vec<u64>,
    /// The VIP threshold per value.
    pub count: u64,
}

/// A hot-parameter rule, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "ParamFlowRule")]
pub struct ParamFlowRuleSpec {
    /// Name; parameters live under `param_flow.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    pub param: HotParam,
    /// Threshold per value per `duration_in_sec` (truncated to an integer, as Sentinel).
    #[serde(deserialize_with = "R::count")]
    pub count: f64,
    /// The statistics window (Sentinel default 1).
    #[serde(default = "D::duration_in_sec", deserialize_with = "R::duration_in_sec")]
    pub duration_in_sec: u64,
    /// Extra tokens a value may burst (Sentinel default 0).
    #[serde(default = "D::burst_count")]
    pub burst_count: u64,
    /// Per-value exceptions (≤ 10 000).
    #[serde(default)]
    pub param_flow_item_list: Vec<ParamFlowItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::validate::present")]
    #[serde(serialize_with = "crate::validate::ser_present")]
    pub vip: Option<VipGroup>,
    /// LRU cap on tracked values; absent: min(4000·duration_in_sec, 200 000) as Sentinel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(
        deserialize_with = "crate::params::RangedSome::<ParamFlowRuleSpec>::max_tracked_values"
    )]
    #[serde(serialize_with = "crate::validate::ser_present")]
    pub max_tracked_values: Option<u64>,
}

/// The defaults declared in the parameter rows (`flow/params.rs`).
type D = crate::params::Defaults<ParamFlowRuleSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<ParamFlowRuleSpec>;

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: i64,
    last_add_ms: u64,
    recency: u64,
}

/// Run-time state of a hot-parameter rule.
#[derive(Clone, Debug)]
pub struct ParamFlow {
    spec: ParamFlowRuleSpec,
    items: BTreeMap<u64, u64>,
    vip_values: BTreeMap<u64, ()>,
    cap: usize,
    buckets: BTreeMap<u64, Bucket>,
    by_recency: BTreeMap<u64, u64>,
    seq: u64,
    pub passed: u64,
    pub blocked: u64,
    pub evicted: u64,
}

impl ParamFlow {
    pub fn new(spec: &ParamFlowRuleSpec) -> Self {
        assert!(spec.count >= 0.0 && spec.duration_in_sec >= 1, "validated");
        assert!(spec.param_flow_item_list.len() <= 10_000, "exception list too long");
        let cap = spec.max_tracked_values.unwrap_or((4000 * spec.duration_in_sec).min(200_000));
        assert!(cap >= 1);
        let vip_values: BTreeMap<u64, ()> =
            spec.vip.iter().flat_map(|v| v.values.iter().map(|x| (*x, ()))).collect();
        assert!(vip_values.len() <= 10_000, "VIP list too long");
        ParamFlow {
            items: spec.param_flow_item_list.iter().map(|i| (i.object, i.count)).collect(),
            vip_values,
            cap: cap as usize,
            spec: spec.clone(),
            buckets: BTreeMap::new(),
            by_recency: BTreeMap::new(),
            seq: 0,
            passed: 0,
            blocked: 0,
            evicted: 0,
        }
    }

    /// Values currently tracked (≤ the cap).
    pub fn tracked(&self) -> usize {
        self.buckets.len()
    }
    /// Tokens left for `value` (`None`: not tracked).
    pub fn tokens(&self, value: u64) -> Option<i64> {
        self.buckets.get(&value).map(|b| b.tokens)
    }

    /// Run-time change of the normal threshold (buckets kept).
    pub fn set_count(&mut self, count: f64) {
        assert!(count.is_finite() && count >= 0.0);
        self.spec.count = count;
    }
    pub fn set_burst_count(&mut self, burst: u64) {
        self.spec.burst_count = burst;
    }
    /// Run-time change of the VIP threshold (no-op without a VIP group).
    pub fn set_vip_count(&mut self, count: u64) {
        if let Some(v) = &mut self.spec.vip {
            v.count = count;
        }
    }
    /// A rule reload: Sentinel keys the per-value counters by rule, so all buckets restart.
    pub fn reset(&mut self) {
        self.buckets.clear();
        self.by_recency.clear();
    }

    /// The threshold for `value` (exception, then VIP group, then `count`).
    pub fn token_count(&self, value: u64) -> u64 {
        if let Some(c) = self.items.get(&value) {
            return *c;
        }
        if let Some(v) = &self.spec.vip
            && (v.user_id_below.is_some_and(|b| value < b) || self.vip_values.contains_key(&value))
        {
            return v.count;
        }
        self.spec.count as u64
    }

    fn value_of(&self, call: &CallInfo) -> u64 {
        match self.spec.param {
            HotParam::User => call.user,
            HotParam::Key => call.key,
        }
    }

    /// `passDefaultLocalCheck` for one value at `now` (acquire count 1).
    pub fn check(&mut self, value: u64, now: SimTime) -> bool {
        let t = now_ms(now);
        let token_count = self.token_count(value) as i64;
        if token_count == 0 {
            return false;
        }
        let max = token_count + self.spec.burst_count as i64;
        let recency = self.seq;
        self.seq += 1;
        let Some(b) = self.buckets.get_mut(&value) else {
            if self.buckets.len() >= self.cap {
                let (_, old) = self.by_recency.pop_first().expect("non-empty at cap");
                self.buckets.remove(&old).expect("indexed value");
                self.evicted += 1;
            }
            self.buckets.insert(value, Bucket { tokens: max - 1, last_add_ms: t, recency });
            self.by_recency.insert(recency, value);
            assert_eq!(self.buckets.len(), self.by_recency.len());
            return true;
        };
        self.by_recency.remove(&b.recency);
        b.recency = recency;
        self.by_recency.insert(recency, value);
        let duration_ms = self.spec.duration_in_sec as i64 * 1000;
        let pass_time = t as i64 - b.last_add_ms as i64;
        if pass_time > duration_ms {
            let to_add = pass_time * token_count / duration_ms;
            let new = if to_add + b.tokens > max { max - 1 } else { b.tokens + to_add - 1 };
            if new < 0 {
                return false;
            }
            b.tokens = new;
            b.last_add_ms = t;
            true
        } else if b.tokens >= 1 {
            b.tokens -= 1;
            true
        } else {
            false
        }
    }
}

impl Governor for ParamFlow {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        let value = self.value_of(call);
        if value == 0 || self.check(value, now) {
            self.passed += 1;
            CallDecision::Pass
        } else {
            self.blocked += 1;
            CallDecision::Reject(Reason::RateLimited)
        }
    }
    fn on_outcome(&mut self, _call: &CallInfo, outcome: Outcome, _now: SimTime) -> OutcomeDecision {
        OutcomeDecision::PassUp(outcome)
    }
    fn on_abandon(&mut self, _call: &CallInfo, _now: SimTime) {
        panic!("a hot-parameter rule never parks calls");
    }
    fn take_woken(&mut self, _out: &mut Vec<CallId>) {}
    fn waiting(&self) -> usize {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = super::super::NS_PER_MS;

    fn spec(count: f64) -> ParamFlowRuleSpec {
        ParamFlowRuleSpec {
            name: "user_qps".into(),
            param: HotParam::User,
            count,
            duration_in_sec: 1,
            burst_count: 0,
            param_flow_item_list: vec![],
            vip: None,
            max_tracked_values: None,
        }
    }
    fn user(call: u64, user: u64) -> CallInfo {
        CallInfo { user, ..CallInfo::simple(call, 0) }
    }
    /// Runs (time ms, user) → passed? for a script.
    fn run(p: &mut ParamFlow, script: &[(u64, u64, bool)]) {
        for (i, &(t, u, expect)) in script.iter().enumerate() {
            let d = p.on_call(&user(i as u64, u), SimTime(t * MS));
            assert_eq!(d == CallDecision::Pass, expect, "row {i}: t {t} user {u}");
        }
    }

    /// count 2 per second: tokens 2 − 1 = 1 after the first call, 0 after the second.
    /// At 1000 ms pass_time = 1000 is not > 1000: no refill → blocked. At 1001:
    /// to_add = 1001·2/1000 = 2, 0 + 2 ≤ 2 → tokens 1, pass; then 0, pass; then blocked.
    #[test]
    fn token_bucket_per_value() {
        let mut p = ParamFlow::new(&spec(2.0));
        let (a, b) = (500, 501);
        run(
            &mut p,
            &[
                (0, a, true),
                (0, a, true),
                (0, a, false),
                (0, b, true), // per-value isolation: b has its own bucket
                (999, b, true),
                (999, b, false),
                (1000, a, false), // Sentinel's strict '>'
                (1001, a, true),
                (1001, a, true),
                (1001, a, false),
                (5000, a, true), // to_add = 3999·2/1000 = 7 > max 2 → max − 1 = 1
                (5000, a, true),
                (5000, a, false),
                (7, 0, true), // value 0: no parameter, unchecked
            ],
        );
        assert_eq!((p.passed, p.blocked), (9, 5));
    }

    /// VIP group (ids below 100, or 777) gets 5 a second; normal users 2; the exception
    /// list overrides both (user 42: blocked entirely, count 0). Burst 1 adds one token.
    #[test]
    fn vip_group_and_exceptions() {
        let mut s = spec(2.0);
        s.vip = Some(VipGroup { user_id_below: Some(100), values: vec![777], count: 5 });
        s.param_flow_item_list = vec![ParamFlowItem { object: 42, count: 0 }];
        let mut p = ParamFlow::new(&s);
        assert_eq!([7, 99, 100, 777, 42, 1000].map(|u| p.token_count(u)), [5, 5, 2, 5, 0, 2]);
        let passes = |p: &mut ParamFlow, u: u64| {
            (0..10).filter(|i| p.on_call(&user(*i, u), SimTime(0)) == CallDecision::Pass).count()
        };
        assert_eq!(passes(&mut p, 7), 5);
        assert_eq!(passes(&mut p, 777), 5);
        assert_eq!(passes(&mut p, 100), 2);
        assert_eq!(passes(&mut p, 42), 0);
        s.burst_count = 1; // max = count + burst
        let mut p = ParamFlow::new(&s);
        assert_eq!((passes(&mut p, 7), passes(&mut p, 300)), (6, 3));
        p.set_vip_count(8); // bucket kept (0 left) until the next refill
        assert_eq!(passes(&mut p, 7), 0);
        assert_eq!(p.on_call(&user(1, 7), SimTime(1001 * MS)), CallDecision::Pass);
        // to_add = 1001·8/1000 = 8 ≤ max 9 → 0 + 8 − 1 = 7 left
        assert_eq!(p.tokens(7), Some(7));
    }

    /// LRU cap 2: users 1, 2 tracked; touching 1 makes 2 the oldest; user 3 evicts 2,
    /// which returns with a full bucket.
    #[test]
    fn tracked_values_are_capped_lru() {
        let mut s = spec(1.0);
        s.max_tracked_values = Some(2);
        let mut p = ParamFlow::new(&s);
        run(
            &mut p,
            &[
                (0, 1, true),  // 1: tokens 0
                (0, 2, true),  // 2: tokens 0
                (0, 1, false), // touch 1 (blocked, still touched)
                (0, 3, true),  // evicts 2 (least recent)
                (0, 1, false), // 1 still tracked, empty
                (0, 2, true),  // 2 fresh again: evicts 3 (1 was touched after 3)
                (0, 3, true),  // 3 fresh: evicts 1
            ],
        );
        assert_eq!((p.tracked(), p.evicted), (2, 3));
        assert_eq!(ParamFlow::new(&spec(1.0)).cap, 4000); // Sentinel's default
        p.reset();
        assert_eq!(p.tracked(), 0);
    }

    #[test]
    fn key_parameter_and_spec_parsing() {
        let text = "ParamFlowRule(name: \"k\", param: Key, count: 1, \
                    vip: VipGroup(user_id_below: 10, count: 3), max_tracked_values: 100)";
        let s: ParamFlowRuleSpec = ron::from_str(text).expect("valid");
        assert_eq!((s.duration_in_sec, s.burst_count, s.max_tracked_values), (1, 0, Some(100)));
        let back = ron::to_string(&s).expect("serializes");
        assert_eq!(ron::from_str::<ParamFlowRuleSpec>(&back).expect("round trip"), s);
        let mut p = ParamFlow::new(&s);
        let k = |call, key| CallInfo { key, user: 1, ..CallInfo::simple(call, 0) };
        assert_eq!(p.on_call(&k(1, 50), SimTime(0)), CallDecision::Pass);
        assert_eq!(p.on_call(&k(2, 50), SimTime(0)), CallDecision::Reject(Reason::RateLimited));
        assert_eq!(p.on_call(&k(3, 51), SimTime(0)), CallDecision::Pass);
        let bad = "ParamFlowRule(name: \"k\", param: Key, count: 1, duration_in_sec: 0)";
        assert!(ron::from_str::<ParamFlowRuleSpec>(bad).is_err());
    }
}
