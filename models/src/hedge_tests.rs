//! Hand-worked scripts of the hedging governor: (time, event) → forks, answers, timer.

use super::*;
use crate::params::{ApplyParam as _, ParamValue};

fn ms(x: u64) -> SimTime {
    SimTime(x * 1_000_000)
}
fn c(i: u64) -> CallInfo {
    CallInfo::simple(i, 0)
}
fn hedge(text: &str) -> Hedge {
    Hedge::new(&ron::from_str::<HedgeSpec>(text).unwrap())
}
fn forks(h: &mut Hedge) -> Vec<(CallId, u32)> {
    let mut v = Vec::new();
    h.take_forks(&mut v);
    v
}
fn answers(h: &mut Hedge) -> Vec<(CallId, Outcome)> {
    let mut v = Vec::new();
    h.take_answered(&mut v);
    v
}
const FAIL: Outcome = Outcome::Failed(Reason::Upstream5xx);

#[test]
fn defaults_are_grpc_s() {
    let s: HedgeSpec = ron::from_str("(name: \"h\")").unwrap();
    assert_eq!((s.max_attempts, s.hedging_delay), (2, SimDuration::ZERO));
    assert_eq!(s.non_fatal, vec![Reason::Upstream5xx, Reason::ConnectError]);
    assert!(s.cancel && s.delay_percentile.is_none() && s.budget == RetryBudgetSpec::Unlimited);
    let e = ron::from_str::<HedgeSpec>("(name: \"h\", max_attempts: 1)").unwrap_err();
    assert!(e.to_string().contains("in [2, 10]"), "{e}");
    let names: Vec<&str> = Reason::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(names, REASONS, "every reason may be declared non-fatal");
}

/// max_attempts 3, delay 100 ms, non-fatal: 5xx.
/// Call 1 at 0: attempt 0 at once (Fork), the hedge timer at 100; at 100 attempt 1, the
/// next at 200; at 150 attempt 0 fails 5xx (non-fatal): attempt 2 at once (A6 item 2), no
/// timer (3 sent); at 170 attempt 2 succeeds: the answer, a hedge win.
/// Call 2 at 300: attempt 0 times out at 320 (fatal): the answer at once, no hedge.
/// Call 3 at 500: attempts at 500, 600, 700, all fail 5xx (710, 720, 730): answered at the
/// last with its failure, not before.
#[test]
fn grpc_hedging_policy_script() {
    let mut h = hedge("(name: \"h\", max_attempts: 3, hedging_delay: \"100ms\")");
    assert_eq!(h.on_call(&c(1), ms(0)), CallDecision::Fork);
    assert_eq!((forks(&mut h), h.wake_at()), (vec![], Some(ms(100))));
    h.on_wake(ms(100));
    assert_eq!((forks(&mut h), h.wake_at()), (vec![(CallId(1), 1)], Some(ms(200))));
    h.on_attempt(&c(1), 0, FAIL, ms(150));
    assert_eq!((forks(&mut h), h.wake_at()), (vec![(CallId(1), 2)], None));
    assert_eq!(answers(&mut h), vec![]);
    h.on_attempt(&c(1), 2, Outcome::Success, ms(170));
    assert_eq!(answers(&mut h), vec![(CallId(1), Outcome::Success)]);
    assert_eq!(h.waiting(), 0);
    // Attempt 1 ending before the world cancelled it changes nothing.
    h.on_attempt(&c(1), 1, Outcome::Success, ms(170));
    assert_eq!((answers(&mut h), h.counters.wins), (vec![], 1));

    h.on_call(&c(2), ms(300));
    h.on_attempt(&c(2), 0, Outcome::Failed(Reason::Timeout), ms(320));
    assert_eq!(answers(&mut h), vec![(CallId(2), Outcome::Failed(Reason::Timeout))]);
    assert_eq!((forks(&mut h), h.wake_at()), (vec![], None));

    h.on_call(&c(3), ms(500));
    h.on_wake(ms(600));
    h.on_wake(ms(700));
    assert_eq!(forks(&mut h), vec![(CallId(3), 1), (CallId(3), 2)]);
    assert_eq!(h.wake_at(), None);
    for (k, t) in [(0, 710), (1, 720)] {
        h.on_attempt(&c(3), k, FAIL, ms(t));
        assert_eq!(answers(&mut h), vec![]);
    }
    h.on_attempt(&c(3), 2, FAIL, ms(730));
    assert_eq!(answers(&mut h), vec![(CallId(3), FAIL)]);
    assert_eq!(h.counters, HedgeCounters { calls: 3, hedges: 4, wins: 1, ..Default::default() });
}

/// gRPC throttling, max_tokens 4, token_ratio 0.5 (threshold 2 tokens = 2000 milli-tokens).
/// Call 1: attempt 0 fails 5xx: 3000 > 2000, hedgeable: attempt 1 at once; it fails: 2000
/// ≤ 2000, throttled: the call ends with that failure (grpc-java `isHedgeable` false).
/// Call 2 at 100 (tokens 2000): its hedge at 110 is refused (tokens not above the
/// threshold), hedging frozen; its original's success answers it and adds 0.5 (2500).
#[test]
fn token_bucket_throttles_hedges_never_first_attempts() {
    let mut h = hedge(
        "(name: \"h\", max_attempts: 5, hedging_delay: \"10ms\", \
          budget: GrpcTokenBucket(max_tokens: 4, token_ratio: 0.5))",
    );
    h.on_call(&c(1), ms(0));
    h.on_attempt(&c(1), 0, FAIL, ms(1));
    assert_eq!((forks(&mut h), h.milli_tokens()), (vec![(CallId(1), 1)], Some(3000)));
    h.on_attempt(&c(1), 1, FAIL, ms(2));
    assert_eq!((answers(&mut h), h.milli_tokens()), (vec![(CallId(1), FAIL)], Some(2000)));
    assert_eq!(h.on_call(&c(2), ms(100)), CallDecision::Fork, "a first attempt always goes");
    h.on_wake(ms(110));
    assert_eq!((forks(&mut h), h.wake_at()), (vec![], None));
    h.on_attempt(&c(2), 0, Outcome::Success, ms(150));
    assert_eq!(answers(&mut h), vec![(CallId(2), Outcome::Success)]);
    assert_eq!((h.milli_tokens(), h.counters.throttled), (Some(2500), 2));
}

/// Hedge budget Ratio(0.5 over 1 s): hedges + 1 ≤ 0.5 × first attempts. Calls 1 and 2 at
/// 0 (2 first attempts): call 1's hedge at 10 goes (1 ≤ 1), call 2's is refused (2 > 1).
#[test]
fn ratio_budget_caps_hedges_per_first_attempt() {
    let mut h = hedge(
        "(name: \"h\", max_attempts: 2, hedging_delay: \"10ms\", \
          budget: Ratio(max_ratio: 0.5, window: \"1s\"))",
    );
    h.on_call(&c(1), ms(0));
    h.on_call(&c(2), ms(0));
    h.on_wake(ms(10));
    assert_eq!(forks(&mut h), vec![(CallId(1), 1)]);
    assert_eq!((h.counters.hedges, h.counters.throttled), (1, 1));
}

/// Nearest rank over a window of 4: [10, 20, 30, 40] → p95 is the 4th, p50 the 2nd; 5
/// pushes 10 out: [5, 20, 30, 40] → p25 is 5. Not full: none.
#[test]
fn window_quantile_is_nearest_rank_over_the_last_samples() {
    let mut w = Window::new(4);
    for x in [30, 10, 40] {
        w.push(x);
    }
    assert_eq!(w.quantile(0.5), None);
    w.push(20);
    assert_eq!(
        (w.quantile(0.95), w.quantile(0.5), w.quantile(0.25)),
        (Some(40), Some(20), Some(10))
    );
    w.push(5);
    assert_eq!((w.quantile(0.25), w.quantile(1.0)), (Some(5), Some(40)));
}

/// Percentile delay (p50 over 2 samples; fixed 1 s until then): calls won after 30 and
/// 50 ms fill the window; the next call hedges after its p50, 30 ms (rank ⌈0.5·2⌉ = 1).
/// A run-time change of the fixed delay does not matter once the window is full.
#[test]
fn percentile_delay_follows_the_won_latencies() {
    let mut h =
        hedge("(name: \"h\", hedging_delay: \"1s\", delay_percentile: 0.5, percentile_window: 2)");
    for (i, t0, lat) in [(1, 0, 30), (2, 100, 50)] {
        h.on_call(&c(i), ms(t0));
        assert_eq!(h.wake_at(), Some(ms(t0 + 1000)));
        h.on_attempt(&c(i), 0, Outcome::Success, ms(t0 + lat));
    }
    h.apply_param("hedging_delay", ParamValue::Duration(SimDuration::from_secs(5)), ms(200))
        .unwrap();
    h.on_call(&c(3), ms(200));
    assert_eq!(h.wake_at(), Some(ms(230)));
}
