//! One scenario with every component kind the world wires: it runs clean (invariants after
//! every event, conservation, determinism, observing changes nothing), every registered
//! parameter can be set (sweeps), and every run-time parameter can change mid-run
//! (timeline) without breaking an invariant.

use models::params::ParamValue;
use models::scenario::SetParam;
use models::{RunConfig, Scenario};
use sim_core::SimDuration;

const ALL: &str = r#"Scenario(
    name: "everything",
    classes: [(name: "P0", sla: "2s"), (name: "P1", sla: "5s"), (name: "P2")],
    sources: [
        (name: "chat", interarrival: Exponential(mean: "20ms"), target: "rag", class: "P0",
         prompt_tokens: LogNormal(mean: 800.0, cv: 1.0), output_tokens: LogNormal(mean: 200.0, cv: 0.8),
         keys: Zipf(n: 500, s: 1.1), app: "api"),
        (name: "batch", interarrival: Exponential(mean: "50ms"), target: "summarize", class: "P2",
         prompt_tokens: Constant(128.0), output_tokens: Constant(16.0), budget: "20s"),
        (name: "agents", target: "rag", closed_loop: ClosedLoop(users: 20, think_time: Exponential(mean: "1s"),
         give_up: "8s"), prompt_tokens: Constant(300.0), output_tokens: Constant(50.0)),
    ],
    users: Some(Users(count: 1000, vip_share: 0.05, vip_class: Some("P0"),
                      segments: [(name: "promo", share: 0.3)])),
    apps: [App(name: "api", instances: 2, balancer: LeastOutstanding,
               dispatcher: Some((name: "d", policy: WeightedRoundRobin(weights: [3, 2, 1]), queues: [
                   (class: "P0", capacity: 200, max_queue_wait: Some("2s")),
                   (class: "P1", capacity: 200), (class: "P2", capacity: 200)])),
               pool: Some(Shared(ThreadPool(name: "workers", core_pool_size: 16, maximum_pool_size: 32,
                                            queue_capacity: 100, max_queue_wait: Some("3s")))))],
    pipelines: [(name: "rag", budget: "6s", stages: [
        Parallel([
            Step(name: "vector", call: "vector", calls: Uniform(min: 2, max: 4), mode: Parallel, optional: true,
                 blocking: false),
            Step(name: "profile", call: "vector", optional: true, blocking: false),
        ]),
        Step(name: "answer", call: "llm", calls: Choice([(1, 70), (2, 20), (3, 10)])),
    ])],
    gates: [(name: "llm", permits: 48, acquire_timeout: "500ms")],
    flow_rules: [FlowRules(name: "edge", rules: [FlowRule(count: 400.0), FlowRule(grade: THREAD, count: 200.0)])],
    param_flow_rules: [ParamFlowRule(name: "per-user", param: User, count: 20.0)],
    token_buckets: [TokenBucket(name: "tpm", capacity: 2000000, refill_tokens_per_minute: 2000000)],
    retries: [Retry(name: "retry", max_attempts: 3, backoff: Exponential(wait_duration: "100ms"),
                    jitter: Full, budget: Ratio(max_ratio: 0.1, window: "10s"))],
    caches: [Cache(name: "answers", ttl: "30s", hit_probability: 0.8)],
    single_flights: [SingleFlight(name: "dedup")],
    circuit_breakers: [CircuitBreaker(name: "llm-cb", sliding_window_size: 50, minimum_number_of_calls: 20,
                                      wait_duration_in_open_state: "3s",
                                      permitted_number_of_calls_in_half_open_state: 3)],
    degrade_rules: [DegradeRule(name: "vector-dr", grade: ERROR_RATIO, count: 0.5, time_window: 5)],
    sentinel_resources: [SentinelResource(name: "vec", flow_rules: [FlowRule(count: 500.0,
        control_behavior: RATE_LIMITER)], degrade_rules: [DegradeRule(name: "slow",
        grade: SLOW_REQUEST_RATIO, count: 200, time_window: 2)])],
    batchers: [Batcher(name: "batch8", window: "5ms", max_batch: 8)],
    hedges: [Hedge(name: "vh", max_attempts: 3, hedging_delay: "30ms", non_fatal: ["connect_error"],
                   delay_percentile: 0.95,
                   percentile_window: 200, budget: GrpcTokenBucket(max_tokens: 10, token_ratio: 0.1))],
    cluster_flow_rules: [ClusterFlowRule(name: "cluster", count: 150, threshold_type: GLOBAL)],
    per_instance: ["cluster_flow.cluster"],
    call_sites: [
        (name: "vector", governors: [SentinelResource("vec"), Hedge("vh"), DegradeRule("vector-dr")], upstream: "vectordb", timeout: "300ms",
         fallback: Fallback(on: ["upstream_5xx", "timeout", "breaker_open"], to: CallSite("llm-small"))),
        (name: "llm", governors: [FlowRules("edge"), ParamFlow("per-user"), Cache("answers"),
                                  SingleFlight("dedup"), Retry("retry"), CircuitBreaker("llm-cb"),
                                  TokenBucket("tpm"), ClusterFlow("cluster"), Gate("llm")],
         upstream: "provider", timeout: "10s", stream_read_timeout: "2s",
         fallback: Fallback(to: CallSite("llm-small"), trim: Trim(keep: 0.5))),
        (name: "llm-small", upstream: "small", timeout: "2s", connection_pool: "http",
         split: [("small", 90), ("small-next", 10)], backup: "small-backup",
         fallback: Fallback(to: Busy(max_per_second: Some(20), cache: "answers"))),
        (name: "summarize", governors: [Batcher("batch8")], upstream: "gpu", timeout: "30s"),
    ],
    stations: [
        (name: "vectordb", servers: 32, service: LogNormal(mean: "20ms", cv: 1.0), error_rate: 0.02),
        (name: "provider", servers: 64, queue_capacity: Some(200), service: LogNormal(mean: "300ms", cv: 0.5),
         per_output_token: "1ms", load_slope: "2ms", error_rate: 0.01, business_error_rate: 0.005,
         cost_per_1k_prompt_tokens: 0.0005, cost_per_1k_output_tokens: 0.0015, quota: "openai",
         streaming: true, chunk_tokens: 4, stall_rate: 0.02, stall_duration: Exponential(mean: "3s")),
        (name: "small", servers: 8, queue_capacity: Some(50), service: LogNormal(mean: "100ms", cv: 0.5),
         error_rate: 0.05),
        (name: "small-next", servers: 2, service: LogNormal(mean: "80ms", cv: 0.5), error_rate: 0.1),
        (name: "small-backup", servers: 4, service: LogNormal(mean: "150ms", cv: 0.5)),
    ],
    gpu_servers: [GpuServer(name: "gpu", max_num_seqs: 32, max_queue: 500)],
    connection_pools: [ConnPool(name: "http", max_total: 16, max_per_route: 8, tcp_rtt: "5ms",
                                keep_alive: "20s", server_idle_timeout: "10s")],
    quotas: [Quota(name: "openai", rpm: Some(20000), tpm: Some(20000000), max_concurrency: Some(100))],
)"#;

fn load() -> Scenario {
    crate::support::load(ALL)
}

fn cfg(seed: u64, sample: Option<u64>) -> RunConfig {
    RunConfig {
        sample_every: sample.map(SimDuration::from_secs),
        ..RunConfig::new(seed, SimDuration::from_secs(30))
    }
}

#[test]
fn every_component_runs_clean_and_replays() {
    let sc = load();
    let a = models::run(&sc, &cfg(1, None));
    assert!(a.error.is_none(), "{:?}", a.error);
    assert!(a.violations.is_empty(), "{:?}", a.violations);
    let b = models::run(&sc, &cfg(1, Some(1)));
    assert_eq!(a.fingerprint, b.fingerprint, "same seed, and sampling changes nothing");
    assert_ne!(a.fingerprint, models::run(&sc, &cfg(2, None)).fingerprint);
    let s = &a.summary;
    for src in ["chat", "batch", "agents"] {
        let g = |k: &str| s.get(&format!("source.{src}.{k}")).unwrap();
        assert!(g("completed") > 0.0, "{src} served nothing");
        assert_eq!(
            g("offered"),
            g("completed") + g("failed") + g("rejected") + g("in_flight_end"),
            "{src}: conservation"
        );
    }
    assert!(s.get("gpu_server.gpu.mean_batch").unwrap() > 1.0, "the batcher batches");
    // The vector DB's slow tail (LogNormal, cv 1) is hedged after its observed p95; its 5xx
    // are fatal there (non_fatal: connect_error only), so they still reach the fallback.
    assert!(s.get("hedge.vh.hedges_sent").unwrap() > 0.0, "hedges are sent");
    assert!(s.get("hedge.vh.hedge_wins").unwrap() > 0.0, "some hedges win");
    // The cluster rule: one client per app instance (chat) plus the declared one (agents).
    for c in ["cluster_flow.cluster", "cluster_flow.cluster@api.0", "cluster_flow.cluster@api.1"] {
        assert!(s.get(&format!("{c}.token_ok")).unwrap() > 0.0, "{c} asked the server");
    }
    assert!(s.get("station.provider.cost").unwrap() > 0.0);
    // Streams stall (2%) and the 2 s read timeout closes some of them.
    assert!(s.get("station.provider.stream_stalls").unwrap() > 0.0);
    assert!(s.get("station.provider.stream_interruptions").unwrap() > 0.0);
    assert!(s.get("call_site.vector.fallbacks").unwrap() > 0.0, "the degradation chain is used");
    // The fallback site borrows pooled connections, splits 90/10 and fails over.
    assert!(s.get("connpool.http.connects").unwrap() > 0.0);
    assert!(s.get("connpool.http.reuses").unwrap() > 0.0);
    assert!(s.get("station.small-next.utilization").unwrap() > 0.0, "the split's 10%");
    assert!(s.get("call_site.llm-small.failovers").unwrap() > 0.0, "the backup answers");
    assert!(s.get("call_site.llm-small.busy_answers").is_some());
    // The chat pipeline fans out: 1 profile + 2–4 vector + 1–3 LLM calls.
    let amp = s.get("source.chat.amplification").unwrap();
    assert!((3.0..8.0).contains(&amp), "amplification {amp}");
}

/// I1–I25 after every single event, not only at the end.
#[test]
fn invariants_hold_after_every_event() {
    let sc = load();
    let (_, n) = crate::support::try_stepped(&sc, &cfg(3, None)).unwrap_or_else(|e| panic!("{e}"));
    assert!(n > 5_000, "the run did something ({n} events)");
}

#[test]
fn every_registered_parameter_can_be_set() {
    let mut sc = load();
    sc.set_every_param_to_its_value().expect("every kind has a set_param arm");
    assert_eq!(sc, load(), "setting values to themselves changes nothing");
}

/// Every run-time parameter is changed at 5 s to its own value: the world applies each one
/// (no kind is missing an arm), records a `config_change`, and stays consistent.
#[test]
fn every_runtime_parameter_changes_mid_run() {
    let mut sc = load();
    let reg = sc.registry();
    let runtime: Vec<_> = reg.iter().filter(|p| p.runtime).collect();
    assert!(runtime.len() > 40, "{} run-time parameters", runtime.len());
    for p in &runtime {
        sc.timeline.push(SetParam {
            reload: false,
            at: SimDuration::from_secs(5),
            path: p.path.clone(),
            value: p.value.clone(),
        });
    }
    let n = runtime.len();
    // A rule reload at 6 s for one parameter of each kind that has rules to reload.
    for kind in models::scenario::reloadable_kinds() {
        let p = runtime.iter().find(|p| p.path.starts_with(&format!("{kind}."))).expect(kind);
        sc.timeline.push(SetParam {
            reload: true,
            at: SimDuration::from_secs(6),
            path: p.path.clone(),
            value: p.value.clone(),
        });
    }
    sc.check_timeline().expect("all run-time");
    let r = models::run(&sc, &cfg(4, None));
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let changes = r.state_events.iter().filter(|e| e.kind == "config_change").count();
    assert_eq!(changes, n);
    // Each one reached the setter its row names (`runtime(apply = …)`; the dispatcher's
    // rows are re-read from its spec): none was refused by the component.
    let refused: Vec<_> = r.state_events.iter().filter(|e| e.kind == "config_rejected").collect();
    assert!(refused.is_empty(), "{refused:?}");
    let reloads = r.state_events.iter().filter(|e| e.kind == "rule_reload").count();
    assert_eq!(reloads, models::scenario::reloadable_kinds().len());
}

/// A change the registry refuses (unknown path, build-time parameter, value out of range,
/// reload of a kind without reloads, class index beyond the classes) never panics the
/// world: it is recorded as `config_rejected` naming the path and the expected range, and
/// the run equals the run without it except for those events.
#[test]
fn refused_changes_are_recorded_never_applied() {
    let base = load();
    let bad: &[(&str, ParamValue, bool, &str)] = &[
        ("gate.llm.permits", ParamValue::Count(0), false, "expected an integer in [1, "),
        ("gate.nope.permits", ParamValue::Count(3), false, "unknown parameter path"),
        ("gate.llm.max_waiting", ParamValue::Count(3), false, "cannot change during a run"),
        ("gate.llm.permits", ParamValue::Float(2.0), false, "expected an integer"),
        ("gate.llm.permits", ParamValue::Count(3), true, "a rule reload applies to flow"),
        ("segment.promo.class", ParamValue::OptCount(Some(7)), false, "class index < 3"),
        ("segment.promo.share", ParamValue::Float(0.5), false, "cannot change during a run"),
    ];
    let clean = models::run(&base, &cfg(2, None));
    for (path, value, reload, want) in bad {
        let e = base.registry();
        let err = models::scenario::validate_change(&e, 3, path, value, *reload).unwrap_err();
        assert!(err.to_string().contains(path) && err.message.contains(want), "{err}");
        let mut sc = base.clone();
        sc.timeline.push(SetParam {
            at: SimDuration::from_secs(5),
            path: path.to_string(),
            value: value.clone(),
            reload: *reload,
        });
        let r = models::run(&sc, &cfg(2, None));
        assert!(r.error.is_none() && r.violations.is_empty(), "{path}: {:?}", r.error);
        let rejected: Vec<_> =
            r.state_events.iter().filter(|e| e.kind == "config_rejected").collect();
        assert_eq!(rejected.len(), 1, "{path}");
        assert!(rejected[0].to.contains(path) && rejected[0].to.contains(want), "{:?}", rejected);
        assert_eq!(r.summary, clean.summary, "{path}: a refused change changes nothing");
    }
}

/// Every value this scenario (every component kind, most fields written) configures is a
/// registered parameter or a field its kind declares scenario-only with the reason
/// (`scenario_only = [...]` in the kind's `declare_params!` header, listed in
/// docs/scenario-reference.md): a field added to a spec without a row fails here.
#[test]
fn every_written_field_is_a_parameter_or_declared_scenario_only() {
    assert_eq!(load().unregistered_fields(), Vec::<String>::new());
}

/// Every kind this scenario (every component) registers is in the parameter catalogue
/// (`models::reference`), so it is documented and enumerable (GUI knobs).
#[test]
fn every_registered_kind_is_catalogued() {
    let kinds: Vec<&str> = models::reference::param_kinds().iter().map(|k| k.kind).collect();
    for p in load().registry().iter() {
        let kind = p.path.split('.').next().expect("a kind");
        assert!(kinds.contains(&kind), "`{kind}` ({}) is not in param_kinds()", p.path);
    }
}

/// Every run-time parameter the world hands to a component by kind (source, call site,
/// segment, app, dispatcher, pool, queue waits, station), changed at 5 s to another value:
/// each is accepted and reaches its setter (none refused), the run stays clean, the run
/// differs from the unchanged one, and a session applying the same changes at 5 s ends
/// with the timeline's fingerprint.
#[test]
fn world_applied_parameters_change_to_other_values() {
    use models::scenario::validate_change;
    let base = load();
    let reg = base.registry();
    let kinds = [
        "source",
        "call_site",
        "segment",
        "app",
        "dispatcher",
        "pool",
        "dispatcher_queue",
        "pool_queue",
        "station",
    ];
    let other = |v: &ParamValue| match v {
        ParamValue::Count(n) => Some(ParamValue::Count(n + 1)),
        ParamValue::OptCount(Some(n)) => Some(ParamValue::OptCount(Some(n + 1))),
        ParamValue::OptCount(None) => Some(ParamValue::OptCount(Some(1))),
        ParamValue::Float(x) => Some(ParamValue::Float(x * 0.9)),
        ParamValue::Bool(b) => Some(ParamValue::Bool(!b)),
        ParamValue::Duration(d) => Some(ParamValue::Duration(SimDuration::from_ns(d.0 * 2))),
        _ => None,
    };
    let changes: Vec<(String, ParamValue)> = reg
        .iter()
        .filter(|p| p.runtime && kinds.contains(&p.kind))
        .filter_map(|p| {
            let v = other(&p.value)?;
            validate_change(&reg, 3, &p.path, &v, false).ok()?;
            Some((p.path.clone(), v))
        })
        .collect();
    assert!(changes.len() >= 15, "{changes:?}");
    let at = SimDuration::from_secs(5);
    let mut sc = base.clone();
    for (path, value) in &changes {
        sc.timeline.push(SetParam { reload: false, at, path: path.clone(), value: value.clone() });
    }
    let r = models::run(&sc, &cfg(6, None));
    assert!(r.error.is_none() && r.violations.is_empty(), "{:?} {:?}", r.error, r.violations);
    let changed = r.state_events.iter().filter(|e| e.kind == "config_change").count();
    assert_eq!(changed, changes.len());
    let refused: Vec<_> = r.state_events.iter().filter(|e| e.kind == "config_rejected").collect();
    assert!(refused.is_empty(), "{refused:?}");
    assert_ne!(r.fingerprint, models::run(&base, &cfg(6, None)).fingerprint, "they mattered");
    let mut s = models::Session::new(base, cfg(6, None));
    s.run_until(sim_core::SimTime::ZERO + at).unwrap();
    for (path, value) in &changes {
        s.apply(path, value.clone()).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    assert_eq!(s.finish().fingerprint, r.fingerprint);
}
