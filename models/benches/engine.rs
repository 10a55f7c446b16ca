//! Engine throughput: simulated customers per wall-clock second on M/M/1 and M/M/c.
//!
//! Two implementations of the same model, in the same process, on the same random numbers:
//!
//! * `stormglass` — the real world: a scenario parsed from RON and run with [`models::run`]
//!   (calendar, fingerprint, guards, gauges, HdrHistogram latencies, summary), sampling off;
//! * `floor` — a bare loop over `std::collections::BinaryHeap` ordered by `(time_ns, seq)`
//!   with a `VecDeque` FIFO and integer-nanosecond time: what any engine must at least do.
//!
//! Both draw inter-arrival times from the `arrivals/in` ChaCha stream and service times from
//! keyed draws `(seed, "in", sequence, SERVICE_TIME)`, exactly as `models/src/world.rs` does,
//! so they simulate the *same* sample path; the benchmark checks this by comparing the mean
//! wait and mean sojourn time, which must agree to the last bits.
//!
//! Each measurement is repeated and the best (minimum) wall time is kept.
//!
//! `cargo bench -p models --bench engine` runs the full size (2,000,000 customers per model,
//! 3 repetitions). Under `cargo test --all-targets` (no `--bench` argument) it runs a small
//! smoke size once. Environment overrides: `STORMGLASS_BENCH_CUSTOMERS`,
//! `STORMGLASS_BENCH_REPEATS`, `STORMGLASS_BENCH_MODEL` (one model only, e.g. `M/M/1`);
//! `STORMGLASS_BENCH_TSV=<file>` also writes the rows as TSV
//! (used by `bench/run.sh`).

mod common;
use common::env_u64;
use models::scenario::ScenarioSpec;
use models::world::attr;
use models::{RunConfig, Scenario};
use sim_core::rng::{DrawKey, Stream, name_id};
use sim_core::{Dist, SimDuration};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hint::black_box;
use std::time::{Duration, Instant};

const SEED: u64 = 1;
const SOURCE: &str = "in";

/// One benchmarked queueing model.
struct Model {
    name: &'static str,
    servers: u64,
    /// Mean inter-arrival time (1/λ), in ns.
    interarrival_ns: u64,
    /// Mean service time (1/μ), in ns.
    service_ns: u64,
}

impl Model {
    fn lambda(&self) -> f64 {
        1e9 / self.interarrival_ns as f64
    }
    fn rho(&self) -> f64 {
        self.lambda() * self.service_ns as f64 / 1e9 / self.servers as f64
    }
}

const MODELS: [Model; 2] = [
    // λ = 9/s, μ = 10/s, ρ = 0.9.
    Model { name: "M/M/1", servers: 1, interarrival_ns: 111_111_111, service_ns: 100_000_000 },
    // λ = 70/s, μ = 10/s, c = 8, ρ = 0.875.
    Model { name: "M/M/8", servers: 8, interarrival_ns: 14_285_714, service_ns: 100_000_000 },
];

/// What a run produced, for the same-model check.
struct Outcome {
    completed: u64,
    wait_ms_mean: f64,
    latency_ms_mean: f64,
}

// ---------------------------------------------------------------------------------------
// stormglass: the real world through `models::run`.

fn scenario(m: &Model, customers: u64) -> Scenario {
    let text = format!(
        r#"Scenario(
            name: "bench",
            sources: [(
                name: "{SOURCE}",
                interarrival: Exponential(mean: "{ia}ns"),
                target: "site",
                limit: Some({customers}),
            )],
            call_sites: [(name: "site", upstream: "st")],
            stations: [(
                name: "st",
                servers: {c},
                service: Exponential(mean: "{sv}ns"),
            )],
        )"#,
        ia = m.interarrival_ns,
        sv = m.service_ns,
        c = m.servers,
    );
    let sc: ScenarioSpec<models::params::ParamValue> =
        ron::from_str(&text).expect("benchmark scenario parses");
    sc.check().expect("benchmark scenario is consistent");
    sc
}

// Not inlined: `bench/callgrind.sh` reads its inclusive cost.
#[inline(never)]
fn run_stormglass(m: &Model, sc: &Scenario, customers: u64) -> Outcome {
    // Long enough for every customer to arrive and finish: the run stops by itself when
    // the calendar is empty, so the slack costs nothing.
    let secs = (customers as f64 / m.lambda() * 1.2) as u64 + 3_600;
    let cfg = RunConfig::new(SEED, SimDuration::from_secs(secs));
    let r = models::run(sc, &cfg);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let col = |c: &str| r.summary.get(c).unwrap_or_else(|| panic!("no column {c}"));
    let completed = col(&format!("source.{SOURCE}.completed")) as u64;
    Outcome {
        completed,
        wait_ms_mean: col(&format!("source.{SOURCE}.wait_ms_mean")),
        latency_ms_mean: col(&format!("source.{SOURCE}.latency_ms_mean")),
    }
}

// ---------------------------------------------------------------------------------------
// floor: a bare BinaryHeap loop on the same random numbers.

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum FloorEv {
    /// The next arrival of the source.
    Arrival,
    /// The service of a customer that arrived at `arrived` (ns) ends.
    Done { arrived: u64 },
}

#[inline(never)]
fn run_floor(m: &Model, customers: u64) -> Outcome {
    let interarrival = Dist::<SimDuration>::exponential(SimDuration(m.interarrival_ns));
    let service = Dist::<SimDuration>::exponential(SimDuration(m.service_ns));
    let mut stream = Stream::new(SEED, &format!("arrivals/{SOURCE}"));
    let source_key = name_id(SOURCE);
    let service_time = |seq: u64| {
        let key = DrawKey::request(SEED, source_key, seq);
        service.sample(&mut key.attribute(attr::SERVICE_TIME)).0
    };

    // (time_ns, scheduling seq) orders the heap; the payload never decides (seq is unique).
    let mut heap: BinaryHeap<Reverse<(u64, u64, FloorEv)>> = BinaryHeap::new();
    let mut next_seq = 0u64;
    let mut schedule = |heap: &mut BinaryHeap<_>, at: u64, ev: FloorEv| {
        heap.push(Reverse((at, next_seq, ev)));
        next_seq += 1;
    };
    // Waiting customers: (sequence, arrival time).
    let mut queue: VecDeque<(u64, u64)> = VecDeque::new();
    let (mut busy, mut issued, mut completed) = (0u64, 0u64, 0u64);
    let (mut wait_sum, mut latency_sum) = (0u128, 0u128);

    schedule(&mut heap, 0, FloorEv::Arrival);
    while let Some(Reverse((now, _, ev))) = heap.pop() {
        match ev {
            FloorEv::Arrival => {
                let seq = issued;
                issued += 1;
                if issued < customers {
                    let gap = interarrival.sample(&mut stream).0;
                    schedule(&mut heap, now + gap, FloorEv::Arrival);
                }
                if busy < m.servers && queue.is_empty() {
                    busy += 1;
                    schedule(&mut heap, now + service_time(seq), FloorEv::Done { arrived: now });
                } else {
                    queue.push_back((seq, now));
                }
            }
            FloorEv::Done { arrived } => {
                completed += 1;
                latency_sum += (now - arrived) as u128;
                match queue.pop_front() {
                    Some((seq, t)) => {
                        wait_sum += (now - t) as u128;
                        schedule(&mut heap, now + service_time(seq), FloorEv::Done { arrived: t });
                    }
                    None => busy -= 1,
                }
            }
        }
    }
    // Same formulas as the summary columns, so equal sample paths give equal bits.
    Outcome {
        completed,
        wait_ms_mean: wait_sum as f64 / completed as f64 / 1e6,
        latency_ms_mean: latency_sum as f64 / completed as f64 / 1e6,
    }
}

// ---------------------------------------------------------------------------------------

struct Row {
    model: &'static str,
    implementation: &'static str,
    customers: u64,
    wall: Duration,
}

impl Row {
    fn rate(&self) -> f64 {
        self.customers as f64 / self.wall.as_secs_f64()
    }
}

/// Best (minimum) wall time of `repeats` runs; checks every run completed everyone.
fn best_of(repeats: u32, customers: u64, mut f: impl FnMut() -> Outcome) -> (Duration, Outcome) {
    let mut best: Option<(Duration, Outcome)> = None;
    for _ in 0..repeats {
        let t0 = Instant::now();
        let out = black_box(f());
        let wall = t0.elapsed();
        assert_eq!(out.completed, customers, "every customer must complete");
        if best.as_ref().is_none_or(|(b, _)| wall < *b) {
            best = Some((wall, out));
        }
    }
    best.expect("at least one repetition")
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` does not: smoke size then.
    let full = std::env::args().any(|a| a == "--bench");
    let customers =
        env_u64("STORMGLASS_BENCH_CUSTOMERS").unwrap_or(if full { 2_000_000 } else { 20_000 });
    let repeats = env_u64("STORMGLASS_BENCH_REPEATS").unwrap_or(if full { 3 } else { 1 }) as u32;
    assert!(customers > 0 && repeats > 0, "customers and repeats must be positive");

    println!(
        "stormglass engine benchmark: {customers} customers per model, best of {repeats} run(s){}",
        if full { "" } else { " (smoke mode: run with `cargo bench` for the full size)" }
    );
    let mut rows = Vec::new();
    // `STORMGLASS_BENCH_MODEL=M/M/1` runs that model only (`bench/callgrind.sh`).
    let only = std::env::var("STORMGLASS_BENCH_MODEL").ok();
    for m in MODELS.iter().filter(|m| only.as_deref().is_none_or(|o| o == m.name)) {
        let sc = scenario(m, customers);
        println!(
            "  {}: λ = {:.3}/s, mean service {} ms, c = {}, ρ = {:.4}",
            m.name,
            m.lambda(),
            m.service_ns / 1_000_000,
            m.servers,
            m.rho()
        );
        let (floor_wall, floor) = best_of(repeats, customers, || run_floor(m, customers));
        let (sg_wall, sg) = best_of(repeats, customers, || run_stormglass(m, &sc, customers));
        // Same model, same random numbers ⇒ the same sample path. The floor orders equal
        // instants by scheduling order rather than by phase, which cannot change FIFO waits.
        let same = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
        assert!(
            same(floor.wait_ms_mean, sg.wait_ms_mean)
                && same(floor.latency_ms_mean, sg.latency_ms_mean),
            "{}: floor and stormglass disagree: wait {} vs {} ms, sojourn {} vs {} ms",
            m.name,
            floor.wait_ms_mean,
            sg.wait_ms_mean,
            floor.latency_ms_mean,
            sg.latency_ms_mean
        );
        println!(
            "    same sample path: mean wait {:.4} ms, mean sojourn {:.4} ms in both",
            sg.wait_ms_mean, sg.latency_ms_mean
        );
        let model = m.name;
        rows.push(Row { model, implementation: "floor", customers, wall: floor_wall });
        rows.push(Row { model, implementation: "stormglass", customers, wall: sg_wall });
    }

    println!();
    println!(
        "{:<7} {:<12} {:>10} {:>9} {:>14} {:>10}",
        "model", "impl", "customers", "wall s", "customers/s", "vs floor"
    );
    let mut tsv = String::from("model\timpl\tcustomers\twall_s\tcustomers_per_s\n");
    for r in &rows {
        let floor = rows
            .iter()
            .find(|f| f.model == r.model && f.implementation == "floor")
            .expect("floor row");
        // Slowdown factor: floor rate / this rate (1.00 for the floor; target ≤ 2).
        let ratio = floor.rate() / r.rate();
        println!(
            "{:<7} {:<12} {:>10} {:>9.3} {:>14.0} {:>9.2}x",
            r.model,
            r.implementation,
            r.customers,
            r.wall.as_secs_f64(),
            r.rate(),
            ratio
        );
        tsv.push_str(&format!(
            "{}\t{}\t{}\t{:.6}\t{:.1}\n",
            r.model,
            r.implementation,
            r.customers,
            r.wall.as_secs_f64(),
            r.rate()
        ));
    }
    println!("(vs floor = floor customers/s ÷ this customers/s; the project target is ≤ 2x)");
    if let Ok(path) = std::env::var("STORMGLASS_BENCH_TSV") {
        std::fs::write(&path, tsv).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    }
}
