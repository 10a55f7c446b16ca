//! The degradation chain (docs/domain.md §3.11, §3.16) through the whole world: incident 4 (one
//! global breaker vs breakers per model with a fallback model), incident 14 (degradation
//! storm: busy answers capped, the cache beyond), a model switched off on the timeline,
//! trimmed context. Every run is checked for determinism and conservation (`run_checked`).
//!
//! Figures: `cargo test -p models --test suite -- degradation:: --nocapture`.

use crate::support::*;
use models::{Outcome, Reason, RunOutput};

fn col(r: &RunOutput, name: &str) -> u64 {
    get(r, name) as u64
}

/// Incident 4 — global breaker. Two features on two models: `chat` (gpt4) and `sum`
/// (claude), 50 req/s each, 200 ms calls. gpt4 blips: every call fails from 10 s to 12 s.
/// GLOBAL: one breaker for everything; PER_MODEL: a breaker per model, and chat falls back
/// to a small model. Breakers: 20-call window, opens at ≥ 50 % failures, open 10 s.
const BLIP: &str = r#"Scenario(name: "global_breaker",
    sources: [
        (name: "chat", interarrival: Exponential(mean: "20ms"), target: "chat"),
        (name: "sum", interarrival: Exponential(mean: "20ms"), target: "sum"),
    ],
    circuit_breakers: [
        (name: "global", sliding_window_size: 20, minimum_number_of_calls: 20, wait_duration_in_open_state: "10s"),
        (name: "gpt4", sliding_window_size: 20, minimum_number_of_calls: 20, wait_duration_in_open_state: "10s"),
        (name: "claude", sliding_window_size: 20, minimum_number_of_calls: 20, wait_duration_in_open_state: "10s"),
        (name: "small", sliding_window_size: 20, minimum_number_of_calls: 20, wait_duration_in_open_state: "10s"),
    ],
    call_sites: [
        (name: "chat", governors: [CircuitBreaker(CHAT)], upstream: "gpt4", timeout: "5s"FALLBACK),
        (name: "sum", governors: [CircuitBreaker(SUM)], upstream: "claude", timeout: "5s"),
        (name: "chat-small", governors: [CircuitBreaker("small")], upstream: "small", timeout: "5s"),
    ],
    stations: [
        (name: "gpt4", servers: 100, service: Constant("200ms")),
        (name: "claude", servers: 100, service: Constant("200ms")),
        (name: "small", servers: 100, service: Constant("100ms")),
    ],
    timeline: [
        (at: "10s", path: "station.gpt4.error_rate", value: Float(1.0)),
        (at: "12s", path: "station.gpt4.error_rate", value: Float(0.0)),
    ],
)"#;

#[test]
fn incident_4_global_breaker_vs_per_model_breakers_and_a_fallback_model() {
    let global =
        BLIP.replace("CHAT", "\"global\"").replace("SUM", "\"global\"").replace("FALLBACK", "");
    let fixed = BLIP.replace("CHAT", "\"gpt4\"").replace("SUM", "\"claude\"").replace(
        "FALLBACK",
        r#", fallback: Fallback(on: ["breaker_open", "upstream_5xx"], to: CallSite("chat-small"))"#,
    );
    let (g, f) =
        (run_checked(&load(&global), &cfg(4, 40)), run_checked(&load(&fixed), &cfg(4, 40)));
    let rates = |r: &RunOutput, s: &str| {
        let n = get(r, &format!("source.{s}.offered"));
        let pct = |c: &str| 100.0 * get(r, &format!("source.{s}.{c}")) / n;
        (pct("success"), pct("degraded"), pct("failed") + pct("rejected"))
    };
    let (gc, gs, fc, fs) =
        (rates(&g, "chat"), rates(&g, "sum"), rates(&f, "chat"), rates(&f, "sum"));
    println!("global: chat {gc:?} sum {gs:?}\nper model + fallback: chat {fc:?} sum {fs:?}");
    // Measured (seed 4, 40 s): global — chat 71.6 % success, 28.0 % failed or rejected;
    // sum 75.0 % success, 24.2 % rejected breaker_open. Per model + fallback — chat 71.7 %
    // success, 27.9 % degraded, 0 lost; sum 99.2 % success (the rest in flight at the end).
    // One global breaker: gpt4's blip opens it and takes `sum` (a healthy model) down too.
    assert!(gs.2 > 20.0, "sum suffers from chat's blip under one breaker: {gs:?}");
    assert!((gs.2 - 24.2).abs() < 0.1 && (gc.2 - 28.0).abs() < 0.1, "{gs:?} {gc:?}");
    assert!((fc.1 - 27.9).abs() < 0.1, "{fc:?}");
    assert!(gc.2 > 20.0, "{gc:?}");
    // Per model + fallback: sum never notices; chat degrades (answered by the small model)
    // and loses nothing.
    assert_eq!((fs.1, fs.2), (0.0, 0.0), "{fs:?}");
    assert_eq!(fc.2, 0.0, "{fc:?}");
    assert!(fc.1 > 20.0, "{fc:?}");
    // Every degraded chat answer carries the first failure's reason: the blip's 5xx, then
    // the open breaker.
    let d5 = col(&f, "source.chat.degraded_upstream_5xx");
    let dbo = col(&f, "source.chat.degraded_breaker_open");
    assert_eq!(d5 + dbo, col(&f, "source.chat.degraded"));
    assert!(d5 > 0 && dbo > d5, "{d5} {dbo}");
    assert_eq!(col(&f, "call_site.chat.fallbacks"), d5 + dbo);
    assert_eq!(col(&f, "call_site.chat.switched_off"), 0);
}

/// Incident 14 — degradation storm. 200 req/s over 500 keys (Zipf), a cache (fresh 5 s)
/// above a breaker; the model goes down for good at 10 s. Once the breaker is open and
/// the entries have gone stale, every call falls to the busy layer: uncapped, everyone
/// gets "service busy"; capped at 20/s, the rest get the best cached similar answer.
const STORM: &str = r#"Scenario(name: "degradation_storm",
    sources: [(name: "chat", interarrival: Exponential(mean: "5ms"), target: "llm",
        keys: Zipf(n: 500, s: 1.0))],
    caches: [(name: "answers", ttl: "5s")],
    circuit_breakers: [(name: "b", sliding_window_size: 20, minimum_number_of_calls: 20,
        wait_duration_in_open_state: "60s")],
    call_sites: [(name: "llm", governors: [Cache("answers"), CircuitBreaker("b")],
        upstream: "llm", timeout: "5s",
        fallback: Fallback(to: Busy(max_per_second: CAP, cache: "answers")))],
    stations: [(name: "llm", servers: 200, service: Constant("300ms"))],
    timeline: [(at: "10s", path: "station.llm.error_rate", value: Float(1.0))],
)"#;

#[test]
fn incident_14_degradation_storm_busy_cap_serves_the_cache() {
    let uncapped = run_checked(&load(&STORM.replace("CAP", "None")), &cfg(14, 40));
    let capped = run_checked(&load(&STORM.replace("CAP", "Some(20)")), &cfg(14, 40));
    // Requests arriving in [20 s, 40 s): the breaker is open, every entry is stale.
    let late = |r: &RunOutput| {
        let v: Vec<_> = r
            .requests
            .iter()
            .filter(|q| q.arrival.0 >= 20_000_000_000 && q.end.is_some())
            .collect();
        let n = |o: Outcome| v.iter().filter(|q| q.outcome == Some(o)).count();
        (v.len(), n(Outcome::Rejected(Reason::Shed)), n(Outcome::Degraded(Reason::BreakerOpen)))
    };
    let (u, c) = (late(&uncapped), late(&capped));
    println!("uncapped (n, busy, cached) {u:?}; capped {c:?}");
    // Uncapped: every one of them is told "service busy".
    assert_eq!(u.1, u.0);
    // Capped: exactly 20 busy answers per second (20 s × 20), the rest from the cache.
    assert_eq!(c.1, 400);
    // Measured (seed 14; `expect/`): of 4,007 requests, 3,378 cached (93.6 % of the 3,607
    // beyond the cap), 229 keys never cached fail with breaker_open.
    expect("degradation_storm_capped_n_busy_cached", format!("{c:?}"));
    assert!(c.2 as f64 > 0.9 * (c.0 - c.1) as f64, "{c:?}");
    let p = "call_site.llm";
    assert!(col(&capped, &format!("{p}.busy_answers")) <= 40 * 20);
    assert_eq!(
        col(&capped, &format!("{p}.busy_answers"))
            + col(&capped, &format!("{p}.busy_cached"))
            + col(&capped, &format!("{p}.busy_failed")),
        col(&capped, &format!("{p}.fallbacks"))
    );
    assert_eq!(col(&uncapped, &format!("{p}.busy_cached")), 0);
}

/// A model switched off on the timeline from 10 s to 20 s: one request every 100 ms.
const SWITCH: &str = r#"Scenario(name: "switch_off",
    sources: [(name: "chat", interarrival: Constant("100ms"), target: "big")],
    call_sites: [
        (name: "big", upstream: "big", timeout: "5s"FALLBACK),
        (name: "small", upstream: "small", timeout: "5s"),
    ],
    stations: [
        (name: "big", servers: 10, service: Constant("50ms")),
        (name: "small", servers: 10, service: Constant("20ms")),
    ],
    timeline: [
        (at: "10s", path: "call_site.big.enabled", value: Bool(false)),
        (at: "20s", path: "call_site.big.enabled", value: Bool(true)),
    ],
)"#;

#[test]
fn switched_off_model_sends_exactly_the_calls_in_the_window_to_the_fallback() {
    let with = SWITCH.replace("FALLBACK", r#", fallback: Fallback(to: CallSite("small"))"#);
    for (text, off_outcome) in [
        (with.as_str(), Outcome::Degraded(Reason::Shed)),
        (&SWITCH.replace("FALLBACK", "") as &str, Outcome::Rejected(Reason::Shed)),
    ] {
        let r = run_checked(&load(text), &cfg(16, 30));
        // Arrivals at k × 100 ms. A change stamped t applies after every event at t: the
        // arrival at exactly 10 s still meets the model, the one at exactly 20 s does not:
        // the window is (10 s, 20 s], 100 arrivals.
        for q in r.requests.iter().filter(|q| q.end.is_some()) {
            let t = q.arrival.0;
            let off = t > 10_000_000_000 && t <= 20_000_000_000;
            let want = if off { off_outcome } else { Outcome::Success };
            assert_eq!(q.outcome, Some(want), "arrival at {t} ns");
            // The small model answers in 20 ms, the big one in 50 ms; none when rejected.
            let latency = q.end.unwrap().0 - t;
            let want_ms = match want {
                Outcome::Success => 50,
                Outcome::Degraded(_) => 20,
                _ => 0,
            };
            assert_eq!(latency, want_ms * 1_000_000);
        }
        let n_off = r.requests.iter().filter(|q| q.outcome == Some(off_outcome)).count();
        assert_eq!(n_off, 100);
    }
}

/// Trimmed context: the primary model is down (every call 5xx); the call falls back to the
/// same upstream model through a second site, with the full or a trimmed prompt. 1000
/// prompt tokens at 0.5 ms each on top of 200 ms; $0.01 per 1k prompt tokens.
const TRIM: &str = r#"Scenario(name: "trim",
    sources: [(name: "chat", interarrival: Exponential(mean: "50ms"), target: "primary",
        prompt_tokens: Constant(1000.0), output_tokens: Constant(0.0))],
    call_sites: [
        (name: "primary", upstream: "down", fallback: Fallback(to: CallSite("big")TRIM)),
        (name: "big", upstream: "big"),
    ],
    stations: [
        (name: "down", servers: 100, service: Constant("10ms"), error_rate: 1.0),
        (name: "big", servers: 100, service: Constant("200ms"), per_prompt_token: "500us",
            cost_per_1k_prompt_tokens: 0.01),
    ],
)"#;

#[test]
fn trimmed_context_is_faster_and_cheaper() {
    let full = run_checked(&load(&TRIM.replace("TRIM", "")), &cfg(7, 60));
    let trimmed = run_checked(
        &load(&TRIM.replace("TRIM", ", trim: Trim(keep: 0.5, max_prompt_tokens: Some(300))")),
        &cfg(7, 60),
    );
    // Same traffic in both runs (the keyed randomness does not move).
    let n = col(&full, "source.chat.offered");
    assert_eq!(n, col(&trimmed, "source.chat.offered"));
    for r in [&full, &trimmed] {
        assert_eq!(
            col(r, "source.chat.degraded_upstream_5xx"),
            n - col(r, "source.chat.in_flight_end")
        );
    }
    let lat = |r: &RunOutput| get(r, "source.chat.latency_ms_mean");
    let cost = |r: &RunOutput| get(r, "station.big.cost");
    println!(
        "full: {:.1} ms, ${:.3}; trimmed: {:.1} ms, ${:.3}",
        lat(&full),
        cost(&full),
        lat(&trimmed),
        cost(&trimmed)
    );
    // Full: 10 ms (the failed primary) + 200 ms + 1000 × 0.5 ms = 710 ms.
    // Trimmed: min(floor(1000 × 0.5), 300) = 300 tokens: 10 + 200 + 150 = 360 ms.
    assert!((lat(&full) - 710.0).abs() < 0.5, "{}", lat(&full));
    assert!((lat(&trimmed) - 360.0).abs() < 0.5, "{}", lat(&trimmed));
    // Cost per answered call: $0.01 full, $0.003 trimmed.
    let served = |r: &RunOutput| col(r, "source.chat.degraded") as f64;
    assert!((cost(&full) / served(&full) - 0.01).abs() < 1e-9);
    assert!((cost(&trimmed) / served(&trimmed) - 0.003).abs() < 1e-9);
}

/// Incident 3 — outage without a breaker (scaled: a 60 s outage instead of 30 min). One
/// app, 32 worker threads (queue 100), blocking; `chat` (20 req/s) calls the LLM with a
/// 3 s timeout and 2 retries (no back-off), `search` (20 req/s) a healthy 50 ms service on
/// the same pool. From 10 s to 70 s the LLM hangs (every call times out). Without a breaker
/// every chat request holds a thread for 9 s: the pool and its queue fill, and search
/// collapses with it. FIX: a breaker below the retry and a fallback to a small model.
const OUTAGE: &str = r#"Scenario(name: "outage",
    sources: [
        (name: "chat", interarrival: Exponential(mean: "50ms"), target: "llm", app: "svc"),
        (name: "search", interarrival: Exponential(mean: "50ms"), target: "search", app: "svc"),
    ],
    apps: [(name: "svc", pool: Some(Shared((name: "workers", core_pool_size: 32,
        maximum_pool_size: 32, queue_capacity: 100))))],
    retries: [(name: "r", max_attempts: 3, backoff: Fixed(wait_duration: "0s"))],
    circuit_breakers: [(name: "b", sliding_window_size: 20, minimum_number_of_calls: 10,
        wait_duration_in_open_state: "10s")],
    call_sites: [
        (name: "llm", governors: [Retry("r")BREAKER], upstream: "llm", timeout: "3s"FALLBACK),
        (name: "small", upstream: "small", timeout: "3s"),
        (name: "search", upstream: "search", timeout: "3s"),
    ],
    stations: [
        (name: "llm", servers: 1000, service: Constant("500ms")),
        (name: "small", servers: 1000, service: Constant("100ms")),
        (name: "search", servers: 1000, service: Constant("50ms")),
    ],
    timeline: [
        (at: "10s", path: "station.llm.latency_multiplier", value: Float(100.0)),
        (at: "70s", path: "station.llm.latency_multiplier", value: Float(1.0)),
    ],
)"#;

#[test]
fn incident_3_outage_collapses_the_pool_a_breaker_and_fallback_keep_serving() {
    let naive = OUTAGE.replace("BREAKER", "").replace("FALLBACK", "");
    let fixed = OUTAGE.replace("BREAKER", r#", CircuitBreaker("b")"#).replace(
        "FALLBACK",
        r#", fallback: Fallback(on: ["breaker_open", "timeout"], to: CallSite("small"))"#,
    );
    let (n, f) = (run_checked(&load(&naive), &cfg(3, 90)), run_checked(&load(&fixed), &cfg(3, 90)));
    // Answered (success or degraded) requests per second among those arriving in
    // [20 s, 70 s), the heart of the outage.
    let served = |r: &RunOutput, src: u16| {
        let v: Vec<_> = r
            .requests
            .iter()
            .filter(|q| {
                q.source == src && q.arrival.0 >= 20_000_000_000 && q.arrival.0 < 70_000_000_000
            })
            .collect();
        let ok = v
            .iter()
            .filter(|q| matches!(q.outcome, Some(Outcome::Success | Outcome::Degraded(_))))
            .count();
        (v.len(), ok)
    };
    let (nc, ns, fc, fs) = (served(&n, 0), served(&n, 1), served(&f, 0), served(&f, 1));
    println!("naive: chat {nc:?} search {ns:?}; breaker + fallback: chat {fc:?} search {fs:?}");
    println!(
        "naive rejected_pool_full: chat {} search {}",
        col(&n, "source.chat.rejected_pool_full"),
        col(&n, "source.search.rejected_pool_full")
    );
    // Measured (seed 3; `expect/`): naive — chat 82 of 1,029 answered, search 176 of 1,037
    // (958 refused pool_full); breaker + fallback — all 1,029 and 1,037 answered.
    expect("degradation_pool_naive_chat_search", format!("{:?}", (nc, ns)));
    // Naive: the pool is full of 9-second chat calls; most search requests are refused.
    assert!((ns.1 as f64) < 0.5 * ns.0 as f64, "search collapses with chat: {ns:?}");
    assert!(col(&n, "source.search.rejected_pool_full") > 0);
    // Breaker + fallback: search is untouched, chat is answered (degraded) by the small model.
    assert_eq!(fs.1, fs.0, "{fs:?}");
    assert_eq!(fc.1, fc.0, "{fc:?}");
    assert_eq!(col(&f, "source.search.rejected_pool_full"), 0);
    assert!(col(&f, "source.chat.degraded_breaker_open") > 0);
}

/// docs/domain.md §6, incident 17, second half: a pod of 8 threads whose requests block on a 0.8 s model
/// call serves ≤ 8 / 0.8 s = 10 req/s; with the model's breaker open the same pod answers
/// every request from a 25 ms local fallback (a canned answer; the thread is held for it),
/// ≤ 8 / 0.025 s = 320 req/s — the article's "~300 QPS of fallbacks". Offered 400 req/s
/// into a pool with a 64-deep queue (Abort). The breaker is forced open at 10 s (the same
/// effect as it opening on failures, without the transient).
#[test]
fn incident_17_a_pod_with_its_breaker_open_serves_fallbacks_at_thread_speed() {
    let sc = load(
        r#"Scenario(name: "pod",
    sources: [(name: "s", interarrival: Constant("2500us"), target: "llm", app: "pod")],
    apps: [(name: "pod", pool: Some(Shared((name: "w", core_pool_size: 8, maximum_pool_size: 8,
        queue_capacity: 64))))],
    circuit_breakers: [(name: "llm", sliding_window_size: 100, minimum_number_of_calls: 100)],
    call_sites: [
        (name: "llm", governors: [CircuitBreaker("llm")], upstream: "llm", timeout: "5s",
         fallback: Fallback(on: ["breaker_open"], to: CallSite("canned"))),
        (name: "canned", upstream: "local"),
    ],
    stations: [
        (name: "llm", servers: 1000, service: Constant("800ms")),
        (name: "local", servers: 1000, service: Constant("25ms")),
    ],
    timeline: [(at: "10s", path: "circuit_breaker.llm.forced_open", value: Bool(true))],
)"#,
    );
    let r = run_checked(&sc, &cfg(17, 20));
    let answered = |from: f64, to: f64, want: fn(Option<Outcome>) -> bool| {
        let n = r
            .requests
            .iter()
            .filter(|q| want(q.outcome) && q.end.is_some_and(|t| t.0 as f64 / 1e9 >= from))
            .filter(|q| q.end.is_some_and(|t| (t.0 as f64 / 1e9) < to))
            .count();
        n as f64 / (to - from)
    };
    let model = answered(2.0, 10.0, |o| o == Some(Outcome::Success));
    let fallback = answered(11.0, 20.0, |o| o == Some(Outcome::Degraded(Reason::BreakerOpen)));
    println!("incident 17: model {model:.1} req/s, breaker open: fallbacks {fallback:.1} req/s");
    // Measured (seed 17): 10.0 req/s through the model; 320.0 fallbacks/s once open.
    assert!((9.5..=10.0).contains(&model), "{model}");
    assert!((300.0..=320.0).contains(&fallback), "{fallback}");
    assert!(get(&r, "call_site.llm.fallbacks") > 2500.0);
}
