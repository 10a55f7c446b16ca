//! `stormglass` — the headless command line.

use clap::{Parser, Subcommand};
use experiments::experiment::{Experiment, RunDefaults, Seeds, load_text};
use experiments::runner::{RunRecord, Status, run_all};
use sim_core::SimDuration;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

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
        /// Progress: `bar` (a progress bar), `log` (a line per run, for batch logs), `none`;
        /// `auto` = bar on a terminal, log otherwise.
        #[arg(long, default_value = "auto", value_parser = ["auto", "bar", "log", "none"])]
        progress: String,
        /// Run only shard I of N (0-based), for cluster job arrays; `auto/N` reads
        /// JOB_COMPLETION_INDEX (Kubernetes) or SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN.
        #[arg(long, default_value = "0/1")]
        shard: String,
        /// Run only the runs not done: missing ones, and those that ended in an error or were
        /// cut short by a signal (status `interrupted`); runs that ended ok are kept.
        #[arg(long, conflicts_with = "overwrite")]
        resume: bool,
        /// Delete existing results of this shard's runs and run them again.
        #[arg(long)]
        overwrite: bool,
    },
    /// Check files without running them.
    Validate {
        #[arg(required = true)]
        files: Vec<String>,
    },
    /// Print the resolved parameters and the run list.
    Explain {
        #[command(flatten)]
        args: RunArgs,
    },
    /// List the bundled experiments (quick start, incidents, studies) with their descriptions.
    List,
    /// An experiment's results as a Markdown table: variants (× sweep points) × the
    /// metrics that matter, means with 95% CIs over seeds.
    Report {
        /// The experiment's results folder (`results/<experiment>`).
        dir: PathBuf,
        /// Also the differences against this variant, paired by seed.
        #[arg(long, conflicts_with = "against_results")]
        against: Option<String>,
        /// Also the differences against the same variants in another results folder,
        /// paired by seed.
        #[arg(long)]
        against_results: Option<PathBuf>,
    },
    /// Search the `search` block's space for the best settings under its constraints
    /// (racing on common random numbers); prints the best with CIs and the Pareto front.
    Search(experiments::search::cli::SearchArgs),
    /// Fit a scenario to a call log (CSV): arrivals, sizes, latency vs tokens and load,
    /// error and 429 rates; writes it and reports the goodness of fit.
    Calibrate(experiments::calibrate::cli::CalibrateArgs),
    /// Run one seed of a scenario and write its upstream calls as a call log (CSV), in the
    /// format `calibrate` reads by default.
    CallLog {
        #[command(flatten)]
        args: RunArgs,
        /// The seed (default: the first of the file's seeds).
        #[arg(long)]
        seed: Option<u64>,
        /// Where to write the log.
        #[arg(long)]
        out: PathBuf,
    },
    /// Step time of one GPU server step under the fitted model, and the fit's error.
    GpuModel(experiments::gpu_cli::GpuModelArgs),
    /// Translate a production configuration (Resilience4j Spring Boot YAML, Sentinel rule
    /// JSON, a gRPC service config) into governor lists to paste into a scenario, or name
    /// it in a scenario's `import` list (docs/import.md).
    Import(experiments::import_file::ImportArgs),
}

impl RunArgs {
    /// A file with no run-setting flags.
    fn bare(file: &str) -> RunArgs {
        RunArgs {
            file: file.to_string(),
            seeds: None,
            duration: None,
            warmup: None,
            sample_every: None,
            requests: false,
        }
    }
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

/// A file's text, invalid UTF-8 refused with its line and column.
fn read_text(path: &Path) -> Result<String, String> {
    let bytes =
        experiments::experiment::read_bounded(path, experiments::experiment::MAX_INPUT_BYTES)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    experiments::ronfile::utf8(path, bytes).map_err(|e| e.to_string())
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
        (path.to_path_buf(), read_text(path)?)
    } else if let Some(entry) = experiments::catalog::find(&args.file)? {
        match entry.source_path() {
            // In the source tree: relative references (scenario files, traces) resolve.
            Some(p) => {
                let text = read_text(&p)?;
                (p, text)
            }
            None => (entry.bundled_path(), entry.text.to_string()),
        }
    } else {
        return Err(format!(
            "{}: no such file, and no bundled scenario of that name (`stormglass list` lists the bundled experiments)",
            args.file
        ));
    };
    if experiments::experiment::is_experiment(&text) {
        let given = [
            ("--seeds", args.seeds.is_some()),
            ("--duration", args.duration.is_some()),
            ("--warmup", args.warmup.is_some()),
            ("--sample-every", args.sample_every.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|g| g.1) {
            return Err(format!(
                "{}: {flag} applies to a bare scenario file only; this is an experiment, which sets its own run settings (edit its `{}` field)",
                shown.display(),
                flag.trim_start_matches("--").replace('-', "_")
            ));
        }
    }
    load_text(&shown, &text, &defaults).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    // polars runs single-threaded inside our rayon workers (parallelism is across runs).
    // SAFETY: set before any other thread exists.
    unsafe { std::env::set_var("POLARS_MAX_THREADS", "1") };
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::GpuModel(args) => experiments::gpu_cli::run(&args),
        Cmd::Import(args) => experiments::import_file::run_cli(&args),
        Cmd::Calibrate(args) => match experiments::calibrate::cli::run(&args) {
            Ok(done) => print_quietly(&done.report),
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        Cmd::CallLog { args, seed, out } => {
            match load(&args)
                .and_then(|e| experiments::calibrate::cli::write_call_log(&e, seed, &out))
            {
                Ok(n) => {
                    println!("{}: {n} calls", out.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(2)
                }
            }
        }
        Cmd::Search(args) => match load(&RunArgs::bare(&args.file)) {
            Ok(e) => experiments::search::cli::run(&e, &args),
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        Cmd::List => {
            print!("{}", experiments::catalog::listing());
            ExitCode::SUCCESS
        }
        Cmd::Report { dir, against, against_results } => {
            use experiments::report::{Against, markdown, read};
            let text = read(&dir).and_then(|r| match (&against, &against_results) {
                (Some(v), _) => markdown(&r, Some(Against::Variant(v))),
                (None, Some(d)) => markdown(&r, Some(Against::Results(&read(d)?))),
                (None, None) => markdown(&r, None),
            });
            match text {
                Ok(t) => {
                    print!("{t}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(2)
                }
            }
        }
        Cmd::Validate { files } => {
            let mut ok = true;
            for f in files {
                match load(&RunArgs::bare(&f)) {
                    Ok(e) => {
                        println!(
                            "{f}: ok ({} runs, {} parameters)",
                            e.runs.len(),
                            e.scenario.registry().len()
                        );
                        for w in experiments::console::scenario_warnings(&e) {
                            println!("{f}: {w}");
                        }
                    }
                    Err(e) => {
                        eprintln!("{e}");
                        ok = false;
                    }
                }
            }
            if ok { ExitCode::SUCCESS } else { ExitCode::from(2) }
        }
        Cmd::Explain { args } => match load(&args) {
            Ok(e) => print_quietly(&explain(&e)),
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(2)
            }
        },
        Cmd::Run { args, out, jobs, progress, shard, resume, overwrite } => {
            let exp = match load(&args) {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            };
            let shard = match parse_shard(&shard, |k| std::env::var(k).ok()) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("--shard: {e}");
                    return ExitCode::from(2);
                }
            };
            if jobs == Some(0) {
                eprintln!("--jobs: expected at least 1 run in parallel, found 0");
                return ExitCode::from(2);
            }
            let jobs = jobs.unwrap_or_else(|| {
                std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
            });
            run(&exp, &out, jobs, &progress, shard, resume, overwrite)
        }
    }
}

/// Parses `I/N` or `auto/N`; `env` reads environment variables (injectable for tests).
fn parse_shard(s: &str, env: impl Fn(&str) -> Option<String>) -> Result<(u32, u32), String> {
    let (i, n) = s.split_once('/').ok_or_else(|| format!("expected I/N or auto/N, found `{s}`"))?;
    let n: u32 = n.parse().map_err(|_| format!("`{n}` is not a whole number of shards"))?;
    if n == 0 {
        return Err("the number of shards must be ≥ 1".into());
    }
    let i: u32 = if i == "auto" {
        if let Some(k) = env("JOB_COMPLETION_INDEX") {
            k.trim()
                .parse()
                .map_err(|_| format!("JOB_COMPLETION_INDEX=`{k}` is not a whole number"))?
        } else if let Some(id) = env("SLURM_ARRAY_TASK_ID") {
            let id: i64 = id
                .trim()
                .parse()
                .map_err(|_| format!("SLURM_ARRAY_TASK_ID=`{id}` is not a whole number"))?;
            let min: i64 = match env("SLURM_ARRAY_TASK_MIN") {
                Some(m) => m
                    .trim()
                    .parse()
                    .map_err(|_| format!("SLURM_ARRAY_TASK_MIN=`{m}` is not a whole number"))?,
                None => 0,
            };
            u32::try_from(id - min).map_err(|_| {
                format!("SLURM_ARRAY_TASK_ID {id} − SLURM_ARRAY_TASK_MIN {min} is negative")
            })?
        } else {
            return Err("auto needs JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID (Slurm --array)".into());
        }
    } else {
        i.parse().map_err(|_| format!("`{i}` is not a whole number"))?
    };
    if i >= n {
        return Err(format!(
            "shard index {i} is out of range for {n} shards (0-based: 0..{})",
            n - 1
        ));
    }
    Ok((i, n))
}

static STOP: AtomicBool = AtomicBool::new(false);

/// After the first SIGINT/SIGTERM, runs still going after this long are ended (recorded as
/// error rows) so the batch exits, e.g. before a cluster's SIGKILL; a second signal ends
/// them at once. `STORMGLASS_GRACE_SECONDS` overrides it.
const GRACE_AFTER_SIGNAL: std::time::Duration = std::time::Duration::from_secs(20);

fn grace_after_signal() -> std::time::Duration {
    std::env::var("STORMGLASS_GRACE_SECONDS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(GRACE_AFTER_SIGNAL, std::time::Duration::from_secs)
}

fn run(
    exp: &Experiment,
    out: &Path,
    jobs: usize,
    progress: &str,
    (shard, shards): (u32, u32),
    resume: bool,
    overwrite: bool,
) -> ExitCode {
    use experiments::results;
    let root = out.join(&exp.name);
    // Before anything in the folder is touched: a second process on this shard would
    // delete the parts the first is writing.
    let _lock = match experiments::shard_lock::ShardLock::take(&root, shard) {
        Ok(l) => l,
        Err(experiments::shard_lock::LockError::Busy(m)) => {
            eprintln!("{m}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("{}: cannot lock shard {shard}: {e}", root.display());
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = results::remove_temporaries(&root) {
        eprintln!("{}: {e}", root.display());
        return ExitCode::FAILURE;
    }
    let experiments::batch::Prepared { mine, todo } =
        match experiments::batch::prepare(&root, exp, (shard, shards), resume, overwrite) {
            Ok(p) => p,
            Err(experiments::batch::PrepareError::Refused(m)) => {
                eprintln!("{m}");
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("{}: {e}", root.display());
                return ExitCode::FAILURE;
            }
        };
    if let Err(e) = experiments::provenance::write(&root, exp, shards) {
        eprintln!("{}: cannot write the manifest: {e}", root.display());
        return ExitCode::FAILURE;
    }
    let staging = match experiments::staging::Staging::create(&root) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: cannot create a staging folder: {e}", root.display());
            return ExitCode::FAILURE;
        }
    };
    let _ = ctrlc::set_handler(|| {
        use experiments::runner::ABORT;
        if ABORT.load(Ordering::SeqCst) {
            eprintln!("\ninterrupted again: exiting now (finished runs are saved)");
            std::process::exit(130);
        }
        if STOP.swap(true, Ordering::SeqCst) {
            eprintln!(
                "\ninterrupted twice: ending the runs in progress now (each is recorded as an error row)"
            );
            ABORT.store(true, Ordering::SeqCst);
            return;
        }
        let grace = grace_after_signal();
        eprintln!(
            "\ninterrupt: finishing the runs in progress, starting no new ones; runs still going in {}s are ended (Ctrl-C again to end them now)",
            grace.as_secs()
        );
        std::thread::spawn(move || {
            std::thread::sleep(grace);
            ABORT.store(true, Ordering::SeqCst);
        });
    });
    let mode = match progress {
        "auto" if std::io::stderr().is_terminal() => "bar",
        "auto" => "log",
        m => m,
    };
    eprintln!(
        "{}: {} runs planned; shard {shard}/{shards} has {}, {} to run ({} done before); {jobs} jobs",
        exp.name,
        exp.runs.len(),
        mine.len(),
        todo.len(),
        mine.len() - todo.len()
    );
    for w in experiments::console::scenario_warnings(exp) {
        eprintln!("{w}");
    }
    let bar = (mode == "bar").then(|| {
        let b = indicatif::ProgressBar::new(todo.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} runs  {elapsed} elapsed, ~{eta} left  {msg}",
            )
            .expect("static template"),
        );
        b
    });
    let mut finished = 0usize;
    let mut errors = Vec::<String>::new();
    let total = todo.len();
    let mut report = |r: &RunRecord| {
        if let Err(e) = results::write_run(&root, &staging, exp, shard, r) {
            errors.push(format!("run {}: {e}", r.run_id));
        }
        finished += 1;
        let k = finished;
        let status = r.status.line();
        match (&bar, mode) {
            (Some(b), _) => {
                if r.status != Status::Ok {
                    b.println(format!("run {} seed {}: {status}", r.run_id, r.seed));
                }
                b.inc(1);
            }
            (None, "log") => eprintln!(
                "[{k}/{total}] run {} {} point {} seed {} {status} ({:.2}s, {} events, fingerprint {})",
                r.run_id,
                r.variant,
                r.point,
                r.seed,
                r.wall_seconds,
                r.events,
                r.fingerprint.as_deref().unwrap_or("-")
            ),
            _ => {}
        }
    };
    let records = run_all(exp, &todo, jobs, &STOP, &mut report);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("writing results: {e}");
        }
        return ExitCode::FAILURE;
    }
    if let Err(e) = experiments::provenance::write(&root, exp, shards) {
        eprintln!("{}: cannot write the manifest: {e}", root.display());
        return ExitCode::FAILURE;
    }
    let cut = records.iter().filter(|r| matches!(r.status, Status::Interrupted(_))).count();
    if STOP.load(Ordering::SeqCst) || cut > 0 {
        eprintln!(
            "interrupted: {} of {} runs of this shard finished and saved, {cut} cut short (state `Interrupted` in manifest.ron), {} not started; rerun the same command with --resume to run every run not done",
            records.len() - cut + (mine.len() - todo.len()),
            mine.len(),
            todo.len() - records.len()
        );
        return ExitCode::from(130);
    }
    let failed = records.iter().filter(|r| r.status != Status::Ok).count();
    if !records.is_empty() {
        print!("{}", experiments::console::fingerprints_text(&records));
    }
    let all_done = results::completed_runs(&root)
        .map(|d| exp.runs.iter().all(|r| d.contains(&r.run_id)))
        .unwrap_or(false);
    if all_done {
        match results::load_planned(&root, exp).and_then(|df| results::summarize(&df)) {
            Ok(mut summary) => {
                if let Err(e) = results::write_parquet(&root, "summary.parquet", &mut summary) {
                    eprintln!("writing summary.parquet: {e}");
                    return ExitCode::FAILURE;
                }
                print!("{}", experiments::console::summary_text(exp, &summary));
            }
            Err(e) => {
                eprintln!("summarising {}: {e}", root.display());
                return ExitCode::FAILURE;
            }
        }
    } else {
        println!(
            "shard {shard}/{shards} done; the summary is written when every shard's runs are in"
        );
    }
    println!("results: {}", root.display());
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("{failed} runs ended with an error (see the `error` column of runs)");
        ExitCode::FAILURE
    }
}

/// Writes to stdout; a closed pipe (`stormglass explain … | head`) ends quietly.
fn print_quietly(text: &str) -> ExitCode {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("writing to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The resolved parameters and the run list, as text.
fn explain(e: &Experiment) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    macro_rules! out {
        ($($t:tt)*) => { let _ = writeln!(o, $($t)*); };
    }
    out!("experiment {} ({})", e.name, e.file.display());
    if !e.description.is_empty() {
        out!("  {}", e.description);
    }
    out!(
        "duration {}  warm-up {}  sampling {}",
        e.duration,
        e.warmup,
        e.sample_every.map(|d| d.to_string()).unwrap_or("off".into())
    );
    out!("\nparameters ({}):", e.scenario.registry().len());
    for p in e.scenario.registry().iter() {
        let rt = if p.runtime { "run-time" } else { "static" };
        out!(
            "  {:<36} = {:<40} [{}; {}; {rt}] {}",
            p.path,
            p.value.to_string(),
            p.ty.describe(),
            p.unit,
            p.doc
        );
    }
    out!("\n{}", experiments::console::load_text(e).trim_end());
    if !e.scenario.timeline.is_empty() {
        out!("\ntimeline:");
        for t in &e.scenario.timeline {
            let reload = if t.reload { "  (rule reload)" } else { "" };
            out!("  at {:<10} {} = {}{reload}", t.at.to_string(), t.path, t.value);
        }
    }
    if !e.swept.is_empty() || e.variants.len() > 1 {
        out!("\nvariants ({}):", e.variants.len());
        let _ = write!(o, "{}", experiments::variant::describe(&e.variants));
        out!("swept: {}", e.swept.join(", "));
    }
    out!("\nruns ({}):", e.runs.len());
    for r in &e.runs {
        let params: Vec<String> = e
            .swept
            .iter()
            .zip(&r.params)
            .filter_map(|(p, v)| Some(format!("{p}={}", v.as_ref()?)))
            .collect();
        out!(
            "  {}  {} point {} seed {}  {}",
            r.run_id,
            r.variant,
            r.point,
            r.seed,
            params.join("  ")
        );
    }
    o
}
