//! `manifest.ron` and `experiment.ron`: what was run, with which code, for provenance and
//! for merging and resuming split batches.

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

/// Writes `manifest.ron` and `experiment.ron` into the experiment folder.
pub fn write(root: &Path, exp: &Experiment, shards: u32) -> std::io::Result<()> {
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
