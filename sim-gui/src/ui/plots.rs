//! Live plots (egui_plot) sharing one time axis: latency quantiles per class (each from
//! the class's own histogram, all its sources together; per source on demand), queue
//! depths, in-flight against each limit, throughput / goodput / 429 / retries / degraded,
//! a state strip per breaker, GPU batch size and KV use. Choose which to show; a moving
//! window, the whole run, or the instant an event was clicked.
//!
//! Series come from the store as they are (borrowed points, no copy per frame), cut to the
//! time range shown and min/max-decimated to two points per pixel column
//! ([`crate::ui::decimate`]), so hours of data cost what the plot's width costs.

use crate::session::Opened;
use crate::store::Store;
use crate::ui::decimate::decimate;
use egui::Color32;
use egui_plot::{HLine, Legend, Line, Plot, PlotPoint, PlotPoints, Polygon, VLine};

/// The plots on offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PlotKind {
    Latency,
    Queues,
    InFlight,
    Throughput,
    Breakers,
    Gpu,
}

impl PlotKind {
    pub const ALL: [PlotKind; 6] = [
        PlotKind::Latency,
        PlotKind::Queues,
        PlotKind::InFlight,
        PlotKind::Throughput,
        PlotKind::Breakers,
        PlotKind::Gpu,
    ];
    pub fn label(self) -> &'static str {
        match self {
            PlotKind::Latency => "Latency p50/p95/p99 per class (ms)",
            PlotKind::Queues => "Queue depth",
            PlotKind::InFlight => "In flight vs limits",
            PlotKind::Throughput => {
                "Throughput / goodput / 429 / retries / degraded by reason (per s)"
            }
            PlotKind::Breakers => "Breaker state",
            PlotKind::Gpu => "GPU batch size and KV use",
        }
    }
}

/// Which part of the time axis the plots show.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Span {
    /// The last `w` seconds.
    Window(f64),
    Whole,
    /// Centered on an instant (an event clicked), 60 s wide.
    Focus(f64),
    /// Whatever the user zoomed or panned to.
    Free,
}

pub struct PlotsState {
    pub shown: Vec<PlotKind>,
    pub span: Span,
    /// The latency plot also draws each source's quantiles (named `source (class) q`).
    pub per_source: bool,
}

impl Default for PlotsState {
    fn default() -> Self {
        PlotsState { shown: PlotKind::ALL.to_vec(), span: Span::Whole, per_source: false }
    }
}

pub fn view(ui: &mut egui::Ui, st: &mut PlotsState, store: &Store, opened: Option<&Opened>) {
    ui.horizontal_wrapped(|ui| {
        for k in PlotKind::ALL {
            let mut on = st.shown.contains(&k);
            if ui.checkbox(&mut on, short(k)).changed() {
                st.shown.retain(|x| *x != k);
                if on {
                    st.shown.push(k);
                    st.shown.sort();
                }
            }
        }
        ui.separator();
        let span = &mut st.span;
        if ui.selectable_label(*span == Span::Whole, "whole run").clicked() {
            *span = Span::Whole;
        }
        for secs in [60.0, 300.0] {
            let on = *span == Span::Window(secs);
            if ui.selectable_label(on, format!("last {}s", secs as u64)).clicked() {
                *span = Span::Window(secs);
            }
        }
        if ui.selectable_label(*span == Span::Free, "free zoom").clicked() {
            *span = Span::Free;
        }
        ui.separator();
        ui.checkbox(&mut st.per_source, "latency per source");
        ui.weak(format!("{} points", store.point_count()));
    });
    let n = st.shown.len().max(1) as f32;
    let height = ((ui.available_height() - 8.0 * n) / n).max(60.0);
    let now = store.status.now.0 as f64 / 1e9;
    egui::ScrollArea::vertical().show(ui, |ui| {
        for &k in &st.shown {
            plot(ui, store, opened, k, height, now, st);
        }
    });
}

fn short(k: PlotKind) -> &'static str {
    match k {
        PlotKind::Latency => "latency",
        PlotKind::Queues => "queues",
        PlotKind::InFlight => "in flight",
        PlotKind::Throughput => "throughput",
        PlotKind::Breakers => "breakers",
        PlotKind::Gpu => "GPU",
    }
}

fn plot(
    ui: &mut egui::Ui,
    store: &Store,
    opened: Option<&Opened>,
    k: PlotKind,
    height: f32,
    now: f64,
    st: &PlotsState,
) {
    let span = st.span;
    ui.label(k.label());
    let p = Plot::new(("plot", short(k)))
        .height(height)
        .link_axis(egui::Id::unique("time-axis"), [true, false])
        .link_cursor(egui::Id::unique("time-cursor"), [true, false])
        .legend(Legend::default())
        .allow_scroll(false)
        .include_y(0.0);
    let limits = limits(store, opened, k);
    let owned = owned_lines(store, k);
    // The time range shown (all of it when zoomed freely) and the plot's width in pixels:
    // each line is decimated to two points per pixel column of it.
    let range = match span {
        Span::Whole => Some((0.0, now.max(1.0))),
        Span::Window(w) => Some(((now - w).max(0.0), now.max(1.0))),
        Span::Focus(t) => Some(((t - 30.0).max(0.0), t + 30.0)),
        Span::Free => None,
    };
    let columns = ui.available_width().max(1.0) as usize;
    p.show(ui, |pu| {
        if let Some((x0, x1)) = range {
            pu.set_plot_bounds_x(x0..=x1);
        }
        for (name, metric) in borrowed_lines(store, opened, k, st.per_source) {
            pu.line(Line::new(name, thin(store.points(metric), range, columns)));
        }
        for (name, pts) in &owned {
            pu.line(Line::new(name.as_str(), thin(pts, range, columns)));
        }
        for (name, y) in limits {
            pu.hline(HLine::new(name, y).color(Color32::GRAY));
        }
        if k == PlotKind::Breakers {
            breaker_strip(pu, store);
        }
        if let Span::Focus(t) = span {
            pu.vline(VLine::new("event", t).color(Color32::LIGHT_RED));
        }
    });
}

/// A line's points for the plot: those in `range` (s), decimated to `columns` pixel
/// columns; all of them when the range is the user's (free zoom).
fn thin(pts: &[PlotPoint], range: Option<(f64, f64)>, columns: usize) -> PlotPoints<'_> {
    match range.map(|(x0, x1)| decimate(pts, x0, x1, columns)) {
        None => PlotPoints::Borrowed(pts),
        Some(std::borrow::Cow::Borrowed(s)) => PlotPoints::Borrowed(s),
        Some(std::borrow::Cow::Owned(v)) => PlotPoints::Owned(v),
    }
}

/// Engine series drawn as they are: (legend name, metric). `per_source`: the latency plot
/// draws the sources' quantiles beside their classes'.
pub fn borrowed_lines<'a>(
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
        PlotKind::InFlight => pick(&|m| {
            let base = m.strip_suffix(".mean")?;
            (base.ends_with(".in_use")
                || base.ends_with(".busy")
                || base.ends_with(".leased")
                || base.ends_with(".threads_busy"))
            .then(|| base.to_string())
        }),
        PlotKind::Gpu => pick(&|m| {
            let base = m.strip_suffix(".mean")?;
            (base.starts_with("gpu_server.")
                && (base.ends_with(".running") || base.ends_with(".waiting")))
            .then(|| base.to_string())
        }),
        PlotKind::Throughput | PlotKind::Breakers => Vec::new(),
    }
}

/// The class of a source's requests (its own, else the scenario's first class).
fn source_class<'a>(sc: &'a models::scenario::Scenario, source: &str) -> Option<&'a str> {
    let s = sc.sources.iter().find(|s| s.name == source)?;
    s.class.as_deref().or(sc.classes.first().map(|c| c.name.as_str()))
}

/// Lines computed from several series (per-second rates, sums, scaled KV).
fn owned_lines(store: &Store, k: PlotKind) -> Vec<(String, Vec<PlotPoint>)> {
    let width = store.sample_every.map(|d| d.0 as f64 / 1e9).unwrap_or(1.0).max(1e-9);
    let rate = |m: &str| -> Vec<PlotPoint> {
        store.points(m).iter().map(|p| PlotPoint::new(p.x, p.y / width)).collect()
    };
    match k {
        PlotKind::Throughput => {
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
                let reasons: Vec<&str> = store
                    .metrics(|m| {
                        m.starts_with(&format!("summary.class.{c}.degraded_"))
                            && store.points(m).iter().any(|p| p.y > 0.0)
                    })
                    .collect();
                for m in reasons {
                    let reason = m.rsplit_once(".degraded_").map_or(m, |x| x.1);
                    out.push((format!("{c} degraded: {reason}"), rate(m)));
                }
                let s429: Vec<&str> = store
                    .metrics(|m| {
                        m.starts_with(&format!("summary.class.{c}."))
                            && m.ends_with("_upstream_429")
                    })
                    .collect();
                out.push((format!("{c} 429"), sum_rates(store, &s429, width)));
            }
            let retries: Vec<&str> = store
                .metrics(|m| m.starts_with("summary.retry.") && m.ends_with(".retries"))
                .collect();
            if !retries.is_empty() {
                out.push(("retries".into(), sum_rates(store, &retries, width)));
            }
            out
        }
        PlotKind::Gpu => store
            .metrics(|m| m.starts_with("gpu_server.") && m.ends_with(".kv_used_tokens.mean"))
            .map(|m| {
                let pts =
                    store.points(m).iter().map(|p| PlotPoint::new(p.x, p.y / 1000.0)).collect();
                (format!("{} (k tokens)", m.trim_end_matches(".mean")), pts)
            })
            .collect(),
        _ => Vec::new(),
    }
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

/// Limits drawn as horizontal lines: gate permits and station servers in force now.
fn limits(store: &Store, opened: Option<&Opened>, k: PlotKind) -> Vec<(String, f64)> {
    let Some(o) = opened else { return Vec::new() };
    if k != PlotKind::InFlight {
        return Vec::new();
    }
    o.registry
        .iter()
        .filter(|s| s.path.ends_with(".permits") || s.path.ends_with(".servers"))
        .filter_map(|s| match store.param(&s.path)? {
            models::params::ParamValue::Count(n) if *n < 100_000 => {
                Some((format!("limit {}", s.path), *n as f64))
            }
            _ => None,
        })
        .collect()
}

/// The colour of a breaker state.
pub fn state_color(state: &str) -> Color32 {
    match state {
        "CLOSED" => Color32::from_rgb(70, 160, 90),
        "OPEN" | "FORCED_OPEN" => Color32::from_rgb(210, 70, 60),
        "HALF_OPEN" => Color32::from_rgb(230, 170, 50),
        _ => Color32::GRAY,
    }
}

/// One lane per breaker: a filled rectangle per state span.
fn breaker_strip(pu: &mut egui_plot::PlotUi<'_>, store: &Store) {
    for (lane, (name, spans)) in store.breaker_states().iter().enumerate() {
        let y0 = lane as f64;
        pu.text(egui_plot::Text::new(name.clone(), PlotPoint::new(0.0, y0 + 0.9), name.as_str()));
        for (t0, t1, state) in spans {
            let rect = vec![[*t0, y0], [*t1, y0], [*t1, y0 + 0.8], [*t0, y0 + 0.8]];
            pu.polygon(
                Polygon::new(state.clone(), PlotPoints::new(rect))
                    .fill_color(state_color(state))
                    .width(0.0),
            );
        }
    }
}
