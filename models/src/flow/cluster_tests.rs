//! Scripted tests of the cluster flow rule: a token server shared by the clients of
//! `instances` app instances (clones of one governor, as the world's per-instance copies).
//! Each row: at `t` ms, instance `inst` sends `n` calls, of which `pass` must pass (the rest
//! are rejected `rate_limited`); or the server goes down / comes back. Expected values are
//! derived by hand from Sentinel's arithmetic (comments), never by the code under test.

use super::cluster::*;
use crate::governor::{CallDecision, CallInfo, GovEvent, Governor};
use crate::outcome::{Outcome, Reason};
use sim_core::SimTime;

fn ms(t: u64) -> SimTime {
    SimTime(t * 1_000_000)
}

#[derive(Clone, Copy, Debug)]
enum Row {
    Calls { t: u64, inst: usize, n: u64, pass: u64 },
    Server { up: bool },
}
use Row::*;

/// The declared rule and `instances` copies sharing its server (connected = instances).
fn clients(ron_spec: &str, instances: usize) -> Vec<ClusterFlow> {
    let spec: ClusterFlowRuleSpec = ron::from_str(ron_spec).expect("valid spec");
    spec.check().expect("window divides");
    let mut base = ClusterFlow::new(&spec);
    base.set_connected(instances as u64);
    (0..instances).map(|_| base.clone()).collect()
}

fn run(cs: &mut [ClusterFlow], script: &[Row]) {
    let mut id = 0;
    for (i, row) in script.iter().enumerate() {
        match *row {
            Server { up } => cs[0].set_server_up(up),
            Calls { t, inst, n, pass } => {
                let mut passed = 0;
                for _ in 0..n {
                    id += 1;
                    match cs[inst].on_call(&CallInfo::simple(id, 0), ms(t)) {
                        CallDecision::Pass => passed += 1,
                        CallDecision::Reject(Reason::RateLimited) => {}
                        d => panic!("row {i}: unexpected decision {d:?}"),
                    }
                }
                assert_eq!(passed, pass, "row {i}: {row:?}");
            }
        }
    }
}

/// I43: the server's answers = the answers its clients saw.
fn server_accounting_holds(cs: &[ClusterFlow]) {
    let mut v = Vec::new();
    check_clients(cs.iter().map(|c| ("c", c)), &mut v);
    assert!(v.is_empty(), "{v:?}");
    let s = cs[0].server();
    let (ok, blocked, many) = (s.ok, s.blocked, s.too_many);
    drop(s);
    let sum = |f: fn(&ClusterCounters) -> u64| cs.iter().map(|c| f(&c.counters)).sum::<u64>();
    assert_eq!(ok, sum(|c| c.token_ok));
    assert_eq!(blocked, sum(|c| c.token_blocked));
    assert_eq!(many, sum(|c| c.too_many));
}

/// GLOBAL 100 over 4 instances: 100 tokens per rolling second cluster-wide, whoever asks.
/// Server window: 10 buckets of 100 ms; pass while 100 − passes − 1 ≥ 0, i.e. passes ≤ 99.
#[test]
fn global_100_over_four_instances() {
    let mut cs = clients("(name: \"c\", count: 100, threshold_type: GLOBAL)", 4);
    run(
        &mut cs,
        &[
            Calls { t: 0, inst: 0, n: 30, pass: 30 },  // window 0 → 30
            Calls { t: 10, inst: 1, n: 30, pass: 30 }, // → 60
            Calls { t: 20, inst: 2, n: 30, pass: 30 }, // → 90
            Calls { t: 30, inst: 3, n: 30, pass: 10 }, // → 100; 20 blocked
            Calls { t: 999, inst: 0, n: 5, pass: 0 },  // [0,100) still in [0, 999]
            // t = 1000: the window is the buckets starting 100‥1000; [0,100) left it.
            Calls { t: 1000, inst: 1, n: 5, pass: 5 },
        ],
    );
    let total: u64 = cs.iter().map(|c| c.counters.token_ok).sum();
    assert_eq!(total, 105);
    assert_eq!(cs[3].counters.token_blocked, 20);
    assert_eq!(cs[0].counters.token_blocked, 5);
    server_accounting_holds(&cs);
}

/// AVG_LOCAL 25 × 4 connected clients = 100: the same cluster-wide figures as GLOBAL 100;
/// with one client (the rule not per instance) the threshold is 25 × 1.
#[test]
fn avg_local_multiplies_by_connected_clients() {
    let mut cs = clients("(name: \"c\", count: 25)", 4);
    assert_eq!(cs[0].server().global_threshold(), 100.0);
    run(
        &mut cs,
        &[
            Calls { t: 0, inst: 0, n: 60, pass: 60 }, // one instance may take 60 of 100
            Calls { t: 0, inst: 1, n: 60, pass: 40 }, // 60 + 40 = 100
            Calls { t: 0, inst: 2, n: 1, pass: 0 },
        ],
    );
    server_accounting_holds(&cs);
    let mut one = clients("(name: \"c\", count: 25)", 1);
    run(&mut one, &[Calls { t: 0, inst: 0, n: 30, pass: 25 }]);
}

/// Server down + fallback: each instance's local rule (the same count, 25) over its own
/// rolling second (2 × 500 ms), passes ≤ 24 before a call: 25 per instance, 100 in all.
/// Local statistics include the passes the server granted before the outage.
#[test]
fn outage_falls_back_to_each_instance_local_rule() {
    let mut cs = clients("(name: \"c\", count: 25)", 4);
    run(
        &mut cs,
        &[
            Calls { t: 0, inst: 0, n: 20, pass: 20 }, // tokens; inst 0 local window: 20
            Server { up: false },
            Calls { t: 200, inst: 0, n: 10, pass: 5 }, // local: 20 + 5 = 25
            Calls { t: 200, inst: 1, n: 30, pass: 25 },
            Calls { t: 200, inst: 2, n: 30, pass: 25 },
            Calls { t: 200, inst: 3, n: 30, pass: 25 }, // 100 in the cluster, as promised
            // t = 1000: the local window is [500, 1499]: the passes at 0 and 200 are out.
            Calls { t: 1000, inst: 0, n: 30, pass: 25 },
            Server { up: true },
            // Server window at 1100: buckets 200‥1100: the 20 tokens at t = 0 are out and
            // the outage's local passes were never counted there: 100 tokens again.
            Calls { t: 1100, inst: 1, n: 110, pass: 100 },
        ],
    );
    assert_eq!(cs[0].counters.local_pass, 5 + 25);
    assert_eq!(cs[0].counters.local_block, 5 + 5);
    assert_eq!(cs[1].counters.token_ok, 100);
    server_accounting_holds(&cs);
    // Events: cluster → local_fallback → cluster for instance 0's client.
    let mut ev: Vec<GovEvent> = Vec::new();
    cs[0].take_events(&mut ev);
    let seen: Vec<(&str, &str)> = ev.iter().map(|e| (e.from.as_str(), e.to.as_str())).collect();
    assert_eq!(seen, vec![("cluster", "local_fallback")]);
    cs[1].take_events(&mut ev);
    assert_eq!(ev.last().map(|e| (e.to.as_str(), e.time)), Some(("cluster", ms(1100))));
}

/// Sentinel's gotcha: the local fallback uses the rule's own count, so a GLOBAL 80 rule
/// falls back to 80 *per instance* (320 on 4 instances). Without fallback the rule is
/// simply off: every call passes.
#[test]
fn global_fallback_is_per_instance_and_no_fallback_passes_all() {
    let mut cs = clients("(name: \"c\", count: 80, threshold_type: GLOBAL)", 4);
    let mut script = vec![Server { up: false }];
    script.extend((0..4).map(|inst| Calls { t: 0, inst, n: 100, pass: 80 }));
    run(&mut cs, &script);
    assert_eq!(cs.iter().map(|c| c.counters.local_pass).sum::<u64>(), 320);

    let mut off = clients(
        "(name: \"c\", count: 80, threshold_type: GLOBAL, fallback_to_local_when_fail: false)",
        4,
    );
    run(&mut off, &[Server { up: false }, Calls { t: 0, inst: 2, n: 500, pass: 500 }]);
    assert_eq!(off[2].counters.pass_through, 500);
    assert_eq!(off[2].mode(), ClientMode::PassThrough);
}

/// The namespace limiter: max_allowed_qps 10 answers 10 requests per rolling second
/// (qps + 1 ≤ 10); the rest are TOO_MANY_REQUEST and fall back (local count 100: pass).
#[test]
fn too_many_requests_fall_back() {
    let mut cs =
        clients("(name: \"c\", count: 100, threshold_type: GLOBAL, max_allowed_qps: 10)", 2);
    run(&mut cs, &[Calls { t: 0, inst: 0, n: 15, pass: 15 }]);
    assert_eq!(cs[0].counters.token_ok, 10);
    assert_eq!(cs[0].counters.too_many, 5);
    assert_eq!(cs[0].counters.local_pass, 5);
    server_accounting_holds(&cs);
}

/// Sentinel's floating arithmetic on the server: latestQps = passes / (interval in s).
/// Window 2000 ms (10 × 200 ms), GLOBAL 10: pass while 10 − passes/2 − 1 ≥ 0, i.e.
/// passes ≤ 18: 19 tokens per 2 s. exceed_count 1.5 with GLOBAL 10: threshold 15 → 15.
/// A fractional count 2.5: passes + 1 ≤ 2.5 → 2.
#[test]
fn window_length_exceed_count_and_fractions() {
    let mut w =
        clients("(name: \"c\", count: 10, threshold_type: GLOBAL, window_interval_ms: 2000)", 1);
    run(&mut w, &[Calls { t: 0, inst: 0, n: 25, pass: 19 }]);
    let mut e = clients("(name: \"c\", count: 10, threshold_type: GLOBAL, exceed_count: 1.5)", 1);
    run(&mut e, &[Calls { t: 0, inst: 0, n: 20, pass: 15 }]);
    let mut f = clients("(name: \"c\", count: 2.5, threshold_type: GLOBAL)", 3);
    run(&mut f, &[Calls { t: 0, inst: 1, n: 5, pass: 2 }]);
}

/// Run-time changes keep the windows: count 100 → 50 after 40 passes leaves 10 tokens.
/// Passed calls return through on_outcome (I44: passed − returned = threads).
#[test]
fn count_change_keeps_the_window_and_threads_balance() {
    let mut cs = clients("(name: \"c\", count: 100, threshold_type: GLOBAL)", 2);
    run(&mut cs, &[Calls { t: 0, inst: 0, n: 40, pass: 40 }]);
    for c in cs.iter_mut() {
        c.set_count(50.0);
    }
    run(&mut cs, &[Calls { t: 1, inst: 1, n: 20, pass: 10 }]); // 40 + 10 = 50
    assert_eq!(cs[1].threads(), 10);
    for k in 0..10 {
        cs[1].on_outcome(&CallInfo::simple(k, 0), Outcome::Success, ms(5));
    }
    assert_eq!(cs[1].threads(), 0);
    assert_eq!(cs[1].counters.returned, 10);
    cs[0].reload(ms(6)); // a reload keeps the server's metric (same flow id)
    run(&mut cs, &[Calls { t: 7, inst: 0, n: 1, pass: 0 }]);
}

/// A detached copy (a shadow) has its own server: it never spends the real tokens.
#[test]
fn detached_copy_has_its_own_server() {
    let cs = clients("(name: \"c\", count: 3, threshold_type: GLOBAL)", 2);
    let mut shadow = cs[0].detached();
    assert!(!shadow.same_server(&cs[0]));
    assert!(cs[0].same_server(&cs[1]));
    let mut real = cs;
    run(std::slice::from_mut(&mut shadow), &[Calls { t: 0, inst: 0, n: 3, pass: 3 }]);
    run(&mut real, &[Calls { t: 0, inst: 1, n: 4, pass: 3 }]);
}

#[test]
fn spec_validation() {
    let bad = |s: &str| ron::from_str::<ClusterFlowRuleSpec>(s).unwrap_err().to_string();
    assert!(bad("(name: \"c\", count: 1, threshold_type: LOCAL)").contains("AVG_LOCAL"));
    assert!(bad("(name: \"c\", count: 1, sample_count: 0)").contains("[1, 1000]"));
    assert!(bad("(name: \"c\", count: 1, exceed_count: 0)").contains("in [0.01, 100], found 0"));
    let s: ClusterFlowRuleSpec =
        ron::from_str("(name: \"c\", count: 1, sample_count: 3)").expect("parses");
    assert!(s.check().unwrap_err().contains("multiple of sample_count"));
    assert!(s.fallback_to_local_when_fail && s.server_up);
    assert_eq!((s.threshold_type, s.window_interval_ms), (ThresholdType::AvgLocal, 1000));
}

/// The world-level check finds a broken count (a client that forgot a return, a server
/// answer no client saw).
#[test]
fn check_clients_reports_violations() {
    let mut cs = clients("(name: \"c\", count: 10)", 2);
    run(&mut cs, &[Calls { t: 0, inst: 0, n: 3, pass: 3 }]);
    cs[0].counters.returned = 1; // 3 passed − 1 returned ≠ 3 in flight
    cs[1].server().ok += 1; // the server says 4 tokens, the clients saw 3
    let mut v = Vec::new();
    check_clients(cs.iter().map(|c| ("c", c)), &mut v);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].starts_with("I44") && v[1].starts_with("I43"), "{v:?}");
}

/// Token latency. rtt 5 ms within the 20 ms request timeout: the server decides at send
/// time (count 2: passes 0 and 1 pass, 2 − 2 − 1 < 0 blocks the third); the calls wait
/// 5 ms, then two resume and one is answered `rate_limited` from here. A call abandoned
/// while waiting leaves nothing; one woken but abandoned before resuming gives its pass
/// back. rtt 30 ms > 20 ms: the call falls back when the timeout fires (local count 100:
/// it passes), and the server has counted the token anyway (I43 holds: it counts answers
/// sent).
#[test]
fn token_rtt_and_request_timeout() {
    use crate::ids::CallId;
    let call = |k: u64| CallInfo::simple(k, 0);
    let mut cs = clients("(name: \"c\", count: 2, threshold_type: GLOBAL, token_rtt: \"5ms\")", 1);
    let c = &mut cs[0];
    for k in 1..=3 {
        let d = c.on_call(&call(k), ms(0));
        assert!(matches!(d, CallDecision::Wait { deadline: None, .. }), "{d:?}");
    }
    assert_eq!((c.waiting(), c.wake_at(), c.threads()), (3, Some(ms(5)), 0));
    c.on_wake(ms(4)); // not yet
    assert_eq!(c.waiting(), 3);
    c.on_wake(ms(5));
    let (mut w, mut a) = (Vec::new(), Vec::new());
    c.take_woken(&mut w);
    c.take_answered(&mut a);
    assert_eq!(w, [CallId(1), CallId(2)]);
    assert_eq!(a, [(CallId(3), Outcome::Rejected(Reason::RateLimited))]);
    assert_eq!((c.threads(), c.wake_at()), (2, None));
    // Abandons: call 4 while waiting, call 5 after being woken (t = 1000: window free).
    c.on_call(&call(4), ms(1000));
    c.on_abandon(&call(4), ms(1001));
    assert_eq!((c.waiting(), c.wake_at()), (0, None));
    c.on_call(&call(5), ms(1000));
    c.on_wake(ms(1005));
    c.on_abandon(&call(5), ms(1005));
    assert_eq!((c.threads(), c.counters.passed, c.counters.returned), (2, 3, 1));
    server_accounting_holds(&cs);

    let mut slow = clients("(name: \"c\", count: 100, token_rtt: \"30ms\")", 1);
    let c = &mut slow[0];
    assert!(matches!(c.on_call(&call(1), ms(0)), CallDecision::Wait { .. }));
    assert_eq!(c.wake_at(), Some(ms(20)), "the request timeout, not the rtt");
    c.on_wake(ms(20));
    let mut w = Vec::new();
    c.take_woken(&mut w);
    assert_eq!(w, [CallId(1)]);
    let k = c.counters;
    assert_eq!((k.token_ok, k.timeouts, k.local_pass, k.passed), (1, 1, 1, 1));
    assert_eq!(c.mode(), ClientMode::Local);
    assert_eq!(c.server().window_passes(ms(20)), 1, "the server spent the token");
    server_accounting_holds(&slow);
}
