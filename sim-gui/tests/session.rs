//! The workbench's session exactness: an exported session replays headless to the same
//! fingerprint (and opening the export replays it in the workbench), a rewind to t then a
//! run to the end equals an uninterrupted run (finished or not), a change applied live
//! equals the same change on the timeline, observing through the worker thread equals
//! headless, and bad changes are refused with a message, never a panic.

use models::params::ParamValue;
use models::scenario::SetParam;
use sim_core::{SimDuration, SimTime};
use sim_gui::SHOWCASE;
use sim_gui::session::{Run, Selection, load_bundled};
use sim_gui::worker::{Cmd, Speed, Update, Worker};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn open(name: &str) -> Selection {
    Selection::first(Arc::new(load_bundled(name).expect("bundled")))
}

fn secs(s: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_secs(s)
}

/// The quickstart run to 120 s, 40 → 30 servers there, 5,000 more events, back to 44.
fn with_changes(to_end: bool) -> Run {
    let mut r = Run::open(open("quickstart")).unwrap();
    r.run_until(secs(120)).unwrap();
    assert_eq!(r.apply("station.provider.servers", ParamValue::Count(30)).unwrap(), secs(120));
    r.advance(r.session().end(), 5_000).unwrap();
    assert!(r.now() > secs(120), "5,000 events at ~45/s take more than a second");
    r.apply("station.provider.servers", ParamValue::Count(44)).unwrap();
    if to_end {
        r.run_until(r.session().end()).unwrap();
        assert!(r.is_finished());
    }
    r
}

#[test]
fn exported_session_replays_headless_to_the_same_fingerprint() {
    let r = with_changes(true);
    let fp = r.fingerprint().unwrap();
    let dir = std::env::temp_dir().join(format!("sg-gui-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("session.ron");
    let text = r.export(&dir);
    std::fs::write(&file, &text).unwrap();
    // What `stormglass run FILE` does for its one planned run.
    let exp = experiments::load(&file, &experiments::RunDefaults::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(exp.runs.len(), 1);
    let rec = experiments::runner::run_one(&exp, 0, &exp.runs[0]);
    assert_eq!(rec.fingerprint.as_deref(), Some(fp.as_str()), "{text}");
    // Opening the export in the workbench replays it: the same fingerprint again.
    let mut replay = Run::open(Selection::first(Arc::new(exp))).unwrap();
    replay.run_until(replay.session().end()).unwrap();
    assert_eq!(replay.fingerprint().unwrap(), fp);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn rewind_then_run_to_the_end_equals_an_uninterrupted_run() {
    let uninterrupted = with_changes(true);
    let fp = uninterrupted.fingerprint().unwrap();
    let changes = uninterrupted.changes().to_vec();
    let last = SimTime::ZERO + changes[1].at;
    // Rewinds to instants after both changes (they are kept), from a finished run and
    // from one still running.
    for (t, finished) in [(last, true), (secs(400), true), (secs(600), true), (secs(500), false)] {
        let mut r = with_changes(finished);
        if !finished {
            r.run_until(secs(550)).unwrap();
        }
        r.rewind(t).unwrap();
        assert!(!r.is_finished() || t == r.session().end(), "rewind to {t}");
        assert_eq!(r.now(), t);
        assert_eq!(r.changes(), &changes[..]);
        r.run_until(r.session().end()).unwrap();
        assert_eq!(r.fingerprint().unwrap(), fp, "rewind to {t}");
    }
    // A rewind before the second change forgets it; re-applying it at the same instant
    // gives the uninterrupted run back, a different value branches.
    let mut r = with_changes(true);
    assert!(secs(150) < last);
    r.rewind(secs(150)).unwrap();
    assert_eq!(r.changes(), &changes[..1]);
    r.run_until(last).unwrap();
    r.apply("station.provider.servers", ParamValue::Count(44)).unwrap();
    r.run_until(r.session().end()).unwrap();
    assert_eq!(r.fingerprint().unwrap(), fp);
    let mut r = with_changes(true);
    r.rewind(secs(150)).unwrap();
    r.apply("station.provider.servers", ParamValue::Count(50)).unwrap();
    r.run_until(r.session().end()).unwrap();
    assert_ne!(r.fingerprint().unwrap(), fp, "a branch is another run");
}

#[test]
fn a_live_change_equals_the_same_change_on_the_timeline() {
    let mut live = Run::open(open("quickstart")).unwrap();
    live.run_until(secs(90)).unwrap();
    live.apply("station.provider.servers", ParamValue::Count(36)).unwrap();
    live.run_until(live.session().end()).unwrap();

    let sel = open("quickstart");
    let mut sc = sel.scenario().unwrap();
    sc.timeline.push(SetParam::new(
        SimDuration::from_secs(90),
        "station.provider.servers",
        ParamValue::Count(36),
    ));
    let out = models::run(&sc, &sel.run_config());
    assert_eq!(live.fingerprint().unwrap(), out.fingerprint.hex());
}

#[test]
fn bad_changes_are_refused_with_the_path_never_a_panic() {
    let mut r = Run::open(open("quickstart")).unwrap();
    r.run_until(secs(10)).unwrap();
    let unknown = r.apply("station.nope.servers", ParamValue::Count(3)).unwrap_err();
    assert!(unknown.contains("station.nope.servers"), "{unknown}");
    let range = r.apply("station.provider.servers", ParamValue::Count(0)).unwrap_err();
    assert!(range.contains("station.provider.servers") && range.contains("expected"), "{range}");
    let ty = r.apply("station.provider.servers", ParamValue::Float(1.0)).unwrap_err();
    assert!(ty.contains("expected"), "{ty}");
    let text = r.apply_text("station.provider.servers", "many").unwrap_err();
    assert!(text.contains("station.provider.servers"), "{text}");
    assert!(r.changes().is_empty(), "nothing refused was recorded");
    r.run_until(r.session().end()).unwrap();
    let ended = r.apply("station.provider.servers", ParamValue::Count(3)).unwrap_err();
    assert!(ended.contains("the run has ended"), "{ended}");
}

#[test]
fn a_seed_outside_the_file_and_a_non_runtime_override_open() {
    let mut sel = open("quickstart");
    sel.seed = 9_999;
    let spec = sel.scenario().unwrap().registry();
    let fixed = spec.iter().find(|s| !s.runtime).expect("some parameter applies on reset");
    sel.overrides.push((fixed.path.clone(), fixed.value.clone()));
    let mut r = Run::open(sel.clone()).unwrap();
    assert_eq!(r.session().config().seed, 9_999);
    r.run_until(r.session().end()).unwrap();
    let headless = models::run(&sel.scenario().unwrap(), &sel.run_config());
    assert_eq!(r.fingerprint().unwrap(), headless.fingerprint.hex());
}

/// Runs a selection through the worker thread (status, metrics, snapshots, series, events
/// and the summary all read while it runs) and returns the final fingerprint.
fn through_worker(sel: Selection) -> String {
    let w = Worker::spawn(|| {});
    w.send(Cmd::Open(sel));
    w.send(Cmd::SetSpeed(Speed::Max));
    w.send(Cmd::Run);
    let deadline = Instant::now() + Duration::from_secs(300);
    let (mut rows, mut snapshots) = (0usize, 0usize);
    loop {
        match w.rx.recv_timeout(Duration::from_secs(1)) {
            Ok(Update::Rows(r)) => rows += r.len(),
            Ok(Update::Status(s)) if s.finished => {
                assert!(rows > 0, "series rows were streamed");
                assert!(snapshots > 0, "component states were read while running");
                return s.fingerprint.expect("finished runs have a fingerprint");
            }
            Ok(Update::Status(s)) => snapshots += s.observed.snapshot.is_some() as usize,
            Ok(Update::Refused(e)) => panic!("refused: {e}"),
            _ => assert!(Instant::now() < deadline, "the worker run did not finish"),
        }
    }
}

#[test]
fn observing_through_the_worker_equals_headless() {
    for name in ["quickstart", SHOWCASE] {
        let sel = open(name);
        let headless = models::run(&sel.scenario().unwrap(), &sel.run_config());
        assert_eq!(through_worker(sel), headless.fingerprint.hex(), "{name}");
    }
}

#[test]
fn the_summary_is_the_runs_table_row_of_the_headless_run() {
    // The workbench's summary through the worker, at the end of the showcase's first run.
    let sel = open(SHOWCASE);
    let w = Worker::spawn(|| {});
    w.send(Cmd::Open(sel.clone()));
    w.send(Cmd::SetSpeed(Speed::Max));
    w.send(Cmd::Run);
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut row = Vec::new();
    loop {
        match w.rx.recv_timeout(Duration::from_secs(1)) {
            Ok(Update::RunsRow(r)) => row = r,
            Ok(Update::Status(s)) if s.finished => break,
            _ => assert!(Instant::now() < deadline, "the worker run did not finish"),
        }
    }
    // `stormglass run`'s row for the same planned run: same columns, same values.
    let exp = &sel.exp;
    let rec = experiments::runner::run_one(exp, 0, &exp.runs[0]);
    let want = sim_gui::session::runs_row(exp, &rec);
    assert_eq!(row, want);
    for col in ["run_id", "variant", "seed", "fingerprint", "events", "source.chat.goodput"] {
        assert!(row.iter().any(|(n, _)| n == col), "{col} is a column");
    }
}

/// The per-bucket rates the worker derives (`summary.<name>`, deltas of the summary's counts
/// read just before each bucket boundary, the last at the end) add up, per name, to the
/// headless run's summary: no bucket is lost, none counted twice, the final one included.
/// (The derived `observed.*` rows are states, not counts: not summed.)
#[test]
fn the_derived_per_bucket_counts_add_up_to_the_headless_summary() {
    let sel = open(SHOWCASE);
    let headless = models::run(&sel.scenario().unwrap(), &sel.run_config());
    let w = Worker::spawn(|| {});
    w.send(Cmd::Open(sel));
    w.send(Cmd::SetSpeed(Speed::Max));
    w.send(Cmd::Run);
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut sums: std::collections::BTreeMap<String, f64> = Default::default();
    loop {
        match w.rx.recv_timeout(Duration::from_secs(1)) {
            Ok(Update::Derived(rows)) => {
                for r in rows.into_iter().filter(|r| r.metric.starts_with("summary.")) {
                    *sums.entry(r.metric).or_default() += r.value;
                }
            }
            Ok(Update::Status(s)) if s.finished => break,
            _ => assert!(Instant::now() < deadline, "the worker run did not finish"),
        }
    }
    for n in ["class.P0.completed", "class.P0.degraded_timeout", "retry.llm-retry.retries"] {
        assert!(sums.contains_key(&format!("summary.{n}")), "{n} is derived");
    }
    for (metric, total) in &sums {
        let name = metric.strip_prefix("summary.").unwrap();
        let want = headless.summary.values.iter().find(|(n, _)| n == name).map(|(_, v)| match v {
            models::summary::Value::U64(x) => *x as f64,
            models::summary::Value::F64(x) => *x,
        });
        assert_eq!(Some(*total), want, "{name}");
    }
}

/// Single steps never carry the run past its end: a change due before the next event may
/// cancel it (here a run-time `max_batch` flushes the open batch and cancels its window's
/// timer) and the step must not then process the batch's answer, due an hour later (the
/// fuzzer's I7 find, `experiments/tests/fuzz_regressions/`).
#[test]
fn stepping_stops_at_the_end_when_a_change_cancels_the_next_event() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../experiments/tests/fuzz_regressions/batch_flushed_by_change_stepped.ron");
    let defaults =
        experiments::RunDefaults { duration: SimDuration::from_secs(2), ..Default::default() };
    let exp = Arc::new(experiments::load(&file, &defaults).expect("loads"));
    let mut one = Run::open(Selection::first(exp.clone())).unwrap();
    one.run_until(one.session().end()).unwrap();
    let mut r = Run::open(Selection::first(exp)).unwrap();
    r.run_until(SimTime::ZERO).unwrap();
    for _ in 0..5 {
        if r.is_finished() {
            break;
        }
        r.step().unwrap();
        assert!(r.now() <= SimTime::ZERO + SimDuration::from_secs(2), "stepped to {}", r.now());
    }
    r.run_until(r.session().end()).unwrap();
    assert_eq!(r.fingerprint(), one.fingerprint());
}
