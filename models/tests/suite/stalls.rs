//! Correlated stalls (`crate::stall`, `world/stalls.rs`) against closed forms: a
//! deterministic pause schedule on the timeline delays every request by exactly what the
//! pauses overlap, to the nanosecond; random pauses are counted and replay; a scenario
//! without stalls moves nothing.

use crate::support::{cfg, get, load, run_checked, stepped};
use models::{Outcome, RunOutput};
use sim_core::SimTime;

/// Pauses `(start, length)` in ms, sorted, disjoint; none at a multiple of 100 ms except
/// where a test says so.
type Pauses = [(u64, u64)];

const MS: u64 = 1_000_000;

/// The instant `t` (ns) is taken at: the end of a pause that holds it, else itself. A
/// timeline change applies after the events of its instant, so a pause from the timeline
/// holds what comes strictly after its start and before its end: (start, end).
fn held(t: u64, pauses: &Pauses) -> u64 {
    pauses.iter().find(|&&(p, l)| t > p * MS && t < (p + l) * MS).map_or(t, |&(p, l)| (p + l) * MS)
}

fn timeline(pauses: &Pauses) -> String {
    pauses
        .iter()
        .map(|(p, l)| {
            format!(r#"(at: "{p}ms", path: "stall.gc.pause", value: Duration("{l}ms")),"#)
        })
        .collect()
}

/// One request every 100 ms to a site (ten servers, 30 ms: nobody queues), the site's
/// client (`CallSite`) or the app's instance (`App`, local work `work` ms first) stalled.
fn scenario(host: &str, work: Option<u64>, pauses: &Pauses) -> String {
    let (app, apps) = match work {
        Some(w) => (
            r#"app: "api","#,
            format!(r#"apps: [(name: "api", local_work: Some(Constant("{w}ms")))],"#),
        ),
        None => ("", String::new()),
    };
    format!(
        r#"Scenario(
            name: "stalls",
            sources: [(name: "in", interarrival: Constant("100ms"), target: "llm", {app})],
            call_sites: [(name: "llm", upstream: "st")],
            stations: [(name: "st", servers: 10, service: Constant("30ms"))],
            {apps}
            stalls: [(name: "gc", host: {host})],
            timeline: [{}],
        )"#,
        timeline(pauses)
    )
}

fn check_ends(r: &RunOutput, expected_end: impl Fn(u64) -> u64) -> usize {
    let mut n = 0;
    for q in r.requests.iter().filter(|q| q.end.is_some()) {
        assert_eq!(q.outcome, Some(Outcome::Success), "request {}", q.request_id);
        let want = expected_end(q.arrival.0);
        assert_eq!(q.end.unwrap(), SimTime(want), "request arriving at {}", q.arrival);
        n += 1;
    }
    n
}

/// The paused client's side: a call it would send during a pause is sent at the pause's
/// end, and an answer reaching it during a pause is handled at the end. With S = 30 ms and
/// no queueing, a request arriving at `a` ends at held(held(a) + S): delayed by the part of
/// the pause that overlaps [answer, pause end) — exactly, in integer nanoseconds.
#[test]
fn a_paused_client_takes_every_answer_at_the_pause_end() {
    // 1010+50: answer of 1000 (at 1030) held to 1060. 2120+300: 2100's answer (2130) held
    // to 2420, the sends of 2200, 2300, 2400 held to 2420 (answered 2450). 3300+10: the
    // arrival at 3300 comes before the change of its instant: sent at once, unaffected.
    // 4025+5: 4000's answer at exactly the pause's end (4030) is not held.
    let pauses = [(1010, 50), (2120, 300), (3300, 10), (4025, 5)];
    let sc = load(&scenario(r#"CallSite("llm")"#, None, &pauses));
    let r = stepped(&sc, &cfg(7, 6));
    let s = 30 * MS;
    let n = check_ends(&r, |a| held(held(a, &pauses) + s, &pauses));
    assert!(n >= 59, "{n} requests");
    // Spot checks of the closed form.
    let end_of = |a_ms: u64| {
        r.requests.iter().find(|q| q.arrival == SimTime(a_ms * MS)).and_then(|q| q.end).unwrap()
    };
    assert_eq!(end_of(1000), SimTime(1060 * MS));
    assert_eq!(end_of(2100), SimTime(2420 * MS));
    assert_eq!(end_of(2300), SimTime(2450 * MS));
    assert_eq!(end_of(3300), SimTime(3330 * MS));
    assert_eq!(end_of(4000), SimTime(4030 * MS));
    assert_eq!(get(&r, "stall.gc.pauses"), 4.0);
    assert!((get(&r, "stall.gc.paused_s") - 0.365).abs() < 1e-12);
}

/// A paused app instance: local work stretches by exactly the pause time inside it, an
/// arrival during a pause waits in the accept backlog until its end, and its answers are
/// held like a client's. With W = 40 ms of local work and S = 30 ms: start = held(a),
/// work end e = start + W + Σ L over pauses starting in [start, e) (e growing as they
/// add), end = held(e + S).
#[test]
fn local_work_stretches_by_the_overlap_and_arrivals_wait_for_the_end() {
    // 1020+100: work [1000, 1040) stopped 20 ms in: ends 1140, answered 1170. 2050+30:
    // answer of 2000 (work to 2040, answer 2070) held to 2080. 3250+100: arrival 3300 held
    // to 3350, work to 3390, answer 3420; 3200's answer at 3270 held to 3350. 5010+20,
    // 5040+20: two pauses inside one work [5000, 5040 + 20 + 20).
    let pauses = [(1020, 100), (2050, 30), (3250, 100), (5010, 20), (5040, 20)];
    let sc = load(&scenario(r#"App("api")"#, Some(40), &pauses));
    let r = stepped(&sc, &cfg(7, 7));
    let (w, s) = (40 * MS, 30 * MS);
    let expected = |a: u64| {
        let start = held(a, &pauses);
        let mut e = start + w;
        for &(p, l) in &pauses {
            if p * MS >= start && p * MS < e {
                e += l * MS;
            }
        }
        held(e + s, &pauses)
    };
    let n = check_ends(&r, expected);
    assert!(n >= 69, "{n} requests");
    let end_of = |a_ms: u64| {
        r.requests.iter().find(|q| q.arrival == SimTime(a_ms * MS)).and_then(|q| q.end).unwrap()
    };
    assert_eq!(end_of(1000), SimTime(1170 * MS));
    assert_eq!(end_of(2000), SimTime(2080 * MS));
    assert_eq!(end_of(3200), SimTime(3350 * MS));
    assert_eq!(end_of(3300), SimTime(3420 * MS));
    assert_eq!(end_of(5000), SimTime(5110 * MS));
    assert_eq!(get(&r, "stall.gc.pauses"), 5.0);
}

/// A call's timeout due during its client's pause fires at the pause's end, not before:
/// the answer held to the same instant comes first (completions before timeouts), so a
/// call whose deadline fell inside the pause still succeeds if its answer reached the
/// client before the end.
#[test]
fn timers_fire_no_earlier_than_the_pause_end() {
    // Timeout 50 ms, service 30 ms; pause 1010+200: 1000's answer (1030) and its deadline
    // (1050) both held to 1210: the answer wins. 1100, 1200: sends held to 1210, answered
    // at 1240. Service 80 ms (> timeout) from 2.9 s on, pause 3020+100: 3000's deadline
    // (3050) and answer (3080) both held to 3120 — the answer first again, a success that
    // without the pause would have timed out at 3050.
    let mut text = scenario(r#"CallSite("llm")"#, None, &[(1010, 200), (3020, 100)]);
    text = text.replace(r#"upstream: "st")"#, r#"upstream: "st", timeout: "50ms")"#);
    text = text.replace(
        "timeline: [",
        r#"timeline: [(at: "2900ms", path: "station.st.service", value: DurationDist(Constant("80ms"))),"#,
    );
    let sc = load(&text);
    let r = run_checked(&sc, &cfg(3, 5));
    let q = |a_ms: u64| r.requests.iter().find(|q| q.arrival == SimTime(a_ms * MS)).unwrap();
    assert_eq!((q(1000).outcome, q(1000).end), (Some(Outcome::Success), Some(SimTime(1210 * MS))));
    assert_eq!(q(1100).end, Some(SimTime(1240 * MS)));
    // 3000: answer at 3080 and deadline at 3050, both inside [3020, 3120): held to 3120,
    // the answer first.
    assert_eq!((q(3000).outcome, q(3000).end), (Some(Outcome::Success), Some(SimTime(3120 * MS))));
    // 3100: sent at 3120, deadline 3170 before the answer at 3200: a timeout, on time.
    assert_eq!(q(3100).outcome, Some(Outcome::Failed(models::Reason::Timeout)));
    assert_eq!(q(3100).end, Some(SimTime(3170 * MS)));
}

/// Random GC-like pauses: a Poisson process per host from the host's own stream. Over a
/// long run the count is near rate × (run − paused time) and the paused share near
/// rate·L / (1 + rate·L); the run replays exactly, and the request's keyed luck is the same
/// as without the stall (the stall draws no keyed attribute).
#[test]
fn random_pauses_follow_their_rate() {
    // rate 2/s, L = 50 ms, 600 s: E[pauses] = 600 / (0.5 + 0.05) ≈ 1091, sd ≈ √1091·(0.5/0.55)
    // ≈ 30 (a renewal process's count); paused share 0.05/0.55 = 0.0909.
    let text = scenario(r#"CallSite("llm")"#, None, &[]).replace(
        r#"host: CallSite("llm"))"#,
        r#"host: CallSite("llm"), rate: 2.0, length: Constant("50ms"))"#,
    );
    let r = run_checked(&load(&text), &cfg(11, 600));
    let n = get(&r, "stall.gc.pauses");
    assert!((n - 1091.0).abs() < 5.0 * 30.0, "pauses {n}");
    let share = get(&r, "stall.gc.paused_s") / 600.0;
    assert!((share - 0.0909).abs() < 0.01, "paused share {share}");
}

/// A scenario with an empty stall list runs exactly as one without the field, and a stall
/// with no pause and no rate moves no request.
#[test]
fn a_stall_that_never_pauses_moves_nothing() {
    let base = r#"Scenario(
            name: "stalls",
            sources: [(name: "in", interarrival: Exponential(mean: "50ms"), target: "llm")],
            call_sites: [(name: "llm", upstream: "st")],
            stations: [(name: "st", servers: 2, service: Exponential(mean: "80ms"))],
        )"#;
    let a = run_checked(&load(base), &cfg(5, 60));
    let b = run_checked(&load(&base.replace("stations:", "stalls: [], stations:")), &cfg(5, 60));
    assert_eq!(a.fingerprint, b.fingerprint);
    let idle =
        base.replace("stations:", r#"stalls: [(name: "gc", host: CallSite("llm"))], stations:"#);
    let c = run_checked(&load(&idle), &cfg(5, 60));
    let ends = |r: &RunOutput| r.requests.iter().map(|q| (q.arrival, q.end)).collect::<Vec<_>>();
    assert_eq!(ends(&a), ends(&c));
    assert_eq!(get(&c, "stall.gc.pauses"), 0.0);
}

/// CPU starvation over an interval: `slowdown` f set at t₁ and back to 1 at t₂ makes local
/// work progress at 1/f inside [t₁, t₂). A request arriving at `a` with W = 40 ms of work:
/// done when the work-time ∫ rate reaches W; its call (S = 30 ms) is not slowed.
#[test]
fn a_slowdown_stretches_local_work_inside_its_interval_only() {
    // f = 2 over [1020, 1250) ms: 1000's work does 20 ms before 1020, then 20 ms at half
    // speed (40 ms of wall time): done 1060, answered 1090. 1200: 50 ms at half speed to
    // 1250 (25 ms of work), 15 ms after: done 1265, answered 1295. 1100: 40 ms at half
    // speed: done 1180.
    let text = scenario(r#"App("api")"#, Some(40), &[]).replace(
        "timeline: [",
        r#"timeline: [(at: "1020ms", path: "stall.gc.slowdown", value: Float(2.0)),
                     (at: "1250ms", path: "stall.gc.slowdown", value: Float(1.0)),"#,
    );
    let r = stepped(&load(&text), &cfg(7, 3));
    let (w, s, f) = (40 * MS, 30 * MS, 2);
    let (t1, t2) = (1020 * MS, 1250 * MS);
    let expected = |a: u64| {
        // Work done by wall time t from a: piecewise (rate 1 outside, 1/f inside).
        let work_by = |t: u64| {
            let slow = t.min(t2).saturating_sub(a.max(t1));
            (t - a) - slow + slow / f
        };
        // The wall instant the work is done: solve work_by(e) = w on each piece.
        let mut e = a + w;
        if work_by(e) < w {
            let at_t1 = work_by(t1.max(a));
            let slow_end = t1.max(a) + (w - at_t1) * f;
            e = if slow_end <= t2 { slow_end } else { t2 + (w - work_by(t2)) };
        }
        e + s
    };
    let n = check_ends(&r, expected);
    assert!(n >= 29, "{n} requests");
    let end_of = |a_ms: u64| {
        r.requests.iter().find(|q| q.arrival == SimTime(a_ms * MS)).and_then(|q| q.end).unwrap()
    };
    assert_eq!(end_of(1000), SimTime(1090 * MS));
    assert_eq!(end_of(1100), SimTime(1210 * MS));
    assert_eq!(end_of(1200), SimTime(1295 * MS));
    assert_eq!(get(&r, "stall.gc.pauses"), 0.0);
}
