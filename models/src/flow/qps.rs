//! Sentinel's `DefaultController` (reject at once) for both grades, and the resource
//! statistics every flow controller reads (`StatisticNode`: pass QPS, previous-second pass
//! QPS, current thread count).
//!
//! QPS grade: block when `(int) passQps + 1 > count`, `passQps` being the passes in the
//! rolling 1 s window of two 500 ms buckets. THREAD grade: block when `curThreadNum + 1 >
//! count`, `curThreadNum` being the calls that passed and have not returned.
//!
//! Architecture invariant: statistics change only when a call finally passes every rule
//! ([`NodeStats::record_pass`]) and when it returns ([`NodeStats::record_exit`]); a blocked
//! call leaves no trace, as in Sentinel's `StatisticSlot`.
//!
//! API boundary: pure checks over a [`NodeStats`]; no call ids, no time of its own.

use super::leap_array::LeapArray;
use super::now_ms;
use sim_core::SimTime;

/// The statistics of one resource (Sentinel's cluster node for the resource).
#[derive(Clone, Debug)]
pub struct NodeStats {
    /// Rolling second: 2 × 500 ms (`rollingCounterInSecond`).
    pub second: LeapArray,
    /// Whole seconds, for `previousPassQps()` (`rollingCounterInMinute`).
    pub minute: LeapArray,
    /// Calls passed and not yet returned (`curThreadNum`).
    pub threads: u64,
}

impl Default for NodeStats {
    fn default() -> Self {
        NodeStats { second: LeapArray::second(), minute: LeapArray::previous_second(), threads: 0 }
    }
}

impl NodeStats {
    /// `(long) passQps()` at `now` (the window is 1 s, so the count is the rate).
    pub fn pass_qps(&self, now: SimTime) -> u64 {
        self.second.pass(now_ms(now))
    }
    /// `previousPassQps()`: passes in the previous whole second.
    pub fn previous_pass_qps(&self, now: SimTime) -> u64 {
        self.minute.previous_window_pass(now_ms(now))
    }
    pub fn record_pass(&mut self, now: SimTime) {
        let t = now_ms(now);
        self.second.add_pass(t, 1);
        self.minute.add_pass(t, 1);
        self.threads += 1;
    }
    pub fn record_exit(&mut self) {
        assert!(self.threads > 0, "more exits than passes");
        self.threads -= 1;
    }
}

/// `DefaultController.canPass` with QPS grade (acquire count 1).
pub fn qps_can_pass(stats: &NodeStats, count: f64, now: SimTime) -> bool {
    (stats.pass_qps(now) + 1) as f64 <= count
}

/// `DefaultController.canPass` with THREAD grade (acquire count 1).
pub fn thread_can_pass(stats: &NodeStats, count: f64) -> bool {
    (stats.threads + 1) as f64 <= count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> SimTime {
        SimTime(t * 1_000_000)
    }

    /// count 2: block when passes in window + 1 > 2.
    #[test]
    fn qps_and_thread_checks() {
        let mut s = NodeStats::default();
        assert!(qps_can_pass(&s, 2.0, ms(0)));
        s.record_pass(ms(0));
        assert!(qps_can_pass(&s, 2.0, ms(1))); // 1 + 1 ≤ 2
        s.record_pass(ms(1));
        assert!(!qps_can_pass(&s, 2.0, ms(2))); // 2 + 1 > 2
        assert!(!qps_can_pass(&s, 2.5, ms(2))); // 3 > 2.5
        assert!(qps_can_pass(&s, 2.0, ms(1000))); // [0,500) left the window
        assert_eq!(s.threads, 2);
        assert!(!thread_can_pass(&s, 2.0));
        s.record_exit();
        assert!(thread_can_pass(&s, 2.0));
        assert_eq!(s.previous_pass_qps(ms(1000)), 2);
    }
}
