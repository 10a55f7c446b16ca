//! The cluster flow rule's parameters in the registry (`cluster_flow.<name>.<field>`) and
//! their run-time application.
//!
//! Architecture invariant: every parameter declared `runtime: true` is handled by
//! [`ClusterFlow::apply_param`]; a change reaches the declared rule and all its per-instance
//! copies (the world applies it to each), and a server-side value written by each copy is
//! the same value (idempotent on the shared server).
//!
//! API boundary: names and types only; range checks happen in the registry.

use super::cluster::{ClusterFlow, ClusterFlowRuleSpec};
use crate::params::{ParamDecl, ParamType, ParamValue as V, Params};
use sim_core::SimDuration;

impl Params for ClusterFlowRuleSpec {
    const KIND: &'static str = "cluster_flow";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<ParamDecl> {
        let d = |name, ty, unit, runtime, doc| ParamDecl { name, ty, unit, runtime, doc };
        vec![
            d(
                "count",
                ParamType::Float { min: 0.0, max: 1e9 },
                "qps",
                true,
                "threshold: cluster-wide (GLOBAL) or per client (AVG_LOCAL); the local fallback's",
            ),
            d(
                "server_up",
                ParamType::Bool,
                "bool",
                true,
                "the token server is reachable (false: clients fall back)",
            ),
            d(
                "fallback_to_local_when_fail",
                ParamType::Bool,
                "bool",
                true,
                "server failed: local check (true) or pass unchecked (false)",
            ),
            d(
                "exceed_count",
                ParamType::Float { min: 0.01, max: 100.0 },
                "factor",
                true,
                "server: thresholds × this (exceedCount)",
            ),
            d(
                "max_allowed_qps",
                ParamType::Float { min: 0.0, max: 1e9 },
                "qps",
                true,
                "server: requests per second it answers (maxAllowedQps)",
            ),
            d(
                "token_rtt",
                ParamType::Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(60) },
                "ns",
                true,
                "round trip of a token request (0 = immediate)",
            ),
            d(
                "request_timeout_ms",
                ParamType::Count { min: 1, max: 3_600_000 },
                "ms",
                true,
                "client: an answer slower than this is a failure (requestTimeout)",
            ),
            d(
                "sample_count",
                ParamType::Count { min: 1, max: 1000 },
                "buckets",
                false,
                "server window: buckets",
            ),
            d(
                "window_interval_ms",
                ParamType::Count { min: 1, max: 3_600_000 },
                "ms",
                false,
                "server window: length",
            ),
        ]
    }
    fn get(&self, p: &str) -> Option<V> {
        Some(match p {
            "count" => V::Float(self.count),
            "server_up" => V::Bool(self.server_up),
            "fallback_to_local_when_fail" => V::Bool(self.fallback_to_local_when_fail),
            "exceed_count" => V::Float(self.exceed_count),
            "max_allowed_qps" => V::Float(self.max_allowed_qps),
            "token_rtt" => V::Duration(self.token_rtt),
            "request_timeout_ms" => V::Count(self.request_timeout_ms),
            "sample_count" => V::Count(self.sample_count),
            "window_interval_ms" => V::Count(self.window_interval_ms),
            _ => return None,
        })
    }
    fn set(&mut self, p: &str, v: V) -> Result<(), String> {
        match (p, v) {
            ("count", V::Float(x)) => self.count = x,
            ("server_up", V::Bool(b)) => self.server_up = b,
            ("fallback_to_local_when_fail", V::Bool(b)) => self.fallback_to_local_when_fail = b,
            ("exceed_count", V::Float(x)) => self.exceed_count = x,
            ("max_allowed_qps", V::Float(x)) => self.max_allowed_qps = x,
            ("token_rtt", V::Duration(d)) => self.token_rtt = d,
            ("request_timeout_ms", V::Count(n)) => self.request_timeout_ms = n,
            ("sample_count", V::Count(n)) => self.sample_count = n,
            ("window_interval_ms", V::Count(n)) => self.window_interval_ms = n,
            (p, v) => return Err(format!("cluster_flow has no parameter `{p}` of type {v:?}")),
        }
        Ok(())
    }
}

impl ClusterFlow {
    /// Applies a run-time change; every window is kept.
    pub fn apply_param(&mut self, p: &str, v: V) -> Result<(), String> {
        match (p, v) {
            ("count", V::Float(x)) => self.set_count(x),
            ("server_up", V::Bool(b)) => self.set_server_up(b),
            ("fallback_to_local_when_fail", V::Bool(b)) => self.set_fallback(b),
            ("exceed_count", V::Float(x)) => self.set_exceed_count(x),
            ("max_allowed_qps", V::Float(x)) => self.set_max_allowed_qps(x),
            ("token_rtt", V::Duration(d)) => self.set_token_rtt(d),
            ("request_timeout_ms", V::Count(n)) => self.set_request_timeout_ms(n),
            (p, v) => return Err(format!("cluster_flow.{p} = {v:?} is not run-time changeable")),
        }
        Ok(())
    }
}
