//! A gRPC service config (JSON, gRFC A6 and grpc-java's `ServiceConfigUtil`) → `retries`
//! (one per `methodConfig` with a `retryPolicy`) and `time_limiters` (its `timeout`).
//!
//! * `retryPolicy`: `maxAttempts` (> 1; above 5 it is 5, as grpc caps it), exponential
//!   backoff `initialBackoff · backoffMultiplier^(n−1)` capped at `maxBackoff` with full
//!   jitter (gRFC A6: the n-th retry after `random(0, that)`), `retryableStatusCodes` →
//!   the reasons of the status table (docs/import.md).
//! * `retryThrottling` (`maxTokens`, `tokenRatio`) → the `GrpcTokenBucket` budget of every
//!   imported retry (one bucket per retry governor; gRPC keeps one per channel).
//! * `timeout` → a time limiter: the deadline of the whole call, retries included, so it
//!   goes above the retry in the call site's stack.
//! * `hedgingPolicy` → a hedge (`hedges`): `maxAttempts` (> 1, capped at 5 as for retries),
//!   `hedgingDelay` (default 0: every attempt at once), `nonFatalStatusCodes` (default
//!   none: any failure is fatal, gRFC A6) → `non_fatal`; `retryThrottling` gates hedges as
//!   it gates retries (gRFC A6, "Throttling Retry Attempts and Hedged RPCs"). A
//!   methodConfig with both policies is refused, as gRPC refuses it.
//! * Load balancing and health checking are not modelled.

use super::exceptions;
use super::read::{self, norm, origin};
use super::{Cx, Item, Kind, Node, Origin, Val};

/// Top-level keys of a service config (relaxed).
pub(crate) const TOP_KEYS: [&str; 5] = [
    "methodconfig",
    "retrythrottling",
    "loadbalancingconfig",
    "loadbalancingpolicy",
    "healthcheckconfig",
];

/// gRPC's cap on attempts (gRFC A6: larger values are treated as 5).
const MAX_ATTEMPTS: u64 = 5;

pub(crate) fn import(doc: &Node, cx: &mut Cx) {
    let entries = match read::entries("", doc) {
        Ok(e) => e,
        Err(p) => return cx.fail(p),
    };
    let throttle = entries.iter().find(|(k, _)| norm(&k.text) == "retrythrottling");
    let budget = throttle.and_then(|(k, v)| throttling(cx, &k.text, v));
    let mut retries = 0;
    for (k, v) in entries {
        match norm(&k.text).as_str() {
            "methodconfig" => {
                let Kind::Seq(list) = &v.kind else {
                    cx.error(&k.text, v.at, format!("expected an array, found {}", v.what()));
                    continue;
                };
                for (i, mc) in list.iter().enumerate() {
                    retries += method_config(cx, &format!("{}[{i}]", k.text), mc, budget.as_ref());
                }
            }
            "retrythrottling" => {}
            "loadbalancingconfig" | "loadbalancingpolicy" => {
                cx.unsupported(&k.text, k.at, "load balancing across backends".into())
            }
            "healthcheckconfig" => {
                cx.unsupported(&k.text, k.at, "client-side health checking".into())
            }
            _ => cx.error(
                &k.text,
                k.at,
                "unknown field: expected methodConfig, retryThrottling".into(),
            ),
        }
    }
    if let Some((k, _)) = throttle {
        if retries == 0 {
            cx.ignore(&k.text, k.at, "no retryPolicy or hedgingPolicy to throttle");
        } else if retries > 1 {
            cx.ignore(
                &k.text,
                k.at,
                "each imported retry gets its own token bucket (gRPC: one per channel)",
            );
        }
    }
}

/// `retryThrottling` → `GrpcTokenBucket(max_tokens, token_ratio)`, with its origins.
fn throttling(cx: &mut Cx, path: &str, v: &Node) -> Option<(Val, Vec<(String, Origin)>)> {
    let entries = match read::entries(path, v) {
        Ok(e) => e,
        Err(p) => {
            cx.fail(p);
            return None;
        }
    };
    let mut f = Vec::new();
    let mut origins = vec![(String::new(), origin(path, v))];
    for (k, n) in entries {
        let p = read::join(path, &k.text);
        let field = match norm(&k.text).as_str() {
            "maxtokens" => "max_tokens",
            "tokenratio" => "token_ratio",
            _ => {
                cx.error(&p, k.at, "unknown field: expected maxTokens, tokenRatio".into());
                continue;
            }
        };
        match read::float(&p, n) {
            Ok(x) => {
                f.push((field, Val::Float(x)));
                origins.push((field.into(), origin(&p, n)));
            }
            Err(e) => cx.fail(e),
        }
    }
    if f.len() < 2 {
        cx.error(path, v.at, "retryThrottling needs both maxTokens and tokenRatio".into());
        return None;
    }
    Some((Val::Struct("GrpcTokenBucket", f), origins))
}

/// The component name of a method config: its first `name` entry (`service`, `method`).
fn method_name(cx: &mut Cx, path: &str, mc: &Node) -> String {
    let first = read::entries(path, mc)
        .ok()
        .and_then(|e| e.iter().find(|(k, _)| norm(&k.text) == "name").map(|(_, v)| v))
        .and_then(|v| match &v.kind {
            Kind::Seq(items) => items.first(),
            _ => None,
        });
    let Some(first) = first else { return "default".into() };
    let names = read::entries(path, mc)
        .ok()
        .and_then(|e| e.iter().find(|(k, _)| norm(&k.text) == "name"))
        .map(|(k, v)| (k, matches!(&v.kind, Kind::Seq(items) if items.len() > 1)));
    if let Some((k, true)) = names {
        let why = "several methods: one component, named after the first; put it in each of their call sites";
        cx.ignore(&read::join(path, &k.text), k.at, why);
    }
    let mut parts = Vec::new();
    for (k, v) in read::entries(path, first).unwrap_or(&[]) {
        let n = norm(&k.text);
        if (n == "service" || n == "method")
            && let Some(t) = v.scalar().filter(|t| !t.is_empty())
        {
            parts.push(t.to_string());
        }
    }
    if parts.is_empty() {
        cx.ignore(path, mc.at, "named `default`: it applies to every method");
        return "default".into();
    }
    read::component_name(&parts.join("_"))
}

/// One `methodConfig` entry; returns how many retries it added (0 or 1).
fn method_config(
    cx: &mut Cx,
    path: &str,
    mc: &Node,
    budget: Option<&(Val, Vec<(String, Origin)>)>,
) -> usize {
    let entries = match read::entries(path, mc) {
        Ok(e) => e,
        Err(p) => {
            cx.fail(p);
            return 0;
        }
    };
    let name = method_name(cx, path, mc);
    let mut added = 0;
    for (k, v) in entries {
        let p = read::join(path, &k.text);
        match norm(&k.text).as_str() {
            "name" => {}
            "retrypolicy" => {
                if let Some(mut it) = retry_policy(cx, &p, v, &name) {
                    if let Some((b, origins)) = budget {
                        it.set("budget", b.clone(), origins[0].1.clone());
                        for (sub, o) in origins.iter().skip(1) {
                            it.origin_of(format!("budget.{sub}"), o.clone());
                        }
                    }
                    cx.frag.push(it);
                    added = 1;
                }
            }
            "timeout" => match read::proto_duration(&p, v) {
                Ok(d) => {
                    let mut it = Item::new("time_limiters", &name, origin(&p, v));
                    it.set("timeout_duration", Val::Dur(d), origin(&p, v));
                    cx.frag.push(it);
                }
                Err(e) => cx.fail(e),
            },
            "hedgingpolicy" if entries_have(mc, "retrypolicy") => cx.error(
                &p,
                k.at,
                "retryPolicy and hedgingPolicy are mutually exclusive (gRFC A6)".into(),
            ),
            "hedgingpolicy" => {
                if let Some(mut it) = hedging_policy(cx, &p, v, &name) {
                    if let Some((b, origins)) = budget {
                        it.set("budget", b.clone(), origins[0].1.clone());
                    }
                    cx.frag.push(it);
                    added = 1;
                }
            }
            "waitforready" => {
                cx.unsupported(&p, k.at, "waiting for a ready connection (waitForReady)".into())
            }
            "maxrequestmessagebytes" | "maxresponsemessagebytes" => {
                cx.ignore(&p, k.at, "message sizes are not simulated")
            }
            _ => cx.error(&p, k.at, "unknown field of a methodConfig".into()),
        }
    }
    added
}

/// `maxAttempts` of either policy: > 1, above 5 treated as 5 (gRFC A6).
fn max_attempts(cx: &mut Cx, it: &mut Item, p: &str, n: &Node, o: Origin) {
    match read::uint(p, n) {
        Ok(a) if a < 2 => cx.error(p, n.at, "maxAttempts must be > 1 (gRFC A6)".into()),
        Ok(a) => {
            if a > MAX_ATTEMPTS {
                cx.ignore(p, n.at, "above 5: gRPC treats it as 5");
            }
            it.set("max_attempts", Val::Int(a.min(MAX_ATTEMPTS)), o);
        }
        Err(e) => cx.fail(e),
    }
}

/// Whether a methodConfig has the field `key` (relaxed).
fn entries_have(mc: &Node, key: &str) -> bool {
    read::entries("", mc).is_ok_and(|e| e.iter().any(|(k, _)| norm(&k.text) == key))
}

/// `hedgingPolicy` → a hedge (the module doc).
fn hedging_policy(cx: &mut Cx, path: &str, v: &Node, name: &str) -> Option<Item> {
    let entries = match read::entries(path, v) {
        Ok(e) => e,
        Err(p) => {
            cx.fail(p);
            return None;
        }
    };
    let mut it = Item::new("hedges", name, origin(path, v));
    // gRFC A6: no nonFatalStatusCodes means every failure ends the hedged call.
    it.set("non_fatal", Val::List(Vec::new()), origin(path, v));
    for (k, n) in entries {
        let p = read::join(path, &k.text);
        let o = origin(&p, n);
        match norm(&k.text).as_str() {
            "maxattempts" => max_attempts(cx, &mut it, &p, n, o),
            "hedgingdelay" => match read::proto_duration(&p, n) {
                Ok(d) => it.set("hedging_delay", Val::Dur(d), o),
                Err(e) => cx.fail(e),
            },
            "nonfatalstatuscodes" => status_codes(cx, &mut it, &p, n, "non_fatal", false),
            _ => cx.error(&p, k.at, "unknown field of a hedgingPolicy".into()),
        }
    }
    if !it.has("max_attempts") {
        cx.error(path, v.at, "missing field `maxAttempts` (required by gRFC A6)".into());
    }
    Some(it)
}

/// `retryPolicy` → a retry (the module doc).
fn retry_policy(cx: &mut Cx, path: &str, v: &Node, name: &str) -> Option<Item> {
    let entries = match read::entries(path, v) {
        Ok(e) => e,
        Err(p) => {
            cx.fail(p);
            return None;
        }
    };
    let mut it = Item::new("retries", name, origin(path, v));
    let mut backoff: Vec<(&'static str, Val)> = Vec::new();
    for (k, n) in entries {
        let p = read::join(path, &k.text);
        let o = origin(&p, n);
        match norm(&k.text).as_str() {
            "maxattempts" => max_attempts(cx, &mut it, &p, n, o),
            "initialbackoff" | "maxbackoff" => match read::proto_duration(&p, n) {
                Ok(d) => {
                    let f = if norm(&k.text) == "initialbackoff" {
                        "wait_duration"
                    } else {
                        "exponential_max_wait_duration"
                    };
                    backoff.push((f, Val::Dur(d)));
                    it.origin_of(format!("backoff.{f}"), o);
                }
                Err(e) => cx.fail(e),
            },
            "backoffmultiplier" => match read::float(&p, n) {
                Ok(x) => {
                    backoff.push(("exponential_backoff_multiplier", Val::Float(x)));
                    it.origin_of("backoff.exponential_backoff_multiplier".into(), o);
                }
                Err(e) => cx.fail(e),
            },
            "retryablestatuscodes" => status_codes(cx, &mut it, &p, n, "retry_on", true),
            "perattemptrecvtimeout" => {
                cx.unsupported(&p, k.at, "a per-attempt receive timeout".into())
            }
            _ => cx.error(&p, k.at, "unknown field of a retryPolicy".into()),
        }
    }
    finish_retry(cx, &mut it, path, v, backoff);
    Some(it)
}

/// The required fields' checks, and the backoff and jitter of gRFC A6.
fn finish_retry(
    cx: &mut Cx,
    it: &mut Item,
    path: &str,
    v: &Node,
    mut backoff: Vec<(&'static str, Val)>,
) {
    let required = [("max_attempts", "maxAttempts"), ("retry_on", "retryableStatusCodes")];
    for (f, json) in required {
        if !it.has(f) {
            cx.error(path, v.at, format!("missing field `{json}` (required by gRFC A6)"));
        }
    }
    for (f, json) in [
        ("wait_duration", "initialBackoff"),
        ("exponential_max_wait_duration", "maxBackoff"),
        ("exponential_backoff_multiplier", "backoffMultiplier"),
    ] {
        if !backoff.iter().any(|(b, _)| *b == f) {
            cx.error(path, v.at, format!("missing field `{json}` (required by gRFC A6)"));
        }
    }
    // Field order of `Backoff::Exponential`.
    backoff.sort_by_key(|(f, _)| {
        ["wait_duration", "exponential_backoff_multiplier", "exponential_max_wait_duration"]
            .iter()
            .position(|x| x == f)
    });
    it.set("backoff", Val::Struct("Exponential", backoff), origin(path, v));
    it.set("jitter", Val::Struct("Full", Vec::new()), origin(path, v));
}

/// `retryableStatusCodes` → `retry_on`, `nonFatalStatusCodes` → `non_fatal` (names any
/// case, or numbers; only the retry's list must not be empty).
fn status_codes(
    cx: &mut Cx,
    it: &mut Item,
    p: &str,
    n: &Node,
    field: &'static str,
    required: bool,
) {
    let list = match read::strings(p, n) {
        Ok(l) => l,
        Err(e) => return cx.fail(e),
    };
    let mut reasons: Vec<&str> = Vec::new();
    for (i, (code, node)) in list.iter().enumerate() {
        let ip = format!("{p}[{i}]");
        match exceptions::grpc_code(code) {
            None => cx.error(&ip, node.at, format!("`{code}` is not a gRPC status code")),
            Some((name, [])) => {
                cx.ignore(&ip, node.at, &format!("no simulated outcome carries {name}"))
            }
            Some((_, rs)) => {
                for r in rs {
                    if !reasons.contains(r) {
                        reasons.push(r);
                    }
                }
            }
        }
    }
    if list.is_empty() && required {
        return cx.error(p, n.at, "retryableStatusCodes must not be empty (gRFC A6)".into());
    }
    it.set(field, Val::List(reasons.iter().map(|r| Val::Str((*r).into())).collect()), origin(p, n));
}
