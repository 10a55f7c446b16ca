//! Client-side adaptive throttling (Google SRE book, chapter 21 "Handling Overload",
//! section "Client-side throttling"), from `sre_throttlers`.
//!
//! The book's rule: each client keeps, over a trailing window (two minutes in the book),
//! `requests` — "the number of requests attempted by the application layer (at the client,
//! on top of the adaptive throttling system)" — and `accepts` — "the number of requests
//! accepted by the backend" — and rejects a new request locally with probability
//! `max(0, (requests − K × accepts) / (requests + 1))` (K = 2 in the book). Read here from
//! Apache Beam's `AdaptiveThrottler` (Google's Datastore client: `throttleRequest`,
//! `successfulRequest`, `throttlingProbability`) and failsafe-go's `adaptivethrottler`
//! (`computeRejectionRate`, `WithMaxRejectionRate`). Per call:
//!
//! 1. `on_call` (Beam `throttleRequest`): the probability is computed from the window
//!    *before* this call is counted (`throttlingProbability(now)`, then
//!    `allRequests.add(now, 1)`), capped at `max_rejection_probability` (failsafe-go's
//!    `min(rejectionRate, maxRejectionRate)`; default 1 = no cap, as the book and Beam);
//!    the call is then counted in `requests` **whether or not it is rejected** (Beam: "even
//!    if we tell the client not to send a request at all, it still counts as a failed
//!    request"). Implementations differ here: failsafe-go counts only executed calls;
//!    go-zero's `googleBreaker` has gone both ways (go-zero #3837: its refusals not counted,
//!    "by design"; #4008 counted them; the open #5551 would stop again, calling it a
//!    feedback loop) and kratos #2777 asks not to count them. This follows the book. The
//!    price the book accepts: once accepts have been absent for a whole window, only
//!    `1/(requests + 1)` of the calls get through, so re-opening takes several windows.
//!    The call is rejected iff `u < p` (Beam: `random.nextDouble() < delayProbability`),
//!    refused as `rejected:rate_limited`.
//! 2. `on_outcome` (Beam `successfulRequest(now)`): an *accept* is counted at the instant
//!    the answer comes back, in that instant's bucket. Accepts are [`is_accept`]: a
//!    `Success`, and a `Failed(business_error)` (the backend took the request and answered
//!    it with an application error such as INVALID_ARGUMENT: the book's rejections are the
//!    backend's overload refusals, and an application error says nothing about load).
//!    Not accepts: an upstream 429 or queue-full refusal, a 5xx, a timeout (also a call
//!    cut short from above), a connect error, an interrupted stream, any refusal by a
//!    governor below, and a `Degraded` answer (made below the throttler by a cache or a
//!    fallback, not by the backend). Put the throttler directly above the upstream (below
//!    caches and fallbacks), as a transport-level client throttle.
//!
//! The window: `window` is split into `buckets` tumbling buckets of `w = ⌊window /
//! buckets⌋` ns (Beam's `MovingFunction(samplePeriodMs, sampleUpdateMs)`; Beam's Datastore
//! client uses 120 s in 1 s buckets, the defaults here). Bucket `i` covers `[i·w,
//! (i+1)·w)`; at time `t` the counts are those of buckets `⌊t/w⌋ − buckets + 1 ..= ⌊t/w⌋`
//! (so the trailing window is between `(buckets − 1)·w` and `buckets·w` long). `window` and
//! `buckets` are fixed for a run (changing the bucketing would discard history); `k` and
//! `max_rejection_probability` change at run time, from the next call.
//!
//! Randomness: the draw of a call at time `t` is `u = bits_to_open01(mix64(draw ^
//! mix64(t ^ SALT)))`, a pure function of the call's own bits and the instant: each retry
//! of a call (same bits, a later instant) gets its own draw, and no other call's luck
//! depends on this one. (Two attempts of one call at the same nanosecond would share it.)
//!
//! Summary counters `sre_throttler.<name>.{requests, accepts, rejected}` (whole run);
//! gauge `sre_throttler.<name>.rejection_ppm`: the probability the last call met, × 10⁶.
//!
//! Architecture invariant: bounded state (`buckets` slots and two running totals equal to
//! their sums); `requests = passed + rejected`; no per-call state, no timer, no events.

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::rng::{bits_to_open01, mix64};
use sim_core::{SimDuration, SimTime};

/// Salt of the keyed draw ("SRETHROT").
const SALT: u64 = 0x5352_4554_4852_4f54;

/// Configuration, named after the book's symbols.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "SreThrottler")]
pub struct SreThrottlerSpec {
    /// Name; parameters live under `sre_throttler.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// The book's K: requests allowed per accept before local rejection starts.
    #[serde(default = "D::k", deserialize_with = "R::k")]
    pub k: f64,
    /// The trailing window (the book: two minutes).
    #[serde(default = "D::window", deserialize_with = "R::window")]
    pub window: SimDuration,
    /// Tumbling buckets the window is split into.
    #[serde(default = "D::buckets", deserialize_with = "R::buckets")]
    pub buckets: u64,
    /// Cap on the rejection probability (failsafe-go's `maxRejectionRate`; 1 = none).
    #[serde(
        default = "D::max_rejection_probability",
        deserialize_with = "R::max_rejection_probability"
    )]
    pub max_rejection_probability: f64,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<SreThrottlerSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<SreThrottlerSpec>;

impl SreThrottlerSpec {
    /// The book's defaults under a name.
    pub fn defaults(name: &str) -> Self {
        SreThrottlerSpec {
            name: name.into(),
            k: D::k(),
            window: D::window(),
            buckets: D::buckets(),
            max_rejection_probability: D::max_rejection_probability(),
        }
    }
}

/// Whether the backend accepted the call (counts in `accepts`): a success, or an
/// application error it answered (`business_error`). See the module header.
pub fn is_accept(o: Outcome) -> bool {
    matches!(o, Outcome::Success | Outcome::Failed(Reason::BusinessError))
}

/// `max(0, (requests − k·accepts) / (requests + 1))`, capped at `max_p`.
pub fn rejection_probability(requests: u64, accepts: u64, k: f64, max_p: f64) -> f64 {
    let r = requests as f64;
    ((r - k * accepts as f64) / (r + 1.0)).max(0.0).min(max_p)
}

/// One tumbling bucket: requests and accepts counted in it.
#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    requests: u64,
    accepts: u64,
}

/// Run-time state of an `SreThrottler`.
#[derive(Clone, Debug)]
pub struct SreThrottler {
    k: f64,
    max_p: f64,
    bucket_ns: u64,
    ring: Vec<Bucket>,
    /// The newest bucket index the ring holds; `None` before the first interaction.
    head: Option<u64>,
    /// Sums over the ring (the trailing window as of `head`).
    window_requests: u64,
    window_accepts: u64,
    /// The probability the last call met.
    last_p: f64,
    /// Calls that reached the throttler (rejected ones included), over the run.
    pub requests: u64,
    /// Outcomes that were accepts ([`is_accept`]), over the run.
    pub accepts: u64,
    /// Calls rejected locally, over the run.
    pub rejected: u64,
}

impl SreThrottler {
    pub fn new(spec: &SreThrottlerSpec) -> Self {
        let n = spec.buckets as usize;
        assert!(n >= 1 && spec.window.0 >= spec.buckets, "validated");
        SreThrottler {
            k: spec.k,
            max_p: spec.max_rejection_probability,
            bucket_ns: spec.window.0 / spec.buckets,
            ring: vec![Bucket::default(); n],
            head: None,
            window_requests: 0,
            window_accepts: 0,
            last_p: 0.0,
            requests: 0,
            accepts: 0,
            rejected: 0,
        }
    }

    /// Run-time change of K (from the next call).
    pub fn set_k(&mut self, k: f64) {
        self.k = k;
    }
    /// Run-time change of the cap (from the next call).
    pub fn set_max_rejection_probability(&mut self, p: f64) {
        self.max_p = p;
    }

    /// Moves the window to `now`: buckets older than `buckets` steps leave the totals.
    fn advance(&mut self, now: SimTime) -> usize {
        let n = self.ring.len() as u64;
        let idx = now.0 / self.bucket_ns;
        let head = self.head.unwrap_or(idx);
        assert!(idx >= head, "time went backwards");
        // Slots of buckets head+1 ..= idx (at most all n) hold expired buckets: clear them.
        let steps = (idx - head).min(n);
        for i in (idx + 1 - steps)..=idx {
            let b = &mut self.ring[(i % n) as usize];
            self.window_requests -= b.requests;
            self.window_accepts -= b.accepts;
            *b = Bucket::default();
        }
        self.head = Some(idx);
        (idx % n) as usize
    }

    /// (requests, accepts) in the trailing window at `now`.
    pub fn window_counts(&mut self, now: SimTime) -> (u64, u64) {
        self.advance(now);
        (self.window_requests, self.window_accepts)
    }

    /// The probability the last call met.
    pub fn last_probability(&self) -> f64 {
        self.last_p
    }

    /// The uniform in (0, 1) a call with bits `draw` meets at `now`.
    pub fn draw(draw: u64, now: SimTime) -> f64 {
        bits_to_open01(mix64(draw ^ mix64(now.0 ^ SALT)))
    }
}

impl Governor for SreThrottler {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        let slot = self.advance(now);
        let p =
            rejection_probability(self.window_requests, self.window_accepts, self.k, self.max_p);
        self.last_p = p;
        self.ring[slot].requests += 1;
        self.window_requests += 1;
        self.requests += 1;
        if Self::draw(call.draw, now) < p {
            self.rejected += 1;
            return CallDecision::Reject(Reason::RateLimited);
        }
        CallDecision::Pass
    }

    fn on_outcome(&mut self, _call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        if is_accept(outcome) {
            let slot = self.advance(now);
            self.ring[slot].accepts += 1;
            self.window_accepts += 1;
            self.accepts += 1;
        }
        OutcomeDecision::PassUp(outcome)
    }

    /// Keeps no per-call state: nothing to forget.
    fn on_abandon(&mut self, _call: &CallInfo, _now: SimTime) {}

    /// No timer and no events: the world's hand-off never has anything to read.
    fn take_changed(&mut self) -> bool {
        false
    }

    /// Parks nothing, so wakes and answers nothing.
    fn has_released(&self) -> bool {
        false
    }
    fn take_woken(&mut self, _out: &mut Vec<CallId>) {}
    fn waiting(&self) -> usize {
        0
    }
}

crate::params::declare_params! {
    SreThrottlerSpec: "sre_throttler", name = |s| s.name, state = SreThrottler;
    k: Float { min: 1.0, max: 1000.0 }, "ratio", runtime(apply = |t, x| t.set_k(x)),
        "the book's K: local rejection starts when requests exceed K × accepts over the window (K ≥ 1: below 1 a healthy backend is throttled)",
        default = 2.0;
    window: Duration { min: SimDuration::from_ms(1), max: SimDuration::from_secs(86_400) }, "ns",
        fixed, "the trailing window requests and accepts are counted over (the book: two minutes)",
        default = SimDuration::from_secs(120);
    buckets: Count { min: 1, max: 10_000 }, "buckets", fixed,
        "tumbling buckets of window/buckets the window is split into (Beam's Datastore client: 1 s buckets)",
        default = 120;
    max_rejection_probability: Float { min: 0.0, max: 1.0 }, "ratio",
        runtime(apply = |t, x| t.set_max_rejection_probability(x)),
        "cap on the rejection probability (failsafe-go's maxRejectionRate; 1 = none, as the book)",
        default = 1.0;
}

impl crate::params::GovernorSpec for SreThrottlerSpec {
    fn local_refusals(&self) -> Vec<Reason> {
        vec![Reason::RateLimited]
    }
}

impl crate::governor::GovernorKindOps for SreThrottler {
    type Spec = SreThrottlerSpec;
    fn build(spec: &SreThrottlerSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        SreThrottler::new(spec)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![("requests", self.requests), ("accepts", self.accepts), ("rejected", self.rejected)]
    }
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        vec![("rejection_ppm", (self.last_p * 1e6).round() as i64)]
    }
}

#[cfg(test)]
#[path = "sre_throttle_tests.rs"]
mod tests;
