//! Tests of Envoy's gradient controller against its own formulas (`gradient_controller.cc`,
//! libcircllhist's `hist_approx_quantile`).

use super::*;
use crate::governor::{CallDecision, CallInfo, Governor};
use crate::outcome::Reason;

fn ms(n: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_ms(n)
}

fn spec() -> AdaptiveConcurrencySpec {
    AdaptiveConcurrencySpec {
        request_count: 5,
        jitter: 0.0,
        ..AdaptiveConcurrencySpec::defaults(
            "e",
            SimDuration::from_ms(100),
            SimDuration::from_secs(1),
        )
    }
}

/// `hist_approx_quantile`: bins of two significant digits, linear inside a bin; at a
/// cumulative count equal to the target, the bin's edge.
#[test]
fn histogram_quantile_table() {
    let h = |samples: &[u64]| {
        let mut h = Histogram::default();
        for &s in samples {
            h.insert(s);
        }
        h
    };
    #[rustfmt::skip]
    let rows: &[(&[u64], f64, f64, &str)] = &[
        (&[1000, 2000], 0.5, 1100.0, "target 1 = the first bin's count: its right edge"),
        (&[1000, 2000], 0.0, 1000.0, "target 0: the first bin's left edge"),
        (&[1000, 2000], 0.25, 1050.0, "half-way through [1000, 1100)"),
        (&[1000, 2000], 1.0, 2100.0, "the last bin's right edge"),
        (&[1234; 10], 0.5, 1250.0, "ten in [1200, 1300): 1200 + 5/10 × 100"),
        (&[10_000; 5], 0.5, 10_500.0, "five in [10000, 11000): 2.5/5 of the bin"),
        (&[5], 0.5, 5.05, "below 10 µs bins are 0.1 µs wide"),
        (&[99, 100, 101], 0.5, 102.5, "target 1.5 passes [99, 100) into [100, 110): 100 + 0.5/2 × 10"),
    ];
    for &(samples, q, want, why) in rows {
        let got = h(samples).quantile(q).unwrap();
        assert!((got - want).abs() < 1e-9, "{why}: {got} vs {want}");
    }
    assert_eq!(Histogram::default().quantile(0.5), None);
}

/// `calculateNewLimit` row by row: minRTT 100 ms, buffer 25 % (buffered 125 ms).
#[test]
fn new_limit_table() {
    let (mut g, _) = GradientController::new(&spec());
    g.min_rtt_us = 100_000;
    #[rustfmt::skip]
    let rows: &[(u64, u64, u64, &str)] = &[
        (100, 125_000, 110, "gradient 1: 100 + sqrt(100)"),
        (100, 250_000, 57, "gradient 0.5: 50 + 7.07 → (uint32) 57"),
        (100, 500_000, 57, "gradient clamped at 0.5"),
        (100, 50_000, 214, "raw 2.5 clamped at 2: 200 + 14.14"),
        (3, 125_000, 4, "3 + 1.73 = 4.73 → 4 (truncated, not rounded)"),
        (900, 50_000, 1000, "1800 + 42 clamped to max_concurrency_limit 1000"),
        (3, 250_000, 3, "1.5 + 1.22 = 2.72 → 2, raised to min_concurrency 3"),
        (10, 0, 24, "sampleRTT 0 µs: raw +∞ → 2: 20 + 4.47"),
    ];
    for &(limit, sample_us, want, why) in rows {
        g.sample_rtt_us = sample_us;
        assert_eq!(g.new_limit(limit), want, "{why}");
    }
    // 0 ÷ 0 = NaN: C++ std::min(2.0, NaN) is 2.0, so the gradient is 2.
    g.min_rtt_us = 0;
    g.sample_rtt_us = 0;
    assert_eq!(g.new_limit(10), 24);
}

/// The windows through the governor interface: the first minRTT window pins the limit to
/// min_concurrency until request_count samples; sample windows then move the limit by
/// the gradient; the next minRTT window pins it again and drops earlier calls' samples.
#[test]
fn windows_script() {
    let mut l = AdaptiveConcurrency::new(&spec());
    let c = |i| CallInfo::simple(i, 0);
    assert_eq!((l.limit(), l.wake_at()), (3, Some(ms(100))));
    assert!(l.algorithm().in_min_rtt_window());
    for i in 1..=3 {
        assert_eq!(l.on_call(&c(i), ms(0)), CallDecision::Pass);
    }
    assert_eq!(l.on_call(&c(4), ms(0)), CallDecision::Reject(Reason::GateFull));
    for i in 1..=3 {
        l.on_outcome(&c(i), Outcome::Success, ms(10));
    }
    // The sample timer during a minRTT window gives up (not re-armed).
    l.on_wake(ms(100));
    assert_eq!((l.limit(), l.wake_at()), (3, None));
    // Two more samples (one an error: every answer samples) make 5: minRTT = p50 of five
    // 10 ms = 10,500 µs; the saved limit (3) comes back; timers armed.
    for i in 5..=6 {
        l.on_call(&c(i), ms(100));
    }
    l.on_outcome(&c(5), Outcome::Success, ms(110));
    l.on_outcome(&c(6), Outcome::Failed(Reason::Timeout), ms(110));
    let g = l.algorithm();
    assert_eq!((g.min_rtt_us, g.min_rtt_calculations, g.in_min_rtt_window()), (10_500, 1, false));
    assert_eq!((g.sample_reset_at, g.min_rtt_calc_at), (Some(ms(210)), Some(ms(1110))));
    // A sample window of three 5 ms calls: sampleRTT 5,050 µs, raw 13,125 / 5,050 = 2.6 →
    // 2: 3 × 2 = 6 + 2.45 → 8.
    for i in 7..=9 {
        l.on_call(&c(i), ms(120));
        l.on_outcome(&c(i), Outcome::Success, ms(125));
    }
    l.on_wake(ms(210));
    assert_eq!((l.limit(), l.algorithm().sample_rtt_us, l.wake_at()), (8, 5_050, Some(ms(310))));
    // Call 10 passes before the next minRTT window and returns inside it: no sample.
    l.on_call(&c(10), ms(1_000));
    // Windows without samples change nothing; at 1,110 ms the sample window comes first,
    // then the minRTT window pins the limit to 3 (saving 8).
    l.on_wake(ms(1_110));
    assert_eq!((l.limit(), l.algorithm().deferred, l.wake_at()), (3, 8, Some(ms(1_210))));
    l.on_outcome(&c(10), Outcome::Success, ms(1_150));
    assert_eq!(l.algorithm().hist.count(), 0, "a call from before the window takes no sample");
    let mut ev = vec![];
    l.take_events(&mut ev);
    let ev: Vec<_> = ev.iter().map(|e| (e.time, e.kind, e.from.as_str(), e.to.as_str())).collect();
    assert_eq!(
        ev,
        [(ms(210), "limit_increase", "3", "8"), (ms(1_110), "limit_decrease", "8", "3")]
    );
    assert_eq!((l.passed, l.rejected, l.succeeded, l.dropped), (9, 1, 8, 1));
}

/// Five sample windows in a row setting the limit to min_concurrency outside a minRTT
/// window start one at once (`consecutive_min_concurrency_set_ >= 5`).
#[test]
fn five_windows_at_the_minimum_start_a_min_rtt_window() {
    let (mut g, mut limit) = GradientController::new(&spec());
    g.deferred = 0;
    g.min_rtt_us = 10_000;
    for w in 1..=5u64 {
        // One slow sample per window: gradient 0.5, 3 → 2.72 → 3 (the minimum).
        let t = ms(100 * w);
        g.update(
            limit,
            &Sample {
                start: t,
                now: t,
                rtt: SimDuration::from_ms(100),
                inflight: 1,
                did_drop: false,
                draw: 0,
            },
        );
        limit = g.on_sample_reset(limit, t);
        assert_eq!(limit, 3);
        assert_eq!(g.min_rtt_calc_at, if w == 5 { Some(t) } else { None }, "window {w}");
    }
    // The timer due now enters the window.
    let t = ms(500);
    assert_eq!(g.on_wake(limit, t), 3);
    assert!(g.in_min_rtt_window());
    assert_eq!(g.consecutive_min, 0);
}

/// `applyJitter`: interval + random % ceil(interval × jitter), in whole ms.
#[test]
fn jitter_stays_in_range() {
    let mut s = spec();
    s.jitter = 15.0;
    let (g, _) = GradientController::new(&s);
    for draw in 0..200u64 {
        let d = g.jittered_interval_ms(mix64(draw));
        assert!((1_000..1_150).contains(&d), "{d}");
    }
    let (g, _) = GradientController::new(&spec());
    assert_eq!(g.jittered_interval_ms(12345), 1_000, "jitter 0: the interval");
}
