//! Censoring made visible: requests still in flight at the end beside (and inside) the
//! latency and SLA figures, and utilisations bounded by 1 (docs/results.md, "Censoring").

use crate::support::{cfg, get, load, run_checked};
use sim_core::SimDuration;

/// One class with a 1 s SLA and two sources: `fast` is answered in 100 ms, `slow` needs
/// 1,000 s (1,000 servers, so nothing queues) and is still in flight at the end of a 100 s
/// run, its requests aged 1 s … 100 s. The answered-only figures see only `fast`.
fn survivors() -> models::Scenario {
    load(
        r#"Scenario(name: "survivors",
        classes: [(name: "chat", sla: "1s")],
        sources: [
            (name: "fast", class: "chat", interarrival: Constant("1s"), target: "f"),
            (name: "slow", class: "chat", interarrival: Constant("1s"), target: "s"),
        ],
        call_sites: [(name: "f", upstream: "quick"), (name: "s", upstream: "stuck")],
        stations: [
            (name: "quick", servers: 1, service: Constant("100ms")),
            (name: "stuck", servers: 1000, service: Constant("1000s")),
        ],
    )"#,
    )
}

/// The censored columns against the per-request records of the same run: the ages of the
/// requests with no end, and the nearest-rank quantiles over answers ∪ ages.
#[test]
fn in_flight_requests_are_counted_at_their_age() {
    let r = run_checked(&survivors(), &cfg(1, 100));
    let end = SimDuration::from_secs(100).0;
    let ages: Vec<u64> =
        r.requests.iter().filter(|q| q.end.is_none()).map(|q| end - q.arrival.0).collect();
    let answered: Vec<u64> =
        r.requests.iter().filter_map(|q| Some(q.end?.0 - q.arrival.0)).collect();
    assert_eq!(ages.len() as f64, get(&r, "class.chat.in_flight_end"));
    // (source 1 is `slow`; `fast` may have one request arrived at the very end.)
    let mut slow: Vec<u64> = r
        .requests
        .iter()
        .filter(|q| q.end.is_none() && q.source == 1)
        .map(|q| end - q.arrival.0)
        .collect();
    assert_eq!(slow.len() as f64, get(&r, "source.slow.in_flight_end"));
    assert!(slow.len() >= 99, "the slow source never finishes: {}", slow.len());
    assert!(answered.iter().all(|&l| l == 100_000_000), "fast answers take 100 ms");
    // Answered only: every answer within the SLA, p99 100 ms.
    assert_eq!(get(&r, "class.chat.sla_met"), 1.0);
    assert!((get(&r, "class.chat.latency_ms_p99") - 100.0).abs() <= 1.0);
    assert!(get(&r, "source.slow.latency_ms_p99").is_nan(), "no answers");
    // With the in-flight requests at their age.
    let over = ages.iter().filter(|&&a| a > 1_000_000_000).count();
    assert_eq!(over as f64, get(&r, "class.chat.in_flight_over_sla"));
    let share = answered.len() as f64 / (answered.len() + over) as f64;
    assert_eq!(get(&r, "class.chat.sla_met_with_in_flight"), share);
    assert!(share < 0.51, "about half the class is certain to miss: {share}");
    let mut all = answered.clone();
    all.extend(&ages);
    all.sort_unstable();
    slow.sort_unstable();
    let rank = |xs: &[u64], q: f64| xs[((q * xs.len() as f64).ceil() as usize).max(1) - 1] as f64;
    for (q, name) in [(0.5, "p50"), (0.95, "p95"), (0.99, "p99")] {
        for (col, xs) in [("class.chat", &all), ("source.slow", &slow)] {
            let want = rank(xs, q) / 1e6;
            let got = get(&r, &format!("{col}.latency_ms_{name}_with_in_flight"));
            assert!((got - want).abs() <= want * 0.01, "{col} {name}: {got} vs {want}");
        }
    }
    // The class p99 with the slow requests is their 98th youngest age, ≈ 98 s.
    assert!(get(&r, "class.chat.latency_ms_p99_with_in_flight") > 90_000.0);
}

/// The reported (censoring) columns are not folded into the fingerprint: the run's
/// fingerprint is the fold of the other columns, so adding them moved no golden pin.
#[test]
fn reported_columns_are_outside_the_fingerprint() {
    let r = run_checked(&survivors(), &cfg(1, 20));
    let reported: Vec<&str> =
        r.summary.reported.iter().map(|&i| r.summary.values[i].0.as_str()).collect();
    assert!(reported.contains(&"class.chat.sla_met_with_in_flight"), "{reported:?}");
    assert!(reported.contains(&"source.fast.latency_ms_p99_with_in_flight"));
    assert!(!reported.contains(&"class.chat.sla_met"));
    assert_eq!(r.summary.folded().count() + reported.len(), r.summary.values.len());
}

/// Utilisation ≤ 1 when servers are removed at run time: the removed servers finish their
/// services first (4 busy, then 1 server from 5 s), and count as capacity until then.
#[test]
fn station_utilisation_with_fewer_servers_is_at_most_one() {
    let sc = load(
        r#"Scenario(name: "drain",
        sources: [(name: "c", interarrival: Constant("250ms"), target: "site")],
        call_sites: [(name: "site", upstream: "st")],
        stations: [(name: "st", servers: 4, service: Constant("10s"))],
        timeline: [(at: "5s", path: "station.st.servers", value: Count(1))],
    )"#,
    );
    let r = run_checked(&sc, &cfg(1, 60));
    // Arrivals at 0, 0.25, 0.5, 0.75 s fill the 4 servers (idle 3·¼ + 2·¼ + 1·¼ = 1.5
    // server-seconds); they finish at 10 … 10.75 s, the capacity stepping 4 → 1 as they do:
    // ∫capacity = 4·10 + (3 + 2 + 1)·¼ + 1·49.25 = 90.75, ∫busy = 90.75 − 1.5 = 89.25.
    // (Counting the servers set, ∫servers = 4·5 + 1·55 = 75 gave 89.25 / 75 = 1.19.)
    let u = get(&r, "station.st.utilization");
    assert!((u - 89.25 / 90.75).abs() < 1e-12, "utilisation {u}");
}

/// A GPU server's utilisation counts a step still running at the end only up to the end:
/// saturated from the first arrival, it is busy at most the whole run.
#[test]
fn gpu_utilisation_stops_at_the_end_of_the_run() {
    let sc = load(
        r#"Scenario(name: "gpu",
        sources: [(name: "chat", interarrival: Exponential(mean: "2ms"), target: "infer",
                   prompt_tokens: Constant(512.0), output_tokens: Constant(128.0))],
        call_sites: [(name: "infer", upstream: "gpu")],
        stations: [],
        gpu_servers: [GpuServer(name: "gpu", max_num_seqs: 8)],
    )"#,
    );
    for secs in [3, 7, 10] {
        let r = run_checked(&sc, &cfg(secs, secs));
        let u = get(&r, "gpu_server.gpu.utilization");
        assert!(u <= 1.0 && u > 0.99, "{secs} s: utilisation {u}");
    }
}
