//! Table tests of the SRE client-side throttler: the counters, window and probability call by call, written down by hand; the formula; the keyed draws.

use super::*;
use crate::outcome::Reason::*;

fn ms(x: u64) -> SimTime {
    SimTime(x * 1_000_000)
}

/// A call whose keyed bits are `draw`.
fn call(draw: u64) -> CallInfo {
    CallInfo { draw, ..CallInfo::simple(draw, 0) }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    /// A call with these bits: (p it meets, rejected?).
    Call(u64, f64, bool),
    /// An outcome comes back.
    Out(Outcome),
    /// Run-time changes.
    SetK(f64),
    SetMaxP(f64),
}

/// K = 2, window 10 s in 10 buckets of 1 s. Each row: (time ms, op, window requests and
/// accepts after it). A call meets p = max(0, (R − K·A) / (R + 1)) with R, A the window
/// *before* it, is then counted in R whether rejected or not, and is rejected iff its
/// draw u = `SreThrottler::draw(bits, t)` is < p (the u values in the comments were
/// computed from mix64 for these bits and instants).
#[test]
fn counters_and_probability_table() {
    let spec = SreThrottlerSpec {
        window: SimDuration::from_secs(10),
        buckets: 10,
        ..SreThrottlerSpec::defaults("t")
    };
    let mut t = SreThrottler::new(&spec);
    use Op::*;
    #[rustfmt::skip]
    let rows: &[(u64, Op, (u64, u64), &str)] = &[
        (0, Call(1, 0.0, false), (1, 0), "empty window: (0 − 0)/1 = 0"),
        (50, Out(Outcome::Success), (1, 1), "a success is an accept"),
        (100, Call(2, 0.0, false), (2, 1), "(1 − 2)/2 < 0 → 0"),
        (150, Out(Outcome::Rejected(Upstream429)), (2, 1), "a 429 is no accept"),
        (200, Call(3, 0.0, false), (3, 1), "(2 − 2)/3 = 0"),
        (250, Out(Outcome::Failed(Timeout)), (3, 1), "a timeout is no accept"),
        (300, Call(3, 0.25, true), (4, 1), "(3 − 2)/4 = 0.25; u = 0.0908 < 0.25: rejected, still counted"),
        (300, Call(5, 0.4, false), (5, 1), "(4 − 2)/5 = 0.4; u = 0.987: passes"),
        (350, Out(Outcome::Failed(BusinessError)), (5, 2), "an application error was accepted"),
        (360, Out(Outcome::Degraded(Timeout)), (5, 2), "answered below, not by the backend"),
        (370, Out(Outcome::Failed(Upstream5xx)), (5, 2), "a 5xx is no accept"),
        (400, Call(10, 1.0 / 6.0, true), (6, 2), "(5 − 4)/6; u = 0.0027"),
        (500, Call(2, 2.0 / 7.0, true), (7, 2), "(6 − 4)/7; u = 0.0315"),
        (1100, Call(8, 0.375, false), (8, 2), "bucket 1; bucket 0 still in: (7 − 4)/8; u = 0.3925"),
        (9_999, Out(Outcome::Rejected(QueueFull)), (8, 2), "bucket 9: buckets 0..=9 all in"),
        (10_000, Out(Outcome::Rejected(GateFull)), (1, 0), "bucket 10: bucket 0 (7 requests, 2 accepts) leaves"),
        (10_500, Out(Outcome::Success), (1, 1), "the 1.1 s call's answer counts in bucket 10"),
        (11_000, Out(Outcome::Failed(ConnectError)), (0, 1), "bucket 1 leaves: an accept without its request"),
        (12_000, Call(11, 0.0, false), (1, 1), "(0 − 2)/1 < 0 → 0"),
        (12_000, SetK(1.0), (1, 1), "K = 1 from the next call"),
        (12_000, Call(1, 0.0, false), (2, 1), "(1 − 1)/2 = 0"),
        (12_000, Call(2, 1.0 / 3.0, false), (3, 1), "(2 − 1)/3; u = 0.7283"),
        (12_000, SetMaxP(0.1), (3, 1), "cap 0.1"),
        (12_000, Call(3, 0.1, false), (4, 1), "min((3 − 1)/4 = 0.5, 0.1); u = 0.4787: passes under the cap"),
        (100_000, Out(Outcome::Failed(Timeout)), (0, 0), "a long gap empties the window"),
    ];
    let (mut requests, mut accepts, mut rejected) = (0, 0, 0);
    for &(at, op, (wr, wa), why) in rows {
        let now = ms(at);
        match op {
            Call(bits, p, reject) => {
                let d = t.on_call(&call(bits), now);
                assert!(
                    (t.last_probability() - p).abs() < 1e-12,
                    "{why}: p {}",
                    t.last_probability()
                );
                let want =
                    if reject { CallDecision::Reject(RateLimited) } else { CallDecision::Pass };
                assert_eq!(d, want, "{why}");
                assert_eq!(reject, SreThrottler::draw(bits, now) < p, "{why}: the stated draw");
                requests += 1;
                rejected += reject as u64;
            }
            Out(o) => {
                assert_eq!(t.on_outcome(&call(0), o, now), OutcomeDecision::PassUp(o), "{why}");
                accepts += is_accept(o) as u64;
            }
            SetK(k) => t.set_k(k),
            SetMaxP(p) => t.set_max_rejection_probability(p),
        }
        assert_eq!(t.window_counts(now), (wr, wa), "{at} ms: {why}");
    }
    assert_eq!((t.requests, t.accepts, t.rejected), (requests, accepts, rejected));
    assert_eq!((requests, accepts, rejected), (12, 3, 3));
    use crate::governor::GovernorKindOps;
    assert_eq!(t.summary_counters(), vec![("requests", 12), ("accepts", 3), ("rejected", 3)]);
    // The last call met p = 0.1: 100 000 ppm.
    assert_eq!(t.gauges(), vec![("rejection_ppm", 100_000)]);
}

/// The formula alone, row by row: (requests, accepts, K, cap) → p.
#[test]
fn rejection_probability_table() {
    #[rustfmt::skip]
    let rows: &[(u64, u64, f64, f64, f64)] = &[
        (0, 0, 2.0, 1.0, 0.0),
        (100, 50, 2.0, 1.0, 0.0),               // requests = K·accepts: the threshold
        (100, 40, 2.0, 1.0, 20.0 / 101.0),
        (100, 0, 2.0, 1.0, 100.0 / 101.0),      // nothing accepted: never quite 1
        (100, 0, 2.0, 0.9, 0.9),                // failsafe-go's cap
        (110, 100, 1.1, 1.0, 0.0),              // the book's K = 1.1
        (1000, 100, 1.1, 1.0, 890.0 / 1001.0),
    ];
    for &(r, a, k, cap, p) in rows {
        assert!((rejection_probability(r, a, k, cap) - p).abs() < 1e-12, "{r} {a} {k} {cap}");
    }
}

/// The keyed draw over many calls meets p: with the window full of unanswered requests the
/// uncapped p is ≈ 1, so the cap 0.3 holds p at exactly 0.3 for every call. Distinct calls
/// (bits mix64(i)) and one call retried at distinct instants (same bits) are each rejected
/// with frequency 0.3 within 4 standard errors (√(0.3·0.7/20 000) = 0.0032).
#[test]
fn keyed_draws_reject_with_frequency_p() {
    let spec = SreThrottlerSpec {
        window: SimDuration::from_secs(1000),
        buckets: 1,
        max_rejection_probability: 0.3,
        ..SreThrottlerSpec::defaults("t")
    };
    let n = 20_000u64;
    let se = (0.3f64 * 0.7 / n as f64).sqrt();
    for same_bits in [false, true] {
        let mut t = SreThrottler::new(&spec);
        for i in 0..10_000 {
            t.on_call(&call(i), SimTime(i));
        }
        let before = t.rejected;
        for i in 0..n {
            let bits = if same_bits { 42 } else { mix64(i) };
            t.on_call(&call(bits), SimTime(1_000_000 + i * 1000));
            assert_eq!(t.last_probability(), 0.3);
        }
        let f = (t.rejected - before) as f64 / n as f64;
        assert!((f - 0.3).abs() < 4.0 * se, "same bits {same_bits}: {f}");
    }
}
