//! `stormglass-gui [FILE]`: the desktop workbench, with the bundled showcase (or FILE)
//! loaded and ready to run.

use std::path::PathBuf;

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
    eframe::run_native(
        "stormglass workbench",
        options,
        Box::new(move |cc| {
            let mut w = sim_gui::Workbench::new(&cc.egui_ctx);
            match &path {
                Some(p) => w.open_path(p),
                None => w.open_bundled(sim_gui::SHOWCASE),
            }
            // `STORMGLASS_GUI_RUN_UNTIL=150s`: run at once, as fast as possible, to that
            // time (the screenshot script and the frame benchmark use it).
            if let Ok(t) = std::env::var("STORMGLASS_GUI_RUN_UNTIL") {
                match sim_core::time::parse_duration(&t) {
                    Ok(d) => {
                        w.worker.send(sim_gui::worker::Cmd::SetSpeed(sim_gui::worker::Speed::Max));
                        w.worker.send(sim_gui::worker::Cmd::RunUntil(sim_core::SimTime::ZERO + d));
                    }
                    Err(e) => eprintln!("STORMGLASS_GUI_RUN_UNTIL: {e}"),
                }
            }
            Ok(Box::new(w))
        }),
    )
}
