//! The workbench driven through AccessKit (egui_kittest): open a scenario, press run,
//! pause, move a knob, step; the session recorded the change at the instant shown, the
//! plot data grew; a bad file shows its positioned error. The simulation runs on its own
//! thread, so the harness is driven with `step()` until a condition holds.

use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use models::params::ParamValue;
use sim_core::SimTime;
use sim_gui::ui::controls::clock;
use sim_gui::{SHOWCASE, Workbench};
use std::time::{Duration, Instant};

fn harness(name: &'static str) -> Harness<'static, Workbench> {
    Harness::builder().with_size([1400.0, 900.0]).build_eframe(move |cc| {
        let mut w = Workbench::new(&cc.egui_ctx);
        w.open_bundled(name);
        w
    })
}

/// Steps the harness until `cond` holds (the worker thread answers asynchronously).
fn wait(h: &mut Harness<'static, Workbench>, what: &str, cond: impl Fn(&Workbench) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond(h.state()) {
        let w = h.state();
        assert!(
            Instant::now() < deadline,
            "timed out waiting for: {what} (t = {:?}, running {}, generation {}, notices {:?}, load error {:?})",
            w.store.status.now,
            w.store.status.running,
            w.store.generation,
            w.store.notices,
            w.load_error
        );
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
    // The clock on screen (`t = m:ss.mmm / …`, read through AccessKit) is that instant.
    let node = h.get_by_label_contains("t = ").accesskit_node();
    let on_screen = node.label().or(node.value()).unwrap_or_default();
    assert!(on_screen.starts_with(&format!("t = {} ", clock(shown))), "{on_screen}");

    // Move a knob: filter the knobs, then set the servers of the provider.
    h.get_by_label("Search").set_text_value_accesskit("servers");
    h.step();
    h.step();
    h.check_accessibility();
    h.get_by_label("servers").set_value_accesskit(30.0);
    wait(&mut h, "the change is recorded", |w| !w.store.changes.is_empty());
    let c = h.state().store.changes[0].clone();
    assert_eq!(c.path, "station.provider.servers");
    assert_eq!(c.value, ParamValue::Count(30));
    assert_eq!(SimTime::ZERO + c.at, shown, "recorded at the instant the clock showed");

    // One event: the event count grows by exactly one.
    let events = h.state().store.status.events;
    h.get_by_label("One event").click();
    wait(&mut h, "one event", |w| w.store.status.events == events + 1);

    // The change took effect at the end of its instant (the event just processed may
    // share it; the next instant is past it): the knob shows the value in force,
    // highlighted as changed, with a reset.
    let t = h.state().store.status.now;
    h.get_by_label("Next instant").click();
    wait(&mut h, "the next instant", |w| w.store.status.now > t);
    wait(&mut h, "the value in force", |w| {
        w.store.param("station.provider.servers") == Some(&ParamValue::Count(30))
    });
    h.get_by_label("reset");

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
    h.get_by_label("File:").set_text_value_accesskit(&bad.display().to_string());
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
    let mut h = harness(SHOWCASE);
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    h.get_by_label("Request path").click();
    h.step();
    h.get_by_label("circuit_breaker.llm-cb (request path)").click();
    h.step();
    h.step();
    assert_eq!(h.state().diagram.selected.as_deref(), Some("circuit_breaker.llm-cb"));
    // The inspector: its state from the session's component states, and its knobs (also
    // opened in the knobs panel: the threshold shows in both).
    h.get_by_label("close");
    h.get_by_label("failure rate");
    h.get_by_label("CLOSED");
    let knobs = h.query_all_by_label("failure_rate_threshold").count();
    assert!(knobs >= 2, "the breaker's knobs in the inspector and the panel: {knobs}");
    h.check_accessibility();
}
