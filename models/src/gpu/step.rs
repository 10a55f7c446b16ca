//! The step-time model: what one forward pass over a batch costs.

use sim_core::SimDuration;

/// What one server step processes, as the sums the step time depends on (no per-sequence
/// list, so building and pricing a batch never allocates). Counts saturate instead of
/// overflowing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StepBatch {
    /// Running sequences that generate one token each in this step.
    pub decode_seqs: u64,
    /// Σ over those sequences of the tokens already in their KV cache (what their attention
    /// reads).
    pub decode_context_tokens: u64,
    /// Σ prompt tokens processed in this step (whole prompts or chunks of them).
    pub prefill_tokens: u64,
    /// Σ query–key pairs of the prefill attention (causal): a chunk of `l` tokens after `c`
    /// tokens of the same prompt already cached has `l·c + l·(l+1)/2` pairs.
    pub prefill_attention_pairs: u64,
}

impl StepBatch {
    /// Nothing to do: a server with an empty batch does not step.
    pub const EMPTY: StepBatch = StepBatch {
        decode_seqs: 0,
        decode_context_tokens: 0,
        prefill_tokens: 0,
        prefill_attention_pairs: 0,
    };

    /// `seqs` decoding sequences with `context_tokens` cached tokens each.
    pub fn decode(seqs: u64, context_tokens: u64) -> StepBatch {
        StepBatch {
            decode_seqs: seqs,
            decode_context_tokens: seqs.saturating_mul(context_tokens),
            ..StepBatch::EMPTY
        }
    }

    /// `seqs` whole prompts of `tokens` tokens each, prefilled from scratch.
    pub fn prefill(seqs: u64, tokens: u64) -> StepBatch {
        StepBatch {
            prefill_tokens: seqs.saturating_mul(tokens),
            prefill_attention_pairs: seqs.saturating_mul(causal_pairs(tokens, 0)),
            ..StepBatch::EMPTY
        }
    }

    /// Adds one decoding sequence with `context_tokens` cached tokens.
    pub fn add_decode(&mut self, context_tokens: u64) {
        self.decode_seqs = self.decode_seqs.saturating_add(1);
        self.decode_context_tokens = self.decode_context_tokens.saturating_add(context_tokens);
    }

    /// Adds a prefill chunk of `chunk_tokens` prompt tokens whose first `cached_tokens`
    /// prompt tokens were prefilled in earlier steps (0 for a whole prompt).
    pub fn add_prefill_chunk(&mut self, chunk_tokens: u64, cached_tokens: u64) {
        self.prefill_tokens = self.prefill_tokens.saturating_add(chunk_tokens);
        self.prefill_attention_pairs =
            self.prefill_attention_pairs.saturating_add(causal_pairs(chunk_tokens, cached_tokens));
    }

    /// Both batches in one forward pass (a mixed step).
    pub fn with(self, other: StepBatch) -> StepBatch {
        StepBatch {
            decode_seqs: self.decode_seqs.saturating_add(other.decode_seqs),
            decode_context_tokens: self
                .decode_context_tokens
                .saturating_add(other.decode_context_tokens),
            prefill_tokens: self.prefill_tokens.saturating_add(other.prefill_tokens),
            prefill_attention_pairs: self
                .prefill_attention_pairs
                .saturating_add(other.prefill_attention_pairs),
        }
    }

    /// Tokens in the forward pass: one per decoding sequence plus every prefill token.
    pub fn tokens(&self) -> u64 {
        self.decode_seqs.saturating_add(self.prefill_tokens)
    }

    pub fn is_empty(&self) -> bool {
        self.tokens() == 0
    }
}

/// Causal query–key pairs of `chunk` new tokens after `cached` tokens: `chunk·cached +
/// chunk·(chunk+1)/2`, saturating.
fn causal_pairs(chunk: u64, cached: u64) -> u64 {
    let l = u128::from(chunk);
    let pairs = l * u128::from(cached) + l * (l + 1) / 2;
    u64::try_from(pairs).unwrap_or(u64::MAX)
}

/// The step time of one forward pass, from a handful of physical terms (all ≥ 0):
///
/// `t = fixed + token·T + compute·max(0, T − ridge) + kv·Σcontext + attention·pairs`,
/// where `T` is the number of tokens in the pass ([`StepBatch::tokens`]).
///
/// - `fixed_ns`: paid once per step whatever the batch — reading every weight from HBM
///   (~15 GB for an 8B model in bf16, ~3.1 ms at 4.8 TB/s) plus kernel launches and
///   synchronisation.
/// - `token_ns`: per token in the pass — activations, norms, elementwise kernels, logits.
/// - `compute_token_ns` above `ridge_tokens`: the weight GEMMs are memory-bound (their cost
///   is the weight read, already in `fixed_ns`) until the batch has enough tokens to reuse
///   each weight byte `ridge_tokens` times; beyond that they are compute-bound and every
///   further token costs its FLOPs. This is the roofline `max(weight read, T · FLOPs/peak)`
///   written as `weight read + compute·max(0, T − ridge)`, so `compute·ridge` is the weight
///   read time the fit implies.
/// - `kv_token_ns`: per cached token a decode attends to — reading its keys and values
///   (2 · layers · kv_heads · head_dim · 2 bytes = 128 KiB for Llama-3-8B, ~27 ns at 4.8 TB/s).
/// - `attention_pair_ns`: per query–key pair of prefill attention (compute-bound, quadratic
///   in the prompt length: one 8192-token prompt costs more than 16 × 512).
///
/// A mixed step pays `fixed_ns` once and shares the GEMMs, so it costs at most the decode
/// step plus the prefill step minus `fixed_ns − compute_token_ns·ridge_tokens` (the launch
/// overhead not hidden by the roofline).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepModel {
    pub fixed_ns: f64,
    pub token_ns: f64,
    pub compute_token_ns: f64,
    pub ridge_tokens: u64,
    pub kv_token_ns: f64,
    pub attention_pair_ns: f64,
}

/// A step's time split by term, in nanoseconds (unrounded).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepParts {
    pub fixed_ns: f64,
    pub tokens_ns: f64,
    pub compute_bound_ns: f64,
    pub kv_read_ns: f64,
    pub prefill_attention_ns: f64,
}

impl StepParts {
    pub fn total_ns(&self) -> f64 {
        self.fixed_ns
            + self.tokens_ns
            + self.compute_bound_ns
            + self.kv_read_ns
            + self.prefill_attention_ns
    }
}

impl StepModel {
    /// The time of one step over `batch`, rounded to whole nanoseconds; zero for an empty
    /// batch (no step is run).
    pub fn step_time(&self, batch: &StepBatch) -> SimDuration {
        if batch.is_empty() {
            return SimDuration::ZERO;
        }
        let ns = self.parts(batch).total_ns();
        // Coefficients are ≥ 0 when checked; a NaN or negative total cannot reach the clock.
        if ns.is_nan() || ns <= 0.0 { SimDuration::ZERO } else { SimDuration::from_ns_f64(ns) }
    }

    /// The step time split by term (all zero for an empty batch).
    pub fn parts(&self, batch: &StepBatch) -> StepParts {
        if batch.is_empty() {
            return StepParts::default();
        }
        let tokens = batch.tokens();
        StepParts {
            fixed_ns: self.fixed_ns,
            tokens_ns: self.token_ns * tokens as f64,
            compute_bound_ns: self.compute_token_ns
                * tokens.saturating_sub(self.ridge_tokens) as f64,
            kv_read_ns: self.kv_token_ns * batch.decode_context_tokens as f64,
            prefill_attention_ns: self.attention_pair_ns * batch.prefill_attention_pairs as f64,
        }
    }

    /// The step time in milliseconds, unrounded (for fitting and reports).
    pub fn step_ms(&self, batch: &StepBatch) -> f64 {
        self.parts(batch).total_ns() / 1e6
    }

    /// The weight-read time the roofline implies (`compute_token_ns · ridge_tokens`).
    pub fn implied_weight_read_ns(&self) -> f64 {
        self.compute_token_ns * self.ridge_tokens as f64
    }

    /// Every coefficient finite and ≥ 0 (then the step time grows with every input).
    pub fn check(&self) -> Result<(), String> {
        for (name, v) in [
            ("fixed_ns", self.fixed_ns),
            ("token_ns", self.token_ns),
            ("compute_token_ns", self.compute_token_ns),
            ("kv_token_ns", self.kv_token_ns),
            ("attention_pair_ns", self.attention_pair_ns),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} = {v}: must be finite and ≥ 0"));
            }
        }
        Ok(())
    }
}

/// Coefficients shipped in the crate, with the fit errors measured when they were generated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShippedFit {
    pub model: StepModel,
    /// The profile they were fitted to (path relative to the repository root).
    pub source: &'static str,
    pub rows: usize,
    /// Mean absolute percentage error over every row of the profile.
    pub mean_abs_pct: f64,
    /// Largest absolute percentage error of one row, and that row.
    pub worst_abs_pct: f64,
    pub worst_row: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: StepModel = StepModel {
        fixed_ns: 4_000_000.0,
        token_ns: 10_000.0,
        compute_token_ns: 10_000.0,
        ridge_tokens: 300,
        kv_token_ns: 30.0,
        attention_pair_ns: 1.0,
    };

    #[test]
    fn batches_sum_what_the_step_depends_on() {
        let mut b = StepBatch::EMPTY;
        assert!(b.is_empty());
        b.add_decode(100);
        b.add_decode(300);
        b.add_prefill_chunk(4, 0);
        b.add_prefill_chunk(2, 10);
        assert_eq!(b.decode_seqs, 2);
        assert_eq!(b.decode_context_tokens, 400);
        assert_eq!(b.prefill_tokens, 6);
        assert_eq!(b.prefill_attention_pairs, 10 + (2 * 10 + 3));
        assert_eq!(b.tokens(), 8);
        assert_eq!(StepBatch::decode(3, 7).with(StepBatch::prefill(2, 4)).tokens(), 3 + 8);
        // Chunking a prompt does not change its attention pairs.
        let mut chunked = StepBatch::EMPTY;
        chunked.add_prefill_chunk(512, 0);
        chunked.add_prefill_chunk(512, 512);
        assert_eq!(
            chunked.prefill_attention_pairs,
            StepBatch::prefill(1, 1024).prefill_attention_pairs
        );
    }

    #[test]
    fn huge_batches_saturate_instead_of_panicking() {
        let b = StepBatch::prefill(u64::MAX, u64::MAX).with(StepBatch::decode(u64::MAX, 9));
        assert_eq!(b.tokens(), u64::MAX);
        assert_eq!(M.step_time(&b), SimDuration::MAX);
    }

    #[test]
    fn step_time_adds_the_terms() {
        assert_eq!(M.step_time(&StepBatch::EMPTY), SimDuration::ZERO);
        // 1 token, 1000 cached: 4 ms + 10 µs + 30 µs.
        assert_eq!(M.step_time(&StepBatch::decode(1, 1000)), SimDuration::from_us(4_040));
        // 400 prompt tokens: 100 beyond the ridge; 400·401/2 pairs.
        let t = M.step_time(&StepBatch::prefill(1, 400));
        assert_eq!(t.as_ns(), 4_000_000 + 4_000_000 + 1_000_000 + 80_200);
        assert_eq!(M.implied_weight_read_ns(), 3_000_000.0);
    }

    #[test]
    fn check_refuses_negative_or_nan_coefficients() {
        assert!(M.check().is_ok());
        let bad = StepModel { kv_token_ns: -1.0, ..M };
        assert!(bad.check().unwrap_err().contains("kv_token_ns"));
        let nan = StepModel { token_ns: f64::NAN, ..M };
        assert!(nan.check().is_err());
        assert_eq!(nan.step_time(&StepBatch::decode(1, 1)), SimDuration::ZERO);
    }
}
