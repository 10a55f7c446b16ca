//! A live session: one run of a scenario (one seed) that an embedding program — the desktop
//! workbench, a notebook, a test — drives step by step while it watches and changes it.
//!
//! ```text
//! open ─► step / run_until / run_for ─► read metrics, events, component states, snapshot
//!            ▲                                  │
//!            └──── apply(path, value) ◄─────────┘   (validated, then queued at `now`)
//! finish ─► RunOutput (same fingerprint as a headless run of `replay_scenario()`)
//! ```
//!
//! Architecture invariants:
//! * Observing never changes the run: every read goes through `&` references (metrics by
//!   path, [`QueueingWorld::model_events`], [`crate::observe`]), so a session read after
//!   every event has the fingerprint of one that was never read.
//! * Stepping equals one go: the session never runs past its end; `step`, `run_until` and
//!   `run_for` can be interleaved in any way and [`Session::finish`] gives the fingerprint
//!   of [`crate::run`] (the engine's resumable loop).
//! * A change is validated before it is queued ([`Session::check`]): a bad path, type or
//!   range, or a value that would make the scenario inconsistent, is an error naming the
//!   path and what was expected — never a panic inside the world. An accepted change is
//!   stamped `now` and takes effect at the next instant boundary: after every event at
//!   `now`, before any later event — exactly where a timeline entry `at: now` appended to
//!   the scenario's timeline takes effect. So [`Session::replay_scenario`] (the scenario
//!   with every applied change appended to its timeline, in order) run headless gives the
//!   session's fingerprint, and rewinding is re-simulating from t = 0 with the changes
//!   applied before the target instant.
//!
//! API boundary: no files and no UI types; `experiments::session` opens experiment files
//! (variant, sweep point, seed) and exports a session as an experiment file.

use crate::observe::{ComponentState, Snapshot};
use crate::params::{ParamValue, Registry};
use crate::run::{RunConfig, RunOutput, finish, simulation};
use crate::scenario::{Scenario, SetParam, SpecError};
use crate::world::{ModelEvent, QueueingWorld};
use sim_core::metrics::{MetricKind, MetricReading, SeriesRow};
use sim_core::{SimDuration, SimError, SimTime, Simulation};
use std::sync::Arc;

/// A change refused by [`Session::check`]: the parameter path and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ChangeError {
    /// The parameter path as given (`gate.llm.permits`).
    pub path: String,
    /// What was expected and found (`expected an integer in [1, 1000000], found 0`).
    pub message: String,
}

/// One run of a scenario, driven from outside.
pub struct Session {
    scenario: Arc<Scenario>,
    cfg: RunConfig,
    registry: Registry,
    sim: Simulation<QueueingWorld>,
    end: SimTime,
    /// Every change applied through the session, stamped with its instant, in order.
    applied: Vec<SetParam<ParamValue>>,
    events_drained: usize,
    series_drained: usize,
}

impl Session {
    /// Opens a session on a checked scenario (its timeline scheduled) at t = 0.
    pub fn new(scenario: impl Into<Arc<Scenario>>, cfg: RunConfig) -> Session {
        let scenario = scenario.into();
        let registry = scenario.registry();
        let sim = simulation(&scenario, &cfg);
        let end = SimTime::ZERO + cfg.duration;
        Session {
            scenario,
            cfg,
            registry,
            sim,
            end,
            applied: Vec::new(),
            events_drained: 0,
            series_drained: 0,
        }
    }

    /// Opens a session at t = 0 with `changes` (each stamped with its instant `at`, in the
    /// order they were applied) already queued: the session a rewind re-simulates, and
    /// the one an embedding program keeps after [`Session::finish`] to rewind or export.
    /// Every change must have been accepted by [`Session::check`] on this scenario.
    pub fn replaying(
        scenario: impl Into<Arc<Scenario>>,
        cfg: RunConfig,
        changes: Vec<SetParam<ParamValue>>,
    ) -> Session {
        let mut s = Session::new(scenario, cfg);
        for c in changes {
            s.sim.schedule_change(SimTime::ZERO + c.at, c.clone()).expect("at or after 0");
            s.applied.push(c);
        }
        s
    }

    /// The scenario as opened (without the session's changes).
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }
    pub fn config(&self) -> &RunConfig {
        &self.cfg
    }
    /// The parameter registry of the scenario (paths, types, ranges, docs: the GUI's knobs).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
    pub fn now(&self) -> SimTime {
        self.sim.now()
    }
    /// The end of the run (`duration`): the session never runs past it.
    pub fn end(&self) -> SimTime {
        self.end
    }
    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.sim.events_processed()
    }
    /// The run's fingerprint so far (events only; [`Session::finish`] folds in the summary).
    pub fn fingerprint_so_far(&self) -> sim_core::Fingerprint {
        self.sim.fingerprint()
    }
    /// The world, read-only (for anything [`crate::observe`] does not cover).
    pub fn world(&self) -> &QueueingWorld {
        self.sim.world()
    }
    /// The engine error that stopped the run, if any (event budget, zero-time loop).
    pub fn error(&self) -> Option<&SimError> {
        self.sim.error()
    }
    /// Nothing is left to do before the end (the clock may still be short of it).
    pub fn is_done(&self) -> bool {
        self.sim.error().is_some() || self.sim.next_event_time().is_none_or(|t| t > self.end)
    }

    /// When the next event is due (`None`: none is left before the end).
    pub fn next_event_time(&self) -> Option<SimTime> {
        self.sim.next_event_time().filter(|t| *t <= self.end)
    }

    /// Processes the next event at or before the end. `Ok(false)`: none is left (the clock
    /// is then moved to the end, applying any change stamped before it).
    pub fn step(&mut self) -> Result<bool, SimError> {
        // Not `next_event_time() ≤ end` then `step()`: a change due first may cancel that
        // event and the one processed would lie past the end (I7, `Simulation::step_until`).
        if self.sim.step_until(self.end)? {
            return Ok(true);
        }
        self.sim.run_until(self.end)?;
        Ok(false)
    }

    /// Processes the next event if it is due at or before `t` (capped at the end), after
    /// the changes due before it. `Ok(false)`: none is (a change may have cancelled the
    /// event that was next; ask [`Session::next_event_time`] again).
    pub fn step_until(&mut self, t: SimTime) -> Result<bool, SimError> {
        self.sim.step_until(t.min(self.end))
    }

    /// Processes everything at or before `t` (capped at the end) and sets the clock to it.
    pub fn run_until(&mut self, t: SimTime) -> Result<(), SimError> {
        self.sim.run_until(t.min(self.end)).map(|_| ())
    }

    /// Processes at most `n` events; returns how many were processed.
    pub fn run_for(&mut self, n: u64) -> Result<u64, SimError> {
        let mut done = 0;
        while done < n && self.step()? {
            done += 1;
        }
        Ok(done)
    }

    /// Runs to the end.
    pub fn run_to_end(&mut self) -> Result<(), SimError> {
        self.run_until(self.end)
    }

    /// Runs to the end and summarises: the same [`RunOutput`] (fingerprint included) as
    /// [`crate::run`] of [`Session::replay_scenario`].
    pub fn finish(mut self) -> RunOutput {
        let error = self.run_to_end().err();
        finish(self.sim, self.end, error)
    }

    // ---- metrics ------------------------------------------------------------------

    /// Every metric path (counters, gauges, histograms) with its kind, sorted.
    pub fn metric_paths(&self) -> impl Iterator<Item = (&str, MetricKind)> {
        self.sim.metrics().list()
    }
    /// A metric's value now, by path (`station.llm.queue_depth`).
    pub fn read(&self, path: &str) -> Option<MetricReading> {
        self.sim.metrics().read(path)
    }
    /// The names of the time series (metric path plus statistic: `.mean`/`.max` for a
    /// gauge, `.count`/`.p50_ms`/`.p95_ms`/`.p99_ms` for a histogram, a counter's own path);
    /// empty when the run samples no time series.
    pub fn series_names(&self) -> Vec<String> {
        if self.cfg.sample_every.is_none() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (p, kind) in self.metric_paths() {
            let suffixes: &[&str] = match kind {
                MetricKind::Counter => &[""],
                MetricKind::Gauge => &[".mean", ".max"],
                MetricKind::Histogram => &[".count", ".p50_ms", ".p95_ms", ".p99_ms"],
            };
            out.extend(suffixes.iter().map(|s| format!("{p}{s}")));
        }
        out
    }
    /// Time-series rows of the buckets closed so far.
    pub fn series(&self) -> &[SeriesRow] {
        self.sim.series()
    }
    /// One time series so far: `(bucket start, value)` per closed bucket.
    pub fn series_of(&self, name: &str) -> Vec<(SimTime, f64)> {
        let rows = self.sim.series().iter().filter(|r| r.metric == name);
        rows.map(|r| (SimTime(r.bucket_start_ns), r.value)).collect()
    }
    /// Time-series rows closed since the last call.
    pub fn drain_series(&mut self) -> &[SeriesRow] {
        let rows = &self.sim.series()[self.series_drained..];
        self.series_drained += rows.len();
        rows
    }

    // ---- model events and component state -----------------------------------------

    /// Model events (state changes, configuration changes, shadow verdicts) since the last
    /// call, in the order they happened.
    pub fn drain_events(&mut self) -> &[ModelEvent] {
        let evs = &self.sim.world().model_events()[self.events_drained..];
        self.events_drained += evs.len();
        evs
    }
    /// Every model event so far.
    pub fn model_events(&self) -> &[ModelEvent] {
        self.sim.world().model_events()
    }
    /// One component's state by path (`circuit_breaker.llm`, `station.provider`,
    /// `app.api.0`); `None`: no such component.
    pub fn component(&self, path: &str) -> Option<ComponentState> {
        self.sim.world().component_state(path, self.now())
    }
    /// Every component's state.
    pub fn components(&self) -> Vec<ComponentState> {
        self.sim.world().component_states(self.now())
    }
    /// What a GUI draws per frame: per-class queue depth, in-flight against limits, breaker
    /// states, throughput counters.
    pub fn snapshot(&self) -> Snapshot {
        self.sim.world().snapshot(self.now(), self.events())
    }

    // ---- changes --------------------------------------------------------------------

    /// The value in force of a parameter (the scenario's until a change replaced it).
    pub fn value(&self, path: &str) -> Option<&ParamValue> {
        self.sim.world().param_in_force(path)
    }

    /// Checks a change without applying it: the registry's rules (known path, changeable
    /// during a run, type and range, reload only for reloadable kinds), then the scenario's
    /// consistency rules with the value set on top of the values in force (a GPU server's
    /// batched tokens ≥ its sequences, a pool's core size ≤ its maximum…).
    pub fn check(&self, path: &str, value: &ParamValue, reload: bool) -> Result<(), ChangeError> {
        let refused = |e: SpecError| {
            let message = match e.path.as_str() {
                "path" | "value" => e.message,
                field => format!("{field}: {}", e.message),
            };
            ChangeError { path: path.to_string(), message }
        };
        let change =
            SetParam { at: SimDuration::ZERO, path: path.into(), value: value.clone(), reload };
        self.scenario.check_change(&self.registry, &change).map_err(refused)?;
        let mut in_force = Scenario::clone(&self.scenario);
        for (p, v) in self.sim.world().params_in_force() {
            if self.registry.get(p).is_some_and(|s| &s.value != v) {
                in_force
                    .set_param(p, v.clone())
                    .map_err(|m| ChangeError { path: p.to_string(), message: m })?;
            }
        }
        in_force
            .set_param(path, value.clone())
            .map_err(|message| ChangeError { path: path.to_string(), message })?;
        in_force.check().map_err(|e| ChangeError {
            path: path.to_string(),
            message: format!("the scenario would be inconsistent: {e}"),
        })
    }

    /// Validates a change and queues it at `now` (it takes effect after every event at
    /// `now`). Returns the instant it is stamped with.
    pub fn apply(&mut self, path: &str, value: ParamValue) -> Result<SimTime, ChangeError> {
        self.apply_change(path, value, false)
    }

    /// Like [`Session::apply`], emulating a Sentinel rule reload (`SetParam::reload`).
    pub fn apply_reload(&mut self, path: &str, value: ParamValue) -> Result<SimTime, ChangeError> {
        self.apply_change(path, value, true)
    }

    fn apply_change(
        &mut self,
        path: &str,
        value: ParamValue,
        reload: bool,
    ) -> Result<SimTime, ChangeError> {
        self.check(path, &value, reload)?;
        let now = self.now();
        let change = SetParam { at: now - SimTime::ZERO, path: path.into(), value, reload };
        self.sim.schedule_change(now, change.clone()).expect("stamped now, never in the past");
        self.applied.push(change);
        Ok(now)
    }

    /// Every change applied through the session, with its instant (`at`), in order.
    pub fn applied(&self) -> &[SetParam<ParamValue>] {
        &self.applied
    }

    /// The scenario with every applied change appended to its timeline, in order: run
    /// headless with the session's [`RunConfig`], it reproduces the session's fingerprint.
    pub fn replay_scenario(&self) -> Scenario {
        let mut sc = Scenario::clone(&self.scenario);
        sc.timeline.extend(self.applied.iter().cloned());
        sc
    }

    /// Re-simulates from t = 0 to `t` (capped at now) with the changes applied before `t`
    /// (stamped at or before it); later changes are forgotten. The state at `t` is the
    /// state the session had there.
    pub fn rewind(&mut self, t: SimTime) -> Result<(), SimError> {
        let t = t.min(self.now());
        let kept: Vec<_> =
            self.applied.iter().filter(|c| SimTime::ZERO + c.at <= t).cloned().collect();
        let mut fresh = Session::replaying(self.scenario.clone(), self.cfg, kept);
        fresh.run_until(t)?;
        *self = fresh;
        Ok(())
    }
}
