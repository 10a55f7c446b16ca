//! A worker thread pool with Java `ThreadPoolExecutor` semantics (docs/domain.md §3.4).
//!
//! `execute(task)`, step by step as in the JDK: (1) fewer than `core_pool_size` threads → a
//! new thread runs it, even if other threads are idle; (2) else offer it to the queue — an
//! idle thread waiting on the queue takes it at once; with no idle thread it waits in the
//! bounded queue (`queue_capacity` 0 = `SynchronousQueue`: the offer succeeds only if a
//! thread is idle); if the pool has no thread at all (core 0) one is started for the queue;
//! (3) queue full → a new thread up to `maximum_pool_size`; (4) else the rejection policy:
//! `Abort` (error), `CallerRuns` (the submitting thread runs it), `Discard` (dropped
//! silently), `DiscardOldest` (the queue head is dropped and `execute` is retried).
//!
//! The key design decision: threads are anonymous and interchangeable, as in the JDK — there
//! are no "core threads", only a count. Which idle thread takes a task follows the queue's
//! waiter order: FIFO (longest idle first) for a bounded `ArrayBlockingQueue` /
//! `LinkedBlockingQueue`, LIFO (most recently idle) for the unfair `SynchronousQueue`. An
//! idle thread times out after `keep_alive_time` and exits if more than `core_pool_size`
//! threads are alive (any thread, when `allow_core_thread_time_out`); the longest idle
//! exits first. A thread finishing a task while the pool is above `maximum_pool_size`
//! (lowered at run time) exits.
//!
//! Architecture invariant: `alive ≤ max(maximum_pool_size, alive at the last decrease)`;
//! idle threads exist only while the queue is empty; the queue never exceeds its capacity;
//! every task accepted is run exactly once or returned to the world (`DiscardedOldest`).
//!
//! API boundary: `submit(task, now) -> Submit`, `finish(thread, now) -> Finished`,
//! `wake_at()` / `on_wake(now)` for keep-alive deaths, `take_idle(now)` for borrowing (see
//! [`super::PoolSet`]), gauges. The world times the task on the thread (see
//! [`super::overhead`]) and calls `finish` when it ends.

use crate::codel::WaitQueue;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::{BTreeMap, BTreeSet};

crate::params::param_choices! {
    /// Java's `RejectedExecutionHandler`s.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub enum RejectionPolicy {
        Abort = "Abort",
        CallerRuns = "CallerRuns",
        Discard = "Discard",
        DiscardOldest = "DiscardOldest",
    }
}

/// Configuration of a pool, as written in scenarios (Java's parameter names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "ThreadPool")]
pub struct ThreadPoolSpec {
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    pub core_pool_size: u64,
    #[serde(deserialize_with = "R::maximum_pool_size")]
    pub maximum_pool_size: u64,
    #[serde(default = "D::keep_alive_time")]
    pub keep_alive_time: SimDuration,
    /// Bound of the work queue; 0 = `SynchronousQueue` (direct hand-off).
    pub queue_capacity: u64,
    #[serde(default = "D::rejection_policy")]
    pub rejection_policy: RejectionPolicy,
    #[serde(default = "D::allow_core_thread_time_out")]
    pub allow_core_thread_time_out: bool,
    /// `prestartAllCoreThreads()` at creation.
    #[serde(default = "D::prestart_all_core_threads")]
    pub prestart_all_core_threads: bool,
    /// Queue-wait timeout: a task waiting longer than this in the work queue is removed
    /// and its request rejected with `timeout` (`None`: waits for ever; see
    /// `pool/expiry.rs`). Run-time changeable when set (`pool_queue.<name>.max_queue_wait`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::params::RangedOpt::<crate::timeouts::PoolQueue>::max_queue_wait"
    )]
    pub max_queue_wait: Option<SimDuration>,
    /// The work queue's discipline: `None` (the default) FIFO; `Some((target, interval,
    /// lifo_when_overloaded))` CoDel (`crate::codel`): a thread taking work runs RFC 8289's
    /// law on the queue head, and a dropped task's request is rejected `shed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codel: Option<crate::codel::CodelSpec>,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<ThreadPoolSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<ThreadPoolSpec>;

impl ThreadPoolSpec {
    /// The JDK constructor's checks (`IllegalArgumentException`).
    pub fn validate(&self) -> Result<(), String> {
        if self.maximum_pool_size < self.core_pool_size {
            return Err(format!(
                "pool `{}`: maximum_pool_size {} < core_pool_size {}",
                self.name, self.maximum_pool_size, self.core_pool_size
            ));
        }
        if self.allow_core_thread_time_out && self.keep_alive_time == SimDuration::ZERO {
            return Err(format!(
                "pool `{}`: allow_core_thread_time_out needs keep_alive_time > 0",
                self.name
            ));
        }
        Ok(())
    }
}

/// A thread of one pool (ids are never reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadId(pub u32);

/// The decision on `execute(task)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Submit<T> {
    /// This thread (new or idle) runs the task from `now`.
    RunNow(ThreadId),
    Queued,
    /// `AbortPolicy`: `RejectedExecutionException`.
    RejectedAbort,
    /// `CallerRunsPolicy`: the submitter runs it on its own thread.
    CallerRuns,
    /// `DiscardPolicy`: dropped without a word.
    Discarded,
    /// `DiscardOldestPolicy`: the new task was queued; this old one was dropped.
    DiscardedOldest(T),
}

/// What a thread does after its task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finished<T> {
    /// It runs the queue head next (queued at the given time).
    Next(T, SimTime),
    Idle,
    /// It exits (the pool is above `maximum_pool_size`).
    Exited,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Thread {
    Busy,
    Idle { since: SimTime },
}

/// Counters (stable names: `pool.<name>.<field>`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolCounters {
    pub submitted: u64,
    pub completed: u64,
    pub rejected: u64,
    pub caller_runs: u64,
    pub discarded: u64,
    pub threads_created: u64,
    pub threads_exited: u64,
    pub largest_pool_size: u64,
    /// Removed from the queue after waiting longer than `max_queue_wait`.
    pub timed_out: u64,
}

/// Run-time state of a pool.
#[derive(Clone, Debug)]
pub struct ThreadPool<T> {
    spec: ThreadPoolSpec,
    threads: BTreeMap<ThreadId, Thread>,
    /// The idle threads ordered by `(idle since, id)`: the index `pick_idle`, `busy` and
    /// keep-alive use, kept equal to the idle entries of `threads` ([`Self::set_thread`]),
    /// so each is O(log threads) per event instead of a scan of every thread (a closed loop
    /// re-sending into a full pool of 600 threads spun at 200,000 events a second).
    idle: BTreeSet<(SimTime, ThreadId)>,
    next_id: u32,
    queue: WaitQueue<T>,
    pub counters: PoolCounters,
}

impl<T> ThreadPool<T> {
    pub fn new(spec: &ThreadPoolSpec, now: SimTime) -> Self {
        if let Err(e) = spec.validate() {
            panic!("validated: {e}");
        }
        let mut p = ThreadPool {
            spec: spec.clone(),
            threads: BTreeMap::new(),
            idle: BTreeSet::new(),
            next_id: 0,
            queue: WaitQueue::new(spec.codel.as_ref()),
            counters: PoolCounters::default(),
        };
        if spec.prestart_all_core_threads {
            for _ in 0..spec.core_pool_size {
                let id = p.spawn();
                p.set_thread(id, Some(Thread::Idle { since: now }));
            }
        }
        p
    }

    pub fn spec(&self) -> &ThreadPoolSpec {
        &self.spec
    }
    /// Threads alive (`getPoolSize()`).
    pub fn alive(&self) -> u64 {
        self.threads.len() as u64
    }
    /// Threads running a task (`getActiveCount()`).
    pub fn busy(&self) -> u64 {
        (self.threads.len() - self.idle.len()) as u64
    }
    pub fn idle(&self) -> u64 {
        self.alive() - self.busy()
    }
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Sets thread `id`'s state (`None`: it exits), keeping the idle index equal to it.
    fn set_thread(&mut self, id: ThreadId, state: Option<Thread>) {
        let old = match state {
            Some(t) => self.threads.insert(id, t),
            None => self.threads.remove(&id),
        };
        if let Some(Thread::Idle { since }) = old {
            self.idle.remove(&(since, id));
        }
        if let Some(Thread::Idle { since }) = state {
            self.idle.insert((since, id));
        }
    }

    fn spawn(&mut self) -> ThreadId {
        let id = ThreadId(self.next_id);
        self.next_id += 1;
        self.set_thread(id, Some(Thread::Busy));
        self.counters.threads_created += 1;
        self.counters.largest_pool_size = self.counters.largest_pool_size.max(self.alive());
        id
    }

    /// The idle thread the queue hands a task to: FIFO waiters for a bounded queue, LIFO for
    /// the `SynchronousQueue`. Ties by thread id.
    fn pick_idle(&self) -> Option<ThreadId> {
        let pick = if self.spec.queue_capacity == 0 { self.idle.last() } else { self.idle.first() };
        pick.map(|&(_, id)| id)
    }

    /// An idle thread becomes busy now (a hand-off, or a loan to another pool).
    pub fn take_idle(&mut self) -> Option<ThreadId> {
        assert!(
            self.queue.is_empty() || self.idle() == 0,
            "idle threads only while the queue is empty"
        );
        let id = self.pick_idle()?;
        self.set_thread(id, Some(Thread::Busy));
        Some(id)
    }

    /// Would `submit` start the task at once without growing past core (a new core thread or
    /// an idle one)?
    pub fn can_start_now(&self) -> bool {
        self.alive() < self.spec.core_pool_size || self.idle() > 0
    }

    /// `execute(task)` at `now`, in the JDK's order.
    pub fn submit(&mut self, task: T, now: SimTime) -> Submit<T> {
        self.counters.submitted += 1;
        self.execute(task, now)
    }

    fn execute(&mut self, task: T, now: SimTime) -> Submit<T> {
        // (1) Below core: always a new thread, even if others are idle.
        if self.alive() < self.spec.core_pool_size {
            self.queue.pass();
            return Submit::RunNow(self.spawn());
        }
        // (2) Offer to the queue: an idle (waiting) thread takes it at once.
        if let Some(id) = self.take_idle() {
            self.queue.pass();
            return Submit::RunNow(id);
        }
        if (self.queue.len() as u64) < self.spec.queue_capacity {
            if self.alive() == 0 {
                // addWorker(null, false): a thread is started for the queue.
                assert!(self.queue.is_empty(), "a queue with no thread to drain it");
                return Submit::RunNow(self.spawn());
            }
            self.queue.push_back(task, now);
            return Submit::Queued;
        }
        // (3) Queue full: grow up to the maximum.
        if self.alive() < self.spec.maximum_pool_size {
            return Submit::RunNow(self.spawn());
        }
        // (4) Reject.
        match self.spec.rejection_policy {
            RejectionPolicy::Abort => {
                self.counters.rejected += 1;
                Submit::RejectedAbort
            }
            RejectionPolicy::CallerRuns => {
                self.counters.caller_runs += 1;
                Submit::CallerRuns
            }
            RejectionPolicy::Discard => {
                self.counters.discarded += 1;
                Submit::Discarded
            }
            RejectionPolicy::DiscardOldest => match self.queue.pop_front() {
                Some((old, _)) => {
                    self.counters.discarded += 1;
                    match self.execute(task, now) {
                        Submit::Queued => Submit::DiscardedOldest(old),
                        _ => unreachable!("a retry after freeing a queue slot is queued"),
                    }
                }
                // SynchronousQueue: nothing to discard and the JDK would re-run execute(),
                // which is rejected again; the model drops the new task (Discarded).
                None => {
                    self.counters.discarded += 1;
                    Submit::Discarded
                }
            },
        }
    }

    /// `thread` finished its task at `now`: it takes the queue head, idles, or exits.
    pub fn finish(&mut self, thread: ThreadId, now: SimTime) -> Finished<T> {
        assert_eq!(
            self.threads.get(&thread),
            Some(&Thread::Busy),
            "finish of a thread that is not busy"
        );
        self.counters.completed += 1;
        if self.alive() > self.spec.maximum_pool_size {
            self.set_thread(thread, None);
            self.counters.threads_exited += 1;
            return Finished::Exited;
        }
        // The discipline's next task (CoDel may drop some first: `take_dropped`).
        if let Some((task, at)) = self.queue.pop(now) {
            return Finished::Next(task, at);
        }
        self.set_thread(thread, Some(Thread::Idle { since: now }));
        Finished::Idle
    }

    fn floor(&self) -> u64 {
        if self.spec.allow_core_thread_time_out { 0 } else { self.spec.core_pool_size }
    }

    fn oldest_idle(&self) -> Option<(SimTime, ThreadId)> {
        self.idle.first().copied()
    }

    /// The next keep-alive expiry that would end a thread, if any.
    pub fn wake_at(&self) -> Option<SimTime> {
        if self.alive() <= self.floor() {
            return None;
        }
        self.oldest_idle().map(|(since, _)| since + self.spec.keep_alive_time)
    }

    /// Idle threads whose keep-alive has run out exit, longest idle first, down to core.
    pub fn on_wake(&mut self, now: SimTime) {
        while self.alive() > self.floor() {
            match self.oldest_idle() {
                Some((since, id)) if since + self.spec.keep_alive_time <= now => {
                    self.set_thread(id, None);
                    self.counters.threads_exited += 1;
                }
                _ => break,
            }
        }
    }

    /// Run-time `setCorePoolSize` / `setMaximumPoolSize` (threads are not revoked: extra
    /// threads exit when they finish or time out).
    pub fn set_sizes(&mut self, core_pool_size: u64, maximum_pool_size: u64) {
        assert!(maximum_pool_size >= 1 && maximum_pool_size >= core_pool_size);
        self.spec.core_pool_size = core_pool_size;
        self.spec.maximum_pool_size = maximum_pool_size;
        // Idle threads above the new maximum exit at once (interruptIdleWorkers).
        while self.alive() > maximum_pool_size {
            let Some((_, id)) = self.oldest_idle() else { break };
            self.set_thread(id, None);
            self.counters.threads_exited += 1;
        }
    }
    /// Run-time `setCorePoolSize`: Java would throw on core > max; the model moves the
    /// maximum up to it.
    pub fn set_core_pool_size(&mut self, n: u64) {
        let max = self.spec.maximum_pool_size;
        self.set_sizes(n, max.max(n).max(1))
    }
    /// Run-time `setMaximumPoolSize`: the core moves down to it if above.
    pub fn set_maximum_pool_size(&mut self, n: u64) {
        let core = self.spec.core_pool_size;
        self.set_sizes(core.min(n), n)
    }
    pub fn set_keep_alive_time(&mut self, d: SimDuration) {
        self.spec.keep_alive_time = d;
    }

    // Queue access for `pool/expiry.rs` (queue-wait timeouts, removals).
    pub(super) fn spec_mut(&mut self) -> &mut ThreadPoolSpec {
        &mut self.spec
    }
    pub(super) fn queue_head_at(&self) -> Option<SimTime> {
        self.queue.front().map(|(_, at)| *at)
    }
    pub(super) fn pop_queue_head(&mut self) -> Option<T> {
        self.queue.pop_front().map(|(t, _)| t)
    }
    /// Takes the first queued task matching `is` out of the queue; whether one was found.
    pub fn remove_queued(&mut self, is: &impl Fn(&T) -> bool) -> bool {
        self.queue.remove(is).is_some()
    }
    /// The work queue (its CoDel drops and counters, run-time changes of `codel.<row>`).
    pub fn queue_mut(&mut self) -> &mut WaitQueue<T> {
        &mut self.queue
    }
    pub fn queue(&self) -> &WaitQueue<T> {
        &self.queue
    }
}

crate::params::declare_params! {
    ThreadPoolSpec: "pool", name = |s| s.name, part = codel[crate::codel::CodelSpec],
        scenario_only = [
            max_queue_wait: "registered as `pool_queue.<pool>.max_queue_wait` (run-time)",
        ],
        state = ThreadPool<T>, generics = [T];
    rejection_policy: Enum { choices: RejectionPolicy::CHOICES }, "", fixed,
        "what a full pool does with a task (Java's RejectedExecutionHandler)", default = "Abort";
    allow_core_thread_time_out: Bool, "", fixed,
        "idle core threads also die after keep_alive_time (allowCoreThreadTimeOut)",
        default = false;
    prestart_all_core_threads: Bool, "", fixed,
        "start every core thread at creation (prestartAllCoreThreads)", default = false;
    core_pool_size: Count { min: 0, max: 1_000_000 }, "threads",
        runtime(apply = |p, n| p.set_core_pool_size(n)),
        "threads kept even when idle (setCorePoolSize)",
        set = |s, n| {
            if n > s.maximum_pool_size {
                return Err(format!(
                    "pool `{}`: core_pool_size {n} > maximum_pool_size {}",
                    s.name, s.maximum_pool_size
                ));
            }
            s.core_pool_size = n
        };
    maximum_pool_size: Count { min: 1, max: 1_000_000 }, "threads",
        runtime(apply = |p, n| p.set_maximum_pool_size(n)),
        "threads at most (setMaximumPoolSize)",
        set = |s, n| {
            if n < s.core_pool_size.max(1) {
                return Err(format!(
                    "pool `{}`: maximum_pool_size {n} < core_pool_size {} (and must be ≥ 1)",
                    s.name, s.core_pool_size
                ));
            }
            s.maximum_pool_size = n
        };
    keep_alive_time: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) },
        "ns", runtime(apply = |p, d| p.set_keep_alive_time(d)),
        "idle time after which a thread above core exits",
        default = SimDuration::from_secs(60);
    queue_capacity: Count { min: 0, max: 1_000_000 }, "tasks", fixed,
        "bound of the work queue (0 = SynchronousQueue)";
}
