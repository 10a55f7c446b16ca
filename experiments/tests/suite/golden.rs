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
            (0, "ad352b1794b55e89", 53940),
            (1, "02b8d4ecbb8332a1", 54167),
            (2, "baac56e5c3a11e95", 54008),
            (3, "e420a1311b10c31a", 54116),
            (4, "d2c7959fe5f14630", 54147),
        ],
    ),
    (
        // variants baseline, fix × permits 60, 80, 100 × seeds 0..3, in plan order
        "gate-sizing.ron",
        &[
            (0, "68584db167ab4436", 51580),
            (1, "13f9a6584ed4c804", 51718),
            (2, "d194a45f47e6b6cb", 51760),
            (0, "294cd99567d0ab3b", 57406),
            (1, "8a60eaffbda5ad99", 57588),
            (2, "3ebeaf36a27b3fac", 57612),
            (0, "0682aad82d01e1a0", 59837),
            (1, "c96da85d8b584d6e", 60062),
            (2, "8f9b110b98bb58b0", 60000),
            (0, "b69b8255a1f85427", 59946),
            (1, "03a8eb293ce39757", 60159),
            (2, "2afda20c46c5a365", 60115),
            (0, "ed208fdf0163172c", 59937),
            (1, "931d0a07c74082d5", 60165),
            (2, "83a03ccb54227a6c", 60117),
            (0, "43035515663d9e65", 59954),
            (1, "c6392bf79d61f621", 60166),
            (2, "e2e9d115a79628c5", 60120),
        ],
    ),
    (
        // max_batch 1, 2, 4, 8, 16 × seeds 0, 1
        "gpu-batching.ron",
        &[
            (0, "7f506025675bb0e0", 116412),
            (1, "19e3e16779c78219", 116560),
            (0, "bae60606c4c602a5", 88344),
            (1, "4d72434ba5084d62", 88413),
            (0, "067f93e32bbee73e", 74362),
            (1, "1bbb633974c6a649", 74389),
            (0, "053029c4f1e6e708", 68449),
            (1, "9c1d0a51499e4333", 68523),
            (0, "73304503873de202", 70456),
            (1, "3c8d390bba41e95b", 70450),
        ],
    ),
    (
        // variants no-gate, gate-80 × seeds 0..3
        "fanout-surge.ron",
        &[
            (0, "12d160f46dab5c29", 16412),
            (1, "75cc6a24cf69d11d", 16423),
            (2, "9ef406c50d0ce239", 15856),
            (0, "13f60a78bfd1c027", 14947),
            (1, "0bc7aac9980093f7", 14980),
            (2, "c4e6f86d5d0cdb71", 14437),
        ],
    ),
    (
        // the GUI showcase (`stormglass-gui` opens it): variants baseline, gate-32, seed 0
        "workbench.ron",
        &[(0, "82fbbe7827447750", 60608), (0, "af747541b3bb1f26", 58438)],
    ),
    (
        // variants baseline, validate, keep-alive
        "stale-connection.ron",
        &[(0, "50e28354d1e0c103", 130), (0, "25599aeb2c35f9c7", 156), (0, "a24171a5d566b10b", 207)],
    ),
];

#[test]
fn bundled_scenarios_keep_their_fingerprints() {
    // Every file is run and every difference reported at once (a deliberate change moves
    // several tables; the message gives them all).
    let mut moved = Vec::new();
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
        if &got != want {
            moved.push(format!("{file}: {got:?}"));
        }
    }
    assert!(moved.is_empty(), "moved:\n{}", moved.join("\n"));
}
