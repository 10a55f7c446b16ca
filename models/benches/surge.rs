//! The promotion surge at scale: upstream calls per wall-clock second through the full
//! governor stack, against a floor written for the same call path.
//!
//! Based on docs/domain.md §6, incident 5 (`experiments/incidents/05-promotion-surge.ron`): entry
//! requests fan out into parallel LLM calls, `Choice` 3 / 4 / 5 (30 % each) / 8 (10 %),
//! mean 4.4 — here at 2,000 entry requests/s (≈ 8,800 calls/s) for one simulated hour
//! (≈ 32 M upstream calls). Every call goes through `Retry → CircuitBreaker → FlowRules
//! (Sentinel QPS rule) → Gate` to a provider with an RPM + TPM + concurrency quota; service
//! is log-normal plus a per-token part (prompt and output tokens are log-normal per
//! request). The provider's quota is set at the edge of the load, so it answers a small
//! share of 429s which the retry takes again; a small 5xx rate keeps the breaker and the
//! retry busy without opening the breaker.
//!
//! * `stormglass` — the scenario below parsed from RON and run with [`models::run`]
//!   (sampling off, no per-request records);
//! * `floor` — the same call path by hand: a `BinaryHeap` of `(time, seq)` events, a slab
//!   of requests and one of calls, the same arrival stream, the same keyed draws for
//!   fan-out, tokens and service; no governors, no quota, no timeouts, no metrics beyond a
//!   latency sum. What any simulator of this model must at least do.
//!
//! Each measurement runs in a child process (this executable again, with
//! `STORMGLASS_SURGE_CHILD` set), so that its peak RSS (`VmHWM` of `/proc/self/status`) is
//! its own. Each is repeated and the best wall time is kept.
//!
//! `cargo bench -p models --bench surge` runs the full size. Environment:
//! `STORMGLASS_SURGE_SECS` (simulated seconds, default 3600), `STORMGLASS_SURGE_LONG_SECS`
//! (a second stormglass run of this length for the RSS-flatness check; default 0 = none,
//! `bench/run.sh` passes 4 × the above), `STORMGLASS_BENCH_REPEATS` (default 1),
//! `STORMGLASS_SURGE_TSV=<file>` (rows as TSV, for `bench/run.sh`);
//! `STORMGLASS_SURGE_CHILD=summary STORMGLASS_SURGE_SECS=60` prints the scenario's summary
//! (to see what the governors did); `STORMGLASS_SURGE_CHILD=both` runs both in this process
//! (for `bench/callgrind.sh`). Under `cargo test
//! --all-targets` (no `--bench`) it runs a 5-second smoke size once, in process.

mod common;
use common::{env_u64, fastest};
use models::scenario::ScenarioSpec;
use models::world::attr;
use models::{RunConfig, Scenario};
use sim_core::rng::{DrawKey, Stream, name_id};
use sim_core::{Dist, SimDuration};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::process::Command;
use std::time::Instant;

const SEED: u64 = 1;
const SOURCE: &str = "promo";
/// Mean inter-arrival time: 500 µs = 2,000 entry requests/s.
const INTERARRIVAL_NS: u64 = 500_000;
/// Fan-out `Choice`: (calls, weight).
const FANOUT: [(u32, f64); 4] = [(3, 30.0), (4, 30.0), (5, 30.0), (8, 10.0)];
/// Provider servers: well above the ≈ 6,600 calls in service (8,800/s × 0.75 s), so the
/// quota's concurrency cap, not the servers, is what binds.
const SERVERS: u64 = 10_000;
/// Service: log-normal base + per prompt token + per output token.
const BASE_MEAN_NS: u64 = 400_000_000;
const BASE_CV: f64 = 0.5;
const PER_PROMPT_NS: u64 = 100_000;
const PER_OUTPUT_NS: u64 = 2_000_000;
const PROMPT_MEAN: f64 = 500.0;
const OUTPUT_MEAN: f64 = 150.0;
const TOKENS_CV: f64 = 0.8;

fn scenario_text() -> String {
    // Quota at the edge: 8,800 calls/s = 528,000 RPM; ≈ 650 tokens × 8,800/s ≈ 343 M TPM;
    // ≈ 6,600 in service on average. Limits a little above those make 429s rare but real.
    format!(
        r#"Scenario(
            name: "surge-bench",
            sources: [(
                name: "{SOURCE}",
                target: "assistant",
                interarrival: Exponential(mean: "{INTERARRIVAL_NS}ns"),
                prompt_tokens: LogNormal(mean: {PROMPT_MEAN:.1}, cv: {TOKENS_CV}),
                output_tokens: LogNormal(mean: {OUTPUT_MEAN:.1}, cv: {TOKENS_CV}),
            )],
            pipelines: [(name: "assistant", stages: [
                Step(name: "llm", call: "llm", mode: Parallel,
                     calls: Choice([(3, 30.0), (4, 30.0), (5, 30.0), (8, 10.0)])),
            ])],
            retries: [Retry(name: "r", max_attempts: 3,
                            backoff: Exponential(wait_duration: "100ms"), jitter: Full)],
            circuit_breakers: [CircuitBreaker(name: "cb", sliding_window_size: 200,
                                              minimum_number_of_calls: 100)],
            flow_rules: [FlowRules(name: "edge", rules: [FlowRule(count: 12000.0)])],
            gates: [(name: "llm", permits: 8000, acquire_timeout: "0s")],
            quotas: [Quota(name: "provider", rpm: Some(600000), tpm: Some(420000000),
                           max_concurrency: Some(7600))],
            call_sites: [(name: "llm",
                          governors: [Retry("r"), CircuitBreaker("cb"), FlowRules("edge"), Gate("llm")],
                          upstream: "provider", timeout: "30s")],
            stations: [(
                name: "provider",
                servers: {SERVERS},
                service: LogNormal(mean: "{BASE_MEAN_NS}ns", cv: {BASE_CV}),
                per_prompt_token: "{PER_PROMPT_NS}ns",
                per_output_token: "{PER_OUTPUT_NS}ns",
                error_rate: 0.01,
                quota: "provider",
            )],
        )"#
    )
}

fn scenario() -> Scenario {
    let sc: ScenarioSpec<models::params::ParamValue> =
        ron::from_str(&scenario_text()).expect("surge scenario parses");
    sc.check().expect("surge scenario is consistent");
    sc
}

/// What one measurement produced.
#[derive(Clone, Copy, Debug)]
struct Measured {
    calls: u64,
    events: u64,
    requests: u64,
    wall_s: f64,
    /// Peak resident set (kB), `VmHWM`; 0 when measured in process (smoke mode).
    peak_rss_kb: u64,
}

// Not inlined: `bench/callgrind.sh` reads its inclusive cost.
#[inline(never)]
fn run_stormglass(secs: u64) -> Measured {
    let sc = scenario();
    let cfg = RunConfig::new(SEED, SimDuration::from_secs(secs));
    let t0 = Instant::now();
    let r = models::run(&sc, &cfg);
    let wall_s = t0.elapsed().as_secs_f64();
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let col = |c: &str| r.summary.get(c).unwrap_or_else(|| panic!("no column {c}"));
    Measured {
        calls: col(&format!("source.{SOURCE}.upstream_calls")) as u64,
        events: r.events,
        requests: col(&format!("source.{SOURCE}.completed")) as u64,
        wall_s,
        peak_rss_kb: 0,
    }
}

// ---------------------------------------------------------------------------------------
// floor: the same call path, no governors.

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum FloorEv {
    Arrival,
    /// Call (slab index) ends its service.
    Done(u32),
}

struct FloorReq {
    arrival: u64,
    pending: u32,
}

struct FloorCall {
    req: u32,
}

/// A slab with a free list: the per-request / per-call state any engine keeps.
struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Slab<T> {
    fn new() -> Self {
        Slab { items: Vec::new(), free: Vec::new() }
    }
    fn insert(&mut self, v: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = Some(v);
                i
            }
            None => {
                self.items.push(Some(v));
                (self.items.len() - 1) as u32
            }
        }
    }
    fn get_mut(&mut self, i: u32) -> &mut T {
        self.items[i as usize].as_mut().expect("live slot")
    }
    fn remove(&mut self, i: u32) -> T {
        self.free.push(i);
        self.items[i as usize].take().expect("live slot")
    }
}

#[inline(never)]
fn run_floor(secs: u64) -> Measured {
    let t0 = Instant::now();
    let end = secs * 1_000_000_000;
    let interarrival = Dist::<SimDuration>::exponential(SimDuration(INTERARRIVAL_NS));
    let base =
        Dist::<SimDuration>::log_normal(SimDuration(BASE_MEAN_NS), BASE_CV).expect("log-normal");
    let prompt = Dist::<f64>::log_normal(PROMPT_MEAN, TOKENS_CV).expect("log-normal");
    let output = Dist::<f64>::log_normal(OUTPUT_MEAN, TOKENS_CV).expect("log-normal");
    let total_weight: f64 = FANOUT.iter().map(|&(_, w)| w).sum();
    let mut stream = Stream::new(SEED, &format!("arrivals/{SOURCE}"));
    let source_key = name_id(SOURCE);

    let mut heap: BinaryHeap<Reverse<(u64, u64, FloorEv)>> = BinaryHeap::new();
    let mut next_seq = 0u64;
    let mut schedule = |heap: &mut BinaryHeap<_>, at: u64, ev: FloorEv| {
        heap.push(Reverse((at, next_seq, ev)));
        next_seq += 1;
    };
    let mut reqs: Slab<FloorReq> = Slab::new();
    let mut calls: Slab<FloorCall> = Slab::new();
    // Calls waiting for a server: (call slot, service ns).
    let mut queue: VecDeque<(u32, u64)> = VecDeque::new();
    let (mut busy, mut issued, mut sent, mut done_reqs, mut events) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut latency_sum = 0u128;

    schedule(&mut heap, 0, FloorEv::Arrival);
    while let Some(Reverse((now, _, ev))) = heap.pop() {
        if now > end {
            break;
        }
        events += 1;
        match ev {
            FloorEv::Arrival => {
                let seq = issued;
                issued += 1;
                schedule(&mut heap, now + interarrival.sample(&mut stream).0, FloorEv::Arrival);
                let key = DrawKey::request(SEED, source_key, seq);
                // Fan-out: the same keyed uniform and Choice walk as the world.
                let u = key.with_call(1 << 16, 0).uniform(attr::FANOUT) * total_weight;
                let (mut acc, mut n) = (0.0, FANOUT[FANOUT.len() - 1].0);
                for &(c, w) in &FANOUT {
                    acc += w;
                    if u < acc {
                        n = c;
                        break;
                    }
                }
                let p = prompt.sample(&mut key.attribute(attr::PROMPT_TOKENS)).round() as u64;
                let o = output.sample(&mut key.attribute(attr::OUTPUT_TOKENS)).round() as u64;
                let r = reqs.insert(FloorReq { arrival: now, pending: n });
                for i in 0..n {
                    let ck = key.with_call((1 << 16) | (i + 1), 0);
                    let service = base.sample(&mut ck.attribute(attr::SERVICE_TIME)).0
                        + p * PER_PROMPT_NS
                        + o * PER_OUTPUT_NS;
                    let c = calls.insert(FloorCall { req: r });
                    sent += 1;
                    if busy < SERVERS {
                        busy += 1;
                        schedule(&mut heap, now + service, FloorEv::Done(c));
                    } else {
                        queue.push_back((c, service));
                    }
                }
            }
            FloorEv::Done(c) => {
                let r = calls.remove(c).req;
                let req = reqs.get_mut(r);
                req.pending -= 1;
                if req.pending == 0 {
                    latency_sum += (now - req.arrival) as u128;
                    reqs.remove(r);
                    done_reqs += 1;
                }
                match queue.pop_front() {
                    Some((c, service)) => schedule(&mut heap, now + service, FloorEv::Done(c)),
                    None => busy -= 1,
                }
            }
        }
    }
    std::hint::black_box(latency_sum);
    Measured {
        calls: sent,
        events,
        requests: done_reqs,
        wall_s: t0.elapsed().as_secs_f64(),
        peak_rss_kb: 0,
    }
}

// ---------------------------------------------------------------------------------------

/// Peak resident set of this process, kB (`VmHWM`).
fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

const CHILD: &str = "STORMGLASS_SURGE_CHILD";

fn measure_in_child(implementation: &str, secs: u64) -> Measured {
    let exe = std::env::current_exe().expect("current executable");
    let out = Command::new(exe)
        .env(CHILD, implementation)
        .env("STORMGLASS_SURGE_SECS", secs.to_string())
        .output()
        .expect("spawning the measurement child");
    assert!(
        out.status.success(),
        "{implementation} child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).expect("utf-8");
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(f.len(), 5, "child output {line:?}");
    let n = |i: usize| f[i].parse::<u64>().expect("integer");
    Measured {
        calls: n(0),
        events: n(1),
        requests: n(2),
        wall_s: f[3].parse().expect("float"),
        peak_rss_kb: n(4),
    }
}

fn main() {
    if let Ok(which) = std::env::var(CHILD) {
        let secs = env_u64("STORMGLASS_SURGE_SECS").expect("child needs STORMGLASS_SURGE_SECS");
        if which == "summary" {
            // For looking at the scenario itself: its summary, one column a line.
            let r = models::run(&scenario(), &RunConfig::new(SEED, SimDuration::from_secs(secs)));
            for (k, v) in &r.summary.values {
                println!("{k} = {v:?}");
            }
            return;
        }
        if which == "both" {
            // For instruction counts (`bench/callgrind.sh surge`): both in this process,
            // one `impl calls` line each.
            let (f, s) = (run_floor(secs), run_stormglass(secs));
            println!("floor {}\nstormglass {}", f.calls, s.calls);
            return;
        }
        let m = match which.as_str() {
            "floor" => run_floor(secs),
            "stormglass" => run_stormglass(secs),
            other => panic!("unknown {CHILD}={other}"),
        };
        println!("{} {} {} {:.6} {}", m.calls, m.events, m.requests, m.wall_s, peak_rss_kb());
        return;
    }
    let full = std::env::args().any(|a| a == "--bench");
    if !full {
        // Smoke: both implementations once, in process, on 5 simulated seconds.
        let (f, s) = (run_floor(5), run_stormglass(5));
        assert!(f.calls > 0 && s.calls >= f.calls / 2, "floor {f:?} vs stormglass {s:?}");
        println!("surge smoke: floor {f:?}\n             stormglass {s:?}");
        return;
    }
    let secs = env_u64("STORMGLASS_SURGE_SECS").unwrap_or(3_600);
    let long = env_u64("STORMGLASS_SURGE_LONG_SECS").unwrap_or(0);
    let repeats = env_u64("STORMGLASS_BENCH_REPEATS").unwrap_or(1);
    assert!(secs > 0 && repeats > 0, "seconds and repeats must be positive");
    println!(
        "stormglass surge benchmark: {secs} simulated s at 2,000 entry requests/s, best of \
         {repeats} run(s), each in its own process"
    );
    let mut rows = vec![
        (
            "floor",
            secs,
            fastest(repeats, |m: &Measured| m.wall_s, || measure_in_child("floor", secs)),
        ),
        (
            "stormglass",
            secs,
            fastest(repeats, |m: &Measured| m.wall_s, || measure_in_child("stormglass", secs)),
        ),
    ];
    if long > 0 {
        rows.push(("stormglass", long, measure_in_child("stormglass", long)));
    }
    let floor_rate = rows[0].2.calls as f64 / rows[0].2.wall_s;
    println!(
        "{:<11} {:>7} {:>11} {:>9} {:>12} {:>12} {:>9} {:>9}",
        "impl", "sim s", "calls", "wall s", "calls/s", "events/s", "RSS MB", "vs floor"
    );
    let mut tsv = String::from("impl\tsim_s\tcalls\tevents\trequests\twall_s\tpeak_rss_kb\n");
    for (name, s, m) in &rows {
        let rate = m.calls as f64 / m.wall_s;
        println!(
            "{:<11} {:>7} {:>11} {:>9.2} {:>12.0} {:>12.0} {:>9.1} {:>8.2}x",
            name,
            s,
            m.calls,
            m.wall_s,
            rate,
            m.events as f64 / m.wall_s,
            m.peak_rss_kb as f64 / 1024.0,
            floor_rate / rate
        );
        tsv.push_str(&format!(
            "{name}\t{s}\t{}\t{}\t{}\t{:.6}\t{}\n",
            m.calls, m.events, m.requests, m.wall_s, m.peak_rss_kb
        ));
    }
    println!("(vs floor = floor calls/s ÷ this calls/s; targets: ≥ 2 M calls/s, ≤ 3x, ≤ 300 MB)");
    if let Ok(path) = std::env::var("STORMGLASS_SURGE_TSV") {
        std::fs::write(&path, tsv).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    }
}
