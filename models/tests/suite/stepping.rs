//! I7 through the model: a run driven in pieces (`run_until` to a cut, single `step`s,
//! then on to the end — as the GUI and the session do) is the same run as one go.
//! Each case here is an input that once broke it.

use crate::support::*;
use sim_core::{SimDuration, SimTime};

/// Runs `sc` in one go and in pieces (to `cut`, then `steps` single steps, then to the
/// end) and returns both fingerprints.
fn one_go_and_stepped(sc: &models::Scenario, secs: u64, cut: SimTime, steps: u32) -> (u64, u64) {
    let c = models::RunConfig::new(0, SimDuration::from_secs(secs));
    let one = models::run(sc, &c);
    assert!(one.error.is_none() && one.violations.is_empty(), "{:?}", one.violations);
    let end = SimTime::ZERO + c.duration;
    let mut sim = models::run::simulation(sc, &c);
    sim.run_until(cut).unwrap();
    for _ in 0..steps {
        if !sim.step_until(end).unwrap() {
            break;
        }
    }
    sim.run_until(end).unwrap();
    let stepped = models::run::finish(sim, end, None);
    assert!(stepped.violations.is_empty(), "{:?}", stepped.violations);
    // The live session (the GUI's and the notebooks' driver) steps the same way.
    let mut live = models::session::Session::new(sc.clone(), c);
    live.run_until(cut).unwrap();
    for _ in 0..steps {
        live.step().unwrap();
    }
    live.run_to_end().unwrap();
    assert_eq!(live.finish().fingerprint, stepped.fingerprint, "the session");
    (one.fingerprint.value(), stepped.fingerprint.value())
}

/// Found by the fuzzer (`scripts/fuzz`, campaign seed 20261207): a batch flushed by a
/// run-time lowering of `max_batch` while the station's service had been replaced.
#[test]
fn a_batch_flushed_by_a_change_is_the_same_stepped() {
    let sc = load(
        r#"Scenario(name: "h",
        sources: [(name: "s", interarrival: Constant("100ms"), limit: Some(3), target: "b")],
        batchers: [Batcher(name: "bt", window: "1s")],
        call_sites: [(name: "b", governors: [Batcher("bt")], upstream: "st")],
        stations: [(name: "st", servers: 1, service: Constant("10ms"))],
        timeline: [
            (at: "500ms", path: "batcher.bt.max_batch", value: Count(1)),
            (at: "1ms", path: "station.st.service", value: DurationDist(Poisson(rate: "1/1h"))),
        ])"#,
    );
    for cut_ms in [0, 1, 2, 10, 50, 400, 500, 600] {
        for steps in [1, 3, 32] {
            let (one, stepped) = one_go_and_stepped(&sc, 2, SimTime(cut_ms * 1_000_000), steps);
            assert_eq!(one, stepped, "cut {cut_ms} ms, {steps} steps: {stepped:x} vs {one:x}");
        }
    }
}
