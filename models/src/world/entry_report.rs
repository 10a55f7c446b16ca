//! The entry path's wiring, gauges, summary columns, invariant checks (I23) and run-time
//! changes. A scenario without apps builds nothing here and reports nothing from here.
//!
//! Gauges per instance `i` (0-based) of app `a`: `app.<a>.<i>.queue_depth.<class>` (the
//! dispatcher's class queue, or with no dispatcher the requests of that class in the pool's
//! own queue), `….deferred`, `….threads_busy`, `….threads_alive`, `….gateway_busy`,
//! `….backlog`, `….outstanding`.
//!
//! Summary columns (only when the scenario has apps): per class
//! `class.<c>.dispatch_wait_ms_mean` / `_max` and `class.<c>.dispatched` (measured requests:
//! arrival → a worker or gateway thread starts them); per instance `app.<a>.<i>.assigned`,
//! `….caller_runs`, `….threads_busy_mean` (time average), `….largest_pool_size`, and the
//! dispatcher's `….rejected`, `….deferred_total`.

use super::entry::{AppRt, DispatchWait, InstanceGauges, InstanceRt, Stage};
use super::*;
use crate::app::AppSpec;
use crate::components::{ComponentId, ComponentKind};
use crate::dispatch::Dispatcher;
use crate::params::{ApplyParam as _, Params};
use crate::pool::PoolSet;

impl QueueingWorld {
    /// Runtime state of the scenario's apps (empty without apps: nothing registered).
    pub(super) fn entry_build(
        sc: &Scenario,
        ctx: &mut Ctx<'_, Ev>,
    ) -> (Vec<AppRt>, Vec<Option<u16>>, Vec<DispatchWait>) {
        let mut first = 0u32;
        let apps = sc
            .apps
            .iter()
            .map(|a: &AppSpec| {
                let instances = (0..a.instances)
                    .map(|k| {
                        let p = format!("app.{}.{k}", a.name);
                        let mut disp =
                            a.dispatcher.as_ref().map(|d| Dispatcher::new(d, SimTime::ZERO));
                        if let Some(d) = disp.as_mut() {
                            d.set_healthy(a.healthy, SimTime::ZERO);
                        }
                        InstanceRt {
                            disp,
                            pool: a.pool.as_ref().map(|l| PoolSet::new(l, SimTime::ZERO)),
                            outstanding: 0,
                            assigned: 0,
                            caller_runs: 0,
                            gateway_busy: 0,
                            backlog: Default::default(),
                            cpu_busy: 0,
                            cpu_queue: Default::default(),
                            pool_waiting: vec![0; sc.classes.len()],
                            disp_wake: None,
                            pool_wake: None,
                            queue_wake: None,
                            busy_avg: TimeAverage::default(),
                            breaker_closed: true,
                            gauges: InstanceGauges {
                                queue_depth: sc
                                    .classes
                                    .iter()
                                    .map(|c| {
                                        ctx.metrics.gauge(&format!("{p}.queue_depth.{}", c.name))
                                    })
                                    .collect(),
                                deferred: ctx.metrics.gauge(&format!("{p}.deferred")),
                                threads_busy: ctx.metrics.gauge(&format!("{p}.threads_busy")),
                                threads_alive: ctx.metrics.gauge(&format!("{p}.threads_alive")),
                                gateway_busy: ctx.metrics.gauge(&format!("{p}.gateway_busy")),
                                backlog: ctx.metrics.gauge(&format!("{p}.backlog")),
                                outstanding: ctx.metrics.gauge(&format!("{p}.outstanding")),
                            },
                        }
                    })
                    .collect::<Vec<_>>();
                let rt = AppRt {
                    spec: a.clone(),
                    healthy: a.healthy,
                    rr_next: 0,
                    first_instance: first,
                    instances,
                };
                first += a.instances as u32;
                rt
            })
            .collect();
        let of_source = sc
            .sources
            .iter()
            .map(|s| {
                s.app
                    .as_ref()
                    .map(|n| sc.apps.iter().position(|a| &a.name == n).expect("checked") as u16)
            })
            .collect();
        (apps, of_source, vec![DispatchWait::default(); sc.classes.len()])
    }

    /// Arms the prestarted pools' keep-alive timers and sets the gauges at time 0.
    pub(super) fn entry_start_all(&mut self, ctx: &mut Ctx<'_, Ev>) {
        for a in 0..self.entry_path.apps.len() {
            for i in 0..self.entry_path.apps[a].instances.len() {
                self.entry_sync(a as u16, i as u16, ctx);
            }
        }
    }

    pub(super) fn entry_gauges(&mut self, app: u16, inst: u16, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let i = &mut self.entry_path.apps[app as usize].instances[inst as usize];
        let (busy, alive) = i
            .pool
            .as_ref()
            .map_or((0, 0), |p| ((0..p.pools()).map(|k| p.pool(k).busy()).sum::<u64>(), p.alive()));
        i.busy_avg.set(now, busy as i64);
        let g = &i.gauges;
        for (c, id) in g.queue_depth.iter().enumerate() {
            let depth = match &i.disp {
                Some(d) => d.depth(ClassId(c as u16)) as u64,
                None => i.pool_waiting[c],
            };
            ctx.metrics.set(*id, now, depth as i64);
        }
        let deferred = i.disp.as_ref().map_or(0, |d| d.deferred_depth()) as i64;
        ctx.metrics.set(g.deferred, now, deferred);
        ctx.metrics.set(g.threads_busy, now, busy as i64);
        ctx.metrics.set(g.threads_alive, now, alive as i64);
        ctx.metrics.set(g.gateway_busy, now, i.gateway_busy as i64);
        ctx.metrics.set(g.backlog, now, i.backlog.len() as i64);
        ctx.metrics.set(g.outstanding, now, i.outstanding as i64);
    }

    pub(super) fn entry_warmup_end(&mut self, now: SimTime) {
        for a in &mut self.entry_path.apps {
            for i in &mut a.instances {
                i.busy_avg.restart(now);
            }
        }
    }

    /// Threads and gateway threads count as live entities for the zero-time-loop guard.
    pub(super) fn entry_entities(&self) -> u64 {
        let per = |i: &InstanceRt| i.pool.as_ref().map_or(0, |p| p.alive()) + i.gateway_busy + 1;
        self.entry_path.apps.iter().flat_map(|a| &a.instances).map(per).sum()
    }

    pub(super) fn entry_summary(&self, end: SimTime, out: &mut Summary) {
        if self.entry_path.apps.is_empty() {
            return;
        }
        for (c, w) in self.traffic.classes.iter().zip(&self.entry_path.dispatch_wait) {
            let p = format!("class.{}", c.name);
            let mean = if w.n == 0 { f64::NAN } else { w.sum_ns as f64 / w.n as f64 / 1e6 };
            out.push_f64(format!("{p}.dispatch_wait_ms_mean"), mean);
            let max = if w.n == 0 { f64::NAN } else { w.max_ns as f64 / 1e6 };
            out.push_f64(format!("{p}.dispatch_wait_ms_max"), max);
            out.push_u64(format!("{p}.dispatched"), w.n);
        }
        for a in &self.entry_path.apps {
            for (k, i) in a.instances.iter().enumerate() {
                let p = format!("app.{}.{k}", a.spec.name);
                out.push_u64(format!("{p}.assigned"), i.assigned);
                out.push_u64(format!("{p}.caller_runs"), i.caller_runs);
                out.push_f64(format!("{p}.threads_busy_mean"), i.busy_avg.mean(end));
                let largest = i.pool.as_ref().map_or(0, |s| {
                    (0..s.pools()).map(|x| s.pool(x).counters.largest_pool_size).sum()
                });
                out.push_u64(format!("{p}.largest_pool_size"), largest);
                let (rej, def) = i.disp.as_ref().map_or((0, 0), |d| {
                    let r = d.counters.iter().map(|c| c.rejected + c.rejected_defer_full).sum();
                    (r, d.counters.iter().map(|c| c.deferred).sum())
                });
                out.push_u64(format!("{p}.rejected"), rej);
                out.push_u64(format!("{p}.deferred_total"), def);
            }
        }
        self.pool_codel_summary(out);
    }

    /// `pool.<name>.{codel_dropped, lifo_takes}` over the instances, CoDel pools only (a
    /// FIFO pool's summary, and so the fingerprint, is unchanged).
    fn pool_codel_summary(&self, out: &mut Summary) {
        let mut by_name: std::collections::BTreeMap<&str, (u64, u64)> = Default::default();
        for i in self.entry_path.apps.iter().flat_map(|a| &a.instances) {
            let Some(set) = i.pool.as_ref() else { continue };
            for k in 0..set.pools() {
                let p = set.pool(k);
                if p.queue().codel().is_some() {
                    let e = by_name.entry(&p.spec().name).or_default();
                    e.0 += p.queue().codel_dropped;
                    e.1 += p.queue().lifo_takes;
                }
            }
        }
        for (name, (dropped, lifo)) in by_name {
            out.push_u64(format!("pool.{name}.codel_dropped"), dropped);
            out.push_u64(format!("pool.{name}.lifo_takes"), lifo);
        }
    }

    /// I23: per instance, what the pools, gateway, cores and queues hold equals what the
    /// requests say they hold.
    pub(super) fn entry_invariants(&self, v: &mut Vec<String>) {
        for (ai, a) in self.entry_path.apps.iter().enumerate() {
            for (k, i) in a.instances.iter().enumerate() {
                let mine: Vec<&super::entry::ReqEntry> = self
                    .reqs
                    .slots
                    .iter()
                    .filter_map(|r| r.entry.as_ref())
                    .filter(|e| e.app as usize == ai && e.inst as usize == k)
                    .collect();
                let count = |f: &dyn Fn(&super::entry::ReqEntry) -> bool| {
                    mine.iter().filter(|e| f(e)).count() as u64
                };
                let busy =
                    i.pool.as_ref().map_or(0, |p| (0..p.pools()).map(|x| p.pool(x).busy()).sum());
                let queued = i.disp.as_ref().map_or(0, |d| {
                    (0..d.classes()).map(|c| d.depth(ClassId(c as u16))).sum::<usize>()
                        + d.deferred_depth()
                }) + i
                    .pool
                    .as_ref()
                    .map_or(0, |p| (0..p.pools()).map(|x| p.pool(x).queued()).sum());
                let checks = [
                    ("threads busy", busy, count(&|e| e.worker.is_some())),
                    ("gateway busy", i.gateway_busy, count(&|e| e.gateway)),
                    ("cores busy", i.cpu_busy, count(&|e| e.cpu)),
                    ("queued", queued as u64, count(&|e| e.stage == Stage::Waiting)),
                    ("backlog", i.backlog.len() as u64, count(&|e| e.stage == Stage::Backlog)),
                    ("cpu queue", i.cpu_queue.len() as u64, count(&|e| e.stage == Stage::CpuQueue)),
                    ("outstanding", i.outstanding, mine.len() as u64),
                ];
                for (what, have, want) in checks {
                    if have != want {
                        v.push(format!(
                            "I23 entry: app {} instance {k}: {what} {have} ≠ requests holding {want}",
                            a.spec.name
                        ));
                    }
                }
                if i.backlog.len() as u64 > a.spec.accept_backlog
                    || a.overhead_cores().is_some_and(|c| i.cpu_busy > c)
                    || a.spec.gateway_threads.is_some_and(|g| i.gateway_busy > g)
                {
                    v.push(format!("I23 entry: app {} instance {k}: over a bound", a.spec.name));
                }
            }
        }
    }

    /// Run-time change of `app.*`, `dispatcher.*`, `pool.*`, `dispatcher_queue.*` and
    /// `pool_queue.*` (every instance's copy), handed to the component by kind: its rows
    /// name the setters. Then every instance of a changed app starts what it can.
    pub(super) fn entry_set(
        &mut self,
        c: ComponentId,
        param: &str,
        v: ParamValue,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        let ai = c.index();
        let result = entry_apply(&mut self.entry_path.apps[ai], c, param, v, ctx.now());
        for k in 0..self.entry_path.apps[ai].instances.len() {
            self.entry_pump(ai as u16, k as u16, ctx);
            self.entry_sync(ai as u16, k as u16, ctx);
        }
        result
    }
}

/// An entry-path change to one part of app `a`: the spec mirrors the value in force (for
/// `current` and the event log), each instance's component applies it.
fn entry_apply(
    a: &mut AppRt,
    c: ComponentId,
    param: &str,
    v: ParamValue,
    now: SimTime,
) -> Result<(), String> {
    use crate::timeouts::{DispatcherQueue, PoolQueue, QueueWaitSetter};
    match c.kind {
        ComponentKind::App => {
            a.spec.set(param, v.clone())?;
            (a as &mut dyn crate::app::AppSetters).apply_param(param, v, now)
        }
        ComponentKind::DispatcherQueue => {
            crate::app::set_queue_param(&mut a.spec, false, c.part(), param, &v)?;
            let class = ClassId(c.part);
            for i in &mut a.instances {
                let mut q = ClassQueue { disp: i.disp.as_mut().expect("has one"), class };
                let q: &mut dyn QueueWaitSetter<DispatcherQueue> = &mut q;
                q.apply_param(param, v.clone(), now)?;
            }
            Ok(())
        }
        ComponentKind::PoolQueue => {
            crate::app::set_queue_param(&mut a.spec, true, c.part(), param, &v)?;
            for i in &mut a.instances {
                let pool = i.pool.as_mut().expect("has one").pool_mut(c.part());
                let q: &mut dyn QueueWaitSetter<PoolQueue> = pool;
                q.apply_param(param, v.clone(), now)?;
            }
            Ok(())
        }
        ComponentKind::Dispatcher => {
            a.spec.dispatcher.as_mut().expect("registered").set(param, v.clone())?;
            for i in &mut a.instances {
                i.disp.as_mut().expect("has one").apply_param(param, v.clone(), now)?;
            }
            Ok(())
        }
        ComponentKind::Pool => {
            for i in &mut a.instances {
                let pool = i.pool.as_mut().expect("has one").pool_mut(c.part());
                match param.strip_prefix("codel.") {
                    Some(p) => pool.queue_mut().apply_codel(p, v.clone(), now)?,
                    None => pool.apply_param(param, v.clone(), now)?,
                }
            }
            Ok(())
        }
        k => unreachable!("not a part of an app: {k:?}"),
    }
}

/// A dispatcher's class queue, for its `dispatcher_queue.<dispatcher>-<class>` row.
struct ClassQueue<'a> {
    disp: &'a mut Dispatcher<u32>,
    class: ClassId,
}

impl crate::timeouts::QueueWaitSetter<crate::timeouts::DispatcherQueue> for ClassQueue<'_> {
    fn set_max_queue_wait(&mut self, w: SimDuration) {
        self.disp.set_max_queue_wait(self.class, Some(w));
    }
}

impl crate::app::AppSetters for AppRt {
    fn set_healthy(&mut self, healthy: bool, now: SimTime) {
        self.healthy = healthy;
        for i in &mut self.instances {
            if let Some(d) = i.disp.as_mut() {
                d.set_healthy(healthy && i.breaker_closed, now);
            }
        }
    }
}

impl AppRt {
    fn overhead_cores(&self) -> Option<u64> {
        self.spec.thread_overhead.as_ref().map(|o| o.cpu_cores)
    }
}
