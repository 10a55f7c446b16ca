//! Live sessions opened from experiment files, and their export as experiment files.
//!
//! [`open`] loads an experiment (or a bare scenario), picks one planned run — a variant, a
//! sweep point, a seed — and opens a [`models::Session`] on it with the experiment's run
//! settings. [`LiveSession`] derefs to that session (step, read, apply…) and adds what
//! needs the file layer: changes typed as RON text ([`LiveSession::apply_text`]) and
//! [`LiveSession::export`], an `Experiment(...)` file whose headless `stormglass run`
//! reproduces the session's fingerprint exactly (the run's scenario, variant and sweep
//! values resolved, with every applied change appended to its timeline at its instant; one
//! seed; the same duration, warm-up and sampling).
//!
//! API boundary: no UI types; the GUI holds a `LiveSession` and calls it per frame.

use crate::experiment::{Experiment, LoadError, PlannedRun, RunDefaults};
use models::Session;
use models::params::ParamValue;
use models::scenario::{ScenarioSpec, SetParam};
use models::session::ChangeError;
use serde::{Serialize, Serializer};
use sim_core::SimTime;
use std::path::{Path, PathBuf};

/// Which planned run of an experiment to open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunChoice {
    /// The variant's name (`None`: the first variant).
    pub variant: Option<String>,
    /// The sweep point within the variant (0: the first, or the only one).
    pub point: usize,
    /// The seed (`None`: the experiment's first seed).
    pub seed: Option<u64>,
}

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{0}")]
    Load(#[from] LoadError),
    #[error("{file}: no planned run has {what}; planned: {planned}")]
    NoSuchRun { file: PathBuf, what: String, planned: String },
}

/// A live session on one planned run of an experiment.
pub struct LiveSession {
    exp: Experiment,
    run: PlannedRun,
    session: Session,
}

/// Loads `path` (bare scenarios run with `defaults`) and opens the chosen run.
pub fn open(
    path: &Path,
    defaults: &RunDefaults,
    choice: &RunChoice,
) -> Result<LiveSession, OpenError> {
    let exp = crate::experiment::load(path, defaults)?;
    LiveSession::open(exp, choice)
}

impl LiveSession {
    /// Opens the chosen run of a loaded experiment.
    pub fn open(exp: Experiment, choice: &RunChoice) -> Result<LiveSession, OpenError> {
        let variant = choice.variant.clone().unwrap_or_else(|| exp.runs[0].variant.clone());
        let seed = choice.seed.unwrap_or(exp.seeds[0]);
        let found = exp
            .runs
            .iter()
            .find(|r| r.variant == variant && r.point == choice.point && r.seed == seed);
        let Some(run) = found.cloned() else {
            let mut planned: Vec<String> =
                exp.runs.iter().map(|r| format!("{}/{}", r.variant, r.point)).collect();
            planned.dedup();
            return Err(OpenError::NoSuchRun {
                file: exp.file.clone(),
                what: format!("variant \"{variant}\", sweep point {}, seed {seed}", choice.point),
                planned: format!("{} (variant/point), seeds {:?}", planned.join(", "), exp.seeds),
            });
        };
        let session = Session::new(run.scenario.clone(), exp.run_config(seed));
        Ok(LiveSession { exp, run, session })
    }

    pub fn experiment(&self) -> &Experiment {
        &self.exp
    }
    /// The planned run this session is (variant, sweep point, seed, its parameter values).
    pub fn run(&self) -> &PlannedRun {
        &self.run
    }
    pub fn session(&self) -> &Session {
        &self.session
    }
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }
    /// Ends the session: runs it to the end, hands back the results.
    pub fn finish(self) -> models::RunOutput {
        self.session.finish()
    }

    /// Parses `text` (RON, e.g. `Some(40)`, `"250ms"`, `Exponential(mean: "1s")`) with the
    /// type of the parameter at `path`, then validates and applies it like
    /// [`Session::apply`].
    pub fn apply_text(&mut self, path: &str, text: &str) -> Result<SimTime, ChangeError> {
        let value = parse_value(&self.session, path, text)?;
        self.session.apply(path, value)
    }

    /// The session as an experiment file (RON text), for a file written in `dir`: trace
    /// files keep their relative path when `dir` is the scenario's own directory, else they
    /// are written as absolute paths.
    pub fn export(&self, dir: &Path) -> String {
        let mut sc = self.session.replay_scenario();
        let base = self.exp.scenario_file.parent().unwrap_or(Path::new("."));
        if !same_dir(base, dir) {
            for s in &mut sc.sources {
                if let Some(t) = s.trace.as_mut() {
                    let p = std::path::absolute(base.join(&t.file)).unwrap_or(base.join(&t.file));
                    t.file = p.to_string_lossy().into_owned();
                }
            }
        }
        let sc: ScenarioSpec<Bare> = sc
            .map_timeline(|_, s| {
                Ok::<_, ()>(SetParam {
                    at: s.at,
                    path: s.path,
                    value: Bare(s.value),
                    reload: s.reload,
                })
            })
            .expect("infallible");
        let pretty = ron::ser::PrettyConfig::new().indentor("    ".to_string());
        let scenario = ron::ser::to_string_pretty(&sc, pretty).expect("scenarios serialize");
        let cfg = self.session.config();
        let every = cfg.sample_every.map_or("0s".to_string(), |d| d.to_string());
        let changes = self.session.applied().len();
        format!(
            "// Exported from a live session of {file} (variant \"{variant}\", sweep point \
             {point}, seed {seed}):\n// the run's scenario with the {changes} change(s) applied \
             during the session appended to its timeline.\n// `stormglass run` of this file \
             reproduces the session's fingerprint.\nExperiment(\n    name: {name},\n    \
             scenario: Inline({scenario}),\n    duration: \"{duration}\",\n    warmup: \
             \"{warmup}\",\n    sample_every: \"{every}\",\n    seeds: List([{seed}]),\n    \
             outputs: (requests: {requests}),\n)\n",
            file = self.exp.file.display(),
            variant = self.run.variant,
            point = self.run.point,
            seed = cfg.seed,
            name = ron::to_string(&format!("{}-session", self.exp.name)).expect("a string"),
            duration = cfg.duration,
            warmup = cfg.warmup,
            requests = cfg.record_requests,
        )
    }

    /// Writes [`LiveSession::export`] to `file`.
    pub fn export_to(&self, file: &Path) -> std::io::Result<()> {
        let dir = file.parent().unwrap_or(Path::new("."));
        std::fs::write(file, self.export(dir))
    }
}

impl std::ops::Deref for LiveSession {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}
impl std::ops::DerefMut for LiveSession {
    fn deref_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| {
        let p = if p.as_os_str().is_empty() { Path::new(".") } else { p };
        std::fs::canonicalize(p).ok()
    };
    canon(a).is_some_and(|a| Some(a) == canon(b))
}

/// Parses a RON value with the type of the parameter at `path`.
pub fn parse_value(session: &Session, path: &str, text: &str) -> Result<ParamValue, ChangeError> {
    let refused = |message: String| ChangeError { path: path.to_string(), message };
    let spec =
        session.registry().get(path).ok_or_else(|| refused(session.registry().unknown(path)))?;
    let mut de = ron::Deserializer::from_str(text).map_err(|e| refused(e.to_string()))?;
    let value = spec.ty.deserialize_value(&mut de).map_err(|e| refused(e.to_string()))?;
    de.end().map_err(|e| refused(format!("unexpected text after the value: {e}")))?;
    Ok(value)
}

/// A timeline value written bare, as the scenario language has it (`40`, `Some(8)`,
/// `"250ms"`), not as the tagged `ParamValue` (`Count(40)`).
struct Bare(ParamValue);

impl Serialize for Bare {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            ParamValue::Count(n) => n.serialize(s),
            ParamValue::OptCount(n) => n.serialize(s),
            ParamValue::Duration(d) => d.serialize(s),
            ParamValue::DurationDist(d) => d.serialize(s),
            ParamValue::NumberDist(d) => d.serialize(s),
            ParamValue::Float(x) => x.serialize(s),
            ParamValue::Bool(b) => b.serialize(s),
            // A choice is a bare identifier (`CLOSED`), as the scenario writes it.
            ParamValue::Enum(c) => ron::value::RawValue::from_boxed_ron(c.clone().into())
                .map_err(serde::ser::Error::custom)?
                .serialize(s),
            ParamValue::Name(n) => n.serialize(s),
            ParamValue::List(items) => s.collect_seq(items.iter().cloned().map(Bare)),
        }
    }
}
