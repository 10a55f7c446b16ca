//! Sentinel's warm-up controllers (`WARM_UP`, `WARM_UP_RATE_LIMITER`): a token bucket whose
//! fill level sets the allowed rate (Guava's SmoothWarmingUp, counted per second).
//!
//! With Java's casts and `int` fields (`WarmUpController.construct`, docs/domain.md §7.2):
//! `warningToken = (int)(warmUpPeriodSec·count) / (coldFactor − 1)` (integer division),
//! `maxToken = warningToken + (int)(2·warmUpPeriodSec·count / (1.0 + coldFactor))` (an
//! `int` sum that wraps: 100 000 QPS over 86 400 s with factor 3 gives maxToken
//! −1 073 741 826, so the bucket never fills and the rule allows `count` from the start),
//! `slope = (coldFactor − 1.0) / count / (maxToken − warningToken)` (`int` difference).
//! While `stored ≥ warningToken` the allowed QPS is
//! `nextUp(1 / ((stored − warningToken)·slope + 1/count))` (count/coldFactor when full),
//! otherwise `count`.
//!
//! Degenerate settings, as Sentinel computes them: when `maxToken == warningToken` (a small
//! `warmUpPeriodSec·count`, e.g. count 2 over 1 s with factor 4, or count 0) the slope is
//! +∞ and a bucket at the warning line gives `0·∞ = NaN` as the rate: `WarmUpController`
//! then blocks every call (`passQps + 1 ≤ NaN` is false) and `WarmUpRateLimiterController`
//! lets every call through (`Math.round(NaN)` = 0 ms cost). Otherwise the slope is finite
//! and ≥ 0, so the pacing cost is either 0 (that NaN) or at most
//! `round(1000 · coldFactor / count)` ms with `count ≥ 1.5 / 86 400` (≈ 6·10⁹ ms) — far
//! below Java's epoch clock, so "long ago" (`latestPassedTime = −1`) lets the first call
//! through for every valid setting, and no `long` sum overflows.
//!
//! `syncToken(previousPassQps)` runs on every check but acts once per whole second (the
//! millisecond clock floored to 1000): below the warning line tokens are refilled at
//! `count` per second elapsed; above it only when the previous second's passes were below
//! `(int)count / coldFactor`; the result is capped at `maxToken`, then the previous
//! second's passes are taken out (floor 0). The bucket starts "long ago" (`None`): the
//! first sync fills it to `maxToken`, i.e. a fresh system is cold.
//!
//! Architecture invariant: `0 ≤ stored ≤ maxToken` after every sync.
//!
//! API boundary: pure functions of (state, pass statistics, now); the caller records passes.

use super::throttle::java_math_round;
use super::{NS_PER_MS, Verdict, now_ms};
use sim_core::SimTime;

/// Token state of one warm-up controller.
#[derive(Clone, Debug)]
pub struct WarmUp {
    count: f64,
    cold_factor: u32,
    /// Java `int` fields, with Java's wrapping arithmetic.
    warning_token: i32,
    max_token: i32,
    slope: f64,
    stored: i64,
    /// Start (ms) of the second of the last sync; `None`: long ago.
    last_filled_ms: Option<u64>,
}

impl WarmUp {
    pub fn new(count: f64, warm_up_period_sec: u64, cold_factor: u32) -> Self {
        assert!(cold_factor > 1, "validated: cold factor > 1");
        let mut w = WarmUp {
            count,
            cold_factor,
            warning_token: 0,
            max_token: 0,
            slope: 0.0,
            stored: 0,
            last_filled_ms: None,
        };
        w.construct(count, warm_up_period_sec);
        w
    }

    /// `WarmUpController.construct`: `(int)` casts saturate (Rust's `as` too), `int` sums
    /// and differences wrap. `2 * warmUpPeriodInSec` is an `int` product: the period is
    /// declared ≤ 86 400, so it cannot overflow.
    fn construct(&mut self, count: f64, period: u64) {
        let cf = self.cold_factor as i32;
        let period = period as i32;
        self.count = count;
        self.warning_token = ((period as f64 * count) as i32) / (cf - 1);
        let above = ((2 * period) as f64 * count / (1.0 + cf as f64)) as i32;
        self.max_token = self.warning_token.wrapping_add(above);
        let span = self.max_token.wrapping_sub(self.warning_token);
        self.slope = (cf as f64 - 1.0) / count / span as f64;
    }

    /// Run-time change of count/period: the formulas are recomputed, stored tokens kept
    /// (capped at the new maximum, floor 0).
    pub fn set_count(&mut self, count: f64, warm_up_period_sec: u64) {
        self.construct(count, warm_up_period_sec);
        self.stored = self.stored.min(self.max_token as i64).max(0);
    }

    /// A rule reload: a new controller (the next sync refills the bucket).
    pub fn reset(&mut self) {
        self.stored = 0;
        self.last_filled_ms = None;
    }

    pub fn warning_token(&self) -> i64 {
        self.warning_token as i64
    }
    pub fn max_token(&self) -> i64 {
        self.max_token as i64
    }
    pub fn slope(&self) -> f64 {
        self.slope
    }
    pub fn stored(&self) -> i64 {
        self.stored
    }

    /// `syncToken(previousQps)`.
    pub fn sync(&mut self, previous_qps: u64, now: SimTime) {
        let t = now_ms(now);
        let current = t - t % 1000;
        if matches!(self.last_filled_ms, Some(last) if current <= last) {
            return;
        }
        let prev = previous_qps as i64;
        let (warning, max) = (self.warning_token as i64, self.max_token as i64);
        let refill = |old: i64, last: Option<u64>, count: f64| -> i64 {
            match last {
                None => i64::MAX, // long ago: the refill exceeds any maxToken
                Some(last) => (old as f64 + (current - last) as f64 * count / 1000.0) as i64,
            }
        };
        let old = self.stored;
        // Refill below the warning line, or above it while the last second was quiet
        // (`passQps < (int)count / coldFactor`); exactly at the line, never.
        let quiet = prev < (self.count as i32 as i64) / self.cold_factor as i64;
        let refills = old < warning || (old > warning && quiet);
        let new = if refills { refill(old, self.last_filled_ms, self.count) } else { old };
        let new = new.min(max);
        self.stored = new.saturating_sub(prev).max(0);
        self.last_filled_ms = Some(current);
        assert!((0..=max.max(0)).contains(&self.stored));
    }

    /// The allowed QPS above the warning line (`warningQps`), `None` below it.
    /// NaN when the slope is infinite and the bucket sits at the line (module doc).
    pub fn warming_qps(&self) -> Option<f64> {
        let warning = self.warning_token as i64;
        if self.stored >= warning {
            let above = (self.stored - warning) as f64;
            Some((1.0 / (above * self.slope + 1.0 / self.count)).next_up())
        } else {
            None
        }
    }

    /// `WarmUpController.canPass` (acquire count 1).
    pub fn can_pass(&mut self, pass_qps: u64, previous_qps: u64, now: SimTime) -> bool {
        self.sync(previous_qps, now);
        let next = (pass_qps + 1) as f64;
        match self.warming_qps() {
            Some(q) => next <= q,
            None => next <= self.count,
        }
    }
}

/// `WarmUpRateLimiterController`: the warm-up token state sets the pacing cost, whole ms.
#[derive(Clone, Debug)]
pub struct WarmUpPacing {
    pub warm: WarmUp,
    /// `latestPassedTime` (ms); `None`: long ago (Java's −1 against the epoch clock).
    latest_ms: Option<i64>,
}

impl WarmUpPacing {
    pub fn new(warm: WarmUp) -> Self {
        WarmUpPacing { warm, latest_ms: None }
    }

    pub fn reset(&mut self) {
        self.warm.reset();
        self.latest_ms = None;
    }

    /// The pacing cost (ms) the current token level gives (0 for a NaN rate).
    pub fn cost_ms(&self) -> i64 {
        pacing_cost_ms(self.warm.warming_qps().unwrap_or(self.warm.count))
    }

    /// `WarmUpRateLimiterController.canPass` (acquire count 1): sync, then pace like the
    /// uniform-rate controller, in Java `long` arithmetic. Count 0 is no special case:
    /// Sentinel's arithmetic lets every call through (a NaN rate, module doc).
    pub fn check(&mut self, previous_qps: u64, timeout_ms: u64, now: SimTime) -> Verdict {
        self.warm.sync(previous_qps, now);
        let t = now_ms(now) as i64;
        let cost = self.cost_ms();
        let Some(latest) = self.latest_ms else {
            self.latest_ms = Some(t);
            return Verdict::Pass;
        };
        let expected = cost.wrapping_add(latest);
        if expected <= t {
            self.latest_ms = Some(t);
            return Verdict::Pass;
        }
        let wait = expected.wrapping_sub(t);
        if wait > timeout_ms as i64 {
            return Verdict::Block;
        }
        self.latest_ms = Some(expected);
        // `Thread.sleep(waitTime)` from the real (sub-ms) time, as the uniform pacer.
        Verdict::PassAt(now + sim_core::SimDuration(wait as u64 * NS_PER_MS))
    }
}

/// `WarmUpRateLimiterController.canPass`: `costTime = Math.round(1.0 * acquireCount / qps *
/// 1000)` — (1/q)·1000 in doubles, which rounds differently from 1000/q when the quotient
/// lies within an ulp of a half (q = 133.33333333333334: 7.5 → 8, where 1000/q =
/// 7.499999999999999 → 7); a NaN rate costs 0 (`Math.round(NaN)`).
pub fn pacing_cost_ms(qps: f64) -> i64 {
    java_math_round(1.0 / qps * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::throttle::java_round;

    /// Formula table, by hand (Java casts):
    #[test]
    fn token_formulas() {
        // (count, period, cold, warning, max, slope)
        let table = [
            // (int)(10·10)/2 = 50; 50 + (int)(200/4) = 100; 2/10/50 = 0.004
            (10.0, 10, 3, 50, 100, 0.004),
            // (int)(10·100)/2 = 500; 500 + (int)(2000/4) = 1000; 2/100/500 = 4e-5
            (100.0, 10, 3, 500, 1000, 4e-5),
            // (int)(5·7)/3 = 11 (35/3); 11 + (int)(70/5) = 25; 3/7/14 = 0.030612…
            (7.0, 5, 4, 11, 25, 3.0 / 7.0 / 14.0),
            // (int)(10·2.5)/2 = 12; 12 + (int)(50/4 = 12.5) = 24; 2/2.5/12
            (2.5, 10, 3, 12, 24, 2.0 / 2.5 / 12.0),
        ];
        for (c, p, cf, w, m, s) in table {
            let wu = WarmUp::new(c, p, cf);
            assert_eq!((wu.warning_token(), wu.max_token()), (w, m), "count {c}");
            assert!((wu.slope() - s).abs() < 1e-15, "count {c}: {} vs {s}", wu.slope());
        }
    }

    /// count 10, 10 s, factor 3: at full bucket (stored 100, above 50) the rate is
    /// nextUp(1 / (50·0.004 + 0.1)) = nextUp(1/0.3) = 3.33…: passQps + 1 ≤ 3.33 → 3 a window.
    #[test]
    fn cold_start_allows_count_over_cold_factor() {
        let mut wu = WarmUp::new(10.0, 10, 3);
        assert!(wu.can_pass(0, 0, SimTime(0)));
        assert_eq!(wu.stored(), 100); // first sync fills the bucket
        assert!(wu.can_pass(2, 0, SimTime(1)));
        assert!(!wu.can_pass(3, 0, SimTime(2)));
        let q = wu.warming_qps().expect("above warning");
        assert!((q - 10.0 / 3.0).abs() < 1e-9); // 1/0.30000000000000004, nextUp
        // Next second, previous second passed 3: 3 < (int)10/3 = 3 is false → no refill,
        // stored = 100 − 3 = 97; above 47: 1/(0.188 + 0.1) = 3.47 → still 3 a window.
        assert!(!wu.can_pass(3, 3, SimTime(1_000_000_000)));
        assert_eq!(wu.stored(), 97);
        // Only once per second: a second check in the same second changes nothing.
        wu.can_pass(0, 3, SimTime(1_500_000_000));
        assert_eq!(wu.stored(), 97);
        // Reload: the next sync fills the bucket again (a cold system).
        wu.reset();
        wu.can_pass(0, 3, SimTime(1_600_000_000));
        assert_eq!(wu.stored(), 97); // filled to 100, minus previous second's 3
    }

    /// `WarmUpRateLimiterController`'s cost `Math.round(1.0 / q * 1000)`: (q, cost, and
    /// what round(1000 / q) would give).
    #[test]
    fn pacing_cost_rounds_as_sentinel() {
        let table = [
            (133.33333333333334, 8, 7),
            (117.64705882352942, 8, 9),
            (222.22222222222226, 5, 4),
            (10.0, 100, 100),
            (10.0 / 3.0, 300, 300),
        ];
        for (q, cost, other) in table {
            assert_eq!(pacing_cost_ms(q), cost, "q {q}");
            assert_eq!(java_round(1000.0 / q), other, "q {q}");
        }
    }

    /// `WarmUpRateLimiterController.canPass` reads whole milliseconds but sleeps
    /// `waitTime = expectedTime − currentTimeMillis()` from the real time, so a call that
    /// arrives 0.4 ms into a millisecond goes 0.4 ms after its scheduled millisecond.
    /// Count 10, cold: cost 300 ms. (arrival ns, verdict, why)
    #[test]
    fn pacing_sleeps_whole_milliseconds_from_a_sub_millisecond_arrival() {
        let mut p = WarmUpPacing::new(WarmUp::new(10.0, 10, 3));
        let table = [
            (0, Verdict::Pass, "latest long ago: passes, latest = 0 ms"),
            (400_000, Verdict::PassAt(SimTime(300_400_000)), "reads 0 ms, waits 300 ms"),
            (250_700_000, Verdict::PassAt(SimTime(600_700_000)), "reads 250, waits 600 − 250"),
            (299_999_999, Verdict::Block, "reads 299: 900 − 299 = 601 > 500"),
        ];
        for (t, v, why) in table {
            assert_eq!(p.check(0, 500, SimTime(t)), v, "{why}");
        }
    }

    /// Warm-up pacing, count 10: cold cost round(1000/3.33…) = 300 ms; warm (stored below
    /// the warning line) cost round(1000/10) = 100 ms.
    #[test]
    fn pacing_cost_cold_and_warm() {
        let mut p = WarmUpPacing::new(WarmUp::new(10.0, 10, 3));
        let ms = |t: u64| SimTime(t * NS_PER_MS);
        assert_eq!(p.check(0, 500, ms(0)), Verdict::Pass);
        assert_eq!(p.cost_ms(), 300);
        assert_eq!(p.check(0, 500, ms(0)), Verdict::PassAt(ms(300)));
        assert_eq!(p.check(0, 500, ms(0)), Verdict::Block); // wait 600 > 500
        // Drain the bucket: 60 passes in the previous second → stored 100 − 60 = 40 < 50.
        assert_eq!(p.check(60, 500, ms(1000)), Verdict::Pass); // latest 300 + cost 100 ≤ 1000
        assert_eq!(p.warm.stored(), 40);
        assert_eq!(p.cost_ms(), 100);
        assert_eq!(p.check(60, 500, ms(1000)), Verdict::PassAt(ms(1100)));
    }

    /// Calls at these ms through `p`, each told the passes of the previous whole second (as
    /// the resource's statistics would): the pass time of each call in ms, `None` blocked.
    fn run(p: &mut WarmUpPacing, times_ms: &[u64]) -> Vec<Option<u64>> {
        let (mut sec, mut this, mut prev) = (0, 0, 0);
        let mut out = Vec::new();
        for &t in times_ms {
            if t / 1000 != sec {
                prev = if t / 1000 == sec + 1 { this } else { 0 };
                (sec, this) = (t / 1000, 0);
            }
            let v = match p.check(prev, 500, SimTime(t * NS_PER_MS)) {
                Verdict::Pass => Some(t),
                Verdict::PassAt(at) => Some(at.as_ns() / NS_PER_MS),
                Verdict::Block => None,
            };
            this += v.is_some() as u64;
            out.push(v);
        }
        out
    }

    /// Regression (issue 32): warm-up pacing at degenerate settings panicked ("negative
    /// value NaN"). Each row is what a Java program (OpenJDK 17.0.15) printed running
    /// `WarmUpController.construct`/`syncToken` and `WarmUpRateLimiterController.canPass`'s
    /// arithmetic on an epoch clock, max queueing 500 ms, calls at
    /// 0,0,0,0,0, 1000,1000,1000, 1250, 2000,2000 ms:
    /// (count, period s, cold factor, warningToken, maxToken, pass times; X = blocked).
    #[test]
    fn degenerate_warm_up_pacing_as_sentinel() {
        const T: [u64; 11] = [0, 0, 0, 0, 0, 1000, 1000, 1000, 1250, 2000, 2000];
        const ALL: &str = "0 0 0 0 0 1000 1000 1000 1250 2000 2000";
        let table = [
            // maxToken = warningToken = 0: slope ∞, rate NaN, cost 0: every call passes.
            (2.0, 1, 4, 0, 0, ALL),
            (2.0, 1, 5, 0, 0, ALL),
            (0.0, 10, 3, 0, 0, ALL),
            // At the line (1) the rate is NaN (cost 0); once the 5 passes drain it, cost
            // round(1000/1.2) = 833 ms > the 500 ms queue after each pass.
            (1.2, 1, 2, 1, 1, "0 0 0 0 0 1000 X X X 2000 X"),
            // int sum wraps: maxToken < 0, the bucket stays empty, cost round(0.01) = 0.
            (1e5, 86_400, 3, 1_073_741_823, -1_073_741_826, ALL),
            // An ordinary rule for contrast: cold cost 300 ms, then warming.
            (10.0, 10, 3, 50, 100, "0 300 X X X 1000 1292 X 1584 2000 2280"),
        ];
        for (count, period, cf, warning, max, expect) in table {
            let mut p = WarmUpPacing::new(WarmUp::new(count, period, cf));
            assert_eq!((p.warm.warning_token(), p.warm.max_token()), (warning, max), "{count}");
            let got: Vec<String> = run(&mut p, &T)
                .into_iter()
                .map(|v| v.map_or("X".into(), |t| t.to_string()))
                .collect();
            assert_eq!(got.join(" "), expect, "count {count}, {period} s, factor {cf}");
        }
    }

    /// Regression (issue 32): `maxToken`'s `int` sum wraps in Java (100 000 QPS, 86 400 s,
    /// factor 3: −1 073 741 826), so the bucket never fills and `WarmUpController` allows
    /// `count` at once; held in 64 bits it filled to 3 221 225 470 tokens and allowed
    /// about a third of it (1 / (2 147 483 647 · slope + 1/count) ≈ 33 333 QPS).
    #[test]
    fn max_token_wraps_as_a_java_int() {
        let mut wu = WarmUp::new(1e5, 86_400, 3);
        assert!(wu.can_pass(50_000, 0, SimTime(0)), "50 001 ≤ count 100 000");
        assert_eq!(wu.stored(), 0);
        assert!(!wu.can_pass(100_000, 0, SimTime(1)), "100 001 > 100 000");
    }

    /// No setting a validated file can hold makes either controller panic, and the
    /// pacing cost stays within the module doc's bound (0, or ≤ round(1000 · factor /
    /// count) + 1 ms with count ≥ 1.5 / 86 400): a sweep over count × period × factor,
    /// each driven through several seconds of saturating and idle calls.
    #[test]
    fn sweep_of_the_parameter_space_never_panics() {
        let counts = [0.0, 1e-300, 1e-9, 1e-5, 0.3, 0.5, 1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 7.0];
        let more = [10.0, 99.9, 1e3, 1e4, 14_913.0, 1e5, 1e6, 1e8, 1e9];
        let times: Vec<u64> = (0..40).map(|i| i * 137 % 5000).chain(9000..9010).collect();
        for &count in counts.iter().chain(&more) {
            for period in [1, 2, 3, 5, 10, 60, 3600, 86_400] {
                for cf in [2, 3, 4, 5, 10, 100] {
                    let mut sorted = times.clone();
                    sorted.sort();
                    let mut p = WarmUpPacing::new(WarmUp::new(count, period, cf));
                    run(&mut p, &sorted);
                    let cost = p.cost_ms();
                    let bound = (1000.0 * cf as f64 / count).round() + 1.0;
                    assert!(cost == 0 || (cost as f64) <= bound, "{count} {period} {cf}: {cost}");
                    assert!(cost < 6_000_000_000, "{count} {period} {cf}: {cost}");
                    let mut w = WarmUp::new(count, period, cf);
                    for (i, &t) in sorted.iter().enumerate() {
                        w.can_pass(i as u64 % 7, i as u64 * 3, SimTime(t * NS_PER_MS));
                    }
                }
            }
        }
    }
}
