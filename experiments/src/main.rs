//! `stormglass` — the headless command line.

use clap::{Parser, Subcommand};
use experiments::experiment::{Experiment, RunDefaults, Seeds, load_text};
use experiments::runner::{RunRecord, Status, run_all};
use sim_core::SimDuration;
use sim_core::stats::Replications;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Scenarios shipped inside the binary: `stormglass run quickstart` works anywhere.
const BUNDLED: &[(&str, &str)] = &[("quickstart", include_str!("../quickstart.ron"))];

#[derive(Parser)]
#[command(
    name = "stormglass",
    version,
    about = "Deterministic simulator of AI-service traffic governance"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Args, Clone)]
struct RunArgs {
    /// Scenario or experiment file (RON), or the name of a bundled scenario (`stormglass list`).
    file: String,
    /// Seeds for a bare scenario file: `A..B` (B excluded) or `1,5,9`.
    #[arg(long)]
    seeds: Option<String>,
    /// Simulated duration for a bare scenario file, e.g. `10m`.
    #[arg(long)]
    duration: Option<String>,
    /// Warm-up for a bare scenario file (requests arriving before it are not counted).
    #[arg(long)]
    warmup: Option<String>,
    /// Time-series bucket for a bare scenario file (`0s` = none).
    #[arg(long)]
    sample_every: Option<String>,
    /// Also write requests.parquet (one row per request).
    #[arg(long)]
    requests: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario or experiment and write results.
    Run {
        #[command(flatten)]
        args: RunArgs,
        /// Results root: results land in OUT/<experiment name>/.
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// Runs in parallel (each run is single-threaded). Default: number of cores.
        #[arg(long)]
        jobs: Option<usize>,
        /// Progress reporting: `log` (a line per run on stderr) or `none`.
        #[arg(long, default_value = "log", value_parser = ["log", "none"])]
        progress: String,
    },
    /// Check files without running them.
    Validate { files: Vec<String> },
    /// Print the resolved parameters and the run list.
    Explain {
        #[command(flatten)]
        args: RunArgs,
    },
    /// List the bundled scenarios.
    List,
}

fn parse_seeds(s: &str) -> Result<Seeds, String> {
    if let Some((a, b)) = s.split_once("..") {
        let a: u64 =
            a.trim().parse().map_err(|_| format!("--seeds: `{a}` is not a whole number"))?;
        let b: u64 =
            b.trim().parse().map_err(|_| format!("--seeds: `{b}` is not a whole number"))?;
        if b <= a {
            return Err(format!("--seeds: the range {a}..{b} is empty (the end is excluded)"));
        }
        Ok(Seeds::Range(a, b))
    } else {
        s.split(',')
            .map(|x| x.trim().parse().map_err(|_| format!("--seeds: `{x}` is not a whole number")))
            .collect::<Result<Vec<u64>, _>>()
            .map(Seeds::List)
    }
}

fn parse_dur(flag: &str, s: &Option<String>, default: SimDuration) -> Result<SimDuration, String> {
    match s {
        None => Ok(default),
        Some(s) => sim_core::time::parse_duration(s).map_err(|e| format!("--{flag}: {e}")),
    }
}

fn load(args: &RunArgs) -> Result<Experiment, String> {
    let d = RunDefaults::default();
    let defaults = RunDefaults {
        duration: parse_dur("duration", &args.duration, d.duration)?,
        warmup: parse_dur("warmup", &args.warmup, d.warmup)?,
        sample_every: parse_dur("sample-every", &args.sample_every, d.sample_every)?,
        seeds: args.seeds.as_deref().map(parse_seeds).transpose()?.unwrap_or(d.seeds),
        outputs: experiments::experiment::Outputs { requests: args.requests },
    };
    let path = Path::new(&args.file);
    let (shown, text) = if path.exists() {
        (
            path.to_path_buf(),
            std::fs::read_to_string(path)
                .map_err(|e| format!("{}: cannot read: {e}", path.display()))?,
        )
    } else if let Some((name, text)) = BUNDLED.iter().find(|(n, _)| *n == args.file) {
        (PathBuf::from(format!("<bundled>/{name}.ron")), text.to_string())
    } else {
        return Err(format!(
            "{}: no such file, and no bundled scenario of that name (bundled: {})",
            args.file,
            BUNDLED.iter().map(|b| b.0).collect::<Vec<_>>().join(", ")
        ));
    };
    load_text(&shown, &text, &defaults).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::List => {
            for (name, text) in BUNDLED {
                let first = text
                    .lines()
                    .find(|l| l.starts_with("//"))
                    .unwrap_or("")
                    .trim_start_matches("//")
                    .trim();
                println!("{name:<16} {first}");
            }
            ExitCode::SUCCESS
        }
        Cmd::Validate { files } => {
            let mut ok = true;
            for f in files {
                let args = RunArgs {
                    file: f.clone(),
                    seeds: None,
                    duration: None,
                    warmup: None,
                    sample_every: None,
                    requests: false,
                };
                match load(&args) {
                    Ok(e) => println!(
                        "{f}: ok ({} runs, {} parameters)",
                        e.seeds.len(),
                        e.scenario.registry().len()
                    ),
                    Err(e) => {
                        eprintln!("{e}");
                        ok = false;
                    }
                }
            }
            if ok { ExitCode::SUCCESS } else { ExitCode::from(2) }
        }
        Cmd::Explain { args } => match load(&args) {
            Ok(e) => {
                explain(&e);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        Cmd::Run { args, out, jobs, progress } => {
            let exp = match load(&args) {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            };
            let jobs = jobs.unwrap_or_else(|| {
                std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
            });
            let plan = exp.plan();
            let total = plan.len();
            let finished = AtomicUsize::new(0);
            let log = progress == "log";
            if log {
                eprintln!("{}: {total} runs of {} simulated, {jobs} jobs", exp.name, exp.duration);
            }
            let report = |r: &RunRecord| {
                let k = finished.fetch_add(1, Ordering::Relaxed) + 1;
                if log {
                    let status = match &r.status {
                        Status::Ok => "ok".to_string(),
                        Status::Error(e) => format!("ERROR {e}"),
                    };
                    eprintln!(
                        "[{k}/{total}] run {} seed {} {status} ({:.2}s, {} events)",
                        r.run_id, r.seed, r.wall_seconds, r.events
                    );
                }
            };
            let records = run_all(&exp, &plan, jobs, &report);
            let dir = match experiments::results::write_all(&out, &exp, &records) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("writing results under {}: {e}", out.display());
                    return ExitCode::FAILURE;
                }
            };
            print_summary(&exp, &records);
            println!("results: {}", dir.display());
            if records.iter().all(|r| r.status == Status::Ok) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn explain(e: &Experiment) {
    println!("experiment {} ({})", e.name, e.file.display());
    if !e.description.is_empty() {
        println!("  {}", e.description);
    }
    println!(
        "duration {}  warm-up {}  sampling {}",
        e.duration,
        e.warmup,
        e.sample_every.map(|d| d.to_string()).unwrap_or("off".into())
    );
    println!("\nparameters ({}):", e.scenario.registry().len());
    for p in e.scenario.registry().iter() {
        let rt = if p.runtime { "run-time" } else { "static" };
        println!(
            "  {:<36} = {:<40} [{}; {}; {rt}] {}",
            p.path,
            p.value.to_string(),
            p.ty.describe(),
            p.unit,
            p.doc
        );
    }
    if !e.scenario.timeline.is_empty() {
        println!("\ntimeline:");
        for t in &e.scenario.timeline {
            println!("  at {:<10} {} = {}", t.at.to_string(), t.path, t.value);
        }
    }
    let plan = e.plan();
    println!("\nruns ({}):", plan.len());
    for r in &plan {
        println!("  {}  seed {}", r.run_id, r.seed);
    }
}

/// Across-seed means with 95% confidence intervals of the headline figures per source.
fn print_summary(exp: &Experiment, records: &[RunRecord]) {
    let ok: Vec<&RunRecord> = records.iter().filter(|r| r.status == Status::Ok).collect();
    println!("{}: {}/{} runs ok", exp.name, ok.len(), records.len());
    if ok.is_empty() {
        return;
    }
    let measured_s = (exp.duration.0 - exp.warmup.0) as f64 / 1e9;
    for s in &exp.scenario.sources {
        println!("source {} (mean over {} seeds, ± 95% CI):", s.name, ok.len());
        for (label, col, scale) in [
            ("completed/s", "completed", 1.0 / measured_s),
            ("rejected/s", "rejected", 1.0 / measured_s),
            ("latency p50 ms", "latency_ms_p50", 1.0),
            ("latency p99 ms", "latency_ms_p99", 1.0),
            ("queue wait ms", "wait_ms_mean", 1.0),
        ] {
            let xs: Vec<f64> = ok
                .iter()
                .filter_map(|r| r.summary.get(&format!("source.{}.{col}", s.name)))
                .map(|x| x * scale)
                .collect();
            match Replications::of(&xs) {
                Some(r) => match r.ci_half_width(0.95) {
                    Some(h) => println!("  {label:<16} {:>12.3} ± {h:.3}", r.mean),
                    None => println!("  {label:<16} {:>12.3}", r.mean),
                },
                None => println!("  {label:<16} {:>12}", "n/a"),
            }
        }
    }
}
