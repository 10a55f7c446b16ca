//! The degradation chain (docs/domain.md §3.11, §3.16): where a call goes when its call site fails
//! it, or when its model is switched off.
//!
//! A call site may name a [`FallbackSpec`]: the failure reasons it covers (`on`) and where
//! such a call goes next (`to`) — another call site (a smaller model with its own breaker and
//! governors, or the same model with a trimmed context: `trim`), a `Busy` answer ("service
//! busy", capped per second, with the best cached similar answer beyond the cap), or a plain
//! `Reject`. Chains are formed by the fallback site's own fallback: GPT-4 breaker open →
//! GPT-3.5 → local 7B → busy. The cheapest layer, the result cache, is a governor at the top
//! of the first site's stack (`serve_stale_on_error` answers a failure `Degraded(reason)`
//! before the call ever leaves the site).
//!
//! Outcomes: a call answered by a fallback ends **`Degraded(first)`**, `first` being the
//! reason of the first failure in its chain (`breaker_open` when GPT-4's breaker was open,
//! even if GPT-3.5 then timed out and the 7B model answered). A `Reject` ends it
//! `Rejected(first)`. A busy answer is `Rejected(shed)` (a friendly message, not an answer);
//! beyond the cap a cached answer is `Degraded(first)`, a miss keeps the failure the call
//! reached the busy layer with. A fallback site's failure not covered by its own fallback
//! stands as it is. A switched-off site (`call_site.<n>.enabled = false`) sends every call
//! that reaches it straight to its fallback as if it had failed with `shed`, whatever `on`
//! says; without a fallback the call ends `Rejected(shed)`.
//!
//! Busy-answer cap, exact window semantics: time is cut into fixed one-second windows
//! aligned on time zero, `[k s, (k+1) s)`; at most `max_per_second` busy answers are given
//! in one window (the count restarts at the first busy decision of a later window; a call
//! at exactly `k s` belongs to window `k`). `max_per_second: None` = no cap.
//!
//! Key design decision: a fallback is the *same call* moving on to another call site (same
//! request, same pipeline position, new governors), not a new call: the pipeline sees one
//! call with one outcome, conservation is untouched, and the fallback's keyed randomness is
//! the call's own, keyed by its call path with the hop number in bits 28–30 (path `p` at hop
//! `h` draws as `p | h << 28`; pipeline paths use bits 0–22), so the fallback site's luck is
//! independent of the primary's and the same in every run and under every policy.
//!
//! Architecture invariant: a call visits each site of its chain at most once (chains are
//! checked acyclic and at most [`MAX_HOPS`] long; the world asserts `hops ≤ MAX_HOPS`, I41);
//! per one-second window, busy answers ≤ `max_per_second` (I42). Decisions here are pure.
//!
//! API boundary: [`FallbackSpec`] (serde, on `CallSite.fallback`), [`check_chains`]
//! (cross-references with field paths), [`after_end`] and [`busy_answer`] (pure decisions),
//! [`BusyCap`], [`trim_prompt`]. The run-time wiring is `world/fallback.rs`.

use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::SimTime;

/// The longest chain: a call moves on at most this many times (5 sites in a row).
pub const MAX_HOPS: u8 = 4;

/// A call site's fallback, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Fallback")]
pub struct FallbackSpec {
    /// Failure reasons that send the call on (stable names). Default: every reason but
    /// `business_error` (a bad prompt fails on every model).
    #[serde(default = "default_on", with = "reason_list")]
    pub on: Vec<Reason>,
    /// Where the call goes.
    pub to: FallbackTo,
    /// Cut the call's prompt when it goes on to a call site (trimmed context).
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub trim: Option<Trim>,
}

/// The next layer of the chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum FallbackTo {
    /// Another call site (its own governors, upstream and fallback).
    CallSite(String),
    /// A "service busy" answer, capped per second; beyond the cap, the best cached similar
    /// answer from `cache` (a lookup accepting stale entries) or the failure.
    Busy {
        /// Busy answers per one-second window; `None`: unlimited.
        #[serde(default, deserialize_with = "crate::validate::opt_at_least_one")]
        max_per_second: Option<u64>,
        /// The cache (an entry of `caches`) asked beyond the cap.
        #[serde(
            default,
            deserialize_with = "crate::validate::present",
            serialize_with = "crate::validate::ser_present",
            skip_serializing_if = "Option::is_none"
        )]
        cache: Option<String>,
    },
    /// Refuse: the call ends `Rejected(first failure's reason)`.
    Reject,
}

/// Trimmed context: the prompt the call carries on is `min(floor(prompt × keep),
/// max_prompt_tokens)`; output tokens are unchanged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Trim")]
pub struct Trim {
    /// Share of the prompt kept, in (0, 1].
    #[serde(default = "one", deserialize_with = "keep_range")]
    pub keep: f64,
    /// Cap on the prompt tokens kept; `None`: no cap.
    #[serde(default)]
    pub max_prompt_tokens: Option<u32>,
}

fn one() -> f64 {
    1.0
}

fn keep_range<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let x = f64::deserialize(d)?;
    if !(x > 0.0 && x <= 1.0) {
        return Err(serde::de::Error::custom(format!("expected a share in (0, 1], found {x}")));
    }
    Ok(x)
}

fn default_on() -> Vec<Reason> {
    Reason::ALL.iter().copied().filter(|r| *r != Reason::BusinessError).collect()
}

/// The prompt a trimmed call carries.
pub fn trim_prompt(prompt: u32, t: &Trim) -> u32 {
    assert!(t.keep > 0.0 && t.keep <= 1.0, "validated");
    let kept = (prompt as f64 * t.keep).floor() as u32;
    t.max_prompt_tokens.map_or(kept, |m| kept.min(m))
}

/// A reason set as a bit mask (`Reason::index` bits).
pub fn mask(reasons: &[Reason]) -> u32 {
    reasons.iter().fold(0, |m, r| m | 1 << r.index())
}

/// What becomes of a call that ended at a site with `o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterEnd {
    /// The call ends with this outcome.
    Done(Outcome),
    /// The call goes to the site's fallback; `first` is its chain's first failure.
    Fallback { first: Reason },
}

/// The pure decision at the end of a call at one site. `first`: the chain's first failure
/// if the call is already on a fallback; `on`: the site's fallback reasons as a [`mask`]
/// (`None`: no fallback); `switched_off`: the site is off (the call never reached it, `o`
/// is `Rejected(shed)`) — it goes to the fallback whatever `on` says.
pub fn after_end(
    o: Outcome,
    first: Option<Reason>,
    on: Option<u32>,
    switched_off: bool,
) -> AfterEnd {
    match o {
        Outcome::Success => AfterEnd::Done(first.map_or(Outcome::Success, Outcome::Degraded)),
        Outcome::Degraded(r) => AfterEnd::Done(Outcome::Degraded(first.unwrap_or(r))),
        Outcome::Failed(r) | Outcome::Rejected(r) => match on {
            Some(m) if switched_off || m & (1 << r.index()) != 0 => {
                AfterEnd::Fallback { first: first.unwrap_or(r) }
            }
            _ => AfterEnd::Done(o),
        },
    }
}

/// The busy layer's answer for a call that reached it with failure `o` (first failure
/// `first`): a busy answer if the cap `granted` one, else the cache's (`cache_hit`: `None`
/// when no cache is configured), else the failure.
pub fn busy_answer(o: Outcome, first: Reason, granted: bool, cache_hit: Option<bool>) -> Outcome {
    if granted {
        Outcome::Rejected(Reason::Shed)
    } else if cache_hit == Some(true) {
        Outcome::Degraded(first)
    } else {
        o
    }
}

/// The busy-answer cap: fixed one-second windows aligned on time zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BusyCap {
    pub max_per_second: Option<u64>,
    window: u64,
    used: u64,
    /// A run-time change of the cap, in force from the next window (so that no window
    /// gives more busy answers than the cap in force for it: I42).
    next: Option<Option<u64>>,
}

const SECOND_NS: u64 = 1_000_000_000;

impl BusyCap {
    pub fn new(max_per_second: Option<u64>) -> Self {
        assert!(max_per_second != Some(0), "validated ≥ 1");
        BusyCap { max_per_second, window: 0, used: 0, next: None }
    }
    /// A run-time change of the cap (`call_site.<name>.busy_max_per_second`): in force from
    /// the next one-second window.
    pub fn set_max_per_second(&mut self, max_per_second: Option<u64>) {
        assert!(max_per_second != Some(0), "validated ≥ 1");
        self.next = Some(max_per_second);
    }
    /// May a busy answer be given at `now`? Counts it if so.
    pub fn take(&mut self, now: SimTime) -> bool {
        let w = now.0 / SECOND_NS;
        assert!(w >= self.window, "time runs forward");
        if w != self.window {
            (self.window, self.used) = (w, 0);
            if let Some(m) = self.next.take() {
                self.max_per_second = m;
            }
        }
        match self.max_per_second {
            Some(max) if self.used >= max => false,
            _ => {
                self.used += 1;
                true
            }
        }
    }
    /// Busy answers given in the current window (I42: ≤ `max_per_second`).
    pub fn used(&self) -> u64 {
        self.used
    }
}

/// One call site as the chain check sees it.
pub struct SiteRef<'a> {
    pub name: &'a str,
    pub fallback: Option<&'a FallbackSpec>,
}

/// Cross-reference checks of every chain: `to` names another call site, `Busy.cache` a
/// cache, `trim` only with a call site, no cycle, at most [`MAX_HOPS`] hops. Errors are
/// `(site index, field path below it, message)`.
pub fn check_chains(sites: &[SiteRef], caches: &[&str]) -> Result<(), (usize, String, String)> {
    let index = |n: &str| sites.iter().position(|s| s.name == n);
    // Every reference first: a chain walked from one site runs through later sites, whose
    // own `to` must already be known to exist (found by the fuzzer: a panic at load).
    for (i, s) in sites.iter().enumerate() {
        let Some(f) = s.fallback else { continue };
        match &f.to {
            FallbackTo::CallSite(n) => {
                if index(n).is_none() {
                    let all: Vec<&str> = sites.iter().map(|s| s.name).collect();
                    let msg =
                        format!("no call site named \"{n}\"; call sites: [{}]", all.join(", "));
                    return Err((i, "fallback.to".into(), msg));
                }
            }
            FallbackTo::Busy { cache, .. } => {
                if let Some(c) = cache
                    && !caches.contains(&c.as_str())
                {
                    let msg = format!("no cache named \"{c}\"; caches: [{}]", caches.join(", "));
                    return Err((i, "fallback.to.cache".into(), msg));
                }
            }
            FallbackTo::Reject => {}
        }
        if f.trim.is_some() && !matches!(f.to, FallbackTo::CallSite(_)) {
            let msg = "a trimmed context needs a call site to go to (`to: CallSite(..)`)".into();
            return Err((i, "fallback.trim".into(), msg));
        }
    }
    for (i, s) in sites.iter().enumerate() {
        // Walk the chain from here.
        let mut chain = vec![s.name];
        let mut at = i;
        while let Some(FallbackSpec { to: FallbackTo::CallSite(n), .. }) = sites[at].fallback {
            let next = index(n).expect("checked above for every site in turn");
            if chain.contains(&sites[next].name) {
                chain.push(sites[next].name);
                let msg = format!("fallback chain {} is a cycle", chain.join(" → "));
                return Err((i, "fallback.to".into(), msg));
            }
            chain.push(sites[next].name);
            if chain.len() > MAX_HOPS as usize + 1 {
                let msg =
                    format!("fallback chain {} is longer than {MAX_HOPS} hops", chain.join(" → "));
                return Err((i, "fallback.to".into(), msg));
            }
            at = next;
        }
    }
    Ok(())
}

/// Default of `CallSite.enabled`.
pub fn enabled() -> bool {
    true
}
/// `enabled` is written only when false.
pub fn is_enabled(b: &bool) -> bool {
    *b
}

/// `on`: reason names (`crate::outcome::reason_names`), at least one.
mod reason_list {
    use crate::outcome::{Reason, reason_names};
    use serde::de::Error;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Reason], s: S) -> Result<S::Ok, S::Error> {
        reason_names::serialize(v, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Reason>, D::Error> {
        let out = reason_names::parse(d, |_, _| None)?;
        if out.is_empty() {
            return Err(D::Error::custom("expected at least one reason"));
        }
        Ok(out)
    }
}

#[cfg(test)]
#[path = "fallback_tests.rs"]
mod tests;
