//! Property tests: random valid scenarios — random topologies (1–3 sources, call sites and
//! stations, an optional fan-out pipeline, fallbacks and backups between sites), random
//! governor stacks (gates, Resilience4j breakers, retries, time limiters, caches, Sentinel
//! flow rules, token buckets), random fault timelines (error rates, latency multipliers,
//! servers, permits… changed at run time through the registry) and short durations.
//!
//! For every case: every invariant of the catalogue (`check_invariants`: I1–I4, I22–I24,
//! I35–I44) after every single event; at the end, conservation per source and per class
//! (offered = completed + failed + rejected + in_flight_end), no infinite value in any
//! summary column and NaN only in the statistics of possibly empty sets (documented in
//! `docs/results.md`), utilisations at most 1, the fingerprint replays, and stepping event by event equals one go.
//!
//! Case counts are bounded (`PROPTEST_CASES` overrides [`CASES`]) so CI stays well under a
//! minute.

use models::params::{ParamType, ParamValue};
use models::run::{finish, simulation};
use models::scenario::{ScenarioSpec, SetParam};
use models::summary::Value;
use models::{RunConfig, Scenario};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use sim_core::{SimDuration, SimTime};

/// Cases per property in CI.
const CASES: u32 = 128;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(CASES)
}

#[derive(Clone, Debug)]
struct Src {
    mean_ms: u64,
    kind: u8,
    class: u8,
    limit: Option<u64>,
    to_pipeline: bool,
    site: usize,
}

#[derive(Clone, Debug)]
struct Station {
    servers: u64,
    queue: Option<u64>,
    service_ms: u64,
    dist: u8,
    error_rate: f64,
    cancellation: bool,
    reject_429: bool,
}

#[derive(Clone, Debug)]
struct Site {
    /// Indices into the governor list below, in stack order.
    stack: Vec<usize>,
    station: usize,
    timeout_ms: u64,
    backup: Option<usize>,
    /// 0: none; 1: the next site; 2: a busy answer; 3: reject.
    fallback: u8,
}

#[derive(Clone, Debug)]
struct Change {
    at_ms: u64,
    param: usize,
    pick: u64,
}

#[derive(Clone, Debug)]
struct Gen {
    sources: Vec<Src>,
    stations: Vec<Station>,
    /// Governor kinds (0 gate, 1 breaker, 2 retry, 3 time limiter, 4 cache, 5 flow, 6 token
    /// bucket) with a parameter seed each.
    governors: Vec<(u8, u64)>,
    sites: Vec<Site>,
    /// Calls per step of a two-stage pipeline (second stage parallel when > 1).
    pipeline: (u32, u32, bool),
    changes: Vec<Change>,
    ms: u64,
    seed: u64,
}

fn gen_strategy() -> impl Strategy<Value = Gen> {
    let src = (
        1u64..40,
        0u8..3,
        0u8..3,
        prop::option::weighted(0.2, 1u64..300),
        any::<bool>(),
        0usize..3,
    )
        .prop_map(|(mean_ms, kind, class, limit, to_pipeline, site)| Src {
            mean_ms,
            kind,
            class,
            limit,
            to_pipeline,
            site,
        });
    let station = (
        1u64..8,
        prop::option::weighted(0.7, 0u64..30),
        1u64..300,
        0u8..3,
        0.0f64..0.4,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(servers, queue, service_ms, dist, error_rate, cancellation, reject_429)| Station {
                servers,
                queue,
                service_ms,
                dist,
                error_rate,
                cancellation,
                reject_429,
            },
        );
    let site = (
        prop::collection::vec(0usize..8, 0..5),
        0usize..3,
        0u64..800,
        prop::option::weighted(0.2, 0usize..3),
        0u8..4,
    )
        .prop_map(|(stack, station, timeout_ms, backup, fallback)| Site {
            stack,
            station,
            timeout_ms,
            backup,
            fallback,
        });
    let change = (0u64..2000, 0usize..1000, any::<u64>()).prop_map(|(at_ms, param, pick)| Change {
        at_ms,
        param,
        pick,
    });
    (
        prop::collection::vec(src, 1..=3),
        prop::collection::vec(station, 1..=3),
        prop::collection::vec((0u8..7, any::<u64>()), 0..=8),
        prop::collection::vec(site, 1..=3),
        (1u32..4, 1u32..4, any::<bool>()),
        prop::collection::vec(change, 0..6),
        200u64..2000,
        any::<u64>(),
    )
        .prop_map(|(sources, stations, governors, sites, pipeline, changes, ms, seed)| Gen {
            sources,
            stations,
            governors,
            sites,
            pipeline,
            changes,
            ms,
            seed,
        })
}

const KINDS: [&str; 7] =
    ["Gate", "CircuitBreaker", "Retry", "TimeLimiter", "Cache", "FlowRules", "TokenBucket"];

/// The governor declarations of kind `k` (a list field of the scenario), one per index.
fn governor_decl(k: u8, name: &str, p: u64) -> String {
    let a = p % 7;
    let b = (p >> 8) % 5;
    match k {
        0 => format!(
            "(name: \"{name}\", permits: {}, acquire_timeout: \"{}ms\", max_waiting: {})",
            1 + a,
            50 * b,
            1 + (p >> 16) % 50
        ),
        1 => format!(
            "CircuitBreaker(name: \"{name}\", sliding_window_size: {}, minimum_number_of_calls: {}, wait_duration_in_open_state: \"{}ms\", permitted_number_of_calls_in_half_open_state: {}{})",
            5 + a,
            1 + b,
            50 + 100 * a,
            1 + b % 3,
            if p >> 20 & 1 == 1 {
                ", automatic_transition_from_open_to_half_open_enabled: true"
            } else {
                ""
            }
        ),
        2 => format!(
            "Retry(name: \"{name}\", max_attempts: {}, backoff: Fixed(wait_duration: \"{}ms\"){})",
            1 + a % 4,
            10 * b,
            if p >> 20 & 1 == 1 { ", jitter: Full" } else { "" }
        ),
        3 => format!(
            "(name: \"{name}\", timeout_duration: \"{}ms\", cancel_running_future: {})",
            20 + 60 * a,
            p >> 20 & 1 == 1
        ),
        4 => format!(
            "Cache(name: \"{name}\", ttl: \"{}ms\", hit_probability: {})",
            100 + 200 * a,
            b as f64 / 5.0
        ),
        5 => format!("FlowRules(name: \"{name}\", rules: [FlowRule(count: {}.0)])", 5 + 40 * a),
        _ => format!(
            "TokenBucket(name: \"{name}\", capacity: {}, refill_tokens_per_minute: {})",
            1000 + 1000 * a,
            60_000 * (1 + b)
        ),
    }
}

const LISTS: [&str; 7] = [
    "gates",
    "circuit_breakers",
    "retries",
    "time_limiters",
    "caches",
    "flow_rules",
    "token_buckets",
];

/// The scenario text of a case (timeline added afterwards, from the registry).
fn render(g: &Gen) -> String {
    let n_sites = g.sites.len();
    let n_st = g.stations.len();
    let mut s = String::from("Scenario(name: \"prop\",\n  sources: [\n");
    for (i, x) in g.sources.iter().enumerate() {
        let dist = match x.kind {
            0 => format!("Exponential(mean: \"{}ms\")", x.mean_ms),
            1 => format!("Constant(\"{}ms\")", x.mean_ms),
            _ => format!("Gamma(mean: \"{}ms\", cv: 2.0)", x.mean_ms),
        };
        let target =
            if x.to_pipeline { "pipe".to_string() } else { format!("s{}", x.site % n_sites) };
        s += &format!(
            "    (name: \"src{i}\", interarrival: {dist}, target: \"{target}\", class: \"P{}\", prompt_tokens: Constant(100.0), output_tokens: Constant(20.0), keys: Zipf(n: 50, s: 1.0){}),\n",
            x.class,
            x.limit.map(|l| format!(", limit: Some({l})")).unwrap_or_default()
        );
    }
    s += "  ],\n";
    let (c1, c2, par) = g.pipeline;
    s += &format!(
        "  pipelines: [(name: \"pipe\", stages: [Step(name: \"a\", call: \"s0\", calls: Fixed({c1})), Step(name: \"b\", call: \"s{}\", calls: Uniform(min: 1, max: {c2}), mode: {}, optional: true)])],\n",
        n_sites - 1,
        if par { "Parallel" } else { "Sequential" }
    );
    let mut lists: Vec<Vec<String>> = vec![Vec::new(); 7];
    let mut names = Vec::new();
    for (i, (k, p)) in g.governors.iter().enumerate() {
        let name = format!("g{i}");
        lists[*k as usize].push(governor_decl(*k, &name, *p));
        names.push(format!("{}(\"{name}\")", KINDS[*k as usize]));
    }
    for (l, decls) in LISTS.iter().zip(&lists) {
        if !decls.is_empty() {
            s += &format!("  {l}: [{}],\n", decls.join(", "));
        }
    }
    s += "  call_sites: [\n";
    for (i, x) in g.sites.iter().enumerate() {
        let mut stack: Vec<usize> = x.stack.iter().filter(|&&k| k < names.len()).copied().collect();
        stack.dedup();
        let mut seen = std::collections::BTreeSet::new();
        stack.retain(|k| seen.insert(*k));
        let govs: Vec<&str> = stack.iter().map(|&k| names[k].as_str()).collect();
        let backup = x.backup.map(|b| b % n_st).filter(|&b| b != x.station % n_st);
        let fallback = match x.fallback {
            1 if i + 1 < n_sites => format!(", fallback: Fallback(to: CallSite(\"s{}\"))", i + 1),
            2 => ", fallback: Fallback(to: Busy(max_per_second: Some(3)))".to_string(),
            3 => ", fallback: Fallback(to: Reject)".to_string(),
            _ => String::new(),
        };
        s += &format!(
            "    (name: \"s{i}\", governors: [{}], upstream: \"st{}\", timeout: \"{}ms\"{}{fallback}),\n",
            govs.join(", "),
            x.station % n_st,
            x.timeout_ms,
            backup.map(|b| format!(", backup: \"st{b}\"")).unwrap_or_default()
        );
    }
    s += "  ],\n  stations: [\n";
    for (i, x) in g.stations.iter().enumerate() {
        let dist = match x.dist {
            0 => format!("Exponential(mean: \"{}ms\")", x.service_ms),
            1 => format!("Constant(\"{}ms\")", x.service_ms),
            _ => format!("LogNormal(mean: \"{}ms\", cv: 1.5)", x.service_ms),
        };
        s += &format!(
            "    (name: \"st{i}\", servers: {}, queue_capacity: {}, service: {dist}, error_rate: {}, cancellation: {}{}),\n",
            x.servers,
            x.queue.map(|q| format!("Some({q})")).unwrap_or("None".into()),
            x.error_rate,
            x.cancellation,
            if x.reject_429 { ", reject_as: Upstream429" } else { "" }
        );
    }
    s += "  ],\n)";
    s
}

/// A value of a run-time parameter, from the case's `pick`: small counts, durations under
/// 2 s, fault-like floats (error rate up to 1: an outage window).
fn value_of(ty: &ParamType, pick: u64) -> ParamValue {
    match ty {
        ParamType::Count { min, max } => ParamValue::Count((min + pick % 8).min(*max)),
        ParamType::OptCount { min, max } => {
            ParamValue::OptCount((!pick.is_multiple_of(3)).then(|| (min + pick % 8).min(*max)))
        }
        ParamType::Duration { min, max } => {
            ParamValue::Duration(SimDuration((min.0 + (pick % 2000) * 1_000_000).min(max.0)))
        }
        ParamType::DurationDist => ParamValue::DurationDist(
            ron::from_str(&format!("Exponential(mean: \"{}ms\")", 1 + pick % 100)).unwrap(),
        ),
        ParamType::NumberDist => ParamValue::NumberDist(
            ron::from_str(&format!("LogNormal(mean: {}.0, cv: 0.5)", 1 + pick % 1000)).unwrap(),
        ),
        ParamType::Float { min, max } => {
            let u = (pick % 1001) as f64 / 1000.0;
            ParamValue::Float((min + (max.min(min + 4.0) - min) * u).clamp(*min, *max))
        }
        // u in (0, 1]: never the excluded bound itself.
        ParamType::FloatAbove { above, max } => {
            let u = (pick % 1000 + 1) as f64 / 1000.0;
            ParamValue::Float((above + (max.min(above + 4.0) - above) * u).min(*max))
        }
        ParamType::Bool => ParamValue::Bool(pick.is_multiple_of(2)),
        ParamType::Enum { choices } => {
            ParamValue::Enum(choices[pick as usize % choices.len()].to_string())
        }
        ParamType::Name { choices } => {
            ParamValue::Name(choices[pick as usize % choices.len()].to_string())
        }
        // min_len..=min_len + 2 entries (within max_len), each drawn from `pick` in turn.
        ParamType::List { of, min_len, max_len } => {
            let n = (*min_len + (pick % 3) as usize).min(*max_len);
            ParamValue::List((0..n as u64).map(|i| value_of(of, pick / 3 + i)).collect())
        }
    }
}

/// The checked scenario of a case, with its timeline drawn from the registry's run-time
/// parameters (a change a cross-field rule refuses is left out).
fn build(g: &Gen) -> Result<Scenario, String> {
    let text = render(g);
    let mut sc: ScenarioSpec<ParamValue> =
        ron::from_str(&text).map_err(|e| format!("{e}\n{text}"))?;
    sc.check().map_err(|e| format!("{}: {}\n{text}", e.path, e.message))?;
    let runtime: Vec<(String, ParamType)> = sc
        .registry()
        .iter()
        .filter(|p| p.runtime)
        .map(|p| (p.path.clone(), p.ty.clone()))
        .collect();
    for c in &g.changes {
        if runtime.is_empty() {
            break;
        }
        let (path, ty) = &runtime[c.param % runtime.len()];
        let change = SetParam {
            at: SimDuration::from_ms(c.at_ms),
            path: path.clone(),
            value: value_of(ty, c.pick),
            reload: false,
        };
        sc.timeline.push(change);
        if sc.check_timeline().is_err() {
            sc.timeline.pop();
        }
    }
    sc.timeline.sort_by_key(|c| c.at);
    Ok(sc)
}

/// Columns that are statistics of a possibly empty set and so NaN when it is empty
/// (`docs/results.md`): latencies and waits with no request, the SLA share with no SLA or
/// no answer, amplification with no request.
fn may_be_nan(name: &str) -> bool {
    ["latency_ms_", "wait_ms_mean", "p_wait", "sla_met", "amplification"]
        .iter()
        .any(|s| name.contains(s))
}

/// Summed over the cases, so that the property cannot pass vacuously: events, timeline
/// changes, requests by outcome, governor kinds declared.
static REACH: std::sync::Mutex<std::collections::BTreeMap<&'static str, u64>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

fn reach(k: &'static str, n: u64) {
    *REACH.lock().unwrap().entry(k).or_default() += n;
}

fn check_case(g: &Gen) -> Result<(), TestCaseError> {
    let sc = build(g).map_err(TestCaseError::fail)?;
    let cfg = RunConfig::new(g.seed, SimDuration::from_ms(g.ms));
    let end = SimTime::ZERO + cfg.duration;
    let mut sim = simulation(&sc, &cfg);
    let mut n = 0u64;
    while sim
        .step_until(end)
        .map_err(|e| TestCaseError::fail(format!("engine error after {n} events: {e}")))?
    {
        n += 1;
        let v = sim.world().check_invariants();
        prop_assert!(v.is_empty(), "after event {} at {}: {:?}", n, sim.now(), v);
    }
    sim.run_until(end).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    let stepped = finish(sim, end, None);
    prop_assert!(stepped.error.is_none(), "{:?}", stepped.error);
    prop_assert!(stepped.violations.is_empty(), "{:?}", stepped.violations);
    let s = &stepped.summary;
    for (name, v) in &s.values {
        if let Value::F64(x) = v {
            prop_assert!(!x.is_infinite(), "{} = {}", name, x);
            prop_assert!(!x.is_nan() || may_be_nan(name), "{} is NaN", name);
            // Utilisations are shares of capacity (docs/results.md): never above 1.
            prop_assert!(!name.ends_with(".utilization") || *x <= 1.0, "{} = {}", name, x);
        }
    }
    let conserved = |p: &str| -> Result<(), TestCaseError> {
        let g = |k: &str| s.get(&format!("{p}.{k}")).unwrap_or(f64::NAN);
        let (o, c, f, r, i) =
            (g("offered"), g("completed"), g("failed"), g("rejected"), g("in_flight_end"));
        prop_assert!(o == c + f + r + i, "{}: offered {} != {} + {} + {} + {}", p, o, c, f, r, i);
        Ok(())
    };
    for src in &sc.sources {
        conserved(&format!("source.{}", src.name))?;
    }
    for class in &sc.classes {
        conserved(&format!("class.{}", class.name))?;
    }
    reach("cases", 1);
    reach("events", n);
    reach("timeline changes", sc.timeline.len() as u64);
    reach(
        "config_change events",
        stepped.state_events.iter().filter(|e| e.kind == "config_change").count() as u64,
    );
    for k in ["completed", "failed", "rejected", "in_flight_end"] {
        let key = match k {
            "completed" => "requests completed",
            "failed" => "requests failed",
            "rejected" => "requests rejected",
            _ => "requests in flight at the end",
        };
        reach(
            key,
            sc.sources
                .iter()
                .map(|x| s.get(&format!("source.{}.{k}", x.name)).unwrap_or(0.0) as u64)
                .sum(),
        );
    }
    for (k, _) in &g.governors {
        reach(KINDS[*k as usize], 1);
    }
    let plain = models::run(&sc, &cfg);
    prop_assert_eq!(plain.fingerprint, stepped.fingerprint, "stepping equals one go");
    prop_assert_eq!(&plain.summary, &stepped.summary);
    let again = models::run(&sc, &cfg);
    prop_assert_eq!(again.fingerprint, plain.fingerprint, "the fingerprint replays");
    Ok(())
}

/// A runner with a fixed seed: CI runs the same cases every time (a failure replays).
fn runner(cases: u32) -> TestRunner {
    TestRunner::new_with_rng(
        Config { cases, failure_persistence: None, ..Config::default() },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    )
}

#[test]
fn random_scenarios_keep_every_invariant_after_every_event() {
    let mut runner = runner(cases());
    runner.run(&gen_strategy(), |g| check_case(&g)).unwrap();
    let r = REACH.lock().unwrap().clone();
    println!("property reach: {r:?}");
    let want = [
        "events",
        "timeline changes",
        "config_change events",
        "requests completed",
        "requests failed",
        "requests rejected",
    ];
    for k in want.iter().chain(&KINDS) {
        assert!(r.get(k).copied().unwrap_or(0) > 0, "never reached: {k} ({r:?})");
    }
}

#[test]
fn every_generated_scenario_is_valid() {
    // The generator's own property: every case checks (a generator that produced invalid
    // scenarios would test the parser, not the model).
    let mut runner = runner(cases() * 4);
    runner.run(&gen_strategy(), |g| build(&g).map(|_| ()).map_err(TestCaseError::fail)).unwrap();
}
