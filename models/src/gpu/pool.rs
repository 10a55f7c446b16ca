//! A pool of GPU replicas behind a router, as written in scenarios (`gpu_pools: [...]`):
//! `replicas` copies of one GPU server (`server`, the template: every replica is that
//! server, with its own queue, batch and KV cache) and the router that picks a replica for
//! each call (`router`, `gpu/router.rs`). A call site targets the pool by its name, like a
//! GPU server.
//!
//! Architecture invariant: a pool's replicas are GPU servers in every respect (the world's
//! step loop, cancellation and prefix cache are the GPU server's: `world/gpu.rs`); only
//! the choice of replica is the pool's. API boundary: [`GpuPoolSpec`] (scenario, checked
//! by [`GpuPoolSpec::check`]); the run-time side is `world/gpu_pool.rs`.

use super::router::RouterPolicy;
use super::server::ServerSpec;
use serde::{Deserialize, Serialize};

/// Most replicas in one pool.
pub const MAX_POOL_REPLICAS: u64 = 1024;

/// A pool of GPU replicas behind a router.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "GpuPool")]
pub struct GpuPoolSpec {
    /// Name; call sites target it, its parameters live under `gpu_pool.<name>.*` and its
    /// replicas' series under `gpu_pool.<name>.r<i>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    #[serde(deserialize_with = "R::replicas")]
    pub replicas: u64,
    /// Every replica's configuration (its `name` is not used: replica `i` is `r<i>`).
    pub server: ServerSpec,
    pub router: RouterPolicy,
    /// Hashes per replica in the router's approximate prefix index.
    #[serde(default = "D::index_capacity", deserialize_with = "R::index_capacity")]
    pub index_capacity: u64,
    /// Waiting sequences at which the `Load` scorer reaches 0.
    #[serde(default = "D::queue_threshold", deserialize_with = "R::queue_threshold")]
    pub queue_threshold: u64,
}

type D = crate::params::Defaults<GpuPoolSpec>;
type R = crate::params::Ranged<GpuPoolSpec>;

impl GpuPoolSpec {
    /// The template's own rules and the router's.
    pub fn check(&self) -> Result<(), String> {
        self.server.check().map_err(|e| format!("server: {e}"))?;
        self.router.check().map_err(|e| format!("router: {e}"))
    }
}

crate::params::declare_params! {
    GpuPoolSpec: "gpu_pool", name = |s| s.name, check = GpuPoolSpec::check,
        scenario_only = [
            server: "the replicas' template: a GPU server's whole configuration",
            router: "a policy chosen as a whole (a choice carrying scorers and weights)",
        ];
    replicas: Count { min: 1, max: MAX_POOL_REPLICAS }, "replicas", fixed,
        "GPU servers in the pool, each a copy of `server`";
    index_capacity: Count { min: 1, max: 1 << 30 }, "hashes", fixed,
        "block hashes per replica in the router's approximate prefix index (LRU; the gateway's LRUCapacityPerServer)",
        default = 31_250;
    queue_threshold: Count { min: 1, max: 1 << 30 }, "sequences", fixed,
        "waiting sequences at which the Load scorer reaches 0 (llm-d load-aware threshold)",
        default = 128;
}
