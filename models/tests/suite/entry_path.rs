//! The request entry path: apps (instances behind a balancer), the priority dispatcher and
//! the worker pool per instance, between a request's arrival and its pipeline.
//! Every run here is checked for conservation (`check_invariants()` empty, I1 and I23) and
//! determinism (same seed ⇒ same fingerprint).

use crate::support::load;
use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use models::summary::Summary;
use models::{RunConfig, Scenario};
use sim_core::SimDuration;

/// Runs twice: no invariant violation, and the same fingerprint both times.
fn run(sc: &Scenario, seed: u64, secs: u64, warmup_s: u64) -> Summary {
    let cfg = RunConfig {
        warmup: SimDuration::from_secs(warmup_s),
        ..RunConfig::new(seed, SimDuration::from_secs(secs))
    };
    let a = models::run(sc, &cfg);
    assert!(a.error.is_none(), "{:?}", a.error);
    assert!(a.violations.is_empty(), "{:?}", a.violations);
    let b = models::run(sc, &cfg);
    assert_eq!(a.fingerprint, b.fingerprint, "determinism");
    a.summary
}

/// Steps event by event, checking every invariant after each.
fn stepped(sc: &Scenario, seed: u64, secs: u64) {
    crate::support::stepped(sc, &RunConfig::new(seed, SimDuration::from_secs(secs)));
}

fn get(s: &Summary, name: &str) -> f64 {
    s.get(name).unwrap_or_else(|| panic!("no column {name}"))
}

/// P0 at 125/s (Exponential) and P2 at 5/s into one instance with 4 threads of 40 ms each
/// (capacity 4 / 0.04 s = 100/s). The P0 queue holds 20 (overflow Reject), so it is always
/// full and its head waits ≈ 20 × 10 ms = 200 ms.
fn priority(policy: &str) -> String {
    format!(
        r#"Scenario(
    name: "priority",
    sources: [
        (name: "chat", interarrival: Exponential(mean: "8ms"), target: "llm", class: "P0", app: "svc"),
        (name: "batch", interarrival: Exponential(mean: "200ms"), target: "llm", class: "P2", app: "svc"),
    ],
    apps: [(
        name: "svc",
        dispatcher: Some((name: "d", policy: {policy}, queues: [
            (class: "P0", capacity: 20), (class: "P1", capacity: 1000), (class: "P2", capacity: 1000),
        ])),
        pool: Some(Shared((name: "workers", core_pool_size: 4, maximum_pool_size: 4, queue_capacity: 0))),
    )],
    call_sites: [(name: "llm", upstream: "llm")],
    stations: [(name: "llm", servers: 1000, service: Constant("40ms"))],
)"#
    )
}

/// (a) Strict: P0 always waits, so P2 is never dispatched once the P0 queue has filled (at
/// most the first P2, if it came before P0 filled the queue). The sources' WeightedPolling (docs/domain.md §3.3)
/// restarts its loop at iteration 0 (which polls P0) after every task: strict under
/// sustained P0 load, the same starvation. WeightedRoundRobin [3, 2, 1]: P2 gets 1 pick in
/// 4 while P0 and P2 both wait, so every P2 is taken within a few dispatches (one dispatch
/// per 10 ms). Aging (step 0 = strict, max_wait 300 ms): P2 always waits behind P0 until
/// promoted at 300 ms (the P0 head waits only ≈ 200 ms), then takes the next free worker.
/// Seen (seed 1, 20 s, 102 P2 offered): Strict and WeightedPolling dispatch 1 P2 (the one
/// that came before the P0 queue filled) and 498 P0 are shed; WRR dispatches all 102, wait
/// mean 39 ms, max 161 ms (its smooth-WRR credit can be negative when P2 returns); Aging
/// dispatches 101, wait mean 305 ms, max 322 ms; both shed 598 P0 (P2 took their place).
#[test]
fn strict_starves_p2_wrr_and_aging_bound_its_wait() {
    for (policy, bound) in [
        ("Strict", None),
        ("WeightedPolling()", None),
        ("WeightedRoundRobin(weights: [3, 2, 1])", Some((0.0, 200.0))),
        ("Aging(max_wait: \"300ms\")", Some((300.0, 345.0))),
    ] {
        let s = run(&load(&priority(policy)), 1, 20, 0);
        let offered = get(&s, "class.P2.offered");
        let dispatched = get(&s, "class.P2.dispatched");
        let max = get(&s, "class.P2.dispatch_wait_ms_max");
        let mean = get(&s, "class.P2.dispatch_wait_ms_mean");
        println!(
            "{policy}: P2 offered {offered} dispatched {dispatched} wait mean {mean} max {max}; P0 shed {}",
            get(&s, "class.P0.rejected_shed")
        );
        assert!((80.0..=120.0).contains(&offered), "{policy}: ≈ 100 P2 in 20 s, got {offered}");
        // P0 overloads 125/s vs 100/s: a fifth or more is shed under every policy.
        assert!(get(&s, "class.P0.rejected_shed") > 0.15 * get(&s, "class.P0.offered"));
        match bound {
            None => {
                assert!(dispatched <= 1.0, "{policy}: P2 starves, dispatched {dispatched}");
                assert!(get(&s, "class.P2.in_flight_end") >= offered - 1.0);
            }
            Some((lo, hi)) => {
                assert!(dispatched >= offered - 2.0, "{policy}: P2 served, {dispatched}/{offered}");
                assert!(max <= hi && mean >= lo, "{policy}: P2 wait mean {mean} max {max}");
            }
        }
    }
}

/// Incident 12: one instance, a pool of `threads` (prestarted), 1500 req/s offered (more
/// than any size can serve), each request 12 ms of CPU on the thread (stretched by
/// 1 + 0.0004 × threads alive, 16 cores) then a blocking upstream call of 178 ms.
fn incident_12(threads: u64) -> String {
    format!(
        r#"Scenario(
    name: "incident-12",
    sources: [(name: "api", interarrival: Exponential(mean: "666667ns"), target: "upstream", app: "svc")],
    apps: [(
        name: "svc",
        pool: Some(Shared((name: "workers", core_pool_size: {threads}, maximum_pool_size: {threads},
            queue_capacity: 100000, prestart_all_core_threads: true))),
        thread_overhead: Some((cpu_cores: 16, overhead_per_thread: 0.0004, knee_threads: 0)),
        local_work: Some(Constant("12ms")),
    )],
    call_sites: [(name: "upstream", upstream: "upstream")],
    stations: [(name: "upstream", servers: 100000, service: Constant("178ms"))],
)"#
    )
}

/// (b) Throughput = calls in the upstream (time average after warm-up) ÷ 0.178 s (Little,
/// constant service). The analytic bounds (`pool::overhead::analytic_throughput`) are
/// 1047 (200 threads, thread-bound), 1190 (300, CPU-bound), 1075 (600, CPU-bound). The
/// simulation, seed 1, 10 s after 2 s warm-up: 1047.2, 1190.5, 1075.3 (a FIFO over the
/// cores has the same capacity as processor sharing): more threads help up to the CPU,
/// then cost.
#[test]
fn incident_12_more_threads_rise_then_fall() {
    let mut x = Vec::new();
    for (threads, lo, hi) in [(200, 1040.0, 1048.0), (300, 1185.0, 1191.0), (600, 1070.0, 1076.0)] {
        let s = run(&load(&incident_12(threads)), 1, 12, 2);
        let tps = get(&s, "station.upstream.mean_in_system") / 0.178;
        println!("{threads} threads: {tps:.1}/s, busy {}", get(&s, "app.svc.0.threads_busy_mean"));
        assert!((lo..=hi).contains(&tps), "{threads} threads: {tps}/s not in [{lo}, {hi}]");
        assert_eq!(get(&s, "app.svc.0.largest_pool_size"), threads as f64);
        x.push(tps);
    }
    assert!(x[0] < x[1] && x[2] < x[1], "rise then fall: {x:?}");
}

/// One instance, 2 workers (100 ms per request, blocking), dispatcher queues of 5 with
/// `CallerRuns`, `gateway` gateway threads, a backlog of 10; 100 req/s for 10 s.
fn caller_runs(gateway: &str) -> String {
    format!(
        r#"Scenario(
    name: "caller-runs",
    sources: [(name: "api", interarrival: Constant("10ms"), target: "llm", app: "svc")],
    apps: [(
        name: "svc",
        dispatcher: Some((name: "d", policy: Strict, queues: [
            (class: "P0", capacity: 5, overflow: CallerRuns),
            (class: "P1", capacity: 5, overflow: CallerRuns),
            (class: "P2", capacity: 5, overflow: CallerRuns),
        ])),
        pool: Some(Shared((name: "workers", core_pool_size: 2, maximum_pool_size: 2, queue_capacity: 0))),
        gateway_threads: {gateway},
        accept_backlog: 10,
    )],
    call_sites: [(name: "llm", upstream: "llm")],
    stations: [(name: "llm", servers: 1000, service: Constant("100ms"))],
)"#
    )
}

/// (c) Caller-runs occupies the gateway: 2 workers + 3 gateway threads serve 5 / 0.1 s =
/// 50/s of the 100/s offered; the arrivals beyond that wait for a gateway thread (backlog
/// of 10) and the rest are refused `queue_full` — back-pressure, ≈ 500 answered and ≈ 480
/// refused in 10 s (seen: 496 answered, 487 refused, 300 caller-runs = 3 threads × 10 s /
/// 0.1 s). With unlimited gateway threads every overflow runs on the caller: nothing is
/// refused and ≈ 1000 − 100/s × 0.1 s in flight are answered (seen 986, 795 caller-runs).
#[test]
fn caller_runs_back_pressures_through_gateway_threads() {
    let s = run(&load(&caller_runs("Some(3)")), 1, 10, 0);
    let done = get(&s, "class.P0.completed");
    let refused = get(&s, "class.P0.rejected_queue_full");
    let cr = get(&s, "app.svc.0.caller_runs");
    println!("gateway 3: completed {done} refused {refused} caller_runs {cr}");
    assert!((480.0..=500.0).contains(&done), "{done}");
    assert!((470.0..=500.0).contains(&refused), "{refused}");
    assert!((250.0..=310.0).contains(&cr), "three gateway threads, 100 ms each: {cr}");
    stepped(&load(&caller_runs("Some(3)")), 2, 3);

    let s = run(&load(&caller_runs("None")), 1, 10, 0);
    let done = get(&s, "class.P0.completed");
    println!(
        "gateway unlimited: completed {done} caller_runs {}",
        get(&s, "app.svc.0.caller_runs")
    );
    assert_eq!(get(&s, "class.P0.rejected"), 0.0);
    assert!((985.0..=992.0).contains(&done), "{done}");
}

/// Four instances of 5 threads each, no dispatcher (the pool's own FIFO of 1000), heavy-
/// tailed local work LogNormal(mean 50 ms, cv 2) with no overhead, 280 req/s = 70 % of
/// 4 × 5 / 0.05 s = 400/s.
fn balanced(balancer: &str) -> String {
    format!(
        r#"Scenario(
    name: "balance",
    sources: [(name: "api", interarrival: Exponential(mean: "3571428ns"), target: "db", app: "svc")],
    apps: [(
        name: "svc",
        instances: 4,
        balancer: {balancer},
        pool: Some(Shared((name: "workers", core_pool_size: 5, maximum_pool_size: 5, queue_capacity: 1000))),
        local_work: Some(LogNormal(mean: "50ms", cv: 2.0)),
    )],
    call_sites: [(name: "db", upstream: "db")],
    stations: [(name: "db", servers: 1000, service: Constant("1ms"))],
)"#
    )
}

/// (d) Round robin spreads arrivals exactly evenly but ignores how long each request
/// holds its instance; least-outstanding sends each to the instance with the fewest
/// requests in it, so long requests do not pile a queue behind them. Seen (seed 1, 60 s,
/// 16,704 requests): RR assigns 4176 to each, dispatch wait mean 16.6 ms; LO assigns
/// 4407 / 4294 / 4171 / 3832 (ties go to the lowest index) with a mean wait of 1.6 ms;
/// Random 22.8 ms.
#[test]
fn least_outstanding_balances_better_than_round_robin() {
    let mut waits = Vec::new();
    for b in ["RoundRobin", "LeastOutstanding", "Random"] {
        let s = run(&load(&balanced(b)), 1, 60, 0);
        let a: Vec<f64> = (0..4).map(|i| get(&s, &format!("app.svc.{i}.assigned"))).collect();
        let w = get(&s, "class.P0.dispatch_wait_ms_mean");
        println!("{b}: assigned {a:?} wait mean {w} p99 {}", get(&s, "class.P0.latency_ms_p99"));
        if b == "RoundRobin" {
            let (lo, hi) = a.iter().fold((f64::MAX, 0f64), |(l, h), &x| (l.min(x), h.max(x)));
            assert!(hi - lo <= 1.0, "round robin: {a:?}");
        }
        waits.push(w);
    }
    assert!(
        waits[1] < 0.5 * waits[0],
        "least outstanding {} vs round robin {}",
        waits[1],
        waits[0]
    );
    assert!(waits[2] > waits[0], "random {} vs round robin {}", waits[2], waits[0]);
}

/// (f) A scenario without apps (pipeline with a parallel fan-out, a gate, timeouts, failure
/// injection, a timeline) runs exactly as before the entry path existed: these fingerprints
/// (seeds 0, 1, 2) were computed on the parent commit 13451ab (main before this branch),
/// and re-pinned when latency quantiles became exact order statistics (the summary's p50 /
/// p95 / p99 are folded; no event moved).
const NO_APPS: &str = r#"Scenario(
    name: "no-apps",
    sources: [
        (name: "chat", interarrival: Exponential(mean: "8ms"), target: "rag", class: "P0"),
        (name: "batch", interarrival: LogNormal(mean: "30ms", cv: 2.0), target: "llm", class: "P2"),
    ],
    gates: [(name: "llm", permits: 30, acquire_timeout: "200ms", max_waiting: 100)],
    pipelines: [(name: "rag", stages: [
        Step(name: "embed", call: "embed"),
        Parallel([Step(name: "search", call: "search", calls: Uniform(min: 1, max: 4), mode: Parallel),
                  Step(name: "rerank", call: "embed", optional: true)]),
        Step(name: "answer", call: "llm", calls: Choice([(1, 80.0), (2, 20.0)])),
    ])],
    call_sites: [
        (name: "embed", upstream: "embed", timeout: "50ms"),
        (name: "search", upstream: "search"),
        (name: "llm", governors: [Gate("llm")], upstream: "llm", timeout: "2s"),
    ],
    stations: [
        (name: "embed", servers: 4, queue_capacity: Some(20), service: Exponential(mean: "10ms")),
        (name: "search", servers: 16, service: LogNormal(mean: "20ms", cv: 1.0), error_rate: 0.02),
        (name: "llm", servers: 32, service: LogNormal(mean: "400ms", cv: 0.8)),
    ],
    timeline: [
        (at: "3s", path: "gate.llm.permits", value: Count(10)),
        (at: "6s", path: "station.llm.servers", value: Count(48)),
    ],
)"#;

fn no_app_fingerprints() -> Vec<u64> {
    let sc: ScenarioSpec<ParamValue> = ron::from_str(NO_APPS).expect("valid scenario");
    sc.check().expect("consistent");
    sc.check_timeline().expect("timeline ok");
    let sc: Scenario = sc;
    (0..3u64)
        .map(|seed| {
            let cfg = RunConfig {
                warmup: SimDuration::from_secs(1),
                sample_every: Some(SimDuration::from_ms(500)),
                ..RunConfig::new(seed, SimDuration::from_secs(10))
            };
            let out = models::run(&sc, &cfg);
            assert!(out.violations.is_empty());
            out.fingerprint.value()
        })
        .collect()
}

#[test]
fn a_scenario_without_apps_runs_exactly_as_before() {
    assert_eq!(
        no_app_fingerprints(),
        vec![10002188921044356164, 8756790550534728467, 2880248001908922664]
    );
}

/// One instance, 2 workers of 100 ms (20/s); 100 requests at 50/s; the P0 queue holds 2 and
/// defers the overflow (async queue of 100, replayed at 20/s while healthy). The app starts
/// unhealthy; `app.svc.healthy` turns true at `healthy_at`.
fn deferring(healthy_at: &str) -> String {
    format!(
        r#"Scenario(
    name: "defer",
    sources: [(name: "api", interarrival: Constant("20ms"), limit: Some(100), target: "llm", app: "svc")],
    apps: [(
        name: "svc",
        healthy: false,
        dispatcher: Some((name: "d", policy: Strict, queues: [
            (class: "P0", capacity: 2, overflow: Defer),
            (class: "P1", capacity: 2), (class: "P2", capacity: 2),
        ], defer: (capacity: 100, drain_rate_per_s: 20.0))),
        pool: Some(Shared((name: "workers", core_pool_size: 2, maximum_pool_size: 2, queue_capacity: 0))),
    )],
    call_sites: [(name: "llm", upstream: "llm")],
    stations: [(name: "llm", servers: 100, service: Constant("100ms"))],
    timeline: [(at: "{healthy_at}", path: "app.svc.healthy", value: Bool(true))],
)"#
    )
}

/// Deferred requests wait while unhealthy and are replayed when health returns. In the
/// first 2 s, 100 arrive; the workers take 2 at once and then one per 50 ms, the queue holds
/// 2, so ≈ 100 − 2 − 2 − 2 s × 20/s ≈ 56 are deferred (58 seen). Healthy at 3 s: the replay
/// (20/s, the workers' own rate) starts the last at ≈ 3 s + 58 / 20/s ≈ 5.9 s; it arrived at
/// ≈ 1.98 s, so the longest wait is ≈ 3.9 s (3870 ms seen). Healthy at 8 s: exactly 5 s more.
#[test]
fn deferred_requests_replay_when_healthy() {
    let mut last = Vec::new();
    for at in ["3s", "8s"] {
        let s = run(&load(&deferring(at)), 1, 15, 0);
        let deferred = get(&s, "app.svc.0.deferred_total");
        let max = get(&s, "class.P0.dispatch_wait_ms_max");
        println!(
            "healthy at {at}: deferred {deferred} completed {} wait max {max}",
            get(&s, "class.P0.completed")
        );
        assert_eq!(get(&s, "class.P0.completed"), 100.0, "every deferred request is served");
        assert!((50.0..=60.0).contains(&deferred), "{deferred}");
        last.push(max);
    }
    assert!(last[0] >= 3800.0 && last[0] <= 4000.0, "{last:?}");
    assert!(last[1] - last[0] >= 4900.0 && last[1] - last[0] <= 5100.0, "5 s later: {last:?}");
    stepped(&load(&deferring("3s")), 1, 8);
}

/// Run-time knobs: the pool's maximum raised from 2 to 4 at 5 s doubles the rate of a
/// saturated instance (20/s → 40/s: ≈ 100 + 200 answered in 10 s); the Aging policy's
/// `max_wait` and the deferred replay rate change too, each logged as a config change.
#[test]
fn pool_and_dispatcher_knobs_change_at_run_time() {
    let text = r#"Scenario(
    name: "knobs",
    sources: [(name: "api", interarrival: Constant("10ms"), target: "llm", app: "svc")],
    apps: [(
        name: "svc",
        dispatcher: Some((name: "d", policy: Aging(max_wait: "1s"), queues: [
            (class: "P0", capacity: 1000), (class: "P1", capacity: 10), (class: "P2", capacity: 10),
        ])),
        pool: Some(Shared((name: "workers", core_pool_size: 2, maximum_pool_size: 2, queue_capacity: 0))),
    )],
    call_sites: [(name: "llm", upstream: "llm")],
    stations: [(name: "llm", servers: 100, service: Constant("100ms"))],
    timeline: [
        (at: "5s", path: "pool.workers.maximum_pool_size", value: Count(4)),
        (at: "5s", path: "dispatcher.d.max_wait", value: Duration("2s")),
        (at: "5s", path: "dispatcher.d.drain_rate_per_s", value: Float(5.0)),
    ],
)"#;
    let sc = load(text);
    let s = run(&sc, 1, 10, 0);
    let done = get(&s, "class.P0.completed");
    assert!((295.0..=300.0).contains(&done), "{done}");
    assert_eq!(get(&s, "app.svc.0.largest_pool_size"), 4.0);
    let out = models::run(&sc, &RunConfig::new(1, SimDuration::from_secs(10)));
    let log: Vec<(String, String, String)> = out
        .state_events
        .iter()
        .map(|e| (e.component.clone(), e.from.clone(), e.to.clone()))
        .collect();
    let want = |c: &str, f: &str, t: &str| (c.to_string(), f.to_string(), t.to_string());
    assert_eq!(
        log,
        vec![
            want("pool.workers", "maximum_pool_size = 2", "maximum_pool_size = 4"),
            want("dispatcher.d", "max_wait = \"1s\"", "max_wait = \"2s\""),
            want("dispatcher.d", "drain_rate_per_s = 10", "drain_rate_per_s = 5"),
        ]
    );
    // Not run-time changeable: the instance count.
    let mut bad: ScenarioSpec<ParamValue> = ron::from_str(text).unwrap();
    bad.timeline.push(models::scenario::SetParam {
        reload: false,
        at: SimDuration::from_secs(1),
        path: "app.svc.instances".into(),
        value: ParamValue::Count(2),
    });
    assert!(bad.check_timeline().unwrap_err().message.contains("cannot change during a run"));
}

/// A pool without a dispatcher (the pool's own Java path) and its rejection policies.
fn pool_only(pool: &str, blocking: bool, secs_per_call: &str) -> String {
    format!(
        r#"Scenario(
    name: "pool-only",
    sources: [
        (name: "chat", interarrival: Constant("10ms"), limit: Some(300), target: "llm", class: "P0", app: "svc"),
        (name: "batch", interarrival: Constant("25ms"), limit: Some(120), target: "llm", class: "P2", app: "svc"),
    ],
    apps: [(name: "svc", pool: Some({pool}), blocking: {blocking}, local_work: Some(Constant("10ms")))],
    call_sites: [(name: "llm", upstream: "llm")],
    stations: [(name: "llm", servers: 1000, service: Constant("{secs_per_call}"))],
)"#
    )
}

const SHARED_ABORT: &str = r#"Shared((name: "w", core_pool_size: 2, maximum_pool_size: 4, queue_capacity: 10, rejection_policy: Abort))"#;

/// Blocking: 4 threads held 10 ms + 390 ms = 0.4 s each serve 10/s of the 140/s offered over
/// 3 s; the queue (10) fills, the pool grows to 4, the rest is refused `pool_full`. Non-
/// blocking: a thread is held only for the 10 ms of local work, so 4 threads serve 400/s
/// and nothing is refused (Java's order: 2 core threads, then the queue, then growth).
#[test]
fn blocking_holds_the_thread_non_blocking_releases_it() {
    let s = run(&load(&pool_only(SHARED_ABORT, true, "390ms")), 1, 10, 0);
    let refused = get(&s, "class.P0.rejected_pool_full") + get(&s, "class.P2.rejected_pool_full");
    let done = get(&s, "class.P0.completed") + get(&s, "class.P2.completed");
    println!("blocking: done {done} refused {refused}");
    assert_eq!(done + refused, 420.0, "all ended by 10 s");
    // 3 s × 10/s = 30, + 4 on threads + 10 queued at the end of the arrivals, ±2.
    assert!((42.0..=46.0).contains(&done), "{done}");
    assert_eq!(get(&s, "app.svc.0.largest_pool_size"), 4.0);
    stepped(&load(&pool_only(SHARED_ABORT, true, "390ms")), 1, 4);

    let s = run(&load(&pool_only(SHARED_ABORT, false, "390ms")), 1, 10, 0);
    assert_eq!(get(&s, "class.P0.completed") + get(&s, "class.P2.completed"), 420.0);
    // 420 × 10 ms = 4.2 thread-seconds in 10 s.
    let busy = get(&s, "app.svc.0.threads_busy_mean");
    assert!((0.41..=0.43).contains(&busy), "{busy}");
    stepped(&load(&pool_only(SHARED_ABORT, false, "390ms")), 1, 4);
}

/// `DiscardOldest` drops the queue head (failed `shed`), `Discard` the newcomer, the pool's
/// `CallerRuns` runs on a gateway thread; per-class pools lend idle threads. Conservation
/// after every event in each case.
#[test]
fn pool_policies_and_per_class_pools_conserve_requests() {
    for pool in [
        SHARED_ABORT.replace("Abort", "DiscardOldest"),
        SHARED_ABORT.replace("Abort", "Discard"),
        SHARED_ABORT.replace("Abort", "CallerRuns"),
        r#"PerClass(pools: [
            (name: "p0", core_pool_size: 2, maximum_pool_size: 2, queue_capacity: 5),
            (name: "p1", core_pool_size: 1, maximum_pool_size: 1, queue_capacity: 5),
            (name: "p2", core_pool_size: 2, maximum_pool_size: 2, queue_capacity: 5),
        ], max_borrow: [2, 0, 0])"#
            .to_string(),
    ] {
        let sc = load(&pool_only(&pool, true, "190ms"));
        let s = run(&sc, 3, 10, 0);
        let ended = |c: &str| {
            ["completed", "failed", "rejected"]
                .iter()
                .map(|k| get(&s, &format!("class.{c}.{k}")))
                .sum::<f64>()
        };
        assert_eq!(ended("P0") + ended("P2"), 420.0, "{pool}");
        let failed = get(&s, "class.P0.failed_shed") + get(&s, "class.P2.failed_shed");
        if pool.contains("Discard") {
            assert!(failed > 0.0, "{pool}: dropped tasks fail `shed`");
        }
        if pool.contains("CallerRuns") {
            assert!(get(&s, "app.svc.0.caller_runs") > 0.0);
            assert_eq!(get(&s, "class.P0.rejected") + get(&s, "class.P2.rejected"), 0.0);
        }
        stepped(&sc, 3, 5);
    }
}

/// Keep-alive: 4 simultaneous requests grow a pool of core 1 to 4 threads (SynchronousQueue);
/// 1 s after their 100 ms of work the 3 threads above core exit (a `PoolWake` event).
#[test]
fn idle_threads_above_core_exit_after_keep_alive() {
    let sc = load(
        r#"Scenario(
    name: "keep-alive",
    sources: [(name: "burst", interarrival: Constant("0s"), limit: Some(4), target: "llm", app: "svc")],
    apps: [(name: "svc", pool: Some(Shared((name: "w", core_pool_size: 1, maximum_pool_size: 4,
        queue_capacity: 0, keep_alive_time: "1s"))))],
    call_sites: [(name: "llm", upstream: "llm")],
    stations: [(name: "llm", servers: 10, service: Constant("100ms"))],
)"#,
    );
    let cfg = RunConfig {
        sample_every: Some(SimDuration::from_ms(100)),
        ..RunConfig::new(1, SimDuration::from_secs(3))
    };
    let out = models::run(&sc, &cfg);
    assert!(out.violations.is_empty(), "{:?}", out.violations);
    let alive = |t_ms: u64| {
        out.series
            .iter()
            .find(|r| {
                r.metric == "app.svc.0.threads_alive.mean" && r.bucket_start_ns == t_ms * 1_000_000
            })
            .map(|r| r.value)
            .unwrap_or_else(|| {
                panic!("no sample at {t_ms} ms: {:?}", &out.series[..out.series.len().min(40)])
            })
    };
    // Busy 0–100 ms, idle from 100 ms, exit at 1.1 s.
    assert_eq!(alive(500), 4.0);
    assert_eq!(alive(1500), 1.0);
}

/// `health_from`: bulk P2 (100/s for 2 s) overflows a 4-thread pool (40/s) into the
/// deferred queue while the provider is down from 0.5 s to 5 s (every call 5xx). P0 at
/// 10/s keeps probing the breaker. With `health_from: "circuit_breaker.b"` the deferred
/// P2 requests wait until the breaker closes and then succeed; with only `healthy: true`
/// they replay into the open breaker and are rejected `breaker_open`.
fn deferring_behind_a_breaker(health: &str) -> String {
    format!(
        r#"Scenario(
    name: "health-from",
    sources: [
        (name: "bulk", interarrival: Constant("10ms"), limit: Some(200), target: "llm", class: "P2", app: "svc"),
        (name: "probe", interarrival: Constant("100ms"), limit: Some(150), target: "llm", class: "P0", app: "svc"),
    ],
    apps: [(
        name: "svc",
        {health}
        dispatcher: Some((name: "d", policy: Strict, queues: [
            (class: "P0", capacity: 10), (class: "P1", capacity: 10),
            (class: "P2", capacity: 2, overflow: Defer),
        ], defer: (capacity: 500, drain_rate_per_s: 50.0))),
        pool: Some(Shared((name: "workers", core_pool_size: 4, maximum_pool_size: 4, queue_capacity: 0))),
    )],
    circuit_breakers: [(name: "b", sliding_window_size: 10, minimum_number_of_calls: 10,
        permitted_number_of_calls_in_half_open_state: 2, wait_duration_in_open_state: "1s",
        automatic_transition_from_open_to_half_open_enabled: true)],
    call_sites: [(name: "llm", governors: [CircuitBreaker("b")], upstream: "llm")],
    stations: [(name: "llm", servers: 100, service: Constant("100ms"))],
    timeline: [
        (at: "500ms", path: "station.llm.error_rate", value: Float(1.0)),
        (at: "5s", path: "station.llm.error_rate", value: Float(0.0)),
    ],
)"#
    )
}

#[test]
fn deferred_work_waits_for_its_breaker_to_close() {
    let mut p2 = Vec::new();
    for health in ["", r#"health_from: "circuit_breaker.b","#] {
        let sc = load(&deferring_behind_a_breaker(health));
        let s = run(&sc, 1, 20, 0);
        let deferred = get(&s, "app.svc.0.deferred_total");
        let (ok, open) = (get(&s, "class.P2.completed"), get(&s, "class.P2.rejected_breaker_open"));
        println!("health {health:?}: deferred {deferred}, P2 completed {ok}, breaker_open {open}");
        assert!(deferred >= 50.0, "the bulk overflows into the deferred queue: {deferred}");
        p2.push((deferred, ok, open));
        stepped(&sc, 1, 12);
    }
    let ((d0, ok0, open0), (d1, ok1, open1)) = (p2[0], p2[1]);
    assert_eq!(d0, d1, "the same requests are deferred (the replay starts later)");
    // Measured (seed 1): 59 deferred; P2 completed 17 → 63, rejected breaker_open 175 →
    // 129: the 46 deferred during the outage move from `breaker_open` to success (the
    // other 13 were replayed before it began, while the breaker was still CLOSED).
    assert!(ok1 - ok0 >= 0.7 * d0, "the deferred requests succeed: {ok1} vs {ok0}");
    assert_eq!(ok1 - ok0, open0 - open1, "exactly the replays into the open breaker move");
}

/// `health_from` must name a breaker and needs a dispatcher; both are refused with the
/// field path.
#[test]
fn health_from_is_checked() {
    let check = |health: &str, dispatcher: bool| {
        let text = deferring_behind_a_breaker(health);
        let text = if dispatcher {
            text
        } else {
            let i = text.find("dispatcher: Some(").unwrap();
            let j = text.find("pool: Some(").unwrap();
            format!("{}{}", &text[..i], &text[j..])
        };
        let sc: ScenarioSpec<ParamValue> = ron::from_str(&text).expect("parses");
        sc.check().map_err(|e| e.to_string())
    };
    assert_eq!(check(r#"health_from: "circuit_breaker.b","#, true), Ok(()));
    let e = check(r#"health_from: "circuit_breaker.x","#, true).unwrap_err();
    assert!(
        e.starts_with("apps[0].health_from: expected a breaker path")
            && e.contains("found \"circuit_breaker.x\"; breakers: [circuit_breaker.b]"),
        "{e}"
    );
    let e = check(r#"health_from: "circuit_breaker.b","#, false).unwrap_err();
    assert!(e.starts_with("apps[0].health_from: expected a dispatcher"), "{e}");
}
