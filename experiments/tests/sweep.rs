//! Sweep planning as data: an experiment text in, the planned runs' parameters out.

use experiments::experiment::{RunDefaults, load_text};
use std::path::Path;

const BASE: &str = r#"Experiment(
    name: "plan",
    scenario: Inline(Scenario(
        name: "s",
        sources: [(name: "chat", interarrival: Exponential(mean: "10ms"), target: "call")],
        gates: [(name: "g", permits: 4, acquire_timeout: "100ms")],
        call_sites: [(name: "call", governors: [Gate("g")], upstream: "llm")],
        stations: [(name: "llm", servers: 8, service: Exponential(mean: "50ms"))],
    )),
    duration: "1m",
    seeds: List([7, 9]),
    EXTRA
)"#;

/// Each planned run as `variant point seed path=value…`.
fn plan(extra: &str) -> Vec<String> {
    let e =
        load_text(Path::new("plan.ron"), &BASE.replace("EXTRA", extra), &RunDefaults::default())
            .unwrap();
    e.runs
        .iter()
        .map(|r| {
            let ps: Vec<String> = e
                .swept
                .iter()
                .zip(&r.params)
                .map(|(p, v)| format!("{p}={}", v.as_ref().unwrap()))
                .collect();
            format!("{} {} {} {}", r.variant, r.point, r.seed, ps.join(" ")).trim_end().to_string()
        })
        .collect()
}

#[test]
fn no_sweep_is_one_point_per_seed() {
    assert_eq!(plan(""), ["default 0 7", "default 0 9"]);
}

#[test]
fn grid_times_zip_with_constraint_within_variants() {
    let got = plan(
        r#"variants: [(name: "a"), (name: "b", set: [(path: "gate.g.acquire_timeout", value: "1s")])],
        sweep: [
            Grid(path: "gate.g.permits", values: [4, 16]),
            Zip([(path: "station.llm.servers", values: [8, 12]), (path: "station.llm.service", values: [Exponential(mean: "50ms"), Constant("40ms")])]),
        ],
        constraints: [(left: "gate.g.permits", op: Le, right: "station.llm.servers")],"#,
    );
    let want = [
        r#"a 0 7 gate.g.acquire_timeout="100ms" gate.g.permits=4 station.llm.servers=8 station.llm.service=Exponential(mean: "50ms")"#,
        r#"a 0 9 gate.g.acquire_timeout="100ms" gate.g.permits=4 station.llm.servers=8 station.llm.service=Exponential(mean: "50ms")"#,
        r#"a 1 7 gate.g.acquire_timeout="100ms" gate.g.permits=4 station.llm.servers=12 station.llm.service=Constant("40ms")"#,
        r#"a 1 9 gate.g.acquire_timeout="100ms" gate.g.permits=4 station.llm.servers=12 station.llm.service=Constant("40ms")"#,
        r#"b 0 7 gate.g.acquire_timeout="1s" gate.g.permits=4 station.llm.servers=8 station.llm.service=Exponential(mean: "50ms")"#,
        r#"b 0 9 gate.g.acquire_timeout="1s" gate.g.permits=4 station.llm.servers=8 station.llm.service=Exponential(mean: "50ms")"#,
        r#"b 1 7 gate.g.acquire_timeout="1s" gate.g.permits=4 station.llm.servers=12 station.llm.service=Constant("40ms")"#,
        r#"b 1 9 gate.g.acquire_timeout="1s" gate.g.permits=4 station.llm.servers=12 station.llm.service=Constant("40ms")"#,
    ];
    assert_eq!(got, want, "permits 16 > servers is dropped by the constraint");
}

#[test]
fn list_points_and_value_constraints() {
    let got = plan(
        r#"sweep: [List([[(path: "gate.g.permits", value: 2), (path: "station.llm.servers", value: 3)],
                         [(path: "gate.g.permits", value: 5), (path: "station.llm.servers", value: 6)]])],
        constraints: [(left: "gate.g.permits", op: Ge, value: 3)],"#,
    );
    assert_eq!(
        got,
        [
            "default 0 7 gate.g.permits=5 station.llm.servers=6",
            "default 0 9 gate.g.permits=5 station.llm.servers=6"
        ]
    );
}

#[test]
fn run_ids_survive_editing_the_sweep() {
    let ids = |extra: &str| -> Vec<(String, String)> {
        let e =
            load_text(Path::new("p.ron"), &BASE.replace("EXTRA", extra), &RunDefaults::default())
                .unwrap();
        e.runs.iter().map(|r| (format!("{:?}", r.params), r.run_id.clone())).collect()
    };
    let a = ids(r#"sweep: [Grid(path: "gate.g.permits", values: [4, 8])],"#);
    let b = ids(r#"sweep: [Grid(path: "gate.g.permits", values: [2, 8, 4])],"#);
    for run in &a {
        assert!(b.contains(run), "{run:?} renumbered");
    }
}

/// Run ids depend on the rows of a replayed trace, not only on its file name.
#[test]
fn run_ids_change_when_a_trace_file_changes() {
    let dir = std::env::temp_dir().join(format!("stormglass-trace-ids-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exp = r#"Experiment(name: "t", duration: "1m",
        scenario: Inline(Scenario(name: "s",
            sources: [(name: "t", target: "c", trace: Trace(file: "t.csv"))],
            call_sites: [(name: "c", upstream: "st")],
            stations: [(name: "st", servers: 1, service: Constant("1ms"))])))"#;
    let ids = |csv: &str| {
        std::fs::write(dir.join("t.csv"), csv).unwrap();
        let e = load_text(&dir.join("t.ron"), exp, &RunDefaults::default()).unwrap();
        e.runs[0].run_id.clone()
    };
    let a = ids("arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,2\n1,3,4\n");
    let b = ids("arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,2\n1,3,5\n");
    let c = ids("arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,2\n1,3,4\n");
    assert_ne!(a, b);
    assert_eq!(a, c);
    std::fs::remove_dir_all(&dir).unwrap();
}
