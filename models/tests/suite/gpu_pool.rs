//! GPU pools in a running world (`gpu/pool.rs`, `gpu/router.rs`, `world/gpu_pool.rs`):
//! replicas behind a router, each replica a GPU server with its own prefix cache.

use crate::support::{cfg, get, load, run_checked};

/// T = 8 tenants (users 1..=8, drawn uniformly), each with its own S = 1,024-token shared
/// prefix (scope User), then U = 64 tokens of the request's own, 16 output tokens; one
/// request every 100 ms (Poisson) on N = 4 replicas with prefix caching, each holding
/// `kv` tokens of KV in blocks of 16.
fn tenants(router: &str, kv: u64) -> String {
    tenants_indexed(router, kv, 31_250)
}

/// [`tenants`] with the router's approximate index holding `index` hashes a replica.
fn tenants_indexed(router: &str, kv: u64, index: u64) -> String {
    format!(
        r#"Scenario(
    name: "tenants",
    sources: [(name: "chat", interarrival: Exponential(mean: "100ms"), target: "infer",
               prompt_tokens: Constant(1088.0), output_tokens: Constant(16.0),
               prefix: [Prefix(scope: User, tokens: Fixed(1024))])],
    users: Some(Users(count: 8)),
    call_sites: [(name: "infer", upstream: "pool")],
    stations: [],
    gpu_pools: [GpuPool(name: "pool", replicas: 4, router: {router}, index_capacity: {index},
                        server: GpuServer(name: "replica", enable_prefix_caching: true,
                                          kv_cache_tokens: {kv}))],
)"#
    )
}

const ROUTERS: [&str; 6] = [
    "RoundRobin",
    "LeastOutstanding",
    "SessionAffinity",
    "PrefixAware(Approximate)",
    "PrefixAware(Precise)",
    "Weighted([(Prefix(Approximate), 3.0), (Queue, 2.0), (Load, 1.0)])",
];

/// The pool's token hit rate and its requests routed (Σ picks).
fn hit_rate(router: &str, kv: u64) -> (f64, u64) {
    hit_rate_indexed(router, kv, 31_250)
}

fn hit_rate_indexed(router: &str, kv: u64, index: u64) -> (f64, u64) {
    let r = run_checked(&load(&tenants_indexed(router, kv, index)), &cfg(1, 40));
    let n = (0..4).map(|i| get(&r, &format!("gpu_pool.pool.r{i}.picks")) as u64).sum();
    // Each replica reports as a GPU server does, under its own path.
    let answered: f64 = (0..4).map(|i| get(&r, &format!("gpu_pool.pool.r{i}.answered"))).sum();
    assert_eq!(answered as u64, n, "{router}: every routed call answered (light load)");
    (get(&r, "gpu_pool.pool.prefix_hit_rate"), n)
}

/// A request finds its tenant's prefix at its replica unless it is the tenant's first
/// request there (nothing is evicted with 870,000 tokens of KV); a hit finds all S tokens
/// (S is whole blocks and below the prompt's length − 1), of S + U looked up. So with n
/// requests the token hit rate is (n − misses)·S / (n·(S + U)), and
/// - round robin (and least outstanding, which at this light load finds every replica
///   idle and breaks the tie by the same rotation) sends each tenant's ~49 requests to
///   every replica: misses = T·N = 32 (a tenant missing a replica: (3/4)^49 ≈ 10⁻⁶);
/// - session affinity, prefix-aware (approximate or precise) and the weighted scorers keep
///   a tenant on one replica: misses = T = 8.
///
/// n ≈ 394: round robin ≈ 0.919 · 0.941 = 0.865, affinity ≈ 0.980 · 0.941 = 0.922.
#[test]
fn with_room_for_every_prefix_affinity_misses_once_per_tenant_round_robin_once_per_replica() {
    let (s, u, t, replicas) = (1024.0, 64.0, 8.0, 4.0);
    for router in ROUTERS {
        let (rate, n) = hit_rate(router, 870_000);
        let spread = matches!(router, "RoundRobin" | "LeastOutstanding");
        let misses = if spread { t * replicas } else { t };
        let n = n as f64;
        let want = (n - misses) * s / (n * (s + u));
        assert!((rate - want).abs() < 1e-12, "{router}: {rate} vs {want}");
    }
}

/// With KV for 5 prefixes a replica (5,120 tokens = 320 blocks of 16; a prefix is 64
/// blocks), round robin makes every replica cache all T = 8 tenants: an LRU cache holding
/// C of T equally likely items finds one with probability C/T (each of the T is equally
/// likely to be among the C most recently used), and the requests' own blocks take room
/// too, so its request hit rate is ≤ 5/8 and its token hit rate ≤ 5/8 · S/(S + U) = 0.588
/// (measured 0.51). The affinity routers give a replica T/N = 2 tenants (3 at most here,
/// 192 blocks): nothing of theirs is evicted, and they keep the hit rate they have with
/// room for everything (0.922), above 0.9.
#[test]
fn with_a_small_cache_prefix_aware_routing_keeps_what_round_robin_evicts() {
    let bound = 5.0 / 8.0 * 1024.0 / 1088.0;
    let (rr, _) = hit_rate("RoundRobin", 5120);
    assert!(rr < bound, "round robin {rr} ≥ {bound}");
    for router in &ROUTERS[2..] {
        let (rate, _) = hit_rate(router, 5120);
        assert!(rate > 0.9 && rate > rr + 0.3, "{router}: {rate} vs round robin {rr}");
    }
}

/// The approximate index is the router's guess: with room for 68 hashes a replica (one
/// request's prompt: 1,088 / 16 blocks) it remembers only the last tenant routed to each
/// replica, so a tenant finds its replica only if nobody else was routed there since:
/// of the 4 replicas' last tenants, one is this tenant with probability ≤ 4/8 per request
/// (each replica remembers one of 8 tenants), and otherwise it goes by load — round robin
/// in effect, with its hit rate bounded by the cache (≤ 5/8 of the prefix tokens, above).
/// So its token hit rate is ≤ (1/2 + 1/2 · 5/8) · S/(S + U) = 0.765 (measured 0.635). The precise router
/// reads the replicas' caches, which hold up to 5 prefixes each: it keeps a tenant where
/// its prefix is and stays at the affinity routers' 0.922 (> 0.9).
#[test]
fn a_small_approximate_index_forgets_what_the_precise_router_reads() {
    let bound = (0.5 + 0.5 * 5.0 / 8.0) * 1024.0 / 1088.0;
    let (approx, _) = hit_rate_indexed("PrefixAware(Approximate)", 5120, 68);
    let (precise, _) = hit_rate_indexed("PrefixAware(Precise)", 5120, 68);
    assert!(approx < bound, "approximate {approx} ≥ {bound}");
    assert!(precise > 0.9, "precise {precise}");
}

/// A pool is checked like a GPU server: a name clash, an empty weighted router and a bad
/// template are refused with the field's path.
#[test]
fn pool_declarations_are_checked() {
    let bad = |from: &str, to: &str| {
        let text = tenants("RoundRobin", 5120).replace(from, to);
        let spec: models::scenario::ScenarioSpec<models::params::ParamValue> =
            ron::from_str(&text).expect("parses");
        spec.check().expect_err("refused")
    };
    let e = bad("RoundRobin", "Weighted([])");
    assert_eq!(e.path, "gpu_pools[0]");
    assert!(e.message.contains("at least one"), "{}", e.message);
    let e = bad("kv_cache_tokens: 5120", "kv_cache_tokens: 5120, max_num_seqs: 9000");
    assert_eq!(e.path, "gpu_pools[0]");
    let e =
        bad("stations: [],", r#"stations: [(name: "pool", servers: 1, service: Constant("1s"))],"#);
    assert_eq!(e.path, "gpu_pools[0].name");
    let e = bad(r#"upstream: "pool""#, r#"upstream: "nope""#);
    assert!(e.message.contains("GPU pool") && e.message.contains("pool"), "{}", e.message);
}
