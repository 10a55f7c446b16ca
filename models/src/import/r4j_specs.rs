//! Resilience4j's instance properties, inherited and merged ([`super::r4j`]), → the
//! stormglass specs' fields. Each property is read as the library's builder reads it (the
//! method named beside it).

use super::exceptions;
use super::r4j::{PropRef, classes};
use super::read::{self, origin};
use super::{Cx, Item, Origin, Val};

/// Fields with no effect on a simulated run.
const INERT: [(&str, &str); 8] = [
    ("registerhealthindicator", "a health indicator (observability only)"),
    ("allowhealthindicatortofail", "a health indicator (observability only)"),
    ("eventconsumerbuffersize", "an event buffer (observability only)"),
    ("writablestacktraceenabled", "stack traces (no effect on outcomes)"),
    ("ignoreclassbindingexceptions", "class binding of this configuration"),
    ("failaftermaxattempts", "which exception a caller sees after the last attempt"),
    ("subscribeforevents", "event subscription (observability only)"),
    ("contextpropagators", "context propagation to the pool's threads (no effect on timing)"),
];

/// Java classes the configuration names: a predicate or function cannot be imported.
const CODE: [&str; 7] = [
    "recordfailurepredicate",
    "recordresultpredicate",
    "ignoreexceptionpredicate",
    "retryexceptionpredicate",
    "resultpredicate",
    "intervalbifunction",
    "consumeresultbeforeretryattempt",
];

/// Reads a property with `f`, noting a failure; `None` when it failed.
pub(crate) fn get<T>(
    cx: &mut Cx,
    p: &PropRef,
    f: fn(&str, &super::Node) -> Result<T, super::Problem>,
) -> Option<T> {
    match f(&p.path, p.node) {
        Ok(v) => Some(v),
        Err(e) => {
            cx.fail(e);
            None
        }
    }
}

pub(crate) fn o(p: &PropRef) -> Origin {
    origin(&p.path, p.node)
}

/// Handles the properties every module shares; `true` when `p` was one.
pub(crate) fn common(cx: &mut Cx, p: &PropRef) -> bool {
    if let Some((_, why)) = INERT.iter().find(|(n, _)| *n == p.norm) {
        cx.ignore(&p.path, p.node.at, why);
        return true;
    }
    if CODE.contains(&p.norm.as_str()) {
        let what = "a Java class (predicate or function) decides it; list the outcomes it \
                    stands for by hand (record_exceptions / retry_on)";
        cx.unsupported(&p.path, p.node.at, what.into());
        return true;
    }
    false
}

/// Each module's properties, as the library names them (for "did you mean").
const CB_KNOWN: &[&str] = &[
    "failureRateThreshold",
    "slowCallRateThreshold",
    "slowCallDurationThreshold",
    "maxWaitDurationInHalfOpenState",
    "slidingWindowSize",
    "slidingWindowType",
    "minimumNumberOfCalls",
    "permittedNumberOfCallsInHalfOpenState",
    "automaticTransitionFromOpenToHalfOpenEnabled",
    "transitionToStateAfterWaitDuration",
    "waitDurationInOpenState",
    "enableExponentialBackoff",
    "exponentialBackoffMultiplier",
    "exponentialMaxWaitDurationInOpenState",
    "enableRandomizedWait",
    "randomizedWaitFactor",
    "recordExceptions",
    "ignoreExceptions",
    "initialState",
    "baseConfig",
];
const RETRY_KNOWN: &[&str] = &[
    "maxAttempts",
    "waitDuration",
    "enableExponentialBackoff",
    "exponentialBackoffMultiplier",
    "exponentialMaxWaitDuration",
    "enableRandomizedWait",
    "randomizedWaitFactor",
    "retryExceptions",
    "ignoreExceptions",
    "baseConfig",
];
const BULKHEAD_KNOWN: &[&str] =
    &["maxConcurrentCalls", "maxWaitDuration", "fairCallHandlingEnabled", "baseConfig"];
const TIME_LIMITER_KNOWN: &[&str] = &["timeoutDuration", "cancelRunningFuture", "baseConfig"];

pub(crate) fn unknown(cx: &mut Cx, p: &PropRef, known: &[&str]) {
    let near = known.iter().min_by_key(|k| read::edit_distance(&read::norm(k), &p.norm)).copied();
    let msg = match near.filter(|k| read::edit_distance(&read::norm(k), &p.norm) <= 3) {
        Some(k) => format!("unknown property; did you mean `{k}`?"),
        None => format!("unknown property: expected one of {}", known.join(", ")),
    };
    cx.error(&p.path, p.node.at, msg);
}

fn find<'a, 'n>(props: &'a [PropRef<'n>], n: &str) -> Option<&'a PropRef<'n>> {
    props.iter().find(|p| p.norm == n)
}

/// Notes each of `names` the layers set that the library does not read here.
fn unread(cx: &mut Cx, props: &[PropRef], names: &[&str], why: &str) {
    for n in names {
        if let Some(p) = find(props, n) {
            cx.ignore(&p.path, p.node.at, why);
        }
    }
}

const CB_EXPO: [&str; 2] =
    ["exponentialbackoffmultiplier", "exponentialmaxwaitdurationinopenstate"];
const RETRY_EXPO: [&str; 2] = ["exponentialbackoffmultiplier", "exponentialmaxwaitduration"];
const NOT_ENABLED: &str = "its policy is not enabled";

/// `CircuitBreakerConfig` via `CommonCircuitBreakerConfigurationProperties.buildConfig`.
pub(crate) fn circuit_breaker(cx: &mut Cx, name: &str, at: Origin, props: &[PropRef]) -> Item {
    let mut it = Item::new("circuit_breakers", name, at);
    open_wait(cx, &mut it, props);
    for p in props {
        if let Some((f, Some(v))) = cb_field(cx, &mut it, p) {
            it.set(f, v, o(p));
        }
    }
    it
}

/// One breaker property: the field it sets and its value (`None` when handled otherwise).
fn cb_field(cx: &mut Cx, it: &mut Item, p: &PropRef) -> Option<(&'static str, Option<Val>)> {
    match p.norm.as_str() {
        "failureratethreshold" => {
            Some(("failure_rate_threshold", get(cx, p, read::float).map(Val::Float)))
        }
        "slowcallratethreshold" => {
            Some(("slow_call_rate_threshold", get(cx, p, read::float).map(Val::Float)))
        }
        "slowcalldurationthreshold" => {
            Some(("slow_call_duration_threshold", get(cx, p, read::spring_duration).map(Val::Dur)))
        }
        "maxwaitdurationinhalfopenstate" => Some((
            "max_wait_duration_in_half_open_state",
            get(cx, p, read::spring_duration).map(Val::Dur),
        )),
        "slidingwindowsize" | "ringbuffersizeinclosedstate" => {
            Some(("sliding_window_size", get(cx, p, read::uint).map(Val::Int)))
        }
        "minimumnumberofcalls" => {
            Some(("minimum_number_of_calls", get(cx, p, read::uint).map(Val::Int)))
        }
        "permittednumberofcallsinhalfopenstate" | "ringbuffersizeinhalfopenstate" => Some((
            "permitted_number_of_calls_in_half_open_state",
            get(cx, p, read::uint).map(Val::Int),
        )),
        "automatictransitionfromopentohalfopenenabled" => Some((
            "automatic_transition_from_open_to_half_open_enabled",
            get(cx, p, read::boolean).map(Val::Bool),
        )),
        "slidingwindowtype" => {
            Some(("sliding_window_type", choice(cx, p, &["COUNT_BASED", "TIME_BASED"])))
        }
        "transitiontostateafterwaitduration" => {
            Some(("transition_to_state_after_wait_duration", choice(cx, p, &["OPEN", "CLOSED"])))
        }
        "recordexceptions" | "ignoreexceptions" => {
            let field = if p.norm == "recordexceptions" {
                "record_exceptions"
            } else {
                "ignore_exceptions"
            };
            let pats = classes(cx, p)
                .map(|rs| Val::List(rs.iter().map(|r| Val::Str(exceptions::pattern(r))).collect()));
            Some((field, pats))
        }
        "initialstate" => {
            initial_state(cx, it, p);
            None
        }
        "waitdurationinopenstate"
        | "waitinterval"
        | "enableexponentialbackoff"
        | "exponentialbackoffmultiplier"
        | "exponentialmaxwaitdurationinopenstate"
        | "enablerandomizedwait"
        | "randomizedwaitfactor" => None,
        _ if common(cx, p) => None,
        _ => {
            unknown(cx, p, CB_KNOWN);
            None
        }
    }
}

/// An enum property as Spring binds it (any case, `-` for `_`).
fn choice(cx: &mut Cx, p: &PropRef, choices: &[&'static str]) -> Option<Val> {
    let t = get(cx, p, |path, n| read::text(path, n).map(str::to_string))?;
    let up = t.trim().to_ascii_uppercase().replace('-', "_");
    match choices.iter().find(|c| **c == up) {
        Some(c) => Some(Val::Ident(c)),
        None => {
            cx.error(
                &p.path,
                p.node.at,
                format!("expected one of {}, found `{t}`", choices.join(", ")),
            );
            None
        }
    }
}

/// `initialState`: CLOSED (the default), or a state stormglass starts a breaker in.
fn initial_state(cx: &mut Cx, it: &mut Item, p: &PropRef) {
    let choices = ["CLOSED", "OPEN", "HALF_OPEN", "DISABLED", "METRICS_ONLY", "FORCED_OPEN"];
    let Some(Val::Ident(s)) = choice(cx, p, &choices) else { return };
    match s {
        "CLOSED" => {}
        "DISABLED" => it.set("disabled", Val::Bool(true), o(p)),
        "METRICS_ONLY" => it.set("metrics_only", Val::Bool(true), o(p)),
        "FORCED_OPEN" => it.set("forced_open", Val::Bool(true), o(p)),
        _ => cx.unsupported(&p.path, p.node.at, format!("starting a breaker {s}")),
    }
}

/// The open-state wait (`configureCircuitBreakerOpenStateIntervalFunction`): applied only
/// for `waitDurationInOpenState` > 0; exponential (`ofExponentialBackoff`) or randomized
/// (`ofRandomized`), never both.
fn open_wait(cx: &mut Cx, it: &mut Item, props: &[PropRef]) {
    let wait = find(props, "waitdurationinopenstate").or_else(|| find(props, "waitinterval"));
    let flag = |cx: &mut Cx, n: &str| {
        find(props, n).and_then(|p| get(cx, p, read::boolean).map(|b| (b, p)))
    };
    let expo = flag(cx, "enableexponentialbackoff");
    let rand = flag(cx, "enablerandomizedwait");
    let wait = wait.and_then(|p| get(cx, p, read::spring_duration).map(|d| (d, p)));
    let Some((d, wp)) = wait.filter(|(d, _)| d.0 >= sim_core::time::NS_PER_MS) else {
        let why = "Resilience4j applies it only with waitDurationInOpenState > 0";
        unread(
            cx,
            props,
            &["enableexponentialbackoff", "enablerandomizedwait", "randomizedwaitfactor"],
            why,
        );
        unread(cx, props, &CB_EXPO, why);
        if let Some(p) = find(props, "waitdurationinopenstate") {
            cx.ignore(&p.path, p.node.at, "Resilience4j keeps its default below 1 ms");
        }
        return;
    };
    it.set("wait_duration_in_open_state", Val::Dur(d), o(wp));
    match (expo, rand) {
        (Some((true, ep)), Some((true, rp))) => {
            let _ = ep;
            cx.error(&rp.path, rp.node.at, "exponential backoff and randomized wait cannot both be enabled (Resilience4j refuses it)".into());
        }
        (_, Some((true, rp))) => {
            cx.unsupported(&rp.path, rp.node.at, "a randomized open-state wait".into());
            unread(cx, props, &CB_EXPO, NOT_ENABLED);
        }
        (Some((true, ep)), _) => {
            it.set("enable_exponential_backoff", Val::Bool(true), o(ep));
            if let Some(p) = find(props, "exponentialbackoffmultiplier")
                && let Some(x) = get(cx, p, read::float)
            {
                it.set("exponential_backoff_multiplier", Val::Float(x), o(p));
            }
            if let Some(p) = find(props, "exponentialmaxwaitdurationinopenstate")
                && let Some(x) = get(cx, p, read::spring_duration)
            {
                it.set("exponential_max_wait_duration_in_open_state", Val::Dur(x), o(p));
            }
            unread(cx, props, &["randomizedwaitfactor"], NOT_ENABLED);
        }
        _ => {
            unread(cx, props, &CB_EXPO, NOT_ENABLED);
            unread(cx, props, &["randomizedwaitfactor"], NOT_ENABLED);
        }
    }
}

/// `RetryConfig` via `CommonRetryConfigurationProperties.buildConfig`.
pub(crate) fn retry(cx: &mut Cx, name: &str, at: Origin, props: &[PropRef]) -> Item {
    let mut it = Item::new("retries", name, at);
    retry_interval(cx, &mut it, props);
    retry_on(cx, &mut it, props);
    for p in props {
        match p.norm.as_str() {
            "maxattempts" | "maxretryattempts" => match get(cx, p, read::uint) {
                Some(0) => cx.error(&p.path, p.node.at, "maxAttempts must be ≥ 1".into()),
                Some(n) => it.set("max_attempts", Val::Int(n), o(p)),
                None => {}
            },
            "waitduration"
            | "enableexponentialbackoff"
            | "exponentialbackoffmultiplier"
            | "exponentialmaxwaitduration"
            | "enablerandomizedwait"
            | "randomizedwaitfactor"
            | "retryexceptions"
            | "ignoreexceptions" => {}
            _ if common(cx, p) => {}
            _ => unknown(cx, p, RETRY_KNOWN),
        }
    }
    it
}

/// `configureRetryIntervalFunction`: only with `waitDuration` set; exponential
/// (`ofExponentialBackoff`), randomized (`ofRandomized`) or both
/// (`ofExponentialRandomBackoff`), else fixed.
fn retry_interval(cx: &mut Cx, it: &mut Item, props: &[PropRef]) {
    let Some(wp) = find(props, "waitduration") else {
        let why = "Resilience4j applies it only with waitDuration set";
        unread(
            cx,
            props,
            &["enableexponentialbackoff", "enablerandomizedwait", "randomizedwaitfactor"],
            why,
        );
        return unread(cx, props, &RETRY_EXPO, why);
    };
    let Some(wait) = get(cx, wp, read::spring_duration) else { return };
    let on = |cx: &mut Cx, n: &str| {
        find(props, n).and_then(|p| get(cx, p, read::boolean)).unwrap_or(false)
    };
    let (expo, rand) = (on(cx, "enableexponentialbackoff"), on(cx, "enablerandomizedwait"));
    let backoff = if expo {
        let mut f = vec![("wait_duration", Val::Dur(wait))];
        if let Some(p) = find(props, "exponentialbackoffmultiplier")
            && let Some(x) = get(cx, p, read::float)
        {
            f.push(("exponential_backoff_multiplier", Val::Float(x)));
            it.origin_of("backoff.exponential_backoff_multiplier".into(), o(p));
        }
        if let Some(p) = find(props, "exponentialmaxwaitduration")
            && let Some(x) = get(cx, p, read::spring_duration)
        {
            f.push(("exponential_max_wait_duration", Val::Dur(x)));
            it.origin_of("backoff.exponential_max_wait_duration".into(), o(p));
        }
        Val::Struct("Exponential", f)
    } else {
        unread(cx, props, &RETRY_EXPO, NOT_ENABLED);
        Val::Struct("Fixed", vec![("wait_duration", Val::Dur(wait))])
    };
    it.set("backoff", backoff, o(wp));
    if !rand {
        unread(cx, props, &["randomizedwaitfactor"], NOT_ENABLED);
    }
    if rand {
        let mut f = Vec::new();
        if let Some(p) = find(props, "randomizedwaitfactor")
            && let Some(x) = get(cx, p, read::float)
        {
            f.push(("randomized_wait_factor", Val::Float(x)));
        }
        let p = find(props, "enablerandomizedwait").expect("read above");
        it.set("jitter", Val::Struct("Randomized", f), o(p));
    }
}

/// Reasons no retry may list in stormglass.
const NEVER_RETRIED: [&str; 2] = ["business_error", "breaker_open"];

/// `retryExceptions` (default: every exception) less `ignoreExceptions`.
fn retry_on(cx: &mut Cx, it: &mut Item, props: &[PropRef]) {
    let retry = find(props, "retryexceptions");
    let (mut reasons, at) = match retry {
        Some(p) => match classes(cx, p) {
            Some(r) => (r, o(p)),
            None => return,
        },
        None => (exceptions::ALL.to_vec(), it.origin.clone()),
    };
    if let Some(p) = find(props, "ignoreexceptions") {
        let Some(ignored) = classes(cx, p) else { return };
        reasons.retain(|r| !ignored.contains(r));
    }
    let never: Vec<&str> = reasons.iter().copied().filter(|r| NEVER_RETRIED.contains(r)).collect();
    if !never.is_empty() {
        let what = format!(
            "never retried in stormglass: {} (Resilience4j would retry them)",
            never.join(", ")
        );
        cx.ignore(&at.path, at.at, &what);
    }
    reasons.retain(|r| !NEVER_RETRIED.contains(r));
    it.set("retry_on", Val::List(reasons.iter().map(|r| Val::Str((*r).into())).collect()), at);
}

/// A semaphore `BulkheadConfig` (`CommonBulkheadConfigurationProperties`) as a gate:
/// `maxConcurrentCalls` (default 25), `maxWaitDuration` (default 0), fair hand-over.
pub(crate) fn bulkhead(cx: &mut Cx, name: &str, at: Origin, props: &[PropRef]) -> Item {
    let mut it = Item::new("gates", name, at.clone());
    it.set("permits", Val::Int(25), at.clone());
    it.set("acquire_timeout", Val::Dur(sim_core::SimDuration::ZERO), at);
    for p in props {
        match p.norm.as_str() {
            "maxconcurrentcalls" => {
                if let Some(n) = get(cx, p, read::uint) {
                    it.set("permits", Val::Int(n), o(p));
                }
            }
            "maxwaitduration" => {
                if let Some(d) = get(cx, p, read::spring_duration) {
                    it.set("acquire_timeout", Val::Dur(d), o(p));
                }
            }
            "faircallhandlingenabled" => {
                if let Some(b) = get(cx, p, read::boolean) {
                    it.set("fair", Val::Bool(b), o(p));
                }
            }
            _ if common(cx, p) => {}
            _ => unknown(cx, p, BULKHEAD_KNOWN),
        }
    }
    it
}

/// `TimeLimiterConfig` (`CommonTimeLimiterConfigurationProperties`).
pub(crate) fn time_limiter(cx: &mut Cx, name: &str, at: Origin, props: &[PropRef]) -> Item {
    let mut it = Item::new("time_limiters", name, at);
    for p in props {
        match p.norm.as_str() {
            "timeoutduration" => {
                if let Some(d) = get(cx, p, read::spring_duration) {
                    it.set("timeout_duration", Val::Dur(d), o(p));
                }
            }
            "cancelrunningfuture" => {
                if let Some(b) = get(cx, p, read::boolean) {
                    it.set("cancel_running_future", Val::Bool(b), o(p));
                }
            }
            _ if common(cx, p) => {}
            _ => unknown(cx, p, TIME_LIMITER_KNOWN),
        }
    }
    it
}
