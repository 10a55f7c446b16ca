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
    // requests, ~2⁶⁴) is capped at max_entities = 10,000: the limit is 100,000 + 64 ×
    // 10,000 = 740,000 events, where it used to saturate at 2⁶⁴ (spinning for ever).
    let sc = load(
        r#"Scenario(name: "flood",
        sources: [(name: "flood", interarrival: Constant("0s"), limit: Some(18446744073709551615), target: "c")],
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 2, queue_capacity: Some(0), service: Constant("1ms"))])"#,
    );
    let out = models::run(&sc, &cfg(1, Limits { max_entities: 10_000, ..Limits::default() }));
    match &out.error {
        Some(SimError::ZeroTimeLoop { limit: 740_000, component, .. }) => {
            assert_eq!(component, "source.flood")
        }
        other => panic!("{other:?}"),
    }
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
