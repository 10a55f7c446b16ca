//! Backoff intervals and jitter (docs/domain.md §7.4).
//!
//! The interval before retry `n` (1 = the first retry) is computed in two steps: the
//! backoff gives the un-jittered interval `expo(n)`, the jitter spreads it with one uniform
//! `u` in (0, 1) drawn from the call's own bits.
//!
//! * `Fixed { wait_duration }`: `expo(n) = wait_duration` (Resilience4j's default, 500 ms).
//! * `Exponential { wait_duration, exponential_backoff_multiplier,
//!   exponential_max_wait_duration }`:
//!   `expo(n) = min(max, wait_duration · multiplier^(n−1))` (Resilience4j's
//!   `IntervalFunction.ofExponentialBackoff`; multiplier default 1.5). The power is a loop
//!   of IEEE multiplications (bit-exact everywhere, n ≤ max_attempts), rounded to the
//!   nearest nanosecond.
//! * Jitter, all in whole nanoseconds, `floor` after the f64 product:
//!   - `None`: `expo`;
//!   - `Full`: `floor(u · expo)` — U(0, expo) (AWS "full jitter");
//!   - `Equal`: `h + floor(u · h)` with `h = floor(expo / 2)` — expo/2 + U(0, expo/2);
//!   - `Decorrelated { cap }`: `min(cap, base + floor(u · (3·prev − base)))` with
//!     `base = wait_duration` and `prev` the previous delay of this call (`base` before the
//!     first retry) — AWS "decorrelated jitter", `min(cap, U(base, 3·prev))`. It ignores the
//!     multiplier and the maximum: its growth is the ×3 and its bound is `cap`;
//!   - `Randomized { randomized_wait_factor }` (Resilience4j, default 0.5): with
//!     `δ = f · expo`, `floor(expo − δ + u · (2δ + 1 ms))` — Resilience4j's
//!     `min + random · (max − min + 1)` in milliseconds, its "+1" included.
//!
//! Architecture invariant: a pure function of (spec, n, prev, u); no state, no randomness of
//! its own.
//!
//! API boundary: [`Backoff::interval`] and [`Jitter::apply`] (or [`delay`] for both).

use serde::{Deserialize, Serialize};
use sim_core::SimDuration;

/// How the interval grows between retries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Backoff")]
pub enum Backoff {
    /// The same interval every time.
    Fixed {
        #[serde(alias = "wait")]
        wait_duration: SimDuration,
    },
    /// `wait_duration · multiplier^(n−1)`, capped.
    Exponential {
        #[serde(alias = "initial")]
        wait_duration: SimDuration,
        #[serde(
            default = "D::backoff_multiplier",
            alias = "multiplier",
            deserialize_with = "R::backoff_multiplier"
        )]
        exponential_backoff_multiplier: f64,
        /// Upper bound on the interval; absent = unbounded.
        #[serde(
            default,
            alias = "max",
            deserialize_with = "crate::validate::present",
            serialize_with = "crate::validate::ser_present",
            skip_serializing_if = "Option::is_none"
        )]
        exponential_max_wait_duration: Option<SimDuration>,
    },
}

impl Default for Backoff {
    /// Resilience4j's default: fixed 500 ms.
    fn default() -> Self {
        Backoff::Fixed { wait_duration: SimDuration::from_ms(500) }
    }
}

/// The defaults declared in the retry's parameter rows (`retry/spec.rs`).
use super::spec::{D, R};

/// How the interval is spread (docs/domain.md §7.4).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Jitter")]
pub enum Jitter {
    #[default]
    None,
    Full,
    Equal,
    Decorrelated {
        cap: SimDuration,
    },
    /// Resilience4j's `randomizedWaitFactor` (its `ofRandomized` / `ofExponentialRandomBackoff`).
    Randomized {
        #[serde(
            default = "D::randomized_wait_factor",
            deserialize_with = "R::randomized_wait_factor"
        )]
        randomized_wait_factor: f64,
    },
}

impl Backoff {
    /// The first interval (`base` of decorrelated jitter).
    pub fn wait_duration(&self) -> SimDuration {
        match self {
            Backoff::Fixed { wait_duration } | Backoff::Exponential { wait_duration, .. } => {
                *wait_duration
            }
        }
    }

    pub fn set_wait_duration(&mut self, d: SimDuration) {
        match self {
            Backoff::Fixed { wait_duration } | Backoff::Exponential { wait_duration, .. } => {
                *wait_duration = d
            }
        }
    }

    /// The un-jittered interval before retry `n` (n ≥ 1).
    pub fn interval(&self, n: u32) -> SimDuration {
        assert!(n >= 1, "retry numbers start at 1");
        match self {
            Backoff::Fixed { wait_duration } => *wait_duration,
            Backoff::Exponential {
                wait_duration,
                exponential_backoff_multiplier: m,
                exponential_max_wait_duration: max,
            } => {
                let max = max.unwrap_or(SimDuration::MAX);
                let mut x = wait_duration.0 as f64;
                for _ in 1..n {
                    x *= m;
                    if x >= max.0 as f64 {
                        return max;
                    }
                }
                SimDuration::from_ns_f64(x).min(max)
            }
        }
    }
}

impl Jitter {
    /// Spreads `expo` with the uniform `u` ∈ (0, 1); `base` and `prev` serve decorrelated.
    pub fn apply(
        &self,
        expo: SimDuration,
        base: SimDuration,
        prev: SimDuration,
        u: f64,
    ) -> SimDuration {
        assert!(u > 0.0 && u < 1.0, "u is in the open interval (0, 1)");
        let scale = |x: u64| (u * x as f64).floor() as u64;
        match self {
            Jitter::None => expo,
            Jitter::Full => SimDuration(scale(expo.0)),
            Jitter::Equal => {
                let h = expo.0 / 2;
                SimDuration(h + scale(h))
            }
            Jitter::Decorrelated { cap } => {
                let hi = prev.0.saturating_mul(3).max(base.0);
                SimDuration(base.0.saturating_add(scale(hi - base.0))).min(*cap)
            }
            Jitter::Randomized { randomized_wait_factor: f } => {
                let e = expo.0 as f64;
                let delta = f * e;
                SimDuration::from_ns_f64((e - delta + u * (2.0 * delta + 1e6)).floor())
            }
        }
    }
}

/// The delay before retry `n` of a call whose previous delay was `prev` (ignored unless
/// decorrelated; pass the base for the first retry).
pub fn delay(backoff: &Backoff, jitter: &Jitter, n: u32, prev: SimDuration, u: f64) -> SimDuration {
    jitter.apply(backoff.interval(n), backoff.wait_duration(), prev, u)
}

/// The variant-dependent settings as registry parameters (`retry.<n>.<param>`): each is
/// registered only for the variant that has it (`None` otherwise).
impl Backoff {
    pub fn multiplier(&self) -> Option<f64> {
        match self {
            Backoff::Exponential { exponential_backoff_multiplier, .. } => {
                Some(*exponential_backoff_multiplier)
            }
            Backoff::Fixed { .. } => None,
        }
    }
    /// The exponential backoff's cap, where one is declared.
    pub fn max_wait(&self) -> Option<SimDuration> {
        match self {
            Backoff::Exponential { exponential_max_wait_duration, .. } => {
                *exponential_max_wait_duration
            }
            Backoff::Fixed { .. } => None,
        }
    }
    /// Sets the cap of an exponential backoff (`retry.<name>.backoff_max_wait`).
    pub fn set_max_wait(&mut self, d: SimDuration) {
        if let Backoff::Exponential { exponential_max_wait_duration, .. } = self {
            *exponential_max_wait_duration = Some(d);
        }
    }
    pub fn set_multiplier(&mut self, x: f64) {
        if let Backoff::Exponential { exponential_backoff_multiplier, .. } = self {
            *exponential_backoff_multiplier = x;
        }
    }
}

impl Jitter {
    pub fn randomized_wait_factor(&self) -> Option<f64> {
        match self {
            Jitter::Randomized { randomized_wait_factor } => Some(*randomized_wait_factor),
            _ => None,
        }
    }
    pub fn set_randomized_wait_factor(&mut self, x: f64) {
        if let Jitter::Randomized { randomized_wait_factor } = self {
            *randomized_wait_factor = x;
        }
    }
    pub fn cap(&self) -> Option<SimDuration> {
        match self {
            Jitter::Decorrelated { cap } => Some(*cap),
            _ => None,
        }
    }
    pub fn set_cap(&mut self, d: SimDuration) {
        if let Jitter::Decorrelated { cap } = self {
            *cap = d;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn expo(initial_ms: u64, m: f64, max_ms: Option<u64>) -> Backoff {
        Backoff::Exponential {
            wait_duration: SimDuration::from_ms(initial_ms),
            exponential_backoff_multiplier: m,
            exponential_max_wait_duration: max_ms.map(SimDuration::from_ms),
        }
    }

    /// Un-jittered sequences, retries 1..=5.
    #[test]
    fn interval_sequences() {
        let table: &[(Backoff, [u64; 5])] = &[
            (Backoff::default(), [500 * MS; 5]),
            // 100 · 1.5^k ms: 100, 150, 225, 337.5, 506.25
            (expo(100, 1.5, None), [100 * MS, 150 * MS, 225 * MS, 337_500_000, 506_250_000]),
            // The sources' "1 s then 3 s": multiplier 3, capped at 5 s: 1, 3, 5, 5, 5 s.
            (expo(1000, 3.0, Some(5000)), [1000 * MS, 3000 * MS, 5000 * MS, 5000 * MS, 5000 * MS]),
            // multiplier 2 capped at 300 ms: 100, 200, 300, 300, 300.
            (expo(100, 2.0, Some(300)), [100 * MS, 200 * MS, 300 * MS, 300 * MS, 300 * MS]),
        ];
        for (b, want) in table {
            let got: Vec<u64> = (1..=5).map(|n| b.interval(n).0).collect();
            assert_eq!(got, want, "{b:?}");
        }
    }

    /// Jitter with fixed uniforms (exact binary fractions, so the products are exact).
    /// Backoff: exponential 100 ms × 2 (no cap) → expo = 100, 200, 400 ms.
    #[test]
    fn jitter_sequences_with_fixed_uniforms() {
        let b = expo(100, 2.0, None);
        let base = SimDuration::from_ms(100);
        let us = [0.25, 0.5, 0.75];
        let run = |j: &Jitter| {
            let mut prev = base;
            let mut out = vec![];
            for (i, &u) in us.iter().enumerate() {
                let d = delay(&b, j, i as u32 + 1, prev, u);
                out.push(d.0 / MS);
                prev = d;
            }
            out
        };
        // None: 100, 200, 400.
        assert_eq!(run(&Jitter::None), vec![100, 200, 400]);
        // Full: 0.25·100 = 25, 0.5·200 = 100, 0.75·400 = 300.
        assert_eq!(run(&Jitter::Full), vec![25, 100, 300]);
        // Equal: 50 + 0.25·50 = 62.5 → 62.5 ms (in ns, exact), 100 + 0.5·100 = 150,
        // 200 + 0.75·200 = 350.
        let eq: Vec<u64> = us
            .iter()
            .enumerate()
            .map(|(i, &u)| delay(&b, &Jitter::Equal, i as u32 + 1, base, u).0)
            .collect();
        assert_eq!(eq, vec![62_500_000, 150 * MS, 350 * MS]);
        // Decorrelated, cap 1 s: prev starts at base 100.
        //   1: 100 + 0.25·(300 − 100) = 150;  2: 100 + 0.5·(450 − 100) = 275;
        //   3: 100 + 0.75·(825 − 100) = 643.75 ms.
        let dj = Jitter::Decorrelated { cap: SimDuration::from_secs(1) };
        let mut prev = base;
        let mut got = vec![];
        for (i, &u) in us.iter().enumerate() {
            prev = delay(&b, &dj, i as u32 + 1, prev, u);
            got.push(prev.0);
        }
        assert_eq!(got, vec![150 * MS, 275 * MS, 643_750_000]);
        // Decorrelated with cap 200 ms: 150, then min(200, 275) = 200, then
        // min(200, 100 + 0.75·(600 − 100) = 475) = 200.
        let dj = Jitter::Decorrelated { cap: SimDuration::from_ms(200) };
        let mut prev = base;
        let mut got = vec![];
        for (i, &u) in us.iter().enumerate() {
            prev = delay(&b, &dj, i as u32 + 1, prev, u);
            got.push(prev.0 / MS);
        }
        assert_eq!(got, vec![150, 200, 200]);
        // Randomized, factor 0.5, expo 100 ms: δ = 50 ms, range [50, 151) ms:
        //   u = 0.25 → 50 + 0.25·101 = 75.25 ms; u = 0.5 → 50 + 50.5 = 100.5 ms.
        let rj = Jitter::Randomized { randomized_wait_factor: 0.5 };
        assert_eq!(rj.apply(SimDuration::from_ms(100), base, base, 0.25).0, 75_250_000);
        assert_eq!(rj.apply(SimDuration::from_ms(100), base, base, 0.5).0, 100_500_000);
    }

    #[test]
    fn ron_forms_and_validation() {
        let b: Backoff =
            ron::from_str(r#"Exponential(initial: "1s", multiplier: 3.0, max: "10s")"#).unwrap();
        assert_eq!(b, expo(1000, 3.0, Some(10_000)));
        let b: Backoff = ron::from_str(r#"Exponential(wait_duration: "1s")"#).unwrap();
        assert_eq!(b, expo(1000, 1.5, None));
        let e = ron::from_str::<Backoff>(r#"Exponential(wait_duration: "1s", multiplier: 0.5)"#)
            .unwrap_err();
        assert!(e.to_string().contains("expected a number in [1, 100], found 0.5"), "{e}");
        let j: Jitter = ron::from_str(r#"Decorrelated(cap: "20s")"#).unwrap();
        assert_eq!(j, Jitter::Decorrelated { cap: SimDuration::from_secs(20) });
    }
}
