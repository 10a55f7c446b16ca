//! Adversarial interaction tests for four features merged independently: request budgets,
//! queue-wait timeouts and per-step thread holding (`timeouts.rs`); streamed answers with
//! stalls and `stream_read_timeout` (`stream.rs`); the degradation chain — `fallback`, the
//! busy cap, the `enabled` switch (`fallback.rs`); Sentinel cluster flow with rule reloads
//! (`flow/cluster*.rs`). Each scenario combines them where they meet — a budget running out
//! while a call is mid-stream in a stall, on a fallback hop, parked at a fallback site's
//! governors, in a retry back-off below a time limiter, waiting for a continuation thread;
//! sites switched off and on with calls on their chains; exact same-instant ties.
//!
//! Each scenario runs over many seeds, stepped event by event with
//! `check_invariants()` after every event; the stepped run's fingerprint must equal a plain
//! `models::run` of the same seed (determinism, and checking changes nothing); every source
//! conserves its requests (offered = completed + failed + rejected + in_flight_end). Summed
//! over the seeds, each scenario must actually reach the interaction it targets (a counter
//! > 0), so no test passes vacuously.

use crate::support::load;
use models::{RunConfig, RunOutput, Scenario};
use sim_core::SimDuration;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Seeds per scenario; `INTERACTIONS_SEEDS=500 cargo test -p models --test suite -- interactions::`
/// for a longer hunt.
fn seeds() -> u64 {
    std::env::var("INTERACTIONS_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(30)
}

fn cfg(seed: u64, ms: u64) -> RunConfig {
    RunConfig::new(seed, SimDuration::from_ms(ms))
}

/// Steps one seed event by event with the invariants checked after each, then compares its
/// fingerprint with a plain run and checks per-source conservation.
fn one_seed(sc: &Scenario, seed: u64, ms: u64) -> Result<RunOutput, String> {
    let (stepped, _) = crate::support::try_stepped(sc, &cfg(seed, ms))?;
    for src in &sc.sources {
        let g =
            |k: &str| stepped.summary.get(&format!("source.{}.{k}", src.name)).unwrap_or(f64::NAN);
        let (o, c, f, r, i) =
            (g("offered"), g("completed"), g("failed"), g("rejected"), g("in_flight_end"));
        if o != c + f + r + i {
            return Err(format!(
                "source {}: offered {o} != completed {c} + failed {f} + rejected {r} + \
                 in_flight_end {i}",
                src.name
            ));
        }
    }
    Ok(stepped)
}

/// Runs `SEEDS` seeds; panics listing every failing seed. Returns the named summary
/// columns summed over the seeds.
fn fuzz(name: &str, text: &str, ms: u64, columns: &[&str]) -> BTreeMap<String, f64> {
    let sc = load(text);
    let mut sums: BTreeMap<String, f64> = columns.iter().map(|c| (c.to_string(), 0.0)).collect();
    let mut failures = Vec::new();
    for seed in 1..=seeds() {
        match catch_unwind(AssertUnwindSafe(|| one_seed(&sc, seed, ms))) {
            Ok(Ok(out)) => {
                for c in columns {
                    let v = out.summary.get(c).unwrap_or_else(|| panic!("{name}: no column {c}"));
                    *sums.get_mut(*c).unwrap() += v;
                }
            }
            Ok(Err(msg)) => failures.push(format!("seed {seed}: {msg}")),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("seed {seed}: panic: {msg}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{name}: {} failing seeds:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{name}: {sums:?}");
    sums
}

fn need(sums: &BTreeMap<String, f64>, cols: &[&str]) {
    for c in cols {
        assert!(
            sums[*c] > 0.0,
            "the interaction was not reached: {c} = 0 over all seeds ({sums:?})"
        );
    }
}

/// (a) budget expiring mid-stream in a stall, (b) on a fallback hop, (d) in a retry
/// back-off below a time limiter; a fallback site that streams and stalls itself; time
/// limiters above breakers on both chain sites; the busy cap with a cache at the end.
const STREAM_CHAIN: &str = r#"Scenario(name: "stream_chain",
    sources: [
        (name: "chat", interarrival: Exponential(mean: "8ms"), target: "chat",
         prompt_tokens: Constant(200.0), output_tokens: LogNormal(mean: 40.0, cv: 0.7),
         keys: Zipf(n: 50, s: 1.0)),
        (name: "users", target: "chat", closed_loop: ClosedLoop(users: 20, think_time: Exponential(mean: "50ms"),
         give_up: "300ms", retry: Some(UserRetry(probability: 0.5, delay: Constant("20ms")))),
         output_tokens: Constant(20.0), budget: "700ms"),
        (name: "direct", interarrival: Exponential(mean: "30ms"), target: "llm", budget: "450ms",
         prompt_tokens: Constant(100.0), output_tokens: Constant(30.0), keys: Zipf(n: 50, s: 1.0)),
    ],
    pipelines: [(name: "chat", budget: "500ms", stages: [
        Step(name: "a", call: "llm"),
        Step(name: "b", call: "llm", calls: Uniform(min: 1, max: 3), mode: Parallel, optional: true),
    ])],
    caches: [Cache(name: "c", ttl: "1s", hit_probability: 0.3)],
    retries: [Retry(name: "r", max_attempts: 3, backoff: Fixed(wait_duration: "120ms"),
                    retry_on: ["timeout", "upstream_5xx", "stream_interrupted"]),
               Retry(name: "r2", max_attempts: 4, backoff: Fixed(wait_duration: "60ms"),
                    retry_on: ["upstream_5xx", "stream_interrupted"])],
    time_limiters: [(name: "tl", timeout_duration: "350ms", cancel_running_future: false),
                    (name: "tl2", timeout_duration: "200ms", cancel_running_future: true)],
    circuit_breakers: [
        CircuitBreaker(name: "cb", sliding_window_size: 20, minimum_number_of_calls: 10,
            wait_duration_in_open_state: "250ms", permitted_number_of_calls_in_half_open_state: 2,
            slow_call_duration_threshold: "200ms", slow_call_rate_threshold: 80.0),
        CircuitBreaker(name: "cb2", sliding_window_size: 10, minimum_number_of_calls: 5,
            wait_duration_in_open_state: "200ms", permitted_number_of_calls_in_half_open_state: 1,
            automatic_transition_from_open_to_half_open_enabled: true,
            half_open_wait: HalfOpenWait(max_wait: "150ms", max_waiting: 50)),
    ],
    call_sites: [
        (name: "llm", governors: [Cache("c"), Retry("r"), TimeLimiter("tl"), CircuitBreaker("cb")],
         upstream: "provider", timeout: "600ms", stream_read_timeout: "90ms",
         fallback: Fallback(to: CallSite("small"), trim: Trim(keep: 0.5))),
        (name: "small", governors: [TimeLimiter("tl2"), Retry("r2"), CircuitBreaker("cb2")], upstream: "small",
         timeout: "300ms", stream_read_timeout: "60ms",
         fallback: Fallback(on: ["timeout", "breaker_open", "stream_interrupted", "upstream_5xx"],
                            to: Busy(max_per_second: Some(5), cache: "c"))),
    ],
    stations: [
        (name: "provider", servers: 6, queue_capacity: Some(20), service: LogNormal(mean: "120ms", cv: 0.8),
         per_output_token: "2ms", error_rate: 0.1, streaming: true, chunk_tokens: 4,
         stall_rate: 0.35, stall_duration: Exponential(mean: "150ms"), stall_after: 0.3),
        (name: "small", servers: 4, queue_capacity: Some(10), service: LogNormal(mean: "60ms", cv: 0.5),
         per_output_token: "1ms", error_rate: 0.05, streaming: true, chunk_tokens: 2, cancellation: true,
         stall_rate: 0.3, stall_duration: Exponential(mean: "100ms"), stall_after: 0.0),
    ],
    timeline: [
        (at: "1s", path: "call_site.small.enabled", value: Bool(false)),
        (at: "1500ms", path: "call_site.small.enabled", value: Bool(true)),
        (at: "2s", path: "station.provider.stall_rate", value: Float(0.9)),
    ],
)"#;

#[test]
fn budget_vs_streams_stalls_fallback_hops_and_retry_backoff() {
    let s = fuzz(
        "stream_chain",
        STREAM_CHAIN,
        3000,
        &[
            "source.chat.budget_expired",
            "source.chat.calls_cut_by_budget",
            "source.direct.budget_expired",
            "source.users.budget_expired",
            "station.provider.stream_stalls",
            "station.provider.stream_interruptions",
            "station.small.stream_stalls",
            "station.small.stream_interruptions",
            "call_site.llm.fallbacks",
            "call_site.small.fallbacks",
            "call_site.small.switched_off",
            "call_site.small.busy_answers",
            "time_limiter.tl.timeouts",
            "time_limiter.tl2.timeouts",
        ],
    );
    need(&s, &s.keys().map(String::as_str).collect::<Vec<_>>());
}

/// (c) budget expiring while parked at the fallback site's governors: a gate with an
/// acquire timeout, a token bucket with `max_wait`, a pacing flow rule, and a half-open
/// wait; the primary breaker forced open and closed again on the timeline; the busy layer
/// capped at 3/s behind it.
const PARKED: &str = r#"Scenario(name: "parked",
    sources: [
        (name: "s", interarrival: Exponential(mean: "5ms"), target: "p", prompt_tokens: Constant(50.0),
         output_tokens: Constant(10.0), keys: Zipf(n: 20, s: 1.2)),
    ],
    pipelines: [(name: "p", budget: "400ms", stages: [Step(name: "x", call: "main")])],
    caches: [Cache(name: "c", ttl: "500ms", hit_probability: 0.5)],
    gates: [(name: "g", permits: 3, acquire_timeout: "1s", max_waiting: 40)],
    token_buckets: [TokenBucket(name: "tb", capacity: 600, refill_tokens_per_minute: 120000, max_wait: "800ms",
                                max_waiting: 30)],
    flow_rules: [FlowRules(name: "pace", rules: [FlowRule(count: 60.0, control_behavior: RATE_LIMITER,
                                                          max_queueing_time_ms: 700, max_queue_length: 25)])],
    circuit_breakers: [
        CircuitBreaker(name: "main", sliding_window_size: 10, minimum_number_of_calls: 10,
                       wait_duration_in_open_state: "300ms"),
        CircuitBreaker(name: "fb", sliding_window_size: 10, minimum_number_of_calls: 5,
            wait_duration_in_open_state: "100ms", permitted_number_of_calls_in_half_open_state: 1,
            half_open_wait: HalfOpenWait(max_wait: "600ms", max_waiting: 20)),
    ],
    call_sites: [
        (name: "main", governors: [Cache("c"), CircuitBreaker("main")], upstream: "main", timeout: "300ms",
         fallback: Fallback(to: CallSite("fb"))),
        (name: "fb", governors: [FlowRules("pace"), TokenBucket("tb"), CircuitBreaker("fb"), Gate("g")],
         upstream: "fb", timeout: "250ms",
         fallback: Fallback(to: Busy(max_per_second: Some(3), cache: "c"))),
    ],
    stations: [
        (name: "main", servers: 4, queue_capacity: Some(8), service: LogNormal(mean: "40ms", cv: 1.0), error_rate: 0.3),
        (name: "fb", servers: 3, service: LogNormal(mean: "90ms", cv: 1.0), error_rate: 0.3),
    ],
    timeline: [
        (at: "800ms", path: "circuit_breaker.main.forced_open", value: Bool(true)),
        (at: "1600ms", path: "circuit_breaker.main.forced_open", value: Bool(false)),
        (at: "1200ms", path: "gate.g.permits", value: Count(1)),
        (at: "1800ms", path: "gate.g.permits", value: Count(4)),
        (at: "2s", path: "token_bucket.tb.capacity", value: Count(100), reload: true),
        (at: "2200ms", path: "flow.pace.rule0.count", value: Float(20.0), reload: true),
    ],
)"#;

#[test]
fn budget_expires_while_parked_at_fallback_site_governors() {
    let s = fuzz(
        "parked",
        PARKED,
        3000,
        &[
            "source.s.budget_expired",
            "source.s.calls_cut_by_budget",
            "call_site.main.fallbacks",
            "call_site.fb.fallbacks",
            "call_site.fb.busy_answers",
            "call_site.fb.busy_cached",
        ],
    );
    need(&s, &s.keys().map(String::as_str).collect::<Vec<_>>());
}

/// Sites switched off and on by the timeline while calls are in flight on them and on
/// their chains (a three-hop chain ending in `Reject`), with a budget and a retry above
/// the primary; changes stamped at instants where arrivals land (constant arrivals).
const SWITCH: &str = r#"Scenario(name: "switch",
    sources: [
        (name: "tick", interarrival: Constant("10ms"), target: "p"),
        (name: "rand", interarrival: Exponential(mean: "15ms"), target: "a", budget: "350ms"),
        (name: "lone", interarrival: Exponential(mean: "20ms"), target: "d", budget: "100ms"),
    ],
    pipelines: [(name: "p", budget: "500ms", stages: [
        Parallel([Step(name: "x", call: "a"), Step(name: "y", call: "b", optional: true)]),
        Step(name: "z", call: "a"),
    ])],
    retries: [Retry(name: "r", max_attempts: 2, backoff: Fixed(wait_duration: "50ms"))],
    time_limiters: [(name: "tl", timeout_duration: "150ms", cancel_running_future: false)],
    circuit_breakers: [CircuitBreaker(name: "cb", sliding_window_size: 10, minimum_number_of_calls: 5,
                                      wait_duration_in_open_state: "100ms")],
    call_sites: [
        (name: "a", governors: [Retry("r"), TimeLimiter("tl"), CircuitBreaker("cb")], upstream: "big",
         timeout: "200ms", fallback: Fallback(to: CallSite("b"))),
        (name: "b", upstream: "mid", timeout: "120ms", fallback: Fallback(to: CallSite("c"), trim: Trim(keep: 0.5))),
        (name: "c", upstream: "tiny", timeout: "100ms", fallback: Fallback(to: Reject)),
        (name: "d", governors: [Retry("r")], upstream: "mid"),
    ],
    stations: [
        (name: "big", servers: 10, service: LogNormal(mean: "120ms", cv: 0.6), error_rate: 0.2),
        (name: "mid", servers: 4, queue_capacity: Some(5), service: LogNormal(mean: "70ms", cv: 0.6),
         error_rate: 0.2, cancellation: true),
        (name: "tiny", servers: 2, queue_capacity: Some(3), service: Constant("30ms"), error_rate: 0.1),
    ],
    timeline: [
        (at: "300ms", path: "call_site.b.enabled", value: Bool(false)),
        (at: "500ms", path: "call_site.a.enabled", value: Bool(false)),
        (at: "500ms", path: "call_site.c.enabled", value: Bool(false)),
        (at: "700ms", path: "call_site.b.enabled", value: Bool(true)),
        (at: "900ms", path: "call_site.a.enabled", value: Bool(true)),
        (at: "900ms", path: "call_site.c.enabled", value: Bool(true)),
        (at: "1s", path: "call_site.a.enabled", value: Bool(false)),
        (at: "1s", path: "call_site.a.enabled", value: Bool(true)),
        (at: "1200ms", path: "call_site.b.enabled", value: Bool(false)),
        (at: "1210ms", path: "call_site.c.enabled", value: Bool(false)),
        (at: "1400ms", path: "call_site.b.enabled", value: Bool(true)),
        (at: "1410ms", path: "call_site.c.enabled", value: Bool(true)),
        (at: "1600ms", path: "time_limiter.tl.timeout_duration", value: Duration("60ms")),
        (at: "1700ms", path: "call_site.d.enabled", value: Bool(false)),
        (at: "1800ms", path: "call_site.d.enabled", value: Bool(true)),
    ],
)"#;

#[test]
fn sites_switched_off_and_on_with_calls_on_their_chains() {
    let s = fuzz(
        "switch",
        SWITCH,
        2000,
        &[
            "source.tick.budget_expired",
            "source.rand.budget_expired",
            "source.lone.budget_expired",
            "source.lone.rejected_shed",
            "call_site.a.switched_off",
            "call_site.b.switched_off",
            "call_site.c.switched_off",
            "call_site.a.fallbacks",
            "call_site.b.fallbacks",
            "call_site.c.fallbacks",
            "time_limiter.tl.timeouts",
        ],
    );
    need(&s, &s.keys().map(String::as_str).collect::<Vec<_>>());
}

/// (e) budget expiring while a request waits for a continuation thread: a blocking step
/// after a non-blocking one resubmits the request to a small pool behind a dispatcher with
/// queue-wait limits; the non-blocking step's site falls back to a streaming site that
/// stalls; pool and dispatcher queue waits changed on the timeline.
const CONTINUATION: &str = r#"Scenario(name: "continuation",
    classes: [(name: "P0"), (name: "P1")],
    sources: [
        (name: "hi", interarrival: Exponential(mean: "12ms"), target: "agent", class: "P0", app: "svc",
         output_tokens: Constant(20.0)),
        (name: "lo", interarrival: Exponential(mean: "12ms"), target: "agent", class: "P1", app: "svc",
         output_tokens: Constant(20.0), budget: "500ms"),
        (name: "plain", interarrival: Exponential(mean: "15ms"), target: "agent", app: "bare",
         output_tokens: Constant(20.0), budget: "400ms"),
    ],
    apps: [(name: "svc", instances: 2, local_work: Some(Constant("2ms")),
            dispatcher: Some((name: "d", policy: Strict, queues: [
                (class: "P0", capacity: 20, max_queue_wait: Some("150ms")),
                (class: "P1", capacity: 20, max_queue_wait: Some("200ms"), overflow: Defer)])),
            pool: Some(Shared(ThreadPool(name: "w", core_pool_size: 2, maximum_pool_size: 3, queue_capacity: 0)))),
            (name: "bare", pool: Some(Shared(ThreadPool(name: "w2", core_pool_size: 2, maximum_pool_size: 2,
                                                        queue_capacity: 6, max_queue_wait: Some("60ms")))))],
    pipelines: [(name: "agent", budget: "700ms", stages: [
        Step(name: "plan", call: "llm", blocking: false),
        Step(name: "tool", call: "tool", calls: Uniform(min: 1, max: 3), mode: Parallel, blocking: true),
        Step(name: "answer", call: "llm", blocking: false),
        Step(name: "post", call: "tool", blocking: true, optional: true),
    ])],
    call_sites: [
        (name: "llm", upstream: "llm", timeout: "400ms", stream_read_timeout: "50ms",
         fallback: Fallback(to: CallSite("llm-small"))),
        (name: "llm-small", upstream: "small", timeout: "300ms", stream_read_timeout: "40ms",
         fallback: Fallback(to: Busy(max_per_second: None, cache: "c"))),
        (name: "tool", upstream: "tool", timeout: "100ms"),
    ],
    caches: [Cache(name: "c", ttl: "1s")],
    stations: [
        (name: "llm", servers: 40, service: LogNormal(mean: "60ms", cv: 0.8), per_output_token: "2ms",
         streaming: true, chunk_tokens: 2, stall_rate: 0.3, stall_duration: Exponential(mean: "80ms"), error_rate: 0.1),
        (name: "small", servers: 20, service: LogNormal(mean: "30ms", cv: 0.5), per_output_token: "1ms",
         streaming: true, stall_rate: 0.3, stall_duration: Exponential(mean: "60ms")),
        (name: "tool", servers: 30, service: LogNormal(mean: "40ms", cv: 1.0), error_rate: 0.05),
    ],
    timeline: [
        (at: "1s", path: "dispatcher_queue.d-P0.max_queue_wait", value: Duration("20ms")),
        (at: "1s", path: "pool.w.maximum_pool_size", value: Count(2)),
        (at: "1200ms", path: "pool_queue.w2.max_queue_wait", value: Duration("10ms")),
        (at: "2500ms", path: "pool.w2.maximum_pool_size", value: Count(4)),
        (at: "2500ms", path: "pool.w2.core_pool_size", value: Count(4)),
        (at: "1500ms", path: "app.svc.healthy", value: Bool(false)),
        (at: "1800ms", path: "app.svc.healthy", value: Bool(true)),
        (at: "2s", path: "call_site.llm.enabled", value: Bool(false)),
        (at: "2300ms", path: "call_site.llm.enabled", value: Bool(true)),
    ],
)"#;

#[test]
fn budget_vs_continuation_threads_queue_waits_and_streaming_fallback() {
    let s = fuzz(
        "continuation",
        CONTINUATION,
        3000,
        &[
            "source.hi.budget_expired",
            "source.lo.budget_expired",
            "source.hi.continuations",
            "source.plain.continuations",
            "source.plain.budget_expired",
            "class.P1.queue_timeouts",
            "class.P0.queue_timeouts",
            "call_site.llm.fallbacks",
            "call_site.llm.switched_off",
            "station.llm.stream_interruptions",
            "station.small.stream_stalls",
        ],
    );
    need(&s, &s.keys().map(String::as_str).collect::<Vec<_>>());
}

/// Same-instant ties: constant arrivals and services, the budget exactly the sum of the
/// service times, the time limiter and call timeout exactly one service, the read timeout
/// exactly the stall, the retry back-off exactly a service. Completions at the deadline
/// must win; whatever the order, nothing may break.
const TIES: &str = r#"Scenario(name: "ties",
    sources: [
        (name: "t", interarrival: Constant("25ms"), target: "p", output_tokens: Constant(10.0)),
        (name: "u", interarrival: Constant("50ms"), target: "s", budget: "100ms", output_tokens: Constant(10.0)),
    ],
    pipelines: [(name: "p", budget: "300ms", stages: [
        Step(name: "a", call: "s"), Step(name: "b", call: "s"), Step(name: "c", call: "s"),
    ])],
    retries: [Retry(name: "r", max_attempts: 2, backoff: Fixed(wait_duration: "100ms"),
                    retry_on: ["timeout", "upstream_5xx", "stream_interrupted"])],
    time_limiters: [(name: "tl", timeout_duration: "100ms")],
    circuit_breakers: [CircuitBreaker(name: "cb", sliding_window_size: 10, minimum_number_of_calls: 5,
                                      wait_duration_in_open_state: "100ms", slow_call_duration_threshold: "100ms")],
    call_sites: [
        (name: "s", governors: [Retry("r"), TimeLimiter("tl"), CircuitBreaker("cb")], upstream: "st",
         timeout: "100ms", stream_read_timeout: "50ms", fallback: Fallback(to: CallSite("f"))),
        (name: "f", governors: [TimeLimiter("tl")], upstream: "st2", timeout: "100ms", stream_read_timeout: "50ms",
         fallback: Fallback(to: Busy(max_per_second: Some(1), cache: "c"))),
    ],
    caches: [Cache(name: "c", ttl: "100ms")],
    stations: [
        (name: "st", servers: 50, service: Constant("50ms"), error_rate: 0.2, streaming: true,
         per_output_token: "5ms", chunk_tokens: 1, stall_rate: 0.3, stall_duration: Constant("50ms")),
        (name: "st2", servers: 50, service: Constant("50ms"), error_rate: 0.2, streaming: true,
         per_output_token: "5ms", stall_rate: 0.3, stall_duration: Constant("50ms"), stall_after: 1.0),
    ],
    timeline: [
        (at: "500ms", path: "call_site.f.enabled", value: Bool(false)),
        (at: "600ms", path: "call_site.f.enabled", value: Bool(true)),
        (at: "1s", path: "call_site.s.enabled", value: Bool(false)),
        (at: "1100ms", path: "call_site.s.enabled", value: Bool(true)),
    ],
)"#;

#[test]
fn same_instant_ties_budget_equals_service_times() {
    let s = fuzz(
        "ties",
        TIES,
        2000,
        &[
            "source.t.completed",
            "source.u.completed",
            "station.st.stream_stalls",
            "call_site.s.fallbacks",
            "call_site.f.fallbacks",
            "call_site.s.switched_off",
        ],
    );
    need(&s, &s.keys().map(String::as_str).collect::<Vec<_>>());
}

/// A cluster flow rule inside a fallback site, per instance, with a slow token server (the
/// budget runs out while a call waits for its token answer), rule reloads, a server outage
/// and a switch-off of the fallback site on the timeline.
const CLUSTER: &str = r#"Scenario(name: "cluster",
    sources: [
        (name: "s", interarrival: Exponential(mean: "4ms"), target: "p", app: "api"),
        (name: "bare", interarrival: Exponential(mean: "20ms"), target: "main", budget: "60ms"),
    ],
    apps: [App(name: "api", instances: 3)],
    pipelines: [(name: "p", budget: "150ms", stages: [Step(name: "x", call: "main")])],
    cluster_flow_rules: [ClusterFlowRule(name: "cl", count: 40, threshold_type: AVG_LOCAL, token_rtt: "15ms",
                                         request_timeout_ms: 20, max_allowed_qps: 200)],
    per_instance: ["cluster_flow.cl"],
    time_limiters: [(name: "tl", timeout_duration: "80ms")],
    circuit_breakers: [CircuitBreaker(name: "cb", sliding_window_size: 10, minimum_number_of_calls: 5,
                                      wait_duration_in_open_state: "100ms")],
    call_sites: [
        (name: "main", governors: [CircuitBreaker("cb")], upstream: "main", timeout: "100ms",
         fallback: Fallback(to: CallSite("fb"))),
        (name: "fb", governors: [TimeLimiter("tl"), ClusterFlow("cl")], upstream: "fb", timeout: "100ms",
         fallback: Fallback(on: ["rate_limited", "timeout"], to: Busy(max_per_second: Some(10), cache: "c"))),
    ],
    caches: [Cache(name: "c", ttl: "1s")],
    stations: [
        (name: "main", servers: 10, service: LogNormal(mean: "30ms", cv: 0.8), error_rate: 0.4),
        (name: "fb", servers: 10, service: LogNormal(mean: "40ms", cv: 0.8), error_rate: 0.1),
    ],
    timeline: [
        (at: "500ms", path: "cluster_flow.cl.count", value: Float(5.0), reload: true),
        (at: "700ms", path: "cluster_flow.cl.token_rtt", value: Duration("30ms")),
        (at: "900ms", path: "cluster_flow.cl.server_up", value: Bool(false)),
        (at: "1100ms", path: "cluster_flow.cl.server_up", value: Bool(true)),
        (at: "1100ms", path: "cluster_flow.cl.count", value: Float(100.0), reload: true),
        (at: "1300ms", path: "cluster_flow.cl.fallback_to_local_when_fail", value: Bool(false)),
        (at: "1300ms", path: "cluster_flow.cl.request_timeout_ms", value: Count(5)),
        (at: "1500ms", path: "call_site.fb.enabled", value: Bool(false)),
        (at: "1600ms", path: "call_site.fb.enabled", value: Bool(true)),
        (at: "1700ms", path: "cluster_flow.cl.token_rtt", value: Duration("0s"), reload: true),
    ],
)"#;

#[test]
fn cluster_flow_inside_fallback_site_with_reloads_and_budgets() {
    let s = fuzz(
        "cluster",
        CLUSTER,
        2000,
        &[
            "source.s.budget_expired",
            "source.bare.budget_expired",
            "call_site.main.fallbacks",
            "call_site.fb.fallbacks",
            "call_site.fb.switched_off",
            "cluster_flow.cl.token_ok",
            "cluster_flow.cl@api.0.token_ok",
            "cluster_flow.cl@api.0.timeouts",
            "cluster_flow.cl@api.1.token_blocked",
            "cluster_flow.cl@api.2.local_pass",
        ],
    );
    need(&s, &s.keys().map(String::as_str).collect::<Vec<_>>());
}

/// A three-hop chain through everything that parks or holds a call: single-flight
/// leaders/followers, retries in back-off on two hops, a batcher and a gate in front of a
/// GPU server, a half-open wait, a pooled connection with waits, a backup upstream, a
/// shadow limiter; streams stall on the first and last hops. A 250 ms budget cuts calls
/// wherever they are; sites, breakers and limits change on the timeline.
const DEEP_CHAIN: &str = r#"Scenario(name: "deep_chain",
    sources: [
        (name: "s", interarrival: Exponential(mean: "4ms"), target: "p", prompt_tokens: Constant(64.0),
         output_tokens: Constant(16.0), keys: Zipf(n: 30, s: 1.3)),
    ],
    pipelines: [(name: "p", budget: "250ms", stages: [Parallel([
        Step(name: "a", call: "top"),
        Step(name: "b", call: "top", calls: Fixed(2), mode: Sequential, optional: true),
    ])])],
    single_flights: [SingleFlight(name: "sf", share_errors: false)],
    batchers: [Batcher(name: "bt", window: "10ms", max_batch: 4)],
    retries: [Retry(name: "r", max_attempts: 3, backoff: Fixed(wait_duration: "40ms"),
                    retry_on: ["timeout", "upstream_5xx", "stream_interrupted", "connect_error", "upstream_429"])],
    gates: [(name: "g", permits: 4, acquire_timeout: "100ms")],
    flow_rules: [FlowRules(name: "edge", rules: [FlowRule(count: 50.0)])],
    time_limiters: [(name: "tl", timeout_duration: "120ms", cancel_running_future: false)],
    circuit_breakers: [CircuitBreaker(name: "cb", sliding_window_size: 20, minimum_number_of_calls: 10,
        wait_duration_in_open_state: "200ms", automatic_transition_from_open_to_half_open_enabled: true,
        permitted_number_of_calls_in_half_open_state: 2, half_open_wait: HalfOpenWait(max_wait: "80ms", max_waiting: 10))],
    connection_pools: [ConnPool(name: "http", max_total: 6, max_per_route: 3, tcp_rtt: "5ms",
        connection_request_timeout: "100ms", server_idle_timeout: "150ms", keep_alive: "300ms", max_waiting: 20)],
    gpu_servers: [GpuServer(name: "gpu", max_num_seqs: 8, max_num_batched_tokens: 512, max_queue: 30,
                            step_time: Fixed("5ms"), cancellation: true)],
    call_sites: [
        (name: "top", governors: [SingleFlight("sf"), Retry("r"), TimeLimiter("tl"), Shadow(FlowRules("edge")),
                                  CircuitBreaker("cb")],
         upstream: "stream", timeout: "150ms", stream_read_timeout: "30ms", connection_pool: "http",
         backup: "stream2", fallback: Fallback(to: CallSite("mid"))),
        (name: "mid", governors: [Retry("r"), Batcher("bt"), Gate("g")], upstream: "gpu", timeout: "100ms",
         fallback: Fallback(to: CallSite("last"), trim: Trim(keep: 0.5, max_prompt_tokens: Some(10)))),
        (name: "last", governors: [SingleFlight("sf"), Gate("g")], upstream: "stream2", connection_pool: "http",
         timeout: "80ms", stream_read_timeout: "20ms", fallback: Fallback(to: Reject)),
    ],
    stations: [
        (name: "stream", servers: 10, service: LogNormal(mean: "40ms", cv: 1.0), per_output_token: "2ms",
         error_rate: 0.2, streaming: true, stall_rate: 0.3, stall_duration: Exponential(mean: "50ms"), cancellation: true),
        (name: "stream2", servers: 5, queue_capacity: Some(5), service: LogNormal(mean: "30ms", cv: 1.0),
         per_output_token: "1ms", streaming: true, stall_rate: 0.2, stall_duration: Exponential(mean: "40ms"),
         error_rate: 0.1),
    ],
    timeline: [
        (at: "400ms", path: "call_site.mid.enabled", value: Bool(false)),
        (at: "600ms", path: "call_site.mid.enabled", value: Bool(true)),
        (at: "700ms", path: "batcher.bt.max_batch", value: Count(1)),
        (at: "800ms", path: "gpu_server.gpu.max_num_seqs", value: Count(2)),
        (at: "900ms", path: "circuit_breaker.cb.forced_open", value: Bool(true)),
        (at: "1100ms", path: "circuit_breaker.cb.forced_open", value: Bool(false)),
        (at: "1200ms", path: "connpool.http.max_total", value: Count(1)),
        (at: "1300ms", path: "gate.g.permits", value: Count(1)),
        (at: "1400ms", path: "call_site.last.enabled", value: Bool(false)),
        (at: "1400ms", path: "call_site.top.enabled", value: Bool(false)),
        (at: "1500ms", path: "call_site.top.enabled", value: Bool(true)),
        (at: "1600ms", path: "call_site.last.enabled", value: Bool(true)),
        (at: "1700ms", path: "batcher.bt.max_batch", value: Count(6)),
        (at: "1700ms", path: "connpool.http.max_total", value: Count(6)),
    ],
)"#;

#[test]
fn budget_cuts_calls_parked_anywhere_on_a_deep_chain() {
    let s = fuzz(
        "deep_chain",
        DEEP_CHAIN,
        2000,
        &[
            "source.s.budget_expired",
            "source.s.calls_cut_by_budget",
            "call_site.top.fallbacks",
            "call_site.mid.fallbacks",
            "call_site.last.fallbacks",
            "call_site.top.switched_off",
            "call_site.mid.switched_off",
            "call_site.top.failovers",
            "station.stream.stream_interruptions",
            "station.stream2.stream_stalls",
            "gpu_server.gpu.answered",
            "connpool.http.reuses",
            "time_limiter.tl.timeouts",
        ],
    );
    need(&s, &s.keys().map(String::as_str).collect::<Vec<_>>());
}

/// Exact ties without luck: every answer is a 100 ms stream (50 ms + 10 tokens × 5 ms), a
/// pipeline of three of them has a budget of exactly 300 ms, a call-site request one of
/// exactly 100 ms, the call timeout and a time limiter are exactly 100 ms, the read
/// timeout exactly the 5 ms chunk gap. Completions at a deadline win (ARCHITECTURE
/// "Phases"), and only a gap *longer* than the read timeout closes a stream, so every
/// request succeeds and nothing times out. Stream `v` stalls once for 20 ms (gap 5 + 20 =
/// 25 ms = its read timeout: kept); stream `w` for 1 ns more (closed at 1 + 25 ms).
const EXACT: &str = r#"Scenario(name: "exact",
    sources: [
        (name: "t", interarrival: Constant("25ms"), target: "p", output_tokens: Constant(10.0)),
        (name: "u", interarrival: Constant("50ms"), target: "s", budget: "100ms", output_tokens: Constant(10.0)),
        (name: "v", interarrival: Constant("50ms"), target: "r", output_tokens: Constant(10.0)),
        (name: "w", interarrival: Constant("50ms"), target: "r2", output_tokens: Constant(10.0)),
    ],
    pipelines: [(name: "p", budget: "300ms", stages: [
        Step(name: "a", call: "s"), Step(name: "b", call: "s"), Step(name: "c", call: "s"),
    ])],
    time_limiters: [(name: "tl", timeout_duration: "100ms")],
    call_sites: [(name: "s", governors: [TimeLimiter("tl")], upstream: "st", timeout: "100ms",
                  stream_read_timeout: "5ms", fallback: Fallback(to: CallSite("f"))),
                 (name: "f", upstream: "st"),
                 (name: "r", upstream: "stall", stream_read_timeout: "25ms"),
                 (name: "r2", upstream: "stall2", stream_read_timeout: "25ms")],
    stations: [(name: "st", servers: 100, service: Constant("50ms"), per_output_token: "5ms", streaming: true),
               (name: "stall", servers: 100, service: Constant("50ms"), per_output_token: "5ms", streaming: true,
                stall_rate: 1.0, stall_duration: Constant("20ms")),
               (name: "stall2", servers: 100, service: Constant("50ms"), per_output_token: "5ms", streaming: true,
                stall_rate: 1.0, stall_duration: Constant("20000001ns"))],
)"#;

#[test]
fn completions_at_the_budget_instant_win() {
    let sc = load(EXACT);
    let out = one_seed(&sc, 1, 2000).expect("clean run");
    let g = |k: &str| out.summary.get(k).unwrap();
    // t: arrivals at 0, 25, …, 2000 ms (81, the end included); done by 2 s (arrived ≤
    // 1700 ms) = 69. u: arrivals at 0, 50, …, 2000 ms (41); done (arrived ≤ 1900 ms) = 39.
    assert_eq!((g("source.t.offered"), g("source.t.success")), (81.0, 69.0));
    assert_eq!((g("source.u.offered"), g("source.u.success")), (41.0, 39.0));
    assert_eq!(g("source.t.budget_expired") + g("source.u.budget_expired"), 0.0);
    assert_eq!(g("call_site.s.fallbacks"), 0.0);
    assert_eq!(g("time_limiter.tl.timeouts"), 0.0);
    // v: 41 arrivals, each 120 ms; done by 2 s (arrived ≤ 1880 ms) = 38, none interrupted.
    assert_eq!((g("source.v.offered"), g("source.v.success")), (41.0, 38.0));
    assert_eq!(g("station.stall.stream_interruptions"), 0.0);
    // w: stall before chunk 1 + ⌊0.5 × 9⌋ = 5, whose gap would be 25 ms + 1 ns: closed at
    // chunk 4 (50 + 4 × 5 = 70 ms; chunk k at 50 + 5k) + 25 ms = 95 ms. Closed by 2 s:
    // arrived ≤ 1905 ms = 39.
    assert_eq!((g("source.w.offered"), g("source.w.failed_stream_interrupted")), (41.0, 39.0));
}

/// Regression test (found by the interaction fuzz): one request with a 100 ms budget on a call site with a fallback,
/// the upstream taking 1 s. At 100 ms the budget cuts the call; the cut call must end
/// `failed_timeout` — not move on to its fallback site (where it would be live again,
/// after its request was told every call was cut).
const CUT_ON_CHAIN: &str = r#"Scenario(name: "cut_on_chain",
    sources: [(name: "one", interarrival: Constant("1s"), limit: Some(1), target: "a", budget: "100ms")],
    call_sites: [
        (name: "a", upstream: "slow", fallback: Fallback(to: CallSite("b"))),
        (name: "b", upstream: "slow"),
    ],
    stations: [(name: "slow", servers: 1, service: Constant("1s"))],
)"#;

#[test]
fn budget_cut_call_does_not_hop_to_its_fallback() {
    let sc = load(CUT_ON_CHAIN);
    let out = one_seed(&sc, 1, 2000).expect("clean run");
    let g = |k: &str| out.summary.get(k).unwrap();
    assert_eq!(g("source.one.offered"), 1.0);
    assert_eq!(g("source.one.failed"), 1.0, "the request ends failed_timeout");
    assert_eq!(g("source.one.budget_expired"), 1.0);
    assert_eq!(g("call_site.a.fallbacks"), 0.0, "a budget cut is not a failure to fall back from");
}

/// Regression test (found by the interaction fuzz): lowering a batcher's `max_batch` at run time below the size of its
/// open batch (3 calls waiting in a 1 s window, `max_batch` 8 → 1 at 500 ms). The
/// documented behaviour: the overfull open batch is flushed.
const SHRINK_BATCH: &str = r#"Scenario(name: "shrink_batch",
    sources: [(name: "s", interarrival: Constant("100ms"), limit: Some(3), target: "b")],
    batchers: [Batcher(name: "bt", window: "1s", max_batch: 8)],
    call_sites: [(name: "b", governors: [Batcher("bt")], upstream: "st")],
    stations: [(name: "st", servers: 1, service: Constant("10ms"))],
    timeline: [(at: "500ms", path: "batcher.bt.max_batch", value: Count(1))],
)"#;

#[test]
fn lowering_max_batch_below_the_open_batch_flushes_it() {
    let sc = load(SHRINK_BATCH);
    let out = one_seed(&sc, 1, 2000).expect("clean run");
    let g = |k: &str| out.summary.get(k).unwrap();
    // Calls at 0, 100, 200 ms join one batch; flushed at 500 ms, answered at 510 ms.
    assert_eq!((g("source.s.offered"), g("source.s.success")), (3.0, 3.0));
}
