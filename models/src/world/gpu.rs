//! GPU-backed inference servers as upstreams: a call becomes one sequence (or one per
//! member of a batch), the server's step loop runs as `GpuStep` events, and a call is
//! answered when all its sequences have finished.
//!
//! Architecture invariant: the server steps whenever it has work and no step is in flight
//! (work conservation of the step loop), and every sequence submitted ends exactly once —
//! finished, or cancelled with its call when the server cancels abandoned work.

use super::*;
use crate::gpu::{
    PromptPrefix, SeqEvent, SeqRequest, Server, ServerSpec, SubmitDecision, SubmitRejection,
};
use crate::prompt_prefix::{RequestScopes, prompt_prefix};
use std::collections::BTreeMap;

pub(super) struct GpuRt {
    pub name: String,
    /// Where its series and summary columns live: `gpu_server.<name>`, or a pool replica's
    /// `gpu_pool.<pool>.r<i>`.
    pub path: String,
    pub server: Server,
    /// Sequence → (call slot, job id, submitted at).
    seqs: BTreeMap<u64, (u32, u64, SimTime)>,
    /// Job at the server → its sequences not yet finished.
    jobs: BTreeMap<u64, Vec<u64>>,
    next_seq: u64,
    /// Scratch of `on_gpu_step` (a step's events, the calls it completed), kept between
    /// steps so a step allocates nothing.
    events: Vec<SeqEvent>,
    done: Vec<(u32, u64)>,
    running: GaugeId,
    waiting: GaugeId,
    kv_used: GaugeId,
    ttft: HistId,
    /// With prefix caching: its series.
    prefix: Option<PrefixSeries>,
    /// Calls answered, and work finished for calls their client had abandoned.
    pub answered: u64,
    pub abandoned_done: u64,
    pub rejected_429: u64,
}

impl GpuRt {
    pub fn new(spec: &ServerSpec, ctx: &mut Ctx<'_, Ev>) -> GpuRt {
        Self::at(spec, spec.name.clone(), format!("gpu_server.{}", spec.name), ctx)
    }

    /// A server named `name` whose series live under `p`.
    pub fn at(spec: &ServerSpec, name: String, p: String, ctx: &mut Ctx<'_, Ev>) -> GpuRt {
        GpuRt {
            name,
            server: Server::new(spec),
            seqs: BTreeMap::new(),
            jobs: BTreeMap::new(),
            next_seq: 0,
            events: Vec::new(),
            done: Vec::new(),
            running: ctx.metrics.gauge(&format!("{p}.running")),
            waiting: ctx.metrics.gauge(&format!("{p}.waiting")),
            kv_used: ctx.metrics.gauge(&format!("{p}.kv_used_tokens")),
            ttft: ctx.metrics.histogram(&format!("{p}.ttft")),
            prefix: spec.enable_prefix_caching.then(|| PrefixSeries::new(&p, ctx)),
            path: p,
            answered: 0,
            abandoned_done: 0,
            rejected_429: 0,
        }
    }

    /// Calls at the server (sent, not yet answered or cancelled).
    pub fn outstanding(&self) -> u64 {
        self.jobs.len() as u64
    }

    /// Does the server cache prompt prefixes?
    pub fn prefix_caching(&self) -> bool {
        self.prefix.is_some()
    }

    /// Sequences the world tracks = sequences the server holds.
    pub fn check(&self) -> Option<String> {
        // The server's own invariants (checked after every step only in debug builds).
        self.server.check_invariants();
        let held = (self.server.running() + self.server.waiting()) as usize;
        let in_jobs: usize = self.jobs.values().map(Vec::len).sum();
        (held != self.seqs.len() || in_jobs != self.seqs.len()).then(|| {
            format!(
                "I35 GPU sequences: server {} holds {held}, world tracks {} ({in_jobs} by call)",
                self.name,
                self.seqs.len()
            )
        })
    }
}

impl QueueingWorld {
    /// Sends call `slot` (job `job`) to GPU server `g` as `batch` sequences.
    pub(super) fn send_to_gpu(&mut self, slot: u32, g: u16, batch: u32, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let c = self.calls.slots.get(slot).expect("live call");
        let r = self.reqs.slots.get(c.req).expect("live request");
        let job = c.job_id();
        let (prompt, output) =
            (Self::prompt_of(c, r).unwrap_or(0) as u64, r.tokens.output.unwrap_or(0) as u64);
        let prefix = match self.upstreams.gpus[g as usize].prefix_caching() {
            true => self.prefix_of(r),
            false => PromptPrefix::NONE,
        };
        if r.arrival >= self.warmup {
            self.traffic.sources[r.source as usize].upstream_calls += 1;
        }
        let gpu = &mut self.upstreams.gpus[g as usize];
        let room = gpu.server.spec().max_queue.saturating_sub(gpu.server.waiting());
        if room < batch as u64 {
            gpu.rejected_429 += 1;
            self.answer_with(slot, Outcome::Rejected(Reason::Upstream429), None, ctx);
            return;
        }
        let mut ids = Vec::with_capacity(batch as usize);
        for _ in 0..batch {
            let id = gpu.next_seq;
            gpu.next_seq += 1;
            let seq = SeqRequest { id, prompt_tokens: prompt, output_tokens: output, prefix };
            match gpu.server.submit(seq, now) {
                SubmitDecision::Queued => {
                    gpu.seqs.insert(id, (slot, job, now));
                    ids.push(id);
                }
                SubmitDecision::Rejected(why) => {
                    // Identical sequences: the first refusal comes before any is queued.
                    assert!(ids.is_empty(), "a batch's sequences are refused together");
                    let o = match why {
                        SubmitRejection::QueueFull => Outcome::Rejected(Reason::Upstream429),
                        // vLLM's 400: a prompt with no tokens, or longer than the model.
                        SubmitRejection::TooLong | SubmitRejection::Empty => {
                            Outcome::Failed(Reason::BusinessError)
                        }
                    };
                    self.answer_with(slot, o, None, ctx);
                    return;
                }
            }
        }
        gpu.jobs.insert(job, ids);
        let timeout = self.call_timeout(slot);
        if timeout > SimDuration::ZERO {
            let h = ctx.timer_at(now + timeout, Ev::UpstreamTimeout { slot, id: job });
            self.calls.slots.get_mut(slot).expect("live call").upstream_timer = Some(h);
        }
        self.kick_gpu(g, ctx);
    }

    /// How request `r`'s prompt begins, by its source's `prefix` list (none: its own).
    pub(super) fn prefix_of(&self, r: &Req) -> PromptPrefix {
        let segments = &self.traffic.sources[r.source as usize].traffic.prefix;
        if segments.is_empty() {
            return PromptPrefix::NONE;
        }
        let scopes = RequestScopes {
            source: r.source,
            seq: r.seq,
            class: r.class,
            user: r.user,
            key: r.key,
            history: r.tokens.history.unwrap_or(0),
        };
        prompt_prefix(segments, &scopes)
    }

    /// Starts a step if the server has work and none is in flight.
    pub(super) fn kick_gpu(&mut self, g: u16, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let gpu = &mut self.upstreams.gpus[g as usize];
        if gpu.server.step_end().is_none()
            && gpu.server.has_work()
            && let Some(plan) = gpu.server.start_step(now)
        {
            ctx.schedule_at(plan.end, Ev::GpuStep { gpu: g });
        }
        ctx.metrics.set(gpu.running, now, gpu.server.running() as i64);
        ctx.metrics.set(gpu.waiting, now, gpu.server.waiting() as i64);
        ctx.metrics.set(gpu.kv_used, now, gpu.server.kv_used_tokens() as i64);
        if let (Some(series), Some(blocks)) = (&mut gpu.prefix, gpu.server.kv_blocks()) {
            series.update(blocks, now, ctx);
        }
    }

    pub(super) fn on_gpu_step(&mut self, g: u16, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let gpu = &mut self.upstreams.gpus[g as usize];
        let (mut evs, mut done) = (std::mem::take(&mut gpu.events), std::mem::take(&mut gpu.done));
        gpu.server.finish_step(now, &mut evs);
        for e in evs.drain(..) {
            let gpu = &mut self.upstreams.gpus[g as usize];
            match e {
                SeqEvent::FirstToken { id, at } => {
                    let &(slot, job, sent) = gpu.seqs.get(&id).expect("a sequence of ours");
                    ctx.metrics.record(gpu.ttft, (at - sent).0);
                    let live = self.calls.slots.get(slot).filter(|c| c.awaits(job));
                    if let Some(req) = live.map(|c| c.req) {
                        self.request_started(req, at);
                    }
                }
                SeqEvent::Finished { id, .. } => {
                    let (slot, job, _) = gpu.seqs.remove(&id).expect("a sequence of ours");
                    let left = gpu.jobs.get_mut(&job).expect("its call's sequences");
                    left.retain(|s| *s != id);
                    if left.is_empty() {
                        gpu.jobs.remove(&job);
                        done.push((slot, job));
                    }
                }
                SeqEvent::Token { .. } | SeqEvent::Preempted { .. } => {}
            }
        }
        self.kick_gpu(g, ctx);
        for (slot, job) in done.drain(..) {
            let Some(c) = self.calls.slots.get_mut(slot).filter(|c| c.awaits(job)) else {
                self.upstreams.gpus[g as usize].abandoned_done += 1;
                continue;
            };
            if let Some(h) = c.upstream_timer.take() {
                ctx.cancel(h);
            }
            self.upstreams.gpus[g as usize].answered += 1;
            self.answer_with(slot, Outcome::Success, None, ctx);
        }
        let gpu = &mut self.upstreams.gpus[g as usize];
        (gpu.events, gpu.done) = (evs, done);
        self.resume_woken(ctx);
    }

    /// The client gave up on job `job` at GPU server `g`: with cancellation its sequences
    /// are dropped (KV and slots freed), else they run on as abandoned work.
    pub(super) fn gpu_abandon(&mut self, g: u16, job: u64, ctx: &mut Ctx<'_, Ev>) {
        let gpu = &mut self.upstreams.gpus[g as usize];
        if !gpu.server.spec().cancellation {
            return;
        }
        for id in gpu.jobs.remove(&job).unwrap_or_default() {
            let cancelled = gpu.server.cancel(id);
            assert!(cancelled, "a tracked sequence is at the server");
            gpu.seqs.remove(&id);
        }
        self.kick_gpu(g, ctx);
    }
}

/// The series of a server with prefix caching (write-only: nothing reads them back):
/// blocks held by running sequences and cached free blocks (gauges); tokens looked up and
/// found cached, and evictions (counters, advanced by what the pool counted since).
struct PrefixSeries {
    blocks_running: GaugeId,
    blocks_cached: GaugeId,
    query_tokens: CounterId,
    hit_tokens: CounterId,
    evictions: CounterId,
    seen: crate::gpu::PrefixStats,
}

impl PrefixSeries {
    fn new(p: &str, ctx: &mut Ctx<'_, Ev>) -> PrefixSeries {
        let m = &mut *ctx.metrics;
        PrefixSeries {
            blocks_running: m.gauge(&format!("{p}.kv_blocks_running")),
            blocks_cached: m.gauge(&format!("{p}.kv_blocks_cached")),
            query_tokens: m.counter(&format!("{p}.prefix_query_tokens")),
            hit_tokens: m.counter(&format!("{p}.prefix_hit_tokens")),
            evictions: m.counter(&format!("{p}.prefix_evictions")),
            seen: crate::gpu::PrefixStats::default(),
        }
    }

    fn update(
        &mut self,
        (running, cached, now_stats): (u64, u64, crate::gpu::PrefixStats),
        now: SimTime,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        let m = &mut *ctx.metrics;
        m.set(self.blocks_running, now, running as i64);
        m.set(self.blocks_cached, now, cached as i64);
        m.add(self.query_tokens, now_stats.query_tokens - self.seen.query_tokens);
        m.add(self.hit_tokens, now_stats.hit_tokens - self.seen.hit_tokens);
        m.add(self.evictions, now_stats.evictions - self.seen.evictions);
        self.seen = now_stats;
    }
}

impl QueueingWorld {
    /// The summary columns of a server with prefix caching (whole run, like its other
    /// counters): prompt tokens prefilled (those not found cached, recomputations
    /// included), the share of admitted tokens and of admissions that found a cached
    /// prefix, the tokens found, evictions, and the blocks held at the end.
    pub(super) fn prefix_summary(
        p: &str,
        prefill_tokens: u64,
        (running, cached, k): (u64, u64, crate::gpu::PrefixStats),
        out: &mut Summary,
    ) {
        let share = |a: u64, b: u64| if b == 0 { f64::NAN } else { a as f64 / b as f64 };
        out.push_u64(format!("{p}.prefill_tokens"), prefill_tokens);
        out.push_f64(format!("{p}.prefix_hit_rate"), share(k.hit_tokens, k.query_tokens));
        out.push_f64(format!("{p}.prefix_request_hit_rate"), share(k.hit_lookups, k.lookups));
        out.push_u64(format!("{p}.prefix_hit_tokens"), k.hit_tokens);
        out.push_u64(format!("{p}.prefix_evictions"), k.evictions);
        out.push_u64(format!("{p}.kv_blocks_running_end"), running);
        out.push_u64(format!("{p}.kv_blocks_cached_end"), cached);
    }
}
