//! Traffic classes: business value and SLA of the work a request represents.
//!
//! Classes are ordered: the first is the most important (P0). Every request carries the
//! class of its source; governors see it in `CallInfo::class`, and results are reported per
//! class as well as per source (`class.<name>.*`, with the share of answers within the SLA).
//! Without a `classes` list a scenario has the domain's three (docs/domain.md §2): P0 real-time chat (SLA 3 s),
//! P1 near-real-time, P2 batch.

use crate::validate;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Class")]
pub struct ClassSpec {
    #[serde(deserialize_with = "validate::name")]
    pub name: String,
    /// Relative weight (for weighted policies), ≥ 1.
    #[serde(
        default = "D::weight",
        deserialize_with = "crate::params::Ranged::<ClassSpec>::weight"
    )]
    pub weight: u64,
    /// Target end-to-end latency; `"0s"` = none.
    #[serde(default = "D::sla")]
    pub sla: SimDuration,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<ClassSpec>;

/// The domain's default classes (docs/domain.md §2).
pub fn default_classes() -> Vec<ClassSpec> {
    vec![
        ClassSpec { name: "P0".into(), weight: 3, sla: SimDuration::from_secs(3) },
        ClassSpec { name: "P1".into(), weight: 2, sla: SimDuration::ZERO },
        ClassSpec { name: "P2".into(), weight: 1, sla: SimDuration::ZERO },
    ]
}

crate::params::declare_params! {
    ClassSpec: "class", name = |s| s.name;
    weight: Count { min: 1, max: 1_000_000 }, "", fixed,
        "relative weight of the class for weighted policies", default = 1;
    sla: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns", fixed,
        "target end-to-end latency (0 = none); results report the share within it",
        default = SimDuration::ZERO;
}
