//! Run controls (run, pause, one event, next instant, run until, speed, reset with the same
//! or a new seed), the simulated clock and the live gauges (events per wall-second,
//! simulated-to-real ratio); the time cursor that rewinds.

use crate::app::Workbench;
use crate::worker::{Cmd, Speed};
use sim_core::SimTime;

/// The speeds offered: real-time multiples, then as fast as possible.
pub const SPEEDS: [Speed; 5] =
    [Speed::Times(1.0), Speed::Times(10.0), Speed::Times(100.0), Speed::Times(1000.0), Speed::Max];

pub fn speed_label(s: Speed) -> String {
    match s {
        Speed::Times(k) => format!("×{k}"),
        Speed::Max => "as fast as possible".into(),
    }
}

/// A simulated time as `m:ss.mmm`.
pub fn clock(t: SimTime) -> String {
    let ms = t.0 / 1_000_000;
    format!("{}:{:02}.{:03}", ms / 60_000, (ms / 1000) % 60, ms % 1000)
}

pub fn bar(w: &mut Workbench, ui: &mut egui::Ui) {
    let st = w.store.status.clone();
    ui.horizontal_wrapped(|ui| {
        let can_run = w.opened.is_some() && !st.finished;
        if st.running {
            if ui.button("Pause").clicked() {
                w.worker.send(Cmd::Pause);
            }
        } else if ui.add_enabled(can_run, egui::Button::new("Run")).clicked() {
            w.worker.send(Cmd::Run);
        }
        if ui.add_enabled(can_run, egui::Button::new("One event")).clicked() {
            w.worker.send(Cmd::Step);
        }
        if ui.add_enabled(can_run, egui::Button::new("Next instant")).clicked() {
            w.worker.send(Cmd::NextInstant);
        }
        let l = ui.label("to");
        ui.add(egui::TextEdit::singleline(&mut w.until_text).desired_width(60.0)).labelled_by(l.id);
        if ui.add_enabled(can_run, egui::Button::new("Run until")).clicked() {
            match sim_core::time::parse_duration(w.until_text.trim()) {
                Ok(d) => w.worker.send(Cmd::RunUntil(SimTime::ZERO + d)),
                Err(e) => w.store.notices.push(format!("run until: {e}")),
            }
        }
        let before = w.speed;
        let l = ui.label("Speed");
        egui::ComboBox::from_id_salt("speed")
            .selected_text(speed_label(w.speed))
            .show_ui(ui, |ui| {
                for s in SPEEDS {
                    ui.selectable_value(&mut w.speed, s, speed_label(s));
                }
            })
            .response
            .labelled_by(l.id);
        if w.speed != before {
            w.worker.send(Cmd::SetSpeed(w.speed));
        }
        ui.separator();
        if ui.button("Reset").on_hover_text("Same seed; pending knob values apply").clicked() {
            w.reset(w.store.seed);
        }
        if ui.button("Reset, new seed").clicked() {
            w.reset(w.store.seed.wrapping_add(1));
        }
        ui.separator();
        ui.monospace(format!("t = {} / {}", clock(st.now), clock(st.end)));
        ui.monospace(format!("{:.0} ev/s", st.events_per_s));
        ui.monospace(format!("sim/real {:.1}×", st.sim_to_real));
        ui.monospace(format!("{} events", st.events));
        if let Some(fp) = &st.fingerprint {
            ui.monospace(format!("fingerprint {fp}"));
        }
    });
    if let Some(e) = &st.error {
        ui.colored_label(egui::Color32::from_rgb(220, 80, 60), format!("Run stopped: {e}"));
    }
    if let Some(n) = w.store.notices.last().cloned() {
        ui.horizontal(|ui| {
            ui.colored_label(egui::Color32::from_rgb(200, 150, 40), n);
            if ui.small_button("dismiss").clicked() {
                w.store.notices.clear();
            }
        });
    }
}

/// The time cursor: drag it back and release to rewind there (the session is
/// re-simulated from the start with its recorded changes).
pub fn cursor(w: &mut Workbench, ui: &mut egui::Ui) {
    let now = w.store.status.now.0 as f64 / 1e9;
    let end = w.store.end.0 as f64 / 1e9;
    ui.horizontal(|ui| {
        ui.label("Time cursor");
        let mut t = w.cursor.unwrap_or(now);
        let width = (ui.available_width() - 220.0).max(100.0);
        ui.spacing_mut().slider_width = width;
        let r = ui.add(
            egui::Slider::new(&mut t, 0.0..=end.max(1e-9))
                .suffix(" s")
                .max_decimals(3)
                .text("rewind"),
        );
        // The slider rounds what it shows to 3 decimals, which reads as a change: only a
        // drag, or a value set more than that rounding away (typed, AccessKit), is the
        // user's.
        let moved = r.changed() && (t - now).abs() > 1e-3;
        if r.dragged() || moved {
            w.cursor = Some(t.min(now));
        }
        if (r.drag_stopped() || (moved && !r.dragged()))
            && let Some(c) = w.cursor.take()
            && c < now
        {
            rewind(w, c);
        }
        if ui.button("Rewind to 0").clicked() {
            rewind(w, 0.0);
        }
    });
}

pub fn rewind(w: &mut Workbench, t_s: f64) {
    let t = SimTime((t_s.max(0.0) * 1e9).round() as u64);
    w.worker.send(Cmd::Rewind(t));
}
