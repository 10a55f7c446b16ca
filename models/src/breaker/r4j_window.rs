//! Resilience4j's sliding windows and its threshold check.
//!
//! COUNT_BASED: a ring of the last N recorded results (`FixedSizeSlidingWindowMetrics`).
//! TIME_BASED: N one-second buckets (`SlidingTimeWindowMetrics`). Resilience4j keys the
//! buckets by epoch second; the simulation keys them by whole seconds since t = 0
//! (bucket k holds results recorded in `[k s, (k+1) s)`), and a snapshot at second s
//! covers seconds `s−N+1 ..= s`. The window only moves when a result is recorded.
//!
//! The check uses Java's `float` arithmetic (`failed * 100.0f / total`), so rates and
//! thresholds compare bit for bit as in Resilience4j: open when rate ≥ threshold.
//!
//! Architecture invariant: the aggregate always equals the sum over the ring / the
//! buckets (asserted in debug builds); memory is bounded by the window size.
//!
//! API boundary: used only by [`super::r4j::CircuitBreaker`].

use sim_core::SimTime;
use sim_core::time::NS_PER_S;
use std::collections::VecDeque;

/// Aggregated results: calls, failed calls, slow calls (slow failures count in both).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub calls: u64,
    pub failed: u64,
    pub slow: u64,
}

impl Snapshot {
    fn add(&mut self, failed: bool, slow: bool) {
        self.calls += 1;
        self.failed += failed as u64;
        self.slow += slow as u64;
    }
    fn sub(&mut self, o: &Snapshot) {
        self.calls -= o.calls;
        self.failed -= o.failed;
        self.slow -= o.slow;
    }
    /// Java: `failed * 100.0f / total` (0 with no calls).
    pub fn failure_rate(&self) -> f32 {
        if self.calls == 0 { 0.0 } else { self.failed as f32 * 100.0f32 / self.calls as f32 }
    }
    pub fn slow_rate(&self) -> f32 {
        if self.calls == 0 { 0.0 } else { self.slow as f32 * 100.0f32 / self.calls as f32 }
    }
}

/// The result of a threshold check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    BelowMinimumCalls,
    BelowThresholds,
    FailureRateAboveThreshold,
    SlowCallRateAboveThreshold,
}

impl Verdict {
    pub fn exceeded(self) -> bool {
        matches!(self, Verdict::FailureRateAboveThreshold | Verdict::SlowCallRateAboveThreshold)
    }
}

/// `CircuitBreakerMetrics.checkIfThresholdsExceeded`.
pub fn verdict(s: &Snapshot, minimum_calls: u64, failure_thr: f32, slow_thr: f32) -> Verdict {
    if s.calls == 0 || s.calls < minimum_calls {
        return Verdict::BelowMinimumCalls;
    }
    if s.failure_rate() >= failure_thr {
        return Verdict::FailureRateAboveThreshold;
    }
    if s.slow_rate() >= slow_thr {
        return Verdict::SlowCallRateAboveThreshold;
    }
    Verdict::BelowThresholds
}

#[derive(Clone, Debug)]
pub enum Window {
    Count { size: usize, ring: VecDeque<(bool, bool)>, total: Snapshot },
    Time { size_s: u64, buckets: Vec<Snapshot>, latest_s: u64, total: Snapshot },
}

impl Window {
    pub fn count(size: u64) -> Window {
        assert!(size >= 1);
        Window::Count { size: size as usize, ring: VecDeque::new(), total: Snapshot::default() }
    }

    pub fn time(size_s: u64) -> Window {
        assert!(size_s >= 1);
        Window::Time {
            size_s,
            buckets: vec![Snapshot::default(); size_s as usize],
            latest_s: 0,
            total: Snapshot::default(),
        }
    }

    /// The minimum number of calls as Resilience4j applies it: capped at the window size
    /// for COUNT_BASED, not capped for TIME_BASED.
    pub fn effective_minimum(&self, minimum: u64) -> u64 {
        match self {
            Window::Count { size, .. } => minimum.min(*size as u64),
            Window::Time { .. } => minimum,
        }
    }

    /// Records one result at `now` and returns the snapshot after it.
    pub fn record(&mut self, failed: bool, slow: bool, now: SimTime) -> Snapshot {
        match self {
            Window::Count { size, ring, total } => {
                if ring.len() == *size {
                    let (f, s) = ring.pop_front().expect("full ring");
                    let mut old = Snapshot::default();
                    old.add(f, s);
                    total.sub(&old);
                }
                ring.push_back((failed, slow));
                total.add(failed, slow);
                debug_assert_eq!(total.calls as usize, ring.len());
                *total
            }
            Window::Time { size_s, buckets, latest_s, total } => {
                let sec = now.0 / NS_PER_S;
                assert!(sec >= *latest_s, "time went backwards in a breaker window");
                // Move the head: every second after the latest one, up to a full turn,
                // starts an empty bucket (the oldest one is dropped).
                let steps = (sec - *latest_s).min(*size_s);
                for k in 1..=steps {
                    let i = ((*latest_s + k) % *size_s) as usize;
                    let old = buckets[i];
                    total.sub(&old);
                    buckets[i] = Snapshot::default();
                }
                *latest_s = sec;
                buckets[(sec % *size_s) as usize].add(failed, slow);
                total.add(failed, slow);
                debug_assert_eq!(
                    total.calls,
                    buckets.iter().map(|b| b.calls).sum::<u64>(),
                    "aggregate = sum of buckets"
                );
                *total
            }
        }
    }

    /// The aggregate as last recorded (the time window is not moved).
    pub fn snapshot(&self) -> Snapshot {
        match self {
            Window::Count { total, .. } | Window::Time { total, .. } => *total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(sec: u64, ms: u64) -> SimTime {
        SimTime(sec * NS_PER_S + ms * 1_000_000)
    }

    /// Ring of 3: (failed, slow) recorded → (calls, failed, slow) after each.
    #[test]
    fn count_ring_drops_the_oldest() {
        let mut w = Window::count(3);
        let script = [
            ((true, false), (1, 1, 0)),
            ((false, true), (2, 1, 1)),
            ((true, true), (3, 2, 2)),
            ((false, false), (3, 1, 2)), // drops (true, false): ring = slow, failed+slow, ok
            ((false, false), (3, 1, 1)), // drops (false, true)
            ((false, false), (3, 0, 0)), // drops (true, true)
        ];
        for ((f, sl), (c, fa, so)) in script {
            let snap = w.record(f, sl, SimTime(0));
            assert_eq!(snap, Snapshot { calls: c, failed: fa, slow: so });
        }
        assert_eq!(w.effective_minimum(100), 3);
    }

    /// 3 one-second buckets: a result at second s drops the seconds before s−2.
    #[test]
    fn time_buckets_expire_by_whole_seconds() {
        let mut w = Window::time(3);
        let script = [
            (s(0, 0), true, 1, 1),
            (s(0, 999), false, 2, 1),
            (s(2, 999), false, 3, 1), // seconds 0..=2 in the window
            (s(3, 0), false, 2, 0),   // second 0 (2 calls, 1 failed) dropped
            (s(10, 0), true, 1, 1),   // a jump longer than the window clears it
        ];
        for (t, f, calls, failed) in script {
            let snap = w.record(f, false, t);
            assert_eq!((snap.calls, snap.failed), (calls, failed), "at {t:?}");
        }
        assert_eq!(w.effective_minimum(100), 100, "TIME_BASED minimum is not capped");
    }

    /// Java float arithmetic: 1/3 failed = 33.333332f; thresholds inclusive.
    #[test]
    fn verdict_is_inclusive_and_float_exact() {
        let half = Snapshot { calls: 10, failed: 5, slow: 0 };
        assert_eq!(verdict(&half, 10, 50.0, 100.0), Verdict::FailureRateAboveThreshold);
        assert_eq!(verdict(&half, 11, 50.0, 100.0), Verdict::BelowMinimumCalls);
        assert_eq!(verdict(&half, 10, 50.01, 100.0), Verdict::BelowThresholds);
        let third = Snapshot { calls: 3, failed: 1, slow: 3 };
        assert_eq!(third.failure_rate(), 33.333332f32);
        assert_eq!(verdict(&third, 1, 33.333332, 100.0), Verdict::FailureRateAboveThreshold);
        // slow 3/3 = 100% ≥ 100%.
        assert_eq!(verdict(&third, 1, 50.0, 100.0), Verdict::SlowCallRateAboveThreshold);
        assert_eq!(verdict(&Snapshot::default(), 0, 50.0, 100.0), Verdict::BelowMinimumCalls);
    }
}
