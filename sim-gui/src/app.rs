//! The workbench window: the open bar and run controls on top, the knobs on the left, the
//! views (plots, request path, events, summary, compare) in the middle, the time cursor at
//! the bottom. Each panel is its own module under [`crate::ui`]; this file holds the state
//! they share and the frame loop.

use crate::session::Selection;
use crate::store::Store;
use crate::ui;
use crate::worker::{Cmd, Speed, Worker};
use experiments::catalog::{self, Entry};
use experiments::{Experiment, RunDefaults};
use models::params::{ParamValue, Registry};
use models::scenario::Scenario;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The central views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Plots,
    Diagram,
    Events,
    Summary,
    Compare,
}

impl View {
    pub const ALL: [View; 5] =
        [View::Plots, View::Diagram, View::Events, View::Summary, View::Compare];
    pub fn label(self) -> &'static str {
        match self {
            View::Plots => "Plots",
            View::Diagram => "Request path",
            View::Events => "Events",
            View::Summary => "Summary",
            View::Compare => "Compare",
        }
    }
}

/// The experiment the workbench opens at start (bundled: `stormglass run workbench`).
pub const SHOWCASE: &str = "workbench";

/// An open experiment, as the UI sees it.
pub struct Opened {
    pub exp: Arc<Experiment>,
    pub sel: Selection,
    /// The selection's scenario (variant, sweep point and overrides applied).
    pub scenario: Scenario,
    pub registry: Registry,
}

/// App CPU time per frame, measured inside `ui` (UI, plots; tessellation is measured by
/// the benchmark, which drives the context itself).
#[derive(Default)]
pub struct FrameTimes {
    pub ms: Vec<f64>,
}

impl FrameTimes {
    const KEEP: usize = 600;
    pub fn push(&mut self, ms: f64) {
        if self.ms.len() == Self::KEEP {
            self.ms.remove(0);
        }
        self.ms.push(ms);
    }
    /// The `q`-quantile of the kept frame times.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.ms.is_empty() {
            return 0.0;
        }
        let mut v = self.ms.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
    }
}

pub struct Workbench {
    pub worker: Worker,
    /// Asks for a repaint (from any thread).
    pub wake: Arc<dyn Fn() + Send + Sync>,
    pub catalog: Vec<Entry>,
    pub store: Store,
    pub opened: Option<Opened>,
    /// The path field of the open bar.
    pub path_text: String,
    /// The last load error (file:line:col: field: message).
    pub load_error: Option<String>,
    pub view: View,
    pub speed: Speed,
    pub until_text: String,
    pub export_path: String,
    pub knobs: ui::knobs::KnobsState,
    pub plots: ui::plots::PlotsState,
    pub diagram: ui::diagram::DiagramState,
    pub compare: ui::compare::CompareState,
    pub browser: ui::open::Browser,
    /// The time cursor (s) while it is dragged.
    pub cursor: Option<f64>,
    pub frames: FrameTimes,
    /// Wall time between frames (reported with `STORMGLASS_GUI_FRAME_LOG`).
    pub intervals: FrameTimes,
    last_frame: Option<Instant>,
    frame_log: bool,
}

impl Workbench {
    /// A workbench with nothing open yet (see [`Workbench::open_bundled`],
    /// [`Workbench::open_path`]).
    pub fn new(ctx: &egui::Context) -> Workbench {
        let c = ctx.clone();
        let wake: Arc<dyn Fn() + Send + Sync> = Arc::new(move || c.request_repaint());
        let w2 = wake.clone();
        let worker = Worker::spawn(move || w2());
        Workbench {
            worker,
            wake,
            catalog: catalog::entries(),
            store: Store::default(),
            opened: None,
            path_text: String::new(),
            load_error: None,
            view: View::Plots,
            speed: Speed::Times(10.0),
            until_text: "60s".into(),
            export_path: std::env::temp_dir().join("stormglass-session.ron").display().to_string(),
            knobs: Default::default(),
            plots: Default::default(),
            diagram: Default::default(),
            compare: Default::default(),
            browser: ui::open::Browser::new(
                std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            ),
            cursor: None,
            frames: FrameTimes::default(),
            intervals: FrameTimes::default(),
            last_frame: None,
            frame_log: std::env::var_os("STORMGLASS_GUI_FRAME_LOG").is_some(),
        }
    }

    /// Opens a bundled experiment by name (`quickstart`, `incidents/01-batch-flood`).
    pub fn open_bundled(&mut self, name: &str) {
        match experiments::catalog::find(name) {
            Ok(Some(e)) => self.open_entry(&e),
            Ok(None) => self.load_error = Some(format!("no bundled experiment `{name}`")),
            Err(e) => self.load_error = Some(e),
        }
    }

    pub fn open_entry(&mut self, e: &Entry) {
        self.path_text = e.source_path().unwrap_or_else(|| e.bundled_path()).display().to_string();
        match crate::session::load_entry(e) {
            Ok(exp) => {
                self.load_error = None;
                self.open_selection(Selection::first(Arc::new(exp)));
            }
            Err(e) => self.load_error = Some(e.to_string()),
        }
    }

    /// Loads an experiment or scenario file and opens its first combination; a bad file
    /// leaves the current session as it was and shows the positioned error.
    pub fn open_path(&mut self, path: &Path) {
        self.path_text = path.display().to_string();
        match experiments::load(path, &RunDefaults::default()) {
            Ok(exp) => {
                self.load_error = None;
                self.open_selection(Selection::first(Arc::new(exp)));
            }
            Err(e) => self.load_error = Some(e.to_string()),
        }
    }

    /// Loads RON text (dropped bytes, a pasted file) named `name`.
    pub fn open_text(&mut self, name: &Path, text: &str) {
        match experiments::experiment::load_text(name, text, &RunDefaults::default()) {
            Ok(exp) => {
                self.load_error = None;
                self.path_text = name.display().to_string();
                self.open_selection(Selection::first(Arc::new(exp)));
            }
            Err(e) => self.load_error = Some(e.to_string()),
        }
    }

    /// Opens a selection (new experiment, combination, seed or overrides).
    pub fn open_selection(&mut self, sel: Selection) {
        match sel.scenario() {
            Ok(scenario) => {
                let registry = scenario.registry();
                self.worker.send(Cmd::Open(sel.clone()));
                self.worker.send(Cmd::SetSpeed(self.speed));
                self.opened = Some(Opened { exp: sel.exp.clone(), sel, scenario, registry });
                self.knobs.pending.clear();
            }
            Err(e) => self.load_error = Some(e),
        }
    }

    /// Reset: a fresh run of the same selection, with `seed`, the knobs' pending
    /// non-run-time values applied from the start.
    pub fn reset(&mut self, seed: u64) {
        let Some(o) = &self.opened else { return };
        let mut sel = o.sel.clone();
        sel.seed = seed;
        for (p, v) in std::mem::take(&mut self.knobs.pending) {
            sel.overrides.retain(|(q, _)| *q != p);
            sel.overrides.push((p, v));
        }
        self.open_selection(sel);
    }

    /// Sends a run-time change (the worker validates it and answers with a refusal if bad).
    pub fn apply(&mut self, path: &str, value: ParamValue) {
        self.worker.send(Cmd::Apply(path.to_string(), value));
    }

    /// Drains the worker's updates into the store.
    pub fn pump(&mut self) {
        while let Ok(u) = self.worker.rx.try_recv() {
            if self.store.apply(u) {
                self.cursor = None;
            }
        }
    }

    /// The whole frame (also what the tests drive).
    pub fn frame(&mut self, ui: &mut egui::Ui) {
        let started = Instant::now();
        self.pump();
        self.drop_files(ui.ctx());
        egui::Panel::top("open-bar").show(ui, |ui| {
            ui::open::bar(self, ui);
            ui.separator();
            ui::controls::bar(self, ui);
        });
        egui::Panel::bottom("time-cursor").show(ui, |ui| ui::controls::cursor(self, ui));
        egui::Panel::left("knobs").default_size(320.0).show(ui, |ui| ui::knobs::panel(self, ui));
        egui::CentralPanel::default().show(ui, |ui| {
            ui.horizontal(|ui| {
                for v in View::ALL {
                    ui.selectable_value(&mut self.view, v, v.label());
                }
            });
            ui.separator();
            match self.view {
                View::Plots => ui::plots::view(self, ui),
                View::Diagram => ui::diagram::view(self, ui),
                View::Events => ui::events::view(self, ui),
                View::Summary => ui::events::summary(self, ui),
                View::Compare => ui::compare::view(self, ui),
            }
        });
        if self.store.status.running {
            ui.ctx().request_repaint_after(std::time::Duration::from_millis(33));
        }
        self.frames.push(started.elapsed().as_secs_f64() * 1e3);
    }

    fn drop_files(&mut self, ctx: &egui::Context) {
        let dropped = ctx.input(|i| i.raw.dropped_files.clone());
        for f in dropped {
            let p = f.path().to_path_buf();
            if p.is_file() {
                self.open_path(&p);
            } else {
                match f.bytes() {
                    Ok(bytes) => self.open_text(&p, &String::from_utf8_lossy(&bytes)),
                    Err(e) => self.load_error = Some(format!("{}: {e}", p.display())),
                }
            }
        }
    }
}

impl eframe::App for Workbench {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let now = Instant::now();
        if let Some(last) = self.last_frame.replace(now) {
            self.intervals.push(now.duration_since(last).as_secs_f64() * 1e3);
        }
        self.frame(ui);
        if self.frame_log && self.intervals.ms.len() % 120 == 119 {
            eprintln!(
                "frames: ui CPU median {:.2} ms p95 {:.2} ms; interval median {:.1} ms p95 {:.1} ms; {} points",
                self.frames.quantile(0.5),
                self.frames.quantile(0.95),
                self.intervals.quantile(0.5),
                self.intervals.quantile(0.95),
                self.store.point_count()
            );
        }
    }
}
