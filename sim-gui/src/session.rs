//! What the workbench opens, and the session it drives: a thin layer over the live session
//! API ([`experiments::session::LiveSession`], which derefs to [`models::Session`]).
//!
//! * [`Selection`] — an experiment, one of its variant × sweep-point combinations, a seed
//!   (any seed, not only the file's: "reset with a new seed"), and the non-run-time
//!   parameters set in the knobs (they apply from the start).
//! * [`Run`] — the session of a selection, kept across its end: once the run reaches its
//!   end it is finished (fingerprint, final summary) and a fresh session with the same
//!   recorded changes is kept in its place, so the finished run can still be exported or
//!   rewound.
//!
//! Architecture invariants (held by `models::Session`, relied on here): observing never
//! changes the run; a change is validated, then stamped `now`, taking effect after every
//! event at `now`; the export replays headless to the same fingerprint; a rewind to `t`
//! re-simulates from t = 0 with the changes stamped at or before `t` (later ones are
//! forgotten: a new change branches there).

use crate::derived::Derived;
use experiments::Experiment;
use experiments::runner::{RunRecord, Status};
use experiments::session::{LiveSession, RunChoice};
use models::RunOutput;
use models::observe::Snapshot;
use models::params::ParamValue;
use models::scenario::{Scenario, SetParam};
use models::summary::Summary;
use models::{RunConfig, Session};
use sim_core::metrics::{MetricReading, SeriesRow};
use sim_core::{SimError, SimTime};
use std::sync::Arc;

/// Loads a bundled experiment (`stormglass list`) by name: from the source tree when
/// present (its relative references resolve), else from the text compiled in.
pub fn load_bundled(name: &str) -> Result<Experiment, String> {
    let e = experiments::catalog::find(name)?.ok_or(format!("no bundled experiment `{name}`"))?;
    load_entry(&e).map_err(|e| e.to_string())
}

/// Loads a catalogue entry (see [`load_bundled`]).
pub fn load_entry(e: &experiments::catalog::Entry) -> Result<Experiment, experiments::LoadError> {
    let defaults = experiments::RunDefaults::default();
    match e.source_path() {
        Some(p) => experiments::load(&p, &defaults),
        None => experiments::experiment::load_text(&e.bundled_path(), e.text, &defaults),
    }
}

/// What to run (see the module doc).
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
        let mut seen: Vec<(&str, usize)> = Vec::new();
        for (i, r) in exp.runs.iter().enumerate() {
            let key = (r.variant.as_str(), r.point);
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let params: Vec<String> = exp
                .swept
                .iter()
                .zip(&r.params)
                .filter_map(|(p, v)| v.as_ref().map(|v| format!("{p}={v}")))
                .collect();
            let label = if params.is_empty() {
                format!("{} · point {}", r.variant, r.point)
            } else {
                format!("{} · point {} ({})", r.variant, r.point, params.join(", "))
            };
            out.push((i, label));
        }
        out
    }

    /// The scenario this selection runs: the combination's, with the overrides set and the
    /// result checked (an inconsistent override is an error naming it).
    pub fn scenario(&self) -> Result<Scenario, String> {
        let run = self
            .exp
            .runs
            .get(self.combo)
            .ok_or_else(|| format!("no planned run #{} in {}", self.combo, self.exp.name))?;
        let mut sc = (*run.scenario).clone();
        if self.overrides.is_empty() {
            return Ok(sc);
        }
        for (path, v) in &self.overrides {
            sc.set_param(path, v.clone()).map_err(|e| format!("{path}: {e}"))?;
        }
        sc.check().map_err(|e| format!("the scenario would be inconsistent: {e}"))?;
        Ok(sc)
    }

    pub fn run_config(&self) -> RunConfig {
        self.exp.run_config(self.seed)
    }

    /// Opens the live session of this selection at t = 0.
    pub fn open(&self) -> Result<LiveSession, String> {
        let scenario = Arc::new(self.scenario()?);
        let mut exp = (*self.exp).clone();
        let mut run = exp.runs[self.combo].clone();
        run.seed = self.seed;
        run.scenario = scenario;
        let choice = RunChoice {
            variant: Some(run.variant.clone()),
            point: run.point,
            seed: Some(self.seed),
        };
        exp.runs = vec![run];
        exp.seeds = vec![self.seed];
        LiveSession::open(exp, &choice).map_err(|e| e.to_string())
    }
}

/// An open experiment, as the UI sees it: the selection and what it resolves to.
pub struct Opened {
    pub exp: Arc<Experiment>,
    pub sel: Selection,
    /// The selection's scenario (variant, sweep point and overrides applied).
    pub scenario: Scenario,
    pub registry: models::params::Registry,
}

/// What the UI shows of a session's state at one instant (read-only, plain data).
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// Every metric's reading, by path (`gate.llm.in_use` …), sorted.
    pub metrics: Vec<(String, MetricReading)>,
    /// Every parameter's value in force, by path.
    pub params: Vec<(String, ParamValue)>,
    /// Component states, in-flight against limits, class queues, throughput.
    pub snapshot: Option<Snapshot>,
}

impl Observed {
    pub fn of(s: &Session) -> Observed {
        Observed {
            metrics: s
                .metric_paths()
                .filter_map(|(p, _)| Some((p.to_string(), s.read(p)?)))
                .collect(),
            params: s.world().params_in_force().map(|(p, v)| (p.to_string(), v.clone())).collect(),
            snapshot: Some(s.snapshot()),
        }
    }
}

/// A selection's session, kept across its end (see the module doc).
pub struct Run {
    pub sel: Selection,
    /// While running: the session. Once finished: a fresh session at t = 0 with the same
    /// recorded changes queued (for export and rewind).
    pub live: LiveSession,
    /// The run's output once it reached its end.
    pub output: Option<RunOutput>,
    /// Once finished: the state at the end.
    last: Observed,
    /// The per-bucket rates derived from the summary's counts, read at every boundary the
    /// run crosses (see [`crate::derived`]).
    derived: Derived,
}

impl Run {
    pub fn open(sel: Selection) -> Result<Run, String> {
        let live = sel.open()?;
        let derived = Run::derived_of(&live);
        Ok(Run { live, sel, output: None, last: Observed::default(), derived })
    }

    fn derived_of(s: &Session) -> Derived {
        Derived::new(&s.world().summary_counts(), s.config().sample_every, s.end())
    }

    pub fn session(&self) -> &Session {
        &self.live
    }
    pub fn is_finished(&self) -> bool {
        self.output.is_some()
    }
    /// The simulated clock (the end once finished).
    pub fn now(&self) -> SimTime {
        if self.is_finished() { self.live.end() } else { self.live.now() }
    }
    pub fn events(&self) -> u64 {
        self.output.as_ref().map_or_else(|| self.live.events(), |o| o.events)
    }
    /// The changes applied so far, with their instants.
    pub fn changes(&self) -> &[SetParam<ParamValue>] {
        self.live.applied()
    }
    /// The per-bucket rate rows (`summary.<name>`) of the buckets closed so far.
    pub fn derived(&self) -> &[SeriesRow] {
        self.derived.rows()
    }
    /// The state now (once finished: at the end).
    pub fn observe(&self) -> Observed {
        if self.is_finished() { self.last.clone() } else { Observed::of(&self.live) }
    }
    pub fn fingerprint(&self) -> Option<String> {
        self.output.as_ref().map(|o| o.fingerprint.hex())
    }

    /// A fresh session of this run's scenario with `changes` queued.
    fn replaying(&self, changes: Vec<SetParam<ParamValue>>) -> Session {
        let s = self.live.session();
        Session::replaying(Scenario::clone(s.scenario()), *s.config(), changes)
    }

    /// Processes everything at or before `t` (capped at the end), closing the derived
    /// buckets on the way.
    fn drive(&mut self, t: SimTime) -> Result<(), SimError> {
        let t = t.min(self.live.end());
        self.close_through(t)?;
        self.live.session_mut().run_until(t)
    }

    /// Closes every derived bucket whose end boundary `b` is at or before `t`: the session
    /// runs to `b - 1 ns` (every event and change stamped before `b`, none at `b`) and the
    /// counts are read there.
    fn close_through(&mut self, t: SimTime) -> Result<(), SimError> {
        while let Some(b) = self.derived.due(t) {
            let s = self.live.session_mut();
            s.run_until(SimTime(b.0 - 1))?;
            self.derived.close(&s.world().summary_counts(), &s.components());
        }
        Ok(())
    }

    /// Processes the next event (the derived buckets it crosses closed first); `Ok(false)`:
    /// none is left before the end.
    fn step_event(&mut self) -> Result<bool, SimError> {
        // A change due before the next event may cancel it: then nothing was processed
        // (`step_until(e)` is false) and the next event is asked for again, its buckets
        // closed first. Each round applies a change or ends, so the loop is bounded by the
        // changes pending.
        while let Some(e) = self.live.next_event_time() {
            self.close_through(e)?;
            if self.live.session_mut().step_until(e)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Finishes the run when nothing is left before its end (or the engine stopped it).
    fn settle(&mut self) {
        if self.output.is_none() && self.live.is_done() {
            let end = self.live.end();
            let mut error = self.drive(end).err();
            if error.is_none() {
                let s = self.live.session();
                self.derived.finish(&s.world().summary_counts(), &s.components());
            }
            let fresh = self.replaying(self.changes().to_vec());
            let mut done = std::mem::replace(self.live.session_mut(), fresh);
            error = error.or(done.run_to_end().err());
            self.last = Observed::of(&done);
            let mut out = done.finish();
            out.error = out.error.or(error);
            self.output = Some(out);
        }
    }

    fn running(&mut self) -> Result<&mut Session, String> {
        match self.output {
            Some(_) => Err("the run has ended: rewind or reset to go on".into()),
            None => Ok(self.live.session_mut()),
        }
    }

    /// Processes everything at or before `t` (capped at the end; nothing to do once
    /// finished).
    pub fn run_until(&mut self, t: SimTime) -> Result<(), String> {
        if self.is_finished() {
            return Ok(());
        }
        let r = self.drive(t).map_err(|e| e.to_string());
        self.settle();
        r
    }

    /// Processes the events due at or before `t`, at most `max_events` of them; when none
    /// is left before `t`, moves the clock to `t` (changes, bucket boundaries).
    pub fn advance(&mut self, t: SimTime, max_events: u64) -> Result<(), String> {
        self.running()?;
        let mut n = 0;
        let r = loop {
            match self.live.next_event_time() {
                Some(e) if e <= t && n >= max_events => break Ok(()),
                Some(e) if e <= t => {}
                _ => break self.drive(t),
            }
            if let Err(e) = self.step_event() {
                break Err(e);
            }
            n += 1;
        };
        self.settle();
        r.map_err(|e| e.to_string())
    }

    /// One event (or to the end when none is left).
    pub fn step(&mut self) -> Result<(), String> {
        self.running()?;
        let r = self.step_event().map(|_| ()).map_err(|e| e.to_string());
        self.settle();
        r
    }

    /// Every event of the next instant (the earliest pending event time).
    pub fn next_instant(&mut self) -> Result<(), String> {
        let s = self.running()?;
        let next = s.next_event_time().unwrap_or(s.end());
        self.run_until(next)
    }

    /// Validates a run-time change and applies it at the current instant.
    pub fn apply(&mut self, path: &str, value: ParamValue) -> Result<SimTime, String> {
        self.running()?;
        self.live.apply(path, value).map_err(|e| e.to_string())
    }

    /// Parses `text` with the parameter's type, then applies it like [`Run::apply`].
    pub fn apply_text(&mut self, path: &str, text: &str) -> Result<SimTime, String> {
        self.running()?;
        self.live.apply_text(path, text).map_err(|e| e.to_string())
    }

    /// Re-simulates from t = 0 to `t` (capped at the clock) with the changes stamped at or
    /// before `t`; later changes are forgotten. Every series, the derived ones included,
    /// is rebuilt on the way: the same as the run had there.
    pub fn rewind(&mut self, t: SimTime) -> Result<(), String> {
        let t = t.min(self.now());
        let kept = self.changes().iter().filter(|c| SimTime::ZERO + c.at <= t).cloned();
        let fresh = self.replaying(kept.collect());
        *self.live.session_mut() = fresh;
        self.output = None;
        self.derived = Run::derived_of(&self.live);
        self.run_until(t)
    }

    /// The session as an experiment file for `dir` (see [`LiveSession::export`]).
    pub fn export(&self, dir: &std::path::Path) -> String {
        self.live.export(dir)
    }
}

impl Run {
    /// The session's row of the `runs` table: the columns and values
    /// `experiments::results::runs_frame` writes for this run (fixed columns, swept
    /// parameters, every summary column, goodput), built by that same function from a
    /// record of this session — so the names and numbers are the table's by construction.
    /// `summary` is the run's summary so far (final once finished).
    ///
    /// The run id is the planned run's when this session is one (a seed of the file, no
    /// value set before the start, no change recorded); otherwise the session is another
    /// run and its id is shown as `-` (its export, a file of its own, gets one).
    pub fn runs_row(&self, summary: &Summary) -> Vec<(String, String)> {
        let run = self.live.run();
        let exp = &self.sel.exp;
        let planned = exp
            .runs
            .iter()
            .position(|r| r.variant == run.variant && r.point == run.point && r.seed == run.seed);
        let is_planned =
            planned.is_some() && self.sel.overrides.is_empty() && self.changes().is_empty();
        let status = match self.output.as_ref().and_then(|o| o.error.as_ref()) {
            Some(e) => Status::Error(e.to_string()),
            None => Status::Ok,
        };
        let rec = RunRecord {
            run_id: if is_planned { run.run_id.clone() } else { "-".into() },
            run_index: planned.unwrap_or(self.sel.combo),
            variant: run.variant.clone(),
            point: run.point,
            params: run.params.clone(),
            seed: run.seed,
            status,
            fingerprint: self.fingerprint(),
            events: self.events(),
            summary: summary.clone(),
            series: Vec::new(),
            requests: Vec::new(),
            state_events: Vec::new(),
            wall_seconds: 0.0,
        };
        runs_row(exp, &rec)
    }
}

/// The row `experiments::results::runs_frame` makes of one record, as (column, value text):
/// numbers as Rust prints them (exact), text as is, `null` for a missing value.
pub fn runs_row(exp: &Experiment, rec: &RunRecord) -> Vec<(String, String)> {
    let df = match experiments::results::runs_frame(exp, std::slice::from_ref(rec)) {
        Ok(df) => df,
        Err(e) => return vec![("error".into(), format!("building the runs row: {e}"))],
    };
    let text = |x: Option<String>| x.unwrap_or_else(|| "null".into());
    df.columns()
        .iter()
        .map(|c| {
            let v = if let Ok(s) = c.str() {
                text(s.get(0).map(str::to_string))
            } else if let Ok(f) = c.f64() {
                text(f.get(0).map(|x| x.to_string()))
            } else if let Ok(u) = c.u64() {
                text(u.get(0).map(|x| x.to_string()))
            } else {
                c.get(0).map_or_else(|e| e.to_string(), |v| v.to_string())
            };
            (c.name().to_string(), v)
        })
        .collect()
}
