//! `stormglass-gui [FILE]`: the desktop workbench, with the bundled showcase (or FILE)
//! loaded and ready to run.
//!
//! Environment (the screenshot script and the frame measurement use them):
//! * `STORMGLASS_GUI_RUN_UNTIL=150s` — run at once, as fast as possible, to that time;
//! * `STORMGLASS_GUI_BENCH=1` — the frame benchmark's load in the real window: the
//!   showcase stretched to two simulated hours, filled to 3,590 s as fast as possible,
//!   then run at ×1 (six plots of ~3,600 points while the simulation runs, for an hour of
//!   wall time); with
//!   `STORMGLASS_GUI_FRAME_LOG=1` the frame log reports UI CPU time and frame intervals.
//! * `STORMGLASS_GUI_RENDERER=wgpu` — the wgpu renderer instead of glow.

use sim_core::{SimDuration, SimTime};
use sim_gui::Workbench;
use sim_gui::worker::{Cmd, Speed};
use std::path::PathBuf;
use std::sync::Arc;

/// Where the benchmark load stops filling and starts running at ×1.
const BENCH_FILL: SimTime = SimTime(3_590_000_000_000);

/// The workbench, with the benchmark load's switch from filling to running at ×1.
struct Window {
    w: Workbench,
    bench_armed: bool,
}

impl eframe::App for Window {
    fn ui(&mut self, ui: &mut egui::Ui, frame: &mut eframe::Frame) {
        let st = &self.w.store.status;
        if self.bench_armed && st.now >= BENCH_FILL && !st.running {
            self.bench_armed = false;
            self.w.controls.speed = Speed::Times(1.0);
            self.w.worker.send(Cmd::SetSpeed(Speed::Times(1.0)));
            self.w.worker.send(Cmd::Run);
            // The frame log measures the running load from here, not the fill.
            self.w.frames = Default::default();
            self.w.intervals = Default::default();
        }
        self.w.ui(ui, frame);
    }
}

fn main() -> eframe::Result {
    let path = std::env::args().nth(1).map(PathBuf::from);
    let renderer = match std::env::var("STORMGLASS_GUI_RENDERER").as_deref() {
        Ok("wgpu") => eframe::Renderer::Wgpu,
        _ => eframe::Renderer::Glow,
    };
    let options = eframe::NativeOptions {
        renderer,
        viewport: egui::ViewportBuilder::default()
            .with_title("stormglass workbench")
            .with_inner_size([1600.0, 1000.0])
            .with_drag_and_drop(true),
        ..Default::default()
    };
    let bench = std::env::var_os("STORMGLASS_GUI_BENCH").is_some();
    eframe::run_native(
        "stormglass workbench",
        options,
        Box::new(move |cc| {
            let mut w = Workbench::new(&cc.egui_ctx);
            match &path {
                Some(p) => w.open_path(p),
                None => w.open_bundled(sim_gui::SHOWCASE),
            }
            let run_until = |w: &mut Workbench, t: SimTime| {
                w.controls.speed = Speed::Max;
                w.worker.send(Cmd::SetSpeed(Speed::Max));
                w.worker.send(Cmd::RunUntil(t));
            };
            if bench && let Some(o) = &w.opened {
                let mut sel = o.sel.clone();
                let mut exp = (*sel.exp).clone();
                exp.duration = SimDuration::from_secs(7200);
                sel.exp = Arc::new(exp);
                w.open_selection(sel);
                run_until(&mut w, BENCH_FILL);
            } else if let Ok(t) = std::env::var("STORMGLASS_GUI_RUN_UNTIL") {
                match sim_core::time::parse_duration(&t) {
                    Ok(d) => run_until(&mut w, SimTime::ZERO + d),
                    Err(e) => eprintln!("STORMGLASS_GUI_RUN_UNTIL: {e}"),
                }
            }
            Ok(Box::new(Window { w, bench_armed: bench }))
        }),
    )
}
