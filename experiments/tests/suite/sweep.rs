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

fn load(extra: &str) -> Result<experiments::Experiment, String> {
    load_text(Path::new("plan.ron"), &BASE.replace("EXTRA", extra), &RunDefaults::default())
        .map_err(|e| e.to_string())
}

/// Planning never loses a run: every planned run has its own id (refusals of collisions
/// and of invalid combinations, with their messages, are in `bad_input/`).
fn unique_ids(e: &experiments::Experiment) -> bool {
    e.runs.iter().map(|r| &r.run_id).collect::<std::collections::HashSet<_>>().len() == e.runs.len()
}

/// Two fractional values of a count that would run as one integer (60.9 and 60 both as
/// 60) are refused at load, whichever check sees them first: never two points sharing
/// one run id (the second would overwrite the first's files).
#[test]
fn fractional_values_never_collapse_into_one_run() {
    let err = load(r#"sweep: [Grid(path: "gate.g.permits", values: [4.2, 4.7, 8])],"#)
        .expect_err("refused");
    assert!(err.contains("plan.ron:12:") && err.contains("sweep[0].values["), "{err}");
}

/// A variant without overlay and a sweep value equal to the scenario's own: every run of
/// the plan still has its own id (the variant's name is part of it).
#[test]
fn an_empty_variant_and_the_scenario_value_keep_distinct_ids() {
    let e = load(
        r#"variants: [(name: "plain"), (name: "same", set: [(path: "gate.g.permits", value: 4)])],
           sweep: [Grid(path: "gate.g.permits", values: [4, 8])],"#,
    )
    .unwrap();
    assert_eq!(e.runs.len(), 2 * 2 * 2);
    assert!(unique_ids(&e));
}

/// A sweep of two parameters tied by a rule (core ≤ maximum): the points the constraint
/// keeps are valid whatever order the values are set in (maximum 4 with core 2 while the
/// scenario's core is 8), and the invalid one (maximum 4, core 8) is dropped, not refused.
#[test]
fn tied_parameters_set_in_any_order_and_constraints_drop_invalid_points() {
    let text = r#"Experiment(
    name: "pool",
    scenario: Inline(Scenario(
        name: "s",
        sources: [(name: "chat", interarrival: Exponential(mean: "10ms"), target: "llm", app: "svc")],
        apps: [(name: "svc", instances: 1, pool: Some(Shared((name: "w", core_pool_size: 8, maximum_pool_size: 8, queue_capacity: 0))))],
        call_sites: [(name: "llm", upstream: "llm")],
        stations: [(name: "llm", servers: 8, service: Exponential(mean: "50ms"))],
    )),
    duration: "10s",
    sweep: [Grid(path: "pool.w.maximum_pool_size", values: [16, 4]), Grid(path: "pool.w.core_pool_size", values: [2, 8])],
    CONSTRAINT
)"#;
    let e = load_text(
        Path::new("pool.ron"),
        &text.replace(
            "CONSTRAINT",
            r#"constraints: [(left: "pool.w.core_pool_size", op: Le, right: "pool.w.maximum_pool_size")],"#,
        ),
        &RunDefaults::default(),
    )
    .unwrap();
    let val = |v: &Option<models::params::ParamValue>| {
        v.as_ref().expect("every point has it").to_string()
    };
    let got: Vec<String> =
        e.runs.iter().map(|r| format!("{} {}", val(&r.params[0]), val(&r.params[1]))).collect();
    assert_eq!(got, ["16 2", "16 8", "4 2"]);
    assert!(unique_ids(&e));
    // Without the constraint the invalid point is refused, with the point named.
    let err =
        load_text(Path::new("pool.ron"), &text.replace("CONSTRAINT", ""), &RunDefaults::default())
            .expect_err("maximum 4 < core 8")
            .to_string();
    assert!(
        err.contains(
            "variant \"default\" with pool.w.maximum_pool_size=4, pool.w.core_pool_size=8"
        ),
        "{err}"
    );
}

/// An enum parameter is swept over its choices, written bare as in the scenario; each point
/// gets its choice (and its own run id: the scenario text differs).
#[test]
fn a_sweep_over_an_enum_parameters_choices() {
    let text = BASE
        .replace(
            r#"call_sites: [(name: "call", governors: [Gate("g")], upstream: "llm")],"#,
            r#"circuit_breakers: [(name: "b")],
        call_sites: [(name: "call", governors: [CircuitBreaker("b"), Gate("g")], upstream: "llm")],"#,
        )
        .replace(
            "EXTRA",
            r#"sweep: [Grid(path: "circuit_breaker.b.sliding_window_type", values: [TIME_BASED, COUNT_BASED])],"#,
        );
    let e = load_text(Path::new("plan.ron"), &text, &RunDefaults::default()).unwrap();
    let got: Vec<String> = e
        .runs
        .iter()
        .map(|r| format!("{} {} {}", r.point, r.seed, r.params[0].as_ref().unwrap()))
        .collect();
    assert_eq!(got, ["0 7 TIME_BASED", "0 9 TIME_BASED", "1 7 COUNT_BASED", "1 9 COUNT_BASED"]);
    assert!(unique_ids(&e));
}
