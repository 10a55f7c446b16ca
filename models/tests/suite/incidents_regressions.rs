//! Regressions found while writing the incident scenarios (`incidents_*.rs`).

use crate::support::*;
use models::{Outcome, Reason};
use sim_core::{SimDuration, SimTime};

/// A timed-out attempt's work keeps running (no cancellation) and ends during the retry's
/// back-off: it must not be taken for the answer of the call waiting to be re-sent (it
/// was: the answer climbed the stack a second time — a breaker panicked with "outcome of
/// a call this breaker did not admit", a lone retry ended the call with a retry due).
/// One request, 1.05 s of service against a 1 s timeout, 3 attempts 100 ms apart:
/// timeouts at 1.0, 2.1 and 3.2 s; the request fails with `timeout` at 3.2 s; the
/// station serves three attempts, all abandoned.
#[test]
fn stale_work_finishing_during_a_retry_backoff_is_not_the_answer() {
    let text = r#"Scenario(name: "stale",
        sources: [(name: "a", interarrival: Constant("1s"), limit: Some(1), target: "c")],
        retries: [(name: "r", max_attempts: 3, backoff: Fixed(wait_duration: "100ms"))],
        circuit_breakers: [(name: "b")],
        call_sites: [(name: "c", governors: GOVS, upstream: "llm", timeout: "1s")],
        stations: [(name: "llm", servers: 4, service: Constant("1050ms"))],
    )"#;
    for govs in [r#"[Retry("r")]"#, r#"[Retry("r"), CircuitBreaker("b")]"#] {
        let mut c = cfg(1, 10);
        c.sample_every = Some(SimDuration::from_secs(10));
        let r = run_checked(&load(&text.replace("GOVS", govs)), &c);
        assert_eq!(r.requests.len(), 1, "{govs}");
        let q = &r.requests[0];
        assert_eq!(q.outcome, Some(Outcome::Failed(Reason::Timeout)), "{govs}");
        assert_eq!(q.end, Some(SimTime(3_200_000_000)), "{govs}");
        assert_eq!(series_total(&r, "station.llm.completed"), 3.0, "{govs}");
        assert_eq!(get(&r, "station.llm.abandoned_work"), 3.0, "{govs}");
    }
}
