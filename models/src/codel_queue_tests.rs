//! The laws stepped by hand: one permit, dequeues at chosen instants (each `on_outcome` is
//! a permit freed), the drops read from `take_answered`.

use super::*;

const MS_NS: u64 = 1_000_000;

fn ms(n: u64) -> SimTime {
    SimTime(n * MS_NS)
}

fn call(i: u64) -> CallInfo {
    CallInfo::simple(i, 0)
}

fn queue(mode: CodelMode, permits: u64) -> CodelQueue {
    CodelQueue::new(&CodelQueueSpec { mode, ..CodelQueueSpec::defaults("q", permits) })
}

/// Call 0 passes at 0 and calls `1..=n` wait from 0: a standing queue.
fn standing(q: &mut CodelQueue, n: u64) {
    assert_eq!(q.on_call(&call(0), ms(0)), CallDecision::Pass);
    for i in 1..=n {
        assert!(matches!(q.on_call(&call(i), ms(0)), CallDecision::Wait { .. }));
    }
}

/// Frees the permit at each millisecond of `from..=to` (the call in flight completes, the
/// next is dequeued): the instants at which calls were dropped, once per drop.
fn dequeue_every_ms(q: &mut CodelQueue, inflight: &mut CallId, from: u64, to: u64) -> Vec<u64> {
    let mut drops = vec![];
    for t in from..=to {
        q.on_outcome(&CallInfo::simple(inflight.0, 0), Outcome::Success, ms(t));
        let (mut woken, mut answered) = (vec![], vec![]);
        q.take_woken(&mut woken);
        q.take_answered(&mut answered);
        for (_, o) in &answered {
            assert_eq!(*o, Outcome::Rejected(Reason::Shed));
            drops.push(t);
        }
        assert_eq!(woken.len(), 1, "one call admitted at {t} ms");
        *inflight = woken[0];
    }
    drops
}

#[test]
fn the_control_law_is_interval_over_the_root_of_count() {
    let i = SimDuration::from_ms(100);
    assert_eq!(control_law(ms(105), i, 1), ms(205));
    // 100 ms / √2 = 70.710678… ms, truncated to whole nanoseconds.
    assert_eq!(control_law(ms(205), i, 2), SimTime(275_710_678));
}

/// RFC 8289 on a constant standing queue (target 5 ms, interval 100 ms, one dequeue a
/// millisecond, every call enqueued at 0, so a call's sojourn is the instant it leaves):
/// * 1–4 ms: sojourn < target, `first_above_time` stays clear;
/// * 5 ms: sojourn = target is not below it: `first_above_time = 5 + 100 = 105 ms`;
/// * 105 ms: ok to drop, not dropping: drop, enter with count 1 (count − lastcount = 0),
///   `drop_next = 105 + 100/√1 = 205 ms`;
/// * then each drop at the first dequeue ≥ `drop_next`, `count += 1` and `drop_next +=
///   100/√count`: 205 (→ 275.710678), 276 (→ +57.735026 = 333.445704), 334 (→ +50 =
///   383.445704), 384 (→ +44.721359 = 428.167063), 429 (→ +40.824829 = 468.991892), 469
///   (→ +37.796447 = 506.788339), 507 (→ +35.355339 = 542.143678), 543 (→ +33.333333 =
///   575.477011), 576 (→ +31.622776 = 607.099787 > 600).
#[test]
fn rfc8289_drops_a_standing_queue_on_the_control_law() {
    let mut q = queue(CodelMode::Rfc8289, 1);
    standing(&mut q, 2000);
    let mut inflight = CallId(0);
    let drops = dequeue_every_ms(&mut q, &mut inflight, 1, 600);
    assert_eq!(drops, vec![105, 205, 276, 334, 384, 429, 469, 507, 543, 576]);
    assert!(q.dropping());
    assert_eq!((q.dropped, q.admitted), (10, 601));
    assert_eq!(q.waiting(), 2000 - 600 - 10);
}

/// Leaving and re-entering: the episode above drops at 105, 205, 276, 334 (count 4,
/// lastcount 1). At 340 ms every waiter gives up and one fresh call waits; dequeued at
/// 341 ms (sojourn 1 ms < target) it ends the dropping state. 1000 calls wait from 341 ms:
/// sojourn reaches target at 346 ms (`first_above_time = 446`), so at 446 ms the state is
/// entered again with count = count − lastcount = 3 (> 1, and 446 − 383.445704 ms < 16 ×
/// interval): `drop_next = 446 + 100/√3 = 503.735026` → drop at 504, then count 4,
/// `drop_next = 553.735026` → 554. (With count reset to 1 they would be 546 and 617.)
#[test]
fn rfc8289_reenters_with_the_last_episodes_count() {
    let mut q = queue(CodelMode::Rfc8289, 1);
    standing(&mut q, 2000);
    let mut inflight = CallId(0);
    assert_eq!(dequeue_every_ms(&mut q, &mut inflight, 1, 340), vec![105, 205, 276, 334]);
    let waiting: Vec<CallId> = q.queue.iter().map(|w| w.call).collect();
    for c in waiting {
        q.on_abandon(&call(c.0), ms(340));
    }
    assert_eq!(q.waiting(), 0);
    assert!(matches!(q.on_call(&call(5000), ms(340)), CallDecision::Wait { .. }));
    assert_eq!(dequeue_every_ms(&mut q, &mut inflight, 341, 341), Vec::<u64>::new());
    assert!(!q.dropping(), "a sojourn below target leaves the dropping state");
    for i in 0..1000 {
        assert!(matches!(q.on_call(&call(6000 + i), ms(341)), CallDecision::Wait { .. }));
    }
    assert_eq!(dequeue_every_ms(&mut q, &mut inflight, 342, 560), vec![446, 504, 554]);
}

/// With at most one call left waiting the RFC's `bytes() <= maxpacket_` holds: however
/// long the sojourn, nothing is dropped.
#[test]
fn rfc8289_never_drops_the_last_waiting_calls() {
    let mut q = queue(CodelMode::Rfc8289, 1);
    standing(&mut q, 2);
    let mut inflight = CallId(0);
    for t in [500, 900] {
        q.on_outcome(&CallInfo::simple(inflight.0, 0), Outcome::Success, ms(t));
        let mut woken = vec![];
        q.take_woken(&mut woken);
        inflight = woken[0];
    }
    assert_eq!((q.dropped, q.admitted), (0, 3));
}

/// folly `Codel::overloaded` on the same standing queue (one dequeue a millisecond, delay =
/// the instant in whole ms):
/// * 0 ms: call 0 passes, taking the constructor's pending reset (`min_delay = 0`);
/// * 1 ms: `now > interval_time (0)`: reset, `interval_time = 101`, `overloaded = 0 > 5 =
///   false`, `min_delay = 1`;
/// * 102 ms: reset, `interval_time = 202`, `overloaded = 1 > 5 = false`, `min_delay = 102`;
/// * 203 ms: reset, `interval_time = 303`, `overloaded = 102 > 5 = true`, `min_delay = 203`,
///   call 203 kept (the first of an interval always is);
/// * 204 ms: overloaded and 204 > 2 × 5: call 204 is dropped, and so is every later one (all
///   waited 204 ms): 1000 − 203 = 797 drops at once, none admitted.
///
/// A call passing at 304 ms (sojourn 0) closes that interval still overloaded (`min_delay`
/// 203 ms) and resets `min_delay` to 0; the next interval closes (at 405 ms) not overloaded.
#[test]
fn folly_sloughs_every_call_older_than_twice_target_once_overloaded() {
    let mut q = queue(CodelMode::Folly, 1);
    standing(&mut q, 1000);
    let mut inflight = CallId(0);
    assert!(dequeue_every_ms(&mut q, &mut inflight, 1, 203).is_empty());
    assert!(q.dropping(), "overloaded from 203 ms");
    q.on_outcome(&CallInfo::simple(inflight.0, 0), Outcome::Success, ms(204));
    let (mut woken, mut answered) = (vec![], vec![]);
    q.take_woken(&mut woken);
    q.take_answered(&mut answered);
    assert!(woken.is_empty());
    assert_eq!(answered.len(), 797);
    assert_eq!(answered[0].0, CallId(204));
    assert_eq!((q.waiting(), q.in_use(), q.dropped), (0, 0, 797));
    assert_eq!(q.on_call(&call(2000), ms(304)), CallDecision::Pass);
    assert!(q.dropping(), "the interval to 303 ms had min_delay 203 ms");
    q.on_outcome(&call(2000), Outcome::Success, ms(305));
    assert_eq!(q.on_call(&call(2001), ms(405)), CallDecision::Pass);
    assert!(!q.dropping(), "the interval to 404 ms had min_delay 0");
}

/// folly truncates the delay to whole milliseconds: overloaded, a call that waited 10.9 ms
/// (10 ms, not above 2 × 5 ms) is kept, one that waited 11 ms is dropped.
#[test]
fn folly_judges_whole_milliseconds() {
    let mut q = queue(CodelMode::Folly, 1);
    q.folly = Folly {
        min_delay: SimDuration::ZERO,
        interval_time: ms(1000),
        reset_delay: false,
        overloaded: true,
    };
    assert_eq!(q.on_call(&call(0), ms(0)), CallDecision::Pass);
    assert!(matches!(q.on_call(&call(1), ms(0)), CallDecision::Wait { .. }));
    assert!(matches!(q.on_call(&call(2), ms(0)), CallDecision::Wait { .. }));
    q.on_outcome(&call(0), Outcome::Success, SimTime(10_900_000));
    q.on_outcome(&call(1), Outcome::Success, SimTime(11_000_000));
    let (mut woken, mut answered) = (vec![], vec![]);
    q.take_woken(&mut woken);
    q.take_answered(&mut answered);
    assert_eq!(woken, vec![CallId(1)]);
    assert_eq!(answered, vec![(CallId(2), Outcome::Rejected(Reason::Shed))]);
}

/// "Fail at Scale": the timeout set at enqueue is N = interval unless the queue has not been
/// empty since before `now − interval`, then M = target; a call abandoned at its deadline
/// counts as dropped.
#[test]
fn fail_at_scale_sets_the_timeout_at_enqueue() {
    let mut q = queue(CodelMode::FailAtScale, 1);
    let wait =
        |d: u64| CallDecision::Wait { deadline: Some(SimTime(d)), on_deadline: Reason::Shed };
    assert_eq!(q.on_call(&call(0), ms(0)), CallDecision::Pass);
    // Empty queue: last empty now → N.
    assert_eq!(q.on_call(&call(1), ms(0)), wait(100 * MS_NS));
    // Not empty since 0: 0 < 50 − 100 is false → N; 0 < 100 − 100 is false → N.
    assert_eq!(q.on_call(&call(2), ms(50)), wait(150 * MS_NS));
    assert_eq!(q.on_call(&call(3), ms(100)), wait(200 * MS_NS));
    assert!(!q.dropping());
    // 0 < 101 − 100: M.
    assert_eq!(q.on_call(&call(4), ms(101)), wait(106 * MS_NS));
    assert!(q.dropping());
    q.on_abandon(&call(1), ms(100));
    q.on_abandon(&call(4), ms(106));
    assert_eq!(q.dropped, 2);
    // A cancellation before the deadline is not a drop.
    q.on_abandon(&call(3), ms(120));
    assert_eq!(q.dropped, 2);
    q.on_outcome(&call(0), Outcome::Success, ms(130));
    let mut woken = vec![];
    q.take_woken(&mut woken);
    assert_eq!(woken, vec![CallId(2)]);
    // The queue emptied at 130 ms: a call at 140 ms finds it empty → N again.
    assert_eq!(q.on_call(&call(5), ms(140)), wait(240 * MS_NS));
    assert_eq!(q.on_call(&call(6), ms(239)), wait(339 * MS_NS));
    assert_eq!(q.on_call(&call(7), ms(241)), wait(246 * MS_NS));
}

/// Adaptive LIFO (threshold 2): with 3 waiting the newest is taken, with 2 the oldest.
#[test]
fn adaptive_lifo_takes_the_newest_above_the_threshold() {
    let mut q = queue(CodelMode::FailAtScale, 1);
    q.set_lifo_threshold(2);
    assert_eq!(q.on_call(&call(0), ms(0)), CallDecision::Pass);
    for i in 1..=3 {
        assert!(matches!(q.on_call(&call(i), ms(1)), CallDecision::Wait { .. }));
    }
    let mut woken = vec![];
    for (t, done) in [(2, 0), (3, 3), (4, 1)] {
        q.on_outcome(&call(done), Outcome::Success, ms(t));
        q.take_woken(&mut woken);
    }
    assert_eq!(woken, vec![CallId(3), CallId(1), CallId(2)]);
    assert_eq!(q.lifo_takes, 1);
}

/// `max_queue` refuses at once; an admitted call abandoned before it resumed gives its
/// permit back (to the next waiter); raising the permits admits waiters.
#[test]
fn bounds_abandons_and_permit_changes() {
    let mut q =
        CodelQueue::new(&CodelQueueSpec { max_queue: 2, ..CodelQueueSpec::defaults("q", 1) });
    assert_eq!(q.on_call(&call(0), ms(0)), CallDecision::Pass);
    assert!(matches!(q.on_call(&call(1), ms(0)), CallDecision::Wait { deadline: None, .. }));
    assert!(matches!(q.on_call(&call(2), ms(0)), CallDecision::Wait { .. }));
    assert_eq!(q.on_call(&call(3), ms(0)), CallDecision::Reject(Reason::QueueFull));
    q.on_outcome(&call(0), Outcome::Success, ms(1));
    q.on_abandon(&call(1), ms(1));
    let mut woken = vec![];
    q.take_woken(&mut woken);
    assert_eq!(woken, vec![CallId(2)]);
    assert!(matches!(q.on_call(&call(4), ms(2)), CallDecision::Wait { .. }));
    assert!(matches!(q.on_call(&call(5), ms(2)), CallDecision::Wait { .. }));
    q.set_permits(3, ms(3));
    q.take_woken(&mut woken);
    assert_eq!(woken, vec![CallId(2), CallId(4), CallId(5)]);
    assert_eq!((q.in_use(), q.admitted, q.returned, q.queue_full), (3, 5, 2, 1));
}
