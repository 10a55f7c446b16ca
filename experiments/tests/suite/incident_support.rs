//! Shared helpers of the incident-library tests (`experiments/incidents/*.ron`, docs/domain.md §6):
//! load an incident file as a user would, shorten it (duration, seeds), run every variant
//! on the same seeds, and read the per-variant means of summary columns.

#![allow(dead_code)]

use experiments::experiment::{Experiment, RunDefaults, load};
use experiments::runner::{RunRecord, Status, run_all};
use sim_core::SimDuration;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// The incident library's folder.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("incidents")
}

/// Loads `experiments/incidents/<file>` (panics with the loader's message when invalid).
pub fn load_incident(file: &str) -> Experiment {
    let path = dir().join(file);
    load(&path, &RunDefaults::default()).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The runs of an incident, all variants on the same seeds.
pub struct Runs {
    pub file: String,
    pub recs: Vec<RunRecord>,
}

/// Runs `file` for `secs` simulated seconds (None: the file's duration) on its first
/// `seeds` seeds, every variant; per-request records when `requests`. Every run must end
/// `Ok` (no error, no invariant violated).
pub fn run(file: &str, secs: Option<u64>, seeds: usize, requests: bool) -> Runs {
    let mut exp = load_incident(file);
    if let Some(s) = secs {
        exp.duration = SimDuration::from_secs(s);
        assert!(exp.warmup < exp.duration, "{file}: warm-up longer than the shortened run");
    }
    exp.outputs.requests = requests;
    let keep: Vec<u64> = exp.seeds.iter().copied().take(seeds).collect();
    let idx: Vec<usize> =
        (0..exp.runs.len()).filter(|&i| keep.contains(&exp.runs[i].seed)).collect();
    let recs = run_all(&exp, &idx, 2, &AtomicBool::new(false), &mut |_| {});
    for r in &recs {
        assert_eq!(r.status, Status::Ok, "{file} {} seed {}", r.variant, r.seed);
    }
    Runs { file: file.to_string(), recs }
}

impl Runs {
    /// The runs of one variant (panics if there are none).
    pub fn of(&self, variant: &str) -> Vec<&RunRecord> {
        let v: Vec<&RunRecord> = self.recs.iter().filter(|r| r.variant == variant).collect();
        assert!(!v.is_empty(), "{}: no variant {variant}", self.file);
        v
    }

    /// A summary column in each run of `variant`.
    pub fn each(&self, variant: &str, col: &str) -> Vec<f64> {
        self.of(variant)
            .iter()
            .map(|r| {
                r.summary
                    .get(col)
                    .unwrap_or_else(|| panic!("{}: no summary column {col}", self.file))
            })
            .collect()
    }

    /// The mean over seeds of a summary column in `variant`.
    pub fn mean(&self, variant: &str, col: &str) -> f64 {
        let v = self.each(variant, col);
        let m = v.iter().sum::<f64>() / v.len() as f64;
        println!("{} {variant} {col} = {m:.4} (per seed {v:?})", self.file);
        m
    }

    /// The largest value of a time-series metric over every bucket of every run of `variant`.
    pub fn series_max(&self, variant: &str, metric: &str) -> f64 {
        let rows = self.of(variant).into_iter().flat_map(|r| r.series.iter());
        let v = rows.filter(|row| row.metric == metric).map(|row| row.value);
        let m = v.fold(f64::NEG_INFINITY, f64::max);
        assert!(m.is_finite(), "{}: no series {metric}", self.file);
        m
    }

    /// State changes (`FROM -> TO`) of one component in each run of `variant`.
    pub fn transitions(&self, variant: &str, component: &str) -> Vec<Vec<(f64, String)>> {
        self.of(variant)
            .iter()
            .map(|r| {
                r.state_events
                    .iter()
                    .filter(|e| e.kind == "state_change" && e.component == component)
                    .map(|e| (e.time.0 as f64 / 1e9, format!("{} -> {}", e.from, e.to)))
                    .collect()
            })
            .collect()
    }
}
