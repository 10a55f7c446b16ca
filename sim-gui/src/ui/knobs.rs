//! Knobs generated from the parameter registry, grouped by component (`gate.llm`): drag
//! values and sliders with units and ranges, toggles for booleans, combo boxes for enums,
//! a limit switch for optional counts, a text field for distributions; a search field; values that differ
//! from the scenario's highlighted, with a reset. Run-time parameters apply at the current
//! instant; the others are marked and apply on reset.
//!
//! Invariant: one edit, one change. A value typed into a field is committed once, on Enter
//! or when the field loses focus (never per keystroke); a drag once, when it ends; a
//! click, a choice or an AccessKit value at once — paused or running. After the commit the
//! knob shows the value sent (then the change recorded at the current instant, then the
//! value in force), never the old value while the change is on its way.

use crate::session::Opened;
use crate::store::Store;
use crate::ui::{Action, Actions};
use crate::worker::Cmd;
use models::params::{ParamSpec, ParamType, ParamValue};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

#[derive(Default)]
pub struct KnobsState {
    pub search: String,
    /// Non-run-time values waiting for the next reset.
    pub pending: Vec<(String, ParamValue)>,
    /// Text being edited for distribution knobs.
    pub dist_text: BTreeMap<String, String>,
    /// A value being dragged (applied when the drag ends).
    pub editing: Option<(String, ParamValue)>,
    /// A change sent to the session and not yet echoed in the store: the knob shows it
    /// until the recorded changes, the notices or the session move on.
    pub sent: Option<Sent>,
}

/// A change sent, with what the store held when it was sent.
pub struct Sent {
    pub path: String,
    pub value: ParamValue,
    generation: u64,
    changes: usize,
    notices: usize,
}

impl Sent {
    /// Whether the store still holds what it held when the change was sent (no echo yet).
    fn waiting(&self, store: &Store) -> bool {
        (store.generation, store.changes.len(), store.notices.len())
            == (self.generation, self.changes, self.notices)
    }
}

const CHANGED: egui::Color32 = egui::Color32::from_rgb(230, 180, 60);

/// The knobs panel. `selected`: the component selected in the request path (its group
/// opens).
pub fn panel(
    ui: &mut egui::Ui,
    st: &mut KnobsState,
    opened: Option<&Opened>,
    store: &Store,
    selected: Option<&str>,
    out: &mut Actions,
) {
    ui.heading("Knobs");
    ui.horizontal(|ui| {
        let l = ui.label("Search");
        ui.add(egui::TextEdit::singleline(&mut st.search).desired_width(200.0)).labelled_by(l.id);
    });
    if !st.pending.is_empty() {
        ui.colored_label(CHANGED, format!("{} value(s) apply on reset", st.pending.len()));
    }
    let Some(o) = opened else {
        ui.label("No experiment open.");
        return;
    };
    let needle = st.search.to_lowercase();
    let mut groups: BTreeMap<&str, Vec<&ParamSpec>> = BTreeMap::new();
    for s in
        o.registry.iter().filter(|s| needle.is_empty() || s.path.to_lowercase().contains(&needle))
    {
        let comp = s.path.rsplit_once('.').map(|x| x.0).unwrap_or(&s.path);
        groups.entry(comp).or_default().push(s);
    }
    egui::ScrollArea::vertical().show(ui, |ui| {
        for (comp, specs) in groups {
            let open = !needle.is_empty() || selected == Some(comp);
            egui::CollapsingHeader::new(comp)
                .id_salt(comp)
                .open(if open { Some(true) } else { None })
                .show(ui, |ui| {
                    for s in specs {
                        knob(ui, st, store, s, out);
                    }
                });
        }
    });
}

/// The knobs of one component (the diagram's inspector shows them too).
pub fn component_knobs(
    ui: &mut egui::Ui,
    st: &mut KnobsState,
    opened: Option<&Opened>,
    store: &Store,
    comp: &str,
    out: &mut Actions,
) {
    let Some(o) = opened else { return };
    let prefix = format!("{comp}.");
    let mut any = false;
    for s in o.registry.iter().filter(|s| s.path.starts_with(&prefix)) {
        knob(ui, st, store, s, out);
        any = true;
    }
    if !any {
        ui.weak("no parameters");
    }
}

/// The value a knob shows: a pending reset value; else a change sent and not yet
/// recorded; else the last change recorded at the current instant (it takes effect at the
/// instant's end, so a paused session does not hold it in force yet); else the value in
/// force now.
fn shown_value(st: &KnobsState, store: &Store, s: &ParamSpec) -> ParamValue {
    if let Some((_, v)) = st.pending.iter().find(|(p, _)| *p == s.path) {
        return v.clone();
    }
    if let Some(sent) = st.sent.as_ref().filter(|x| x.path == s.path && x.waiting(store)) {
        return sent.value.clone();
    }
    let now = store.status.now;
    let recorded_now =
        store.changes.iter().rev().find(|c| c.path == s.path && SimTime::ZERO + c.at >= now);
    if let Some(c) = recorded_now {
        return c.value.clone();
    }
    store.param(&s.path).unwrap_or(&s.value).clone()
}

fn knob(ui: &mut egui::Ui, st: &mut KnobsState, store: &Store, s: &ParamSpec, out: &mut Actions) {
    let param = s.path.rsplit('.').next().unwrap_or(&s.path);
    let current = shown_value(st, store, s);
    let changed = current != s.value;
    let mut v = match &st.editing {
        Some((p, x)) if *p == s.path => x.clone(),
        _ => current.clone(),
    };
    let mut commit = false;
    ui.horizontal(|ui| {
        let mut text = egui::RichText::new(param);
        if changed {
            text = text.color(CHANGED).strong();
        }
        let label = ui.label(text).on_hover_text(format!(
            "{}\n{} ({}){}",
            s.doc,
            s.ty.describe(),
            s.unit,
            if s.runtime { "" } else { "\ncannot change during a run: applies on reset" }
        ));
        commit = editor(ui, &mut st.dist_text, s, &mut v, label.id, out);
        if !s.runtime {
            ui.weak("(on reset)");
        }
        if changed
            && ui.small_button("reset").on_hover_text(format!("back to {}", s.value)).clicked()
        {
            v = s.value.clone();
            commit = true;
        }
    });
    if commit {
        st.editing = None;
    } else if v != current {
        st.editing = Some((s.path.clone(), v.clone()));
    }
    if commit && v != current {
        if s.runtime {
            st.sent = Some(Sent {
                path: s.path.clone(),
                value: v.clone(),
                generation: store.generation,
                changes: store.changes.len(),
                notices: store.notices.len(),
            });
            out.push(Action::Send(Cmd::Apply(s.path.clone(), v)));
        } else {
            st.pending.retain(|(p, _)| *p != s.path);
            st.pending.push((s.path.clone(), v));
        }
    }
}

/// Whether a widget's edit is finished: a drag released, a click, or a value typed and
/// committed (Enter or focus lost: every number field is built with
/// `update_while_editing(false)`, so keystrokes never reach the value), or set through
/// AccessKit. One edit, one change.
fn done(r: &egui::Response) -> bool {
    r.drag_stopped() || (r.changed() && !r.dragged())
}

/// A number's knob over `[min, max]`: a slider for a short finite range, else a drag value.
fn float_knob(
    ui: &mut egui::Ui,
    x: &mut f64,
    min: f64,
    max: f64,
    unit: &str,
    label: egui::Id,
) -> bool {
    let r = if max.is_finite() && min.is_finite() && max - min <= 1000.0 {
        ui.add(egui::Slider::new(x, min..=max).suffix(unit).update_while_editing(false))
    } else {
        let d = egui::DragValue::new(x).range(min..=max).speed(0.01).suffix(unit);
        ui.add(d.update_while_editing(false))
    }
    .labelled_by(label);
    done(&r)
}

/// The editor of one value; returns true when an edit is to be applied.
fn editor(
    ui: &mut egui::Ui,
    dist_text: &mut BTreeMap<String, String>,
    s: &ParamSpec,
    v: &mut ParamValue,
    label: egui::Id,
    out: &mut Actions,
) -> bool {
    let unit = format!(" {}", s.unit);
    let id = egui::Id::unique(("knob", &s.path));
    match (&s.ty, v) {
        (ParamType::Count { min, max }, ParamValue::Count(n)) => {
            let r = dragged_u64(ui, id, n, *min, *max, &unit).labelled_by(label);
            done(&r)
        }
        (ParamType::OptCount { min, max }, ParamValue::OptCount(n)) => {
            let mut on = n.is_some();
            let t = ui.checkbox(&mut on, "limit").labelled_by(label);
            let mut commit = t.changed();
            if t.changed() {
                *n = if on { Some((*min).max(1)) } else { None };
            }
            if let Some(x) = n.as_mut() {
                commit |= done(&dragged_u64(ui, id, x, *min, *max, &unit).labelled_by(label));
            } else {
                ui.weak("unbounded");
            }
            commit
        }
        (ParamType::Duration { min, max }, ParamValue::Duration(d)) => {
            let mut ms = d.0 as f64 / 1e6;
            let (lo, hi) = (min.0 as f64 / 1e6, max.0 as f64 / 1e6);
            let speed = (ms.abs() * 0.01).max(0.1);
            let w = egui::DragValue::new(&mut ms).range(lo..=hi).speed(speed).suffix(" ms");
            let r = ui.add(w.update_while_editing(false)).labelled_by(label);
            *d = SimDuration((ms * 1e6).round().clamp(min.0 as f64, max.0 as f64) as u64);
            done(&r)
        }
        (ParamType::Float { min, max }, ParamValue::Float(x)) => {
            float_knob(ui, x, *min, *max, &unit, label)
        }
        // The excluded bound is never committed: the knob stops at the next number above it.
        (ParamType::FloatAbove { above, max }, ParamValue::Float(x)) => {
            float_knob(ui, x, above.next_up(), *max, &unit, label)
        }
        (ParamType::Bool, ParamValue::Bool(b)) => ui.checkbox(b, "").labelled_by(label).changed(),
        // An enum: its choices in a combo box, by the names the scenario writes.
        (ParamType::Enum { choices }, ParamValue::Enum(c))
        | (ParamType::Name { choices }, ParamValue::Name(c)) => {
            let before = c.clone();
            egui::ComboBox::from_id_salt(id)
                .selected_text(c.as_str())
                .show_ui(ui, |ui| {
                    for choice in choices.iter() {
                        ui.selectable_value(c, choice.to_string(), *choice);
                    }
                })
                .response
                .labelled_by(label);
            *c != before
        }
        // A distribution or a list: edited as text in the scenario's syntax, parsed (and
        // range-checked) by the parameter's own type on Enter.
        (ParamType::DurationDist, val @ ParamValue::DurationDist(_))
        | (ParamType::NumberDist, val @ ParamValue::NumberDist(_))
        | (ParamType::List { .. }, val @ ParamValue::List(_)) => {
            let shown = match &*val {
                ParamValue::DurationDist(d) => models::params::dist_to_text(d),
                ParamValue::NumberDist(d) => models::params::number_dist_to_text(d),
                other => other.to_string(),
            };
            let buf = dist_text.entry(s.path.clone()).or_insert(shown);
            let r = ui.add(egui::TextEdit::singleline(buf).desired_width(180.0)).labelled_by(label);
            if r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                let text = buf.clone();
                dist_text.remove(&s.path);
                match ron::Deserializer::from_str(&text)
                    .map_err(|e| e.to_string())
                    .and_then(|mut de| s.ty.deserialize_value(&mut de).map_err(|e| e.to_string()))
                {
                    Ok(parsed) => {
                        *val = parsed;
                        return true;
                    }
                    Err(e) => out.push(Action::Notice(format!("{}: {e}", s.path))),
                }
            } else if !r.has_focus() {
                dist_text.remove(&s.path);
            }
            false
        }
        _ => {
            ui.weak("(unsupported value)");
            false
        }
    }
}

/// A drag value for a whole number (typed, dragged, or set through AccessKit).
fn dragged_u64(
    ui: &mut egui::Ui,
    id: egui::Id,
    n: &mut u64,
    min: u64,
    max: u64,
    unit: &str,
) -> egui::Response {
    ui.push_id(id, |ui| {
        let speed = ((*n as f64) * 0.02).max(0.05);
        let d = egui::DragValue::new(n).range(min..=max).speed(speed).suffix(unit);
        ui.add(d.update_while_editing(false))
    })
    .inner
}
