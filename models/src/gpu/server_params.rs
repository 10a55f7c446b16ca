//! The parameters of a [`ServerSpec`] in the registry (`gpu_server.<name>.<param>`).
//!
//! The key design decision: only what a running vLLM can take without a restart in effect
//! (admission limits, the queue bound, cancellation) is run-time changeable; the KV budget
//! and the chunking mode shape the memory plan and are fixed for a run.
//!
//! Architecture invariant: a value written here passes [`ServerSpec::check`] (the
//! cross-field rule `max_num_batched_tokens ≥ max_num_seqs` included) or is refused.
//!
//! API boundary: [`Params`] for [`ServerSpec`]; the world applies run-time values to the
//! [`super::Server`] with its `set_*` methods.

use super::server::{MAX_NUM_SEQS, MAX_TOKENS, ServerSpec};
use crate::params::{ParamDecl, ParamType, ParamValue, Params};

impl Params for ServerSpec {
    const KIND: &'static str = "gpu_server";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<ParamDecl> {
        let count = |name, max, unit, runtime, doc| ParamDecl {
            name,
            ty: ParamType::Count { min: 1, max },
            unit,
            runtime,
            doc,
        };
        vec![
            count("max_num_seqs", MAX_NUM_SEQS, "sequences", true, "running sequences at most"),
            count(
                "max_num_batched_tokens",
                MAX_TOKENS,
                "tokens",
                true,
                "tokens per step (≥ max_num_seqs)",
            ),
            count("kv_cache_tokens", MAX_TOKENS, "tokens", false, "KV-cache budget"),
            count("max_queue", MAX_TOKENS, "sequences", true, "bound on the waiting queue"),
            ParamDecl {
                name: "enable_chunked_prefill",
                ty: ParamType::Bool,
                unit: "",
                runtime: false,
                doc: "prefill prompts in chunks mixed with decodes",
            },
            ParamDecl {
                name: "cancellation",
                ty: ParamType::Bool,
                unit: "",
                runtime: true,
                doc: "a client giving up frees its sequence's slot and KV",
            },
        ]
    }
    fn get(&self, p: &str) -> Option<ParamValue> {
        Some(match p {
            "max_num_seqs" => ParamValue::Count(self.max_num_seqs),
            "max_num_batched_tokens" => ParamValue::Count(self.max_num_batched_tokens),
            "kv_cache_tokens" => ParamValue::Count(self.kv_cache_tokens),
            "max_queue" => ParamValue::Count(self.max_queue),
            "enable_chunked_prefill" => ParamValue::Bool(self.enable_chunked_prefill),
            "cancellation" => ParamValue::Bool(self.cancellation),
            _ => return None,
        })
    }
    fn set(&mut self, p: &str, v: ParamValue) -> Result<(), String> {
        let mut next = self.clone();
        match (p, v) {
            ("max_num_seqs", ParamValue::Count(n)) => next.max_num_seqs = n,
            ("max_num_batched_tokens", ParamValue::Count(n)) => next.max_num_batched_tokens = n,
            ("kv_cache_tokens", ParamValue::Count(n)) => next.kv_cache_tokens = n,
            ("max_queue", ParamValue::Count(n)) => next.max_queue = n,
            ("enable_chunked_prefill", ParamValue::Bool(b)) => next.enable_chunked_prefill = b,
            ("cancellation", ParamValue::Bool(b)) => next.cancellation = b,
            (p, v) => return Err(format!("gpu_server has no parameter `{p}` of type {v:?}")),
        }
        next.check()?;
        *self = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
