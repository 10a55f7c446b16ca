//! The workbench through AccessKit, continued: values typed into knobs are one change, a
//! rewind rebuilds every plot exactly, plots follow what the scenario has, a quota is drawn
//! and shown as its own node, the time cursor and the bundled list.

use super::*;

/// Types `text` into the knob `leaf` of the component found by `search`, as a user does:
/// its text field focused, one key a frame, then Enter.
fn type_into_knob(h: &mut Harness<'static, Workbench>, search: &str, leaf: &str, text: &str) {
    h.get_by_label("Search").set_text_value_accesskit(search);
    h.step();
    h.step();
    h.get_by_label(leaf).focus();
    h.step();
    h.step();
    for c in text.chars() {
        h.get_by_label(leaf).type_text(&c.to_string());
        h.step();
    }
    h.key_press(egui::Key::Enter);
    h.step();
}

const PERMITS: &str = "gate.llm-permits.permits";

/// Exports the session through the controls; the changes of `path` on the exported
/// experiment's timeline, as (instant, value).
fn exported_changes(h: &mut Harness<'static, Workbench>, path: &str) -> Vec<(SimTime, ParamValue)> {
    let dir = std::env::temp_dir().join(format!(
        "sg-gui-knob-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("session.ron");
    let before = h.state().store.notices.len();
    h.get_by_label("Export to:").set_text_value_accesskit(&file.display().to_string());
    h.step();
    h.get_by_label("Export session").click();
    wait(h, "the export", |w| {
        w.store.notices[before..].iter().any(|n| n.starts_with("session exported to"))
    });
    let exp = experiments::load(&file, &experiments::RunDefaults::default()).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let timeline = &exp.runs[0].scenario.timeline;
    timeline
        .iter()
        .filter(|c| c.path == path)
        .map(|c| (SimTime::ZERO + c.at, c.value.clone()))
        .collect()
}

/// A few more frames: anything else the edit sent has arrived by then.
fn settle_frames(h: &mut Harness<'static, Workbench>) {
    for _ in 0..20 {
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_value_typed_into_a_knob_while_paused_is_one_change() {
    let mut h = harness(SHOWCASE);
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    let t30 = stopped_at(&mut h, 30);
    type_into_knob(&mut h, PERMITS, "permits", "16");
    wait(&mut h, "the change", |w| !w.store.changes.is_empty());
    settle_frames(&mut h);
    let recorded: Vec<(String, ParamValue, SimTime)> = (h.state().store.changes.iter())
        .map(|c| (c.path.clone(), c.value.clone(), SimTime::ZERO + c.at))
        .collect();
    assert_eq!(recorded, vec![(PERMITS.to_string(), ParamValue::Count(16), t30)]);
    // The knob shows what was typed (recorded at this instant, in force at its end), not
    // the value still in force.
    let shown = h.get_by_label("permits").value().unwrap_or_default();
    assert!(shown.starts_with("16"), "the knob shows {shown:?}");
    assert_eq!(exported_changes(&mut h, PERMITS), vec![(t30, ParamValue::Count(16))]);
}

#[test]
fn a_value_typed_into_a_knob_while_running_is_one_change() {
    let mut h = harness(SHOWCASE);
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    choose_speed(&mut h, sim_gui::worker::Speed::Times(1.0));
    h.get_by_label("Run").click();
    wait(&mut h, "the clock moves", |w| w.store.status.now.0 > 1_000_000_000);
    type_into_knob(&mut h, PERMITS, "permits", "16");
    wait(&mut h, "the change", |w| !w.store.changes.is_empty());
    settle_frames(&mut h);
    assert!(h.state().store.status.running, "still running (×1 cannot reach the end)");
    h.get_by_label("Pause").click();
    wait(&mut h, "the pause", |w| !w.store.status.running);
    let changes = h.state().store.changes.clone();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!((changes[0].path.as_str(), &changes[0].value), (PERMITS, &ParamValue::Count(16)));
    let at = SimTime::ZERO + changes[0].at;
    assert_eq!(exported_changes(&mut h, PERMITS), vec![(at, ParamValue::Count(16))]);
}

/// One line of one plot: (plot, line name, points as bits).
type PlotLine = (String, String, Vec<(u64, u64)>);

/// Every line of every plot, by plot.
fn plot_lines(w: &Workbench) -> Vec<PlotLine> {
    use sim_gui::ui::plots::{PlotKind, lines};
    let mut out = Vec::new();
    for k in PlotKind::ALL {
        for (name, pts) in lines(&w.store, w.opened.as_ref(), k, true) {
            let bits = pts.iter().map(|p| (p.x.to_bits(), p.y.to_bits())).collect();
            out.push((format!("{k:?}"), name, bits));
        }
    }
    out
}

/// Every series in the store with its points as bits, cut to buckets starting before `to`.
fn store_series(w: &Workbench, to: f64) -> Vec<(String, Vec<(u64, u64)>)> {
    (w.store.series.iter())
        .map(|(m, pts)| {
            let bits = pts.iter().filter(|p| p.x < to);
            (m.clone(), bits.map(|p| (p.x.to_bits(), p.y.to_bits())).collect())
        })
        .collect()
}

/// The showcase with the LLM permits typed to 16 at 30 s, then run to `until`.
fn showcase_changed_at_30s(until: &str) -> Harness<'static, Workbench> {
    let mut h = harness(SHOWCASE);
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    stopped_at(&mut h, 30);
    type_into_knob(&mut h, PERMITS, "permits", "16");
    wait(&mut h, "the change", |w| w.store.changes.len() == 1);
    run_until_through_the_controls(&mut h, until);
    h
}

#[test]
fn a_rewind_rebuilds_every_plot_exactly_as_the_uninterrupted_run_has_it() {
    // The run never rewound: the change at 30 s, then on to the end.
    let mut r = showcase_changed_at_30s("3m");
    wait(&mut r, "the end", |w| w.store.status.finished);
    let (reference, reference_lines) = (store_series(r.state(), f64::MAX), plot_lines(r.state()));
    let reference_events = format!("{:?}", r.state().store.events);
    drop(r);
    // The same to 150 s, then the time cursor set back to 90 s (through AccessKit).
    let mut h = showcase_changed_at_30s("150s");
    let t150 = SimTime::ZERO + sim_core::SimDuration::from_secs(150);
    wait(&mut h, "150 s", |w| w.store.status.now == t150 && !w.store.status.running);
    let generation = h.state().store.generation;
    h.get_by_role_and_label(egui::Role::Slider, "rewind").set_value_accesskit(90.0);
    // The worker sends a rebuilt session's series before its status.
    wait(&mut h, "the rewind", |w| {
        w.store.generation > generation && w.store.status.now.0 == 90_000_000_000
    });
    // Every series holds what the uninterrupted run had in the buckets closed by 90 s
    // (bucket starts 0 … 89 s), no more, no less.
    let cut: Vec<_> = (reference.iter())
        .map(|(m, pts)| {
            (m.clone(), pts.iter().copied().filter(|p| f64::from_bits(p.0) < 90.0).collect())
        })
        .collect::<Vec<(String, Vec<(u64, u64)>)>>();
    assert_eq!(store_series(h.state(), f64::MAX).len(), cut.len(), "the same series");
    for ((m, a), (n, b)) in store_series(h.state(), f64::MAX).iter().zip(&cut) {
        assert_eq!(m, n);
        assert!(a == b, "{m} after the rewind differs from the uninterrupted run's first 90 s");
    }
    // Run on to the end: every plot's every line equals the uninterrupted run's.
    run_until_through_the_controls(&mut h, "3m");
    wait(&mut h, "the end", |w| w.store.status.finished);
    let lines = plot_lines(h.state());
    assert_eq!(lines.len(), reference_lines.len(), "the same lines");
    for (a, b) in lines.iter().zip(&reference_lines) {
        assert_eq!((&a.0, &a.1), (&b.0, &b.1));
        assert!(a.2 == b.2, "plot {} line {} differs from the uninterrupted run's", a.0, a.1);
    }
    assert_eq!(store_series(h.state(), f64::MAX), reference, "every series in the store");
    // The model events too (the breaker strip, the events marked on the time axis).
    assert_eq!(format!("{:?}", h.state().store.events), reference_events);
}

#[test]
fn plots_are_offered_for_what_the_scenario_has_and_a_quota_is_drawn_and_a_node() {
    use sim_gui::ui::plots::{PlotKind, lines};
    let mut h = harness("fanout-surge");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    stopped_at(&mut h, 20);
    // No breaker and no GPU server: no such plots offered.
    for absent in ["breakers", "GPU"] {
        assert_eq!(h.query_all_by_label(absent).count(), 0, "{absent} offered");
    }
    h.get_by_label("in flight");
    // The quota's concurrency (100) is drawn over time; the station's 1000 servers and the
    // gate's 10,000 permits (ten and a hundred times it) are listed as off scale.
    let w = h.state();
    let inflight = lines(&w.store, w.opened.as_ref(), PlotKind::InFlight, false);
    let quota = inflight.iter().find(|l| l.0 == "limit quota.provider").expect("the quota's limit");
    assert!(quota.1.len() >= 19 && quota.1.iter().all(|p| p.y == 100.0), "{:?}", quota.1);
    assert!(inflight.iter().any(|l| l.0 == "quota.provider in use"));
    for off in ["limit station.provider 1000 (off scale)", "limit gate.llm 10000 (off scale)"] {
        assert!(
            inflight.iter().any(|l| l.0 == off),
            "{off}: {:?}",
            inflight.iter().map(|l| &l.0).collect::<Vec<_>>()
        );
        h.get_by_label(off);
    }
    // The request path: the quota is its own node, with its use against its limit.
    h.get_by_label("Request path").click();
    h.step();
    h.get_by_label("quota.provider (request path)").click();
    h.step();
    h.step();
    assert_eq!(h.state().diagram.selected.as_deref(), Some("quota.provider"));
    h.get_by_label("in flight / limit");
}

/// A provider quota with all three limits (the file's comment says which).
const RPM_TPM_QUOTA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rpm-tpm-quota.ron");

#[test]
fn a_quota_s_requests_and_tokens_left_are_plotted_and_shown_on_its_node() {
    use sim_gui::ui::plots::{PlotKind, lines};
    let mut h = harness("quickstart");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    drop_file(&mut h, RPM_TPM_QUOTA, None);
    wait(&mut h, "the dropped scenario opens", |w| w.store.generation >= 2);
    stopped_at(&mut h, 30);
    h.get_by_label("budgets");
    let w = h.state();
    let budgets = lines(&w.store, w.opened.as_ref(), PlotKind::Budgets, false);
    // Drawn in percent of the most each held; the values are the store's.
    for what in ["requests", "tokens"] {
        let name = format!("quota.provider.{what} left (100% = ");
        assert!(budgets.iter().any(|l| l.0.starts_with(&name)), "{name}…");
    }
    let requests = w.store.points("observed.quota.provider.requests_left");
    let tokens = w.store.points("observed.quota.provider.tokens_left");
    // Left in the bucket at each bucket's end, never above a minute's worth. Requests:
    // 40/s taken, 30/s refilled, so ~10/s drained: after 30 s about 1,800 - 300 = 1,500
    // (Poisson: 1,200 ± 35 arrivals, so within 1,300..1,700 by far). Tokens: ~1,000 a
    // request (prompt + output) reserved at 40/s against 33,333/s refilled: ~200,000 gone
    // after 30 s, at least 100,000.
    assert_eq!(requests.len(), 30);
    assert!(requests.iter().all(|p| p.y <= 1800.0));
    let last = requests.last().unwrap().y;
    assert!((1300.0..=1700.0).contains(&last), "{last}");
    assert!(tokens.iter().all(|p| p.y <= 2_000_000.0));
    assert!(tokens.last().unwrap().y < 1_900_000.0, "{:?}", tokens.last());
    // The quota's node shows both beside its use against its concurrency.
    h.get_by_label("Request path").click();
    h.step();
    h.get_by_label("quota.provider (request path)").click();
    h.step();
    h.step();
    h.get_by_label("requests_left");
    h.get_by_label("tokens left");
}

#[test]
fn an_instant_typed_into_the_time_cursor_rewinds_once() {
    let mut h = harness(SHOWCASE);
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    stopped_at(&mut h, 150);
    let generation = h.state().store.generation;
    // The cursor's number field, one key a frame, then Enter: one rewind, to 90 s (per
    // keystroke it went to 9 s, and 90 s was then ahead of the clock).
    h.get_by_value("150.0 s").focus();
    h.step();
    h.step();
    for c in ["9", "0"] {
        h.event(egui::Event::Text(c.into()));
        h.step();
    }
    h.key_press(egui::Key::Enter);
    wait(&mut h, "the rewind", |w| w.store.generation > generation);
    settle_frames(&mut h);
    assert_eq!(h.state().store.generation, generation + 1, "one rewind");
    assert_eq!(h.state().store.status.now, SimTime::ZERO + sim_core::SimDuration::from_secs(90));
}

/// The bundled list is as tall as the window allows: a row 60 % down the list (about 500
/// points below the bar in a 900-point window) takes a real pointer click (not an
/// AccessKit action, which reaches rows scrolled out of view) and opens. In egui's default
/// 200-point list about eight rows show and that click lands outside the list. Every row
/// is drawn on the way (kittest panics on a glyph the fonts lack: an arrow in a
/// description was one).
#[test]
fn the_bundled_list_fills_the_window() {
    let mut h = harness("quickstart");
    wait(&mut h, "the session opens", |w| w.store.generation >= 1);
    let n = h.state().catalog.len();
    assert!(n > 30, "a list longer than the default height");
    let row = h.state().catalog[n * 6 / 10].clone();
    let current = h.state().opened.as_ref().unwrap().exp.name.clone();
    h.get_by_value(&current).click();
    for _ in 0..6 {
        h.step();
    }
    if let Ok(img) = h.render() {
        let _ = img.save(std::env::temp_dir().join("stormglass-bundled-list.png"));
    }
    h.get_by_label(row.name).click();
    wait(&mut h, "the chosen experiment opens", |w| w.store.generation >= 2);
    let opened = &h.state().opened.as_ref().unwrap().exp;
    assert!(opened.file.ends_with(row.file), "{} opened for {}", opened.file.display(), row.file);
}
