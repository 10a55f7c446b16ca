//! The session's exactness: an exported session replays headless to the same fingerprint,
//! a rewind then a run to the end equals an uninterrupted run, a change applied live equals
//! the same change on the timeline, observing through the worker equals headless, and bad
//! changes are refused with a message, never a panic.

use experiments::{RunDefaults, load};
use models::params::ParamValue;
use models::scenario::SetParam;
use sim_core::{SimDuration, SimTime};
use sim_gui::catalog;
use sim_gui::session::{Selection, Session};
use sim_gui::worker::{Cmd, Speed, Update, Worker};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn open(name: &str) -> Selection {
    let path = catalog::find(name).expect("bundled");
    Selection::first(Arc::new(load(&path, &RunDefaults::default()).expect("loads")))
}

fn secs(s: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_secs(s)
}

/// A session with two live changes (40 → 30 servers at 120 s, back to 44 at 300 s).
fn quickstart_with_changes() -> Session {
    let mut s = Session::open(open("quickstart")).unwrap();
    s.run_until(secs(120)).unwrap();
    assert_eq!(s.apply("station.provider.servers", ParamValue::Count(30)).unwrap(), secs(120));
    s.run_for(5_000).unwrap();
    let at = s.now();
    assert!(at > secs(120), "5,000 events at 45/s take more than a second");
    s.apply("station.provider.servers", ParamValue::Count(44)).unwrap();
    s.run_until(s.end()).unwrap();
    assert!(s.is_finished());
    s
}

#[test]
fn exported_session_replays_headless_to_the_same_fingerprint() {
    let s = quickstart_with_changes();
    let fp = s.fingerprint().unwrap();
    let text = sim_gui::export::session_text(&s, "quickstart-session").unwrap();
    let dir = std::env::temp_dir().join(format!("sg-gui-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("session.ron");
    std::fs::write(&file, &text).unwrap();
    // What `stormglass run FILE` does for each planned run.
    let exp = load(&file, &RunDefaults::default()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(exp.runs.len(), 1);
    let rec = experiments::runner::run_one(&exp, 0, &exp.runs[0]);
    assert_eq!(rec.fingerprint.as_deref(), Some(fp.as_str()), "{text}");
    // Opening the export in the workbench replays it: the same fingerprint again.
    let mut replay = Session::open(Selection::first(Arc::new(exp))).unwrap();
    replay.run_until(replay.end()).unwrap();
    assert_eq!(replay.fingerprint().unwrap(), fp);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn rewind_then_run_to_the_end_equals_an_uninterrupted_run() {
    let uninterrupted = quickstart_with_changes();
    let fp = uninterrupted.fingerprint().unwrap();
    let changes = uninterrupted.changes().to_vec();
    // Same changes, then rewinds: to before the first change (both replay), to between
    // them, and to the very end.
    for t in [secs(30), secs(200), secs(600)] {
        let mut s = quickstart_with_changes();
        s.rewind(t).unwrap();
        assert_eq!(s.now(), t.min(s.end()));
        assert_eq!(s.changes(), &changes[..]);
        s.run_until(s.end()).unwrap();
        assert_eq!(s.fingerprint().unwrap(), fp, "rewind to {t}");
    }
    // A rewind then a new change branches: the later recorded change is dropped.
    let mut s = quickstart_with_changes();
    s.rewind(secs(200)).unwrap();
    s.apply("station.provider.servers", ParamValue::Count(50)).unwrap();
    assert_eq!(s.changes().len(), 2);
    assert_eq!(s.changes()[1].value, ParamValue::Count(50));
}

#[test]
fn a_live_change_equals_the_same_change_on_the_timeline() {
    let mut live = Session::open(open("quickstart")).unwrap();
    live.run_until(secs(90)).unwrap();
    live.apply("station.provider.servers", ParamValue::Count(36)).unwrap();
    live.run_until(live.end()).unwrap();

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
    let mut s = Session::open(open("quickstart")).unwrap();
    s.run_until(secs(10)).unwrap();
    let unknown = s.apply("station.nope.servers", ParamValue::Count(3)).unwrap_err();
    assert!(unknown.contains("unknown parameter path `station.nope.servers`"), "{unknown}");
    let range = s.apply("station.provider.servers", ParamValue::Count(0)).unwrap_err();
    assert!(range.contains("station.provider.servers") && range.contains("expected"), "{range}");
    let ty = s.apply("station.provider.servers", ParamValue::Float(1.0)).unwrap_err();
    assert!(ty.contains("expected"), "{ty}");
    let fixed = s.apply("station.provider.queue_capacity", ParamValue::OptCount(Some(10)));
    if let Err(e) = fixed {
        assert!(e.contains("cannot change during a run"), "{e}");
    }
    assert!(s.changes().iter().all(|c| c.value == ParamValue::OptCount(Some(10))));
}

/// Runs a selection through the worker thread (status, gauges, series, events and the
/// summary all read while it runs) and returns the final fingerprint.
fn through_worker(sel: Selection) -> String {
    let w = Worker::spawn(|| {});
    w.send(Cmd::Open(sel));
    w.send(Cmd::SetSpeed(Speed::Max));
    w.send(Cmd::Run);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut rows = 0usize;
    loop {
        match w.rx.recv_timeout(Duration::from_secs(1)) {
            Ok(Update::Rows(r)) => rows += r.len(),
            Ok(Update::Status(s)) if s.finished => {
                assert!(rows > 0, "series rows were streamed");
                return s.fingerprint.expect("finished runs have a fingerprint");
            }
            Ok(Update::Refused(e)) => panic!("refused: {e}"),
            _ => assert!(Instant::now() < deadline, "the worker run did not finish"),
        }
    }
}

#[test]
fn observing_through_the_worker_equals_headless() {
    for name in ["quickstart", catalog::SHOWCASE] {
        let sel = open(name);
        let headless = models::run(&sel.scenario().unwrap(), &sel.run_config());
        assert_eq!(through_worker(sel), headless.fingerprint.hex(), "{name}");
    }
}
