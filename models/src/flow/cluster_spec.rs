//! The cluster flow rule as written in scenarios (`ClusterFlowRule`, Sentinel's `FlowRule`
//! with `clusterMode: true` and its `ClusterFlowConfig`, plus the token server's
//! `ServerFlowConfig` values that matter), with range validation at deserialization.
//!
//! Architecture invariant: a spec that passed deserialization and [`ClusterFlowRuleSpec::check`]
//! builds a server whose window divides evenly (Sentinel's `ClusterMetric` asserts it).
//!
//! API boundary: data only; [`super::cluster::ClusterFlow::new`] builds the governor.

use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

crate::params::param_choices! {
    /// `thresholdType` of Sentinel's `ClusterFlowConfig`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum ThresholdType {
        /// `FLOW_THRESHOLD_AVG_LOCAL` (0, Sentinel's default): `count` per connected client.
        #[default]
        AvgLocal = "AVG_LOCAL",
        /// `FLOW_THRESHOLD_GLOBAL` (1): `count` for the whole cluster.
        Global = "GLOBAL",
    }
}

/// A cluster-mode flow rule (QPS grade, default behaviour), as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "ClusterFlowRule")]
pub struct ClusterFlowRuleSpec {
    /// Name (the resource / flow id); parameters live under `cluster_flow.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// The threshold in QPS, in [0, 1e9]: cluster-wide (`GLOBAL`) or per client
    /// (`AVG_LOCAL`); also the local fallback rule's threshold on each instance.
    #[serde(deserialize_with = "R::count")]
    pub count: f64,
    #[serde(default = "crate::params::Defaults::<ClusterFlowRuleSpec>::threshold_type")]
    pub threshold_type: ThresholdType,
    /// When the token server fails: check the rule locally (true, Sentinel's default) or
    /// let the call pass unchecked (false).
    #[serde(default = "D::fallback_to_local_when_fail")]
    pub fallback_to_local_when_fail: bool,
    /// Buckets of the server's sliding window (Sentinel default 10).
    #[serde(default = "D::sample_count", deserialize_with = "R::sample_count")]
    pub sample_count: u64,
    /// Length of the server's sliding window in ms (Sentinel default 1000); a multiple of
    /// `sample_count`.
    #[serde(default = "D::window_interval_ms", deserialize_with = "R::window_interval_ms")]
    pub window_interval_ms: u64,
    /// The server's `exceedCount` (`ServerFlowConfig`, default 1.0): thresholds × this.
    #[serde(default = "D::exceed_count", deserialize_with = "R::exceed_count")]
    pub exceed_count: f64,
    /// The server's `maxAllowedQps` (default 30 000): requests beyond it in a rolling
    /// second are answered `TOO_MANY_REQUEST` (the client falls back).
    #[serde(default = "D::max_allowed_qps", deserialize_with = "R::max_allowed_qps")]
    pub max_allowed_qps: f64,
    /// The token server is reachable (simulation knob; `false` = an outage: every request
    /// fails and the clients fall back). Run-time changeable.
    #[serde(default = "D::server_up")]
    pub server_up: bool,
    /// The token request's round trip (simulation knob; default `"0s"`: answers are
    /// immediate). A call waits for its answer; the server decides when the request is
    /// sent (a constant shift of its clock).
    #[serde(default = "D::token_rtt")]
    pub token_rtt: SimDuration,
    /// The client's `requestTimeout` (`ClusterClientConfig`, default 20 ms): an answer
    /// slower than this is a FAIL — the call falls back when the timeout fires (the server
    /// has counted the token all the same).
    #[serde(default = "D::request_timeout_ms", deserialize_with = "R::request_timeout_ms")]
    pub request_timeout_ms: u64,
}

/// The defaults declared in the parameter rows (`flow/cluster_params.rs`).
type D = crate::params::Defaults<ClusterFlowRuleSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<ClusterFlowRuleSpec>;

impl ClusterFlowRuleSpec {
    /// Cross-field rule (Sentinel's `ClusterMetric` asserts it): the window divides evenly.
    pub fn check(&self) -> Result<(), String> {
        if !self.window_interval_ms.is_multiple_of(self.sample_count) {
            return Err(format!(
                "window_interval_ms ({}) must be a multiple of sample_count ({})",
                self.window_interval_ms, self.sample_count
            ));
        }
        Ok(())
    }
}
