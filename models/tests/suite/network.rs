//! Network delay on a call site (`network: (request, response)`, docs/scenario-reference.md
//! "Network delay") against closed forms: constant legs add exactly `request + response` to
//! every response time; the client's timeout fires at send + `timeout` whichever leg the
//! call is on; the station holds a call only between the legs (network outside its
//! concurrency); M/M/1 with constant legs has mean response time 1/(μ − λ) + d_req + d_resp.

use crate::support::{cfg, get, load, run_checked, stepped};
use models::{Outcome, Reason, RunConfig};
use sim_core::SimDuration;
use sim_core::stats::Replications;

/// One source every `gap`, one station (`servers`, constant `service`), one site.
fn deterministic(gap: &str, service: &str, site_extra: &str, station_extra: &str) -> String {
    format!(
        r#"Scenario(
            name: "net",
            sources: [(name: "in", interarrival: Constant("{gap}"), target: "site")],
            call_sites: [(name: "site", upstream: "st", {site_extra})],
            stations: [(name: "st", servers: 1, service: Constant("{service}"), {station_extra})],
        )"#
    )
}

const LEGS: &str = r#"network: (request: Constant("20ms"), response: Constant("30ms"))"#;

fn ms(d: SimDuration) -> f64 {
    d.0 as f64 / 1e6
}

#[test]
fn constant_legs_add_exactly_to_every_response_time() {
    // Interarrival 1 s ≫ 20 + 100 + 30 ms: no call ever waits. Response time = d_req + S +
    // d_resp = 150 ms exactly; service starts d_req after the arrival (wait = 20 ms).
    let sc = load(&deterministic("1s", "100ms", LEGS, ""));
    let r = run_checked(&sc, &cfg(1, 60));
    assert!(r.requests.len() >= 59, "{} requests", r.requests.len());
    for q in r.requests.iter().filter(|q| q.end.is_some()) {
        assert_eq!(q.outcome, Some(Outcome::Success));
        assert_eq!(ms(q.end.unwrap() - q.arrival), 150.0, "request {}", q.request_id);
        assert_eq!(ms(q.start.unwrap() - q.arrival), 20.0, "request {}", q.request_id);
    }
    assert_eq!(get(&r, "source.in.latency_ms_max"), 150.0);
    // The station is busy 100 ms of every second: the legs are not its busy time.
    let u = get(&r, "station.st.utilization");
    assert!((u - 0.1).abs() < 0.002, "utilisation {u}");
}

#[test]
fn network_time_is_outside_the_servers_concurrency() {
    // One server, a call every 100 ms, service 100 ms, 50 ms each way. The station sees
    // arrivals at 50 + 100k ms and each service ends exactly when the next call arrives
    // (completions before arrivals at one instant): ρ = 1, nobody ever queues, every
    // response time is 50 + 100 + 50 = 200 ms. Were the legs inside the concurrency, the
    // server would need 200 ms per call at one call per 100 ms: ρ = 2, an unbounded queue.
    let legs = r#"network: (request: Constant("50ms"), response: Constant("50ms"))"#;
    let sc = load(&deterministic("100ms", "100ms", legs, ""));
    let r = run_checked(&sc, &cfg(1, 60));
    assert_eq!(get(&r, "station.st.peak_queue"), 0.0);
    assert_eq!(get(&r, "source.in.latency_ms_max"), 200.0);
    assert_eq!(get(&r, "source.in.latency_ms_p50"), 200.0);
    assert!(get(&r, "source.in.in_flight_end") <= 2.0);
}

#[test]
fn the_timeout_counts_both_legs_and_fires_at_the_clients_deadline() {
    // d_req 20 + S 100 + d_resp 30 = 150 ms. Timeout 150 ms: the answer arrives exactly
    // at the deadline and counts (the response leg ends in the completion phase). Timeout
    // 149 ms: the call fails at arrival + 149 ms, during the response leg, although the
    // station finished at 120 ms (the work is done, not abandoned).
    for (timeout, outcome, end_ms) in [
        ("150ms", Outcome::Success, 150.0),
        ("149ms", Outcome::Failed(Reason::Timeout), 149.0),
        ("60ms", Outcome::Failed(Reason::Timeout), 60.0),
        ("10ms", Outcome::Failed(Reason::Timeout), 10.0),
    ] {
        let site = format!("{LEGS}, timeout: \"{timeout}\"");
        let r = run_checked(&load(&deterministic("1s", "100ms", &site, "")), &cfg(1, 30));
        for q in r.requests.iter().filter(|q| q.end.is_some()) {
            assert_eq!(q.outcome, Some(outcome), "timeout {timeout}");
            assert_eq!(ms(q.end.unwrap() - q.arrival), end_ms, "timeout {timeout}");
        }
        // Timed out in service (60 ms: the service runs 20..120 ms) or on the request leg
        // (10 ms: the request still reaches the station at 20 ms): the work is served for
        // nobody. Timed out on the response leg (149 ms): the work was done for the client.
        let abandoned = get(&r, "station.st.abandoned_work");
        let answered = r.requests.iter().filter(|q| q.end.is_some()).count() as f64;
        match timeout {
            "60ms" | "10ms" => assert!(abandoned >= answered - 1.0, "{timeout}: {abandoned}"),
            _ => assert_eq!(abandoned, 0.0, "{timeout}"),
        }
    }
}

#[test]
fn a_cancelling_station_drops_a_request_whose_client_gave_up_on_the_wire() {
    // Timeout 10 ms < d_req 20 ms: every request reaches a station whose client is gone.
    // With `cancellation` it is dropped on arrival: no service ever runs.
    let site = format!("{LEGS}, timeout: \"10ms\"");
    let sc = load(&deterministic("1s", "100ms", &site, "cancellation: true"));
    let r = run_checked(&sc, &cfg(1, 30));
    assert_eq!(get(&r, "station.st.abandoned_work"), 0.0);
    assert_eq!(get(&r, "station.st.utilization"), 0.0);
    assert!(get(&r, "source.in.failed_timeout") >= 29.0);
}

#[test]
fn zero_legs_are_no_network() {
    // Absent and `Constant("0s")` both ways: one fingerprint (no event is scheduled).
    let plain = deterministic("50ms", "40ms", r#"timeout: "1s""#, "");
    let zero = deterministic(
        "50ms",
        "40ms",
        r#"timeout: "1s", network: (request: Constant("0s"), response: Constant("0s"))"#,
        "",
    );
    let c = cfg(3, 20);
    assert_eq!(
        models::run(&load(&plain), &c).fingerprint,
        models::run(&load(&zero), &c).fingerprint
    );
}

#[test]
fn mm1_with_constant_legs() {
    // λ = 8/s, μ = 10/s: W = 1/(μ − λ) = 500 ms at the station; with 20 + 30 ms of network
    // the mean response time is 550 ms, and the wait to service start Wq + d_req = 420 ms.
    // Ten seeds, 4,000 s each, 10% warm-up; tolerance max(2%, 4 standard errors).
    let text = r#"Scenario(
        name: "mm1-net",
        sources: [(name: "in", interarrival: Exponential(mean: "125ms"), target: "site")],
        call_sites: [(name: "site", upstream: "st",
            network: (request: Constant("20ms"), response: Constant("30ms")))],
        stations: [(name: "st", servers: 1, service: Exponential(mean: "100ms"))],
    )"#;
    let sc = load(text);
    let (mut w, mut wq, mut u) = (Vec::new(), Vec::new(), Vec::new());
    for seed in 1..=10 {
        let c = RunConfig {
            warmup: SimDuration::from_secs(400),
            ..RunConfig::new(seed, SimDuration::from_secs(4_000))
        };
        let r = models::run(&sc, &c);
        assert!(r.error.is_none() && r.violations.is_empty(), "{:?}", r.violations);
        w.push(get(&r, "source.in.latency_ms_mean"));
        wq.push(get(&r, "source.in.wait_ms_mean"));
        u.push(get(&r, "station.st.utilization"));
    }
    for (what, xs, want) in [("W", &w, 550.0f64), ("Wq + d_req", &wq, 420.0), ("ρ", &u, 0.8)] {
        let r = Replications::of(xs).expect("finite");
        let tol = (0.02 * want).max(4.0 * r.std_err);
        println!("M/M/1 + network {what}: {:.4} (se {:.4}) vs {want}", r.mean, r.std_err);
        assert!((r.mean - want).abs() <= tol, "{what}: {} vs {want} ± {tol}", r.mean);
    }
}

#[test]
fn random_legs_with_retries_keep_every_invariant_after_every_event() {
    // Exponential legs, a tight timeout (legs and queueing often exceed it), retries, a
    // quota's 429s and a full queue: every path of a call on the wire, stepped event by
    // event with the invariants (I49 among them) checked after each.
    let text = r#"Scenario(
        name: "net-stress",
        sources: [(name: "in", interarrival: Exponential(mean: "30ms"), target: "site")],
        call_sites: [(name: "site", upstream: "st", timeout: "150ms",
            governors: [Retry("r")],
            network: (request: Exponential(mean: "30ms"), response: LogNormal(mean: "20ms", cv: 1.5)))],
        retries: [(name: "r", max_attempts: 3, backoff: Fixed(wait_duration: "10ms"))],
        quotas: [Quota(name: "q", max_concurrency: Some(6))],
        stations: [(name: "st", servers: 2, queue_capacity: Some(3), service: Exponential(mean: "50ms"),
            quota: "q")],
    )"#;
    let sc = load(text);
    let r = stepped(&sc, &cfg(7, 60));
    assert!(get(&r, "source.in.failed_timeout") > 0.0, "timeouts happen");
    assert!(get(&r, "source.in.success") > 0.0, "successes happen");
}

#[test]
fn network_delay_refuses_gpu_and_streaming_upstreams() {
    let text = r#"Scenario(
        name: "bad",
        sources: [(name: "in", interarrival: Constant("1s"), target: "site")],
        call_sites: [(name: "site", upstream: "st", network: (request: Constant("5ms")))],
        stations: [(name: "st", servers: 1, service: Constant("1s"), streaming: true)],
    )"#;
    let sc: models::scenario::ScenarioSpec<models::params::ParamValue> =
        ron::from_str(text).expect("parses");
    let e = sc.check().unwrap_err();
    assert_eq!(e.path, "call_sites[0].network");
    assert!(e.message.contains("\"st\" is a streaming station"), "{e}");
}

/// `data/retry_storm_network.ron` (its header has the derivation): λ = 200/s against
/// capacity 300/s, one retry after 1 s, timeout 1 s, a 1.5 s spike to 500/s. A first
/// attempt times out iff the queue B > B*(RTT) = 300 × (0.9 − RTT). Measured over 20
/// seeds (sampling every 1 s for the `recovery` verdict): 5, 9, 9, 17 and 19 collapsed for
/// RTT 0, 50, 100, 200, 300 ms. Held: the collapsed share never falls as the round trip
/// grows, stays ≤ 36 % without delay, reaches ≥ 80 % at 300 ms.
#[test]
fn a_marginal_spike_collapses_more_often_with_network_delay() {
    let base = include_str!("data/retry_storm_network.ron");
    let mut shares = Vec::new();
    for rtt in ["0s", "50ms", "100ms", "200ms", "300ms"] {
        let sc = load(&base.replace(
            r#"network: (request: Constant("0s"), response: Constant("0s"))"#,
            &format!(r#"network: (request: Constant("{rtt}"), response: Constant("0s"))"#),
        ));
        let mut collapsed = 0;
        for seed in 0..20 {
            let c = RunConfig {
                warmup: SimDuration::from_secs(10),
                sample_every: Some(SimDuration::from_secs(1)),
                ..RunConfig::new(seed, SimDuration::from_secs(180))
            };
            let r = models::run(&sc, &c);
            assert!(r.error.is_none() && r.violations.is_empty(), "{:?}", r.violations);
            if get(&r, "recovery.recovered") == 0.0 {
                collapsed += 1;
            }
        }
        println!("RTT {rtt}: {collapsed} of 20 seeds collapsed");
        shares.push(collapsed as f64 / 20.0);
    }
    assert!(shares.windows(2).all(|w| w[1] >= w[0]), "monotone in the round trip: {shares:?}");
    assert!(shares[0] <= 0.11 + 0.25, "RTT 0: {shares:?}");
    assert!(shares[4] >= 0.8, "RTT 300 ms: {shares:?}");
}

/// Per-route legs (`route_networks`): a primary "a" that always fails (5xx) at the site's
/// 10 + 10 ms, its `backup` "b" on a route of 40 + 60 ms; both serve a constant 100 ms and
/// never queue (a call per second). Every request: 10 + 100 + 10 = 120 ms to "a"'s 5xx, then
/// the failover 40 + 100 + 60 = 200 ms: 320 ms exactly, "b"'s service starting 120 + 40 ms
/// after the arrival. With a 250 ms timeout and "b"'s route at 100 + 60 ms (260 ms > 250)
/// the failover times out at its send + 250 ms: the request fails at 370 ms exactly.
#[test]
fn a_route_network_replaces_the_sites_legs_for_its_upstream() {
    let text = |route: &str, timeout: &str| {
        format!(
            r#"Scenario(name: "routes",
            sources: [(name: "in", interarrival: Constant("1s"), target: "site")],
            call_sites: [(name: "site", upstream: "a", backup: "b", timeout: "{timeout}",
                network: (request: Constant("10ms"), response: Constant("10ms")),
                route_networks: [("b", {route})])],
            stations: [
                (name: "a", servers: 1, service: Constant("100ms"), error_rate: 1.0),
                (name: "b", servers: 1, service: Constant("100ms")),
            ],
        )"#
        )
    };
    let fast = r#"(request: Constant("40ms"), response: Constant("60ms"))"#;
    let r = run_checked(&load(&text(fast, "0s")), &cfg(1, 30));
    let ended: Vec<_> = r.requests.iter().filter(|q| q.end.is_some()).collect();
    assert!(ended.len() >= 29);
    for q in ended {
        assert_eq!(q.outcome, Some(Outcome::Success), "request {}", q.request_id);
        assert_eq!(ms(q.end.unwrap() - q.arrival), 320.0, "request {}", q.request_id);
    }
    let slow = r#"(request: Constant("100ms"), response: Constant("60ms"))"#;
    let r = run_checked(&load(&text(slow, "250ms")), &cfg(1, 30));
    let ended: Vec<_> = r.requests.iter().filter(|q| q.end.is_some()).collect();
    assert!(ended.len() >= 29);
    for q in ended {
        assert_eq!(q.outcome, Some(Outcome::Failed(Reason::Timeout)), "request {}", q.request_id);
        assert_eq!(ms(q.end.unwrap() - q.arrival), 370.0, "request {}", q.request_id);
    }
}

/// A route names one of the site's upstreams, once, and a station that does not stream.
#[test]
fn bad_routes_are_refused_with_their_path() {
    let check = |routes: &str, extra_station: &str| {
        let text = format!(
            r#"Scenario(name: "bad",
            sources: [(name: "in", interarrival: Constant("1s"), target: "site")],
            call_sites: [(name: "site", upstream: "st", route_networks: [{routes}])],
            stations: [(name: "st", servers: 1, service: Constant("1s"){extra_station})],
        )"#
        );
        let sc: models::scenario::ScenarioSpec<models::params::ParamValue> =
            ron::from_str(&text).expect("parses");
        sc.check().unwrap_err()
    };
    let e = check(r#"("other", (request: Constant("5ms")))"#, "");
    assert_eq!(e.path, "call_sites[0].route_networks[0]");
    assert!(e.message.contains("\"other\" is not an upstream of call site \"site\""), "{e}");
    let twice = r#"("st", (request: Constant("5ms"))), ("st", (response: Constant("5ms")))"#;
    let e = check(twice, "");
    assert_eq!(e.path, "call_sites[0].route_networks[1]");
    assert!(e.message.contains("a second route for \"st\""), "{e}");
    let e = check(r#"("st", (request: Constant("5ms")))"#, ", streaming: true");
    assert_eq!(e.path, "call_sites[0].route_networks[0]");
    assert!(e.message.contains("\"st\" is a streaming station"), "{e}");
}

/// One source every second, one station (one server, a constant 100 ms: no call ever
/// waits), one site "site" with `network` (`None`: undeclared), and `timeline`.
fn changed(network: Option<&str>, timeline: &str) -> String {
    let network = network.map_or(String::new(), |n| format!(", network: {n}"));
    format!(
        r#"Scenario(
            name: "net-change",
            sources: [(name: "in", interarrival: Constant("1s"), target: "site")],
            call_sites: [(name: "site", upstream: "st"{network})],
            stations: [(name: "st", servers: 1, service: Constant("100ms"))],
            timeline: [{timeline}],
        )"#
    )
}

const ZERO: &str = r#"(request: Constant("0s"), response: Constant("0s"))"#;

/// Every request's response time against the change of `leg` to 50 ms at t = 5 s. A call
/// never waits (1 s apart, 100 ms of service), so a request is 100 ms, plus 50 ms where the
/// changed leg starts after the change. A change stamped 5 s applies after every event at
/// 5 s: the request leg of the call sent at 5 s (its arrival) left before it, so requests
/// arriving at ≤ 5 s take 100 ms and later ones 150 ms; the response leg of that call
/// leaves at 5.1 s, after it, so requests arriving at < 5 s take 100 ms and the others 150.
fn assert_the_leg_grows_after_5s(r: &models::RunOutput, leg: &str) {
    let five = SimDuration::from_secs(5).0;
    let ended: Vec<_> = r.requests.iter().filter(|q| q.end.is_some()).collect();
    assert!(ended.len() >= 19, "{} requests", ended.len());
    for q in ended {
        let a = q.arrival.0;
        let later = if leg == "request" { a > five } else { a >= five };
        let want = if later { 150.0 } else { 100.0 };
        assert_eq!(q.outcome, Some(Outcome::Success), "request {}", q.request_id);
        assert_eq!(ms(q.end.unwrap() - q.arrival), want, "{leg}: arrival {}", q.arrival);
    }
    // The event log records the change, at its instant, with its old and new value.
    let logged: Vec<_> = r.state_events.iter().filter(|e| e.kind == "config_change").collect();
    assert_eq!(logged.len(), 1, "{logged:?}");
    let e = logged[0];
    assert_eq!((e.time.0, e.component.as_str()), (five, "call_site.site"), "{e:?}");
    assert!(e.from.starts_with(&format!("network_{leg} = ")), "{e:?}");
    assert_eq!(e.to, format!(r#"network_{leg} = Constant("50ms")"#), "{e:?}");
}

/// A site declared with both legs zero is no network when the world is built (no site of
/// the run has one), yet its legs are registered: a run-time change of either (timeline, or
/// a session's change at the same instant) delays every call sent, or answer sent, after it.
#[test]
fn a_leg_set_at_run_time_on_a_zero_network_delays_every_later_call() {
    for leg in ["request", "response"] {
        let entry = format!(
            r#"(at: "5s", path: "call_site.site.network_{leg}", value: DurationDist(Constant("50ms")))"#
        );
        let sc = load(&changed(Some(ZERO), &entry));
        let timeline = stepped(&sc, &cfg(1, 20));
        assert_the_leg_grows_after_5s(&timeline, leg);
        // The same change made in a session at 5 s: the same physics, the same run.
        let plain = load(&changed(Some(ZERO), ""));
        let mut s = models::Session::new(plain, cfg(1, 20));
        s.run_until(sim_core::SimTime::ZERO + SimDuration::from_secs(5)).expect("runs");
        let path = format!("call_site.site.network_{leg}");
        let d = sim_core::Dist::constant(SimDuration::from_ms(50));
        s.apply(&path, models::params::ParamValue::DurationDist(d)).expect("a registered leg");
        s.run_to_end().expect("runs");
        let session = s.finish();
        assert!(session.violations.is_empty(), "{:?}", session.violations);
        assert_the_leg_grows_after_5s(&session, leg);
        assert_eq!(session.fingerprint, timeline.fingerprint, "{leg}: session = timeline");
    }
}

/// A site without `network` has no legs to change: the registry lists neither, and a
/// timeline entry naming one is refused when the scenario is checked.
#[test]
fn a_site_without_a_network_has_no_leg_to_change() {
    let entry = r#"(at: "5s", path: "call_site.site.network_request", value: DurationDist(Constant("50ms")))"#;
    let sc: models::scenario::ScenarioSpec<models::params::ParamValue> =
        ron::from_str(&changed(None, entry)).expect("parses");
    sc.check().expect("consistent");
    assert!(sc.registry().get("call_site.site.network_request").is_none());
    assert!(sc.registry().get("call_site.site.network_response").is_none());
    let e = sc.check_timeline().unwrap_err();
    assert!(e.path.starts_with("timeline[0]"), "{e}");
}

/// The request leg set to 50 ms at 5 s and back to zero at 10 s: requests arriving in
/// (5 s, 10 s] take 100 + 50 ms, the others 100 ms (a call never waits; a change applies
/// after every event at its instant, so the call sent at 10 s still has its leg).
#[test]
fn a_leg_set_back_to_zero_is_no_leg_again() {
    let set = |at: &str, d: &str| {
        format!(
            r#"(at: "{at}", path: "call_site.site.network_request", value: DurationDist(Constant("{d}")))"#
        )
    };
    let timeline = format!("{}, {}", set("5s", "50ms"), set("10s", "0s"));
    let r = stepped(&load(&changed(Some(ZERO), &timeline)), &cfg(1, 20));
    let (five, ten) = (SimDuration::from_secs(5).0, SimDuration::from_secs(10).0);
    let ended: Vec<_> = r.requests.iter().filter(|q| q.end.is_some()).collect();
    assert!(ended.len() >= 19, "{} requests", ended.len());
    for q in ended {
        let want = if q.arrival.0 > five && q.arrival.0 <= ten { 150.0 } else { 100.0 };
        assert_eq!(ms(q.end.unwrap() - q.arrival), want, "arrival {}", q.arrival);
    }
    assert_eq!(r.state_events.iter().filter(|e| e.kind == "config_change").count(), 2);
}
