//! `stormglass search FILE [--compare-grid]`: the command.

use super::drive::{DriveError, Options, drive};
use super::report;
use crate::experiment::Experiment;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(clap::Args, Clone, Debug)]
pub struct SearchArgs {
    /// Experiment file (RON) with a `search` block, or the name of a bundled one.
    pub file: String,
    /// Results root: the race's runs land in OUT/<experiment name>/search/.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Runs in parallel (each run is single-threaded). Default: number of cores.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Reuse the runs that ended ok; runs missing, failed or cut short by a signal
    /// (`interrupted`) run again.
    #[arg(long, conflicts_with = "overwrite")]
    pub resume: bool,
    /// Delete existing results of the search and run again.
    #[arg(long)]
    pub overwrite: bool,
    /// Also run the full grid (every candidate on every seed) into OUT/<name>/search-grid/
    /// and compare its best, runs and wall time with the race's.
    #[arg(long)]
    pub compare_grid: bool,
    /// A line per run on stderr.
    #[arg(long)]
    pub log: bool,
}

static STOP: AtomicBool = AtomicBool::new(false);

/// Runs the search of a loaded experiment.
pub fn run(exp: &Experiment, args: &SearchArgs) -> ExitCode {
    let Some(search) = &exp.search else {
        eprintln!(
            "{}: no `search` block (see docs/experiments.md, \"Search\"): `stormglass run` runs its sweep",
            exp.file.display()
        );
        return ExitCode::from(2);
    };
    if args.jobs == Some(0) {
        eprintln!("--jobs: expected at least 1 run in parallel, found 0");
        return ExitCode::from(2);
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted again: ending the runs in progress (each an error row)");
            crate::runner::ABORT.store(true, Ordering::SeqCst);
        } else {
            eprintln!("\ninterrupt: finishing the runs in progress, starting no new ones");
        }
    });
    let opts = Options { jobs, resume: args.resume, overwrite: args.overwrite, log: args.log };
    let base = args.out.join(&exp.name);
    let mut code = ExitCode::SUCCESS;
    let mut runs = Vec::new();
    for (grid, folder, title) in [(false, "search", "race"), (true, "search-grid", "full grid")] {
        if grid && !args.compare_grid {
            continue;
        }
        let root = base.join(folder);
        match drive(search, &root, grid, &opts, &STOP) {
            Err(DriveError::Refused(m)) => {
                eprintln!("{m}");
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
            Ok(o) if o.interrupted => {
                eprintln!(
                    "interrupted: {} runs saved in {}; rerun with --resume",
                    o.ran,
                    root.display()
                );
                return ExitCode::from(130);
            }
            Ok(o) => {
                print!("{}", report::text(search, &o, title));
                println!("results: {}", root.display());
                if o.fates.iter().any(|f| matches!(f, super::race::Fate::Failed { .. })) {
                    code = ExitCode::FAILURE;
                }
                runs.push((report::best(search, &o), o.ran + o.reused, o.wall_seconds));
            }
        }
    }
    if let [(best_r, n_r, w_r), (best_g, n_g, w_g)] = runs[..] {
        let same = match (best_r, best_g) {
            (Some(a), Some(b)) if a == b => "the same best".to_string(),
            (a, b) => format!(
                "different bests (race: {}, grid: {})",
                a.map_or("none".into(), |c| report::label(search, c)),
                b.map_or("none".into(), |c| report::label(search, c))
            ),
        };
        println!(
            "race vs full grid: {n_r} vs {n_g} runs ({:.0}%), {w_r:.2} s vs {w_g:.2} s wall ({:.0}%), {same}",
            100.0 * n_r as f64 / n_g as f64,
            100.0 * w_r / w_g
        );
    }
    code
}
