//! The guide `docs/replay-your-system.md` runs exactly what it shows: the rows command it
//! prints (run here through `sh`) writes the script rows of
//! `experiments/examples/replay/replay.ron` from `recorded.csv`; the scenario is run as
//! the guide's `stormglass run` command runs it (seed 0, the CLI's default 600 s, with
//! per-request records); and the guide's comparison table is regenerated from that run
//! and the recording (`UPDATE_EXPECT=1 cargo test -p models --test docs`).

use super::{generated_block, repo};
use models::{Outcome, RunConfig};
use sim_core::SimDuration;

const GUIDE: &str = "docs/replay-your-system.md";
const SCENARIO: &str = "experiments/examples/replay/replay.ron";
const RECORDING: &str = "experiments/examples/replay/recorded.csv";
/// The run command the guide shows; `run_config` is what it means.
const RUN: &str = "stormglass run experiments/examples/replay/replay.ron --requests";

/// `stormglass run FILE --requests` on a scenario file: the CLI's defaults (one seed, 0;
/// 600 s; no warm-up) with per-request records.
fn run_config() -> RunConfig {
    let mut c = RunConfig::new(0, SimDuration::from_secs(600));
    c.record_requests = true;
    c
}

/// One recorded request: arrival, start (None: refused), end, status; µs.
struct Recorded {
    arrival: u64,
    start: Option<u64>,
    end: u64,
    status: u16,
}

fn recording() -> Vec<Recorded> {
    let text = std::fs::read_to_string(repo().join(RECORDING)).expect("the recording");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("arrival_us,start_us,end_us,service_us,status"));
    let num = |s: &str| s.parse::<u64>().expect("an integer");
    let rows = lines.map(|l| {
        let f: Vec<&str> = l.split(',').collect();
        let start = (!f[1].is_empty()).then(|| num(f[1]));
        Recorded { arrival: num(f[0]), start, end: num(f[2]), status: num(f[4]) as u16 }
    });
    rows.collect()
}

/// The guide's code block that follows `marker`.
fn code_after(guide: &str, marker: &str) -> String {
    let at = guide.find(marker).unwrap_or_else(|| panic!("{GUIDE}: no `{marker}`"));
    let open = at + guide[at..].find("```sh\n").expect("a ```sh block") + 6;
    let close = open + guide[open..].find("```").expect("its end");
    guide[open..close].trim().to_string()
}

#[test]
fn replay_rows_are_the_guides_command_on_the_recording() {
    let guide = std::fs::read_to_string(repo().join(GUIDE)).expect("the guide");
    let cmd = code_after(&guide, "<!-- rows command -->");
    let out = std::process::Command::new("sh")
        .args(["-c", &cmd])
        .current_dir(repo())
        .output()
        .expect("sh runs");
    assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
    let rows = String::from_utf8(out.stdout).expect("text");
    let file = std::fs::read_to_string(repo().join(SCENARIO)).expect("the scenario");
    let a = file.find("// BEGIN rows\n").expect("the BEGIN marker") + 14;
    let b = a + file[a..].find("        // END rows").expect("the END marker");
    assert_eq!(file[a..b], rows, "{SCENARIO}'s rows differ from the guide's command's output");
    assert_eq!(code_after(&guide, "<!-- run command -->"), RUN, "the run command changed");
}

/// Nearest-rank quantile of sorted values (`docs/results.md#quantiles`).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let k = ((q * sorted.len() as f64).ceil() as usize).max(1);
    sorted[k - 1]
}

#[test]
fn replay_table_matches_a_run_of_the_guides_example() {
    let text = std::fs::read_to_string(repo().join(SCENARIO)).expect("the scenario");
    let sc: models::scenario::ScenarioSpec<models::params::ParamValue> =
        ron::from_str(&text).expect("a valid scenario");
    sc.check().expect("consistent");
    let out = models::run(&sc, &run_config());
    assert!(out.error.is_none() && out.violations.is_empty(), "{:?}", out.error);
    let real = recording();
    assert_eq!(out.requests.len(), real.len(), "one replayed request per recorded one");
    // Request by request (the n-th row is the request of sequence n): the same fate, and
    // the replay never slower. Derivation: both serve FIFO on 2 workers with the same
    // service times; the real service adds a hand-off (queue to thread) before each
    // start, the replay none, so every replayed start (and end) is at or before the
    // real one, by at most the hand-offs accumulated in the request's busy period.
    let mut by_seq: Vec<_> = out.requests.iter().collect();
    by_seq.sort_by_key(|q| q.seq);
    let mut lag_us: Vec<f64> = Vec::new();
    for (q, r) in by_seq.iter().zip(&real) {
        let served = q.outcome == Some(Outcome::Success);
        assert_eq!(served, r.status == 200, "request {}: fate differs", q.seq);
        assert_eq!(q.arrival.0 / 1000, r.arrival, "request {}: arrival", q.seq);
        if served {
            let sim = (q.end.expect("ended").0 - q.arrival.0) as f64 / 1e3;
            let rec = (r.end - r.arrival) as f64;
            assert!(sim <= rec + 1.0, "request {}: replay {sim} µs > real {rec} µs", q.seq);
            lag_us.push(rec - sim);
        }
    }
    let lag_max = lag_us.iter().cloned().fold(0.0, f64::max);
    let table = table(&out, &real, lag_max);
    let guide = repo().join(GUIDE);
    generated_block(&guide, "replay table", &table);
}

/// The guide's comparison table: each figure from the recording and from the run.
fn table(out: &models::RunOutput, real: &[Recorded], lag_max_us: f64) -> String {
    let col = |c: &str| out.summary.get(&format!("source.client.{c}")).expect(c);
    let served: Vec<&Recorded> = real.iter().filter(|r| r.status == 200).collect();
    let mut lat: Vec<f64> = served.iter().map(|r| (r.end - r.arrival) as f64 / 1e3).collect();
    lat.sort_by(f64::total_cmp);
    let wait: f64 = served.iter().map(|r| (r.start.expect("served") - r.arrival) as f64).sum();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let mut t = String::from("| figure | recorded | replayed (`runs` column) |\n|---|---|---|\n");
    let mut row = |name: &str, rec: String, sim: String, c: &str| {
        t.push_str(&format!("| {name} | {rec} | {sim} (`source.client.{c}`) |\n"));
    };
    row("requests", real.len().to_string(), format!("{}", col("offered")), "offered");
    row("served", served.len().to_string(), format!("{}", col("success")), "success");
    let refused = real.len() - served.len();
    let full = col("rejected_queue_full");
    row("refused (queue full)", refused.to_string(), format!("{full}"), "rejected_queue_full");
    let ms = |x: f64| format!("{x:.1} ms");
    row("mean latency", ms(mean(&lat)), ms(col("latency_ms_mean")), "latency_ms_mean");
    for (q, c) in [(0.5, "latency_ms_p50"), (0.95, "latency_ms_p95"), (0.99, "latency_ms_p99")] {
        row(&format!("p{} latency", (q * 100.0) as u32), ms(quantile(&lat, q)), ms(col(c)), c);
    }
    row("max latency", ms(lat[lat.len() - 1]), ms(col("latency_ms_max")), "latency_ms_max");
    let w = wait / served.len() as f64 / 1e3;
    row("mean wait", ms(w), ms(col("wait_ms_mean")), "wait_ms_mean");
    t.push_str(&format!(
        "\nLargest gap, request by request (recorded − replayed latency): {:.1} ms.\n",
        lag_max_us / 1e3
    ));
    t
}
