//! The incident library as a whole (`experiments/incidents/`): one experiment per docs/domain.md §6
//! incident (and the incidents issue 17 added after them), each valid, with a description,
//! the `failure` and `fix` variants, at least 5 seeds, and named after its file.

use crate::incident_support;
use incident_support::*;

/// The 18 incidents of docs/domain.md §6, in order (file stem after the number), then those added
/// beyond it (19, 20: issue 17; 21: issue 14; 22–26: issue 29).
const INCIDENTS: [&str; 26] = [
    "01-batch-flood",
    "02-starvation",
    "03-outage-without-breaker",
    "04-global-breaker",
    "05-promotion-surge",
    "06-per-instance-limit",
    "07-queueing-too-long",
    "08-threads-semaphore-fight",
    "09-global-timeout",
    "10-stale-connection",
    "11-retry-storm",
    "12-more-threads",
    "13-flapping-breaker",
    "14-degradation-storm",
    "15-hot-key-stampede",
    "16-batching",
    "17-pod-capacity",
    "18-half-open-priority",
    "19-adaptive-limit-surge",
    "20-retry-storm-threshold",
    "21-retry-storm-network-delay",
    "22-retry-storm-ratio-budget",
    "23-hedging-brownout",
    "24-autoscaler-late-for-a-surge",
    "25-surge-fifo-queue",
    "26-batch-flood-partitions",
];

#[test]
fn every_incident_is_a_valid_experiment_with_failure_and_fix() {
    let mut on_disk: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ron"))
        .collect();
    on_disk.sort();
    let want: Vec<String> = INCIDENTS.iter().map(|s| format!("{s}.ron")).collect();
    assert_eq!(on_disk, want, "one file per incident, nothing else");
    for stem in INCIDENTS {
        let e = load_incident(&format!("{stem}.ron"));
        assert_eq!(e.name, format!("incident-{stem}"), "the results folder names the file");
        assert!(!e.description.is_empty(), "{stem}: a description");
        assert!(e.seeds.len() >= 5, "{stem}: {} seeds", e.seeds.len());
        let names: Vec<&str> = e.variants.iter().map(|v| v.name.as_str()).collect();
        assert!(names.contains(&"failure") && names.contains(&"fix"), "{stem}: {names:?}");
    }
}
