//! Scripted tests of the retry governor. Expected values are derived by hand in comments.

use super::*;
use crate::ids::ClassId;
use crate::outcome::Reason::*;

const MS: u64 = 1_000_000;
const CLASSES: [&str; 3] = ["P0", "P1", "P2"];

fn ms(x: u64) -> SimTime {
    SimTime(x * MS)
}
fn d_ms(x: u64) -> SimDuration {
    SimDuration::from_ms(x)
}
fn call(i: u64, class: u16) -> CallInfo {
    CallInfo::simple(i, class)
}
fn retry(f: impl FnOnce(&mut RetrySpec)) -> Retry {
    let mut s = RetrySpec::named("r");
    f(&mut s);
    Retry::new(&s, &CLASSES)
}
fn fail(r: Reason) -> Outcome {
    Outcome::Failed(r)
}
fn up(o: Outcome) -> OutcomeDecision {
    OutcomeDecision::PassUp(o)
}
fn after(x: u64) -> OutcomeDecision {
    OutcomeDecision::RetryAfter(d_ms(x))
}

/// Inverse of `mix64` (each step of SplitMix64's finaliser is a bijection).
fn unmix64(mut z: u64) -> u64 {
    fn inv(c: u64) -> u64 {
        let mut x = c; // Newton: x ← x(2 − cx) doubles the correct low bits each round.
        for _ in 0..6 {
            x = x.wrapping_mul(2u64.wrapping_sub(c.wrapping_mul(x)));
        }
        x
    }
    z = z ^ (z >> 31) ^ (z >> 62);
    z = z.wrapping_mul(inv(0x94D0_49BB_1331_11EB));
    z = z ^ (z >> 27) ^ (z >> 54);
    z = z.wrapping_mul(inv(0xBF58_476D_1CE4_E5B9));
    z ^ (z >> 30) ^ (z >> 60)
}

/// Draw bits that make retry `n`'s uniform exactly `(k + 0.5) / 2^53`.
fn draw_for(n: u32, k: u64) -> u64 {
    unmix64(k << 11) ^ JITTER_SALT.wrapping_mul(n as u64)
}

#[test]
fn draw_helper_fixes_the_uniform() {
    for z in [0u64, 1, 0xDEAD_BEEF, u64::MAX] {
        assert_eq!(mix64(unmix64(z)), z);
    }
    let half = 1u64 << 52; // u = (2^52 + 0.5)/2^53 = 0.5 + 2^-54
    assert_eq!(jitter_uniform(draw_for(1, half), 1), 0.5 + 2f64.powi(-54));
}

/// max_attempts 3 = one call + two retries (fixed 500 ms, the default backoff).
#[test]
fn max_attempts_counts_the_first_call() {
    let mut r = retry(|_| {});
    let c = call(1, 0);
    assert_eq!(r.on_call(&c, ms(0)), CallDecision::Pass);
    assert_eq!(r.on_outcome(&c, fail(Upstream5xx), ms(10)), after(500));
    assert_eq!(r.on_outcome(&c, fail(Timeout), ms(520)), after(500));
    assert_eq!(r.on_outcome(&c, fail(Timeout), ms(1030)), up(fail(Timeout)));
    assert_eq!((r.attempts, r.retries, r.exhausted), (3, 2, 1));
    assert_eq!(r.active(), 0);
    // A success ends it at once.
    r.on_call(&call(2, 0), ms(0));
    assert_eq!(r.on_outcome(&call(2, 0), fail(ConnectError), ms(1)), after(500));
    assert_eq!(r.on_outcome(&call(2, 0), Outcome::Success, ms(600)), up(Outcome::Success));
    assert_eq!((r.attempts, r.retries, r.exhausted, r.active()), (5, 3, 1, 0));
}

/// Exponential 100 ms × 2, no jitter: 100, 200 ms. A Retry-After is a lower bound.
#[test]
fn exponential_and_retry_after_lower_bound() {
    let mut r = retry(|s| {
        s.max_attempts = 4;
        s.backoff = Backoff::Exponential {
            wait_duration: d_ms(100),
            exponential_backoff_multiplier: 2.0,
            exponential_max_wait_duration: None,
        };
    });
    let c = call(1, 0);
    r.on_call(&c, ms(0));
    // Retry-After 2 s > 100 ms → 2 s.
    let c429 = CallInfo { retry_after: Some(d_ms(2000)), ..c };
    assert_eq!(r.on_outcome(&c429, Outcome::Rejected(Upstream429), ms(5)), after(2000));
    // Retry-After 50 ms < 200 ms (retry 2) → 200 ms.
    let c429 = CallInfo { retry_after: Some(d_ms(50)), ..c };
    assert_eq!(r.on_outcome(&c429, fail(Upstream429), ms(2100)), after(200));
    // No Retry-After: retry 3 → 400 ms.
    assert_eq!(r.on_outcome(&c, fail(Upstream5xx), ms(2400)), after(400));
    assert_eq!(r.on_outcome(&c, fail(Upstream5xx), ms(2900)), up(fail(Upstream5xx)));
}

/// Jitter at the governor: draws fixed so retry 1's uniform is 0.25 + 2^-54 or 0.5 + 2^-54.
/// Exponential 100 ms × 2 → expo(1) = 100 ms.
#[test]
fn jitter_with_fixed_draws() {
    let quarter = 1u64 << 51;
    let half = 1u64 << 52;
    // (jitter, k, expected delay ns)
    let table = [
        (Jitter::None, half, 100 * MS),
        // floor((0.25 + 2^-54)·1e8) = 25 ms
        (Jitter::Full, quarter, 25 * MS),
        // 50 ms + floor((0.25 + ε)·50 ms) = 62.5 ms
        (Jitter::Equal, quarter, 62_500_000),
        // 100 + floor((0.5 + ε)·(300 − 100)) = 200 ms
        (Jitter::Decorrelated { cap: d_ms(1000) }, half, 200 * MS),
        // capped at 150 ms
        (Jitter::Decorrelated { cap: d_ms(150) }, half, 150 * MS),
    ];
    for (jitter, k, want) in table {
        let mut r = retry(|s| {
            s.backoff = Backoff::Exponential {
                wait_duration: d_ms(100),
                exponential_backoff_multiplier: 2.0,
                exponential_max_wait_duration: None,
            };
            s.jitter = jitter.clone();
        });
        let c = CallInfo { draw: draw_for(1, k), ..call(7, 0) };
        r.on_call(&c, ms(0));
        assert_eq!(
            r.on_outcome(&c, fail(Timeout), ms(1)),
            OutcomeDecision::RetryAfter(SimDuration(want)),
            "{jitter:?}"
        );
    }
}

/// Never retried: an open breaker below, business errors, degraded answers; local
/// refusals not listed (gate_full).
#[test]
fn no_retry_of_breaker_open_business_error_or_unlisted() {
    let mut r = retry(|_| {});
    for (i, o) in [
        Outcome::Rejected(BreakerOpen),
        fail(BusinessError),
        Outcome::Degraded(Timeout),
        Outcome::Rejected(GateFull),
        Outcome::Success,
    ]
    .into_iter()
    .enumerate()
    {
        let c = call(i as u64, 0);
        r.on_call(&c, ms(0));
        assert_eq!(r.on_outcome(&c, o, ms(1)), up(o));
    }
    assert_eq!((r.retries, r.exhausted, r.active()), (0, 0, 0));
    // Validation refuses listing them.
    for bad in ["breaker_open", "business_error"] {
        let text = format!(r#"Retry(name: "r", retry_on: ["timeout", "{bad}"])"#);
        let e = ron::from_str::<RetrySpec>(&text).unwrap_err().to_string();
        assert!(e.contains("never retried"), "{e}");
    }
    let e = ron::from_str::<RetrySpec>(r#"Retry(name: "r", retry_on: ["oops"])"#).unwrap_err();
    assert!(e.to_string().contains("unknown reason \"oops\""), "{e}");
}

/// Total budget 1 s, fixed 400 ms, max_attempts 5.
#[test]
fn total_time_budget() {
    let mut r = retry(|s| {
        s.max_attempts = 5;
        s.backoff = Backoff::Fixed { wait_duration: d_ms(400) };
        s.total_budget = Some(d_ms(1000));
    });
    let c = call(1, 0);
    r.on_call(&c, ms(0));
    assert_eq!(r.on_outcome(&c, fail(Timeout), ms(100)), after(400)); // 500 ≤ 1000
    assert_eq!(r.on_outcome(&c, fail(Timeout), ms(600)), after(400)); // 1000 ≤ 1000
    // (Scripted time: only the arithmetic matters.) 600 ms + 1 ns + 400 ms > 1000 ms.
    assert_eq!(r.on_outcome(&c, fail(Timeout), SimTime(600 * MS + 1)), up(fail(Timeout)));
    assert_eq!((r.retries, r.gave_up_time_budget, r.exhausted), (2, 1, 0));
}

/// docs/domain.md §3.9: P0 retries once (2 attempts), P1 and P2 not at all; a class beyond the
/// list gets the default (3).
#[test]
fn per_class_policy() {
    let spec: RetrySpec = ron::from_str(
        r#"Retry(name: "llm", backoff: Fixed(wait: "1s"), class_policies: [
            (class: "P0", max_attempts: 2),
            (class: "P1", max_attempts: 1),
            (class: "P2", max_attempts: 1, retry_on: ["timeout"]),
        ])"#,
    )
    .unwrap();
    let mut r = Retry::new(&spec, &CLASSES);
    assert_eq!(r.policy(ClassId(2)).retry_on, vec![Timeout]);
    assert_eq!(r.policy(ClassId(0)).backoff, Backoff::Fixed { wait_duration: d_ms(1000) });
    // (class, outcomes in order, expected decisions)
    let p0 = call(1, 0);
    r.on_call(&p0, ms(0));
    assert_eq!(r.on_outcome(&p0, fail(Timeout), ms(1)), after(1000));
    assert_eq!(r.on_outcome(&p0, fail(Timeout), ms(1002)), up(fail(Timeout)));
    for class in [1, 2] {
        let c = call(10 + class as u64, class);
        r.on_call(&c, ms(0));
        assert_eq!(r.on_outcome(&c, fail(Timeout), ms(1)), up(fail(Timeout)));
    }
    let other = call(20, 5);
    r.on_call(&other, ms(0));
    assert_eq!(r.on_outcome(&other, fail(Timeout), ms(1)), after(1000));
    assert_eq!(r.on_outcome(&other, fail(Timeout), ms(1002)), after(1000));
    assert_eq!(r.on_outcome(&other, fail(Timeout), ms(2003)), up(fail(Timeout)));
    // Exhausted: P0 once, P1, P2, class 5.
    assert_eq!((r.retries, r.exhausted), (3, 4));
    // A run-time change of max_attempts reaches the policies that do not set their own:
    // P0 sets 2 (kept); class 5 uses the default (now 1).
    r.set_max_attempts(1);
    assert_eq!(r.policy(ClassId(0)).max_attempts, 2);
    assert_eq!(r.policy(ClassId(5)).max_attempts, 1);
    // Unknown class names are refused.
    let mut bad = spec.clone();
    bad.class_policies[0].class = "VIP".into();
    assert!(bad.check_classes(&CLASSES).unwrap_err().contains("unknown class `VIP`"));
}

/// Each budget kind through the governor (fixed 10 ms, max_attempts 3).
#[test]
fn budgets_through_the_governor() {
    // Ratio 0.5 over 1 s: two calls; the first failure retries (1 ≤ 0.5·2), the second is
    // denied (2 ≤ 1 fails).
    let mut r = retry(|s| {
        s.backoff = Backoff::Fixed { wait_duration: d_ms(10) };
        s.budget = RetryBudgetSpec::Ratio { max_ratio: 0.5, window: d_ms(1000) };
    });
    r.on_call(&call(1, 0), ms(0));
    r.on_call(&call(2, 0), ms(0));
    assert_eq!(r.on_outcome(&call(1, 0), fail(Timeout), ms(1)), after(10));
    assert_eq!(r.on_outcome(&call(2, 0), fail(Timeout), ms(1)), up(fail(Timeout)));
    assert_eq!(r.retries_denied_by_budget, 1);

    // gRPC max 3 (threshold 1.5): failure → 2 > 1.5 retry; failure → 1 ≤ 1.5 denied;
    // a business error costs nothing; two successes → 2.0 > 1.5 allow again.
    let mut r = retry(|s| {
        s.backoff = Backoff::Fixed { wait_duration: d_ms(10) };
        s.budget = RetryBudgetSpec::GrpcTokenBucket { max_tokens: 3.0, token_ratio: 0.5 };
    });
    for i in 1..=5 {
        r.on_call(&call(i, 0), ms(0));
    }
    assert_eq!(r.on_outcome(&call(1, 0), fail(Timeout), ms(1)), after(10));
    assert_eq!(r.on_outcome(&call(2, 0), fail(Timeout), ms(1)), up(fail(Timeout)));
    assert_eq!(r.on_outcome(&call(3, 0), fail(BusinessError), ms(1)), up(fail(BusinessError)));
    assert_eq!(r.budget().milli_tokens(), Some(1000));
    assert_eq!(r.on_outcome(&call(4, 0), Outcome::Success, ms(2)), up(Outcome::Success));
    assert_eq!(r.on_outcome(&call(1, 0), Outcome::Success, ms(12)), up(Outcome::Success));
    assert_eq!(r.budget().milli_tokens(), Some(2000));
    assert_eq!(r.on_outcome(&call(5, 0), fail(Timeout), ms(13)), up(fail(Timeout)));
    // ... that failure took it to 1.0 again: denied.
    assert_eq!(r.retries_denied_by_budget, 2);

    // Envoy 0 % with minimum 1: one retry in flight at a time; its outcome frees the slot.
    let mut r = retry(|s| {
        s.backoff = Backoff::Fixed { wait_duration: d_ms(10) };
        s.budget = RetryBudgetSpec::EnvoyBudget { budget_percent: 0.0, min_retry_concurrency: 1 };
    });
    r.on_call(&call(1, 0), ms(0));
    r.on_call(&call(2, 0), ms(0));
    assert_eq!(r.on_outcome(&call(1, 0), fail(Timeout), ms(1)), after(10));
    assert_eq!(r.on_outcome(&call(2, 0), fail(Timeout), ms(1)), up(fail(Timeout)));
    // Call 1's retry fails: its own slot is released before the check → retry again.
    assert_eq!(r.on_outcome(&call(1, 0), fail(Timeout), ms(20)), after(10));
    assert_eq!(r.budget().retries_in_flight(), Some(1));
    // Forgetting the call (cancelled in backoff) returns the slot.
    r.on_abandon(&call(1, 0), ms(25));
    assert_eq!((r.budget().retries_in_flight(), r.active()), (Some(0), 0));
}

/// The table is bounded: with room for 2, a third call evicts the oldest, whose outcome
/// then passes up un-retried.
#[test]
fn bounded_call_table() {
    let mut r = retry(|s| s.max_tracked_calls = 2);
    r.on_call(&call(1, 0), ms(0));
    r.on_call(&call(2, 0), ms(1));
    r.on_call(&call(3, 0), ms(2));
    assert_eq!((r.active(), r.evicted), (2, 1));
    assert_eq!(r.on_outcome(&call(1, 0), fail(Timeout), ms(3)), up(fail(Timeout)));
    assert_eq!(r.on_outcome(&call(2, 0), fail(Timeout), ms(3)), after(500));
}

/// Eviction follows the smallest (first time, call id) whether the order was kept from the
/// first call or built when the table reached half its bound: the tracked set matches an
/// ordered-set reference after every step (calls of one instant seen in any id order,
/// outcomes in any order, tables of 1 to 64).
#[test]
fn eviction_matches_an_ordered_set_reference() {
    for max in [1u64, 2, 3, 7, 64] {
        let mut r = retry(|s| s.max_tracked_calls = max);
        let mut reference = std::collections::BTreeSet::new(); // (first, id)
        let (mut x, mut now, mut evicted) = (12345u64, 0u64, 0u64);
        for i in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let k = x >> 33;
            if k % 3 == 0 {
                now += k / 3 % 3; // often the same instant
            }
            if k % 5 < 3 || reference.is_empty() {
                // A new call, ids in no particular order.
                let id = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17); // a bijection of i
                if reference.len() as u64 >= max {
                    let oldest = *reference.iter().next().expect("full");
                    reference.remove(&oldest);
                    evicted += 1;
                }
                reference.insert((SimTime(now), CallId(id)));
                r.on_call(&CallInfo::simple(id, 0), SimTime(now));
            } else {
                // An outcome for a tracked call, any of them.
                let pick = (k / 5) as usize % reference.len();
                let e = *reference.iter().nth(pick).expect("in range");
                reference.remove(&e);
                let o = r.on_outcome(&CallInfo::simple(e.1.0, 0), Outcome::Success, SimTime(now));
                assert_eq!(o, up(Outcome::Success));
            }
            assert_eq!((r.active(), r.evicted), (reference.len(), evicted), "max {max}, step {i}");
            for &(first, c) in &reference {
                assert!(r.calls.get(&c).is_some_and(|st| st.first == first), "max {max}, step {i}");
            }
        }
        assert!(r.ordered, "max {max}: the table was half full at some point");
    }
}

/// Every field written out reads back the same (scenario files are also written).
#[test]
fn spec_ron_round_trip() {
    let text = r#"Retry(name: "llm", max_attempts: 2, retry_on: ["timeout", "upstream_429"],
        backoff: Exponential(initial: "1s", multiplier: 3.0, max: "5s"),
        jitter: Decorrelated(cap: "10s"), total_budget: "8s",
        budget: GrpcTokenBucket(max_tokens: 10, token_ratio: 0.1),
        class_policies: [(class: "P1", max_attempts: 1, jitter: Full)])"#;
    let spec: RetrySpec = ron::from_str(text).unwrap();
    assert_eq!(spec.retry_on, vec![Timeout, Upstream429]);
    assert_eq!(spec.total_budget, Some(d_ms(8000)));
    let back: RetrySpec = ron::from_str(&ron::to_string(&spec).unwrap()).unwrap();
    assert_eq!(back, spec);
    let e = ron::from_str::<RetrySpec>(r#"Retry(name: "x", max_attempts: 0)"#).unwrap_err();
    assert!(e.to_string().contains("expected an integer in [1, 100], found 0"), "{e}");
}
