//! Scripts: a pipeline, the counts drawn, the call outcomes fed in → what is issued next.

use super::*;

fn p(text: &str) -> Pipeline {
    ron::from_str::<PipelineSpec>(text).unwrap().compile()
}

fn i(stage: u16, step: u16, index: u32) -> Issue {
    Issue { stage, step, index }
}

/// retrieval (2 parallel calls) ‖ rerank (1) → llm (3 sequential) → compliance (1).
const RAG: &str = r#"Pipeline(name: "rag", stages: [
    Parallel([
        Step(name: "retrieve", call: "vdb", calls: Fixed(2), mode: Parallel, optional: true),
        Step(name: "profile", call: "db"),
    ]),
    Step(name: "agent", call: "llm", calls: Uniform(min: 3, max: 5)),
    Step(name: "check", call: "compliance"),
])"#;

#[test]
fn all_success_walks_every_stage_in_order() {
    let p = p(RAG);
    // Uniform(3, 5) picks 3 at u = 0.1; Fixed(n) steps ignore the draw.
    let mut count = |_s: u16, _k: u16| 0.1;
    let (mut pr, a) = Progress::start(&p, &mut count);
    assert_eq!(a, Advance::Issue(vec![i(0, 0, 0), i(0, 0, 1), i(0, 1, 0)]));
    let s = Outcome::Success;
    // (ended call, expected advance)
    let script: Vec<(Issue, Advance)> = vec![
        (i(0, 1, 0), Advance::Issue(vec![])),
        (i(0, 0, 1), Advance::Issue(vec![])),
        (i(0, 0, 0), Advance::Issue(vec![i(1, 0, 0)])),
        (i(1, 0, 0), Advance::Issue(vec![i(1, 0, 1)])),
        (i(1, 0, 1), Advance::Issue(vec![i(1, 0, 2)])),
        (i(1, 0, 2), Advance::Issue(vec![i(2, 0, 0)])),
        (i(2, 0, 0), Advance::Done(Outcome::Success)),
    ];
    for (ended, want) in script {
        assert_eq!(pr.call_ended(&p, ended, s, &mut count), want, "after {ended:?}");
    }
}

#[test]
fn optional_failure_degrades_required_failure_fails_and_stops() {
    let p = p(RAG);
    let mut count = |_s: u16, _k: u16| 0.5; // Uniform(3, 5) picks 4
    let (mut pr, _) = Progress::start(&p, &mut count);
    let down = Outcome::Failed(Reason::ConnectError);
    // The vector DB is down: the optional retrieval fails, the request goes on degraded.
    assert_eq!(pr.call_ended(&p, i(0, 0, 0), down, &mut count), Advance::Issue(vec![]));
    assert_eq!(pr.call_ended(&p, i(0, 0, 1), down, &mut count), Advance::Issue(vec![]));
    assert_eq!(
        pr.call_ended(&p, i(0, 1, 0), Outcome::Success, &mut count),
        Advance::Issue(vec![i(1, 0, 0)])
    );
    assert_eq!(
        pr.call_ended(&p, i(1, 0, 0), Outcome::Success, &mut count),
        Advance::Issue(vec![i(1, 0, 1)])
    );
    // The second LLM call times out: required, so the request fails with it; the two
    // remaining agent calls and the compliance stage are never issued.
    let t = Outcome::Failed(Reason::Timeout);
    assert_eq!(pr.call_ended(&p, i(1, 0, 1), t, &mut count), Advance::Done(t));
}

#[test]
fn failure_waits_for_parallel_calls_in_flight() {
    let p = p(r#"Pipeline(name: "fan", stages: [
        Step(name: "llm", call: "llm", calls: Fixed(3), mode: Parallel),
        Step(name: "after", call: "llm"),
    ])"#);
    let mut count = |_, _| 0.5;
    let (mut pr, a) = Progress::start(&p, &mut count);
    assert_eq!(a, Advance::Issue(vec![i(0, 0, 0), i(0, 0, 1), i(0, 0, 2)]));
    let r = Outcome::Rejected(Reason::RateLimited);
    assert_eq!(pr.call_ended(&p, i(0, 0, 1), r, &mut count), Advance::Issue(vec![]));
    assert_eq!(pr.call_ended(&p, i(0, 0, 0), Outcome::Success, &mut count), Advance::Issue(vec![]));
    // The first failure is the request's outcome, even if a later one differs.
    let f = Outcome::Failed(Reason::Upstream5xx);
    assert_eq!(pr.call_ended(&p, i(0, 0, 2), f, &mut count), Advance::Done(r));
}

#[test]
fn degraded_calls_degrade_the_request() {
    let p = p(r#"Pipeline(name: "two", stages: [Step(name: "a", call: "x", calls: Fixed(2))])"#);
    let mut count = |_, _| 0.5;
    let (mut pr, _) = Progress::start(&p, &mut count);
    let d = Outcome::Degraded(Reason::BreakerOpen);
    assert_eq!(pr.call_ended(&p, i(0, 0, 0), d, &mut count), Advance::Issue(vec![i(0, 0, 1)]));
    assert_eq!(pr.call_ended(&p, i(0, 0, 1), Outcome::Success, &mut count), Advance::Done(d));
}

#[test]
fn call_counts_pick_by_inversion_and_means_are_exact() {
    // (count, u) → expected
    let c: CallCount = ron::from_str("Choice([(3, 30), (4, 30), (5, 30), (8, 10)])").unwrap();
    for (u, want) in [(0.01, 3), (0.29, 3), (0.31, 4), (0.61, 5), (0.89, 5), (0.91, 8), (0.999, 8)]
    {
        assert_eq!(c.pick(u), want, "u = {u}");
    }
    assert!((c.mean() - 4.4).abs() < 1e-12); // 0.3·3 + 0.3·4 + 0.3·5 + 0.1·8
    let u: CallCount = ron::from_str("Uniform(min: 3, max: 5)").unwrap();
    for (x, want) in [(0.01, 3), (0.34, 4), (0.67, 5), (0.9999, 5)] {
        assert_eq!(u.pick(x), want);
    }
    assert_eq!(u.mean(), 4.0);
    assert_eq!(p(RAG).mean_calls(), 2.0 + 1.0 + 4.0 + 1.0);
    assert_eq!(Pipeline::single("llm").mean_calls(), 1.0);
}

#[test]
fn call_paths_are_positional_and_distinct() {
    let mut seen = std::collections::BTreeSet::new();
    for stage in 0..MAX_STAGES as u16 {
        for step in 0..MAX_PARALLEL_STEPS as u16 {
            for index in 0..MAX_CALLS_PER_STEP {
                assert!(seen.insert(i(stage, step, index).call_path()));
            }
        }
    }
    assert!(!seen.contains(&0), "0 is the request itself");
}

#[test]
fn bad_pipelines_are_refused_with_the_limit() {
    for (text, msg) in [
        (r#"Pipeline(name: "p", stages: [])"#, "expected 1 to 64 stages, found 0"),
        (
            r#"Pipeline(name: "p", stages: [Step(name: "a", call: "x", calls: Fixed(0))])"#,
            "expected 1 to 256 calls, found 0",
        ),
        (
            r#"Pipeline(name: "p", stages: [Step(name: "a", call: "x", calls: Uniform(min: 5, max: 3))])"#,
            "expected 1 ≤ min ≤ max ≤ 256, found min 5, max 3",
        ),
        (
            r#"Pipeline(name: "p", stages: [Parallel([Step(name: "a", call: "x")])])"#,
            "expected 2 to 16 parallel steps, found 1",
        ),
        (
            r#"Pipeline(name: "p", stages: [Step(name: "a", call: "x", calls: Choice([(2, 0)]))])"#,
            "expected (count 1..=256, weight > 0), found (2, 0)",
        ),
    ] {
        let e = ron::from_str::<PipelineSpec>(text).unwrap_err().to_string();
        assert!(e.contains(msg), "{e}");
    }
}
