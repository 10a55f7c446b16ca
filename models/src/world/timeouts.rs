//! Request budgets, queue-wait timeouts and per-step thread holding at run time (the
//! decisions and their exact semantics: [`crate::timeouts`]).
//!
//! * `RequestDeadline { slot, id }` (kind 17, timeout phase): armed at arrival when the
//!   request has a budget, cancelled when it ends first. Firing: the request is marked
//!   expired, taken out of its entry queue and ended, or its calls are cut (`cut_below`
//!   from level 0, the work abandoned following each upstream's `cancellation`), one at a
//!   time with the wake-ups they cause resumed in between; it ends with its last call.
//! * `QueueTimeout { app, inst }` (kind 18, timeout phase): one timer per app instance at
//!   the earliest queue-wait expiry over its dispatcher's class queues and its pools'
//!   queues; the expired tasks' requests end `Rejected(Timeout)`.
//! * Thread moves at a stage's start (`advance` → [`QueueingWorld::stage_thread`]):
//!   release, or re-acquire through the instance's dispatcher/pool (the continuation then
//!   passes through `LocalWorkDone` with zero work, so a pipeline step starts only in an
//!   event handler, never inside a pump).
//!
//! Summary columns (only when configured): per source with a budget
//! `source.<s>.budget_expired` and `….calls_cut_by_budget` (measured requests); per class
//! `class.<c>.queue_timeouts` when any dispatcher queue or pool has `max_queue_wait`, and
//! per source `source.<s>.continuations` (stages that had to get a thread back) when any
//! step sets `blocking`.

use super::entry::{ReqEntry, Stage};
use super::*;
use crate::timeouts::{Expiry, Place, ThreadMove};

/// Counters and switches of this module.
#[derive(Clone, Debug, Default)]
pub(super) struct TimeoutsRt {
    /// Per source: measured requests whose budget ran out, calls cut by it, continuations.
    pub budget_expired: Vec<u64>,
    pub calls_cut: Vec<u64>,
    pub continuations: Vec<u64>,
    /// Per class: measured requests whose queue wait ran out.
    pub queue_timeouts: Vec<u64>,
    /// What the scenario configures (summary columns appear only then).
    pub any_queue_wait: bool,
    pub any_step_blocking: bool,
}

impl TimeoutsRt {
    pub fn new(sc: &Scenario) -> Self {
        let n = sc.sources.len();
        let any_step_blocking = sc
            .pipelines
            .iter()
            .flat_map(|p| p.stages.iter().flat_map(|s| s.steps()))
            .any(|s| s.blocking.is_some());
        let any_queue_wait = sc.apps.iter().any(|a| {
            a.pools().iter().any(|p| p.max_queue_wait.is_some())
                || a.dispatcher
                    .as_ref()
                    .is_some_and(|d| d.queues.iter().any(|q| q.max_queue_wait.is_some()))
        });
        TimeoutsRt {
            budget_expired: vec![0; n],
            calls_cut: vec![0; n],
            continuations: vec![0; n],
            queue_timeouts: vec![0; sc.classes.len()],
            any_queue_wait,
            any_step_blocking,
        }
    }
}

impl QueueingWorld {
    /// Arms a new request's budget timer (if its source or pipeline has a budget).
    pub(super) fn arm_budget(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let r = self.reqs.slots.get(slot).expect("live");
        let Some(b) = self.traffic.sources[r.source as usize].budget else { return };
        let id = r.id.0;
        let h = ctx.timer_at(r.arrival + b, Ev::RequestDeadline { slot, id });
        self.reqs.slots.get_mut(slot).expect("live").deadline = Some(h);
    }

    /// A request's total budget ran out.
    pub(super) fn on_request_deadline(&mut self, slot: u32, id: u64, ctx: &mut Ctx<'_, Ev>) {
        let r = self.reqs.slots.get_mut(slot).expect("a budget timer dies with its request");
        assert_eq!(r.id.0, id, "a budget timer dies with its request");
        r.deadline = None;
        r.expired = true;
        let source = r.source as usize;
        let measured = r.arrival >= self.warmup;
        if measured {
            self.timeouts.budget_expired[source] += 1;
        }
        let place = match r.entry.as_ref().map(|e| e.stage) {
            None | Some(Stage::Pipeline) => Place::Pipeline,
            Some(Stage::Backlog) => Place::Backlog,
            Some(Stage::Waiting) => Place::Queued,
            Some(Stage::CpuQueue) => Place::CpuQueue,
            Some(Stage::LocalWork) => Place::LocalWork,
        };
        let live = |w: &Self| w.reqs.slots.get(slot).is_some_and(|r| r.id.0 == id);
        match crate::timeouts::on_budget_expiry(place) {
            Expiry::AfterLocalWork => {} // `on_local_work_done` ends it
            Expiry::Dequeue => {
                self.entry_dequeue(slot, ctx.now());
                self.end_request(slot, Outcome::Failed(Reason::Timeout), ctx);
            }
            Expiry::CutCalls => {
                let victims: Vec<(u32, u32)> = (0..self.calls.slots.len() as u32)
                    .filter_map(|k| {
                        let c = self.calls.slots.get(k)?;
                        // An attempt of a hedged call goes with its parked call.
                        (c.req == slot && c.base == 0).then_some((k, c.generation))
                    })
                    .collect();
                for (k, generation) in victims {
                    // A cut may wake or answer a sibling, even end it, or end the request.
                    let current = self
                        .calls
                        .slots
                        .get(k)
                        .is_some_and(|c| c.generation == generation && c.req == slot);
                    if !live(self) || !current {
                        continue;
                    }
                    if measured {
                        self.timeouts.calls_cut[source] += 1;
                    }
                    self.cut_call(k, ctx);
                    self.resume_woken(ctx);
                }
                if live(self) {
                    let r = self.reqs.slots.get(slot).expect("live");
                    assert_eq!(r.live_calls, 0, "every call of an expired request was cut");
                    self.end_request(slot, Outcome::Failed(Reason::Timeout), ctx);
                }
            }
        }
    }

    /// Cuts one call of an expired request: abandoned wherever it is, every level it passed
    /// sees the timeout, and it ends `Failed(Timeout)` (its request does not advance).
    fn cut_call(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let c = self.calls.slots.get(slot).expect("live call");
        let (site, inst) = (c.site as usize, c.inst);
        let stack: Vec<usize> = self.sites[site].stack_for(inst).to_vec();
        let info = self.info(slot);
        self.cut_below(slot, &stack, 0, true, &info, ctx);
        self.after_stack(site, inst, ctx);
        self.update_gate_gauges(ctx);
        // Done, not ended: a cut call never moves on to its site's fallback.
        self.call_done(slot, Outcome::Failed(Reason::Timeout), ctx);
    }

    /// Takes a request out of the entry queue it waits in (backlog, dispatcher, pool, CPU).
    fn entry_dequeue(&mut self, slot: u32, now: SimTime) {
        let class = self.reqs.slots.get(slot).expect("live").class;
        let e = self.reqs.slots.get(slot).and_then(|r| r.entry.as_ref()).expect("entry");
        let (app, inst, stage) = (e.app, e.inst, e.stage);
        let i = &mut self.entry_path.apps[app as usize].instances[inst as usize];
        let found = match stage {
            Stage::Backlog => i.backlog.iter().position(|&s| s == slot).map(|k| {
                i.backlog.remove(k);
            }),
            Stage::CpuQueue => i.cpu_queue.iter().position(|&s| s == slot).map(|k| {
                i.cpu_queue.remove(k);
            }),
            Stage::Waiting => match (i.disp.as_mut(), i.pool.as_mut()) {
                (Some(d), _) => d.remove(now, |&t| t == slot).map(|_| ()),
                (None, Some(p)) => p.remove(|&t| t == slot).then(|| {
                    i.pool_waiting[class as usize] -= 1;
                }),
                (None, None) => None,
            },
            s => unreachable!("not queued: {s:?}"),
        };
        assert!(found.is_some(), "a request waiting at {stage:?} is in that queue");
        if stage == Stage::CpuQueue {
            // It held a thread while waiting for a core: `entry_ended` releases it.
            self.entry_mut(slot).stage = Stage::Pipeline;
        }
    }

    /// The instance's queue-wait timer fired: expired tasks' requests end.
    pub(super) fn on_queue_timeout(&mut self, app: u16, inst: u16, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let i = &mut self.entry_path.apps[app as usize].instances[inst as usize];
        i.queue_wake = None;
        let mut expired: Vec<u32> = match i.disp.as_mut() {
            Some(d) => d.expire(now).into_iter().map(|x| x.task).collect(),
            None => Vec::new(),
        };
        let from_pool = i.pool.as_mut().map_or(Vec::new(), |p| p.expire(now));
        for &t in &from_pool {
            let c = self.reqs.slots.get(t).expect("queued is live").class;
            self.entry_path.apps[app as usize].instances[inst as usize].pool_waiting[c as usize] -=
                1;
        }
        expired.extend(from_pool);
        for slot in expired {
            let r = self.reqs.slots.get(slot).expect("queued is live");
            if r.arrival >= self.warmup {
                self.timeouts.queue_timeouts[r.class as usize] += 1;
            }
            self.end_request(slot, Outcome::Rejected(Reason::Timeout), ctx);
        }
        self.entry_sync(app, inst, ctx);
    }

    /// Keeps the instance's queue-wait timer at the earliest expiry (from `entry_sync`).
    pub(super) fn sync_queue_timer(&mut self, app: u16, inst: u16, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let i = &mut self.entry_path.apps[app as usize].instances[inst as usize];
        let due = [
            i.disp.as_ref().and_then(|d| d.expiry_at()),
            i.pool.as_ref().and_then(|p| p.expiry_at()),
        ]
        .into_iter()
        .flatten()
        .min();
        // Keyed by the due instant; fires at it, or now if it has passed (a decrease).
        if i.queue_wake.map(|(t, _)| t) != due {
            if let Some((_, h)) = i.queue_wake.take() {
                ctx.cancel(h);
            }
            if let Some(d) = due {
                let h = ctx.timer_at(d.max(now), Ev::QueueTimeout { app, inst });
                i.queue_wake = Some((d, h));
            }
        }
    }

    /// Does request `slot` (with an entry) need a thread for stage `stage` of its pipeline?
    pub(super) fn stage_needs_thread(&self, slot: u32, stage: u16) -> bool {
        let r = self.reqs.slots.get(slot).expect("live");
        let e = r.entry.as_ref().expect("entry");
        let blocking = self.entry_path.apps[e.app as usize].spec.blocking;
        let pl = &self.pipelines[r.pipeline as usize].p;
        crate::pipeline::stage_holds_thread(&pl.stages[stage as usize], blocking)
    }

    /// Before a stage's calls are issued: the request's thread follows the stage's need.
    /// Returns the advance to act on now, or `None` if the request waits for a thread.
    pub(super) fn stage_thread(
        &mut self,
        slot: u32,
        advance: Advance,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Option<Advance> {
        let stage = match &advance {
            Advance::Issue(v) if !v.is_empty() => v[0].stage,
            _ => return Some(advance),
        };
        let r = self.reqs.slots.get(slot).expect("live");
        let Some(e) = r.entry.as_ref() else { return Some(advance) };
        let (app, inst) = (e.app, e.inst);
        if self.entry_path.apps[app as usize].spec.pool.is_none() {
            return Some(advance); // threads are not modelled
        }
        let holds = e.worker.is_some() || e.gateway;
        match crate::timeouts::thread_move(holds, self.stage_needs_thread(slot, stage)) {
            ThreadMove::Keep => Some(advance),
            ThreadMove::Release => {
                let e = self.entry_mut(slot);
                let (worker, gateway) = (e.worker.take(), std::mem::take(&mut e.gateway));
                self.entry_release(app, inst, worker, gateway, ctx);
                self.entry_sync(app, inst, ctx);
                Some(advance)
            }
            ThreadMove::Acquire => {
                let source = r.source as usize;
                if r.arrival >= self.warmup {
                    self.timeouts.continuations[source] += 1;
                }
                let e = self.entry_mut(slot);
                e.pending = Some(advance);
                e.continuation = true;
                self.entry_admit(slot, ctx);
                self.entry_sync(app, inst, ctx);
                None
            }
        }
    }

    pub(super) fn entry_mut(&mut self, slot: u32) -> &mut ReqEntry {
        self.reqs.slots.get_mut(slot).expect("live request").entry.as_mut().expect("entry")
    }

    pub(super) fn timeouts_summary(&self, out: &mut Summary) {
        let t = &self.timeouts;
        for (k, s) in self.traffic.sources.iter().enumerate() {
            let p = format!("source.{}", s.name);
            if s.budget.is_some() {
                out.push_u64(format!("{p}.budget_expired"), t.budget_expired[k]);
                out.push_u64(format!("{p}.calls_cut_by_budget"), t.calls_cut[k]);
            }
            if t.any_step_blocking {
                out.push_u64(format!("{p}.continuations"), t.continuations[k]);
            }
        }
        if t.any_queue_wait {
            for (c, n) in self.traffic.classes.iter().zip(&t.queue_timeouts) {
                out.push_u64(format!("class.{}.queue_timeouts", c.name), *n);
            }
        }
    }

    /// I37 (budgets) and I38 (queue-wait timers).
    pub(super) fn timeouts_invariants(&self, v: &mut Vec<String>) {
        for r in self.reqs.slots.iter() {
            let has = self.traffic.sources[r.source as usize].budget.is_some();
            if r.deadline.is_some() != (has && !r.expired) {
                v.push(format!("I37 budget: request {} timer {:?}", r.id.0, r.deadline));
            }
            let at = r.entry.as_ref().map(|e| e.stage);
            if r.expired && at != Some(Stage::LocalWork) {
                v.push(format!("I37 budget: expired request {} still live at {at:?}", r.id.0));
            }
        }
        for a in &self.entry_path.apps {
            for (k, i) in a.instances.iter().enumerate() {
                let due = [
                    i.disp.as_ref().and_then(|d| d.expiry_at()),
                    i.pool.as_ref().and_then(|p| p.expiry_at()),
                ]
                .into_iter()
                .flatten()
                .min();
                let ok = i.queue_wake.map(|x| x.0) == due;
                if !ok {
                    v.push(format!(
                        "I38 queue wait: app {} instance {k}: earliest expiry {due:?}, timer {:?}",
                        a.spec.name,
                        i.queue_wake.map(|x| x.0)
                    ));
                }
            }
        }
    }
}
