//! Table tests of the resource's chain semantics (each row with its reason) and the
//! order-independence demonstration against the separate-governor form.

use super::*;
use crate::breaker::{BreakerState, CircuitBreakerStrategy as G, DegradeRuleSpec};
use crate::flow::rules::ControlBehavior as B;
use crate::governor::Governor;
use crate::params::ApplyParam as _;

const MS: u64 = 1_000_000;
fn at(ms: u64) -> SimTime {
    SimTime(ms * MS)
}
fn info(id: u64) -> CallInfo {
    CallInfo::simple(id, 0)
}

fn degrade(name: &str, grade: G, count: f64, window_s: u64, min: u64) -> DegradeRuleSpec {
    DegradeRuleSpec {
        min_request_amount: min,
        ..DegradeRuleSpec::new(name, grade, count, window_s)
    }
}
fn resource(flow: Vec<FlowRule>, degrade: Vec<DegradeRuleSpec>) -> SentinelResource {
    let spec = SentinelResourceSpec {
        name: "chat".into(),
        resource: None,
        flow_rules: flow,
        degrade_rules: degrade,
    };
    SentinelResource::new(&spec)
}

const FAIL: Outcome = Outcome::Failed(Reason::Upstream5xx);
const PASS: CallDecision = CallDecision::Pass;
const OPEN: CallDecision = CallDecision::Reject(Reason::BreakerOpen);
const LIMITED: CallDecision = CallDecision::Reject(Reason::RateLimited);

/// A governor stack driven the way a call site drives it, for calls that never park: a
/// call descends until a level refuses; the outcome (the refusal, or the upstream's
/// answer `rt_ms` later) climbs back through every level it passed.
fn through_stack(
    stack: &mut [&mut dyn Governor],
    id: u64,
    t_ms: u64,
    upstream: Outcome,
    rt_ms: u64,
) -> CallDecision {
    for level in 0..stack.len() {
        match stack[level].on_call(&info(id), at(t_ms)) {
            CallDecision::Pass => {}
            refused @ CallDecision::Reject(r) => {
                for g in stack[..level].iter_mut().rev() {
                    g.on_outcome(&info(id), Outcome::Rejected(r), at(t_ms));
                }
                return refused;
            }
            d => panic!("a call parked in a stack of reject-type rules: {d:?}"),
        }
    }
    for g in stack.iter_mut().rev() {
        g.on_outcome(&info(id), upstream, at(t_ms + rt_ms));
    }
    PASS
}

/// The traffic of the order demonstration: a call every 20 ms for 3 s, each answered in
/// 10 ms; the first three fail (upstream 5xx), the rest succeed.
fn traffic() -> impl Iterator<Item = (u64, u64, Outcome)> {
    (0..150u64).map(|i| (i, i * 20, if i < 3 { FAIL } else { Outcome::Success }))
}

/// Two degrade rules and a flow rule on one resource: `ratio` (ERROR_RATIO 0.5, 5 calls,
/// 5 s open), `count` (ERROR_COUNT > 2, 3 calls, 1 s open) and QPS 20 (reject).
fn rules() -> (DegradeRuleSpec, DegradeRuleSpec, FlowRule) {
    (
        degrade("ratio", G::ErrorRatio, 0.5, 5, 5),
        degrade("count", G::ErrorCount, 2.0, 1, 3),
        FlowRule::qps(20.0, B::Default),
    )
}

/// Written in two different orders, the resource decides every call identically; the same
/// rules as separate governors do not. Why the separate form differs: with `ratio` above
/// `count`, the three failures open `count` (3 errors > 2) and its `rejected:breaker_open`
/// answers climb through `ratio`, which records them as errors (a rejection is an
/// exception thrown through it) and opens for 5 s — an outage no rule asked for; and the
/// flow rule above `count` counts passes for calls `count` then blocks, so its QPS window
/// fills with calls that never ran. In the chain, a blocked call is recorded nowhere.
#[test]
fn two_degrade_rules_and_a_flow_rule_decide_alike_in_any_order() {
    let (ratio, count, qps) = rules();
    let mut a = resource(vec![qps.clone()], vec![ratio.clone(), count.clone()]);
    let mut b = resource(vec![qps.clone()], vec![count.clone(), ratio.clone()]);
    let (mut da, mut db) = (Vec::new(), Vec::new());
    for (id, t, o) in traffic() {
        da.push(through_stack(&mut [&mut a], id, t, o, 10));
        db.push(through_stack(&mut [&mut b], id, t, o, 10));
        let states = |r: &SentinelResource| -> Vec<BreakerState> {
            let mut s: Vec<_> =
                r.degrade().iter().map(|d| (d.spec().name.clone(), d.state())).collect();
            s.sort_by(|x, y| x.0.cmp(&y.0));
            s.into_iter().map(|x| x.1).collect()
        };
        assert_eq!(states(&a), states(&b), "call {id}: rule states");
    }
    assert_eq!(da, db, "the resource's decisions do not depend on the order written");
    // `count` opened at the third failure (t = 50 ms) for 1 s; `ratio` saw 3 errors out of
    // 3 completions (< 5: no verdict) and then only successes: it never opened.
    assert_eq!(a.degrade()[0].counters.state_changes, 0, "ratio never left CLOSED");
    assert!(da[3..50].iter().all(|d| *d == OPEN), "count blocks 60 ms‥1040 ms");
    // At 1060 ms `count`'s probe passes and closes it; from then on only QPS 20 limits
    // (a call every 20 ms is 50/s: 20 pass per rolling second).
    assert_eq!(da[53], PASS);
    let passed_last_second = da[100..150].iter().filter(|d| **d == PASS).count();
    assert_eq!(passed_last_second, 20, "QPS 20 over the last second (50 calls)");

    // The separate-governor form, written [ratio, qps, count] and [count, ratio, qps].
    let mk = |s: &DegradeRuleSpec| DegradeBreaker::new(s);
    let flow = || FlowRules::new(&FlowRulesSpec { name: "f".into(), rules: vec![qps.clone()] });
    let (mut r1, mut f1, mut c1) = (mk(&ratio), flow(), mk(&count));
    let (mut c2, mut r2, mut f2) = (mk(&count), mk(&ratio), flow());
    let (mut s1, mut s2) = (Vec::new(), Vec::new());
    for (id, t, o) in traffic() {
        s1.push(through_stack(&mut [&mut r1, &mut f1, &mut c1], id, t, o, 10));
        s2.push(through_stack(&mut [&mut c2, &mut r2, &mut f2], id, t, o, 10));
    }
    assert_ne!(s1, s2, "separate governors: the order written changes the decisions");
    // Order 1: ratio records count's refusals (calls 3, 4: 5 completions, 5 errors) and
    // opens at 80 ms for 5 s: every later call of the 3 s is refused by it.
    assert_eq!(r1.state(), BreakerState::Open);
    assert!(s1[5..].iter().all(|d| *d == OPEN));
    // Order 2: the flow rule's `rate_limited` refusals climb through both degrade rules as
    // errors. `count` closes at 1070 ms as in the chain, but QPS 20 refuses calls 73‥75
    // (1460‥1500 ms: 20 passed in [1000, 1500)), three errors > 2: `count` opens again at
    // 1500 ms for 1 s, probes at 2500 ms, and opens a third time at 2940 ms after three
    // more refusals — 7 transitions where the chain makes 3 (open, half-open, closed).
    assert_eq!(c2.counters.state_changes, 7);
    assert_eq!(a.degrade()[1].counters.state_changes, 3);
    assert_eq!(s2[76..125], [OPEN; 49], "breaker_open where the chain passes or limits");
}

/// A call blocked by a later slot is no pass: a flow rule QPS 2 and an ERROR_COUNT rule
/// (opens when errors > 0, 1 call, 1 s). (time ms, decision, flow pass QPS after, why)
#[test]
fn a_blocked_call_counts_no_pass() {
    let mut r = resource(
        vec![FlowRule::qps(2.0, B::Default)],
        vec![degrade("err", G::ErrorCount, 0.0, 1, 1)],
    );
    let rows: [(u64, CallDecision, u64, &str); 5] = [
        (0, PASS, 1, "passes both slots; its failure at 10 ms opens `err` until 1010 ms"),
        (500, OPEN, 1, "flow lets it (1 + 1 ≤ 2), degrade blocks it: not counted"),
        (600, OPEN, 1, "again 1 + 1 ≤ 2: the blocked call at 500 left no pass behind"),
        (700, OPEN, 1, "(a separate flow governor would now refuse: 3 passes > 2)"),
        (1010, PASS, 1, "the probe: the pass at 0 left the rolling second; 1 pass"),
    ];
    for (i, (t, want, qps, why)) in rows.into_iter().enumerate() {
        let o = if i == 0 { FAIL } else { Outcome::Success };
        assert_eq!(through_stack(&mut [&mut r], i as u64, t, o, 10), want, "{why}");
        assert_eq!(r.flow().unwrap().pass_qps(at(t)), qps, "{why}");
    }
    // The probe's success at 1020 ms closed `err` and reset its bucket (`resetStat`).
    assert_eq!(r.degrade()[0].bucket(), (0, 0));
    assert_eq!((r.counters.passed, r.counters.degrade_blocked), (2, 3));
    // The same traffic through a separate flow governor above the degrade rule.
    let mut f = FlowRules::new(&FlowRulesSpec {
        name: "f".into(),
        rules: vec![FlowRule::qps(2.0, B::Default)],
    });
    let mut d = DegradeBreaker::new(&degrade("err", G::ErrorCount, 0.0, 1, 1));
    let sep: Vec<_> = [0, 500, 600, 700]
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let o = if i == 0 { FAIL } else { Outcome::Success };
            through_stack(&mut [&mut f, &mut d], i as u64, t, o, 10)
        })
        .collect();
    assert_eq!(sep, [PASS, OPEN, LIMITED, LIMITED], "the stack counted the blocked calls");
}

/// The RT a degrade rule sees runs from the entry, pacing wait included: RATE_LIMITER 10
/// (100 ms apart) and SLOW_REQUEST_RATIO (max RT 50 ms, ratio > 0.4, 2 calls). Each
/// upstream answer takes 20 ms. (call, arrival ms, pass ms, RT the rule records, slow?)
#[test]
fn rt_is_measured_from_entry_including_the_pacing_wait() {
    let slow = DegradeRuleSpec {
        slow_ratio_threshold: 0.4,
        ..degrade("slow", G::SlowRequestRatio, 50.0, 10, 2)
    };
    let mut r = resource(vec![FlowRule::qps(10.0, B::RateLimiter)], vec![slow]);
    // Call 1 passes at once and completes at 20 ms: RT 20 ≤ 50, not slow.
    assert_eq!(r.on_call(&info(1), at(0)), PASS);
    // Call 2 arrives at 0 and is paced to 100 ms.
    assert!(matches!(r.on_call(&info(2), at(0)), CallDecision::Wait { .. }));
    assert_eq!(r.wake_at(), Some(at(100)));
    r.on_outcome(&info(1), Outcome::Success, at(20));
    assert_eq!(r.degrade()[0].bucket(), (1, 0), "call 1: RT 20 ms");
    r.on_wake(at(100));
    let mut woken = Vec::new();
    r.take_woken(&mut woken);
    assert_eq!(woken, [CallId(2)], "call 2 passes the degrade slot at 100 ms");
    // Upstream 20 ms: completes at 120 ms. RT from entry = 120 > 50 (slow); from its
    // pass time it would be 20 (not slow).
    r.on_outcome(&info(2), Outcome::Success, at(120));
    assert_eq!(r.degrade()[0].bucket(), (2, 1), "call 2: RT 120 ms from entry, slow");
    // 1/2 = 0.5 > 0.4 with 2 ≥ min 2 completions: OPEN.
    assert_eq!(r.degrade()[0].state(), BreakerState::Open);
}

/// A probe blocked by a later slot sends its rule back to OPEN with the retry time
/// unchanged: `short` (ERROR_COUNT > 0, 1 s open) and `long` (the same, 5 s open), both
/// opened by one failure at 10 ms. Written both ways; rows hold for both.
/// (time ms, decision, short's state, long's state, why)
#[test]
fn a_probe_blocked_later_falls_back_to_open_with_its_retry_time() {
    let short = degrade("short", G::ErrorCount, 0.0, 1, 1);
    let long = degrade("long", G::ErrorCount, 0.0, 5, 1);
    let (c, o, h) = (BreakerState::Closed, BreakerState::Open, BreakerState::HalfOpen);
    let rows: [(u64, CallDecision, BreakerState, BreakerState, &str); 5] = [
        (0, PASS, o, o, "passes; its failure at 10 ms opens both (retry 1010, 5010)"),
        (1010, OPEN, o, o, "short's probe is refused by long: short back to OPEN"),
        (1011, OPEN, o, o, "retry time unchanged (1010 ≤ 1011): short probes again"),
        (5010, PASS, h, h, "both past their retry time: one call probes both"),
        (5100, PASS, c, c, "the probe succeeded at 5020: both CLOSED"),
    ];
    for written in [vec![short.clone(), long.clone()], vec![long.clone(), short.clone()]] {
        let mut r = resource(vec![], written);
        let state = |r: &SentinelResource, n: &str| {
            r.degrade().iter().find(|d| d.spec().name == n).expect("rule").state()
        };
        for (i, (t, want, s, l, why)) in rows.into_iter().enumerate() {
            let id = i as u64;
            assert_eq!(r.on_call(&info(id), at(t)), want, "{why}");
            if want == PASS && i == 3 {
                assert_eq!((state(&r, "short"), state(&r, "long")), (s, l), "{why}");
            }
            if want == PASS {
                let outcome = if i == 0 { FAIL } else { Outcome::Success };
                r.on_outcome(&info(id), outcome, at(t + 10));
            }
            if i != 3 {
                assert_eq!((state(&r, "short"), state(&r, "long")), (s, l), "{why}");
            }
        }
        // Nothing blocked was recorded: each rule saw the two completions only.
        for d in r.degrade() {
            assert_eq!(d.counters.completed, 3, "{}: calls 0, 3, 4", d.spec().name);
        }
    }
}

/// `n` calls at t = 0 through `g`, then its pacing wakes: (call, time ms, passed?) for
/// every call in the order decided.
fn paced_run(g: &mut dyn Governor, n: u64) -> Vec<(u64, u64, bool)> {
    let mut out = Vec::new();
    for id in 0..n {
        match g.on_call(&info(id), at(0)) {
            CallDecision::Pass => out.push((id, 0, true)),
            CallDecision::Reject(_) => out.push((id, 0, false)),
            CallDecision::Wait { .. } => {}
            d => panic!("{d:?}"),
        }
    }
    while let Some(t) = g.wake_at() {
        g.on_wake(t);
        let (mut woken, mut answered) = (Vec::new(), Vec::new());
        g.take_woken(&mut woken);
        g.take_answered(&mut answered);
        let ms = t.as_ns() / MS;
        out.extend(woken.into_iter().map(|c| (c.0, ms, true)));
        out.extend(answered.into_iter().map(|(c, _)| (c.0, ms, false)));
    }
    out
}

/// Two flow rules written in either order run in Sentinel's order (the `HashSet` order of
/// their hashes), so the resource decides alike; a `FlowRules` governor checks them as
/// written and does not. RATE_LIMITER 10 (100 ms apart, 500 ms queue) and QPS 2 (reject),
/// five calls at t = 0.
#[test]
fn flow_rules_run_in_sentinel_order_whatever_the_order_written() {
    let pace = FlowRule::qps(10.0, B::RateLimiter);
    let cap = FlowRule::qps(2.0, B::Default);
    let mut a = resource(vec![pace.clone(), cap.clone()], vec![]);
    let mut b = resource(vec![cap.clone(), pace.clone()], vec![]);
    // On resource "chat" the hashes (Sentinel 1.8.9) are 1 136 182 277 (pace) and
    // −197 094 141 (cap); a java.util.HashSet (OpenJDK 17.0.15) iterates cap first,
    // whichever is added first.
    for r in [&a, &b] {
        assert_eq!(r.flow().unwrap().rule(0).control_behavior, B::Default, "cap first");
    }
    let (ra, rb) = (paced_run(&mut a, 5), paced_run(&mut b, 5));
    assert_eq!(ra, rb, "one chain order for both writings");
    // cap then pace: each call passes cap at arrival (passes are counted when a call gets
    // through, so 1 + 1 ≤ 2 for every parked call) and goes at 0, 100, …, 400 ms.
    let all_pass: Vec<_> = (0..5).map(|i| (i, i * 100, true)).collect();
    assert_eq!(ra, all_pass);
    let written = |rules| FlowRules::new(&FlowRulesSpec { name: "f".into(), rules });
    let mut pace_first = written(vec![pace.clone(), cap.clone()]);
    let mut cap_first = written(vec![cap, pace]);
    assert_eq!(paced_run(&mut cap_first, 5), ra, "FlowRules in Sentinel's order agrees");
    // pace then cap: cap is checked at each pass time; the 2nd pass in the rolling second
    // (100 ms) is the last: 2 + 1 > 2 from 200 ms on.
    let expect = [(0, 0, true), (1, 100, true), (2, 200, false), (3, 300, false), (4, 400, false)];
    assert_eq!(paced_run(&mut pace_first, 5), expect, "FlowRules as written: the order matters");
}

/// Regression (issue 32): on resource "llm" a pacing rule (10/s) and a reject rule (2/s)
/// are checked reject first by Sentinel 1.8.9 (`FlowRule.hashCode()` includes
/// `AbstractRule`'s `regex` flag since 1.8.7: [`crate::flow::rule_order`]), so three calls
/// at t = 0 all pass (cap at arrival: 0 + 1 ≤ 2 each time, as passes are counted when a
/// call gets through; then paced 100 ms apart). Checked pacing first (the order without
/// the `regex` term), cap would see 2 passes at 200 ms and reject the third.
#[test]
fn pacing_and_reject_rule_on_llm_pass_all_three_as_sentinel_1_8_9() {
    let spec = SentinelResourceSpec {
        name: "llm".into(),
        resource: None,
        flow_rules: vec![FlowRule::qps(10.0, B::RateLimiter), FlowRule::qps(2.0, B::Default)],
        degrade_rules: vec![],
    };
    let mut r = SentinelResource::new(&spec);
    assert_eq!(r.flow_position(1), 0, "the reject rule is checked first");
    assert_eq!(paced_run(&mut r, 3), [(0, 0, true), (1, 100, true), (2, 200, true)]);
}

/// Declarations Sentinel would not run as written are refused with the field and the
/// reason. (RON, expected fragment of the error, why)
#[test]
fn bad_declarations_are_refused() {
    let table = [
        (r#"(name: "r")"#, "at least one rule", "no rule at all"),
        (
            r#"(name: "r", flow_rules: [(count: 5), (count: 5)])"#,
            "flow_rules[1]: equal to flow_rules[0]",
            "Sentinel's HashSet would keep one",
        ),
        (
            r#"(name: "r", flow_rules: [(count: 5, control_behavior: RATE_LIMITER,
                max_queueing_time_ms: 0)])"#,
            "flow_rules[0]: a RATE_LIMITER rule with max_queueing_time_ms: 0 is invalid",
            "FlowRuleUtil.isValidRule drops it",
        ),
        (
            r#"(name: "r", degrade_rules: [
                (name: "a", grade: ERROR_COUNT, count: 1, time_window: 1),
                (name: "a", grade: ERROR_COUNT, count: 2, time_window: 1)])"#,
            "degrade_rules[1]: duplicate name",
            "rule labels are unique",
        ),
        (
            r#"(name: "r", degrade_rules: [(name: "a", grade: ERROR_RATIO, count: 2,
                time_window: 1)])"#,
            "degrade_rules[0]: ERROR_RATIO count must be in [0, 1]",
            "DegradeRuleManager.isValidRule",
        ),
        (r#"(name: "r", flow: [])"#, "Unexpected field named `flow`", "a misspelt list"),
        (r#"(name: "r", resource: "", flow_rules: [(count: 1)])"#, "non-empty", "no resource"),
    ];
    for (text, want, why) in table {
        let e = ron::from_str::<SentinelResourceSpec>(text).expect_err(why).to_string();
        assert!(e.contains(want), "{why}: {e}");
    }
    let ok: SentinelResourceSpec = ron::from_str(
        r#"(name: "chat", resource: "GET:/v1/chat", flow_rules: [(count: 5)],
            degrade_rules: [(name: "slow", grade: SLOW_REQUEST_RATIO, count: 200,
            time_window: 5)])"#,
    )
    .expect("valid");
    assert_eq!(ok.resource(), "GET:/v1/chat");
    // The canonical text parses back to the same declaration.
    let text = ron::to_string(&ok).expect("serializes");
    assert_eq!(ron::from_str::<SentinelResourceSpec>(&text).expect(&text), ok);
}

/// Parameters: flow rules by their index as written (mapped to the chain position at run
/// time), degrade rules by index; a sweep value that makes two flow rules equal is refused.
#[test]
fn parameters_follow_the_rules_as_written() {
    use crate::params::{ParamValue as V, Params, Registry};
    let spec = SentinelResourceSpec {
        name: "chat".into(),
        resource: None,
        flow_rules: vec![FlowRule::qps(10.0, B::RateLimiter), FlowRule::qps(2.0, B::Default)],
        degrade_rules: vec![degrade("slow", G::SlowRequestRatio, 100.0, 5, 5)],
    };
    let mut reg = Registry::default();
    reg.add_component(&spec, crate::components::Owner::Governor(0));
    let value = |p: &str| reg.get(p).map(|s| s.value.clone());
    assert_eq!(value("sentinel_resource.chat.rule0.count"), Some(V::Float(10.0)));
    assert_eq!(value("sentinel_resource.chat.rule1.count"), Some(V::Float(2.0)));
    assert_eq!(value("sentinel_resource.chat.degrade0.time_window"), Some(V::Count(5)));
    assert_eq!(value("sentinel_resource.chat.rule2.count"), None, "two flow rules only");
    assert_eq!(value("sentinel_resource.chat.degrade1.count"), None, "one degrade rule");
    assert_eq!(SentinelResourceSpec::field_of("rule1.count"), "flow_rules[1].count");
    assert_eq!(SentinelResourceSpec::field_of("degrade0.count"), "degrade_rules[0].count");
    let mut s2 = spec.clone();
    let e = s2.set("rule1.count", V::Float(10.0));
    assert!(e.is_ok(), "a DEFAULT 10 differs from a RATE_LIMITER 10: {e:?}");
    s2.set("rule1.control_behavior_is_not_a_parameter", V::Float(1.0)).expect_err("unknown");
    let mut s3 = spec.clone();
    s3.flow_rules[1] = FlowRule::qps(3.0, B::RateLimiter);
    assert!(s3.set("rule1.count", V::Float(10.0)).unwrap_err().contains("equal"));
    assert_eq!(s3.flow_rules[1].count, 3.0, "a refused value changes nothing");
    // Run time: rule1 (cap, QPS 2) sits at chain position 0 (see the order test).
    let mut r = SentinelResource::new(&spec);
    assert_eq!((r.flow_position(0), r.flow_position(1)), (1, 0));
    r.apply_param("rule1.count", V::Float(7.0), at(0)).expect("runtime");
    assert_eq!(r.flow().unwrap().rule(0).count, 7.0);
    r.apply_param("degrade0.count", V::Float(50.0), at(0)).expect("runtime");
    assert_eq!(r.degrade()[0].spec().count, 50.0);
    assert!(r.apply_param("rule5.count", V::Float(1.0), at(0)).is_err());
}
