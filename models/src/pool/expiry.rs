//! Queue-wait timeouts and removals of the worker pools (docs/domain.md §3.8 "per stage: … queue
//! wait"), the pool-side twin of `dispatch/expiry.rs`.
//!
//! A pool with `max_queue_wait: Some(w)` gives each task in its work queue until
//! `queued_at + w`; the queue is FIFO, so its head expires first. Java's
//! `ThreadPoolExecutor` has no such limit: it is what an application adds by checking the
//! task's age when a worker picks it up, here applied at the exact instant instead (a task
//! whose deadline equals the instant a thread frees is taken by the thread: the world runs
//! completions before timeouts).
//!
//! Architecture invariant: a queued task leaves the queue exactly once — taken by a
//! thread, dropped by `DiscardOldest`, expired, or removed; idle threads only while the
//! queue is empty (removing from the queue keeps that true).
//!
//! API boundary: pure functions of the queue and `now`; the world arms a timer at
//! `expiry_at()` and ends the requests `expire` returns.

use super::PoolSet;
use super::worker::ThreadPool;
use sim_core::{SimDuration, SimTime};

/// `pool_queue.<pool>.max_queue_wait` at run time.
impl<T> crate::timeouts::QueueWaitSetter<crate::timeouts::PoolQueue> for ThreadPool<T> {
    fn set_max_queue_wait(&mut self, w: SimDuration) {
        ThreadPool::set_max_queue_wait(self, Some(w));
    }
}

impl<T> ThreadPool<T> {
    /// Run-time change of the queue-wait timeout (the queued tasks' deadlines follow).
    pub fn set_max_queue_wait(&mut self, w: Option<SimDuration>) {
        assert!(w != Some(SimDuration::ZERO), "validated: > 0");
        self.spec_mut().max_queue_wait = w;
    }

    /// When the queue head runs out of queue wait (may be ≤ now after a decrease).
    pub fn expiry_at(&self) -> Option<SimTime> {
        let w = self.spec().max_queue_wait?;
        self.queue_head_at().map(|t| t + w)
    }

    /// Removes the queued tasks whose wait has run out at `now` (deadline ≤ now), oldest
    /// first.
    pub fn expire(&mut self, now: SimTime) -> Vec<T> {
        let mut out = Vec::new();
        while self.expiry_at().is_some_and(|t| t <= now) {
            out.push(self.pop_queue_head().expect("a head expired"));
            self.counters.timed_out += 1;
        }
        out
    }
}

impl<T> PoolSet<T> {
    /// The earliest queue-wait expiry over the pools.
    pub fn expiry_at(&self) -> Option<SimTime> {
        (0..self.pools()).filter_map(|i| self.pool(i).expiry_at()).min()
    }
    /// Expired tasks of every pool (pool order, oldest first within a pool).
    pub fn expire(&mut self, now: SimTime) -> Vec<T> {
        (0..self.pools()).flat_map(|i| self.pool_mut(i).expire(now)).collect()
    }
    /// Takes the first queued task matching `is` out of its pool's queue (its request
    /// ended elsewhere); whether one was found.
    pub fn remove(&mut self, is: impl Fn(&T) -> bool) -> bool {
        (0..self.pools()).any(|i| self.pool_mut(i).remove_queued(&is))
    }
}

#[cfg(test)]
mod tests {
    use super::super::worker::{RejectionPolicy, Submit, ThreadPoolSpec};
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    /// One thread, queue 3, tasks wait at most 100 ms. Script with the expected state.
    #[test]
    fn queue_wait_script() {
        let spec = ThreadPoolSpec {
            name: "p".into(),
            core_pool_size: 1,
            maximum_pool_size: 1,
            keep_alive_time: SimDuration::from_secs(60),
            queue_capacity: 3,
            rejection_policy: RejectionPolicy::Abort,
            allow_core_thread_time_out: false,
            prestart_all_core_threads: false,
            max_queue_wait: Some(SimDuration::from_ms(100)),
            codel: None,
        };
        let mut p: ThreadPool<u32> = ThreadPool::new(&spec, ms(0));
        let Submit::RunNow(t) = p.submit(0, ms(0)) else { panic!("core thread") };
        assert_eq!(p.submit(1, ms(10)), Submit::Queued);
        assert_eq!(p.submit(2, ms(30)), Submit::Queued);
        assert_eq!(p.submit(3, ms(60)), Submit::Queued);
        assert_eq!(p.expiry_at(), Some(ms(110)), "head queued at 10 + 100");
        assert!(p.expire(ms(109)).is_empty());
        assert_eq!(p.expire(ms(110)), vec![1]);
        // The thread finishes at 120 and takes task 2 (queued at 30: it would expire at 130).
        assert!(matches!(p.finish(t, ms(120)), super::super::worker::Finished::Next(2, _)));
        assert_eq!(p.expiry_at(), Some(ms(160)));
        assert!(p.remove_queued(&|&x| x == 3));
        assert_eq!(p.expiry_at(), None);
        assert_eq!(p.queued(), 0);
        assert_eq!(p.counters.timed_out, 1);
        // A run-time change applies to the waiting tasks: 50 ms from 200 → 250.
        assert_eq!(p.submit(4, ms(200)), Submit::Queued);
        p.set_max_queue_wait(Some(SimDuration::from_ms(50)));
        assert_eq!(p.expire(ms(260)), vec![4]);
        p.set_max_queue_wait(None);
        assert_eq!(p.submit(5, ms(300)), Submit::Queued);
        assert_eq!(p.expiry_at(), None);
    }
}
