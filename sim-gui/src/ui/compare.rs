//! Compare: two variants (or this session's knobs against the file's) run on the same seed
//! — identical traffic — on a background thread; their curves overlaid and the difference
//! of the headline figures.

use crate::session::{Opened, Selection};
use crate::store::Store;
use egui_plot::{Legend, Line, Plot, PlotPoint, PlotPoints};
use models::scenario::Scenario;
use models::summary::Summary;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One side of a comparison, after its run.
pub struct Side {
    pub label: String,
    pub fingerprint: String,
    pub summary: Summary,
    pub series: BTreeMap<String, Vec<PlotPoint>>,
}

/// What a side runs: a combination of the experiment, or the session's own scenario with
/// its recorded changes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Choice {
    Combo(usize),
    Session,
}

/// Where the comparison thread leaves both sides (or why it could not run them).
pub type Slot = Arc<Mutex<Option<Result<(Side, Side), String>>>>;

pub struct CompareState {
    pub a: Choice,
    pub b: Choice,
    pub metric: String,
    pub result: Slot,
    pub busy: bool,
}

impl Default for CompareState {
    fn default() -> Self {
        CompareState {
            a: Choice::Combo(0),
            b: Choice::Session,
            metric: String::new(),
            result: Arc::new(Mutex::new(None)),
            busy: false,
        }
    }
}

fn run_side(label: String, sc: &Scenario, sel: &Selection) -> Side {
    let out = models::run(sc, &sel.run_config());
    let mut series: BTreeMap<String, Vec<PlotPoint>> = BTreeMap::new();
    for r in &out.series {
        series
            .entry(r.metric.clone())
            .or_default()
            .push(PlotPoint::new(r.bucket_start_ns as f64 / 1e9, r.value));
    }
    Side { label, fingerprint: out.fingerprint.hex(), summary: out.summary, series }
}

/// The scenario and label of a choice.
fn resolve(o: &Opened, store: &Store, c: Choice) -> Result<(String, Scenario), String> {
    match c {
        Choice::Combo(i) => {
            let mut sel = o.sel.clone();
            sel.combo = i;
            sel.overrides.clear();
            let label = Selection::combos(&o.exp)
                .into_iter()
                .find(|x| x.0 == i)
                .map(|x| x.1)
                .unwrap_or_default();
            Ok((label, sel.scenario()?))
        }
        Choice::Session => {
            // What `Session::replay_scenario` gives: the changes appended in order.
            let mut sc = o.scenario.clone();
            sc.timeline.extend(store.changes.iter().cloned());
            Ok((format!("this session ({} changes)", store.changes.len()), sc))
        }
    }
}

fn chooser(
    ui: &mut egui::Ui,
    id: &str,
    label: egui::Id,
    combos: &[(usize, String)],
    c: &mut Choice,
) {
    let text = match c {
        Choice::Session => "this session (knobs)".to_string(),
        Choice::Combo(i) => {
            combos.iter().find(|x| x.0 == *i).map(|x| x.1.clone()).unwrap_or_default()
        }
    };
    let combo = egui::ComboBox::from_id_salt(id).selected_text(text).width(240.0);
    let r = combo.show_ui(ui, |ui| {
        for (i, name) in combos {
            ui.selectable_value(c, Choice::Combo(*i), name);
        }
        ui.selectable_value(c, Choice::Session, "this session (knobs)");
    });
    r.response.labelled_by(label);
}

/// The compare view. `wake` asks for a repaint when the comparison's runs are done.
pub fn view(
    ui: &mut egui::Ui,
    st: &mut CompareState,
    opened: Option<&Opened>,
    store: &Store,
    wake: &Wake,
) {
    let Some(o) = opened else {
        ui.label("No experiment open.");
        return;
    };
    let combos = Selection::combos(&o.exp);
    let seed = store.seed;
    ui.horizontal(|ui| {
        let l = ui.label("A");
        chooser(ui, "cmp-a", l.id, &combos, &mut st.a);
        let l = ui.label("B");
        chooser(ui, "cmp-b", l.id, &combos, &mut st.b);
        ui.label(format!("seed {seed}"));
        if ui.add_enabled(!st.busy, egui::Button::new("Run comparison")).clicked() {
            start(st, o, store, wake.clone());
        }
        if st.busy {
            ui.spinner();
        }
    });
    let guard = st.result.lock().expect("not poisoned");
    let Some(res) = guard.as_ref() else {
        ui.weak("Runs both sides to the end on the same seed (identical traffic).");
        return;
    };
    st.busy = false;
    let (a, b) = match res {
        Ok(x) => x,
        Err(e) => {
            ui.colored_label(egui::Color32::from_rgb(220, 80, 60), e);
            return;
        }
    };
    ui.monospace(format!("A: {}  fingerprint {}", a.label, a.fingerprint));
    ui.monospace(format!("B: {}  fingerprint {}", b.label, b.fingerprint));
    if st.metric.is_empty() || !a.series.contains_key(&st.metric) {
        st.metric = a
            .series
            .keys()
            .find(|k| k.ends_with("latency.p99_ms"))
            .or_else(|| a.series.keys().next())
            .cloned()
            .unwrap_or_default();
    }
    ui.horizontal(|ui| {
        let l = ui.label("Series");
        let combo = egui::ComboBox::from_id_salt("cmp-metric").selected_text(&st.metric);
        let r = combo.width(320.0).show_ui(ui, |ui| {
            for k in a.series.keys() {
                ui.selectable_value(&mut st.metric, k.clone(), k);
            }
        });
        r.response.labelled_by(l.id);
    });
    let m = st.metric.clone();
    let plot = Plot::new("cmp-plot").height(260.0).legend(Legend::default());
    let plot = plot.x_axis_label("time (s)").y_axis_label(m.as_str()).y_axis_min_width(64.0);
    let plot = plot.x_grid_spacer(crate::ui::plots::nice_marks);
    plot.y_grid_spacer(crate::ui::plots::nice_marks).show(ui, |pu| {
        for ((side, name), color) in [(a, "A"), (b, "B")].into_iter().zip(SIDE_COLORS) {
            let Some(p) = side.series.get(&m) else { continue };
            // A bucket without a value (no answer: no quantile) is a gap.
            let width = p.windows(2).map(|w| w[1].x - w[0].x).fold(f64::MAX, f64::min);
            for seg in crate::ui::plots::segments(p, width) {
                let line = Line::new(format!("{name} {m}"), PlotPoints::Borrowed(seg));
                pu.line(line.color(color));
            }
        }
    });
    headline(ui, a, b);
}

/// The colours of sides A and B.
const SIDE_COLORS: [egui::Color32; 2] =
    [egui::Color32::from_rgb(240, 140, 60), egui::Color32::from_rgb(90, 160, 230)];

/// A headline figure as the table shows it: a count as a whole number with thousands
/// separated (`12 345`), a latency in ms with one decimal, anything not a number (no
/// answer, no quantile) as `–`.
pub fn figure_text(name: &str, v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => number(name, v, false),
        _ => "–".into(),
    }
}

/// B - A in the same format, signed (`–` unless both are numbers).
pub fn difference_text(name: &str, a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if a.is_finite() && b.is_finite() => number(name, b - a, true),
        _ => "–".into(),
    }
}

fn number(name: &str, v: f64, signed: bool) -> String {
    if name.contains("_ms") {
        return if signed { format!("{v:+.1} ms") } else { format!("{v:.1} ms") };
    }
    let sign = if v < 0.0 {
        "-"
    } else if signed && v > 0.0 {
        "+"
    } else {
        ""
    };
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

/// The headline figures of both sides and B - A.
fn headline(ui: &mut egui::Ui, a: &Side, b: &Side) {
    const KEYS: [&str; 7] = [
        "completed",
        "success",
        "rejected",
        "failed",
        "degraded",
        "latency_ms_p50",
        "latency_ms_p99",
    ];
    egui::ScrollArea::vertical().id_salt("cmp-table").show(ui, |ui| {
        egui::Grid::new("cmp-grid").striped(true).num_columns(4).show(ui, |ui| {
            for h in ["figure", "A", "B", "B - A"] {
                ui.strong(h);
            }
            ui.end_row();
            let num = |s: &Summary, n: &str| {
                s.values.iter().find(|x| x.0 == n).map(|x| match x.1 {
                    models::summary::Value::U64(v) => v as f64,
                    models::summary::Value::F64(v) => v,
                })
            };
            for (n, _) in a.summary.values.iter().filter(|(n, _)| {
                n.starts_with("source.") && KEYS.iter().any(|k| n.ends_with(&format!(".{k}")))
            }) {
                let (x, y) = (num(&a.summary, n), num(&b.summary, n));
                ui.monospace(n);
                ui.monospace(figure_text(n, x));
                ui.monospace(figure_text(n, y));
                ui.monospace(difference_text(n, x, y));
                ui.end_row();
            }
        });
    });
}

/// A repaint request, callable from any thread.
pub type Wake = Arc<dyn Fn() + Send + Sync>;

/// Starts both runs on a background thread, on the session's seed.
pub fn start(st: &mut CompareState, o: &Opened, store: &Store, wake: Wake) {
    let (a, b) = match (resolve(o, store, st.a), resolve(o, store, st.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            *st.result.lock().expect("not poisoned") =
                Some(Err(format!("cannot run the comparison: {e}")));
            return;
        }
    };
    let mut sel = o.sel.clone();
    sel.seed = store.seed;
    let slot = st.result.clone();
    *slot.lock().expect("not poisoned") = None;
    st.busy = true;
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            (run_side(a.0, &a.1, &sel), run_side(b.0, &b.1, &sel))
        }))
        .map_err(|_| "a comparison run panicked".to_string());
        *slot.lock().expect("not poisoned") = Some(r);
        wake();
    });
}
