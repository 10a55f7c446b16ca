//! One fuzz execution: load → validate → a short run of up to two planned runs under a
//! wall-clock bound (the engine's interrupt flag, set by a watchdog) and a memory bound
//! (the engine's entity and byte limits), asserting no panic and, when a run ends, that
//! every invariant holds; when it succeeds, that no result is infinite, the fingerprint
//! replays and stepping equals one go.

use super::mutate::Rng;
use experiments::{LoadError, RunDefaults};
use models::summary::Value;
use sim_core::{Limits, SimDuration, SimTime};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Simulated time of a fuzz run (at most).
pub const RUN_SIM: SimDuration = SimDuration::from_secs(2);
/// Wall-clock bound of one run: the watchdog sets the interrupt flag after it.
pub const RUN_WALL: Duration = Duration::from_secs(3);

/// The limits of a fuzz run: small, so that a flood or a loop ends in milliseconds.
pub fn limits(interrupt: &'static AtomicBool) -> Limits {
    Limits {
        max_events: 400_000,
        max_entities: 200_000,
        max_bytes: 256 << 20,
        interrupt: Some(interrupt),
        ..Limits::default()
    }
}

/// How an input ended (when it did not crash).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Refused at load, with the message.
    Refused(String),
    /// Loaded; a run ended with an error (a guard: budget, loop, overload, interrupt).
    RunError(String),
    /// Loaded and ran cleanly.
    Ran,
}

/// A crash: a panic, a broken invariant or a run that does not replay.
#[derive(Clone, Debug)]
pub struct Crash(pub String);

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "non-string panic".into())
}

/// Runs `f` with the interrupt flag raised after [`RUN_WALL`].
fn with_watchdog<T>(flag: &'static AtomicBool, f: impl FnOnce() -> T) -> T {
    flag.store(false, Ordering::SeqCst);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let dog = std::thread::spawn(move || {
        if rx.recv_timeout(RUN_WALL).is_err() {
            flag.store(true, Ordering::SeqCst);
        }
    });
    let out = f();
    let _ = tx.send(());
    let _ = dog.join();
    out
}

/// Loads `bytes` as the file `path` (invalid UTF-8 goes through the file reader).
fn load(path: &Path, bytes: &[u8]) -> Result<experiments::Experiment, LoadError> {
    let defaults = RunDefaults { duration: RUN_SIM, ..RunDefaults::default() };
    match std::str::from_utf8(bytes) {
        Ok(text) => experiments::experiment::load_text(path, text, &defaults),
        Err(_) => {
            let tmp =
                std::env::temp_dir().join(format!("stormglass-fuzz-{}.ron", std::process::id()));
            std::fs::write(&tmp, bytes).expect("temp file");
            let r = experiments::load(&tmp, &defaults);
            let _ = std::fs::remove_file(&tmp);
            r
        }
    }
}

/// One execution. `rng` decides which runs and which extra checks (replay, stepping).
pub fn execute(
    path: &Path,
    bytes: &[u8],
    rng: &mut Rng,
    flag: &'static AtomicBool,
) -> Result<Outcome, Crash> {
    let exp = match catch_unwind(AssertUnwindSafe(|| load(path, bytes))) {
        Err(p) => return Err(Crash(format!("load panicked: {}", panic_text(p)))),
        Ok(Err(e)) => {
            let msg = e.to_string();
            if let LoadError::Input(i) = &e
                && (i.line == 0 || i.col == 0 || i.message.is_empty())
            {
                return Err(Crash(format!("error without a position or message: {msg}")));
            }
            return Ok(Outcome::Refused(msg));
        }
        Ok(Ok(exp)) => exp,
    };
    if exp.runs.is_empty() {
        return Err(Crash("an experiment that loads plans no run".into()));
    }
    let mut picks = vec![0];
    if exp.runs.len() > 1 {
        picks.push(1 + rng.below(exp.runs.len() - 1));
    }
    let mut outcome = Outcome::Ran;
    for k in picks {
        let run = &exp.runs[k];
        let mut cfg = exp.run_config(run.seed);
        cfg.duration = cfg.duration.min(RUN_SIM);
        cfg.warmup = cfg.warmup.min(cfg.duration);
        cfg.sample_every = cfg.sample_every.map(|s| s.max(SimDuration(cfg.duration.0 / 64 + 1)));
        cfg.limits = limits(flag);
        cfg.record_requests = rng.chance(4);
        let sc = run.scenario.clone();
        let out = with_watchdog(flag, || catch_unwind(AssertUnwindSafe(|| models::run(&sc, &cfg))))
            .map_err(|p| {
                Crash(format!("run {k} (seed {}) panicked: {}", run.seed, panic_text(p)))
            })?;
        if !out.violations.is_empty() {
            return Err(Crash(format!(
                "run {k}: invariant violated: {}",
                out.violations.join("; ")
            )));
        }
        for (name, v) in &out.summary.values {
            if let Value::F64(x) = v
                && x.is_infinite()
            {
                return Err(Crash(format!("run {k}: `{name}` is {x}")));
            }
        }
        if let Some(e) = &out.error {
            // Interrupted runs are the watchdog's; the other guards are the model's.
            outcome = outcome.min(Outcome::RunError(e.to_string()));
            continue;
        }
        if rng.chance(3) {
            // Replay: the same run gives the same fingerprint and summary.
            let again =
                with_watchdog(flag, || catch_unwind(AssertUnwindSafe(|| models::run(&sc, &cfg))))
                    .map_err(|p| Crash(format!("replay of run {k} panicked: {}", panic_text(p))))?;
            if again.error.is_none()
                && (again.fingerprint != out.fingerprint || again.summary != out.summary)
            {
                return Err(Crash(format!(
                    "run {k} does not replay: {} vs {}",
                    out.fingerprint.hex(),
                    again.fingerprint.hex()
                )));
            }
        }
        if rng.chance(3) {
            // Stepping equals running in one go (I7 through the model): pauses at random
            // instants, single steps between them, then on to the end.
            let pauses = 1 + rng.below(8);
            let cuts: Vec<u64> = (0..pauses).map(|_| rng.next() % cfg.duration.0.max(1)).collect();
            let steps = rng.below(50);
            let stepped = with_watchdog(flag, || {
                catch_unwind(AssertUnwindSafe(|| {
                    let mut sim = models::run::simulation(&sc, &cfg);
                    let end = SimTime::ZERO + cfg.duration;
                    let mut cuts = cuts.clone();
                    cuts.sort_unstable();
                    let mut err = None;
                    'outer: for c in cuts {
                        if let Err(e) = sim.run_until(SimTime(c)) {
                            err = Some(e);
                            break;
                        }
                        for _ in 0..steps {
                            match sim.step_until(end) {
                                Ok(true) => {}
                                Ok(false) => break,
                                Err(e) => {
                                    err = Some(e);
                                    break 'outer;
                                }
                            }
                        }
                    }
                    let err = err.or_else(|| sim.run_until(end).err());
                    models::run::finish(sim, end, err)
                }))
            })
            .map_err(|p| Crash(format!("stepped run {k} panicked: {}", panic_text(p))))?;
            if stepped.error.is_none() && stepped.fingerprint != out.fingerprint {
                return Err(Crash(format!(
                    "run {k} paused {pauses} times ({steps} steps each) differs from one go: {} vs {}",
                    stepped.fingerprint.hex(),
                    out.fingerprint.hex()
                )));
            }
        }
    }
    Ok(outcome)
}
