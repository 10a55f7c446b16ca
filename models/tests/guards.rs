//! The run guards through the model (I12): a batch flood whose `limit` is near 2⁶⁴ cannot
//! lift the same-instant limit, an overloaded M/M/8 with an unbounded queue stops at the
//! entity bound naming the station and the source, request records stop at the memory
//! bound, and a run the guards do not stop is the same run as without them.

use models::RunConfig;
use sim_core::{Limits, SimDuration, SimError};

// The suite's support module, shared with this separate test binary.
#[path = "suite/support.rs"]
mod support;
use support::load;

fn cfg(secs: u64, limits: Limits) -> RunConfig {
    RunConfig { limits, ..RunConfig::new(1, SimDuration::from_secs(secs)) }
}

#[test]
fn a_batch_flood_of_two_to_the_sixty_four_stops_at_the_capped_same_instant_limit() {
    // 2⁶⁴ − 1 requests at t = 0 into a loss station: each is refused at once, so nothing
    // accumulates and only the same-instant guard can stop it. Its entity count (the unsent
    // requests, ~2⁶⁴) is capped at SAME_INSTANT_MAX_ENTITIES = 40,000: the limit is
    // 100,000 + 64 × 40,000 = 2,660,000 events (0.7 s of wall time), where it used to
    // saturate at 2⁶⁴ (spinning for ever) and then, capped at MAX_ENTITIES, at 3.2·10⁸
    // events (26 s to 100 s of wall time, issue 32).
    let sc = load(
        r#"Scenario(name: "flood",
        sources: [(name: "flood", interarrival: Constant("0s"), limit: Some(18446744073709551615), target: "c")],
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 2, queue_capacity: Some(0), service: Constant("1ms"))])"#,
    );
    let out = models::run(&sc, &cfg(1, Limits::default()));
    match &out.error {
        Some(SimError::ZeroTimeLoop { limit: 2_660_000, component, busiest, .. }) => {
            assert_eq!(component, "source.flood");
            assert_eq!(busiest, "source.flood");
        }
        other => panic!("{other:?}"),
    }
    assert!(out.violations.is_empty(), "{:?}", out.violations);
}

/// Incident 12 with a pool queue of 0: 2,000 closed-loop users with no think time, every
/// one of them refused at once by the full pool of 600 threads (`Abort`), re-sends at the
/// same instant for ever. The same-instant limit counts the users, threads and instance
/// (≈ 2,600 entities: 100,000 + 64 × ~3,200 < 320,000 events), not the station's 100,000
/// idle servers, which lifted it to 6.7·10⁶ events (28–39 s of wall time per run, issue 32).
#[test]
fn a_closed_loop_refused_by_a_full_pool_stops_at_a_limit_set_by_its_users() {
    let sc = load(
        r#"Scenario(name: "more-threads",
        sources: [(name: "load", target: "upstream", app: "svc",
                   closed_loop: ClosedLoop(users: 2000, think_time: Constant("0s")))],
        apps: [(name: "svc",
            pool: Some(Shared((name: "workers", core_pool_size: 600, maximum_pool_size: 600,
                queue_capacity: 0, prestart_all_core_threads: true))),
            thread_overhead: Some((cpu_cores: 16, overhead_per_thread: 0.0004, knee_threads: 0)),
            local_work: Some(Constant("12ms")))],
        call_sites: [(name: "upstream", upstream: "upstream")],
        stations: [(name: "upstream", servers: 100000, service: Constant("178ms"))])"#,
    );
    let started = std::time::Instant::now();
    let out = models::run(&sc, &cfg(70, Limits::default()));
    let wall = started.elapsed().as_secs_f64();
    match &out.error {
        Some(SimError::ZeroTimeLoop { limit, busiest, time, .. }) => {
            assert!(*limit < 320_000, "{limit}");
            assert_eq!(busiest, "source.load");
            assert_eq!(time.0, 0);
        }
        other => panic!("{other:?}"),
    }
    // Measured 0.2–0.4 s (dev CLI); 10 s leaves room for a loaded test machine, and is
    // far below the 28–39 s the scan of every pool thread per event took.
    assert!(wall < 10.0, "{wall:.1} s");
    assert!(out.violations.is_empty(), "{:?}", out.violations);
}

/// An M/M/8 at one arrival per µs (10⁶/s) against 8 × 20/s of service: the queue grows by
/// ~10⁶ calls a simulated second, without bound.
const OVERLOAD: &str = r#"Scenario(name: "overload",
    sources: [(name: "chat", interarrival: Exponential(mean: "1us"), target: "c")],
    call_sites: [(name: "c", upstream: "llm")],
    stations: [(name: "llm", servers: 8, service: Exponential(mean: "50ms"))])"#;

#[test]
fn an_unbounded_queue_stops_at_the_entity_bound_naming_the_station_and_the_source() {
    let sc = load(OVERLOAD);
    let out = models::run(&sc, &cfg(10, Limits { max_entities: 200_000, ..Limits::default() }));
    let err = out.error.expect("stopped");
    let msg = err.to_string();
    match &err {
        SimError::Overload {
            limit: 200_000,
            limit_name: "MAX_ENTITIES",
            component,
            amount,
            time,
            ..
        } => {
            // Each request holds one call: entities = 2 × requests (+ a few timers), so
            // the bound trips near 100,000 requests, ~0.1 s into the run at 10⁶/s.
            assert!(*amount > 200_000 && *amount < 200_000 + 3 * 1024, "{amount}");
            assert!(time.0 < 200_000_000, "{time}");
            assert!(component.contains("`station.llm`"), "{component}");
            assert!(component.contains("source `chat`"), "{component}");
        }
        other => panic!("{other:?}"),
    }
    assert!(msg.contains("exceed the limit of 200000 (`MAX_ENTITIES`)"), "{msg}");
    assert!(out.violations.is_empty(), "{:?}", out.violations);
}

#[test]
fn request_records_stop_at_the_memory_bound() {
    // A stable M/M/1 (ρ = 0.5) keeps few requests in the system, but a record of every
    // request grows with the run: at 1,000/s for 100 s, 100,000 records of ~100 bytes,
    // over a bound of 4 MB.
    let sc = load(
        r#"Scenario(name: "records",
        sources: [(name: "chat", interarrival: Exponential(mean: "1ms"), target: "c")],
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 1, service: Exponential(mean: "500us"))])"#,
    );
    let mut c = cfg(100, Limits { max_bytes: 4 << 20, ..Limits::default() });
    c.record_requests = true;
    let out = models::run(&sc, &c);
    assert!(
        matches!(&out.error, Some(SimError::Overload { limit_name: "MAX_RUN_BYTES", .. })),
        "{:?}",
        out.error
    );
    // Without records the same run ends cleanly, and the bounds change nothing.
    c.record_requests = false;
    let plain = models::run(&sc, &c);
    assert!(plain.error.is_none(), "{:?}", plain.error);
    let unbounded = models::run(&sc, &cfg(100, Limits::default()));
    assert_eq!(plain.fingerprint, unbounded.fingerprint);
}
