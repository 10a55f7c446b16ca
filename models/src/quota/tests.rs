use super::*;

const S: u64 = 1_000_000_000;

fn spec(rpm: Option<u64>, tpm: Option<u64>, window: QuotaWindow) -> QuotaSpec {
    QuotaSpec {
        name: "openai".into(),
        rpm,
        tpm,
        max_concurrency: None,
        window,
        refund_unused: false,
        retry_after: RetryAfter::Computed,
    }
}

fn admitted(a: Admit) -> Ticket {
    match a {
        Admit::Admit(t) => t,
        other => panic!("expected admission, got {other:?}"),
    }
}

fn secs(s: u64) -> Option<SimDuration> {
    Some(SimDuration::from_secs(s))
}

/// Rolling window, rpm 100. 110% of rpm: 110 arrivals spaced floor(60e9/110) = 545_454_545
/// ns, all inside the first minute (the last at 59.45 s): the first 100 pass, the last 10
/// get 429. 90%: 270 arrivals spaced floor(60e9/90) = 666_666_666 ns (3 minutes); any
/// window (t − 60 s, t] holds at most floor(60e9/666_666_666) + 1 = 91 ≤ 100: none refused.
#[test]
fn rolling_rpm_at_90_and_110_percent() {
    let mut q = Quota::new(&spec(Some(100), None, QuotaWindow::Rolling));
    let d = 545_454_545;
    let mut rejected = vec![];
    for k in 0..110u64 {
        if let Admit::Reject429 { retry_after } = q.admit(0, SimTime(k * d)) {
            rejected.push((k, retry_after));
        }
    }
    // Retry-After: drop the oldest entry (admitted at 0 s) → free at 60 s.
    // k=100 at 54.545 s → 5.45 s → 6 s; k=105 at 57.27 s → 2.73 s → 3 s;
    // k=109 at 59.45 s → 0.55 s → 1 s.
    let expect: Vec<(u64, Option<SimDuration>)> = vec![
        (100, secs(6)),
        (101, secs(5)), // 55.09 s → 4.91 s
        (102, secs(5)), // 55.64 s → 4.36 s
        (103, secs(4)), // 56.18 s → 3.82 s
        (104, secs(4)), // 56.73 s → 3.27 s
        (105, secs(3)),
        (106, secs(3)), // 57.82 s → 2.18 s
        (107, secs(2)), // 58.36 s → 1.64 s
        (108, secs(2)), // 58.91 s → 1.09 s
        (109, secs(1)),
    ];
    assert_eq!(rejected, expect);
    assert_eq!((q.counters.admitted, q.counters.rejected, q.counters.rejected_rpm), (100, 10, 10));
    assert_eq!(q.remaining_requests(), Some(0));
    // At exactly 60 s the admission at 0 s has left the window (60 s, expiry inclusive);
    // the one at 0.545 s has not.
    q.advance(SimTime(60 * S));
    assert_eq!(q.remaining_requests(), Some(1));
    admitted(q.admit(0, SimTime(60 * S)));
    assert_eq!(q.admit(0, SimTime(60 * S)), Admit::Reject429 { retry_after: secs(1) });

    let mut q = Quota::new(&spec(Some(100), None, QuotaWindow::Rolling));
    for k in 0..270u64 {
        admitted(q.admit(0, SimTime(k * 666_666_666)));
    }
    assert_eq!(q.counters.rejected, 0);
}

/// Bucket, rpm 60 (refill 1 request/s, capacity 60, starts full). Drained at t = 0, then
/// arrivals at 110% (every floor(1e9/1.1) = 909_090_909 ns, n = 1..660): before arrival n
/// the level is t_n − A_{n−1}, so (induction, arrivals closer than 1 s) the admitted count
/// A_n = floor(t_n / 1 s). t_660 = 599.99999994 s → 599 admitted, 61 refused. At 90%
/// (every 1_111_111_111 ns) the level before each arrival is ≥ 1.11: none refused.
#[test]
fn bucket_rpm_at_90_and_110_percent() {
    let mut q = Quota::new(&spec(Some(60), None, QuotaWindow::Bucket));
    for _ in 0..60 {
        admitted(q.admit(0, SimTime(0)));
    }
    // Empty: 1 request short at 1/s → 1 s; at 0.5 s, 0.5 s short → rounded up to 1 s.
    assert_eq!(q.admit(0, SimTime(0)), Admit::Reject429 { retry_after: secs(1) });
    assert_eq!(q.admit(0, SimTime(S / 2)), Admit::Reject429 { retry_after: secs(1) });
    assert_eq!(q.remaining_requests(), Some(0));

    let mut q = Quota::new(&spec(Some(60), None, QuotaWindow::Bucket));
    for _ in 0..60 {
        admitted(q.admit(0, SimTime(0)));
    }
    let before = q.counters;
    for n in 1..=660u64 {
        q.admit(0, SimTime(n * 909_090_909));
    }
    assert_eq!(q.counters.admitted - before.admitted, 599);
    assert_eq!(q.counters.rejected - before.rejected, 61);

    let mut q = Quota::new(&spec(Some(60), None, QuotaWindow::Bucket));
    for _ in 0..60 {
        admitted(q.admit(0, SimTime(0)));
    }
    for n in 1..=540u64 {
        admitted(q.admit(0, SimTime(n * 1_111_111_111)));
    }
    assert_eq!(q.counters.rejected, 0);
}

/// tpm 10,000 (166.67 tokens/s), rpm 100: requests reserving 500 prompt + 4,000 max_tokens
/// = 4,500 tokens. Two fit (1,000 left); the third is refused although rpm has 98 left.
#[test]
fn tpm_reservations_refuse_what_rpm_allows() {
    for refund in [false, true] {
        let mut s = spec(Some(100), Some(10_000), QuotaWindow::Bucket);
        s.refund_unused = refund;
        let mut q = Quota::new(&s);
        let a = admitted(q.admit(4_500, SimTime(0)));
        admitted(q.admit(4_500, SimTime(0)));
        // 3,500 tokens short at 10,000/60 s: 3,500 × 60 / 10,000 = 21 s.
        assert_eq!(q.admit(4_500, SimTime(0)), Admit::Reject429 { retry_after: secs(21) });
        assert_eq!((q.counters.rejected_tpm, q.counters.rejected_rpm), (1, 0));
        assert_eq!((q.remaining_requests(), q.remaining_tokens()), (Some(98), Some(1_000)));
        // The first completes at 1 s having used 700 tokens (200 generated).
        q.complete(a, 700, SimTime(S));
        let third = q.admit(4_500, SimTime(S));
        if refund {
            // 1,000 + 166.67 + 3,800 refunded = 4,966.67 ≥ 4,500.
            admitted(third);
            assert_eq!(q.counters.tokens_refunded, 3_800);
        } else {
            // 1,166.67 left: 3,333.33 short → 3,333.33 × 60 / 10,000 = exactly 20 s.
            assert_eq!(third, Admit::Reject429 { retry_after: secs(20) });
            assert_eq!(q.counters.tokens_refunded, 0);
        }
    }
    // A request larger than the whole tpm can never pass: no Retry-After.
    let mut q = Quota::new(&spec(None, Some(10_000), QuotaWindow::Bucket));
    assert_eq!(q.admit(12_000, SimTime(0)), Admit::Reject429 { retry_after: None });
}

/// Rolling tpm 10,000 with refunds: the refund goes back to the admission's own entry and
/// expires with it.
#[test]
fn rolling_tpm_refund_and_retry_after() {
    let mut s = spec(None, Some(10_000), QuotaWindow::Rolling);
    s.refund_unused = true;
    let mut q = Quota::new(&s);
    let a = admitted(q.admit(6_000, SimTime(0)));
    let b = admitted(q.admit(3_000, SimTime(10 * S)));
    // 9,000 + 3,000 > 10,000: the 6,000 taken at 0 s must leave → at 60 s, 40 s from now.
    assert_eq!(q.admit(3_000, SimTime(20 * S)), Admit::Reject429 { retry_after: secs(40) });
    q.complete(a, 1_000, SimTime(30 * S)); // refund 5,000 → 4,000 in the window
    assert_eq!(q.remaining_tokens(), Some(6_000));
    admitted(q.admit(3_000, SimTime(30 * S)));
    // b's entry left the window at 70 s: nothing to refund at 75 s.
    q.complete(b, 0, SimTime(75 * S));
    assert_eq!(q.counters.tokens_refunded, 5_000);
    // At 75 s the window (15 s, 75 s] holds only the 3,000 taken at 30 s.
    assert_eq!(q.remaining_tokens(), Some(7_000));
}

#[test]
fn concurrency_cap_and_retry_after_modes() {
    let mut s = spec(None, None, QuotaWindow::Bucket);
    s.max_concurrency = Some(2);
    let mut q = Quota::new(&s);
    let a = admitted(q.admit(10, SimTime(0)));
    admitted(q.admit(10, SimTime(0)));
    // The wait depends on completions: unknown.
    assert_eq!(q.admit(10, SimTime(0)), Admit::Reject429 { retry_after: None });
    q.set_retry_after(RetryAfter::Fixed(SimDuration::from_secs(5)));
    assert_eq!(q.admit(10, SimTime(0)), Admit::Reject429 { retry_after: secs(5) });
    q.set_retry_after(RetryAfter::Off);
    assert_eq!(q.admit(10, SimTime(0)), Admit::Reject429 { retry_after: None });
    assert_eq!(q.counters.rejected_concurrency, 3);
    q.complete(a, 10, SimTime(S));
    assert_eq!(q.in_flight(), 1);
    admitted(q.admit(10, SimTime(S)));
    // Lowering below in_flight revokes nothing; new requests are refused until room frees.
    q.set_max_concurrency(Some(1));
    assert_eq!(q.in_flight(), 2);
    assert!(matches!(q.admit(10, SimTime(S)), Admit::Reject429 { .. }));
    assert_eq!(q.counters.admitted - q.counters.completed, q.in_flight());
}

/// Run-time changes of rpm (bucket): lowering clamps the stored capacity, raising adds
/// none, switching on from unlimited starts full.
#[test]
fn runtime_setters() {
    let mut q = Quota::new(&spec(Some(60), None, QuotaWindow::Bucket));
    q.set_rpm(Some(30), SimTime(0));
    assert_eq!(q.remaining_requests(), Some(30));
    for _ in 0..30 {
        admitted(q.admit(0, SimTime(0)));
    }
    // 1 request short at 30/min → 2 s.
    assert_eq!(q.admit(0, SimTime(0)), Admit::Reject429 { retry_after: secs(2) });
    q.set_rpm(Some(120), SimTime(0));
    // Still empty; now 2/s → 0.5 s → 1 s.
    assert_eq!(q.admit(0, SimTime(0)), Admit::Reject429 { retry_after: secs(1) });
    admitted(q.admit(0, SimTime(S / 2)));
    q.set_rpm(None, SimTime(S / 2));
    for _ in 0..1_000 {
        admitted(q.admit(0, SimTime(S / 2)));
    }
    q.set_rpm(Some(10), SimTime(S));
    for _ in 0..10 {
        admitted(q.admit(0, SimTime(S)));
    }
    assert!(matches!(q.admit(0, SimTime(S)), Admit::Reject429 { .. }));
    assert_eq!(q.rpm(), Some(10));
    // tpm switched on and lowered.
    q.set_tpm(Some(1_000), SimTime(S));
    q.set_tpm(Some(100), SimTime(S));
    assert_eq!(q.remaining_tokens(), Some(100));
    assert_eq!(q.tpm(), Some(100));
}

#[test]
fn whole_seconds_rounding() {
    let table = [(0, 0), (1, S), (S, S), (S + 1, 2 * S), (59 * S + S / 2, 60 * S)];
    for (ns, want) in table {
        assert_eq!(whole_seconds_up(SimDuration(ns)), SimDuration(want), "{ns} ns");
    }
}

#[test]
fn spec_parses_with_defaults_and_rejects_zero() {
    let s: QuotaSpec =
        ron::from_str(r#"Quota(name: "gpt4", rpm: Some(500), tpm: Some(30000))"#).expect("parses");
    assert_eq!(s.window, QuotaWindow::Bucket);
    assert_eq!(s.retry_after, RetryAfter::Computed);
    assert!(!s.refund_unused);
    let s: QuotaSpec =
        ron::from_str(r#"Quota(name: "g", window: Rolling, retry_after: Fixed("20s"))"#).unwrap();
    assert_eq!(s.retry_after, RetryAfter::Fixed(SimDuration::from_secs(20)));
    let e = ron::from_str::<QuotaSpec>(r#"Quota(name: "g", rpm: Some(0))"#).unwrap_err();
    assert!(e.to_string().contains("in [1, 1000000000000], found Some(0)"), "{e}");
}

/// Every declared parameter reads back, writes back, and is unknown under another name.
#[test]
fn params_roundtrip() {
    use crate::params::Params;
    let mut s: QuotaSpec = ron::from_str(r#"Quota(name: "x", rpm: Some(5))"#).expect("parses");
    for d in QuotaSpec::decls() {
        let v = s.get(d.name).unwrap_or_else(|| panic!("{} readable", d.name));
        s.set(d.name, v.clone()).expect("writable");
        assert_eq!(s.get(d.name), Some(v));
    }
    assert_eq!(s.get("no_such_param"), None);
}
