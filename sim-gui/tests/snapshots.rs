//! Snapshot tests of the main views (plots, request path, events), rendered by egui_kittest's
//! wgpu renderer on Mesa (lavapipe: no GPU, no display). The showcase runs to exactly 120 s
//! first, so every figure on screen is deterministic except the wall-clock gauges (events
//! per wall-second, simulated-to-real ratio) and the file path, which are masked. The tolerance (a per-pixel
//! colour threshold and 1% of the pixels) absorbs rasteriser differences between machines.
//!
//! Regenerate after an intended change: `UPDATE_SNAPSHOTS=1 cargo test -p sim-gui --test snapshots`.

use egui_kittest::kittest::Queryable;
use egui_kittest::{Harness, SnapshotOptions};
use sim_core::{SimDuration, SimTime};
use sim_gui::worker::{Cmd, Speed};
use sim_gui::{SHOWCASE, Workbench};
use std::time::{Duration, Instant};

const W: f32 = 1400.0;
const H: f32 = 900.0;

fn wait(h: &mut Harness<'static, Workbench>, what: &str, cond: impl Fn(&Workbench) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !cond(h.state()) {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    for _ in 0..4 {
        h.step();
    }
}

fn options() -> SnapshotOptions {
    SnapshotOptions::new().threshold(1.0).max_failed_pixels((W * H * 0.01) as usize)
}

/// Masks what differs between machines or runs: the wall-clock gauges (events per
/// wall-second, simulated-to-real ratio) and the file path (the checkout's location).
fn mask_wall_clock(h: &mut Harness<'static, Workbench>) {
    let mut rects: Vec<egui::Rect> = ["ev/s", "sim/real"]
        .iter()
        .flat_map(|t| h.query_all_by_label_contains(t).map(|n| n.rect()).collect::<Vec<_>>())
        .collect();
    rects.extend(h.query_all_by_label("File:").map(|n| n.rect()));
    for r in rects {
        h.mask(r.expand(2.0));
    }
}

/// The bundled experiment `name` (or the file `name`, ending in `.ron`) in a window of the snapshots' size, run to exactly
/// `secs` as fast as possible.
fn opened_at(name: &'static str, secs: u64) -> Harness<'static, Workbench> {
    let mut h =
        Harness::builder().with_size([W, H]).wgpu().with_options(options()).build_eframe(|cc| {
            let mut w = Workbench::new(&cc.egui_ctx);
            match name.strip_suffix(".ron") {
                Some(_) => w.open_path(std::path::Path::new(name)),
                None => w.open_bundled(name),
            }
            w
        });
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    let t = SimTime::ZERO + SimDuration::from_secs(secs);
    h.state_mut().controls.speed = Speed::Max;
    h.state().worker.send(Cmd::SetSpeed(Speed::Max));
    h.state().worker.send(Cmd::RunUntil(t));
    wait(&mut h, "the run reaches its time", |w| {
        w.store.status.now == t && !w.store.status.running
    });
    h
}

/// The showcase's plots: axis titles with units, labels on every y axis, legends beside
/// the plots, no GPU plot (it has none), the latency lines broken where a bucket had no
/// answer, the outage and the breaker's transitions marked, the breaker strip from 0 with
/// its name inside; the request path; the events.
#[test]
fn main_views_match_their_snapshots() {
    let mut h = opened_at(SHOWCASE, 120);
    mask_wall_clock(&mut h);
    let mut results = egui_kittest::SnapshotResults::new();
    results.add(h.try_snapshot("workbench_plots"));
    h.get_by_label("Request path").click();
    wait(&mut h, "the diagram", |w| w.view == sim_gui::app::View::Diagram);
    mask_wall_clock(&mut h);
    results.add(h.try_snapshot("workbench_diagram"));
    h.get_by_label("Events").click();
    wait(&mut h, "the events", |w| w.view == sim_gui::app::View::Events);
    mask_wall_clock(&mut h);
    results.add(h.try_snapshot("workbench_events"));
    results.unwrap();
}

/// The showcase's request path with the LLM station's inspector open (within the window),
/// and Compare of its two variants (numbers formatted, no NaN).
#[test]
fn inspector_and_compare_match_their_snapshots() {
    let mut h = opened_at(SHOWCASE, 120);
    let mut results = egui_kittest::SnapshotResults::new();
    h.get_by_label("Request path").click();
    wait(&mut h, "the diagram", |w| w.view == sim_gui::app::View::Diagram);
    h.get_by_label("station.llm (request path)").click();
    wait(&mut h, "the inspector", |w| w.diagram.selected.as_deref() == Some("station.llm"));
    mask_wall_clock(&mut h);
    results.add(h.try_snapshot("workbench_inspector"));
    h.get_by_label("Compare").click();
    wait(&mut h, "compare", |w| w.view == sim_gui::app::View::Compare);
    h.get_by_value("this session (knobs)").click();
    h.step();
    h.step();
    h.get_by_label_contains("gate-32 · point 0").click();
    h.step();
    h.step();
    h.get_by_label("Run comparison").click();
    h.step();
    assert!(h.state().compare.busy, "the comparison runs");
    wait(&mut h, "both runs", |w| w.compare.result.lock().unwrap().is_some());
    mask_wall_clock(&mut h);
    results.add(h.try_snapshot("workbench_compare"));
    results.unwrap();
}

/// A scenario with a provider quota (`fanout-surge`: 100 concurrent calls in front of a
/// station of 1000 servers, a gate of 10,000 permits): the in-flight plot draws the
/// quota's limit (the station's and the gate's listed as off scale), the budgets it
/// exposes, and the request path has the quota as its own node between the call site and
/// the station.
#[test]
fn a_scenario_with_a_quota_matches_its_snapshots() {
    let mut h = opened_at("fanout-surge", 90);
    mask_wall_clock(&mut h);
    let mut results = egui_kittest::SnapshotResults::new();
    results.add(h.try_snapshot("quota_plots"));
    h.get_by_label("Request path").click();
    wait(&mut h, "the diagram", |w| w.view == sim_gui::app::View::Diagram);
    mask_wall_clock(&mut h);
    results.add(h.try_snapshot("quota_diagram"));
    results.unwrap();
}

/// A quota with requests and tokens per minute besides its concurrency: the budgets plot
/// draws the requests and tokens left in its bucket over time.
#[test]
fn a_quota_s_budgets_match_their_snapshot() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rpm-tpm-quota.ron");
    let mut h = opened_at(file, 30);
    h.state_mut().plots.shown.retain(|k| *k != sim_gui::ui::plots::PlotKind::Latency);
    wait(&mut h, "the plots", |_| true);
    mask_wall_clock(&mut h);
    h.snapshot("quota_budgets");
}
