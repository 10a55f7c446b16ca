//! The workbench driven through AccessKit (egui_kittest): open a scenario, press run,
//! pause, move a knob, step; the session recorded the change at the instant shown, the
//! plot data grew; a bad file shows its positioned error. The simulation runs on its own
//! thread, so the harness is driven with `step()` until a condition holds.

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use models::params::ParamValue;
use sim_gui::Workbench;
use sim_gui::catalog;
use std::time::{Duration, Instant};

fn harness(name: &str) -> Harness<'static, Workbench> {
    let path = catalog::find(name).expect("bundled");
    Harness::builder()
        .with_size([1400.0, 900.0])
        .build_eframe(move |cc| Workbench::new(&cc.egui_ctx, Some(path)))
}

/// Steps the harness until `cond` holds (the worker thread answers asynchronously).
fn wait(h: &mut Harness<'static, Workbench>, what: &str, cond: impl Fn(&Workbench) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond(h.state()) {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        h.step();
        std::thread::sleep(Duration::from_millis(5));
    }
    h.step();
}

#[test]
fn run_pause_knob_step_records_the_change_at_the_instant_shown() {
    let mut h = harness("quickstart");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1 && w.store.end.0 > 0);
    h.get_by_label("Run").click();
    wait(&mut h, "the clock moves", |w| w.store.status.now.0 > 2_000_000_000);
    let points_before = h.state().store.point_count();
    assert!(points_before > 0, "plots have data while running");
    h.get_by_label("Pause").click();
    wait(&mut h, "the run pauses", |w| !w.store.status.running);
    let shown = h.state().store.status.now;

    // Move a knob: filter the knobs, then set the servers of the provider.
    h.get_by_label("Search").click();
    h.step();
    h.get_by_label("Search").type_text("servers");
    h.step();
    h.step();
    h.get_by_label("servers").set_value_accesskit(30.0);
    wait(&mut h, "the change is recorded", |w| !w.store.changes.is_empty());
    let c = h.state().store.changes[0].clone();
    assert_eq!(c.path, "station.provider.servers");
    assert_eq!(c.value, ParamValue::Count(30));
    assert_eq!(c.at, shown, "recorded at the instant the clock showed");

    // One event: the event count grows by exactly one.
    let events = h.state().store.status.events;
    h.get_by_label("One event").click();
    wait(&mut h, "one event", |w| w.store.status.events == events + 1);

    // Run on: the plot data grows, and the config change shows among the model events.
    h.get_by_label("Run").click();
    wait(&mut h, "more data", |w| w.store.point_count() > points_before + 100);
    wait(&mut h, "the config_change event", |w| {
        w.store
            .events
            .iter()
            .any(|e| e.kind == "config_change" && e.component == "station.provider")
    });
    h.get_by_label("Pause").click();
    wait(&mut h, "pause", |w| !w.store.status.running);
}

#[test]
fn a_bad_file_shows_its_positioned_error_and_the_session_stays() {
    let mut h = harness("quickstart");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    let dir = std::env::temp_dir().join(format!("sg-gui-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.ron");
    std::fs::write(
        &bad,
        "Scenario(\n    name: \"bad\",\n    sources: [(name: \"s\", interarrival: Exponential(mean: \"1s\"), target: \"c\")],\n    call_sites: [(name: \"c\", upstream: \"st\")],\n    stations: [(name: \"st\", servers: \"many\", service: Exponential(mean: \"1s\"))],\n)\n",
    )
    .unwrap();
    h.get_by_label("File:").click();
    h.step();
    h.get_by_label("File:").type_text(&bad.display().to_string());
    h.step();
    h.get_by_label("Open").click();
    h.step();
    h.step();
    let err = h.state().load_error.clone().expect("an error is shown");
    assert!(err.contains("bad.ron:5:"), "file:line: {err}");
    assert!(err.contains("stations[0].servers"), "field path: {err}");
    h.get_by_label_contains("Cannot open:");
    // The quickstart session is still open.
    assert_eq!(h.state().opened.as_ref().unwrap().exp.name, "quickstart");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn clicking_a_node_opens_its_inspector_and_knobs() {
    let mut h = harness(catalog::SHOWCASE);
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    h.get_by_label("Request path").click();
    h.step();
    h.get_by_label("circuit_breaker.llm-cb").click();
    h.step();
    h.step();
    assert_eq!(h.state().diagram.selected.as_deref(), Some("circuit_breaker.llm-cb"));
    h.get_by_label("failure_rate_threshold");
}
