//! A token bucket on LLM tokens (a TPM quota, docs/domain.md §3.6): each call takes the tokens it
//! may consume (`CallInfo::tokens`, prompt + maximum output; 1 when unknown) up front.
//!
//! `capacity` tokens at most; refilled continuously at `refill_tokens_per_minute`. When the
//! bucket is short, the call is rejected (`RateLimited`), or — with `max_wait > 0` — it
//! reserves its tokens now (the level goes negative) and waits until the refill has paid
//! for them, if that is within `max_wait` (Guava/Resilience4j-style reservation, FIFO: later
//! reservations always wait longer). A call asking for more than `capacity` is rejected at
//! once (it could never pass).
//!
//! The key design decision: exact integer arithmetic. The level is kept in units of
//! 1/60 000 000 000 token (one token = 60e9 units, the number of nanoseconds in a minute),
//! so one nanosecond of refill adds exactly `refill_tokens_per_minute` units: after exactly
//! one minute exactly `refill_tokens_per_minute` tokens have been added, with no rounding
//! drift however the time is sliced. Waits are rounded up to the next nanosecond.
//!
//! Architecture invariant: `level ≤ capacity`; parked calls ≤ `max_waiting` and are
//! released in reservation order at non-decreasing times. A parked call that is cancelled
//! keeps its reservation (its tokens are not refunded), as with Sentinel's pacing.
//!
//! API boundary: a governor; run-time `set_refill_tokens_per_minute`, `set_capacity`,
//! `set_max_wait`, `reset`.

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// Units per token: nanoseconds per minute.
const UNITS: i128 = 60_000_000_000;

/// Configuration of a token bucket, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "TokenBucket")]
pub struct TokenBucketSpec {
    /// Name; parameters live under `token_bucket.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Bucket size in tokens (≥ 1); the bucket starts full.
    #[serde(deserialize_with = "R::capacity")]
    pub capacity: u64,
    /// Refill rate (tokens per minute, ≥ 1).
    #[serde(deserialize_with = "R::refill_tokens_per_minute")]
    pub refill_tokens_per_minute: u64,
    /// Longest wait for tokens; `"0s"` (default) rejects at once.
    #[serde(default = "D::max_wait")]
    pub max_wait: SimDuration,
    /// Bound on parked calls.
    #[serde(default = "D::max_waiting")]
    pub max_waiting: u64,
}

/// The defaults declared in the parameter rows (`super::params`).
type D = crate::params::Defaults<TokenBucketSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<TokenBucketSpec>;

/// Run-time state of a token bucket.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    capacity: u64,
    rate: u64,
    max_wait: SimDuration,
    max_waiting: u64,
    /// Level in units (may be negative while reservations wait).
    level: i128,
    last: SimTime,
    waiters: VecDeque<(SimTime, CallId)>,
    woken: Vec<CallId>,
    pub passed: u64,
    pub rejected: u64,
    pub queued: u64,
    /// Tokens granted (passed or reserved).
    pub tokens_granted: u64,
}

impl TokenBucket {
    pub fn new(spec: &TokenBucketSpec) -> Self {
        assert!(spec.capacity >= 1 && spec.refill_tokens_per_minute >= 1, "validated");
        TokenBucket {
            capacity: spec.capacity,
            rate: spec.refill_tokens_per_minute,
            max_wait: spec.max_wait,
            max_waiting: spec.max_waiting,
            level: spec.capacity as i128 * UNITS,
            last: SimTime(0),
            waiters: VecDeque::new(),
            woken: Vec::new(),
            passed: 0,
            rejected: 0,
            queued: 0,
            tokens_granted: 0,
        }
    }

    /// The level at `now` ≥ `last`, refilled at the current rate.
    fn level_at(&self, now: SimTime) -> i128 {
        let add = (now.as_ns() - self.last.as_ns()) as i128 * self.rate as i128;
        (self.level + add).min(self.capacity as i128 * UNITS)
    }

    fn refill(&mut self, now: SimTime) {
        assert!(now >= self.last, "time went backwards");
        self.level = self.level_at(now);
        self.last = now;
    }

    /// Whole tokens available at `now`, without touching the bucket (observers).
    pub fn tokens_at(&self, now: SimTime) -> i64 {
        self.level_at(now.max(self.last)).div_euclid(UNITS) as i64
    }

    /// Whole tokens available at `now` (negative while reservations wait).
    pub fn available(&mut self, now: SimTime) -> i64 {
        self.refill(now);
        self.level.div_euclid(UNITS) as i64
    }

    /// Run-time rate change: the level is brought up to date at the old rate first.
    pub fn set_refill_tokens_per_minute(&mut self, rate: u64, now: SimTime) {
        assert!(rate >= 1);
        self.refill(now);
        self.rate = rate;
    }
    pub fn set_capacity(&mut self, capacity: u64, now: SimTime) {
        assert!(capacity >= 1);
        self.refill(now);
        self.capacity = capacity;
        self.level = self.level.min(capacity as i128 * UNITS);
    }
    pub fn set_max_wait(&mut self, d: SimDuration) {
        self.max_wait = d;
    }
    /// A reload: full bucket; parked calls keep their release times.
    pub fn reset(&mut self, now: SimTime) {
        self.level = self.capacity as i128 * UNITS;
        self.last = now;
    }
}

impl Governor for TokenBucket {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        let tokens = call.tokens.max(1) as u64;
        if tokens > self.capacity {
            self.rejected += 1;
            return CallDecision::Reject(Reason::RateLimited);
        }
        self.refill(now);
        let need = tokens as i128 * UNITS;
        if self.level >= need {
            self.level -= need;
            self.passed += 1;
            self.tokens_granted += tokens;
            return CallDecision::Pass;
        }
        // ceil(deficit / rate) ns until the refill has paid for this call.
        let deficit = need - self.level;
        let rate = self.rate as i128;
        let wait_ns = (deficit + rate - 1) / rate;
        if self.max_wait == SimDuration::ZERO
            || wait_ns > self.max_wait.as_ns() as i128
            || self.waiters.len() as u64 >= self.max_waiting
        {
            self.rejected += 1;
            return CallDecision::Reject(Reason::RateLimited);
        }
        self.level -= need;
        self.queued += 1;
        self.tokens_granted += tokens;
        let at = now + SimDuration::from_ns(wait_ns as u64);
        assert!(self.waiters.back().is_none_or(|(t, _)| *t <= at), "FIFO release order");
        self.waiters.push_back((at, call.call));
        CallDecision::Wait { deadline: None, on_deadline: Reason::RateLimited }
    }

    fn on_outcome(&mut self, _call: &CallInfo, outcome: Outcome, _now: SimTime) -> OutcomeDecision {
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        if let Some(pos) = self.waiters.iter().position(|(_, c)| *c == call.call) {
            self.waiters.remove(pos);
        } else {
            let pos = self.woken.iter().position(|c| *c == call.call);
            self.woken.remove(pos.expect("abandoned call was not parked at this bucket"));
        }
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }

    fn waiting(&self) -> usize {
        self.waiters.len()
    }

    fn wake_at(&self) -> Option<SimTime> {
        self.waiters.front().map(|(t, _)| *t)
    }

    fn on_wake(&mut self, now: SimTime) {
        while let Some(&(t, c)) = self.waiters.front() {
            if t > now {
                break;
            }
            self.waiters.pop_front();
            self.passed += 1;
            self.woken.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(capacity: u64, tpm: u64, max_wait_ms: u64) -> TokenBucketSpec {
        TokenBucketSpec {
            name: "tpm".into(),
            capacity,
            refill_tokens_per_minute: tpm,
            max_wait: SimDuration::from_ms(max_wait_ms),
            max_waiting: 10,
        }
    }
    fn call(i: u64, tokens: u32) -> CallInfo {
        CallInfo { tokens, ..CallInfo::simple(i, 0) }
    }

    /// 7 tokens a minute, capacity 7. One token takes 60e9/7 = 8 571 428 571.43 ns:
    /// at 8 571 428 571 ns the level is 8 571 428 571·7 = 59 999 999 997 units < 60e9
    /// (one token) → rejected; one ns later 60 000 000 004 ≥ 60e9 → passes. After the
    /// whole minute the bucket holds exactly 7 tokens again: 7 pass, the 8th does not.
    #[test]
    fn tpm_refill_is_exact() {
        let mut b = TokenBucket::new(&spec(7, 7, 0));
        let r = CallDecision::Reject(Reason::RateLimited);
        assert_eq!(b.on_call(&call(1, 7), SimTime(0)), CallDecision::Pass);
        assert_eq!(b.on_call(&call(2, 0), SimTime(8_571_428_571)), r); // tokens 0 → 1
        assert_eq!(b.on_call(&call(3, 0), SimTime(8_571_428_572)), CallDecision::Pass);
        // Slice the next minute in uneven steps: no drift.
        let mut b = TokenBucket::new(&spec(7, 7, 0));
        assert_eq!(b.on_call(&call(1, 7), SimTime(0)), CallDecision::Pass);
        for t in [1, 3_333_333_333, 17_000_000_001, 59_999_999_999] {
            assert!(b.available(SimTime(t)) < 7);
        }
        assert_eq!(b.on_call(&call(4, 7), SimTime(59_999_999_999)), r); // 6.9999999 tokens
        assert_eq!(b.available(SimTime(60_000_000_000)), 7);
        for i in 0..7 {
            assert_eq!(b.on_call(&call(10 + i, 1), SimTime(60_000_000_000)), CallDecision::Pass);
        }
        assert_eq!(b.on_call(&call(20, 1), SimTime(60_000_000_000)), r);
    }

    /// Reservation of the call's maximum tokens: capacity 100, 6000 a minute (one token per
    /// 10 ms), max wait 1 s. A call of 150 tokens can never fit → rejected at once. 100 pass
    /// at 0; 50 more reserve (level −50) and wait 50·10 ms = 500 ms; 60 more would wait
    /// (50 + 60)·10 = 1100 ms > 1 s → rejected; 40 more wait (50 + 40)·10 = 900 ms.
    #[test]
    fn reservation_of_max_tokens_and_wait() {
        let mut b = TokenBucket::new(&spec(100, 6000, 1000));
        let t0 = SimTime(0);
        let r = CallDecision::Reject(Reason::RateLimited);
        let w = CallDecision::Wait { deadline: None, on_deadline: Reason::RateLimited };
        assert_eq!(b.on_call(&call(1, 150), t0), r);
        assert_eq!(b.on_call(&call(2, 100), t0), CallDecision::Pass);
        assert_eq!(b.on_call(&call(3, 50), t0), w);
        assert_eq!(b.on_call(&call(4, 60), t0), r);
        assert_eq!(b.on_call(&call(5, 40), t0), w);
        assert_eq!(b.available(t0), -90);
        assert_eq!(b.wake_at(), Some(SimTime(500_000_000)));
        b.on_wake(SimTime(500_000_000));
        assert_eq!(b.wake_at(), Some(SimTime(900_000_000)));
        b.on_wake(SimTime(900_000_000));
        let mut woken = vec![];
        b.take_woken(&mut woken);
        assert_eq!(woken, [CallId(3), CallId(5)]);
        assert_eq!(b.available(SimTime(900_000_000)), 0);
        assert_eq!((b.passed, b.rejected, b.queued, b.tokens_granted), (3, 2, 2, 190));
        // Without a wait allowance the bucket rejects at once.
        b.set_max_wait(SimDuration::ZERO);
        assert_eq!(b.on_call(&call(6, 1), SimTime(900_000_000)), r);
    }

    #[test]
    fn spec_from_ron() {
        let s: TokenBucketSpec = ron::from_str(
            "TokenBucket(name: \"tpm\", capacity: 90000, refill_tokens_per_minute: 90000, \
             max_wait: \"2s\")",
        )
        .expect("valid");
        assert_eq!((s.max_wait, s.max_waiting), (SimDuration::from_secs(2), 100_000));
        assert!(
            ron::from_str::<TokenBucketSpec>(
                "TokenBucket(name: \"t\", capacity: 0, refill_tokens_per_minute: 1)"
            )
            .is_err()
        );
    }
}
