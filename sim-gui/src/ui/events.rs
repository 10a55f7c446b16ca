//! The events panel (breaker transitions, configuration changes, outages, guard stops,
//! with their instants: clicking one moves the plots there) and the summary panel (the
//! same names and numbers as the `runs` table).

use crate::store::Store;
use crate::ui::controls::clock;
use crate::ui::{Action, Actions};
use models::summary::Value;
use sim_core::SimTime;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Filter {
    All,
    Breakers,
    Config,
    Outages,
}

/// Whether a configuration change is an outage's start or end (an upstream's failure
/// injection, an app's health).
pub fn is_outage(kind: &str, from: &str) -> bool {
    kind == "config_change"
        && ["error_rate", "healthy", "business_error_rate", "latency_multiplier"]
            .iter()
            .any(|p| from.starts_with(&format!("{p} =")))
}

/// The events panel; clicking an instant pushes [`Action::Focus`] there.
pub fn view(ui: &mut egui::Ui, store: &Store, out: &mut Actions) {
    let id = ui.make_persistent_id("event-filter");
    let mut filter = ui.data(|d| d.get_temp::<u8>(id)).unwrap_or(0);
    ui.horizontal(|ui| {
        for (i, name) in ["all", "breakers", "config changes", "outages"].iter().enumerate() {
            ui.selectable_value(&mut filter, i as u8, *name);
        }
    });
    ui.data_mut(|d| d.insert_temp(id, filter));
    let filter = [Filter::All, Filter::Breakers, Filter::Config, Filter::Outages][filter as usize];
    if let Some(e) = &store.status.error {
        ui.colored_label(egui::Color32::from_rgb(220, 80, 60), format!("guard stop: {e}"));
    }
    ui.horizontal(|ui| {
        ui.strong(format!("Recorded changes ({})", store.changes.len()));
        ui.weak("each applied at the end of its instant; exported with the session");
    });
    let mut goto: Option<f64> = None;
    egui::Grid::new("changes").striped(true).show(ui, |ui| {
        for c in &store.changes {
            if ui.link(clock(SimTime::ZERO + c.at)).clicked() {
                goto = Some(c.at.0 as f64 / 1e9);
            }
            ui.monospace(&c.path);
            ui.monospace(c.value.to_string());
            ui.end_row();
        }
    });
    ui.separator();
    ui.strong(format!("Model events ({})", store.events.len()));
    egui::ScrollArea::vertical().id_salt("events").show(ui, |ui| {
        egui::Grid::new("events-grid").striped(true).show(ui, |ui| {
            for e in &store.events {
                let keep = match filter {
                    Filter::All => true,
                    Filter::Breakers => e.kind == "state_change",
                    Filter::Config => e.kind.starts_with("config") || e.kind == "rule_reload",
                    Filter::Outages => is_outage(e.kind, &e.from),
                };
                if !keep {
                    continue;
                }
                if ui.link(clock(e.time)).clicked() {
                    goto = Some(e.time.0 as f64 / 1e9);
                }
                ui.label(&e.component);
                ui.label(if is_outage(e.kind, &e.from) { "outage" } else { e.kind });
                ui.monospace(format!("{} → {}", e.from, e.to));
                ui.end_row();
            }
        });
    });
    if let Some(t) = goto {
        out.push(Action::Focus(t));
    }
}

/// A summary value as the `runs` table prints it.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::U64(x) => x.to_string(),
        Value::F64(x) => format!("{x:.4}"),
    }
}

pub fn summary(ui: &mut egui::Ui, store: &Store) {
    let st = &store.status;
    ui.horizontal(|ui| {
        ui.label(format!("seed {}  events {}  t = {}", store.seed, st.events, clock(st.now)));
        match &st.fingerprint {
            Some(f) => ui.monospace(format!("fingerprint {f}")),
            None => ui.weak("fingerprint: when the run reaches its end"),
        };
    });
    ui.weak("The session's row of the runs table (runs.parquet): the same columns and values, built by the results layer; while running, figures so far.");
    let id = ui.make_persistent_id("summary-search");
    let mut search = ui.data(|d| d.get_temp::<String>(id)).unwrap_or_default();
    ui.horizontal(|ui| {
        ui.label("Filter");
        ui.text_edit_singleline(&mut search);
    });
    ui.data_mut(|d| d.insert_temp(id, search.clone()));
    if store.runs_row.is_empty() {
        ui.label("No summary yet.");
        return;
    }
    egui::ScrollArea::vertical().id_salt("summary").show(ui, |ui| {
        egui::Grid::new("summary-grid").striped(true).num_columns(2).show(ui, |ui| {
            for (n, v) in store.runs_row.iter().filter(|(n, _)| n.contains(search.as_str())) {
                ui.monospace(n);
                ui.monospace(v);
                ui.end_row();
            }
        });
    });
}
