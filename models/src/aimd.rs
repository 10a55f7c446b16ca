//! An adaptive concurrency limit: Netflix concurrency-limits' `SimpleLimiter` with an
//! `AIMDLimit` (additive increase, multiplicative decrease), from `aimd_limits`.
//!
//! A call passes while fewer than `limit` calls are in flight past this level, else it is
//! rejected at once (`gate_full`, like a fail-fast gate: `SimpleLimiter.acquire` returns
//! no listener). When a passed call's outcome comes back the limit takes a sample, as
//! `AbstractLimiter.createListener` and `AIMDLimit._update` do:
//! * `rtt` = now − the time the call passed; `inflight` = the calls in flight just after
//!   it passed (the listener's `currentInflight`);
//! * a **drop** (a failure: timeout, 429, 5xx, connect error, interrupted stream) or
//!   `rtt > timeout`: `limit = (int)(limit × backoff_ratio)`;
//! * else, if `inflight × 2 ≥ limit`: `limit + 1` (grow only while the limit is used);
//! * the result clamped, `min(max_limit, max(min_limit, x))` (with `min_limit >
//!   max_limit` the limit is `max_limit`, as in the library);
//! * ignored (no sample, as `onIgnore`): a business error (the upstream answered), a
//!   degraded answer or a refusal from a level below, and a call cancelled from above.
//!
//! The limit is the gauge `aimd_limit.<name>.limit` (with `in_flight`); each decrease is
//! a `limit_decrease` event (`from` → `to`); increases show in the gauge only (they can
//! happen once per call).
//!
//! Architecture invariant: `in_flight` = calls passed − calls returned (outcome or
//! abandon); every passed call is in `started` exactly until it returns.

use crate::governor::{CallDecision, CallInfo, GovEvent, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use crate::params::{ParamDecl, ParamType, ParamValue as V};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// Configuration, named as `AIMDLimit.Builder` names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "AimdLimit")]
pub struct AimdLimitSpec {
    /// Name; parameters live under `aimd_limit.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// The limit before the first sample (`initialLimit`, default 20).
    #[serde(default = "twenty")]
    pub initial_limit: u64,
    /// The lowest limit (`minLimit`, default 20).
    #[serde(default = "twenty")]
    pub min_limit: u64,
    /// The highest limit (`maxLimit`, default 200).
    #[serde(default = "two_hundred")]
    pub max_limit: u64,
    /// Factor applied on a drop (`backoffRatio`, [0.5, 1.0), default 0.9).
    #[serde(default = "point_nine")]
    pub backoff_ratio: f64,
    /// A round trip longer than this counts as a drop (`timeout`, default 5 s).
    #[serde(default = "five_seconds")]
    pub timeout: SimDuration,
}

fn twenty() -> u64 {
    20
}
fn two_hundred() -> u64 {
    200
}
fn point_nine() -> f64 {
    0.9
}
fn five_seconds() -> SimDuration {
    SimDuration::from_secs(5)
}

/// Largest limit (a bound on the state, as a gate's permits).
const MAX_LIMIT: u64 = 10_000_000;

/// Run-time state.
#[derive(Clone, Debug)]
pub struct AimdLimit {
    limit: u64,
    min_limit: u64,
    max_limit: u64,
    backoff_ratio: f64,
    timeout: SimDuration,
    /// Calls past this level: when each passed, and the in-flight count just after.
    started: BTreeMap<CallId, (SimTime, u64)>,
    events: Vec<GovEvent>,
    pub passed: u64,
    pub rejected: u64,
    pub succeeded: u64,
    pub dropped: u64,
    pub ignored: u64,
}

impl AimdLimit {
    pub fn new(spec: &AimdLimitSpec) -> Self {
        AimdLimit {
            limit: spec.initial_limit,
            min_limit: spec.min_limit,
            max_limit: spec.max_limit,
            backoff_ratio: spec.backoff_ratio,
            timeout: spec.timeout,
            started: BTreeMap::new(),
            events: Vec::new(),
            passed: 0,
            rejected: 0,
            succeeded: 0,
            dropped: 0,
            ignored: 0,
        }
    }

    /// The limit in force.
    pub fn limit(&self) -> u64 {
        self.limit
    }
    /// Calls past this level.
    pub fn in_flight(&self) -> u64 {
        self.started.len() as u64
    }

    /// `AIMDLimit._update`: the next limit after one sample.
    fn update(&self, rtt: SimDuration, inflight: u64, did_drop: bool) -> u64 {
        let mut l = self.limit;
        if did_drop || rtt > self.timeout {
            // Java's `(int) (currentLimit * backoffRatio)`: truncation toward zero.
            l = (l as f64 * self.backoff_ratio) as u64;
        } else if inflight * 2 >= l {
            l += 1;
        }
        l.max(self.min_limit).min(self.max_limit)
    }

    fn sample(&mut self, rtt: SimDuration, inflight: u64, did_drop: bool, now: SimTime) {
        let next = self.update(rtt, inflight, did_drop);
        if next < self.limit {
            self.events.push(GovEvent {
                time: now,
                kind: "limit_decrease",
                from: self.limit.to_string(),
                to: next.to_string(),
            });
        }
        self.limit = next;
    }
}

/// A sample's `didDrop` (`Some(true)`: `onDropped`, `Some(false)`: `onSuccess`), or
/// `None` for an outcome that takes no sample (`onIgnore`).
fn classify(o: Outcome) -> Option<bool> {
    match o {
        Outcome::Success => Some(false),
        Outcome::Failed(Reason::BusinessError) => None,
        Outcome::Failed(_) => Some(true),
        Outcome::Degraded(_) | Outcome::Rejected(_) => None,
    }
}

impl Governor for AimdLimit {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        if self.in_flight() >= self.limit {
            self.rejected += 1;
            return CallDecision::Reject(Reason::GateFull);
        }
        let inflight = self.in_flight() + 1;
        let prev = self.started.insert(call.call, (now, inflight));
        assert!(prev.is_none(), "call {:?} passed the AIMD limit twice", call.call);
        self.passed += 1;
        CallDecision::Pass
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        let (start, inflight) =
            self.started.remove(&call.call).expect("an outcome of a call that passed");
        match classify(outcome) {
            Some(drop) => {
                if drop {
                    self.dropped += 1;
                } else {
                    self.succeeded += 1;
                }
                self.sample(now - start, inflight, drop, now);
            }
            None => self.ignored += 1,
        }
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        // Cancelled from above: no sample (`onIgnore`).
        let gone = self.started.remove(&call.call);
        assert!(gone.is_some(), "abandoned call never passed this limit");
        self.ignored += 1;
    }

    fn take_woken(&mut self, _out: &mut Vec<CallId>) {}

    fn waiting(&self) -> usize {
        0
    }

    fn take_events(&mut self, out: &mut Vec<GovEvent>) {
        out.append(&mut self.events);
    }
}

impl crate::params::Params for AimdLimitSpec {
    const KIND: &'static str = "aimd_limit";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<ParamDecl> {
        let limit = ParamType::Count { min: 1, max: MAX_LIMIT };
        vec![
            ParamDecl {
                name: "initial_limit",
                ty: limit.clone(),
                unit: "calls",
                runtime: false,
                doc: "the limit before the first sample (initialLimit)",
            },
            ParamDecl {
                name: "min_limit",
                ty: limit.clone(),
                unit: "calls",
                runtime: true,
                doc: "the lowest limit (minLimit)",
            },
            ParamDecl {
                name: "max_limit",
                ty: limit,
                unit: "calls",
                runtime: true,
                doc: "the highest limit (maxLimit)",
            },
            ParamDecl {
                name: "backoff_ratio",
                ty: ParamType::Float { min: 0.5, max: 0.999_999 },
                unit: "ratio",
                runtime: true,
                doc: "factor applied to the limit on a drop, in [0.5, 1.0) (backoffRatio)",
            },
            ParamDecl {
                name: "timeout",
                ty: ParamType::Duration {
                    min: SimDuration::from_ns(1),
                    max: SimDuration::from_secs(86_400),
                },
                unit: "ns",
                runtime: true,
                doc: "a round trip longer than this counts as a drop (timeout)",
            },
        ]
    }
    fn get(&self, p: &str) -> Option<V> {
        Some(match p {
            "initial_limit" => V::Count(self.initial_limit),
            "min_limit" => V::Count(self.min_limit),
            "max_limit" => V::Count(self.max_limit),
            "backoff_ratio" => V::Float(self.backoff_ratio),
            "timeout" => V::Duration(self.timeout),
            _ => return None,
        })
    }
    fn set(&mut self, p: &str, v: V) -> Result<(), String> {
        match (p, v) {
            ("initial_limit", V::Count(n)) => self.initial_limit = n,
            ("min_limit", V::Count(n)) => self.min_limit = n,
            ("max_limit", V::Count(n)) => self.max_limit = n,
            ("backoff_ratio", V::Float(x)) => self.backoff_ratio = x,
            ("timeout", V::Duration(d)) => self.timeout = d,
            (p, v) => return Err(format!("aimd_limit has no parameter `{p}` of type {v:?}")),
        }
        Ok(())
    }
}

impl crate::params::GovernorSpec for AimdLimitSpec {}

impl crate::governor::GovernorKindOps for AimdLimit {
    type Spec = AimdLimitSpec;
    fn build(spec: &AimdLimitSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        AimdLimit::new(spec)
    }
    fn apply_param(&mut self, param: &str, v: V, _now: SimTime) -> Result<(), String> {
        // New bounds and factors apply from the next sample.
        match (param, v) {
            ("min_limit", V::Count(n)) => self.min_limit = n,
            ("max_limit", V::Count(n)) => self.max_limit = n,
            ("backoff_ratio", V::Float(x)) => self.backoff_ratio = x,
            ("timeout", V::Duration(d)) => self.timeout = d,
            (p, v) => return Err(format!("aimd_limit.{p} = {v:?} is not run-time changeable")),
        }
        Ok(())
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("passed", self.passed),
            ("rejected", self.rejected),
            ("succeeded", self.succeeded),
            ("dropped", self.dropped),
            ("ignored", self.ignored),
            ("in_flight_end", self.in_flight()),
            ("limit_end", self.limit),
        ]
    }
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        vec![("limit", self.limit as i64), ("in_flight", self.in_flight() as i64)]
    }
    fn in_flight_limit(&self) -> Option<(u64, Option<u64>)> {
        Some((self.in_flight(), Some(self.limit)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> AimdLimitSpec {
        AimdLimitSpec {
            name: "a".into(),
            initial_limit: 20,
            min_limit: 20,
            max_limit: 200,
            backoff_ratio: 0.9,
            timeout: SimDuration::from_secs(5),
        }
    }

    /// (limit before, min, max, rtt ms, inflight, drop, limit after, why).
    type Row = (u64, u64, u64, u64, u64, bool, u64, &'static str);

    /// `AIMDLimit._update(startTime, rtt, inflight, didDrop)`, row by row from the
    /// library's formula: (limit before, min, max, rtt ms, inflight, drop) → limit after.
    #[test]
    fn update_table() {
        #[rustfmt::skip]
        let rows: &[Row] = &[
            (20, 20, 200, 10, 10, false, 21, "inflight×2 = 20 ≥ 20: additive increase"),
            (20, 20, 200, 10, 9, false, 20, "inflight×2 = 18 < 20: app-limited, unchanged"),
            (100, 20, 200, 10, 60, true, 90, "drop: ×0.9"),
            (25, 20, 200, 10, 20, true, 22, "drop: (int)22.5 = 22, truncated"),
            (21, 20, 200, 10, 20, true, 20, "drop: (int)18.9 = 18, raised to min 20"),
            (100, 20, 200, 5001, 60, false, 90, "rtt 5.001 s > timeout 5 s: a drop"),
            (100, 20, 200, 5000, 60, false, 101, "rtt = timeout is no drop (strictly greater)"),
            (200, 20, 200, 10, 150, false, 200, "at max: clamped"),
            (55, 20, 50, 10, 1, false, 50, "above max (initial): clamped on the first sample"),
            (30, 40, 30, 10, 1, false, 30, "min > max: min(max, max(min, x)) = max"),
            (11, 1, 200, 10, 5, true, 9, "(int)9.9 = 9: truncation, not rounding"),
        ];
        for &(before, min, max, rtt_ms, inflight, drop, after, why) in rows {
            let mut l = AimdLimit::new(&AimdLimitSpec { min_limit: min, max_limit: max, ..spec() });
            l.limit = before;
            assert_eq!(l.update(SimDuration::from_ms(rtt_ms), inflight, drop), after, "{why}");
        }
    }

    /// Script through the governor interface: the limit rejects at once, samples carry
    /// the in-flight count at acquisition, ignored outcomes take no sample.
    #[test]
    fn limiter_script() {
        let mut l = AimdLimit::new(&AimdLimitSpec {
            initial_limit: 2,
            min_limit: 1,
            max_limit: 3,
            ..spec()
        });
        let c = |i| CallInfo::simple(i, 0);
        let t = SimTime(0);
        assert_eq!(l.on_call(&c(1), t), CallDecision::Pass);
        assert_eq!(l.on_call(&c(2), t), CallDecision::Pass);
        assert_eq!(l.on_call(&c(3), t), CallDecision::Reject(Reason::GateFull));
        // Call 1 passed with inflight 1: 1×2 ≥ 2 → 3.
        let t1 = SimTime(1_000_000);
        l.on_outcome(&c(1), Outcome::Success, t1);
        assert_eq!(l.limit(), 3);
        // A business error is ignored: no sample.
        l.on_outcome(&c(2), Outcome::Failed(Reason::BusinessError), t1);
        assert_eq!((l.limit(), l.ignored), (3, 1));
        // A timeout is a drop: (int)(3 × 0.9) = 2, one event.
        assert_eq!(l.on_call(&c(4), t1), CallDecision::Pass);
        l.on_outcome(&c(4), Outcome::Failed(Reason::Timeout), SimTime(2_000_000));
        assert_eq!(l.limit(), 2);
        let mut ev = vec![];
        l.take_events(&mut ev);
        assert_eq!(ev.len(), 1);
        assert_eq!(
            (ev[0].kind, ev[0].from.as_str(), ev[0].to.as_str()),
            ("limit_decrease", "3", "2")
        );
        // Cancelled from above: the slot is given back, no sample.
        assert_eq!(l.on_call(&c(5), t1), CallDecision::Pass);
        l.on_abandon(&c(5), t1);
        assert_eq!((l.in_flight(), l.limit(), l.ignored), (0, 2, 2));
        assert_eq!((l.passed, l.rejected, l.succeeded, l.dropped), (4, 1, 1, 1));
    }
}
