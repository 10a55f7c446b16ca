//! The live session (`models::session`): stepping equals one go, observing changes nothing,
//! a change applied at an instant equals the same change on the scenario's timeline, an
//! applied session replays headless to its fingerprint, a bad change is refused with its
//! path and range, rewinding re-simulates to the same state.

use crate::support::load;
use models::params::ParamValue;
use models::scenario::SetParam;
use models::{RunConfig, Session};
use sim_core::metrics::MetricReading;
use sim_core::{SimDuration, SimTime};

/// Two classes through an app (dispatcher class queues, a worker pool), a breaker and a gate
/// in front of a station whose error rate the timeline raises from 3 s to 6 s: class
/// queues fill, the gate saturates, the breaker opens and probes.
const LIVE: &str = r#"Scenario(name: "live",
    sources: [
        (name: "vip", interarrival: Exponential(mean: "10ms"), target: "c", class: "P0", app: "svc"),
        (name: "bulk", interarrival: Exponential(mean: "4ms"), target: "c", class: "P2", app: "svc"),
    ],
    gates: [(name: "g", permits: 20, acquire_timeout: "1s")],
    circuit_breakers: [(name: "b", sliding_window_size: 20, minimum_number_of_calls: 20,
        wait_duration_in_open_state: "2s")],
    apps: [(
        name: "svc",
        dispatcher: Some((name: "d", policy: Strict, queues: [
            (class: "P0", capacity: 100), (class: "P1", capacity: 100), (class: "P2", capacity: 100),
        ])),
        pool: Some(Shared((name: "workers", core_pool_size: 24, maximum_pool_size: 24, queue_capacity: 0))),
    )],
    call_sites: [(name: "c", governors: [CircuitBreaker("b"), Gate("g")], upstream: "llm", timeout: "2s")],
    stations: [(name: "llm", servers: 25, queue_capacity: Some(50), service: Exponential(mean: "100ms"))],
    timeline: [
        (at: "3s", path: "station.llm.error_rate", value: Float(0.8)),
        (at: "6s", path: "station.llm.error_rate", value: Float(0.0)),
    ],
)"#;

fn cfg(seed: u64) -> RunConfig {
    RunConfig {
        sample_every: Some(SimDuration::from_ms(500)),
        ..RunConfig::new(seed, SimDuration::from_secs(10))
    }
}

fn secs(s: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_secs(s)
}

#[test]
fn stepping_in_any_mix_equals_one_go() {
    let sc = load(LIVE);
    let plain = models::run(&sc, &cfg(1));
    assert!(plain.error.is_none() && plain.violations.is_empty());
    let mut s = Session::new(sc, cfg(1));
    assert_eq!(s.run_for(1000).unwrap(), 1000);
    s.run_until(secs(2)).unwrap();
    while s.now() < secs(4) && s.step().unwrap() {}
    s.run_for(5).unwrap();
    s.run_until(secs(100)).unwrap();
    assert_eq!(s.now(), s.end(), "never past the end");
    assert!(s.is_done());
    assert!(!s.step().unwrap());
    let out = s.finish();
    assert_eq!(out.fingerprint, plain.fingerprint);
    assert_eq!(out.summary, plain.summary);
    assert_eq!(out.series, plain.series);
}

#[test]
fn observing_after_every_event_changes_nothing() {
    let sc = load(LIVE);
    let plain = models::run(&sc, &cfg(2));
    let mut s = Session::new(sc, cfg(2));
    let paths: Vec<String> = s.metric_paths().map(|(p, _)| p.to_string()).collect();
    assert!(paths.contains(&"station.llm.queue_depth".to_string()), "{paths:?}");
    let (mut drained, mut opened, mut queued_p2, mut gate_full) = (0, false, 0u64, false);
    while s.step().unwrap() {
        for p in &paths {
            assert!(s.read(p).is_some(), "{p} listed, so readable");
        }
        drained += s.drain_events().len();
        s.drain_series();
        let snap = s.snapshot();
        opened |= snap.breakers().any(|(_, b)| b.state == "OPEN");
        queued_p2 = queued_p2.max(snap.class_queued[2].1);
        let gate = snap.component("gate.g").expect("the gate");
        let f = gate.in_flight.expect("a limit");
        assert!(f.in_use <= f.limit.unwrap(), "permits within the limit");
        gate_full |= f.in_use == 20;
        assert!(s.component("circuit_breaker.b").unwrap().breaker.is_some());
    }
    assert_eq!(drained, s.model_events().len(), "every event drained once");
    // The run reaches what the snapshot should show: an open breaker (80 % errors for 3 s
    // on a 20-call window), the gate at its 20 permits, a P2 backlog (250 req/s offered to
    // 20 permits held ~100 ms each: 200/s at most).
    assert!(opened && gate_full && queued_p2 > 0, "{opened} {gate_full} {queued_p2}");
    let out = s.finish();
    assert_eq!(out.fingerprint, plain.fingerprint, "observing changed the run");
    assert_eq!(out.state_events.len(), drained);
}

/// `summary_counts` (what a live observer reads at every bucket) is the summary's counts:
/// each of its columns is in `summary(now)` with the same value, at every instant read,
/// and it holds every source's and class's outcome counts and the governors' counters.
#[test]
fn summary_counts_are_the_summary_columns_of_the_same_names() {
    let mut s = Session::new(load(LIVE), cfg(3));
    for t in [1, 4, 7, 10] {
        s.run_until(secs(t)).unwrap();
        let (counts, full) = (s.world().summary_counts(), s.world().summary(s.now()));
        for (n, v) in &counts.values {
            let same = full.values.iter().find(|(m, _)| m == n).map(|(_, w)| w);
            assert_eq!(same, Some(v), "{n} at {t} s");
        }
        let names: Vec<&str> = counts.values.iter().map(|(n, _)| n.as_str()).collect();
        for n in [
            "source.vip.offered",
            "source.bulk.success",
            "class.P0.completed",
            "class.P2.rejected",
            "class.P0.degraded_timeout",
            "circuit_breaker.b.not_permitted",
        ] {
            assert!(names.contains(&n), "{n} in {names:?}");
        }
        assert!(names.iter().all(|n| !n.contains("latency")), "no quantile: {names:?}");
    }
    assert!(s.world().summary_counts().values.iter().any(|(n, v)| {
        n == "circuit_breaker.b.not_permitted" && *v != models::summary::Value::U64(0)
    }));
}

#[test]
fn a_session_change_equals_the_same_change_on_the_timeline() {
    let sc = load(LIVE);
    let mut s = Session::new(sc.clone(), cfg(3));
    s.run_until(secs(4)).unwrap();
    assert_eq!(s.value("gate.g.permits"), Some(&ParamValue::Count(20)));
    let at = s.apply("gate.g.permits", ParamValue::Count(12)).unwrap();
    assert_eq!(at, secs(4));
    assert_eq!(s.value("gate.g.permits"), Some(&ParamValue::Count(20)), "not before the boundary");
    s.step().unwrap();
    assert_eq!(s.value("gate.g.permits"), Some(&ParamValue::Count(12)), "in force after it");
    let live = s.finish();

    let mut timeline = sc.clone();
    timeline.timeline.push(SetParam::new(
        SimDuration::from_secs(4),
        "gate.g.permits",
        ParamValue::Count(12),
    ));
    let headless = models::run(&timeline, &cfg(3));
    assert_eq!(live.fingerprint, headless.fingerprint);
    assert_ne!(live.fingerprint, models::run(&sc, &cfg(3)).fingerprint, "the change mattered");
}

#[test]
fn an_applied_session_replays_to_its_fingerprint() {
    let sc = load(LIVE);
    let mut s = Session::new(sc, cfg(4));
    // Mid-instant changes too: stepping leaves the clock inside an instant.
    s.run_for(3000).unwrap();
    s.apply("station.llm.servers", ParamValue::Count(40)).unwrap();
    s.apply("circuit_breaker.b.failure_rate_threshold", ParamValue::Float(80.0)).unwrap();
    s.run_until(secs(5)).unwrap();
    s.apply("source.bulk.rate_multiplier", ParamValue::Float(2.0)).unwrap();
    s.run_for(10).unwrap();
    s.apply("gate.g.permits", ParamValue::Count(20)).unwrap();
    assert_eq!(s.applied().len(), 4);
    let replay = s.replay_scenario();
    replay.check_timeline().expect("the replay's timeline is valid");
    let cfg = *s.config();
    let live = s.finish();
    assert_eq!(live.fingerprint, models::run(&replay, &cfg).fingerprint);
}

#[test]
fn a_bad_change_is_refused_with_its_path_and_range() {
    let mut s = Session::new(load(LIVE), cfg(5));
    s.run_for(100).unwrap();
    let err = |r: Result<SimTime, models::session::ChangeError>| r.unwrap_err().to_string();
    let e = err(s.apply("gate.g.permits", ParamValue::Count(0)));
    assert!(e.starts_with("gate.g.permits: expected an integer in [1, "), "{e}");
    let e = err(s.apply("gate.g.permits", ParamValue::Float(3.0)));
    assert!(e.contains("gate.g.permits") && e.contains("expected an integer"), "{e}");
    let e = err(s.apply("gate.nope.permits", ParamValue::Count(3)));
    assert!(e.contains("unknown parameter path `gate.nope.permits`"), "{e}");
    let e = err(s.apply("station.llm.queue_capacity", ParamValue::OptCount(Some(3))));
    assert!(e.contains("cannot change during a run"), "{e}");
    let e = err(s.apply_reload("gate.g.permits", ParamValue::Count(3)));
    assert!(e.contains("reload") && e.contains("gate.g.permits"), "{e}");
    // Consistency with the values in force: core ≤ maximum pool size.
    let e = err(s.apply("pool.workers.core_pool_size", ParamValue::Count(30)));
    assert!(
        e.starts_with("pool.workers.core_pool_size: ") && e.contains("> maximum_pool_size 24"),
        "{e}"
    );
    assert!(s.applied().is_empty(), "nothing refused is recorded");
    s.apply("pool.workers.maximum_pool_size", ParamValue::Count(40)).unwrap();
    let t = s.now() + SimDuration::from_ms(1);
    s.run_until(t).unwrap();
    s.apply("pool.workers.core_pool_size", ParamValue::Count(30)).unwrap();
}

#[test]
fn rewinding_re_simulates_to_the_same_state() {
    let sc = load(LIVE);
    let mut s = Session::new(sc, cfg(6));
    s.run_until(secs(2)).unwrap();
    s.apply("gate.g.permits", ParamValue::Count(10)).unwrap();
    s.run_until(secs(3)).unwrap();
    let at_3s = (s.fingerprint_so_far(), s.snapshot());
    s.run_until(secs(7)).unwrap();
    s.apply("gate.g.permits", ParamValue::Count(50)).unwrap();
    s.run_until(secs(8)).unwrap();
    s.rewind(secs(3)).unwrap();
    assert_eq!(s.now(), secs(3));
    assert_eq!(s.applied().len(), 1, "the change after 3 s is forgotten");
    assert_eq!((s.fingerprint_so_far(), s.snapshot()), at_3s);
    let replay = s.replay_scenario();
    let cfg = *s.config();
    assert_eq!(s.finish().fingerprint, models::run(&replay, &cfg).fingerprint);
}

#[test]
fn a_session_replaying_its_changes_finishes_like_the_original() {
    // What an embedding program keeps after `finish` (to rewind or export later): a fresh
    // session with the applied changes queued at their instants.
    let mut s = Session::new(load(LIVE), cfg(8));
    s.run_until(secs(2)).unwrap();
    s.apply("gate.g.permits", ParamValue::Count(10)).unwrap();
    s.run_until(secs(5)).unwrap();
    s.apply("gate.g.permits", ParamValue::Count(40)).unwrap();
    let (sc, cfg, applied) = (s.scenario().clone(), *s.config(), s.applied().to_vec());
    let fp = s.finish().fingerprint;
    let again = Session::replaying(sc, cfg, applied.clone());
    assert_eq!(again.now(), SimTime::ZERO);
    assert_eq!(again.applied(), &applied[..]);
    assert!(again.next_event_time().is_some_and(|t| t < secs(1)), "arrivals every few ms");
    assert_eq!(again.finish().fingerprint, fp);
}

#[test]
fn metrics_read_by_path_while_running() {
    let mut s = Session::new(load(LIVE), cfg(7));
    s.run_until(secs(5)).unwrap();
    let Some(MetricReading::Counter(n)) = s.read("source.vip.arrivals") else { panic!() };
    // 100 req/s Poisson for 5 s: 500 expected, σ ≈ 22; ±6σ.
    assert!((370..=630).contains(&n), "{n}");
    let depth = s.series_of("station.llm.queue_depth.mean");
    assert_eq!(depth.len(), 10, "ten closed 500 ms buckets in 5 s");
    assert!(s.series_names().contains(&"source.vip.latency.p99_ms".to_string()));
    assert_eq!(s.read("station.nope.queue_depth"), None);
}

/// Resilience4j's special states and `automaticTransitionFromOpenToHalfOpenEnabled` set
/// through the session at run time (`transitionToForcedOpenState`, `…DisabledState`,
/// `…MetricsOnlyState`, back to CLOSED), each in force after the boundary, and the whole
/// session equal to the same changes on the timeline.
#[test]
fn special_states_and_automatic_transition_through_the_session() {
    let sc = load(LIVE);
    let b = "circuit_breaker.b";
    let state = |s: &Session| s.component(b).and_then(|c| c.breaker).map(|w| w.state);
    let mut s = Session::new(sc.clone(), cfg(5));
    let changes = [
        (1000, "forced_open", true, "FORCED_OPEN"),
        (1500, "forced_open", false, "CLOSED"),
        (2000, "disabled", true, "DISABLED"),
        (2500, "disabled", false, "CLOSED"),
        (3000, "metrics_only", true, "METRICS_ONLY"),
        (3500, "metrics_only", false, "CLOSED"),
        (3600, "automatic_transition_from_open_to_half_open_enabled", true, "CLOSED"),
    ];
    let mut timeline = sc.clone();
    for (t, p, on, want) in changes {
        let t = SimTime::ZERO + SimDuration::from_ms(t);
        s.run_until(t).unwrap();
        let path = format!("{b}.{p}");
        assert_eq!(s.apply(&path, ParamValue::Bool(on)).unwrap(), t);
        s.run_until(t + SimDuration::from_ms(1)).unwrap();
        assert_eq!(s.value(&path), Some(&ParamValue::Bool(on)), "{path} in force");
        assert_eq!(state(&s), Some(want), "{path} = {on} at {t}");
        timeline.timeline.push(SetParam::new(t - SimTime::ZERO, &path, ParamValue::Bool(on)));
    }
    // The error burst (3 s‥6 s; METRICS_ONLY until 3.5 s never opens) opens the breaker;
    // with the automatic transition a timer, not a call, moves it to HALF_OPEN.
    let live = s.finish();
    let ev: Vec<_> = live.state_events.iter().filter(|e| e.component == b).collect();
    let open = ev
        .iter()
        .find(|e| e.to == "OPEN" && e.time > SimTime::ZERO + SimDuration::from_ms(3600))
        .expect("the burst opens it");
    let next = ev.iter().find(|e| e.time > open.time).expect("it leaves OPEN");
    // wait_duration_in_open_state 2 s: the timer fires exactly then.
    assert_eq!((next.to.as_str(), next.time), ("HALF_OPEN", open.time + SimDuration::from_secs(2)));
    let headless = models::run(&timeline, &cfg(5));
    assert_eq!(live.fingerprint, headless.fingerprint, "session = timeline");
}

/// `transitionToStateAfterWaitDuration`, an enum parameter, changed through the session at
/// 4 s (OPEN → CLOSED): the breaker opens in the error burst (3 s‥6 s), its timer moves it
/// to HALF_OPEN 2 s later, and 300 ms after that (1000 probe permits are never used up in
/// 300 ms at ≈ 350 calls/s) the maximum wait forces it into the choice in force: CLOSED
/// after the change, OPEN without it. The session equals the same change on the timeline.
#[test]
fn an_enum_change_through_the_session_equals_the_timeline() {
    // A minimum of 1000 calls is capped at the 20-call window when CLOSED (Resilience4j's
    // `min(minimumNumberOfCalls, slidingWindowSize)`) but not in HALF_OPEN's 1000 permits.
    let sc = load(
        &LIVE.replace("minimum_number_of_calls: 20", "minimum_number_of_calls: 1000").replace(
            r#"wait_duration_in_open_state: "2s")"#,
            r#"wait_duration_in_open_state: "2s", max_wait_duration_in_half_open_state: "300ms",
        permitted_number_of_calls_in_half_open_state: 1000,
        automatic_transition_from_open_to_half_open_enabled: true)"#,
        ),
    );
    let b = "circuit_breaker.b";
    let path = "circuit_breaker.b.transition_to_state_after_wait_duration";
    let spec = sc.registry().get(path).cloned().expect("registered");
    assert_eq!(spec.choices(), Some(&["OPEN", "CLOSED"][..]));
    assert_eq!((spec.choice(), spec.runtime), (Some("OPEN"), true));
    let mut s = Session::new(sc.clone(), cfg(9));
    s.run_until(secs(4)).unwrap();
    let e = s.apply(path, ParamValue::Enum("HALF_OPEN".into())).unwrap_err().to_string();
    assert_eq!(e, format!("{path}: expected one of OPEN, CLOSED, found HALF_OPEN"));
    let e = s.apply(&format!("{b}.sliding_window_type"), ParamValue::Enum("TIME_BASED".into()));
    assert!(e.unwrap_err().to_string().contains("cannot change during a run"));
    assert_eq!(s.apply(path, ParamValue::Enum("CLOSED".into())).unwrap(), secs(4));
    s.step().unwrap();
    assert_eq!(s.value(path), Some(&ParamValue::Enum("CLOSED".into())), "in force");
    let live = s.finish();

    // The first forced transition after the change, at its exact instant.
    let forced = |out: &models::RunOutput| {
        let ev: Vec<_> = out.state_events.iter().filter(|e| e.component == b).collect();
        let half = ev
            .iter()
            .find(|e| e.to == "HALF_OPEN" && e.time > secs(4))
            .expect("the timer moves it to HALF_OPEN");
        let next = ev.iter().find(|e| e.time > half.time).expect("it leaves HALF_OPEN");
        assert_eq!(next.time, half.time + SimDuration::from_ms(300), "the maximum wait");
        next.to.clone()
    };
    assert_eq!(forced(&live), "CLOSED");
    let unchanged = models::run(&sc, &cfg(9));
    assert_eq!(forced(&unchanged), "OPEN", "Resilience4j's default");
    let mut timeline = sc.clone();
    timeline.timeline.push(SetParam::new(
        SimDuration::from_secs(4),
        path,
        ParamValue::Enum("CLOSED".into()),
    ));
    timeline.check_timeline().expect("a valid timeline entry");
    assert_eq!(live.fingerprint, models::run(&timeline, &cfg(9)).fingerprint, "session = timeline");
    assert_ne!(live.fingerprint, unchanged.fingerprint);
}
