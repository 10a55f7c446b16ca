//! Hedged requests as a governor: gRPC's `hedgingPolicy` (gRFC A6, "Hedging Policy") with a
//! percentile-based delay ("The Tail at Scale") and a hedge budget.
//!
//! Rules, each from its source (gRFC A6 = grpc/proposal `A6-client-retries.md`; grpc-java =
//! `io.grpc.internal.RetriableStream`):
//! * The original attempt is sent at once; after `hedging_delay` without an answer the next
//!   attempt is sent, and so on, up to `max_attempts` in all (A6 "Hedging Policy";
//!   grpc-java `start()` sends the first, `HedgingRunnable.run()` the next and schedules one
//!   more while `hasPotentialHedging`: not committed, `hedgingAttemptCount < maxAttempts`,
//!   not frozen). A `hedging_delay` of 0 sends every attempt at once (A6 "Configuration").
//! * A good answer (`Success` or `Degraded`) wins: it is the call's answer and every other
//!   attempt is cancelled (A6: "all outstanding hedged requests are canceled"; grpc-java
//!   `commitAndRun` → `cancel("Unneeded hedging")`).
//! * A failure whose reason is in `non_fatal` lets the others go on, and the next attempt in
//!   line is sent at once, later ones `hedging_delay` apart from then (A6 "Summary of Retry
//!   and Hedging Logic", item 2; grpc-java does this only with a pushback header,
//!   `makeHedgingDecision`: no pushback is modelled, the gRFC's text is followed). When no
//!   attempt is in flight and none may follow, the last failure is the answer (grpc-java
//!   `Sublistener.closed`: "no activeHedges, no new hedges possible, try to commit").
//! * Any other failure is fatal: it is the answer at once and the others are cancelled (A6
//!   item 3; grpc-java `makeHedgingDecision`: `isFatal = !nonFatalStatusCodes.contains`).
//! * Throttling (`budget: GrpcTokenBucket`, A6 "Throttling Retry Attempts and Hedged RPCs";
//!   the token arithmetic of `crate::retry::budget`): every good answer adds `token_ratio`,
//!   every non-fatal failure takes one token (A6: only retryable / non-fatal codes count;
//!   grpc-java `throttle.onQualifiedFailureThenCheckIsAboveThreshold`); the first attempt
//!   is always sent, a hedge only while tokens > `max_tokens / 2`; a non-fatal failure that
//!   leaves the tokens at or below the threshold ends the call with that failure
//!   (`isHedgeable` false → `commitAndRun`). A throttled hedge freezes the call's hedging
//!   (`freezeHedging`).
//! * The hedge budget (`budget: Ratio`, this crate's SRE-style ratio): a hedge is sent only
//!   if hedges + 1 ≤ `max_ratio` × first attempts over the sliding window (ten buckets);
//!   `EnvoyBudget` counts hedges in flight against the calls hedged. A refused hedge
//!   freezes the call's hedging as a throttled one does.
//! * The percentile delay (`delay_percentile: q`): the delay in force is the nearest-rank
//!   q-quantile of the last `percentile_window` samples, a sample being a won call's
//!   latency at this level (from its arrival here to its good answer); until the window
//!   is full, `hedging_delay`. Nearest rank: with the n = `percentile_window` samples
//!   sorted ascending, the ⌈q·n⌉-th (1-based). State: the ring of samples and its sorted
//!   copy (2n integers); an update is O(n) (a binary search and a shift). Deterministic:
//!   integer nanoseconds, no randomness. At the fixed point the quantile of the hedged
//!   latency equals the unhedged one's (both laws agree up to the delay).
//!
//! Key design decision: the call parks at this level ([`CallDecision::Fork`]) and each
//! attempt is a copy of it that descends the rest of the stack from the level below (it
//! passes the same governors below, each on its own: a limiter below counts each hedge).
//! A copy's climb ends at this level ([`Governor::on_attempt`]); the parked call is
//! answered from here ([`Governor::take_answered`]) and climbs like any answer, so every
//! level above sees exactly one outcome. The world forks the copies the governor asks for
//! ([`Governor::take_forks`]) and, when the parked call leaves this level (answered, cut
//! from above, its request's budget), cancels the copies still running: each is abandoned
//! where it is like a time limiter's cut (`world/cut.rs`; the levels it passed below see
//! `Failed(Timeout)`), its upstream work dropped where the upstream supports cancellation
//! and `cancel` is on, else left running as abandoned work. The work a cancelled copy made
//! an upstream station do is the `wasted_upstream_ms` column (server time: a cancelled
//! service's time until the cancellation, an uncancelled one's whole service).
//!
//! Architecture invariant: every call that forks here is tracked until it is answered once
//! or abandoned; attempt k of a call is sent at most once; hedges are counted when sent.
//!
//! API boundary: driven through [`Governor`]; the world reads [`Hedge::cancels`] and adds
//! the wasted upstream time ([`Hedge::add_wasted`]).

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use crate::retry::{BudgetState, RetryBudgetSpec};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Most attempts per call (gRPC caps `maxAttempts` at 5 by default, A6 "Limits on Retries
/// and Hedges"; raised here for studies).
pub const MAX_ATTEMPTS: u64 = 10;
/// Bound on calls tracked at once (exceeding it is a bug in the world).
pub const MAX_TRACKED: usize = 1 << 24;
/// Largest percentile window.
pub const MAX_WINDOW: u64 = 100_000;

/// Every reason's stable name (any may be declared non-fatal, as any status code in gRPC).
const REASONS: &[&str] = &crate::outcome::Reason::NAMES;
const REASON: crate::params::ParamType = crate::params::ParamType::Name { choices: REASONS };

/// A hedging policy, with gRPC's names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Hedge")]
pub struct HedgeSpec {
    /// Name; parameters under `hedge.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Attempts including the original (`maxAttempts`, 2..=10; default 2).
    #[serde(default = "D::max_attempts", deserialize_with = "R::max_attempts")]
    pub max_attempts: u64,
    /// Time between attempts (`hedgingDelay`; default 0: all at once, as gRPC's unset).
    #[serde(default = "D::hedging_delay", deserialize_with = "R::hedging_delay")]
    pub hedging_delay: SimDuration,
    /// Reasons after which the other attempts go on (`nonFatalStatusCodes`).
    #[serde(default = "D::non_fatal", with = "reason_list")]
    pub non_fatal: Vec<Reason>,
    /// Hedge after this quantile of the observed latency instead (`Some(0.95)`: p95).
    #[serde(
        default,
        deserialize_with = "crate::params::RangedSome::<HedgeSpec>::delay_percentile",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub delay_percentile: Option<f64>,
    /// Samples the quantile is taken over (the last ones).
    #[serde(default = "D::percentile_window", deserialize_with = "R::percentile_window")]
    pub percentile_window: u64,
    /// Cancel the losing attempts' upstream work where the upstream supports it (default
    /// true); false: it runs on as abandoned work.
    #[serde(default = "D::cancel")]
    pub cancel: bool,
    /// Throttle or budget on hedges (the retry's budget types): `GrpcTokenBucket` is gRPC's
    /// `retryThrottling`, `Ratio` a hedge budget; default `Unlimited`.
    #[serde(default)]
    pub budget: RetryBudgetSpec,
}

type D = crate::params::Defaults<HedgeSpec>;
type R = crate::params::Ranged<HedgeSpec>;

/// `non_fatal`: reason names.
mod reason_list {
    use crate::outcome::{Reason, reason_names};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Reason], s: S) -> Result<S::Ok, S::Error> {
        reason_names::serialize(v, s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Reason>, D::Error> {
        reason_names::parse(d, |_, _| None)
    }
}

crate::params::declare_params! {
    HedgeSpec: "hedge", name = |s| s.name,
        scenario_only = [budget: "the budget's variant and its settings: valid only as a whole"],
        state = Hedge;
    max_attempts: Count { min: 2, max: MAX_ATTEMPTS }, "attempts",
        runtime(apply = |h, n: u64| h.max_attempts = n as u32),
        "attempts including the original (maxAttempts)", default = 2;
    hedging_delay: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        runtime(apply = |h, d| h.delay = d),
        "time between attempts without an answer (hedgingDelay)", default = SimDuration::ZERO;
    non_fatal: List { of: &REASON, min_len: 0, max_len: REASONS.len() }, "", fixed,
        "reasons after which the other attempts go on (nonFatalStatusCodes)",
        default = vec![Reason::Upstream5xx, Reason::ConnectError];
    delay_percentile: FloatAbove { above: 0.0, max: 1.0 }, "quantile", fixed,
        "hedge after this quantile of the observed latency (absent: the fixed delay)",
        opt_get = |s| s.delay_percentile, set = |s, x| s.delay_percentile = Some(x);
    percentile_window: Count { min: 1, max: MAX_WINDOW }, "samples", fixed,
        "the last won calls' latencies the quantile is taken over", default = 1000;
    cancel: Bool, "", runtime(apply = |h, on| h.cancel = on),
        "cancel the losing attempts' upstream work", default = true;
}

impl crate::params::GovernorSpec for HedgeSpec {
    const NOT_SHADOWABLE: Option<&'static str> = Some(
        "a hedging governor cannot run in shadow mode (its attempts are calls sent upstream, which a shadow never sends); see its `hedges` counter",
    );
}

/// What the governor did, over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HedgeCounters {
    /// Calls that forked here.
    pub calls: u64,
    /// Attempts sent after the original.
    pub hedges: u64,
    /// Calls won by an attempt other than the original.
    pub wins: u64,
    /// Hedges the throttle or the budget refused, and calls ended by a throttled failure.
    pub throttled: u64,
    /// Server time spent on cancelled attempts' work (ns).
    pub wasted_ns: u64,
}

/// One call parked here.
#[derive(Clone, Copy, Debug)]
struct Tracked {
    /// When it arrived here.
    start: SimTime,
    /// Attempts sent (`hedgingAttemptCount`).
    sent: u32,
    /// Bit k: attempt k in flight.
    active: u32,
    /// No more hedges (throttled, budget).
    frozen: bool,
    /// The next hedge's time, while one is scheduled.
    next: Option<SimTime>,
    /// The last non-fatal failure.
    last: Option<Outcome>,
}

/// The last `cap` samples and their sorted copy, for the nearest-rank quantile.
#[derive(Clone, Debug)]
pub struct Window {
    cap: usize,
    ring: VecDeque<u64>,
    sorted: Vec<u64>,
}

impl Window {
    pub fn new(cap: usize) -> Self {
        Window { cap, ring: VecDeque::with_capacity(cap), sorted: Vec::with_capacity(cap) }
    }
    pub fn push(&mut self, x: u64) {
        if self.ring.len() == self.cap {
            let old = self.ring.pop_front().expect("full");
            let i = self.sorted.binary_search(&old).expect("the sorted copy holds the ring");
            self.sorted.remove(i);
        }
        self.ring.push_back(x);
        let i = self.sorted.partition_point(|&y| y <= x);
        self.sorted.insert(i, x);
    }
    /// The ⌈q·n⌉-th smallest of the n samples, once the window is full.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let n = self.sorted.len();
        if n < self.cap {
            return None;
        }
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        Some(self.sorted[rank - 1])
    }
}

/// Run-time state of a hedging governor.
#[derive(Clone, Debug)]
pub struct Hedge {
    max_attempts: u32,
    delay: SimDuration,
    non_fatal: Vec<Reason>,
    percentile: Option<f64>,
    window: Window,
    cancel: bool,
    budget: BudgetState,
    calls: BTreeMap<CallId, Tracked>,
    /// (next hedge's time, call): the earliest first.
    timers: BTreeSet<(SimTime, CallId)>,
    answered: Vec<(CallId, Outcome)>,
    forks: Vec<(CallId, u32)>,
    pub counters: HedgeCounters,
}

impl Hedge {
    pub fn new(spec: &HedgeSpec) -> Self {
        Hedge {
            max_attempts: spec.max_attempts as u32,
            delay: spec.hedging_delay,
            non_fatal: spec.non_fatal.clone(),
            percentile: spec.delay_percentile,
            window: Window::new(spec.percentile_window as usize),
            cancel: spec.cancel,
            budget: BudgetState::new(&spec.budget),
            calls: BTreeMap::new(),
            timers: BTreeSet::new(),
            answered: Vec::new(),
            forks: Vec::new(),
            counters: HedgeCounters::default(),
        }
    }
    /// Does a lost attempt's upstream work get cancelled?
    pub fn cancels(&self) -> bool {
        self.cancel
    }
    /// The world measured `d` of server time on a cancelled attempt's work.
    pub fn add_wasted(&mut self, d: SimDuration) {
        self.counters.wasted_ns += d.0;
    }
    /// The delay in force: the observed quantile once the window is full, else the fixed one.
    pub fn delay_now(&self) -> SimDuration {
        self.percentile.and_then(|q| self.window.quantile(q)).map_or(self.delay, SimDuration)
    }
    /// Tokens left in milli-tokens (gRPC throttle only).
    pub fn milli_tokens(&self) -> Option<u64> {
        self.budget.milli_tokens()
    }

    fn schedule(&mut self, call: CallId, now: SimTime) {
        let delay = self.delay_now();
        let t = self.calls.get_mut(&call).expect("tracked");
        if let Some(at) = t.next.take() {
            self.timers.remove(&(at, call));
        }
        if t.frozen || t.sent >= self.max_attempts {
            return;
        }
        let at = now + delay;
        t.next = Some(at);
        self.timers.insert((at, call));
    }

    /// Sends the call's next attempt if the budget lets it (else freezes its hedging).
    fn send_next(&mut self, call: CallId, now: SimTime) {
        let active = self.calls.len() as u64;
        let t = self.calls.get_mut(&call).expect("tracked");
        if t.frozen || t.sent >= self.max_attempts {
            return;
        }
        if !self.budget.admit(now, active) {
            t.frozen = true;
            self.counters.throttled += 1;
            return;
        }
        let k = t.sent;
        t.sent += 1;
        t.active |= 1 << k;
        self.forks.push((call, k));
        self.budget.on_retry_sent(now);
        self.counters.hedges += 1;
        self.schedule(call, now);
    }

    /// Forgets the call: its timer cancelled, its hedges in flight released.
    fn forget(&mut self, call: CallId) {
        let t = self.calls.remove(&call).expect("tracked");
        if let Some(at) = t.next {
            self.timers.remove(&(at, call));
        }
        for _ in 0..(t.active & !1).count_ones() {
            self.budget.on_retry_done();
        }
    }

    /// The call is answered `o` from here (the world cancels its attempts in flight).
    fn finish(&mut self, call: CallId, o: Outcome) {
        self.forget(call);
        self.answered.push((call, o));
    }

    /// After a non-fatal failure or a refused hedge: the last failure is the answer when
    /// nothing is in flight and nothing may follow.
    fn settle(&mut self, call: CallId) {
        let t = self.calls[&call];
        let more = !t.frozen && t.sent < self.max_attempts;
        if t.active == 0 && !more {
            self.finish(call, t.last.expect("a failure came back"));
        }
    }
}

impl Governor for Hedge {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        self.budget.on_request(now);
        let t = Tracked { start: now, sent: 1, active: 1, frozen: false, next: None, last: None };
        let fresh = self.calls.insert(call.call, t).is_none();
        assert!(fresh, "a call forks here once per descent");
        assert!(self.calls.len() <= MAX_TRACKED, "hedge tracking bound");
        self.counters.calls += 1;
        self.schedule(call.call, now);
        CallDecision::Fork
    }
    /// Never reached: a call that forked here is answered from here, not through here.
    fn on_outcome(&mut self, _call: &CallInfo, o: Outcome, _now: SimTime) -> OutcomeDecision {
        OutcomeDecision::PassUp(o)
    }
    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        if self.calls.contains_key(&call.call) {
            self.forget(call.call);
        }
    }
    fn on_attempt(&mut self, call: &CallInfo, k: u32, o: Outcome, now: SimTime) {
        let id = call.call;
        // Answered already in this cascade (another attempt won, its cancellation of this
        // one still queued behind a wake-up that let this one end first): ignored.
        let Some(t) = self.calls.get_mut(&id) else { return };
        assert!(t.active & (1 << k) != 0, "attempt {k} in flight once");
        t.active &= !(1 << k);
        if k > 0 {
            self.budget.on_retry_done();
        }
        let r = match o {
            Outcome::Success | Outcome::Degraded(_) => {
                self.budget.on_result(true, false);
                self.counters.wins += (k > 0) as u64;
                self.window.push((now - t.start).0);
                return self.finish(id, o);
            }
            Outcome::Failed(r) | Outcome::Rejected(r) => r,
        };
        if !self.non_fatal.contains(&r) {
            return self.finish(id, o);
        }
        self.budget.on_result(false, true);
        if self.budget.milli_tokens().is_some() && !self.budget.admit(now, 0) {
            self.counters.throttled += 1;
            return self.finish(id, o);
        }
        t.last = Some(o);
        self.send_next(id, now);
        self.settle(id);
    }
    fn take_woken(&mut self, _out: &mut Vec<CallId>) {}
    fn take_answered(&mut self, out: &mut Vec<(CallId, Outcome)>) {
        out.append(&mut self.answered);
    }
    fn take_forks(&mut self, out: &mut Vec<(CallId, u32)>) {
        out.append(&mut self.forks);
    }
    fn waiting(&self) -> usize {
        self.calls.len()
    }
    fn wake_at(&self) -> Option<SimTime> {
        self.timers.first().map(|&(t, _)| t)
    }
    fn on_wake(&mut self, now: SimTime) {
        while let Some(&(at, call)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.remove(&(at, call));
            self.calls.get_mut(&call).expect("tracked").next = None;
            self.send_next(call, now);
            self.settle(call);
        }
    }
}

impl crate::governor::GovernorKindOps for Hedge {
    type Spec = HedgeSpec;
    fn build(spec: &HedgeSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        Hedge::new(spec)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("hedges_sent", self.counters.hedges),
            ("hedge_wins", self.counters.wins),
            ("wasted_upstream_ms", self.counters.wasted_ns / 1_000_000),
            ("throttled", self.counters.throttled),
        ]
    }
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        vec![("delay_ns", self.delay_now().0 as i64)]
    }
}

#[cfg(test)]
#[path = "hedge_tests.rs"]
mod tests;
