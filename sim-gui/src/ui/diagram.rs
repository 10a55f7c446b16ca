//! The request path, generated from the scenario: sources → app instances (dispatcher,
//! pool) → pipelines → call sites with their governor stacks → provider quotas (when the
//! scenario has any: a call reaches a station with a quota through it) → upstreams
//! (stations, GPU servers). Updated live: queue depth and in-flight against each limit as bars, breakers
//! coloured by state, rejections and 429s as counts; a node as wide as its widest text
//! (the text shrinks when the column is narrower: it always fits its box). Clicking a node opens its inspector
//! (its gauges, counters and summary figures) and its knobs.

use crate::session::Opened;
use crate::store::Store;
use crate::ui::Actions;
use crate::ui::knobs::KnobsState;
use egui::{Color32, Pos2, Rect, Sense, Stroke, Vec2};
use models::observe::ComponentState;
use models::scenario::Scenario;
use sim_core::metrics::MetricReading;

/// A metric reading as the inspector shows it.
fn reading_text(r: &MetricReading) -> String {
    let ms = |x: Option<f64>| x.map_or("-".to_string(), |ns| format!("{:.1}", ns / 1e6));
    match r {
        MetricReading::Counter(n) => n.to_string(),
        MetricReading::Gauge(n) => n.to_string(),
        MetricReading::Histogram { bucket_count, p50_ns, p95_ns, p99_ns } => format!(
            "{bucket_count} in bucket, p50/p95/p99 {}/{}/{} ms",
            ms(*p50_ns),
            ms(*p95_ns),
            ms(*p99_ns)
        ),
    }
}

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

/// The diagram's structure: column titles, nodes by column, edges by node id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    pub columns: Vec<&'static str>,
    pub nodes: Vec<Node>,
    pub edges: Vec<(String, String)>,
}

/// The columns; `quotas` between the call sites and the upstreams when there are any.
const COLUMNS: [&str; 6] =
    ["sources", "app instances", "pipelines", "call sites", "quotas", "upstreams"];

/// The quota a call to upstream `name` goes through (a station's provider quota).
fn quota_of<'a>(sc: &'a Scenario, name: &str) -> Option<&'a str> {
    sc.stations.iter().find(|s| s.name == name)?.quota.as_deref()
}

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
    let with_quotas = !sc.quotas.is_empty();
    g.columns = COLUMNS.iter().copied().filter(|c| with_quotas || *c != "quotas").collect();
    let upstream_col = g.columns.len() - 1;
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
            let e = match quota_of(sc, u) {
                Some(q) => (id.clone(), format!("quota.{q}")),
                None => (id.clone(), upstream_id(sc, u)),
            };
            if !g.edges.contains(&e) {
                g.edges.push(e);
            }
        }
        if let Some(b) = &c.backup {
            g.edges.push((id.clone(), format!("call_site.{b}")));
        }
    }
    for q in &sc.quotas {
        g.nodes.push(node(format!("quota.{}", q.name), upstream_col - 1));
    }
    for s in &sc.stations {
        g.nodes.push(node(format!("station.{}", s.name), upstream_col));
        if let Some(q) = &s.quota {
            g.edges.push((format!("quota.{q}"), format!("station.{}", s.name)));
        }
    }
    for s in &sc.gpu_servers {
        g.nodes.push(node(format!("gpu_server.{}", s.name), upstream_col));
    }
    g
}

const NODE_W: f32 = 170.0;

const ROW_H: f32 = 18.0;

/// `n / limit` (or `inf`) and the bar's fill.
fn against(label: &str, used: u64, limit: Option<u64>) -> (String, Option<f32>) {
    match limit {
        Some(l) => {
            (format!("{label} {used} / {l}"), Some((used as f32 / l.max(1) as f32).clamp(0.0, 1.0)))
        }
        None => (format!("{label} {used}"), None),
    }
}

/// The lines of figures a node shows: (text, optional bar fill 0..1), from the session's
/// component states (summed over the instances of a per-instance governor or an app).
fn figures(store: &Store, id: &str) -> Vec<(String, Option<f32>)> {
    let count = |name: &str| store.summary_value(name).unwrap_or(0.0);
    let (kind, name) = id.split_once('.').unwrap_or((id, ""));
    if kind == "source" {
        let snap = store.status.observed.snapshot.as_ref();
        let t = snap.and_then(|s| s.throughput.iter().find(|t| t.path == id));
        let Some(t) = t else { return vec![("no traffic yet".into(), None)] };
        return vec![
            (format!("offered {}  ended {}", t.offered, t.ended), None),
            (format!("rejected {}  failed {}", t.rejected, t.failed), None),
        ];
    }
    let states: Vec<&ComponentState> = store.components(id).collect();
    let used: u64 = states.iter().filter_map(|c| c.in_flight).map(|f| f.in_use).sum();
    let limit: Option<u64> = match states.is_empty() {
        true => None,
        false => states.iter().map(|c| c.in_flight.and_then(|f| f.limit)).sum(),
    };
    let waiting: u64 = states.iter().map(|c| c.waiting).sum();
    let figure = |n: &str| states.iter().filter_map(|c| c.figure(n)).sum::<f64>();
    let has_flight = states.iter().any(|c| c.in_flight.is_some());
    match kind {
        "station" => {
            let cap = states.iter().find_map(|c| c.figure("queue_capacity")).map(|c| c as u64);
            vec![against("in flight", used, limit), against("queue", waiting, cap.or(Some(100)))]
        }
        "gpu_server" => vec![
            against("batch", used, limit),
            (format!("waiting {waiting}  429 {:.0}", count(&format!("{id}.rejected_429"))), None),
            (format!("KV {:.0} tokens", figure("kv_used_tokens")), None),
        ],
        // The calls flowing through the site so far: sent upstream, retried, answered 429,
        // given up on (its time-series counters, read live).
        "call_site" => {
            let n = |leaf: &str| match store.metric(&format!("{id}.{leaf}")) {
                Some(MetricReading::Counter(n)) => n,
                _ => 0,
            };
            vec![
                (format!("sent {}  retries {}", n("attempts"), n("retries")), None),
                (format!("429 {}  timeouts {}", n("upstream_429"), n("timeouts")), None),
            ]
        }
        "app" => {
            let mut out = Vec::new();
            if has_flight {
                out.push(against("threads", used, limit));
            }
            let mut per_class: Vec<(String, u64)> = Vec::new();
            for (c, n) in states.iter().flat_map(|s| s.queues.iter()) {
                match per_class.iter_mut().find(|x| x.0 == *c) {
                    Some(x) => x.1 += n,
                    None => per_class.push((c.clone(), *n)),
                }
            }
            let q: Vec<String> = per_class.iter().map(|(c, n)| format!("{c} {n}")).collect();
            out.push((
                format!("queued {}", if q.is_empty() { "0".into() } else { q.join(" ") }),
                None,
            ));
            out
        }
        "circuit_breaker" | "degrade_rule" => {
            let b = states.iter().find_map(|c| c.breaker.as_ref());
            let state = b.map_or("CLOSED", |b| b.state);
            let rate = b.map_or(0.0, |b| b.failure_rate);
            let np = count(&format!("{id}.not_permitted")) + count(&format!("{id}.blocked"));
            vec![(format!("{name}: {state} {rate:.0}% fail, refused {np:.0}"), None)]
        }
        "retry" => vec![(format!("{name}: retries {:.0}", count(&format!("{id}.retries"))), None)],
        _ => generic_figures(&states, name, used, limit, waiting),
    }
}

/// What any other component shows, from its observed state alone: in flight against its
/// limit, waiting, tokens left, and each figure named `*_left` (a quota's requests left);
/// the first line starts with the component's name (a governor's row shows only that one).
fn generic_figures(
    states: &[&ComponentState],
    name: &str,
    used: u64,
    limit: Option<u64>,
    waiting: u64,
) -> Vec<(String, Option<f32>)> {
    let mut out = Vec::new();
    if states.iter().any(|c| c.in_flight.is_some()) {
        let (text, fill) = against(name, used, limit);
        let text = if waiting > 0 { format!("{text} wait {waiting}") } else { text };
        out.push((text, fill));
    }
    if let Some(t) = states.iter().find_map(|c| c.tokens_left) {
        let who = if out.is_empty() { format!("{name}: ") } else { String::new() };
        out.push((format!("{who}{t} tokens left"), None));
    }
    let lefts = states.iter().flat_map(|c| c.figures.iter()).filter(|f| f.0.ends_with("_left"));
    for (n, v) in lefts {
        out.push((format!("{v:.0} {}", n.replace('_', " ")), None));
    }
    if out.is_empty() {
        out.push((name.to_string(), None));
    }
    out
}

/// The request path and, for the selected node, its inspector and knobs.
pub fn view(
    ui: &mut egui::Ui,
    st: &mut DiagramState,
    knobs: &mut KnobsState,
    opened: Option<&Opened>,
    store: &Store,
    out: &mut Actions,
) {
    let Some(o) = opened else {
        ui.label("No experiment open.");
        return;
    };
    let g = graph(&o.scenario);
    let inspector_w = if st.selected.is_some() { 330.0 } else { 0.0 };
    let mut clicked: Option<String> = None;
    ui.horizontal_top(|ui| {
        let size =
            Vec2::new((ui.available_width() - inspector_w).max(300.0), ui.available_height());
        let (rect, _) = ui.allocate_exact_size(size, Sense::hover());
        clicked = draw(ui, store, st.selected.as_deref(), &g, rect);
        if let Some(sel) = st.selected.clone() {
            ui.vertical(|ui| {
                ui.set_width(inspector_w - 10.0);
                if inspector(ui, knobs, opened, store, &sel, out) {
                    st.selected = None;
                }
            });
        }
    });
    if let Some(c) = clicked {
        st.selected = if st.selected.as_deref() == Some(c.as_str()) { None } else { Some(c) };
    }
}

/// Draws the graph in `rect`; returns the node (or governor) clicked.
fn draw(
    ui: &mut egui::Ui,
    store: &Store,
    selected: Option<&str>,
    g: &Graph,
    rect: Rect,
) -> Option<String> {
    let painter = ui.painter_at(rect);
    let col_w = rect.width() / g.columns.len() as f32;
    let mut pos: Vec<(String, Rect)> = Vec::new();
    for (c, title) in g.columns.iter().enumerate() {
        let x = rect.left() + col_w * (c as f32 + 0.5);
        painter.text(
            Pos2::new(x, rect.top() + 8.0),
            egui::Align2::CENTER_TOP,
            *title,
            egui::FontId::proportional(13.0),
            ui.visuals().weak_text_color(),
        );
        let nodes: Vec<&Node> = g.nodes.iter().filter(|n| n.column == c).collect();
        let heights: Vec<f32> = nodes.iter().map(|n| node_height(store, n)).collect();
        let total: f32 = heights.iter().sum::<f32>() + 24.0 * nodes.len().saturating_sub(1) as f32;
        let mut y = rect.top() + 32.0 + ((rect.height() - 40.0 - total) / 2.0).max(0.0);
        for (n, h) in nodes.iter().zip(heights) {
            let width = node_width(&painter, store, n).min(col_w - 8.0);
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
        let selected = selected == Some(n.id.as_str());
        let resp = ui.interact(r, egui::Id::unique(("node", &n.id)), Sense::click());
        let id = format!("{} (request path)", n.id);
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
            fitted(&painter, &n.id, 13.0, r.width() - 12.0),
            ui.visuals().strong_text_color(),
        );
        y += ROW_H;
        for (text, fill) in figures(store, &n.id) {
            line(&painter, r, y, &text, fill, None);
            y += ROW_H;
        }
        for gov in &n.governors {
            let gr = Rect::from_min_size(
                Pos2::new(r.left() + 4.0, y),
                Vec2::new(r.width() - 8.0, ROW_H * 1.0),
            );
            let gresp = ui.interact(gr, egui::Id::unique(("gov", &n.id, gov)), Sense::click());
            let gid = format!("{gov} (request path)");
            gresp.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Button, true, &gid));
            if gresp.clicked() {
                clicked = Some(gov.clone());
            }
            let state_col = store
                .components(gov)
                .find_map(|c| c.breaker.as_ref())
                .map(|b| crate::ui::plots::state_color(b.state));
            if let Some((text, fill)) = figures(store, gov).into_iter().next() {
                line(&painter, gr, y, &text, fill, state_col);
            }
            y += ROW_H;
        }
    }
    clicked
}

/// A node's width: its widest text at full size (the id, its figures, its governors' rows)
/// and the margins, at least [`NODE_W`] (the column may hold less: the text then shrinks).
fn node_width(p: &egui::Painter, store: &Store, n: &Node) -> f32 {
    let width = |text: &str, size: f32| {
        p.layout_no_wrap(text.to_string(), egui::FontId::proportional(size), Color32::WHITE)
            .size()
            .x
    };
    let mut widest = width(&n.id, 13.0) + 12.0;
    let govs = n.governors.iter().filter_map(|g| figures(store, g).into_iter().next());
    for (text, _) in figures(store, &n.id).into_iter().chain(govs) {
        widest = widest.max(width(&text, 12.0) + 14.0);
    }
    widest.max(NODE_W)
}

/// The font of `size` points, smaller (down to 8) when `text` would be wider than `max_w`:
/// a node's text fits its box.
fn fitted(p: &egui::Painter, text: &str, size: f32, max_w: f32) -> egui::FontId {
    let font = egui::FontId::proportional(size);
    let w = p.layout_no_wrap(text.to_string(), font.clone(), Color32::WHITE).size().x;
    if w <= max_w || w <= 0.0 {
        return font;
    }
    egui::FontId::proportional((size * max_w / w).max(8.0))
}

fn node_height(store: &Store, n: &Node) -> f32 {
    let lines = 1 + figures(store, &n.id).len() + n.governors.len();
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
    // Shrunk to fit; what still does not (below 8 points) stays inside the band.
    p.with_clip_rect(band.intersect(p.clip_rect())).text(
        Pos2::new(band.left() + 3.0, y + 1.0),
        egui::Align2::LEFT_TOP,
        text,
        fitted(p, text, 12.0, band.width() - 6.0),
        Color32::from_gray(230),
    );
}

/// The selected component's state and figures, and its knobs; true when it is closed.
fn inspector(
    ui: &mut egui::Ui,
    knobs: &mut KnobsState,
    opened: Option<&Opened>,
    store: &Store,
    id: &str,
    out: &mut Actions,
) -> bool {
    let mut close = false;
    ui.horizontal(|ui| {
        ui.heading(id);
        close = ui.small_button("close").clicked();
    });
    let prefix = format!("{id}.");
    egui::ScrollArea::both().id_salt("inspector").auto_shrink([false, false]).show(ui, |ui| {
        egui::Grid::new("inspector-figures").striped(true).show(ui, |ui| {
            let mut row = |k: &str, v: String| {
                ui.label(k);
                ui.monospace(v);
                ui.end_row();
            };
            for c in store.components(id) {
                if c.path != id {
                    row("instance", c.path.clone());
                }
                if let Some(b) = &c.breaker {
                    row("state", b.state.to_string());
                    row("failure rate", format!("{:.1}%", b.failure_rate));
                    if b.slow_rate.is_finite() {
                        row("slow rate", format!("{:.1}%", b.slow_rate));
                    }
                    row(
                        "buffered / failed / slow",
                        format!("{} / {} / {}", b.buffered_calls, b.failed_calls, b.slow_calls),
                    );
                }
                if let Some(f) = c.in_flight {
                    let lim = f.limit.map_or("unbounded".to_string(), |l| l.to_string());
                    row("in flight / limit", format!("{} / {lim}", f.in_use));
                }
                row("waiting", c.waiting.to_string());
                for (class, n) in &c.queues {
                    row(&format!("queued {class}"), n.to_string());
                }
                if let Some(t) = c.tokens_left {
                    row("tokens left", t.to_string());
                }
                for (n, v) in &c.figures {
                    row(n, format!("{v}"));
                }
            }
            for (p, v) in store.status.observed.metrics.iter().filter(|g| g.0.starts_with(&prefix))
            {
                row(p.trim_start_matches(&prefix), reading_text(v));
            }
            if let Some(s) = &store.summary {
                for (n, v) in s.values.iter().filter(|x| x.0.starts_with(&prefix)) {
                    row(n.trim_start_matches(&prefix), crate::ui::events::value_text(v));
                }
            }
        });
        ui.separator();
        ui.strong("Knobs");
        crate::ui::knobs::component_knobs(ui, knobs, opened, store, id, out);
    });
    close
}
