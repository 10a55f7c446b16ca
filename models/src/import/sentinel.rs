//! Sentinel rules as JSON (what the dashboard and the data sources push: a JSON array of
//! one rule type, or an object of arrays `flowRules`, `degradeRules`, `paramFlowRules`,
//! `authorityRules`, `systemRules`) → `sentinel_resources` (a resource's flow and degrade
//! rules as Sentinel's slot chain runs them) and `param_flow_rules`.
//!
//! Fields are Sentinel 1.8's (`FlowRule`, `DegradeRule`, `ParamFlowRule` and their
//! `AbstractRule`), matched as fastjson matches them (case and `_`/`-` ignored); the
//! numeric codes are `RuleConstant`'s. The dashboard's entity fields (`id`, `app`, `ip`,
//! `port`, `gmtCreate`, `gmtModified`) are noted and skipped; a dashboard entity that
//! wraps its rule (`{"app": …, "rule": {…}}`) is read through `rule`.

use super::read::{self, norm, origin};
use super::{Cx, Item, Kind, Node, Origin, Pos, Problem, Val};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum RuleKind {
    Flow,
    Degrade,
    ParamFlow,
    Authority,
    System,
}

/// The rule type of an object key (`flowRules`, `degrade`, …).
pub(crate) fn kind_of_key(norm_key: &str) -> Option<RuleKind> {
    Some(match norm_key {
        "flowrules" | "flow" => RuleKind::Flow,
        "degraderules" | "degrade" => RuleKind::Degrade,
        "paramflowrules" | "paramflow" => RuleKind::ParamFlow,
        "authorityrules" | "authority" => RuleKind::Authority,
        "systemrules" | "system" => RuleKind::System,
        _ => return None,
    })
}

const METADATA: [&str; 6] = ["id", "app", "ip", "port", "gmtcreate", "gmtmodified"];

/// A rule's fields by relaxed name, and its path.
struct Rule<'n> {
    path: String,
    at: Pos,
    fields: Vec<(String, String, &'n Node)>,
}

impl<'n> Rule<'n> {
    fn get(&self, n: &str) -> Option<(String, &'n Node)> {
        self.fields.iter().find(|(k, _, _)| k == n).map(|(_, p, v)| (p.clone(), *v))
    }
}

/// The flow and degrade rules of one resource, in order of appearance.
struct Resource {
    resource: String,
    at: Origin,
    flow: Vec<(Val, Vec<(String, Origin)>)>,
    degrade: Vec<(Val, Vec<(String, Origin)>)>,
}

pub(crate) fn import(doc: &Node, cx: &mut Cx) {
    let mut resources: Vec<Resource> = Vec::new();
    let mut lists: Vec<(String, Option<RuleKind>, &Node)> = Vec::new();
    match &doc.kind {
        Kind::Seq(_) => lists.push((String::new(), None, doc)),
        Kind::Map(entries) => {
            for (k, v) in entries {
                match kind_of_key(&norm(&k.text)) {
                    Some(kind) => lists.push((k.text.clone(), Some(kind), v)),
                    None => cx.error(
                        &k.text,
                        k.at,
                        "unknown key: expected flowRules, degradeRules, paramFlowRules, \
                         authorityRules or systemRules"
                            .into(),
                    ),
                }
            }
        }
        Kind::Scalar(..) => {
            cx.error("", doc.at, format!("expected a JSON array of rules, found {}", doc.what()))
        }
    }
    for (key, kind, list) in lists {
        let Kind::Seq(items) = &list.kind else {
            cx.error(&key, list.at, format!("expected an array of rules, found {}", list.what()));
            continue;
        };
        for (i, r) in items.iter().enumerate() {
            match read_rule(cx, &format!("{key}[{i}]"), r) {
                Ok(rule) => one_rule(cx, rule, kind, &mut resources),
                Err(p) => cx.fail(p),
            }
        }
    }
    emit(cx, resources);
}

/// A rule object's fields (through a dashboard entity's `rule`), metadata noted.
fn read_rule<'n>(cx: &mut Cx, path: &str, r: &'n Node) -> Result<Rule<'n>, Problem> {
    let mut rule = Rule { path: path.into(), at: r.at, fields: Vec::new() };
    for (k, v) in read::entries(path, r)? {
        let n = norm(&k.text);
        let p = read::join(path, &k.text);
        if n == "rule" && matches!(v.kind, Kind::Map(_)) {
            for (k2, v2) in read::entries(&p, v)? {
                rule.fields.push((norm(&k2.text), read::join(&p, &k2.text), v2));
            }
        } else if METADATA.contains(&n.as_str()) {
            cx.ignore(&p, k.at, "dashboard metadata");
        } else {
            rule.fields.push((n, p, v));
        }
    }
    Ok(rule)
}

/// The rule type of a rule in a bare array, from the fields only it has.
fn detect(r: &Rule) -> Option<RuleKind> {
    let any = |ns: &[&str]| ns.iter().any(|n| r.get(n).is_some());
    if any(&["paramidx", "paramflowitemlist", "durationinsec", "burstcount"]) {
        Some(RuleKind::ParamFlow)
    } else if any(&["timewindow", "minrequestamount", "slowratiothreshold", "statintervalms"]) {
        Some(RuleKind::Degrade)
    } else if any(&["highestsystemload", "highestcpuusage", "avgrt", "maxthread", "qps"]) {
        Some(RuleKind::System)
    } else if any(&["count", "controlbehavior", "warmupperiodsec", "maxqueueingtimems"]) {
        Some(RuleKind::Flow)
    } else if any(&["strategy", "limitapp"]) {
        Some(RuleKind::Authority)
    } else {
        None
    }
}

fn one_rule(cx: &mut Cx, r: Rule, kind: Option<RuleKind>, resources: &mut Vec<Resource>) {
    let Some(kind) = kind.or_else(|| detect(&r)) else {
        return cx.error(
            &r.path,
            r.at,
            "cannot tell which Sentinel rule this is (no count, timeWindow, paramIdx, …)".into(),
        );
    };
    match kind {
        RuleKind::Authority => cx.unsupported(
            &r.path,
            r.at,
            "an authority rule (origin black/white list): calls carry no origin".into(),
        ),
        RuleKind::System => cx.unsupported(
            &r.path,
            r.at,
            "a system rule (the host's load, CPU, RT, threads or QPS as one limit)".into(),
        ),
        RuleKind::ParamFlow => super::sentinel_rules::param_flow(cx, &r_view(&r)),
        RuleKind::Flow | RuleKind::Degrade => {
            let Some((res, at)) = resource(cx, &r) else { return };
            let built = if kind == RuleKind::Flow {
                super::sentinel_rules::flow(cx, &r_view(&r))
            } else {
                super::sentinel_rules::degrade(cx, &r_view(&r))
            };
            let Some(built) = built else { return };
            let i = match resources.iter().position(|x| x.resource == res) {
                Some(i) => i,
                None => {
                    resources.push(Resource {
                        resource: res,
                        at,
                        flow: Vec::new(),
                        degrade: Vec::new(),
                    });
                    resources.len() - 1
                }
            };
            let list = if kind == RuleKind::Flow {
                &mut resources[i].flow
            } else {
                &mut resources[i].degrade
            };
            list.push(built);
        }
    }
}

/// The rule's resource name.
fn resource(cx: &mut Cx, r: &Rule) -> Option<(String, Origin)> {
    match r.get("resource") {
        Some((p, v)) => match read::text(&p, v) {
            Ok(t) if !t.trim().is_empty() => Some((t.trim().to_string(), origin(&p, v))),
            Ok(_) => {
                cx.error(&p, v.at, "expected a resource name, found an empty one".into());
                None
            }
            Err(e) => {
                cx.fail(e);
                None
            }
        },
        None => {
            cx.error(&r.path, r.at, "missing field `resource`".into());
            None
        }
    }
}

/// A rule's fields as the rule readers take them.
pub(crate) struct RuleView<'n> {
    pub path: String,
    pub at: Pos,
    pub fields: Vec<(String, String, &'n Node)>,
}

impl<'n> RuleView<'n> {
    pub fn get(&self, n: &str) -> Option<(String, &'n Node)> {
        self.fields.iter().find(|(k, _, _)| k == n).map(|(_, p, v)| (p.clone(), *v))
    }
}

fn r_view<'n>(r: &Rule<'n>) -> RuleView<'n> {
    RuleView { path: r.path.clone(), at: r.at, fields: r.fields.clone() }
}

/// One `sentinel_resources` entry per resource; names made valid and unique.
fn emit(cx: &mut Cx, resources: Vec<Resource>) {
    let mut used: Vec<String> = Vec::new();
    for r in resources {
        let mut name = read::component_name(&r.resource);
        if used.contains(&name) {
            let mut k = 2;
            while used.contains(&format!("{name}-{k}")) {
                k += 1;
            }
            name = format!("{name}-{k}");
        }
        used.push(name.clone());
        let mut it = Item::new("sentinel_resources", &name, r.at.clone());
        if name != r.resource {
            it.set("resource", Val::Str(r.resource.clone()), r.at.clone());
        }
        for (field, rules) in [("flow_rules", r.flow), ("degrade_rules", r.degrade)] {
            if rules.is_empty() {
                continue;
            }
            let mut vals = Vec::new();
            for (j, (v, origins)) in rules.into_iter().enumerate() {
                for (sub, o) in origins {
                    let at = if sub.is_empty() {
                        format!("{field}[{j}]")
                    } else {
                        format!("{field}[{j}].{sub}")
                    };
                    it.origin_of(at, o);
                }
                vals.push(v);
            }
            it.set(field, Val::List(vals), r.at.clone());
        }
        cx.frag.push(it);
    }
}
