//! What each plot draws, as named, coloured traces from the store's series: the engine's
//! series as they are (latency quantiles, queue depths, in-use gauges, GPU), per-second
//! rates of the derived summary counts, and the components' observed limits and budgets
//! (`observed.<path>.*`, see [`crate::derived`]). Only names and what the observation API
//! exposes are read: a component kind added to the model appears here without code.
//!
//! API boundary: [`PlotKind`], [`traces`] for the plots, [`lines`] (owned points) for
//! tests; nothing here depends on the plots module (no module cycle).

use crate::session::Opened;
use crate::store::Store;
use egui::Color32;
use egui_plot::PlotPoint;
use std::borrow::Cow;

/// The plots on offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PlotKind {
    Latency,
    Queues,
    InFlight,
    Throughput,
    Budgets,
    Breakers,
    Gpu,
}

impl PlotKind {
    pub const ALL: [PlotKind; 7] = [
        PlotKind::Latency,
        PlotKind::Queues,
        PlotKind::InFlight,
        PlotKind::Throughput,
        PlotKind::Budgets,
        PlotKind::Breakers,
        PlotKind::Gpu,
    ];
    pub fn label(self) -> &'static str {
        match self {
            PlotKind::Latency => "Latency p50/p95/p99 per class",
            PlotKind::Queues => "Queue depth",
            PlotKind::InFlight => "In flight vs limits",
            PlotKind::Throughput => "Throughput / goodput / 429 / retries / degraded by reason",
            PlotKind::Budgets => "Budgets left (quota requests and tokens, buckets, retries)",
            PlotKind::Breakers => "Breaker state",
            PlotKind::Gpu => "GPU batch size and KV use",
        }
    }
    /// The y axis's title, with its unit.
    pub fn y_title(self) -> &'static str {
        match self {
            PlotKind::Latency => "latency (ms)",
            PlotKind::Queues => "waiting (mean)",
            PlotKind::InFlight => "in flight (mean)",
            PlotKind::Throughput => "requests / s",
            PlotKind::Budgets => "left (% of most)",
            PlotKind::Breakers => "",
            PlotKind::Gpu => "seqs; KV (k tokens)",
        }
    }
    /// Its check box's name.
    pub fn short(self) -> &'static str {
        match self {
            PlotKind::Latency => "latency",
            PlotKind::Queues => "queues",
            PlotKind::InFlight => "in flight",
            PlotKind::Throughput => "throughput",
            PlotKind::Budgets => "budgets",
            PlotKind::Breakers => "breakers",
            PlotKind::Gpu => "GPU",
        }
    }
}

/// How a trace is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Data,
    /// A limit in force over time (dashed).
    Limit,
}

/// One named line of a plot.
pub struct Trace<'a> {
    pub name: String,
    pub color: Color32,
    pub style: Style,
    data: Cow<'a, [PlotPoint]>,
}

impl Trace<'_> {
    pub fn points(&self) -> &[PlotPoint] {
        &self.data
    }
}

/// Distinct colours for the lines of one plot, in order.
const PALETTE: [Color32; 12] = [
    Color32::from_rgb(90, 160, 230),
    Color32::from_rgb(240, 140, 60),
    Color32::from_rgb(110, 200, 110),
    Color32::from_rgb(220, 90, 200),
    Color32::from_rgb(230, 210, 80),
    Color32::from_rgb(80, 210, 210),
    Color32::from_rgb(230, 90, 90),
    Color32::from_rgb(170, 140, 240),
    Color32::from_rgb(190, 190, 190),
    Color32::from_rgb(160, 110, 60),
    Color32::from_rgb(140, 220, 170),
    Color32::from_rgb(250, 170, 200),
];

fn color(i: usize) -> Color32 {
    PALETTE[i % PALETTE.len()]
}

/// Every line plot `k` draws, whole (before it is cut to the time shown and decimated):
/// (legend name, points).
pub fn lines(
    store: &Store,
    opened: Option<&Opened>,
    k: PlotKind,
    per_source: bool,
) -> Vec<(String, Vec<PlotPoint>)> {
    let t = traces(store, opened, k, per_source);
    t.into_iter().map(|t| (t.name, t.data.into_owned())).collect()
}

/// The traces of plot `k`, coloured in order (a limit in its component's colour).
pub fn traces<'a>(
    store: &'a Store,
    opened: Option<&Opened>,
    k: PlotKind,
    per_source: bool,
) -> Vec<Trace<'a>> {
    let data = |(name, data): (String, Cow<'a, [PlotPoint]>)| (name, data, Style::Data);
    let mut out: Vec<(String, Cow<'a, [PlotPoint]>, Style)> = match k {
        PlotKind::InFlight => return in_flight(store),
        PlotKind::Throughput => throughput(store).into_iter().map(data).collect(),
        PlotKind::Breakers => Vec::new(),
        _ => engine_lines(store, opened, k, per_source)
            .into_iter()
            .map(|(n, m)| (n, Cow::Borrowed(store.points(m))))
            .map(data)
            .collect(),
    };
    match k {
        PlotKind::Gpu => out.extend(gpu_kv(store).into_iter().map(data)),
        PlotKind::Budgets => out.extend(budgets(store).into_iter().map(data)),
        _ => {}
    }
    let rows = out.into_iter().enumerate();
    rows.map(|(i, (name, data, style))| Trace { name, color: color(i), style, data }).collect()
}

/// Engine series drawn as they are: (legend name, metric). `per_source`: the latency plot
/// draws the sources' quantiles beside their classes'.
fn engine_lines<'a>(
    store: &'a Store,
    opened: Option<&Opened>,
    k: PlotKind,
    per_source: bool,
) -> Vec<(String, &'a str)> {
    let pick = |f: &dyn Fn(&str) -> Option<String>| -> Vec<(String, &'a str)> {
        store.series.keys().filter_map(|m| f(m).map(|n| (n, m.as_str()))).collect()
    };
    match k {
        // Per class, from the class's own histogram (`class.<c>.latency`: every source of
        // the class together), so a class with several sources has its quantiles, not one
        // source's; the sources' lines on demand, named with their class.
        PlotKind::Latency => pick(&|m| {
            if let Some(rest) = m.strip_prefix("class.") {
                let (class, q) = rest.split_once(".latency.")?;
                return Some(format!("{class} {}", q.strip_suffix("_ms")?));
            }
            let (src, q) = m.strip_prefix("source.")?.split_once(".latency.")?;
            let q = q.strip_suffix("_ms").filter(|_| per_source)?;
            Some(match opened.and_then(|o| source_class(&o.scenario, src)) {
                Some(class) => format!("{src} ({class}) {q}"),
                None => format!("{src} {q}"),
            })
        }),
        PlotKind::Queues => pick(&|m| {
            let base = m.strip_suffix(".mean")?;
            (base.contains(".queue_depth")
                || base.ends_with(".waiting")
                || base.ends_with(".backlog"))
            .then(|| base.to_string())
        }),
        PlotKind::InFlight => pick(&|m| in_use_gauge(m).map(str::to_string)),
        PlotKind::Gpu => pick(&|m| {
            let base = m.strip_suffix(".mean")?;
            (base.starts_with("gpu_server.")
                && (base.ends_with(".running") || base.ends_with(".waiting")))
            .then(|| base.to_string())
        }),
        _ => Vec::new(),
    }
}

/// The gauge of something held (`<path>.in_use.mean`, `.busy`, `.leased`,
/// `.threads_busy`): its base name.
fn in_use_gauge(m: &str) -> Option<&str> {
    let base = m.strip_suffix(".mean")?;
    [".in_use", ".busy", ".leased", ".threads_busy"]
        .iter()
        .any(|s| base.ends_with(s))
        .then_some(base)
}

/// The class of a source's requests (its own, else the scenario's first class).
fn source_class<'a>(sc: &'a models::scenario::Scenario, source: &str) -> Option<&'a str> {
    let s = sc.sources.iter().find(|s| s.name == source)?;
    s.class.as_deref().or(sc.classes.first().map(|c| c.name.as_str()))
}

/// In flight against each limit: per component with a limit (from its observed state),
/// its in-use gauge (the engine's time-weighted mean where it has one, else its observed
/// use at each bucket's end) and its limit over time, dashed, in the same colour; then the
/// in-use gauges of components without a limit. A limit more than four times what is held
/// (a station's 1000 servers beside a quota of 100) would flatten the plot: it is listed
/// in the legend as off scale instead of drawn.
fn in_flight(store: &Store) -> Vec<Trace<'_>> {
    let gauges = engine_lines(store, None, PlotKind::InFlight, false);
    let limited: Vec<&str> = store
        .metrics(|m| m.starts_with("observed.") && m.ends_with(".limit"))
        .filter_map(|m| m.strip_prefix("observed.")?.strip_suffix(".limit"))
        .collect();
    let max = |pts: &[PlotPoint]| pts.iter().map(|p| p.y).fold(0.0f64, f64::max);
    let mut out = Vec::new();
    let mut used = Vec::new();
    for (i, path) in limited.iter().enumerate() {
        let own =
            gauges.iter().find(|(n, _)| n.strip_prefix(path).is_some_and(|r| r.starts_with('.')));
        let (name, pts) = match own {
            Some((n, m)) => (n.clone(), store.points(m)),
            None => (format!("{path} in use"), store.points(&format!("observed.{path}.in_use"))),
        };
        used.push(name.clone());
        out.push(Trace { name, color: color(i), style: Style::Data, data: Cow::Borrowed(pts) });
    }
    for (n, m) in gauges.iter().filter(|(n, _)| !used.contains(n)) {
        let i = out.len();
        let data = Cow::Borrowed(store.points(m));
        out.push(Trace { name: n.clone(), color: color(i), style: Style::Data, data });
    }
    let held = out.iter().map(|t| max(t.points())).fold(1.0, f64::max);
    for (i, path) in limited.iter().enumerate() {
        let pts = store.points(&format!("observed.{path}.limit"));
        let (name, data) = match max(pts) > 4.0 * held {
            true => (format!("limit {path} {} (off scale)", max(pts)), Cow::Owned(Vec::new())),
            false => (format!("limit {path}"), Cow::Borrowed(pts)),
        };
        out.push(Trace { name, color: color(i), style: Style::Limit, data });
    }
    out
}

/// Budgets left at each bucket's end (a quota's requests and tokens in its window, a
/// token bucket's tokens, a retry budget): `observed.<path>.<what>_left`, each in percent
/// of the most it held at a bucket's end so far (near its capacity: a bucket starts full),
/// so requests and millions of tokens share one axis; the legend says what 100% is.
fn budgets(store: &Store) -> Vec<(String, Cow<'_, [PlotPoint]>)> {
    store
        .metrics(|m| m.starts_with("observed.") && m.ends_with("_left"))
        .map(|m| {
            let pts = store.points(m);
            let most = pts.iter().map(|p| p.y).fold(0.0f64, f64::max);
            let what = m.trim_start_matches("observed.").replace('_', " ");
            let name = format!("{what} (100% = {most})");
            let scale = if most > 0.0 { 100.0 / most } else { 0.0 };
            (name, Cow::Owned(pts.iter().map(|p| PlotPoint::new(p.x, p.y * scale)).collect()))
        })
        .collect()
}

/// Per-second rates of the derived per-bucket counts: per class throughput, goodput,
/// degraded (and by reason, the reasons that occurred), rejected, 429s; retries.
fn throughput(store: &Store) -> Vec<(String, Cow<'_, [PlotPoint]>)> {
    let width = store.sample_every.map(|d| d.0 as f64 / 1e9).unwrap_or(1.0).max(1e-9);
    let rate = |m: &str| -> Cow<'_, [PlotPoint]> {
        Cow::Owned(store.points(m).iter().map(|p| PlotPoint::new(p.x, p.y / width)).collect())
    };
    let mut out = Vec::new();
    let classes: Vec<&str> = store
        .metrics(|m| m.starts_with("summary.class.") && m.ends_with(".offered"))
        .filter(|m| store.points(m).iter().any(|p| p.y > 0.0))
        .filter_map(|m| m.strip_prefix("summary.class.")?.strip_suffix(".offered"))
        .collect();
    for c in &classes {
        for (what, leaf) in [
            ("throughput", "completed"),
            ("goodput", "success"),
            ("degraded", "degraded"),
            ("rejected", "rejected"),
        ] {
            out.push((format!("{c} {what}"), rate(&format!("summary.class.{c}.{leaf}"))));
        }
        // Degraded answers by reason (`degraded_<reason>`), the reasons that occurred.
        let prefix = format!("summary.class.{c}.degraded_");
        let reasons: Vec<&str> = store
            .metrics(|m| m.starts_with(&prefix) && store.points(m).iter().any(|p| p.y > 0.0))
            .collect();
        for m in reasons {
            let reason = m.rsplit_once(".degraded_").map_or(m, |x| x.1);
            out.push((format!("{c} degraded: {reason}"), rate(m)));
        }
        let prefix = format!("summary.class.{c}.");
        let s429: Vec<&str> =
            store.metrics(|m| m.starts_with(&prefix) && m.ends_with("_upstream_429")).collect();
        out.push((format!("{c} 429"), Cow::Owned(sum_rates(store, &s429, width))));
    }
    let retries: Vec<&str> =
        store.metrics(|m| m.starts_with("summary.retry.") && m.ends_with(".retries")).collect();
    if !retries.is_empty() {
        out.push(("retries".into(), Cow::Owned(sum_rates(store, &retries, width))));
    }
    out
}

/// KV use of each GPU server, in thousands of tokens.
fn gpu_kv(store: &Store) -> Vec<(String, Cow<'_, [PlotPoint]>)> {
    store
        .metrics(|m| m.starts_with("gpu_server.") && m.ends_with(".kv_used_tokens.mean"))
        .map(|m| {
            let pts = store.points(m).iter().map(|p| PlotPoint::new(p.x, p.y / 1000.0)).collect();
            (format!("{} (k tokens)", m.trim_end_matches(".mean")), Cow::Owned(pts))
        })
        .collect()
}

/// The per-second sum of several per-bucket series that share their buckets.
fn sum_rates(store: &Store, metrics: &[&str], width: f64) -> Vec<PlotPoint> {
    let Some(first) = metrics.first() else { return Vec::new() };
    let mut out: Vec<PlotPoint> =
        store.points(first).iter().map(|p| PlotPoint::new(p.x, p.y / width)).collect();
    for m in &metrics[1..] {
        for (o, p) in out.iter_mut().zip(store.points(m)) {
            o.y += p.y / width;
        }
    }
    out
}
