//! Golden fingerprints of the bundled scenarios: any change to the engine or the models that
//! changes what a bundled scenario does shows up here. When a change is intended, update the
//! table in the same commit and say why in the commit message.

use experiments::experiment::{RunDefaults, load};
use experiments::runner::{Status, run_all};
use std::path::Path;

/// (seed, fingerprint, events processed)
type Pins = &'static [(u64, &'static str, u64)];

const GOLDEN: &[(&str, Pins)] = &[(
    "quickstart.ron",
    &[
        (0, "4ea19652c3ffe85c", 53940),
        (1, "f58496ba38effc35", 54167),
        (2, "ee444bc2f64b65ed", 54008),
        (3, "781920544328be12", 54116),
        (4, "30f06cd816aba08b", 54147),
    ],
)];

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
