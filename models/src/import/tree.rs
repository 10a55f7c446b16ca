//! A YAML 1.2 (and so JSON) document as a tree whose every key and value knows its
//! line:column, built from saphyr-parser's events.
//!
//! Scalars keep their text (a binder reads `"10"` and `10` alike, as Spring's and
//! fastjson's do) and whether they were plain (`null`, `~` and an empty plain scalar are
//! null). Aliases are expanded (bounded); a `<<` merge key inserts the keys of the mapping
//! it names that the mapping does not set itself (SnakeYAML's merge, which Spring Boot
//! reads).
//!
//! Architecture invariant: bounded — nesting depth ≤ [`MAX_DEPTH`], nodes (aliases
//! expanded) ≤ [`MAX_NODES`]; a document over either bound is an error, never a stack
//! overflow or a memory blow-up.

use super::{Pos, Problem};
use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use std::collections::BTreeMap;

/// Deepest nesting read.
pub const MAX_DEPTH: usize = 64;
/// Most nodes in a document, aliases expanded.
pub const MAX_NODES: usize = 1_000_000;

#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub kind: Kind,
    pub at: Pos,
}

#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// The text and whether it was a plain scalar.
    Scalar(String, bool),
    Seq(Vec<Node>),
    /// Keys in document order (a key written twice is an error).
    Map(Vec<(Key, Node)>),
}

#[derive(Clone, Debug)]
pub(crate) struct Key {
    pub text: String,
    pub at: Pos,
}

impl Node {
    /// A plain `null`, `~` or empty scalar.
    pub fn is_null(&self) -> bool {
        matches!(&self.kind, Kind::Scalar(t, true) if matches!(t.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }
    pub fn scalar(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar(t, _) => Some(t),
            _ => None,
        }
    }
    /// What the node is, for "expected X, found Y".
    pub fn what(&self) -> String {
        match &self.kind {
            Kind::Scalar(t, _) if self.is_null() && t.is_empty() => "nothing".into(),
            Kind::Scalar(t, _) => format!("`{t}`"),
            Kind::Seq(_) => "a list".into(),
            Kind::Map(_) => "a mapping".into(),
        }
    }
}

fn pos(span: &Span) -> Pos {
    Pos { line: span.start.line(), col: span.start.col() + 1 }
}

struct Builder<'a> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    anchors: BTreeMap<usize, Node>,
    nodes: usize,
}

/// Parses one YAML (or JSON) document. An empty text is an empty mapping. JSON may carry
/// `/* */` and `//` comments (fastjson, which Sentinel's data sources use, reads them).
pub(crate) fn parse(text: &str) -> Result<Node, Problem> {
    let stripped = json_comments_blanked(text);
    let text = stripped.as_deref().unwrap_or(text);
    let mut b = Builder { parser: Parser::new_from_str(text), anchors: BTreeMap::new(), nodes: 0 };
    let mut doc = None;
    loop {
        let (ev, span) = b.next()?;
        match ev {
            Event::StreamStart | Event::DocumentEnd => {}
            Event::StreamEnd => break,
            Event::DocumentStart(_) => {
                let (ev, span2) = b.next()?;
                if matches!(ev, Event::DocumentEnd) {
                    continue;
                }
                if doc.is_some() {
                    return Err(Problem::at(
                        "",
                        pos(&span),
                        "several YAML documents (`---`, e.g. Spring profiles): import reads \
                         one; put the profile you mean in its own file"
                            .into(),
                    ));
                }
                doc = Some(b.node(ev, span2, 0)?);
            }
            other => return Err(Problem::at("", pos(&span), format!("unexpected {other:?}"))),
        }
    }
    Ok(doc.unwrap_or(Node { kind: Kind::Map(Vec::new()), at: Pos { line: 1, col: 1 } }))
}

/// For a JSON text (its first character outside comments is `[` or `{`) with comments:
/// the text with every comment character blanked (newlines kept, so positions hold).
fn json_comments_blanked(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_str, mut esc, mut seen, mut any) = (false, false, false, false);
    while let Some(c) = chars.next() {
        if in_str {
            out.push(c);
            (esc, in_str) = (c == '\\' && !esc, c != '"' || esc);
            continue;
        }
        match (c, chars.peek()) {
            ('/', Some('*')) => {
                any = true;
                out.push_str("  ");
                chars.next();
                let mut prev = ' ';
                for c in chars.by_ref() {
                    out.push(if c == '\n' { '\n' } else { ' ' });
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            ('/', Some('/')) => {
                any = true;
                while let Some(&c) = chars.peek() {
                    if c == '\n' {
                        break;
                    }
                    out.push(' ');
                    chars.next();
                }
            }
            _ => {
                if !seen && !c.is_whitespace() {
                    if c != '[' && c != '{' {
                        return None;
                    }
                    seen = true;
                }
                in_str = c == '"';
                out.push(c);
            }
        }
    }
    any.then_some(out)
}

impl<'a> Builder<'a> {
    fn next(&mut self) -> Result<(Event<'a>, Span), Problem> {
        match self.parser.next_event() {
            None => Err(Problem::at("", Pos { line: 1, col: 1 }, "unexpected end of input".into())),
            Some(Err(e)) => Err(Problem::at(
                "",
                Pos { line: e.marker().line(), col: e.marker().col() + 1 },
                format!("not valid YAML/JSON: {}", e.info()),
            )),
            Some(Ok(x)) => Ok(x),
        }
    }

    fn count(&mut self, n: usize, at: Pos) -> Result<(), Problem> {
        self.nodes += n;
        if self.nodes > MAX_NODES {
            return Err(Problem::at(
                "",
                at,
                format!("more than {MAX_NODES} values (aliases expanded)"),
            ));
        }
        Ok(())
    }

    fn node(&mut self, ev: Event<'a>, span: Span, depth: usize) -> Result<Node, Problem> {
        let at = pos(&span);
        if depth > MAX_DEPTH {
            return Err(Problem::at("", at, format!("nested deeper than {MAX_DEPTH} levels")));
        }
        self.count(1, at)?;
        let (node, anchor) = match ev {
            Event::Scalar(text, style, anchor, _) => {
                let plain = matches!(style, ScalarStyle::Plain);
                (Node { kind: Kind::Scalar(text.into_owned(), plain), at }, anchor)
            }
            Event::Alias(id) => {
                let n =
                    self.anchors.get(&id).cloned().ok_or_else(|| {
                        Problem::at("", at, "an alias to an unknown anchor".into())
                    })?;
                self.count(size(&n), at)?;
                return Ok(n);
            }
            Event::SequenceStart(anchor, _) => {
                let mut items = Vec::new();
                loop {
                    let (ev, span) = self.next()?;
                    if matches!(ev, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(ev, span, depth + 1)?);
                }
                (Node { kind: Kind::Seq(items), at }, anchor)
            }
            Event::MappingStart(anchor, _) => (self.mapping(at, depth)?, anchor),
            other => return Err(Problem::at("", at, format!("unexpected {other:?}"))),
        };
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        Ok(node)
    }

    fn mapping(&mut self, at: Pos, depth: usize) -> Result<Node, Problem> {
        let mut entries: Vec<(Key, Node)> = Vec::new();
        let mut merged: Vec<(Key, Node)> = Vec::new();
        loop {
            let (ev, span) = self.next()?;
            if matches!(ev, Event::MappingEnd) {
                break;
            }
            let key_node = self.node(ev, span, depth + 1)?;
            let Some(text) = key_node.scalar().map(str::to_string) else {
                return Err(Problem::at("", key_node.at, "a key must be a scalar".into()));
            };
            let key = Key { text, at: key_node.at };
            let (ev, span) = self.next()?;
            let value = self.node(ev, span, depth + 1)?;
            if key.text == "<<" && matches!(key_node.kind, Kind::Scalar(_, true)) {
                merged.extend(merge_sources(value)?);
                continue;
            }
            if entries.iter().any(|(k, _)| k.text == key.text) {
                return Err(Problem::at(
                    &key.text,
                    key.at,
                    format!("key `{}` written twice in one mapping", key.text),
                ));
            }
            entries.push((key, value));
        }
        for (k, v) in merged {
            if !entries.iter().any(|(e, _)| e.text == k.text) {
                entries.push((k, v));
            }
        }
        Ok(Node { kind: Kind::Map(entries), at })
    }
}

/// The entries a `<<` merge key brings: a mapping's, or those of a list of mappings
/// (earlier ones win).
fn merge_sources(value: Node) -> Result<Vec<(Key, Node)>, Problem> {
    match value.kind {
        Kind::Map(e) => Ok(e),
        Kind::Seq(items) => {
            let mut out: Vec<(Key, Node)> = Vec::new();
            for it in items {
                let at = it.at;
                let Kind::Map(e) = it.kind else {
                    return Err(Problem::at("<<", at, "a merge key takes mappings".into()));
                };
                for (k, v) in e {
                    if !out.iter().any(|(o, _)| o.text == k.text) {
                        out.push((k, v));
                    }
                }
            }
            Ok(out)
        }
        Kind::Scalar(..) => {
            Err(Problem::at("<<", value.at, "a merge key takes a mapping (`<<: *anchor`)".into()))
        }
    }
}

/// Nodes in a tree (the alias expansion bound).
fn size(n: &Node) -> usize {
    match &n.kind {
        Kind::Scalar(..) => 1,
        Kind::Seq(v) => 1 + v.iter().map(size).sum::<usize>(),
        Kind::Map(v) => 1 + v.iter().map(|(_, n)| 1 + size(n)).sum::<usize>(),
    }
}
