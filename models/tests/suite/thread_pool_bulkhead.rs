//! Resilience4j's `ThreadPoolBulkhead` (`FixedThreadPoolBulkhead`: a `ThreadPoolExecutor`
//! with an `ArrayBlockingQueue`) through the world: a burst at one instant meets
//! `execute`'s rule — threads up to core, then the queue, then threads up to max, then
//! refusals — and the threads above core end after the keep-alive.

use crate::support::{cfg, get, load, run_checked, stepped};
use models::outcome::{Outcome, Reason};

/// Ten calls at t = 0 (a flood: zero gaps, limit 10), each served 100 ms (100 servers:
/// no queue downstream); the bulkhead: core 2, max 4, queue 3, keep-alive 20 ms.
const BURST: &str = r#"Scenario(
    name: "r4j-thread-pool-bulkhead",
    sources: [(name: "s", interarrival: Constant("0s"), target: "c", limit: Some(10))],
    thread_pool_bulkheads: [ThreadPoolBulkhead(name: "tpb", core_thread_pool_size: 2,
                            max_thread_pool_size: 4, queue_capacity: 3)],
    call_sites: [(name: "c", governors: [ThreadPoolBulkhead("tpb")], upstream: "b")],
    stations: [(name: "b", servers: 100, service: Constant("100ms"))],
)"#;

/// By `execute`'s rule, in arrival order: #1, #2 start threads (below core); #3–#5 queue
/// (at core, the queue has room: the pool does not grow); #6, #7 start threads 3 and 4
/// (queue full, below max); #8–#10 are refused (`pool_full`). At 100 ms #1, #2, #6, #7 end:
/// three threads take #3–#5 from the queue, the fourth idles — above core, it ends at
/// 120 ms. At 200 ms #3–#5 end; one more thread above core ends at 220 ms, leaving core.
/// So: 4 calls take 100 ms, 3 take 200 ms, 3 are refused at once; 4 threads at most,
/// 2 ended.
#[test]
fn a_burst_follows_the_executors_rule() {
    let sc = load(BURST);
    let c = cfg(1, 1);
    stepped(&sc, &c);
    let r = run_checked(&sc, &c);
    let ms = 1_000_000;
    let mut took: Vec<(u64, Option<Outcome>)> =
        r.requests.iter().map(|q| (q.end.unwrap().0 - q.arrival.0, q.outcome)).collect();
    took.sort_by_key(|(t, _)| *t);
    let full = Some(Outcome::Rejected(Reason::PoolFull));
    let ok = Some(Outcome::Success);
    let want =
        [[(0, full); 3].as_slice(), [(100 * ms, ok); 4].as_slice(), [(200 * ms, ok); 3].as_slice()]
            .concat();
    assert_eq!(took, want);
    let g = |k: &str| get(&r, &format!("thread_pool_bulkhead.tpb.{k}"));
    assert_eq!(
        [g("submitted"), g("rejected"), g("threads_created"), g("threads_exited")],
        [10.0, 3.0, 4.0, 2.0]
    );
    assert_eq!(g("largest_pool_size"), 4.0);
}
