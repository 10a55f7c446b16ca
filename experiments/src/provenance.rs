//! `manifest.ron` and `experiment.ron`: what was run, with which code, for provenance and
//! for merging and resuming split batches.
//!
//! Each planned run's `state` in the manifest is read from its `runs` part when the
//! manifest is written (as a batch starts and as it ends, interrupted or not): `Pending`
//! (no part), `Done` (`ok`), `Failed` (`error`: running it again fails again) or
//! `Interrupted` (cut short by a signal: no result yet). `--resume` runs every run that is
//! not `Done`. Concurrent shards write it in turn (an exclusive lock on the folder, on Unix),
//! each from the parts on disk, so the last one written is never older than the parts.

use crate::experiment::{Experiment, Outputs};
use crate::results::{shard_of, write_text};
use crate::sweep::{Assignment, Constraint};
use crate::variant::Variant;
use models::Scenario;
use serde::Serialize;
use sim_core::SimDuration;
use sim_core::rng::name_id;
use std::path::Path;

#[derive(Serialize)]
#[serde(rename = "Manifest")]
struct Manifest<'a> {
    stormglass_version: &'static str,
    experiment: &'a str,
    /// Hash of the resolved base scenario (before variants and sweeps).
    scenario_hash: String,
    shards: u32,
    runs: Vec<ManifestRun<'a>>,
}

#[derive(Serialize)]
struct ManifestRun<'a> {
    run_id: &'a str,
    run_index: usize,
    variant: &'a str,
    point: usize,
    seed: u64,
    shard: u32,
    state: RunState,
}

/// Where a planned run stands (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RunState {
    Pending,
    Done,
    Failed,
    Interrupted,
}

impl RunState {
    /// The state of a run whose `runs` part has this `status` (`None`: no part).
    pub fn of(status: Option<&str>) -> RunState {
        match status {
            None => RunState::Pending,
            Some("ok") => RunState::Done,
            Some("interrupted") => RunState::Interrupted,
            // An unreadable part is no result either: `--resume` runs it again.
            Some(_) => RunState::Failed,
        }
    }
}

#[derive(Serialize)]
#[serde(rename = "Experiment")]
struct Resolved<'a> {
    name: &'a str,
    description: &'a str,
    duration: SimDuration,
    warmup: SimDuration,
    sample_every: Option<SimDuration>,
    seeds: &'a [u64],
    outputs: Outputs,
    scenario: &'a Scenario,
    variants: &'a [Variant],
    sweep: &'a [Vec<Vec<Assignment>>],
    constraints: &'a [Constraint],
    runs: usize,
}

/// The hash of the resolved base scenario.
pub fn scenario_hash(exp: &Experiment) -> String {
    format!("{:016x}", name_id(&crate::experiment::canonical(&exp.scenario)))
}

/// An exclusive lock on the folder itself, held while the manifest is written (Unix; where
/// a folder cannot be opened as a file, none: the manifest is still replaced whole).
fn folder_lock(root: &Path) -> Option<std::fs::File> {
    let f = std::fs::File::open(root).ok()?;
    f.lock().ok()?;
    Some(f)
}

/// Writes `manifest.ron` (every run's state read from its part now) and `experiment.ron`
/// into the experiment folder.
pub fn write(root: &Path, exp: &Experiment, shards: u32) -> std::io::Result<()> {
    std::fs::create_dir_all(root)?;
    let _lock = folder_lock(root);
    let statuses = crate::results::run_statuses(root)?;
    let pretty = ron::ser::PrettyConfig::default();
    let m = Manifest {
        stormglass_version: env!("CARGO_PKG_VERSION"),
        experiment: &exp.name,
        scenario_hash: scenario_hash(exp),
        shards,
        runs: exp
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| ManifestRun {
                run_id: &r.run_id,
                run_index: i,
                variant: &r.variant,
                point: r.point,
                seed: r.seed,
                shard: shard_of(i, shards),
                state: RunState::of(statuses.get(&r.run_id).map(String::as_str)),
            })
            .collect(),
    };
    let text = ron::ser::to_string_pretty(&m, pretty.clone()).expect("manifest serializes");
    write_text(&root.join("manifest.ron"), &text)?;
    let r = Resolved {
        name: &exp.name,
        description: &exp.description,
        duration: exp.duration,
        warmup: exp.warmup,
        sample_every: exp.sample_every,
        seeds: &exp.seeds,
        outputs: exp.outputs,
        scenario: &exp.scenario,
        variants: &exp.variants,
        sweep: &exp.sweep,
        constraints: &exp.constraints,
        runs: exp.runs.len(),
    };
    let text = ron::ser::to_string_pretty(&r, pretty).expect("experiment serializes");
    write_text(&root.join("experiment.ron"), &text)
}
