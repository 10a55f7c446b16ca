//! Forming and completing the steps of a [`Server`]: the batch policy.
//!
//! Without chunked prefill (vLLM V0's default scheduler) a step admits waiting prompts
//! first, FCFS, whole, while `max_num_seqs`, the KV budget and `max_num_batched_tokens`
//! allow (a prompt longer than the step budget is admitted alone), and is then a
//! prefill-only step; only when nothing can be admitted does it decode every running
//! sequence. With chunked prefill (vLLM V1) every step decodes the running sequences first,
//! then continues the prompts being prefilled, then admits waiting prompts FCFS, in chunks
//! that fill the rest of `max_num_batched_tokens`: decodes go on while a long prompt is
//! prefilled over several steps.
//!
//! Architecture invariant: admission is strictly FCFS (the head of the queue blocks the
//! rest, as in vLLM); the KV for a decode is charged when its step starts, and when it does
//! not fit the newest running sequence is preempted, possibly the decoding one itself.
//! A step's work is marked on the running sequences themselves ([`Seq::work`]); its events
//! are reported in the order the step was formed: decodes (oldest first), then prefills
//! (oldest first).
//!
//! API boundary: [`Server::start_step`] and [`Server::finish_step`], called by the world.

use super::prefix::BlockPool;
use super::server::{Seq, SeqEvent, Server, StepPlan, Work};
use super::step::StepBatch;
use sim_core::SimTime;

impl Server {
    /// Forms the next batch at `now` (no step may be in flight). `None` when the server
    /// holds no sequence; otherwise the world calls [`Server::finish_step`] at `plan.end`.
    pub fn start_step(&mut self, now: SimTime) -> Option<StepPlan> {
        assert!(self.in_flight.is_none(), "a step is already in flight");
        let mut batch = StepBatch::EMPTY;
        let budget = self.spec.max_num_batched_tokens;
        let mut prefills = 0u64;
        if self.spec.enable_chunked_prefill {
            let decodes = self.schedule_decodes(budget, now, &mut batch);
            let mut left = budget - decodes;
            // Prompts already being prefilled, oldest first.
            for i in 0..self.running.len() {
                if left == 0 {
                    break;
                }
                let rest = self.running[i].target - self.running[i].prefilled;
                if rest > 0 {
                    let chunk = rest.min(left);
                    self.schedule_prefill(i, chunk, &mut batch);
                    prefills += 1;
                    left -= chunk;
                }
            }
            while left > 0 {
                let Some(i) = self.admit_head() else { break };
                let chunk = (self.running[i].target - self.running[i].prefilled).min(left);
                self.schedule_prefill(i, chunk, &mut batch);
                prefills += 1;
                left -= chunk;
            }
        } else {
            let mut tokens = 0u64;
            while let Some(need) = self.head_prefill() {
                if tokens > 0 && tokens + need > budget {
                    break;
                }
                let Some(i) = self.admit_head() else { break };
                let chunk = self.running[i].target - self.running[i].prefilled;
                self.schedule_prefill(i, chunk, &mut batch);
                prefills += 1;
                tokens += chunk;
            }
            if prefills == 0 {
                self.schedule_decodes(u64::MAX, now, &mut batch);
            }
        }
        let seqs = batch.decode_seqs + prefills;
        if seqs == 0 {
            assert!(self.running.is_empty() && self.waiting.is_empty(), "nothing to run");
            assert!(self.pending.is_empty());
            return None;
        }
        let duration = self.spec.step_time.step_time(&batch);
        let end = now + duration;
        self.in_flight = Some(end);
        self.step_mixed = batch.decode_seqs > 0 && prefills > 0;
        let stats = &mut self.stats;
        stats.steps += 1;
        stats.batch_seqs_sum += seqs;
        stats.max_batch_seqs = stats.max_batch_seqs.max(seqs);
        stats.busy_ns = stats.busy_ns.saturating_add(duration.as_ns());
        stats.prefill_tokens += batch.prefill_tokens;
        if batch.decode_seqs > 0 && batch.prefill_tokens > 0 {
            stats.mixed_steps += 1;
        }
        self.debug_check_invariants();
        Some(StepPlan {
            duration,
            end,
            seqs,
            decode_seqs: batch.decode_seqs,
            prefill_seqs: prefills,
            batch,
        })
    }

    /// Completes the step in flight at `now` (its `end`): tokens, first tokens, finishes,
    /// and the preemptions made when it started, appended to `out`. One walk over the
    /// running sequences (two for a mixed step: its decodes report first, as formed); a
    /// sequence cancelled during the step left the running list, and its work with it.
    pub fn finish_step(&mut self, now: SimTime, out: &mut Vec<SeqEvent>) {
        let end = self.in_flight.take().expect("no step in flight");
        assert_eq!(now, end, "finish_step must be called at the step's end");
        out.append(&mut self.pending);
        let mut done = StepEnd {
            now,
            emit_tokens: self.emit_tokens,
            kv_used: self.kv_used,
            pool: self.pool.as_mut(),
            out,
            tokens: 0,
            finished: 0,
            gaps: 0,
            gap_sum_ns: 0,
            max_gap_ns: 0,
        };
        if self.step_mixed {
            for seq in self.running.iter_mut().filter(|s| s.work == Work::Decode) {
                done.complete(seq);
            }
        }
        self.running.retain_mut(|seq| {
            if seq.work != Work::Idle {
                done.complete(seq);
            }
            seq.generated < seq.output_tokens
        });
        self.kv_used = done.kv_used;
        let stats = &mut self.stats;
        stats.tokens_generated += done.tokens;
        stats.finished += done.finished;
        stats.token_gaps += done.gaps;
        // Saturating sums of non-negative gaps: the same as adding each gap saturating.
        stats.token_gap_sum_ns = stats.token_gap_sum_ns.saturating_add(done.gap_sum_ns);
        stats.max_token_gap_ns = stats.max_token_gap_ns.max(done.max_gap_ns);
        self.debug_check_invariants();
    }

    /// The tokens the head of the waiting queue would prefill if admitted now: its target,
    /// less what the prefix cache holds of it — what it takes of the step's token budget
    /// (vLLM `Scheduler.schedule`: `num_new_tokens = request.num_tokens −
    /// num_computed_tokens`, the computed ones from `get_computed_blocks`).
    fn head_prefill(&mut self) -> Option<u64> {
        let head = self.waiting.front_mut()?;
        let target = head.admission_target();
        Some(match (&self.pool, &mut head.blocks) {
            (Some(pool), Some(b)) => {
                target - pool.plan(b, head.prompt_tokens, target).hit_blocks * pool.block_size
            }
            _ => target,
        })
    }

    /// Admits the head of the waiting queue if a slot and KV for its whole target are free
    /// (with prefix caching: the blocks its cached prefix does not cover, plus the cached
    /// blocks it takes out of the free queue); it becomes the newest running sequence, whose
    /// index is returned. Its cached tokens count as prefilled.
    fn admit_head(&mut self) -> Option<usize> {
        let head = self.waiting.front_mut()?;
        let target = head.admission_target();
        if self.running.len() as u64 >= self.spec.max_num_seqs {
            return None;
        }
        let plan = match (&self.pool, &mut head.blocks) {
            (Some(pool), Some(b)) => {
                let plan = pool.plan(b, head.prompt_tokens, target);
                if plan.need > pool.free() {
                    return None;
                }
                Some(plan)
            }
            _ if self.kv_used + target > self.spec.kv_cache_tokens => return None,
            _ => None,
        };
        let mut seq = self.waiting.pop_front().expect("a head");
        debug_assert_eq!(seq.kv_held, 0, "a waiting sequence holds no KV");
        seq.target = target;
        seq.prefilled = 0;
        seq.kv_held = target;
        match (plan, &mut self.pool, &mut seq.blocks) {
            (Some(plan), Some(pool), Some(b)) => seq.prefilled = pool.admit(b, plan, target),
            _ => self.kv_used += target,
        }
        self.running.push(seq);
        Some(self.running.len() - 1)
    }

    /// Schedules a prefill chunk of `chunk` tokens for running sequence `i`, priced after
    /// the tokens of its prompt already in the KV cache (prefilled or found cached); with
    /// prefix caching its full blocks are registered now (vLLM caches a block when its
    /// tokens are scheduled: `allocate_slots` → `cache_blocks`).
    fn schedule_prefill(&mut self, i: usize, chunk: u64, batch: &mut StepBatch) {
        let seq = &mut self.running[i];
        batch.add_prefill_chunk(chunk, seq.prefilled);
        seq.work = Work::Prefill { chunk };
        if let (Some(pool), Some(b)) = (&mut self.pool, &mut seq.blocks) {
            pool.cache_full(b, seq.prompt_tokens, seq.prefilled + chunk);
        }
    }

    /// Frees what `seq` holds: its KV tokens, or its blocks (tail first).
    pub(super) fn release(&mut self, seq: &mut Seq) {
        match (&mut self.pool, &mut seq.blocks) {
            (Some(pool), Some(b)) => pool.release(b),
            _ => self.kv_used -= seq.kv_held,
        }
    }

    /// Schedules one decode for up to `limit` running sequences whose prompt is cached,
    /// oldest first, charging one KV token each; preempts the newest running sequence while
    /// the charge does not fit. Returns the decodes scheduled.
    fn schedule_decodes(&mut self, limit: u64, now: SimTime, batch: &mut StepBatch) -> u64 {
        if self.pool.is_some() {
            return self.schedule_decodes_in_blocks(limit, now, batch);
        }
        let mut scheduled = 0;
        if self.kv_used + self.running.len() as u64 <= self.spec.kv_cache_tokens {
            // No preemption possible: before the k-th decode (k ≤ running) the KV used is
            // at most `kv_used + k - 1 < kv_cache_tokens`. The same decodes, one plain walk.
            for seq in &mut self.running {
                if scheduled == limit {
                    break;
                }
                if seq.prefilled < seq.target {
                    continue;
                }
                batch.add_decode(seq.kv_held);
                seq.kv_held += 1;
                seq.work = Work::Decode;
                scheduled += 1;
            }
            self.kv_used += scheduled;
            return scheduled;
        }
        let mut i = 0;
        while i < self.running.len() && scheduled < limit {
            if self.running[i].prefilled < self.running[i].target {
                i += 1;
                continue;
            }
            while self.kv_used >= self.spec.kv_cache_tokens && i < self.running.len() {
                self.preempt_newest(now);
            }
            let Some(seq) = self.running.get_mut(i) else { break }; // it preempted itself
            batch.add_decode(seq.kv_held);
            seq.kv_held += 1;
            seq.work = Work::Decode;
            self.kv_used += 1;
            scheduled += 1;
            i += 1;
        }
        scheduled
    }

    /// [`Self::schedule_decodes`] with prefix caching: a decode whose next KV token starts
    /// a new block takes one from the free queue (evicting its cached hash, if any), and
    /// while none is free the newest running sequence is preempted (its blocks, freed, may
    /// be shared and free nothing). The decode's full blocks are registered (`cache_blocks`).
    fn schedule_decodes_in_blocks(
        &mut self,
        limit: u64,
        now: SimTime,
        batch: &mut StepBatch,
    ) -> u64 {
        let mut scheduled = 0;
        let mut i = 0;
        let bs = self.pool.as_ref().expect("a pool").block_size;
        while i < self.running.len() && scheduled < limit {
            if self.running[i].prefilled < self.running[i].target {
                i += 1;
                continue;
            }
            if self.running[i].kv_held.is_multiple_of(bs) {
                while self.pool.as_ref().expect("a pool").free() == 0 && i < self.running.len() {
                    self.preempt_newest(now);
                }
                let Some(seq) = self.running.get_mut(i) else { break }; // it preempted itself
                let (pool, b) = (self.pool.as_mut().expect("a pool"), seq.blocks.as_mut());
                assert!(pool.grow(b.expect("blocks")), "a free block");
            }
            let seq = &mut self.running[i];
            batch.add_decode(seq.kv_held);
            seq.kv_held += 1;
            seq.work = Work::Decode;
            let (pool, b) = (self.pool.as_mut().expect("a pool"), seq.blocks.as_mut());
            pool.cache_full(b.expect("blocks"), seq.prompt_tokens, seq.kv_held);
            scheduled += 1;
            i += 1;
        }
        scheduled
    }

    /// Recompute preemption of the newest running sequence: it frees its KV and goes back
    /// to the front of the queue; what it generated will be prefilled again.
    fn preempt_newest(&mut self, now: SimTime) {
        let mut seq = self.running.pop().expect("something to preempt");
        debug_assert_eq!(seq.work, Work::Idle, "only unscheduled sequences are preempted");
        self.release(&mut seq);
        seq.kv_held = 0;
        seq.prefilled = 0;
        self.stats.preemptions += 1;
        self.stats.recomputed_tokens += seq.generated;
        self.pending.push(SeqEvent::Preempted { id: seq.id, at: now });
        self.waiting.push_front(seq);
    }
}

/// What completing a sequence's work at a step's end touches (split from the running list
/// so one walk can complete and drop sequences); the step's counts are summed here and
/// added to [`ServerStats`](super::server::ServerStats) once.
struct StepEnd<'a> {
    now: SimTime,
    emit_tokens: bool,
    kv_used: u64,
    /// The block pool, with prefix caching (a finished sequence's blocks return to it).
    pool: Option<&'a mut BlockPool>,
    out: &'a mut Vec<SeqEvent>,
    tokens: u64,
    finished: u64,
    gaps: u64,
    gap_sum_ns: u64,
    max_gap_ns: u64,
}

impl StepEnd<'_> {
    /// The step's work on `seq` is done: a prefill chunk (a token when it completes the
    /// prompt) or a decode (a token); the sequence is finished when it has all its tokens.
    fn complete(&mut self, seq: &mut Seq) {
        let (id, now) = (seq.id, self.now);
        if let Work::Prefill { chunk } = std::mem::replace(&mut seq.work, Work::Idle) {
            seq.prefilled += chunk;
            assert!(seq.prefilled <= seq.target);
            if seq.prefilled < seq.target {
                return;
            }
        }
        seq.generated += 1;
        self.tokens += 1;
        if seq.generated > 1 {
            // A sequence's earlier token was at `last_token_at` (kept across preemptions).
            let gap = (now - seq.last_token_at).as_ns();
            self.gaps += 1;
            self.gap_sum_ns = self.gap_sum_ns.saturating_add(gap);
            self.max_gap_ns = self.max_gap_ns.max(gap);
        }
        seq.last_token_at = now;
        if seq.generated == 1 {
            self.out.push(SeqEvent::FirstToken { id, at: now });
        } else if self.emit_tokens {
            self.out.push(SeqEvent::Token { id, at: now });
        }
        if seq.generated == seq.output_tokens {
            match (&mut self.pool, &mut seq.blocks) {
                (Some(pool), Some(b)) => pool.release(b),
                _ => self.kv_used -= seq.kv_held,
            }
            self.finished += 1;
            self.out.push(SeqEvent::Finished { id, at: now });
        }
    }
}
