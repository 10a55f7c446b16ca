//! Retry budgets: caps on retries that hold across calls (docs/domain.md §3.10, §7.4).
//!
//! * `Ratio { max_ratio, window }` — the SRE book's per-client budget. The window is
//!   `window` split into 10 tumbling buckets of `window / 10` (integer ns); bucket `i`
//!   covers `[i·w, (i+1)·w)`. At time `t` the budget counts the current bucket
//!   `⌊t/w⌋` and the nine before it. *Requests* are first attempts (calls entering the
//!   retry governor), *retries* are retries sent. A retry is admitted iff
//!   `retries + 1 ≤ max_ratio · requests` over that window.
//! * `GrpcTokenBucket { max_tokens, token_ratio }` — gRPC `retryThrottling` (gRFC A6),
//!   in milli-tokens like grpc-core (`token_ratio` is read to three decimals, later digits
//!   dropped, as `RetryGlobalConfig::JsonPostLoad` parses `tokenRatio`). Starts at
//!   `max_tokens`. A success adds `token_ratio` (capped at max); a failure whose reason is
//!   retryable removes 1 (floored at 0) — recorded on *every* such failure, also when the
//!   call will not be retried for another reason, as grpc-core does. A retry is allowed iff
//!   the count after recording the failure is `> max_tokens / 2` (throttled while
//!   `≤ max/2`).
//! * `EnvoyBudget { budget_percent, min_retry_concurrency }` — Envoy's
//!   `retry_budget`: retries in flight `< max(min_retry_concurrency,
//!   ⌊budget_percent/100 · active⌋)` where *active* is the calls this governor tracks (first
//!   attempt to final outcome, including their backoff) and a retry is *in flight* from
//!   the moment it is scheduled (its backoff included) until its outcome comes back (the
//!   call's own previous retry is released before the check, as Envoy's `resetRetry`).
//!
//! Architecture invariant: bounded state (10 buckets, one counter); decisions are pure
//! functions of the state, the time and the arguments.
//!
//! API boundary: [`BudgetState::admit`] decides; `on_request`, `on_retry_sent`,
//! `on_retry_done`, `on_result` record.

use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};

const RATIO_BUCKETS: usize = 10;

/// Configuration of a retry budget, as written in scenarios.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "RetryBudget")]
pub enum RetryBudgetSpec {
    /// No budget: only `max_attempts` and the time budget limit retries.
    #[default]
    Unlimited,
    Ratio {
        #[serde(default = "D::budget_max_ratio", deserialize_with = "R::budget_max_ratio")]
        max_ratio: f64,
        #[serde(default = "D::budget_window", deserialize_with = "R::budget_window")]
        window: SimDuration,
    },
    GrpcTokenBucket {
        #[serde(default = "D::budget_max_tokens", deserialize_with = "R::budget_max_tokens")]
        max_tokens: f64,
        #[serde(default = "D::budget_token_ratio", deserialize_with = "R::budget_token_ratio")]
        token_ratio: f64,
    },
    EnvoyBudget {
        #[serde(default = "D::budget_percent", deserialize_with = "R::budget_percent")]
        budget_percent: f64,
        #[serde(default = "D::budget_min_retry_concurrency")]
        min_retry_concurrency: u64,
    },
}

/// The defaults declared in the retry's parameter rows (`budget_*`, `retry/spec.rs`).
use super::spec::{D, R};

/// The budget's settings as registry parameters (`retry.<n>.budget_<param>`): each is
/// registered only for the variant that has it (`None` otherwise).
impl RetryBudgetSpec {
    pub fn max_ratio(&self) -> Option<f64> {
        match self {
            RetryBudgetSpec::Ratio { max_ratio, .. } => Some(*max_ratio),
            _ => None,
        }
    }
    pub fn window(&self) -> Option<SimDuration> {
        match self {
            RetryBudgetSpec::Ratio { window, .. } => Some(*window),
            _ => None,
        }
    }
    pub fn max_tokens(&self) -> Option<f64> {
        match self {
            RetryBudgetSpec::GrpcTokenBucket { max_tokens, .. } => Some(*max_tokens),
            _ => None,
        }
    }
    pub fn token_ratio(&self) -> Option<f64> {
        match self {
            RetryBudgetSpec::GrpcTokenBucket { token_ratio, .. } => Some(*token_ratio),
            _ => None,
        }
    }
    pub fn budget_percent(&self) -> Option<f64> {
        match self {
            RetryBudgetSpec::EnvoyBudget { budget_percent, .. } => Some(*budget_percent),
            _ => None,
        }
    }
    pub fn min_retry_concurrency(&self) -> Option<u64> {
        match self {
            RetryBudgetSpec::EnvoyBudget { min_retry_concurrency, .. } => {
                Some(*min_retry_concurrency)
            }
            _ => None,
        }
    }
    /// Writes the float setting `name` of the variant that has it (no-op otherwise).
    pub fn set_float(&mut self, name: &str, x: f64) {
        match (self, name) {
            (RetryBudgetSpec::Ratio { max_ratio, .. }, "max_ratio") => *max_ratio = x,
            (RetryBudgetSpec::GrpcTokenBucket { max_tokens, .. }, "max_tokens") => *max_tokens = x,
            (RetryBudgetSpec::GrpcTokenBucket { token_ratio, .. }, "token_ratio") => {
                *token_ratio = x
            }
            (RetryBudgetSpec::EnvoyBudget { budget_percent, .. }, "budget_percent") => {
                *budget_percent = x
            }
            _ => {}
        }
    }
    pub fn set_window(&mut self, d: SimDuration) {
        if let RetryBudgetSpec::Ratio { window, .. } = self {
            *window = d;
        }
    }
    pub fn set_min_retry_concurrency(&mut self, n: u64) {
        if let RetryBudgetSpec::EnvoyBudget { min_retry_concurrency, .. } = self {
            *min_retry_concurrency = n;
        }
    }
}

/// `tokenRatio` in milli-tokens as grpc-core reads it (`RetryGlobalConfig::JsonPostLoad`:
/// "up to 3 decimal digits", the rest of the string dropped): `⌊x · 1000⌋`. The value
/// arrives as a binary float, so 1e-6 is added before flooring to absorb the representation
/// of a three-decimal number (0.29 · 1000 = 289.99999999999994 → 290), far below the
/// 0.001 the fourth decimal is worth.
fn milli_ratio(x: f64) -> u64 {
    (x * 1000.0 + 1e-6).floor() as u64
}

/// Run-time state of a retry budget.
#[derive(Clone, Debug)]
pub enum BudgetState {
    Unlimited,
    Ratio {
        max_ratio: f64,
        bucket_ns: u64,
        /// (bucket index, requests, retries), slot `index % 10`.
        ring: Box<[(u64, u64, u64); RATIO_BUCKETS]>,
    },
    Tokens {
        max_milli: u64,
        ratio_milli: u64,
        milli: u64,
    },
    Envoy {
        percent: f64,
        min: u64,
        in_flight: u64,
    },
}

impl BudgetState {
    pub fn new(spec: &RetryBudgetSpec) -> Self {
        match *spec {
            RetryBudgetSpec::Unlimited => BudgetState::Unlimited,
            RetryBudgetSpec::Ratio { max_ratio, window } => {
                assert!((0.0..=1.0).contains(&max_ratio) && window.0 >= RATIO_BUCKETS as u64);
                BudgetState::Ratio {
                    max_ratio,
                    bucket_ns: window.0 / RATIO_BUCKETS as u64,
                    ring: Box::new([(u64::MAX, 0, 0); RATIO_BUCKETS]),
                }
            }
            RetryBudgetSpec::GrpcTokenBucket { max_tokens, token_ratio } => {
                assert!(max_tokens > 0.0 && max_tokens <= 1000.0);
                assert!(token_ratio > 0.0 && token_ratio <= 1.0);
                let max_milli = (max_tokens * 1000.0).round() as u64;
                BudgetState::Tokens {
                    max_milli,
                    ratio_milli: milli_ratio(token_ratio),
                    milli: max_milli,
                }
            }
            RetryBudgetSpec::EnvoyBudget { budget_percent, min_retry_concurrency } => {
                assert!((0.0..=100.0).contains(&budget_percent));
                BudgetState::Envoy {
                    percent: budget_percent,
                    min: min_retry_concurrency,
                    in_flight: 0,
                }
            }
        }
    }

    /// The ring slot for `now`, reset if it holds an older bucket.
    fn slot(
        ring: &mut [(u64, u64, u64); RATIO_BUCKETS],
        bucket_ns: u64,
        now: SimTime,
    ) -> &mut (u64, u64, u64) {
        let idx = now.0 / bucket_ns;
        let s = &mut ring[(idx % RATIO_BUCKETS as u64) as usize];
        if s.0 != idx {
            *s = (idx, 0, 0);
        }
        s
    }

    /// A first attempt entered the governor.
    pub fn on_request(&mut self, now: SimTime) {
        if let BudgetState::Ratio { bucket_ns, ring, .. } = self {
            Self::slot(ring, *bucket_ns, now).1 += 1;
        }
    }

    /// The outcome of an attempt, for the token bucket: `success`, or a failure whose
    /// reason is retryable (`retryable_failure`). Other outcomes record nothing.
    pub fn on_result(&mut self, success: bool, retryable_failure: bool) {
        if let BudgetState::Tokens { max_milli, ratio_milli, milli } = self {
            if success {
                *milli = (*milli + *ratio_milli).min(*max_milli);
            } else if retryable_failure {
                *milli = milli.saturating_sub(1000);
            }
        }
    }

    /// The call's current retry ended (outcome back, or the call was forgotten).
    pub fn on_retry_done(&mut self) {
        if let BudgetState::Envoy { in_flight, .. } = self {
            assert!(*in_flight > 0, "retry released twice");
            *in_flight -= 1;
        }
    }

    /// May one more retry go now? `active`: calls the governor tracks.
    pub fn admit(&self, now: SimTime, active: u64) -> bool {
        match self {
            BudgetState::Unlimited => true,
            BudgetState::Ratio { max_ratio, bucket_ns, ring } => {
                let (req, ret) = Self::window_counts(ring, *bucket_ns, now);
                (ret + 1) as f64 <= max_ratio * req as f64
            }
            BudgetState::Tokens { max_milli, milli, .. } => *milli > max_milli / 2,
            BudgetState::Envoy { percent, min, in_flight } => {
                let budget = (percent / 100.0 * active as f64).floor() as u64;
                *in_flight < budget.max(*min)
            }
        }
    }

    fn window_counts(
        ring: &[(u64, u64, u64); RATIO_BUCKETS],
        bucket_ns: u64,
        now: SimTime,
    ) -> (u64, u64) {
        let cur = now.0 / bucket_ns;
        ring.iter()
            .filter(|s| s.0 != u64::MAX && s.0 <= cur && cur - s.0 < RATIO_BUCKETS as u64)
            .fold((0, 0), |(a, b), s| (a + s.1, b + s.2))
    }

    /// A retry was admitted and scheduled.
    pub fn on_retry_sent(&mut self, now: SimTime) {
        match self {
            BudgetState::Ratio { bucket_ns, ring, .. } => Self::slot(ring, *bucket_ns, now).2 += 1,
            BudgetState::Envoy { in_flight, .. } => *in_flight += 1,
            BudgetState::Unlimited | BudgetState::Tokens { .. } => {}
        }
    }

    /// Tokens left, in milli-tokens (gRPC bucket only), for gauges and tests.
    pub fn milli_tokens(&self) -> Option<u64> {
        match self {
            BudgetState::Tokens { milli, .. } => Some(*milli),
            _ => None,
        }
    }

    /// Retries in flight (Envoy budget only).
    pub fn retries_in_flight(&self) -> Option<u64> {
        match self {
            BudgetState::Envoy { in_flight, .. } => Some(*in_flight),
            _ => None,
        }
    }

    /// (requests, retries) in the ratio window at `now`.
    pub fn ratio_window(&self, now: SimTime) -> Option<(u64, u64)> {
        match self {
            BudgetState::Ratio { bucket_ns, ring, .. } => {
                Some(Self::window_counts(ring, *bucket_ns, now))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    /// Ratio 0.1 over 1 s (buckets of 100 ms). Script: (time ms, op) → admit?
    #[test]
    fn ratio_script() {
        let mut b = BudgetState::new(&RetryBudgetSpec::Ratio {
            max_ratio: 0.1,
            window: SimDuration::from_secs(1),
        });
        // 9 requests at t=0: 1 ≤ 0.1·9 = 0.9? no.
        for _ in 0..9 {
            b.on_request(ms(0));
        }
        assert!(!b.admit(ms(0), 0));
        // 10th: 1 ≤ 1.0 → yes; send it; the next needs 2 ≤ 1.0 → no.
        b.on_request(ms(50));
        assert!(b.admit(ms(50), 0));
        b.on_retry_sent(ms(50));
        assert!(!b.admit(ms(60), 0));
        // 10 more requests at 500 ms: 20 requests, 1 retry: 2 ≤ 2.0 → yes.
        for _ in 0..10 {
            b.on_request(ms(500));
        }
        assert!(b.admit(ms(500), 0));
        assert_eq!(b.ratio_window(ms(999)), Some((20, 1)));
        // At 1000 ms the bucket [0, 100) leaves the window (9 requests out); [0,100) also
        // held the request at 50 ms and the retry: window = buckets 1..=10 → 10 requests
        // (from 500 ms), 0 retries.
        assert_eq!(b.ratio_window(ms(1000)), Some((10, 0)));
        assert!(b.admit(ms(1000), 0));
        // At 1500 ms the 500-ms bucket has gone too: 0 requests → nothing admitted.
        assert_eq!(b.ratio_window(ms(1500)), Some((0, 0)));
        assert!(!b.admit(ms(1500), 0));
    }

    /// gRPC: max 4 tokens, ratio 0.5 (threshold 2). Script of results → tokens, admit.
    #[test]
    fn grpc_token_bucket_script() {
        let mut b = BudgetState::new(&RetryBudgetSpec::GrpcTokenBucket {
            max_tokens: 4.0,
            token_ratio: 0.5,
        });
        // (success, retryable failure) → (milli-tokens after, admit after)
        let script = [
            ((false, true), 3000, true),  // 4 − 1 = 3 > 2
            ((false, false), 3000, true), // non-retryable failure: no change
            ((false, true), 2000, false), // 2 ≤ 2: throttled
            ((true, false), 2500, true),  // +0.5 → 2.5 > 2
            ((false, true), 1500, false), // 1.5
            ((false, true), 500, false),  // 0.5
            ((false, true), 0, false),    // floored at 0
            ((true, false), 500, false),  // 0.5
            ((true, false), 1000, false),
            ((true, false), 1500, false),
            ((true, false), 2000, false), // 2.0 ≤ 2 still throttled
            ((true, false), 2500, true),
            ((true, false), 3000, true),
            ((true, false), 3500, true),
            ((true, false), 4000, true),
            ((true, false), 4000, true), // capped at max
        ];
        for (i, ((s, f), tokens, admit)) in script.into_iter().enumerate() {
            b.on_result(s, f);
            assert_eq!(b.milli_tokens(), Some(tokens), "step {i}");
            assert_eq!(b.admit(SimTime(0), 0), admit, "step {i}");
        }
    }

    /// The gRPC token sequence in closed form (gRFC A6; grpc-core `RetryThrottler`), with
    /// M = max milli-tokens, r = milli-tokens per success, h = ⌊M/2⌋ (integer division, as
    /// `max_milli_tokens_ / 2`), and the retry check made on the level *after* recording
    /// the failure (`RecordFailure` returns `new_value > max_milli_tokens_ / 2`):
    /// * from full, after n retryable failures the level is T_n = max(0, M − 1000·n); the
    ///   n-th is retried iff T_n > h, so exactly n* = ⌈(M − h)/1000⌉ − 1 failures in a row
    ///   are retried and every later one is throttled;
    /// * from empty, after k successes the level is S_k = min(M, k·r); the next failure is
    ///   retried iff S_k − 1000 > h, so the first k with a retry is k* = ⌊(h + 1000)/r⌋ + 1,
    ///   reachable only if M − 1000 > h (else a failure is never retried).
    ///
    /// Rows worked by hand: (max_tokens, token_ratio) → (r, n*, k*).
    /// * (10, 0.1), the A6 example: M 10000, h 5000, r 100; n* = ⌈5⌉ − 1 = 4 (9, 8, 7, 6
    ///   tokens retried; 5 not); k* = ⌊6000/100⌋ + 1 = 61.
    /// * (3, 0.5): h 1500, r 500; n* = ⌈1.5⌉ − 1 = 1; k* = ⌊2500/500⌋ + 1 = 6 (5 successes
    ///   reach 2500, a failure leaves 1500, not > 1500).
    /// * (1, 0.1): h 500; n* = ⌈0.5⌉ − 1 = 0; M − 1000 = 0 ≤ 500: never retried again.
    /// * (5, 0.333): h 2500, r 333; n* = ⌈2.5⌉ − 1 = 2; k* = ⌊3500/333⌋ + 1 = 11 (3663 − 1000
    ///   = 2663 > 2500; ten give 3330 − 1000 = 2330).
    /// * (7, 0.1259): r = 125, the fourth decimal dropped as grpc-core does (rounding would
    ///   give 126 and k* = 36); h 3500; n* = ⌈3.5⌉ − 1 = 3; k* = ⌊4500/125⌋ + 1 = 37 (36 give
    ///   4500 − 1000 = 3500, not > 3500).
    /// * (2.5, 0.1): h 1250; n* = ⌈1.25⌉ − 1 = 1; k* = ⌊2250/100⌋ + 1 = 23.
    /// * (10, 0.29): r = 290 (0.29 · 1000 is 289.99999999999994 in binary); k* =
    ///   ⌊6000/290⌋ + 1 = 21.
    #[test]
    fn grpc_token_sequence_closed_form() {
        #[rustfmt::skip]
        let rows: &[(f64, f64, u64, u64, Option<u64>)] = &[
            (10.0, 0.1, 100, 4, Some(61)),
            (3.0, 0.5, 500, 1, Some(6)),
            (1.0, 0.1, 100, 0, None),
            (5.0, 0.333, 333, 2, Some(11)),
            (7.0, 0.1259, 125, 3, Some(37)),
            (2.5, 0.1, 100, 1, Some(23)),
            (10.0, 0.29, 290, 4, Some(21)),
        ];
        for &(max_tokens, token_ratio, r, n_star, k_star) in rows {
            let spec = RetryBudgetSpec::GrpcTokenBucket { max_tokens, token_ratio };
            let mut b = BudgetState::new(&spec);
            let m = (max_tokens * 1000.0).round() as u64;
            let h = m / 2;
            // The closed forms agree with the hand-worked values.
            assert_eq!((m - h).div_ceil(1000) - 1, n_star, "{max_tokens}, {token_ratio}");
            assert_eq!((m > h + 1000).then(|| (h + 1000) / r + 1), k_star);
            let BudgetState::Tokens { ratio_milli, .. } = b else { panic!("a token bucket") };
            assert_eq!(ratio_milli, r, "{max_tokens}, {token_ratio}: r");
            // Failures from full: T_n, retried for exactly the first n* of them.
            let mut retried = 0;
            for n in 1..=(m / 1000 + 2) {
                b.on_result(false, true);
                assert_eq!(b.milli_tokens(), Some(m.saturating_sub(1000 * n)), "T_{n}");
                if b.admit(SimTime(0), 0) {
                    assert_eq!(retried, n - 1, "retried failures are the first ones");
                    retried += 1;
                }
            }
            assert_eq!(retried, n_star, "{max_tokens}, {token_ratio}: n*");
            assert_eq!(b.milli_tokens(), Some(0));
            // Successes from empty: S_k; the first k after which a failure is retried.
            let mut first = None;
            for k in 1..=(m / r + 100) {
                b.on_result(true, false);
                assert_eq!(b.milli_tokens(), Some((k * r).min(m)), "S_{k}");
                let mut probe = b.clone();
                probe.on_result(false, true);
                if first.is_none() && probe.admit(SimTime(0), 0) {
                    first = Some(k);
                }
            }
            assert_eq!(first, k_star, "{max_tokens}, {token_ratio}: k*");
        }
    }

    /// Envoy: 20 %, minimum 3. budget = max(3, ⌊0.2·active⌋).
    #[test]
    fn envoy_budget_script() {
        let mut b = BudgetState::new(&RetryBudgetSpec::EnvoyBudget {
            budget_percent: 20.0,
            min_retry_concurrency: 3,
        });
        let t = SimTime(0);
        // active 10 → budget max(3, 2) = 3: three retries go, the fourth does not.
        for _ in 0..3 {
            assert!(b.admit(t, 10));
            b.on_retry_sent(t);
        }
        assert!(!b.admit(t, 10));
        // active 20 → ⌊4.0⌋ = 4: one more; active 24 → ⌊4.8⌋ = 4: no more.
        assert!(b.admit(t, 20));
        b.on_retry_sent(t);
        assert!(!b.admit(t, 24));
        // active 25 → 5.
        assert!(b.admit(t, 25));
        // Two retries end: 2 in flight < max(3, ⌊2.0⌋) = 3 at active 10 → admitted.
        b.on_retry_done();
        b.on_retry_done();
        assert_eq!(b.retries_in_flight(), Some(2));
        assert!(b.admit(t, 10));
    }

    #[test]
    fn ron_forms() {
        let b: RetryBudgetSpec = ron::from_str("EnvoyBudget()").unwrap();
        assert_eq!(
            b,
            RetryBudgetSpec::EnvoyBudget { budget_percent: 20.0, min_retry_concurrency: 3 }
        );
        let b: RetryBudgetSpec = ron::from_str("Ratio()").unwrap();
        assert_eq!(
            b,
            RetryBudgetSpec::Ratio { max_ratio: 0.1, window: SimDuration::from_secs(10) }
        );
        let e = ron::from_str::<RetryBudgetSpec>("GrpcTokenBucket(token_ratio: 0)").unwrap_err();
        assert!(e.to_string().contains("expected a number in (0, 1], found 0"), "{e}");
    }
}
