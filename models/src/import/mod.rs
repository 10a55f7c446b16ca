//! `stormglass import`: production configurations, as users write them, turned into
//! scenario fragments (RON governor lists) — Resilience4j's Spring Boot YAML
//! ([`r4j`]), Sentinel's rule JSON ([`sentinel`]), a gRPC service config ([`grpc`]) and a
//! Kubernetes HorizontalPodAutoscaler manifest ([`hpa`]: an `autoscalers` entry).
//!
//! The key design decision: the translation writes *RON text* in the scenario's own field
//! names and only the values the configuration sets, and the scenario's deserializers then
//! read it like any scenario — so the defaults, ranges and checks are the specs' own, stated
//! once. Every value remembers where it came from ([`Fragment::origin`]), so an error the
//! scenario layer finds in the fragment is reported at the configuration's line:column
//! under the configuration's own property path.
//!
//! Nothing is dropped silently: a field the simulation has no use for (a health
//! indicator, an event buffer size) is *ignored* with a note saying why; a field or rule
//! that changes behaviour stormglass does not model is *unsupported*: an error naming its
//! path, or, with [`Options::partial`], a note in the fragment's header listing what was
//! left out.
//!
//! Architecture invariant: plain functions of the text; no file access and no other module
//! of this crate (the reason names it writes are checked against `outcome` by a test).
//!
//! API boundary: [`import`] (text → [`Fragment`] or [`Problem`]s), [`Fragment::to_ron`],
//! [`Fragment::origin`].

mod entry;
mod exceptions;
mod grpc;
mod hpa;
mod r4j;
mod r4j_limiters;
mod r4j_specs;
mod read;
mod sentinel;
mod sentinel_rules;
mod tree;

use serde::{Deserialize, Serialize};
use sim_core::SimDuration;
use std::collections::BTreeMap;
use std::fmt;

pub use entry::ImportEntry;
pub use read::edit_distance;
pub(crate) use tree::{Kind, Node};

/// A position in the imported text: line (1-based) and column (1-based, in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

/// Which configuration a text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Format {
    /// Spring Boot `application.yml` with `resilience4j.*` settings.
    Resilience4j,
    /// Sentinel rules as JSON (an array of rules, or an object of rule arrays).
    Sentinel,
    /// A gRPC service config (`methodConfig`, `retryThrottling`).
    Grpc,
    /// A Kubernetes HorizontalPodAutoscaler manifest (`kind: HorizontalPodAutoscaler`).
    Hpa,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Resilience4j => "resilience4j",
            Format::Sentinel => "sentinel",
            Format::Grpc => "grpc",
            Format::Hpa => "hpa",
        }
    }
    pub fn parse(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "resilience4j" | "r4j" => Some(Format::Resilience4j),
            "sentinel" => Some(Format::Sentinel),
            "grpc" => Some(Format::Grpc),
            "hpa" | "kubernetes" | "k8s" => Some(Format::Hpa),
            _ => None,
        }
    }
}

/// Which call attribute a Sentinel hot parameter (`paramIdx`) stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HotParam {
    User,
    Key,
}

/// How to import.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The format; `None`: told from the text.
    pub format: Option<Format>,
    /// Leave unsupported fields and rules out (listed in the fragment's notes) instead of
    /// refusing the file.
    pub partial: bool,
    /// What Sentinel's `paramIdx` stands for.
    pub hot_param: Option<HotParam>,
}

/// An error or a note about the imported text.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// The configuration's own path of the field (`resilience4j.retry.instances.a.maxAttempts`,
    /// `[0].grade`, `methodConfig[0].hedgingPolicy`).
    pub path: String,
    pub at: Pos,
    pub message: String,
    /// Unsupported (behaviour stormglass does not model) rather than invalid.
    pub unsupported: bool,
}

impl Problem {
    pub(crate) fn at(path: &str, at: Pos, message: String) -> Self {
        Problem { path: path.into(), at, message, unsupported: false }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.at.line, self.at.col)?;
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

/// Where a fragment value came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Origin {
    pub path: String,
    pub at: Pos,
}

/// A RON value of the fragment.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Int(u64),
    Float(f64),
    Bool(bool),
    Str(String),
    Dur(SimDuration),
    Ident(&'static str),
    List(Vec<Val>),
    /// `Name(field: value, …)`; an empty name writes `(…)`, no fields and a name a unit
    /// variant (`Full`).
    Struct(&'static str, Vec<(&'static str, Val)>),
}

/// One component being built: its fields and where each came from.
pub(crate) struct Item {
    list: &'static str,
    origin: Origin,
    fields: Vec<(&'static str, Val)>,
    origins: Vec<(String, Origin)>,
}

impl Item {
    pub fn new(list: &'static str, name: &str, origin: Origin) -> Self {
        let mut it = Item { list, origin: origin.clone(), fields: Vec::new(), origins: Vec::new() };
        it.set("name", Val::Str(name.into()), origin);
        it
    }
    /// Sets `field` (replacing an earlier value).
    pub fn set(&mut self, field: &'static str, v: Val, origin: Origin) {
        self.fields.retain(|(f, _)| *f != field);
        self.fields.push((field, v));
        self.origins.push((field.into(), origin));
    }
    /// Records the origin of a value nested in a field (`flow_rules[1].count`).
    pub fn origin_of(&mut self, sub_path: String, origin: Origin) {
        self.origins.push((sub_path, origin));
    }
    pub fn has(&self, field: &str) -> bool {
        self.fields.iter().any(|(f, _)| *f == field)
    }
}

/// The result of an import: governor lists in RON, with notes and origins.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fragment {
    lists: Vec<(&'static str, Vec<Val>)>,
    origins: BTreeMap<String, Origin>,
    /// Ignored fields (no effect in a simulation) and, when partial, what was left out.
    pub notes: Vec<Problem>,
    /// The format read.
    pub format: Option<Format>,
}

impl Fragment {
    pub(crate) fn push(&mut self, item: Item) {
        let i = match self.lists.iter().position(|(l, _)| *l == item.list) {
            Some(i) => i,
            None => {
                self.lists.push((item.list, Vec::new()));
                self.lists.len() - 1
            }
        };
        let idx = self.lists[i].1.len();
        let base = format!("{}[{idx}]", item.list);
        self.origins.insert(base.clone(), item.origin);
        for (p, o) in item.origins {
            self.origins.insert(format!("{base}.{p}"), o);
        }
        self.lists[i].1.push(Val::Struct("", item.fields));
    }

    /// The names of the components of each list, in order.
    pub fn names(&self) -> Vec<(&'static str, Vec<String>)> {
        let name = |v: &Val| match v {
            Val::Struct(_, f) => f.iter().find_map(|(k, v)| match (k, v) {
                (&"name", Val::Str(s)) => Some(s.clone()),
                _ => None,
            }),
            _ => None,
        };
        self.lists.iter().map(|(l, vs)| (*l, vs.iter().filter_map(name).collect())).collect()
    }

    /// Where the value at a fragment path (`circuit_breakers[0].sliding_window_size`) came
    /// from: the longest recorded prefix of the path.
    pub fn origin(&self, path: &str) -> Option<&Origin> {
        let mut p = path;
        loop {
            if let Some(o) = self.origins.get(p) {
                return Some(o);
            }
            let cut = p.rfind(['.', '['])?;
            p = &p[..cut];
        }
    }

    /// The governor lists as RON fields (`circuit_breakers: [ … ],`), to paste into a
    /// scenario, with the notes as comments above them.
    pub fn to_ron(&self) -> String {
        let mut out = String::new();
        for n in &self.notes {
            out.push_str(&format!("// {n}\n"));
        }
        for (list, items) in &self.lists {
            out.push_str(&format!("{list}: [\n"));
            for it in items {
                out.push_str("    ");
                write_val(&mut out, it, 1);
                out.push_str(",\n");
            }
            out.push_str("],\n");
        }
        out
    }

    /// The lists only (no comments), wrapped as a scenario with no traffic: what the
    /// scenario layer deserializes to check and merge a fragment.
    pub fn as_scenario_text(&self) -> String {
        let mut out =
            String::from("(name: \"import\", sources: [], call_sites: [], stations: [],\n");
        let body = self.to_ron();
        for line in body.lines().filter(|l| !l.starts_with("//")) {
            out.push_str(line);
            out.push('\n');
        }
        out.push(')');
        out
    }
}

fn write_val(out: &mut String, v: &Val, depth: usize) {
    match v {
        Val::Int(n) => out.push_str(&n.to_string()),
        Val::Float(x) => out.push_str(&format!("{x:?}")),
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Str(s) => out.push_str(&format!("{s:?}")),
        Val::Dur(d) => out.push_str(&format!("\"{d}\"")),
        Val::Ident(s) => out.push_str(s),
        Val::List(items)
            if items.iter().any(|v| matches!(v, Val::Struct(_, f) if !f.is_empty())) =>
        {
            let pad = "    ".repeat(depth + 1);
            out.push_str("[\n");
            for it in items {
                out.push_str(&pad);
                write_val(out, it, depth + 1);
                out.push_str(",\n");
            }
            out.push_str(&"    ".repeat(depth));
            out.push(']');
        }
        Val::List(items) => {
            out.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_val(out, it, depth + 1);
            }
            out.push(']');
        }
        Val::Struct(name, fields) if fields.is_empty() => out.push_str(name),
        Val::Struct(name, fields) => {
            let pad = "    ".repeat(depth + 1);
            out.push_str(name);
            out.push_str("(\n");
            for (k, v) in fields {
                out.push_str(&format!("{pad}{k}: "));
                write_val(out, v, depth + 1);
                out.push_str(",\n");
            }
            out.push_str(&"    ".repeat(depth));
            out.push(')');
        }
    }
}

/// What an import collects while it reads.
pub(crate) struct Cx {
    pub frag: Fragment,
    pub errors: Vec<Problem>,
    pub partial: bool,
    pub hot_param: Option<HotParam>,
}

impl Cx {
    pub fn error(&mut self, path: &str, at: Pos, message: String) {
        self.errors.push(Problem::at(path, at, message));
    }
    pub fn fail(&mut self, p: Problem) {
        self.errors.push(p);
    }
    /// A field with no effect in a simulation.
    pub fn ignore(&mut self, path: &str, at: Pos, why: &str) {
        self.frag.notes.push(Problem::at(path, at, format!("ignored: {why}")));
    }
    /// Behaviour stormglass does not model: an error, or a note when partial.
    pub fn unsupported(&mut self, path: &str, at: Pos, what: String) {
        let mut p = Problem::at(path, at, format!("not modelled: {what}"));
        p.unsupported = true;
        if self.partial {
            p.message = format!("left out (partial import): {what}");
            self.frag.notes.push(p);
        } else {
            self.errors.push(p);
        }
    }
}

/// Tells the format from the parsed document.
fn detect(doc: &Node) -> Result<Format, Problem> {
    let keys: Vec<String> = match &doc.kind {
        Kind::Seq(_) => return Ok(Format::Sentinel),
        Kind::Map(e) => e.iter().map(|(k, _)| read::norm(&k.text)).collect(),
        Kind::Scalar(..) => Vec::new(),
    };
    if hpa::is_hpa(doc) {
        return Ok(Format::Hpa);
    }
    let first = |k: &String| read::norm(k.split('.').next().unwrap_or(""));
    if keys.iter().any(|k| first(k) == "resilience4j") {
        return Ok(Format::Resilience4j);
    }
    if keys.iter().any(|k| grpc::TOP_KEYS.contains(&k.as_str())) {
        return Ok(Format::Grpc);
    }
    if keys.iter().any(|k| sentinel::kind_of_key(k).is_some()) {
        return Ok(Format::Sentinel);
    }
    Err(Problem::at(
        "",
        doc.at,
        "cannot tell the format: expected Spring Boot YAML with `resilience4j.*` settings, \
         Sentinel rules (a JSON array of rules, or `flowRules`, `degradeRules`, … arrays), a \
         gRPC service config (`methodConfig`, `retryThrottling`) or a Kubernetes \
         HorizontalPodAutoscaler; or name it (--format)"
            .into(),
    ))
}

/// Imports a configuration text. All problems found are returned together.
pub fn import(text: &str, opts: &Options) -> Result<Fragment, Vec<Problem>> {
    let doc = tree::parse(text).map_err(|p| vec![p])?;
    let format = match opts.format {
        Some(f) => f,
        None => detect(&doc).map_err(|p| vec![p])?,
    };
    let mut cx = Cx {
        frag: Fragment { format: Some(format), ..Fragment::default() },
        errors: Vec::new(),
        partial: opts.partial,
        hot_param: opts.hot_param,
    };
    match format {
        Format::Resilience4j => r4j::import(&doc, &mut cx),
        Format::Sentinel => sentinel::import(&doc, &mut cx),
        Format::Grpc => grpc::import(&doc, &mut cx),
        Format::Hpa => hpa::import(&doc, &mut cx),
    }
    cx.errors.sort_by_key(|p| (p.at.line, p.at.col));
    cx.frag.notes.sort_by_key(|p| (p.at.line, p.at.col));
    if cx.errors.is_empty() { Ok(cx.frag) } else { Err(cx.errors) }
}

#[cfg(test)]
mod tests;
