//! The priority dispatcher (docs/domain.md §3.3): one bounded FIFO queue per traffic class and a
//! dispatcher that feeds a worker pool, one task each time the world says a worker is free.
//!
//! Policies ([`DispatchPolicy`]): `Strict` (always the highest non-empty class — P2 starves
//! under a steady P0 stream), `WeightedPolling` (the source's Java loop, reproduced exactly,
//! with its 5 ms idle sleep: see [`polling`]), `WeightedRoundRobin` (a true weighted share,
//! smooth WRR as in nginx), `DeadlineFirst` (latest-start deadline = enqueue time + the
//! class's `start_within`, ties by weight) and `Aging` (priority rises with wait; past
//! `max_wait` a task is served next). Overflow, per class, when its queue is full
//! ([`Overflow`]): `Reject` ("system busy"), `Defer` (to one bounded async queue, replayed
//! into the class queue at `drain_rate_per_s` only while the world says the resource is
//! `healthy`), or `CallerRuns` (the submitter's thread runs it: only the decision is returned).
//!
//! The key design decision: the dispatcher never pushes. It hands out a task only from
//! [`Dispatcher::next`], which the world calls when a worker can take one, so priority can
//! never drain into the pool's own FIFO queue (docs/domain.md §3.3: "otherwise priority would … be lost").
//! A policy that sleeps (`WeightedPolling`) says when it next looks via
//! [`Dispatcher::wake_at`]; a task arriving during the sleep waits for the sleep to end.
//!
//! Architecture invariant: every task submitted is, exactly once, either refused at
//! submission (`Rejected`, `RejectedDeferFull`, `CallerRuns`) or handed out by `next`; while
//! held it is in exactly one place (a class queue or the deferred queue). Queue lengths
//! never exceed their capacities, except after a run-time capacity decrease (nothing is
//! evicted; new tasks overflow until the queue drains below the new capacity). Within one
//! class, tasks leave in FIFO order. No randomness; ties go to the lower class index.
//!
//! API boundary: `submit(task, class, now) -> Admission`, `next(now) -> Option<Dispatched>`,
//! `wake_at() -> Option<SimTime>` + `on_wake(now)` (deferred drain and the poller's clock),
//! `set_healthy(bool, now)`, and read-only gauges. The world measures waits from
//! [`Dispatched::enqueued_at`] / [`Dispatched::submitted_at`]; the dispatcher keeps no clock
//! of its own and schedules nothing.

mod expiry;
pub mod polling;
mod spec;
#[cfg(test)]
mod tests;

use crate::ids::ClassId;
use polling::Poller;
use sim_core::{SimDuration, SimTime};
pub use spec::*;
use std::collections::VecDeque;

/// The decision on a submitted task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// In its class queue.
    Queued,
    /// Queue full, overflow `Reject`: answer "system busy".
    Rejected,
    /// Queue full, overflow `Defer`: in the async queue (the caller gets a deferred answer).
    Deferred,
    /// Queue full, overflow `Defer`, but the async queue is full too.
    RejectedDeferFull,
    /// Queue full, overflow `CallerRuns`: the submitting thread runs the task itself.
    CallerRuns,
}

/// A task handed out by [`Dispatcher::next`].
#[derive(Clone, Debug, PartialEq)]
pub struct Dispatched<T> {
    pub task: T,
    pub class: ClassId,
    /// When `submit` was called.
    pub submitted_at: SimTime,
    /// When it entered its class queue (later than `submitted_at` if it was deferred).
    pub enqueued_at: SimTime,
}

#[derive(Clone, Debug)]
struct Entry<T> {
    task: T,
    submitted_at: SimTime,
    enqueued_at: SimTime,
}

/// Per-class counters (stable names: `dispatcher.<name>.<class>.<field>`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassCounters {
    pub submitted: u64,
    pub queued: u64,
    pub rejected: u64,
    pub deferred: u64,
    pub rejected_defer_full: u64,
    pub caller_runs: u64,
    pub replayed: u64,
    pub dispatched: u64,
    /// Removed after waiting longer than the class's `max_queue_wait`.
    pub timed_out: u64,
}

#[derive(Clone, Debug)]
enum Order {
    Strict,
    Polling(Poller),
    Wrr { weights: Vec<u64>, current: Vec<i64> },
    Deadline { start_within: Vec<SimDuration>, weights: Vec<u64> },
    Aging { aging_step: SimDuration, max_wait: SimDuration },
}

/// Run-time state of a dispatcher.
#[derive(Clone, Debug)]
pub struct Dispatcher<T> {
    queues: Vec<VecDeque<Entry<T>>>,
    capacity: Vec<u64>,
    overflow: Vec<Overflow>,
    order: Order,
    deferred: VecDeque<(usize, Entry<T>)>,
    defer_capacity: u64,
    drain_interval: SimDuration,
    next_drain_at: SimTime,
    healthy: bool,
    pub counters: Vec<ClassCounters>,
    /// Per class: the queue-wait timeout (`expiry.rs`).
    max_queue_wait: Vec<Option<SimDuration>>,
}

fn drain_interval(rate_per_s: f64) -> SimDuration {
    assert!(rate_per_s > 0.0, "validated: drain rate > 0");
    SimDuration::from_ns(((1e9 / rate_per_s).round() as u64).max(1))
}

impl<T> Dispatcher<T> {
    /// A dispatcher whose clock starts at `start` (the polling loop's first iteration).
    pub fn new(spec: &DispatcherSpec, start: SimTime) -> Self {
        if let Err(e) = spec.validate() {
            panic!("validated: {e}");
        }
        let n = spec.queues.len();
        let order = match &spec.policy {
            DispatchPolicy::Strict => Order::Strict,
            DispatchPolicy::WeightedPolling { poll_every, rounds, idle_sleep, final_poll } => {
                Order::Polling(Poller::new(
                    poll_every.clone(),
                    *rounds,
                    *idle_sleep,
                    *final_poll,
                    start,
                ))
            }
            DispatchPolicy::WeightedRoundRobin { weights } => {
                Order::Wrr { weights: weights.clone(), current: vec![0; n] }
            }
            DispatchPolicy::DeadlineFirst { start_within, weights } => {
                Order::Deadline { start_within: start_within.clone(), weights: weights.clone() }
            }
            DispatchPolicy::Aging { aging_step, max_wait } => {
                Order::Aging { aging_step: *aging_step, max_wait: *max_wait }
            }
        };
        Dispatcher {
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            capacity: spec.queues.iter().map(|q| q.capacity).collect(),
            overflow: spec.queues.iter().map(|q| q.overflow).collect(),
            order,
            deferred: VecDeque::new(),
            defer_capacity: spec.defer.capacity,
            drain_interval: drain_interval(spec.defer.drain_rate_per_s),
            next_drain_at: start,
            healthy: true,
            counters: vec![ClassCounters::default(); n],
            max_queue_wait: spec.queues.iter().map(|q| q.max_queue_wait).collect(),
        }
    }

    pub fn classes(&self) -> usize {
        self.queues.len()
    }
    /// Waiting tasks of one class.
    pub fn depth(&self, class: ClassId) -> usize {
        self.queues[class.0 as usize].len()
    }
    /// Tasks in the async (deferred) queue.
    pub fn deferred_depth(&self) -> usize {
        self.deferred.len()
    }
    /// Enqueue time of the oldest waiting task of a class (its head), for wait gauges.
    pub fn oldest_enqueued_at(&self, class: ClassId) -> Option<SimTime> {
        self.queues[class.0 as usize].front().map(|e| e.enqueued_at)
    }
    pub fn healthy(&self) -> bool {
        self.healthy
    }

    /// Run-time change of a class capacity (≥ 1); lowering it evicts nothing.
    pub fn set_capacity(&mut self, class: ClassId, capacity: u64) {
        assert!(capacity >= 1);
        self.capacity[class.0 as usize] = capacity;
    }
    /// Run-time change of the deferred queue's bound; lowering it evicts nothing.
    pub fn set_defer_capacity(&mut self, capacity: u64) {
        self.defer_capacity = capacity;
    }
    /// Run-time change of the Aging policy's `max_wait` (no effect on other policies).
    pub fn set_max_wait(&mut self, d: SimDuration) {
        assert!(d > SimDuration::ZERO);
        if let Order::Aging { max_wait, .. } = &mut self.order {
            *max_wait = d;
        }
    }
    /// Run-time change of the replay rate.
    pub fn set_drain_rate_per_s(&mut self, rate: f64) {
        self.drain_interval = drain_interval(rate);
    }

    /// The world's health signal for the deferred queue (e.g. the upstream breaker closed).
    /// Replay starts at the moment health returns, then one task per 1/rate.
    pub fn set_healthy(&mut self, healthy: bool, now: SimTime) {
        if healthy && !self.healthy && self.next_drain_at < now {
            self.next_drain_at = now;
        }
        self.healthy = healthy;
    }

    fn nonempty(&self) -> Vec<bool> {
        self.queues.iter().map(|q| !q.is_empty()).collect()
    }

    /// A task of `class` arrives at `now`.
    pub fn submit(&mut self, task: T, class: ClassId, now: SimTime) -> Admission {
        let c = class.0 as usize;
        assert!(c < self.queues.len(), "class {c} has no queue");
        // The poller's empty iterations before `now` saw the queues without this task.
        let nonempty = self.nonempty();
        if let Order::Polling(p) = &mut self.order {
            p.catch_up(&nonempty, now);
        }
        self.counters[c].submitted += 1;
        let entry = Entry { task, submitted_at: now, enqueued_at: now };
        if (self.queues[c].len() as u64) < self.capacity[c] {
            self.queues[c].push_back(entry);
            self.counters[c].queued += 1;
            return Admission::Queued;
        }
        match self.overflow[c] {
            Overflow::Reject => {
                self.counters[c].rejected += 1;
                Admission::Rejected
            }
            Overflow::CallerRuns => {
                self.counters[c].caller_runs += 1;
                Admission::CallerRuns
            }
            Overflow::Defer if (self.deferred.len() as u64) < self.defer_capacity => {
                if self.deferred.is_empty() && self.next_drain_at < now {
                    self.next_drain_at = now;
                }
                self.deferred.push_back((c, entry));
                self.counters[c].deferred += 1;
                Admission::Deferred
            }
            Overflow::Defer => {
                self.counters[c].rejected_defer_full += 1;
                Admission::RejectedDeferFull
            }
        }
    }

    /// A worker is free at `now`: the task it should run, if the policy hands one out now.
    pub fn next(&mut self, now: SimTime) -> Option<Dispatched<T>> {
        let nonempty = self.nonempty();
        let pick = match &mut self.order {
            Order::Strict => nonempty.iter().position(|&b| b),
            Order::Polling(p) => p.next(&nonempty, now),
            Order::Wrr { weights, current } => {
                let total: i64 =
                    (0..nonempty.len()).filter(|&c| nonempty[c]).map(|c| weights[c] as i64).sum();
                let mut best: Option<usize> = None;
                for c in (0..nonempty.len()).filter(|&c| nonempty[c]) {
                    current[c] += weights[c] as i64;
                    if best.is_none_or(|b| current[c] > current[b]) {
                        best = Some(c);
                    }
                }
                if let Some(b) = best {
                    current[b] -= total;
                }
                best
            }
            Order::Deadline { start_within, weights } => {
                (0..nonempty.len()).filter(|&c| nonempty[c]).min_by_key(|&c| {
                    let head = self.queues[c].front().expect("non-empty");
                    (head.enqueued_at + start_within[c], std::cmp::Reverse(weights[c]), c)
                })
            }
            Order::Aging { aging_step, max_wait } => {
                let heads = (0..nonempty.len())
                    .filter(|&c| nonempty[c])
                    .map(|c| (c, now - self.queues[c].front().expect("non-empty").enqueued_at));
                let promoted = heads
                    .clone()
                    .filter(|&(_, w)| w >= *max_wait)
                    .max_by_key(|&(c, w)| (w, std::cmp::Reverse(c)));
                match promoted {
                    Some((c, _)) => Some(c),
                    None => heads
                        .min_by_key(|&(c, w)| {
                            let step = aging_step.as_ns() as i128;
                            let score = if step == 0 {
                                c as i128
                            } else {
                                c as i128 * step - w.as_ns() as i128
                            };
                            (score, c)
                        })
                        .map(|(c, _)| c),
                }
            }
        }?;
        let e = self.queues[pick].pop_front().expect("policy picked a non-empty class");
        self.counters[pick].dispatched += 1;
        Some(Dispatched {
            task: e.task,
            class: ClassId(pick as u16),
            submitted_at: e.submitted_at,
            enqueued_at: e.enqueued_at,
        })
    }

    /// When the world should call [`Self::on_wake`] (then `next` if a worker is free): the
    /// next deferred replay, or the polling loop's next look that would find a task. `None`
    /// when nothing is pending. May be ≤ now: call at once.
    pub fn wake_at(&self) -> Option<SimTime> {
        let drain = self.drain_due_possible().then_some(self.next_drain_at);
        let poll = match &self.order {
            Order::Polling(p) => p.first_pick_time(&self.nonempty()),
            _ => None,
        };
        match (drain, poll) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn drain_due_possible(&self) -> bool {
        self.healthy
            && self
                .deferred
                .front()
                .is_some_and(|(c, _)| (self.queues[*c].len() as u64) < self.capacity[*c])
    }

    /// Replays a deferred task if one is due (FIFO over all classes; the head waits while its
    /// class queue is full). The polling loop needs nothing here: `next` advances it.
    pub fn on_wake(&mut self, now: SimTime) {
        if self.drain_due_possible() && self.next_drain_at <= now {
            let nonempty = self.nonempty();
            if let Order::Polling(p) = &mut self.order {
                p.catch_up(&nonempty, now);
            }
            let (c, mut e) = self.deferred.pop_front().expect("checked");
            e.enqueued_at = now;
            self.queues[c].push_back(e);
            self.counters[c].replayed += 1;
            self.next_drain_at = now + self.drain_interval;
        }
    }
}
