//! The result cache governor (docs/domain.md §3.11–§3.12) and single-flight ([`singleflight`]).
//!
//! Calls carry a key (`CallInfo::key`, the normalised or semantic question; 0 =
//! uncacheable, passes untouched). The cache holds, per key, the time its answer was stored,
//! in an LRU of `capacity` entries ([`lru`]). An entry of age `a = now − stored_at` is
//! * **fresh** while `a < ttl` (exclusive: at exactly `stored_at + ttl` it is stale);
//! * **stale** while `ttl ≤ a < ttl + max_stale` (only kept when `serve_stale_on_error` or
//!   `stale_while_revalidate` is on; otherwise `max_stale` counts as 0);
//! * **dead** from `ttl + max_stale` on: removed at the next lookup of its key.
//!
//! Semantic matching: a lookup that finds an entry matches with `hit_probability`, decided
//! by `u = bits_to_open01(mix64(draw ^ K))` < p — a property of the call (its question vs
//! the stored one), so the same call matches or misses consistently at lookup and on error.
//!
//! Decisions on the way down (`on_call`):
//! * fresh entry that matches → `ServeLocally(Success)`. **A normal cache hit is a
//!   success**: the cache is part of the service, the user gets the intended answer.
//! * stale entry that matches, with `stale_while_revalidate`: the first such call becomes
//!   the key's refresh and passes upstream (a governor cannot spawn a background call, so
//!   the caller that triggers the refresh carries it; its success re-fills the entry); while
//!   the refresh is in flight, others get the stale answer at once as `Success` (RFC 5861:
//!   within the configured window a stale-while-revalidate answer is a normal response;
//!   counted apart as `stale_hits`).
//! * otherwise → `Pass` (a miss).
//!
//! On the way up (`on_outcome`): `Success` fills the entry (stored now, most recently
//! used); `Degraded` answers are never cached; with `serve_stale_on_error`, a `Failed(r)` or
//! `Rejected(r)` whose key still has a live (fresh or stale) entry that matches is answered
//! **`Degraded(r)`** — a stale answer standing in for a failure carries the failure's
//! reason (docs/domain.md §3.11: degraded answers carry a reason), e.g. `Degraded(breaker_open)`.
//!
//! Architecture invariant: `lru.len() ≤ capacity`; the refresh table only holds keys present
//! in the LRU (an evicted or removed key drops its refresh mark), so it is bounded by
//! `capacity` too. The cache never parks a call.
//!
//! API boundary: [`CacheSpec`] (serde) and [`Cache`] (`impl Governor`; counters as pub
//! fields). Single-flight is a separate governor, [`singleflight::SingleFlight`], placed
//! below the cache in a stack (`[cache, single_flight, …]`), so each is one small state
//! machine and either can be used alone.

pub mod lru;
pub mod singleflight;
#[cfg(test)]
mod tests;

pub use singleflight::{SingleFlight, SingleFlightSpec};

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::Outcome;
use lru::Lru;
use serde::{Deserialize, Serialize};
use sim_core::rng::{bits_to_open01, mix64};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// Salt separating the cache's draw from other uses of the call's bits.
const MATCH_SALT: u64 = 0xC0FF_EE00_CAC4_E5A1;

/// Configuration of a cache, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Cache")]
pub struct CacheSpec {
    /// Name; the parameters live under `cache.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Maximum entries (LRU eviction beyond).
    #[serde(
        default = "D::capacity",
        deserialize_with = "crate::params::Ranged::<CacheSpec>::capacity"
    )]
    pub capacity: u64,
    /// Time an entry stays fresh (docs/domain.md §3.12: 5–10 min for knowledge Q&A).
    #[serde(default = "D::ttl")]
    pub ttl: SimDuration,
    /// Probability that a lookup finding an entry matches (semantic caches < 1).
    #[serde(default = "D::hit_probability", deserialize_with = "R::hit_probability")]
    pub hit_probability: f64,
    /// Answer failures from a live entry, as `Degraded(reason)`.
    #[serde(default = "D::serve_stale_on_error")]
    pub serve_stale_on_error: bool,
    /// Serve stale entries at once while one call refreshes the key.
    #[serde(default = "D::stale_while_revalidate")]
    pub stale_while_revalidate: bool,
    /// How long past `ttl` an entry may still be served stale.
    #[serde(default = "D::max_stale", deserialize_with = "R::max_stale")]
    pub max_stale: SimDuration,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<CacheSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<CacheSpec>;

impl CacheSpec {
    pub fn named(name: &str) -> CacheSpec {
        CacheSpec {
            name: name.into(),
            capacity: D::capacity(),
            ttl: D::ttl(),
            hit_probability: D::hit_probability(),
            serve_stale_on_error: D::serve_stale_on_error(),
            stale_while_revalidate: D::stale_while_revalidate(),
            max_stale: D::max_stale(),
        }
    }
}

/// Whether a call with bits `draw` matches an entry under `hit_probability` p.
pub fn semantic_match(draw: u64, p: f64) -> bool {
    bits_to_open01(mix64(draw ^ MATCH_SALT)) < p
}

/// Run-time state of a cache.
#[derive(Clone, Debug)]
pub struct Cache {
    lru: Lru,
    ttl: SimDuration,
    hit_probability: f64,
    serve_stale_on_error: bool,
    stale_while_revalidate: bool,
    max_stale: SimDuration,
    /// Keep stale entries for a busy layer ([`Cache::keep_stale_for_busy`]).
    keep_stale: bool,
    /// Key → the call refreshing it (stale-while-revalidate).
    refreshing: BTreeMap<u64, CallId>,
    pub lookups: u64,
    pub hits: u64,
    pub stale_hits: u64,
    pub misses: u64,
    /// Lookups that found an entry but did not match it (part of `misses`).
    pub semantic_misses: u64,
    pub uncacheable: u64,
    pub fills: u64,
    pub evictions: u64,
    pub expired: u64,
    pub refreshes: u64,
    pub stale_on_error: u64,
    /// Answers given to the busy layer of a degradation chain ([`Cache::lookup_stale`]).
    pub busy_served: u64,
}

enum Age {
    Fresh,
    Stale,
    Dead,
}

impl Cache {
    pub fn new(spec: &CacheSpec) -> Self {
        assert!(spec.capacity >= 1 && (0.0..=1.0).contains(&spec.hit_probability), "validated");
        Cache {
            lru: Lru::new(spec.capacity as usize),
            ttl: spec.ttl,
            hit_probability: spec.hit_probability,
            serve_stale_on_error: spec.serve_stale_on_error,
            stale_while_revalidate: spec.stale_while_revalidate,
            max_stale: spec.max_stale,
            keep_stale: false,
            refreshing: BTreeMap::new(),
            lookups: 0,
            hits: 0,
            stale_hits: 0,
            misses: 0,
            semantic_misses: 0,
            uncacheable: 0,
            fills: 0,
            evictions: 0,
            expired: 0,
            refreshes: 0,
            stale_on_error: 0,
            busy_served: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.lru.len()
    }
    pub fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }
    pub fn set_ttl(&mut self, ttl: SimDuration) {
        self.ttl = ttl;
    }
    pub fn set_hit_probability(&mut self, p: f64) {
        assert!((0.0..=1.0).contains(&p));
        self.hit_probability = p;
    }
    pub fn set_serve_stale_on_error(&mut self, on: bool) {
        self.serve_stale_on_error = on;
    }
    pub fn set_capacity(&mut self, capacity: u64) {
        self.evictions += self.lru.set_capacity(capacity as usize) as u64;
        let lru = &self.lru;
        self.refreshing.retain(|k, _| lru.get(*k).is_some());
        self.check();
    }

    /// The busy-answer cap's lookup (docs/domain.md §3.11 "the best cached similar answer",
    /// `crate::fallback`): an entry of `key` younger than `ttl + max_stale` (stale accepted,
    /// whatever `serve_stale_on_error` says) that matches the question (`draw`, as a lookup
    /// does) answers; it is touched and counted in `busy_served`. Nothing else changes.
    pub fn lookup_stale(&mut self, key: u64, draw: u64, now: SimTime) -> bool {
        let Some(at) = self.lru.get(key) else { return false };
        if key == 0
            || now.since(at) >= self.ttl + self.max_stale
            || !semantic_match(draw, self.hit_probability)
        {
            return false;
        }
        self.lru.touch(key);
        self.busy_served += 1;
        true
    }

    /// A degradation chain's busy layer reads this cache (`crate::fallback`): stale
    /// entries are kept (up to `max_stale` past the ttl) for [`Cache::lookup_stale`]; the
    /// cache's own lookups still treat them as misses, as without the switches.
    pub fn keep_stale_for_busy(&mut self) {
        self.keep_stale = true;
    }

    fn max_stale(&self) -> SimDuration {
        if self.serve_stale_on_error || self.stale_while_revalidate || self.keep_stale {
            self.max_stale
        } else {
            SimDuration::ZERO
        }
    }

    /// The entry of `key` (if any) and its age class at `now`.
    fn age(&self, key: u64, now: SimTime) -> Option<Age> {
        let at = self.lru.get(key)?;
        let age = now.since(at);
        Some(if age < self.ttl {
            Age::Fresh
        } else if age < self.ttl + self.max_stale() {
            Age::Stale
        } else {
            Age::Dead
        })
    }

    fn remove(&mut self, key: u64) {
        self.lru.remove(key);
        self.refreshing.remove(&key);
    }

    fn check(&self) {
        assert!(self.lru.len() <= self.lru.capacity());
        assert!(self.refreshing.len() <= self.lru.len(), "refresh marks only for cached keys");
    }
}

impl Governor for Cache {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        let key = call.key;
        if key == 0 {
            self.uncacheable += 1;
            return CallDecision::Pass;
        }
        self.lookups += 1;
        let decision = match self.age(key, now) {
            None => {
                self.misses += 1;
                CallDecision::Pass
            }
            Some(Age::Dead) => {
                self.remove(key);
                self.expired += 1;
                self.misses += 1;
                CallDecision::Pass
            }
            Some(_) if !semantic_match(call.draw, self.hit_probability) => {
                self.semantic_misses += 1;
                self.misses += 1;
                CallDecision::Pass
            }
            Some(Age::Fresh) => {
                self.lru.touch(key);
                self.hits += 1;
                CallDecision::ServeLocally(Outcome::Success)
            }
            Some(Age::Stale) if self.stale_while_revalidate => {
                if let std::collections::btree_map::Entry::Vacant(e) = self.refreshing.entry(key) {
                    e.insert(call.call);
                    self.refreshes += 1;
                    self.misses += 1;
                    CallDecision::Pass
                } else {
                    self.lru.touch(key);
                    self.stale_hits += 1;
                    CallDecision::ServeLocally(Outcome::Success)
                }
            }
            Some(Age::Stale) => {
                self.misses += 1;
                CallDecision::Pass
            }
        };
        self.check();
        decision
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        let key = call.key;
        if key == 0 {
            return OutcomeDecision::PassUp(outcome);
        }
        if self.refreshing.get(&key) == Some(&call.call) {
            self.refreshing.remove(&key);
        }
        let out = match outcome {
            Outcome::Success => {
                if let Some(ev) = self.lru.insert(key, now) {
                    self.refreshing.remove(&ev);
                    self.evictions += 1;
                }
                self.fills += 1;
                outcome
            }
            Outcome::Degraded(_) => outcome,
            Outcome::Failed(r) | Outcome::Rejected(r) => {
                let live = matches!(self.age(key, now), Some(Age::Fresh | Age::Stale));
                if self.serve_stale_on_error
                    && live
                    && semantic_match(call.draw, self.hit_probability)
                {
                    self.lru.touch(key);
                    self.stale_on_error += 1;
                    Outcome::Degraded(r)
                } else {
                    outcome
                }
            }
        };
        self.check();
        OutcomeDecision::PassUp(out)
    }

    /// The cache never parks; the world calls this when a call that passed is cancelled,
    /// so a refresh it carried can be taken by the next stale lookup.
    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        if self.refreshing.get(&call.key) == Some(&call.call) {
            self.refreshing.remove(&call.key);
        }
    }

    fn take_woken(&mut self, _out: &mut Vec<CallId>) {}

    fn waiting(&self) -> usize {
        0
    }
}

crate::params::declare_params! {
    CacheSpec: "cache", name = |s| s.name, state = Cache;
    capacity: Count { min: 1, max: 100_000_000 }, "entries",
        runtime(apply = |c, n| c.set_capacity(n)),
        "maximum entries (LRU eviction beyond)", default = 10_000;
    ttl: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        runtime(apply = |c, d| c.set_ttl(d)),
        "time an entry stays fresh", default = SimDuration::from_secs(300);
    hit_probability: Float { min: 0.0, max: 1.0 }, "",
        runtime(apply = |c, x| c.set_hit_probability(x)),
        "probability that a lookup finding an entry matches it", default = 1.0;
    serve_stale_on_error: Bool, "", runtime(apply = |c, on| c.set_serve_stale_on_error(on)),
        "answer failures from a live entry as degraded", default = false;
    stale_while_revalidate: Bool, "", fixed,
        "serve stale entries at once while one call refreshes the key", default = false;
    max_stale: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        fixed, "how long past ttl an entry may still be served stale",
        default = SimDuration::from_secs(600);
}

impl crate::params::GovernorSpec for CacheSpec {}

impl crate::governor::GovernorKindOps for Cache {
    type Spec = CacheSpec;
    fn build(spec: &CacheSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        Cache::new(spec)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![("hits", self.hits), ("misses", self.misses)]
    }
}
