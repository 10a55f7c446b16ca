//! An open-loop traffic source: a renewal process of arrivals.
//!
//! Inter-arrival times come from the source's own ChaCha stream (`arrivals/<name>`), so the
//! arrival times do not depend on anything else in the run. A [`Profile`] warps the gaps
//! through a time-varying rate multiplier (exactly, by inversion). The first arrival is at
//! `start`. Per-request attributes are
//! keyed by `(seed, source, sequence)`, never drawn from this stream.

use crate::params::{ParamDecl, ParamType, ParamValue, Params};
use crate::profile::Profile;
use crate::validate;
use serde::{Deserialize, Serialize};
use sim_core::{Dist, SimDuration};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Source")]
pub struct SourceSpec {
    #[serde(deserialize_with = "validate::name")]
    pub name: String,
    /// Inter-arrival time distribution (`Exponential` = Poisson arrivals).
    pub interarrival: Dist<SimDuration>,
    /// The call site its requests enter.
    pub target: String,
    /// First arrival at this time (default 0).
    #[serde(default)]
    pub start: SimDuration,
    /// Stop generating after this many requests (default: no limit). With a finite limit
    /// a zero gap is allowed: `interarrival: Constant("0s"), limit: Some(20000)` is a batch
    /// flood of 20,000 requests at `start`; `Constant("5ms")` spreads them.
    #[serde(default, deserialize_with = "validate::opt_at_least_one")]
    pub limit: Option<u64>,
    /// Time-varying load: a rate multiplier that warps the arrival process (diurnal cycles,
    /// surges, on/off). `None`: constant.
    #[serde(default)]
    pub profile: Option<Profile>,
}

impl Params for SourceSpec {
    const KIND: &'static str = "source";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<ParamDecl> {
        vec![
            ParamDecl {
                name: "interarrival",
                ty: ParamType::DurationDist,
                unit: "ns",
                runtime: true,
                doc: "time between arrivals (takes effect from the next arrival)",
            },
            ParamDecl {
                name: "start",
                ty: ParamType::Duration { min: SimDuration::ZERO, max: SimDuration::MAX },
                unit: "ns",
                runtime: false,
                doc: "time of the first arrival",
            },
            ParamDecl {
                name: "limit",
                ty: ParamType::OptCount { min: 1, max: u64::MAX },
                unit: "requests",
                runtime: false,
                doc: "stop after this many requests (None = unlimited)",
            },
        ]
    }
    fn get(&self, p: &str) -> Option<ParamValue> {
        Some(match p {
            "interarrival" => ParamValue::DurationDist(self.interarrival.clone()),
            "start" => ParamValue::Duration(self.start),
            "limit" => ParamValue::OptCount(self.limit),
            _ => return None,
        })
    }
    fn set(&mut self, p: &str, v: ParamValue) -> Result<(), String> {
        match (p, v) {
            ("interarrival", ParamValue::DurationDist(d)) => self.interarrival = d,
            ("start", ParamValue::Duration(d)) => self.start = d,
            ("limit", ParamValue::OptCount(n)) => self.limit = n,
            (p, v) => return Err(format!("source has no parameter `{p}` of type {v:?}")),
        }
        Ok(())
    }
}
