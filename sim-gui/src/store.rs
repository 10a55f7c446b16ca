//! What the UI holds of a session: time series by metric, model events, recorded changes,
//! the latest status and summary. Filled only from the worker's [`Update`]s.

use crate::worker::{Status, Update};
use egui_plot::PlotPoint;
use models::observe::ComponentState;
use models::params::ParamValue;
use models::scenario::SetParam;
use models::summary::Summary;
use models::world::ModelEvent;
use sim_core::metrics::MetricReading;
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// A breaker's lane: its path and the spans `(from s, to s, state)` of its states.
pub type Lane = (String, Vec<(f64, f64, String)>);

/// The UI's copy of a session's observable state.
#[derive(Default)]
pub struct Store {
    pub generation: u64,
    pub seed: u64,
    pub end: SimTime,
    pub sample_every: Option<SimDuration>,
    /// Points `(bucket start in s, value)` by metric name (engine series and the derived
    /// `summary.*` per-bucket counts).
    pub series: BTreeMap<String, Vec<PlotPoint>>,
    pub events: Vec<ModelEvent>,
    /// The session's recorded changes, each stamped with its instant (`at`).
    pub changes: Vec<SetParam<ParamValue>>,
    pub status: Status,
    pub summary: Option<Summary>,
    /// The session's row of the `runs` table: (column, value as the table holds it).
    pub runs_row: Vec<(String, String)>,
    /// Refused commands and other notices, newest last.
    pub notices: Vec<String>,
    pub exported: Option<Result<std::path::PathBuf, String>>,
}

impl Store {
    /// Applies one update; returns true when a new session replaced the old one.
    pub fn apply(&mut self, u: Update) -> bool {
        match u {
            Update::Session { generation, seed, end, sample_every } => {
                *self = Store {
                    generation,
                    seed,
                    end,
                    sample_every,
                    notices: std::mem::take(&mut self.notices),
                    ..Store::default()
                };
                return true;
            }
            Update::Status(s) => self.status = *s,
            Update::Rows(rows) | Update::Derived(rows) => {
                for r in rows {
                    let x = r.bucket_start_ns as f64 / 1e9;
                    self.series.entry(r.metric).or_default().push(PlotPoint::new(x, r.value));
                }
            }
            Update::Events(ev) => self.events.extend(ev),
            Update::Changes(c) => self.changes = c,
            Update::Summary(s) => self.summary = Some(*s),
            Update::RunsRow(r) => self.runs_row = r,
            Update::Refused(e) => self.notices.push(e),
            Update::Exported(r) => {
                self.notices.push(match &r {
                    Ok(p) => format!("session exported to {}", p.display()),
                    Err(e) => format!("export failed: {e}"),
                });
                self.exported = Some(r);
            }
        }
        false
    }

    /// Points of a metric (empty when unknown).
    pub fn points(&self, metric: &str) -> &[PlotPoint] {
        self.series.get(metric).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// Metric names matching a predicate, sorted.
    pub fn metrics<'a>(&'a self, f: impl Fn(&str) -> bool + 'a) -> impl Iterator<Item = &'a str> {
        self.series.keys().map(|k| k.as_str()).filter(move |k| f(k))
    }

    /// Total number of plotted points (the tests check that it grows).
    pub fn point_count(&self) -> usize {
        self.series.values().map(|v| v.len()).sum()
    }

    /// A metric's reading now, by path.
    pub fn metric(&self, path: &str) -> Option<MetricReading> {
        let m = &self.status.observed.metrics;
        m.binary_search_by(|(p, _)| p.as_str().cmp(path)).ok().map(|i| m[i].1)
    }

    /// A parameter's value in force now (`None` before the session's first status).
    pub fn param(&self, path: &str) -> Option<&ParamValue> {
        self.status.observed.params.iter().find(|(p, _)| p == path).map(|(_, v)| v)
    }

    /// The states of a component by path: the component itself, or for a governor
    /// declared per app instance, one per instance (`gate.llm@app.0` …).
    pub fn components<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a ComponentState> {
        let snap = self.status.observed.snapshot.as_ref();
        snap.into_iter().flat_map(|s| s.components.iter()).filter(move |c| {
            c.path == id
                || c.path.strip_prefix(id).is_some_and(|r| r.starts_with('@') || r.starts_with('.'))
        })
    }

    /// A summary value by column name.
    pub fn summary_value(&self, name: &str) -> Option<f64> {
        let s = self.summary.as_ref()?;
        s.values.iter().find(|(n, _)| n == name).map(|(_, v)| match v {
            models::summary::Value::U64(x) => *x as f64,
            models::summary::Value::F64(x) => *x,
        })
    }

    /// The latest state of every breaker-like component (from its `state_change` events),
    /// and the spans `(from s, to s, state)` of each state over the run so far.
    pub fn breaker_states(&self) -> BTreeMap<String, Vec<(f64, f64, String)>> {
        let now = self.status.now.0 as f64 / 1e9;
        let mut out: BTreeMap<String, Vec<(f64, f64, String)>> = BTreeMap::new();
        for e in self.events.iter().filter(|e| e.kind == "state_change") {
            let spans = out.entry(e.component.clone()).or_default();
            let t = e.time.0 as f64 / 1e9;
            if spans.is_empty() {
                spans.push((0.0, t, e.from.clone()));
            } else if let Some(last) = spans.last_mut() {
                last.1 = t;
            }
            spans.push((t, now, e.to.clone()));
        }
        for spans in out.values_mut() {
            if let Some(last) = spans.last_mut() {
                last.1 = last.1.max(now);
            }
        }
        out
    }

    /// One lane per breaker-like component, in path order: the spans of its states from
    /// t = 0 to now — from its `state_change` events, or, before its first transition, the
    /// state its observed component state shows (a breaker that never moved is a lane too).
    pub fn breaker_lanes(&self) -> Vec<Lane> {
        let now = self.status.now.0 as f64 / 1e9;
        let mut lanes = self.breaker_states();
        let snap = self.status.observed.snapshot.as_ref();
        for (path, b) in snap.into_iter().flat_map(|s| s.breakers()) {
            lanes.entry(path.to_string()).or_insert_with(|| vec![(0.0, now, b.state.to_string())]);
        }
        lanes.into_iter().collect()
    }
}
