//! Running a scenario for one seed: build the world, schedule its timeline, run to the end,
//! summarise, fold the summary into the fingerprint, check invariants.

use crate::scenario::Scenario;
use crate::summary::{Summary, Value};
use crate::world::{ModelEvent, QueueingWorld, RequestRecord, RunSettings};
use sim_core::metrics::SeriesRow;
use sim_core::{Fingerprint, Limits, SimDuration, SimError, SimTime, Simulation};

/// How to run a scenario (the experiment's settings for one run).
#[derive(Clone, Copy, Debug)]
pub struct RunConfig {
    pub seed: u64,
    /// Simulated time to run.
    pub duration: SimDuration,
    /// Requests arriving before this are not counted in the statistics.
    pub warmup: SimDuration,
    /// Time-series bucket width; `None` records no time series.
    pub sample_every: Option<SimDuration>,
    pub limits: Limits,
    /// Keep a record of every request (`requests.parquet`); off by default (memory).
    pub record_requests: bool,
}

impl RunConfig {
    /// A run of `duration` with no warm-up, no time series, default limits, no records.
    pub fn new(seed: u64, duration: SimDuration) -> Self {
        RunConfig {
            seed,
            duration,
            warmup: SimDuration::ZERO,
            sample_every: None,
            limits: Limits::default(),
            record_requests: false,
        }
    }
}

/// Everything a run produces (model results only; wall-clock timing is the caller's).
#[derive(Debug)]
pub struct RunOutput {
    pub fingerprint: Fingerprint,
    pub summary: Summary,
    pub series: Vec<SeriesRow>,
    pub events: u64,
    pub error: Option<SimError>,
    /// Invariant violations found after the run (always empty unless there is a bug).
    pub violations: Vec<String>,
    /// Per-request records (empty unless `record_requests`).
    pub requests: Vec<RequestRecord>,
    /// State changes (run-time configuration changes…), in time order.
    pub state_events: Vec<ModelEvent>,
}

/// Builds the simulation of a checked scenario, with its timeline scheduled.
pub fn simulation(sc: &Scenario, cfg: &RunConfig) -> Simulation<QueueingWorld> {
    let settings =
        RunSettings { seed: cfg.seed, warmup: cfg.warmup, record_requests: cfg.record_requests };
    let mut sim = Simulation::new(cfg.limits, cfg.sample_every, |ctx| {
        QueueingWorld::build(sc, settings, ctx)
    });
    for change in &sc.timeline {
        sim.schedule_change(SimTime::ZERO + change.at, change.clone())
            .expect("timeline stamps are ≥ 0 at the start of a run");
    }
    sim
}

/// The summary's columns (names and types) for a scenario, without running it: a run that
/// failed before producing a summary gets these columns as nulls, so every run of an
/// experiment has the same schema.
pub fn summary_template(sc: &Scenario) -> Summary {
    let sim = simulation(sc, &RunConfig::new(0, SimDuration::ZERO));
    let mut s = sim.world().summary(SimTime::ZERO);
    if let Some(spec) = &sc.recovery {
        crate::recovery::push_columns(
            &mut s,
            &crate::recovery::verdict(spec, &[], SimDuration::ZERO),
        );
    }
    s
}

/// Runs a checked scenario to `cfg.duration`.
pub fn run(sc: &Scenario, cfg: &RunConfig) -> RunOutput {
    let mut sim = simulation(sc, cfg);
    let end = SimTime::ZERO + cfg.duration;
    let result = sim.run_until(end);
    finish(sim, end, result.err())
}

/// Summarises a simulation that ran to `end` (or stopped with `error`).
/// A simulation stepped past `end` is summarised at its own clock.
pub fn finish(sim: Simulation<QueueingWorld>, end: SimTime, error: Option<SimError>) -> RunOutput {
    let end = end.max(sim.now());
    let mut done = sim.finish(end);
    let mut summary = done.world.summary(end);
    if let Some(spec) = done.world.recovery() {
        let v = crate::recovery::verdict(spec, &done.series, end - SimTime::ZERO);
        crate::recovery::push_columns(&mut summary, &v);
    }
    let mut fingerprint = done.fingerprint;
    fold_summary(&mut fingerprint, &summary);
    RunOutput {
        fingerprint,
        violations: done.world.check_invariants(),
        summary,
        series: done.series,
        events: done.events,
        error: error.or(done.error),
        requests: done.world.take_records(),
        state_events: done.world.take_events(),
    }
}

fn fold_summary(f: &mut Fingerprint, s: &Summary) {
    for (name, v) in &s.values {
        f.fold_str(name);
        match v {
            Value::U64(x) => f.fold(*x),
            Value::F64(x) => f.fold_f64(*x),
        }
    }
}
