//! Table tests of the rate limiter, each expected value derived by hand from
//! `AtomicRateLimiter` (`calculateNextState`, `nanosToWaitForPermission`,
//! `reservePermissions`, `waitForPermissionIfNecessary`).

use super::*;

fn call(i: u64) -> CallInfo {
    CallInfo::simple(i, 0)
}

fn limiter(limit: u64, period_ns: u64, timeout_ns: u64, mode: RateLimiterMode) -> RateLimiter {
    RateLimiter::new(&RateLimiterSpec {
        name: "r".into(),
        limit_for_period: limit,
        limit_refresh_period: SimDuration(period_ns),
        timeout_duration: SimDuration(timeout_ns),
        mode,
    })
}

const WAIT: CallDecision = CallDecision::Wait { deadline: None, on_deadline: Reason::RateLimited };
const REJECT: CallDecision = CallDecision::Reject(Reason::RateLimited);

/// `calculateNextState`'s refresh, limit 2, period 100 ns: (cycle, permissions) of the last
/// call, now → (cycle, permissions).
#[test]
fn refresh_table() {
    type State = (u64, i64);
    let rows: &[(State, u64, State)] = &[
        // Same cycle: untouched.
        ((0, 2), 0, (0, 2)),
        ((0, -3), 99, (0, -3)),
        // Two cycles on: min(−3 + 2·2, 2) = 1 (the debt is paid first).
        ((0, -3), 250, (2, 1)),
        // Ten cycles on from 1 left: min(1 + 20, 2) = 2 (never beyond the limit).
        ((0, 1), 1000, (10, 2)),
        // One cycle on, deep in debt: min(−10 + 2, 2) = −8.
        ((0, -10), 150, (1, -8)),
    ];
    for &((c, p), now, want) in rows {
        assert_eq!(refresh(2, 100, c, p, now), want, "from ({c}, {p}) at {now}");
    }
}

/// `nanosToWaitForPermission`, limit 2, period 100 ns, at t = 30 (70 ns to the next cycle):
/// x = −(p + 2 − 1), full cycles = (x + 1) / 2 truncated.
#[test]
fn wait_table() {
    let rows: &[(i64, u64)] = &[
        (2, 0),    // a permission free
        (1, 0),    // the last one
        (0, 70),   // x = −1 → 0 full cycles: the next cycle's first permit
        (-1, 70),  // x = 0 → 0: the next cycle's second permit
        (-2, 170), // x = 1 → (1 + 1)/2 = 1 full cycle more
        (-3, 170), // x = 2 → 3/2 = 1
        (-4, 270), // x = 3 → 4/2 = 2
    ];
    for &(p, want) in rows {
        assert_eq!(nanos_to_wait(2, 100, p, 30), want, "permissions {p}");
    }
    // At a cycle's first instant the whole cycle is ahead: 100 ns.
    assert_eq!(nanos_to_wait(2, 100, 0, 200), 100);
    // Limit 5: x = −(0 + 5 − 1) = −4 → (−4 + 4)/5 = 0: the next cycle.
    assert_eq!(nanos_to_wait(5, 100, 0, 20), 80);
}

/// Limit 2 per 100 ns, timeout 150 ns, `Reactive`. Step by step (p = permissions after):
/// t=10: #1 pass (p 1), #2 pass (p 0); #3 wait 90 ≤ 150 → reserve (p −1, at 100);
/// #4 wait 90 (x = 0) → reserve (p −2, at 100); #5 wait 190 > 150 → refused, p stays −2.
/// t=60: #6 wait 40 + 100 = 140 → reserve (p −3, at 200).
/// t=120 (cycle 1: min(−3 + 2, 2) = −1): #7 wait 80 → reserve (p −2, at 200).
/// t=450 (cycle 4: min(−2 + 6, 2) = 2): #8 passes (p 1).
#[test]
fn scripted_reactive() {
    let mut r = limiter(2, 100, 150, RateLimiterMode::Reactive);
    let t = SimTime;
    assert_eq!(r.on_call(&call(1), t(10)), CallDecision::Pass);
    assert_eq!(r.on_call(&call(2), t(10)), CallDecision::Pass);
    assert_eq!(r.on_call(&call(3), t(10)), WAIT);
    assert_eq!(r.on_call(&call(4), t(10)), WAIT);
    assert_eq!(r.on_call(&call(5), t(10)), REJECT);
    assert_eq!((r.permissions(), r.wake_at()), (-2, Some(t(100))));
    assert_eq!(r.on_call(&call(6), t(60)), WAIT);
    r.on_wake(t(100));
    let mut woken = vec![];
    r.take_woken(&mut woken);
    assert_eq!(woken, [CallId(3), CallId(4)]);
    assert_eq!(r.on_call(&call(7), t(120)), WAIT);
    assert_eq!((r.permissions(), r.wake_at(), r.waiting()), (-2, Some(t(200)), 2));
    r.on_wake(t(200));
    r.take_woken(&mut woken);
    assert_eq!(woken, [CallId(3), CallId(4), CallId(6), CallId(7)], "arrival order at a tie");
    assert_eq!(r.on_call(&call(8), t(450)), CallDecision::Pass);
    assert_eq!(r.permissions(), 1);
    assert_eq!((r.passed, r.reserved_calls, r.rejected), (3, 4, 1));
}

/// `Blocking` (`acquirePermission`): the refused call waits out the timeout
/// (`waitForPermission(timeoutInNanos); return false`), and takes no permit.
#[test]
fn blocking_refusal_waits_the_timeout() {
    let mut r = limiter(1, 100, 150, RateLimiterMode::Blocking);
    let t = SimTime;
    assert_eq!(r.on_call(&call(1), t(10)), CallDecision::Pass);
    assert_eq!(r.on_call(&call(2), t(10)), WAIT); // wait 90, p −1
    // p −1, limit 1: x = 1 → 1 full cycle: 190 > 150.
    let refused = CallDecision::Wait { deadline: Some(t(160)), on_deadline: Reason::RateLimited };
    assert_eq!(r.on_call(&call(3), t(10)), refused);
    assert_eq!((r.permissions(), r.waiting(), r.wake_at()), (-1, 2, Some(t(100))));
    r.on_abandon(&call(3), t(160)); // the world's deadline
    assert_eq!(r.waiting(), 1);
    // Timeout 0: refused at once whatever the mode.
    r.set_timeout_duration(SimDuration::ZERO);
    assert_eq!(r.on_call(&call(4), t(20)), REJECT);
    assert_eq!((r.passed, r.reserved_calls, r.rejected), (1, 1, 2));
}

/// A cancelled reservation stays consumed: limit 1 per 100 ns, timeout 1000. #2 reserves
/// (p −1) and is cancelled; #3 then finds p −1: x = 1 → 1 full cycle → 200, not 100.
#[test]
fn cancelled_reservation_is_not_returned() {
    let mut r = limiter(1, 100, 1000, RateLimiterMode::Reactive);
    let t0 = SimTime(0);
    assert_eq!(r.on_call(&call(1), t0), CallDecision::Pass);
    assert_eq!(r.on_call(&call(2), t0), WAIT);
    r.on_abandon(&call(2), t0);
    assert_eq!((r.waiting(), r.wake_at()), (0, None));
    assert_eq!(r.on_call(&call(3), t0), WAIT);
    assert_eq!(r.wake_at(), Some(SimTime(200)));
}

/// `changeLimitForPeriod`: limit 2 → 5 mid-cycle (p 0): the next call's wait is computed
/// with 5 (x = −4 → 0 cycles: 80 ns), the refresh at cycle 1 gives min(−1 + 5, 5) = 4.
/// Lowered to 1 in cycle 1: this cycle's permissions stay (3 → pass, p 2); cycle 2 refreshes
/// to min(2 + 1, 1) = 1; then p 0 → the next call waits for cycle 3 (x = 0 → 80 ns).
#[test]
fn limit_changes_apply_from_the_next_refresh() {
    let mut r = limiter(2, 100, 1000, RateLimiterMode::Reactive);
    let t = SimTime;
    assert_eq!(r.on_call(&call(1), t(10)), CallDecision::Pass);
    assert_eq!(r.on_call(&call(2), t(10)), CallDecision::Pass);
    r.set_limit_for_period(5);
    assert_eq!(r.on_call(&call(3), t(20)), WAIT);
    assert_eq!((r.permissions(), r.wake_at()), (-1, Some(t(100))));
    r.on_wake(t(100));
    assert_eq!(r.on_call(&call(4), t(100)), CallDecision::Pass);
    assert_eq!(r.permissions(), 3);
    r.set_limit_for_period(1);
    assert_eq!(r.on_call(&call(5), t(150)), CallDecision::Pass);
    assert_eq!(r.permissions(), 2);
    assert_eq!(r.on_call(&call(6), t(210)), CallDecision::Pass);
    assert_eq!(r.permissions(), 0);
    assert_eq!(r.on_call(&call(7), t(220)), WAIT);
    assert_eq!(r.wake_at(), Some(t(300)));
}

/// `RateLimiterConfig.ofDefaults()`: 50 permits per 500 ns, timeout 5 s; `acquirePermission`.
#[test]
fn defaults_are_the_library_s() {
    let s: RateLimiterSpec = ron::from_str("RateLimiter(name: \"r\")").expect("valid");
    assert_eq!(s, RateLimiterSpec::defaults("r"));
    assert_eq!(
        (s.limit_for_period, s.limit_refresh_period, s.timeout_duration, s.mode),
        (50, SimDuration(500), SimDuration::from_secs(5), RateLimiterMode::Blocking)
    );
    let bad = ron::from_str::<RateLimiterSpec>("RateLimiter(name: \"r\", limit_for_period: 0)");
    assert!(bad.is_err());
    let bad =
        ron::from_str::<RateLimiterSpec>("RateLimiter(name: \"r\", limit_refresh_period: \"0s\")");
    assert!(bad.is_err());
}
