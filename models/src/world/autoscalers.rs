//! Autoscalers on the running world (`crate::autoscaler`): each one's replicas —
//! provisioning, ready, warming — the station's servers they make, its metric over the
//! sync period, and its syncs.
//!
//! A scenario without autoscalers builds an empty list, schedules and draws nothing and its
//! stations carry no meter: it replays bit for bit.
//!
//! Replicas: a replica asked for gets a sequence number and a keyed draw of
//! `provisioning_delay` (`attr::PROVISIONING`, keyed by the autoscaler's name and the
//! sequence: the n-th replica's delay is the same under every policy); zero makes it ready
//! at once, otherwise `Ev::ReplicaReady` does. Scale-down cancels the newest provisioning
//! replicas first, then removes the most recently ready (`crate::autoscaler`); the
//! station's servers are then the ready replicas' servers, and the station's own rule
//! drains the removed ones (busy servers finish, no new start).
//!
//! Architecture invariant (checked by `scaler_violations`): after every event each
//! autoscaler's station has `ready × servers_per_replica` servers unless a run-time
//! change of `station.<n>.servers` came after the autoscaler's last step, and no more
//! replicas warm than are ready.
//!
//! API boundary: the two event handlers, `warm_stretch` (from `start_service`), the
//! station's [`Meter`] (fed by `StationRt::gauges`), `set_autoscaler`, summary and checks.

use super::*;
use crate::autoscaler::{Hpa, KedaStep, ScaleMetric, Usage, external_replica_count, replica_count};
use sim_core::rng::SourceKey;
use std::collections::{BTreeMap, VecDeque};

/// A station's time integrals since the last sync: busy ready servers (busy beyond the
/// ready servers are the draining ones), ready servers, waiting requests (value·ns).
#[derive(Clone, Debug, Default)]
pub(super) struct Meter {
    since: SimTime,
    busy: i64,
    servers: i64,
    queue: i64,
    areas: [i128; 3],
}

impl Meter {
    /// The station's values from `now` on.
    #[inline]
    pub fn set(&mut self, now: SimTime, busy: i64, servers: i64, queue: i64) {
        self.flush(now);
        (self.busy, self.servers, self.queue) = (busy.min(servers), servers, queue);
    }
    fn flush(&mut self, now: SimTime) {
        let dt = (now.0 - self.since.0) as i128;
        self.areas[0] += self.busy as i128 * dt;
        self.areas[1] += self.servers as i128 * dt;
        self.areas[2] += self.queue as i128 * dt;
        self.since = now;
    }
    /// The integrals since the last take, and a new window from `now`.
    fn take(&mut self, now: SimTime) -> [i128; 3] {
        self.flush(now);
        std::mem::take(&mut self.areas)
    }
}

/// What a sync read, formatted only for an event.
struct Reading {
    name: &'static str,
    usage: Option<Usage>,
    /// A KEDA metric's value.
    value: Option<u64>,
    ready: u32,
}

impl Reading {
    /// `Utilization = 93` (percent), `QueuePerReplica = 2.500` (per ready replica), or the
    /// KEDA metric's value.
    fn text(&self) -> String {
        let (name, ready) = (self.name, self.ready as i64);
        match (self.value, self.usage) {
            (Some(v), _) => format!("{name} = {v}"),
            (None, Some(Usage::Resource { total, request, .. })) if ready > 0 => {
                format!("{name} = {}", (total * 100) / (request * ready))
            }
            (None, Some(Usage::Plain { total, .. })) if ready > 0 => {
                format!("{name} = {:.3}", total as f64 / 1000.0 / ready as f64)
            }
            _ => format!("{name}: no ready replica"),
        }
    }
}

pub(super) struct ScalerRt {
    pub name: String,
    station: u16,
    spr: u64,
    hpa: Hpa,
    /// Keyed draws of its replicas (by sequence number).
    key: SourceKey,
    next_seq: u64,
    ready: u32,
    /// Provisioning replicas by sequence number, with their ready timers.
    pending: BTreeMap<u64, TimerHandle>,
    /// When each still-warming ready replica became ready, oldest first.
    warming: VecDeque<SimTime>,
    /// The pending sync's generation (a `sync_period` change supersedes it).
    generation: u32,
    /// The pending KEDA check's generation (a `polling_interval` change supersedes it).
    keda_generation: u32,
    last_check: SimTime,
    activations: u64,
    to_zero: u64,
    /// A run-time change of the station's `servers` since the autoscaler's last step (it
    /// holds until the next one).
    pub overridden: bool,
    last_sync: SimTime,
    scale_ups: u64,
    scale_downs: u64,
    peak: u32,
    gauges: [GaugeId; 3],
}

#[derive(Default)]
pub(super) struct ScalersRt {
    pub list: Vec<ScalerRt>,
}

impl ScalersRt {
    pub fn new(sc: &Scenario, seed: u64, ctx: &mut Ctx<'_, Ev>) -> ScalersRt {
        let list = sc.autoscalers.iter().map(|a| {
            let st = sc.stations.iter().position(|s| s.name == a.station).expect("checked");
            let mut g = |leaf: &str| ctx.metrics.gauge(&format!("autoscaler.{}.{leaf}", a.name));
            let gauges = [g("desired"), g("ready"), g("provisioning")];
            let ready = sc.stations[st].servers.div_ceil(a.servers_per_replica) as u32;
            ScalerRt {
                name: a.name.clone(),
                station: st as u16,
                spr: a.servers_per_replica,
                hpa: Hpa::new(a),
                key: SourceKey::new(seed, name_id(&format!("autoscaler/{}", a.name))),
                next_seq: 0,
                ready,
                pending: BTreeMap::new(),
                warming: VecDeque::new(),
                generation: 0,
                keda_generation: 0,
                last_check: SimTime::ZERO,
                activations: 0,
                to_zero: 0,
                overridden: false,
                last_sync: SimTime::ZERO,
                scale_ups: 0,
                scale_downs: 0,
                peak: ready,
                gauges,
            }
        });
        ScalersRt { list: list.collect() }
    }

    /// A service starting now at an autoscaled station, stretched by its ready replicas'
    /// mean warm-up factor (`crate::autoscaler`: each replica's share of the capacity).
    pub fn warm_stretch(&mut self, a: u16, service: SimDuration, now: SimTime) -> SimDuration {
        let rt = &mut self.list[a as usize];
        while rt.warming.front().is_some_and(|&t| now - t >= rt.hpa.warmup) {
            rt.warming.pop_front();
        }
        if rt.warming.is_empty() || rt.ready == 0 {
            return service;
        }
        let extra: f64 = rt.warming.iter().map(|&t| rt.hpa.warm_factor(now - t) - 1.0).sum();
        let factor = 1.0 + extra / rt.ready as f64;
        if factor == 1.0 { service } else { SimDuration::from_ns_f64(service.0 as f64 * factor) }
    }
}

impl QueueingWorld {
    /// At the run's start: the station's servers as whole replicas, and each autoscaler's
    /// first sync, one period in.
    pub(super) fn scalers_start(&mut self, ctx: &mut Ctx<'_, Ev>) {
        for a in 0..self.scalers.list.len() {
            self.sync_servers(a as u16, ctx); // whole replicas
            self.schedule_sync(a as u16, ctx);
            if self.scalers.list[a].hpa.metric.is_keda() {
                self.schedule_keda(a as u16, ctx);
            }
            self.scaler_gauges(a as u16, ctx);
        }
    }

    fn schedule_keda(&mut self, a: u16, ctx: &mut Ctx<'_, Ev>) {
        let rt = &mut self.scalers.list[a as usize];
        rt.keda_generation += 1;
        let ev = Ev::KedaCheck { scaler: a, generation: rt.keda_generation };
        ctx.schedule_at((rt.last_check + rt.hpa.polling_interval).max(ctx.now()), ev);
    }

    /// A KEDA metric read at the instant: the station's waiting requests, and for
    /// `InFlight` those in service too.
    fn keda_value(&self, a: u16) -> u64 {
        let rt = &self.scalers.list[a as usize];
        let st = &self.upstreams.stations[rt.station as usize].st;
        match rt.hpa.metric {
            ScaleMetric::InFlight => st.queue_len() + st.busy(),
            _ => st.queue_len(),
        }
    }

    /// A KEDA check (`crate::autoscaler` KEDA): from zero to one on an active trigger, to
    /// zero after the cooldown.
    pub(super) fn on_keda_check(&mut self, a: u16, generation: u32, ctx: &mut Ctx<'_, Ev>) {
        if self.scalers.list[a as usize].keda_generation != generation {
            return; // superseded by a polling_interval change
        }
        let now = ctx.now();
        let value = self.keda_value(a);
        let rt = &mut self.scalers.list[a as usize];
        rt.last_check = now;
        let current = rt.ready + rt.pending.len() as u32;
        let (kind, desired, counter) = match rt.hpa.keda_check(now, current, value as f64) {
            KedaStep::Keep => return self.schedule_keda(a, ctx),
            KedaStep::Activate(n) => ("activate", n, &mut rt.activations),
            KedaStep::ToZero => ("scale_to_zero", 0, &mut rt.to_zero),
            KedaStep::ToMin(n) => ("scale_up", n, &mut rt.scale_ups),
        };
        *counter += 1;
        let metric = crate::params::ParamChoice::choice(&rt.hpa.metric);
        let component = format!("autoscaler.{}", rt.name);
        let from = format!("replicas = {current}");
        let to = format!("replicas = {desired} ({metric} = {value})");
        self.obs.events.push(ModelEvent { time: now, component, kind, from, to });
        self.scale_to(a, current, desired, ctx);
        self.scaler_gauges(a, ctx);
        self.schedule_keda(a, ctx);
    }

    fn schedule_sync(&mut self, a: u16, ctx: &mut Ctx<'_, Ev>) {
        let rt = &mut self.scalers.list[a as usize];
        rt.generation += 1;
        let ev = Ev::ScalerSync { scaler: a, generation: rt.generation };
        ctx.schedule_at((rt.last_sync + rt.hpa.sync_period).max(ctx.now()), ev);
    }

    /// A sync (`reconcileAutoscaler`): the metric over the period just ended, the replica
    /// calculator, the behaviour, and the replicas asked for or removed.
    pub(super) fn on_scaler_sync(&mut self, a: u16, generation: u32, ctx: &mut Ctx<'_, Ev>) {
        if self.scalers.list[a as usize].generation != generation {
            return; // superseded by a sync_period change
        }
        let now = ctx.now();
        let rt = &self.scalers.list[a as usize];
        let current = rt.ready + rt.pending.len() as u32;
        let (proposal, reading) = self.sync_proposal(a, now);
        let rt = &mut self.scalers.list[a as usize];
        let desired = rt.hpa.reconcile(now, current, proposal);
        rt.last_sync = now;
        if desired != current {
            let (kind, counter) = if desired > current {
                ("scale_up", &mut rt.scale_ups)
            } else {
                ("scale_down", &mut rt.scale_downs)
            };
            *counter += 1;
            let component = format!("autoscaler.{}", rt.name);
            let from = format!("replicas = {current}");
            let to = format!("replicas = {desired} ({})", reading.text());
            self.obs.events.push(ModelEvent { time: now, component, kind, from, to });
            self.scale_to(a, current, desired, ctx);
        }
        self.schedule_sync(a, ctx);
        self.scaler_gauges(a, ctx);
    }

    /// The replica calculator's proposal at a sync (`None`: no metric) and the metric as an
    /// event shows it (`Utilization = 93`: percent; per replica, or the KEDA metric's
    /// value).
    fn sync_proposal(&mut self, a: u16, now: SimTime) -> (Option<u32>, Reading) {
        let rt = &self.scalers.list[a as usize];
        let station = &mut self.upstreams.stations[rt.station as usize];
        let [busy, servers, queue] = station.meter.as_mut().expect("autoscaled").take(now);
        let width = (now.0 - rt.last_sync.0) as i128;
        let (ready, pending) = (rt.ready, rt.pending.len() as u32);
        let (current, tolerance) = (ready + pending, rt.hpa.tolerance);
        let name = crate::params::ParamChoice::choice(&rt.hpa.metric);
        let target = (libm::round(rt.hpa.target * 1000.0) as i64).max(1);
        let usage = match rt.hpa.metric {
            // Each replica requests 1000 m per server; the ready pods' usage summed.
            ScaleMetric::Utilization => (servers > 0).then(|| {
                let request = 1000 * rt.spr as i64;
                let total = (request as i128 * ready as i128 * busy / servers) as i64;
                Usage::Resource { total, request, target: rt.hpa.target }
            }),
            // The mean queue over the period, in milli-requests, over the ready replicas.
            ScaleMetric::QueuePerReplica => {
                (width > 0).then(|| Usage::Plain { total: (1000 * queue / width) as i64, target })
            }
            // KEDA's metrics, read at the instant: the HPA's external per-pod calculator.
            ScaleMetric::QueueLength | ScaleMetric::InFlight => {
                let value = self.keda_value(a);
                let total = 1000 * value as i64;
                let p = external_replica_count(current, total, target, tolerance);
                return (p, Reading { name, usage: None, value: Some(value), ready });
            }
        };
        let p = usage.and_then(|u| replica_count(current, ready, pending, 0, u, tolerance));
        (p, Reading { name, usage, value: None, ready })
    }

    /// Asks for `desired − current` replicas or removes `current − desired`.
    fn scale_to(&mut self, a: u16, current: u32, desired: u32, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let peak = &mut self.scalers.list[a as usize].peak;
        *peak = (*peak).max(desired);
        for _ in current..desired {
            let rt = &mut self.scalers.list[a as usize];
            let seq = rt.next_seq;
            rt.next_seq += 1;
            let mut draws = rt.key.request(seq).attribute(attr::PROVISIONING);
            let delay = rt.hpa.provisioning_delay.sample(&mut draws);
            if delay == SimDuration::ZERO {
                self.replica_ready(a, now);
            } else {
                let h =
                    ctx.timer_at(now + delay, Ev::ReplicaReady { scaler: a, replica: seq as u32 });
                self.scalers.list[a as usize].pending.insert(seq, h);
            }
        }
        let rt = &mut self.scalers.list[a as usize];
        for _ in desired..current {
            // The newest provisioning replica first, then the most recently ready.
            if let Some((_, h)) = rt.pending.pop_last() {
                ctx.cancel(h);
            } else {
                rt.ready -= 1;
                rt.warming.pop_back();
            }
        }
        self.sync_servers(a, ctx);
    }

    fn replica_ready(&mut self, a: u16, now: SimTime) {
        let rt = &mut self.scalers.list[a as usize];
        rt.ready += 1;
        if rt.hpa.warmup > SimDuration::ZERO && rt.hpa.warmup_multiplier > 1.0 {
            rt.warming.push_back(now);
        }
    }

    pub(super) fn on_replica_ready(&mut self, a: u16, replica: u32, ctx: &mut Ctx<'_, Ev>) {
        if self.scalers.list[a as usize].pending.remove(&(replica as u64)).is_none() {
            return; // cancelled by a scale-down (its timer was cancelled too)
        }
        self.replica_ready(a, ctx.now());
        self.sync_servers(a, ctx);
        self.scaler_gauges(a, ctx);
    }

    /// The station's servers are the ready replicas' servers: more start queued work, fewer
    /// drain (busy servers finish their calls); the gauges and the meter follow.
    fn sync_servers(&mut self, a: u16, ctx: &mut Ctx<'_, Ev>) {
        let rt = &mut self.scalers.list[a as usize];
        rt.overridden = false;
        let st = rt.station;
        self.upstreams.stations[st as usize].st.servers = rt.ready as u64 * rt.spr;
        while let Some((job, _)) = self.upstreams.stations[st as usize].st.start_next(ctx.now()) {
            self.start_service(st, job, ctx);
        }
        if self.station_drops(st, ctx) {
            self.resume_woken(ctx);
        }
        self.update_station_gauges(st, ctx);
    }

    fn scaler_gauges(&self, a: u16, ctx: &mut Ctx<'_, Ev>) {
        let rt = &self.scalers.list[a as usize];
        let now = ctx.now();
        let (ready, pending) = (rt.ready as i64, rt.pending.len() as i64);
        for (g, v) in rt.gauges.iter().zip([ready + pending, ready, pending]) {
            ctx.metrics.set(*g, now, v);
        }
    }

    /// A run-time change of `autoscaler.<n>.*`: a new `sync_period` reschedules the next
    /// sync one new period after the last.
    pub(super) fn set_autoscaler(
        &mut self,
        a: usize,
        param: &str,
        v: ParamValue,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        use crate::params::ApplyParam as _;
        let rt = &mut self.scalers.list[a];
        let before = (rt.hpa.sync_period, rt.hpa.polling_interval);
        rt.hpa.apply_param(param, v, ctx.now())?;
        if rt.hpa.sync_period != before.0 {
            self.schedule_sync(a as u16, ctx); // one new period after the last sync, or now
        }
        let rt = &self.scalers.list[a];
        if rt.hpa.metric.is_keda() && rt.hpa.polling_interval != before.1 {
            self.schedule_keda(a as u16, ctx); // likewise for KEDA's checks
        }
        Ok(())
    }

    /// Each autoscaler's state for a session's inspector: replicas (desired) against
    /// `max_replicas`, and its ready and provisioning replicas.
    pub(super) fn scaler_states(&self) -> Vec<crate::observe::ComponentState> {
        use crate::components::{ComponentId, ComponentKind};
        use crate::observe::{ComponentState, InFlight};
        let states = self.scalers.list.iter().enumerate().map(|(i, rt)| {
            let id = ComponentId::at(ComponentKind::Autoscaler, i);
            let mut c = ComponentState::component(id, &rt.name);
            let replicas = rt.ready as u64 + rt.pending.len() as u64;
            c.in_flight = Some(InFlight { in_use: replicas, limit: Some(rt.hpa.max as u64) });
            c.figures.push(("ready", rt.ready as f64));
            c.figures.push(("provisioning", rt.pending.len() as f64));
            c
        });
        states.collect()
    }

    /// `autoscaler.<n>.*` summary columns.
    pub(super) fn scaler_summary(&self, out: &mut Summary) {
        for rt in &self.scalers.list {
            let n = &rt.name;
            out.push_u64(format!("autoscaler.{n}.scale_ups"), rt.scale_ups);
            out.push_u64(format!("autoscaler.{n}.scale_downs"), rt.scale_downs);
            out.push_u64(format!("autoscaler.{n}.ready_end"), rt.ready as u64);
            out.push_u64(format!("autoscaler.{n}.provisioning_end"), rt.pending.len() as u64);
            out.push_u64(format!("autoscaler.{n}.peak_replicas"), rt.peak as u64);
            out.push_u64(format!("autoscaler.{n}.activations"), rt.activations);
            out.push_u64(format!("autoscaler.{n}.scale_to_zeros"), rt.to_zero);
        }
    }

    /// The module's invariant (module doc).
    pub(super) fn scaler_violations(&self, out: &mut Vec<String>) {
        for rt in &self.scalers.list {
            let servers = self.upstreams.stations[rt.station as usize].st.servers;
            if !rt.overridden && servers != rt.ready as u64 * rt.spr {
                out.push(format!(
                    "autoscaler {}: station has {servers} servers, {} ready replicas × {}",
                    rt.name, rt.ready, rt.spr
                ));
            }
            if rt.warming.len() > rt.ready as usize {
                out.push(format!("autoscaler {}: more warming than ready replicas", rt.name));
            }
        }
    }
}
