//! The incident library, breakers and failures (SPEC §6 incidents 13): each
//! `experiments/incidents/*.ron` file is loaded as a user would, shortened, run on its
//! first seeds (every variant on the same traffic), and the direction and size of the
//! effect asserted with bounds derived from the physics.

mod incident_support;
use incident_support::*;

/// Incident 13. A fault of 6 s (60–66 s): the breaker opens within ~1 s (10 calls of the
/// 20-call window at 50/s, 40 % failed). 3 s open wait: it half-opens ≈ 3 s later while
/// the provider is still down — the probes fail and it re-opens (≥ 1 extra OPEN →
/// HALF_OPEN → OPEN cycle: ≥ 5 state changes for the fault). 10 s: the first probes come
/// after the recovery — exactly CLOSED → OPEN → HALF_OPEN → CLOSED, 3 state changes.
#[test]
fn incident_13_flapping_breaker_short_open_wait_cycles() {
    let r = run("13-flapping-breaker.ron", Some(90), 2, false);
    for t in r.transitions("fix", "circuit_breaker.cb") {
        let names: Vec<&str> = t.iter().map(|x| x.1.as_str()).collect();
        assert_eq!(names, ["CLOSED -> OPEN", "OPEN -> HALF_OPEN", "HALF_OPEN -> CLOSED"]);
    }
    for t in r.transitions("failure", "circuit_breaker.cb") {
        let reopen = t.iter().filter(|x| x.1 == "HALF_OPEN -> OPEN").count();
        assert!(reopen >= 1, "probes against an unrecovered provider re-open it: {t:?}");
    }
    assert!(
        r.mean("failure", "circuit_breaker.cb.state_changes")
            > r.mean("fix", "circuit_breaker.cb.state_changes")
    );
}
