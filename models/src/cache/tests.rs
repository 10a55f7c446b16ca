//! Scripted tests of the cache and single-flight governors.

use super::*;
use crate::outcome::Reason::{self, *};

const S: u64 = 1_000_000_000;

fn t(s: u64) -> SimTime {
    SimTime(s * S)
}
/// A call with a key; its draw is `mix64(id)` (a fixed, arbitrary value per call).
fn kc(id: u64, key: u64) -> CallInfo {
    CallInfo { key, draw: mix64(id), ..CallInfo::simple(id, 0) }
}
fn cache(f: impl FnOnce(&mut CacheSpec)) -> Cache {
    let mut s = CacheSpec::named("c");
    s.ttl = SimDuration::from_secs(10);
    f(&mut s);
    Cache::new(&s)
}
fn fill(c: &mut Cache, id: u64, key: u64, at: SimTime) {
    assert_eq!(c.on_call(&kc(id, key), at), CallDecision::Pass, "miss before fill");
    assert_eq!(c.on_outcome(&kc(id, key), Outcome::Success, at), up(Outcome::Success));
}
fn up(o: Outcome) -> OutcomeDecision {
    OutcomeDecision::PassUp(o)
}
const HIT: CallDecision = CallDecision::ServeLocally(Outcome::Success);
const PASS: CallDecision = CallDecision::Pass;

/// TTL 10 s, no stale options (max_stale counts as 0): fresh while age < 10 s.
#[test]
fn ttl_boundary_is_exclusive() {
    let mut c = cache(|_| {});
    fill(&mut c, 1, 5, t(0));
    assert_eq!(c.on_call(&kc(2, 5), SimTime(10 * S - 1)), HIT);
    // age = 10 s exactly: not fresh; no stale window → dead → removed, miss.
    assert_eq!(c.on_call(&kc(3, 5), t(10)), PASS);
    assert_eq!((c.hits, c.misses, c.expired, c.len()), (1, 2, 1, 0));
    // Uncacheable key 0: passes, is never filled.
    assert_eq!(c.on_call(&kc(4, 0), t(11)), PASS);
    c.on_outcome(&kc(4, 0), Outcome::Success, t(11));
    assert_eq!((c.uncacheable, c.len()), (1, 0));
}

/// Serve stale on error: ttl 10 s, max_stale 5 s → stale in [10, 15) s.
#[test]
fn serve_stale_on_error() {
    let mut c = cache(|s| {
        s.serve_stale_on_error = true;
        s.max_stale = SimDuration::from_secs(5);
    });
    fill(&mut c, 1, 7, t(0));
    // (time ns, outcome from below, expected lookup, expected answer)
    let script: [(u64, Outcome, CallDecision, Outcome); 5] = [
        (12 * S, Outcome::Failed(Upstream5xx), PASS, Outcome::Degraded(Upstream5xx)),
        (13 * S, Outcome::Rejected(BreakerOpen), PASS, Outcome::Degraded(BreakerOpen)),
        // A degraded answer from below passes and is not cached.
        (14 * S, Outcome::Degraded(Timeout), PASS, Outcome::Degraded(Timeout)),
        (15 * S - 1, Outcome::Failed(Timeout), PASS, Outcome::Degraded(Timeout)),
        // age 15 s = ttl + max_stale: dead at the lookup → removed → the failure stands.
        (15 * S, Outcome::Failed(Timeout), PASS, Outcome::Failed(Timeout)),
    ];
    for (i, (at, below, lookup, answer)) in script.into_iter().enumerate() {
        let call = kc(10 + i as u64, 7);
        assert_eq!(c.on_call(&call, SimTime(at)), lookup, "step {i}");
        assert_eq!(c.on_outcome(&call, below, SimTime(at)), up(answer), "step {i}");
    }
    assert_eq!((c.stale_on_error, c.expired, c.fills), (3, 1, 1));
    // A fresh entry also answers a failure (the call missed it by racing its fill).
    let call = kc(30, 8);
    assert_eq!(c.on_call(&call, t(20)), PASS);
    fill(&mut c, 31, 8, t(20));
    assert_eq!(
        c.on_outcome(&call, Outcome::Failed(ConnectError), t(21)),
        up(Outcome::Degraded(ConnectError))
    );
}

/// Stale-while-revalidate: ttl 10 s, max_stale 10 s. The first stale lookup refreshes,
/// the others get the stale answer (a success) while it is out.
#[test]
fn stale_while_revalidate() {
    let mut c = cache(|s| {
        s.stale_while_revalidate = true;
        s.max_stale = SimDuration::from_secs(10);
    });
    fill(&mut c, 1, 9, t(0));
    assert_eq!(c.on_call(&kc(2, 9), t(12)), PASS); // refresh
    assert_eq!(c.on_call(&kc(3, 9), t(12)), HIT); // stale answer
    // The refresh fails: the mark goes; the next stale lookup refreshes again.
    assert_eq!(
        c.on_outcome(&kc(2, 9), Outcome::Failed(Timeout), t(13)),
        up(Outcome::Failed(Timeout))
    );
    assert_eq!(c.on_call(&kc(4, 9), t(14)), PASS);
    assert_eq!(c.on_call(&kc(5, 9), t(14)), HIT);
    // It succeeds at 15 s: fresh until 25 s.
    c.on_outcome(&kc(4, 9), Outcome::Success, t(15));
    assert_eq!(c.on_call(&kc(6, 9), SimTime(25 * S - 1)), HIT);
    assert_eq!((c.hits, c.stale_hits, c.refreshes, c.fills), (1, 2, 2, 2));
    // An abandoned refresh frees the mark too (stale at 26 s).
    assert_eq!(c.on_call(&kc(7, 9), t(26)), PASS);
    c.on_abandon(&kc(7, 9), t(27));
    assert_eq!(c.on_call(&kc(8, 9), t(27)), PASS);
}

/// LRU through the governor: capacity 2.
#[test]
fn lru_eviction_order() {
    let mut c = cache(|s| s.capacity = 2);
    fill(&mut c, 1, 1, t(0));
    fill(&mut c, 2, 2, t(0));
    assert_eq!(c.on_call(&kc(3, 1), t(1)), HIT); // 1 most recent: order 2, 1
    fill(&mut c, 4, 3, t(1)); // evicts 2: order 1, 3
    assert_eq!(c.on_call(&kc(5, 2), t(2)), PASS);
    assert_eq!(c.on_call(&kc(6, 1), t(2)), HIT);
    assert_eq!(c.on_call(&kc(7, 3), t(2)), HIT);
    assert_eq!((c.evictions, c.len()), (1, 2));
}

/// Hit probability: 10,000 keys filled, each looked up once. Hits ~ Binomial(10⁴, p);
/// σ = √(p(1−p)/10⁴) ≈ 0.0046 at p = 0.3; tolerance 0.02 (> 4σ). p = 0 and 1 are exact.
#[test]
fn hit_probability_over_10000_keys() {
    for (p, lo, hi) in [(0.3, 0.28, 0.32), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (0.9, 0.88, 0.92)] {
        let mut c = cache(|s| {
            s.capacity = 10_000;
            s.hit_probability = p;
        });
        for k in 1..=10_000 {
            c.on_call(&kc(k, k), t(0));
            c.on_outcome(&kc(k, k), Outcome::Success, t(0));
        }
        let hits = (1..=10_000u64).filter(|&k| c.on_call(&kc(20_000 + k, k), t(1)) == HIT).count();
        let rate = hits as f64 / 10_000.0;
        assert!(rate >= lo && rate <= hi, "p = {p}: hit rate {rate}");
        assert_eq!(c.hits + c.semantic_misses, 10_000);
    }
}

/// A call that semantically missed an entry is not served it on error either.
#[test]
fn semantic_miss_is_consistent_on_error() {
    let mut c = cache(|s| {
        s.hit_probability = 0.5;
        s.serve_stale_on_error = true;
    });
    fill(&mut c, 1, 3, t(0));
    let id = (100..).find(|&i| !semantic_match(mix64(i), 0.5)).unwrap();
    assert_eq!(c.on_call(&kc(id, 3), t(1)), PASS);
    assert_eq!(
        c.on_outcome(&kc(id, 3), Outcome::Failed(Timeout), t(1)),
        up(Outcome::Failed(Timeout))
    );
}

// ---- single-flight ----

fn sf(f: impl FnOnce(&mut SingleFlightSpec)) -> SingleFlight {
    let mut s = SingleFlightSpec::named("sf");
    f(&mut s);
    SingleFlight::new(&s)
}
fn wait(deadline: Option<SimTime>) -> CallDecision {
    CallDecision::Wait { deadline, on_deadline: Reason::Timeout }
}
fn drain(g: &mut SingleFlight) -> (Vec<CallId>, Vec<(CallId, Outcome)>) {
    let (mut w, mut a) = (vec![], vec![]);
    g.take_woken(&mut w);
    g.take_answered(&mut a);
    (w, a)
}

/// 10,000 simultaneous identical misses: one call passes, 9,999 wait and are answered with
/// the leader's outcome, oldest first.
#[test]
fn ten_thousand_identical_misses_one_call() {
    let mut g = sf(|_| {});
    let mut passed = 0;
    for id in 0..10_000 {
        match g.on_call(&kc(id, 42), t(0)) {
            PASS => passed += 1,
            d => assert_eq!(d, wait(None)),
        }
    }
    assert_eq!((passed, g.waiting(), g.followers_held()), (1, 9_999, 9_999));
    let o = Outcome::Degraded(Timeout);
    assert_eq!(g.on_outcome(&kc(0, 42), o, t(1)), up(o));
    let (w, a) = drain(&mut g);
    assert!(w.is_empty());
    let want: Vec<(CallId, Outcome)> = (1..10_000).map(|i| (CallId(i), o)).collect();
    assert_eq!(a, want);
    assert_eq!((g.waiting(), g.flights(), g.leaders, g.shared), (0, 0, 1, 9_999));
    // The flight is over: the next call leads a new one; key 0 is never shared.
    assert_eq!(g.on_call(&kc(10_000, 42), t(2)), PASS);
    assert_eq!(g.on_call(&kc(10_001, 0), t(2)), PASS);
    assert_eq!(g.on_call(&kc(10_002, 0), t(2)), PASS);
}

/// Leader abandoned → the oldest follower is promoted (woken); a follower timing out is
/// forgotten; the new leader's outcome answers the rest.
#[test]
fn leader_abandoned_promotes_oldest_follower() {
    let mut g = sf(|s| s.max_wait = Some(SimDuration::from_secs(1)));
    assert_eq!(g.on_call(&kc(1, 5), t(0)), PASS);
    for id in 2..=4 {
        assert_eq!(g.on_call(&kc(id, 5), t(0)), wait(Some(t(1))));
    }
    g.on_abandon(&kc(1, 5), t(0));
    assert_eq!(drain(&mut g), (vec![CallId(2)], vec![]));
    assert_eq!((g.waiting(), g.promotions), (2, 1));
    g.on_abandon(&kc(3, 5), t(1)); // follower 3's deadline
    assert_eq!((g.waiting(), g.abandoned_followers), (1, 1));
    let f = Outcome::Failed(Timeout);
    assert_eq!(g.on_outcome(&kc(2, 5), f, t(1)), up(f));
    assert_eq!(drain(&mut g), (vec![], vec![(CallId(4), f)]));
    assert_eq!(g.flights(), 0);
    // A leader abandoned with no followers ends its flight.
    g.on_call(&kc(9, 6), t(2));
    g.on_abandon(&kc(9, 6), t(2));
    assert_eq!((g.flights(), drain(&mut g)), (0, (vec![], vec![])));
}

/// share_errors off: a failing leader hands over to its oldest follower.
#[test]
fn failures_not_shared_hand_over() {
    let mut g = sf(|s| s.share_errors = false);
    for id in 1..=3 {
        g.on_call(&kc(id, 8), t(0));
    }
    let f = Outcome::Rejected(RateLimited);
    assert_eq!(g.on_outcome(&kc(1, 8), f, t(1)), up(f));
    assert_eq!(drain(&mut g), (vec![CallId(2)], vec![]));
    assert_eq!(g.on_outcome(&kc(2, 8), Outcome::Success, t(2)), up(Outcome::Success));
    assert_eq!(drain(&mut g), (vec![], vec![(CallId(3), Outcome::Success)]));
}

/// Caps: 2 followers per key, 3 in all, 2 keys. Over a cap the call passes on its own.
#[test]
fn caps_overflow_passes() {
    let mut g = sf(|s| {
        s.max_followers_per_key = 2;
        s.max_waiting = 3;
        s.max_keys = 2;
    });
    // (id, key, expected)
    let script = [
        (1, 1, PASS),       // leads key 1
        (2, 1, wait(None)), // follower 1/2
        (3, 1, wait(None)), // follower 2/2
        (4, 1, PASS),       // per-key cap: overflow
        (5, 2, PASS),       // leads key 2
        (6, 2, wait(None)), // 3 waiting in all
        (7, 2, PASS),       // global cap: overflow
        (8, 3, PASS),       // key cap: overflow (no flight)
        (9, 3, PASS),       // still no flight for key 3
    ];
    for (id, key, want) in script {
        assert_eq!(g.on_call(&kc(id, key), t(0)), want, "call {id}");
    }
    assert_eq!((g.overflow, g.flights(), g.waiting()), (4, 2, 3));
    // An overflow call's outcome shares nothing.
    g.on_outcome(&kc(4, 1), Outcome::Success, t(1));
    assert_eq!(drain(&mut g), (vec![], vec![]));
}

#[test]
fn specs_ron_round_trip() {
    let c: CacheSpec = ron::from_str(
        r#"Cache(name: "qa", capacity: 500, ttl: "5m", hit_probability: 0.4,
            serve_stale_on_error: true, max_stale: "1h")"#,
    )
    .unwrap();
    assert_eq!(
        (c.capacity, c.ttl, c.stale_while_revalidate),
        (500, SimDuration::from_secs(300), false)
    );
    assert_eq!(ron::from_str::<CacheSpec>(&ron::to_string(&c).unwrap()).unwrap(), c);
    let s: SingleFlightSpec =
        ron::from_str(r#"SingleFlight(name: "sf", max_wait: "2s", share_errors: false)"#).unwrap();
    assert_eq!(s.max_wait, Some(SimDuration::from_secs(2)));
    assert_eq!(ron::from_str::<SingleFlightSpec>(&ron::to_string(&s).unwrap()).unwrap(), s);
    let e = ron::from_str::<CacheSpec>(r#"Cache(name: "c", hit_probability: 1.5)"#).unwrap_err();
    assert!(e.to_string().contains("expected a number in [0, 1], found 1.5"), "{e}");
}

/// A stack [cache, single_flight, retry] driven as the call site does (`callsite::ascend`:
/// `RetryAfter` at level i re-sends from level i+1; followers answered at level 1 climb
/// through level 0 only).
#[test]
fn cache_single_flight_retry_stack() {
    use crate::retry::{Retry, RetrySpec};
    let mut c = cache(|_| {});
    let mut g = sf(|_| {});
    let mut r = Retry::new(&RetrySpec::named("r"), &["P0"]);
    fn ascend(
        stack: &mut [&mut dyn Governor],
        below: usize,
        call: &CallInfo,
        o: Outcome,
        now: SimTime,
    ) -> Result<Outcome, (usize, SimDuration)> {
        let mut o = o;
        for level in (0..below).rev() {
            match stack[level].on_outcome(call, o, now) {
                OutcomeDecision::PassUp(x) => o = x,
                OutcomeDecision::RetryAfter(d) => return Err((level + 1, d)),
            }
        }
        Ok(o)
    }
    let (a, b, d) = (kc(1, 7), kc(2, 7), kc(3, 7));
    let mut stack: [&mut dyn Governor; 3] = [&mut c, &mut g, &mut r];
    // A goes upstream; B waits at single-flight (level 1).
    assert!(stack.iter_mut().all(|gov| gov.on_call(&a, t(0)) == PASS));
    assert_eq!(stack[0].on_call(&b, t(0)), PASS);
    assert_eq!(stack[1].on_call(&b, t(0)), wait(None));
    // A fails (5xx): the retry (level 2) re-sends it from level 3 (the upstream) after 500 ms.
    let retry_at = ascend(&mut stack, 3, &a, Outcome::Failed(Upstream5xx), t(1));
    assert_eq!(retry_at, Err((3, SimDuration::from_ms(500))));
    // The retry succeeds: the outcome climbs all three levels; B is answered at level 1.
    assert_eq!(ascend(&mut stack, 3, &a, Outcome::Success, t(2)), Ok(Outcome::Success));
    let mut answered = vec![];
    stack[1].take_answered(&mut answered);
    assert_eq!(answered, vec![(CallId(2), Outcome::Success)]);
    assert_eq!(ascend(&mut stack, 1, &b, Outcome::Success, t(2)), Ok(Outcome::Success));
    // D is a cache hit: served at level 0.
    assert_eq!(stack[0].on_call(&d, t(3)), HIT);
    // Fills: A, and B climbing through the cache with the shared success (a re-store).
    assert_eq!((c.hits, c.fills, g.shared, r.retries, r.attempts), (1, 2, 1, 1, 2));
}
