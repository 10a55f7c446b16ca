//! Pipelines: one user request fans out into several upstream calls (docs/domain.md §1, §3).
//!
//! A pipeline is a list of stages run one after the other; a stage is one step or several
//! steps run in parallel; a step makes a number of calls — fixed or random, e.g. "3–5 with
//! a tail to 8" — to one call site, one after the other (`Sequential`, an agent loop) or
//! all at once (`Parallel`, a retrieval fan-out). The calls' outcomes fold into the
//! request's outcome: a failed required call fails the request (no further call is
//! issued, calls in flight are awaited, like `CompletableFuture.allOf`); a failed optional
//! step degrades it (the layered fallback "skip retrieval when the vector DB is down").
//!
//! The key design decision: progression is a pure state machine ([`Progress`]) fed call
//! outcomes and returning what to issue next, so the fan-out logic is tested on scripts
//! without a world. Each call gets a `call_path` that depends only on its position
//! (stage, step, index), never on timing, so the calls of a request meet the same random
//! numbers under every policy (common random numbers).
//!
//! Architecture invariant: every call issued ends exactly once (`issued = ended + in
//! flight`), and a request ends exactly when its last call ends after no further call is
//! due. Limits: ≤ 64 stages, ≤ 16 parallel steps per stage, ≤ 256 calls per step.
//!
//! API boundary: the world owns calls and timing; this module sees only outcomes.

use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Deserializer, Serialize, de::Error};

pub const MAX_STAGES: usize = 64;
pub const MAX_PARALLEL_STEPS: usize = 16;
pub const MAX_CALLS_PER_STEP: u32 = 256;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Pipeline")]
pub struct PipelineSpec {
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Run in order. 1 to 64 stages.
    #[serde(deserialize_with = "stages")]
    pub stages: Vec<Stage>,
    /// Total budget of a request of this task type, from its arrival (`budget: "20s"`;
    /// default none): see [`crate::timeouts`].
    #[serde(
        default,
        deserialize_with = "crate::timeouts::budget",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub budget: Option<sim_core::SimDuration>,
}

/// One stage: a step, or steps running at the same time. Written
/// `Step(name: "llm", call: "llm", calls: Fixed(3))` or `Parallel([Step(..), Step(..)])`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Stage {
    Step {
        #[serde(deserialize_with = "crate::validate::name")]
        name: String,
        /// The call site each call goes through.
        call: String,
        /// How many calls (default `Fixed(1)`).
        #[serde(default)]
        calls: CallCount,
        /// How the calls of this step run (default `Sequential`).
        #[serde(default)]
        mode: Mode,
        /// A failure here degrades the request instead of failing it (default false).
        #[serde(default)]
        optional: bool,
        /// Does the request hold its worker thread while this step runs (`blocking:
        /// false`: asynchronous)? Default: the app's `blocking` (see [`crate::timeouts`]).
        #[serde(
            default,
            deserialize_with = "crate::validate::present",
            serialize_with = "crate::validate::ser_present",
            skip_serializing_if = "Option::is_none"
        )]
        blocking: Option<bool>,
    },
    /// 2 to 16 steps started together; the stage ends when all have ended.
    Parallel(#[serde(deserialize_with = "parallel")] Vec<Stage>),
}

/// One step of a stage, as the progression sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct StepSpec {
    pub name: String,
    pub call: String,
    pub calls: CallCount,
    pub mode: Mode,
    pub optional: bool,
    /// Holds the worker thread (`None`: as the app says).
    pub blocking: Option<bool>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// One call after the other (an agent's tool loop).
    #[default]
    Sequential,
    /// All calls at once (fan-out).
    Parallel,
}

/// The number of calls a step makes, drawn per request from its keyed random numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum CallCount {
    Fixed(u32),
    /// Uniform on `min..=max`.
    Uniform {
        min: u32,
        max: u32,
    },
    /// `(count, weight)` pairs: e.g. `[(3, 30), (4, 30), (5, 30), (8, 10)]`.
    Choice(Vec<(u32, f64)>),
}

impl Default for CallCount {
    fn default() -> Self {
        CallCount::Fixed(1)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "CallCount")]
enum RawCount {
    Fixed(u32),
    Uniform { min: u32, max: u32 },
    Choice(Vec<(u32, f64)>),
}

impl<'de> Deserialize<'de> for CallCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let in_range = |n: u32| (1..=MAX_CALLS_PER_STEP).contains(&n);
        let bad = |what: String| D::Error::custom(what);
        Ok(match RawCount::deserialize(d)? {
            RawCount::Fixed(n) if in_range(n) => CallCount::Fixed(n),
            RawCount::Fixed(n) => {
                return Err(bad(format!("expected 1 to {MAX_CALLS_PER_STEP} calls, found {n}")));
            }
            RawCount::Uniform { min, max } if in_range(min) && in_range(max) && min <= max => {
                CallCount::Uniform { min, max }
            }
            RawCount::Uniform { min, max } => {
                return Err(bad(format!(
                    "expected 1 ≤ min ≤ max ≤ {MAX_CALLS_PER_STEP}, found min {min}, max {max}"
                )));
            }
            RawCount::Choice(v) => {
                if v.is_empty() || v.len() > MAX_CALLS_PER_STEP as usize {
                    return Err(bad(format!("expected 1 to 256 choices, found {}", v.len())));
                }
                for &(n, w) in &v {
                    if !(in_range(n) && w.is_finite() && w > 0.0) {
                        return Err(bad(format!(
                            "expected (count 1..={MAX_CALLS_PER_STEP}, weight > 0), found ({n}, {w})"
                        )));
                    }
                }
                CallCount::Choice(v)
            }
        })
    }
}

impl CallCount {
    /// The count for a uniform `u` in (0, 1) (inversion: monotone in `u`).
    pub fn pick(&self, u: f64) -> u32 {
        match self {
            CallCount::Fixed(n) => *n,
            CallCount::Uniform { min, max } => {
                let span = (max - min + 1) as f64;
                (min + (u * span) as u32).min(*max)
            }
            CallCount::Choice(v) => {
                let total: f64 = v.iter().map(|c| c.1).sum();
                let mut acc = 0.0;
                for &(n, w) in v {
                    acc += w / total;
                    if u < acc {
                        return n;
                    }
                }
                v.last().expect("validated: non-empty").0
            }
        }
    }
    /// The exact mean.
    pub fn mean(&self) -> f64 {
        match self {
            CallCount::Fixed(n) => *n as f64,
            CallCount::Uniform { min, max } => (*min as f64 + *max as f64) / 2.0,
            CallCount::Choice(v) => {
                let total: f64 = v.iter().map(|c| c.1).sum();
                v.iter().map(|&(n, w)| n as f64 * w).sum::<f64>() / total
            }
        }
    }
}

fn stages<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Stage>, D::Error> {
    let v = Vec::<Stage>::deserialize(d)?;
    if v.is_empty() || v.len() > MAX_STAGES {
        return Err(D::Error::custom(format!("expected 1 to 64 stages, found {}", v.len())));
    }
    Ok(v)
}

fn parallel<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Stage>, D::Error> {
    let v = Vec::<Stage>::deserialize(d)?;
    if v.len() < 2 || v.len() > MAX_PARALLEL_STEPS {
        return Err(D::Error::custom(format!(
            "expected 2 to 16 parallel steps, found {}",
            v.len()
        )));
    }
    if v.iter().any(|s| matches!(s, Stage::Parallel(_))) {
        return Err(D::Error::custom("expected Step(..) inside Parallel, found Parallel"));
    }
    Ok(v)
}

impl Stage {
    /// The steps of this stage (one, or the parallel ones).
    pub fn steps(&self) -> Vec<StepSpec> {
        match self {
            Stage::Step { name, call, calls, mode, optional, blocking } => vec![StepSpec {
                name: name.clone(),
                call: call.clone(),
                calls: calls.clone(),
                mode: *mode,
                optional: *optional,
                blocking: *blocking,
            }],
            Stage::Parallel(v) => v.iter().flat_map(|s| s.steps()).collect(),
        }
    }
}

/// A pipeline ready to run: stages of steps.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    pub name: String,
    pub stages: Vec<Vec<StepSpec>>,
}

impl PipelineSpec {
    pub fn compile(&self) -> Pipeline {
        Pipeline { name: self.name.clone(), stages: self.stages.iter().map(Stage::steps).collect() }
    }
}

impl Pipeline {
    /// Mean calls per request when every call succeeds (the configured fan-out).
    pub fn mean_calls(&self) -> f64 {
        self.stages.iter().flatten().map(|s| s.calls.mean()).sum()
    }
    /// The pipeline of a source that targets a call site directly: one call.
    pub fn single(call: &str) -> Pipeline {
        Pipeline {
            name: call.to_string(),
            stages: vec![vec![StepSpec {
                name: call.to_string(),
                call: call.to_string(),
                calls: CallCount::Fixed(1),
                mode: Mode::Sequential,
                optional: false,
                blocking: None,
            }]],
        }
    }
}

/// A call to issue: which step, and its stable path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Issue {
    pub stage: u16,
    pub step: u16,
    /// Index of the call within its step.
    pub index: u32,
}

impl Issue {
    /// The call's position as a key for its random numbers; 0 is the request itself.
    pub fn call_path(self) -> u32 {
        ((self.stage as u32 + 1) << 16) | ((self.step as u32) << 8) | (self.index & 0xff)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct StepState {
    /// Calls still to issue (sequential steps).
    remaining: u32,
    next_index: u32,
    in_flight: u32,
}

/// What happens next after a call ended or a stage started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Advance {
    /// Issue these calls now (possibly none: wait for calls in flight).
    Issue(Vec<Issue>),
    /// The request is over.
    Done(Outcome),
}

/// One request's progress through its pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    stage: u16,
    steps: Vec<StepState>,
    failed: Option<Outcome>,
    degraded: Option<Reason>,
}

impl Progress {
    /// The progress of a request whose pipeline is one direct call: the world issues that
    /// call itself and ends the request with its outcome (no allocation on the hot path);
    /// folding one required call's outcome is the identity.
    pub fn single() -> Self {
        Progress { stage: 0, steps: Vec::new(), failed: None, degraded: None }
    }

    /// Starts a request; `draw(stage, step)` is the uniform in (0, 1) that picks a step's
    /// number of calls (a keyed draw in the world).
    pub fn start(p: &Pipeline, draw: &mut impl FnMut(u16, u16) -> f64) -> (Self, Advance) {
        let mut me = Progress { stage: 0, steps: Vec::new(), failed: None, degraded: None };
        let adv = me.enter_stage(p, draw);
        (me, adv)
    }

    fn enter_stage(&mut self, p: &Pipeline, draw: &mut impl FnMut(u16, u16) -> f64) -> Advance {
        loop {
            let Some(stage) = p.stages.get(self.stage as usize) else {
                return Advance::Done(self.outcome());
            };
            self.steps.clear();
            let mut out = Vec::new();
            for (k, step) in stage.iter().enumerate() {
                let n = step.calls.pick(draw(self.stage, k as u16));
                let now = if step.mode == Mode::Parallel { n } else { 1 };
                for index in 0..now {
                    out.push(Issue { stage: self.stage, step: k as u16, index });
                }
                self.steps.push(StepState { remaining: n - now, next_index: now, in_flight: now });
            }
            if !out.is_empty() {
                return Advance::Issue(out);
            }
            self.stage += 1;
        }
    }

    /// A call of this request ended with `o`.
    pub fn call_ended(
        &mut self,
        p: &Pipeline,
        issue: Issue,
        o: Outcome,
        draw: &mut impl FnMut(u16, u16) -> f64,
    ) -> Advance {
        assert_eq!(issue.stage, self.stage, "a call of the current stage");
        let spec = &p.stages[self.stage as usize][issue.step as usize];
        let st = &mut self.steps[issue.step as usize];
        assert!(st.in_flight > 0, "a call in flight ends once");
        st.in_flight -= 1;
        match o {
            Outcome::Success => {}
            Outcome::Degraded(r) => {
                self.degraded.get_or_insert(r);
            }
            Outcome::Failed(r) | Outcome::Rejected(r) if spec.optional => {
                self.degraded.get_or_insert(r);
                st.remaining = 0; // an optional step that failed is skipped
            }
            Outcome::Failed(_) | Outcome::Rejected(_) => {
                self.failed.get_or_insert(o);
            }
        }
        let mut out = Vec::new();
        if self.failed.is_none() && st.remaining > 0 {
            st.remaining -= 1;
            st.in_flight += 1;
            out.push(Issue { stage: self.stage, step: issue.step, index: st.next_index });
            st.next_index += 1;
        }
        if !out.is_empty() {
            return Advance::Issue(out);
        }
        if self.steps.iter().any(|s| s.in_flight > 0) {
            return Advance::Issue(Vec::new());
        }
        if self.failed.is_some() {
            return Advance::Done(self.outcome());
        }
        self.stage += 1;
        self.enter_stage(p, draw)
    }

    fn outcome(&self) -> Outcome {
        match (self.failed, self.degraded) {
            (Some(o), _) => o,
            (None, Some(r)) => Outcome::Degraded(r),
            (None, None) => Outcome::Success,
        }
    }
}

/// Does a stage hold its request's worker thread? Yes when any of its steps blocks
/// (a step without `blocking` follows the app's).
pub fn stage_holds_thread(steps: &[StepSpec], app_blocking: bool) -> bool {
    steps.iter().any(|s| s.blocking.unwrap_or(app_blocking))
}

#[cfg(test)]
mod tests;
