//! GAIE's flow control stepped by hand: calls queued at chosen instants, slots freed by
//! outcomes (`on_outcome`), the dispatched calls read from `take_woken` and the evicted ones
//! from `take_answered`.

use super::*;
use crate::ids::ClassId;

const MS_NS: u64 = 1_000_000;
/// Class indices: `gold` priority 10, `std` not listed (default 0), `batch` −1 (sheddable).
const CLASSES: [&str; 3] = ["gold", "std", "batch"];
const GOLD: u16 = 0;
const STD: u16 = 1;
const BATCH: u16 = 2;

fn ms(n: u64) -> SimTime {
    SimTime(n * MS_NS)
}

fn call(i: u64, class: u16, user: u64) -> CallInfo {
    CallInfo { user, ..CallInfo::simple(i, class) }
}

fn controller(limit: u64, edit: impl FnOnce(&mut FlowControllerSpec)) -> FlowController {
    let mut spec = FlowControllerSpec::defaults("f", limit, &[("gold", 10), ("batch", -1)]);
    edit(&mut spec);
    assert_eq!(spec.check(&CLASSES), Ok(()));
    FlowController::new(&spec, &CLASSES)
}

fn waits(d: CallDecision) -> bool {
    d == CallDecision::Wait { deadline: None, on_deadline: Reason::Timeout }
}

/// Call `done` returns at `t`: the calls dispatched and those answered from here.
fn release(f: &mut FlowController, done: u64, t: SimTime) -> (Vec<u64>, Vec<(u64, Outcome)>) {
    f.on_outcome(&CallInfo::simple(done, 0), Outcome::Success, t);
    let (mut woken, mut answered) = (vec![], vec![]);
    f.take_woken(&mut woken);
    f.take_answered(&mut answered);
    (woken.iter().map(|c| c.0).collect(), answered.iter().map(|(c, o)| (c.0, *o)).collect())
}

/// Limit 1, one call in flight; each release dispatches one: the dispatch order.
fn drain_order(f: &mut FlowController, mut inflight: u64, n: usize) -> Vec<u64> {
    let mut order = vec![];
    for k in 0..n {
        let (woken, answered) = release(f, inflight, ms(1 + k as u64));
        assert!(answered.is_empty());
        assert_eq!(woken.len(), 1, "one dispatched per freed slot");
        inflight = woken[0];
        order.push(inflight);
    }
    order
}

/// `dispatchCycle`: the highest band first; within the gold band round robin over users 1
/// and 2; within a flow FCFS. Call 0 (std, user 9) is in flight; queued at 0 in this order:
/// std 1 (user 1), gold 2 (user 1), std 3 (user 1), gold 4 (user 2), gold 5 (user 1).
/// Gold flows [1, 2], index −1: user 1 (2), user 2 (4), user 1 (5). Std flows [1, 9]: call
/// 0 left its index at 0 when flows were [9]; user 1 joined at index 0, so the next is index
/// 1 (user 9, empty), then index 0: 1, 3.
#[test]
fn bands_go_highest_first_flows_round_robin_and_fcfs_within_a_flow() {
    let mut f = controller(1, |_| {});
    assert_eq!(f.on_call(&call(0, STD, 9), ms(0)), CallDecision::Pass);
    for (i, class, user) in [(1, STD, 1), (2, GOLD, 1), (3, STD, 1), (4, GOLD, 2), (5, GOLD, 1)] {
        assert!(waits(f.on_call(&call(i, class, user), ms(0))));
    }
    assert!(f.saturated());
    assert_eq!(drain_order(&mut f, 0, 5), vec![2, 4, 5, 1, 3]);
    assert_eq!((f.dispatched, f.queued, f.queue_len()), (6, 5, 0));
}

/// One band, three flows queued behind call 0 (user 9): users 1 (calls 1, 2, 3), 2 (4) and 3
/// (5, 6), arriving in that order.
/// * `ROUND_ROBIN` (`SelectNextQueue`): flows [1, 2, 3, 9], the index left at 0 by call 0
///   (flows were [9]): indices 1 (4), 2 (5), 3 empty, 0 (1), 1 empty, 2 (6), 3, 0 (2), …, 0
///   (3).
/// * `GLOBAL_STRICT` (`BestHead`, FCFS heads): the band's oldest head, i.e. arrival order.
/// * `flow_key: CLASS`: one flow, FCFS whatever the fairness.
#[test]
fn fairness_between_flows_of_a_band() {
    for (fairness, key, want) in [
        (Fairness::RoundRobin, FlowKey::User, vec![4, 5, 1, 6, 2, 3]),
        (Fairness::GlobalStrict, FlowKey::User, vec![1, 2, 3, 4, 5, 6]),
        (Fairness::RoundRobin, FlowKey::Class, vec![1, 2, 3, 4, 5, 6]),
    ] {
        let mut f = controller(1, |s| {
            s.fairness = fairness;
            s.flow_key = key;
        });
        assert_eq!(f.on_call(&call(0, STD, 9), ms(0)), CallDecision::Pass);
        for (i, user) in [(1, 1), (2, 1), (3, 1), (4, 2), (5, 3), (6, 3)] {
            assert!(waits(f.on_call(&call(i, STD, user), ms(i))));
        }
        assert_eq!(drain_order(&mut f, 0, 6), want, "{fairness:?} {key:?}");
    }
}

/// `rejectIfSheddableAndSaturated`: priority < 0 is refused at once when in flight ≥ limit,
/// admitted (dispatched at once) when not; other bands queue. Limit 2.
#[test]
fn sheddable_calls_are_shed_only_under_saturation() {
    let mut f = controller(2, |_| {});
    let shed = CallDecision::Reject(Reason::Shed);
    assert_eq!(f.on_call(&call(0, BATCH, 0), ms(0)), CallDecision::Pass);
    assert_eq!(f.on_call(&call(1, BATCH, 0), ms(0)), CallDecision::Pass);
    assert_eq!(f.on_call(&call(2, BATCH, 0), ms(0)), shed);
    assert!(waits(f.on_call(&call(3, STD, 0), ms(0))));
    assert!(waits(f.on_call(&call(4, GOLD, 0), ms(0))));
    assert_eq!(release(&mut f, 0, ms(1)).0, vec![4]);
    assert_eq!(f.on_call(&call(5, BATCH, 0), ms(1)), shed);
    assert_eq!(release(&mut f, 1, ms(2)).0, vec![3]);
    assert_eq!(release(&mut f, 4, ms(3)).0, Vec::<u64>::new());
    assert!(!f.saturated());
    assert_eq!(f.on_call(&call(6, BATCH, 0), ms(3)), CallDecision::Pass);
    assert_eq!((f.shed_sheddable, f.dispatched, f.queued, f.in_flight()), (2, 5, 2, 2));
}

/// The expiry scan (`runExpiryCleanup` every 10 ms from 0, `checkItemExpiry`'s `now −
/// enqueue > ttl`, ttl 100 ms): a call enqueued at e is evicted at the first tick strictly
/// after e + 100 ms: 3 → 110, 10 → 120 (at 110 its age is 100, not above), 15 → 120, 20 →
/// 130. A call enqueued with ttl 0 (changed at run time) never expires.
#[test]
fn ttl_evictions_happen_at_the_scan_ticks() {
    let mut f = controller(1, |s| {
        s.ttl = SimDuration::from_ms(100);
        s.expiry_cleanup_interval = SimDuration::from_ms(10);
    });
    assert_eq!(f.on_call(&call(0, STD, 0), ms(0)), CallDecision::Pass);
    assert_eq!(f.wake_at(), None);
    for (i, t) in [(1, 3), (2, 10), (3, 15), (4, 20)] {
        assert!(waits(f.on_call(&call(i, STD, i), ms(t))));
    }
    f.set_ttl(SimDuration::ZERO);
    assert!(waits(f.on_call(&call(5, GOLD, 0), ms(21))));
    let mut evicted = vec![];
    while let Some(t) = f.wake_at() {
        f.on_wake(t);
        let mut answered = vec![];
        f.take_answered(&mut answered);
        for (c, o) in answered {
            assert_eq!(o, Outcome::Rejected(Reason::Timeout));
            evicted.push((c.0, t.0 / MS_NS));
        }
    }
    assert_eq!(evicted, vec![(1, 110), (2, 120), (3, 120), (4, 130)]);
    assert_eq!((f.evicted_ttl, f.queue_len()), (4, 1));
    assert_eq!(release(&mut f, 0, ms(5000)).0, vec![5]);
}

/// At dispatch (`dispatchItem` → `checkItemExpiry`): the selected gold call 1 (enqueued at
/// 0) is 105 ms old at 105 ms, above the 100 ms TTL, so it is evicted and the cycle goes on
/// to the *next band*: std call 2 (85 ms old) is dispatched although gold call 3 waits. The
/// next slot goes to call 3; an age equal to the TTL is not expired (call 4, 100 ms old).
#[test]
fn an_expired_head_is_evicted_at_dispatch_and_the_cycle_moves_down_a_band() {
    let mut f = controller(1, |s| s.ttl = SimDuration::from_ms(100));
    assert_eq!(f.on_call(&call(0, STD, 0), ms(0)), CallDecision::Pass);
    assert!(waits(f.on_call(&call(1, GOLD, 0), ms(0))));
    assert!(waits(f.on_call(&call(2, STD, 0), ms(20))));
    assert!(waits(f.on_call(&call(3, GOLD, 0), ms(50))));
    assert_eq!(f.wake_at(), Some(ms(1000)), "the first scan tick after 100 ms");
    let (woken, answered) = release(&mut f, 0, ms(105));
    assert_eq!((woken, answered), (vec![2], vec![(1, Outcome::Rejected(Reason::Timeout))]));
    assert_eq!(release(&mut f, 2, ms(106)).0, vec![3]);
    assert!(waits(f.on_call(&call(4, GOLD, 0), ms(110))));
    assert_eq!(release(&mut f, 3, ms(210)).0, vec![4]);
    assert_eq!((f.evicted_ttl, f.dispatched), (1, 4));
}

/// `hasCapacity`: the band's bound (2) and the global one (3), checked at arrival; the
/// sheddable check comes first.
#[test]
fn full_bands_and_a_full_controller_refuse_arrivals() {
    let mut f = controller(1, |s| {
        s.band_max_queue = 2;
        s.max_queue = 3;
    });
    let full = CallDecision::Reject(Reason::QueueFull);
    assert_eq!(f.on_call(&call(0, STD, 0), ms(0)), CallDecision::Pass);
    assert!(waits(f.on_call(&call(1, GOLD, 0), ms(0))));
    assert!(waits(f.on_call(&call(2, GOLD, 0), ms(0))));
    assert_eq!(f.on_call(&call(3, GOLD, 0), ms(0)), full);
    assert!(waits(f.on_call(&call(4, STD, 0), ms(0))));
    assert_eq!(f.on_call(&call(5, STD, 0), ms(0)), full);
    assert_eq!(f.on_call(&call(6, BATCH, 0), ms(0)), CallDecision::Reject(Reason::Shed));
    assert_eq!(release(&mut f, 0, ms(1)).0, vec![1]);
    assert!(waits(f.on_call(&call(7, GOLD, 0), ms(1))));
    assert_eq!((f.rejected_full, f.shed_sheddable), (2, 1));
}

/// A queued call cancelled leaves its queue; a call dispatched but abandoned before it
/// resumed frees its slot for the next; raising the limit dispatches.
#[test]
fn abandons_and_limit_changes() {
    let mut f = controller(1, |_| {});
    assert_eq!(f.on_call(&call(0, STD, 0), ms(0)), CallDecision::Pass);
    for i in 1..=4 {
        assert!(waits(f.on_call(&call(i, STD, 0), ms(0))));
    }
    f.on_abandon(&call(1, STD, 0), ms(1));
    f.on_outcome(&call(0, STD, 0), Outcome::Success, ms(2));
    f.on_abandon(&call(2, STD, 0), ms(2));
    let mut woken = vec![];
    f.take_woken(&mut woken);
    assert_eq!(woken, vec![CallId(3)]);
    f.set_limit(3, ms(3));
    f.take_woken(&mut woken);
    assert_eq!(woken, vec![CallId(3), CallId(4)]);
    assert_eq!((f.in_flight(), f.dispatched, f.returned, f.queue_len()), (2, 4, 2, 0));
}

/// Closed form: strict priority, deterministic service. Limit 1, one call in flight from 0,
/// n = 4 gold and m = 3 std calls queued at 0 (interleaved), each served for S = 7 ms (the
/// k-th slot frees at k·S). Bands are strict and each band here is one flow, so the k-th
/// dispatch (at k·S) is the k-th gold call for k ≤ n and the (k − n)-th std call after:
/// gold call i waits i·S, std call j waits (n + j)·S. Summed: gold waits S·n(n+1)/2 =
/// 70 ms (mean (n+1)S/2 = 17.5 ms), std waits S·(m·n + m(m+1)/2) = 126 ms (mean
/// (2n+m+1)S/2 = 42 ms): the gold band's wait does not depend on m.
#[test]
fn strict_priority_waits_match_the_closed_form() {
    let (n, m, s) = (4u64, 3u64, 7u64);
    let mut f = controller(1, |_| {});
    assert_eq!(f.on_call(&call(0, STD, 0), ms(0)), CallDecision::Pass);
    let mut class_of = BTreeMap::new();
    for i in 1..=n + m {
        let class = if i % 2 == 0 && i / 2 <= m { STD } else { GOLD };
        class_of.insert(i, class);
    }
    assert_eq!(class_of.values().filter(|c| **c == GOLD).count() as u64, n);
    for (&i, &class) in &class_of {
        assert!(waits(f.on_call(&call(i, class, 0), ms(0))));
    }
    let (mut inflight, mut gold, mut low) = (0, vec![], vec![]);
    for k in 1..=n + m {
        let (woken, _) = release(&mut f, inflight, ms(k * s));
        inflight = woken[0];
        let wait = k * s; // enqueued at 0, dispatched at k·S
        if class_of[&inflight] == GOLD { gold.push(wait) } else { low.push(wait) }
    }
    let expected_gold: Vec<u64> = (1..=n).map(|i| i * s).collect();
    let expected_std: Vec<u64> = (1..=m).map(|j| (n + j) * s).collect();
    assert_eq!((gold.clone(), low.clone()), (expected_gold, expected_std));
    assert_eq!(gold.iter().sum::<u64>(), s * n * (n + 1) / 2);
    assert_eq!(low.iter().sum::<u64>(), s * (m * n + m * (m + 1) / 2));
    assert_eq!((gold.iter().sum::<u64>(), low.iter().sum::<u64>()), (70, 126));
}

/// Classes map to bands (unknown: `default_priority`); an unknown class name is refused.
#[test]
fn classes_map_to_bands_and_unknown_names_are_refused() {
    let f = controller(1, |s| s.default_priority = 3);
    let band = |c: u16| f.priority_of(&CallInfo { class: ClassId(c), ..CallInfo::simple(0, 0) });
    assert_eq!((band(GOLD), band(STD), band(BATCH), band(9)), (10, 3, -1, 3));
    let mut spec = FlowControllerSpec::defaults("f", 1, &[("vip", 1)]);
    let (field, m) = spec.check(&CLASSES).unwrap_err();
    assert_eq!(field, "priorities");
    assert!(m.contains("unknown class `vip`"), "{m}");
    spec.priorities.clear();
    assert_eq!(spec.check(&CLASSES), Ok(()));
}
