//! Scenario-level tests of the minimal world: data in (RON), figures out.

use crate::support::load;
use models::RunConfig;
use models::params::ParamValue;
use models::scenario::SetParam;
use sim_core::SimDuration;

fn cfg(seed: u64, secs: u64, sample: Option<u64>) -> RunConfig {
    RunConfig {
        sample_every: sample.map(SimDuration::from_secs),
        ..RunConfig::new(seed, SimDuration::from_secs(secs))
    }
}

const GATED: &str = r#"Scenario(
    name: "gated",
    sources: [(name: "chat", interarrival: Exponential(mean: "10ms"), target: "llm_call")],
    gates: [(name: "llm", permits: 40, acquire_timeout: "300ms")],
    call_sites: [(name: "llm_call", governors: [Gate("llm")], upstream: "llm")],
    stations: [(name: "llm", servers: 64, service: LogNormal(mean: "800ms", cv: 0.5))],
)"#;

/// 100 req/s × 0.8 s = 80 concurrent calls offered to a gate of 40: about half are turned
/// away after waiting 300 ms; the station never has more than 40 busy servers.
#[test]
fn gate_caps_concurrency_and_times_out_waiters() {
    let sc = load(GATED);
    let r = models::run(&sc, &cfg(7, 120, Some(1)));
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let s = &r.summary;
    let offered = s.get("source.chat.offered").unwrap();
    let full = s.get("source.chat.rejected_gate_full").unwrap();
    let done = s.get("source.chat.completed").unwrap();
    // Throughput is capped at permits / mean service = 50/s.
    let rate = done / 120.0;
    assert!((45.0..=51.0).contains(&rate), "throughput {rate}/s");
    assert!(full / offered > 0.4 && full / offered < 0.6, "rejected share {}", full / offered);
    let max_busy = r
        .series
        .iter()
        .filter(|row| row.metric == "station.llm.busy.max")
        .map(|row| row.value)
        .fold(0.0, f64::max);
    assert_eq!(max_busy, 40.0, "the gate is the binding limit");
    // Rejected requests waited exactly the acquire timeout: latency of completed ones is
    // service (+ gate wait ≤ 300 ms).
    assert!(s.get("source.chat.wait_ms_mean").unwrap() <= 300.0);
}

#[test]
fn runs_replay_exactly_and_observers_do_not_change_them() {
    let sc = load(GATED);
    let a = models::run(&sc, &cfg(3, 30, None));
    let b = models::run(&sc, &cfg(3, 30, None));
    let c = models::run(&sc, &cfg(3, 30, Some(1)));
    let d = models::run(&sc, &cfg(4, 30, None));
    for r in [&a, &b, &c, &d] {
        assert!(r.violations.is_empty(), "{:?}", r.violations);
    }
    assert_eq!(a.fingerprint, b.fingerprint);
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.fingerprint, c.fingerprint, "sampling must not change the run");
    assert_ne!(a.fingerprint, d.fingerprint);
}

/// A timeline change raising the gate's permits from 40 to 100 at 60 s lifts throughput
/// from 50/s (40 permits / 0.8 s) to 80/s: now the station's 64 servers bind (64 / 0.8 s).
#[test]
fn timeline_changes_apply_during_the_run() {
    let mut sc = load(GATED);
    sc.timeline.push(SetParam {
        reload: false,
        at: SimDuration::from_secs(60),
        path: "gate.llm.permits".into(),
        value: ParamValue::Count(100),
    });
    sc.check_timeline().unwrap();
    let r = models::run(&sc, &cfg(5, 120, Some(10)));
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let per_bucket = |start_s: u64| {
        r.series
            .iter()
            .find(|row| {
                row.metric == "station.llm.completed"
                    && row.bucket_start_ns == start_s * 1_000_000_000
            })
            .unwrap()
            .value
            / 10.0
    };
    let before = per_bucket(40);
    let after = per_bucket(100);
    assert!((45.0..=52.0).contains(&before), "before {before}");
    assert!((76.0..=81.0).contains(&after), "after {after}");
}

#[test]
fn timeline_rejects_static_and_unknown_parameters() {
    let mut sc = load(GATED);
    sc.timeline.push(SetParam {
        reload: false,
        at: SimDuration::ZERO,
        path: "gate.llm.max_waiting".into(),
        value: ParamValue::Count(3),
    });
    let e = sc.check_timeline().unwrap_err().to_string();
    assert!(
        e.contains("timeline[0].path: `gate.llm.max_waiting` cannot change during a run"),
        "{e}"
    );
    sc.timeline[0].path = "gate.llm.permit".into();
    let e = sc.check_timeline().unwrap_err().to_string();
    assert!(e.contains("unknown parameter path `gate.llm.permit`; did you mean one of: gate.llm.acquire_timeout, gate.llm.fair, gate.llm.max_waiting, gate.llm.permits"), "{e}");
}

#[test]
fn registry_lists_every_parameter_and_sets_typed_values() {
    let mut sc = load(GATED);
    let reg = sc.registry();
    let paths: Vec<&str> = reg.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "call_site.llm_call.enabled",
            "call_site.llm_call.stream_read_timeout",
            "call_site.llm_call.timeout",
            "class.P0.sla",
            "class.P0.weight",
            "class.P1.sla",
            "class.P1.weight",
            "class.P2.sla",
            "class.P2.weight",
            "gate.llm.acquire_timeout",
            "gate.llm.fair",
            "gate.llm.max_waiting",
            "gate.llm.permits",
            "source.chat.interarrival",
            "source.chat.limit",
            "source.chat.rate_multiplier",
            "source.chat.start",
            "source.chat.weight",
            "station.llm.business_error_rate",
            "station.llm.cancellation",
            "station.llm.cost_per_1k_output_tokens",
            "station.llm.cost_per_1k_prompt_tokens",
            "station.llm.error_rate",
            "station.llm.latency_multiplier",
            "station.llm.load_slope",
            "station.llm.per_output_token",
            "station.llm.per_prompt_token",
            "station.llm.queue_capacity",
            "station.llm.reject_as",
            "station.llm.servers",
            "station.llm.service",
            "station.llm.streaming",
        ]
    );
    sc.set_param("station.llm.servers", ParamValue::Count(8)).unwrap();
    assert_eq!(sc.stations[0].servers, 8);
    let e = sc.set_param("station.llm.servers", ParamValue::Count(0)).unwrap_err();
    assert!(e.contains("expected an integer in [1, 1000000], found 0"), "{e}");
}

/// A fixed parameter set on the scenario (as a sweep or a variant does) reaches the run:
/// `call_site.llm_call.timeout` = 500 ms against a log-normal service of mean 800 ms, cv 0.5
/// (median ≈ 716 ms, so well over half the admitted calls run past 500 ms) times calls out,
/// where the declared default (0 s = none) times out none.
#[test]
fn a_fixed_parameter_set_before_the_run_reaches_it() {
    let mut sc = load(GATED);
    let c = cfg(3, 20, None);
    let base = models::run(&sc, &c);
    assert_eq!(base.summary.get("source.chat.failed_timeout").unwrap(), 0.0);
    sc.set_param("call_site.llm_call.timeout", ParamValue::Duration(SimDuration::from_ms(500)))
        .unwrap();
    assert_eq!(sc.call_sites[0].timeout, SimDuration::from_ms(500));
    let r = models::run(&sc, &c);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let (out, done) = (
        r.summary.get("source.chat.failed_timeout").unwrap(),
        r.summary.get("source.chat.completed").unwrap(),
    );
    assert!(out > done, "timed out {out}, completed {done}");
}

/// A token distribution is a parameter: `source.chat.prompt_tokens` set to `Constant(2000.0)`
/// where the scenario says `Constant(1000.0)` doubles the prompt cost exactly (no output
/// tokens; the same seed gives the same calls, cost = tokens / 1000 × price summed per call).
#[test]
fn a_token_distribution_is_a_parameter_and_reaches_the_run() {
    let text = GATED
        .replace("target: \"llm_call\")", "target: \"llm_call\", prompt_tokens: Constant(1000.0))")
        .replace("cv: 0.5))]", "cv: 0.5), cost_per_1k_prompt_tokens: 0.01)]");
    let mut sc = load(&text);
    let c = cfg(5, 10, None);
    let before = models::run(&sc, &c).summary.get("station.llm.cost").unwrap();
    assert!(before > 0.0, "the scenario has a prompt cost");
    let v = ron::from_str("Constant(2000.0)").unwrap();
    sc.set_param("source.chat.prompt_tokens", ParamValue::NumberDist(v)).unwrap();
    let r = models::run(&sc, &c);
    let after = r.summary.get("station.llm.cost").unwrap();
    assert!((after - 2.0 * before).abs() <= 1e-9 * after, "cost {before} → {after}");
    assert!(sc.registry().get("source.chat.prompt_tokens").is_some());
}

/// The GUI drives a world step by step; that must be the same run as one go.
#[test]
fn stepping_the_world_in_chunks_equals_one_go() {
    let mut sc = load(GATED);
    sc.timeline.push(SetParam {
        reload: false,
        at: SimDuration::from_secs(7),
        path: "station.llm.servers".into(),
        value: ParamValue::Count(30),
    });
    let c = cfg(11, 20, Some(1));
    let one = models::run(&sc, &c);
    let mut sim = models::run::simulation(&sc, &c);
    let end = sim_core::SimTime(20_000_000_000);
    let mut t = 0;
    while sim.now() < end {
        // single steps, as long as they stay within the run…
        for _ in 0..997 {
            if !sim.step_until(end).unwrap() {
                break;
            }
        }
        // …then a jump in time
        t = (t + 333_333_333).min(end.0);
        sim.run_until(sim_core::SimTime(t).max(sim.now())).unwrap();
    }
    let chunked = models::run::finish(sim, end, None);
    assert!(one.violations.is_empty() && chunked.violations.is_empty());
    assert_eq!(one.fingerprint, chunked.fingerprint);
    assert_eq!(one.summary, chunked.summary);
    assert_eq!(one.series, chunked.series);
}

#[test]
fn the_world_is_send() {
    fn is_send<T: Send>() {}
    is_send::<sim_core::Simulation<models::world::QueueingWorld>>();
}

/// Per-request records agree with the summary, request by request, and cost nothing to the
/// run itself (same fingerprint with and without them).
#[test]
fn request_records_match_the_summary() {
    let sc = load(GATED);
    let mut c = cfg(2, 30, None);
    c.warmup = SimDuration::from_secs(5);
    let plain = models::run(&sc, &c);
    c.record_requests = true;
    let r = models::run(&sc, &c);
    assert_eq!(plain.fingerprint, r.fingerprint);
    assert!(plain.requests.is_empty());
    let measured: Vec<_> = r.requests.iter().filter(|q| q.arrival.0 >= 5_000_000_000).collect();
    let count = |f: &dyn Fn(&models::world::RequestRecord) -> bool| {
        measured.iter().filter(|q| f(q)).count() as f64
    };
    let s = &r.summary;
    assert_eq!(measured.len() as f64, s.get("source.chat.offered").unwrap());
    assert_eq!(
        count(&|q| q.outcome == Some(models::Outcome::Success)),
        s.get("source.chat.success").unwrap()
    );
    assert_eq!(
        count(&|q| q.outcome == Some(models::Outcome::Rejected(models::Reason::GateFull))),
        s.get("source.chat.rejected_gate_full").unwrap()
    );
    assert_eq!(count(&|q| q.outcome.is_none()), s.get("source.chat.in_flight_end").unwrap());
    // Every request appears once.
    let mut ids: Vec<u64> = r.requests.iter().map(|q| q.request_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), r.requests.len());
}
