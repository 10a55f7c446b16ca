//! The workbench window: the open bar and run controls on top, the knobs on the left, the
//! views (plots, request path, events, summary, compare) in the middle, the time cursor at
//! the bottom. Each panel is its own module under [`crate::ui`] and takes only its own
//! state and what it reads; the actions it pushes are carried out here, after the panels.

use crate::session::Selection;
use crate::store::Store;
use crate::ui::{self, Action, Actions};
use crate::worker::{Cmd, Worker};
use experiments::RunDefaults;
use experiments::catalog::{self, Entry};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

pub use crate::session::Opened;
pub use crate::ui::View;

/// The experiment the workbench opens at start (bundled: `stormglass run workbench`).
pub const SHOWCASE: &str = "workbench";

/// Frame times in ms: the wall time of each frame inside [`Workbench::frame`] (UI, plots),
/// or the interval between frames. The benchmark measures thread CPU time and tessellation
/// itself (it drives the context).
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
    pub wake: ui::compare::Wake,
    pub catalog: Vec<Entry>,
    pub store: Store,
    pub opened: Option<Opened>,
    /// The last load error (file:line:col: field: message).
    pub load_error: Option<String>,
    pub view: View,
    pub open: ui::open::OpenState,
    pub controls: ui::controls::ControlsState,
    pub knobs: ui::knobs::KnobsState,
    pub plots: ui::plots::PlotsState,
    pub diagram: ui::diagram::DiagramState,
    pub compare: ui::compare::CompareState,
    /// The time cursor (s) while it is dragged.
    pub cursor: Option<f64>,
    pub frames: FrameTimes,
    /// Wall time between frames (reported with `STORMGLASS_GUI_FRAME_LOG`).
    pub intervals: FrameTimes,
    last_frame: Option<Instant>,
    frame_log: bool,
    /// Frames drawn by the window (the frame log reports every 120th).
    frames_drawn: u64,
}

impl Workbench {
    /// A workbench with nothing open yet (see [`Workbench::open_bundled`],
    /// [`Workbench::open_path`]).
    pub fn new(ctx: &egui::Context) -> Workbench {
        // A popup's first-frame size caps it for good: egui's default (400 points) kept the
        // bundled list to 17 of its 40-odd rows in any window. Popups still shrink to their
        // contents and stay within the window.
        ctx.all_styles_mut(|s| s.spacing.default_area_size.y = 4000.0);
        let c = ctx.clone();
        let wake: ui::compare::Wake = Arc::new(move || c.request_repaint());
        let w2 = wake.clone();
        let worker = Worker::spawn(move || w2());
        Workbench {
            worker,
            wake,
            catalog: catalog::entries(),
            store: Store::default(),
            opened: None,
            load_error: None,
            view: View::Plots,
            open: Default::default(),
            controls: Default::default(),
            knobs: Default::default(),
            plots: Default::default(),
            diagram: Default::default(),
            compare: Default::default(),
            cursor: None,
            frames: FrameTimes::default(),
            intervals: FrameTimes::default(),
            last_frame: None,
            frames_drawn: 0,
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
        self.open.path_text =
            e.source_path().unwrap_or_else(|| e.bundled_path()).display().to_string();
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
        self.open.path_text = path.display().to_string();
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
                self.open.path_text = name.display().to_string();
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
                self.worker.send(Cmd::SetSpeed(self.controls.speed));
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

    /// Drains the worker's updates into the store.
    pub fn pump(&mut self) {
        while let Ok(u) = self.worker.rx.try_recv() {
            if self.store.apply(u) {
                self.cursor = None;
            }
        }
    }

    /// Carries out what the panels asked for.
    pub fn act(&mut self, actions: Actions) {
        for a in actions {
            match a {
                Action::OpenEntry(e) => self.open_entry(&e),
                Action::OpenPath(p) => self.open_path(&p),
                Action::Select(sel) => self.open_selection(sel),
                Action::Send(c) => self.worker.send(c),
                Action::Reset(seed) => self.reset(seed),
                Action::Notice(n) => self.store.notices.push(n),
                Action::DismissNotices => self.store.notices.clear(),
                Action::Focus(t) => {
                    self.plots.span = ui::plots::Span::Focus(t);
                    self.view = View::Plots;
                }
            }
        }
    }

    /// The whole frame (also what the tests drive).
    pub fn frame(&mut self, ui: &mut egui::Ui) {
        let started = Instant::now();
        self.pump();
        self.drop_files(ui.ctx());
        let mut out = Actions::new();
        let (store, opened) = (&self.store, self.opened.as_ref());
        egui::Panel::top("open-bar").show(ui, |ui| {
            let err = self.load_error.as_deref();
            ui::open::bar(ui, &mut self.open, &self.catalog, opened, store, err, &mut out);
            ui.separator();
            ui::controls::bar(ui, &mut self.controls, opened.is_some(), store, &mut out);
            ui::controls::notice(ui, &store.notices, &mut out);
        });
        egui::Panel::bottom("time-cursor")
            .show(ui, |ui| ui::controls::cursor(ui, &mut self.cursor, store, &mut out));
        egui::Panel::left("knobs").default_size(320.0).show(ui, |ui| {
            let selected = self.diagram.selected.as_deref();
            ui::knobs::panel(ui, &mut self.knobs, opened, store, selected, &mut out)
        });
        egui::CentralPanel::default().show(ui, |ui| {
            ui.horizontal(|ui| {
                for v in View::ALL {
                    ui.selectable_value(&mut self.view, v, v.label());
                }
            });
            ui.separator();
            match self.view {
                View::Plots => ui::plots::view(ui, &mut self.plots, store, opened),
                View::Diagram => ui::diagram::view(
                    ui,
                    &mut self.diagram,
                    &mut self.knobs,
                    opened,
                    store,
                    &mut out,
                ),
                View::Events => ui::events::view(ui, store, &mut out),
                View::Summary => ui::events::summary(ui, store),
                View::Compare => {
                    ui::compare::view(ui, &mut self.compare, opened, store, &self.wake)
                }
            }
        });
        self.act(out);
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
        self.frames_drawn += 1;
        if self.frame_log && self.frames_drawn.is_multiple_of(120) {
            let st = &self.store.status;
            eprintln!(
                "frames: ui frame (wall) median {:.2} ms p95 {:.2} ms; interval median {:.1} ms p95 {:.1} ms (last {} frames); {} points; t = {} {}",
                self.frames.quantile(0.5),
                self.frames.quantile(0.95),
                self.intervals.quantile(0.5),
                self.intervals.quantile(0.95),
                self.intervals.ms.len(),
                self.store.point_count(),
                ui::controls::clock(st.now),
                if st.running { "running" } else { "stopped" }
            );
        }
    }
}
