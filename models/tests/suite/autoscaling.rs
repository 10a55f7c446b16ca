//! Autoscaling (`crate::autoscaler`, `world/autoscalers.rs`) against the physics of a surge
//! answered late: Poisson arrivals step from λ1 to λ2 at t0 in front of a station whose
//! servers are an HPA's replicas; new replicas come `provisioning_delay` after a sync.

use crate::support::{cfg, get, load, run_checked, stepped};
use models::RunConfig;
use sim_core::{SimDuration, SimTime};

/// λ1 = 2/s, λ2 = 40/s from t0 = 60 s; service S = 250 ms (constant); 2 replicas of one
/// server at the start; target 50 % utilization; sync 15 s; replicas ready 30 s after the
/// ask. The replicas the load needs: ceil(λ2·S / 0.5) = ceil(10 / 0.5) = 20.
fn surge(extra: &str) -> String {
    format!(
        r#"Scenario(
            name: "surge",
            sources: [(name: "in", interarrival: Exponential(mean: "500ms"), target: "svc",
                       profile: Some(Profile(points: [("0s", 1.0), ("60s", 20.0)], shape: Step)))],
            call_sites: [(name: "svc", upstream: "svc", timeout: "1h")],
            stations: [(name: "svc", servers: 2, service: Constant("250ms"))],
            autoscalers: [(name: "hpa", station: "svc", min_replicas: 2, max_replicas: 50,
                           target: 50.0, provisioning_delay: Constant("30s"){extra})],
        )"#
    )
}

const T0: u64 = 60;
const SYNC: u64 = 15;
const DELAY: u64 = 30;

fn secs(t: SimTime) -> f64 {
    t.0 as f64 / 1e9
}

/// Arrival instants (s) of the requests answered more than 2 s after they came.
fn slow_arrivals(r: &models::RunOutput) -> Vec<f64> {
    let slow =
        r.requests.iter().filter(|q| q.end.is_some_and(|e| e.0 - q.arrival.0 > 2_000_000_000));
    slow.map(|q| secs(q.arrival)).collect()
}

/// The spike lasts at least a sync period plus the provisioning delay, and the replicas
/// settle at the computed count.
///
/// Physics: before t0 two servers carry λ1·S = 0.5 busy server (ρ = 0.25: the HPA would
/// scale down, `min_replicas` holds 2), so no request waits 2 s (8 services) there. From t0 the two servers serve 8/s against 40/s: the
/// queue grows at 32/s until more servers come. The sync at t0 itself reads the period
/// before the surge (a sync runs after the arrivals of its instant), so the first ask is
/// at the next sync, t0 + 15 s at the earliest, and that replica serves 30 s later: no
/// extra server before t0 + sync + delay = 105 s. A request arriving then finds ≥ 32 ×
/// 45 ≈ 1440 ahead (minus Poisson noise of ~±40), far more than the 16 two servers clear
/// in 2 s: requests arriving over [t0, t0 + 45 s] (all but the first second or so) wait
/// more than 2 s, so the span of slow arrivals is ≥ 45 s.
///
/// Settling: with R replicas at λ2 the utilization is λ2·S/R = 10/R; the HPA changes
/// nothing while it is within 50 % ± 10 %, i.e. R ∈ [10/0.55, 10/0.45] = [18.2, 22.2], and
/// any recommendation outside recomputes ceil(10/R/0.5 · R) = 20 (± one for the 15 s
/// window's Poisson noise, ~4 %). So after the overshoot has been stabilized away (the
/// queue's drain reads 100 % and asks for more; 300 s later the scale-down follows) the
/// replicas are 19–22.
#[test]
fn a_surge_is_answered_late_and_settles() {
    let sc = load(&surge(""));
    let r = run_checked(&sc, &cfg(7, 1500));
    let slow = slow_arrivals(&r);
    let (first, last) = (slow[0], *slow.last().unwrap());
    assert!(first >= T0 as f64, "nobody waits 2 s before the surge (first at {first})");
    assert!(last - first >= (SYNC + DELAY) as f64, "spike over [{first}, {last}]");
    // No scaling before the surge is seen; the first ask is the first sync after t0.
    let ups: Vec<f64> =
        r.state_events.iter().filter(|e| e.kind == "scale_up").map(|e| secs(e.time)).collect();
    assert_eq!(ups[0], (T0 + SYNC) as f64, "{ups:?}");
    // That sync read [60 s, 75 s] with both servers busy from the first queued arrival on
    // (a fraction of a second in): just under 100 %, truncated to 99 % against 50 %, and
    // ceil(1.98 × 2) = 4 replicas (within the up policies' max(2 + 4, 2 × 2) = 6).
    let first = r.state_events.iter().find(|e| e.kind == "scale_up").unwrap();
    assert_eq!(first.to, "replicas = 4 (Utilization = 99)");
    let ready = get(&r, "autoscaler.hpa.ready_end");
    assert!((19.0..=22.0).contains(&ready), "settled at {ready} replicas, not 20");
    assert_eq!(get(&r, "autoscaler.hpa.provisioning_end"), 0.0);
    assert!(get(&r, "autoscaler.hpa.scale_downs") >= 1.0, "the overshoot came back down");
    assert!(get(&r, "autoscaler.hpa.peak_replicas") > 22.0, "the drain overshoots");
}

/// Without a provisioning delay the same surge is answered one sync after t0 and the spike
/// is shorter: the cold start is what makes it long.
#[test]
fn the_cold_start_lengthens_the_spike() {
    let slow_span = |text: &str| {
        let slow = slow_arrivals(&run_checked(&load(text), &cfg(7, 400)));
        slow.last().unwrap() - slow[0]
    };
    let cold = slow_span(&surge(""));
    let warm = slow_span(&surge("").replace(r#"Constant("30s")"#, r#"Constant("0s")"#));
    assert!(cold > warm + DELAY as f64 / 2.0, "cold {cold} s vs instant {warm} s");
}

/// Warm-up: replicas that serve 3× slower at first make the same surge's queue drain later
/// (more slow requests), and change nothing before the first new replica.
#[test]
fn warm_up_slows_new_replicas() {
    let run = |extra: &str| run_checked(&load(&surge(extra)), &cfg(7, 400));
    let cold = run("");
    let warming = run(r#", warmup: "60s", warmup_multiplier: 3.0"#);
    let slow = |r: &models::RunOutput| slow_arrivals(r).len();
    assert!(slow(&warming) > slow(&cold), "{} vs {}", slow(&warming), slow(&cold));
    // Until the first new replica is ready (t0 + sync + delay) both runs are the same.
    let until = SimTime::ZERO + SimDuration::from_secs(T0 + SYNC + DELAY);
    let ends = |r: &models::RunOutput| -> Vec<_> {
        r.requests.iter().filter(|q| q.end.is_some_and(|e| e < until)).map(|q| q.end).collect()
    };
    assert_eq!(ends(&cold), ends(&warming));
}

/// Scale-down drains: replicas removed while serving finish their calls; nothing fails.
/// 20 s services, 8 servers all busy at 10 s, then no more load: the first sync that may
/// scale down (scale_down_stabilization 0) halves the replicas while every server is busy.
#[test]
fn removed_replicas_finish_their_calls() {
    let sc = load(
        r#"Scenario(
            name: "drain",
            sources: [(name: "in", interarrival: Constant("1s"), target: "svc", limit: Some(8))],
            call_sites: [(name: "svc", upstream: "svc", timeout: "1h")],
            stations: [(name: "svc", servers: 8, service: Constant("20s"))],
            autoscalers: [(name: "hpa", station: "svc", min_replicas: 1, max_replicas: 8,
                           target: 90.0, sync_period: "10s", scale_down_stabilization: "0s",
                           scale_down_policies: [(kind: Percent, value: 50, period: "10s")])],
        )"#,
    );
    let r = run_checked(&sc, &cfg(1, 60));
    assert_eq!(get(&r, "source.in.completed"), 8.0, "all 8 served in full");
    assert_eq!(get(&r, "source.in.failed") + get(&r, "source.in.rejected"), 0.0);
    let downs: Vec<_> = r.state_events.iter().filter(|e| e.kind == "scale_down").collect();
    // At 10 s: 8 requests over 8 servers for 10 s … utilization 10 s·(1+…+8)/80 < 90 %.
    assert!(!downs.is_empty() && downs[0].time.0 <= 10_000_000_000, "{downs:?}");
}

/// Same seed, same fingerprint (`run_checked`); stepped event by event with the invariants
/// after each, the run equals one go.
#[test]
fn stepping_equals_one_go() {
    let sc = load(&surge(r#", warmup: "20s", warmup_multiplier: 2.0"#));
    let c = RunConfig { record_requests: false, ..cfg(3, 150) };
    let a = stepped(&sc, &c);
    assert_eq!(a.fingerprint, run_checked(&sc, &c).fingerprint);
}

/// Bad input names the field: an unknown station, min above max.
#[test]
fn bad_autoscalers_are_refused_with_the_field() {
    let check = |text: &str| {
        let sc: models::scenario::ScenarioSpec<models::params::ParamValue> =
            ron::from_str(text).expect("parses");
        sc.check().unwrap_err()
    };
    let base = surge("");
    let e = check(&base.replace(r#"station: "svc", min"#, r#"station: "nope", min"#));
    assert_eq!(e.path, "autoscalers[0].station");
    assert!(e.message.contains("no such station \"nope\"") && e.message.contains("svc"), "{e}");
    let e = check(&base.replace("max_replicas: 50", "max_replicas: 1"));
    assert_eq!(e.path, "autoscalers[0].min_replicas", "{e}");
}
