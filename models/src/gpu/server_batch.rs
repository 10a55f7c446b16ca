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
//!
//! API boundary: [`Server::start_step`] and [`Server::finish_step`], called by the world.

use super::server::{SeqEvent, Server, StepPlan, Work};
use super::step::StepBatch;
use sim_core::SimTime;

impl Server {
    /// Forms the next batch at `now` (no step may be in flight). `None` when the server
    /// holds no sequence; otherwise the world calls [`Server::finish_step`] at `plan.end`.
    pub fn start_step(&mut self, now: SimTime) -> Option<StepPlan> {
        assert!(self.in_flight.is_none(), "a step is already in flight");
        assert!(self.items.is_empty());
        let mut batch = StepBatch::EMPTY;
        let budget = self.spec.max_num_batched_tokens;
        if self.spec.enable_chunked_prefill {
            let decodes = self.schedule_decodes(budget, now, &mut batch);
            let mut left = budget - decodes;
            // Prompts already being prefilled, oldest first.
            for i in 0..self.running.len() {
                if left == 0 {
                    break;
                }
                let id = self.running[i];
                let seq = self.seqs.get_mut(&id).expect("running");
                let rest = seq.target - seq.prefilled;
                if rest > 0 {
                    let chunk = rest.min(left);
                    batch.add_prefill_chunk(chunk, seq.prefilled);
                    self.items.push((id, Work::Prefill { chunk }));
                    left -= chunk;
                }
            }
            while left > 0 {
                let Some(target) = self.admit_head() else { break };
                let chunk = target.min(left);
                batch.add_prefill_chunk(chunk, 0);
                let id = *self.running.last().expect("just admitted");
                self.items.push((id, Work::Prefill { chunk }));
                left -= chunk;
            }
        } else {
            let mut tokens = 0u64;
            while let Some(&head) = self.waiting.front() {
                let need = self.admission_target(head);
                if tokens > 0 && tokens + need > budget {
                    break;
                }
                let Some(target) = self.admit_head() else { break };
                batch.add_prefill_chunk(target, 0);
                self.items.push((head, Work::Prefill { chunk: target }));
                tokens += target;
            }
            if self.items.is_empty() {
                self.schedule_decodes(u64::MAX, now, &mut batch);
            }
        }
        if self.items.is_empty() {
            assert!(self.seqs.is_empty(), "sequences held but nothing to run");
            assert!(self.pending.is_empty());
            return None;
        }
        let duration = self.spec.step_time.step_time(&batch);
        let end = now + duration;
        self.in_flight = Some(end);
        let seqs = self.items.len() as u64;
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
            prefill_seqs: seqs - batch.decode_seqs,
            batch,
        })
    }

    /// Completes the step in flight at `now` (its `end`): tokens, first tokens, finishes,
    /// and the preemptions made when it started, appended to `out`.
    pub fn finish_step(&mut self, now: SimTime, out: &mut Vec<SeqEvent>) {
        let end = self.in_flight.take().expect("no step in flight");
        assert_eq!(now, end, "finish_step must be called at the step's end");
        out.append(&mut self.pending);
        for (id, work) in std::mem::take(&mut self.items) {
            // A sequence cancelled during the step is gone: its work is discarded (and if
            // its id was submitted again meanwhile, that one waits and holds no KV).
            let Some(seq) = self.seqs.get_mut(&id) else { continue };
            if seq.kv_held == 0 {
                continue;
            }
            if let Work::Prefill { chunk } = work {
                seq.prefilled += chunk;
                assert!(seq.prefilled <= seq.target);
                if seq.prefilled < seq.target {
                    continue;
                }
            }
            seq.generated += 1;
            self.stats.tokens_generated += 1;
            if let Some(last) = seq.last_token_at {
                let gap = (now - last).as_ns();
                self.stats.token_gaps += 1;
                self.stats.token_gap_sum_ns = self.stats.token_gap_sum_ns.saturating_add(gap);
                self.stats.max_token_gap_ns = self.stats.max_token_gap_ns.max(gap);
            }
            seq.last_token_at = Some(now);
            if seq.generated == 1 {
                out.push(SeqEvent::FirstToken { id, at: now });
            } else if self.emit_tokens {
                out.push(SeqEvent::Token { id, at: now });
            }
            if seq.generated == seq.output_tokens {
                self.kv_used -= seq.kv_held;
                self.seqs.remove(&id);
                self.stats.finished += 1;
                out.push(SeqEvent::Finished { id, at: now });
            }
        }
        let seqs = &self.seqs;
        self.running.retain(|id| seqs.contains_key(id));
        self.debug_check_invariants();
    }

    /// Tokens the head of the queue needs prefilled (and KV reserved) to be admitted: its
    /// prompt plus the tokens it generated before a preemption.
    fn admission_target(&self, id: u64) -> u64 {
        let seq = &self.seqs[&id];
        seq.prompt_tokens + seq.generated
    }

    /// Admits the head of the waiting queue if a slot and KV for its whole target are free;
    /// returns its target. It becomes the newest running sequence.
    fn admit_head(&mut self) -> Option<u64> {
        let &id = self.waiting.front()?;
        let target = self.admission_target(id);
        if self.running.len() as u64 >= self.spec.max_num_seqs
            || self.kv_used + target > self.spec.kv_cache_tokens
        {
            return None;
        }
        self.waiting.pop_front();
        let seq = self.seqs.get_mut(&id).expect("waiting");
        seq.target = target;
        seq.prefilled = 0;
        seq.kv_held = target;
        self.kv_used += target;
        self.running.push(id);
        Some(target)
    }

    /// Schedules one decode for up to `limit` running sequences whose prompt is cached,
    /// oldest first, charging one KV token each; preempts the newest running sequence while
    /// the charge does not fit. Returns the decodes scheduled.
    fn schedule_decodes(&mut self, limit: u64, now: SimTime, batch: &mut StepBatch) -> u64 {
        let mut scheduled = 0;
        let mut i = 0;
        while i < self.running.len() && scheduled < limit {
            let id = self.running[i];
            let seq = &self.seqs[&id];
            if seq.prefilled < seq.target {
                i += 1;
                continue;
            }
            while self.kv_used >= self.spec.kv_cache_tokens && i < self.running.len() {
                self.preempt_newest(now);
            }
            if i == self.running.len() {
                break; // it preempted itself
            }
            let seq = self.seqs.get_mut(&id).expect("running");
            batch.add_decode(seq.kv_held);
            seq.kv_held += 1;
            self.kv_used += 1;
            self.items.push((id, Work::Decode));
            scheduled += 1;
            i += 1;
        }
        scheduled
    }

    /// Recompute preemption of the newest running sequence: it frees its KV and goes back
    /// to the front of the queue; what it generated will be prefilled again.
    fn preempt_newest(&mut self, now: SimTime) {
        let id = self.running.pop().expect("something to preempt");
        let seq = self.seqs.get_mut(&id).expect("running");
        self.kv_used -= seq.kv_held;
        seq.kv_held = 0;
        seq.prefilled = 0;
        self.stats.preemptions += 1;
        self.stats.recomputed_tokens += seq.generated;
        self.waiting.push_front(id);
        self.pending.push(SeqEvent::Preempted { id, at: now });
    }
}
