//! Sentinel's warm-up controllers (`WARM_UP`, `WARM_UP_RATE_LIMITER`): a token bucket whose
//! fill level sets the allowed rate (Guava's SmoothWarmingUp, counted per second).
//!
//! With Java's casts (docs/domain.md §7.2):
//! `warningToken = (int)(warmUpPeriodSec·count) / (coldFactor − 1)` (integer division),
//! `maxToken = warningToken + (int)(2·warmUpPeriodSec·count / (1.0 + coldFactor))`,
//! `slope = (coldFactor − 1.0) / count / (maxToken − warningToken)`.
//! While `stored ≥ warningToken` the allowed QPS is
//! `nextUp(1 / ((stored − warningToken)·slope + 1/count))` (count/coldFactor when full),
//! otherwise `count`.
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

use super::throttle::java_round;
use super::{NS_PER_MS, Verdict, now_ms};
use sim_core::SimTime;

/// Token state of one warm-up controller.
#[derive(Clone, Debug)]
pub struct WarmUp {
    count: f64,
    cold_factor: u32,
    warning_token: i64,
    max_token: i64,
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

    fn construct(&mut self, count: f64, period: u64) {
        let cf = self.cold_factor as i64;
        self.count = count;
        self.warning_token = ((period as f64 * count) as i32 as i64) / (cf - 1);
        self.max_token =
            self.warning_token + (2.0 * period as f64 * count / (1.0 + cf as f64)) as i32 as i64;
        self.slope = (cf as f64 - 1.0) / count / (self.max_token - self.warning_token) as f64;
    }

    /// Run-time change of count/period: the formulas are recomputed, stored tokens kept
    /// (capped at the new maximum).
    pub fn set_count(&mut self, count: f64, warm_up_period_sec: u64) {
        self.construct(count, warm_up_period_sec);
        self.stored = self.stored.min(self.max_token);
    }

    /// A rule reload: a new controller (the next sync refills the bucket).
    pub fn reset(&mut self) {
        self.stored = 0;
        self.last_filled_ms = None;
    }

    pub fn warning_token(&self) -> i64 {
        self.warning_token
    }
    pub fn max_token(&self) -> i64 {
        self.max_token
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
        let refills = old < self.warning_token || (old > self.warning_token && quiet);
        let new = if refills { refill(old, self.last_filled_ms, self.count) } else { old };
        let new = new.min(self.max_token);
        self.stored = (new - prev).max(0);
        self.last_filled_ms = Some(current);
        assert!((0..=self.max_token.max(0)).contains(&self.stored));
    }

    /// The allowed QPS above the warning line (`warningQps`), `None` below it.
    pub fn warming_qps(&self) -> Option<f64> {
        if self.stored >= self.warning_token {
            let above = (self.stored - self.warning_token) as f64;
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
    latest_ms: Option<u64>,
}

impl WarmUpPacing {
    pub fn new(warm: WarmUp) -> Self {
        WarmUpPacing { warm, latest_ms: None }
    }

    pub fn reset(&mut self) {
        self.warm.reset();
        self.latest_ms = None;
    }

    /// The pacing cost (ms) the current token level gives.
    pub fn cost_ms(&self) -> u64 {
        pacing_cost_ms(self.warm.warming_qps().unwrap_or(self.warm.count))
    }

    /// `canPass` (acquire count 1): sync, then pace like the uniform-rate controller.
    pub fn check(&mut self, previous_qps: u64, timeout_ms: u64, now: SimTime) -> Verdict {
        if self.warm.count <= 0.0 {
            return Verdict::Block;
        }
        self.warm.sync(previous_qps, now);
        let t = now_ms(now);
        let cost = self.cost_ms();
        let Some(latest) = self.latest_ms else {
            self.latest_ms = Some(t);
            return Verdict::Pass;
        };
        let expected = latest.saturating_add(cost);
        if expected <= t {
            self.latest_ms = Some(t);
            return Verdict::Pass;
        }
        if expected - t > timeout_ms {
            return Verdict::Block;
        }
        self.latest_ms = Some(expected);
        // `Thread.sleep(waitTime)` from the real (sub-ms) time, as the uniform pacer.
        Verdict::PassAt(now + sim_core::SimDuration((expected - t) * NS_PER_MS))
    }
}

/// `WarmUpRateLimiterController.canPass`: `costTime = Math.round(1.0 * acquireCount / qps *
/// 1000)` — (1/q)·1000 in doubles, which rounds differently from 1000/q when the quotient
/// lies within an ulp of a half (q = 133.33333333333334: 7.5 → 8, where 1000/q =
/// 7.499999999999999 → 7).
pub fn pacing_cost_ms(qps: f64) -> u64 {
    java_round(1.0 / qps * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
