//! A request batcher (docs/domain.md §3.13, incident 16): calls collected for up to `window` or
//! until `max_batch` are sent upstream as one batched inference.
//!
//! A call arriving when no batch is open opens one; later calls join it. The batch is
//! flushed when it reaches `max_batch` members (at once, by the call that fills it) or when
//! `window` has elapsed since its first call ([`Batcher::wake_at`]). One upstream call is
//! made per batch; every member still waiting gets the batch's outcome
//! ([`Batcher::complete`]).
//!
//! The key design decision: **the window is inclusive and measured from the batch's first
//! call** (TF Serving's `batch_timeout_micros`, Triton's `max_queue_delay_microseconds`):
//! a call arriving exactly at `opened_at + window` before the timer has fired joins the
//! batch, which then flushes at once. So `window = 0` or `max_batch = 1` sends every call
//! alone, with no timer, and no batch ever waits longer than `window`.
//!
//! Architecture invariant: every call added is a member of exactly one batch; an open
//! batch holds between 1 and `max_batch` members (as of the last decrease, which flushes
//! an overfull batch at once); a flushed batch is completed exactly once and each of its
//! members not abandoned ends exactly once with the batch's outcome. The in-flight map is
//! bounded by the calls in flight (every batch has at least one member when flushed).
//!
//! API boundary: a pure state machine. The world calls [`Batcher::add`] when a call
//! reaches the batcher, sends each flushed [`Batch`] upstream as one call (its size and
//! tokens for the server's step time), calls [`Batcher::on_wake`] at [`Batcher::wake_at`],
//! [`Batcher::complete`] when the batch's upstream call ends, and [`Batcher::abandon`] when
//! a member gives up.

use crate::ids::CallId;
use crate::outcome::Outcome;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// Configuration of a batcher, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Batcher")]
pub struct BatcherSpec {
    /// Name; parameters live under `batcher.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Longest time a batch stays open, from its first call (default 5 ms).
    #[serde(default = "D::window")]
    pub window: SimDuration,
    /// Members at which a batch is sent at once (≥ 1, default 8).
    #[serde(
        default = "D::max_batch",
        deserialize_with = "crate::params::Ranged::<BatcherSpec>::max_batch"
    )]
    pub max_batch: u64,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<BatcherSpec>;

/// A batch, one upstream call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BatchId(pub u64);

/// Why a batch was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushCause {
    /// It reached `max_batch`.
    Size,
    /// Its window elapsed.
    Window,
}

/// A flushed batch: send it upstream as one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub id: BatchId,
    /// Members in arrival order (abandoned ones already removed).
    pub members: Vec<CallId>,
    /// Sum of the members' tokens.
    pub tokens: u64,
    pub opened_at: SimTime,
    pub flushed_at: SimTime,
    pub cause: FlushCause,
}

/// The answer to [`Batcher::add`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchAdd {
    /// The call joined the open batch; wait for [`Batcher::wake_at`].
    Added,
    /// The call completed a batch (size, or arriving at the end of the window): send it.
    FlushNow(Batch),
}

/// Counters worth exposing (stable names in the field names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatcherCounters {
    pub calls: u64,
    pub batches: u64,
    pub flushed_on_size: u64,
    pub flushed_on_window: u64,
    pub abandoned: u64,
    /// Members of flushed batches (calls_batched / batches = mean batch size).
    pub calls_batched: u64,
}

#[derive(Clone, Debug)]
struct Open {
    id: BatchId,
    /// (call, tokens) in arrival order.
    members: Vec<(CallId, u64)>,
    opened_at: SimTime,
}

/// Run-time state of a batcher.
#[derive(Clone, Debug)]
pub struct Batcher {
    window: SimDuration,
    max_batch: u64,
    open: Option<Open>,
    /// Flushed batches awaiting their outcome: members still waiting.
    in_flight: BTreeMap<BatchId, Vec<CallId>>,
    /// Which batch each waiting call belongs to.
    member_of: BTreeMap<CallId, BatchId>,
    next_id: u64,
    pub counters: BatcherCounters,
}

impl Batcher {
    pub fn new(spec: &BatcherSpec) -> Batcher {
        assert!(spec.max_batch >= 1, "validated: max_batch ≥ 1");
        Batcher {
            window: spec.window,
            max_batch: spec.max_batch,
            open: None,
            in_flight: BTreeMap::new(),
            member_of: BTreeMap::new(),
            next_id: 0,
            counters: BatcherCounters::default(),
        }
    }

    /// A call with `tokens` (prompt + max output) arrives.
    pub fn add(&mut self, call: CallId, tokens: u64, now: SimTime) -> BatchAdd {
        assert!(!self.member_of.contains_key(&call), "call {call:?} added twice");
        self.counters.calls += 1;
        if self.open.is_none() {
            let id = BatchId(self.next_id);
            self.next_id += 1;
            self.open = Some(Open { id, members: Vec::new(), opened_at: now });
        }
        let open = self.open.as_mut().expect("just opened");
        assert!((open.members.len() as u64) < self.max_batch, "a full batch is never open");
        open.members.push((call, tokens));
        self.member_of.insert(call, open.id);
        if open.members.len() as u64 >= self.max_batch {
            return BatchAdd::FlushNow(self.flush(now, FlushCause::Size));
        }
        if now >= open.opened_at + self.window {
            return BatchAdd::FlushNow(self.flush(now, FlushCause::Window));
        }
        BatchAdd::Added
    }

    /// When the open batch's window ends (`None`: no batch open).
    pub fn wake_at(&self) -> Option<SimTime> {
        self.open.as_ref().map(|o| o.opened_at + self.window)
    }

    /// The time from [`Batcher::wake_at`] has come: the open batch, if due.
    pub fn on_wake(&mut self, now: SimTime) -> Option<Batch> {
        let due = self.wake_at().is_some_and(|t| t <= now);
        due.then(|| self.flush(now, FlushCause::Window))
    }

    /// The upstream call of `batch` ended: each member still waiting gets `outcome`.
    pub fn complete(&mut self, batch: BatchId, outcome: Outcome) -> Vec<(CallId, Outcome)> {
        let members = self.in_flight.remove(&batch).expect("completed a batch not in flight");
        members
            .into_iter()
            .map(|c| {
                let b = self.member_of.remove(&c);
                assert_eq!(b, Some(batch), "member bookkeeping");
                (c, outcome)
            })
            .collect()
    }

    /// A member gave up (deadline, cancellation): it gets no outcome from here. An open
    /// batch left empty is dropped; a flushed batch still completes (its upstream call
    /// runs on).
    pub fn abandon(&mut self, call: CallId) {
        let batch = self.member_of.remove(&call).expect("abandoned call is not batched here");
        self.counters.abandoned += 1;
        if let Some(o) = self.open.as_mut().filter(|o| o.id == batch) {
            o.members.retain(|c| c.0 != call);
            if o.members.is_empty() {
                self.open = None;
            }
            return;
        }
        let m = self.in_flight.get_mut(&batch).expect("batch of a waiting call");
        m.retain(|c| *c != call);
    }

    /// Members of the open batch.
    pub fn open_len(&self) -> u64 {
        self.open.as_ref().map_or(0, |o| o.members.len() as u64)
    }
    /// Batches flushed and not yet completed.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.len() as u64
    }
    /// Calls waiting here (open batch + flushed batches).
    pub fn waiting(&self) -> u64 {
        self.member_of.len() as u64
    }
    pub fn window(&self) -> SimDuration {
        self.window
    }
    pub fn max_batch(&self) -> u64 {
        self.max_batch
    }

    /// Run-time change; an open batch already at the new size is flushed and returned.
    pub fn set_max_batch(&mut self, n: u64, now: SimTime) -> Option<Batch> {
        assert!(n >= 1);
        self.max_batch = n;
        (self.open_len() >= n).then(|| self.flush(now, FlushCause::Size))
    }
    /// Run-time change; the open batch's deadline moves with it (re-read `wake_at`).
    pub fn set_window(&mut self, d: SimDuration) {
        self.window = d;
    }

    fn flush(&mut self, now: SimTime, cause: FlushCause) -> Batch {
        let o = self.open.take().expect("flush with a batch open");
        // Not `≤ max_batch`: a run-time lowering flushes a batch already bigger than the new
        // limit (`set_max_batch`); `add` keeps every batch within the limit it had then.
        assert!(!o.members.is_empty(), "a batch has a member");
        let c = &mut self.counters;
        c.batches += 1;
        c.calls_batched += o.members.len() as u64;
        match cause {
            FlushCause::Size => c.flushed_on_size += 1,
            FlushCause::Window => c.flushed_on_window += 1,
        }
        let members: Vec<CallId> = o.members.iter().map(|m| m.0).collect();
        self.in_flight.insert(o.id, members.clone());
        Batch {
            id: o.id,
            members,
            tokens: o.members.iter().map(|m| m.1).sum(),
            opened_at: o.opened_at,
            flushed_at: now,
            cause,
        }
    }
}

crate::params::declare_params! {
    BatcherSpec: "batcher", name = |s| s.name, state = governor::BatchGovernor;
    window: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(60) }, "ns",
        runtime(apply = |g, d| g.batcher.set_window(d)),
        "longest time a batch stays open, from its first call", default = SimDuration::from_ms(5);
    // A batch already that full goes at its next member or window end.
    max_batch: Count { min: 1, max: 1_000_000 }, "calls",
        runtime(apply = |g, n, now| if let Some(batch) = g.batcher.set_max_batch(n, now) {
            g.flushed(batch)
        }),
        "members at which a batch is sent at once", default = 8;
}

#[cfg(test)]
mod tests;

pub mod governor;
