//! A concurrency limit whose waiting calls are managed by the controlled-delay law (CoDel),
//! with adaptive LIFO, from `codel_queues` (issue 29 item 3, priority load shedding).
//!
//! `permits` calls may be past the queue at once; a call that finds none waits. A freed
//! permit *dequeues*: the waiting call it goes to is chosen by the order rule below and
//! judged by the `mode`'s law, which may drop it (refused `rejected:shed`, answered from here
//! through [`Governor::take_answered`]) and dequeue the next, as a CoDel router drops a
//! packet at dequeue and sends the next. A call arriving to a free permit is enqueued and
//! dequeued at the same instant (sojourn 0: it passes, and the law sees it). Beyond
//! `max_queue` waiting calls an arrival is refused at once (`rejected:queue_full`).
//!
//! `mode` (fixed for a run):
//!
//! * `RFC8289` — RFC 8289 §5 (the reference pseudo-code, `dodequeue` and `dequeue`), with
//!   a waiting call for a packet and a permit for the link. `dodequeue`: sojourn = now −
//!   enqueue time; below `target`, or with at most one call left waiting (the RFC's `bytes()
//!   <= maxpacket_`: one call is one packet), `first_above_time` is cleared; else the first
//!   such dequeue sets `first_above_time = now + interval`, and from then on a dequeue at or
//!   after it is *ok to drop*. `dequeue`: in the dropping state, a dequeue not ok to drop
//!   leaves it; while `now ≥ drop_next` and still dropping, drop, `count += 1`, dequeue the
//!   next and, if that one is ok to drop, `drop_next = control_law(drop_next, count)`. Not
//!   dropping and ok to drop: drop, dequeue the next, enter the dropping state with `count =
//!   count − lastcount` if that is > 1 and `now − drop_next < 16·interval` (the drop rate of
//!   the last episode is the starting point when the queue comes back soon), else 1; then
//!   `drop_next = control_law(now, count)`, `lastcount = count`. `control_law(t, count) = t +
//!   interval / √count` (IEEE `sqrt`, the quotient truncated to whole nanoseconds). A permit
//!   freed with no call waiting is the link asking an empty queue: `first_above_time` is
//!   cleared and the dropping state left.
//! * `FOLLY` — Facebook's service variant, folly `Codel::overloaded` (folly/executors/
//!   Codel.cpp, `overloaded_explicit_now`), as fbthrift's `ThreadManager` worker and HBase's
//!   `AdaptiveLifoCoDelCallQueue.needToDrop` call it on each dequeued task: the delay is the
//!   sojourn truncated to whole milliseconds (both: `duration_cast<milliseconds>`,
//!   `currentTime()` in ms). State: `min_delay`, `interval_time` (the run's start),
//!   `reset_delay` (initially set) and `overloaded`. Per dequeue: if `now > interval_time`
//!   and no reset is pending, one is: `interval_time = now + interval`, `overloaded =
//!   min_delay > target`; a pending reset is taken at once: `min_delay = delay` and the call
//!   is kept (the first call of each interval is never dropped); otherwise `min_delay =
//!   min(min_delay, delay)` and the call is dropped iff `overloaded && delay > 2·target`
//!   (`getSloughTimeout`). `target` is used as `min(target, interval)` (`getOptions`). So
//!   once the smallest sojourn of an interval stayed above target, every dequeued call older
//!   than twice the target is sloughed off, not the RFC's rising drop rate ("empirically
//!   works better for our services", the code's comment).
//! * `FAIL_AT_SCALE` — the pseudo-code of "Fail at Scale" (Maurer, ACM Queue 13(8), 2015,
//!   section "Controlled delay"): the timeout is set at enqueue, `M = target` if the queue's
//!   last empty time is earlier than `now − interval` (it has not been empty during the last
//!   interval), else `N = interval`; a call still waiting at its timeout is shed (the world's
//!   wait deadline, `rejected:shed`). Nothing is judged at dequeue.
//!
//! Order (every mode): adaptive LIFO — HHVM's `JobQueue::dequeueMaybeExpiredImpl` (the
//! implementation "Fail at Scale" names) takes the newest job when the jobs left after this
//! dequeue are ≥ `lifoSwitchThreshold`, HBase's `take()` when `size / queueLimit >
//! lifoThreshold`; both are "more than `lifo_threshold` calls waiting" before the take, which
//! is the rule here: then the newest waiting call is taken, else the oldest. `0` is always
//! LIFO; the default (10⁸, more than `max_queue` can hold) never, as HHVM's `INT_MAX`. The
//! law then judges the call taken (HBase: `needToDrop(cr)` after `takeLast`), so with LIFO
//! the RFC's sojourn is the fresh call's and it drops little: LIFO is meant for `FOLLY` and
//! `FAIL_AT_SCALE`, where the stale calls age out behind the fresh ones ("adaptive LIFO
//! places new requests at the front of the queue, maximizing the chance that they will meet
//! the deadline set by CoDel", Fail at Scale).
//!
//! Summary counters `codel_queue.<name>.{admitted, dropped, queue_full, lifo_takes}`; gauges
//! `queue_length`, `dropping` (RFC: the dropping state; FOLLY: overloaded; FAIL_AT_SCALE: the
//! last call enqueued got the short timeout) and `drops` (cumulative).
//!
//! Architecture invariant: `in_use ≤ max(permits, in_use at the last decrease)`; a free
//! permit means an empty queue (a freed permit is handed over at once); every permit granted
//! is returned exactly once; every waiting call leaves exactly once (admitted, dropped,
//! shed at its deadline or abandoned); no timer, no events, no randomness.

use crate::codel::{Folly, Rfc8289};
use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

crate::params::param_choices! {
    /// The law that manages the waiting calls (module header).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum CodelMode {
        /// RFC 8289 §5: drops at dequeue on the control law `interval / √count`.
        #[default]
        Rfc8289 = "RFC8289",
        /// folly `Codel::overloaded`: sloughs calls older than 2 × target while overloaded.
        Folly = "FOLLY",
        /// "Fail at Scale": a queue timeout of target or interval, set at enqueue.
        FailAtScale = "FAIL_AT_SCALE",
    }
}

/// Configuration, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "CodelQueue")]
pub struct CodelQueueSpec {
    /// Name; parameters live under `codel_queue.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Calls allowed past the queue at once.
    #[serde(deserialize_with = "R::permits")]
    pub permits: u64,
    /// The law (`RFC8289`, `FOLLY`, `FAIL_AT_SCALE`).
    #[serde(default = "D::mode")]
    pub mode: CodelMode,
    /// The acceptable standing sojourn (RFC `TARGET`, folly `targetDelay`, the paper's M).
    #[serde(default = "D::target", deserialize_with = "R::target")]
    pub target: SimDuration,
    /// RFC `INTERVAL`, folly `interval`, the paper's N.
    #[serde(default = "D::interval", deserialize_with = "R::interval")]
    pub interval: SimDuration,
    /// Newest first while more than this many calls wait (0: always; default: never).
    #[serde(default = "D::lifo_threshold", deserialize_with = "R::lifo_threshold")]
    pub lifo_threshold: u64,
    /// Bound on waiting calls; beyond it arrivals are refused at once.
    #[serde(default = "D::max_queue", deserialize_with = "R::max_queue")]
    pub max_queue: u64,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<CodelQueueSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<CodelQueueSpec>;

impl CodelQueueSpec {
    /// The defaults under a name, with `permits`.
    pub fn defaults(name: &str, permits: u64) -> Self {
        CodelQueueSpec {
            name: name.into(),
            permits,
            mode: D::mode(),
            target: D::target(),
            interval: D::interval(),
            lifo_threshold: D::lifo_threshold(),
            max_queue: D::max_queue(),
        }
    }
}

/// A waiting call.
#[derive(Clone, Copy, Debug)]
struct Waiter {
    call: CallId,
    since: SimTime,
    /// FAIL_AT_SCALE: when it is shed.
    deadline: Option<SimTime>,
}

/// Run-time state of a `CodelQueue`.
#[derive(Clone, Debug)]
pub struct CodelQueue {
    mode: CodelMode,
    permits: u64,
    target: SimDuration,
    interval: SimDuration,
    lifo_threshold: u64,
    max_queue: u64,
    in_use: u64,
    /// Waiting calls, oldest first.
    queue: VecDeque<Waiter>,
    woken: Vec<CallId>,
    answered: Vec<(CallId, Outcome)>,
    rfc: Rfc8289,
    folly: Folly,
    /// FAIL_AT_SCALE: the last instant the queue was empty (while it is not).
    last_empty: SimTime,
    /// FAIL_AT_SCALE: whether the last call enqueued got the short timeout (`target`).
    last_short: bool,
    /// Permits granted and returned (conservation).
    pub admitted: u64,
    pub returned: u64,
    /// Calls dropped by the law (at dequeue, or at their FAIL_AT_SCALE timeout).
    pub dropped: u64,
    /// Arrivals refused beyond `max_queue`.
    pub queue_full: u64,
    /// Takes of the newest waiting call (adaptive LIFO).
    pub lifo_takes: u64,
}

const MS: u64 = 1_000_000;

pub use crate::codel::control_law;

impl CodelQueue {
    pub fn new(spec: &CodelQueueSpec) -> Self {
        assert!(spec.permits >= 1, "validated: permits ≥ 1");
        CodelQueue {
            mode: spec.mode,
            permits: spec.permits,
            target: spec.target,
            interval: spec.interval,
            lifo_threshold: spec.lifo_threshold,
            max_queue: spec.max_queue,
            in_use: 0,
            queue: VecDeque::new(),
            woken: Vec::new(),
            answered: Vec::new(),
            rfc: Rfc8289::default(),
            // folly's constructor; governors are built at 0.
            folly: Folly::new(SimTime::ZERO),
            last_empty: SimTime::ZERO,
            last_short: false,
            admitted: 0,
            returned: 0,
            dropped: 0,
            queue_full: 0,
            lifo_takes: 0,
        }
    }

    pub fn in_use(&self) -> u64 {
        self.in_use
    }
    /// RFC: in the dropping state; FOLLY: overloaded; FAIL_AT_SCALE: the last call enqueued
    /// got the short timeout.
    pub fn dropping(&self) -> bool {
        match self.mode {
            CodelMode::Rfc8289 => self.rfc.dropping(),
            CodelMode::Folly => self.folly.overloaded(),
            CodelMode::FailAtScale => self.last_short,
        }
    }

    /// Run-time change of the permits; raising them dequeues for the new ones.
    pub fn set_permits(&mut self, permits: u64, now: SimTime) {
        assert!(permits >= 1);
        self.permits = permits;
        self.admit(now);
    }
    pub fn set_target(&mut self, d: SimDuration) {
        self.target = d;
    }
    pub fn set_interval(&mut self, d: SimDuration) {
        self.interval = d;
    }
    pub fn set_lifo_threshold(&mut self, n: u64) {
        self.lifo_threshold = n;
    }
    pub fn set_max_queue(&mut self, n: u64) {
        self.max_queue = n;
    }

    /// Takes the next waiting call by the adaptive LIFO rule (HHVM `JobQueue`, HBase
    /// `AdaptiveLifoCoDelCallQueue.take`): the newest while more than `lifo_threshold` wait.
    fn take(&mut self) -> Option<Waiter> {
        if self.queue.len() as u64 > self.lifo_threshold {
            self.lifo_takes += 1;
            return self.queue.pop_back();
        }
        self.queue.pop_front()
    }

    /// The call is dropped: refused from here.
    fn drop_call(&mut self, w: Waiter) {
        self.dropped += 1;
        self.answered.push((w.call, Outcome::Rejected(Reason::Shed)));
    }

    /// RFC 8289 §5 `dequeue` (`crate::codel::Rfc8289`): drops by the control law; the call
    /// admitted, if any.
    fn rfc_dequeue(&mut self, now: SimTime) -> Option<Waiter> {
        let mut rfc = std::mem::take(&mut self.rfc);
        let (target, interval) = (self.target, self.interval);
        let w = rfc.dequeue(&mut Lane(self), now, target, interval);
        self.rfc = rfc;
        w
    }

    /// A dequeue by FOLLY: the taken call is judged, dropped ones skipped (HBase `take()`).
    fn folly_dequeue(&mut self, now: SimTime) -> Option<Waiter> {
        loop {
            let w = self.take()?;
            // `duration_cast<milliseconds>(start − queueBegin)`: whole milliseconds.
            let delay = SimDuration((now - w.since).0 / MS * MS);
            if !self.folly.judge(delay, now, self.target, self.interval) {
                return Some(w);
            }
            self.drop_call(w);
        }
    }

    /// One dequeue by the mode's law.
    fn dequeue(&mut self, now: SimTime) -> Option<Waiter> {
        match self.mode {
            CodelMode::Rfc8289 => self.rfc_dequeue(now),
            CodelMode::Folly => self.folly_dequeue(now),
            CodelMode::FailAtScale => self.take(),
        }
    }

    /// Free permits dequeue, one call each, until none is free or none waits.
    fn admit(&mut self, now: SimTime) {
        while self.in_use < self.permits {
            let Some(w) = self.dequeue(now) else { break };
            self.in_use += 1;
            self.admitted += 1;
            self.woken.push(w.call);
        }
    }

    /// FAIL_AT_SCALE `onNewRequest`: `M` if `queue.lastEmptyTime() < now − N`, else `N`.
    fn enqueue_timeout(&mut self, now: SimTime) -> SimDuration {
        let short = !self.queue.is_empty() && self.last_empty + self.interval < now;
        self.last_short = short;
        if short { self.target } else { self.interval }
    }
}

/// The RFC law's queue: the adaptive LIFO take, drops refused from here.
struct Lane<'a>(&'a mut CodelQueue);

impl crate::codel::Backlog for Lane<'_> {
    type Item = Waiter;
    fn take(&mut self) -> Option<(Waiter, SimTime)> {
        self.0.take().map(|w| (w, w.since))
    }
    fn left(&self) -> usize {
        self.0.queue.len()
    }
    fn dropped(&mut self, w: Waiter) {
        self.0.drop_call(w);
    }
}

impl Governor for CodelQueue {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        if self.in_use < self.permits {
            debug_assert!(self.queue.is_empty(), "a free permit means an empty queue");
            // Enqueued and dequeued at once: sojourn 0, never dropped (below any target).
            self.queue.push_back(Waiter { call: call.call, since: now, deadline: None });
            let w = self.dequeue(now).expect("a call of sojourn 0 is never dropped");
            debug_assert_eq!(w.call, call.call);
            self.in_use += 1;
            self.admitted += 1;
            return CallDecision::Pass;
        }
        if self.queue.len() as u64 >= self.max_queue {
            self.queue_full += 1;
            return CallDecision::Reject(Reason::QueueFull);
        }
        let deadline = match self.mode {
            CodelMode::FailAtScale => Some(now + self.enqueue_timeout(now)),
            _ => None,
        };
        if self.queue.is_empty() {
            self.last_empty = now;
        }
        self.queue.push_back(Waiter { call: call.call, since: now, deadline });
        CallDecision::Wait { deadline, on_deadline: Reason::Shed }
    }

    fn on_outcome(&mut self, _call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        assert!(self.in_use > 0, "codel queue released more permits than it granted");
        self.in_use -= 1;
        self.returned += 1;
        self.admit(now);
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, now: SimTime) {
        if let Some(pos) = self.queue.iter().position(|w| w.call == call.call) {
            let w = self.queue.remove(pos).expect("found");
            // FAIL_AT_SCALE: the world's wait deadline is the paper's queue timeout.
            if w.deadline.is_some_and(|d| now >= d) {
                self.dropped += 1;
            }
        } else if let Some(pos) = self.answered.iter().position(|(c, _)| *c == call.call) {
            // Dropped in this instant but not yet answered: forget the answer.
            self.answered.remove(pos);
        } else {
            // Admitted in this instant but not yet resumed: give the permit back.
            let pos = self.woken.iter().position(|c| *c == call.call);
            self.woken.remove(pos.expect("abandoned call was not parked at this codel queue"));
            self.in_use -= 1;
            self.returned += 1;
            self.admit(now);
        }
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }

    fn take_answered(&mut self, out: &mut Vec<(CallId, Outcome)>) {
        out.append(&mut self.answered);
    }

    fn waiting(&self) -> usize {
        self.queue.len()
    }

    /// No timer, no events: the world's hand-off never has anything to read.
    fn take_changed(&mut self) -> bool {
        false
    }

    fn has_released(&self) -> bool {
        !self.woken.is_empty() || !self.answered.is_empty()
    }
}

crate::params::declare_params! {
    CodelQueueSpec: "codel_queue", name = |s| s.name, state = CodelQueue;
    permits: Count { min: 1, max: 10_000_000 }, "permits",
        runtime(apply = |q, n, now| q.set_permits(n, now)), "concurrent calls allowed past the queue";
    mode: Enum { choices: CodelMode::CHOICES }, "", fixed,
        "the law: RFC8289 (drops at dequeue on interval/sqrt(count)), FOLLY (folly Codel::overloaded: sheds calls older than 2 x target while the interval's minimum sojourn exceeds target), FAIL_AT_SCALE (a queue timeout of target, or of interval when the queue was empty during the last interval, set at enqueue)",
        default = "RFC8289";
    target: Duration { min: SimDuration(1), max: SimDuration::from_secs(3_600) }, "ns",
        runtime(apply = |q, d| q.set_target(d)),
        "the acceptable standing sojourn (RFC TARGET, folly targetDelay, the paper's M)",
        default = SimDuration::from_ms(5);
    interval: Duration { min: SimDuration(1), max: SimDuration::from_secs(3_600) }, "ns",
        runtime(apply = |q, d| q.set_interval(d)),
        "RFC INTERVAL (above target this long before dropping; the control law's base), folly's interval, the paper's N",
        default = SimDuration::from_ms(100);
    lifo_threshold: Count { min: 0, max: 100_000_000 }, "calls",
        runtime(apply = |q, n| q.set_lifo_threshold(n)),
        "adaptive LIFO: the newest call is taken while more than this many wait (HHVM lifoSwitchThreshold; 0 = always LIFO, the default 10^8 = never)",
        default = 100_000_000;
    max_queue: Count { min: 0, max: 100_000_000 }, "calls",
        runtime(apply = |q, n| q.set_max_queue(n)),
        "bound on waiting calls; beyond it arrivals are refused at once (queue_full)",
        default = 100_000;
}

impl crate::params::GovernorSpec for CodelQueueSpec {
    fn local_refusals(&self) -> Vec<Reason> {
        vec![Reason::QueueFull, Reason::Shed]
    }
}

impl crate::governor::GovernorKindOps for CodelQueue {
    type Spec = CodelQueueSpec;
    fn build(spec: &CodelQueueSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        CodelQueue::new(spec)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("admitted", self.admitted),
            ("dropped", self.dropped),
            ("queue_full", self.queue_full),
            ("lifo_takes", self.lifo_takes),
        ]
    }
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        vec![
            ("queue_length", self.queue.len() as i64),
            ("dropping", i64::from(self.dropping())),
            ("drops", self.dropped as i64),
        ]
    }
    fn in_flight_limit(&self) -> Option<(u64, Option<u64>)> {
        Some((self.in_use, Some(self.permits)))
    }
}

#[cfg(test)]
#[path = "codel_queue_tests.rs"]
mod tests;
