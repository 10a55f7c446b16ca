//! Resilience4j's `ThreadPoolBulkhead` (`FixedThreadPoolBulkhead`), from
//! `thread_pool_bulkheads`.
//!
//! The library runs each decorated call on a `java.util.concurrent.ThreadPoolExecutor`
//! built in `FixedThreadPoolBulkhead`'s constructor: `coreThreadPoolSize`,
//! `maxThreadPoolSize`, `keepAliveDuration.toMillis()` milliseconds, an
//! `ArrayBlockingQueue(queueCapacity)` and the default `AbortPolicy`; `submit` turns the
//! executor's `RejectedExecutionException` into `BulkheadFullException`. So the rule is
//! `ThreadPoolExecutor.execute`'s, and the model runs the pool of the entry path
//! ([`crate::pool::worker::ThreadPool`], the JDK's steps, tested there) with the call as the
//! task:
//!
//! 1. fewer than `core_thread_pool_size` threads → a new thread runs the call (even with
//!    others idle);
//! 2. else the queue is offered the call: an idle thread takes it at once, else it waits in
//!    the queue if fewer than `queue_capacity` wait;
//! 3. queue full → a new thread, while fewer than `max_thread_pool_size`;
//! 4. else refused: `rejected:pool_full` (the `AbortPolicy`; Resilience4j's
//!    `BulkheadFullException`).
//!
//! So concurrency stays at core until the queue is full: a burst fills the queue before the
//! pool grows. A thread runs its call until the outcome climbs back through the bulkhead,
//! then takes the queue's head (the parked call resumes) or idles; an idle thread above core
//! ends after `keep_alive_duration` (longest idle first), truncated to whole milliseconds as
//! the library passes it (`toMillis()`, `TimeUnit.MILLISECONDS`).
//!
//! Where it differs: the library's caller gets a `CompletableFuture`; cancelling it (a time
//! limiter above) neither removes a queued task nor stops a running one — the thread stays
//! busy until the call returns. Here a cancelled queued call leaves the queue and a cancelled
//! running call frees its thread when its cancellation climbs through the bulkhead (as the
//! gate frees a permit). Nothing is changeable at run time (the library has no change
//! method; `maxThreadPoolSize` ≥ `coreThreadPoolSize` ≥ 1 and `queueCapacity` ≥ 1 are its
//! builder's checks). The defaults `coreThreadPoolSize = availableProcessors − 1` and
//! `maxThreadPoolSize = availableProcessors` depend on the host, so both are required here.
//!
//! Summary counters `thread_pool_bulkhead.<name>.{submitted, rejected, threads_created,
//! threads_exited, largest_pool_size}`; gauges `threads`, `active`, `queued`.
//!
//! Architecture invariant: the pool's (threads ≤ max, queue ≤ capacity, idle threads only
//! while the queue is empty); every running call holds exactly one thread, released once,
//! on its outcome or its abandon.

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use crate::pool::worker::{
    Finished, RejectionPolicy, Submit, ThreadId, ThreadPool, ThreadPoolSpec,
};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// Configuration, named after `ThreadPoolBulkheadConfig`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Raw", rename = "ThreadPoolBulkhead")]
pub struct ThreadPoolBulkheadSpec {
    /// Name; parameters live under `thread_pool_bulkhead.<name>.*`.
    pub name: String,
    /// `coreThreadPoolSize`.
    pub core_thread_pool_size: u64,
    /// `maxThreadPoolSize`.
    pub max_thread_pool_size: u64,
    /// `queueCapacity` (an `ArrayBlockingQueue`).
    pub queue_capacity: u64,
    /// `keepAliveDuration`.
    pub keep_alive_duration: SimDuration,
}

/// The declaration as parsed, before the cross-field check.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "ThreadPoolBulkhead")]
struct Raw {
    #[serde(deserialize_with = "crate::validate::name")]
    name: String,
    #[serde(deserialize_with = "R::core_thread_pool_size")]
    core_thread_pool_size: u64,
    #[serde(deserialize_with = "R::max_thread_pool_size")]
    max_thread_pool_size: u64,
    #[serde(default = "D::queue_capacity", deserialize_with = "R::queue_capacity")]
    queue_capacity: u64,
    #[serde(default = "D::keep_alive_duration", deserialize_with = "R::keep_alive_duration")]
    keep_alive_duration: SimDuration,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<ThreadPoolBulkheadSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<ThreadPoolBulkheadSpec>;

impl TryFrom<Raw> for ThreadPoolBulkheadSpec {
    type Error = String;
    fn try_from(r: Raw) -> Result<Self, String> {
        let s = ThreadPoolBulkheadSpec {
            name: r.name,
            core_thread_pool_size: r.core_thread_pool_size,
            max_thread_pool_size: r.max_thread_pool_size,
            queue_capacity: r.queue_capacity,
            keep_alive_duration: r.keep_alive_duration,
        };
        s.check()?;
        Ok(s)
    }
}

impl ThreadPoolBulkheadSpec {
    /// `ThreadPoolBulkheadConfig.Builder.build`'s check.
    pub fn check(&self) -> Result<(), String> {
        if self.max_thread_pool_size < self.core_thread_pool_size {
            return Err(format!(
                "max_thread_pool_size {} < core_thread_pool_size {} (Resilience4j: \
                 \"maxThreadPoolSize must be a greater than or equals to coreThreadPoolSize\")",
                self.max_thread_pool_size, self.core_thread_pool_size
            ));
        }
        Ok(())
    }

    /// The executor `FixedThreadPoolBulkhead` builds.
    pub fn executor(&self) -> ThreadPoolSpec {
        ThreadPoolSpec {
            name: self.name.clone(),
            core_pool_size: self.core_thread_pool_size,
            maximum_pool_size: self.max_thread_pool_size,
            // keepAliveDuration.toMillis(), TimeUnit.MILLISECONDS.
            keep_alive_time: SimDuration::from_ms(self.keep_alive_duration.0 / 1_000_000),
            queue_capacity: self.queue_capacity,
            rejection_policy: RejectionPolicy::Abort,
            allow_core_thread_time_out: false,
            prestart_all_core_threads: false,
            max_queue_wait: None,
            codel: None,
        }
    }
}

/// Run-time state of a `ThreadPoolBulkhead`.
#[derive(Clone, Debug)]
pub struct ThreadPoolBulkhead {
    pool: ThreadPool<CallId>,
    /// The thread each running call holds.
    running: BTreeMap<CallId, ThreadId>,
    /// Queued calls a finishing thread took, not yet resumed by the world.
    woken: Vec<CallId>,
}

impl ThreadPoolBulkhead {
    pub fn new(spec: &ThreadPoolBulkheadSpec) -> Self {
        ThreadPoolBulkhead {
            pool: ThreadPool::new(&spec.executor(), SimTime::ZERO),
            running: BTreeMap::new(),
            woken: Vec::new(),
        }
    }

    /// The executor (threads, queue, counters).
    pub fn pool(&self) -> &ThreadPool<CallId> {
        &self.pool
    }

    /// `thread` is free at `now`: it takes the queue's head (that call resumes) or idles.
    fn release(&mut self, thread: ThreadId, now: SimTime) {
        match self.pool.finish(thread, now) {
            Finished::Next(next, _) => {
                self.running.insert(next, thread);
                self.woken.push(next);
            }
            Finished::Idle | Finished::Exited => {}
        }
    }
}

impl Governor for ThreadPoolBulkhead {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        match self.pool.submit(call.call, now) {
            Submit::RunNow(thread) => {
                self.running.insert(call.call, thread);
                CallDecision::Pass
            }
            Submit::Queued => CallDecision::Wait { deadline: None, on_deadline: Reason::PoolFull },
            Submit::RejectedAbort => CallDecision::Reject(Reason::PoolFull),
            other => unreachable!("AbortPolicy only: {other:?}"),
        }
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        let thread = self.running.remove(&call.call).expect("a passed call holds a thread");
        self.release(thread, now);
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, now: SimTime) {
        if self.pool.remove_queued(&|c: &CallId| *c == call.call) {
            return;
        }
        // Taken by a thread in this instant but not yet resumed: the thread is free again.
        let pos = self.woken.iter().position(|c| *c == call.call);
        self.woken.remove(pos.expect("abandoned call was not parked at this bulkhead"));
        let thread = self.running.remove(&call.call).expect("a woken call holds a thread");
        self.release(thread, now);
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }

    fn waiting(&self) -> usize {
        self.pool.queued()
    }

    /// The keep-alive expiry of the longest idle thread above core.
    fn wake_at(&self) -> Option<SimTime> {
        self.pool.wake_at()
    }

    fn on_wake(&mut self, now: SimTime) {
        self.pool.on_wake(now);
    }
}

crate::params::declare_params! {
    ThreadPoolBulkheadSpec: "thread_pool_bulkhead", name = |s| s.name,
        check = ThreadPoolBulkheadSpec::check, state = ThreadPoolBulkhead;
    core_thread_pool_size: Count { min: 1, max: 1_000_000 }, "threads", fixed,
        "threads started before calls queue (coreThreadPoolSize)";
    max_thread_pool_size: Count { min: 1, max: 1_000_000 }, "threads", fixed,
        "threads at most, started only once the queue is full (maxThreadPoolSize)";
    queue_capacity: Count { min: 1, max: 1_000_000 }, "calls", fixed,
        "calls waiting for a thread at most (queueCapacity: an ArrayBlockingQueue)",
        default = 100;
    keep_alive_duration: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) },
        "ns", fixed,
        "idle time after which a thread above core ends (keepAliveDuration, in whole milliseconds)",
        default = SimDuration::from_ms(20);
}

impl crate::params::GovernorSpec for ThreadPoolBulkheadSpec {
    fn local_refusals(&self) -> Vec<Reason> {
        vec![Reason::PoolFull]
    }
}

impl crate::governor::GovernorKindOps for ThreadPoolBulkhead {
    type Spec = ThreadPoolBulkheadSpec;
    fn build(spec: &ThreadPoolBulkheadSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        ThreadPoolBulkhead::new(spec)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.pool.counters;
        vec![
            ("submitted", c.submitted),
            ("rejected", c.rejected),
            ("threads_created", c.threads_created),
            ("threads_exited", c.threads_exited),
            ("largest_pool_size", c.largest_pool_size),
        ]
    }
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        let p = &self.pool;
        vec![
            ("threads", p.alive() as i64),
            ("active", p.busy() as i64),
            ("queued", p.queued() as i64),
        ]
    }
    fn in_flight_limit(&self) -> Option<(u64, Option<u64>)> {
        Some((self.pool.busy(), Some(self.pool.spec().maximum_pool_size)))
    }
}

#[cfg(test)]
#[path = "thread_pool_bulkhead_tests.rs"]
mod tests;
