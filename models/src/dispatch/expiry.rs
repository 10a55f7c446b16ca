//! Queue-wait timeouts and removals of the dispatcher (docs/domain.md §3.8 "per stage: … queue wait").
//!
//! A class with `max_queue_wait: Some(w)` gives each of its waiting tasks until
//! `enqueued_at + w` (the time it entered the class queue; a replayed deferred task starts
//! counting at its replay). [`Dispatcher::expiry_at`] is the earliest such instant over the
//! class heads — within a class tasks are FIFO and `enqueued_at` never decreases, so the
//! head is always the first to expire — and [`Dispatcher::expire`] removes every task whose
//! instant has come (inclusive: a task whose deadline is `now` expires, unless a worker took
//! it earlier in the same instant: the world runs completions before timeouts).
//! [`Dispatcher::remove`] takes one task out wherever it waits (its request's total budget
//! ran out).
//!
//! Architecture invariant: a task leaves the dispatcher exactly once — handed out, refused,
//! expired or removed; the deferred queue has no wait limit (it is the persisted async
//! store; its tasks count again from their replay).
//!
//! API boundary: pure functions of the queues and `now`; the world arms one timer per
//! instance at `expiry_at()` and ends the requests `expire` returns.

use super::{Dispatched, Dispatcher, Order};
use crate::ids::ClassId;
use sim_core::{SimDuration, SimTime};

impl<T> Dispatcher<T> {
    /// The queue-wait timeout of a class now.
    pub fn max_queue_wait(&self, class: ClassId) -> Option<SimDuration> {
        self.max_queue_wait[class.0 as usize]
    }

    /// Run-time change of a class's queue-wait timeout (applies to the tasks already
    /// waiting too: their deadline is `enqueued_at + w` with the value in force).
    pub fn set_max_queue_wait(&mut self, class: ClassId, w: Option<SimDuration>) {
        assert!(w != Some(SimDuration::ZERO), "validated: > 0");
        self.max_queue_wait[class.0 as usize] = w;
    }

    /// The earliest instant a waiting task runs out of queue wait (may be ≤ now after a
    /// run-time decrease: expire at once).
    pub fn expiry_at(&self) -> Option<SimTime> {
        (0..self.queues.len())
            .filter_map(|c| {
                let w = self.max_queue_wait[c]?;
                self.queues[c].front().map(|e| e.enqueued_at + w)
            })
            .min()
    }

    fn catch_up(&mut self, now: SimTime) {
        // The poller's empty iterations before `now` saw the queues as they were.
        let nonempty = self.nonempty();
        if let Order::Polling(p) = &mut self.order {
            p.catch_up(&nonempty, now);
        }
    }

    /// Removes every task whose queue wait has run out at `now` (deadline ≤ now), class
    /// by class from P0, oldest first within a class.
    pub fn expire(&mut self, now: SimTime) -> Vec<Dispatched<T>> {
        if self.expiry_at().is_none_or(|t| t > now) {
            return Vec::new();
        }
        self.catch_up(now);
        let mut out = Vec::new();
        for c in 0..self.queues.len() {
            let Some(w) = self.max_queue_wait[c] else { continue };
            while self.queues[c].front().is_some_and(|e| e.enqueued_at + w <= now) {
                let e = self.queues[c].pop_front().expect("checked");
                self.counters[c].timed_out += 1;
                out.push(Dispatched {
                    task: e.task,
                    class: ClassId(c as u16),
                    submitted_at: e.submitted_at,
                    enqueued_at: e.enqueued_at,
                });
            }
        }
        out
    }

    /// Takes the first task matching `is` out of the class queues or the deferred queue
    /// (its request ended elsewhere: its total budget ran out); its class, if found.
    pub fn remove(&mut self, now: SimTime, is: impl Fn(&T) -> bool) -> Option<ClassId> {
        self.catch_up(now);
        for c in 0..self.queues.len() {
            if let Some(k) = self.queues[c].iter().position(|e| is(&e.task)) {
                self.queues[c].remove(k);
                return Some(ClassId(c as u16));
            }
        }
        let k = self.deferred.iter().position(|(_, e)| is(&e.task))?;
        let (c, _) = self.deferred.remove(k).expect("found");
        Some(ClassId(c as u16))
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    fn spec(waits: [Option<u64>; 3], policy: DispatchPolicy) -> DispatcherSpec {
        DispatcherSpec {
            name: "d".into(),
            queues: (0..3)
                .map(|c| ClassQueueSpec {
                    class: format!("P{c}"),
                    capacity: 2,
                    overflow: Overflow::Defer,
                    max_queue_wait: waits[c].map(SimDuration::from_ms),
                })
                .collect(),
            policy,
            defer: DeferSpec { capacity: 10, drain_rate_per_s: 10.0 },
        }
    }

    /// Script: (time ms, action) → expected expiry instant and tasks expired. P0 waits at
    /// most 100 ms, P1 300 ms, P2 for ever.
    #[test]
    fn expiry_script_per_class() {
        let mut d =
            Dispatcher::new(&spec([Some(100), Some(300), None], DispatchPolicy::Strict), ms(0));
        assert_eq!(d.submit(1u32, ClassId(0), ms(0)), Admission::Queued);
        assert_eq!(d.submit(2, ClassId(1), ms(10)), Admission::Queued);
        assert_eq!(d.submit(3, ClassId(2), ms(20)), Admission::Queued);
        assert_eq!(d.submit(4, ClassId(0), ms(50)), Admission::Queued);
        // P0 head: 0 + 100; P1 head: 10 + 300; P2: never.
        assert_eq!(d.expiry_at(), Some(ms(100)));
        assert!(d.expire(ms(99)).is_empty());
        let e: Vec<u32> = d.expire(ms(100)).into_iter().map(|x| x.task).collect();
        assert_eq!(e, vec![1], "inclusive: the deadline itself expires");
        // Next P0 head entered at 50 → 150.
        assert_eq!(d.expiry_at(), Some(ms(150)));
        // A worker takes task 4 first: nothing of P0 left; P1 expires at 310.
        assert_eq!(d.next(ms(120)).map(|x| x.task), Some(4));
        assert_eq!(d.expiry_at(), Some(ms(310)));
        // A run-time decrease of P1's limit to 200 ms: due at 210, already past → expires.
        d.set_max_queue_wait(ClassId(1), Some(SimDuration::from_ms(200)));
        assert_eq!(d.expiry_at(), Some(ms(210)));
        let e = d.expire(ms(250));
        assert_eq!((e[0].task, e[0].class, e[0].enqueued_at), (2, ClassId(1), ms(10)));
        assert_eq!(d.expiry_at(), None, "P2 never expires");
        assert_eq!([0, 1, 2].map(|c| d.counters[c].timed_out), [1, 1, 0]);
        assert_eq!(d.depth(ClassId(2)), 1);
    }

    /// A deferred task does not expire in the deferred queue; replayed, it counts from
    /// its replay. `remove` finds a task in either queue.
    #[test]
    fn deferred_tasks_count_from_replay_and_remove_finds_them() {
        let mut d = Dispatcher::new(&spec([Some(100), None, None], DispatchPolicy::Strict), ms(0));
        for t in 0..3u32 {
            d.submit(t, ClassId(0), ms(0));
        }
        // Capacity 2: task 2 deferred (drain due at once: 0 ms).
        assert_eq!(d.deferred_depth(), 1);
        assert_eq!(d.expire(ms(100)).len(), 2, "both queued tasks at 0 + 100");
        // Replay at 100 (drain due since 0): enqueued at 100 → expires at 200.
        d.on_wake(ms(100));
        assert_eq!(d.expiry_at(), Some(ms(200)));
        assert_eq!(d.remove(ms(150), |&t| t == 2), Some(ClassId(0)));
        assert_eq!(d.expiry_at(), None);
        d.submit(7, ClassId(2), ms(160));
        assert_eq!(d.remove(ms(170), |&t| t == 9), None);
        assert_eq!(d.remove(ms(170), |&t| t == 7), Some(ClassId(2)));
        assert_eq!(d.counters[0].timed_out, 2);
    }

    #[test]
    fn zero_wait_is_refused_while_parsing() {
        let r: Result<ClassQueueSpec, _> =
            ron::from_str(r#"(class: "P0", capacity: 1, max_queue_wait: Some("0s"))"#);
        assert!(r.unwrap_err().to_string().contains("expected a duration string in [\"1ns\", "));
        let r: ClassQueueSpec =
            ron::from_str(r#"(class: "P0", capacity: 1, max_queue_wait: Some("2s"))"#).unwrap();
        assert_eq!(r.max_queue_wait, Some(SimDuration::from_secs(2)));
    }
}
