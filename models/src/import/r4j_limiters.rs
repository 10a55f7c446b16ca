//! Resilience4j's `ratelimiter` and `thread-pool-bulkhead` instance properties, inherited and
//! merged ([`super::r4j`]), → `rate_limiters` and `thread_pool_bulkheads`. Each property is
//! read as the library's `buildConfig` reads it (the method named beside it).

use super::r4j::PropRef;
use super::r4j_specs::{common, get, o, unknown};
use super::read;
use super::{Cx, Item, Origin, Problem, Val};

const RATE_LIMITER_KNOWN: &[&str] =
    &["limitForPeriod", "limitRefreshPeriod", "timeoutDuration", "baseConfig"];
const THREAD_POOL_BULKHEAD_KNOWN: &[&str] = &[
    "coreThreadPoolSize",
    "maxThreadPoolSize",
    "queueCapacity",
    "keepAliveDuration",
    "baseConfig",
];

/// `RateLimiterConfig` via `CommonRateLimiterConfigurationProperties.buildConfig`:
/// `limitForPeriod` (`setLimitForPeriod` refuses < 1), `limitRefreshPeriod` (the builder
/// refuses < 1 ns: the spec's range), `timeoutDuration`. Which of the library's methods the
/// application calls is not in the configuration: a note says the import assumes the
/// decorators' `acquirePermission` (`mode: Blocking`).
pub(crate) fn rate_limiter(cx: &mut Cx, name: &str, at: Origin, props: &[PropRef]) -> Item {
    let mut it = Item::new("rate_limiters", name, at.clone());
    for p in props {
        match p.norm.as_str() {
            "limitforperiod" => match get(cx, p, read::int) {
                Some(n) if n < 1 => cx.error(
                    &p.path,
                    p.node.at,
                    format!("limitForPeriod must be ≥ 1 (Resilience4j: \"Illegal argument limitForPeriod: {n} is less than 1\")"),
                ),
                Some(n) => it.set("limit_for_period", Val::Int(n as u64), o(p)),
                None => {}
            },
            "limitrefreshperiod" => {
                if let Some(d) = get(cx, p, read::spring_duration) {
                    it.set("limit_refresh_period", Val::Dur(d), o(p));
                }
            }
            "timeoutduration" => {
                if let Some(d) = get(cx, p, read::spring_duration) {
                    it.set("timeout_duration", Val::Dur(d), o(p));
                }
            }
            _ if common(cx, p) => {}
            _ => unknown(cx, p, RATE_LIMITER_KNOWN),
        }
    }
    let note = "mode: Blocking (acquirePermission: the decorators and @RateLimiter on a \
                synchronous or CompletionStage method; a refused call waits timeoutDuration); \
                write `mode: Reactive` for a Reactor or RxJava method (refused at once)";
    cx.frag.notes.push(Problem::at(&at.path, at.at, note.into()));
    it
}

/// A `ThreadPoolBulkheadConfig` via `CommonThreadPoolBulkheadConfigurationProperties.buildConfig`:
/// `coreThreadPoolSize` and `maxThreadPoolSize` applied only when > 0, `queueCapacity` when
/// ≥ 0 (the builder refuses 0), `keepAliveDuration`. The library's defaults of the two sizes
/// are the JVM host's `availableProcessors` (− 1 for core), so they must be set.
pub(crate) fn thread_pool_bulkhead(cx: &mut Cx, name: &str, at: Origin, props: &[PropRef]) -> Item {
    let mut it = Item::new("thread_pool_bulkheads", name, at.clone());
    for p in props {
        let field = match p.norm.as_str() {
            "corethreadpoolsize" => "core_thread_pool_size",
            "maxthreadpoolsize" => "max_thread_pool_size",
            "queuecapacity" => "queue_capacity",
            "keepaliveduration" => {
                if let Some(d) = get(cx, p, read::spring_duration) {
                    it.set("keep_alive_duration", Val::Dur(d), o(p));
                }
                continue;
            }
            _ if common(cx, p) => continue,
            _ => {
                unknown(cx, p, THREAD_POOL_BULKHEAD_KNOWN);
                continue;
            }
        };
        let Some(n) = get(cx, p, read::int) else { continue };
        match (field, n) {
            ("queue_capacity", 0) => cx.error(
                &p.path,
                p.node.at,
                "queueCapacity must be ≥ 1 (Resilience4j: \"queueCapacity must be a positive \
                 integer value >= 1\")"
                    .into(),
            ),
            ("queue_capacity", n) if n < 0 => {
                cx.ignore(&p.path, p.node.at, "negative: Resilience4j keeps its default (100)")
            }
            (_, n) if n <= 0 && field != "queue_capacity" => cx.ignore(
                &p.path,
                p.node.at,
                "not above 0: Resilience4j keeps its default (availableProcessors)",
            ),
            _ => it.set(field, Val::Int(n as u64), o(p)),
        }
    }
    for (field, prop, default) in [
        ("core_thread_pool_size", "coreThreadPoolSize", "availableProcessors − 1 (at least 1)"),
        ("max_thread_pool_size", "maxThreadPoolSize", "availableProcessors"),
    ] {
        if !it.has(field) {
            let msg = format!(
                "`{prop}` is not set: Resilience4j's default is the JVM host's {default}; set it"
            );
            cx.error(&at.path, at.at, msg);
        }
    }
    it
}

#[cfg(test)]
#[path = "r4j_limiters_tests.rs"]
mod tests;
