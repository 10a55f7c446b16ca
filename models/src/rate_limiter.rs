//! Resilience4j's `RateLimiter` (its default implementation,
//! `io.github.resilience4j.ratelimiter.internal.AtomicRateLimiter`), from `rate_limiters`.
//!
//! The library's rule, per call (one permit), read from `AtomicRateLimiter`:
//!
//! 1. **Cycles** (`calculateNextState`): time is cut into cycles of `limit_refresh_period`;
//!    the current cycle is `⌊t / period⌋`. The library counts `t` from the loading of the
//!    class (`nanoTimeStart`, a static shared by every limiter of the JVM), so its cycle
//!    boundaries have an arbitrary phase; here `t` is counted from the run's start, where
//!    the limiter is created with `limit_for_period` permissions in cycle 0 (the
//!    constructor's `new State(config, 0, limitForPeriod, 0)`).
//! 2. **Refresh** (`calculateNextState`): when a call finds the cycle moved on by `n ≥ 1`
//!    cycles, the permissions become `min(permissions + n·limit, limit)`: refreshed to the
//!    limit, never accumulated beyond it, and a debt of reservations (negative permissions)
//!    is paid back first. Lazily, at the next call, as the library does.
//! 3. **Wait** (`nanosToWaitForPermission`): with `p ≥ 1` permissions, none; otherwise the
//!    time to the next cycle plus `⌈(1 − (p + limit)) / limit⌉` whole cycles (the library's
//!    `divCeil`, Java's truncating integer division: 0 whenever `p + limit ≥ 1`), so the
//!    call's permit is the first one not yet promised, at the start of the cycle that
//!    frees it.
//! 4. **Reservation** (`reservePermissions`): if `timeout_duration ≥ wait` the permit is
//!    taken now (`permissions − 1`, which may go negative: reservations of future cycles);
//!    else nothing is taken.
//! 5. **The caller** (`acquirePermission` → `waitForPermissionIfNecessary` →
//!    `waitForPermission`): wait 0 passes at once; a reservation parks the call for `wait`
//!    and then passes (`waitForPermission(nanosToWait)`); a call that cannot reserve is
//!    refused (`RequestNotPermitted`, here `rejected:rate_limited`) — **after waiting out
//!    `timeout_duration`** (`waitForPermission(timeoutInNanos); return false;`), which is
//!    what every decorator of `RateLimiter` (`decorateSupplier`, `decorateCallable`,
//!    `decorateCompletionStage`, …, through `RateLimiter.waitForPermission`) and so the
//!    Spring `@RateLimiter` aspect on a synchronous or `CompletionStage` method do:
//!    `mode: Blocking`, the default. The Reactor and RxJava operators
//!    (`FluxRateLimiter`, `FlowableRateLimiter`, …) call `reservePermission` instead, which
//!    refuses at once (returns −1) and delays the subscription by a reservation's wait:
//!    `mode: Reactive`. With `timeout_duration` 0 both refuse at once.
//!
//! A parked call cancelled from above (a time limiter, the request's budget) keeps its
//! reservation consumed: the library never gives a permit back (an interrupted waiter
//! throws `AcquirePermissionCancelledException`, the state is not restored).
//!
//! Run-time changes, as `changeLimitForPeriod` and `changeTimeoutDuration`: the state
//! (cycle, permissions) is kept and the new value is read by the next call. A new limit so
//! takes effect at the next refresh (a lowered limit leaves this cycle's permissions as they
//! are; the RateLimiter interface: "won't affect current period permissions and will apply
//! only from next one") — and, as in the library, the next call's wait is computed with it.
//! A new timeout does not touch calls already parked ("won't affect threads that are
//! currently waiting"). `limit_refresh_period` and `mode` are fixed (no change method).
//!
//! Summary counters `rate_limiter.<name>.{passed, reserved, rejected}`: calls passed at
//! once, calls that reserved a later permit (they pass when their wait ends), calls refused
//! (counted when decided; under `Blocking` the refusal reaches the caller `timeout_duration`
//! later). Gauge `rate_limiter.<name>.available_permissions`: the permissions as of the last
//! call (negative while reservations wait), as `getAvailablePermissions` without its
//! look-ahead.
//!
//! Architecture invariant: the permissions never exceed the limit in force at the last
//! refresh; every reservation was within `timeout_duration` when made; parked calls are
//! released at their reserved instants (ties in arrival order); no randomness.

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::{BTreeMap, VecDeque};

crate::params::param_choices! {
    /// How the application acquires a permission (which of the library's methods).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub enum RateLimiterMode {
        /// `acquirePermission` (the decorators, `@RateLimiter` on a synchronous or
        /// `CompletionStage` method): a refused call waits `timeout_duration` first.
        Blocking = "Blocking",
        /// `reservePermission` (the Reactor and RxJava operators): refused at once.
        Reactive = "Reactive",
    }
}

/// Configuration, named after `RateLimiterConfig`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "RateLimiter")]
pub struct RateLimiterSpec {
    /// Name; parameters live under `rate_limiter.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Permissions per cycle (`limitForPeriod`).
    #[serde(default = "D::limit_for_period", deserialize_with = "R::limit_for_period")]
    pub limit_for_period: u64,
    /// The cycle (`limitRefreshPeriod`).
    #[serde(default = "D::limit_refresh_period", deserialize_with = "R::limit_refresh_period")]
    pub limit_refresh_period: SimDuration,
    /// The longest wait for a permission (`timeoutDuration`).
    #[serde(default = "D::timeout_duration", deserialize_with = "R::timeout_duration")]
    pub timeout_duration: SimDuration,
    /// `acquirePermission` (Blocking) or `reservePermission` (Reactive).
    #[serde(default = "D::mode")]
    pub mode: RateLimiterMode,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<RateLimiterSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<RateLimiterSpec>;

impl RateLimiterSpec {
    /// `RateLimiterConfig.ofDefaults()` under a name.
    pub fn defaults(name: &str) -> Self {
        RateLimiterSpec {
            name: name.into(),
            limit_for_period: D::limit_for_period(),
            limit_refresh_period: D::limit_refresh_period(),
            timeout_duration: D::timeout_duration(),
            mode: D::mode(),
        }
    }
}

/// `calculateNextState`'s refresh: the cycle of `now_ns` and the permissions in it, from the
/// state `(cycle, permissions)` of the last call.
pub fn refresh(
    limit: u64,
    period_ns: u64,
    cycle: u64,
    permissions: i64,
    now_ns: u64,
) -> (u64, i64) {
    let current = now_ns / period_ns;
    if current == cycle {
        return (cycle, permissions);
    }
    // elapsedCycles · permissionsPerCycle, capped at the limit: min(p + n·limit, limit).
    let accumulated = (current - cycle) as i128 * limit as i128;
    (current, (permissions as i128 + accumulated).min(limit as i128) as i64)
}

/// `nanosToWaitForPermission` for one permit: 0 with a permission free, else the time to
/// the next cycle plus the whole cycles until the permissions promised so far are covered.
pub fn nanos_to_wait(limit: u64, period_ns: u64, permissions: i64, now_ns: u64) -> u64 {
    if permissions >= 1 {
        return 0;
    }
    let (limit, period) = (limit as i128, period_ns as i128);
    let current = now_ns as i128 / period;
    let to_next_cycle = (current + 1) * period - now_ns as i128;
    let at_next_cycle = permissions as i128 + limit;
    // divCeil(x, y) = (x + y − 1) / y, Java's truncating division (Rust's `/` on integers).
    let x = -(at_next_cycle - 1);
    let full_cycles = (x + limit - 1) / limit;
    // Saturating where the library's `long` would overflow (a limit lowered by millions).
    (full_cycles * period + to_next_cycle).min(u64::MAX as i128) as u64
}

/// Run-time state of a `RateLimiter`.
#[derive(Clone, Debug)]
pub struct RateLimiter {
    limit: u64,
    period_ns: u64,
    timeout: SimDuration,
    mode: RateLimiterMode,
    /// `State.activeCycle` and `State.activePermissions` as of the last call.
    cycle: u64,
    permissions: i64,
    /// Calls holding a reservation, by (release instant, arrival order).
    reserved: BTreeMap<(SimTime, u64), CallId>,
    next_seq: u64,
    /// `Blocking` refusals waiting out `timeout_duration` (the world's deadline ends them).
    refused: VecDeque<CallId>,
    woken: Vec<CallId>,
    /// Calls passed at once, over the run.
    pub passed: u64,
    /// Calls that reserved a permit of a later cycle, over the run.
    pub reserved_calls: u64,
    /// Calls refused, over the run.
    pub rejected: u64,
}

impl RateLimiter {
    pub fn new(spec: &RateLimiterSpec) -> Self {
        assert!(spec.limit_for_period >= 1 && spec.limit_refresh_period.0 >= 1, "validated");
        RateLimiter {
            limit: spec.limit_for_period,
            period_ns: spec.limit_refresh_period.0,
            timeout: spec.timeout_duration,
            mode: spec.mode,
            cycle: 0,
            permissions: spec.limit_for_period as i64,
            reserved: BTreeMap::new(),
            next_seq: 0,
            refused: VecDeque::new(),
            woken: Vec::new(),
            passed: 0,
            reserved_calls: 0,
            rejected: 0,
        }
    }

    /// `changeLimitForPeriod`: read by the next call (the state is kept).
    pub fn set_limit_for_period(&mut self, n: u64) {
        assert!(n >= 1, "validated");
        self.limit = n;
    }
    /// `changeTimeoutDuration`: for calls from now on.
    pub fn set_timeout_duration(&mut self, d: SimDuration) {
        self.timeout = d;
    }
    /// The permissions as of the last call (negative: reservations).
    pub fn permissions(&self) -> i64 {
        self.permissions
    }

    /// `calculateNextState` + `reservePermissions` at `now`: the wait, and whether the permit
    /// was reserved (taken now).
    pub fn acquire(&mut self, now: SimTime) -> (u64, bool) {
        let (cycle, p) = refresh(self.limit, self.period_ns, self.cycle, self.permissions, now.0);
        let wait = nanos_to_wait(self.limit, self.period_ns, p, now.0);
        let in_time = self.timeout.0 >= wait;
        self.cycle = cycle;
        self.permissions = if in_time { p - 1 } else { p };
        (wait, in_time)
    }
}

impl Governor for RateLimiter {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        let (wait, in_time) = self.acquire(now);
        // waitForPermissionIfNecessary: at once, after the reserved wait, or refused.
        if wait == 0 {
            self.passed += 1;
            return CallDecision::Pass;
        }
        if in_time {
            self.reserved_calls += 1;
            self.reserved.insert((now + SimDuration(wait), self.next_seq), call.call);
            self.next_seq += 1;
            return CallDecision::Wait { deadline: None, on_deadline: Reason::RateLimited };
        }
        self.rejected += 1;
        if self.mode == RateLimiterMode::Reactive || self.timeout == SimDuration::ZERO {
            return CallDecision::Reject(Reason::RateLimited);
        }
        // Blocking: waitForPermission(timeoutInNanos), then RequestNotPermitted.
        self.refused.push_back(call.call);
        CallDecision::Wait { deadline: Some(now + self.timeout), on_deadline: Reason::RateLimited }
    }

    fn on_outcome(&mut self, _call: &CallInfo, outcome: Outcome, _now: SimTime) -> OutcomeDecision {
        OutcomeDecision::PassUp(outcome)
    }

    /// A reservation stays consumed; a refusal's wait ends; a woken call is forgotten.
    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        if let Some(pos) = self.refused.iter().position(|c| *c == call.call) {
            self.refused.remove(pos);
        } else if let Some(key) =
            self.reserved.iter().find(|(_, c)| **c == call.call).map(|(k, _)| *k)
        {
            self.reserved.remove(&key);
        } else {
            let pos = self.woken.iter().position(|c| *c == call.call);
            self.woken.remove(pos.expect("abandoned call was not parked at this rate limiter"));
        }
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }

    fn waiting(&self) -> usize {
        self.reserved.len() + self.refused.len()
    }

    /// The earliest reserved instant.
    fn wake_at(&self) -> Option<SimTime> {
        self.reserved.keys().next().map(|(t, _)| *t)
    }

    /// Reservations due pass, in (instant, arrival) order.
    fn on_wake(&mut self, now: SimTime) {
        while let Some(entry) = self.reserved.first_entry() {
            if entry.key().0 > now {
                break;
            }
            self.woken.push(entry.remove());
        }
    }
}

crate::params::declare_params! {
    RateLimiterSpec: "rate_limiter", name = |s| s.name, state = RateLimiter;
    limit_for_period: Count { min: 1, max: 2_147_483_647 }, "permits",
        runtime(apply = |r, n| r.set_limit_for_period(n)),
        "permissions per cycle (limitForPeriod; changeLimitForPeriod: from the next refresh)",
        default = 50;
    limit_refresh_period: Duration { min: SimDuration(1), max: SimDuration::from_secs(86_400) },
        "ns", fixed,
        "the cycle: permissions are refreshed to the limit at each cycle's start, counted from the run's start (limitRefreshPeriod)",
        default = SimDuration(500);
    timeout_duration: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) },
        "ns", runtime(apply = |r, d| r.set_timeout_duration(d)),
        "the longest wait for a permission; a call that would wait longer is refused (timeoutDuration; changeTimeoutDuration: calls from then on)",
        default = SimDuration::from_secs(5);
    mode: Enum { choices: RateLimiterMode::CHOICES }, "", fixed,
        "Blocking: acquirePermission (a refused call waits timeout_duration first: the decorators, @RateLimiter); Reactive: reservePermission (refused at once: the Reactor/RxJava operators)",
        default = "Blocking";
}

impl crate::params::GovernorSpec for RateLimiterSpec {
    fn local_refusals(&self) -> Vec<Reason> {
        vec![Reason::RateLimited]
    }
}

impl crate::governor::GovernorKindOps for RateLimiter {
    type Spec = RateLimiterSpec;
    fn build(spec: &RateLimiterSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        RateLimiter::new(spec)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("passed", self.passed),
            ("reserved", self.reserved_calls),
            ("rejected", self.rejected),
        ]
    }
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        vec![("available_permissions", self.permissions)]
    }
}

#[cfg(test)]
#[path = "rate_limiter_tests.rs"]
mod tests;
