//! The router in front of a pool of GPU replicas (`GpuPool`): which replica a request goes
//! to, by the policies production LLM routers ship. A pure struct: the world hands it a view
//! of the request (its prompt's block hashes, its session) and of every replica (calls
//! outstanding, sequences waiting, KV in use, leading prompt blocks cached) and gets an
//! index back.
//!
//! The rules and the function each follows:
//!
//! - `RoundRobin`: replica `picks mod N` (vLLM production-stack `routing_logic.py`,
//!   `RoundRobinRouter.route_request`: `sorted_endpoints[req_id % len]`, `req_id += 1`).
//! - `LeastOutstanding`: the fewest calls at the replica (sent and not yet answered), as
//!   llm-d's `active-request-scorer` counts them (`ActiveRequest.Score`: incremented in
//!   `PreRequest`, decremented in `ResponseComplete`); here the world's own count of the
//!   calls each replica holds.
//! - `SessionAffinity`: a request with a session (its user, else its cache key) goes where
//!   a consistent hash sends the session (production-stack `SessionRouter.route_request`:
//!   `hash_ring.get_node(session_id)`, a `uhashring` ring). Here the consistent hash is
//!   rendezvous hashing — the replica `i` maximising `mix64(session ⊕ mix64(i))` — which
//!   has the ring's property (a session keeps its replica; adding a replica moves ~1/N of
//!   the sessions) without virtual nodes. A request without one goes to the least loaded
//!   replica (`SessionRouter` falls back to `_qps_routing`, the lowest QPS; here the fewest
//!   outstanding calls).
//! - `PrefixAware(Approximate)`: the router's own index of what each replica caches,
//!   learned from what it routed (gateway-api-inference-extension `prefix/plugin.go`:
//!   `hashPrompt` cuts the prompt into blocks and chains their hashes; `PreRequest` →
//!   `indexer.Add(hashes, target)`; `indexer.go`: one LRU of `LRUCapacityPerServer` hashes
//!   per server, an `Add` refreshing a hash already there). A replica's match is the run
//!   of the prompt's leading blocks in its index (`matchLongestPrefix`); the longest wins
//!   (production-stack `PrefixAwareRouter`: `hashtrie.longest_prefix_match`, then insert).
//!   The prompt is hashed with the replicas' own `block_size`, at most
//!   [`MAX_PREFIX_BLOCKS`] blocks (the gateway's `DefaultMaxPrefixBlocks`).
//! - `PrefixAware(Precise)`: the replicas' real cache (llm-d's `precise-prefix-cache-scorer`
//!   with KV events, `llm-d-kv-cache-manager`'s longest-prefix scorer): a replica's match
//!   is the run of the prompt's leading blocks its block pool holds now (`gpu/prefix.rs`).
//! - `Weighted(scorers)`: llm-d's inference scheduler (the scheduling profile's weighted
//!   scorers, then the `max-score-picker`): `Σ weight × score`, every score in [0, 1]:
//!   `Prefix(Approximate)` = matched ÷ hashed blocks (`prefix/plugin.go` `Score`);
//!   `Prefix(Precise)` = the matches min-max normalised, all 1 when equal (llm-d
//!   `indexedScoresToNormalizedScoredPods`); `Queue` = (max − waiting) ÷ (max − min), 1
//!   when equal (gateway `scorer/queue.go` `QueueScorer.Score`); `Load` = 0.5 with an empty
//!   queue, else 0.5 × (1 − min(waiting, threshold) ÷ threshold) (llm-d `load_aware.go`
//!   `LoadAware.Score`, threshold 128); `ActiveRequest` = (max − outstanding) ÷ max, 1 when
//!   none (llm-d `active_request.go`); `KvCache` = 1 − KV used ÷ KV budget (gateway
//!   `kvcache_utilization.go`).
//!
//! Ties: the real pickers break them at random (`max_score_picker.go` shuffles before a
//! stable sort; `PrefixAwareRouter` takes `random.choice` of the matched endpoints). Here,
//! deterministically, the tied replica first in the order that starts at `picks mod N`
//! (a rotating start: ties spread like round robin, as the shuffle spreads them on
//! average). `PrefixAware` breaks a tie of matches by the fewest outstanding calls first.
//!
//! Architecture invariant: `pick` returns an index below the replica count; the approximate
//! index holds at most `index_capacity` hashes per replica; nothing here draws a random
//! number or iterates a hash map. API boundary: [`Router::pick`] with [`RequestView`] and
//! [`ReplicaView`]s; [`prompt_block_hashes`] builds a request's hashes.

use super::prefix::{PromptPrefix, extend_hashes};
use serde::{Deserialize, Serialize};
use sim_core::rng::mix64;
use std::collections::BTreeMap;

/// Most prompt blocks the router hashes (the gateway's `DefaultMaxPrefixBlocks`).
pub const MAX_PREFIX_BLOCKS: u64 = 256;
/// Salt of the router's name for a request's own tokens ("RTR_OWN_").
const OWN_SALT: u64 = 0x5254_525f_4f57_4e5f;

/// Which cache the prefix-aware policies read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PrefixMode {
    /// The router's own LRU index of the blocks it routed to each replica.
    Approximate,
    /// The replicas' real prefix caches.
    Precise,
}

/// One scorer of a weighted combination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scorer {
    /// Matched leading prompt blocks.
    Prefix(PrefixMode),
    /// Sequences waiting at the replica, min-max normalised.
    Queue,
    /// Sequences waiting, against a threshold (llm-d load-aware).
    Load,
    /// Calls outstanding at the replica.
    ActiveRequest,
    /// Free share of the replica's KV cache.
    KvCache,
}

/// A router's policy, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RouterPolicy {
    RoundRobin,
    LeastOutstanding,
    SessionAffinity,
    PrefixAware(PrefixMode),
    /// `(scorer, weight)` pairs; the highest weighted sum wins.
    Weighted(Vec<(Scorer, f64)>),
}

impl RouterPolicy {
    /// The scenario check: a weighted combination has scorers, each weight finite and ≥ 0.
    pub fn check(&self) -> Result<(), String> {
        if let RouterPolicy::Weighted(s) = self {
            if s.is_empty() {
                return Err("Weighted: expected at least one (scorer, weight)".into());
            }
            if let Some((sc, w)) = s.iter().find(|(_, w)| !w.is_finite() || *w < 0.0) {
                return Err(format!("Weighted: {sc:?} has weight {w}: expected a finite w ≥ 0"));
            }
        }
        Ok(())
    }

    fn scorers(&self) -> impl Iterator<Item = Scorer> + '_ {
        let own = match self {
            RouterPolicy::PrefixAware(m) => Some(Scorer::Prefix(*m)),
            _ => None,
        };
        let weighted = match self {
            RouterPolicy::Weighted(s) => s.as_slice(),
            _ => &[],
        };
        own.into_iter().chain(weighted.iter().map(|(s, _)| *s))
    }

    /// Does it read the prompt's block hashes?
    pub fn needs_hashes(&self) -> bool {
        self.scorers().any(|s| matches!(s, Scorer::Prefix(_)))
    }

    /// Does it read the replicas' real caches?
    pub fn needs_precise(&self) -> bool {
        self.scorers().any(|s| s == Scorer::Prefix(PrefixMode::Precise))
    }

    fn learns(&self) -> bool {
        self.scorers().any(|s| s == Scorer::Prefix(PrefixMode::Approximate))
    }
}

/// What the router sees of a request.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestView<'a> {
    /// The chained hashes of its prompt's full blocks ([`prompt_block_hashes`]).
    pub hashes: &'a [u64],
    /// Its session (user, else cache key); `None`: it has none.
    pub session: Option<u64>,
}

/// What the router sees of a replica.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReplicaView {
    /// Calls sent to it and not yet answered.
    pub outstanding: u64,
    /// Sequences in its waiting queue.
    pub waiting: u64,
    /// KV in use ÷ KV budget, in [0, 1].
    pub kv_usage: f64,
    /// Leading blocks of the request's prompt its prefix cache holds (read only by the
    /// precise policies; 0 otherwise).
    pub cached_blocks: u64,
}

/// The chained block hashes of a prompt of `prompt` tokens laid out as `prefix` (then the
/// request's own tokens, named by `own`): its full blocks of `block_size` tokens, at most
/// [`MAX_PREFIX_BLOCKS`]. The shared blocks hash as the replicas' prefix caches hash them.
pub fn prompt_block_hashes(
    prefix: &PromptPrefix,
    prompt: u64,
    block_size: u64,
    own: u64,
) -> Vec<u64> {
    let n = (prompt / block_size).min(MAX_PREFIX_BLOCKS);
    let mut out = Vec::with_capacity(n as usize);
    extend_hashes(&mut out, n, prefix, prompt, mix64(own ^ OWN_SALT), block_size);
    out
}

/// One replica's approximate index: an LRU set of block hashes.
#[derive(Clone, Debug, Default)]
struct LruSet {
    /// Hash → the stamp of its last `add`.
    stamp: BTreeMap<u64, u64>,
    /// Stamp → hash: the oldest first.
    order: BTreeMap<u64, u64>,
}

impl LruSet {
    fn add(&mut self, hash: u64, now: u64, capacity: usize) {
        if let Some(old) = self.stamp.insert(hash, now) {
            self.order.remove(&old);
        }
        self.order.insert(now, hash);
        while self.stamp.len() > capacity {
            let (_, h) = self.order.pop_first().expect("non-empty");
            self.stamp.remove(&h);
        }
    }

    /// The run of `hashes`' leading entries held.
    fn leading(&self, hashes: &[u64]) -> u64 {
        hashes.iter().take_while(|h| self.stamp.contains_key(h)).count() as u64
    }
}

/// The router's state.
#[derive(Clone, Debug)]
pub struct Router {
    policy: RouterPolicy,
    /// Picks so far: the round-robin position and the tie-break start.
    picks: u64,
    index: Vec<LruSet>,
    index_capacity: usize,
    /// Stamps of the index's adds.
    adds: u64,
    queue_threshold: u64,
}

impl Router {
    pub fn new(
        policy: &RouterPolicy,
        replicas: usize,
        index_capacity: u64,
        queue_threshold: u64,
    ) -> Router {
        assert!(replicas > 0, "a pool has replicas");
        Router {
            policy: policy.clone(),
            picks: 0,
            index: vec![LruSet::default(); if policy.learns() { replicas } else { 0 }],
            index_capacity: index_capacity as usize,
            adds: 0,
            queue_threshold: queue_threshold.max(1),
        }
    }

    pub fn policy(&self) -> &RouterPolicy {
        &self.policy
    }

    /// Hashes the approximate index holds for replica `i` (0 without one).
    pub fn indexed(&self, i: usize) -> usize {
        self.index.get(i).map_or(0, |s| s.stamp.len())
    }

    /// The replica for `req`; the approximate index learns the pick.
    pub fn pick(&mut self, req: &RequestView<'_>, reps: &[ReplicaView]) -> usize {
        let n = reps.len();
        debug_assert!(self.index.is_empty() || self.index.len() == n, "one view per replica");
        let start = (self.picks % n as u64) as usize;
        let least = |r: &ReplicaView| -(r.outstanding as f64);
        let i = match &self.policy {
            RouterPolicy::RoundRobin => start,
            RouterPolicy::LeastOutstanding => argmax(n, start, |i| least(&reps[i])),
            RouterPolicy::SessionAffinity => match req.session {
                Some(s) => argmax(n, 0, |i| mix64(s ^ mix64(i as u64)) as f64),
                None => argmax(n, start, |i| least(&reps[i])),
            },
            RouterPolicy::PrefixAware(mode) => {
                let m = self.matches(*mode, req.hashes, reps);
                // Longest match, then fewest outstanding (outstanding < 2⁴⁰ by far).
                argmax(n, start, |i| m[i] as f64 * 1e12 - reps[i].outstanding as f64)
            }
            RouterPolicy::Weighted(scorers) => {
                let mut total = vec![0.0; n];
                for &(s, w) in scorers {
                    for (t, x) in total.iter_mut().zip(self.scores(s, req, reps)) {
                        *t += w * x;
                    }
                }
                argmax(n, start, |i| total[i])
            }
        };
        self.picks += 1;
        if self.policy.learns() {
            for &h in req.hashes {
                self.adds += 1;
                self.index[i].add(h, self.adds, self.index_capacity);
            }
        }
        i
    }

    /// Each replica's run of matched leading blocks.
    fn matches(&self, mode: PrefixMode, hashes: &[u64], reps: &[ReplicaView]) -> Vec<u64> {
        match mode {
            PrefixMode::Approximate => self.index.iter().map(|s| s.leading(hashes)).collect(),
            PrefixMode::Precise => reps.iter().map(|r| r.cached_blocks).collect(),
        }
    }

    /// One scorer's scores, each in [0, 1] (the module doc names each one's source).
    fn scores(&self, s: Scorer, req: &RequestView<'_>, reps: &[ReplicaView]) -> Vec<f64> {
        let minmax = |v: &[f64]| {
            let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
            v.iter().map(|&x| if hi == lo { 1.0 } else { (x - lo) / (hi - lo) }).collect()
        };
        match s {
            Scorer::Prefix(PrefixMode::Approximate) => {
                let total = req.hashes.len() as f64;
                let m = self.matches(PrefixMode::Approximate, req.hashes, reps);
                m.iter().map(|&x| if total == 0.0 { 0.0 } else { x as f64 / total }).collect()
            }
            Scorer::Prefix(PrefixMode::Precise) => {
                minmax(&reps.iter().map(|r| r.cached_blocks as f64).collect::<Vec<_>>())
            }
            Scorer::Queue => minmax(&reps.iter().map(|r| -(r.waiting as f64)).collect::<Vec<_>>()),
            Scorer::Load => {
                let t = self.queue_threshold as f64;
                let load = |q: u64| if q == 0 { 0.5 } else { 0.5 * (1.0 - (q as f64).min(t) / t) };
                reps.iter().map(|r| load(r.waiting)).collect()
            }
            Scorer::ActiveRequest => {
                let max = reps.iter().map(|r| r.outstanding).max().unwrap_or(0);
                let s = |c: u64| if c == 0 { 1.0 } else { (max - c) as f64 / max as f64 };
                reps.iter().map(|r| s(r.outstanding)).collect()
            }
            Scorer::KvCache => reps.iter().map(|r| 1.0 - r.kv_usage.clamp(0.0, 1.0)).collect(),
        }
    }
}

/// The index with the highest `score`, ties to the first in the order `start, start + 1, …`
/// (cyclic).
fn argmax(n: usize, start: usize, score: impl Fn(usize) -> f64) -> usize {
    let mut best = start % n;
    let mut top = score(best);
    for k in 1..n {
        let i = (start + k) % n;
        let s = score(i);
        if s > top {
            (best, top) = (i, s);
        }
    }
    best
}
