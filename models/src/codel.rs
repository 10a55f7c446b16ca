//! The controlled-delay decision core, queue-agnostic (issue 29 item 3), and the optional
//! queue discipline built on it for the queues of stations, worker pools and dispatchers.
//!
//! * [`Rfc8289`] — RFC 8289 §5's state (`first_above_time_`, `drop_next_`, `count_`,
//!   `lastcount_`, `dropping_`) and its `dodequeue`/`dequeue`, over any queue that can hand
//!   out its next item with its enqueue instant ([`Backlog`]): the law answers which items
//!   to drop and which one to keep, and whether it is in its dropping state. The exact rules
//!   are in the header of `codel_queue.rs`, the governor that first used them.
//! * [`Folly`] — folly `Codel::overloaded_explicit_now` (folly/executors/Codel.cpp): given
//!   one dequeued item's delay, drop it or keep it.
//! * [`CodelSpec`] and [`WaitQueue`] — a queue's discipline as written in scenarios
//!   (`codel: Some((target: …, interval: …, lifo_when_overloaded: …))` on a station, a pool,
//!   a dispatcher; `None`, the default, is FIFO) and the queue that applies it. With CoDel
//!   the RFC law judges the *oldest* waiting item at each dequeue (its sojourn is the
//!   queue's standing delay, RFC 8289 §4.2) and drops from the head; with
//!   `lifo_when_overloaded`, while the law is in its dropping state the item served is the
//!   newest waiting one and the oldest stays at the head, where the law keeps judging (and
//!   dropping) it: "Fail at Scale" (Maurer, ACM Queue 13(8), 2015, "Adaptive LIFO"): "during
//!   normal operating conditions, requests are processed in FIFO order, but when a queue is
//!   forming, the server switches to LIFO mode", with CoDel's queue timeouts dropping the
//!   stale ones.
//!
//! Architecture invariant: every item pushed leaves exactly once — popped, dropped by the
//! law (handed to the owner through [`WaitQueue::take_dropped`]) or removed; FIFO (`codel:
//! None`) is exactly a `VecDeque`'s `push_back`/`pop_front`. No timer, no randomness.

use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// RFC 8289 `control_law(t, count) = t + interval / sqrt(count)`, in whole nanoseconds.
pub fn control_law(t: SimTime, interval: SimDuration, count: u32) -> SimTime {
    assert!(count >= 1, "the control law is used with count ≥ 1");
    t + SimDuration((interval.0 as f64 / f64::from(count).sqrt()) as u64)
}

/// A queue the RFC law dequeues from: its next item (by the queue's own order rule), how
/// many are left, and where a dropped item goes.
pub trait Backlog {
    type Item;
    /// Takes the next item and its enqueue instant.
    fn take(&mut self) -> Option<(Self::Item, SimTime)>;
    /// Items left waiting (after a take).
    fn left(&self) -> usize;
    /// The law dropped `item`.
    fn dropped(&mut self, item: Self::Item);
}

/// RFC 8289 §5's variables (`first_above_time_`, `drop_next_`, `count_`, `lastcount_`,
/// `dropping_`); `None` is the RFC's `first_above_time_ = 0`.
#[derive(Clone, Debug, Default)]
pub struct Rfc8289 {
    pub(crate) first_above: Option<SimTime>,
    pub(crate) drop_next: SimTime,
    pub(crate) count: u32,
    pub(crate) lastcount: u32,
    pub(crate) dropping: bool,
}

impl Rfc8289 {
    /// In the dropping state.
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// RFC 8289 §5 `dodequeue`: the next item and whether it is ok to drop.
    fn dodequeue<B: Backlog>(
        &mut self,
        b: &mut B,
        now: SimTime,
        target: SimDuration,
        interval: SimDuration,
    ) -> (Option<B::Item>, bool) {
        let Some((w, since)) = b.take() else {
            // "queue is empty - we can't be above TARGET"
            self.first_above = None;
            return (None, false);
        };
        let sojourn = now - since;
        // `sojourn_time < TARGET || bytes() <= maxpacket_`: one item is one packet.
        if sojourn < target || b.left() <= 1 {
            self.first_above = None;
            return (Some(w), false);
        }
        match self.first_above {
            // "just went above from below": ok to drop if still above at first_above_time.
            None => {
                self.first_above = Some(now + interval);
                (Some(w), false)
            }
            Some(t) => (Some(w), now >= t),
        }
    }

    /// RFC 8289 §5 `dequeue`: drops by the control law (each through `b.dropped`); the item
    /// kept, if any.
    pub fn dequeue<B: Backlog>(
        &mut self,
        b: &mut B,
        now: SimTime,
        target: SimDuration,
        interval: SimDuration,
    ) -> Option<B::Item> {
        let (mut w, ok) = self.dodequeue(b, now, target, interval);
        if self.dropping {
            if !ok {
                // "sojourn time below TARGET - leave drop state"
                self.dropping = false;
            }
            // "A large backlog might result in drop rates so high that the next drop
            // should happen now, hence the 'while' loop."
            while now >= self.drop_next && self.dropping {
                if let Some(d) = w.take() {
                    b.dropped(d);
                }
                self.count = self.count.wrapping_add(1);
                let (next, ok) = self.dodequeue(b, now, target, interval);
                w = next;
                if !ok {
                    self.dropping = false;
                } else {
                    self.drop_next = control_law(self.drop_next, interval, self.count);
                }
            }
        } else if ok {
            // Above TARGET for INTERVAL: drop and enter the dropping state.
            if let Some(d) = w.take() {
                b.dropped(d);
            }
            w = self.dodequeue(b, now, target, interval).0;
            self.dropping = true;
            // "If min went above TARGET close to when it last went below, assume that the
            // drop rate that controlled the queue on the last cycle is a good starting
            // point" (the Linux rule the RFC adopts).
            let delta = self.count.wrapping_sub(self.lastcount);
            let since_next = now.0 as i128 - self.drop_next.0 as i128;
            self.count = 1;
            if delta > 1 && since_next < 16 * interval.0 as i128 {
                self.count = delta;
            }
            self.drop_next = control_law(now, interval, self.count);
            self.lastcount = self.count;
        }
        w
    }

    /// A dequeue of an item of sojourn 0 (enqueued and dequeued at once, below any target):
    /// `first_above_time` cleared, the dropping state left. The same as [`Self::dequeue`]
    /// of such an item, without a queue.
    pub fn pass(&mut self) {
        self.first_above = None;
        self.dropping = false;
    }
}

/// folly `Codel`'s variables (`codelMinDelayNs_`, `codelIntervalTimeNs_`,
/// `codelResetDelay_`, `overloaded_`).
#[derive(Clone, Debug)]
pub struct Folly {
    pub(crate) min_delay: SimDuration,
    pub(crate) interval_time: SimTime,
    pub(crate) reset_delay: bool,
    pub(crate) overloaded: bool,
}

impl Folly {
    /// folly's constructor at `now`: `codelMinDelayNs_(0)`, `codelIntervalTimeNs_(now)`,
    /// `codelResetDelay_(true)`, `overloaded_(false)`.
    pub fn new(now: SimTime) -> Self {
        Folly {
            min_delay: SimDuration::ZERO,
            interval_time: now,
            reset_delay: true,
            overloaded: false,
        }
    }

    pub fn overloaded(&self) -> bool {
        self.overloaded
    }

    /// folly `Codel::overloaded_explicit_now(delay, now)`: whether to expire this item.
    pub fn judge(
        &mut self,
        delay: SimDuration,
        now: SimTime,
        target: SimDuration,
        interval: SimDuration,
    ) -> bool {
        // `getOptions`: the target is never above the interval.
        let target = target.min(interval);
        if now > self.interval_time && !self.reset_delay {
            self.reset_delay = true;
            self.interval_time = now + interval;
            self.overloaded = self.min_delay > target;
        }
        if self.reset_delay {
            // "More than one request must come in during an interval before codel starts
            // dropping requests"
            self.reset_delay = false;
            self.min_delay = delay;
            return false;
        }
        if delay < self.min_delay {
            self.min_delay = delay;
        }
        // `getSloughTimeout(target) = 2 × target`.
        self.overloaded && delay > SimDuration(2 * target.0)
    }
}

/// A queue's CoDel discipline, as written in scenarios (`codel: Some((…))`; absent: FIFO).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodelSpec {
    /// RFC `TARGET`: the acceptable standing sojourn.
    #[serde(default = "D::target", deserialize_with = "R::target")]
    pub target: SimDuration,
    /// RFC `INTERVAL`: above target this long before dropping; the control law's base.
    #[serde(default = "D::interval", deserialize_with = "R::interval")]
    pub interval: SimDuration,
    /// Serve the newest waiting item while the law is in its dropping state.
    #[serde(default = "D::lifo_when_overloaded")]
    pub lifo_when_overloaded: bool,
}

type D = crate::params::Defaults<CodelSpec>;
type R = crate::params::Ranged<CodelSpec>;

impl Default for CodelSpec {
    fn default() -> Self {
        CodelSpec {
            target: D::target(),
            interval: D::interval(),
            lifo_when_overloaded: D::lifo_when_overloaded(),
        }
    }
}

// Listed under the queue's owner: `<kind>.<name>.codel.<row>` (`part =` in its table).
crate::params::declare_params! {
    rows CodelSpec: "codel", state = Codel;
    target: Duration { min: SimDuration(1), max: SimDuration::from_secs(3_600) }, "ns",
        runtime(apply = |c, d| c.spec.target = d),
        "CoDel target (RFC 8289 TARGET): the acceptable standing sojourn of the queue",
        default = SimDuration::from_ms(5);
    interval: Duration { min: SimDuration(1), max: SimDuration::from_secs(3_600) }, "ns",
        runtime(apply = |c, d| c.spec.interval = d),
        "CoDel interval (RFC 8289 INTERVAL): above target this long before the first drop; then drops every interval/sqrt(count)",
        default = SimDuration::from_ms(100);
    lifo_when_overloaded: Bool, "", runtime(apply = |c, on| c.spec.lifo_when_overloaded = on),
        "adaptive LIFO: while CoDel is dropping, serve the newest waiting item (the oldest stays at the head to be judged)",
        default = false;
}

/// The CoDel state of one queue: its parameters (changeable at run time) and the law.
#[derive(Clone, Debug)]
pub struct Codel {
    pub spec: CodelSpec,
    pub law: Rfc8289,
}

/// The head of a FIFO as the law's backlog; drops collected.
struct Head<'a, T> {
    items: &'a mut VecDeque<(T, SimTime)>,
    dropped: &'a mut Vec<T>,
}

impl<T> Backlog for Head<'_, T> {
    type Item = (T, SimTime);
    fn take(&mut self) -> Option<((T, SimTime), SimTime)> {
        self.items.pop_front().map(|(t, at)| ((t, at), at))
    }
    fn left(&self) -> usize {
        self.items.len()
    }
    fn dropped(&mut self, (t, _): (T, SimTime)) {
        self.dropped.push(t);
    }
}

/// A waiting queue under its discipline: FIFO, or CoDel with optional adaptive LIFO.
#[derive(Clone, Debug)]
pub struct WaitQueue<T> {
    items: VecDeque<(T, SimTime)>,
    codel: Option<Codel>,
    dropped: Vec<T>,
    /// Items dropped by the law (summary `<kind>.<name>.codel_dropped`).
    pub codel_dropped: u64,
    /// Items served newest-first (adaptive LIFO).
    pub lifo_takes: u64,
}

impl<T> WaitQueue<T> {
    pub fn new(codel: Option<&CodelSpec>) -> Self {
        WaitQueue {
            items: VecDeque::new(),
            codel: codel.map(|s| Codel { spec: s.clone(), law: Rfc8289::default() }),
            dropped: Vec::new(),
            codel_dropped: 0,
            lifo_takes: 0,
        }
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = &(T, SimTime)> {
        self.items.iter()
    }
    pub fn front(&self) -> Option<&(T, SimTime)> {
        self.items.front()
    }
    pub fn push_back(&mut self, item: T, now: SimTime) {
        self.items.push_back((item, now));
    }
    /// Removes the head without judging it (a drop by the owner's own rule, e.g. a
    /// queue-wait timeout or `DiscardOldest`).
    pub fn pop_front(&mut self) -> Option<(T, SimTime)> {
        self.items.pop_front()
    }
    /// Removes the first item matching `pred` (a cancellation).
    pub fn remove(&mut self, pred: impl Fn(&T) -> bool) -> Option<(T, SimTime)> {
        let i = self.items.iter().position(|(t, _)| pred(t))?;
        self.items.remove(i)
    }
    /// The CoDel state, if the discipline is CoDel.
    pub fn codel(&self) -> Option<&Codel> {
        self.codel.as_ref()
    }
    /// Run-time change of a `codel.<row>` parameter.
    pub fn apply_codel(
        &mut self,
        p: &str,
        v: crate::params::ParamValue,
        now: SimTime,
    ) -> Result<(), String> {
        let c = self.codel.as_mut().ok_or_else(|| format!("codel.{p}: FIFO queue"))?;
        crate::params::ApplyParam::apply_param(c, p, v, now)
    }

    /// An item passes without waiting (taken at its arrival): the law sees a sojourn of 0.
    pub fn pass(&mut self) {
        if let Some(c) = &mut self.codel {
            c.law.pass();
        }
    }

    /// The next item to serve: FIFO's head, or under CoDel the item kept by the law (drops
    /// go to [`Self::take_dropped`]), the newest instead while dropping with adaptive LIFO.
    pub fn pop(&mut self, now: SimTime) -> Option<(T, SimTime)> {
        let Some(c) = &mut self.codel else { return self.items.pop_front() };
        let before = self.dropped.len();
        let mut b = Head { items: &mut self.items, dropped: &mut self.dropped };
        let kept = c.law.dequeue(&mut b, now, c.spec.target, c.spec.interval);
        self.codel_dropped += (self.dropped.len() - before) as u64;
        let kept = kept?;
        if c.spec.lifo_when_overloaded && c.law.dropping() && !self.items.is_empty() {
            // The oldest stays at the head, to be judged again at the next dequeue.
            self.items.push_front(kept);
            self.lifo_takes += 1;
            return self.items.pop_back();
        }
        Some(kept)
    }

    /// Items the law dropped since the last call, oldest first: the owner answers them.
    pub fn take_dropped(&mut self) -> Vec<T> {
        std::mem::take(&mut self.dropped)
    }
    /// Whether the law dropped items not yet taken.
    pub fn has_dropped(&self) -> bool {
        !self.dropped.is_empty()
    }
}

/// The RFC law's first `n` drop instants after a standing sojourn is first seen at 0
/// (dequeues at every instant): D₁ = I, D_{k+1} = D_k + ⌊I/√k⌋ (`codel_tests.rs` derives it).
#[cfg(test)]
pub(crate) fn rfc_due(interval: SimDuration, n: u32) -> Vec<u64> {
    let mut due = vec![interval.0];
    for k in 1..n {
        let step = (interval.0 as f64 / f64::from(k).sqrt()) as u64;
        due.push(due[k as usize - 1] + step);
    }
    due
}

#[cfg(test)]
#[path = "codel_tests.rs"]
mod tests;
