//! The scripted harness (`models::scripted`) through the whole world: a scripted client
//! and a scripted upstream drive a governor call by call, and the test asserts the exact
//! state changes (with times) and each request's outcome. Every run is checked for
//! determinism and conservation (`run_checked`).

use crate::support::*;
use models::{Outcome, Reason, RunOutput};

/// The breaker's state changes as `(time in ms, "FROM -> TO")`.
fn transitions(r: &RunOutput) -> Vec<(f64, String)> {
    let changes = r.state_events.iter().filter(|e| e.kind == "state_change");
    changes.map(|e| (e.time.0 as f64 / 1e6, format!("{} -> {}", e.from, e.to))).collect()
}

/// Each request as `(arrival ms, end ms, outcome)`, by sequence number.
fn outcomes(r: &RunOutput) -> Vec<(f64, Option<f64>, Option<Outcome>)> {
    let mut q: Vec<_> = r.requests.iter().collect();
    q.sort_by_key(|q| q.seq);
    let ms = |t: sim_core::SimTime| t.0 as f64 / 1e6;
    q.iter().map(|q| (ms(q.arrival), q.end.map(ms), q.outcome)).collect()
}

const S: Option<Outcome> = Some(Outcome::Success);
const fn failed(r: Reason) -> Option<Outcome> {
    Some(Outcome::Failed(r))
}
const fn rejected(r: Reason) -> Option<Outcome> {
    Some(Outcome::Rejected(r))
}

#[test]
fn resilience4j_breaker_call_by_call() {
    let sc = load(include_str!("data/scripted_breaker.ron"));
    // The scenario is written back the way it is read (scripts included).
    assert_eq!(load(&ron::to_string(&sc).unwrap()), sc);
    let r = run_checked(&sc, &cfg(1, 10));
    // Recorded outcomes in time order (the business error at 220 ms is ignored):
    // 20 S, 120 F(5xx), 420 S, 520 F(429), 620 S, 650 F(timeout: the hang at 300 ms +
    // 350 ms), 720 F(5xx), 820 S, 920 S, 1020 F(5xx) = the 10th, 5 failures of 10 = 50 %
    // ≥ 50 %: OPEN at 1020 ms. Wait 5 s: the first call after 6020 ms (6100 ms) moves it
    // to HALF_OPEN; its 2 probes succeed at 6120 and 6170 ms: CLOSED at 6170 ms.
    let want = [
        (1020.0, "CLOSED -> OPEN"),
        (6100.0, "OPEN -> HALF_OPEN"),
        (6170.0, "HALF_OPEN -> CLOSED"),
    ];
    let got = transitions(&r);
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((t, w), (gt, g)) in want.iter().zip(&got) {
        assert_eq!((*t, *w), (*gt, g.as_str()));
    }
    use Reason::*;
    let want = [
        (0.0, Some(20.0), S),
        (100.0, Some(120.0), failed(Upstream5xx)),
        (200.0, Some(220.0), failed(BusinessError)),
        (300.0, Some(650.0), failed(Timeout)),
        (400.0, Some(420.0), S),
        (500.0, Some(520.0), rejected(Upstream429)),
        (600.0, Some(620.0), S),
        (700.0, Some(720.0), failed(Upstream5xx)),
        (800.0, Some(820.0), S),
        (900.0, Some(920.0), S),
        (1000.0, Some(1020.0), failed(Upstream5xx)),
        (1500.0, Some(1500.0), rejected(BreakerOpen)),
        (3000.0, Some(3000.0), rejected(BreakerOpen)),
        (6100.0, Some(6120.0), S),
        (6150.0, Some(6170.0), S),
        // The 13 answers are used up: the station's own service, 100 ms.
        (7000.0, Some(7100.0), S),
    ];
    assert_eq!(outcomes(&r), want);
    // The rows' attributes, not draws: class P0 P1 P0 P2 then the source's (P0); key, user.
    let mut q: Vec<_> = r.requests.iter().collect();
    q.sort_by_key(|q| q.seq);
    let attrs: Vec<(u16, u64, u64)> = q.iter().map(|q| (q.class, q.key, q.user)).collect();
    assert_eq!(&attrs[..5], [(0, 1, 7), (1, 2, 7), (0, 3, 8), (2, 4, 8), (0, 5, 0)]);
    assert_eq!(attrs[15], (0, 16, 0));
    // A different seed changes nothing: the script states everything.
    let other = run_checked(&sc, &cfg(99, 10));
    assert_eq!(outcomes(&other), want);
    assert_eq!(transitions(&other), got);
}

/// A retry behind a scripted 429 with Retry-After: the back-off is max(500 ms, Retry-After).
const RETRY_429: &str = r#"Scenario(name: "retry-429",
    sources: [(name: "client", target: "c", script: Script([Call(at: "0s"), Call(at: "10s")]))],
    retries: [Retry(name: "r", max_attempts: 3, backoff: Fixed(wait_duration: "500ms"))],
    call_sites: [(name: "c", governors: [Retry("r")], upstream: "llm", timeout: "5s")],
    stations: [(name: "llm", servers: 1, service: Constant("100ms"), script: Some([
        Answer(duration: "10ms", outcome: TooMany(retry_after: Some("2s"))),
        Answer(duration: "30ms", outcome: Success),
        Answer(duration: "10ms", outcome: TooMany(retry_after: None)),
        Answer(duration: "10ms", outcome: TooMany(retry_after: Some("100ms"))),
        Answer(duration: "40ms", outcome: Success),
    ]))],
)"#;

#[test]
fn retry_honours_a_scripted_retry_after_exactly() {
    let r = run_checked(&load(RETRY_429), &cfg(3, 20));
    // Request 0: 429 at 10 ms, Retry-After 2 s > 500 ms: re-sent at 2010 ms, success
    // 30 ms later: ends at 2040 ms.
    // Request 1: 429 at 10010 ms without Retry-After: 500 ms back-off, re-sent at
    // 10510 ms; 429 at 10520 ms with Retry-After 100 ms < 500 ms: re-sent at 11020 ms;
    // success 40 ms later: 11060 ms.
    assert_eq!(outcomes(&r), [(0.0, Some(2040.0), S), (10000.0, Some(11060.0), S)]);
}

/// Sentinel's ERROR_RATIO degrade rule: 5 calls, 3 errors (0.6 > 0.5) open it; one probe
/// after `time_window`; a failed probe re-opens it, a good one closes it.
const SENTINEL: &str = r#"Scenario(name: "sentinel-probe",
    sources: [(name: "client", target: "c", script: Script([
        Call(at: "0ms"), Call(at: "100ms"), Call(at: "200ms"), Call(at: "300ms"), Call(at: "400ms"),
        Call(at: "1s"), Call(at: "3s"), Call(at: "4s"), Call(at: "5.5s"), Call(at: "6s"),
    ]))],
    degrade_rules: [DegradeRule(name: "dr", grade: ERROR_RATIO, count: 0.5, time_window: 2,
        min_request_amount: 5)],
    call_sites: [(name: "c", governors: [DegradeRule("dr")], upstream: "llm", timeout: "1s")],
    stations: [(name: "llm", servers: 2, service: Constant("50ms"), script: Some([
        Answer(duration: "20ms", outcome: Error5xx),
        Answer(duration: "20ms", outcome: Success),
        Answer(duration: "20ms", outcome: Error5xx),
        Answer(duration: "20ms", outcome: Success),
        Answer(duration: "20ms", outcome: Error5xx),
        Answer(duration: "20ms", outcome: Error5xx),
        Answer(duration: "20ms", outcome: Success),
    ]))],
)"#;

#[test]
fn sentinel_degrade_rule_probe_call_by_call() {
    let r = run_checked(&load(SENTINEL), &cfg(5, 10));
    // 5th outcome at 420 ms: 3 errors of 5 = 0.6 > 0.5 (min 5 requests): OPEN. Retry at
    // 420 + 2000 = 2420 ms: the call at 3 s is the probe (HALF_OPEN), fails at 3020 ms:
    // OPEN again until 5020 ms; the call at 4 s is blocked; the one at 5.5 s probes,
    // succeeds at 5520 ms: CLOSED; the call at 6 s passes (script used up: 50 ms).
    let want = [
        (420.0, "CLOSED -> OPEN".to_string()),
        (3000.0, "OPEN -> HALF_OPEN".to_string()),
        (3020.0, "HALF_OPEN -> OPEN".to_string()),
        (5500.0, "OPEN -> HALF_OPEN".to_string()),
        (5520.0, "HALF_OPEN -> CLOSED".to_string()),
    ];
    assert_eq!(transitions(&r), want);
    use Reason::*;
    let f = failed(Upstream5xx);
    let open = rejected(BreakerOpen);
    let want = [
        (0.0, Some(20.0), f),
        (100.0, Some(120.0), S),
        (200.0, Some(220.0), f),
        (300.0, Some(320.0), S),
        (400.0, Some(420.0), f),
        (1000.0, Some(1000.0), open),
        (3000.0, Some(3020.0), f),
        (4000.0, Some(4000.0), open),
        (5500.0, Some(5520.0), S),
        (6000.0, Some(6050.0), S),
    ];
    assert_eq!(outcomes(&r), want);
}

#[test]
fn bad_scripts_name_the_field() {
    use models::params::ParamValue;
    use models::scenario::ScenarioSpec;
    let parse = |t: &str| ron::from_str::<ScenarioSpec<ParamValue>>(t);
    let base = |script: &str| {
        format!(
            r#"Scenario(name: "x", sources: [(name: "s", target: "c", {script})],
            call_sites: [(name: "c", upstream: "llm")],
            stations: [(name: "llm", servers: 1, service: Constant("1ms"))])"#
        )
    };
    // Time order: a parse error at the value's position, naming the row.
    let e = parse(&base(r#"script: Script([Call(at: "2s"), Call(at: "1s")])"#)).unwrap_err();
    assert!(e.to_string().contains("[1].at: call times must not decrease (1s after 2s)"), "{e}");
    // An unknown class: a check error with the field path.
    let sc =
        parse(&base(r#"script: Script([Call(at: "0s"), Call(at: "1s", class: "P9")])"#)).unwrap();
    let e = sc.check().unwrap_err();
    assert_eq!(e.path, "sources[0].script[1].class");
    assert!(e.message.contains("no class named `P9`"), "{}", e.message);
    // A script and an arrival process.
    let sc =
        parse(&base(r#"script: Script([Call(at: "0s")]), interarrival: Constant("1s")"#)).unwrap();
    assert_eq!(sc.check().unwrap_err().path, "sources[0].script");
    // An empty upstream script.
    let e = parse(
        r#"Scenario(name: "x", sources: [(name: "s", target: "c", interarrival: Constant("1s"))],
        call_sites: [(name: "c", upstream: "llm")],
        stations: [(name: "llm", servers: 1, service: Constant("1ms"), script: Some([]))])"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("expected 1 to 1000000 answers, found 0"), "{e}");
}

/// Rows with their own answers (by attempt) beside a station script: with one server the
/// station starts row 1 before row 0's retry, with two it starts row 0's retry first —
/// each row still gets its own answers, and the station's script answers only the row
/// without any (`models::scripted`, "A row may carry its own answers").
fn row_answers(servers: u32) -> String {
    format!(
        r#"Scenario(name: "row-answers",
    sources: [(name: "client", target: "c", script: Script([
        Call(at: "0ms", answers: [Answer(duration: "50ms", outcome: Error5xx),
                                  Answer(duration: "10ms", outcome: Success)]),
        Call(at: "10ms", answers: [Answer(duration: "5ms", outcome: Success)]),
        Call(at: "20ms"),
    ]))],
    retries: [Retry(name: "r", max_attempts: 2, backoff: Fixed(wait_duration: "0s"))],
    call_sites: [(name: "c", governors: [Retry("r")], upstream: "llm", timeout: "5s")],
    stations: [(name: "llm", servers: {servers}, service: Constant("100ms"), script: Some([
        Answer(duration: "30ms", outcome: BusinessError),
    ]))],
)"#
    )
}

#[test]
fn a_rows_answers_follow_its_attempts_whatever_the_start_order() {
    use Reason::*;
    // (servers, [(arrival ms, end ms, outcome)] by row). One server: row 0's 5xx at 50 ms;
    // row 1 (queued since 10 ms) starts at 50 ms, its own 5 ms: 55 ms; row 2 starts at
    // 55 ms with the station's answer, a 30 ms business error: 85 ms; row 0's retry
    // (queued at 50 ms, behind row 2) starts at 85 ms with its row's second answer: 95 ms.
    // Two servers: row 1 at 10 → 15 ms, row 2 at 20 → 50 ms (station's answer), row 0's
    // retry starts at 50 ms: 60 ms.
    let table = [
        (
            1,
            [
                (0.0, Some(95.0), S),
                (10.0, Some(55.0), S),
                (20.0, Some(85.0), failed(BusinessError)),
            ],
        ),
        (
            2,
            [
                (0.0, Some(60.0), S),
                (10.0, Some(15.0), S),
                (20.0, Some(50.0), failed(BusinessError)),
            ],
        ),
    ];
    for (servers, want) in table {
        let r = run_checked(&load(&row_answers(servers)), &cfg(1, 5));
        assert_eq!(outcomes(&r), want, "{servers} server(s)");
    }
    // Past its list a row is answered by the station: the script is used up, so its own
    // service, 100 ms (a third attempt of row 0 would be one; here: a row with too few).
    let text = row_answers(1).replace("max_attempts: 2", "max_attempts: 3").replace(
        r#"Answer(duration: "10ms", outcome: Success)]"#,
        r#"Answer(duration: "10ms", outcome: Error5xx)]"#,
    );
    let r = run_checked(&load(&text), &cfg(1, 5));
    // Row 0: 5xx at 50, retry starts at 85 (after row 1 and row 2), 5xx at 95, third
    // attempt starts at 95: the station's normal 100 ms, success at 195 ms.
    assert_eq!(outcomes(&r)[0], (0.0, Some(195.0), S));
}
