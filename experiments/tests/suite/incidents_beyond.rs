//! The incident library beyond docs/domain.md §6 (issue 17: incidents 19 and 20; issue 14: 21; issue
//! 29: 22–26): each file loaded
//! as a user would, run on its first seeds (every variant on the same traffic), the
//! direction and size of the effect asserted with bounds derived from the physics.

use crate::incident_support;
use incident_support::*;

/// Incident 20. Capacity 300/s, one retry after 1 s, a 10 s slowdown (capacity 30/s):
/// ≈ 10 × (2λ − 30) calls pile up. Once a backlog exists each request costs two services,
/// so it drains (at 300 − 2λ) only below λ = 150.
/// * fix (140/s) and below: recovered within the 240 s horizon — the backlog of ≈ 2,500
///   drains at ≥ 20/s in ≤ 125 s, then a 10 s hold — with amplification ≈ 1 and no retry
///   at the end, as before the slowdown (a first attempt times out only when its wait
///   passes 1 s: never at ρ ≤ 0.47).
/// * failure (160/s) and above: never recovered; the queue grows at 2λ − 300 ≥ 20/s,
///   every first attempt times out and is retried: half the attempts are retries at the
///   end (≈ 0.5, vs 0 before), goodput < 10 % of the baseline.
#[test]
fn incident_20_retry_storm_threshold() {
    let r = run("20-retry-storm-threshold.ron", None, 2, false);
    for v in ["lambda-100", "lambda-120", "fix"] {
        assert_eq!(r.mean(v, "recovery.recovered"), 1.0, "{v} recovers");
        assert!(r.mean(v, "recovery.time_to_recover_s") <= 230.0);
        assert!(r.mean(v, "recovery.end_amplification") < 1.05, "{v}");
        assert!(r.mean(v, "recovery.end_retry_share") < 0.01, "{v}");
    }
    // Recovery slows as λ nears the threshold (the backlog drains at 300 − 2λ).
    let t = |v| r.mean(v, "recovery.time_to_recover_s");
    assert!(t("lambda-100") < t("lambda-120") && t("lambda-120") < t("fix"));
    for v in ["lambda-155", "failure", "lambda-200"] {
        assert_eq!(r.mean(v, "recovery.recovered"), 0.0, "{v} stays down");
        let share = r.mean(v, "recovery.end_retry_share");
        assert!((0.45..=0.55).contains(&share), "{v}: retry share {share}");
        assert!(r.mean(v, "recovery.baseline_retry_share") < 0.01, "{v}: none before");
        let (g0, ge) = (r.mean(v, "recovery.baseline_goodput"), r.mean(v, "recovery.end_goodput"));
        assert!(ge < 0.1 * g0, "{v}: goodput {ge} vs {g0} before");
        assert!(r.mean(v, "recovery.end_amplification") > 1.4, "{v}");
    }
}

/// Incident 19. 50 servers × 0.8 s = 62.5 calls/s; the quota admits 100 in progress (50
/// serving + 50 queued), 429 beyond; 40/s, ×2 (80/s) from 60 s to 120 s.
/// * failure (and gate-120, which never binds under the quota): in the surge the queue
///   fills and the ≈ 17.5/s excess gets 429 (≈ 1,000 over the minute).
/// * gate-50 (hand-sized at the servers): no queue, no 429.
/// * aimd (loss-based): it learns only from 429s — it must exceed the quota to back off,
///   so it pays some 429s (fewer than no limit), with the goodput of no limit.
/// * fix (Gradient2): the RTT grows with the provider's queue long before the queue is 50
///   deep; the estimate stops growing at 1.5× the long-term RTT, so (almost) no 429, and
///   goodput near the hand-sized gate's.
/// * vegas: its no-load RTT is the fastest sample seen (≈ a fifth of the mean for a
///   log-normal CV 0.5), so `queue = limit × (1 − noload ÷ rtt) ≈ 0.7 × limit` exceeds
///   beta at any limit above ≈ 8: the limit sinks and goodput collapses.
/// * envoy: each minRTT window pins the limit at 3 until 50 calls return (≈ 13 s of 0.8 s
///   calls), every 60–69 s: few 429s, but a third of the goodput refused locally.
#[test]
fn incident_19_adaptive_limit_surge() {
    let r = run("19-adaptive-limit-surge.ron", None, 2, false);
    let c429 = |v: &str| r.mean(v, "source.chat.rejected_upstream_429");
    let ok = |v: &str| r.mean(v, "source.chat.success");
    assert!(c429("failure") > 500.0, "{}", c429("failure"));
    assert_eq!(c429("gate-120"), c429("failure"), "a gate above the quota never binds");
    assert_eq!(c429("gate-50"), 0.0);
    assert!(c429("aimd") > 0.0 && c429("aimd") < 0.6 * c429("failure"));
    assert!(ok("aimd") > 0.97 * ok("failure"));
    assert!(c429("fix") < 0.02 * c429("failure"), "latency-based: {}", c429("fix"));
    assert!(ok("fix") > 0.9 * ok("gate-50"), "{} vs {}", ok("fix"), ok("gate-50"));
    assert!(ok("vegas") < 0.3 * ok("gate-50"));
    assert!(r.mean("vegas", "vegas_limit.v.limit_end") <= 15.0);
    assert!(c429("envoy") < 0.2 * c429("failure"));
    assert!(ok("envoy") < 0.8 * ok("gate-50"), "the minRTT windows refuse traffic");
    assert!(r.mean("envoy", "adaptive_concurrency.e.min_rtt_calculations") >= 3.0);
}

/// Incident 21 (derivation in its file and in models/tests/suite/retry_storm_delay.rs):
/// one M/M/1 server (μ = 100/s), λ = 55/s, timeout 100 ms, one retry after U(0, 20 s). An
/// attempt times out iff its sojourn exceeds τ = 100 ms − round trip; the mean-field fixed
/// point x = λ(1 + e^{−(μ − x)τ}) gives p (retries per request) and x/μ (utilisation) while
/// λ is below λ* = W(e^{μτ − 1})/τ: 70.5/s at τ = 100 ms, 66.6 at 80, 58.5 at 50, 51.9 at 30.
/// * no-delay and fix (τ = 100 ms): p = 0.0119, x/μ = 0.557; rtt-20ms: p = 0.0314, 0.567;
/// * rtt-50ms (94 % of λ*): near p = 0.167, x/μ = 0.642 (a seed may tip for a while);
/// * failure (τ = 30 ms, λ > λ*): the storm — the server saturates, nearly every attempt
///   times out, the goodput falls to a few percent.
///
/// Tolerances on 2 seeds × 600 s: p within 35 % (timeouts come in bursts: the seeds of the
/// file spread ±20 %), utilisation within 2 %.
#[test]
fn incident_21_retry_storm_network_delay() {
    let r = run("21-retry-storm-network-delay.ron", None, 2, false);
    let p = |v: &str| r.mean(v, "retry.r.retries") / r.mean(v, "source.chat.offered");
    let u = |v: &str| r.mean(v, "station.llm.utilization");
    for (v, p_want, u_want) in
        [("no-delay", 0.0119, 0.557), ("fix", 0.0119, 0.557), ("rtt-20ms", 0.0314, 0.567)]
    {
        assert!((p(v) - p_want).abs() <= 0.35 * p_want, "{v}: p {} vs {p_want}", p(v));
        assert!((u(v) - u_want).abs() <= 0.02 * u_want, "{v}: utilisation {} vs {u_want}", u(v));
        let ok = r.mean(v, "source.chat.success") / r.mean(v, "source.chat.offered");
        assert!(ok > 0.99, "{v}: success share {ok}");
    }
    assert!(p("rtt-50ms") > 0.12 && u("rtt-50ms") > 0.62, "rtt-50ms: near 0.167 / 0.642");
    assert!(p("no-delay") < p("rtt-20ms") && p("rtt-20ms") < p("rtt-50ms"));
    assert!(
        p("failure") > 0.85 && u("failure") > 0.95,
        "the storm: {} {}",
        p("failure"),
        u("failure")
    );
    let ok = r.mean("failure", "source.chat.success") / r.mean("failure", "source.chat.offered");
    assert!(ok < 0.15, "goodput collapses: success share {ok}");
}

/// Incident 22. Capacity 300/s, 280 requests/s, one retry after 1 s, a 10 s slowdown
/// (capacity 30/s): ≈ 10 × (280 − 30) = 2,500 first attempts pile up. With a backlog
/// every first attempt times out.
/// * failure (a 10 % ratio budget): the budget lets 10 % of the requests retry, 1.1 × 280 =
///   308 > 300: the backlog grows at 8/s for good; every attempt times out (goodput 0) and
///   the retry share is the budget's 0.1 ÷ 1.1 = 0.091 at the end, 0 before.
/// * no-retry: 280 < 300, the backlog drains at 20/s in ≈ 125 s, then a 10 s hold: within
///   the 300 s horizon.
/// * fix (the SRE throttler below the retry): accepts stop while the attempts go on, so
///   once attempts > 2 × accepts over the window it refuses the excess locally (refusals
///   are not retried): the server is offered less than 300/s and the backlog drains; no
///   retry at the end. It must refuse something, and recover within the horizon.
/// * grpc-bucket: failures empty the bucket (10 tokens, −1 each; retries only above 5), so
///   after about five failures nothing is retried: like no-retry.
#[test]
fn incident_22_retry_storm_ratio_budget() {
    let r = run("22-retry-storm-ratio-budget.ron", None, 2, false);
    assert_eq!(r.mean("failure", "recovery.recovered"), 0.0, "the budget's retries sustain it");
    let share = r.mean("failure", "recovery.end_retry_share");
    assert!((share - 0.1 / 1.1).abs() < 0.005, "retry share {share}");
    assert!(r.mean("failure", "recovery.baseline_retry_share") < 0.01);
    let (g0, ge) =
        (r.mean("failure", "recovery.baseline_goodput"), r.mean("failure", "recovery.end_goodput"));
    assert!(ge < 0.1 * g0, "goodput {ge} vs {g0} before");
    for v in ["fix", "grpc-bucket", "no-retry"] {
        assert_eq!(r.mean(v, "recovery.recovered"), 1.0, "{v} recovers");
        assert!(r.mean(v, "recovery.time_to_recover_s") <= 290.0, "{v}");
        assert!(r.mean(v, "recovery.end_retry_share") < 0.01, "{v}");
    }
    assert!(r.mean("fix", "sre_throttler.t.rejected") > 1000.0, "the throttler refuses");
    assert_eq!(r.mean("failure", "sre_throttler.t.requests"), 0.0, "not in the failure's stack");
    assert!(r.mean("grpc-bucket", "retry.r.retries") < 100.0, "the bucket stops retrying");
}

/// Incident 23. 20 servers × 200 ms = 100 calls/s, 70/s offered, 3 attempts 400 ms apart,
/// no cancellation; ×2 service (capacity 50/s) from 30 s to 50 s.
/// * no-hedge: the backlog (≤ 20 s × (70 − 50) = 400 calls) drains at 100 − 70 = 30/s, in
///   ≈ 13 s, then a 10 s hold: recovered well within the 300 s horizon.
/// * failure: once calls wait past 400 ms every call sends both hedges, 3 × 70 = 210/s >
///   100/s, so the wait never falls back below the delay: never recovered, goodput at the
///   end < 10 % of the baseline (every call times out at 2 s), and from 30 s to the end
///   (≥ 300 s) two hedges per call: ≥ 1.5 × 70 × 300 = 31,500 hedges (a quarter spare for
///   the Poisson count and the first seconds of the brown-out).
/// * fix (hedges + 1 ≤ 10 % of calls over 10 s): the offered load stays ≤ 1.1 × 70 = 77/s
///   < 100/s, so it drains like no-hedge (a little slower: 100 − 77 = 23/s); hedges ≤ 11 %
///   of the ≈ 70 × 360 calls and the budget refuses the rest.
#[test]
fn incident_23_hedging_brownout() {
    let r = run("23-hedging-brownout.ron", None, 2, false);
    assert_eq!(r.mean("failure", "recovery.recovered"), 0.0, "the storm outlives the brown-out");
    let (g0, ge) =
        (r.mean("failure", "recovery.baseline_goodput"), r.mean("failure", "recovery.end_goodput"));
    assert!(ge < 0.1 * g0, "goodput {ge} vs {g0} before");
    assert!(r.mean("failure", "hedge.h.hedges_sent") > 31_500.0);
    for v in ["fix", "no-hedge"] {
        assert_eq!(r.mean(v, "recovery.recovered"), 1.0, "{v} recovers");
        assert!(r.mean(v, "recovery.time_to_recover_s") <= 60.0, "{v}");
    }
    let calls = r.mean("fix", "source.s.offered");
    assert!(r.mean("fix", "hedge.h.hedges_sent") <= 0.11 * calls);
    assert!(r.mean("fix", "hedge.h.throttled") > 0.0, "the budget refuses hedges");
}

/// Incident 24. 10 replicas × 4 slots × 500 ms = 80/s; 160/s from 180 s to 480 s; the HPA's
/// replicas take ≈ 120 s to start.
/// * failure: 80/s beyond capacity for at least the 15 s sync plus the 120 s provisioning
///   ≈ 10,800 calls, of which a 5 s queue holds 400: ≥ 10,000 time out (measured ≈ 49,000:
///   the dead calls' work keeps the queue full to the end of the surge).
/// * fix (34 replicas from 30 s: 272/s, ρ = 0.59 at the peak): a wait past 5 s needs a
///   queue of ≥ 1,360 calls at 272/s — none time out; the HPA never scales past 34.
/// * no-cold-start: the same HPA with replicas at once: the syncs (17, then 29, 34…) leave
///   at most a few 15 s periods short; fewer than a quarter of the failure's timeouts.
#[test]
fn incident_24_autoscaler_late_for_a_surge() {
    let r = run("24-autoscaler-late-for-a-surge.ron", None, 2, false);
    let timeouts = |v: &str| r.mean(v, "source.promo.failed_timeout");
    assert!(timeouts("failure") >= 10_000.0, "{}", timeouts("failure"));
    assert_eq!(timeouts("fix"), 0.0);
    assert_eq!(r.mean("fix", "autoscaler.hpa.peak_replicas"), 34.0);
    assert!(timeouts("no-cold-start") < 0.25 * timeouts("failure"));
    assert!(r.mean("failure", "autoscaler.hpa.scale_ups") >= 2.0, "more than one round");
}

/// Incident 25. 40 permits × 1 s = 40/s; 30/s, 50/s from 60 s to 180 s; users leave at
/// 10 s; SLA 3 s.
/// * failure (FIFO): the wait passes 3 s once the queue holds 3 s × 40 = 120 calls, 12 s
///   into the surge (it grows at 50 − 40 = 10/s), and stays above until the backlog has
///   drained after the surge: ≥ 100 s of the 300 measured at ≥ 30/s, so ≥ 3,000 of ≈ 11,500
///   requests are answered late or not at all — the SLA share answered is < 0.7.
/// * codel-fifo: CoDel sheds what the surge brings beyond capacity, 10/s × 120 s = 1,200
///   (± 20 % for the Poisson counts and the law's reaction); the served calls stay fresh:
///   SLA share > 0.9 (measured 0.97).
/// * fix (with adaptive LIFO): the newest are served, so nearly every answer is on time
///   (> 0.9, measured 0.99) and the p99 is under half of FIFO's; the stale calls under
///   the LIFO stack are cut by the users' deadline instead of being shed.
#[test]
fn incident_25_surge_fifo_queue() {
    let r = run("25-surge-fifo-queue.ron", None, 2, false);
    let sla = |v: &str| r.mean(v, "class.chat.sla_met");
    assert!(sla("failure") < 0.7, "{}", sla("failure"));
    for v in ["fix", "codel-fifo"] {
        assert!(sla(v) > 0.9, "{v}: {}", sla(v));
    }
    let p99 = |v: &str| r.mean(v, "class.chat.latency_ms_p99");
    assert!(p99("fix") < 0.5 * p99("failure"), "{} vs {}", p99("fix"), p99("failure"));
    let shed = r.mean("codel-fifo", "codel_queue.q.dropped");
    assert!((960.0..=1440.0).contains(&shed), "shed {shed}");
    assert!(r.mean("fix", "codel_queue.q.lifo_takes") > 0.0);
}

/// Incident 26: loss systems, Erlang B. Chat 60 erlangs (14,400 calls measured, 7,200 of
/// them in the 180 s flood), batch 300 erlangs in the flood; calls 1.5 s.
/// * failure: 100 permits offered 360 erlangs in the flood: B(100, 360) = 0.7233 of chat's
///   7,200 refused, 5,208 (± 10 %: two seeds' Poisson counts); outside it B(100, 60) ≈ 0.
/// * static-split: chat alone on 70 permits all the time, B(70, 60) = 0.02374 of 14,400:
///   343 (± 25 %: a count of a few hundred); batch on 30 offered 300: it carries
///   300 × (1 − B(30, 300) = 0.0996) = 29.9 erlangs, 19.9/s × 180 s = 3,586 (± 5 %).
/// * fix: chat is at worst the static split's 70 in the flood and has all 100 outside it:
///   fewer refusals than the static split; batch keeps its 30 and borrows what chat leaves
///   idle: more done than the static split.
#[test]
fn incident_26_batch_flood_partitions() {
    let r = run("26-batch-flood-partitions.ron", None, 2, false);
    let refused = |v: &str| r.mean(v, "source.chat.rejected_gate_full");
    let within = |x: f64, want: f64, tol: f64| (x - want).abs() <= tol * want;
    assert!(within(refused("failure"), 5_208.0, 0.10), "{}", refused("failure"));
    assert!(within(refused("static-split"), 343.0, 0.25), "{}", refused("static-split"));
    let batch = |v: &str| r.mean(v, "source.batch.success");
    assert!(within(batch("static-split"), 3_586.0, 0.05), "{}", batch("static-split"));
    assert!(refused("fix") < refused("static-split"));
    assert!(batch("fix") > batch("static-split"));
    assert!(r.mean("fix", "partitioned_limit.p.borrowed") > 0.0);
}
