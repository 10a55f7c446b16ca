//! The studies' verdicts where a closed form places them (`experiments/studies/`): the
//! file loaded as a user would, a few of its sweep points run on one seed.

use experiments::experiment::{RunDefaults, load};
use experiments::runner::{Status, run_all};
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// `storm-remedies.ron`: capacity 300/s, a backlog after the slowdown. A plain retry or an
/// unbudgeted hedge doubles each request's cost (stuck above 150/s: at 160 none recovers,
/// at 140 all do); a 10 % budget caps the load at 1.1 λ (recovers below 273/s: at 260 yes,
/// at 280 no); gRPC's bucket stops retrying (the no-retry bound 300/s: recovers at 280).
#[test]
fn storm_remedies_move_the_threshold_where_their_load_bound_says() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/storm-remedies.ron");
    let exp = load(&path, &RunDefaults::default()).unwrap_or_else(|e| panic!("{e}"));
    let want: &[(&str, f64, f64)] = &[
        ("retry", 1.4, 1.0),
        ("retry", 1.6, 0.0),
        ("hedge", 1.6, 0.0),
        ("ratio-budget", 2.6, 1.0),
        ("ratio-budget", 2.8, 0.0),
        ("hedge-budget", 2.8, 0.0),
        ("grpc-bucket", 2.8, 1.0),
    ];
    let k = exp.swept.iter().position(|p| p == "source.chat.rate_multiplier").expect("swept");
    let rate = |i: usize| match exp.runs[i].params[k] {
        Some(models::params::ParamValue::Float(x)) => Some(x),
        _ => None,
    };
    let idx: Vec<usize> = (0..exp.runs.len())
        .filter(|&i| exp.runs[i].seed == 0)
        .filter(|&i| want.iter().any(|w| w.0 == exp.runs[i].variant && Some(w.1) == rate(i)))
        .collect();
    assert_eq!(idx.len(), want.len(), "every case is a run of the study");
    let recs = run_all(&exp, &idx, 2, &AtomicBool::new(false), &mut |_| {});
    for (r, &i) in recs.iter().zip(&idx) {
        assert_eq!(r.status, Status::Ok);
        let (v, m) = (&exp.runs[i].variant, rate(i).unwrap());
        let expected = want.iter().find(|w| w.0 == v && w.1 == m).unwrap().2;
        let got = r.summary.get("recovery.recovered");
        assert_eq!(got, Some(expected), "{v} at ×{m}");
    }
}
