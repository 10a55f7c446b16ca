//! Connection pools in the running world: docs/domain.md §6, incident 10, the stale first request after
//! an idle period longer than the server's idle close, and its fixes.

use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::{RunConfig, RunOutput, Scenario};
use sim_core::SimDuration;

fn scenario(pool: &str) -> Scenario {
    let text = format!(
        r#"Scenario(
    name: "stale",
    sources: [(name: "chat", interarrival: Constant("70s"), target: "llm", limit: Some(10))],
    connection_pools: [ConnPool(name: "http", max_total: 4, max_per_route: 4, tcp_rtt: "20ms",
                                tls_round_trips: 2, server_idle_timeout: "60s", {pool})],
    call_sites: [(name: "llm", upstream: "llm", connection_pool: "http", timeout: "5s")],
    stations: [(name: "llm", servers: 4, service: Constant("400ms"))],
)"#
    );
    let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).expect("valid scenario");
    sc.check().expect("consistent");
    sc
}

fn run(sc: &Scenario) -> RunOutput {
    // Requests at 0, 70, …, 630 s: ten of them, each after 70 s of idle.
    let cfg = RunConfig { record_requests: true, ..RunConfig::new(1, SimDuration::from_secs(700)) };
    let r = models::run(sc, &cfg);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.fingerprint, models::run(sc, &cfg).fingerprint, "determinism");
    let s = &r.summary;
    assert_eq!(s.get("source.chat.offered").unwrap(), 10.0);
    assert_eq!(
        s.get("source.chat.offered").unwrap(),
        s.get("source.chat.completed").unwrap() + s.get("source.chat.failed").unwrap(),
        "conservation: every request answered or failed"
    );
    r
}

fn latencies_ms(r: &RunOutput) -> Vec<f64> {
    r.requests.iter().map(|q| (q.end.unwrap() - q.arrival).0 as f64 / 1e6).collect()
}

/// Idle 70 s > the server's 60 s close, no validation, no client keep-alive limit: the
/// pooled connection is dead whenever it was idle. The first request connects (20 ms ×
/// (1 + 2 TLS round trips) = 60 ms, + 400 ms of service); the next borrows the idle,
/// server-closed connection and fails with `connect_error` after the 20 ms detection
/// delay; the dead connection is discarded, so the one after connects afresh — and so on:
/// every other request fails.
#[test]
fn stale_connection_fails_the_first_request_after_idle() {
    let r = run(&scenario(r#"validate_after_inactivity: "0s", keep_alive: "0s""#));
    let s = &r.summary;
    assert_eq!(s.get("source.chat.completed").unwrap(), 5.0);
    assert_eq!(s.get("source.chat.failed_connect_error").unwrap(), 5.0);
    let lat = latencies_ms(&r);
    assert_eq!(lat, [460.0, 20.0, 460.0, 20.0, 460.0, 20.0, 460.0, 20.0, 460.0, 20.0]);
}

/// Fix 1, validation after 2 s of inactivity: the dead connection is found on borrow (one
/// 20 ms round trip) and replaced (60 ms): every request succeeds in 480 ms.
#[test]
fn validation_on_borrow_fixes_it() {
    let r = run(&scenario(r#"validate_after_inactivity: "2s", keep_alive: "0s""#));
    assert_eq!(r.summary.get("source.chat.completed").unwrap(), 10.0);
    let lat = latencies_ms(&r);
    assert_eq!(lat[0], 460.0);
    assert!(lat[1..].iter().all(|&l| l == 480.0), "{lat:?}");
}

/// Fix 2, a client keep-alive (30 s) shorter than the server's idle close (60 s): the
/// client closes idle connections first, so each request connects afresh (460 ms).
#[test]
fn shorter_client_keep_alive_fixes_it() {
    let r = run(&scenario(r#"validate_after_inactivity: "0s", keep_alive: "30s""#));
    assert_eq!(r.summary.get("source.chat.completed").unwrap(), 10.0);
    assert!(latencies_ms(&r).iter().all(|&l| l == 460.0));
}
