//! The rate limiter and thread-pool bulkhead imports, on the Resilience4j documentation's
//! own Spring Boot example (`experiments/examples/import/application.yml`, "Getting
//! Started" for Spring Boot 2) and on `configs` inheritance as the library resolves it.

use super::super::{Fragment, Options, import};

const DOCS: &str = include_str!("../../../experiments/examples/import/application.yml");

fn ok(text: &str, opts: Options) -> Fragment {
    match import(text, &opts) {
        Ok(f) => f,
        Err(ps) => panic!("{}", ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n")),
    }
}

fn errors(text: &str) -> Vec<String> {
    let e = import(text, &Options::default()).expect_err("refused");
    e.iter().map(|p| p.to_string()).collect()
}

/// The documented example: rate limiters `backendA` (10 per 1 s, `timeoutDuration: 0`, a
/// health indicator and an event buffer noted as ignored) and `backendB` (6 per 500 ms,
/// 3 s), the thread-pool bulkhead `backendC` (1 thread, queue 1). Only the breaker's Java
/// predicate is refused now.
#[test]
fn the_documented_example_imports_its_limiters() {
    let e = errors(DOCS);
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("recordFailurePredicate: not modelled"), "{e:?}");
    let f = ok(DOCS, Options { partial: true, ..Options::default() });
    let ron = f.to_ron();
    for want in [
        "rate_limiters: [\n    (\n        name: \"backendA\",\n        limit_for_period: 10,\n        limit_refresh_period: \"1s\",\n        timeout_duration: \"0s\",\n    ),",
        "        name: \"backendB\",\n        limit_for_period: 6,\n        limit_refresh_period: \"500ms\",\n        timeout_duration: \"3s\",\n",
        "thread_pool_bulkheads: [\n    (\n        name: \"backendC\",\n        max_thread_pool_size: 1,\n        core_thread_pool_size: 1,\n        queue_capacity: 1,\n    ),",
    ] {
        assert!(ron.contains(want), "{want}\nin\n{ron}");
    }
    let notes: Vec<String> = f.notes.iter().map(|n| n.to_string()).collect();
    for want in [
        "61:38: resilience4j.ratelimiter.instances.backendA.registerHealthIndicator: ignored",
        "62:38: resilience4j.ratelimiter.instances.backendA.eventConsumerBufferSize: ignored",
        "57:9: resilience4j.ratelimiter.instances.backendA: mode: Blocking",
    ] {
        assert!(notes.iter().any(|n| n.starts_with(want)), "{want} in {notes:?}");
    }
    // The scenario layer reads the fragment: its values are in range.
    let sc: crate::scenario::ScenarioSpec<crate::params::ParamValue> =
        ron::from_str(&f.as_scenario_text()).expect("the fragment deserializes");
    assert_eq!(sc.rate_limiters.len(), 2);
    assert_eq!(sc.thread_pool_bulkheads[0].queue_capacity, 1);
}

/// `createRateLimiterConfig` / `createThreadPoolBulkheadConfig`: an instance inherits its
/// `baseConfig` and, beneath every config but `default`, `configs.default`; the first layer
/// setting a property wins; `limiters` is the rate limiter's older name of `instances`.
#[test]
fn configs_are_inherited() {
    let y = "resilience4j.ratelimiter:
  configs:
    default:
      limitForPeriod: 10
      limitRefreshPeriod: 1s
      timeoutDuration: 0
    slow:
      timeoutDuration: 3s
  limiters:
    a:
      baseConfig: slow
    b:
      limitForPeriod: 6
resilience4j.thread-pool-bulkhead:
  configs:
    default:
      coreThreadPoolSize: 2
      maxThreadPoolSize: 4
      keepAliveDuration: 1s
  instances:
    c:
      queueCapacity: 10
";
    let ron = ok(y, Options::default()).to_ron();
    for want in [
        "name: \"a\",\n        timeout_duration: \"3s\",\n        limit_for_period: 10,\n        limit_refresh_period: \"1s\",",
        "name: \"b\",\n        limit_for_period: 6,\n        limit_refresh_period: \"1s\",\n        timeout_duration: \"0s\",",
        "name: \"c\",\n        queue_capacity: 10,\n        core_thread_pool_size: 2,\n        max_thread_pool_size: 4,\n        keep_alive_duration: \"1s\",",
    ] {
        assert!(ron.contains(want), "{want}\nin\n{ron}");
    }
}

/// The library's own refusals, at the configuration's position; the host-dependent default
/// pool sizes must be written; an unknown property is named with a suggestion.
#[test]
fn bad_values_are_named() {
    let e = errors("resilience4j.ratelimiter.instances.a.limitForPeriod: 0\n");
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with(
            "1:54: resilience4j.ratelimiter.instances.a.limitForPeriod: limitForPeriod must be ≥ 1"
        ),
        "{e:?}"
    );
    let e = errors(
        "resilience4j.thread-pool-bulkhead.instances.c:\n  coreThreadPoolSize: 1\n  maxThreadPoolSize: 1\n  queueCapacity: 0\n",
    );
    assert_eq!(e.len(), 1);
    assert!(e[0].starts_with("4:18: resilience4j.thread-pool-bulkhead.instances.c.queueCapacity: queueCapacity must be ≥ 1"), "{e:?}");
    let e = errors("resilience4j.thread-pool-bulkhead.instances.c.queueCapacity: 5\n");
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e.iter().all(|m| m.contains("is not set: Resilience4j's default is the JVM host's")));
    let e = errors("resilience4j.ratelimiter.instances.a.limitForPeriods: 5\n");
    assert!(e[0].contains("unknown property; did you mean `limitForPeriod`?"), "{e:?}");
}
