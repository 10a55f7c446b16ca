use super::*;
use Outcome::{Degraded, Failed, Rejected, Success};
use Reason::*;

fn spec(text: &str) -> Result<FallbackSpec, String> {
    ron::from_str(text).map_err(|e| e.to_string())
}

/// (outcome at the site, first failure so far, site's `on`, switched off) → decision.
type Row = (Outcome, Option<Reason>, Option<u32>, bool, AfterEnd);

#[test]
fn after_end_table() {
    let bo = Some(mask(&[BreakerOpen, Timeout]));
    let fb = |r| AfterEnd::Fallback { first: r };
    let done = AfterEnd::Done;
    #[rustfmt::skip]
    let table: &[Row] = &[
        // First site, no fallback: everything stands.
        (Success,                None,              None, false, done(Success)),
        (Failed(Timeout),        None,              None, false, done(Failed(Timeout))),
        // First site with a fallback on breaker_open and timeout.
        (Rejected(BreakerOpen),  None,              bo,   false, fb(BreakerOpen)),
        (Failed(Timeout),        None,              bo,   false, fb(Timeout)),
        (Failed(Upstream5xx),    None,              bo,   false, done(Failed(Upstream5xx))),
        (Failed(BusinessError),  None,              bo,   false, done(Failed(BusinessError))),
        // A cache's stale answer at the first site is an answer: no fallback.
        (Degraded(BreakerOpen),  None,              bo,   false, done(Degraded(BreakerOpen))),
        // On a fallback: success is degraded by the FIRST failure's reason.
        (Success,                Some(BreakerOpen), None, false, done(Degraded(BreakerOpen))),
        (Degraded(Timeout),      Some(BreakerOpen), None, false, done(Degraded(BreakerOpen))),
        // A fallback site's failure not covered stands as it is.
        (Failed(Upstream5xx),    Some(BreakerOpen), None, false, done(Failed(Upstream5xx))),
        // …covered: on to the next layer, keeping the first reason.
        (Failed(Timeout),        Some(BreakerOpen), bo,   false, fb(BreakerOpen)),
        // Switched off: to the fallback whatever `on` says (shed is not in `bo`)…
        (Rejected(Shed),         None,              bo,   true,  fb(Shed)),
        // …and without a fallback the shed rejection stands.
        (Rejected(Shed),         None,              None, true,  done(Rejected(Shed))),
    ];
    for (i, &(o, first, on, off, want)) in table.iter().enumerate() {
        assert_eq!(after_end(o, first, on, off), want, "row {i}");
    }
}

/// (failure reaching the busy layer, first reason, cap granted, cache hit) → answer.
#[test]
fn busy_answer_table() {
    #[rustfmt::skip]
    let table: &[(Outcome, Reason, bool, Option<bool>, Outcome)] = &[
        (Rejected(BreakerOpen), BreakerOpen, true,  Some(true),  Rejected(Shed)),
        (Rejected(BreakerOpen), BreakerOpen, true,  None,        Rejected(Shed)),
        (Rejected(BreakerOpen), BreakerOpen, false, Some(true),  Degraded(BreakerOpen)),
        (Failed(Timeout),       BreakerOpen, false, Some(true),  Degraded(BreakerOpen)),
        (Failed(Timeout),       BreakerOpen, false, Some(false), Failed(Timeout)),
        (Failed(Timeout),       BreakerOpen, false, None,        Failed(Timeout)),
    ];
    for (i, &(o, first, granted, hit, want)) in table.iter().enumerate() {
        assert_eq!(busy_answer(o, first, granted, hit), want, "row {i}");
    }
}

/// Cap 2 per second: windows [0 s, 1 s), [1 s, 2 s), …; a call at exactly 1 s is in window 1.
#[test]
fn busy_cap_windows_script() {
    let ms = |m: u64| SimTime(m * 1_000_000);
    let mut cap = BusyCap::new(Some(2));
    #[rustfmt::skip]
    let script: &[(u64, bool, u64)] = &[
        // (time ms, granted, used after)
        (0,    true,  1),
        (10,   true,  2),
        (999,  false, 2), // third in window 0
        (1000, true,  1), // window 1 starts exactly at 1 s
        (1500, true,  2),
        (1999, false, 2),
        (3500, true,  1), // window 2 had none; window 3 starts fresh
    ];
    for &(t, granted, used) in script {
        assert_eq!(cap.take(ms(t)), granted, "at {t} ms");
        assert_eq!(cap.used(), used, "used at {t} ms");
    }
    let mut free = BusyCap::new(None);
    for t in 0..100 {
        assert!(free.take(ms(t)));
    }
}

#[test]
fn trim_table() {
    let t = |keep: f64, max: Option<u32>| Trim { keep, max_prompt_tokens: max };
    #[rustfmt::skip]
    let table: &[(u32, Trim, u32)] = &[
        (1000, t(1.0, None),        1000),
        (1000, t(0.3, None),        300),  // 1000 × 0.3 = 300
        (999,  t(0.5, None),        499),  // 499.5 floored
        (1000, t(1.0, Some(200)),   200),
        (1000, t(0.3, Some(500)),   300),  // min(300, 500)
        (0,    t(0.3, Some(10)),    0),
    ];
    for (i, (p, trim, want)) in table.iter().enumerate() {
        assert_eq!(trim_prompt(*p, trim), *want, "row {i}");
    }
}

#[test]
fn specs_parse_with_defaults_and_ranges() {
    let f = spec(r#"Fallback(to: CallSite("small"))"#).unwrap();
    assert_eq!(f.on.len(), Reason::ALL.len() - 1);
    assert!(!f.on.contains(&BusinessError));
    assert_eq!(f.trim, None);
    let f = spec(
        r#"Fallback(on: ["breaker_open", "timeout"], to: CallSite("big-trim"), trim: Trim(keep: 0.25, max_prompt_tokens: Some(800)))"#,
    )
    .unwrap();
    assert_eq!(f.on, vec![BreakerOpen, Timeout]);
    assert_eq!(f.trim, Some(Trim { keep: 0.25, max_prompt_tokens: Some(800) }));
    let f = spec(r#"Fallback(to: Busy(max_per_second: Some(20), cache: "answers"))"#).unwrap();
    assert_eq!(f.to, FallbackTo::Busy { max_per_second: Some(20), cache: Some("answers".into()) });
    assert_eq!(spec("Fallback(to: Reject)").unwrap().to, FallbackTo::Reject);
    for (bad, says) in [
        (r#"Fallback(on: ["nope"], to: Reject)"#, "unknown reason \"nope\""),
        (r#"Fallback(on: [], to: Reject)"#, "at least one reason"),
        (r#"Fallback(to: CallSite("x"), trim: Trim(keep: 0.0))"#, "share in (0, 1]"),
        (r#"Fallback(to: CallSite("x"), trim: Trim(keep: 1.5))"#, "share in (0, 1]"),
        (r#"Fallback(to: Busy(max_per_second: Some(0)))"#, "≥ 1"),
        (r#"Fallback(to: Reject, colour: 1)"#, "colour"),
    ] {
        let e = spec(bad).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn chains_are_checked() {
    let to = |n: &str| FallbackSpec {
        on: vec![Timeout],
        to: FallbackTo::CallSite(n.into()),
        trim: None,
    };
    let busy = |c: Option<&str>| FallbackSpec {
        on: vec![Timeout],
        to: FallbackTo::Busy { max_per_second: None, cache: c.map(Into::into) },
        trim: None,
    };
    let run = |v: &[(&str, Option<FallbackSpec>)]| {
        let sites: Vec<SiteRef> =
            v.iter().map(|(n, f)| SiteRef { name: n, fallback: f.as_ref() }).collect();
        check_chains(&sites, &["answers"])
    };
    // gpt4 → gpt35 → local → busy: fine.
    assert_eq!(
        run(&[
            ("gpt4", Some(to("gpt35"))),
            ("gpt35", Some(to("local"))),
            ("local", Some(busy(Some("answers")))),
        ]),
        Ok(())
    );
    let err = |v: &[(&str, Option<FallbackSpec>)]| run(v).unwrap_err();
    assert_eq!(
        err(&[("a", Some(to("b"))), ("b", Some(to("a")))]),
        (0, "fallback.to".into(), "fallback chain a → b → a is a cycle".into())
    );
    assert_eq!(
        err(&[("a", Some(to("a")))]),
        (0, "fallback.to".into(), "fallback chain a → a is a cycle".into())
    );
    assert_eq!(
        err(&[("a", Some(to("zz")))]),
        (0, "fallback.to".into(), "no call site named \"zz\"; call sites: [a]".into())
    );
    // A dangling reference further down the chain than the site walked from (the fuzzer's
    // find: it used to panic walking from `a` before `b` was checked).
    assert_eq!(
        err(&[("a", Some(to("b"))), ("b", Some(to("zz")))]),
        (1, "fallback.to".into(), "no call site named \"zz\"; call sites: [a, b]".into())
    );
    assert_eq!(
        err(&[("a", Some(busy(Some("nope"))))]),
        (0, "fallback.to.cache".into(), "no cache named \"nope\"; caches: [answers]".into())
    );
    let trimmed_busy =
        FallbackSpec { trim: Some(Trim { keep: 0.5, max_prompt_tokens: None }), ..busy(None) };
    assert_eq!(err(&[("a", Some(trimmed_busy))]).1, "fallback.trim");
    // Six sites in a row = five hops > MAX_HOPS (4).
    let long: Vec<(&str, Option<FallbackSpec>)> = vec![
        ("s0", Some(to("s1"))),
        ("s1", Some(to("s2"))),
        ("s2", Some(to("s3"))),
        ("s3", Some(to("s4"))),
        ("s4", Some(to("s5"))),
        ("s5", None),
    ];
    assert_eq!(
        err(&long),
        (
            0,
            "fallback.to".into(),
            "fallback chain s0 → s1 → s2 → s3 → s4 → s5 is longer than 4 hops".into()
        )
    );
    // Five sites (four hops) is the longest allowed.
    assert_eq!(run(&long[1..]), Ok(()));
}
