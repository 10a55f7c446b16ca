//! Unit tests of the readers, the inheritance and the RON writer; the libraries' documented
//! examples are imported, run and explained in experiments' tests (`suite::import`).

use super::*;

fn ok(text: &str, opts: Options) -> Fragment {
    match import(text, &opts) {
        Ok(f) => f,
        Err(ps) => panic!("{}", ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")),
    }
}

fn errors(text: &str, opts: Options) -> Vec<String> {
    import(text, &opts).expect_err("refused").iter().map(|p| p.to_string()).collect()
}

fn r4j() -> Options {
    Options::default()
}

/// Spring Boot's duration styles (`DurationStyle.detectAndParse`): simple with a unit, a
/// bare number of milliseconds, ISO-8601; a fraction in the simple style is refused as
/// Spring refuses it.
#[test]
fn spring_durations() {
    let cases = [
        ("10s", "\"10s\""),
        ("500ms", "\"500ms\""),
        ("2M", "\"2m\""),
        ("1000", "\"1s\""),
        ("PT1S", "\"1s\""),
        ("PT0.5S", "\"500ms\""),
        ("P1DT2H", "\"26h\""),
        ("pt1m30s", "\"90s\""),
    ];
    for (written, ron) in cases {
        let y = format!("resilience4j.timelimiter.instances.t.timeoutDuration: {written}\n");
        let f = ok(&y, r4j());
        assert!(
            f.to_ron().contains(&format!("timeout_duration: {ron},")),
            "{written}: {}",
            f.to_ron()
        );
    }
    for bad in ["1.5s", "10 seconds", "PT", "-1s", "10x"] {
        let y = format!("resilience4j.timelimiter.instances.t.timeoutDuration: {bad}\n");
        let e = errors(&y, r4j());
        assert!(
            e[0].starts_with(
                "1:55: resilience4j.timelimiter.instances.t.timeoutDuration: expected a duration"
            ),
            "{bad}: {e:?}"
        );
    }
}

/// Relaxed binding: kebab-case, camelCase and snake_case, nested or dotted keys, are one
/// property; the fragments are identical.
#[test]
fn relaxed_names_are_one_property() {
    let texts = [
        "resilience4j.retry.instances.a.max-attempts: 4\n",
        "resilience4j:\n  retry:\n    instances:\n      a:\n        maxAttempts: 4\n",
        "resilience4j.retry:\n  instances.a.max_attempts: 4\n",
    ];
    // The notes (comments) carry each text's own positions; the lists are compared.
    let lists = |t: &str| -> String {
        ok(t, r4j())
            .to_ron()
            .lines()
            .filter(|l| !l.starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let rons: Vec<String> = texts.iter().map(|t| lists(t)).collect();
    assert!(rons[0].contains("max_attempts: 4,"), "{}", rons[0]);
    assert!(rons.iter().all(|r| *r == rons[0]), "{rons:?}");
}

/// Inheritance as the library resolves it: a breaker without `baseConfig` takes the config
/// of its own name before `default`; a retry's named base has `default` beneath it; a
/// breaker's does not; the instance wins over every config.
#[test]
fn base_config_inheritance() {
    let y = "\
resilience4j.circuitbreaker:
  configs:
    default: {slidingWindowSize: 7, minimumNumberOfCalls: 3}
    shared: {failureRateThreshold: 30}
    own: {slidingWindowSize: 9}
  instances:
    plain: {permittedNumberOfCallsInHalfOpenState: 2}
    based: {baseConfig: shared}
    own: {failureRateThreshold: 40}
resilience4j.retry:
  configs:
    default: {maxAttempts: 5}
    shared: {waitDuration: 1s}
  instances:
    r: {baseConfig: shared}
";
    let ron = ok(y, r4j()).to_ron();
    let item = |name: &str| {
        let start = ron.find(&format!("name: \"{name}\"")).unwrap();
        ron[start..].split("\n    ),\n").next().unwrap().to_string()
    };
    let plain = item("plain");
    assert!(
        plain.contains("sliding_window_size: 7") && plain.contains("minimum_number_of_calls: 3")
    );
    let based = item("based");
    assert!(
        based.contains("failure_rate_threshold: 30.0") && !based.contains("sliding_window_size"),
        "{based}"
    );
    let own = item("own");
    assert!(own.contains("sliding_window_size: 9") && own.contains("failure_rate_threshold: 40.0"));
    assert!(!own.contains("minimum_number_of_calls"), "{own}");
    let r = item("r");
    assert!(r.contains("max_attempts: 5") && r.contains("wait_duration: \"1s\""), "{r}");
}

#[test]
fn circular_and_missing_base_configs_are_errors() {
    let y = "resilience4j.retry.configs.a.baseConfig: b\nresilience4j.retry.configs.b.baseConfig: a\nresilience4j.retry.instances.x.baseConfig: a\n";
    let e = errors(y, r4j());
    assert_eq!(
        e,
        ["2:42: resilience4j.retry.configs.b.baseConfig: circular baseConfig through `a`"]
    );
    let y = "resilience4j.retry.instances.x.baseConfig: nope\n";
    assert_eq!(
        errors(y, r4j()),
        ["1:44: resilience4j.retry.instances.x.baseConfig: no `configs.nope` to inherit from"]
    );
}

/// Unsupported fields are refused with their path, or left out and listed with `partial`;
/// inert fields are noted, never dropped silently.
#[test]
fn unsupported_and_ignored_are_named() {
    let y = "resilience4j.circuitbreaker.instances.api.recordFailurePredicate: a.B\nresilience4j.bulkhead.instances.api:\n  maxConcurrentCalls: 3\n  eventConsumerBufferSize: 9\n";
    let e = errors(y, r4j());
    assert_eq!(e.len(), 1);
    let at = "1:67: resilience4j.circuitbreaker.instances.api.recordFailurePredicate";
    assert!(e[0].starts_with(&format!("{at}: not modelled: ")), "{e:?}");
    let f = ok(y, Options { partial: true, ..r4j() });
    let notes: Vec<String> = f.notes.iter().map(|n| n.to_string()).collect();
    assert!(notes[0].starts_with(&format!("{at}: left out (partial import)")), "{notes:?}");
    assert!(notes[1].starts_with(
        "4:28: resilience4j.bulkhead.instances.api.eventConsumerBufferSize: ignored:"
    ));
    assert!(
        f.to_ron().starts_with("// 1:67: resilience4j.circuitbreaker"),
        "the notes head the fragment"
    );
    assert!(f.to_ron().contains("permits: 3,"));
}

/// Every fragment value knows the configuration's path and line:column it came from.
#[test]
fn origins_point_at_the_configuration() {
    let y = "resilience4j:\n  circuitbreaker:\n    instances:\n      b:\n        failure-rate-threshold: 150\n";
    let f = ok(y, r4j());
    let o = f.origin("circuit_breakers[0].failure_rate_threshold").unwrap();
    assert_eq!(
        (o.path.as_str(), o.at),
        (
            "resilience4j.circuitbreaker.instances.b.failure-rate-threshold",
            Pos { line: 5, col: 33 }
        )
    );
    let o = f.origin("circuit_breakers[0].no_such_field").unwrap();
    assert_eq!(o.path, "resilience4j.circuitbreaker.instances.b");
}

/// Sentinel JSON with comments (fastjson reads them): positions after a comment stay true;
/// codes outside `RuleConstant`'s are refused with the choices.
#[test]
fn sentinel_comments_and_codes() {
    let j = "/* rules\n   pushed */ [\n // one\n {\"resource\": \"a\", \"count\": 5, \"grade\": 7}\n]\n";
    let e = errors(j, Options::default());
    assert_eq!(e, ["4:41: [0].grade: expected one of 0 (THREAD), 1 (QPS), found 7"]);
    let j = "[{\"resource\": \"a/b\", \"count\": 5, \"strategy\": 1, \"refResource\": \"c\"}]";
    let e = errors(j, Options::default());
    assert!(e[0].starts_with("1:46: [0].strategy: not modelled: flow strategy RELATE"), "{e:?}");
    let f = ok("[{\"resource\": \"a/b\", \"count\": 5}]", Options::default());
    assert!(f.to_ron().contains("name: \"a_b\",\n        resource: \"a/b\","), "{}", f.to_ron());
}

/// gRPC: attempts above 5 are 5 (noted); hedging is refused; status codes by name or
/// number; required fields named.
#[test]
fn grpc_policies() {
    let j = r#"{"methodConfig": [{"name": [{"service": "s"}], "retryPolicy": {"maxAttempts": 7,
        "initialBackoff": ".01s", "maxBackoff": "1s", "backoffMultiplier": 1.5,
        "retryableStatusCodes": [14, "deadline_exceeded", "NOT_FOUND"]}}]}"#;
    let f = ok(j, Options::default());
    let ron = f.to_ron();
    assert!(ron.contains("max_attempts: 5,") && ron.contains("wait_duration: \"10ms\","), "{ron}");
    assert!(
        ron.contains(
            r#"retry_on: ["upstream_5xx", "connect_error", "stream_interrupted", "timeout"]"#
        ),
        "{ron}"
    );
    let notes: Vec<String> = f.notes.iter().map(|n| n.to_string()).collect();
    assert!(notes.iter().any(|n| n.contains("maxAttempts: ignored: above 5")), "{notes:?}");
    assert!(notes.iter().any(|n| {
        n.contains("retryableStatusCodes[2]: ignored: no simulated outcome carries NOT_FOUND")
    }));
    let j = r#"{"methodConfig": [{"retryPolicy": {"maxAttempts": 2}, "hedgingPolicy": {}}]}"#;
    let e = errors(j, Options::default());
    assert!(
        e.iter().any(|e| e.contains(
            "methodConfig[0].hedgingPolicy: retryPolicy and hedgingPolicy are mutually exclusive"
        )),
        "{e:?}"
    );
    assert!(e.iter().any(|e| e.contains("missing field `initialBackoff`")), "{e:?}");
}

/// gRPC hedging (gRFC A6): attempts capped at 5, the delay, non-fatal codes as reasons
/// (none when absent: every failure is fatal), the channel's throttle as the budget.
#[test]
fn grpc_hedging_policy() {
    let j = r#"{"methodConfig": [{"name": [{"service": "s"}], "hedgingPolicy": {"maxAttempts": 7,
        "hedgingDelay": "0.05s", "nonFatalStatusCodes": ["UNAVAILABLE"]}},
        {"name": [{"service": "t"}], "hedgingPolicy": {"maxAttempts": 2}}],
        "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#;
    let f = ok(j, Options::default());
    let ron = f.to_ron();
    for want in [
        "hedges: [",
        "max_attempts: 5,",
        "hedging_delay: \"50ms\",",
        "non_fatal: [\"upstream_5xx\", \"connect_error\"",
        "non_fatal: [],",
        "budget: GrpcTokenBucket(",
    ] {
        assert!(ron.contains(want), "{want:?} in {ron}");
    }
    let e = errors(
        r#"{"methodConfig": [{"hedgingPolicy": {"hedgingDelay": "1s"}}]}"#,
        Options::default(),
    );
    assert!(e.iter().any(|e| e.contains("missing field `maxAttempts`")), "{e:?}");
}

#[test]
fn formats_are_told_apart() {
    let f = |t: &str| import(t, &Options { partial: true, ..Options::default() }).map(|f| f.format);
    assert_eq!(f("resilience4j.retry.instances.a.maxAttempts: 2"), Ok(Some(Format::Resilience4j)));
    assert_eq!(f("[]"), Ok(Some(Format::Sentinel)));
    assert_eq!(f("{\"degradeRules\": []}"), Ok(Some(Format::Sentinel)));
    assert_eq!(
        f("{\"retryThrottling\": {\"maxTokens\": 1, \"tokenRatio\": 0.5}}"),
        Ok(Some(Format::Grpc))
    );
    let e = import("spring.application.name: x", &Options::default()).unwrap_err();
    assert!(e[0].message.starts_with("cannot tell the format"));
    let e = import("a: 1\n---\nb: 2\n", &Options::default()).unwrap_err();
    assert_eq!(
        e[0].to_string(),
        "2:1: several YAML documents (`---`, e.g. Spring profiles): import reads one; put the profile you mean in its own file"
    );
}

/// Aliases are expanded within a bound: a "billion laughs" document is refused, not
/// expanded.
#[test]
fn alias_expansion_is_bounded() {
    let mut y = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..8 {
        let p = i - 1;
        y.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let e = import(&y, &Options::default()).unwrap_err();
    assert!(e[0].message.contains("more than 1000000 values"), "{:?}", e[0]);
}

/// A setting the library reads only under another is noted when that one is missing, never
/// dropped silently.
#[test]
fn settings_read_only_under_another_are_noted() {
    let y = "resilience4j.retry.instances.r:\n  enableExponentialBackoff: true\n  exponentialBackoffMultiplier: 3\nresilience4j.circuitbreaker.instances.b:\n  waitDurationInOpenState: 5s\n  randomizedWaitFactor: 0.2\n";
    let f = ok(y, r4j());
    let notes: Vec<String> = f.notes.iter().map(|n| n.to_string()).collect();
    assert!(notes.contains(&"2:29: resilience4j.retry.instances.r.enableExponentialBackoff: ignored: Resilience4j applies it only with waitDuration set".to_string()), "{notes:?}");
    assert!(notes.contains(&"3:33: resilience4j.retry.instances.r.exponentialBackoffMultiplier: ignored: Resilience4j applies it only with waitDuration set".to_string()), "{notes:?}");
    assert!(notes.contains(&"6:25: resilience4j.circuitbreaker.instances.b.randomizedWaitFactor: ignored: its policy is not enabled".to_string()), "{notes:?}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
    /// Bad input is an error, never a panic: text made of YAML's and JSON's structural
    /// characters and the names the importers read, in every format.
    #[test]
    fn any_text_is_an_answer_never_a_panic(
        text in "([a-zA-Z0-9 .:,\\-\\[\\]{}\"'#&*!|>/\\n]|resilience4j|instances|configs|baseConfig|methodConfig|retryPolicy|resource|count|paramIdx|PT1S|10ms){0,40}",
        format in 0usize..5,
        partial in proptest::bool::ANY,
    ) {
        let format = [None, Some(Format::Resilience4j), Some(Format::Sentinel), Some(Format::Grpc), Some(Format::Hpa)][format];
        let opts = Options { format, partial, hot_param: Some(HotParam::Key) };
        if let Ok(f) = import(&text, &opts) {
            let _ = f.to_ron();
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    /// Resilience4j-shaped text with any property and value: an answer, never a panic; when
    /// it imports, every component's fields have an origin in the text.
    #[test]
    fn resilience4j_shaped_text_never_panics(
        lines in proptest::collection::vec((
            proptest::sample::select(vec!["circuitbreaker", "retry", "bulkhead", "timelimiter", "ratelimiter", "thread-pool-bulkhead", "cache"]),
            proptest::sample::select(vec!["instances", "configs", "backends", "retryAspectOrder"]),
            proptest::sample::select(vec!["a", "b", "default", "x.y"]),
            proptest::sample::select(vec!["baseConfig", "failureRateThreshold", "wait-duration-in-open-state", "maxAttempts", "waitDuration", "enableExponentialBackoff", "enableRandomizedWait", "exponentialMaxWaitDuration", "retryExceptions", "recordExceptions", "maxConcurrentCalls", "timeoutDuration", "initialState", "slidingWindowType", "registerHealthIndicator", "nonsense"]),
            proptest::sample::select(vec!["0", "1", "150", "10s", "PT1S", "true", "a", "b", "default", "-1", "[java.io.IOException]", "OPEN", "TIME_BASED", "1e300", ""]),
        ), 0..12),
        partial in proptest::bool::ANY,
    ) {
        let text: String = lines
            .iter()
            .map(|(m, s, n, p, v)| format!("resilience4j.{m}.{s}.{n}.{p}: {v}\n"))
            .collect();
        let opts = Options { partial, ..Options::default() };
        if let Ok(f) = import(&text, &opts) {
            for (list, names) in f.names() {
                for i in 0..names.len() {
                    let path = format!("{list}[{i}].name");
                    proptest::prop_assert!(f.origin(&path).is_some(), "{}", path);
                }
            }
        }
    }
}
