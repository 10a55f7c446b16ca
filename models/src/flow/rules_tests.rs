//! Data-driven tests of [`super::rules::FlowRules`]. Expected values are derived by hand
//! from Sentinel 1.8's arithmetic (the comments show it); the warm-up traces were derived
//! with an independent re-statement of Sentinel's formulas (not this code), quoted below.

use super::rules::{ControlBehavior as B, FlowRule, FlowRules, FlowRulesSpec};
use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use crate::params::{ApplyParam as _, ParamValue as V};
use sim_core::SimTime;

const MS: u64 = 1_000_000;

fn ms(t: u64) -> SimTime {
    SimTime(t * MS)
}
fn c(i: u64) -> CallInfo {
    CallInfo::simple(i, 0)
}
fn rules(rules: Vec<FlowRule>) -> FlowRules {
    FlowRules::new(&FlowRulesSpec { name: "r".into(), rules })
}

/// What happened to a call in a driven run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Passed every rule at this time (ns).
    Passed(u64),
    /// Rejected at arrival.
    Rejected,
    /// Parked, then rejected by a later rule at its pass time.
    RejectedAfterWait,
}

/// Drives arrivals (time ns, in order; call i is the i-th arrival) through `g`, firing
/// `on_wake` at exactly `wake_at` (before an arrival at the same instant). Passed calls
/// return at once when `instant_return`. Returns every call's fate.
fn drive(g: &mut FlowRules, arrivals: &[u64], instant_return: bool, until_ns: u64) -> Vec<Fate> {
    let mut fate = vec![None; arrivals.len()];
    let settle = |g: &mut FlowRules, fate: &mut Vec<Option<Fate>>, upto: u64| {
        while let Some(w) = g.wake_at().filter(|w| w.as_ns() <= upto) {
            g.on_wake(w);
            let (mut woken, mut answered) = (vec![], vec![]);
            g.take_woken(&mut woken);
            g.take_answered(&mut answered);
            for CallId(id) in woken {
                fate[id as usize] = Some(Fate::Passed(w.as_ns()));
                if instant_return {
                    g.on_outcome(&c(id), Outcome::Success, w);
                }
            }
            for (CallId(id), o) in answered {
                assert_eq!(o, Outcome::Rejected(Reason::RateLimited));
                fate[id as usize] = Some(Fate::RejectedAfterWait);
            }
        }
    };
    for (i, &t) in arrivals.iter().enumerate() {
        settle(g, &mut fate, t);
        let call = c(i as u64);
        match g.on_call(&call, SimTime(t)) {
            CallDecision::Pass => {
                fate[i] = Some(Fate::Passed(t));
                if instant_return {
                    let d = g.on_outcome(&call, Outcome::Success, SimTime(t));
                    assert_eq!(d, OutcomeDecision::PassUp(Outcome::Success));
                }
            }
            CallDecision::Reject(r) => {
                assert_eq!(r, Reason::RateLimited);
                fate[i] = Some(Fate::Rejected);
            }
            CallDecision::Wait { deadline, on_deadline } => {
                assert_eq!((deadline, on_deadline), (None, Reason::RateLimited));
            }
            CallDecision::ServeLocally(_) | CallDecision::Fork => {
                panic!("flow rules never serve locally nor fork")
            }
        }
    }
    settle(g, &mut fate, until_ns);
    fate.into_iter().map(|f| f.expect("every call decided")).collect()
}

/// Passes per whole second over the first `secs` seconds.
fn per_second(fates: &[Fate], secs: usize) -> Vec<u64> {
    let mut v = vec![0; secs];
    for f in fates {
        if let Fate::Passed(t) = f
            && let Some(n) = v.get_mut((t / 1_000_000_000) as usize)
        {
            *n += 1;
        }
    }
    v
}

use Fate::{Passed as P, Rejected as R, RejectedAfterWait as RW};

/// QPS 4, reject. Window = 2 buckets of 500 ms; block when passes in window + 1 > 4.
#[test]
fn qps_window_script() {
    let mut g = rules(vec![FlowRule::qps(4.0, B::Default)]);
    let t = [100, 200, 300, 400, 450, 600, 999, 1000, 1001, 1002, 1003, 1004, 1499, 1500, 2000];
    let arrivals: Vec<u64> = t.iter().map(|x| x * MS).collect();
    let expected = [
        P(100 * MS), // window 0
        P(200 * MS), // 1
        P(300 * MS), // 2
        P(400 * MS), // 3
        R,           // 4 + 1 > 4
        R,           // [0,500) 4 + [500,1000) 0
        R,
        P(1000 * MS), // [500,1000) 0 + [1000,1500) 0: the 4 of [0,500) left
        P(1001 * MS),
        P(1002 * MS),
        P(1003 * MS),
        R, // 4 in [1000,1500)
        R,
        R,            // at 1500: [1000,1500) 4 + [1500,2000) 0
        P(2000 * MS), // [1500,2000) 0 + [2000,2500) 0
    ];
    assert_eq!(drive(&mut g, &arrivals, true, 0), expected);
}

/// The bucket boundary effect: 4 calls at 499 ms and 4 at 1000 ms all pass under QPS 4 —
/// 8 passes within 501 ms, because at 1000 the [0,500) bucket leaves the window.
#[test]
fn qps_bucket_boundary_effect() {
    let mut g = rules(vec![FlowRule::qps(4.0, B::Default)]);
    let arrivals = [499, 499, 499, 499, 500, 999, 1000, 1000, 1000, 1000, 1000];
    let arrivals: Vec<u64> = arrivals.iter().map(|x| x * MS).collect();
    let f = drive(&mut g, &arrivals, true, 0);
    let expected = [P(499 * MS), P(499 * MS), P(499 * MS), P(499 * MS), R, R];
    assert_eq!(f[..6], expected);
    assert_eq!(f[6..], [P(1000 * MS), P(1000 * MS), P(1000 * MS), P(1000 * MS), R]);
}

/// THREAD 2: block when in-flight + 1 > 2; control behaviour is ignored for THREAD.
#[test]
fn thread_grade_script() {
    let mut g = rules(vec![FlowRule {
        control_behavior: B::RateLimiter, // ignored: THREAD uses the default controller
        ..FlowRule::thread(2.0)
    }]);
    let t = SimTime(0);
    assert_eq!(g.on_call(&c(1), t), CallDecision::Pass);
    assert_eq!(g.on_call(&c(2), t), CallDecision::Pass);
    assert_eq!(g.on_call(&c(3), t), CallDecision::Reject(Reason::RateLimited)); // 2 + 1 > 2
    assert_eq!(g.threads(), 2);
    g.on_outcome(&c(1), Outcome::Failed(Reason::Timeout), t);
    assert_eq!(g.on_call(&c(4), t), CallDecision::Pass); // 1 + 1 ≤ 2
    assert_eq!(g.on_call(&c(5), t), CallDecision::Reject(Reason::RateLimited));
    assert_eq!((g.passed, g.blocked, g.threads()), (3, 2, 2));
}

/// RATE_LIMITER count 10: cost 1000/10 = 100 ms; 5 simultaneous calls at t = 0 pass at
/// 0 (latest "long ago"), 100, 200, 300, 400 (waits ≤ 500).
#[test]
fn pacing_five_simultaneous_calls() {
    let mut g = rules(vec![FlowRule::qps(10.0, B::RateLimiter)]);
    assert_eq!(g.on_call(&c(0), SimTime(0)), CallDecision::Pass);
    assert_eq!(g.wake_at(), None);
    let mut g = rules(vec![FlowRule::qps(10.0, B::RateLimiter)]);
    let f = drive(&mut g, &[0; 5], true, 10_000 * MS);
    assert_eq!(f, [P(0), P(100 * MS), P(200 * MS), P(300 * MS), P(400 * MS)]);
    assert_eq!((g.passed, g.queued, g.waiting()), (5, 4, 0));
    assert_eq!(g.pass_qps(ms(400)), 5); // [0,500): 5 passes counted at their pass times
}

/// Max queueing 200 ms: the third waiter would wait 300 > 200 → rejected. A queue cap of
/// 2 rejects the third waiter even though its wait (300) ≤ 500.
#[test]
fn pacing_max_queueing_and_queue_cap() {
    let mut g =
        rules(vec![FlowRule { max_queueing_time_ms: 200, ..FlowRule::qps(10.0, B::RateLimiter) }]);
    let f = drive(&mut g, &[0; 4], true, 10_000 * MS);
    assert_eq!(f, [P(0), P(100 * MS), P(200 * MS), R]); // waits 100, 200, 300 > 200
    let mut g =
        rules(vec![FlowRule { max_queue_length: Some(2), ..FlowRule::qps(10.0, B::RateLimiter) }]);
    assert_eq!(g.on_call(&c(0), SimTime(0)), CallDecision::Pass);
    assert!(matches!(g.on_call(&c(1), SimTime(0)), CallDecision::Wait { .. }));
    assert!(matches!(g.on_call(&c(2), SimTime(0)), CallDecision::Wait { .. }));
    assert_eq!(g.on_call(&c(3), SimTime(0)), CallDecision::Reject(Reason::RateLimited));
    // A parked call that gives up frees its place in the queue (not its pacing slot:
    // latest stays 200, so the next waits until 300).
    g.on_abandon(&c(2), ms(10));
    assert_eq!(g.waiting(), 1);
    assert!(matches!(g.on_call(&c(4), ms(10)), CallDecision::Wait { .. }));
    g.on_wake(ms(100));
    g.on_wake(ms(300));
    let mut woken = vec![];
    g.take_woken(&mut woken);
    assert_eq!(woken, [CallId(1), CallId(4)]);
}

/// No idle credit: after a 5 s pause, three calls at 5000 ms pass at 5000, 5100, 5200 —
/// latest is set to now when the call is late, never back-dated.
#[test]
fn pacing_no_burst_after_idle() {
    let mut g = rules(vec![FlowRule::qps(10.0, B::RateLimiter)]);
    let f = drive(&mut g, &[0, 5000 * MS, 5000 * MS, 5000 * MS], true, 10_000 * MS);
    assert_eq!(f, [P(0), P(5000 * MS), P(5100 * MS), P(5200 * MS)]);
}

/// count 3: 1000 % round(3) ≠ 0 → cost round(1e9/3) = 333 333 333 ns (not 333 ms).
#[test]
fn pacing_count_three_nanosecond_cost() {
    let mut g = rules(vec![FlowRule::qps(3.0, B::RateLimiter)]);
    let f = drive(&mut g, &[0, 0, 0, 200 * MS], true, 10_000 * MS);
    // third: wait 666 666 666 ns > 500 ms → rejected; at 200 ms: 666 666 666 − 2e8 ≤ 5e8.
    assert_eq!(f, [P(0), P(333_333_333), R, P(666_666_666)]);
}

/// WARM_UP count 10 (10 s, factor 3) under saturating load (a call every 10 ms, each
/// returning at once). warningToken 50, maxToken 100, slope 0.004. Each second the
/// window admits floor(nextUp(1/((stored − 50)·0.004 + 0.1))) passes, all in the first
/// 10–30 ms of the second (the 500 ms buckets then hold the window full):
/// s0: stored 100 → 1/0.3 = 3.33 → 3; s1: prev 3 is not < (int)10/3 = 3, no refill,
/// 97 → 1/0.288 = 3.47 → 3; … s5: 85 → 1/0.24 = 4.17 → 4; s8: 73 → 5.2 → 5;
/// s10: 63 → 6.58 → 6; s11: 57 → 7.8 → 7; s12: 50 (= warning) → 1/0.1 = 10 → 10;
/// s13 on: 40 < 50: refill +10, −10 passes → 40: count 10.
#[test]
fn warm_up_climbs_from_cold_under_saturation() {
    let mut g = rules(vec![FlowRule::qps(10.0, B::WarmUp)]);
    let arrivals: Vec<u64> = (0..2000).map(|i| i * 10 * MS).collect(); // 20 s
    let f = drive(&mut g, &arrivals, true, 0);
    let expected = [3, 3, 3, 3, 3, 4, 4, 4, 5, 5, 6, 7, 10, 10, 10, 10, 10, 10, 10, 10];
    assert_eq!(per_second(&f, 20), expected);
    // Sentinel's cold rate count/coldFactor = 3.33 → 3 a window; warm rate = count.
    assert_eq!(g.warm_up_tokens(0), Some(40));
    // Tokens at second starts (reference trace): 100, 97, 94, 91, 88, 85, 81, 77, 73, 68,
    // 63, 57, 50, 40 …: check one mid-way point from a fresh run.
    let mut g = rules(vec![FlowRule::qps(10.0, B::WarmUp)]);
    drive(&mut g, &arrivals[..901], true, 0); // up to t = 9 000 ms
    assert_eq!(g.warm_up_tokens(0), Some(68));
}

/// WARM_UP_RATE_LIMITER count 10, timeout 500, a call every 10 ms. Cold: cost
/// round(1000/3.33) = 300 ms → passes at 0, 300, 600, 900, 1200; at 1000 the sync takes
/// the 4 passes of second 0: 100 − 4 = 96, above 46 → 1/0.284 = 3.52 → cost 284: 1484,
/// 1768, 2052, … Warm (stored < 50 from s12): cost 100 ms, 10 a second.
#[test]
fn warm_up_rate_limiter_paces_cold_then_warm() {
    let mut g = rules(vec![FlowRule::qps(10.0, B::WarmUpRateLimiter)]);
    let arrivals: Vec<u64> = (0..2200).map(|i| i * 10 * MS).collect(); // 22 s
    let f = drive(&mut g, &arrivals, true, 30_000 * MS);
    let mut passes: Vec<u64> =
        f.iter().filter_map(|x| if let P(t) = x { Some(t / MS) } else { None }).collect();
    passes.sort();
    assert_eq!(passes[..8], [0, 300, 600, 900, 1200, 1484, 1768, 2052]);
    let expected = [4, 3, 4, 4, 4, 4, 5, 5, 6, 6, 8, 9, 10, 10, 10, 10, 10, 10, 10, 10];
    assert_eq!(per_second(&f, 22)[..20], expected);
    let s20: Vec<u64> = passes.iter().copied().filter(|t| (20_000..21_000).contains(t)).collect();
    assert_eq!(s20, [20048, 20148, 20248, 20348, 20448, 20548, 20648, 20748, 20848, 20948]);
    assert!(f.iter().all(|x| *x != RW));
}

/// Regression (issue 32): warm-up pacing with count 2, warm-up 1 s and cold factor 4 (or
/// 5, or count 0) panicked ("negative value NaN"). Sentinel's `WarmUpRateLimiterController`
/// computes maxToken = warningToken = 0, an infinite slope, a NaN rate and a 0 ms cost
/// (`Math.round(NaN)`), so it lets every call through: 50 calls in 5 s all pass on arrival.
#[test]
fn warm_up_rate_limiter_at_degenerate_settings_passes_every_call() {
    for (count, cf) in [(2.0, 4), (2.0, 5), (0.0, 3)] {
        let rule = FlowRule {
            warm_up_period_sec: 1,
            cold_factor: cf,
            ..FlowRule::qps(count, B::WarmUpRateLimiter)
        };
        let mut g = rules(vec![rule]);
        let arrivals: Vec<u64> = (0..50).map(|i| i * 100 * MS).collect();
        let f = drive(&mut g, &arrivals, true, 6_000 * MS);
        let expect: Vec<Fate> = arrivals.iter().map(|&t| P(t)).collect();
        assert_eq!(f, expect, "count {count}, factor {cf}");
    }
}

/// Two reject rules: THREAD 80 (main gate) + QPS 10 (fuse). 12 calls held in flight at
/// t = 0: the QPS fuse rejects the 11th and 12th (10 + 1 > 10); with THREAD 2 the thread
/// rule rejects the 3rd. Either order gives the same verdicts (strictest wins).
#[test]
fn multiple_rules_strictest_wins() {
    for order in [false, true] {
        for (thread, n_pass) in [(80.0, 10), (2.0, 2)] {
            let mut v = vec![FlowRule::thread(thread), FlowRule::qps(10.0, B::Default)];
            if order {
                v.reverse();
            }
            let mut g = rules(v);
            let f = drive(&mut g, &[0; 12], false, 0);
            let passes = f.iter().filter(|x| matches!(x, P(_))).count();
            assert_eq!(passes, n_pass, "thread {thread}, reversed {order}");
            assert_eq!(g.threads(), n_pass as u64);
        }
    }
}

/// Pacing then a reject rule: [RATE_LIMITER 10, QPS 3]. Five calls at 0 are spaced 0, 100,
/// 200, 300, 400; the QPS rule is checked at each pass time (Sentinel checks the next rule
/// after the sleep): window counts 0, 1, 2 → pass; 3 + 1 > 3 at 300 and 400 → rejected
/// from the queue.
#[test]
fn pacing_rule_then_reject_rule() {
    let mut g = rules(vec![FlowRule::qps(10.0, B::RateLimiter), FlowRule::qps(3.0, B::Default)]);
    let f = drive(&mut g, &[0; 5], true, 10_000 * MS);
    assert_eq!(f, [P(0), P(100 * MS), P(200 * MS), RW, RW]);
    assert_eq!((g.passed, g.blocked, g.queued), (3, 2, 4));
}

/// Run-time changes keep window state; a reload resets controllers but not statistics.
#[test]
fn set_count_and_reset() {
    let mut g = rules(vec![FlowRule::qps(4.0, B::Default), FlowRule::qps(10.0, B::RateLimiter)]);
    // Rule 1 paces at 100 ms: calls at 0, 100, 200, 300 pass at once (never early).
    for t in [0, 100, 200, 300] {
        assert_eq!(g.on_call(&c(t), ms(t)), CallDecision::Pass);
    }
    assert_eq!(g.on_call(&c(9), ms(310)), CallDecision::Reject(Reason::RateLimited)); // 4+1 > 4
    g.apply_param("rule0.count", V::Float(6.0), ms(310)).unwrap(); // window kept: 4 + 1 ≤ 6
    assert!(matches!(g.on_call(&c(10), ms(320)), CallDecision::Wait { .. })); // paced to 400
    // Reload: pacing is "long ago" again, the window keeps its 4 passes (call 10 has not
    // passed yet): rule 0 4 + 1 ≤ 6 passes, rule 1 passes at once.
    g.reset(ms(330));
    assert_eq!(g.on_call(&c(11), ms(330)), CallDecision::Pass);
    let mut ev = vec![];
    g.take_events(&mut ev);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].kind, "rule_reload");
}

#[test]
fn spec_from_ron_with_defaults_and_errors() {
    let text = "FlowRules(name: \"llm\", rules: [FlowRule(count: 10), \
                FlowRule(grade: THREAD, count: 80), \
                FlowRule(count: 5, control_behavior: RATE_LIMITER, max_queue_length: 20)])";
    let spec: FlowRulesSpec = ron::from_str(text).expect("valid");
    assert_eq!(spec.rules[0], FlowRule::qps(10.0, B::Default));
    assert_eq!(spec.rules[1], FlowRule::thread(80.0));
    assert_eq!(spec.rules[2].max_queue_length, Some(20));
    assert_eq!(spec.rules[2].max_queueing_time_ms, 500);
    let back = ron::to_string(&spec).expect("serializes");
    assert_eq!(ron::from_str::<FlowRulesSpec>(&back).expect("round trip"), spec);
    for bad in [
        "FlowRules(name: \"x\", rules: [FlowRule(count: 1, cold_factor: 1)])",
        "FlowRules(name: \"x\", rules: [FlowRule(count: -1)])",
        "FlowRules(name: \"x\", rules: [FlowRule(count: 1, burst: 2)])",
        "FlowRules(name: \"x\", rules: [])",
    ] {
        assert!(ron::from_str::<FlowRulesSpec>(bad).is_err(), "{bad}");
    }
}

/// `FlowRuleUtil.isValidRule` → `checkControlBehaviorField`: a pacing rule needs
/// `maxQueueingTimeMs > 0` (Sentinel drops it otherwise); refused here with the reason.
/// (rule, accepted?)
#[test]
fn pacing_rule_with_zero_queueing_time_is_refused_as_sentinel_drops_it() {
    let table = [
        ("FlowRule(count: 5, control_behavior: RATE_LIMITER, max_queueing_time_ms: 0)", false),
        (
            "FlowRule(count: 5, control_behavior: WARM_UP_RATE_LIMITER, max_queueing_time_ms: 0)",
            false,
        ),
        ("FlowRule(count: 5, control_behavior: RATE_LIMITER, max_queueing_time_ms: 1)", true),
        ("FlowRule(count: 5, max_queueing_time_ms: 0)", true),
        ("FlowRule(count: 5, control_behavior: WARM_UP, max_queueing_time_ms: 0)", true),
        (
            "FlowRule(grade: THREAD, count: 5, control_behavior: RATE_LIMITER, max_queueing_time_ms: 0)",
            true,
        ),
    ];
    for (rule, ok) in table {
        let text = format!("FlowRules(name: \"x\", rules: [FlowRule(count: 1), {rule}])");
        match ron::from_str::<FlowRulesSpec>(&text) {
            Ok(_) => assert!(ok, "{rule} accepted"),
            Err(e) => {
                assert!(!ok, "{rule}: {e}");
                let e = e.to_string();
                assert!(e.contains("rules[1]") && e.contains("FlowRuleUtil.isValidRule"), "{e}");
            }
        }
    }
}
