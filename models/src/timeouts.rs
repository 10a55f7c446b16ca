//! Request-level timeouts and thread holding (docs/domain.md §3.8 "Timeouts", §6 incidents 9 and 17;
//! issue #4 item 5, issue #3 item 2): the decisions; the run time is `world/timeouts.rs`.
//!
//! * **Total budget per task type** — `budget` on a pipeline (the task type: simple Q&A
//!   20 s, multi-turn 60 s, agents 300 s) or on a source (overrides its pipeline's; the
//!   only way for a source that targets a call site directly). Counted from the request's
//!   arrival, so it includes every queue on the way: when it runs out the request ends
//!   `Failed(Timeout)` at that instant, wherever it is — removed from the accept backlog,
//!   a dispatcher or pool queue or the CPU queue, or its calls cut wherever they are
//!   (parked at a governor, in a retry back-off, waiting for or opening a connection, at
//!   the upstream: abandoned there following the upstream's `cancellation`), and nothing
//!   further is issued. The one exception: a request in its `local_work` (CPU on its
//!   thread, which nothing interrupts) ends when that work is done, at the same instant
//!   if it was a continuation (zero work).
//! * **Queue-wait timeouts per stage of the entry path** — `max_queue_wait` on a
//!   dispatcher class queue and on a worker pool (`dispatch/expiry.rs`, `pool/expiry.rs`):
//!   a task waiting longer is removed and its request ends `Rejected(Timeout)`; healthy
//!   work that reaches a thread keeps its whole read timeout (the call site's `timeout`).
//! * **Per-step thread holding** — `blocking` on a pipeline step (default: the app's
//!   `blocking`). A stage holds its request's worker thread when any of its steps is
//!   blocking (a thread that waits on one future of a parallel stage is held for the
//!   stage). Entering a stage that does not hold releases the thread (async: the calls run
//!   on callbacks); entering a holding stage without a thread submits the request's
//!   continuation to its instance's dispatcher (or pool) like a new task — Java's order:
//!   core threads, queue, grow, reject — and the stage's calls are issued when a thread
//!   takes it (no local work again). A refused continuation ends the request as a refused
//!   task does at arrival (`rejected_shed`, `rejected_pool_full`, …).
//!
//! The key design decision: the budget is one timer per request (`RequestDeadline`), armed
//! only when a budget is configured, so a scenario without budgets schedules exactly the
//! events it did before; the queue-wait timeout is one timer per app instance at the
//! earliest expiry over its queues (`QueueTimeout`), recomputed whenever the instance
//! changes, so run-time changes of the limits apply to tasks already waiting.
//!
//! Architecture invariant: a request ends exactly once (I1) and only after its last call
//! ended (I22): a budget cut ends each of its calls once (`Failed(Timeout)`, every level
//! it passed seeing the timeout or `on_abandon` exactly once) before the request ends;
//! an expired request issues no call and holds no timer (I37); a queue-wait expiry
//! removes the task from exactly one queue (I38: no task waits longer than its limit).
//!
//! API boundary: pure functions here ([`effective_budget`], `pipeline::stage_holds_thread`,
//! [`thread_move`], [`on_budget_expiry`]); the world owns timers and acts on them.

use crate::params::Registry;
use serde::{Deserialize, Deserializer, de::Error as _};
use sim_core::SimDuration;

/// The longest budget accepted (a day).
pub const MAX_BUDGET: SimDuration = SimDuration::from_secs(86_400);

/// Reads a budget written without `Some` (`budget: "20s"`): in (0, 1 day].
pub fn budget<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SimDuration>, D::Error> {
    let v = SimDuration::deserialize(d)?;
    if v == SimDuration::ZERO || v > MAX_BUDGET {
        return Err(D::Error::custom(format!("expected a budget in (0s, 1d], found {v}")));
    }
    Ok(Some(v))
}

/// A request's total budget: its source's, else its pipeline's, else none.
pub fn effective_budget(
    source: Option<SimDuration>,
    pipeline: Option<SimDuration>,
) -> Option<SimDuration> {
    source.or(pipeline)
}

/// What a request does with its worker thread when a stage starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadMove {
    /// Nothing changes (holds and needs, or neither).
    Keep,
    /// Gives its thread back (an asynchronous stage).
    Release,
    /// Needs a thread again: its continuation is submitted like a task.
    Acquire,
}

/// The move for a request that `holds` a thread entering a stage that `needs` one.
pub fn thread_move(holds: bool, needs: bool) -> ThreadMove {
    match (holds, needs) {
        (true, false) => ThreadMove::Release,
        (false, true) => ThreadMove::Acquire,
        _ => ThreadMove::Keep,
    }
}

/// Where a request is when its budget runs out (the entry path's stages, or no app).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Waiting for a gateway thread.
    Backlog,
    /// In a dispatcher or pool queue (at arrival or as a continuation).
    Queued,
    /// Holding a thread, waiting for a core.
    CpuQueue,
    /// Running its local work (or a continuation's zero work).
    LocalWork,
    /// Running its pipeline (its calls).
    Pipeline,
}

/// What the world does when a request's budget runs out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// Take it out of its queue and end it now.
    Dequeue,
    /// Cut its calls; it ends with the last of them (now).
    CutCalls,
    /// End it when its local work is done (CPU work is not interrupted).
    AfterLocalWork,
}

/// The decision on a request whose budget ran out at `place`.
pub fn on_budget_expiry(place: Place) -> Expiry {
    match place {
        Place::Backlog | Place::Queued | Place::CpuQueue => Expiry::Dequeue,
        Place::LocalWork => Expiry::AfterLocalWork,
        Place::Pipeline => Expiry::CutCalls,
    }
}

/// A queue-wait timeout as a run-time parameter: `dispatcher_queue.<dispatcher>-<class>.
/// max_queue_wait` or `pool_queue.<pool>.max_queue_wait` (listed only where one is set; a
/// change applies to the tasks already waiting).
#[derive(Clone, Debug, PartialEq)]
pub struct QueueParams {
    pool: bool,
    pub name: String,
    pub max_queue_wait: SimDuration,
}

impl QueueParams {
    pub fn dispatcher(name: String, w: SimDuration) -> Self {
        QueueParams { pool: false, name, max_queue_wait: w }
    }
    pub fn pool(name: String, w: SimDuration) -> Self {
        QueueParams { pool: true, name, max_queue_wait: w }
    }
    /// A pool's work queue (else a dispatcher's class queue).
    pub fn is_pool(&self) -> bool {
        self.pool
    }
    /// Sets one of its parameters through its kind's row.
    pub fn set(&mut self, p: &str, v: crate::params::ParamValue) -> Result<(), String> {
        use crate::params::Params;
        if self.pool {
            let mut q = PoolQueue(self.clone());
            q.set(p, v)?;
            *self = q.0;
        } else {
            let mut q = DispatcherQueue(self.clone());
            q.set(p, v)?;
            *self = q.0;
        }
        Ok(())
    }
    /// Adds it to a registry under its kind, as `owner`'s.
    pub fn register(&self, r: &mut Registry, owner: crate::components::Owner) {
        if self.pool {
            r.add_component(&PoolQueue(self.clone()), owner)
        } else {
            r.add_component(&DispatcherQueue(self.clone()), owner)
        }
    }
}

/// The registry kind `dispatcher_queue` (a class queue's wait timeout).
#[derive(Clone)]
pub struct DispatcherQueue(QueueParams);
/// The registry kind `pool_queue` (a pool work queue's wait timeout).
#[derive(Clone)]
pub struct PoolQueue(QueueParams);

/// A queue-wait timeout's run-time side, as its row sees it (`K`: the kind,
/// [`DispatcherQueue`] or [`PoolQueue`]): the queue holding the waiting tasks implements it
/// (a pool's work queue; the world's view of a dispatcher's class queue), so the row names
/// its setter here and the world hands the change over by kind only.
pub trait QueueWaitSetter<K> {
    /// `max_queue_wait`: the tasks already waiting follow.
    fn set_max_queue_wait(&mut self, w: SimDuration);
}

/// The queue kinds' one parameter, declared once for both.
macro_rules! queue_params {
    ($($queue:ty: $kind:literal),*) => {$(
        crate::params::declare_params! {
            $queue: $kind, name = |s| s.0.name, state = dyn QueueWaitSetter<$queue> + '_;
            max_queue_wait: Duration { min: SimDuration::from_ns(1), max: MAX_BUDGET }, "ns",
                runtime(apply = |q, w| q.set_max_queue_wait(w)),
                "queue-wait timeout: a task waiting longer is removed, its request rejected",
                get = |s| s.0.max_queue_wait, set = |s, d| s.0.max_queue_wait = d;
        }
    )*};
}
queue_params!(DispatcherQueue: "dispatcher_queue", PoolQueue: "pool_queue");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{CallCount, Mode};
    use crate::pipeline::{StepSpec, stage_holds_thread};

    fn step(blocking: Option<bool>) -> StepSpec {
        StepSpec {
            name: "s".into(),
            call: "c".into(),
            calls: CallCount::Fixed(1),
            mode: Mode::Sequential,
            optional: false,
            blocking,
        }
    }

    /// (steps' `blocking`, app's `blocking`) → does the stage hold the thread.
    #[test]
    fn stage_holding_table() {
        let table: [(&[Option<bool>], bool, bool); 8] = [
            (&[None], true, true),
            (&[None], false, false),
            (&[Some(false)], true, false),
            (&[Some(true)], false, true),
            (&[Some(false), None], true, true),
            (&[Some(false), None], false, false),
            (&[Some(false), Some(true)], false, true),
            (&[Some(false), Some(false)], true, false),
        ];
        for (steps, app, want) in table {
            let v: Vec<StepSpec> = steps.iter().map(|&b| step(b)).collect();
            assert_eq!(stage_holds_thread(&v, app), want, "{steps:?} app {app}");
        }
    }

    #[test]
    fn thread_moves_and_expiry_decisions() {
        assert_eq!(thread_move(true, true), ThreadMove::Keep);
        assert_eq!(thread_move(false, false), ThreadMove::Keep);
        assert_eq!(thread_move(true, false), ThreadMove::Release);
        assert_eq!(thread_move(false, true), ThreadMove::Acquire);
        let table = [
            (Place::Backlog, Expiry::Dequeue),
            (Place::Queued, Expiry::Dequeue),
            (Place::CpuQueue, Expiry::Dequeue),
            (Place::LocalWork, Expiry::AfterLocalWork),
            (Place::Pipeline, Expiry::CutCalls),
        ];
        for (p, e) in table {
            assert_eq!(on_budget_expiry(p), e, "{p:?}");
        }
        let s = SimDuration::from_secs;
        assert_eq!(effective_budget(Some(s(1)), Some(s(2))), Some(s(1)));
        assert_eq!(effective_budget(None, Some(s(2))), Some(s(2)));
        assert_eq!(effective_budget(None, None), None);
    }

    #[test]
    fn budget_range_is_checked_while_parsing() {
        #[derive(serde::Deserialize, Debug)]
        struct T {
            #[serde(default, deserialize_with = "budget")]
            budget: Option<SimDuration>,
        }
        let ok: T = ron::from_str(r#"(budget: "2.5s")"#).unwrap();
        assert_eq!(ok.budget, Some(SimDuration::from_ms(2500)));
        let none: T = ron::from_str("()").unwrap();
        assert_eq!(none.budget, None);
        for bad in [r#"(budget: "0s")"#, r#"(budget: "2d")"#] {
            let e = ron::from_str::<T>(bad).unwrap_err().to_string();
            assert!(e.contains("expected a budget in (0s, 1d]"), "{e}");
        }
    }
}
