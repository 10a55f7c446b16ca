//! Finding where a field path (`call_sites[0].upstream`) stands in a RON text.
//!
//! Deserialization errors carry their own position; errors found later (cross-references,
//! timeline values typed by the registry, sweep values) only know the field path. This
//! small structural scanner maps every value's path to its byte offset, so those errors get
//! a line:column too, and typed values can be parsed in place.
//!
//! Paths follow `serde_path_to_error`'s style: fields joined by `.`, list indices as `[i]`.
//! Enum variants and `Some(..)` wrappers do not add a segment.

use std::collections::BTreeMap;

/// Byte offsets of the start of every value in a RON text, by field path.
pub struct Locations {
    starts: BTreeMap<String, usize>,
    /// Byte offset just past the end of every value (of the outermost value at a path).
    ends: BTreeMap<String, usize>,
}

/// Nesting limit (TigerStyle: a bound on every loop and recursion).
const MAX_DEPTH: usize = 128;

impl Locations {
    /// Scans `text`. A text that is not well-formed yields whatever was found before the
    /// problem (the deserializer reports the problem itself).
    pub fn scan(text: &str) -> Locations {
        let mut s =
            Scanner { b: text.as_bytes(), i: 0, starts: BTreeMap::new(), ends: BTreeMap::new() };
        s.value(String::new(), 0);
        Locations { starts: s.starts, ends: s.ends }
    }
    /// Byte range of the value at `path` (comments and spaces around it excluded).
    pub fn span(&self, path: &str) -> Option<std::ops::Range<usize>> {
        Some(*self.starts.get(path)?..*self.ends.get(path)?)
    }
    /// The named fields directly inside the value at `path` (`""` = the top level), in
    /// text order: `(field name, full path)`.
    pub fn fields(&self, path: &str) -> Vec<(String, String)> {
        let prefix = if path.is_empty() { String::new() } else { format!("{path}.") };
        let mut out: Vec<(usize, String, String)> = self
            .starts
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter_map(|(k, &o)| {
                let rest = &k[prefix.len()..];
                let simple = !rest.is_empty()
                    && rest != "?"
                    && rest.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
                simple.then(|| (o, rest.to_string(), k.clone()))
            })
            .collect();
        out.sort();
        out.into_iter().map(|(_, f, k)| (f, k)).collect()
    }
    /// How many elements the list at `path` has.
    pub fn elements(&self, path: &str) -> usize {
        (0..).take_while(|i| self.starts.contains_key(&format!("{path}[{i}]"))).count()
    }
    /// Byte offset where the value at `path` starts.
    pub fn offset(&self, path: &str) -> Option<usize> {
        self.starts.get(path).copied()
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    starts: BTreeMap<String, usize>,
    ends: BTreeMap<String, usize>,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_ascii_whitespace() {
                self.i += 1;
            } else if self.b[self.i..].starts_with(b"//") {
                while self.peek().is_some_and(|c| c != b'\n') {
                    self.i += 1;
                }
            } else if self.b[self.i..].starts_with(b"/*") {
                self.i += 2;
                while self.i < self.b.len() && !self.b[self.i..].starts_with(b"*/") {
                    self.i += 1;
                }
                self.i = (self.i + 2).min(self.b.len());
            } else {
                break;
            }
        }
    }

    /// Consumes a `,` after an element; on an unexpected byte, skips it so the scan always
    /// makes progress.
    fn separator(&mut self, element_start: usize) {
        self.ws();
        if self.peek() == Some(b',') || self.i == element_start {
            self.i += 1;
        }
    }

    fn ident(&mut self) -> &str {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.i += 1;
        }
        std::str::from_utf8(&self.b[start..self.i]).unwrap_or("")
    }

    fn string(&mut self) {
        // at '"'
        self.i += 1;
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                // An escape at the very end of a truncated text must not step past it.
                b'\\' => self.i = (self.i + 1).min(self.b.len()),
                b'"' => return,
                _ => {}
            }
        }
    }

    fn raw_string(&mut self) {
        // at 'r', then hashes, then '"'
        self.i += 1;
        let mut hashes = 0;
        while self.peek() == Some(b'#') {
            hashes += 1;
            self.i += 1;
        }
        self.i += 1; // opening quote
        while self.i < self.b.len() {
            if self.b[self.i] == b'"' {
                let end = self.i + 1 + hashes;
                if end <= self.b.len() && self.b[self.i + 1..end].iter().all(|&c| c == b'#') {
                    self.i = end;
                    return;
                }
            }
            self.i += 1;
        }
    }

    fn value(&mut self, path: String, depth: usize) {
        self.value_inner(path.clone(), depth);
        // The outermost value at a path finishes last (`Inline(Scenario(..))`).
        self.ends.insert(path, self.i);
    }

    fn value_inner(&mut self, path: String, depth: usize) {
        self.ws();
        if depth > MAX_DEPTH {
            return;
        }
        self.starts.entry(path.clone()).or_insert(self.i);
        match self.peek() {
            None => {}
            Some(b'"') => self.string(),
            Some(b'r') if matches!(self.b.get(self.i + 1), Some(b'#') | Some(b'"')) => {
                self.raw_string()
            }
            Some(b'[') => {
                self.i += 1;
                let mut idx = 0;
                loop {
                    self.ws();
                    match self.peek() {
                        None => return,
                        Some(b']') => {
                            self.i += 1;
                            return;
                        }
                        _ => {}
                    }
                    let before = self.i;
                    self.value(format!("{path}[{idx}]"), depth + 1);
                    self.separator(before);
                    idx += 1;
                }
            }
            Some(b'(') => self.paren(&path, depth),
            Some(b'{') => {
                self.i += 1;
                loop {
                    self.ws();
                    match self.peek() {
                        None => return,
                        Some(b'}') => {
                            self.i += 1;
                            return;
                        }
                        _ => {}
                    }
                    let before = self.i;
                    self.value(format!("{path}.?"), depth + 1);
                    self.ws();
                    if self.peek() == Some(b':') {
                        self.i += 1;
                        self.value(format!("{path}.?"), depth + 1);
                    }
                    self.separator(before);
                }
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                self.ident();
                self.ws();
                if self.peek() == Some(b'(') {
                    self.paren(&path, depth);
                }
            }
            Some(_) => {
                // number, char literal, or anything else: up to a delimiter
                while self.peek().is_some_and(|c| {
                    !matches!(c, b',' | b')' | b']' | b'}') && !c.is_ascii_whitespace()
                }) {
                    self.i += 1;
                }
            }
        }
    }

    /// `( … )`: named fields (`ident: value`) or positional elements (same path).
    fn paren(&mut self, path: &str, depth: usize) {
        self.i += 1;
        loop {
            self.ws();
            match self.peek() {
                None => return,
                Some(b')') => {
                    self.i += 1;
                    return;
                }
                _ => {}
            }
            let before = self.i;
            // Field name?
            let save = self.i;
            let name = self.ident().to_string();
            self.ws();
            if !name.is_empty()
                && self.peek() == Some(b':')
                && self.b.get(self.i + 1) != Some(&b':')
            {
                self.i += 1;
                let p = if path.is_empty() { name } else { format!("{path}.{name}") };
                self.value(p, depth + 1);
            } else {
                self.i = save;
                self.value(path.to_string(), depth + 1);
            }
            self.separator(before);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text cut right after a string's escape (found by the fuzzer): every span stays
    /// inside the text.
    #[test]
    fn a_truncated_escape_ends_at_the_text() {
        let text = "Scenario(\n    name: \"\\";
        let loc = Locations::scan(text);
        let span = loc.span("name").expect("the name's value is located");
        assert!(span.end <= text.len(), "{span:?} past {}", text.len());
    }

    #[test]
    fn paths_to_positions() {
        let text = r##"Experiment(
    name: "x", // comment
    scenario: Inline(Scenario(
        sources: [(name: "a", target: "s"), (name: "b", target: "t")],
        call_sites: [(governors: [Gate("g")], upstream: r#"st"#)],
        timeline: [(at: "1s", path: "p", value: Exponential(mean: "5ms"))],
    )),
    seeds: [1, 2],
)"##;
        let loc = Locations::scan(text);
        let cases = [
            ("name", (2, 11)),
            ("scenario", (3, 15)),
            ("scenario.sources[1].target", (4, 65)),
            ("scenario.call_sites[0].governors[0]", (5, 35)),
            ("scenario.call_sites[0].upstream", (5, 57)),
            ("scenario.timeline[0].value", (6, 49)),
            ("seeds[1]", (8, 16)),
        ];
        for (path, want) in cases {
            let off = loc.offset(path).unwrap_or_else(|| panic!("{path} not found"));
            assert_eq!(line_col(text, off), want, "{path}");
        }
        assert_eq!(loc.offset("nope"), None);
        let span = |p: &str| &text[loc.span(p).unwrap()];
        assert_eq!(span("scenario.sources[1]"), r#"(name: "b", target: "t")"#);
        assert_eq!(span("scenario.call_sites[0].upstream"), r##"r#"st"#"##);
        assert!(
            span("scenario").starts_with("Inline(Scenario(") && span("scenario").ends_with("))")
        );
        let fields: Vec<String> = loc.fields("scenario").into_iter().map(|f| f.0).collect();
        assert_eq!(fields, ["sources", "call_sites", "timeline"]);
        let top: Vec<String> = loc.fields("").into_iter().map(|f| f.0).collect();
        assert_eq!(top, ["name", "scenario", "seeds"]);
        assert_eq!(loc.elements("scenario.sources"), 2);
        assert_eq!(loc.elements("seeds"), 2);
    }
}
