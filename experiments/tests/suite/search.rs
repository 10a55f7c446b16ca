//! `stormglass search`: the race against the full grid on an Erlang loss system whose best
//! setting is known, resuming, refusing a used folder, and the rounds table.

use polars::prelude::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stormglass-search-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// 100 requests/s of 50 ms (exponential) = 5 Erlangs at a gate of `permits` that fails
/// fast, in front of 12 servers: an Erlang loss system with `permits` servers, blocking
/// B(5, n) = 0.39, 0.13, 0.05, 0.018, 0.0055 for n = 2 … 12 step 2 (the Erlang B
/// recursion). Goodput 100·(1 − B) rises with the permits, so the best is 12; the next
/// best, 10, is 1.3 requests/s behind. In 60 s measured that is ~78 more rejections per
/// seed, whose paired seed-to-seed spread is ~√78 ≈ 9, i.e. 0.15 requests/s: against a
/// one-sided quantile t(4 df, 1 − 0.05/(4 rounds × 5 tests)) ≈ 5.6, the difference 1.3 is
/// ~19 standard errors out after round 1 (5 seeds) — every other candidate leaves then,
/// and the winner runs its 15 other seeds: 30 + 15 = 45 runs of the grid's 6 × 20 = 120.
const LOSS: &str = r#"Experiment(
    name: "loss",
    scenario: Inline(Scenario(
        name: "erlang-loss",
        sources: [(name: "chat", interarrival: Exponential(mean: "10ms"), target: "call")],
        gates: [(name: "g", permits: 12, acquire_timeout: "0s")],
        call_sites: [(name: "call", governors: [Gate("g")], upstream: "llm")],
        stations: [(name: "llm", servers: 12, service: Exponential(mean: "50ms"))],
    )),
    duration: "70s",
    warmup: "10s",
    sample_every: "0s",
    seeds: Range(0, 2),
    search: Search(
        space: [Range(path: "gate.g.permits", from: 2, to: 12, step: 2)],
        seeds: Range(0, 20),
        objective: Maximize("class.P0.goodput"),
        constraints: [(metric: "class.P0.latency_ms_p99", op: Le, value: 1000)],
        pareto: Minimize("class.P0.rejected / class.P0.offered"),
        race: Race(first: 5, step: 5, confidence: 0.95),
    ),
)"#;

fn search(file: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stormglass"))
        .arg("search")
        .arg(file)
        .arg("--out")
        .arg(out)
        .args(["--jobs", "2"])
        .args(extra)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Lines without wall-clock figures.
fn deterministic(stdout: &[u8]) -> String {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.contains("wall"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_race_finds_the_erlang_best_with_fewer_runs_than_the_grid() {
    let dir = tmp("race");
    let file = dir.join("loss.ron");
    std::fs::write(&file, LOSS).unwrap();
    let out = dir.join("out");
    let o = search(&file, &out, &["--compare-grid"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    // Both find permits = 12, on the same 20 runs: the same interval.
    let bests: Vec<&str> = t.lines().filter(|l| l.starts_with("best:")).collect();
    assert_eq!(bests, ["best: default gate.g.permits=12"; 2], "{t}");
    let cis: Vec<&str> =
        t.lines().filter(|l| l.trim_start().starts_with("class.P0.goodput =")).collect();
    assert_eq!(cis.len(), 2, "{t}");
    assert_eq!(cis[0], cis[1], "the same runs give the same CI: {t}");
    assert!(cis[0].contains("20 seeds"), "{t}");
    assert!(t.contains("round 1: 6 candidates on 5 seeds → 1 alive, 5 worse"), "{t}");
    assert!(t.contains("runs: 45 of the grid's 120"), "{t}");
    assert!(t.contains("race vs full grid: 45 vs 120 runs"), "{t}");
    assert!(t.contains("the same best"), "{t}");
    // The rounds table: one row per candidate per round.
    let rounds = out.join("loss/search/rounds.parquet");
    let df = ParquetReader::new(std::fs::File::open(&rounds).unwrap()).finish().unwrap();
    assert_eq!(df.height(), 6 + 1, "round 1: six candidates, round 2: the survivor");
    let fates: Vec<&str> =
        df.column("fate").unwrap().str().unwrap().iter().map(|f| f.unwrap()).collect();
    assert_eq!(fates, ["worse", "worse", "worse", "worse", "worse", "alive", "alive"]);
    // The race's folder holds exactly the 45 runs it made, in the usual layout.
    let runs = experiments::results::load(out.join("loss/search")).unwrap();
    assert_eq!(runs.height(), 45);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_search_resumes_and_refuses_a_used_folder() {
    let dir = tmp("resume");
    let file = dir.join("loss.ron");
    std::fs::write(&file, LOSS).unwrap();
    let out = dir.join("out");
    let first = search(&file, &out, &[]);
    assert!(first.status.success(), "{}", text(&first));
    let again = search(&file, &out, &[]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("add --resume"), "{}", text(&again));
    // Drop one of the winner's later runs: --resume runs only that one and decides alike.
    let parts = experiments::results::parts(&out.join("loss/search"), "runs").unwrap();
    let runs = experiments::results::load(out.join("loss/search")).unwrap();
    let last =
        runs.column("run_id").unwrap().str().unwrap().get(runs.height() - 1).unwrap().to_string();
    let (_, p) = parts.iter().find(|(id, _)| *id == last).unwrap();
    std::fs::remove_file(p).unwrap();
    let resumed = search(&file, &out, &["--resume"]);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert!(text(&resumed).contains("1 made now, 44 found done"), "{}", text(&resumed));
    assert_eq!(deterministic(&resumed.stdout), deterministic(&first.stdout));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_without_a_search_block_is_refused() {
    let dir = tmp("none");
    let o = Command::new(env!("CARGO_BIN_EXE_stormglass"))
        .args(["search", "quickstart", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("no `search` block"), "{}", text(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}
