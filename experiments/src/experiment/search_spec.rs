//! The `search` block of an experiment file: read, checked (every error at its field, with
//! what was expected), resolved into a [`Search`] with its own plan.
//!
//! ```ron
//! search: Search(
//!     space: [Range(path: "gate.llm.permits", from: 50, to: 100, step: 5)],
//!     seeds: Range(0, 20),                       // optional: the experiment's seeds
//!     objective: Maximize("class.P0.goodput"),   // or Minimize(...)
//!     constraints: [(metric: "class.P0.latency_ms_p99", op: Le, value: 3000)],
//!     pareto: Minimize("class.P0.latency_ms_p99"),   // optional: the front's second objective
//!     race: Race(first: 5, step: 5, confidence: 0.95),   // optional: these defaults
//! )
//! ```

use super::metric::{self, Metric};
use super::{Experiment, LoadError, Seeds, finish_plan};
use crate::ronfile::{InputError, Source};
use crate::sweep::{Op, SweepFile, present, resolve_sweep};
use crate::variant::for_every_variant;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "Search")]
pub(crate) struct SearchFile {
    space: Vec<SweepFile>,
    #[serde(default, deserialize_with = "present")]
    seeds: Option<Seeds>,
    objective: Goal,
    #[serde(default)]
    constraints: Vec<BoundFile>,
    #[serde(default, deserialize_with = "present")]
    pareto: Option<Goal>,
    #[serde(default)]
    race: RaceFile,
}

/// An objective as written.
#[derive(Clone, Debug, Deserialize)]
enum Goal {
    Maximize(String),
    Minimize(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoundFile {
    metric: String,
    op: Op,
    value: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "Race")]
struct RaceFile {
    #[serde(default = "five")]
    first: usize,
    #[serde(default = "five")]
    step: usize,
    #[serde(default = "level")]
    confidence: f64,
}

fn five() -> usize {
    5
}
fn level() -> f64 {
    0.95
}

impl Default for RaceFile {
    fn default() -> Self {
        RaceFile { first: five(), step: five(), confidence: level() }
    }
}

/// What to optimise.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Objective {
    pub metric: Metric,
    pub maximize: bool,
}

impl Objective {
    /// `max class.P0.goodput`.
    pub fn label(&self) -> String {
        format!("{} {}", if self.maximize { "max" } else { "min" }, self.metric)
    }
}

/// `metric op value`, on the metric's mean over seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bound {
    pub metric: Metric,
    pub op: Op,
    pub value: f64,
}

impl Bound {
    /// Whether `x` satisfies the bound.
    pub fn holds(&self, x: f64) -> bool {
        match self.op {
            Op::Lt => x < self.value,
            Op::Le => x <= self.value,
            Op::Ge => x >= self.value,
            Op::Gt => x > self.value,
            Op::Eq | Op::Ne => unreachable!("refused at load"),
        }
    }
    /// Whether the bound is an upper limit (`Lt`, `Le`).
    pub fn upper(&self) -> bool {
        matches!(self.op, Op::Lt | Op::Le)
    }
    /// `class.P0.latency_ms_p99 <= 3000`.
    pub fn label(&self) -> String {
        let op = match self.op {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Eq | Op::Ne => "?",
        };
        format!("{} {op} {}", self.metric, self.value)
    }
}

/// A resolved search.
#[derive(Clone, Debug)]
pub struct Search {
    /// Every candidate (variant × space point, the experiment's constraints applied) ×
    /// every seed, in plan order: candidate `c` is runs `c·S .. (c+1)·S` (S seeds).
    pub plan: Experiment,
    pub objective: Objective,
    pub constraints: Vec<Bound>,
    pub pareto: Option<Objective>,
    /// Seeds of round 1, and added per later round.
    pub first: usize,
    pub step: usize,
    pub confidence: f64,
}

impl Search {
    /// Number of candidates.
    pub fn candidates(&self) -> usize {
        self.plan.runs.len() / self.plan.seeds.len()
    }
    /// The metrics read from each run, in order: objective, constraints, Pareto metric.
    pub fn metrics(&self) -> Vec<&Metric> {
        std::iter::once(&self.objective.metric)
            .chain(self.constraints.iter().map(|b| &b.metric))
            .chain(self.pareto.iter().map(|p| &p.metric))
            .collect()
    }
}

/// Resolves the block against the experiment (already planned: its variants resolved).
pub(crate) fn resolve(
    src: &Source<'_>,
    exp: &Experiment,
    f: &SearchFile,
) -> Result<Search, LoadError> {
    let mut errs: Vec<InputError> = Vec::new();
    // Columns every variant's runs have.
    let mut known: Option<Vec<String>> = None;
    for v in &exp.variants {
        let cols = metric::columns(v.scenario_or(&exp.scenario));
        known = Some(match known {
            None => cols,
            Some(k) => k.into_iter().filter(|c| cols.contains(c)).collect(),
        });
    }
    let known = known.unwrap_or_default();
    let mut goal = |field: &str, g: &Goal| -> Option<Objective> {
        let (text, maximize) = match g {
            Goal::Maximize(t) => (t, true),
            Goal::Minimize(t) => (t, false),
        };
        Metric::parse(text, &known)
            .map(|metric| Objective { metric, maximize })
            .map_err(|m| errs.push(src.error_at(field, m)))
            .ok()
    };
    let objective = goal("search.objective", &f.objective);
    let pareto = f.pareto.as_ref().and_then(|p| goal("search.pareto", p));
    let pareto_bad = f.pareto.is_some() && pareto.is_none();
    let mut constraints = Vec::new();
    for (i, b) in f.constraints.iter().enumerate() {
        let field = format!("search.constraints[{i}]");
        if matches!(b.op, Op::Eq | Op::Ne) {
            errs.push(src.error_at(
                &format!("{field}.op"),
                format!(
                    "expected one of `Lt`, `Le`, `Ge`, `Gt` (a mean over seeds is never exactly equal to a value), found `{:?}`",
                    b.op
                ),
            ));
        }
        if !b.value.is_finite() {
            errs.push(src.error_at(
                &format!("{field}.value"),
                format!("expected a finite number, found {}", b.value),
            ));
        }
        match Metric::parse(&b.metric, &known) {
            Ok(metric) => constraints.push(Bound { metric, op: b.op, value: b.value }),
            Err(m) => errs.push(src.error_at(&format!("{field}.metric"), m)),
        }
    }
    let r = &f.race;
    if r.first < 2 {
        errs.push(src.error_at(
            "search.race.first",
            format!(
                "expected at least 2 seeds in round 1 (a confidence interval needs two), found {}",
                r.first
            ),
        ));
    }
    if r.step == 0 {
        errs.push(
            src.error_at("search.race.step", "expected at least 1 seed per round, found 0".into()),
        );
    }
    if !(0.5..1.0).contains(&r.confidence) {
        errs.push(src.error_at(
            "search.race.confidence",
            format!("expected a confidence in [0.5, 1), found {}", r.confidence),
        ));
    }
    let seed_field = if f.seeds.is_some() { "search.seeds" } else { "seeds" };
    // Counted before listed: a range can be astronomically long (found by the fuzzer slice:
    // a huge `Range` allocated 34 GB here before the count was checked).
    let too_many = f.seeds.as_ref().is_some_and(|s| s.count() > super::MAX_RUNS as u64);
    let seeds = match &f.seeds {
        Some(_) if too_many => Vec::new(),
        Some(s) => s.to_vec(),
        None => exp.seeds.clone(),
    };
    let mut sorted = seeds.clone();
    sorted.sort_unstable();
    if too_many {
        let n = f.seeds.as_ref().map_or(0, Seeds::count);
        errs.push(src.error_at(
            seed_field,
            format!("expected at most {} seeds, found {n}", super::MAX_RUNS),
        ));
    } else if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        errs.push(src.error_at(seed_field, format!("seed {} is listed twice", w[0])));
    } else if seeds.len() < r.first.max(2) {
        errs.push(src.error_at(
            seed_field,
            format!(
                "expected at least {} seeds (race.first), found {}",
                r.first.max(2),
                seeds.len()
            ),
        ));
    }
    let space = for_every_variant(&exp.variants, &exp.scenario, |reg| {
        resolve_sweep(src, reg, "search.space", &f.space)
    });
    let space = match space {
        Ok(s) if s.is_empty() => {
            errs.push(src.error_at(
                "search.space",
                "expected at least one dimension to search, found none".into(),
            ));
            None
        }
        Ok(s) => Some(s),
        Err(e) => {
            errs.push(e);
            None
        }
    };
    let (Some(objective), Some(space), false, true) =
        (objective, space, pareto_bad, errs.is_empty())
    else {
        errs.sort_by_key(|e| (e.line, e.col));
        return Err(match errs.len() {
            1 => errs.pop().expect("one").into(),
            _ => LoadError::Many(errs.into_iter().map(LoadError::from).collect()),
        });
    };
    let inner = Experiment {
        sweep: space,
        seeds,
        runs: vec![],
        swept: vec![],
        columns: Default::default(),
        search: None,
        sweep_field: "search.space",
        ..exp.clone()
    };
    let plan = finish_plan(src, inner)?;
    Ok(Search {
        plan,
        objective,
        constraints,
        pareto,
        first: r.first,
        step: r.step,
        confidence: r.confidence,
    })
}
