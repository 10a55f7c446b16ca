//! GPU pools on the running world (`crate::gpu::GpuPoolSpec`): a pool's replicas are GPU
//! servers of the upstreams' `gpus` (after the scenario's own GPU servers, each pool's
//! replicas in a row), and its router picks one when a call is sent; from then on the call
//! is the replica's, exactly as a call to a GPU server (`world/gpu.rs`).
//!
//! Architecture invariant: a call's upstream is resolved to one replica when it is sent
//! (`Upstream::Pool` never stays on a call), and the router sees the replicas as they are
//! at that instant. API boundary: [`QueueingWorld::route_to_pool`] (the call path);
//! [`PoolRt`] is built in `world/build.rs`, reported in `world/report.rs`.

use super::*;
use crate::gpu::{GpuPoolSpec, ReplicaView, RequestView, Router, ServerSpec, prompt_block_hashes};
use sim_core::rng::mix64;

pub(super) struct PoolRt {
    pub name: String,
    /// Its first replica's index in the upstreams' `gpus`.
    pub base: u16,
    pub replicas: u16,
    pub router: Router,
    /// Calls routed to each replica.
    pub picks: Vec<u64>,
    block_size: u64,
}

impl PoolRt {
    /// The pool and its replicas (GPU servers whose series live under
    /// `gpu_pool.<name>.r<i>`), the first at `gpus[base]`.
    pub fn new(
        spec: &GpuPoolSpec,
        base: usize,
        ctx: &mut Ctx<'_, Ev>,
    ) -> (PoolRt, Vec<gpu::GpuRt>) {
        let n = spec.replicas as usize;
        let replicas = (0..n)
            .map(|i| {
                let name = format!("{}.r{i}", spec.name);
                let server = ServerSpec { name: name.clone(), ..spec.server.clone() };
                gpu::GpuRt::at(&server, name, format!("gpu_pool.{}.r{i}", spec.name), ctx)
            })
            .collect();
        let pool = PoolRt {
            name: spec.name.clone(),
            base: u16::try_from(base).expect("checked: replicas fit the GPU index"),
            replicas: n as u16,
            router: Router::new(&spec.router, n, spec.index_capacity, spec.queue_threshold),
            picks: vec![0; n],
            block_size: spec.server.block_size,
        };
        (pool, replicas)
    }
}

impl QueueingWorld {
    /// Builds the scenario's GPU pools: their replicas join `gpus` (and their arrival
    /// counters the series) after the scenario's GPU servers, registered last, so a
    /// scenario without pools registers nothing more.
    pub(super) fn build_pools(&mut self, sc: &Scenario, ctx: &mut Ctx<'_, Ev>) {
        for spec in &sc.gpu_pools {
            let (pool, reps) = PoolRt::new(spec, self.upstreams.gpus.len(), ctx);
            for g in &reps {
                let arrivals = ctx.metrics.counter(&format!("{}.arrivals", g.path));
                self.obs.series.gpus.push(arrivals);
            }
            self.upstreams.gpus.extend(reps);
            self.upstreams.pools.push(pool);
        }
    }

    /// The replica (its index in `gpus`) pool `p`'s router picks for call `slot`.
    pub(super) fn route_to_pool(&mut self, slot: u32, p: u16) -> u16 {
        let c = self.calls.slots.get(slot).expect("live call");
        let r = self.reqs.slots.get(c.req).expect("live request");
        let pool = &self.upstreams.pools[p as usize];
        let policy = pool.router.policy();
        let hashes = if policy.needs_hashes() {
            let prefix = self.prefix_of(r);
            let prompt = Self::prompt_of(c, r).unwrap_or(0) as u64;
            let own = mix64((u64::from(r.source) << 48) ^ r.seq);
            prompt_block_hashes(&prefix, prompt, pool.block_size, own)
        } else {
            Vec::new()
        };
        let session = [r.user, r.key].into_iter().find(|&s| s != 0);
        let precise = policy.needs_precise();
        let (base, n) = (pool.base as usize, pool.replicas as usize);
        let views: Vec<ReplicaView> = self.upstreams.gpus[base..base + n]
            .iter()
            .map(|g| ReplicaView {
                outstanding: g.outstanding(),
                waiting: g.server.waiting(),
                kv_usage: g.server.kv_used_tokens() as f64
                    / g.server.spec().kv_cache_tokens.max(1) as f64,
                cached_blocks: if precise { g.server.cached_prefix_blocks(&hashes) } else { 0 },
            })
            .collect();
        let pool = &mut self.upstreams.pools[p as usize];
        let i = pool.router.pick(&RequestView { hashes: &hashes, session }, &views);
        pool.picks[i] += 1;
        (base + i) as u16
    }

    /// A pool's summary columns: calls routed to each replica and, with prefix caching,
    /// the pool's prefix hit rate (tokens found cached ÷ tokens looked up, over its
    /// replicas; each replica's own columns are under `gpu_pool.<name>.r<i>`).
    pub(super) fn pool_summary(&self, out: &mut Summary) {
        for pool in &self.upstreams.pools {
            let p = format!("gpu_pool.{}", pool.name);
            for (i, n) in pool.picks.iter().enumerate() {
                out.push_u64(format!("{p}.r{i}.picks"), *n);
            }
            let reps = &self.upstreams.gpus[pool.base as usize..][..pool.replicas as usize];
            let (mut hit, mut query) = (0u64, 0u64);
            for (_, _, k) in reps.iter().filter_map(|g| g.server.kv_blocks()) {
                (hit, query) = (hit + k.hit_tokens, query + k.query_tokens);
            }
            if reps.iter().any(|g| g.prefix_caching()) {
                let rate = if query == 0 { f64::NAN } else { hit as f64 / query as f64 };
                out.push_f64(format!("{p}.prefix_hit_rate"), rate);
            }
        }
    }
}
