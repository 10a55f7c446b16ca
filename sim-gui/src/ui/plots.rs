//! Live plots (egui_plot) sharing one time axis: latency quantiles per class (each from
//! the class's own histogram, all its sources together; per source on demand), queue
//! depths, in-flight against each limit, throughput / goodput / 429 / retries / degraded,
//! budgets left (quotas' requests and tokens, token buckets, retry budgets), a state strip
//! per breaker, GPU batch size and KV use. Choose which to show; a moving window, the whole
//! run, or the instant an event was clicked.
//!
//! What makes them readable: every axis has a title with its unit and labels at 1-2-5
//! steps (a plot 70 high still shows several); the y axes have one width, so the time axes
//! line up; each plot's legend is a column beside it ([`crate::ui::legend`]: never over
//! the data, scrolled when long, a line hidden by its check box); a plot is offered only
//! when the session has something to draw in it (no breaker strip without breakers); a
//! bucket without a value (no answer, so no latency) is a gap, not a line across it; the
//! model's events (configuration changes, outages, breaker transitions) and the recorded
//! changes are marked on every plot at their instants; limits are the values in force
//! over time (`observed.<path>.limit`: a gate's permits, a quota's concurrency), from the
//! components' states — no code per component kind.
//!
//! Series come from the store as they are, cut to the time range shown and min/max-
//! decimated to two points per pixel column ([`crate::ui::decimate`]), so hours of data
//! cost what the plot's width costs.

use crate::session::Opened;
use crate::store::Store;
use crate::ui::decimate::decimate;
use crate::ui::legend;
use crate::ui::plot_lines::{Style, Trace, traces};
use egui::Color32;
use egui_plot::{GridInput, GridMark, Line, Plot, PlotPoint, PlotPoints, Polygon, VLine};
use std::collections::BTreeSet;

pub use crate::ui::plot_lines::{PlotKind, lines};

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
    /// The plots the user keeps on (those with nothing to draw are not offered).
    pub shown: Vec<PlotKind>,
    pub span: Span,
    /// The latency plot also draws each source's quantiles (named `source (class) q`).
    pub per_source: bool,
    /// Lines hidden in their legends, by `plot/line name`.
    pub hidden: BTreeSet<String>,
}

impl Default for PlotsState {
    fn default() -> Self {
        PlotsState {
            shown: PlotKind::ALL.to_vec(),
            span: Span::Whole,
            per_source: false,
            hidden: BTreeSet::new(),
        }
    }
}

/// The width of every y axis (points): the time axes of all plots line up.
const Y_AXIS_WIDTH: f32 = 64.0;
/// The legend column beside each plot.
const LEGEND_WIDTH: f32 = 230.0;

pub fn view(ui: &mut egui::Ui, st: &mut PlotsState, store: &Store, opened: Option<&Opened>) {
    // Each plot's traces, built once a frame; a plot with nothing to draw is not offered.
    let lanes = store.breaker_lanes();
    let mut present: Vec<(PlotKind, Vec<Trace<'_>>)> = PlotKind::ALL
        .into_iter()
        .map(|k| (k, traces(store, opened, k, st.per_source)))
        .filter(|(k, t)| if *k == PlotKind::Breakers { !lanes.is_empty() } else { !t.is_empty() })
        .collect();
    let kinds: Vec<PlotKind> = present.iter().map(|p| p.0).collect();
    controls(ui, st, store, &kinds);
    present.retain(|(k, _)| st.shown.contains(k));
    let n = present.len().max(1) as f32;
    // Title row, plot with its x axis, spacing.
    // At least 130 points each (several labelled values, a readable axis title); the view
    // scrolls when they do not all fit.
    let height = ((ui.available_height() - 30.0 * n) / n).max(130.0);
    let now = store.status.now.0 as f64 / 1e9;
    egui::ScrollArea::vertical().show(ui, |ui| {
        for (k, traces) in &present {
            plot(ui, store, (*k, traces), &lanes, height, now, st);
        }
        if store.series.is_empty() {
            ui.weak("No data yet: the plots fill as the run goes.");
        }
    });
}

/// The plot check boxes (for the plots with something to draw), the time span, the
/// per-source switch.
fn controls(ui: &mut egui::Ui, st: &mut PlotsState, store: &Store, present: &[PlotKind]) {
    ui.horizontal_wrapped(|ui| {
        for &k in present {
            let mut on = st.shown.contains(&k);
            if ui.checkbox(&mut on, k.short()).changed() {
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
}

/// Grid marks at 1-2-5 steps: the finest step at least `base_step_size`, each mark given
/// the coarsest of four nested steps it is a multiple of (each step a multiple of the one
/// before, as egui_plot expects: it labels the steps far enough apart on screen), so a
/// short plot still has several labelled values instead of only 0.
pub fn nice_marks(input: GridInput) -> Vec<GridMark> {
    let base = input.base_step_size.abs().max(1e-12);
    let mut candidates: Vec<f64> = Vec::with_capacity(12);
    let mut decade = 10f64.powf(base.log10().floor());
    while candidates.len() < 12 {
        candidates.extend([1.0, 2.0, 5.0].iter().map(|m| decade * m).filter(|v| *v >= base));
        decade *= 10.0;
    }
    let multiple = |a: f64, b: f64| ((a / b) - (a / b).round()).abs() < 1e-6;
    let mut steps = vec![candidates[0]];
    for c in candidates {
        let last = *steps.last().expect("one step");
        if steps.len() < 4 && c > last && multiple(c, last) {
            steps.push(c);
        }
    }
    let (lo, hi) = input.bounds;
    let (first, last) = ((lo / steps[0]).ceil() as i64, (hi / steps[0]).floor() as i64);
    if last.saturating_sub(first) > 2_000 {
        return Vec::new();
    }
    (first..=last)
        .map(|i| {
            let value = i as f64 * steps[0];
            let on = |s: &f64| (value / s - (value / s).round()).abs() < 1e-6;
            GridMark { value, step_size: steps.iter().rev().copied().find(on).unwrap_or(steps[0]) }
        })
        .collect()
}

/// The time range shown (all of it when zoomed freely).
fn range_of(span: Span, now: f64) -> Option<(f64, f64)> {
    match span {
        Span::Whole => Some((0.0, now.max(1.0))),
        Span::Window(w) => Some(((now - w).max(0.0), now.max(1.0))),
        Span::Focus(t) => Some(((t - 30.0).max(0.0), t + 30.0)),
        Span::Free => None,
    }
}

/// Plot `k` with its traces and legend; `lanes`: the breaker lanes (for the strip).
fn plot(
    ui: &mut egui::Ui,
    store: &Store,
    (k, traces): (PlotKind, &[Trace<'_>]),
    lanes: &[crate::store::Lane],
    height: f32,
    now: f64,
    st: &mut PlotsState,
) {
    ui.strong(k.label());
    let range = range_of(st.span, now);
    let y_title = k.y_title();
    ui.horizontal_top(|ui| {
        let width = (ui.available_width() - LEGEND_WIDTH - 8.0).max(200.0);
        let mut p = Plot::new(("plot", k.short()))
            .height(height)
            .width(width)
            .link_axis(egui::Id::unique("time-axis"), [true, false])
            .link_cursor(egui::Id::unique("time-cursor"), [true, false])
            .allow_scroll(false)
            .x_axis_label("time (s)")
            .y_axis_min_width(Y_AXIS_WIDTH)
            .y_grid_spacer(nice_marks)
            .include_y(0.0);
        if k == PlotKind::Breakers {
            // The lanes are named inside, at the left edge of what is shown; the y axis
            // keeps its width (no labels), so the time axis lines up with the others.
            p = p.y_axis_formatter(|_, _| String::new()).include_y(lanes.len().max(1) as f64);
        } else {
            // A plot of zeros still spans 0..1, not -1..1.
            p = p.y_axis_label(y_title).include_y(1.0);
        }
        // Each line is decimated to two points per pixel column of the plot.
        let columns = width.max(1.0) as usize;
        let hidden = &st.hidden;
        let key = |name: &str| format!("{}/{name}", k.short());
        p.show(ui, |pu| {
            if let Some((x0, x1)) = range {
                pu.set_plot_bounds_x(x0..=x1);
            }
            for t in traces.iter().filter(|t| !hidden.contains(&key(&t.name))) {
                draw_trace(pu, t, store, range, columns);
            }
            if k == PlotKind::Breakers {
                breaker_strip(pu, lanes);
            }
            marks(pu, store);
            if let Span::Focus(t) = st.span {
                pu.vline(VLine::new("event", t).color(Color32::LIGHT_RED).width(2.0));
            }
        });
        let entries: Vec<(String, Color32)> = match k {
            PlotKind::Breakers => ["CLOSED", "HALF_OPEN", "OPEN"]
                .iter()
                .map(|s| (s.to_string(), state_color(s)))
                .collect(),
            _ => traces.iter().map(|t| (t.name.clone(), t.color)).collect(),
        };
        legend::column(ui, k.short(), &entries, &mut st.hidden, height);
    });
}

/// The bucket width in seconds (1 s when the run samples no series).
fn bucket_width(store: &Store) -> f64 {
    store.sample_every.map(|d| d.0 as f64 / 1e9).unwrap_or(1.0).max(1e-9)
}

/// Draws one trace: each run of consecutive buckets is its own line (a missing bucket is a
/// gap), cut to the range and decimated.
fn draw_trace<'a>(
    pu: &mut egui_plot::PlotUi<'a>,
    t: &'a Trace<'_>,
    store: &Store,
    range: Option<(f64, f64)>,
    columns: usize,
) {
    let width = bucket_width(store);
    for seg in segments(t.points(), width) {
        let mut line = Line::new(t.name.as_str(), thin(seg, range, columns)).color(t.color);
        line = match t.style {
            Style::Data => line.width(1.5),
            Style::Limit => line.width(1.0).style(egui_plot::LineStyle::dashed_loose()),
        };
        pu.line(line);
    }
}

/// `pts` cut where two consecutive points are more than one bucket apart (a bucket without
/// a value: no answer, no quantile).
pub fn segments(pts: &[PlotPoint], width: f64) -> Vec<&[PlotPoint]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..pts.len() {
        if pts[i].x - pts[i - 1].x > 1.5 * width {
            out.push(&pts[start..i]);
            start = i;
        }
    }
    if start < pts.len() {
        out.push(&pts[start..]);
    }
    out
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

/// The model's events and the recorded changes at their instants, on every plot:
/// configuration changes (an outage's start or end in red), breaker transitions in the
/// colour of the state entered, the session's own changes in the knobs' colour.
fn marks(pu: &mut egui_plot::PlotUi<'_>, store: &Store) {
    for e in &store.events {
        let t = e.time.0 as f64 / 1e9;
        let (color, width) = match e.kind {
            "state_change" => (state_color(&e.to).gamma_multiply(0.5), 1.0),
            _ if crate::ui::events::is_outage(e.kind, &e.from) => {
                (Color32::from_rgb(230, 60, 60), 2.0)
            }
            _ => (Color32::from_rgb(150, 150, 220), 1.5),
        };
        // Plain "to": the proportional font (Ubuntu-Light) has no arrow glyph.
        let name = format!("{} {} ({} to {})", e.component, e.kind, e.from, e.to);
        pu.vline(VLine::new(name, t).color(color).width(width));
    }
    for c in &store.changes {
        let t = c.at.0 as f64 / 1e9;
        let name = format!("recorded change {} = {}", c.path, c.value);
        pu.vline(VLine::new(name, t).color(Color32::from_rgb(230, 180, 60)).width(1.5));
    }
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

/// One lane per breaker: a filled rectangle per state span, from t = 0; its name inside,
/// at the left edge of what is shown (never clipped by the plot's border).
fn breaker_strip(pu: &mut egui_plot::PlotUi<'_>, lanes: &[crate::store::Lane]) {
    let left = pu.plot_bounds().min()[0];
    for (lane, (name, spans)) in lanes.iter().enumerate() {
        let y0 = lane as f64;
        let at = PlotPoint::new(left, y0 + 0.4);
        let label = egui::RichText::new(format!(" {name}")).color(Color32::WHITE).strong();
        for (t0, t1, state) in spans {
            let rect = vec![[*t0, y0], [*t1, y0], [*t1, y0 + 0.8], [*t0, y0 + 0.8]];
            pu.polygon(
                Polygon::new(state.clone(), PlotPoints::new(rect))
                    .fill_color(state_color(state))
                    .width(0.0),
            );
        }
        pu.text(egui_plot::Text::new(name.clone(), at, label).anchor(egui::Align2::LEFT_CENTER));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_bucket_cuts_the_line() {
        let p = |x: f64| PlotPoint::new(x, 1.0);
        let pts = [p(0.0), p(1.0), p(2.0), p(7.0), p(8.0), p(10.0)];
        let segs: Vec<usize> = segments(&pts, 1.0).iter().map(|s| s.len()).collect();
        assert_eq!(segs, vec![3, 2, 1], "gaps after 2 s (to 7 s) and after 8 s (to 10 s)");
        assert!(segments(&[], 1.0).is_empty());
    }

    /// egui_plot labels a mark when its step is at least 20 points apart on screen; a plot
    /// of 0–65 on 90 points (base step 5.8, the grid's 8 points) gets marks every 10 and
    /// labelled ones every 20 (27 points apart), not only 0 as powers of ten gave.
    #[test]
    fn a_short_plot_gets_several_labelled_marks() {
        let input = GridInput { bounds: (0.0, 65.0), base_step_size: 65.0 / 90.0 * 8.0 };
        let marks = nice_marks(input);
        let values: Vec<f64> = marks.iter().map(|m| m.value).collect();
        assert_eq!(values, vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
        let points = |m: &GridMark| m.step_size * 90.0 / 65.0;
        let labelled: Vec<f64> =
            marks.iter().filter(|m| points(m) > 20.0).map(|m| m.value).collect();
        assert_eq!(labelled, vec![0.0, 20.0, 40.0, 60.0]);
    }
}
