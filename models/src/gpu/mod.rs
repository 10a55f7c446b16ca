//! # gpu — the step time of a GPU inference server
//!
//! An inference server runs in steps: each step is one forward pass over a batch made of
//! running sequences (one decode token each) and prompt tokens being prefilled (whole prompts
//! or chunks). [`StepModel::step_time`] prices one such step from a handful of physical
//! terms, fitted by [`fit()`] to a measured profile (`data/gpu-profile-h200/e2e.csv`
//! read with [`parse_profile_csv`]):
//!
//! ```text
//! t = fixed                                  weight read + kernel launches, once per step
//!   + token · T                              every token in the pass (T = decodes + prefill tokens)
//!   + compute · max(0, T − ridge)            GEMMs turn compute-bound beyond the ridge
//!   + kv · Σ context of the decodes          KV-cache read, 128 KiB per cached token
//!   + attention · prefill query–key pairs    prefill attention, quadratic in the prompt
//! ```
//!
//! A mixed step (chunked prefill plus decodes) is one pass: the fixed cost is paid once and
//! the tokens share the GEMMs, so it costs less than the decode step and the prefill step run
//! separately. The model and its fit errors are documented in `docs/gpu-model.md`.
//!
//! Shipped coefficients: [`H200_LLAMA3_8B`] (generated; `shipped.rs` says how).
//!
//! [`Server`] (`server.rs`, `server_batch.rs`): a continuous-batching inference server
//! priced by this model, as a pure state machine, with vLLM's automatic prefix caching
//! (`prefix.rs`: KV blocks reused across prompts by their chained hash, LRU eviction).
//!
//! [`GpuPoolSpec`] (`pool.rs`): replicas of one server behind a [`Router`] (`router.rs`:
//! round robin, least outstanding, session affinity, prefix-aware, weighted scorers).

mod fit;
mod pool;
mod prefix;
#[cfg(test)]
mod prefix_tests;
mod profile;
mod router;
#[cfg(test)]
mod router_tests;

mod server;
mod server_batch;
mod server_params;
mod server_step_time;
#[cfg(test)]
mod server_tests;
mod shipped;
mod step;

pub use fit::{ErrorSummary, FitError, FitReport, error_summary, fit, signed_error_pct};
pub use pool::{GpuPoolSpec, MAX_POOL_REPLICAS};
pub use prefix::{MAX_BLOCK_SIZE, MAX_KV_BLOCKS, MAX_PREFIX_SEGMENTS, PrefixStats, PromptPrefix};
pub use profile::{MAX_PROFILE_ROWS, Phase, ProfileError, ProfileRow, parse_profile_csv};
pub use router::{
    MAX_PREFIX_BLOCKS, PrefixMode, ReplicaView, RequestView, Router, RouterPolicy, Scorer,
    prompt_block_hashes,
};
pub use server::{
    MAX_NUM_SEQS, MAX_TOKENS, SeqEvent, SeqRequest, Server, ServerSpec, ServerStats,
    StepCoefficients, StepPlan, StepTimeSpec, SubmitDecision, SubmitRejection,
};
pub use shipped::{H200_LLAMA3_8B, H200_LLAMA3_8B_FIT};
pub use step::{ShippedFit, StepBatch, StepModel, StepParts};
