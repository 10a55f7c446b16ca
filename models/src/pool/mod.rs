//! Worker thread pools (docs/domain.md §3.4): one shared pool (the incident) or one pool per traffic
//! class with borrowing of idle threads.
//!
//! [`worker::ThreadPool`] is one Java `ThreadPoolExecutor`; [`overhead`] is the per-thread
//! cost that makes "more threads" non-monotonic; [`PoolSet`] is the layout the world drives.
//!
//! Borrowing, precisely: a task of class `c` goes to its own pool when that pool can start it
//! at once without growing past core (fewer than `core_pool_size` threads, or an idle one).
//! Otherwise, if class `c` holds fewer than `max_borrow[c]` borrowed threads, it takes an idle
//! thread of another class's pool, trying lenders from the lowest-priority class upwards
//! (P2's pool before P1's), the lender choosing which of its idle threads as its own queue
//! would. Only then does the task follow its own pool's Java path (queue, grow, reject). A
//! borrowed thread stays a member of its lender's pool (it counts in the lender's `alive` and
//! `busy`); when its task ends it goes back: it takes the lender's queue head or idles there.
//!
//! The key design decision: a loan needs an *idle* thread, so a lender never queues its own
//! work behind a borrower's new work; it can only find its threads busy with borrowed tasks
//! started while it was idle, for at most one task each.
//!
//! Architecture invariant: `borrowed[c] ≤ max_borrow[c]` and equals the number of running
//! loans of class `c`; each loan is returned exactly once, in `finish`.
//!
//! API boundary: `submit(class, task, now) -> Placed`, `finish(&Running, now)`,
//! `wake_at()`/`on_wake(now)` (keep-alive), per-pool gauges through `pool(i)`.

mod expiry;
pub mod overhead;
#[cfg(test)]
mod tests;
pub mod worker;

use crate::ids::ClassId;
use serde::{Deserialize, Serialize};
use sim_core::SimTime;
use worker::{Finished, Submit, ThreadId, ThreadPool, ThreadPoolSpec};

/// How pools are laid out, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum PoolLayout {
    /// Every class uses one pool.
    Shared(ThreadPoolSpec),
    /// Pool `i` serves class `i`; class `i` may hold up to `max_borrow[i]` idle threads of
    /// other pools at once (0 = no borrowing).
    PerClass { pools: Vec<ThreadPoolSpec>, max_borrow: Vec<u64> },
}

impl PoolLayout {
    pub fn validate(&self) -> Result<(), String> {
        match self {
            PoolLayout::Shared(p) => p.validate(),
            PoolLayout::PerClass { pools, max_borrow } => {
                if pools.is_empty() || pools.len() != max_borrow.len() {
                    return Err(format!(
                        "PerClass: {} pools but {} max_borrow entries (expected equal, ≥ 1)",
                        pools.len(),
                        max_borrow.len()
                    ));
                }
                pools.iter().try_for_each(|p| p.validate())
            }
        }
    }
}

/// Where a task runs: pool, thread, and for a loan the borrowing class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Running {
    pub pool: usize,
    pub thread: ThreadId,
    pub borrowed_by: Option<ClassId>,
}

/// The decision on a submitted task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placed<T> {
    Run(Running),
    Queued {
        pool: usize,
    },
    RejectedAbort,
    CallerRuns,
    Discarded,
    /// Queued in `pool`; the old task was dropped (fail it).
    DiscardedOldest {
        pool: usize,
        dropped: T,
    },
}

/// What the thread of a finished task does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Then<T> {
    /// Runs this queued task (queued at the given time) on the same `Running` (no loan).
    Next(T, SimTime, Running),
    Idle,
    Exited,
}

/// Run-time state: the pools and the loans.
#[derive(Clone, Debug)]
pub struct PoolSet<T> {
    pools: Vec<ThreadPool<T>>,
    max_borrow: Vec<u64>,
    borrowed: Vec<u64>,
    shared: bool,
}

impl<T> PoolSet<T> {
    pub fn new(layout: &PoolLayout, now: SimTime) -> Self {
        if let Err(e) = layout.validate() {
            panic!("validated: {e}");
        }
        match layout {
            PoolLayout::Shared(p) => PoolSet {
                pools: vec![ThreadPool::new(p, now)],
                max_borrow: vec![0],
                borrowed: vec![0],
                shared: true,
            },
            PoolLayout::PerClass { pools, max_borrow } => PoolSet {
                pools: pools.iter().map(|p| ThreadPool::new(p, now)).collect(),
                max_borrow: max_borrow.clone(),
                borrowed: vec![0; pools.len()],
                shared: false,
            },
        }
    }

    pub fn pool(&self, i: usize) -> &ThreadPool<T> {
        &self.pools[i]
    }
    /// Run-time changes of one pool's sizes and keep-alive (the world's parameter knobs).
    pub fn pool_mut(&mut self, i: usize) -> &mut ThreadPool<T> {
        &mut self.pools[i]
    }
    pub fn pools(&self) -> usize {
        self.pools.len()
    }
    /// Threads of other pools class `c` holds now.
    pub fn borrowed(&self, c: ClassId) -> u64 {
        self.borrowed.get(c.0 as usize).copied().unwrap_or(0)
    }
    /// Threads alive in all pools (the process's thread count, for the overhead model).
    pub fn alive(&self) -> u64 {
        self.pools.iter().map(|p| p.alive()).sum()
    }

    fn home(&self, class: ClassId) -> usize {
        if self.shared { 0 } else { class.0 as usize }
    }

    pub fn submit(&mut self, class: ClassId, task: T, now: SimTime) -> Placed<T> {
        let home = self.home(class);
        assert!(home < self.pools.len(), "class {} has no pool", class.0);
        if !self.shared
            && !self.pools[home].can_start_now()
            && self.borrowed[home] < self.max_borrow[home]
        {
            for lender in (0..self.pools.len()).rev().filter(|&l| l != home) {
                if let Some(thread) = self.pools[lender].take_idle() {
                    self.borrowed[home] += 1;
                    return Placed::Run(Running { pool: lender, thread, borrowed_by: Some(class) });
                }
            }
        }
        match self.pools[home].submit(task, now) {
            Submit::RunNow(thread) => {
                Placed::Run(Running { pool: home, thread, borrowed_by: None })
            }
            Submit::Queued => Placed::Queued { pool: home },
            Submit::RejectedAbort => Placed::RejectedAbort,
            Submit::CallerRuns => Placed::CallerRuns,
            Submit::Discarded => Placed::Discarded,
            Submit::DiscardedOldest(dropped) => Placed::DiscardedOldest { pool: home, dropped },
        }
    }

    /// The task on `r` ended at `now`; a loan goes back to its lender.
    pub fn finish(&mut self, r: &Running, now: SimTime) -> Then<T> {
        if let Some(c) = r.borrowed_by {
            let c = c.0 as usize;
            assert!(self.borrowed[c] > 0, "loan returned twice");
            self.borrowed[c] -= 1;
        }
        match self.pools[r.pool].finish(r.thread, now) {
            Finished::Next(task, at) => {
                Then::Next(task, at, Running { pool: r.pool, thread: r.thread, borrowed_by: None })
            }
            Finished::Idle => Then::Idle,
            Finished::Exited => Then::Exited,
        }
    }

    /// Tasks the pools' CoDel queues dropped since the last call (pool order, oldest
    /// first): their requests are rejected `shed`.
    pub fn take_dropped(&mut self) -> Vec<T> {
        let mut out = Vec::new();
        for p in &mut self.pools {
            if p.queue().has_dropped() {
                out.extend(p.queue_mut().take_dropped());
            }
        }
        out
    }

    pub fn wake_at(&self) -> Option<SimTime> {
        self.pools.iter().filter_map(|p| p.wake_at()).min()
    }
    pub fn on_wake(&mut self, now: SimTime) {
        for p in &mut self.pools {
            p.on_wake(now);
        }
    }
}
