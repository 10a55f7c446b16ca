//! One Sentinel rule's fields → a stormglass rule (`FlowRule`, `DegradeRule`) or a
//! `param_flow_rules` component. Codes are Sentinel's `RuleConstant`s.

use super::read::{self, origin};
use super::sentinel::RuleView;
use super::{Cx, HotParam, Item, Node, Origin, Problem, Val};

type Built = (Val, Vec<(String, Origin)>);

fn get<T>(cx: &mut Cx, p: &str, n: &Node, f: fn(&str, &Node) -> Result<T, Problem>) -> Option<T> {
    match f(p, n) {
        Ok(v) => Some(v),
        Err(e) => {
            cx.fail(e);
            None
        }
    }
}

/// A `RuleConstant` code among `choices` (code, name).
fn code(cx: &mut Cx, p: &str, n: &Node, choices: &[(i64, &'static str)]) -> Option<&'static str> {
    let c = get(cx, p, n, read::int)?;
    match choices.iter().find(|(k, _)| *k == c) {
        Some((_, name)) => Some(name),
        None => {
            let list: Vec<String> = choices.iter().map(|(k, n)| format!("{k} ({n})")).collect();
            cx.error(p, n.at, format!("expected one of {}, found {c}", list.join(", ")));
            None
        }
    }
}

/// Fields every rule has (`AbstractRule`, cluster mode); `true` when `key` was one.
fn common(cx: &mut Cx, r: &RuleView, key: &str, p: &str, n: &Node) -> bool {
    match key {
        "resource" => {}
        "limitapp" => {
            let t = read::text(p, n).unwrap_or("default").trim();
            if !(n.is_null() || t.is_empty() || t == "default") {
                cx.unsupported(
                    p,
                    n.at,
                    format!("a limit for the origin `{t}` (calls carry no origin)"),
                );
            }
        }
        "regex" => {
            if get(cx, p, n, read::boolean) == Some(true) {
                cx.unsupported(p, n.at, "a resource pattern (regex)".into());
            }
        }
        "clustermode" => {
            if get(cx, p, n, read::boolean) == Some(true) {
                cx.unsupported(p, n.at, "cluster mode: write `cluster_flow_rules` by hand".into());
            }
        }
        "clusterconfig" => {
            let cluster = r.get("clustermode").and_then(|(cp, cn)| read::boolean(&cp, cn).ok());
            if cluster != Some(true) {
                cx.ignore(p, n.at, "read only in cluster mode");
            }
        }
        _ => return false,
    }
    true
}

/// `FlowRule` → a stormglass `FlowRule`.
pub(crate) fn flow(cx: &mut Cx, r: &RuleView) -> Option<Built> {
    let mut f: Vec<(&'static str, Val)> = Vec::new();
    let mut origins = vec![(String::new(), Origin { path: r.path.clone(), at: r.at })];
    let mut count = false;
    for (key, p, n) in &r.fields {
        let (p, n) = (p.as_str(), *n);
        let v = match key.as_str() {
            "grade" => {
                code(cx, p, n, &[(0, "THREAD"), (1, "QPS")]).map(|c| ("grade", Val::Ident(c)))
            }
            "count" => {
                count = true;
                get(cx, p, n, read::float).map(|x| ("count", Val::Float(x)))
            }
            "controlbehavior" => code(
                cx,
                p,
                n,
                &[(0, "DEFAULT"), (1, "WARM_UP"), (2, "RATE_LIMITER"), (3, "WARM_UP_RATE_LIMITER")],
            )
            .map(|c| ("control_behavior", Val::Ident(c))),
            "warmupperiodsec" => {
                get(cx, p, n, read::uint).map(|x| ("warm_up_period_sec", Val::Int(x)))
            }
            "maxqueueingtimems" => {
                get(cx, p, n, read::uint).map(|x| ("max_queueing_time_ms", Val::Int(x)))
            }
            "strategy" => {
                match code(cx, p, n, &[(0, "DIRECT"), (1, "RELATE"), (2, "CHAIN")]) {
                    Some("DIRECT") | None => {}
                    Some(s) => cx.unsupported(
                        p,
                        n.at,
                        format!("flow strategy {s} (limits by another resource or entry)"),
                    ),
                }
                None
            }
            "refresource" => {
                if !n.is_null() && read::text(p, n).is_ok_and(|t| !t.is_empty()) {
                    cx.ignore(p, n.at, "read only by the RELATE and CHAIN strategies");
                }
                None
            }
            k if common(cx, r, k, p, n) => None,
            _ => {
                cx.error(p, n.at, "unknown field of a flow rule".into());
                None
            }
        };
        if let Some((name, v)) = v {
            f.push((name, v));
            origins.push((name.into(), origin(p, n)));
        }
    }
    if !count {
        cx.error(&r.path, r.at, "missing field `count`".into());
        return None;
    }
    Some((Val::Struct("", f), origins))
}

/// `DegradeRule` → a stormglass `DegradeRule` (named `degrade<i>` after its place).
pub(crate) fn degrade(cx: &mut Cx, r: &RuleView) -> Option<Built> {
    let idx: String =
        r.path.rsplit('[').next().unwrap_or("").chars().filter(char::is_ascii_digit).collect();
    let mut f: Vec<(&'static str, Val)> = vec![("name", Val::Str(format!("degrade{idx}")))];
    let mut origins = vec![(String::new(), Origin { path: r.path.clone(), at: r.at })];
    let mut grade = false;
    for (key, p, n) in &r.fields {
        let (p, n) = (p.as_str(), *n);
        let v = match key.as_str() {
            "grade" => {
                grade = true;
                code(cx, p, n, &[(0, "SLOW_REQUEST_RATIO"), (1, "ERROR_RATIO"), (2, "ERROR_COUNT")])
                    .map(|c| ("grade", Val::Ident(c)))
            }
            "count" => get(cx, p, n, read::float).map(|x| ("count", Val::Float(x))),
            "timewindow" => get(cx, p, n, read::uint).map(|x| ("time_window", Val::Int(x))),
            "minrequestamount" => {
                get(cx, p, n, read::uint).map(|x| ("min_request_amount", Val::Int(x)))
            }
            "statintervalms" => {
                get(cx, p, n, read::uint).map(|x| ("stat_interval_ms", Val::Int(x)))
            }
            "slowratiothreshold" => {
                get(cx, p, n, read::float).map(|x| ("slow_ratio_threshold", Val::Float(x)))
            }
            "passcount" => {
                cx.ignore(p, n.at, "removed in Sentinel 1.8 (no effect)");
                None
            }
            k if common(cx, r, k, p, n) => None,
            _ => {
                cx.error(p, n.at, "unknown field of a degrade rule".into());
                None
            }
        };
        if let Some((name, v)) = v {
            f.push((name, v));
            origins.push((name.into(), origin(p, n)));
        }
    }
    // `DegradeRule`'s defaults for the fields the scenario requires: grade RT (0), count 0,
    // timeWindow 0.
    if !grade {
        f.push(("grade", Val::Ident("SLOW_REQUEST_RATIO")));
    }
    for (k, v) in [("count", Val::Float(0.0)), ("time_window", Val::Int(0))] {
        if !f.iter().any(|(n, _)| *n == k) {
            f.push((k, v));
        }
    }
    Some((Val::Struct("", f), origins))
}

/// `ParamFlowRule` (QPS grade, default behaviour) → a `param_flow_rules` component.
pub(crate) fn param_flow(cx: &mut Cx, r: &RuleView) {
    let Some((rp, rn)) = r.get("resource") else {
        return cx.error(&r.path, r.at, "missing field `resource`".into());
    };
    let Some(res) = get(cx, &rp, rn, |p, n| read::text(p, n).map(str::to_string)) else { return };
    let mut name = read::component_name(&res);
    let taken = cx
        .frag
        .names()
        .into_iter()
        .find(|(l, _)| *l == "param_flow_rules")
        .map(|(_, n)| n)
        .unwrap_or_default();
    let mut k = 2;
    while taken.contains(&name) {
        name = format!("{}-{k}", read::component_name(&res));
        k += 1;
    }
    let mut it = Item::new("param_flow_rules", &name, Origin { path: r.path.clone(), at: r.at });
    for (key, p, n) in &r.fields {
        param_field(cx, r, &mut it, key, p, n);
    }
    if !it.has("count") {
        return cx.error(&r.path, r.at, "missing field `count`".into());
    }
    if !it.has("param") {
        return;
    }
    cx.frag.push(it);
}

fn param_field(cx: &mut Cx, r: &RuleView, it: &mut Item, key: &str, p: &str, n: &Node) {
    let o = origin(p, n);
    match key {
        "paramidx" => match cx.hot_param {
            Some(h) => {
                let v = if h == HotParam::User { "User" } else { "Key" };
                it.set("param", Val::Ident(v), o);
            }
            None => cx.error(
                p,
                n.at,
                "argument `paramIdx` of the Java method: say which call attribute it is, the \
                 user or the key (`--hot-param user|key`, or `hot_param` in the scenario's \
                 import entry)"
                    .into(),
            ),
        },
        "grade" => {
            if code(cx, p, n, &[(0, "THREAD"), (1, "QPS")]) == Some("THREAD") {
                cx.unsupported(p, n.at, "a THREAD-grade hot-parameter rule".into());
            }
        }
        "count" => {
            if let Some(x) = get(cx, p, n, read::float) {
                it.set("count", Val::Float(x), o);
            }
        }
        "durationinsec" => {
            if let Some(x) = get(cx, p, n, read::uint) {
                it.set("duration_in_sec", Val::Int(x), o);
            }
        }
        "burstcount" => {
            if let Some(x) = get(cx, p, n, read::uint) {
                it.set("burst_count", Val::Int(x), o);
            }
        }
        "controlbehavior" => {
            if code(cx, p, n, &[(0, "DEFAULT"), (2, "RATE_LIMITER")]) == Some("RATE_LIMITER") {
                cx.unsupported(p, n.at, "a pacing hot-parameter rule (controlBehavior 2)".into());
            }
        }
        "maxqueueingtimems" => cx.ignore(p, n.at, "read only by pacing (controlBehavior 2)"),
        "paramflowitemlist" => items(cx, it, p, n),
        k if common(cx, r, k, p, n) => {}
        _ => cx.error(p, n.at, "unknown field of a hot-parameter rule".into()),
    }
}

/// `paramFlowItemList`: per-value exceptions; values must be whole numbers (stormglass's
/// users and keys are).
fn items(cx: &mut Cx, it: &mut Item, p: &str, n: &Node) {
    let super::Kind::Seq(list) = &n.kind else {
        if !n.is_null() {
            cx.error(p, n.at, format!("expected an array, found {}", n.what()));
        }
        return;
    };
    let mut vals = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let ip = format!("{p}[{i}]");
        let Ok(entries) = read::entries(&ip, item) else {
            cx.error(&ip, item.at, format!("expected an object, found {}", item.what()));
            continue;
        };
        let (mut object, mut count) = (None, None);
        for (k, v) in entries {
            let kp = read::join(&ip, &k.text);
            match read::norm(&k.text).as_str() {
                "object" => object = get(cx, &kp, v, read::uint),
                "count" => count = get(cx, &kp, v, read::uint),
                "classtype" => {}
                _ => cx.error(&kp, k.at, "unknown field: expected object, count, classType".into()),
            }
        }
        if let (Some(o), Some(c)) = (object, count) {
            vals.push(Val::Struct("", vec![("object", Val::Int(o)), ("count", Val::Int(c))]));
            it.origin_of(format!("param_flow_item_list[{}]", vals.len() - 1), origin(&ip, item));
        }
    }
    it.set("param_flow_item_list", Val::List(vals), origin(p, n));
}
