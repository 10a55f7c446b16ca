//! A Kubernetes HorizontalPodAutoscaler manifest (YAML or JSON; `autoscaling/v2`,
//! `v2beta2`, or `v1`'s `targetCPUUtilizationPercentage`) → `autoscalers` (one).
//!
//! * `metadata.name` → the autoscaler's name; `spec.scaleTargetRef.name` → its `station`
//!   (the station of that name stands for the workload; its kind and apiVersion are
//!   ignored). `minReplicas` (default 1; 0 — scale to zero — is not modelled),
//!   `maxReplicas`.
//! * `spec.metrics`: one `Resource` metric `cpu` with a `Utilization` target →
//!   `metric: Utilization`, `target: averageUtilization` (absent: Kubernetes' default, 80 %
//!   CPU, `SetDefaults_HorizontalPodAutoscaler`). Other metrics (memory, Pods, Object,
//!   External, ContainerResource, value targets) and several metrics (the HPA takes the
//!   largest recommendation) are not modelled.
//! * `spec.behavior.scaleUp` / `scaleDown`: `stabilizationWindowSeconds`, `selectPolicy`,
//!   `policies` (`type`, `value`, `periodSeconds`) → `scale_{up,down}_*`; `tolerance`
//!   (one value for both directions here; two different ones are not modelled).
//! * `status`, `metadata`'s other fields: ignored (no effect on a run). The provisioning
//!   delay and warm-up are not in an HPA: the fragment's header says to add them.
//!
//! Field names are matched exactly, as the API server does; an unknown one is an error.

use super::read::{self, origin};
use super::tree::Key;
use super::{Cx, Item, Kind, Node, Origin, Val};
use sim_core::SimDuration;

/// Kubernetes' default metric: CPU at 80 % (`autoscaling.DefaultCPUUtilization`).
const DEFAULT_CPU_UTILIZATION: u64 = 80;

/// Is this document an HPA (`kind: HorizontalPodAutoscaler`)?
pub(crate) fn is_hpa(doc: &Node) -> bool {
    read::entries("", doc).is_ok_and(|e| {
        e.iter().any(|(k, v)| k.text == "kind" && v.scalar() == Some("HorizontalPodAutoscaler"))
    })
}

pub(crate) fn import(doc: &Node, cx: &mut Cx) {
    let entries = match read::entries("", doc) {
        Ok(e) => e,
        Err(p) => return cx.fail(p),
    };
    let find = |name: &str| entries.iter().find(|(k, _)| k.text == name).map(|(_, v)| v);
    let name = find("metadata")
        .and_then(|m| read::entries("metadata", m).ok())
        .and_then(|m| m.iter().find(|(k, _)| k.text == "name").map(|(_, v)| v))
        .and_then(|v| v.scalar())
        .map(read::component_name);
    let Some(name) = name else {
        return cx.error("metadata.name", doc.at, "an HPA needs a name".into());
    };
    let mut it = Item::new("autoscalers", &name, origin("metadata.name", doc));
    for (k, v) in entries {
        match k.text.as_str() {
            "apiVersion" => match v.scalar() {
                Some("autoscaling/v2" | "autoscaling/v2beta2" | "autoscaling/v1") => {}
                _ => {
                    cx.error("apiVersion", v.at, "expected autoscaling/v2 (or v2beta2, v1)".into())
                }
            },
            "kind" | "metadata" => {}
            "status" => cx.ignore("status", k.at, "the controller's observed state"),
            "spec" => spec(cx, &mut it, v),
            _ => cx.error(&k.text, k.at, "unknown field of a HorizontalPodAutoscaler".into()),
        }
    }
    if let Some((_, m)) = entries.iter().find(|(k, _)| k.text == "metadata") {
        for (k, _) in read::entries("metadata", m).unwrap_or(&[]) {
            if k.text != "name" {
                cx.ignore(&read::join("metadata", &k.text), k.at, "no effect on a run");
            }
        }
    }
    let metrics_written = find("spec")
        .and_then(|s| read::entries("spec", s).ok())
        .and_then(|s| s.iter().find(|(k, _)| k.text == "metrics"))
        .is_some_and(|(_, m)| matches!(&m.kind, Kind::Seq(l) if !l.is_empty()));
    // No metric at all: Kubernetes' default; a metric left out (partial): no target.
    if !it.has("target") && !metrics_written {
        let o = origin("spec.metrics", doc);
        it.set("metric", Val::Ident("Utilization"), o.clone());
        it.set("target", Val::Float(DEFAULT_CPU_UTILIZATION as f64), o);
    }
    let why = "an HPA does not say how long a replica takes to be ready or to warm up: add \
               provisioning_delay, warmup and warmup_multiplier to the autoscaler";
    cx.ignore("spec", doc.at, why);
    cx.frag.push(it);
}

fn spec(cx: &mut Cx, it: &mut Item, v: &Node) {
    each_entry(cx, "spec", v, |cx, p, k, n| match k.text.as_str() {
        "scaleTargetRef" => scale_target(cx, it, &p, n),
        "minReplicas" => match read::uint(&p, n) {
            Ok(0) => cx.unsupported(&p, n.at, "scaling to zero (minReplicas: 0)".into()),
            Ok(m) => it.set("min_replicas", Val::Int(m), origin(&p, n)),
            Err(e) => cx.fail(e),
        },
        "maxReplicas" => match read::uint(&p, n) {
            Ok(m) => it.set("max_replicas", Val::Int(m), origin(&p, n)),
            Err(e) => cx.fail(e),
        },
        "targetCPUUtilizationPercentage" => utilization(cx, it, &p, n),
        "metrics" => metrics(cx, it, &p, n),
        "behavior" => behavior(cx, it, &p, n),
        _ => cx.error(&p, k.at, "unknown field of an HPA's spec".into()),
    });
}

/// Each entry of the mapping at `p`, with its path (not a mapping: an error).
fn each_entry(cx: &mut Cx, p: &str, n: &Node, mut f: impl FnMut(&mut Cx, String, &Key, &Node)) {
    match read::entries(p, n) {
        Ok(entries) => entries.iter().for_each(|(k, v)| f(cx, read::join(p, &k.text), k, v)),
        Err(e) => cx.fail(e),
    }
}

fn scale_target(cx: &mut Cx, it: &mut Item, p: &str, n: &Node) {
    each_entry(cx, p, n, |cx, q, k, v| match k.text.as_str() {
        "name" => match read::text(&q, v) {
            Ok(s) => it.set("station", Val::Str(s.to_string()), origin(&q, v)),
            Err(e) => cx.fail(e),
        },
        "kind" | "apiVersion" => {
            cx.ignore(&q, k.at, "the station named like the workload stands for it")
        }
        _ => cx.error(&q, k.at, "unknown field of a scaleTargetRef".into()),
    });
}

fn utilization(cx: &mut Cx, it: &mut Item, p: &str, n: &Node) {
    match read::uint(p, n) {
        Ok(u) if u > 0 => {
            it.set("metric", Val::Ident("Utilization"), origin(p, n));
            it.set("target", Val::Float(u as f64), origin(p, n));
        }
        Ok(_) => cx.error(p, n.at, "a utilization target must be > 0".into()),
        Err(e) => cx.fail(e),
    }
}

/// `spec.metrics`: one CPU utilization metric.
fn metrics(cx: &mut Cx, it: &mut Item, p: &str, n: &Node) {
    let Kind::Seq(list) = &n.kind else {
        return cx.error(p, n.at, format!("expected a list, found {}", n.what()));
    };
    if list.len() > 1 {
        let what = "several metrics (the HPA scales to the largest of their recommendations)";
        cx.unsupported(&format!("{p}[1]"), list[1].at, what.into());
    }
    let Some(m) = list.first() else { return };
    let p = format!("{p}[0]");
    let entries = match read::entries(&p, m) {
        Ok(e) => e,
        Err(e) => return cx.fail(e),
    };
    for (k, v) in entries {
        let q = read::join(&p, &k.text);
        match (k.text.as_str(), v.scalar()) {
            ("type", Some("Resource")) => {}
            ("type", _) => {
                let what = format!("a metric of type {} (only Resource cpu)", v.what());
                cx.unsupported(&q, v.at, what);
            }
            ("resource", _) => resource(cx, it, &q, v),
            _ => cx.unsupported(&q, k.at, "a metric source other than Resource cpu".into()),
        }
    }
}

fn resource(cx: &mut Cx, it: &mut Item, p: &str, n: &Node) {
    each_entry(cx, p, n, |cx, q, k, v| match k.text.as_str() {
        "name" if v.scalar() == Some("cpu") => {}
        "name" => cx.unsupported(&q, v.at, format!("the resource {} (only cpu)", v.what())),
        "target" => {
            for (tk, tv) in read::entries(&q, v).unwrap_or(&[]) {
                let r = read::join(&q, &tk.text);
                match (tk.text.as_str(), tv.scalar()) {
                    ("type", Some("Utilization")) => {}
                    ("averageUtilization", _) => utilization(cx, it, &r, tv),
                    _ => cx.unsupported(&r, tk.at, "a target other than Utilization".into()),
                }
            }
        }
        _ => cx.error(&q, k.at, "unknown field of a resource metric".into()),
    });
}

/// `spec.behavior`: each direction's rules.
fn behavior(cx: &mut Cx, it: &mut Item, p: &str, n: &Node) {
    let entries = match read::entries(p, n) {
        Ok(e) => e,
        Err(e) => return cx.fail(e),
    };
    let mut tolerance: Option<(f64, Origin)> = None;
    for (k, v) in entries {
        let q = read::join(p, &k.text);
        let dir = match k.text.as_str() {
            "scaleUp" => "scale_up",
            "scaleDown" => "scale_down",
            _ => {
                cx.error(&q, k.at, "unknown field: expected scaleUp, scaleDown".into());
                continue;
            }
        };
        rules(cx, it, &q, v, dir, &mut tolerance);
    }
    if let Some((t, o)) = tolerance {
        it.set("tolerance", Val::Float(t), o);
    }
}

fn rules(
    cx: &mut Cx,
    it: &mut Item,
    p: &str,
    n: &Node,
    dir: &'static str,
    tolerance: &mut Option<(f64, Origin)>,
) {
    let field = |f: &str| -> &'static str {
        match (dir, f) {
            ("scale_up", "s") => "scale_up_stabilization",
            ("scale_up", "p") => "scale_up_select",
            ("scale_up", _) => "scale_up_policies",
            (_, "s") => "scale_down_stabilization",
            (_, "p") => "scale_down_select",
            _ => "scale_down_policies",
        }
    };
    for (k, v) in read::entries(p, n).unwrap_or(&[]) {
        let q = read::join(p, &k.text);
        match k.text.as_str() {
            "stabilizationWindowSeconds" => match read::uint(&q, v) {
                Ok(s) => it.set(field("s"), Val::Dur(SimDuration::from_secs(s)), origin(&q, v)),
                Err(e) => cx.fail(e),
            },
            "selectPolicy" => match v.scalar() {
                Some(s @ ("Max" | "Min" | "Disabled")) => {
                    let id = match s {
                        "Max" => "Max",
                        "Min" => "Min",
                        _ => "Disabled",
                    };
                    it.set(field("p"), Val::Ident(id), origin(&q, v));
                }
                _ => {
                    cx.error(&q, v.at, format!("expected Max, Min or Disabled, found {}", v.what()))
                }
            },
            "policies" => policies(cx, it, &q, v, field("l")),
            "tolerance" => match read::float(&q, v) {
                Ok(t) => match tolerance {
                    Some((t0, _)) if *t0 != t => cx.unsupported(
                        &q,
                        v.at,
                        "different scale-up and scale-down tolerances".into(),
                    ),
                    _ => *tolerance = Some((t, origin(&q, v))),
                },
                Err(e) => cx.fail(e),
            },
            _ => cx.error(&q, k.at, "unknown field of HPAScalingRules".into()),
        }
    }
}

fn policies(cx: &mut Cx, it: &mut Item, p: &str, n: &Node, field: &'static str) {
    let Kind::Seq(list) = &n.kind else {
        return cx.error(p, n.at, format!("expected a list, found {}", n.what()));
    };
    let mut out = Vec::new();
    for (i, pol) in list.iter().enumerate() {
        let q = format!("{p}[{i}]");
        let (mut kind, mut value, mut period) = (None, None, None);
        for (k, v) in read::entries(&q, pol).unwrap_or(&[]) {
            let r = read::join(&q, &k.text);
            match (k.text.as_str(), v.scalar()) {
                ("type", Some("Pods")) => kind = Some("Pods"),
                ("type", Some("Percent")) => kind = Some("Percent"),
                ("type", _) => {
                    cx.error(&r, v.at, format!("expected Pods or Percent, found {}", v.what()))
                }
                ("value", _) => value = read::uint(&r, v).map_err(|e| cx.fail(e)).ok(),
                ("periodSeconds", _) => period = read::uint(&r, v).map_err(|e| cx.fail(e)).ok(),
                _ => {
                    cx.error(&r, k.at, "unknown field: expected type, value, periodSeconds".into())
                }
            }
            it.origin_of(format!("{field}[{i}]"), origin(&r, v));
        }
        match (kind, value, period) {
            (Some(kind), Some(value), Some(period)) => out.push(Val::Struct(
                "",
                vec![
                    ("kind", Val::Ident(kind)),
                    ("value", Val::Int(value)),
                    ("period", Val::Dur(SimDuration::from_secs(period))),
                ],
            )),
            _ => cx.error(&q, pol.at, "a policy needs type, value and periodSeconds".into()),
        }
    }
    it.set(field, Val::List(out), origin(p, n));
}

#[cfg(test)]
#[path = "hpa_tests.rs"]
mod tests;
