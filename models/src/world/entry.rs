//! The request's entry path (see [`crate::app`]): balancer → instance → dispatcher / pool →
//! a worker (or gateway) thread runs the local work → the pipeline starts → at the end of
//! the request (blocking) or of the local work (non-blocking) the thread is freed and the
//! next dispatched task takes it.
//!
//! Outcomes at the entry: dispatcher `Rejected` → `rejected_shed` (a deliberate "system
//! busy"); `RejectedDeferFull` and a full accept backlog → `rejected_queue_full`; pool
//! `Abort` → `rejected_pool_full`; pool `Discard` / `DiscardOldest` (the dropped task) →
//! `failed_shed` (the client is never answered; no entry timeout exists to time it out).
//!
//! Reentrancy: starting work only ever *schedules* an event (`LocalWorkDone`, even for zero
//! local work), so a pipeline starts — and a request may end — only in that event's
//! handler, never inside a dispatcher pump or a release.
//!
//! Instance index: `(app, inst)` in [`ReqEntry`]; a per-instance governor copy can later be
//! found as `apps[app].first_instance + inst` in a flat arena (see `instance_key`).

use super::*;
use crate::app::{AppSpec, Balancer};
use crate::dispatch::{Admission, Dispatcher};
use crate::pool::overhead::ThreadOverheadSpec;
use crate::pool::{Placed, PoolSet, Running, Then};
use std::collections::VecDeque;

/// Where a request is on its entry path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// Waiting for a gateway thread (accept backlog).
    Backlog,
    /// In the dispatcher (class or deferred queue) or the pool's own queue.
    Waiting,
    /// Holding a thread, waiting for a CPU core.
    CpuQueue,
    /// Running its local work.
    LocalWork,
    /// Its pipeline runs.
    Pipeline,
}

/// A request's entry state (in `Req::entry`).
#[derive(Clone, Debug)]
pub(super) struct ReqEntry {
    pub app: u16,
    pub inst: u16,
    pub stage: Stage,
    pub worker: Option<Running>,
    /// Runs on a gateway thread (caller-runs).
    pub gateway: bool,
    /// Holds a CPU core.
    pub cpu: bool,
    /// The pipeline's first step, until it starts (or a stage waiting for a thread).
    pub pending: Option<Advance>,
    /// Waiting for, or running on, a thread taken back for a blocking stage after an
    /// asynchronous one (`world/timeouts.rs`): no local work, no dispatch-wait sample.
    pub continuation: bool,
}

pub(super) struct InstanceRt {
    pub disp: Option<Dispatcher<u32>>,
    pub pool: Option<PoolSet<u32>>,
    /// Requests assigned and not yet ended.
    pub outstanding: u64,
    pub assigned: u64,
    pub caller_runs: u64,
    pub gateway_busy: u64,
    pub backlog: VecDeque<u32>,
    pub cpu_busy: u64,
    /// Bounded by the threads holding its entries (each waiter holds a worker or gateway).
    pub cpu_queue: VecDeque<u32>,
    /// Per class: requests waiting in the pool's own queue (no dispatcher).
    pub pool_waiting: Vec<u64>,
    pub disp_wake: Option<(SimTime, TimerHandle)>,
    pub pool_wake: Option<(SimTime, TimerHandle)>,
    /// The queue-wait timer, keyed by the earliest expiry it stands for (`timeouts.rs`).
    pub queue_wake: Option<(SimTime, TimerHandle)>,
    pub busy_avg: TimeAverage,
    pub gauges: InstanceGauges,
    /// The state of the app's `health_from` breaker (this instance's copy): CLOSED?
    pub breaker_closed: bool,
}

pub(super) struct InstanceGauges {
    pub queue_depth: Vec<GaugeId>,
    pub deferred: GaugeId,
    pub threads_busy: GaugeId,
    pub threads_alive: GaugeId,
    pub gateway_busy: GaugeId,
    pub backlog: GaugeId,
    pub outstanding: GaugeId,
}

/// The entry-path subsystem: every app's instances (balancer, gateway threads,
/// dispatcher, worker pool) and the dispatchers' wait statistics.
#[derive(Default)]
pub(super) struct EntryPath {
    pub apps: Vec<AppRt>,
    pub dispatch_wait: Vec<DispatchWait>,
}

pub(super) struct AppRt {
    pub spec: AppSpec,
    pub healthy: bool,
    pub rr_next: u64,
    pub instances: Vec<InstanceRt>,
    /// Index of its first instance in a flat list of all apps' instances.
    pub first_instance: u32,
}

/// Per-class dispatch waits (arrival → a thread starts the request), measured requests.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct DispatchWait {
    pub n: u64,
    pub sum_ns: u128,
    pub max_ns: u64,
}

impl AppRt {
    fn overhead(&self) -> Option<&ThreadOverheadSpec> {
        self.spec.thread_overhead.as_ref()
    }
}

/// Can the instance's (shared) pool start a task at once, without queueing it?
fn worker_free(pool: &PoolSet<u32>) -> bool {
    let p = pool.pool(0);
    p.can_start_now()
        || (p.queued() as u64 >= p.spec().queue_capacity && p.alive() < p.spec().maximum_pool_size)
}

impl QueueingWorld {
    fn entry(&mut self, slot: u32) -> &mut ReqEntry {
        self.reqs.slots.get_mut(slot).expect("live request").entry.as_mut().expect("entry")
    }
    fn inst(&mut self, app: u16, inst: u16) -> &mut InstanceRt {
        &mut self.entry_path.apps[app as usize].instances[inst as usize]
    }

    /// The flat index of an instance over all apps (for per-instance component copies).
    pub fn instance_key(&self, app: u16, inst: u16) -> u32 {
        self.entry_path.apps[app as usize].first_instance + inst as u32
    }

    /// A request of a source with an app arrived (its slot is allocated, its pipeline's
    /// first step computed but not started).
    pub(super) fn entry_arrive(
        &mut self,
        slot: u32,
        app: u16,
        advance: Advance,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        let r = self.reqs.slots.get(slot).expect("live");
        let a = &mut self.entry_path.apps[app as usize];
        let n = a.instances.len() as u64;
        let inst = match a.spec.balancer {
            Balancer::RoundRobin => {
                a.rr_next += 1;
                (a.rr_next - 1) % n
            }
            Balancer::LeastOutstanding => {
                (0..n).min_by_key(|&i| (a.instances[i as usize].outstanding, i)).expect("≥ 1")
            }
            Balancer::Random => {
                let key = self.traffic.sources[r.source as usize].draw.request(r.seq);
                ((key.uniform(attr::BALANCER) * n as f64) as u64).min(n - 1)
            }
        } as u16;
        let backlog_cap = a.spec.accept_backlog;
        let gateways = a.spec.gateway_threads;
        let paused = self.inst_paused(app, inst, ctx.now());
        let a = &mut self.entry_path.apps[app as usize];
        let i = &mut a.instances[inst as usize];
        i.outstanding += 1;
        i.assigned += 1;
        self.reqs.slots.get_mut(slot).expect("live").entry = Some(ReqEntry {
            app,
            inst,
            stage: Stage::Backlog,
            worker: None,
            gateway: false,
            cpu: false,
            pending: Some(advance),
            continuation: false,
        });
        let i = self.inst(app, inst);
        // A paused instance (`world/stalls.rs`) accepts nothing: the backlog holds it.
        if !paused && i.backlog.is_empty() && gateways.is_none_or(|g| i.gateway_busy < g) {
            self.entry_admit(slot, ctx);
        } else if (i.backlog.len() as u64) < backlog_cap {
            i.backlog.push_back(slot);
        } else {
            self.end_request(slot, Outcome::Rejected(Reason::QueueFull), ctx);
        }
        self.entry_sync(app, inst, ctx);
    }

    /// A gateway thread hands the request to the dispatcher or the pool.
    pub(super) fn entry_admit(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let class = self.reqs.slots.get(slot).expect("live").class;
        let e = self.entry(slot);
        let (app, inst) = (e.app, e.inst);
        e.stage = Stage::Waiting;
        let i = self.inst(app, inst);
        if let Some(d) = i.disp.as_mut() {
            match d.submit(slot, ClassId(class), now) {
                Admission::Queued | Admission::Deferred => self.entry_pump(app, inst, ctx),
                Admission::Rejected => self.end_request(slot, Outcome::Rejected(Reason::Shed), ctx),
                Admission::RejectedDeferFull => {
                    self.end_request(slot, Outcome::Rejected(Reason::QueueFull), ctx)
                }
                Admission::CallerRuns => self.entry_caller_runs(slot, ctx),
            }
        } else if let Some(p) = i.pool.as_mut() {
            match p.submit(ClassId(class), slot, now) {
                Placed::Run(r) => self.entry_start(slot, Some(r), ctx),
                Placed::Queued { .. } => i.pool_waiting[class as usize] += 1,
                Placed::RejectedAbort => {
                    self.end_request(slot, Outcome::Rejected(Reason::PoolFull), ctx)
                }
                Placed::CallerRuns => self.entry_caller_runs(slot, ctx),
                Placed::Discarded => self.end_request(slot, Outcome::Failed(Reason::Shed), ctx),
                Placed::DiscardedOldest { dropped, .. } => {
                    i.pool_waiting[class as usize] += 1;
                    let dc = self.reqs.slots.get(dropped).expect("queued is live").class;
                    self.inst(app, inst).pool_waiting[dc as usize] -= 1;
                    self.end_request(dropped, Outcome::Failed(Reason::Shed), ctx);
                }
            }
        } else {
            self.entry_start(slot, None, ctx);
        }
    }

    fn entry_caller_runs(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        if self.entry(slot).continuation {
            // No caller thread to run it (an async callback submitted it): refused.
            self.end_request(slot, Outcome::Rejected(Reason::Shed), ctx);
            return;
        }
        let e = self.entry(slot);
        e.gateway = true;
        let (app, inst) = (e.app, e.inst);
        let i = self.inst(app, inst);
        i.gateway_busy += 1;
        i.caller_runs += 1;
        self.entry_work(slot, ctx);
    }

    /// A worker thread (or, with no pool, no thread at all) takes the request now.
    fn entry_start(&mut self, slot: u32, worker: Option<Running>, ctx: &mut Ctx<'_, Ev>) {
        let e = self.entry(slot);
        e.worker = worker;
        self.entry_work(slot, ctx);
    }

    /// The request's thread starts: its dispatch wait ends; the local work needs a core.
    fn entry_work(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let r = self.reqs.slots.get(slot).expect("live");
        if r.entry.as_ref().is_some_and(|e| e.continuation) {
            // A continuation on its new thread: straight on (still through an event).
            let id = r.id.0;
            self.entry(slot).stage = Stage::LocalWork;
            ctx.schedule_at(now, Ev::LocalWorkDone { slot, id });
            return;
        }
        if r.arrival >= self.warmup {
            let w = &mut self.entry_path.dispatch_wait[r.class as usize];
            let ns = (now - r.arrival).0;
            w.n += 1;
            w.sum_ns += ns as u128;
            w.max_ns = w.max_ns.max(ns);
        }
        let e = self.entry(slot);
        let (app, inst) = (e.app, e.inst);
        e.stage = Stage::CpuQueue;
        let cores = self.entry_path.apps[app as usize].overhead().map(|o| o.cpu_cores);
        let i = self.inst(app, inst);
        match cores {
            Some(c) if i.cpu_busy >= c => i.cpu_queue.push_back(slot),
            _ => self.entry_cpu(slot, ctx),
        }
    }

    /// The local work runs now (on a core, if cores are modelled).
    fn entry_cpu(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let r = self.reqs.slots.get(slot).expect("live");
        let (id, key) = (r.id.0, self.traffic.sources[r.source as usize].draw.request(r.seq));
        let e = r.entry.as_ref().expect("entry");
        let a = &self.entry_path.apps[e.app as usize];
        let i = &a.instances[e.inst as usize];
        let alive = i.pool.as_ref().map_or(0, |p| p.alive());
        let d = match &a.spec.local_work {
            None => SimDuration::ZERO,
            Some(dist) => {
                let base = dist.sample(&mut key.attribute(attr::LOCAL_WORK));
                let m = a.overhead().map_or(1.0, |o| o.service_multiplier(alive));
                SimDuration::from_ns((base.0 as f64 * m).round() as u64)
            }
        };
        let cpu = a.overhead().is_some();
        let (app, inst) = (e.app, e.inst);
        let e = self.entry(slot);
        e.stage = Stage::LocalWork;
        e.cpu = cpu;
        if cpu {
            self.inst(app, inst).cpu_busy += 1;
        }
        // On a stalled instance pauses and slowdowns move it (`world/stalls.rs`).
        if !self.stall_work_start((app, inst), (slot, id), d, ctx) {
            ctx.schedule_at(ctx.now() + d, Ev::LocalWorkDone { slot, id });
        }
    }

    /// The local work is done: the core is freed, a non-blocking thread too; the pipeline
    /// starts.
    pub(super) fn on_local_work_done(&mut self, slot: u32, id: u64, ctx: &mut Ctx<'_, Ev>) {
        let r = self.reqs.slots.get_mut(slot).expect("a request in local work is live");
        assert_eq!(r.id.0, id, "a request cannot end during its local work");
        let e = r.entry.as_mut().expect("entry");
        assert_eq!(e.stage, Stage::LocalWork);
        e.stage = Stage::Pipeline;
        let (app, inst, cpu) = (e.app, e.inst, e.cpu);
        e.cpu = false;
        e.continuation = false;
        let expired = r.expired;
        let advance = e.pending.take().expect("the pipeline starts once");
        self.stall_work_done(app, inst, slot);
        if cpu {
            let i = self.inst(app, inst);
            i.cpu_busy -= 1;
            if let Some(next) = i.cpu_queue.pop_front() {
                self.entry_cpu(next, ctx);
            }
        }
        if expired {
            // Its budget ran out during its local work (`timeouts.rs`).
            self.entry_sync(app, inst, ctx);
            self.end_request(slot, Outcome::Failed(Reason::Timeout), ctx);
            return;
        }
        // The thread is kept if the first stage holds it (by default: the app's blocking).
        let keep = match &advance {
            Advance::Issue(v) if !v.is_empty() => self.stage_needs_thread(slot, v[0].stage),
            _ => self.entry_path.apps[app as usize].spec.blocking,
        };
        if !keep {
            let e = self.entry(slot);
            let (worker, gateway) = (e.worker.take(), std::mem::take(&mut e.gateway));
            self.entry_release(app, inst, worker, gateway, ctx);
        }
        self.entry_sync(app, inst, ctx);
        self.advance(slot, advance, ctx);
    }

    /// A request with an entry state ended (called from `end_request`).
    pub(super) fn entry_ended(&mut self, e: ReqEntry, ctx: &mut Ctx<'_, Ev>) {
        assert!(!e.cpu, "a request never ends in its local work");
        assert!(
            matches!(e.stage, Stage::Pipeline | Stage::Backlog | Stage::Waiting),
            "ended at {:?}",
            e.stage
        );
        self.inst(e.app, e.inst).outstanding -= 1;
        self.entry_release(e.app, e.inst, e.worker, e.gateway, ctx);
        self.entry_sync(e.app, e.inst, ctx);
    }

    /// Frees a worker thread (it takes the pool queue's head or the next dispatched task)
    /// and a gateway thread (it takes the accept backlog's head).
    pub(super) fn entry_release(
        &mut self,
        app: u16,
        inst: u16,
        worker: Option<Running>,
        gateway: bool,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        let now = ctx.now();
        if let Some(w) = worker {
            let pool = self.inst(app, inst).pool.as_mut().expect("a worker has a pool");
            match pool.finish(&w, now) {
                Then::Next(task, _, r) => {
                    let c = self.reqs.slots.get(task).expect("queued is live").class;
                    self.inst(app, inst).pool_waiting[c as usize] -= 1;
                    self.entry_start(task, Some(r), ctx);
                }
                Then::Idle | Then::Exited => {}
            }
            self.entry_pump(app, inst, ctx);
            self.pool_drops(app, inst, ctx);
        }
        if gateway {
            self.inst(app, inst).gateway_busy -= 1;
            self.entry_take_backlog(app, inst, ctx);
        }
    }

    /// Tasks the pool's CoDel discipline dropped when a thread took work (`crate::codel`):
    /// their requests end `rejected:shed`, as an expired task's end `timeout`
    /// (`on_queue_timeout`).
    fn pool_drops(&mut self, app: u16, inst: u16, ctx: &mut Ctx<'_, Ev>) {
        let Some(pool) = self.inst(app, inst).pool.as_mut() else { return };
        for slot in pool.take_dropped() {
            let c = self.reqs.slots.get(slot).expect("queued is live").class;
            self.inst(app, inst).pool_waiting[c as usize] -= 1;
            self.end_request(slot, Outcome::Rejected(Reason::Shed), ctx);
        }
    }

    /// Free gateway threads take the accept backlog's head, in order (after a release, and
    /// at the end of a pause: `world/stalls.rs`).
    pub(super) fn entry_take_backlog(&mut self, app: u16, inst: u16, ctx: &mut Ctx<'_, Ev>) {
        let cap = self.entry_path.apps[app as usize].spec.gateway_threads;
        loop {
            let i = self.inst(app, inst);
            if cap.is_some_and(|g| i.gateway_busy >= g) {
                break;
            }
            let Some(next) = i.backlog.pop_front() else { break };
            self.entry_admit(next, ctx);
        }
    }

    /// Hands dispatched tasks to free workers, one at a time, while both exist.
    pub(super) fn entry_pump(&mut self, app: u16, inst: u16, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        loop {
            let i = self.inst(app, inst);
            let (Some(d), Some(p)) = (i.disp.as_mut(), i.pool.as_mut()) else { return };
            if !worker_free(p) {
                return;
            }
            let Some(t) = d.next(now) else { return };
            match p.submit(t.class, t.task, now) {
                Placed::Run(r) => self.entry_start(t.task, Some(r), ctx),
                other => unreachable!("a free worker runs a dispatched task at once: {other:?}"),
            }
        }
    }

    /// After any change at an instance: due dispatcher/pool wake-ups run inline, timers are
    /// re-armed, gauges updated.
    pub(super) fn entry_sync(&mut self, app: u16, inst: u16, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        // A due wake-up runs at once; a poll that would pick but finds no free worker waits
        // for the next release (which pumps), so it is not re-armed at `now`.
        let mut disp_at = None;
        for _ in 0..1000 {
            let Some(d) = self.inst(app, inst).disp.as_mut() else { break };
            let Some(t) = d.wake_at() else { break };
            if t > now {
                disp_at = Some(t);
                break;
            }
            d.on_wake(now);
            self.entry_pump(app, inst, ctx);
            if self.inst(app, inst).disp.as_ref().and_then(|d| d.wake_at()) == Some(t) {
                break;
            }
        }
        let i = self.inst(app, inst);
        let mut pool_at = None;
        if let Some(p) = i.pool.as_mut() {
            if p.wake_at().is_some_and(|t| t <= now) {
                p.on_wake(now);
            }
            pool_at = p.wake_at();
        }
        if i.disp_wake.map(|(t, _)| t) != disp_at {
            if let Some((_, h)) = i.disp_wake.take() {
                ctx.cancel(h);
            }
            if let Some(t) = disp_at {
                i.disp_wake = Some((t, ctx.timer_at(t, Ev::DispatchWake { app, inst })));
            }
        }
        if i.pool_wake.map(|(t, _)| t) != pool_at {
            if let Some((_, h)) = i.pool_wake.take() {
                ctx.cancel(h);
            }
            if let Some(t) = pool_at {
                i.pool_wake = Some((t, ctx.timer_at(t, Ev::PoolWake { app, inst })));
            }
        }
        self.sync_queue_timer(app, inst, ctx);
        self.entry_gauges(app, inst, ctx);
    }

    pub(super) fn on_dispatch_wake(&mut self, app: u16, inst: u16, ctx: &mut Ctx<'_, Ev>) {
        self.inst(app, inst).disp_wake = None;
        self.entry_sync(app, inst, ctx);
    }
    pub(super) fn on_pool_wake(&mut self, app: u16, inst: u16, ctx: &mut Ctx<'_, Ev>) {
        self.inst(app, inst).pool_wake = None;
        self.entry_sync(app, inst, ctx);
    }
}

impl QueueingWorld {
    /// Breaker `g` changed state (`closed`: it entered CLOSED): the apps whose `health_from`
    /// is that breaker (or, for a per-instance copy, the instance it serves:
    /// [`governors::InstanceCopy`]) update the health of their dispatchers' deferred queues
    /// (healthy = `healthy` and CLOSED). The dispatcher acts on it in a wake-up event at the
    /// same instant, not inside the governor's call.
    pub(super) fn breaker_health(&mut self, g: usize, closed: bool, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let (base, copy) = self.govs.identity(g);
        for (ai, a) in self.entry_path.apps.iter_mut().enumerate() {
            if a.spec.health_from.as_deref() != Some(base) {
                continue;
            }
            for (k, i) in a.instances.iter_mut().enumerate() {
                if copy.is_some_and(|c| (c.app as usize, c.inst as usize) != (ai, k)) {
                    continue;
                }
                i.breaker_closed = closed;
                let Some(d) = i.disp.as_mut() else { continue };
                d.set_healthy(a.healthy && closed, now);
                if let Some((_, h)) = i.disp_wake.take() {
                    ctx.cancel(h);
                }
                let (app, inst) = (ai as u16, k as u16);
                i.disp_wake = Some((now, ctx.timer_at(now, Ev::DispatchWake { app, inst })));
            }
        }
    }
}
