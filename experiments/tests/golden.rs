//! Golden fingerprints of the bundled scenarios: any change to the engine or the models that
//! changes what a bundled scenario does shows up here. When a change is intended, update the
//! table in the same commit and say why in the commit message.

use experiments::experiment::{RunDefaults, load};
use experiments::runner::{Status, run_all};
use std::path::Path;

/// (seed, fingerprint, events processed)
type Pins = &'static [(u64, &'static str, u64)];

const GOLDEN: &[(&str, Pins)] = &[
    (
        "quickstart.ron",
        &[
            (0, "5ac92b99dcf4fb75", 53940),
            (1, "d4f65d12e9db8765", 54167),
            (2, "1b22ac9b160965e8", 54008),
            (3, "e6a5eda0e4a9662c", 54116),
            (4, "641c8e950ae112b6", 54147),
        ],
    ),
    (
        // variants baseline, fix × permits 60, 80, 100 × seeds 0..3, in plan order
        "gate-sizing.ron",
        &[
            (0, "2a3feba7a6741515", 51580),
            (1, "1218b74bf0756f01", 51718),
            (2, "976e2547ca3a41ad", 51760),
            (0, "f18577dded8fc28f", 57406),
            (1, "02e82b3af09afed4", 57588),
            (2, "6a440c237c3530df", 57612),
            (0, "a40b49363d3f26fa", 59837),
            (1, "4cb19d1d45b7b329", 60062),
            (2, "10cd35710c34cabc", 60000),
            (0, "b511d0aa09a4194a", 59946),
            (1, "46ae850ce1f92e62", 60159),
            (2, "8d01ab179ca113f7", 60115),
            (0, "aff9fc02fd60fddb", 59937),
            (1, "401cf603c9f40ecd", 60165),
            (2, "565bb10ff3d34667", 60117),
            (0, "5e6ac95a47ceaebd", 59954),
            (1, "7a938f327f5defff", 60166),
            (2, "68936f877bbe0867", 60120),
        ],
    ),
];

#[test]
fn bundled_scenarios_keep_their_fingerprints() {
    for (file, want) in GOLDEN {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        let exp = load(&path, &RunDefaults::default()).unwrap();
        let all: Vec<usize> = (0..exp.runs.len()).collect();
        let recs = run_all(&exp, &all, 2, &std::sync::atomic::AtomicBool::new(false), &mut |_| {});
        let got: Vec<(u64, &str, u64)> = recs
            .iter()
            .map(|r| {
                assert_eq!(r.status, Status::Ok);
                (r.seed, r.fingerprint.as_deref().unwrap(), r.events)
            })
            .collect();
        assert_eq!(&got, want, "{file}");
    }
}
