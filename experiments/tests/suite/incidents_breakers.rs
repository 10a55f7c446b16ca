//! The incident library, breakers and failures (docs/domain.md §6, incidents 3, 4, 11, 13, 14, 18): each
//! `experiments/incidents/*.ron` file is loaded as a user would, shortened, run on its
//! first seeds (every variant on the same traffic), and the direction and size of the
//! effect asserted with bounds derived from the physics.

use crate::incident_support;
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

/// Incident 3. During the outage a chat request holds a thread for 3 attempts × 3 s =
/// 9 s: 5.5/s × 9 s ≈ 50 threads wanted > 32, so the pool and its queue of 100 fill and
/// search (healthy, 50 ms) is refused with them.
/// * failure: > 20 % of search refused `pool_full` (30 of the 40 min are outage).
/// * fix: the breaker opens after ~10 calls; a chat call then costs a fallback of
///   ~150 ms: search never refused, no chat request fails (degraded instead).
#[test]
fn incident_03_outage_pool_collapse_vs_breaker_and_fallback() {
    let r = run("03-outage-without-breaker.ron", None, 1, false);
    let offered = r.mean("failure", "source.search.offered");
    assert!(r.mean("failure", "source.search.rejected_pool_full") > 0.2 * offered);
    assert_eq!(r.mean("fix", "source.search.rejected_pool_full"), 0.0);
    assert_eq!(r.mean("fix", "source.chat.failed") + r.mean("fix", "source.chat.rejected"), 0.0);
    assert!(r.mean("fix", "source.chat.degraded") > 0.5 * r.mean("fix", "source.chat.offered"));
}

/// Incident 4. gpt4 fails for 20 s. One global breaker opens (≥ 10 s open each time) for
/// both features: summarise, whose model never failed, loses ≥ 10 s × 50/s = 500 of its
/// ≈ 9,000 requests (> 5 %). Per-model breakers: summarise loses none; chat is answered
/// by the small model (degraded), none failed or refused.
#[test]
fn incident_04_global_breaker_vs_per_model() {
    let r = run("04-global-breaker.ron", None, 1, false);
    let offered = r.mean("failure", "source.sum.offered");
    assert!(r.mean("failure", "source.sum.rejected_breaker_open") > 0.05 * offered);
    assert_eq!(r.mean("fix", "source.sum.rejected") + r.mean("fix", "source.sum.failed"), 0.0);
    assert_eq!(r.mean("fix", "source.chat.rejected") + r.mean("fix", "source.chat.failed"), 0.0);
    assert!(r.mean("fix", "source.chat.degraded") > 500.0);
}

/// Incident 11. Measured from the slowdown (30 s) to the end (180 s). Naive: once every call times out
/// each request makes 3 calls (amplification → 3; > 2.5), the 150 calls/s exceed the
/// saturated ≈ 80/s and the queue never drains: goodput < 5 % of the offered. Budgeted
/// (≤ 1.1 calls per request ≈ 55/s < 80/s) and breaker-protected retries drain the
/// backlog: > 70 % of the requests succeed (the slowdown's own 10 s are lost).
#[test]
fn incident_11_retry_storm_amplification_and_recovery() {
    let r = run("11-retry-storm.ron", None, 1, false);
    assert!(r.mean("failure", "source.chat.amplification") > 2.5);
    let offered = r.mean("failure", "source.chat.offered");
    assert!(r.mean("failure", "source.chat.success") < 0.05 * offered, "collapse");
    assert!(r.mean("fix", "source.chat.amplification") < 1.2);
    for v in ["fix", "breaker"] {
        assert!(r.mean(v, "source.chat.success") > 0.7 * offered, "{v} recovers");
    }
}

/// Incident 14. Measured from 40 s: the breaker is open and the 5 s-fresh entries are
/// stale. Uncapped: every request is told "busy" (`rejected_shed`). Capped: ≤ 20 busy
/// answers per 1 s window (≤ 20 × 140 + 20), the rest served from the stale cache
/// (degraded) — ≥ 80 % of the requests (keys never cached stay failed).
#[test]
fn incident_14_degradation_storm_busy_cap() {
    let r = run("14-degradation-storm.ron", None, 1, false);
    let ended =
        r.mean("failure", "source.chat.offered") - r.mean("failure", "source.chat.in_flight_end");
    assert!(r.mean("failure", "source.chat.rejected_shed") >= 0.99 * ended);
    assert!(r.mean("fix", "source.chat.rejected_shed") <= 20.0 * 140.0 + 20.0);
    assert!(r.mean("fix", "source.chat.degraded") > 0.8 * ended);
}

/// Incident 18. In the breaker's last HALF_OPEN episode (after the recovery) 5 probes
/// are admitted. Without priority-aware half-open every other call arriving meanwhile is
/// refused: at 20 P0/s over the ≈ 1 s episode, most P0 arrivals are refused. With it they
/// wait (≤ 5 s) and are released P0 first when it closes: none refused, all answered.
#[test]
fn incident_18_half_open_priority_p0_first() {
    let r = run("18-half-open-priority.ron", None, 1, true);
    let episode_p0 = |v: &str| {
        let rec = r.of(v)[0];
        let t = &r.transitions(v, "circuit_breaker.b")[0];
        let i = t.iter().rposition(|x| x.1 == "OPEN -> HALF_OPEN").expect("a half-open episode");
        let (a, b) = (t[i].0, t.get(i + 1).map_or(f64::INFINITY, |x| x.0));
        let p0: Vec<_> = rec
            .requests
            .iter()
            .filter(|q| q.source == 0 && (a..b).contains(&(q.arrival.0 as f64 / 1e9)))
            .collect();
        let refused = p0
            .iter()
            .filter(|q| q.outcome == Some(models::Outcome::Rejected(models::Reason::BreakerOpen)))
            .count();
        let ok = p0.iter().filter(|q| q.outcome == Some(models::Outcome::Success)).count();
        (p0.len(), refused, ok)
    };
    let (n, refused, _) = episode_p0("failure");
    assert!(n >= 5 && refused * 2 > n, "failure: {refused} of {n} P0 refused");
    let (n, refused, ok) = episode_p0("fix");
    assert!(n >= 5 && refused == 0 && ok == n, "fix: {refused} refused, {ok} of {n} answered");
}
