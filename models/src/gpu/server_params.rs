//! The parameters of a [`ServerSpec`] in the registry (`gpu_server.<name>.<param>`).
//!
//! The key design decision: only what a running vLLM can take without a restart in effect
//! (admission limits, the queue bound, cancellation) is run-time changeable; the KV budget,
//! the chunking mode and prefix caching (its switch and block size) shape the memory plan
//! and are fixed for a run (vLLM takes them at start-up).
//!
//! Architecture invariant: a value written here passes [`ServerSpec::check`] (the
//! cross-field rule `max_num_batched_tokens ≥ max_num_seqs` included) or is refused.
//!
//! API boundary: [`crate::params::Params`] for [`ServerSpec`] (one row per parameter); the world applies run-time values to the
//! [`super::Server`] with its `set_*` methods.

use super::prefix::MAX_BLOCK_SIZE;
use super::server::{MAX_NUM_SEQS, MAX_TOKENS, ServerSpec};

crate::params::declare_params! {
    ServerSpec: "gpu_server", name = |s| s.name, check = ServerSpec::check,
        scenario_only = [
            step_time: "a fitted model: its coefficients are one least-squares solution (see above)",
        ],
        state = super::server::Server;
    max_num_seqs: Count { min: 1, max: MAX_NUM_SEQS }, "sequences",
        runtime(apply = |g, n| g.set_max_num_seqs(n)), "running sequences at most", default = 256;
    max_num_batched_tokens: Count { min: 1, max: MAX_TOKENS }, "tokens",
        runtime(apply = |g, n| g.set_max_num_batched_tokens(n)),
        "tokens per step (≥ max_num_seqs)", default = 8192;
    kv_cache_tokens: Count { min: 1, max: MAX_TOKENS }, "tokens", fixed, "KV-cache budget",
        default = 870_000;
    max_queue: Count { min: 1, max: MAX_TOKENS }, "sequences",
        runtime(apply = |g, n| g.set_max_queue(n)), "bound on the waiting queue", default = 10_000;
    enable_chunked_prefill: Bool, "", fixed, "prefill prompts in chunks mixed with decodes",
        default = false;
    cancellation: Bool, "",
        runtime(apply = |g, on| g.set_cancellation(on)),
        "a client giving up frees its sequence's slot and KV",
        default = false;
    enable_prefix_caching: Bool, "", fixed,
        "automatic prefix caching: KV in blocks, full blocks reused across prompts by chained hash, LRU eviction of unreferenced blocks",
        default = false;
    block_size: Count { min: 1, max: MAX_BLOCK_SIZE }, "tokens", fixed,
        "tokens per KV block (with enable_prefix_caching; the pool holds kv_cache_tokens / block_size blocks)",
        default = 16;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ParamValue, Params};

    #[test]
    fn parameters_read_write_and_keep_the_cross_field_rule() {
        let mut spec = ServerSpec::with_defaults("llm");
        let names: Vec<_> = ServerSpec::decls().iter().map(|d| d.name).collect();
        for name in &names {
            assert!(spec.get(name).is_some(), "{name} readable");
        }
        assert_eq!(spec.get("nope"), None);
        assert_eq!(spec.set("max_num_seqs", ParamValue::Count(64)), Ok(()));
        assert_eq!(spec.get("max_num_seqs"), Some(ParamValue::Count(64)));
        // 8192 tokens per step cannot serve 10,000 running sequences: refused, unchanged.
        assert!(spec.set("max_num_seqs", ParamValue::Count(10_000)).is_err());
        assert_eq!(spec.max_num_seqs, 64);
        assert!(spec.set("cancellation", ParamValue::Count(1)).is_err());
        assert_eq!(spec.set("cancellation", ParamValue::Bool(true)), Ok(()));
        assert!(spec.cancellation);
        let runtime: Vec<_> =
            ServerSpec::decls().iter().filter(|d| d.runtime).map(|d| d.name).collect();
        assert_eq!(
            runtime,
            ["max_num_seqs", "max_num_batched_tokens", "max_queue", "cancellation"]
        );
    }
}
