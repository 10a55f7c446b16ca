//! Run controls (run, pause, one event, next instant, run until, speed, reset with the same
//! or a new seed), the simulated clock and the live gauges (events per wall-second,
//! simulated-to-real ratio); the time cursor that rewinds.

use crate::store::Store;
use crate::ui::{Action, Actions};
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

/// The run controls' own state: the speed chosen and the "run until" field.
pub struct ControlsState {
    pub speed: Speed,
    pub until_text: String,
}

impl Default for ControlsState {
    fn default() -> Self {
        ControlsState { speed: Speed::Times(10.0), until_text: "60s".into() }
    }
}

/// The run controls, the clock and the gauges. `is_open`: an experiment is open.
pub fn bar(
    ui: &mut egui::Ui,
    st: &mut ControlsState,
    is_open: bool,
    store: &Store,
    out: &mut Actions,
) {
    let status = &store.status;
    ui.horizontal_wrapped(|ui| {
        let can_run = is_open && !status.finished;
        if status.running {
            if ui.button("Pause").clicked() {
                out.push(Action::Send(Cmd::Pause));
            }
        } else if ui.add_enabled(can_run, egui::Button::new("Run")).clicked() {
            out.push(Action::Send(Cmd::Run));
        }
        if ui.add_enabled(can_run, egui::Button::new("One event")).clicked() {
            out.push(Action::Send(Cmd::Step));
        }
        if ui.add_enabled(can_run, egui::Button::new("Next instant")).clicked() {
            out.push(Action::Send(Cmd::NextInstant));
        }
        let l = ui.label("to");
        ui.add(egui::TextEdit::singleline(&mut st.until_text).desired_width(60.0))
            .labelled_by(l.id);
        if ui.add_enabled(can_run, egui::Button::new("Run until")).clicked() {
            out.push(match sim_core::time::parse_duration(st.until_text.trim()) {
                Ok(d) => Action::Send(Cmd::RunUntil(SimTime::ZERO + d)),
                Err(e) => Action::Notice(format!("run until: {e}")),
            });
        }
        let before = st.speed;
        let l = ui.label("Speed");
        egui::ComboBox::from_id_salt("speed")
            .selected_text(speed_label(st.speed))
            .show_ui(ui, |ui| {
                for s in SPEEDS {
                    ui.selectable_value(&mut st.speed, s, speed_label(s));
                }
            })
            .response
            .labelled_by(l.id);
        if st.speed != before {
            out.push(Action::Send(Cmd::SetSpeed(st.speed)));
        }
        ui.separator();
        if ui.button("Reset").on_hover_text("Same seed; pending knob values apply").clicked() {
            out.push(Action::Reset(store.seed));
        }
        if ui.button("Reset, new seed").clicked() {
            out.push(Action::Reset(store.seed.wrapping_add(1)));
        }
        ui.separator();
        ui.monospace(format!("t = {} / {}", clock(status.now), clock(status.end)));
        ui.monospace(format!("{:.0} ev/s", status.events_per_s));
        ui.monospace(format!("sim/real {:.1}×", status.sim_to_real));
        ui.monospace(format!("{} events", status.events));
        if let Some(fp) = &status.fingerprint {
            ui.monospace(format!("fingerprint {fp}"));
        }
    });
    if let Some(e) = &status.error {
        ui.colored_label(egui::Color32::from_rgb(220, 80, 60), format!("Run stopped: {e}"));
    }
}

/// The latest notice (a refused change, an export), with a dismiss button.
pub fn notice(ui: &mut egui::Ui, notices: &[String], out: &mut Actions) {
    if let Some(n) = notices.last() {
        ui.horizontal(|ui| {
            ui.colored_label(egui::Color32::from_rgb(200, 150, 40), n);
            if ui.small_button("dismiss").clicked() {
                out.push(Action::DismissNotices);
            }
        });
    }
}

/// The time cursor: drag it back and release to rewind there (the session is
/// re-simulated from the start with its recorded changes). `cursor`: where it is while
/// dragged (s).
pub fn cursor(ui: &mut egui::Ui, cursor: &mut Option<f64>, store: &Store, out: &mut Actions) {
    let now = store.status.now.0 as f64 / 1e9;
    let end = store.end.0 as f64 / 1e9;
    ui.horizontal(|ui| {
        ui.label("Time cursor");
        let mut t = cursor.unwrap_or(now);
        let width = (ui.available_width() - 220.0).max(100.0);
        ui.spacing_mut().slider_width = width;
        let r = ui.add(
            egui::Slider::new(&mut t, 0.0..=end.max(1e-9))
                .suffix(" s")
                .max_decimals(3)
                .text("rewind")
                // A typed instant rewinds once, on Enter or focus loss, not per keystroke.
                .update_while_editing(false),
        );
        // The slider rounds what it shows to 3 decimals, which reads as a change: only a
        // drag, or a value set more than that rounding away (typed, AccessKit), is the
        // user's.
        let moved = r.changed() && (t - now).abs() > 1e-3;
        if r.dragged() || moved {
            *cursor = Some(t.min(now));
        }
        if (r.drag_stopped() || (moved && !r.dragged()))
            && let Some(c) = cursor.take()
            && c < now
        {
            out.push(rewind(c));
        }
        if ui.button("Rewind to 0").clicked() {
            out.push(rewind(0.0));
        }
    });
}

/// The command that rewinds to `t_s` seconds.
pub fn rewind(t_s: f64) -> Action {
    Action::Send(Cmd::Rewind(SimTime((t_s.max(0.0) * 1e9).round() as u64)))
}
