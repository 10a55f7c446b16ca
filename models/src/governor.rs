//! The governor interface: one small state machine per governor, driven by a call site.
//!
//! A call site is an ordered stack of governors (cache, breaker, limiter, gate, retry,
//! timeout…) ending at an upstream, like a Resilience4j decorator chain or a Sentinel slot
//! chain. A call descends the stack level by level; each governor answers a pure decision
//! ([`CallDecision`]). The outcome climbs back up, and each governor answers again
//! ([`OutcomeDecision`]). The stack order is data (the scenario), not code.
//!
//! Architecture invariants:
//! * Decisions are functions of the governor's own state, the call and the time; they never
//!   draw randomness from shared streams and never schedule events themselves. The call site
//!   turns decisions into events.
//! * A call waiting at level `i` holds everything levels `0..i` granted it (permits,
//!   probe slots): a governor that grants a resource in `on_call` gets it back in exactly
//!   one of `on_outcome` or `on_abandon`.
//! * A governor that parks calls wakes them in FIFO order or its documented priority order
//!   (never in hash order).
//!
//! API boundary: governors see a [`CallInfo`], never the request, the world or the engine.

use crate::ids::{CallId, ClassId};
use crate::outcome::{Outcome, Reason};
use sim_core::{SimDuration, SimTime};

/// What a governor may look at when deciding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallInfo {
    /// Identifies the call while it is in flight (slots are reused: not stable across
    /// policies, never use it as a random key).
    pub call: CallId,
    pub class: ClassId,
    /// The call's cache/hot-parameter key (0 when the scenario has none).
    pub key: u64,
    /// The user who sent the request (0 when the scenario has no user population).
    pub user: u64,
    /// Tokens the call may consume (prompt + maximum output), for token-based limiters;
    /// 0 when unknown.
    pub tokens: u32,
    /// 64 random bits owned by this call, stable across policies (a keyed draw over the
    /// request's seed, source, sequence and call path). A governor that needs randomness
    /// (retry jitter, semantic-cache luck) derives it from these bits with
    /// [`sim_core::rng::mix64`] and its own counter (e.g. the attempt), never from a stream.
    pub draw: u64,
    /// On the way up only: the Retry-After the upstream sent with its answer (a 429), if any.
    pub retry_after: Option<SimDuration>,
}

impl CallInfo {
    /// A call with only an id and a class (tests, scripted harnesses).
    pub fn simple(call: u64, class: u16) -> CallInfo {
        CallInfo {
            call: CallId(call),
            class: ClassId(class),
            key: 0,
            user: 0,
            tokens: 0,
            draw: call,
            retry_after: None,
        }
    }
}

/// A state change of a governor, for `events.parquet` (breaker transitions, rule reloads,
/// shadow verdicts). The world adds the component path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GovEvent {
    pub time: SimTime,
    /// Stable snake_case kind: `state_change`, `shadow_reject`, …
    pub kind: &'static str,
    pub from: String,
    pub to: String,
    /// A breaker's transition: whether it enters CLOSED (what an app's `health_from`
    /// follows). `None` for every other event.
    pub closed: Option<bool>,
}

/// A governor's verdict on a call coming down the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallDecision {
    /// Go on to the next level.
    Pass,
    /// Park here until the governor wakes the call or the deadline passes (then the
    /// governor's [`Governor::on_abandon`] runs and the call is rejected with the reason).
    Wait { deadline: Option<SimTime>, on_deadline: Reason },
    /// Answer from here without going further (cache hit, fallback).
    ServeLocally(Outcome),
    /// Refuse the call.
    Reject(Reason),
    /// Park here and send a copy of the call below this level now (attempt 0 of a hedged
    /// call): the governor answers the parked call from here
    /// ([`Governor::take_answered`]) once its attempts decide, may ask for further copies
    /// ([`Governor::take_forks`]) and hears each copy's outcome
    /// ([`Governor::on_attempt`]); the world cancels the copies still running when the
    /// parked call leaves this level. Only the hedging governor answers it.
    Fork,
}

/// A governor's verdict on an outcome climbing the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomeDecision {
    /// Continue upwards with this outcome (possibly transformed, e.g. failed → degraded).
    PassUp(Outcome),
    /// Send the call down again from the level below this governor after a delay.
    RetryAfter(SimDuration),
}

/// The interface every governor implements.
pub trait Governor {
    /// A call arrives at this level.
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision;
    /// The outcome of a call that passed this level comes back up.
    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision;
    /// A call parked at this level gave up (deadline) or was cancelled: forget it.
    fn on_abandon(&mut self, call: &CallInfo, now: SimTime);
    /// Calls parked here that may now proceed (e.g. a permit was handed over), oldest first.
    /// The call site drains this after every `on_outcome`, `on_abandon` and change.
    fn take_woken(&mut self, out: &mut Vec<CallId>);
    /// Calls parked here that are answered from here instead of resuming (single-flight
    /// followers sharing the leader's answer, a priority wait list expiring into a
    /// fallback), oldest first. The call site carries each outcome up from this level.
    /// Drained together with [`Governor::take_woken`].
    fn take_answered(&mut self, _out: &mut Vec<(CallId, Outcome)>) {}
    /// Further copies (attempts) of calls parked here by [`CallDecision::Fork`] to send
    /// below this level now, `(call, attempt)`, oldest first. Drained with
    /// [`Governor::take_woken`].
    fn take_forks(&mut self, _out: &mut Vec<(CallId, u32)>) {}
    /// The outcome of attempt `attempt` of `call` (parked here by [`CallDecision::Fork`])
    /// climbed back to this level (the copy's climb ends here). Never called for a governor
    /// that does not fork.
    fn on_attempt(&mut self, _call: &CallInfo, _attempt: u32, _o: Outcome, _now: SimTime) {}
    /// Calls currently parked here.
    fn waiting(&self) -> usize;
    /// The next time this governor wants [`Governor::on_wake`] called without a call
    /// arriving (an automatic OPEN → HALF_OPEN transition, a pacing queue releasing a
    /// waiter, a maximum wait in half-open). `None`: no timer. The world re-reads it after
    /// every interaction with the governor.
    fn wake_at(&self) -> Option<SimTime> {
        None
    }
    /// The time from [`Governor::wake_at`] has come (called at or after it, once).
    fn on_wake(&mut self, _now: SimTime) {}
    /// State changes since the last call, oldest first.
    fn take_events(&mut self, _out: &mut Vec<GovEvent>) {}
    /// When `call` goes upstream carrying a batch of calls (a request batcher's leader),
    /// the batch size; `None`: the call is alone.
    fn batch_of(&self, _call: CallId) -> Option<u32> {
        None
    }
    /// Whether anything the world re-reads after an interaction — [`Governor::wake_at`],
    /// [`Governor::take_events`], a breaker's published window and state — may have
    /// changed since the last call of this method, which clears the mark. The world skips
    /// its hand-off for a governor that answers no (debug builds check that the hand-off
    /// would have found nothing to do). Default: always yes, the full hand-off after every
    /// interaction; a kind that overrides it marks every mutation of those.
    fn take_changed(&mut self) -> bool {
        true
    }
    /// Whether [`Governor::take_woken`] or [`Governor::take_answered`] would yield a call
    /// (read from the lists themselves; default: yes, the call site drains them).
    fn has_released(&self) -> bool {
        true
    }
}

/// What a governor's run-time state provides to the kind table (`kinds.rs`) beyond
/// [`Governor`]: how it is built from its declaration, how a run-time change reaches it,
/// and its optional hooks. Every hook but the first has a default.
///
/// A run-time change reaches the state through [`crate::params::ApplyParam`], generated
/// from the kind's `declare_params!` rows (`runtime(apply = …)`).
pub trait GovernorKindOps: Governor + Clone + crate::params::ApplyParam {
    /// The declaration this state is built from.
    type Spec: crate::params::GovernorSpec;
    /// Builds the state from its declaration (validated).
    fn build(spec: &Self::Spec, ctx: &BuildCtx<'_>) -> Self;
    /// Counters worth a summary column (`<kind>.<name>.<counter>`), in a stable order
    /// (result columns: never rename one, only add).
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// A Sentinel rule reload after a change ([`crate::params::GovernorSpec::RELOADABLE`]
    /// kinds only).
    fn reload(&mut self, _now: SimTime) {}
    /// A copy for a shadow: by default a clone; state shared with per-instance copies (a
    /// cluster rule's token server) must be copied, not shared.
    fn detached_clone(&self) -> Self {
        self.clone()
    }
    /// The world gave this declared governor `copies` per-instance copies.
    fn on_per_instance(&mut self, _copies: usize) {}
    /// Values worth a time series, `<kind>.<name>.<gauge>` (an adaptive limit's limit), in
    /// a stable order; the names must not depend on the state. The world samples them
    /// after every interaction with the governor.
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        Vec::new()
    }
    /// Calls in flight past this governor and the limit in force (`None`: unbounded), for
    /// the session's component state; `None` if it limits no concurrency.
    fn in_flight_limit(&self) -> Option<(u64, Option<u64>)> {
        None
    }
}

/// What building a governor may read besides its declaration.
pub struct BuildCtx<'a> {
    /// The scenario's class names, most important first.
    pub classes: &'a [&'a str],
}
