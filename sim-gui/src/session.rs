//! A live, exact session over the resumable run loop: the workbench's only door into the
//! simulator.
//!
//! This is a thin adapter over [`sim_core::Simulation`] and [`models::run`], shaped like
//! the live session API of the architecture issue (open, step, run until, apply a
//! validated change at the next instant boundary, values in force, export, rewind), so
//! that moving to that API is a local change here and nowhere else.
//!
//! Architecture invariants:
//! * Observing never changes the run: readers take `&self` (series, metrics, model events).
//! * Every applied change is recorded with its instant `at` and goes through the engine's
//!   change queue stamped `at`, exactly as a timeline entry `at` would: it takes effect
//!   after every event at `at` and before any later one. So the exported experiment (the
//!   scenario with the recorded changes appended to its timeline) replays to the same
//!   fingerprint, and a rewind (rebuild, re-schedule the recorded changes, run to `t`)
//!   re-creates the state at `t` exactly.
//! * Changes are validated before they are queued (registry path, run-time flag, type and
//!   range, the scenario's timeline rules): a bad change is an error, never a panic.

use experiments::Experiment;
use models::params::{ParamSpec, ParamValue, Registry};
use models::scenario::{Scenario, SetParam};
use models::world::QueueingWorld;
use models::{RunConfig, RunOutput};
use sim_core::{SimDuration, SimError, SimTime, Simulation, Stop};
use std::sync::Arc;

/// What to run: an experiment, one of its variant × sweep-point combinations, a seed, and
/// the non-run-time parameters set in the workbench (they apply from the start).
#[derive(Clone, Debug)]
pub struct Selection {
    pub exp: Arc<Experiment>,
    /// Index of a planned run whose variant and sweep point are used (its seed is not).
    pub combo: usize,
    pub seed: u64,
    /// Parameters set before the start (non-run-time ones, changed in the knobs).
    pub overrides: Vec<(String, ParamValue)>,
}

impl Selection {
    /// The experiment's first combination and first seed.
    pub fn first(exp: Arc<Experiment>) -> Self {
        let seed = exp.runs.first().map(|r| r.seed).unwrap_or(0);
        Selection { exp, combo: 0, seed, overrides: Vec::new() }
    }

    /// The distinct variant × sweep-point combinations: (index of its first planned run,
    /// label such as `gate-32 · point 0 (gate.llm.permits=32)`).
    pub fn combos(exp: &Experiment) -> Vec<(usize, String)> {
        let mut out: Vec<(usize, String)> = Vec::new();
        let mut seen: Vec<(String, usize)> = Vec::new();
        for (i, r) in exp.runs.iter().enumerate() {
            let key = (r.variant.clone(), r.point);
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let params: Vec<String> =
                exp.swept.iter().zip(&r.params).map(|(p, v)| format!("{p}={v}")).collect();
            let label = if params.is_empty() {
                format!("{} · point {}", r.variant, r.point)
            } else {
                format!("{} · point {} ({})", r.variant, r.point, params.join(", "))
            };
            out.push((i, label));
        }
        out
    }

    /// The scenario this selection runs: the combination's, with the overrides set.
    pub fn scenario(&self) -> Result<Scenario, String> {
        let run = self
            .exp
            .runs
            .get(self.combo)
            .ok_or_else(|| format!("no planned run #{} in {}", self.combo, self.exp.name))?;
        let mut sc = (*run.scenario).clone();
        for (path, v) in &self.overrides {
            sc.set_param(path, v.clone())?;
        }
        Ok(sc)
    }

    pub fn run_config(&self) -> RunConfig {
        self.exp.run_config(self.seed)
    }
}

/// A change the session applied, with its instant.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedChange {
    pub at: SimTime,
    pub path: String,
    pub value: ParamValue,
}

/// A running (or finished) session.
pub struct Session {
    sel: Selection,
    scenario: Arc<Scenario>,
    registry: Registry,
    cfg: RunConfig,
    end: SimTime,
    /// `None` once finished (the run's output is then in `output`).
    sim: Option<Simulation<QueueingWorld>>,
    output: Option<RunOutput>,
    /// Every change applied, in the order applied (so in time order).
    changes: Vec<RecordedChange>,
}

impl Session {
    /// Opens a session at time zero.
    pub fn open(sel: Selection) -> Result<Session, String> {
        Self::replay(sel, Vec::new(), SimTime::ZERO)
    }

    /// Builds the session, schedules `changes` (each at its instant) and runs to `to`.
    fn replay(
        sel: Selection,
        changes: Vec<RecordedChange>,
        to: SimTime,
    ) -> Result<Session, String> {
        let scenario = Arc::new(sel.scenario()?);
        let cfg = sel.run_config();
        let mut sim = models::run::simulation(&scenario, &cfg);
        for c in &changes {
            sim.schedule_change(
                c.at,
                SetParam::new(c.at - SimTime::ZERO, &c.path, c.value.clone()),
            )
            .map_err(|e| e.to_string())?;
        }
        let registry = scenario.registry();
        let mut s = Session {
            end: SimTime::ZERO + cfg.duration,
            sel,
            scenario,
            registry,
            cfg,
            sim: Some(sim),
            output: None,
            changes,
        };
        if to > SimTime::ZERO {
            s.run_until(to)?;
        }
        Ok(s)
    }

    pub fn selection(&self) -> &Selection {
        &self.sel
    }
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
    pub fn end(&self) -> SimTime {
        self.end
    }
    pub fn seed(&self) -> u64 {
        self.cfg.seed
    }
    pub fn sample_every(&self) -> Option<SimDuration> {
        self.cfg.sample_every
    }
    /// The simulated clock.
    pub fn now(&self) -> SimTime {
        match (&self.sim, &self.output) {
            (Some(s), _) => s.now(),
            (None, _) => self.end,
        }
    }
    pub fn events_processed(&self) -> u64 {
        match (&self.sim, &self.output) {
            (Some(s), _) => s.events_processed(),
            (None, Some(o)) => o.events,
            (None, None) => 0,
        }
    }
    /// The simulation while it runs (`None` once finished).
    pub fn sim(&self) -> Option<&Simulation<QueueingWorld>> {
        self.sim.as_ref()
    }
    /// The run's output once it reached its end.
    pub fn output(&self) -> Option<&RunOutput> {
        self.output.as_ref()
    }
    pub fn is_finished(&self) -> bool {
        self.output.is_some()
    }
    /// The changes applied so far (and those recorded beyond a rewind point), in order.
    pub fn changes(&self) -> &[RecordedChange] {
        &self.changes
    }

    fn sim_mut(&mut self) -> Result<&mut Simulation<QueueingWorld>, String> {
        self.sim.as_mut().ok_or_else(|| "the run has ended: reset or rewind to go on".to_string())
    }

    /// Finishes the run when its clock reached the end.
    fn settle(&mut self, r: Result<Stop, SimError>) -> Result<Stop, String> {
        let failed = r.as_ref().err().cloned();
        let at_end = self.sim.as_ref().is_some_and(|s| s.now() >= self.end);
        if at_end || failed.is_some() {
            let sim = self.sim.take().expect("running");
            self.output = Some(models::run::finish(sim, self.end, failed.clone()));
        }
        match failed {
            Some(e) => Err(e.to_string()),
            None => r.map_err(|e| e.to_string()),
        }
    }

    /// Runs every event, change and bucket boundary at or before `t` (capped at the end).
    pub fn run_until(&mut self, t: SimTime) -> Result<Stop, String> {
        if self.is_finished() {
            return Ok(Stop::Idle);
        }
        let t = t.min(self.end);
        let r = self.sim_mut()?.run_until(t);
        self.settle(r)
    }

    /// Processes at most `n` events, never past the end.
    pub fn run_for(&mut self, n: u64) -> Result<Stop, String> {
        self.advance(self.end, n)
    }

    /// Processes the events at or before `t` (capped at the end), at most `max_events` of
    /// them; when every event up to `t` is done, runs to `t` (changes, bucket boundaries).
    pub fn advance(&mut self, t: SimTime, max_events: u64) -> Result<Stop, String> {
        if self.is_finished() {
            return Ok(Stop::Idle);
        }
        let t = t.min(self.end);
        let sim = self.sim_mut()?;
        let mut n = 0;
        let r = loop {
            match sim.next_event_time() {
                Some(e) if e <= t && n >= max_events => break Ok(Stop::EventCount),
                Some(e) if e <= t => {}
                _ => break sim.run_until(t),
            }
            if let Err(e) = sim.step() {
                break Err(e);
            }
            n += 1;
        };
        self.settle(r)
    }

    /// One event (or to the end when none is left before it).
    pub fn step(&mut self) -> Result<Stop, String> {
        self.run_for(1)
    }

    /// Every event of the next instant (the earliest pending event time).
    pub fn next_instant(&mut self) -> Result<Stop, String> {
        if self.is_finished() {
            return Ok(Stop::Idle);
        }
        let next = self.sim_mut()?.next_event_time().unwrap_or(self.end);
        self.run_until(next)
    }

    /// The parameter's value in force now (see [`in_force`]).
    pub fn value_in_force(&self, path: &str) -> Option<ParamValue> {
        in_force(&self.registry, &self.scenario, &self.changes, self.now(), path)
    }

    /// Checks a change without applying it: known path, run-time changeable, type, range
    /// and the scenario's timeline rules.
    pub fn check_change(&self, path: &str, value: &ParamValue) -> Result<&ParamSpec, String> {
        let spec = self.registry.get(path).ok_or_else(|| self.registry.unknown(path))?;
        if !spec.runtime {
            return Err(format!("`{path}` cannot change during a run: it applies on reset"));
        }
        spec.ty.check(value).map_err(|e| format!("{path}: {e}"))?;
        let mut sc = (*self.scenario).clone();
        sc.timeline = vec![SetParam::new(SimDuration::ZERO, path, value.clone())];
        sc.check_timeline().map_err(|e| format!("{path}: {}", e.message))?;
        Ok(spec)
    }

    /// Applies a run-time change at the current instant (it takes effect after every
    /// event at this instant). Changes recorded later than now (after a rewind) are
    /// dropped: the session branches here.
    pub fn apply(&mut self, path: &str, value: ParamValue) -> Result<SimTime, String> {
        self.check_change(path, &value)?;
        let now = self.now();
        if self.sim.is_none() {
            return Err("the run has ended: reset or rewind to go on".into());
        }
        if self.changes.iter().any(|c| c.at > now) {
            let kept: Vec<RecordedChange> =
                self.changes.iter().filter(|c| c.at <= now).cloned().collect();
            *self = Self::replay(self.sel.clone(), kept, now)?;
        }
        let at_d = now - SimTime::ZERO;
        self.sim_mut()?
            .schedule_change(now, SetParam::new(at_d, path, value.clone()))
            .map_err(|e| e.to_string())?;
        self.changes.push(RecordedChange { at: now, path: path.to_string(), value });
        Ok(now)
    }

    /// Re-simulates from the start to `t` with every recorded change (those after `t` stay
    /// scheduled: running on replays them, a new change branches).
    pub fn rewind(&mut self, t: SimTime) -> Result<(), String> {
        *self = Self::replay(self.sel.clone(), self.changes.clone(), t.min(self.end))?;
        Ok(())
    }

    /// A fresh session of the same selection with another seed (the recorded changes are
    /// dropped) — "reset with a new seed"; `seed = self.seed()` resets with the same seed.
    pub fn reset(&self, sel: Selection) -> Result<Session, String> {
        Session::open(sel)
    }

    /// The scenario this session ran, with its recorded changes appended to the timeline
    /// (stable by instant: at one instant, the scenario's entries first, then the session's
    /// in the order applied — the order the engine applied them).
    pub fn scenario_with_changes(&self) -> Scenario {
        let mut sc = (*self.scenario).clone();
        for c in &self.changes {
            sc.timeline.push(SetParam::new(c.at - SimTime::ZERO, &c.path, c.value.clone()));
        }
        sc.timeline.sort_by_key(|s| s.at);
        sc
    }

    /// The run's fingerprint once finished.
    pub fn fingerprint(&self) -> Option<String> {
        self.output.as_ref().map(|o| o.fingerprint.hex())
    }
}

/// A parameter's value in force at `now`: the scenario's, then the latest of its timeline
/// entries and recorded changes stamped at or before `now` (a change stamped `now` takes
/// effect at the end of this instant; it is shown as in force).
pub fn in_force(
    registry: &Registry,
    scenario: &Scenario,
    changes: &[RecordedChange],
    now: SimTime,
    path: &str,
) -> Option<ParamValue> {
    let base = registry.get(path)?.value.clone();
    let timeline = scenario.timeline.iter().map(|s| (SimTime::ZERO + s.at, &s.path, &s.value));
    let mut all: Vec<(SimTime, &ParamValue)> = timeline
        .chain(changes.iter().map(|c| (c.at, &c.path, &c.value)))
        .filter(|(at, p, _)| *at <= now && p.as_str() == path)
        .map(|(at, _, v)| (at, v))
        .collect();
    // Stable: at one instant, the scenario's entries before the session's.
    all.sort_by_key(|x| x.0);
    Some(all.last().map(|x| x.1.clone()).unwrap_or(base))
}
