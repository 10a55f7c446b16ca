//! Resilience4j's Spring Boot properties (`resilience4j-spring-boot2/3`, the shared
//! `resilience4j-framework-common` classes) → circuit breakers, retries, gates (semaphore
//! bulkheads), time limiters, rate limiters and thread-pool bulkheads.
//!
//! Spring Boot flattens YAML into dotted property names, so `resilience4j.circuitbreaker:`
//! and `resilience4j: {circuitbreaker: …}` are one thing; names bind relaxed
//! (`failure-rate-threshold` = `failureRateThreshold`). Under each module, `instances`
//! (`backends`, the older name) become components; `configs` are only inherited.
//!
//! Inheritance, as the library resolves it (the layers, most specific first, the first
//! layer that sets a property wins):
//! * circuit breaker (`CommonCircuitBreakerConfigurationProperties.createCircuitBreakerConfig`):
//!   the instance; then `configs.<baseConfig>` (recursively through its own `baseConfig`,
//!   a cycle an error); without `baseConfig`, `configs.<instance name>` if it exists, else
//!   `configs.default` (itself resolved the same way);
//! * retry, bulkhead, time limiter, rate limiter, thread-pool bulkhead
//!   (`CommonRetryConfigurationProperties.createRetryConfig` and its siblings,
//!   `createRateLimiterConfig`, `createThreadPoolBulkheadConfig`): the same, except that a config without `baseConfig` other than
//!   `default` inherits `configs.default`, and no config is looked up by the instance's name.
//!
//! Only what the layers set is written; the specs' defaults are Resilience4j's own.

use super::exceptions;
use super::read::{self, norm, origin};
use super::{Cx, Kind, Node, Pos, Problem};

/// A property of an instance or config: its relaxed name, full path and value.
struct Prop<'n> {
    norm: String,
    path: String,
    node: &'n Node,
}

/// An instance or a config.
struct Named<'n> {
    name: String,
    path: String,
    at: Pos,
    props: Vec<Prop<'n>>,
}

impl<'n> Named<'n> {
    fn prop(&self, n: &str) -> Option<&Prop<'n>> {
        self.props.iter().find(|p| p.norm == n)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Module {
    CircuitBreaker,
    Retry,
    Bulkhead,
    TimeLimiter,
    RateLimiter,
    ThreadPoolBulkhead,
}

impl Module {
    fn from(norm: &str) -> Option<Module> {
        Some(match norm {
            "circuitbreaker" => Module::CircuitBreaker,
            "retry" => Module::Retry,
            "bulkhead" => Module::Bulkhead,
            "timelimiter" => Module::TimeLimiter,
            "ratelimiter" => Module::RateLimiter,
            "threadpoolbulkhead" => Module::ThreadPoolBulkhead,
            _ => return None,
        })
    }
}

#[derive(Default)]
struct Sections<'n> {
    instances: Vec<Named<'n>>,
    configs: Vec<Named<'n>>,
}

/// A leaf of the flattened document: the dotted name's segments (as written) and value.
struct Leaf<'n> {
    segs: Vec<String>,
    /// The position of the key each segment was written in.
    seg_at: Vec<Pos>,
    at: Pos,
    node: &'n Node,
}

/// Spring's YAML flattening: nested keys joined by dots, a `[a.b]` key one segment; lists
/// and scalars are leaves.
fn flatten<'n>(n: &'n Node, prefix: &[String], seg_at: &[Pos], at: Pos, out: &mut Vec<Leaf<'n>>) {
    match &n.kind {
        Kind::Map(entries) if !entries.is_empty() => {
            for (k, v) in entries {
                let mut segs = prefix.to_vec();
                let t = k.text.trim();
                if t.starts_with('[') && t.ends_with(']') {
                    segs.push(t[1..t.len() - 1].to_string());
                } else {
                    segs.extend(t.split('.').map(str::to_string));
                }
                let mut ats = seg_at.to_vec();
                ats.resize(segs.len(), k.at);
                flatten(v, &segs, &ats, k.at, out);
            }
        }
        _ => out.push(Leaf { segs: prefix.to_vec(), seg_at: seg_at.to_vec(), at, node: n }),
    }
}

pub(crate) fn import(doc: &Node, cx: &mut Cx) {
    let mut leaves = Vec::new();
    flatten(doc, &[], &[], doc.at, &mut leaves);
    let mut others: Vec<String> = Vec::new();
    let mut modules: Vec<(Module, String, Sections)> = Vec::new();
    for leaf in &leaves {
        if leaf.segs.first().map(|s| norm(s)) != Some("resilience4j".into()) {
            let top = leaf.segs.first().cloned().unwrap_or_default();
            if !others.contains(&top) {
                cx.ignore(
                    &top,
                    leaf.seg_at.first().copied().unwrap_or(leaf.at),
                    "not a Resilience4j setting",
                );
                others.push(top);
            }
            continue;
        }
        place(cx, leaf, &mut modules);
    }
    for (m, _, s) in &modules {
        build_module(cx, *m, s);
    }
}

/// Files a `resilience4j.<module>.…` leaf under its module's instances or configs.
fn place<'n>(cx: &mut Cx, leaf: &Leaf<'n>, modules: &mut Vec<(Module, String, Sections<'n>)>) {
    let path = leaf.segs.join(".");
    let Some(mseg) = leaf.segs.get(1) else {
        return cx.error(&path, leaf.at, "expected `resilience4j.<module>` settings".into());
    };
    let Some(m) = Module::from(&norm(mseg)) else {
        return cx.error(
            &path,
            leaf.at,
            format!(
                "unknown Resilience4j module `{mseg}`: expected circuitbreaker, retry, \
                 bulkhead, thread-pool-bulkhead, ratelimiter or timelimiter"
            ),
        );
    };
    let mpath = leaf.segs[..2].join(".");
    let section = leaf.segs.get(2).map(|s| norm(s)).unwrap_or_default();
    let configs = match section.as_str() {
        // `limiters`: the rate limiter's older name (`getLimiters`, kept for compatibility).
        "instances" | "backends" => false,
        "limiters" if m == Module::RateLimiter => false,
        "configs" => true,
        s if s.ends_with("aspectorder") => {
            return cx.ignore(
                &path,
                leaf.at,
                "the decorators' order: write the call site's governor stack in that order",
            );
        }
        "metrics" | "tags" => return cx.ignore(&path, leaf.at, "metrics only"),
        _ => {
            return cx.error(
                &path,
                leaf.at,
                "unknown property: expected `instances` or `configs`".into(),
            );
        }
    };
    let (Some(name), true) = (leaf.segs.get(3), leaf.segs.len() > 4) else {
        return cx.error(&path, leaf.at, "expected `<name>.<property>: <value>`".into());
    };
    let i = match modules.iter().position(|(mm, p, _)| *mm == m && *p == mpath) {
        Some(i) => i,
        None => {
            modules.push((m, mpath.clone(), Sections::default()));
            modules.len() - 1
        }
    };
    let list = if configs { &mut modules[i].2.configs } else { &mut modules[i].2.instances };
    let named = match list.iter().position(|n| n.name == *name) {
        Some(j) => &mut list[j],
        None => {
            let path = leaf.segs[..4].join(".");
            list.push(Named { name: name.clone(), path, at: leaf.seg_at[3], props: Vec::new() });
            list.last_mut().expect("pushed")
        }
    };
    named.props.push(Prop { norm: norm(&leaf.segs[4..].join("")), path, node: leaf.node });
}

/// The layers an instance inherits from, most specific first (the module doc).
fn layers<'a, 'n>(
    m: Module,
    s: &'a Sections<'n>,
    inst: &'a Named<'n>,
) -> Result<Vec<&'a Named<'n>>, Problem> {
    let find = |name: &str| s.configs.iter().find(|c| c.name == name);
    let mut out = vec![inst];
    let mut cur = inst;
    loop {
        let first = out.len() == 1;
        let (next, last) = if let Some(b) = cur.prop("baseconfig") {
            let name = read::text(&b.path, b.node)?.trim();
            let base = find(name).ok_or_else(|| {
                Problem::at(&b.path, b.node.at, format!("no `configs.{name}` to inherit from"))
            })?;
            if out.iter().any(|l| std::ptr::eq(*l, base)) {
                let msg = format!("circular baseConfig through `{name}`");
                return Err(Problem::at(&b.path, b.node.at, msg));
            }
            (Some(base), false)
        } else if m == Module::CircuitBreaker {
            match (first, find(&inst.name)) {
                (true, Some(c)) => (Some(c), true),
                (true, None) => (find("default"), false),
                _ => (None, true),
            }
        } else if cur.name != "default" {
            (find("default"), false)
        } else {
            (None, true)
        };
        match next {
            Some(n) if !out.iter().any(|l| std::ptr::eq(*l, n)) => out.push(n),
            _ => break,
        }
        cur = out[out.len() - 1];
        if last {
            break;
        }
    }
    Ok(out)
}

/// The effective properties: the first layer setting each wins.
fn effective<'a, 'n>(layers: &[&'a Named<'n>]) -> Vec<&'a Prop<'n>> {
    let mut out: Vec<&Prop> = Vec::new();
    for l in layers {
        for p in &l.props {
            if p.norm != "baseconfig" && !out.iter().any(|o| o.norm == p.norm) {
                out.push(p);
            }
        }
    }
    out
}

fn build_module(cx: &mut Cx, m: Module, s: &Sections) {
    for inst in &s.instances {
        let props = match layers(m, s, inst) {
            Ok(l) => effective(&l),
            Err(p) => {
                cx.fail(p);
                continue;
            }
        };
        let name = read::component_name(&inst.name);
        let at = origin(&inst.path, &Node { kind: Kind::Seq(Vec::new()), at: inst.at });
        let item = match m {
            Module::CircuitBreaker => {
                super::r4j_specs::circuit_breaker(cx, &name, at, &props_view(&props))
            }
            Module::Retry => super::r4j_specs::retry(cx, &name, at, &props_view(&props)),
            Module::Bulkhead => super::r4j_specs::bulkhead(cx, &name, at, &props_view(&props)),
            Module::TimeLimiter => {
                super::r4j_specs::time_limiter(cx, &name, at, &props_view(&props))
            }
            Module::RateLimiter => {
                super::r4j_limiters::rate_limiter(cx, &name, at, &props_view(&props))
            }
            Module::ThreadPoolBulkhead => {
                super::r4j_limiters::thread_pool_bulkhead(cx, &name, at, &props_view(&props))
            }
        };
        if name != inst.name {
            cx.ignore(
                &inst.path,
                inst.at,
                &format!("renamed `{name}` (scenario names are [A-Za-z0-9_-]+)"),
            );
        }
        cx.frag.push(item);
    }
}

/// A property as the spec builders read it.
pub(crate) struct PropRef<'n> {
    pub norm: String,
    pub path: String,
    pub node: &'n Node,
}

fn props_view<'n>(props: &[&Prop<'n>]) -> Vec<PropRef<'n>> {
    props
        .iter()
        .map(|p| PropRef { norm: p.norm.clone(), path: p.path.clone(), node: p.node })
        .collect()
}

/// The outcome reasons a list of exception classes stands for; unknown classes are noted
/// (the simulation never raises them).
pub(crate) fn classes(cx: &mut Cx, p: &PropRef) -> Option<Vec<&'static str>> {
    let list = match read::strings(&p.path, p.node) {
        Ok(l) => l,
        Err(e) => {
            cx.fail(e);
            return None;
        }
    };
    let mut out: Vec<&'static str> = Vec::new();
    for (i, (class, node)) in list.iter().enumerate() {
        match exceptions::java_class(class) {
            Some(rs) => {
                for r in rs {
                    if !out.contains(r) {
                        out.push(r);
                    }
                }
            }
            None => cx.ignore(
                &format!("{}[{i}]", p.path),
                node.at,
                &format!(
                    "`{class}`: no simulated outcome raises it (classes known: see docs/import.md)"
                ),
            ),
        }
    }
    Some(out)
}
