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

fn chooser(ui: &mut egui::Ui, id: &str, combos: &[(usize, String)], c: &mut Choice) {
    let text = match c {
        Choice::Session => "this session (knobs)".to_string(),
        Choice::Combo(i) => {
            combos.iter().find(|x| x.0 == *i).map(|x| x.1.clone()).unwrap_or_default()
        }
    };
    egui::ComboBox::from_id_salt(id).selected_text(text).width(240.0).show_ui(ui, |ui| {
        for (i, label) in combos {
            ui.selectable_value(c, Choice::Combo(*i), label);
        }
        ui.selectable_value(c, Choice::Session, "this session (knobs)");
    });
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
        ui.label("A");
        chooser(ui, "cmp-a", &combos, &mut st.a);
        ui.label("B");
        chooser(ui, "cmp-b", &combos, &mut st.b);
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
    egui::ComboBox::from_id_salt("cmp-metric").selected_text(&st.metric).width(320.0).show_ui(
        ui,
        |ui| {
            for k in a.series.keys() {
                ui.selectable_value(&mut st.metric, k.clone(), k);
            }
        },
    );
    let m = st.metric.clone();
    Plot::new("cmp-plot").height(260.0).legend(Legend::default()).show(ui, |pu| {
        for (side, name) in [(a, "A"), (b, "B")] {
            if let Some(p) = side.series.get(&m) {
                pu.line(Line::new(format!("{name} {m}"), PlotPoints::Borrowed(p)));
            }
        }
    });
    headline(ui, a, b);
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
                ui.monospace(x.map(|v| format!("{v:.2}")).unwrap_or_default());
                ui.monospace(y.map(|v| format!("{v:.2}")).unwrap_or_default());
                ui.monospace(match (x, y) {
                    (Some(x), Some(y)) => format!("{:+.2}", y - x),
                    _ => String::new(),
                });
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
