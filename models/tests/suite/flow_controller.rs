//! GAIE's flow control (`FlowController`) through the world: two priority bands in front
//! of one deterministic server, against the non-preemptive priority M/D/1 (Cobham), and the
//! sheddable band as a loss system.

use crate::support::{cfg, get, load, run_checked};
use models::RunConfig;
use sim_core::SimDuration;
use sim_core::stats::Replications;

/// `hi` Poisson 4/s, `lo` Poisson 2/s, one call each to a station of constant 100 ms
/// service with spare servers; the controller's limit 1 makes it a single server whose
/// queue is the controller's. `LO` is `lo`'s priority.
const SCENARIO: &str = r#"Scenario(
    name: "gaie",
    classes: [(name: "hi"), (name: "lo")],
    sources: [
        (name: "hi", class: "hi", interarrival: Exponential(mean: "250ms"), target: "c"),
        (name: "lo", class: "lo", interarrival: Exponential(mean: "500ms"), target: "c"),
    ],
    flow_controllers: [FlowController(name: "f", limit: 1, priorities: {"hi": 10, "lo": LO})],
    call_sites: [(name: "c", governors: [FlowController("f")], upstream: "b")],
    stations: [(name: "b", servers: 100, service: Constant("100ms"))],
)"#;

/// Per seed 1..=8 (fixed before looking), 2000 s after 200 s of warm-up: the columns.
fn replicate(lo_priority: i32, columns: &[&str]) -> Vec<Vec<f64>> {
    let sc = load(&SCENARIO.replace("LO", &lo_priority.to_string()));
    let mut out = vec![Vec::new(); columns.len()];
    for seed in 1..=8 {
        let cfg = RunConfig {
            warmup: SimDuration::from_secs(200),
            ..RunConfig::new(seed, SimDuration::from_secs(2_200))
        };
        let r = models::run(&sc, &cfg);
        assert!(r.error.is_none() && r.violations.is_empty(), "{:?} {:?}", r.error, r.violations);
        for (i, c) in columns.iter().enumerate() {
            out[i].push(get(&r, c));
        }
    }
    out
}

fn assert_close(what: &str, xs: &[f64], expected: f64) {
    let r = Replications::of(xs).expect("finite values");
    let tol = (0.02 * expected).max(4.0 * r.std_err);
    eprintln!("{what}: {:.4} (se {:.4}) vs {expected:.4}, tolerance {tol:.4}", r.mean, r.std_err);
    assert!((r.mean - expected).abs() <= tol, "{what}: {} vs {expected}", r.mean);
}

/// Non-preemptive priority M/G/1 (Cobham 1954): class k waits W0 / ((1 − σ_{k−1})(1 −
/// σ_k)), σ_k the load of classes 1..=k, W0 = Σ λ_i E[S_i²] / 2 the mean residual work
/// an arrival finds in service. Here S = 0.1 s constant (E[S²] = 0.01 s²), λ_hi = 4/s,
/// λ_lo = 2/s: σ_hi = 0.4, σ = 0.6, W0 = 6 × 0.01 / 2 = 0.03 s, so W_hi = 0.03 / 0.6 =
/// 50 ms and W_lo = 0.03 / (0.6 × 0.4) = 125 ms; latency = W + 100 ms: 150 and 225 ms.
/// (FIFO M/D/1 would give both 0.6 × 0.1 / (2 × 0.4) = 75 ms of wait: (4 × 50 + 2 × 125) /
/// 6 = 75, the conservation law.)
#[test]
fn two_bands_wait_as_the_priority_md1() {
    let cols = ["source.hi.latency_ms_mean", "source.lo.latency_ms_mean"];
    let r = replicate(0, &cols);
    assert_close("hi latency (ms)", &r[0], 150.0);
    assert_close("lo latency (ms)", &r[1], 225.0);
}

/// `lo` sheddable (priority −1): refused whenever the server is busy (in flight ≥ 1), so by
/// PASTA its admitted share x is the idle fraction: x = 1 − ρ_hi − λ_lo·S·x, x = (1 − 0.4)
/// / (1 + 0.2) = 0.5. `hi` then never waits behind a queued `lo` call: its wait is the
/// residual of the call in service, W0 = (λ_hi + λ_lo·x) E[S²] / 2 = 5 × 0.01 / 2 = 25 ms,
/// over 1 − ρ_hi: 41.67 ms (latency 141.67 ms).
#[test]
fn the_sheddable_band_is_a_loss_system() {
    let cols = ["source.lo.rejected", "source.lo.offered", "source.hi.latency_ms_mean"];
    let r = replicate(-1, &cols);
    let shed: Vec<f64> = r[0].iter().zip(&r[1]).map(|(a, b)| a / b).collect();
    assert_close("lo shed fraction", &shed, 0.5);
    assert_close("hi latency (ms)", &r[2], 100.0 + 25.0 / 0.6);
}

/// The TTL through the world (the governor's own timer and its answers): a call every
/// 100 ms onto one slot held 1010 ms per call, ttl 230 ms, scans every 50 ms. The slot
/// serves one call per 1010 ms; every other call is evicted `rejected:timeout`, by a scan
/// or at dispatch, so no call that is served waited more than the TTL (latency in [1010,
/// 1240] ms) and the evictions are exactly the source's timeout refusals.
#[test]
fn calls_past_their_ttl_are_evicted_and_never_served() {
    let sc = load(
        r#"Scenario(
        name: "ttl",
        sources: [(name: "s", interarrival: Constant("100ms"), target: "c")],
        flow_controllers: [FlowController(name: "f", limit: 1, ttl: "230ms",
                                          expiry_cleanup_interval: "50ms")],
        call_sites: [(name: "c", governors: [FlowController("f")], upstream: "b")],
        stations: [(name: "b", servers: 10, service: Constant("1010ms"))],
    )"#,
    );
    let r = run_checked(&sc, &cfg(1, 101));
    let (completed, timeouts) = (get(&r, "source.s.completed"), get(&r, "source.s.rejected"));
    eprintln!(
        "completed {completed}, evicted {timeouts}, latency {}..{} ms",
        get(&r, "source.s.latency_ms_p50"),
        get(&r, "source.s.latency_ms_max")
    );
    assert!((99.0..=100.0).contains(&completed), "101 s / 1.01 s per call: {completed}");
    assert_eq!(timeouts, get(&r, "source.s.rejected_timeout"));
    assert_eq!(timeouts, get(&r, "flow_controller.f.evicted_ttl"));
    assert!(timeouts >= get(&r, "source.s.offered") - completed - 3.0);
    assert!(get(&r, "source.s.latency_ms_max") <= 1240.0);
    assert!(get(&r, "source.s.latency_ms_p50") >= 1010.0);
}
