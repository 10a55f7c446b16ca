//! The request path, generated from the scenario: sources → app instances (dispatcher,
//! pool) → pipelines → call sites with their governor stacks → upstreams (stations, GPU
//! servers). Updated live: queue depth and in-flight against each limit as bars, breakers
//! coloured by state, rejections and 429s as counts. Clicking a node opens its inspector
//! (its gauges, counters and summary figures) and its knobs.

use crate::app::Workbench;
use crate::store::Store;
use egui::{Color32, Pos2, Rect, Sense, Stroke, Vec2};
use models::params::ParamValue;
use models::scenario::Scenario;

#[derive(Default)]
pub struct DiagramState {
    /// The selected component path (`station.llm`, `gate.llm-permits` …).
    pub selected: Option<String>,
}

/// One box of the diagram.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Component path (`source.chat`).
    pub id: String,
    pub column: usize,
    /// The governor stack of a call site, outermost first (component paths).
    pub governors: Vec<String>,
}

/// The diagram's structure: nodes by column, edges by node id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<(String, String)>,
}

pub const COLUMNS: [&str; 5] = ["sources", "app instances", "pipelines", "call sites", "upstreams"];

/// The upstream's component path (a station or a GPU server).
fn upstream_id(sc: &Scenario, name: &str) -> String {
    if sc.gpu_servers.iter().any(|g| g.name == name) {
        format!("gpu_server.{name}")
    } else {
        format!("station.{name}")
    }
}

/// Builds the graph of a scenario.
pub fn graph(sc: &Scenario) -> Graph {
    let mut g = Graph::default();
    let target_id = |t: &str| {
        if sc.pipelines.iter().any(|p| p.name == t) {
            format!("pipeline.{t}")
        } else {
            format!("call_site.{t}")
        }
    };
    let node = |id: String, column: usize| Node { id, column, governors: Vec::new() };
    for s in &sc.sources {
        g.nodes.push(node(format!("source.{}", s.name), 0));
        match &s.app {
            Some(a) => {
                g.edges.push((format!("source.{}", s.name), format!("app.{a}")));
                g.edges.push((format!("app.{a}"), target_id(&s.target)));
            }
            None => g.edges.push((format!("source.{}", s.name), target_id(&s.target))),
        }
    }
    for a in &sc.apps {
        g.nodes.push(node(format!("app.{}", a.name), 1));
    }
    for p in &sc.pipelines {
        g.nodes.push(node(format!("pipeline.{}", p.name), 2));
        for st in p.stages.iter().flat_map(|s| s.steps()) {
            let e = (format!("pipeline.{}", p.name), format!("call_site.{}", st.call));
            if !g.edges.contains(&e) {
                g.edges.push(e);
            }
        }
    }
    for c in &sc.call_sites {
        let id = format!("call_site.{}", c.name);
        let governors = c
            .governors
            .iter()
            .map(|r| match r {
                models::govspec::GovernorRef::Shadow(inner) => {
                    format!("shadow.{}.{}", inner.kind(), inner.name())
                }
                r => format!("{}.{}", r.kind(), r.name()),
            })
            .collect();
        g.nodes.push(Node { id: id.clone(), column: 3, governors });
        let mut ups: Vec<&str> = vec![c.upstream.as_str()];
        ups.extend(c.split.iter().map(|s| s.0.as_str()));
        for u in ups {
            let e = (id.clone(), upstream_id(sc, u));
            if !g.edges.contains(&e) {
                g.edges.push(e);
            }
        }
        if let Some(b) = &c.backup {
            g.edges.push((id.clone(), format!("call_site.{b}")));
        }
    }
    for s in &sc.stations {
        g.nodes.push(node(format!("station.{}", s.name), 4));
    }
    for s in &sc.gpu_servers {
        g.nodes.push(node(format!("gpu_server.{}", s.name), 4));
    }
    g
}

const NODE_W: f32 = 170.0;

/// Breaker state spans by component (computed once per frame).
type States = std::collections::BTreeMap<String, Vec<(f64, f64, String)>>;
const ROW_H: f32 = 18.0;

/// The lines of figures a node shows: (text, optional bar fill 0..1).
fn figures(store: &Store, w: &Workbench, id: &str, states: &States) -> Vec<(String, Option<f32>)> {
    let limit = |path: &str| -> Option<u64> {
        let o = w.opened.as_ref()?;
        match crate::session::in_force(
            &o.registry,
            &o.scenario,
            &store.changes,
            store.status.now,
            path,
        )? {
            ParamValue::Count(n) => Some(n),
            ParamValue::OptCount(n) => n,
            _ => None,
        }
    };
    let bar = |x: i64, lim: Option<u64>| lim.map(|l| (x as f32 / l.max(1) as f32).clamp(0.0, 1.0));
    let count = |name: &str| store.summary_value(name).unwrap_or(0.0);
    let (kind, name) = id.split_once('.').unwrap_or((id, ""));
    match kind {
        "source" => vec![
            (format!("offered {:.0}", count(&format!("{id}.offered"))), None),
            (
                format!(
                    "rejected {:.0}  failed {:.0}",
                    count(&format!("{id}.rejected")),
                    count(&format!("{id}.failed"))
                ),
                None,
            ),
        ],
        "station" => {
            let busy = store.gauge(&format!("{id}.busy")).unwrap_or(0);
            let q = store.gauge(&format!("{id}.queue_depth")).unwrap_or(0);
            let servers = limit(&format!("{id}.servers"));
            let cap = limit(&format!("{id}.queue_capacity"));
            vec![
                (
                    format!(
                        "in flight {busy} / {}",
                        servers.map(|s| s.to_string()).unwrap_or("inf".into())
                    ),
                    bar(busy, servers),
                ),
                (
                    format!("queue {q} / {}", cap.map(|s| s.to_string()).unwrap_or("inf".into())),
                    bar(q, cap.or(Some(100))),
                ),
            ]
        }
        "gpu_server" => {
            let run = store.gauge(&format!("{id}.running")).unwrap_or(0);
            let wait = store.gauge(&format!("{id}.waiting")).unwrap_or(0);
            let seqs = limit(&format!("{id}.max_num_seqs"));
            vec![
                (format!("batch {run} / {}", seqs.unwrap_or(0)), bar(run, seqs)),
                (format!("waiting {wait}"), None),
                (
                    format!(
                        "KV {} tokens",
                        store.gauge(&format!("{id}.kv_used_tokens")).unwrap_or(0)
                    ),
                    None,
                ),
            ]
        }
        "gate" => {
            let used = store.gauge(&format!("{id}.in_use")).unwrap_or(0);
            let waiting = store.gauge(&format!("{id}.waiting")).unwrap_or(0);
            let permits = limit(&format!("{id}.permits"));
            vec![(
                format!("{name}: {used}/{} wait {waiting}", permits.unwrap_or(0)),
                bar(used, permits),
            )]
        }
        "circuit_breaker" | "degrade_rule" => {
            let state = states
                .get(id)
                .and_then(|s| s.last().map(|x| x.2.clone()))
                .unwrap_or_else(|| "CLOSED".into());
            let np = count(&format!("{id}.not_permitted")) + count(&format!("{id}.blocked"));
            vec![(format!("{name}: {state}, refused {np:.0}"), None)]
        }
        "retry" => vec![(format!("{name}: retries {:.0}", count(&format!("{id}.retries"))), None)],
        _ => vec![(name.to_string(), None)],
    }
}

pub fn view(w: &mut Workbench, ui: &mut egui::Ui) {
    let Some(o) = &w.opened else {
        ui.label("No experiment open.");
        return;
    };
    let g = graph(&o.scenario);
    let inspector_w = if w.diagram.selected.is_some() { 330.0 } else { 0.0 };
    let mut clicked: Option<String> = None;
    ui.horizontal_top(|ui| {
        let size =
            Vec2::new((ui.available_width() - inspector_w).max(300.0), ui.available_height());
        let (rect, _) = ui.allocate_exact_size(size, Sense::hover());
        clicked = draw(w, ui, &g, rect);
        if let Some(sel) = w.diagram.selected.clone() {
            ui.vertical(|ui| {
                ui.set_width(inspector_w - 10.0);
                inspector(w, ui, &sel);
            });
        }
    });
    if let Some(c) = clicked {
        w.diagram.selected =
            if w.diagram.selected.as_deref() == Some(c.as_str()) { None } else { Some(c) };
    }
}

/// Draws the graph in `rect`; returns the node (or governor) clicked.
fn draw(w: &Workbench, ui: &mut egui::Ui, g: &Graph, rect: Rect) -> Option<String> {
    let painter = ui.painter_at(rect);
    let states = w.store.breaker_states();
    let col_w = rect.width() / COLUMNS.len() as f32;
    let mut pos: Vec<(String, Rect)> = Vec::new();
    for (c, title) in COLUMNS.iter().enumerate() {
        let x = rect.left() + col_w * (c as f32 + 0.5);
        painter.text(
            Pos2::new(x, rect.top() + 8.0),
            egui::Align2::CENTER_TOP,
            *title,
            egui::FontId::proportional(13.0),
            ui.visuals().weak_text_color(),
        );
        let nodes: Vec<&Node> = g.nodes.iter().filter(|n| n.column == c).collect();
        let heights: Vec<f32> = nodes.iter().map(|n| node_height(w, n, &states)).collect();
        let total: f32 = heights.iter().sum::<f32>() + 24.0 * nodes.len().saturating_sub(1) as f32;
        let mut y = rect.top() + 32.0 + ((rect.height() - 40.0 - total) / 2.0).max(0.0);
        for (n, h) in nodes.iter().zip(heights) {
            let width = NODE_W.min(col_w - 16.0);
            let r = Rect::from_min_size(Pos2::new(x - width / 2.0, y), Vec2::new(width, h));
            pos.push((n.id.clone(), r));
            y += h + 24.0;
        }
    }
    let find = |id: &str| pos.iter().find(|p| p.0 == id).map(|p| p.1);
    for (a, b) in &g.edges {
        if let (Some(ra), Some(rb)) = (find(a), find(b)) {
            let (p0, p1) = if ra.center().x < rb.center().x {
                (ra.right_center(), rb.left_center())
            } else {
                (ra.center_bottom(), rb.center_top())
            };
            painter.line_segment([p0, p1], Stroke::new(1.5, ui.visuals().weak_text_color()));
            painter.circle_filled(p1, 3.0, ui.visuals().weak_text_color());
        }
    }
    let mut clicked = None;
    for n in &g.nodes {
        let Some(r) = find(&n.id) else { continue };
        let selected = w.diagram.selected.as_deref() == Some(n.id.as_str());
        let resp = ui.interact(r, egui::Id::unique(("node", &n.id)), Sense::click());
        let id = n.id.clone();
        resp.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Button, true, &id));
        if resp.clicked() {
            clicked = Some(n.id.clone());
        }
        let fill =
            if selected { ui.visuals().selection.bg_fill } else { ui.visuals().faint_bg_color };
        painter.rect(
            r,
            6.0,
            fill,
            Stroke::new(1.0, ui.visuals().text_color()),
            egui::StrokeKind::Inside,
        );
        let mut y = r.top() + 4.0;
        painter.text(
            Pos2::new(r.left() + 6.0, y),
            egui::Align2::LEFT_TOP,
            &n.id,
            egui::FontId::proportional(13.0),
            ui.visuals().strong_text_color(),
        );
        y += ROW_H;
        for (text, fill) in figures(&w.store, w, &n.id, &states) {
            line(&painter, r, y, &text, fill, None);
            y += ROW_H;
        }
        for gov in &n.governors {
            let gr = Rect::from_min_size(
                Pos2::new(r.left() + 4.0, y),
                Vec2::new(r.width() - 8.0, ROW_H * 1.0),
            );
            let gresp = ui.interact(gr, egui::Id::unique(("gov", &n.id, gov)), Sense::click());
            let gid = gov.clone();
            gresp.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Button, true, &gid));
            if gresp.clicked() {
                clicked = Some(gov.clone());
            }
            let state_col = states
                .get(gov)
                .and_then(|s| s.last().map(|x| crate::ui::plots::state_color(&x.2)))
                .or_else(|| {
                    (gov.starts_with("circuit_breaker.") || gov.starts_with("degrade_rule."))
                        .then(|| crate::ui::plots::state_color("CLOSED"))
                });
            for (text, fill) in figures(&w.store, w, gov, &states) {
                line(&painter, gr, y, &text, fill, state_col);
            }
            y += ROW_H;
        }
    }
    clicked
}

fn node_height(w: &Workbench, n: &Node, states: &States) -> f32 {
    let lines = 1 + figures(&w.store, w, &n.id, states).len() + n.governors.len();
    lines as f32 * ROW_H + 8.0
}

/// One figure line in a node: a bar behind the text when it has a fill.
fn line(p: &egui::Painter, r: Rect, y: f32, text: &str, fill: Option<f32>, color: Option<Color32>) {
    let band =
        Rect::from_min_size(Pos2::new(r.left() + 4.0, y), Vec2::new(r.width() - 8.0, ROW_H - 3.0));
    if let Some(c) = color {
        p.rect_filled(band, 3.0, c.gamma_multiply(0.6));
    }
    if let Some(f) = fill {
        p.rect_filled(band, 2.0, Color32::from_gray(60).gamma_multiply(0.4));
        let mut full = band;
        full.set_width(band.width() * f);
        let c =
            if f > 0.9 { Color32::from_rgb(210, 90, 60) } else { Color32::from_rgb(80, 140, 210) };
        p.rect_filled(full, 2.0, c.gamma_multiply(0.7));
    }
    p.text(
        Pos2::new(band.left() + 3.0, y + 1.0),
        egui::Align2::LEFT_TOP,
        text,
        egui::FontId::proportional(12.0),
        Color32::from_gray(230),
    );
}

/// The selected component's state and figures, and its knobs.
fn inspector(w: &mut Workbench, ui: &mut egui::Ui, id: &str) {
    ui.horizontal(|ui| {
        ui.heading(id);
        if ui.small_button("close").clicked() {
            w.diagram.selected = None;
        }
    });
    let prefix = format!("{id}.");
    egui::ScrollArea::vertical().id_salt("inspector").show(ui, |ui| {
        egui::Grid::new("inspector-figures").striped(true).show(ui, |ui| {
            for (p, v) in w.store.status.gauges.iter().filter(|g| g.0.starts_with(&prefix)) {
                ui.label(p.trim_start_matches(&prefix));
                ui.monospace(v.to_string());
                ui.end_row();
            }
            for (p, v) in w.store.status.counters.iter().filter(|g| g.0.starts_with(&prefix)) {
                ui.label(p.trim_start_matches(&prefix));
                ui.monospace(v.to_string());
                ui.end_row();
            }
            if let Some(s) = &w.store.summary {
                for (n, v) in s.values.iter().filter(|x| x.0.starts_with(&prefix)) {
                    ui.label(n.trim_start_matches(&prefix));
                    ui.monospace(crate::ui::events::value_text(v));
                    ui.end_row();
                }
            }
            if let Some(spans) = w.store.breaker_states().get(id) {
                ui.label("state");
                ui.monospace(spans.last().map(|s| s.2.as_str()).unwrap_or("CLOSED"));
                ui.end_row();
            }
        });
        ui.separator();
        ui.strong("Knobs");
        crate::ui::knobs::component_knobs(w, ui, id);
    });
}
