//! The world seen from outside while it runs (`crate::observe`): component states, the
//! per-frame snapshot, model events so far, the parameter values in force. Read-only: every
//! method takes `&self`.

use super::*;
use crate::components::{ComponentId, ComponentKind as K};
use crate::observe::{ComponentState, InFlight, Snapshot, Throughput, governor_state};

impl QueueingWorld {
    /// State changes recorded so far, in the order they happened (a live session drains
    /// them by position; [`QueueingWorld::take_events`] hands them over at the end).
    pub fn model_events(&self) -> &[ModelEvent] {
        &self.obs.events
    }

    /// The value in force of a registered parameter (the scenario's value until a run-time
    /// change replaced it; a refused change leaves the old value).
    pub fn param_in_force(&self, path: &str) -> Option<&ParamValue> {
        self.params_now.get(path)
    }

    /// Every parameter's value in force, by path.
    pub fn params_in_force(&self) -> impl Iterator<Item = (&str, &ParamValue)> {
        self.params_now.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Calls in the system now.
    pub fn live_calls(&self) -> u64 {
        self.calls.live
    }

    /// The state of every component at `now`, in a stable order.
    pub fn component_states(&self, now: SimTime) -> Vec<ComponentState> {
        let mut out: Vec<ComponentState> = (0..self.govs.len())
            .map(|i| governor_state(i, &self.govs.names[i], &self.govs.arena[i], now))
            .collect();
        for (i, s) in self.upstreams.stations.iter().enumerate() {
            let mut c = ComponentState::component(ComponentId::at(K::Station, i), &s.name);
            c.in_flight = Some(InFlight { in_use: s.st.busy(), limit: Some(s.st.servers) });
            c.waiting = s.st.queue_len();
            if let Some(cap) = s.st.capacity {
                c.figures.push(("queue_capacity", cap as f64));
            }
            out.push(c);
        }
        for (i, g) in self.upstreams.gpus[..self.upstreams.gpu_servers()].iter().enumerate() {
            let mut c = ComponentState::component(ComponentId::at(K::GpuServer, i), &g.name);
            let limit = g.server.spec().max_num_seqs;
            c.in_flight = Some(InFlight { in_use: g.server.running(), limit: Some(limit) });
            c.waiting = g.server.waiting();
            c.figures.push(("kv_used_tokens", g.server.kv_used_tokens() as f64));
            if let Some((running, cached, _)) = g.server.kv_blocks() {
                c.figures.push(("kv_blocks_running", running as f64));
                c.figures.push(("kv_blocks_cached", cached as f64));
            }
            out.push(c);
        }
        for (i, p) in self.upstreams.pools.iter().enumerate() {
            let mut c = ComponentState::component(ComponentId::at(K::GpuPool, i), &p.name);
            let reps = &self.upstreams.gpus[p.base as usize..][..p.replicas as usize];
            let sum = |f: &dyn Fn(&gpu::GpuRt) -> u64| reps.iter().map(f).sum::<u64>();
            let limit = sum(&|g| g.server.spec().max_num_seqs);
            c.in_flight =
                Some(InFlight { in_use: sum(&|g| g.server.running()), limit: Some(limit) });
            c.waiting = sum(&|g| g.server.waiting());
            c.figures.push(("replicas", f64::from(p.replicas)));
            c.figures.push(("kv_used_tokens", sum(&|g| g.server.kv_used_tokens()) as f64));
            out.push(c);
        }
        for (i, (name, q)) in self.upstreams.quotas.iter().enumerate() {
            let mut c = ComponentState::component(ComponentId::at(K::Quota, i), name);
            c.in_flight = Some(InFlight { in_use: q.in_flight(), limit: q.max_concurrency() });
            c.tokens_left = q.remaining_tokens().map(|t| t as i64);
            if let Some(r) = q.remaining_requests() {
                c.figures.push(("requests_left", r as f64));
            }
            out.push(c);
        }
        for (i, p) in self.upstreams.conns.iter().enumerate() {
            let mut c = ComponentState::component(ComponentId::at(K::ConnPool, i), &p.name);
            let limit = p.pool.spec().max_total;
            c.in_flight = Some(InFlight { in_use: p.pool.leased(), limit: Some(limit) });
            c.waiting = p.pool.pending();
            c.figures.push(("idle", p.pool.idle() as f64));
            out.push(c);
        }
        for (ai, a) in self.entry_path.apps.iter().enumerate() {
            for (k, inst) in a.instances.iter().enumerate() {
                let id = ComponentId::part_of(K::App, ai, k);
                let mut c = ComponentState::component(id, &format!("{}.{k}", a.spec.name));
                c.queues = self.instance_queues(inst);
                c.waiting = c.queues.iter().map(|(_, n)| n).sum();
                if let Some(p) = &inst.pool {
                    let busy = (0..p.pools()).map(|i| p.pool(i).busy()).sum();
                    let max = (0..p.pools()).map(|i| p.pool(i).spec().maximum_pool_size).sum();
                    c.in_flight = Some(InFlight { in_use: busy, limit: Some(max) });
                    c.figures.push(("threads_alive", p.alive() as f64));
                }
                c.figures.push(("outstanding", inst.outstanding as f64));
                out.push(c);
            }
        }
        out.extend(self.scaler_states());
        out
    }

    /// Per class: requests queued at one app instance (its dispatcher's class queue, or
    /// without a dispatcher the requests of that class in its pool's own queue).
    fn instance_queues(&self, inst: &entry::InstanceRt) -> Vec<(String, u64)> {
        self.traffic
            .classes
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let n = match &inst.disp {
                    Some(d) => d.depth(ClassId(k as u16)) as u64,
                    None => inst.pool_waiting[k],
                };
                (c.name.clone(), n)
            })
            .collect()
    }

    /// One component's state by path (`None`: no such component).
    pub fn component_state(&self, path: &str, now: SimTime) -> Option<ComponentState> {
        if let Some(i) = self.govs.names.iter().position(|n| n == path) {
            return Some(governor_state(i, path, &self.govs.arena[i], now));
        }
        self.component_states(now).into_iter().find(|c| c.path == path)
    }

    /// What a GUI draws per frame (`events`: the engine's event count, passed in).
    pub fn snapshot(&self, now: SimTime, events: u64) -> Snapshot {
        let components = self.component_states(now);
        let mut class_queued: Vec<(String, u64)> =
            self.traffic.classes.iter().map(|c| (c.name.clone(), 0)).collect();
        for c in components.iter().filter(|c| c.is_app_instance()) {
            for (k, (_, n)) in c.queues.iter().enumerate() {
                class_queued[k].1 += n;
            }
        }
        let throughput = self
            .traffic
            .sources
            .iter()
            .map(|s| Throughput {
                path: format!("source.{}", s.name),
                offered: s.stats.offered,
                ended: s.stats.ended,
                success: s.stats.success,
                degraded: s.stats.degraded.iter().sum(),
                failed: s.stats.failed.iter().sum(),
                rejected: s.stats.rejected.iter().sum(),
            })
            .collect();
        Snapshot {
            now,
            events,
            live_requests: self.reqs.live,
            live_calls: self.calls.live,
            class_queued,
            components,
            throughput,
        }
    }
}
