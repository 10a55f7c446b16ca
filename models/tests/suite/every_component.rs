//! One scenario with every component kind the world wires: it runs clean (invariants after
//! every event, conservation, determinism, observing changes nothing), every registered
//! parameter can be set (sweeps), and every run-time parameter can change mid-run
//! (timeline) without breaking an invariant.

use models::params::ParamValue;
use models::scenario::SetParam;
use models::{RunConfig, Scenario};
use sim_core::SimDuration;

/// Every governor kind of the kind table (`models/src/kinds.rs`), expanded from it:
/// (variant, scenario list), in table order.
macro_rules! governor_kinds {
    ($( $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])?
        $variant:ident { list: $list:ident, spec: $spec:ty, state: $state:ty $(,)? } ),* $(,)?) => {
        const GOVERNOR_KINDS: &[(&str, &str)] = &[$( (stringify!($variant), stringify!($list)) ),*];
    };
}
models::with_governor_kinds!(governor_kinds);

/// One declaration of each governor kind, and where it sits: (variant, name, call site,
/// position in that site's stack, the declaration in its list). A row of the kind table
/// without a row here fails every test of this module (`scenario_text`).
#[rustfmt::skip]
const GOVERNORS: &[(&str, &str, &str, u8, &str)] = &[
    ("Gate", "llm", "llm", 9, r#"(name: "llm", permits: 48, acquire_timeout: "500ms")"#),
    ("FlowRules", "edge", "llm", 1,
     r#"FlowRules(name: "edge", rules: [FlowRule(count: 400.0), FlowRule(grade: THREAD, count: 200.0)])"#),
    ("ParamFlow", "per-user", "llm", 2, r#"ParamFlowRule(name: "per-user", param: User, count: 20.0)"#),
    ("TokenBucket", "tpm", "llm", 7,
     r#"TokenBucket(name: "tpm", capacity: 2000000, refill_tokens_per_minute: 2000000)"#),
    ("Retry", "retry", "llm", 5,
     r#"Retry(name: "retry", max_attempts: 3, backoff: Exponential(wait_duration: "100ms"),
              jitter: Full, budget: Ratio(max_ratio: 0.1, window: "10s"))"#),
    ("Cache", "answers", "llm", 3, r#"Cache(name: "answers", ttl: "30s", hit_probability: 0.8)"#),
    ("SingleFlight", "dedup", "llm", 4, r#"SingleFlight(name: "dedup")"#),
    ("CircuitBreaker", "llm-cb", "llm", 6,
     r#"CircuitBreaker(name: "llm-cb", sliding_window_size: 50, minimum_number_of_calls: 20,
                       wait_duration_in_open_state: "3s", permitted_number_of_calls_in_half_open_state: 3)"#),
    ("DegradeRule", "vector-dr", "vector", 3,
     r#"DegradeRule(name: "vector-dr", grade: ERROR_RATIO, count: 0.5, time_window: 5)"#),
    ("Batcher", "batch8", "summarize", 1, r#"Batcher(name: "batch8", window: "5ms", max_batch: 8)"#),
    ("TimeLimiter", "tl", "llm", 0, r#"(name: "tl", timeout_duration: "12s")"#),
    ("ClusterFlow", "cluster", "llm", 8,
     r#"ClusterFlowRule(name: "cluster", count: 150, threshold_type: GLOBAL)"#),
    ("AimdLimit", "aimd", "llm-small", 1,
     r#"AimdLimit(name: "aimd", initial_limit: 20, min_limit: 5, max_limit: 100, backoff_ratio: 0.9,
                  timeout: "500ms")"#),
    ("Gradient2Limit", "g2", "llm-small", 2,
     r#"Gradient2Limit(name: "g2", initial_limit: 20, min_limit: 5, max_concurrency: 100)"#),
    ("SentinelResource", "vec", "vector", 1,
     r#"SentinelResource(name: "vec", flow_rules: [FlowRule(count: 500.0, control_behavior: RATE_LIMITER)],
        degrade_rules: [DegradeRule(name: "slow", grade: SLOW_REQUEST_RATIO, count: 200, time_window: 2)])"#),
    ("VegasLimit", "vegas", "llm-small", 3, r#"VegasLimit(name: "vegas", max_concurrency: 100)"#),
    ("AdaptiveConcurrency", "envoy", "llm-small", 4,
     r#"AdaptiveConcurrency(name: "envoy", concurrency_update_interval: "100ms",
                           min_rtt_calc_interval: "10s", max_concurrency_limit: 100)"#),
    ("SreThrottler", "client", "llm", 10,
     r#"SreThrottler(name: "client", k: 2.0, window: "30s", buckets: 30, max_rejection_probability: 0.9)"#),
    ("Hedge", "vh", "vector", 2,
     r#"Hedge(name: "vh", max_attempts: 3, hedging_delay: "30ms", non_fatal: ["connect_error"],
              delay_percentile: 0.95, percentile_window: 200,
              budget: GrpcTokenBucket(max_tokens: 10, token_ratio: 0.1))"#),
    ("RateLimiter", "r4j-rl", "llm", 11,
     r#"RateLimiter(name: "r4j-rl", limit_for_period: 40, limit_refresh_period: "100ms",
                    timeout_duration: "300ms")"#),
    ("ThreadPoolBulkhead", "r4j-tpb", "vector", 4,
     r#"ThreadPoolBulkhead(name: "r4j-tpb", core_thread_pool_size: 8, max_thread_pool_size: 16,
                           queue_capacity: 20, keep_alive_duration: "50ms")"#),
    ("CodelQueue", "cq", "llm-small", 5,
     r#"CodelQueue(name: "cq", permits: 40, mode: FOLLY, target: "5ms", interval: "100ms",
                   lifo_threshold: 20, max_queue: 500)"#),
    ("PartitionedLimit", "parts", "llm-small", 6,
     r#"PartitionedLimit(name: "parts", limit: 60, partitions: [
            Partition(name: "live", percent: 0.6, classes: ["P0"]),
            Partition(name: "rest", percent: 0.4, classes: ["P1", "P2"])])"#),
    ("FlowController", "gaie", "llm-small", 7,
     r#"FlowController(name: "gaie", limit: 30, priorities: {"P0": 10, "P2": -1}, ttl: "500ms",
                       expiry_cleanup_interval: "100ms", band_max_queue: 200, max_queue: 300)"#),
    ("PidShedder", "cinnamon", "llm-small", 8,
     r#"PidShedder(name: "cinnamon", max_inflight: 50, cohorts: 64, target: "200ms", period: "250ms",
                   kp: 0.1, ki: 0.01, kd: 0.05, queue_timeout: "1s")"#),
];

/// Everything but the governors: `GOVERNOR_LISTS` and each `STACK:<site>` are filled in
/// from the kind table (`scenario_text`). Every non-governor kind of the component table
/// (`models::components::ComponentKind`) is here (`every_kind_of_both_tables_is_in_the_scenario`).
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
                                            queue_capacity: 100, max_queue_wait: Some("3s"),
                                            codel: Some((target: "50ms", interval: "500ms"))))))],
    pipelines: [(name: "rag", budget: "6s", stages: [
        Parallel([
            Step(name: "vector", call: "vector", calls: Uniform(min: 2, max: 4), mode: Parallel, optional: true,
                 blocking: false),
            Step(name: "profile", call: "vector", optional: true, blocking: false),
        ]),
        Step(name: "answer", call: "llm", calls: Choice([(1, 70), (2, 20), (3, 10)])),
    ])],
    GOVERNOR_LISTS
    per_instance: ["cluster_flow.cluster"],
    call_sites: [
        (name: "vector", governors: STACK:vector, upstream: "vectordb", timeout: "300ms",
         fallback: Fallback(on: ["upstream_5xx", "timeout", "breaker_open"], to: CallSite("llm-small"))),
        (name: "llm", governors: STACK:llm,
         upstream: "provider", timeout: "10s", stream_read_timeout: "2s",
         fallback: Fallback(to: CallSite("llm-small"), trim: Trim(keep: 0.5))),
        (name: "llm-small", governors: STACK:llm-small, upstream: "small", timeout: "2s", connection_pool: "http",
         split: [("small", 90), ("small-next", 10)], backup: "small-backup",
         fallback: Fallback(to: Busy(max_per_second: Some(20), cache: "answers")),
         network: (request: Constant("1ms"), response: Constant("2ms"))),
        (name: "summarize", governors: STACK:summarize, upstream: "gpu", timeout: "30s",
         split: [("gpu", 1), ("gpus", 1)]),
    ],
    stations: [
        (name: "vectordb", servers: 32, service: LogNormal(mean: "20ms", cv: 1.0), error_rate: 0.02),
        (name: "provider", servers: 64, queue_capacity: Some(200), service: LogNormal(mean: "300ms", cv: 0.5),
         per_output_token: "1ms", load_slope: "2ms", error_rate: 0.01, business_error_rate: 0.005,
         cost_per_1k_prompt_tokens: 0.0005, cost_per_1k_output_tokens: 0.0015, quota: "openai",
         streaming: true, chunk_tokens: 4, stall_rate: 0.02, stall_duration: Exponential(mean: "3s")),
        (name: "small", servers: 8, queue_capacity: Some(50), service: LogNormal(mean: "100ms", cv: 0.5),
         error_rate: 0.05, codel: Some((target: "20ms", interval: "100ms", lifo_when_overloaded: true))),
        (name: "small-next", servers: 2, service: LogNormal(mean: "80ms", cv: 0.5), error_rate: 0.1),
        (name: "small-backup", servers: 4, service: LogNormal(mean: "150ms", cv: 0.5)),
    ],
    gpu_servers: [GpuServer(name: "gpu", max_num_seqs: 32, max_queue: 500)],
    gpu_pools: [GpuPool(name: "gpus", replicas: 2, index_capacity: 1000, queue_threshold: 64,
                        server: GpuServer(name: "replica", max_num_seqs: 16, enable_prefix_caching: true),
                        router: Weighted([(Prefix(Approximate), 3.0), (Queue, 2.0), (Load, 1.0)]))],
    connection_pools: [ConnPool(name: "http", max_total: 16, max_per_route: 8, tcp_rtt: "5ms",
                                keep_alive: "20s", server_idle_timeout: "10s")],
    quotas: [Quota(name: "openai", rpm: Some(20000), tpm: Some(20000000), max_concurrency: Some(100))],
    stalls: [(name: "gc", host: App("api"), rate: 0.2, length: Exponential(mean: "20ms"))],
    autoscalers: [(name: "backup", station: "small-backup", servers_per_replica: 2, min_replicas: 1,
                   max_replicas: 4, metric: Utilization, target: 60.0, tolerance: 0.1,
                   sync_period: "5s", provisioning_delay: Exponential(mean: "3s"), warmup: "5s",
                   warmup_multiplier: 2.0, scale_up_stabilization: "0s", scale_up_select: Max,
                   scale_up_policies: [(kind: Pods, value: 2, period: "5s")],
                   scale_down_stabilization: "10s", scale_down_select: Min,
                   scale_down_policies: [(kind: Percent, value: 50, period: "5s")])],
)"#;

/// The scenario text: `ALL` with one declaration of every governor kind of the table in
/// its list and in its call site's stack. Panics naming any kind without a `GOVERNORS` row.
fn scenario_text() -> String {
    let missing: Vec<&str> = GOVERNOR_KINDS
        .iter()
        .filter(|(v, _)| !GOVERNORS.iter().any(|g| g.0 == *v))
        .map(|(v, _)| *v)
        .collect();
    assert!(missing.is_empty(), "governor kinds without a declaration in GOVERNORS: {missing:?}");
    let mut lists = String::new();
    for (variant, list) in GOVERNOR_KINDS {
        let decls: Vec<&str> = GOVERNORS.iter().filter(|g| g.0 == *variant).map(|g| g.4).collect();
        lists += &format!("{list}: [{}],\n    ", decls.join(", "));
    }
    let mut text = ALL.replace("GOVERNOR_LISTS", &lists);
    for site in ["vector", "llm", "llm-small", "summarize"] {
        let mut stack: Vec<_> = GOVERNORS.iter().filter(|g| g.2 == site).collect();
        stack.sort_by_key(|g| g.3);
        let refs: Vec<String> = stack.iter().map(|g| format!("{}(\"{}\")", g.0, g.1)).collect();
        text = text.replace(&format!("STACK:{site},"), &format!("[{}],", refs.join(", ")));
    }
    text
}

fn load() -> Scenario {
    crate::support::load(&scenario_text())
}

/// Both tables are covered: every governor kind is declared and stands in a stack, and
/// every non-governor kind of the component table registers parameters here. A kind added
/// to either table without a place in this scenario fails here.
#[test]
fn every_kind_of_both_tables_is_in_the_scenario() {
    use models::components::{ComponentKind, Owner};
    let sc = load();
    let reg = sc.registry();
    for &k in ComponentKind::ALL {
        let n = reg.iter().filter(|p| p.owner.component_kind() == Some(k)).count();
        assert!(n > 0, "no `{}` ({}) in the every-component scenario", k.name(), k.row().list);
    }
    let declared = sc.declared_governors();
    for (variant, list) in GOVERNOR_KINDS {
        assert!(declared.iter().any(|d| d.list == *list), "no {variant} in `{list}`");
    }
    let stacked: Vec<String> =
        sc.call_sites.iter().flat_map(|c| &c.governors).map(|g| g.path()).collect();
    for d in &declared {
        assert!(stacked.contains(&d.path), "{} is declared but in no stack", d.path);
    }
    // A governor parameter's typed owner is its declared governor's arena index.
    for p in reg.iter() {
        if let Owner::Governor(g) = p.owner {
            assert_eq!(declared[g].path, format!("{}.{}", p.kind, p.instance), "{}", p.path);
        }
    }
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
    // The backup station's autoscaler decides (its load is the failovers only).
    let scaled = s.get("autoscaler.backup.scale_ups").unwrap()
        + s.get("autoscaler.backup.scale_downs").unwrap();
    assert!(scaled > 0.0, "the autoscaler scales");
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
    assert!(s.get("station.small.codel_dropped").is_some(), "a CoDel station");
    assert!(s.get("pool.workers.codel_dropped").is_some(), "a CoDel pool");
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
    // Every kind of the component table (its run-time parameters).
    let kinds: Vec<&str> =
        models::components::ComponentKind::ALL.iter().map(|k| k.name()).collect();
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
