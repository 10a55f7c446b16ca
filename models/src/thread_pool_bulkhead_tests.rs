//! Table tests of the thread-pool bulkhead, from `ThreadPoolExecutor.execute`'s rule (new
//! thread below core; else queue; queue full: new thread below max; else reject).

use super::*;

fn call(i: u64) -> CallInfo {
    CallInfo::simple(i, 0)
}

fn bulkhead(core: u64, max: u64, queue: u64, keep_alive: SimDuration) -> ThreadPoolBulkhead {
    ThreadPoolBulkhead::new(&ThreadPoolBulkheadSpec {
        name: "tpb".into(),
        core_thread_pool_size: core,
        max_thread_pool_size: max,
        queue_capacity: queue,
        keep_alive_duration: keep_alive,
    })
}

const QUEUED: CallDecision = CallDecision::Wait { deadline: None, on_deadline: Reason::PoolFull };
const FULL: CallDecision = CallDecision::Reject(Reason::PoolFull);

/// core 2, max 4, queue 2, keep-alive 20 ms; seven calls at t = 0, then they finish.
/// #1, #2: new threads (below core). #3, #4: queued (at core, none idle, queue 0 → 2): the
/// pool does not grow while the queue has room. #5, #6: queue full → new threads (3, 4 ≤
/// max). #7: queue full and 4 = max → refused. Each finishing thread takes the queue head
/// (#1's takes #3, #2's takes #4). With all idle from 20 ms, the two threads above core end
/// at 20 + 20 = 40 ms; the next call then finds an idle core thread.
#[test]
fn execute_rule_table() {
    let mut b = bulkhead(2, 4, 2, SimDuration::from_ms(20));
    let t0 = SimTime::ZERO;
    let rows: [(u64, CallDecision, (u64, u64, usize)); 7] = [
        // call, decision, (threads, active, queued) after it
        (1, CallDecision::Pass, (1, 1, 0)),
        (2, CallDecision::Pass, (2, 2, 0)),
        (3, QUEUED, (2, 2, 1)),
        (4, QUEUED, (2, 2, 2)),
        (5, CallDecision::Pass, (3, 3, 2)),
        (6, CallDecision::Pass, (4, 4, 2)),
        (7, FULL, (4, 4, 2)),
    ];
    for (i, want, (threads, active, queued)) in rows {
        assert_eq!(b.on_call(&call(i), t0), want, "call {i}");
        let p = b.pool();
        assert_eq!((p.alive(), p.busy(), p.queued()), (threads, active, queued), "after {i}");
    }
    let ms = |n: u64| SimTime::ZERO + SimDuration::from_ms(n);
    let mut woken = vec![];
    b.on_outcome(&call(1), Outcome::Success, ms(10));
    b.on_outcome(&call(2), Outcome::Success, ms(10));
    b.take_woken(&mut woken);
    assert_eq!(woken, [CallId(3), CallId(4)]);
    assert_eq!(b.waiting(), 0);
    for i in [5, 6, 3, 4] {
        b.on_outcome(&call(i), Outcome::Success, ms(20));
    }
    assert_eq!((b.pool().alive(), b.pool().busy()), (4, 0));
    assert_eq!(b.wake_at(), Some(ms(40)));
    b.on_wake(ms(40));
    assert_eq!((b.pool().alive(), b.wake_at()), (2, None), "down to core, no further timer");
    assert_eq!(b.on_call(&call(8), ms(50)), CallDecision::Pass);
    let c = &b.pool().counters;
    assert_eq!(
        (c.submitted, c.rejected, c.threads_created, c.threads_exited, c.largest_pool_size),
        (8, 1, 4, 2, 4)
    );
}

/// A queued call that gives up leaves the queue; one taken by a thread but not yet resumed
/// gives the thread back (it idles: the queue is empty), and the next call gets it.
#[test]
fn abandoned_calls_free_their_place() {
    let mut b = bulkhead(1, 1, 2, SimDuration::ZERO);
    let t0 = SimTime::ZERO;
    assert_eq!(b.on_call(&call(1), t0), CallDecision::Pass);
    assert_eq!(b.on_call(&call(2), t0), QUEUED);
    assert_eq!(b.on_call(&call(3), t0), QUEUED);
    b.on_abandon(&call(2), t0);
    assert_eq!(b.waiting(), 1);
    b.on_outcome(&call(1), Outcome::Success, t0);
    b.on_abandon(&call(3), t0);
    let mut woken = vec![];
    b.take_woken(&mut woken);
    assert!(woken.is_empty());
    assert_eq!((b.pool().alive(), b.pool().busy()), (1, 0));
    assert_eq!(b.on_call(&call(4), t0), CallDecision::Pass);
}

/// The executor is the one `FixedThreadPoolBulkhead` builds: AbortPolicy, an
/// `ArrayBlockingQueue`, keep-alive in whole milliseconds (`toMillis()`); the builder's
/// checks refuse max < core and a queue of 0; the defaults are the library's (queue 100,
/// keep-alive 20 ms).
#[test]
fn declaration_and_executor() {
    let s: ThreadPoolBulkheadSpec = ron::from_str(
        "ThreadPoolBulkhead(name: \"b\", core_thread_pool_size: 2, max_thread_pool_size: 3, \
         keep_alive_duration: \"20999us\")",
    )
    .expect("valid");
    let e = s.executor();
    assert_eq!((e.keep_alive_time, e.queue_capacity), (SimDuration::from_ms(20), 100));
    assert_eq!(e.rejection_policy, RejectionPolicy::Abort);
    let d: ThreadPoolBulkheadSpec = ron::from_str(
        "ThreadPoolBulkhead(name: \"b\", core_thread_pool_size: 1, max_thread_pool_size: 1)",
    )
    .expect("valid");
    assert_eq!(d.keep_alive_duration, SimDuration::from_ms(20));
    let err = ron::from_str::<ThreadPoolBulkheadSpec>(
        "ThreadPoolBulkhead(name: \"b\", core_thread_pool_size: 4, max_thread_pool_size: 2)",
    )
    .expect_err("max < core");
    assert!(err.to_string().contains("max_thread_pool_size 2 < core_thread_pool_size 4"), "{err}");
    assert!(
        ron::from_str::<ThreadPoolBulkheadSpec>(
            "ThreadPoolBulkhead(name: \"b\", core_thread_pool_size: 1, max_thread_pool_size: 1, \
             queue_capacity: 0)"
        )
        .is_err()
    );
}
