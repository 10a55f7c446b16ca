//! Sentinel's uniform-rate controller (`RATE_LIMITER`, "throttling", leaky bucket).
//!
//! Calls are spaced `cost = 1000 / count` ms apart. Rounding follows docs/domain.md §7.2 (Sentinel's
//! `ThrottlingController`): the cost is `Math.round(1000 / count)` whole milliseconds on the
//! millisecond clock, unless `1000 % Math.round(count) != 0` or `count > 1000`, in which
//! case it is `Math.round(1e9 / count)` whole nanoseconds on the nanosecond clock. So
//! count 10 → 100 ms; count 3 → 333 333 333 ns (not 333 ms); count 4 → 250 ms.
//!
//! With `latest` the latest pass time: if `latest + cost ≤ now` the call passes and
//! `latest = now` (idle time banks no burst); otherwise `wait = latest + cost − now`, the
//! call is blocked when `wait > max_queueing_time_ms`, else `latest += cost` and the call
//! passes after sleeping `wait` from its arrival (`Thread.sleep` from the real time: on the
//! millisecond clock up to 1 ms after `latest`). `latest` starts "long ago" (`None`): the
//! first call passes at once.
//!
//! Architecture invariant: `latest` never decreases, and on the millisecond clock costs are
//! ≥ 1 ms, so successive `PassAt` times never decrease (FIFO release, ties in order). A parked call that is cancelled keeps its slot
//! (Sentinel cannot give back a sleeping thread's reservation either).
//!
//! API boundary: a pure function of (`count`, `max_queueing_time_ms`, state, now).

use super::{NS_PER_MS, Verdict};
use sim_core::SimTime;

/// Whether Sentinel measures this count's cost in nanoseconds (`useNanoSeconds`).
/// `Math.round(count) == 0` (count < 0.5) would divide by zero in Java; we use milliseconds.
pub fn uses_nanos(count: f64) -> bool {
    let r = java_round(count);
    (r != 0 && 1000 % r != 0) || count / 1000.0 > 1.0
}

/// `java.lang.Math.round(double)` (Java 7+) for the non-negative values used here: ties go
/// up, and the fraction is compared exactly — `floor(x + 0.5)` (Java 6) rounds
/// 0.49999999999999994 up to 1 because the sum rounds to 1.0.
pub fn java_round(x: f64) -> u64 {
    assert!(x >= 0.0, "negative value {x}");
    java_math_round(x) as u64
}

/// `java.lang.Math.round(double)` for every double: ties go up (−2.5 → −2), NaN → 0, values
/// beyond the `long` range (±∞ included) saturate to `Long.MIN_VALUE` / `MAX_VALUE` (Rust's
/// float-to-int `as` saturates the same way). `x − floor(x)` is exact for every double.
pub fn java_math_round(x: f64) -> i64 {
    if x.is_nan() {
        return 0;
    }
    let f = x.floor();
    (if x - f >= 0.5 { f + 1.0 } else { f }) as i64
}

/// Spacing between two calls, in nanoseconds (whole ms or whole ns as Sentinel computes).
/// `None` when count is 0 (every call is blocked).
pub fn cost_ns(count: f64) -> Option<u64> {
    if count <= 0.0 {
        return None;
    }
    Some(if uses_nanos(count) {
        java_round(1e9 / count)
    } else {
        java_round(1000.0 / count).saturating_mul(NS_PER_MS)
    })
}

/// State of one uniform-rate controller.
#[derive(Clone, Debug, Default)]
pub struct Throttle {
    /// Latest (scheduled) pass time in ns; `None`: long ago.
    latest_ns: Option<u64>,
}

impl Throttle {
    pub fn new() -> Self {
        Throttle { latest_ns: None }
    }

    /// The latest scheduled pass time.
    pub fn latest(&self) -> Option<SimTime> {
        self.latest_ns.map(SimTime)
    }

    /// Checks one call at `now`.
    pub fn check(&mut self, count: f64, max_queueing_time_ms: u64, now: SimTime) -> Verdict {
        let Some(cost) = cost_ns(count) else { return Verdict::Block };
        // Sentinel's clock for this count: whole ms, or ns.
        let t = if uses_nanos(count) { now.as_ns() } else { now.as_ns() / NS_PER_MS * NS_PER_MS };
        let Some(latest) = self.latest_ns else {
            self.latest_ns = Some(t);
            return Verdict::Pass;
        };
        let expected = latest.saturating_add(cost);
        if expected <= t {
            self.latest_ns = Some(t);
            return Verdict::Pass;
        }
        let wait = expected - t;
        if wait > max_queueing_time_ms * NS_PER_MS {
            return Verdict::Block;
        }
        self.latest_ns = Some(expected);
        // `ThrottlingController` (`RateLimiterController.canPass` in earlier releases):
        // `Thread.sleep(waitTime)` with waitTime =
        // latest − currentTimeMillis(): in ms mode the sleep starts at the real (sub-ms)
        // time, so the call goes at now + wait, up to 1 ms after the scheduled ms. (Releases
        // stay in order: costs are ≥ 1 ms in ms mode.)
        Verdict::PassAt(now + sim_core::SimDuration(wait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_rounding_table() {
        // (count, uses ns?, cost ns) — by hand from Math.round:
        let table = [
            (10.0, false, 100_000_000),  // 1000 % 10 = 0 → round(1000/10) = 100 ms
            (3.0, true, 333_333_333),    // 1000 % 3 = 1 → round(1e9/3) = 333 333 333.3 → ns
            (4.0, false, 250_000_000),   // 1000 % 4 = 0 → 250 ms
            (3.4, true, 294_117_647),    // round(3.4) = 3 → ns; 1e9/3.4 = 294 117 647.06
            (2.6, true, 384_615_385),    // round(2.6) = 3 → ns; 1e9/2.6 = 384 615 384.6
            (0.5, false, 2_000_000_000), // round(0.5) = 1, 1000 % 1 = 0 → 2000 ms
            (2000.0, true, 500_000),     // count > 1000 → ns: 1e9/2000
            (1000.0, false, 1_000_000),  // 1000 % 1000 = 0, not > 1000 → 1 ms
            (400.0, true, 2_500_000),    // 1000 % 400 = 200 → ns (ms would round 2.5 to 3)
        ];
        for (c, ns, cost) in table {
            assert_eq!((uses_nanos(c), cost_ns(c)), (ns, Some(cost)), "count {c}");
        }
        assert_eq!(cost_ns(0.0), None);
    }

    /// `java.lang.Math.round` (Java 7+): (x, rounded).
    #[test]
    fn java_round_table() {
        let table = [
            (0.0, 0),
            (0.49999999999999994, 0), // floor(x + 0.5) would give 1
            (0.5, 1),
            (2.5, 3),
            (7.499999999999999, 7),
            (7.5, 8),
            (4503599627370495.5, 4503599627370496),
        ];
        for (x, r) in table {
            assert_eq!(java_round(x), r, "{x}");
        }
        // Every double, as `Math.round(double)` returns it (OpenJDK 17.0.15):
        let all = [
            (f64::NAN, 0),
            (f64::INFINITY, i64::MAX),
            (f64::NEG_INFINITY, i64::MIN),
            (1e300, i64::MAX),
            (-2.5, -2),
            (-2.6, -3),
            (-0.49999999999999994, 0),
            (9.223372036854776e18, i64::MAX),
        ];
        for (x, r) in all {
            assert_eq!(java_math_round(x), r, "{x}");
        }
    }

    /// count 10 (cost 100 ms), max queueing 500 ms. Script: (time ms, expected verdict).
    #[test]
    fn pacing_script() {
        let mut th = Throttle::new();
        let ms = |t: u64| SimTime(t * NS_PER_MS);
        let script = [
            (0, Verdict::Pass),            // latest long ago → pass, latest = 0
            (0, Verdict::PassAt(ms(100))), // wait 100 ≤ 500
            (0, Verdict::PassAt(ms(200))),
            (0, Verdict::PassAt(ms(300))),
            (0, Verdict::PassAt(ms(400))),
            (0, Verdict::PassAt(ms(500))), // wait 500 = max: not > 500 → queued
            (0, Verdict::Block),           // wait 600 > 500
            (50, Verdict::Block),          // latest 500: wait 600 − 50 = 550 > 500
            (100, Verdict::PassAt(ms(600))), // wait 600 − 100 = 500 → queued
        ];
        for (i, (t, v)) in script.iter().enumerate() {
            assert_eq!(th.check(10.0, 500, ms(*t)), *v, "row {i}");
        }
        // A 5 s pause banks nothing: latest = 600, at 5600 pass and latest = 5600; the
        // next call at 5600 waits a full cost.
        assert_eq!(th.check(10.0, 500, ms(5600)), Verdict::Pass);
        assert_eq!(th.check(10.0, 500, ms(5600)), Verdict::PassAt(ms(5700)));
        // Sub-ms arrival in ms mode (ThrottlingController's sleep): now = 5700.4 ms reads
        // as 5700; expected 5800, wait 100 ms, slept from 5700.4 → goes at 5800.4 ms.
        assert_eq!(
            th.check(10.0, 500, SimTime(5_700_400_000)),
            Verdict::PassAt(SimTime(5_800_400_000))
        );
    }

    /// count 3 → cost 333 333 333 ns on the ns clock.
    #[test]
    fn count_three_in_nanoseconds() {
        let mut th = Throttle::new();
        assert_eq!(th.check(3.0, 500, SimTime(0)), Verdict::Pass);
        assert_eq!(th.check(3.0, 500, SimTime(0)), Verdict::PassAt(SimTime(333_333_333)));
        // next wait = 666 666 666 − 0 > 500 ms → block; at 200 ms: 666 666 666 − 2e8 =
        // 466 666 666 ≤ 5e8 → queued at 666 666 666.
        assert_eq!(th.check(3.0, 500, SimTime(0)), Verdict::Block);
        assert_eq!(th.check(3.0, 500, SimTime(200_000_000)), Verdict::PassAt(SimTime(666_666_666)));
        // 1 s later, exactly latest + cost = 999 999 999 passes at once.
        assert_eq!(th.check(3.0, 500, SimTime(999_999_999)), Verdict::Pass);
    }

    /// No count a validated file can hold ([0, 1e9], any float) panics the pacer: costs
    /// beyond the `long` range saturate as `Math.round` does and the sums saturate.
    #[test]
    fn sweep_of_counts_never_panics() {
        for count in [0.0, 1e-300, 1e-12, 1e-3, 0.49999999999999994, 0.5, 2.6, 3.0, 999.5, 1e9] {
            for max_ms in [0, 1, 500, 3_600_000] {
                let mut th = Throttle::new();
                for t in [0, 0, 1, 999_999, 5_000_000_000, u64::MAX / 2] {
                    th.check(count, max_ms, SimTime(t));
                }
            }
        }
    }
}
