//! Netflix's partitioned limiter (`PartitionedLimit`) through the world: a batch flood
//! against a live class, a plain fail-fast limit against guaranteed shares.

use crate::support::{cfg, get, load, run_checked};

/// Limit 10 over a station of constant 100 ms service with spare servers; live calls
/// Poisson 40/s (class `live`, 4 erlangs), a batch flood Poisson 400/s (class `batch`, 40
/// erlangs). One call per request, no retry, refusals at once.
const SCENARIO: &str = r#"Scenario(
    name: "partitions",
    classes: [(name: "live"), (name: "batch")],
    sources: [
        (name: "live", class: "live", interarrival: Exponential(mean: "25ms"), target: "c"),
        (name: "batch", class: "batch", interarrival: Exponential(mean: "2500us"), target: "c"),
    ],
    gates: [(name: "g", permits: 10)],
    partitioned_limits: [PartitionedLimit(name: "p", limit: 10, partitions: [
        Partition(name: "live", percent: 0.7, classes: ["live"]),
        Partition(name: "batch", percent: 0.3, classes: ["batch"]),
    ])],
    call_sites: [(name: "c", governors: [GOVERNOR], upstream: "b", timeout: "10s")],
    stations: [(name: "b", servers: 1000, service: Constant("100ms"))],
)"#;

/// A plain limit of 10 that fails fast is a loss system of 10 servers offered 44 erlangs:
/// Erlang B(10, 44) ≈ 0.78 of every class is refused, the live class included (asserted:
/// live success ≤ 50%). With partitions (live ⌈10 × 0.7⌉ = 7, batch ⌈10 × 0.3⌉ = 3), once in
/// flight reaches 10 a live call passes while fewer than 7 live calls are in flight: the live
/// class is at worst a loss system of its own, 7 servers offered 4 erlangs, Erlang B(7, 4) =
/// 0.063 (asserted: live success ≥ 90%); the batch flood keeps its 3 (≥ 30 calls/s) and takes
/// whatever the live class leaves idle (`borrowed`).
#[test]
fn guaranteed_shares_protect_the_live_class_from_a_batch_flood() {
    let secs = 60.0;
    for seed in 0..2 {
        let run = |g: &str| run_checked(&load(&SCENARIO.replace("GOVERNOR", g)), &cfg(seed, 60));
        let share = |r: &models::RunOutput, s: &str| {
            get(r, &format!("source.{s}.completed")) / get(r, &format!("source.{s}.offered"))
        };
        let (plain, parts) = (run(r#"Gate("g")"#), run(r#"PartitionedLimit("p")"#));
        let batch_rate = get(&parts, "source.batch.completed") / secs;
        eprintln!(
            "seed {seed}: live success, plain limit {:.3}, partitioned {:.3}; batch served {batch_rate:.1}/s, borrowed {}",
            share(&plain, "live"),
            share(&parts, "live"),
            get(&parts, "partitioned_limit.p.borrowed")
        );
        assert!(share(&plain, "live") <= 0.5);
        assert!(share(&parts, "live") >= 0.9);
        assert!(batch_rate >= 30.0);
        assert!(get(&parts, "partitioned_limit.p.borrowed") > 0.0);
        assert_eq!(
            get(&parts, "partitioned_limit.p.rejected"),
            get(&parts, "source.live.rejected_gate_full")
                + get(&parts, "source.batch.rejected_gate_full")
        );
    }
}

/// An unknown class in a partition is refused at load with its field path.
#[test]
fn an_unknown_class_is_refused_with_its_path() {
    let text = SCENARIO
        .replace("GOVERNOR", r#"PartitionedLimit("p")"#)
        .replace(r#"classes: ["batch"]"#, r#"classes: ["bulk"]"#);
    let sc: models::scenario::ScenarioSpec<models::params::ParamValue> =
        ron::from_str(&text).expect("parses");
    let e = sc.check().expect_err("unknown class");
    assert!(e.to_string().contains("partitioned_limits[0].partitions[1].classes"), "{e}");
    assert!(e.to_string().contains("unknown class `bulk`"), "{e}");
}
