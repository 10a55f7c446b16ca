//! Sentinel's sliding-window counter (`LeapArray` of `MetricBucket`s), counting passes.
//!
//! `sample_count` buckets of `interval_ms / sample_count` each, indexed by
//! `(t / bucket_ms) % sample_count`, on the millisecond clock. Reading at `t` sums the
//! buckets whose start lies in `[cur − (sample_count − 1)·bucket_ms, cur]` (`cur` = start
//! of `t`'s bucket). That is exactly what Sentinel's `currentWindow()` + `values()` sees:
//! the slot of the current bucket is reset when stale, and a slot is deprecated when
//! `t − start > interval_ms` — so with two 500 ms buckets `passQps` at t = 1 499 ms is the
//! count in [1 000, 1 499] plus the count in [500, 999].
//!
//! Architecture invariant: reading never mutates (a stale slot is ignored rather than
//! reset); only [`LeapArray::add_pass`] rotates a slot, so reads at the same instant in any
//! order give the same answer.
//!
//! API boundary: counts only; callers pass Sentinel's clock (whole milliseconds).

/// A rolling window of pass counts.
#[derive(Clone, Debug)]
pub struct LeapArray {
    bucket_ms: u64,
    /// Start (ms) of the bucket each slot holds, `None` before first use.
    starts: Vec<Option<u64>>,
    pass: Vec<u64>,
}

impl LeapArray {
    /// `sample_count` buckets over `interval_ms` (Sentinel asserts it divides evenly).
    pub fn new(sample_count: usize, interval_ms: u64) -> Self {
        assert!(sample_count >= 1 && interval_ms >= 1);
        assert!(interval_ms.is_multiple_of(sample_count as u64), "interval must divide evenly");
        LeapArray {
            bucket_ms: interval_ms / sample_count as u64,
            starts: vec![None; sample_count],
            pass: vec![0; sample_count],
        }
    }

    /// Sentinel's second counter: 2 buckets of 500 ms (`SampleCountProperty.SAMPLE_COUNT`,
    /// `IntervalProperty.INTERVAL`).
    pub fn second() -> Self {
        LeapArray::new(2, 1000)
    }

    /// Enough of Sentinel's minute counter (60 buckets of 1 s) to answer
    /// `previousPassQps()`: two buckets of 1 s give the same previous-window answer.
    pub fn previous_second() -> Self {
        LeapArray::new(2, 2000)
    }

    fn n(&self) -> u64 {
        self.starts.len() as u64
    }

    fn slot(&self, t_ms: u64) -> usize {
        ((t_ms / self.bucket_ms) % self.n()) as usize
    }

    fn start_of(&self, t_ms: u64) -> u64 {
        t_ms - t_ms % self.bucket_ms
    }

    /// Counts `n` passes at `t_ms` (rotating the slot if it holds an older bucket).
    pub fn add_pass(&mut self, t_ms: u64, n: u64) {
        let i = self.slot(t_ms);
        let start = self.start_of(t_ms);
        match self.starts[i] {
            Some(s) if s == start => {}
            Some(s) if s > start => panic!("leap array read backwards in time ({s} > {start})"),
            _ => {
                self.starts[i] = Some(start);
                self.pass[i] = 0;
            }
        }
        self.pass[i] += n;
    }

    /// Passes in the rolling window ending at `t_ms` (Sentinel's `pass()`).
    pub fn pass(&self, t_ms: u64) -> u64 {
        let cur = self.start_of(t_ms);
        let oldest = cur.saturating_sub((self.n() - 1) * self.bucket_ms);
        self.starts
            .iter()
            .zip(&self.pass)
            .filter(|(s, _)| matches!(s, Some(s) if (oldest..=cur).contains(s)))
            .map(|(_, p)| *p)
            .sum()
    }

    /// Passes in the bucket just before `t_ms`'s bucket (Sentinel's
    /// `previousWindowPass()`), 0 when that bucket was never written or was overwritten.
    pub fn previous_window_pass(&self, t_ms: u64) -> u64 {
        let cur = self.start_of(t_ms);
        let Some(prev) = cur.checked_sub(self.bucket_ms) else { return 0 };
        let i = self.slot(prev);
        if self.starts[i] == Some(prev) { self.pass[i] } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Script of (time ms, passes added) then reads (time ms → pass(), previous bucket).
    #[test]
    fn two_buckets_of_500ms() {
        let mut a = LeapArray::second();
        a.add_pass(0, 3); // bucket [0, 500)
        a.add_pass(499, 1); // same bucket: 4
        a.add_pass(500, 2); // bucket [500, 1000)
        // (t, pass(), previous_window_pass())
        let reads = [
            (499, 4, 0), // only [0,500)
            (500, 6, 4), // [0,500) + [500,1000): 4 + 2
            (999, 6, 4),
            (1000, 2, 2), // [0,500) is out: t − 0 > 1000 after rotation
            (1499, 2, 2),
            (1500, 0, 0), // [1000,1500) empty, [500,1000) out
        ];
        for (t, p, prev) in reads {
            assert_eq!((a.pass(t), a.previous_window_pass(t)), (p, prev), "t = {t}");
        }
        // Rotation: writing at 1000 reuses slot 0 and drops the old [0,500) count.
        a.add_pass(1000, 5);
        assert_eq!(a.pass(1000), 2 + 5);
        assert_eq!(a.pass(1500), 5);
        assert_eq!(a.pass(2500), 0); // both buckets stale
    }

    #[test]
    fn previous_second_counter() {
        let mut m = LeapArray::previous_second();
        m.add_pass(300, 7); // second [0, 1000)
        assert_eq!(m.previous_window_pass(999), 0);
        assert_eq!(m.previous_window_pass(1000), 7);
        assert_eq!(m.previous_window_pass(1999), 7);
        assert_eq!(m.previous_window_pass(2000), 0); // [1000,2000) never written
        m.add_pass(2100, 1); // [2000,3000) overwrites slot of [0,1000)
        assert_eq!(m.previous_window_pass(3000), 1);
        assert_eq!(m.previous_window_pass(4000), 0);
    }
}
