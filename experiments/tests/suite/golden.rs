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
            (0, "3fbb86a6a35e40cd", 53940),
            (1, "1952e38f7ba7d265", 54167),
            (2, "e35f1dfcd1fb8294", 54008),
            (3, "c1212ac6141c0c21", 54116),
            (4, "aa93dcc141c48d15", 54147),
        ],
    ),
    (
        // variants baseline, fix × permits 60, 80, 100 × seeds 0..3, in plan order
        "gate-sizing.ron",
        &[
            (0, "c79a7e72ee9bd022", 51580),
            (1, "3401e009f226604c", 51718),
            (2, "46dc798639163846", 51760),
            (0, "6e5f39c00e6d9317", 57406),
            (1, "ca53bdb232516538", 57588),
            (2, "42112649de0c4c68", 57612),
            (0, "9a76b64329c382d5", 59837),
            (1, "3b036863b6cc77c6", 60062),
            (2, "95f66da3e70a4272", 60000),
            (0, "f113358ee57eeee1", 59946),
            (1, "6a65910c1ef0c370", 60159),
            (2, "61e640c2ab4025e8", 60115),
            (0, "ad7e1483be3297c8", 59937),
            (1, "044b2a15be4202ee", 60165),
            (2, "327500e855d30bf2", 60117),
            (0, "6a23e49ca8d3ee59", 59954),
            (1, "e8f92422d28eaf0f", 60166),
            (2, "0dc1eb0c2733bad9", 60120),
        ],
    ),
    (
        // max_batch 1, 2, 4, 8, 16 × seeds 0, 1
        "gpu-batching.ron",
        &[
            (0, "8ea8d56848e40f05", 116412),
            (1, "2174804816c32cae", 116560),
            (0, "f40b281e4456f50b", 88344),
            (1, "5fc80946b4616af6", 88413),
            (0, "7c27ccdcff33748d", 74362),
            (1, "58136693ad17f95f", 74389),
            (0, "4560a9a1d2bd45d9", 68449),
            (1, "4041a2acc31048b0", 68523),
            (0, "d39a4a73d7e2532b", 70456),
            (1, "edfb2e0515b1fdb3", 70450),
        ],
    ),
    (
        // variants no-gate, gate-80 × seeds 0..3
        "fanout-surge.ron",
        &[
            (0, "46f97e99529b60d1", 16412),
            (1, "bed2aa25c53d9639", 16423),
            (2, "dd5c309fe305f8ef", 15856),
            (0, "09ee35afcb58b668", 14947),
            (1, "6fc4070fad7f968f", 14980),
            (2, "5f759b44f06d5b17", 14437),
        ],
    ),
    (
        // variants baseline, validate, keep-alive
        "stale-connection.ron",
        &[(0, "434e964a5f380ba0", 130), (0, "3b2427cda30ff244", 156), (0, "a83cd268d5252801", 207)],
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
