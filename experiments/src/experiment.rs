//! Experiment files: a scenario (by path or inline), run length, warm-up, sampling and
//! seeds; resolved into a list of planned runs.
//!
//! A file may also be a bare `Scenario(...)`: it then runs with the defaults of
//! [`RunDefaults`] (the CLI can override them).

pub mod metric;
pub mod schema;
pub mod search_spec;

use crate::patch::Part;
use crate::ronfile::{InputError, Source};
pub use crate::scenario_file::{MAX_INPUT_BYTES, read_bounded, resolve_scenario};
pub(crate) use crate::scenario_file::{ScenarioRef, join};
use crate::sweep::{
    self, Assignment, Constraint, ConstraintFile, Dimension, SweepFile, resolve_constraints,
    resolve_sweep,
};
use crate::variant::{self, Base, Variant, VariantFile};
use models::Scenario;
use models::params::ParamValue;
use models::scenario::ScenarioSpec;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use sim_core::SimDuration;
use sim_core::rng::{mix64, name_id};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most runs one experiment may plan (TigerStyle: a limit on everything).
pub const MAX_RUNS: usize = 1_000_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "Experiment")]
struct ExperimentFile {
    name: String,
    #[serde(default)]
    description: String,
    scenario: ScenarioRef,
    duration: SimDuration,
    #[serde(default)]
    warmup: SimDuration,
    #[serde(default = "default_sample_every")]
    sample_every: SimDuration,
    #[serde(default)]
    seeds: Seeds,
    #[serde(default)]
    outputs: Outputs,
    /// Named overlays; the sweep runs within each.
    #[serde(default)]
    variants: Vec<VariantFile>,
    /// Sweep dimensions (Cartesian product).
    #[serde(default)]
    sweep: Vec<SweepFile>,
    /// Combinations to drop.
    #[serde(default)]
    constraints: Vec<ConstraintFile>,
    /// What `stormglass search` explores (`run` ignores it).
    #[serde(default, deserialize_with = "sweep::present")]
    search: Option<search_spec::SearchFile>,
}

/// Optional result files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Outputs")]
pub struct Outputs {
    /// Write `requests.parquet`: one row per request (large: memory and disk grow with the
    /// number of requests).
    #[serde(default)]
    pub requests: bool,
}

fn default_sample_every() -> SimDuration {
    SimDuration::from_secs(1)
}

/// Replication seeds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Seeds {
    /// `Range(first, end)`: first ≤ seed < end.
    Range(u64, u64),
    /// Explicit seeds.
    List(Vec<u64>),
}

impl Default for Seeds {
    fn default() -> Self {
        Seeds::Range(0, 1)
    }
}

impl Seeds {
    /// How many seeds, without listing them (a range can be astronomically long).
    pub fn count(&self) -> u64 {
        match self {
            Seeds::Range(a, b) => b.saturating_sub(*a),
            Seeds::List(v) => v.len() as u64,
        }
    }
    pub fn to_vec(&self) -> Vec<u64> {
        match self {
            Seeds::Range(a, b) => (*a..*b).collect(),
            Seeds::List(v) => v.clone(),
        }
    }
}

/// Run settings used when the file is a bare scenario.
#[derive(Clone, Debug)]
pub struct RunDefaults {
    pub duration: SimDuration,
    pub warmup: SimDuration,
    pub sample_every: SimDuration,
    pub seeds: Seeds,
    pub outputs: Outputs,
}

impl Default for RunDefaults {
    fn default() -> Self {
        RunDefaults {
            duration: SimDuration::from_secs(600),
            warmup: SimDuration::ZERO,
            sample_every: SimDuration::from_secs(1),
            seeds: Seeds::Range(0, 1),
            outputs: Outputs::default(),
        }
    }
}

/// A resolved, validated experiment.
#[derive(Clone, Debug)]
pub struct Experiment {
    pub name: String,
    pub description: String,
    pub file: PathBuf,
    /// The file the scenario text came from (`file` itself for an inline or bare scenario):
    /// relative paths inside the scenario (trace files) are relative to it.
    pub scenario_file: PathBuf,
    pub scenario: Arc<Scenario>,
    pub duration: SimDuration,
    pub warmup: SimDuration,
    /// `None` when `sample_every` is `"0s"` (no time series).
    pub sample_every: Option<SimDuration>,
    pub seeds: Vec<u64>,
    pub outputs: Outputs,
    pub variants: Vec<Variant>,
    pub sweep: Vec<Dimension>,
    pub constraints: Vec<Constraint>,
    /// Every parameter a variant or the sweep sets, in first-mention order (one
    /// `param.<path>` column each in `runs.parquet`).
    pub swept: Vec<String>,
    /// The runs: variants × sweep points (constraints applied) × seeds.
    pub runs: Vec<PlannedRun>,
    /// The columns of the `runs` table after the fixed ones, from the plan (every part
    /// carries all of them: `crate::experiment::schema`).
    pub columns: Arc<crate::experiment::schema::RunColumns>,
    /// The `search` block, resolved (its own plan: the space instead of the sweep).
    pub search: Option<Arc<search_spec::Search>>,
    /// Where the sweep's dimensions are written in the file (`sweep`, `search.space`).
    pub(crate) sweep_field: &'static str,
}

/// One run of an experiment.
#[derive(Clone, Debug)]
pub struct PlannedRun {
    /// A hash of the run's resolved scenario, run settings, variant and seed (16 hex
    /// digits): editing an experiment never renumbers the runs that did not change.
    pub run_id: String,
    pub variant: String,
    /// Index of the sweep point (within the variant, after constraints).
    pub point: usize,
    /// Values of the swept parameters in this run, in `Experiment::swept` order (`None`:
    /// this run's variant has no such parameter; another variant sets it).
    pub params: Vec<Option<ParamValue>>,
    pub seed: u64,
    pub scenario: Arc<Scenario>,
}

/// Why an experiment could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: cannot read: {err}")]
    Io { file: PathBuf, err: std::io::Error },
    #[error("{0}")]
    Input(#[from] InputError),
    /// A run setting of a bare scenario, given by a command-line flag (or its default).
    #[error("{file}: {flag}: {message}")]
    Flag { file: PathBuf, flag: &'static str, message: String },
    /// Several independent errors, one per line.
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    Many(Vec<LoadError>),
}

/// The first identifier of a RON text, skipping whitespace and comments.
fn top_level_name(text: &str) -> (&str, usize) {
    let mut rest = text;
    loop {
        let t = rest.trim_start();
        if let Some(r) = t.strip_prefix("//") {
            rest = r.split_once('\n').map(|x| x.1).unwrap_or("");
        } else if let Some(r) = t.strip_prefix("/*") {
            rest = r.split_once("*/").map(|x| x.1).unwrap_or("");
        } else {
            rest = t;
            break;
        }
    }
    let off = text.len() - rest.len();
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    (&rest[..end], off)
}

fn read(path: &Path) -> Result<String, LoadError> {
    let bytes = read_bounded(path, MAX_INPUT_BYTES)
        .map_err(|err| LoadError::Io { file: path.to_path_buf(), err })?;
    Ok(crate::ronfile::utf8(path, bytes)?)
}

/// Whether a file's text is an `Experiment(...)` (else a bare scenario, or neither).
pub fn is_experiment(text: &str) -> bool {
    top_level_name(text).0 == "Experiment"
}

/// Loads an experiment (or a bare scenario run with `defaults`) from a file.
pub fn load(path: &Path, defaults: &RunDefaults) -> Result<Experiment, LoadError> {
    let text = read(path)?;
    load_text(path, &text, defaults)
}

/// Loads from text already read; `path` names it in errors and anchors relative paths.
pub fn load_text(path: &Path, text: &str, defaults: &RunDefaults) -> Result<Experiment, LoadError> {
    let src = Source::new(path, text);
    let (top, off) = top_level_name(text);
    match top {
        "Scenario" => {
            let spec: ScenarioSpec<IgnoredAny> = src.parse()?;
            let scenario = resolve_scenario(&src, spec, "")?;
            check_seed_count(&src, &defaults.seeds, Origin::Flags)?;
            let exp = Experiment {
                name: scenario.name.clone(),
                description: scenario.description.clone(),
                file: path.to_path_buf(),
                scenario_file: path.to_path_buf(),
                scenario: Arc::new(scenario),
                duration: defaults.duration,
                warmup: defaults.warmup,
                sample_every: Some(defaults.sample_every).filter(|d| d.0 > 0),
                seeds: defaults.seeds.to_vec(),
                outputs: defaults.outputs,
                variants: vec![Variant::plain("default", vec![])],
                sweep: vec![],
                constraints: vec![],
                swept: vec![],
                runs: vec![],
                columns: Default::default(),
                search: None,
                sweep_field: "sweep",
            };
            let mut errs = check_settings(&src, &exp, Origin::Flags);
            if let Err(e) = check_trace_coverage(&src, &exp, Some("")) {
                errs.push(e.into());
            }
            collect(errs)?;
            finish_plan(&src, exp)
        }
        "Experiment" => {
            let f: ExperimentFile = src.parse()?;
            check_seed_count(&src, &f.seeds, Origin::File)?;
            let inline = matches!(f.scenario, ScenarioRef::Inline(_));
            // The base scenario's own file, when it has one (structural variants splice
            // its text).
            let base_file = match &f.scenario {
                ScenarioRef::File(rel) => {
                    let p = path.parent().unwrap_or(Path::new(".")).join(rel);
                    let text = read(&p).map_err(|e| {
                        LoadError::Input(
                            src.error_at("scenario", format!("scenario file \"{rel}\": {e}")),
                        )
                    })?;
                    Some((p, text))
                }
                ScenarioRef::Inline(_) => None,
            };
            let base_src = base_file.as_ref().map(|(p, t)| Source::new(p, t));
            let (scenario, part) = match (f.scenario, &base_src) {
                (ScenarioRef::Inline(spec), _) => (
                    resolve_scenario(&src, *spec, "scenario")?,
                    Part { src: &src, path: "scenario" },
                ),
                (ScenarioRef::File(_), Some(ssrc)) => {
                    let spec: ScenarioSpec<IgnoredAny> = ssrc.parse()?;
                    (resolve_scenario(ssrc, spec, "")?, Part { src: ssrc, path: "" })
                }
                (ScenarioRef::File(_), None) => unreachable!("read above"),
            };
            let scenario = Arc::new(scenario);
            let scenario_file =
                base_file.as_ref().map_or_else(|| path.to_path_buf(), |(p, _)| p.clone());
            let exp = Experiment {
                name: f.name,
                description: f.description,
                file: path.to_path_buf(),
                scenario_file,
                scenario,
                duration: f.duration,
                warmup: f.warmup,
                sample_every: Some(f.sample_every).filter(|d| d.0 > 0),
                seeds: f.seeds.to_vec(),
                outputs: Outputs { requests: f.outputs.requests || defaults.outputs.requests },
                variants: vec![],
                sweep: vec![],
                constraints: vec![],
                swept: vec![],
                runs: vec![],
                columns: Default::default(),
                search: None,
                sweep_field: "sweep",
            };
            // Independent parts: report every one that is wrong, not only the first. The
            // sweep and constraints are resolved against each variant's scenario, so they
            // are looked at only when the variants resolve.
            let mut errs = check_settings(&src, &exp, Origin::File);
            if let Err(e) = check_trace_coverage(&src, &exp, inline.then_some("scenario")) {
                errs.push(e.into());
            }
            let base = Base { part, scenario: &exp.scenario };
            let resolved = match variant::resolve_variants(&src, &base, &f.variants) {
                Err(e) => {
                    errs.push(e.into());
                    None
                }
                Ok(variants) => {
                    let sweep = variant::for_every_variant(&variants, &exp.scenario, |reg| {
                        resolve_sweep(&src, reg, "sweep", &f.sweep)
                    });
                    let constraints = variant::for_every_variant(&variants, &exp.scenario, |reg| {
                        resolve_constraints(&src, reg, &f.constraints)
                    });
                    match (sweep, constraints) {
                        (Ok(s), Ok(c)) => Some((variants, s, c)),
                        (s, c) => {
                            errs.extend(s.err().map(LoadError::from));
                            errs.extend(c.err().map(LoadError::from));
                            None
                        }
                    }
                }
            };
            collect(errs)?;
            let (variants, sweep, constraints) = resolved.expect("no error, so resolved");
            let exp = Experiment { variants, sweep, constraints, ..exp };
            let mut exp = finish_plan(&src, exp)?;
            if let Some(s) = &f.search {
                exp.search = Some(Arc::new(search_spec::resolve(&src, &exp, s)?));
            }
            Ok(exp)
        }
        other => {
            let (line, col) = crate::locate::line_col(text, off);
            Err(LoadError::Input(InputError {
                file: path.to_path_buf(),
                line,
                col,
                field: String::new(),
                message: format!(
                    "expected `Experiment(...)` or `Scenario(...)` at the top level, found `{}`",
                    if other.is_empty() {
                        text[off..].chars().take(12).collect::<String>()
                    } else {
                        other.to_string()
                    }
                ),
            }))
        }
    }
}

/// Refuses a trace replay that would use under 1% of its rows in the run's duration (a
/// millisecond trace read with the default `time_unit: "1s"`), positioned at the trace (or
/// at `scenario` when the scenario is in another file: `prefix` `None`).
fn check_trace_coverage(
    src: &Source<'_>,
    e: &Experiment,
    prefix: Option<&str>,
) -> Result<(), InputError> {
    for (i, s) in e.scenario.sources.iter().enumerate() {
        let Some(t) = &s.trace else { continue };
        t.check_coverage(s.start, e.duration).map_err(|m| match prefix {
            Some(p) => src.error_at(&join(p, &format!("sources[{i}].trace")), m),
            None => src.error_at("scenario", format!("sources[{i}].trace: {m}")),
        })?;
    }
    Ok(())
}

fn check_seed_count(src: &Source<'_>, seeds: &Seeds, origin: Origin) -> Result<(), LoadError> {
    let n = seeds.count();
    if n > MAX_RUNS as u64 {
        let m = format!("expected at most {MAX_RUNS} seeds, found {n}");
        return Err(match origin {
            Origin::File => LoadError::Input(src.error_at("seeds", m)),
            Origin::Flags => {
                LoadError::Flag { file: src.file.to_path_buf(), flag: "--seeds", message: m }
            }
        });
    }
    Ok(())
}

/// Most time-series buckets one run may have (memory: rows per bucket × buckets).
pub const MAX_BUCKETS: u64 = 1_000_000;

/// Longest experiment name: it names the results folder (file systems allow 255 bytes).
pub const MAX_NAME: usize = 128;

/// Where a run setting came from: a field of an experiment file, or (bare scenario) a
/// command-line flag or its default.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    File,
    Flags,
}

/// Every problem of the run settings (not only the first).
fn check_settings(src: &Source<'_>, e: &Experiment, origin: Origin) -> Vec<LoadError> {
    let mut errs = Vec::new();
    let mut at = |f: &str, m: String| {
        let flag = match f {
            "duration" => "--duration",
            "warmup" => "--warmup",
            "sample_every" => "--sample-every",
            "seeds" => "--seeds",
            _ => "",
        };
        errs.push(if origin == Origin::Flags && !flag.is_empty() {
            LoadError::Flag {
                file: src.file.to_path_buf(),
                flag,
                message: format!("{m} (a bare scenario takes its run settings from the command line or their defaults)"),
            }
        } else {
            LoadError::Input(src.error_at(f, m))
        })
    };
    if e.duration.0 == 0 {
        at("duration", "expected a duration > 0, found \"0s\"".into());
    } else if e.warmup >= e.duration {
        at(
            "warmup",
            format!(
                "expected a warm-up shorter than the duration \"{}\", found \"{}\"",
                e.duration, e.warmup
            ),
        );
    }
    if let Some(every) = e.sample_every {
        let buckets = e.duration.0.div_ceil(every.0);
        if buckets > MAX_BUCKETS {
            at(
                "sample_every",
                format!(
                    "expected at most {MAX_BUCKETS} time-series buckets per run, found {buckets} (\"{}\" ÷ \"{every}\"); sample less often, or \"0s\" for none",
                    e.duration
                ),
            );
        }
    }
    if e.seeds.is_empty() {
        at("seeds", "expected at least one seed, found none".into());
    }
    if e.seeds.len() > MAX_RUNS {
        at("seeds", format!("expected at most {MAX_RUNS} seeds, found {}", e.seeds.len()));
    }
    let mut sorted = e.seeds.clone();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        at("seeds", format!("seed {} is listed twice", w[0]));
    }
    if e.name.is_empty()
        || e.name.starts_with('.')
        || !e.name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        at(
            "name",
            format!(
                "expected a name of letters, digits, '_', '-' or '.', not starting with '.', found \"{}\" (it names the results folder)",
                e.name
            ),
        );
    } else if e.name.len() > MAX_NAME {
        at(
            "name",
            format!(
                "expected a name of at most {MAX_NAME} characters, found {} (it names the results folder)",
                e.name.len()
            ),
        );
    }
    errs
}

/// One error as is, several as [`LoadError::Many`].
fn collect(mut errs: Vec<LoadError>) -> Result<(), LoadError> {
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.pop().expect("one")),
        _ => Err(LoadError::Many(errs)),
    }
}

/// The text that identifies a resolved scenario: its RON form plus a hash of every trace
/// it replays (trace rows live outside the scenario text, and editing a trace file must
/// change the run ids of the runs that use it).
pub fn canonical(sc: &Scenario) -> String {
    canonical_text(sc, ron::to_string(sc).expect("scenarios serialize"))
}

/// [`canonical`] from the scenario's RON text already made.
fn canonical_text(sc: &Scenario, mut text: String) -> String {
    for s in &sc.sources {
        if let Some(d) = s.trace.as_ref().and_then(|t| t.data.as_ref()) {
            text.push_str(&format!("\ntrace {}: {:016x}", s.name, d.content_hash()));
        }
    }
    text
}

/// Applies a combination's assignments. A setter may refuse a value that breaks a rule
/// with another parameter the same combination also changes (`maximum_pool_size` 4 before
/// `core_pool_size` 2, while the core is still 8): refused ones are retried after the
/// others, until a pass makes no progress. The first still refused is returned, with the
/// field of its value.
fn set_all(sc: &mut Scenario, all: &[&Assignment], fields: &[String]) -> Option<(String, String)> {
    let mut pending: Vec<usize> = (0..all.len()).collect();
    loop {
        let mut refused = Vec::new();
        let mut first = None;
        for &i in &pending {
            if let Err(m) = sc.set_param(&all[i].path, all[i].value.clone()) {
                first.get_or_insert((fields[i].clone(), m));
                refused.push(i);
            }
        }
        if refused.is_empty() {
            return None;
        }
        if refused.len() == pending.len() {
            return first;
        }
        pending = refused;
    }
}

/// `variant "v" with a=1, b=2`: one combination, for messages.
fn describe(v: &Variant, set: &[&Assignment]) -> String {
    if set.is_empty() {
        return format!("variant \"{}\"", v.name);
    }
    // The values in effect: each path once, its last assignment (the sweep's over the
    // variant's), in first-mention order.
    let mut vals: Vec<(&str, String)> = Vec::new();
    for a in set {
        let v = format!("{}={}", a.path, a.value);
        match vals.iter_mut().find(|(p, _)| *p == a.path) {
            Some(slot) => slot.1 = v,
            None => vals.push((&a.path, v)),
        }
    }
    let vals: Vec<String> = vals.into_iter().map(|(_, v)| v).collect();
    format!("variant \"{}\" with {}", v.name, vals.join(", "))
}

/// The whole validation of a scenario the file never states as such (a variant or sweep
/// point applied to it): the cross-reference checks, the timeline, and every check made
/// while reading a scenario (ranges, cross-field rules), by reading its RON `text` back.
fn validate_resolved(sc: &Scenario, text: &str) -> Result<(), String> {
    sc.check().map_err(|e| e.to_string())?;
    sc.check_timeline().map_err(|e| e.to_string())?;
    let mut de = ron::Deserializer::from_str(text).map_err(|e| e.to_string())?;
    let back: Result<ScenarioSpec<IgnoredAny>, _> = serde_path_to_error::deserialize(&mut de);
    back.map(|_| ()).map_err(|e| {
        let path = e.path().to_string();
        let m = e.into_inner().to_string();
        if path.is_empty() || path == "." { m } else { format!("{path}: {m}") }
    })
}

/// Plans the runs and checks the plan (constraints must leave something; a run limit).
pub(crate) fn finish_plan(src: &Source<'_>, mut exp: Experiment) -> Result<Experiment, LoadError> {
    let mut swept: Vec<String> = Vec::new();
    let sets =
        exp.variants.iter().flat_map(|v| v.set.iter()).chain(exp.sweep.iter().flatten().flatten());
    for a in sets {
        if !swept.contains(&a.path) {
            swept.push(a.path.clone());
        }
    }
    exp.swept = swept;
    let combos = exp.variants.len().saturating_mul(sweep::points(&exp.sweep).len());
    if combos.saturating_mul(exp.seeds.len()) > MAX_RUNS {
        return Err(src
            .error_at(
                exp.sweep_field,
                format!("the experiment plans more than {MAX_RUNS} runs; split it"),
            )
            .into());
    }
    exp.runs = exp.plan_runs(src)?;
    if exp.runs.is_empty() {
        return Err(src
            .error_at("constraints", "the constraints exclude every combination".into())
            .into());
    }
    exp.columns = Arc::new(crate::experiment::schema::plan_columns(&exp));
    Ok(exp)
}

impl Experiment {
    /// The runs, in order: variant, then sweep point, then seed as listed.
    pub fn plan(&self) -> Vec<PlannedRun> {
        self.runs.clone()
    }

    /// Resolves every variant × sweep point, checks each resolved scenario as a whole (a
    /// value may be in range alone and still break a cross-field rule with another), and
    /// refuses two points that resolve alike (they would share run ids: one run's files
    /// would replace the other's).
    fn plan_runs(&self, src: &Source<'_>) -> Result<Vec<PlannedRun>, InputError> {
        let settings = mix64(
            mix64(self.duration.0)
                ^ mix64(self.warmup.0.rotate_left(21))
                ^ mix64(self.sample_every.map(|d| d.0).unwrap_or(0).rotate_left(42)),
        );
        let points = sweep::points(&self.sweep);
        let mut runs = Vec::new();
        // Hash of (resolved scenario, settings, variant) → the point that has it.
        let mut seen: std::collections::HashMap<u64, (usize, String)> =
            std::collections::HashMap::new();
        for (vi, v) in self.variants.iter().enumerate() {
            let mut point = 0;
            for (pi, p) in points.iter().enumerate() {
                let fields = self.assignment_fields(src, vi, pi);
                let all: Vec<&Assignment> = v.set.iter().chain(p.iter()).collect();
                let desc = describe(v, &all);
                let base_sc = v.scenario_or(&self.scenario);
                let mut sc = (**base_sc).clone();
                let mut failed = set_all(&mut sc, &all, &fields);
                let text = ron::to_string(&sc).expect("scenarios serialize");
                if failed.is_none()
                    && let Err(m) = validate_resolved(&sc, &text)
                {
                    failed = Some((fields.last().cloned().unwrap_or_default(), m));
                }
                let excluded = match &failed {
                    // The values as meant (the scenario could not take them).
                    Some(_) => {
                        let reg = base_sc.registry();
                        let get = |path: &str| {
                            all.iter().rev().find(|a| a.path == path).map_or_else(
                                || reg.get(path).expect("checked path").value.clone(),
                                |a| a.value.clone(),
                            )
                        };
                        !self.constraints.iter().all(|c| c.holds(&get))
                    }
                    None => {
                        let reg = sc.registry();
                        let get = |path: &str| reg.get(path).expect("checked path").value.clone();
                        !self.constraints.iter().all(|c| c.holds(&get))
                    }
                };
                if excluded {
                    continue;
                }
                if let Some((field, m)) = failed {
                    return Err(src.error_at(&field, format!("{desc}: {m}")));
                }
                let reg = sc.registry();
                let params: Vec<Option<ParamValue>> =
                    self.swept.iter().map(|p| reg.get(p).map(|s| s.value.clone())).collect();
                let canon = canonical_text(&sc, text);
                let base =
                    mix64(name_id(&canon) ^ settings ^ mix64(name_id(&v.name).rotate_left(7)));
                if let Some((first, first_desc)) = seen.get(&base) {
                    return Err(src.error_at(
                        fields.last().map_or(self.sweep_field, |f| f.as_str()),
                        format!(
                            "{desc} resolves to the same scenario as point {first} ({first_desc}): \
                             their runs would share run ids and one would overwrite the other; \
                             remove the duplicate"
                        ),
                    ));
                }
                seen.insert(base, (point, desc));
                let sc = Arc::new(sc);
                for &seed in &self.seeds {
                    runs.push(PlannedRun {
                        run_id: format!("{:016x}", mix64(base ^ mix64(seed ^ 0x5EED))),
                        variant: v.name.clone(),
                        point,
                        params: params.clone(),
                        seed,
                        scenario: sc.clone(),
                    });
                }
                point += 1;
            }
        }
        let mut ids = std::collections::HashSet::with_capacity(runs.len());
        if let Some(r) = runs.iter().find(|r| !ids.insert(r.run_id.as_str())) {
            return Err(src.error_at(
                "seeds",
                format!("two runs share the run id {} (a hash collision); change a seed", r.run_id),
            ));
        }
        Ok(runs)
    }

    /// The field path in the file of each assignment of variant `vi` × sweep point `pi`
    /// (the variant's `set` entries, then each dimension's value), for messages.
    fn assignment_fields(&self, src: &Source<'_>, vi: usize, pi: usize) -> Vec<String> {
        let mut out: Vec<String> = (0..self.variants[vi].set.len())
            .map(|j| format!("variants[{vi}].set[{j}].value"))
            .collect();
        // Mixed-radix digits of `pi`, first dimension outermost (as `sweep::points`).
        let sw = self.sweep_field;
        let mut rest = pi;
        let mut digits = vec![0; self.sweep.len()];
        for (d, dim) in self.sweep.iter().enumerate().rev() {
            digits[d] = rest % dim.len().max(1);
            rest /= dim.len().max(1);
        }
        for (d, dim) in self.sweep.iter().enumerate() {
            let k = digits[d];
            for m in 0..dim.get(k).map_or(0, |p| p.len()) {
                let candidates = [
                    format!("{sw}[{d}].values[{k}]"),
                    format!("{sw}[{d}][{m}].values[{k}]"),
                    format!("{sw}[{d}][{k}][{m}].value"),
                ];
                let f = candidates
                    .iter()
                    .find(|c| src.offset(c).is_some())
                    .cloned()
                    .unwrap_or_else(|| format!("{sw}[{d}]"));
                out.push(f);
            }
        }
        out
    }

    /// The model's run configuration for a seed.
    pub fn run_config(&self, seed: u64) -> models::RunConfig {
        models::RunConfig {
            seed,
            duration: self.duration,
            warmup: self.warmup,
            sample_every: self.sample_every,
            limits: sim_core::Limits::default(),
            record_requests: self.outputs.requests,
        }
    }
}
