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
            (0, "74cc8e1d156fe1f6", 53940),
            (1, "5abd57992069bad0", 54167),
            (2, "37ef60865f2c572a", 54008),
            (3, "677c033a87e9ac19", 54116),
            (4, "945e4bbf63333ede", 54147),
        ],
    ),
    (
        // variants baseline, fix × permits 60, 80, 100 × seeds 0..3, in plan order
        "gate-sizing.ron",
        &[
            (0, "213b41fb21093405", 51580),
            (1, "ff1047e0a81ce516", 51718),
            (2, "596b5d85680ca56e", 51760),
            (0, "49e503e1d91f5b57", 57406),
            (1, "9bf8216e00f8aac1", 57588),
            (2, "aa8d4015e24656a2", 57612),
            (0, "64be09e09cba317e", 59837),
            (1, "68afbd0bf297439a", 60062),
            (2, "2789a1b830fd29be", 60000),
            (0, "5ace5e0983bc3aba", 59946),
            (1, "d7f97d8c599789be", 60159),
            (2, "7466fb12f10f56a3", 60115),
            (0, "e9a69a25487d14a5", 59937),
            (1, "1749e901b1706690", 60165),
            (2, "4e0c1227a00cca2c", 60117),
            (0, "146e9e36d92830e1", 59954),
            (1, "aa1af7041bac9921", 60166),
            (2, "e1756f72b3e569c0", 60120),
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
