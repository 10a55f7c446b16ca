//! Scripted tests of the pools; expected values follow the JDK's `execute` steps by hand.

use super::worker::*;
use super::*;
use sim_core::SimDuration;

fn s(x: u64) -> SimTime {
    SimTime(x * 1_000_000_000)
}

fn spec(core: u64, max: u64, queue: u64, rejection: RejectionPolicy) -> ThreadPoolSpec {
    ThreadPoolSpec {
        name: "exec".into(),
        core_pool_size: core,
        maximum_pool_size: max,
        keep_alive_time: SimDuration::from_secs(60),
        queue_capacity: queue,
        rejection_policy: rejection,
        allow_core_thread_time_out: false,
        prestart_all_core_threads: false,
        max_queue_wait: None,
        codel: None,
    }
}

/// core 2, max 4, queue 2: tasks 1–2 new threads (below core), 3–4 queued (core reached,
/// queue has room), 5–6 new threads (queue full, below max), 7 rejected (Abort).
#[test]
fn java_order_step_by_step() {
    let mut p: ThreadPool<u32> = ThreadPool::new(&spec(2, 4, 2, RejectionPolicy::Abort), s(0));
    let t = ThreadId;
    let expect = [
        Submit::RunNow(t(0)),
        Submit::RunNow(t(1)),
        Submit::Queued,
        Submit::Queued,
        Submit::RunNow(t(2)),
        Submit::RunNow(t(3)),
        Submit::RejectedAbort,
    ];
    for (k, e) in expect.into_iter().enumerate() {
        assert_eq!(p.submit(k as u32 + 1, s(0)), e, "task {}", k + 1);
    }
    assert_eq!((p.alive(), p.busy(), p.queued()), (4, 4, 2));
    // Threads 0 and 1 finish first and take the queued tasks 3 and 4 in FIFO order.
    assert_eq!(p.finish(t(0), s(1)), Finished::Next(3, s(0)));
    assert_eq!(p.finish(t(1), s(1)), Finished::Next(4, s(0)));
    assert_eq!(p.finish(t(2), s(1)), Finished::Idle);
    assert_eq!(p.finish(t(3), s(2)), Finished::Idle);
    // Keep-alive 60 s, 4 alive > core 2: thread 2 (idle since 1 s) times out at 61 s,
    // thread 3 (idle since 2 s) at 62 s; then 2 alive = core and nothing more expires.
    assert_eq!(p.wake_at(), Some(s(61)));
    p.on_wake(s(61));
    assert_eq!((p.alive(), p.wake_at()), (3, Some(s(62))));
    p.on_wake(s(62));
    assert_eq!((p.alive(), p.wake_at()), (2, None));
    assert_eq!(p.counters.threads_exited, 2);
}

/// Below core a new thread starts even though another is idle; at core an idle thread
/// takes the task (bounded queue: the longest idle first).
#[test]
fn core_threads_first_even_when_idle() {
    let mut p: ThreadPool<u32> = ThreadPool::new(&spec(2, 4, 10, RejectionPolicy::Abort), s(0));
    assert_eq!(p.submit(1, s(0)), Submit::RunNow(ThreadId(0)));
    assert_eq!(p.finish(ThreadId(0), s(1)), Finished::Idle);
    assert_eq!(p.submit(2, s(2)), Submit::RunNow(ThreadId(1)), "1 alive < core 2: new thread");
    assert_eq!(p.finish(ThreadId(1), s(3)), Finished::Idle);
    // Both idle (0 since 1 s, 1 since 3 s): FIFO waiters → thread 0.
    assert_eq!(p.submit(3, s(4)), Submit::RunNow(ThreadId(0)));
    assert_eq!(p.alive(), 2);
    assert_eq!(p.wake_at(), None, "at core: no keep-alive deaths");
}

/// SynchronousQueue (capacity 0), core 0, max 3: every task needs a thread; idle threads
/// are taken most-recent first (unfair hand-off stack), and all time out (core 0).
#[test]
fn synchronous_queue_lifo_and_core_zero() {
    let mut p: ThreadPool<u32> = ThreadPool::new(&spec(0, 3, 0, RejectionPolicy::Abort), s(0));
    assert_eq!(p.submit(1, s(0)), Submit::RunNow(ThreadId(0)));
    assert_eq!(p.submit(2, s(0)), Submit::RunNow(ThreadId(1)));
    assert_eq!(p.finish(ThreadId(0), s(1)), Finished::Idle);
    assert_eq!(p.finish(ThreadId(1), s(2)), Finished::Idle);
    assert_eq!(p.submit(3, s(3)), Submit::RunNow(ThreadId(1)), "LIFO: idle since 2 s");
    assert_eq!(p.wake_at(), Some(s(61)));
    p.on_wake(s(61));
    assert_eq!(p.alive(), 1);
    // core 0 with a bounded queue: the queue offer succeeds, and a thread is started for it.
    let mut q: ThreadPool<u32> = ThreadPool::new(&spec(0, 1, 5, RejectionPolicy::Abort), s(0));
    assert_eq!(q.submit(1, s(0)), Submit::RunNow(ThreadId(0)));
    assert_eq!(q.submit(2, s(0)), Submit::Queued);
}

/// core 1, max 1, queue 1: task a runs, b waits, c meets the rejection policy.
#[test]
fn rejection_policies() {
    use RejectionPolicy::*;
    for (policy, expect) in [
        (Abort, Submit::RejectedAbort),
        (CallerRuns, Submit::CallerRuns),
        (Discard, Submit::Discarded),
        (DiscardOldest, Submit::DiscardedOldest(2)),
    ] {
        let mut p: ThreadPool<u32> = ThreadPool::new(&spec(1, 1, 1, policy), s(0));
        assert_eq!(p.submit(1, s(0)), Submit::RunNow(ThreadId(0)));
        assert_eq!(p.submit(2, s(0)), Submit::Queued);
        assert_eq!(p.submit(3, s(0)), expect, "{policy:?}");
        let next = if policy == DiscardOldest { 3 } else { 2 };
        assert_eq!(p.finish(ThreadId(0), s(1)), Finished::Next(next, s(0)), "{policy:?}");
    }
}

/// Lowering the maximum: idle threads above it exit at once, busy ones when they finish.
#[test]
fn shrink_at_run_time() {
    let mut p: ThreadPool<u32> = ThreadPool::new(&spec(1, 3, 0, RejectionPolicy::Abort), s(0));
    for k in 0..3 {
        assert_eq!(p.submit(k, s(0)), Submit::RunNow(ThreadId(k)));
    }
    assert_eq!(p.finish(ThreadId(2), s(1)), Finished::Idle);
    p.set_sizes(1, 1);
    assert_eq!(p.alive(), 2, "idle thread 2 exits at once");
    assert_eq!(p.finish(ThreadId(0), s(2)), Finished::Exited);
    assert_eq!(p.finish(ThreadId(1), s(2)), Finished::Idle);
    assert_eq!(p.alive(), 1);
}

/// Per-class pools P0 (core 1, max 1, queue 1), P1 (same), P2 (core 2, max 2, queue 5);
/// P0 may borrow 2 threads, the others none.
#[test]
fn borrowing_idle_threads() {
    let layout = PoolLayout::PerClass {
        pools: vec![
            spec(1, 1, 1, RejectionPolicy::Abort),
            spec(1, 1, 1, RejectionPolicy::Abort),
            spec(2, 2, 5, RejectionPolicy::Abort),
        ],
        max_borrow: vec![2, 0, 0],
    };
    let mut set: PoolSet<&str> = PoolSet::new(&layout, s(0));
    let run = |pool, thread, by: Option<u16>| {
        Placed::Run(Running { pool, thread: ThreadId(thread), borrowed_by: by.map(ClassId) })
    };
    let (c0, c1, c2) = (ClassId(0), ClassId(1), ClassId(2));
    // P2's two core threads run and go idle at 1 s.
    assert_eq!(set.submit(c2, "b1", s(0)), run(2, 0, None));
    assert_eq!(set.submit(c2, "b2", s(0)), run(2, 1, None));
    for th in 0..2 {
        let r = Running { pool: 2, thread: ThreadId(th), borrowed_by: None };
        assert_eq!(set.finish(&r, s(1)), Then::Idle);
    }
    // P0: first to its own new core thread; then its pool cannot start one, so it borrows
    // P2's idle threads (longest idle first: both since 1 s → id 0, then 1); at the limit of
    // 2 loans it queues in its own pool, then is rejected (queue 1, max 1).
    assert_eq!(set.submit(c0, "a1", s(2)), run(0, 0, None));
    assert_eq!(set.submit(c0, "a2", s(2)), run(2, 0, Some(0)));
    assert_eq!(set.submit(c0, "a3", s(2)), run(2, 1, Some(0)));
    assert_eq!(set.borrowed(c0), 2);
    assert_eq!(set.submit(c0, "a4", s(2)), Placed::Queued { pool: 0 });
    assert_eq!(set.submit(c0, "a5", s(2)), Placed::RejectedAbort);
    // P1 may not borrow: own core thread, then its queue.
    assert_eq!(set.submit(c1, "n1", s(2)), run(1, 0, None));
    assert_eq!(set.submit(c1, "n2", s(2)), Placed::Queued { pool: 1 });
    // P2's own work now finds its threads lent out: it queues.
    assert_eq!(set.submit(c2, "b3", s(3)), Placed::Queued { pool: 2 });
    // The loan ends: the thread goes home and takes P2's queue head.
    let loan = Running { pool: 2, thread: ThreadId(0), borrowed_by: Some(c0) };
    assert_eq!(
        set.finish(&loan, s(4)),
        Then::Next("b3", s(3), Running { pool: 2, thread: ThreadId(0), borrowed_by: None })
    );
    assert_eq!(set.borrowed(c0), 1);
    assert_eq!(set.alive(), 4);
}

#[test]
fn spec_parses_and_validates() {
    // The source's executor: new ThreadPoolExecutor(8, 16, 60 s, SynchronousQueue, CallerRuns).
    let text = r#"ThreadPool(name: "ai-exec", core_pool_size: 8, maximum_pool_size: 16,
        keep_alive_time: "60s", queue_capacity: 0, rejection_policy: CallerRuns)"#;
    let p: ThreadPoolSpec = ron::from_str(text).expect("parses");
    assert_eq!((p.core_pool_size, p.maximum_pool_size, p.queue_capacity), (8, 16, 0));
    assert_eq!(p.validate(), Ok(()));
    let bad = ThreadPoolSpec { core_pool_size: 20, ..p };
    assert!(bad.validate().unwrap_err().contains("maximum_pool_size 16 < core_pool_size 20"));
    assert!(ron::from_str::<ThreadPoolSpec>(&text.replace("16", "0")).is_err());
}

#[test]
fn params_round_trip_and_cross_check() {
    use crate::params::{ParamValue as V, Params};
    let mut p = spec(2, 4, 2, RejectionPolicy::Abort);
    assert_eq!(p.get("maximum_pool_size"), Some(V::Count(4)));
    p.set("core_pool_size", V::Count(4)).expect("core 4 ≤ max 4");
    assert!(p.set("core_pool_size", V::Count(5)).is_err(), "core 5 > max 4");
    assert!(p.set("maximum_pool_size", V::Count(3)).is_err(), "max 3 < core 4");
    let names: Vec<&str> = ThreadPoolSpec::decls().iter().map(|d| d.name).collect();
    assert_eq!(
        names,
        [
            "rejection_policy",
            "allow_core_thread_time_out",
            "prestart_all_core_threads",
            "core_pool_size",
            "maximum_pool_size",
            "keep_alive_time",
            "queue_capacity",
            // The CoDel discipline's rows, listed where `codel` is set (`part =`).
            "codel.target",
            "codel.interval",
            "codel.lifo_when_overloaded"
        ]
    );
    p.set("rejection_policy", V::Enum("CallerRuns".into())).expect("a choice");
    assert_eq!(p.rejection_policy, RejectionPolicy::CallerRuns);
    assert!(p.set("rejection_policy", V::Enum("Block".into())).is_err(), "not a choice");
}

/// A CoDel work queue (target 5 ms, interval 100 ms; `crate::codel`): one thread, tasks
/// 1..=300 queued at 0, the thread finishing one task a millisecond, so the head's sojourn
/// is the instant. As in `codel_tests::codel_fifo_drops_the_head_on_the_control_law`: the
/// sojourn reaches target at 5 ms (`first_above = 105`), the head is dropped at 105 ms
/// (task 105: tasks 1..=104 ran at 1..=104 ms; task 106 runs instead), then task k + 1
/// runs at k ms, and the head is dropped again at `drop_next = 205` ms (task 206; count 2,
/// next due at 275.71 ms).
#[test]
fn codel_queue_drops_the_head_on_the_control_law() {
    let ms = |x: u64| SimTime(x * 1_000_000);
    let codel = crate::codel::CodelSpec::default();
    let spec = ThreadPoolSpec { codel: Some(codel), ..spec(1, 1, 1000, RejectionPolicy::Abort) };
    let mut p: ThreadPool<u32> = ThreadPool::new(&spec, ms(0));
    let Submit::RunNow(t) = p.submit(0, ms(0)) else { panic!("core thread") };
    for i in 1..=300 {
        assert_eq!(p.submit(i, ms(0)), Submit::Queued);
    }
    let (mut ran, mut drops) = (vec![], vec![]);
    for k in 1..=210 {
        let Finished::Next(task, _) = p.finish(t, ms(k)) else { panic!("work queued") };
        ran.push(task);
        drops.extend(p.queue_mut().take_dropped().into_iter().map(|d| (d, k)));
    }
    assert_eq!(drops, vec![(105, 105), (206, 205)]);
    assert_eq!(&ran[..104], &(1..=104).collect::<Vec<_>>()[..]);
    assert_eq!(ran[104], 106);
    assert_eq!(p.queue().codel_dropped, 2);
    assert!(p.queue().codel().unwrap().law.dropping());
}
