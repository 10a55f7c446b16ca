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
            (0, "3abbe644fa73edbc", 53940),
            (1, "2d85cfc17489cdd9", 54167),
            (2, "ce774752a933d898", 54008),
            (3, "ad50c55cb435fa2d", 54116),
            (4, "71061f6f1fce748d", 54147),
        ],
    ),
    (
        // variants baseline, fix × permits 60, 80, 100 × seeds 0..3, in plan order
        "gate-sizing.ron",
        &[
            (0, "1b75ef0f74d9d71f", 51580),
            (1, "ab792fc9574f3947", 51718),
            (2, "81bc987ab63782a3", 51760),
            (0, "4b7463641ded5acb", 57406),
            (1, "8bcbbe2c0a3c9cf7", 57588),
            (2, "863fdb5371b191f9", 57612),
            (0, "1e3f653097929c77", 59837),
            (1, "dbff15c82f279b3f", 60062),
            (2, "11c04aa9b004817d", 60000),
            (0, "d7dc200e3683738c", 59946),
            (1, "1b436a511e39586f", 60159),
            (2, "06e6081be597da87", 60115),
            (0, "5a11325df07186b8", 59937),
            (1, "1aac25858391424b", 60165),
            (2, "80181f7886b4b964", 60117),
            (0, "a09d3a6e157d1349", 59954),
            (1, "04c64661d34371e1", 60166),
            (2, "57ef31c3b9782529", 60120),
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
