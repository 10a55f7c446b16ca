//! Request attributes, user populations, promotion windows, trace assignment by rule,
//! closed-loop users and run-time rate changes, end to end through the world.
//! Every run checks conservation (`violations` empty, offered = ended + in flight).

use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::trace::{TraceData, TraceSpec};
use models::users::Population;
use models::world::RequestRecord;
use models::{RunConfig, RunOutput, Scenario};
use sim_core::SimDuration;
use std::sync::Arc;

use crate::support::load;

/// Runs with records; checks invariants and per-source conservation from the summary.
fn run(sc: &Scenario, seed: u64, ms: u64) -> RunOutput {
    let mut cfg = RunConfig::new(seed, SimDuration::from_ms(ms));
    cfg.record_requests = true;
    let r = models::run(sc, &cfg);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    for s in &sc.sources {
        let g = |c: &str| r.summary.get(&format!("source.{}.{c}", s.name)).unwrap();
        assert_eq!(
            g("offered"),
            g("completed") + g("failed") + g("rejected") + g("in_flight_end"),
            "conservation of source {}",
            s.name
        );
    }
    r
}

fn get(r: &RunOutput, name: &str) -> f64 {
    r.summary.get(name).unwrap_or_else(|| panic!("no column {name}"))
}

const BIG: &str = r#"call_sites: [(name: "c", upstream: "st")],
    stations: [(name: "st", servers: 100000, service: Constant("1ms"))],"#;

fn share_within(got: u64, n: u64, p: f64, what: &str) {
    // A binomial share: 4 standard errors (×√2 where users are drawn too).
    let tol = 4.0 * (2.0 * p * (1.0 - p) / n as f64).sqrt();
    let x = got as f64 / n as f64;
    assert!((x - p).abs() <= tol, "{what}: {x:.4} vs {p:.4} ± {tol:.4}");
}

/// Zipf(n: 10000, s: 1.1): the 10 hottest keys carry H(10, 1.1) / H(10000, 1.1) of the
/// requests (2.6802 / 6.6034 ≈ 0.4059), key 1 alone 1 / 6.6034 ≈ 0.1514.
#[test]
fn zipf_key_popularity() {
    let sc = load(&format!(
        r#"Scenario(name: "zipf", {BIG}
        sources: [(name: "faq", interarrival: Constant("1ms"), limit: Some(100000), target: "c",
                   keys: Zipf(n: 10000, s: 1.1))])"#
    ));
    let r = run(&sc, 1, 200_000);
    assert_eq!(r.requests.len(), 100_000);
    let h = |n: u64| (1..=n).map(|k| (k as f64).powf(-1.1)).sum::<f64>();
    let (top10, all) = (h(10), h(10_000));
    assert!((top10 - 2.6802).abs() < 1e-3 && (all - 6.6034).abs() < 1e-3, "{top10} {all}");
    let hot = r.requests.iter().filter(|q| (1..=10).contains(&q.key)).count() as u64;
    let first = r.requests.iter().filter(|q| q.key == 1).count() as u64;
    assert!(r.requests.iter().all(|q| (1..=10_000).contains(&q.key)));
    share_within(hot, 100_000, top10 / all, "top-10 share");
    share_within(first, 100_000, 1.0 / all, "key 1 share");
}

/// 100k requests from 100k users, 5% VIPs (→ P0), segments free 60% (→ P2) and pro 30%
/// (no class: the source's P1). Expected shares: P0 = 0.05; P2 = 0.95 × 0.6 = 0.57;
/// P1 = 0.95 × 0.4 = 0.38. VIP ⇔ user id ≤ 5000 ⇔ P0, request by request.
#[test]
fn vip_share_and_segments() {
    let sc = load(&format!(
        r#"Scenario(name: "users", {BIG}
        users: Some(Users(count: 100000, vip_share: 0.05, vip_class: Some("P0"),
               segments: [(name: "free", share: 0.6, class: Some("P2")), (name: "pro", share: 0.3)])),
        sources: [(name: "app", interarrival: Constant("1ms"), limit: Some(100000), target: "c", class: "P1")])"#
    ));
    let r = run(&sc, 3, 200_000);
    let n = 100_000;
    for q in &r.requests {
        assert!((1..=100_000).contains(&q.user));
        assert_eq!(q.user <= 5000, q.class == 0, "user {} class {}", q.user, q.class);
    }
    let count = |c: &str| get(&r, &format!("class.{c}.offered")) as u64;
    assert_eq!(count("P0") + count("P1") + count("P2"), n);
    share_within(count("P0"), n, 0.05, "P0 (VIP)");
    share_within(count("P2"), n, 0.57, "P2 (free)");
    share_within(count("P1"), n, 0.38, "P1 (pro and no segment)");
}

/// A promotion window: segment "promo" (20% of 1000 users) is lifted to P0 at 10 s and back
/// at 20 s. Arrivals every 100 ms, 300 in all; a change stamped t applies after the events at
/// t, so the window holds the arrivals at 10.1 s … 20.0 s (100 of them).
#[test]
fn promotion_window_lifts_a_segment() {
    let raw = load(&format!(
        r#"Scenario(name: "promo", {BIG}
        users: Some(Users(count: 1000, segments: [(name: "promo", share: 0.2)])),
        sources: [(name: "app", interarrival: Constant("100ms"), limit: Some(300), target: "c", class: "P1")],
        timeline: [(at: "10s", path: "segment.promo.class", value: OptCount(Some(0))),
                   (at: "20s", path: "segment.promo.class", value: OptCount(None))])"#
    ));
    let r = run(&raw, 5, 40_000);
    assert_eq!(r.requests.len(), 300);
    let pop = Population::new(raw.users.as_ref().unwrap(), &["P0", "P1", "P2"], 5);
    let (mut inside, mut promoted, mut in_segment) = (0, 0, 0);
    for q in &r.requests {
        let ms = q.arrival.0 / 1_000_000;
        let window = ms > 10_000 && ms <= 20_000;
        let member = pop.segment_of(q.user) == Some(0);
        inside += window as u64;
        in_segment += member as u64;
        promoted += (window && member) as u64;
        assert_eq!(q.class == 0, window && member, "arrival {ms} ms, user {}", q.user);
        assert!(q.class <= 1);
    }
    assert_eq!(inside, 100);
    assert_eq!(get(&r, "class.P0.offered") as u64, promoted);
    assert_eq!(get(&r, "class.P1.offered") as u64, 300 - promoted);
    // About 20% of the window's 100 requests, and of all 300.
    assert!((8..=32).contains(&promoted), "{promoted}");
    assert!((36..=84).contains(&in_segment), "{in_segment}");
    let change = &r.state_events[0];
    assert_eq!(
        (change.component.as_str(), change.from.as_str(), change.to.as_str()),
        ("segment.promo", "class = None", "class = Some(0)")
    );
}

/// Closed loop, no queueing: 20 users, think 1 s, service 200 ms: every user sends at
/// 1 + 1.2 k s. Within 120 s, k = 0..=99: 2000 requests, throughput 20 / 1.2 s = 16.67/s
/// (Little's law for the closed system, N = X · (Z + R)).
#[test]
fn closed_loop_fixed_service_is_exact() {
    let sc = load(
        r#"Scenario(name: "closed",
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 100, service: Constant("200ms"))],
        sources: [(name: "users", target: "c",
                   closed_loop: ClosedLoop(users: 20, think_time: Constant("1s")))])"#,
    );
    let r = run(&sc, 1, 120_000);
    assert_eq!(get(&r, "source.users.offered"), 2000.0);
    assert_eq!(get(&r, "source.users.completed"), 2000.0);
    assert_eq!(get(&r, "source.users.gave_up"), 0.0);
    let mut turns: Vec<(u64, u64)> =
        r.requests.iter().map(|q| (q.seq >> 32, q.seq & 0xffff_ffff)).collect();
    turns.sort();
    assert_eq!(turns[..3], [(0, 0), (0, 1), (0, 2)]);
    assert_eq!(turns.last(), Some(&(19, 99)));
}

/// Closed loop with queueing: 30 users, exponential think (mean 1 s), 5 servers of 200 ms
/// (capacity 25/s). Little's law: X = N / (Z + R) with R the measured mean response time.
#[test]
fn closed_loop_obeys_littles_law() {
    let sc = load(
        r#"Scenario(name: "closed-q",
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 5, service: Exponential(mean: "200ms"))],
        sources: [(name: "users", target: "c",
                   closed_loop: ClosedLoop(users: 30, think_time: Exponential(mean: "1s")))])"#,
    );
    let secs = 2000.0;
    let r = run(&sc, 2, 2_000_000);
    let x = get(&r, "source.users.completed") / secs;
    let resp = get(&r, "source.users.latency_ms_mean") / 1000.0;
    let want = 30.0 / (1.0 + resp);
    assert!(
        (x - want).abs() / want < 0.02,
        "X = {x:.3}/s vs N/(Z+R) = {want:.3}/s (R = {resp:.3} s)"
    );
    // 30 users would offer 30/1.2 = 25/s without queueing; 5 servers are nearly saturated.
    assert!(resp > 0.2 && x < 25.0, "{resp} {x}");
}

/// Give-up: 10 users, think 1 s, service 3 s, give up after 2 s. Sends at 1 + 3 k s
/// (k = 0..=9 within 29.5 s: 100 requests); give-ups at 3 + 3 k (9 per user within 29.5 s:
/// 90); the abandoned requests still run to their end at 4 + 3 k s (90 ended, 10 in flight).
#[test]
fn give_up_lets_the_request_run_on() {
    let sc = load(
        r#"Scenario(name: "give-up",
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 100, service: Constant("3s"))],
        sources: [(name: "users", target: "c",
                   closed_loop: ClosedLoop(users: 10, think_time: Constant("1s"), give_up: "2s"))])"#,
    );
    let r = run(&sc, 1, 29_500);
    assert_eq!(get(&r, "source.users.offered"), 100.0);
    assert_eq!(get(&r, "source.users.gave_up"), 90.0);
    assert_eq!(get(&r, "source.users.completed"), 90.0);
    assert_eq!(get(&r, "source.users.in_flight_end"), 10.0);
}

/// Retry by user: every call fails after 100 ms; the user re-sends after 500 ms, at most 2
/// times in a row, then thinks 1 s. One user: sends at 1, 1.6, 2.2 | 3.3, 3.9, 4.5 | 5.6,
/// 6.2, 6.8 | 7.9, 8.5, 9.1 s: 12 requests within 10 s, 8 of them re-sends, all failed.
#[test]
fn retry_by_user_is_counted() {
    let sc = load(
        r#"Scenario(name: "retry",
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 10, service: Constant("100ms"), error_rate: 1.0)],
        sources: [(name: "users", target: "c",
                   closed_loop: ClosedLoop(users: 1, think_time: Constant("1s"),
                       retry: Some(UserRetry(probability: 1.0, delay: Constant("500ms"), max: 2))))])"#,
    );
    let r = run(&sc, 1, 10_000);
    assert_eq!(get(&r, "source.users.offered"), 12.0);
    assert_eq!(get(&r, "source.users.failed"), 12.0);
    assert_eq!(get(&r, "source.users.user_retries"), 8.0);
    let mut at: Vec<u64> = r.requests.iter().map(|q| q.arrival.0 / 100_000_000).collect();
    at.sort();
    assert_eq!(at, [10, 16, 22, 33, 39, 45, 56, 62, 68, 79, 85, 91]);
}

/// Users and think time change at run time: 5 users (think 1 s, service 200 ms) send at
/// 1 + 1.2 k s; at 30 s five more join, thinking first, at 31 + 1.2 k s. Within 60 s:
/// 5 × 50 + 5 × 25 = 375 requests.
#[test]
fn closed_loop_users_change_at_run_time() {
    let sc = load(
        r#"Scenario(name: "more-users",
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 100, service: Constant("200ms"))],
        sources: [(name: "users", target: "c",
                   closed_loop: ClosedLoop(users: 5, think_time: Constant("1s")))],
        timeline: [(at: "30s", path: "source.users.users", value: Count(10))])"#,
    );
    let r = run(&sc, 1, 60_000);
    assert_eq!(get(&r, "source.users.offered"), 375.0);
    assert_eq!(get(&r, "source.users.users"), 10.0);
}

/// Bands over the bundled conversation trace: prompt > 4000 → P2, else output > 500 → P1,
/// else P0 (share 1.0); users and keys by hashing the row. Counts match the trace's rows.
#[test]
fn trace_assignment_by_bands() {
    let text = r#"Scenario(name: "bands",
        call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 100000, service: Constant("1ms"))],
        sources: [(name: "t", target: "c", trace: Trace(file: "azure-llm-2023-conv.csv", rate_scale: 10.0),
            assign: Assign(bands: [(prompt_above: Some(4000), class: "P2"), (output_above: Some(500), class: "P1")],
                           class_shares: [("P0", 1.0)], hash_users: Some(1000), hash_keys: Some(50)))])"#;
    let mut sc: ScenarioSpec<ParamValue> = ron::from_str(text).unwrap();
    let t: &mut TraceSpec = sc.sources[0].trace.as_mut().unwrap();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/traces/");
    let csv = std::fs::read_to_string(format!("{dir}azure-llm-2023-conv.csv")).unwrap();
    let data = Arc::new(TraceData::parse_csv(&csv, t).unwrap());
    t.data = Some(data.clone());
    sc.check().unwrap();
    let r = run(&sc, 1, 400_000);
    assert_eq!(r.requests.len(), data.arrival_ns.len());
    let (mut p2, mut p1) = (0u64, 0u64);
    for i in 0..data.arrival_ns.len() {
        let (p, o) = (data.prompt_tokens[i].unwrap(), data.output_tokens[i].unwrap());
        if p > 4000 {
            p2 += 1;
        } else if o > 500 {
            p1 += 1;
        }
    }
    let n = data.arrival_ns.len() as u64;
    assert!(p2 > 0 && p1 > 0, "{p2} {p1}");
    assert_eq!(get(&r, "class.P2.offered") as u64, p2);
    assert_eq!(get(&r, "class.P1.offered") as u64, p1);
    assert_eq!(get(&r, "class.P0.offered") as u64, n - p1 - p2);
    assert!(r.requests.iter().all(|q| (1..=1000).contains(&q.user) && (1..=50).contains(&q.key)));
    let users: std::collections::BTreeSet<u64> = r.requests.iter().map(|q| q.user).collect();
    assert!(users.len() > 990, "hashing spreads rows over the users: {}", users.len());
}

fn arrivals(r: &RunOutput) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> =
        r.requests.iter().map(|q: &RequestRecord| (q.seq, q.arrival.0)).collect();
    v.sort();
    v
}

/// Common random numbers: adding tokens, keys, a weight and a user population to a source
/// leaves its arrival times (and service luck) unchanged; token means follow the dists.
#[test]
fn attributes_do_not_move_arrivals() {
    let base = r#"call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 4, service: Exponential(mean: "40ms"))],"#;
    let plain = load(&format!(
        r#"Scenario(name: "plain", {base}
        sources: [(name: "a", interarrival: Gamma(mean: "20ms", cv: 2.0), target: "c")])"#
    ));
    let rich = load(&format!(
        r#"Scenario(name: "rich", {base}
        users: Some(Users(count: 500, vip_share: 0.1)),
        sources: [(name: "a", interarrival: Gamma(mean: "20ms", cv: 2.0), target: "c",
                   prompt_tokens: LogNormal(mean: 1000.0, cv: 1.0), output_tokens: Constant(200.0),
                   history_tokens: Uniform(low: 0.0, high: 4000.0), keys: Zipf(n: 100, s: 1.0), weight: Some(7))])"#
    ));
    let (a, b) = (run(&plain, 9, 60_000), run(&rich, 9, 60_000));
    assert_eq!(arrivals(&a), arrivals(&b));
    assert_eq!(get(&a, "source.a.latency_ms_mean"), get(&b, "source.a.latency_ms_mean"));
    let n = b.requests.len() as f64;
    let mean =
        |f: &dyn Fn(&RequestRecord) -> u32| b.requests.iter().map(|q| f(q) as f64).sum::<f64>() / n;
    // LogNormal mean 1000, sd 1000: 4 standard errors of the mean.
    let tol = 4.0 * 1000.0 / n.sqrt();
    assert!((mean(&|q| q.tokens.prompt.unwrap()) - 1000.0).abs() < tol + 0.5);
    assert_eq!(mean(&|q| q.tokens.output.unwrap()), 200.0);
    assert!((mean(&|q| q.tokens.history.unwrap()) - 2000.0).abs() < 4.0 * 1155.0 / n.sqrt());
    assert!(a.requests.iter().all(|q| q.user == 0 && q.key == 0 && q.tokens.prompt.is_none()));
}

/// Same seed ⇒ same fingerprint; another seed ⇒ another, for a scenario with everything.
#[test]
fn determinism() {
    let sc = load(&format!(
        r#"Scenario(name: "all", {BIG}
        users: Some(Users(count: 50, vip_share: 0.1, vip_class: Some("P0"), segments: [(name: "s", share: 0.5, class: Some("P2"))])),
        sources: [(name: "open", interarrival: Exponential(mean: "50ms"), target: "c", keys: Zipf(n: 1000, s: 1.1),
                   prompt_tokens: Gamma(mean: 500.0, cv: 0.5)),
                  (name: "closed", target: "c", closed_loop: ClosedLoop(users: 20, think_time: Exponential(mean: "500ms"),
                   give_up: "500us", retry: Some(UserRetry(probability: 0.5, delay: Exponential(mean: "100ms")))))],
        timeline: [(at: "5s", path: "source.open.rate_multiplier", value: Float(3.0)),
                   (at: "7s", path: "source.closed.think_time", value: DurationDist(Constant("100ms")))])"#
    ));
    let (a, b, c) = (run(&sc, 1, 20_000), run(&sc, 1, 20_000), run(&sc, 2, 20_000));
    assert_eq!(a.fingerprint, b.fingerprint);
    assert_ne!(a.fingerprint, c.fingerprint);
    assert!(get(&a, "source.closed.gave_up") > 0.0 && get(&a, "source.closed.user_retries") > 0.0);
}

/// `rate_multiplier` at run time rescales the pending gap exactly: arrivals every 100 ms;
/// ×2 at 10.05 s turns the 50 ms left of the gap to 10.1 s into 25 ms (10.075 s), then
/// every 50 ms.
#[test]
fn rate_multiplier_rescales_the_pending_gap() {
    let sc = load(&format!(
        r#"Scenario(name: "rate", {BIG}
        sources: [(name: "a", interarrival: Constant("100ms"), target: "c")],
        timeline: [(at: "10050ms", path: "source.a.rate_multiplier", value: Float(2.0))])"#
    ));
    let r = run(&sc, 1, 10_300);
    let t: Vec<u64> = arrivals(&r).iter().map(|(_, t)| t / 1_000_000).skip(99).collect();
    assert_eq!(t, [9_900, 10_000, 10_075, 10_125, 10_175, 10_225, 10_275]);
}

/// Bad traffic settings are refused with the field path of the culprit.
#[test]
fn bad_traffic_settings_name_their_field() {
    let head = r#"Scenario(name: "bad", call_sites: [(name: "c", upstream: "st")],
        stations: [(name: "st", servers: 1, service: Constant("1ms"))],"#;
    let cases = [
        (
            r#"sources: [(name: "a", target: "c", interarrival: Constant("1s"),
                closed_loop: ClosedLoop(users: 2, think_time: Constant("1s")))])"#,
            "sources[0].closed_loop: a closed-loop source has no `interarrival`",
        ),
        (
            r#"users: Some(Users(count: 9, vip_class: Some("P9"))),
               sources: [(name: "a", target: "c", interarrival: Constant("1s"))])"#,
            "users.vip_class: no class named \"P9\"",
        ),
        (
            r#"sources: [(name: "a", target: "c", interarrival: Constant("1s"),
                assign: Assign(class_shares: [("P0", 0.5), ("P1", 0.4)]))])"#,
            "sources[0].assign.class_shares: shares must sum to 1",
        ),
    ];
    for (tail, want) in cases {
        let sc: ScenarioSpec<ParamValue> = ron::from_str(&format!("{head} {tail}")).unwrap();
        let e = sc.check().unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    let sc: ScenarioSpec<ParamValue> = ron::from_str(&format!(
        r#"{head} users: Some(Users(count: 9, segments: [(name: "s", share: 0.5)])),
        sources: [(name: "a", target: "c", interarrival: Constant("1s"))],
        timeline: [(at: "1s", path: "segment.s.class", value: OptCount(Some(3)))])"#
    ))
    .unwrap();
    let e = sc.check_timeline().unwrap_err().to_string();
    assert!(e.contains("timeline[0].value: expected None or Some(class index < 3)"), "{e}");
}

/// `rate_multiplier` composes with a profile: ×3 from 60 s on a Poisson source of 20/s whose
/// profile steps from ×1 to ×2 at 30 s. Expected counts per 30 s: 600, 1200, 3600, 3600.
#[test]
fn rate_multiplier_composes_with_a_profile() {
    let sc = load(&format!(
        r#"Scenario(name: "rate-profile", {BIG}
        sources: [(name: "a", interarrival: Exponential(mean: "50ms"), target: "c",
                   profile: Some(Profile(points: [("0s", 1.0), ("30s", 2.0)], shape: Step)))],
        timeline: [(at: "60s", path: "source.a.rate_multiplier", value: Float(3.0))])"#
    ));
    let r = run(&sc, 4, 120_000);
    let mut n = [0u64; 4];
    for q in &r.requests {
        n[(q.arrival.0 / 30_000_000_000) as usize] += 1;
    }
    for (got, want) in n.iter().zip([600.0, 1200.0, 3600.0, 3600.0]) {
        assert!((*got as f64 - want).abs() <= 4.0 * f64::sqrt(want), "{n:?}");
    }
}
