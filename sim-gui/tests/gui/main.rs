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

/// Typing into knobs, rewinding, the plots offered and the quota drawn.
mod knobs_and_plots;

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
    // Real time: the run cannot reach its end (10 min) however slowly the test goes.
    choose_speed(&mut h, sim_gui::worker::Speed::Times(1.0));
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

/// A file dropped on the window: by path (a desktop drop) or as bytes only.
#[derive(Debug)]
struct Dropped {
    path: std::path::PathBuf,
    bytes: Option<Vec<u8>>,
}

impl egui::DroppedFile for Dropped {
    fn path(&self) -> &std::path::Path {
        &self.path
    }
    fn bytes(&self) -> Result<Vec<u8>, String> {
        match &self.bytes {
            Some(b) => Ok(b.clone()),
            None => std::fs::read(&self.path).map_err(|e| e.to_string()),
        }
    }
}

fn drop_file(h: &mut Harness<'static, Workbench>, path: &str, bytes: Option<&str>) {
    let f = Dropped { path: path.into(), bytes: bytes.map(|b| b.as_bytes().to_vec()) };
    h.input_mut().dropped_files.push(std::sync::Arc::new(f));
    h.step();
}

/// The planned-run index of a variant of the open experiment (its first point and seed).
fn combo_of(w: &Workbench, variant: &str) -> usize {
    let exp = &w.opened.as_ref().unwrap().exp;
    exp.runs.iter().position(|r| r.variant == variant).unwrap()
}

/// Headless: the fingerprint of a planned run's variant and point at `seed`.
fn headless_fp(w: &Workbench, combo: usize, seed: u64) -> String {
    let mut sel = w.opened.as_ref().unwrap().sel.clone();
    sel.combo = combo;
    sel.seed = seed;
    models::run(&sel.scenario().unwrap(), &sel.run_config()).fingerprint.hex()
}

/// Chooses a speed in the speed combo box.
fn choose_speed(h: &mut Harness<'static, Workbench>, speed: sim_gui::worker::Speed) {
    use sim_gui::ui::controls::speed_label;
    h.get_by_value(&speed_label(h.state().controls.speed)).click();
    h.step();
    h.step();
    h.get_by_label(&speed_label(speed)).click();
    h.step();
    assert_eq!(h.state().controls.speed, speed);
}

/// Runs to `secs` as fast as possible through the controls and waits for the stop there;
/// returns that instant.
fn stopped_at(h: &mut Harness<'static, Workbench>, secs: u64) -> SimTime {
    run_until_through_the_controls(h, &format!("{secs}s"));
    let t = SimTime::ZERO + sim_core::SimDuration::from_secs(secs);
    wait(h, "the stop", |w| w.store.status.now == t && !w.store.status.running);
    t
}

/// Runs to `until` as fast as possible through the controls: the "to" field, the speed
/// combo box, "Run until".
fn run_until_through_the_controls(h: &mut Harness<'static, Workbench>, until: &str) {
    h.get_by_label("to").set_text_value_accesskit(until);
    h.step();
    choose_speed(h, sim_gui::worker::Speed::Max);
    h.get_by_label("Run until").click();
    h.step();
}

#[test]
fn dropped_files_open_and_a_bad_drop_shows_its_positioned_error() {
    let mut h = harness("quickstart");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    // A desktop drop: the file's path.
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../experiments/gate-sizing.ron");
    drop_file(&mut h, file, None);
    wait(&mut h, "the dropped file opens", |w| w.store.generation >= 2);
    assert_eq!(h.state().opened.as_ref().unwrap().exp.name, "gate-sizing");
    assert!(h.state().load_error.is_none());
    // A drop that carries only bytes (no file at that path), with an error at line 2.
    drop_file(&mut h, "/nowhere/dropped.ron", Some("Scenario(\n    nme: \"x\",\n)\n"));
    let err = h.state().load_error.clone().expect("the bad drop shows an error");
    assert!(err.contains("dropped.ron:2:"), "file:line: {err}");
    h.get_by_label_contains("Cannot open:");
    assert_eq!(h.state().opened.as_ref().unwrap().exp.name, "gate-sizing", "the session stays");
}

#[test]
fn choosing_a_variant_opens_that_combination() {
    let mut h = harness(SHOWCASE);
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    h.get_by_label("Variant and sweep point").click();
    h.step();
    h.step();
    h.get_by_label_contains("gate-32 · point 0").click();
    let gate32 = combo_of(h.state(), "gate-32");
    wait(&mut h, "the variant opens", |w| {
        w.store.generation >= 2 && w.opened.as_ref().unwrap().sel.combo == gate32
    });
    wait(&mut h, "its values in force", |w| {
        w.store.param("gate.llm-permits.permits") == Some(&ParamValue::Count(32))
    });
}

#[test]
fn reset_keeps_or_changes_the_seed_and_applies_the_values_set_for_it() {
    let mut h = harness("quickstart");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    let seed = h.state().store.seed;
    // A parameter that cannot change at run time: set in its knob, it waits for a reset.
    let spec = h
        .state()
        .opened
        .as_ref()
        .unwrap()
        .registry
        .iter()
        .find(|s| !s.runtime && matches!(s.value, ParamValue::Count(_)))
        .cloned()
        .expect("the quickstart has a count that applies on reset");
    let ParamValue::Count(n) = spec.value else { unreachable!() };
    let (leaf, new) = (spec.path.rsplit('.').next().unwrap().to_string(), n + 1);
    h.get_by_label("Search").set_text_value_accesskit(&spec.path);
    h.step();
    h.step();
    h.get_by_label(&leaf).set_value_accesskit(new as f64);
    h.step();
    h.step();
    h.get_by_label("1 value(s) apply on reset");
    assert!(h.state().store.changes.is_empty(), "not a run-time change");
    h.get_by_label("Reset").click();
    wait(&mut h, "the reset", |w| w.store.generation >= 2);
    let w = h.state();
    assert_eq!(w.store.seed, seed, "Reset keeps the seed");
    assert_eq!(
        w.opened.as_ref().unwrap().sel.overrides,
        vec![(spec.path.clone(), ParamValue::Count(new))]
    );
    wait(&mut h, "the value in force", |w| {
        w.store.param(&spec.path) == Some(&ParamValue::Count(new))
    });
    h.get_by_label("Reset, new seed").click();
    wait(&mut h, "the new seed", |w| w.store.generation >= 3);
    assert_eq!(h.state().store.seed, seed + 1);
}

/// Two sources of one class: the latency plot draws the class's own quantiles (its
/// histogram over both sources, `class.chat.latency.*`), and the sources' lines only when
/// asked for ("latency per source"), named with their class.
const TWO_SOURCES_ONE_CLASS: &str = r#"Scenario(name: "two-sources",
    classes: [(name: "chat")],
    sources: [
        (name: "fast", class: "chat", interarrival: Exponential(mean: "10ms"), target: "f"),
        (name: "slow", class: "chat", interarrival: Exponential(mean: "20ms"), target: "s"),
    ],
    call_sites: [(name: "f", upstream: "quick"), (name: "s", upstream: "slow")],
    stations: [
        (name: "quick", servers: 50, service: Exponential(mean: "20ms")),
        (name: "slow", servers: 50, service: Exponential(mean: "200ms")),
    ],
)"#;

#[test]
fn latency_is_plotted_per_class_from_the_class_histogram() {
    let mut h = harness("quickstart");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    drop_file(&mut h, "/nowhere/two-sources.ron", Some(TWO_SOURCES_ONE_CLASS));
    wait(&mut h, "the dropped scenario opens", |w| w.store.generation >= 2);
    stopped_at(&mut h, 20);
    // The plot's legend (AccessKit check boxes, one per line): the class's quantiles, not
    // the sources'.
    for q in ["p50", "p95", "p99"] {
        h.get_by_label(&format!("chat {q}"));
        assert_eq!(h.query_all_by_label(&format!("fast (chat) {q}")).count(), 0, "{q}");
        assert!(!h.state().store.points(&format!("class.chat.latency.{q}_ms")).is_empty());
    }
    h.get_by_label("latency per source").click();
    h.step();
    h.step();
    for src in ["fast", "slow"] {
        h.get_by_label(&format!("{src} (chat) p99"));
    }
    // The class line is its own: in most buckets its median is neither source's.
    let w = h.state();
    let p50 = |m: &str| w.store.points(&format!("{m}.latency.p50_ms")).to_vec();
    let (class, fast, slow) = (p50("class.chat"), p50("source.fast"), p50("source.slow"));
    let own = class
        .iter()
        .filter(|c| ![&fast, &slow].iter().any(|s| s.iter().any(|p| p.x == c.x && p.y == c.y)))
        .count();
    assert!(own * 2 > class.len(), "{own} of {} class medians are the class's own", class.len());
}

#[test]
fn clicking_an_event_moves_the_plots_to_its_instant() {
    use sim_gui::ui::plots::Span;
    let mut h = harness(SHOWCASE);
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    stopped_at(&mut h, 120);
    h.get_by_label("Events").click();
    h.step();
    // The outage starts at 60 s (a configuration change); the breaker opens after it.
    let ev = h.state().store.events.clone();
    let open = ev
        .iter()
        .find(|e| e.kind == "state_change" && e.to == "OPEN")
        .expect("the breaker opens during the outage");
    assert!(open.time.0 > 60_000_000_000, "{open:?}");
    let outage = ev.iter().find(|e| e.kind == "config_change").expect("the outage's start");
    for (e, want) in [(open, open.time.0 as f64 / 1e9), (outage, 60.0)] {
        h.get_by_label("Events").click();
        h.step();
        h.get_all_by_label(&clock(e.time)).next().expect("the event's instant").click();
        h.step();
        h.step();
        let w = h.state();
        assert_eq!(w.view, sim_gui::app::View::Plots, "the plots are shown");
        assert_eq!(w.plots.span, Span::Focus(want), "centred on {e:?}");
    }
}

#[test]
fn compare_runs_two_variants_on_the_same_seed_with_the_difference() {
    use sim_gui::ui::compare::Choice;
    let mut h = harness(SHOWCASE);
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    h.get_by_label("Compare").click();
    h.step();
    // A: baseline (the default), B: the gate-32 variant instead of this session.
    h.get_by_value("this session (knobs)").click();
    h.step();
    h.step();
    h.get_by_label_contains("gate-32 · point 0").click();
    h.step();
    let gate32 = combo_of(h.state(), "gate-32");
    assert_eq!(h.state().compare.b, Choice::Combo(gate32));
    h.step();
    h.get_by_label("Run comparison").click();
    h.step();
    assert!(h.state().compare.busy, "the comparison runs");
    wait(&mut h, "both runs", |w| w.compare.result.lock().unwrap().is_some());
    let seed = h.state().store.seed;
    let (fa, fb) = (headless_fp(h.state(), 0, seed), headless_fp(h.state(), gate32, seed));
    assert_ne!(fa, fb, "the variants differ");
    for (side, fp) in [("A: baseline · point 0", &fa), ("B: gate-32 · point 0", &fb)] {
        let needle = format!("fingerprint {fp}");
        let node = h.get_by_label_contains(&needle).accesskit_node();
        let text = node.label().or(node.value()).unwrap_or_default();
        assert!(text.starts_with(side), "{text}");
    }
    // The curves of the chosen series overlaid, and B - A of the headline figures.
    let (metric, diffs) = {
        let w = h.state();
        let res = w.compare.result.lock().unwrap();
        let (a, b) = res.as_ref().unwrap().as_ref().unwrap();
        let m = w.compare.metric.clone();
        assert!(m.ends_with("latency.p99_ms"), "{m}");
        assert!(!a.series[&m].is_empty() && !b.series[&m].is_empty());
        let num = |s: &models::summary::Summary, n: &str| match &s
            .values
            .iter()
            .find(|x| x.0 == n)
            .unwrap()
            .1
        {
            models::summary::Value::U64(v) => *v as f64,
            models::summary::Value::F64(v) => *v,
        };
        let diffs: Vec<String> = ["source.chat.completed", "source.chat.latency_ms_p99"]
            .iter()
            .map(|n| {
                let (x, y) = (num(&a.summary, n), num(&b.summary, n));
                sim_gui::ui::compare::difference_text(n, Some(x), Some(y))
            })
            .collect();
        (m, diffs)
    };
    h.get_by_label(&format!("A {metric}"));
    h.get_by_label(&format!("B {metric}"));
    h.get_by_label("B - A");
    for d in diffs {
        assert!(h.query_all_by_label(&d).count() >= 1, "the difference {d} is shown");
    }
}

/// Runs the quickstart to `at_s` through the controls, then sets the provider's servers to
/// `n` in its knob; returns the instant.
fn servers_changed_at(h: &mut Harness<'static, Workbench>, at_s: u64, n: u64) -> SimTime {
    run_until_through_the_controls(h, &format!("{at_s}s"));
    let t = SimTime::ZERO + sim_core::SimDuration::from_secs(at_s);
    wait(h, "the stop", |w| w.store.status.now == t && !w.store.status.running);
    h.get_by_label("Search").set_text_value_accesskit("servers");
    h.step();
    h.step();
    h.get_by_label("servers").set_value_accesskit(n as f64);
    wait(h, "the change", |w| w.store.changes.len() == 1);
    t
}

#[test]
fn dragging_the_time_cursor_back_rewinds_and_the_run_stays_exact() {
    let mut h = harness("quickstart");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    let t30 = servers_changed_at(&mut h, 30, 30);
    let t240 = stopped_at(&mut h, 240);
    // Drag the cursor from the clock back to about the middle of the run (10 min): left of
    // 240 s and right of the change at 30 s.
    let generation = h.state().store.generation;
    let rail = h.get_by_role_and_label(egui::Role::Slider, "rewind").rect();
    let (from, to) = (
        egui::pos2(rail.left() + rail.width() * 0.4, rail.center().y),
        egui::pos2(rail.left() + rail.width() * 0.15, rail.center().y),
    );
    h.hover_at(from);
    h.step();
    h.drag_at(from);
    h.step();
    h.hover_at(to);
    h.step();
    assert!(h.state().cursor.is_some(), "the cursor follows the drag");
    h.drop_at(to);
    wait(&mut h, "the rewind", |w| w.store.generation > generation);
    let now = h.state().store.status.now;
    assert!(now > t30 && now < t240, "rewound to {now:?}");
    assert_eq!(h.state().store.changes.len(), 1, "the change before the cursor is kept");
    // Run on to the end: the same run as the change on the timeline, uninterrupted.
    h.get_by_label("Run").click();
    wait(&mut h, "the end", |w| w.store.status.finished);
    let w = h.state();
    let sel = &w.opened.as_ref().unwrap().sel;
    let mut sc = sel.scenario().unwrap();
    sc.timeline.extend(w.store.changes.iter().cloned());
    let headless = models::run(&sc, &sel.run_config()).fingerprint.hex();
    assert_eq!(w.store.status.fingerprint.as_deref(), Some(headless.as_str()));
}

#[test]
fn export_then_open_the_export_replays_the_session() {
    let mut h = harness("quickstart");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    servers_changed_at(&mut h, 60, 34);
    h.get_by_label("Run").click();
    wait(&mut h, "the end", |w| w.store.status.finished);
    let fp = h.state().store.status.fingerprint.clone().unwrap();
    let dir = std::env::temp_dir().join(format!("sg-gui-export-ui-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("session.ron");
    h.get_by_label("Export to:").set_text_value_accesskit(&file.display().to_string());
    h.step();
    h.get_by_label("Export session").click();
    wait(&mut h, "the export", |w| {
        w.store.notices.iter().any(|n| n.starts_with("session exported to"))
    });
    // Headless `stormglass run FILE` reproduces the fingerprint.
    let exp = experiments::load(&file, &experiments::RunDefaults::default()).unwrap();
    assert_eq!(experiments::runner::run_one(&exp, 0, &exp.runs[0]).fingerprint, Some(fp.clone()));
    // Opening the export in the workbench replays it.
    h.get_by_label("File:").set_text_value_accesskit(&file.display().to_string());
    h.step();
    h.get_by_label("Open").click();
    wait(&mut h, "the export opens", |w| w.store.generation >= 2 && w.load_error.is_none());
    h.get_by_label("Run").click();
    wait(&mut h, "the replay's end", |w| w.store.status.finished);
    assert_eq!(h.state().store.status.fingerprint.as_deref(), Some(fp.as_str()));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn compare_this_session_against_the_file_on_the_same_seed() {
    use sim_gui::ui::compare::Choice;
    let mut h = harness("quickstart");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    servers_changed_at(&mut h, 60, 34);
    // A: the file's first combination (the default), B: this session with its knob change.
    h.get_by_label("Compare").click();
    h.step();
    assert_eq!((h.state().compare.a, h.state().compare.b), (Choice::Combo(0), Choice::Session));
    h.get_by_label("Run comparison").click();
    h.step();
    wait(&mut h, "both runs", |w| w.compare.result.lock().unwrap().is_some());
    let (fa, fb) = {
        let res = h.state().compare.result.lock().unwrap();
        let (a, b) = res.as_ref().unwrap().as_ref().unwrap();
        (a.fingerprint.clone(), b.fingerprint.clone())
    };
    let seed = h.state().store.seed;
    assert_eq!(fa, headless_fp(h.state(), 0, seed), "A is the file's run");
    assert_ne!(fa, fb, "the knob change makes another run");
    h.get_by_label_contains("B: this session (1 changes)");
    // B is this session run on to its end: the session, continued, ends on B's fingerprint.
    h.get_by_label("Run").click();
    wait(&mut h, "the end", |w| w.store.status.finished);
    assert_eq!(h.state().store.status.fingerprint.as_deref(), Some(fb.as_str()));
}

#[test]
fn the_in_app_file_browser_opens_a_file() {
    let mut h = harness("quickstart");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    h.state_mut().open.browser.dir = concat!(env!("CARGO_MANIFEST_DIR"), "/..").into();
    h.get_by_label("Browse…").click();
    h.step();
    h.step(); // the top panel grows to the browser's height: its rows settle
    h.get_by_label("[dir] experiments").click();
    h.step();
    h.step();
    // Through AccessKit: the list scrolls, the entry may be out of view.
    h.get_by_label("gate-sizing.ron").click_accesskit();
    wait(&mut h, "the chosen file opens", |w| w.store.generation >= 2);
    assert_eq!(h.state().opened.as_ref().unwrap().exp.name, "gate-sizing");
    assert!(!h.state().open.browser.open, "the browser closes");
    // Up goes to the parent folder.
    h.get_by_label("Browse…").click();
    h.step();
    h.get_by_label("Up").click();
    h.step();
    let dir = h.state().open.browser.dir.canonicalize().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    assert_eq!(dir, root.canonicalize().unwrap());
}

#[test]
fn enum_knobs_are_combo_boxes() {
    let mut h = harness(SHOWCASE);
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    // The events view: no breaker legend ("CLOSED") on screen beside the combo's choices.
    h.get_by_label("Events").click();
    h.step();
    let choose = |h: &mut Harness<'static, Workbench>, param: &str, choice: &str| {
        h.get_by_label("Search").set_text_value_accesskit(param);
        h.step();
        h.step();
        h.get_by_role_and_label(egui::Role::ComboBox, param).click();
        h.step();
        h.step();
        h.get_by_label(choice).click();
        h.step();
        h.step();
    };
    // A run-time enum applies now, recorded with its instant.
    let path = "circuit_breaker.llm-cb.transition_to_state_after_wait_duration";
    assert_eq!(h.state().store.param(path), Some(&ParamValue::Enum("OPEN".into())));
    choose(&mut h, "transition_to_state_after_wait_duration", "CLOSED");
    wait(&mut h, "the change is recorded", |w| !w.store.changes.is_empty());
    let c = &h.state().store.changes[0];
    assert_eq!((c.path.as_str(), &c.value), (path, &ParamValue::Enum("CLOSED".into())));
    // In force at the end of its instant (past the next one).
    h.get_by_label("Next instant").click();
    wait(&mut h, "the value in force", |w| {
        w.store.param(path) == Some(&ParamValue::Enum("CLOSED".into()))
    });
    // A fixed one waits for the reset.
    choose(&mut h, "sliding_window_type", "TIME_BASED");
    let pending = &h.state().knobs.pending;
    assert_eq!(
        pending,
        &[(
            "circuit_breaker.llm-cb.sliding_window_type".to_string(),
            ParamValue::Enum("TIME_BASED".into())
        )]
    );
    h.get_by_label_contains("apply on reset");
}
