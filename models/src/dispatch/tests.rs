//! Scripted tests of the dispatcher; every expected value is derived by hand in a comment.

use super::*;

const P0: ClassId = ClassId(0);
const P1: ClassId = ClassId(1);
const P2: ClassId = ClassId(2);

fn ms(x: u64) -> SimTime {
    SimTime(x * 1_000_000)
}

fn spec(policy: DispatchPolicy, caps: [u64; 3], overflow: [Overflow; 3]) -> DispatcherSpec {
    DispatcherSpec {
        name: "entry".into(),
        queues: (0..3)
            .map(|c| ClassQueueSpec {
                class: format!("P{c}"),
                capacity: caps[c],
                overflow: overflow[c],
                max_queue_wait: None,
            })
            .collect(),
        policy,
        defer: DeferSpec::default(),
    }
}

fn polling() -> DispatchPolicy {
    DispatchPolicy::WeightedPolling {
        poll_every: vec![1, 3, 7],
        rounds: 100,
        idle_sleep: SimDuration::from_ms(5),
        final_poll: SimDuration::from_ms(50),
    }
}

fn new(policy: DispatchPolicy) -> Dispatcher<u32> {
    Dispatcher::new(&spec(policy, [100; 3], [Overflow::Reject; 3]), SimTime::ZERO)
}

fn picks(d: &mut Dispatcher<u32>, n: usize, now: SimTime) -> Vec<u16> {
    (0..n).map(|_| d.next(now).expect("a task").class.0).collect()
}

fn fill(d: &mut Dispatcher<u32>, class: ClassId, n: u32, now: SimTime) {
    for k in 0..n {
        assert_eq!(d.submit(k, class, now), Admission::Queued);
    }
}

/// The sources' loop (docs/domain.md §3.3) with all queues full: `i` restarts at 0 after every returned task and
/// iteration 0 polls P0 first, so 20 picks are 20 × P0 — "weighted" polling is strict under
/// load. With P0 empty, iteration 0 polls P1 before P2: P1 until it is empty, then P2.
#[test]
fn polling_under_load_is_strict() {
    let mut d = new(polling());
    for c in [P0, P1, P2] {
        fill(&mut d, c, 25, SimTime::ZERO);
    }
    assert_eq!(picks(&mut d, 20, SimTime::ZERO), vec![0; 20]);

    let mut d = new(polling());
    fill(&mut d, P1, 3, SimTime::ZERO);
    fill(&mut d, P2, 3, SimTime::ZERO);
    assert_eq!(picks(&mut d, 6, SimTime::ZERO), vec![1, 1, 1, 2, 2, 2]);
    // All empty: iteration 0 at t = 0 finds nothing and the loop sleeps.
    assert_eq!(d.next(SimTime::ZERO), None);
    assert_eq!(d.wake_at(), None);
}

/// The 5 ms idle sleep. The loop starts at 0; iteration 0 finds nothing, sleeps to 5 ms.
/// Iteration i runs at 5·i ms; P0 is polled every iteration, P1 at i ∈ {0, 3, 6, …},
/// P2 at i ∈ {0, 7, 14, …}. An arrival at 1 ms is therefore taken at 5 ms (P0),
/// 15 ms (P1, i = 3) or 35 ms (P2, i = 7).
#[test]
fn polling_idle_sleep_delays_arrivals() {
    for (class, expect) in [(P0, ms(5)), (P1, ms(15)), (P2, ms(35))] {
        let mut d = new(polling());
        assert_eq!(d.next(SimTime::ZERO), None);
        assert_eq!(d.submit(7, class, ms(1)), Admission::Queued);
        assert_eq!(d.wake_at(), Some(expect));
        // Still asleep one nanosecond before.
        assert_eq!(d.next(SimTime(expect.as_ns() - 1)), None);
        let got = d.next(expect).expect("taken when the sleep ends");
        assert_eq!((got.class, got.enqueued_at), (class, ms(1)));
    }
}

/// After 100 empty iterations (0..=99 at 0..=495 ms, the last sleep ends at 500 ms) the loop
/// blocks on P0 for 50 ms: a P0 arriving at 520 ms is taken at once, a P1 waits until the
/// poll times out at 550 ms and iteration 0 restarts. A full idle cycle is 550 ms, so an
/// arrival at 10 001 ms falls in cycle 18 (18 × 550 = 9 900 ms), 101 ms in: iterations 0..=20
/// ran (the 20th at 10 000 ms) and the P0 is taken at iteration 21, 10 005 ms.
#[test]
fn polling_final_block_and_long_idle() {
    let mut d = new(polling());
    d.submit(1, P0, ms(520));
    assert!(d.wake_at().expect("P0 waiting") <= ms(520));
    assert_eq!(d.next(ms(520)).map(|t| t.class), Some(P0));

    let mut d = new(polling());
    d.submit(1, P1, ms(520));
    assert_eq!(d.wake_at(), Some(ms(550)));
    assert_eq!(d.next(ms(549)), None);
    assert_eq!(d.next(ms(550)).map(|t| t.class), Some(P1));

    let mut d = new(polling());
    d.submit(1, P0, ms(10_001));
    assert_eq!(d.wake_at(), Some(ms(10_005)));
    assert_eq!(d.next(ms(10_005)).map(|t| t.class), Some(P0));
}

/// No worker free: the loop stalls at the iteration that would take a task and polls again
/// when a worker frees. P2 at 1 ms → due at 35 ms (i = 7) but no worker; a P0 arrives at
/// 50 ms; a worker frees at 100 ms: iteration 7 runs at 100 ms and polls P0 first, then the
/// restarted iteration 0 takes the P2 at once.
#[test]
fn polling_waits_for_a_worker() {
    let mut d = new(polling());
    d.submit(2, P2, ms(1));
    assert_eq!(d.wake_at(), Some(ms(35)));
    d.submit(0, P0, ms(50));
    assert_eq!(d.wake_at(), Some(ms(35)), "stalled, due since 35 ms");
    assert_eq!(d.next(ms(100)).map(|t| t.task), Some(0));
    assert_eq!(d.next(ms(100)).map(|t| t.task), Some(2));
}

/// Smooth WRR 6:3:1, all full. current += w for each non-empty class, take the max (ties to
/// the lower class), subtract Σw = 10 from the winner:
/// (6,3,1)→A (-4,3,1); (2,6,2)→B (2,-4,2); (8,-1,3)→A (-2,-1,3); (4,2,4)→A (-6,2,4);
/// (0,5,5)→B (0,-5,5); (6,-2,6)→A (-4,-2,6); (2,1,7)→C (2,1,-3); (8,4,-2)→A (-2,4,-2);
/// (4,7,-1)→B (4,-3,-1); (10,0,0)→A (0,0,0) — back to zero, so picks 11..20 repeat.
#[test]
fn weighted_round_robin_6_3_1() {
    let mut d = new(DispatchPolicy::WeightedRoundRobin { weights: vec![6, 3, 1] });
    for c in [P0, P1, P2] {
        fill(&mut d, c, 30, SimTime::ZERO);
    }
    let ten = [0, 1, 0, 0, 1, 0, 2, 0, 1, 0];
    let expect: Vec<u16> = ten.iter().chain(ten.iter()).copied().collect();
    assert_eq!(picks(&mut d, 20, SimTime::ZERO), expect);
    assert_eq!(d.depth(P0), 30 - 12);
    // P0 empty, weights 3:1 between P1 and P2 (Σ 4): (3,1)→B (-1,1); (2,2)→B tie (-2,2);
    // (1,3)→C (1,-1); (4,0)→B (0,0).
    let mut d = new(DispatchPolicy::WeightedRoundRobin { weights: vec![6, 3, 1] });
    fill(&mut d, P1, 10, SimTime::ZERO);
    fill(&mut d, P2, 10, SimTime::ZERO);
    assert_eq!(picks(&mut d, 8, SimTime::ZERO), vec![1, 1, 2, 1, 1, 1, 2, 1]);
}

/// One worker, a P0 every 10 ms taking exactly the 10 ms slot; a P2 submitted at 0.
/// Strict: P2 never runs in 10 s. Aging with max_wait 2 s: taken at exactly 2 000 ms (wait
/// 2 s ≥ max_wait beats the fresh P0). Aging step 1 s, no max_wait in reach: P2 scores
/// 2·1 s − wait, P0 scores 0 − 0; at 2 000 ms it ties (lower class wins), at 2 010 ms P2 wins.
#[test]
fn strict_starves_and_aging_bounds_the_wait() {
    let run = |policy: DispatchPolicy| -> Option<SimTime> {
        let mut d = new(policy);
        d.submit(99, P2, SimTime::ZERO);
        for k in 0..1000 {
            let t = ms(10 * k);
            d.submit(k as u32, P0, t);
            let got = d.next(t).expect("a worker frees every 10 ms and there is work");
            if got.class == P2 {
                return Some(t);
            }
        }
        None
    };
    assert_eq!(run(DispatchPolicy::Strict), None);
    let aging = |step, max| DispatchPolicy::Aging {
        aging_step: SimDuration::from_ms(step),
        max_wait: SimDuration::from_ms(max),
    };
    assert_eq!(run(aging(0, 2_000)), Some(ms(2_000)));
    assert_eq!(run(aging(1_000, 60_000)), Some(ms(2_010)));
}

/// Deadline-first, start_within 500 ms / 5 s / 30 s, weights 3:2:1. P2 at 0 s (deadline
/// 30 s), P1 at 25 s (30 s), P0 at 29.6 s (30.1 s). At 29.6 s: P1 (30 s, weight 2 beats
/// weight 1), then P2 (30 s), then P0 (30.1 s). A fresh P0 at 29.6 s beats a P2 submitted
/// at 0.1 s (deadline 30.1 s, tie → weight 3 > 1).
#[test]
fn deadline_first_order() {
    let mut d = new(DispatchPolicy::DeadlineFirst {
        start_within: default_start_within(),
        weights: vec![3, 2, 1],
    });
    d.submit(20, P2, ms(0));
    d.submit(10, P1, ms(25_000));
    d.submit(0, P0, ms(29_600));
    assert_eq!(picks(&mut d, 3, ms(29_600)), vec![1, 2, 0]);
    let mut d2 = new(DispatchPolicy::DeadlineFirst {
        start_within: default_start_within(),
        weights: vec![3, 2, 1],
    });
    d2.submit(21, P2, ms(100));
    d2.submit(1, P0, ms(29_600));
    assert_eq!(picks(&mut d2, 2, ms(29_600)), vec![0, 2]);
}

/// Capacities 2 / 1 / 1 with Reject / Defer / CallerRuns.
#[test]
fn overflow_policies() {
    let s = spec(
        DispatchPolicy::Strict,
        [2, 1, 1],
        [Overflow::Reject, Overflow::Defer, Overflow::CallerRuns],
    );
    let mut d: Dispatcher<u32> = Dispatcher::new(&s, SimTime::ZERO);
    let t = SimTime::ZERO;
    let script = [
        (P0, Admission::Queued),
        (P0, Admission::Queued),
        (P0, Admission::Rejected),
        (P1, Admission::Queued),
        (P1, Admission::Deferred),
        (P2, Admission::Queued),
        (P2, Admission::CallerRuns),
    ];
    for (k, (class, expect)) in script.into_iter().enumerate() {
        assert_eq!(d.submit(k as u32, class, t), expect, "step {k}");
    }
    assert_eq!((d.depth(P0), d.depth(P1), d.depth(P2), d.deferred_depth()), (2, 1, 1, 1));
    assert_eq!(d.counters[0].rejected, 1);
    assert_eq!(d.counters[2].caller_runs, 1);
}

/// Defer: P1 capacity 1, async capacity 2, 10 tasks/s (one per 100 ms), only while healthy.
#[test]
fn defer_drains_at_rate_only_when_healthy() {
    let mut s = spec(DispatchPolicy::Strict, [1; 3], [Overflow::Defer; 3]);
    s.defer = DeferSpec { capacity: 2, drain_rate_per_s: 10.0 };
    let mut d: Dispatcher<u32> = Dispatcher::new(&s, SimTime::ZERO);
    d.set_healthy(false, SimTime::ZERO);
    let got: Vec<_> = (0..4).map(|k| d.submit(k, P1, SimTime::ZERO)).collect();
    use Admission::*;
    assert_eq!(got, vec![Queued, Deferred, Deferred, RejectedDeferFull]);
    assert_eq!(d.next(SimTime::ZERO).map(|t| t.task), Some(0));
    // Unhealthy: nothing replays however long we wait.
    assert_eq!(d.wake_at(), None);
    d.on_wake(ms(900));
    assert_eq!(d.deferred_depth(), 2);
    // Health returns at 1 s: first replay at once, the next 100 ms later.
    d.set_healthy(true, ms(1_000));
    assert_eq!(d.wake_at(), Some(ms(1_000)));
    d.on_wake(ms(1_000));
    assert_eq!((d.depth(P1), d.deferred_depth()), (1, 1));
    assert_eq!(d.wake_at(), None, "class queue full: the head waits");
    let t = d.next(ms(1_000)).expect("replayed task");
    assert_eq!((t.task, t.submitted_at, t.enqueued_at), (1, SimTime::ZERO, ms(1_000)));
    assert_eq!(d.wake_at(), Some(ms(1_100)));
    d.on_wake(ms(1_050));
    assert_eq!(d.deferred_depth(), 1, "not due before 1 100 ms");
    d.set_healthy(false, ms(1_060));
    d.on_wake(ms(1_100));
    assert_eq!(d.deferred_depth(), 1, "unhealthy again");
    d.set_healthy(true, ms(2_000));
    d.on_wake(ms(2_000));
    assert_eq!((d.deferred_depth(), d.counters[1].replayed), (0, 2));
}

#[test]
fn spec_parses_and_validates() {
    let text = r#"Dispatcher(name: "entry", queues: [
        ClassQueue(class: "P0", capacity: 100),
        ClassQueue(class: "P1", capacity: 200, overflow: Defer),
        ClassQueue(class: "P2", capacity: 500, overflow: Defer)],
        policy: WeightedPolling(), defer: Defer(capacity: 1000, drain_rate_per_s: 50.0))"#;
    let s: DispatcherSpec = ron::from_str(text).expect("parses");
    assert_eq!(s.policy, polling());
    assert_eq!(s.validate(), Ok(()));
    let bad = text.replace("WeightedPolling()", "WeightedRoundRobin(weights: [6, 3])");
    let s: DispatcherSpec = ron::from_str(&bad).expect("parses");
    assert!(s.validate().unwrap_err().contains("`weights` has 2 entries"));
    let zero = text.replace("WeightedPolling()", "WeightedPolling(idle_sleep: \"0s\")");
    assert!(ron::from_str::<DispatcherSpec>(&zero).unwrap_err().to_string().contains("[\"1ns\", "));
}

/// The per-class lists are registered parameters of their policy only: read, set as a
/// whole (a sweep), refused when an entry is out of range or the length is not one per
/// class queue (the spec is left as it was).
#[test]
fn per_class_lists_are_parameters_of_their_policy() {
    use crate::params::{ParamValue as V, Params};
    let counts = |xs: &[u64]| V::List(xs.iter().map(|&x| V::Count(x)).collect());
    let mut s = spec(polling(), [100; 3], [Overflow::Reject; 3]);
    assert_eq!(s.get("poll_every"), Some(counts(&[1, 3, 7])));
    assert_eq!(s.get("weights"), None, "not a weighted policy");
    s.set("poll_every", counts(&[1, 2, 4])).expect("one entry per class");
    assert_eq!(s.get("poll_every"), Some(counts(&[1, 2, 4])));
    let e = s.set("poll_every", counts(&[1, 2])).unwrap_err();
    assert!(e.contains("`poll_every` has 2 entries but there are 3 class queues"), "{e}");
    assert_eq!(s.get("poll_every"), Some(counts(&[1, 2, 4])), "refused: unchanged");
    assert!(s.set("weights", counts(&[1, 1, 1])).is_err(), "not a weighted policy");
    let mut d = spec(
        DispatchPolicy::DeadlineFirst {
            start_within: default_start_within(),
            weights: vec![3, 2, 1],
        },
        [100; 3],
        [Overflow::Reject; 3],
    );
    d.set("weights", counts(&[1, 5, 9])).expect("DeadlineFirst has weights");
    let ty = DispatcherSpec::decls().into_iter().find(|d| d.name == "start_within").unwrap().ty;
    let mut de = ron::Deserializer::from_str(r#"["1s", "25h", "2s"]"#).unwrap();
    let e = ty.deserialize_value(&mut de).unwrap_err().to_string();
    assert!(e.contains(r#"expected a duration string in ["0s", "24h"], found "25h""#), "{e}");
    let zero = r#"Dispatcher(name: "e", queues: [ClassQueue(class: "P0", capacity: 1)],
        policy: WeightedRoundRobin(weights: [0]))"#;
    let e = ron::from_str::<DispatcherSpec>(zero).unwrap_err().to_string();
    assert!(e.contains("expected an integer in [1, 1000000], found 0"), "{e}");
}

/// The lazy catch-up (whole idle cycles skipped in O(1)) agrees with a world that calls
/// `next` at every 5 ms tick of the loop (iteration times are multiples of 5 ms from 0,
/// since the 550 ms cycle is one too). Checked at cycle boundaries and far out.
#[test]
fn polling_lazy_catch_up_matches_eager_ticks() {
    for class in [P0, P1, P2] {
        for arrival_ms in [1, 499, 500, 501, 520, 549, 550, 551, 1_099, 1_100, 12_345, 99_999] {
            let mut lazy = new(polling());
            lazy.submit(1, class, ms(arrival_ms));
            let mut eager = new(polling());
            let mut t = 0;
            while t < arrival_ms {
                assert_eq!(eager.next(ms(t)), None);
                t += 5;
            }
            eager.submit(1, class, ms(arrival_ms));
            let due = eager.wake_at().expect("a task waits");
            assert_eq!(lazy.wake_at(), Some(due), "{class:?} at {arrival_ms} ms");
            assert_eq!(lazy.next(due).map(|d| d.task), Some(1));
        }
    }
}

/// Conservation under a pseudo-random script (mix64-driven) for every policy: each task is
/// refused once or handed out once; held tasks are in exactly one queue; depths ≤ capacity.
#[test]
fn conservation_under_random_script() {
    use sim_core::rng::mix64;
    let policies = [
        DispatchPolicy::Strict,
        polling(),
        DispatchPolicy::WeightedRoundRobin { weights: vec![6, 3, 1] },
        DispatchPolicy::DeadlineFirst {
            start_within: default_start_within(),
            weights: vec![3, 2, 1],
        },
        DispatchPolicy::Aging {
            aging_step: SimDuration::from_ms(100),
            max_wait: SimDuration::from_secs(1),
        },
    ];
    for policy in policies {
        let mut s =
            spec(policy, [3, 4, 5], [Overflow::Reject, Overflow::Defer, Overflow::CallerRuns]);
        s.defer = DeferSpec { capacity: 6, drain_rate_per_s: 50.0 };
        let mut d: Dispatcher<u64> = Dispatcher::new(&s, SimTime::ZERO);
        let (mut refused, mut out) = (0u64, vec![false; 4000]);
        let mut now = SimTime::ZERO;
        for k in 0..4000u64 {
            let r = mix64(k);
            now += SimDuration::from_us(r % 4000);
            match (r >> 20) % 4 {
                0 | 1 => match d.submit(k, ClassId(((r >> 30) % 3) as u16), now) {
                    Admission::Queued | Admission::Deferred => {}
                    _ => refused += 1,
                },
                2 => d.set_healthy(!(r >> 40).is_multiple_of(3), now),
                _ => {
                    d.on_wake(now);
                    while let Some(t) = d.next(now) {
                        assert!(!out[t.task as usize], "handed out twice");
                        assert!(t.enqueued_at <= now && t.submitted_at <= t.enqueued_at);
                        out[t.task as usize] = true;
                        if (r >> 50).is_multiple_of(2) {
                            break;
                        }
                    }
                }
            }
            for c in 0..3 {
                assert!(d.depth(ClassId(c)) as u64 <= [3, 4, 5][c as usize]);
            }
            assert!(d.deferred_depth() <= 6);
            let submitted: u64 = d.counters.iter().map(|c| c.submitted).sum();
            let held = (0..3).map(|c| d.depth(ClassId(c))).sum::<usize>() + d.deferred_depth();
            let dispatched = out.iter().filter(|&&b| b).count();
            assert_eq!(submitted, refused + dispatched as u64 + held as u64);
        }
    }
}
