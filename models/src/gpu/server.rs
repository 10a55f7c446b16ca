//! A GPU inference server as a continuous-batching step loop (vLLM-like), as a pure state
//! machine.
//!
//! Sequences (prompt tokens, output tokens) wait in a bounded queue, are admitted FCFS into
//! at most `max_num_seqs` running slots within a KV-cache budget of `kv_cache_tokens`, and
//! advance one forward pass at a time: every running sequence whose prompt is in the cache
//! decodes one token per step; admitted prompts are prefilled whole (vLLM V0's default:
//! a step that admits prompts is a prefill-only step) or, with `enable_chunked_prefill`, in
//! chunks that share the step's `max_num_batched_tokens` with the decodes (mixed steps, vLLM
//! V1). A step costs [`StepModel::step_time`] of its batch (or a fixed time per step), and
//! the step that completes a prefill emits the sequence's first token at the step's end.
//!
//! The key design decision: KV is reserved for a sequence's whole prompt when it is
//! admitted and then grows by one token per decode; when the decodes of a step do not fit,
//! the newest running sequence is preempted (vLLM's recompute mode): its KV is freed, it
//! returns to the front of the waiting queue, and on readmission its prompt *and* the tokens
//! it already generated are prefilled again. A sequence that could not fit alone
//! (`prompt + output > kv_cache_tokens`) is refused at submission, so the oldest running
//! sequence always fits and the loop always progresses.
//!
//! With `enable_prefix_caching` (vLLM's automatic prefix caching, `prefix.rs`) the same
//! KV is counted in blocks of `block_size` tokens: an admission reserves the blocks of its
//! whole target that the cache does not already hold (its cached prefix counts as
//! prefilled: only the rest is priced), a decode takes a new block at each block boundary,
//! and freed blocks stay cached until the pool evicts them, least recently freed first.
//!
//! Architecture invariant: `kv_used_tokens = Σ KV held by running sequences ≤
//! kv_cache_tokens` after every call (with prefix caching: the blocks' accounting of
//! `BlockPool::check`); `running ≤ max_num_seqs` (unless lowered at run time:
//! running sequences are never evicted for that); every submitted sequence ends exactly
//! once — refused at submission, finished, or cancelled — and a preempted one is neither.
//!
//! API boundary: the server never schedules anything. The world calls [`Server::submit`]
//! when a call arrives, [`Server::start_step`] whenever no step is in flight and
//! [`Server::has_work`], and [`Server::finish_step`] at the returned plan's `end`, which
//! reports first tokens, (optionally) tokens, finishes and preemptions as [`SeqEvent`]s.
//! [`Server::cancel`] is the client giving up; it frees work only with `cancellation`.

use super::prefix::{BlockPool, MAX_BLOCK_SIZE, MAX_KV_BLOCKS, PromptPrefix, SeqBlocks};
pub use super::server_step_time::{StepCoefficients, StepTimeSpec};
use super::step::StepBatch;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// Configuration of a GPU server, as written in scenarios (vLLM's parameter names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "GpuServer")]
pub struct ServerSpec {
    /// Name; the server's parameters live under `gpu_server.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Maximum running sequences (vLLM `max_num_seqs`, default 256).
    #[serde(default = "D::max_num_seqs", deserialize_with = "R::max_num_seqs")]
    pub max_num_seqs: u64,
    /// Tokens per step (vLLM `max_num_batched_tokens`, default 8192 = vLLM V0's
    /// `max(max_model_len, 2048)` for Llama-3-8B). Without chunked prefill it caps the
    /// prompts admitted in one prefill step (a longer prompt is admitted alone); with it,
    /// decodes and prefill chunks share it. Must be ≥ `max_num_seqs`.
    #[serde(default = "D::max_num_batched_tokens", deserialize_with = "R::max_num_batched_tokens")]
    pub max_num_batched_tokens: u64,
    /// Split prompts into chunks mixed with decodes (vLLM `enable_chunked_prefill`).
    #[serde(default = "D::enable_chunked_prefill")]
    pub enable_chunked_prefill: bool,
    /// KV-cache budget in tokens (default 870,000: one H200 at vLLM's
    /// `gpu_memory_utilization` 0.9 ≈ 126 GiB, minus 15 GiB of weights and ~4 GiB of
    /// activations, at 128 KiB per Llama-3-8B token).
    #[serde(default = "D::kv_cache_tokens", deserialize_with = "R::kv_cache_tokens")]
    pub kv_cache_tokens: u64,
    /// Bound on the waiting queue (default 10,000); a submission that finds it full is
    /// refused (429). Preempted sequences return to it beyond the bound.
    #[serde(default = "D::max_queue", deserialize_with = "R::max_queue")]
    pub max_queue: u64,
    /// What a step costs (default: the fitted H200 model).
    #[serde(default)]
    pub step_time: StepTimeSpec,
    /// Does a client giving up free its sequence's slot and KV (vLLM aborts the request)?
    /// Without it (the default) the abandoned sequence runs to its end.
    #[serde(default = "D::cancellation")]
    pub cancellation: bool,
    /// Automatic prefix caching (vLLM `enable_prefix_caching`; on by default in vLLM V1,
    /// off here so scenarios written before it run as they did): KV in blocks of
    /// `block_size` tokens, full blocks reused across sequences by their chained hash
    /// (`gpu/prefix.rs`). Off: KV is counted in tokens.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enable_prefix_caching: bool,
    /// Tokens per KV block (vLLM `block_size`, default 16); with prefix caching the pool
    /// holds `kv_cache_tokens / block_size` blocks.
    #[serde(
        default = "D::block_size",
        deserialize_with = "R::block_size",
        skip_serializing_if = "is_default_block_size"
    )]
    pub block_size: u64,
}

fn is_default_block_size(n: &u64) -> bool {
    *n == D::block_size()
}

/// The defaults declared in the parameter rows (`gpu/server_params.rs`).
type D = crate::params::Defaults<ServerSpec>;
/// The fields parsed with their rows' ranges.
type R = crate::params::Ranged<ServerSpec>;

/// Upper bounds that keep every count far from overflow (checked by [`ServerSpec::check`]).
pub const MAX_NUM_SEQS: u64 = 1 << 20;
pub const MAX_TOKENS: u64 = 1 << 40;

impl ServerSpec {
    /// A spec with every default (for tests and programmatic use).
    pub fn with_defaults(name: &str) -> ServerSpec {
        ServerSpec {
            name: name.to_string(),
            max_num_seqs: D::max_num_seqs(),
            max_num_batched_tokens: D::max_num_batched_tokens(),
            enable_chunked_prefill: false,
            kv_cache_tokens: D::kv_cache_tokens(),
            max_queue: D::max_queue(),
            step_time: StepTimeSpec::default(),
            cancellation: false,
            enable_prefix_caching: false,
            block_size: D::block_size(),
        }
    }

    /// Blocks in the KV pool with prefix caching (`None` without it).
    pub fn kv_blocks(&self) -> Option<u64> {
        self.enable_prefix_caching.then(|| self.kv_cache_tokens / self.block_size)
    }

    /// Cross-field and range checks serde cannot express per field.
    pub fn check(&self) -> Result<(), String> {
        let counts = [
            ("max_num_seqs", self.max_num_seqs, MAX_NUM_SEQS),
            ("max_num_batched_tokens", self.max_num_batched_tokens, MAX_TOKENS),
            ("kv_cache_tokens", self.kv_cache_tokens, MAX_TOKENS),
            ("max_queue", self.max_queue, MAX_TOKENS),
        ];
        for (name, v, max) in counts {
            if !(1..=max).contains(&v) {
                return Err(format!("{name} = {v}: expected 1 ..= {max}"));
            }
        }
        if self.max_num_batched_tokens < self.max_num_seqs {
            return Err(format!(
                "max_num_batched_tokens ({}) must be ≥ max_num_seqs ({}): every running \
                 sequence needs one token of the step",
                self.max_num_batched_tokens, self.max_num_seqs
            ));
        }
        if !(1..=MAX_BLOCK_SIZE).contains(&self.block_size) {
            return Err(format!(
                "block_size = {}: expected 1 ..= {MAX_BLOCK_SIZE}",
                self.block_size
            ));
        }
        if let Some(n) = self.kv_blocks()
            && !(1..=MAX_KV_BLOCKS).contains(&n)
        {
            return Err(format!(
                "kv_cache_tokens / block_size = {} / {} = {n} blocks: expected 1 ..= \
                 {MAX_KV_BLOCKS} with enable_prefix_caching",
                self.kv_cache_tokens, self.block_size
            ));
        }
        self.step_time.check()?;
        Ok(())
    }
}

/// One request to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqRequest {
    /// The caller's label, reported back in the sequence's events and used by
    /// [`Server::cancel`] (the world numbers its sequences; the server never looks one up
    /// on the step path).
    pub id: u64,
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    /// How the prompt begins (shared segments), for prefix caching; ignored without it.
    pub prefix: PromptPrefix,
}

/// The server's answer to a submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitDecision {
    /// In the waiting queue; it will end with `Finished` (or be cancelled).
    Queued,
    Rejected(SubmitRejection),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitRejection {
    /// The waiting queue holds `max_queue` sequences (HTTP 429).
    QueueFull,
    /// `prompt + output > kv_cache_tokens`: it could never run (vLLM: longer than
    /// `max_model_len`, HTTP 400).
    TooLong,
    /// No prompt or no output token.
    Empty,
}

/// What happened to a sequence, reported by [`Server::finish_step`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqEvent {
    /// Its first output token, at the end of the step that completed its prefill.
    FirstToken { id: u64, at: SimTime },
    /// A later output token (only with [`Server::set_emit_tokens`]).
    Token { id: u64, at: SimTime },
    /// Its last output token: the sequence left the server.
    Finished { id: u64, at: SimTime },
    /// Evicted for KV at the start of a step (`at`); it will be recomputed.
    Preempted { id: u64, at: SimTime },
}

/// The step the world must time: it ends at `end = start + duration`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepPlan {
    pub duration: SimDuration,
    pub end: SimTime,
    /// Sequences in the batch (decodes + prefills): the batch size.
    pub seqs: u64,
    pub decode_seqs: u64,
    pub prefill_seqs: u64,
    /// The sums the step time was priced from.
    pub batch: StepBatch,
}

/// Counters (monotone) and the material for batch-size and inter-token histograms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    pub submitted: u64,
    pub rejected_queue_full: u64,
    pub rejected_too_long: u64,
    pub rejected_empty: u64,
    pub finished: u64,
    pub cancelled: u64,
    pub preemptions: u64,
    /// Generated tokens prefilled again after preemptions.
    pub recomputed_tokens: u64,
    pub steps: u64,
    /// Steps with both decodes and prefill tokens (chunked prefill only).
    pub mixed_steps: u64,
    pub tokens_generated: u64,
    /// Prompt (and recomputed) tokens prefilled.
    pub prefill_tokens: u64,
    /// Σ batch size over steps, and the largest.
    pub batch_seqs_sum: u64,
    pub max_batch_seqs: u64,
    /// Σ step durations (time the GPU was busy).
    pub busy_ns: u64,
    /// Gaps between consecutive tokens of a sequence: count, Σ, largest.
    pub token_gaps: u64,
    pub token_gap_sum_ns: u64,
    pub max_token_gap_ns: u64,
}

/// One sequence inside the server, held inline in the waiting queue or the running list
/// (no table by id: a step walks the running list in order, as a bare step loop does).
#[derive(Clone, Debug)]
pub(super) struct Seq {
    pub(super) id: u64,
    pub(super) prompt_tokens: u64,
    pub(super) output_tokens: u64,
    pub(super) generated: u64,
    /// Tokens to prefill in this admission: prompt + tokens generated before it.
    pub(super) target: u64,
    pub(super) prefilled: u64,
    /// KV tokens charged to it (0 while waiting).
    pub(super) kv_held: u64,
    /// Its latest token (meaningful once `generated > 0`; kept across preemptions).
    pub(super) last_token_at: SimTime,
    /// Its work in the step in flight (`Idle` between steps and while waiting).
    pub(super) work: Work,
    /// Its KV blocks and prompt prefix, with prefix caching (`None` without).
    pub(super) blocks: Option<Box<SeqBlocks>>,
}

impl Seq {
    /// Tokens it needs prefilled (and KV reserved) to be admitted: its prompt plus the
    /// tokens it generated before a preemption.
    pub(super) fn admission_target(&self) -> u64 {
        self.prompt_tokens + self.generated
    }
}

/// What a sequence does in the step in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Work {
    Idle,
    Decode,
    Prefill { chunk: u64 },
}

/// Run-time state of a GPU server.
#[derive(Clone, Debug)]
pub struct Server {
    pub(super) spec: ServerSpec,
    pub(super) emit_tokens: bool,
    /// FCFS; a preempted sequence returns to the front.
    pub(super) waiting: VecDeque<Seq>,
    /// Admission order, oldest first: the newest is preempted first. The step in flight's
    /// work is marked on these sequences.
    pub(super) running: Vec<Seq>,
    pub(super) kv_used: u64,
    /// The end of the step in flight.
    pub(super) in_flight: Option<SimTime>,
    /// The step in flight has both decodes and prefill chunks (chunked prefill).
    pub(super) step_mixed: bool,
    /// Events raised while forming a step (preemptions), reported with its end.
    pub(super) pending: Vec<SeqEvent>,
    /// The KV block pool, with prefix caching (then `kv_used` stays 0: KV is counted in
    /// blocks).
    pub(super) pool: Option<BlockPool>,
    pub stats: ServerStats,
}

impl Server {
    pub fn new(spec: &ServerSpec) -> Server {
        if let Err(e) = spec.check() {
            panic!("validated spec: {e}");
        }
        Server {
            spec: spec.clone(),
            emit_tokens: false,
            waiting: VecDeque::new(),
            running: Vec::new(),
            kv_used: 0,
            in_flight: None,
            step_mixed: false,
            pending: Vec::new(),
            pool: spec.kv_blocks().map(|n| BlockPool::new(n, spec.block_size)),
            stats: ServerStats::default(),
        }
    }

    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    /// Report every output token as [`SeqEvent::Token`] (for inter-chunk timeouts); off by
    /// default (the gaps are aggregated in [`ServerStats`] either way).
    pub fn set_emit_tokens(&mut self, on: bool) {
        self.emit_tokens = on;
    }

    /// A call arrives. Pure: the sequence waits for the next step that admits it.
    pub fn submit(&mut self, seq: SeqRequest, _now: SimTime) -> SubmitDecision {
        self.stats.submitted += 1;
        let reject = if seq.prompt_tokens == 0 || seq.output_tokens == 0 {
            self.stats.rejected_empty += 1;
            SubmitRejection::Empty
        } else if self.too_long(seq.prompt_tokens.saturating_add(seq.output_tokens)) {
            self.stats.rejected_too_long += 1;
            SubmitRejection::TooLong
        } else if self.waiting.len() as u64 >= self.spec.max_queue {
            self.stats.rejected_queue_full += 1;
            SubmitRejection::QueueFull
        } else {
            self.waiting.push_back(Seq {
                id: seq.id,
                prompt_tokens: seq.prompt_tokens,
                output_tokens: seq.output_tokens,
                generated: 0,
                target: seq.prompt_tokens,
                prefilled: 0,
                kv_held: 0,
                last_token_at: SimTime::ZERO,
                work: Work::Idle,
                blocks: self.pool.as_ref().map(|_| {
                    Box::new(SeqBlocks {
                        prefix: seq.prefix,
                        own: super::prefix::own_content(seq.id),
                        ..SeqBlocks::default()
                    })
                }),
            });
            self.debug_check_invariants();
            return SubmitDecision::Queued;
        };
        SubmitDecision::Rejected(reject)
    }

    /// Could a sequence of `tokens` (prompt + output) never fit, even alone?
    fn too_long(&self, tokens: u64) -> bool {
        match &self.pool {
            None => tokens > self.spec.kv_cache_tokens,
            Some(pool) => pool.blocks_for(tokens) > pool.num_blocks(),
        }
    }

    /// The client gave up on `id`. With `cancellation` the sequence leaves at once (its slot
    /// and KV are freed; if it is in the step in flight, that work is discarded) and `true`
    /// is returned; without it, or for an unknown id, nothing changes and the sequence will
    /// still report its events.
    pub fn cancel(&mut self, id: u64) -> bool {
        if !self.spec.cancellation {
            return false;
        }
        if let Some(pos) = self.running.iter().position(|r| r.id == id) {
            // Its work in the step in flight (if any) leaves with it.
            let mut seq = self.running.remove(pos);
            self.release(&mut seq);
        } else if let Some(pos) = self.waiting.iter().position(|w| w.id == id) {
            let seq = self.waiting.remove(pos).expect("a position in the queue");
            assert_eq!(seq.kv_held, 0, "a waiting sequence holds no KV");
        } else {
            return false;
        }
        self.stats.cancelled += 1;
        self.debug_check_invariants();
        true
    }

    /// Sequences waiting or running (something to step on).
    pub fn has_work(&self) -> bool {
        !(self.running.is_empty() && self.waiting.is_empty())
    }
    /// The end of the step in flight, if any.
    pub fn step_end(&self) -> Option<SimTime> {
        self.in_flight
    }
    pub fn running(&self) -> u64 {
        self.running.len() as u64
    }
    pub fn waiting(&self) -> u64 {
        self.waiting.len() as u64
    }
    /// KV in use by running sequences: tokens, or with prefix caching the referenced
    /// blocks × `block_size` (a block shared by several sequences counted once).
    pub fn kv_used_tokens(&self) -> u64 {
        match &self.pool {
            None => self.kv_used,
            Some(p) => p.used * p.block_size,
        }
    }
    /// With prefix caching: blocks referenced by running sequences, free blocks holding a
    /// cached prefix, and the pool's counters.
    pub fn kv_blocks(&self) -> Option<(u64, u64, super::prefix::PrefixStats)> {
        self.pool.as_ref().map(|p| (p.used, p.cached_free, p.stats))
    }
    /// The run of `hashes`' leading blocks its prefix cache holds (0 without prefix
    /// caching): what a router reading the real cache (KV events) sees.
    pub fn cached_prefix_blocks(&self, hashes: &[u64]) -> u64 {
        let Some(p) = &self.pool else { return 0 };
        hashes.iter().take_while(|h| p.is_cached(**h)).count() as u64
    }
    /// Is `id` in the server (waiting or running)? A walk over both (for tests and checks).
    pub fn contains(&self, id: u64) -> bool {
        self.running.iter().chain(&self.waiting).any(|s| s.id == id)
    }

    /// Run-time change; lowering it never evicts a running sequence.
    pub fn set_max_num_seqs(&mut self, n: u64) -> Result<(), String> {
        self.set_checked(|s| s.max_num_seqs = n)
    }
    pub fn set_max_num_batched_tokens(&mut self, n: u64) -> Result<(), String> {
        self.set_checked(|s| s.max_num_batched_tokens = n)
    }
    /// Run-time change; lowering it refuses new submissions, never drops queued ones.
    pub fn set_max_queue(&mut self, n: u64) -> Result<(), String> {
        self.set_checked(|s| s.max_queue = n)
    }
    pub fn set_cancellation(&mut self, on: bool) {
        self.spec.cancellation = on;
    }

    fn set_checked(&mut self, f: impl FnOnce(&mut ServerSpec)) -> Result<(), String> {
        let mut next = self.spec.clone();
        f(&mut next);
        next.check()?;
        self.spec = next;
        Ok(())
    }

    /// The invariants of the module doc (cheap: O(running)).
    /// [`Self::check_invariants`] after every step and submission in debug and test builds
    /// (the model's own tests, the suites); release builds check once at the end of the run
    /// (`world/gpu.rs`), since the walk over the running sequences is a third of a step's
    /// cost (bench/NOTES.md). A check only reads: taking it or not changes no run.
    /// With prefix caching the walk over the pool's blocks runs only while it holds at
    /// most 4,096 (the suites' small pools); [`Self::check_invariants`] always walks them.
    #[inline]
    pub(crate) fn debug_check_invariants(&self) {
        if cfg!(debug_assertions) && self.pool.as_ref().is_none_or(|p| p.materialised() <= 4096) {
            self.check_invariants();
        }
    }

    pub fn check_invariants(&self) {
        match &self.pool {
            None => {
                assert!(self.kv_used <= self.spec.kv_cache_tokens, "KV over budget");
                let held: u64 = self.running.iter().map(|s| s.kv_held).sum();
                assert_eq!(held, self.kv_used, "KV accounting");
            }
            Some(pool) => self.check_blocks(pool),
        }
        let stats = &self.stats;
        let ended = stats.rejected_queue_full
            + stats.rejected_too_long
            + stats.rejected_empty
            + stats.finished
            + stats.cancelled;
        let held = (self.waiting.len() + self.running.len()) as u64;
        assert_eq!(stats.submitted, ended + held, "conservation");
    }

    /// Block accounting: each running sequence holds the blocks its KV needs, and the
    /// pool's reference counts are exactly the running sequences' holdings.
    fn check_blocks(&self, pool: &BlockPool) {
        let mut refs = std::collections::BTreeMap::new();
        for s in &self.running {
            let b = s.blocks.as_ref().expect("a sequence's blocks");
            assert_eq!(b.blocks.len() as u64, pool.blocks_for(s.kv_held), "blocks of {}", s.id);
            for &x in &b.blocks {
                *refs.entry(x).or_insert(0u32) += 1;
            }
        }
        for s in &self.waiting {
            assert!(s.blocks.as_ref().is_some_and(|b| b.blocks.is_empty()), "waiting holds none");
        }
        pool.check(&refs);
    }
}
