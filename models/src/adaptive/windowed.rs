//! Netflix concurrency-limits' `WindowedLimit` around an adaptive limit (AIMD, Gradient2,
//! Vegas: `windowed: Some((…))` on its declaration, rows `<kind>.<name>.windowed.*`).
//! Off by default: without it every sample goes to the algorithm as before.
//!
//! The rules, each as the library's method has it (`WindowedLimit`, with the default
//! `AverageSampleWindowFactory` / `ImmutableAverageSampleWindow`):
//! * `WindowedLimit.onSample`: a sample with `rtt < min_rtt_threshold` is dropped
//!   unseen (it counts in no window);
//! * else it joins the open window (`ImmutableAverageSampleWindow.addSample`: the least
//!   RTT, the sum of RTTs, the largest `inflight`, the count, `didDrop` OR-ed);
//! * `onSample`: if the sample's end time (`startTime + rtt`, here the instant it
//!   returned) is strictly after `nextUpdateTime` (0 at the start), the window closes: a
//!   new one opens, `nextUpdateTime = end + min(max(minRtt × 2, min_window_time),
//!   max_window_time)`, and only if the closed window is ready
//!   (`WindowedLimit.isWindowReady`: at least `window_size` samples) the algorithm gets
//!   one sample `(startTime of the closing sample, the window's average RTT (integer
//!   division, `getTrackedRttNanos`), its largest inflight, its didDrop)`. A window that
//!   is not ready is thrown away with its samples — the very first sample closes the
//!   window it opened (end > 0), so it never reaches the algorithm.
//!
//! The builder's checks are the rows' ranges (`WindowedLimit.Builder`: `windowSize >= 10`,
//! `minWindowTime`, `maxWindowTime >= 100 ms`); `min_window_time > max_window_time` is
//! allowed, as in the library (the window time is then `max_window_time`). The library's
//! fields are final: every row is fixed for a run. Not modelled: the
//! `PercentileSampleWindowFactory` (a percentile in place of the average).

use super::Sample;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};

/// `WindowedLimit.Builder`'s settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "WindowedLimit")]
pub struct WindowedSpec {
    /// `windowSize`: samples a window needs to reach the algorithm (≥ 10, default 10).
    #[serde(default = "D::window_size", deserialize_with = "R::window_size")]
    pub window_size: u64,
    /// `minWindowTime` (≥ 100 ms, default 1 s).
    #[serde(default = "D::min_window_time", deserialize_with = "R::min_window_time")]
    pub min_window_time: SimDuration,
    /// `maxWindowTime` (≥ 100 ms, default 1 s).
    #[serde(default = "D::max_window_time", deserialize_with = "R::max_window_time")]
    pub max_window_time: SimDuration,
    /// `minRttThreshold`: samples with a shorter RTT are ignored (default 100 µs).
    #[serde(default = "D::min_rtt_threshold", deserialize_with = "R::min_rtt_threshold")]
    pub min_rtt_threshold: SimDuration,
}

/// The defaults declared in the rows below.
type D = crate::params::Defaults<WindowedSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<WindowedSpec>;

/// Longest window time a row accepts (a day, as the other limits' durations).
const DAY: SimDuration = SimDuration::from_secs(86_400);

// Listed under the limit that holds it: `<kind>.<name>.windowed.<row>` (`part =` in
// `aimd.rs`, `gradient2.rs`, `vegas.rs`).
crate::params::declare_params! {
    rows WindowedSpec: "windowed limit";
    window_size: Count { min: 10, max: 1_000_000 }, "samples", fixed,
        "samples a window needs before the limit sees it, >= 10 (windowSize)", default = 10;
    min_window_time: Duration { min: SimDuration::from_ms(100), max: DAY }, "ns", fixed,
        "least window time, >= 100 ms (minWindowTime)", default = SimDuration::from_secs(1);
    max_window_time: Duration { min: SimDuration::from_ms(100), max: DAY }, "ns", fixed,
        "largest window time, >= 100 ms (maxWindowTime)", default = SimDuration::from_secs(1);
    min_rtt_threshold: Duration { min: SimDuration::ZERO, max: DAY }, "ns", fixed,
        "samples with a shorter RTT are ignored (minRttThreshold)",
        default = SimDuration::from_us(100);
}

impl Default for WindowedSpec {
    fn default() -> Self {
        WindowedSpec {
            window_size: D::window_size(),
            min_window_time: D::min_window_time(),
            max_window_time: D::max_window_time(),
            min_rtt_threshold: D::min_rtt_threshold(),
        }
    }
}

/// The open window (`ImmutableAverageSampleWindow`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SampleWindow {
    min_rtt: Option<SimDuration>,
    sum: u64,
    max_inflight: u64,
    count: u64,
    did_drop: bool,
}

/// Run-time state of a `WindowedLimit`.
#[derive(Clone, Debug)]
pub struct Windowed {
    spec: WindowedSpec,
    window: SampleWindow,
    next_update: SimTime,
}

impl Windowed {
    pub fn new(spec: &WindowedSpec) -> Self {
        Windowed { spec: spec.clone(), window: SampleWindow::default(), next_update: SimTime::ZERO }
    }

    /// `WindowedLimit.onSample`: the sample the algorithm gets now, if a ready window
    /// closed with this one.
    pub fn on_sample(&mut self, s: &Sample) -> Option<Sample> {
        if s.rtt < self.spec.min_rtt_threshold {
            return None;
        }
        let w = &mut self.window;
        w.min_rtt = Some(w.min_rtt.map_or(s.rtt, |m| m.min(s.rtt)));
        w.sum = w.sum.saturating_add(s.rtt.0);
        w.max_inflight = w.max_inflight.max(s.inflight);
        w.count += 1;
        w.did_drop |= s.did_drop;
        if s.now <= self.next_update {
            return None;
        }
        let closed = std::mem::take(&mut self.window);
        let min_rtt = closed.min_rtt.expect("a window closes with the sample it just took");
        let span = SimDuration(min_rtt.0.saturating_mul(2))
            .max(self.spec.min_window_time)
            .min(self.spec.max_window_time);
        self.next_update = s.now + span;
        if closed.count < self.spec.window_size {
            return None;
        }
        let rtt = SimDuration(closed.sum / closed.count);
        Some(Sample {
            start: s.start,
            now: s.now,
            rtt,
            inflight: closed.max_inflight,
            did_drop: closed.did_drop,
            draw: s.draw,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    /// A sample returning at `now_us` after `rtt_us` (both µs).
    fn at(now_us: u64, rtt_us: u64, inflight: u64, did_drop: bool) -> Sample {
        let now = SimTime(now_us * 1_000);
        let rtt = SimDuration::from_us(rtt_us);
        Sample { start: SimTime(now.0 - rtt.0), now, rtt, inflight, did_drop, draw: 7 }
    }

    /// A scripted sequence through `WindowedLimit.onSample` with window size 10, window
    /// time [200 ms, 500 ms], threshold 100 µs, worked by hand:
    /// * 1 ms (rtt 1 ms): end 1 ms > nextUpdateTime 0 → the window of 1 sample closes,
    ///   not ready (1 < 10): thrown away; next = 1 ms + min(max(2 ms, 200 ms), 500 ms)
    ///   = 201 ms.
    /// * 101..=110 ms: ten samples (rtt 10..=100 ms, inflight 1..=10, the 5th a drop), each
    ///   ≤ 201 ms: kept in the window; a 50 µs one at 120 ms (inflight 99) is below the
    ///   threshold: unseen.
    /// * 250 ms (rtt 5 ms, inflight 3): 11 samples, ready → the algorithm gets rtt =
    ///   (10 + 20 + … + 100 + 5) ms / 11 = 555 ms / 11 = 50_454_545 ns (integer division),
    ///   inflight 10 (the largest), didDrop true, startTime 245 ms; next = 250 + min(max(2
    ///   × 5, 200), 500) = 450 ms.
    /// * 451 ms: a window of 1 (rtt 400 ms): end > 450 → closes, not ready: thrown away;
    ///   next = 451 + min(max(800, 200), 500) = 951 ms (max_window_time binds).
    /// * 952 ms after ten more at 500..=950 ms (rtt 1 ms each, no drop): 11 samples
    ///   (rtt 1 ms, the 11th 3 ms), average 13 ms / 11 = 1_181_818 ns, didDrop false.
    #[test]
    fn scripted_windows_by_hand() {
        let spec = WindowedSpec {
            window_size: 10,
            min_window_time: SimDuration::from_ms(200),
            max_window_time: SimDuration::from_ms(500),
            min_rtt_threshold: SimDuration::from_us(100),
        };
        let mut w = Windowed::new(&spec);
        assert_eq!(w.on_sample(&at(1_000, 1_000, 1, false)), None, "first window of 1");
        assert_eq!(w.next_update, ms(201));
        for i in 1..=10u64 {
            let s = at((100 + i) * 1_000, i * 10_000, i, i == 5);
            assert_eq!(w.on_sample(&s), None, "sample {i} inside the window");
        }
        assert_eq!(w.on_sample(&at(120_000, 50, 99, false)), None, "below the threshold");
        assert_eq!((w.window.count, w.window.max_inflight), (10, 10), "the 50 µs one unseen");
        let got = w.on_sample(&at(250_000, 5_000, 3, false)).expect("a ready window");
        assert_eq!(got.rtt, SimDuration(555_000_000 / 11));
        assert_eq!((got.inflight, got.did_drop, got.start), (10, true, ms(245)));
        assert_eq!((got.now, got.draw), (ms(250), 7));
        assert_eq!(w.next_update, ms(450));
        assert_eq!(w.on_sample(&at(451_000, 400_000, 1, false)), None, "a window of 1");
        assert_eq!(w.next_update, ms(951), "max_window_time binds");
        for i in 0..10u64 {
            assert_eq!(w.on_sample(&at(500_000 + i * 50_000, 1_000, 2, false)), None);
        }
        let got = w.on_sample(&at(952_000, 3_000, 1, false)).expect("ready");
        assert_eq!((got.rtt, got.inflight, got.did_drop), (SimDuration(13_000_000 / 11), 2, false));
        assert_eq!(w.next_update, ms(1_152), "min_window_time binds: 952 + 200");
    }

    /// A sample ending exactly at `nextUpdateTime` stays in the window (`endTime >
    /// nextUpdateTime` is strict), and with `min_window_time > max_window_time` the window
    /// time is `max_window_time` (`Math.min` last).
    #[test]
    fn strict_end_and_min_above_max() {
        let spec = WindowedSpec {
            min_window_time: SimDuration::from_secs(2),
            max_window_time: SimDuration::from_ms(300),
            ..WindowedSpec::default()
        };
        let mut w = Windowed::new(&spec);
        w.on_sample(&at(1_000, 1_000, 1, false));
        assert_eq!(w.next_update, ms(301));
        assert_eq!(w.on_sample(&at(301_000, 1_000, 1, false)), None);
        assert_eq!((w.window.count, w.next_update), (1, ms(301)));
    }
}
