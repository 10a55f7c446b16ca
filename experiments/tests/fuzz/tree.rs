//! A RON syntax tree for structure-aware mutation: just enough of RON to take every bundled
//! and test file apart and print it back (comments dropped). Not the project's parser: a
//! file it cannot read is still fuzzed byte by byte.

/// One RON value.
#[derive(Clone, Debug, PartialEq)]
pub enum V {
    /// A string's text as written between the quotes (escapes kept).
    Str(String),
    /// A number, an identifier (`true`, `None`, `Sequential`), anything atomic.
    Atom(String),
    /// `Name(...)` or `(...)`.
    Paren {
        name: Option<String>,
        items: Vec<Item>,
    },
    List(Vec<V>),
    Map(Vec<(V, V)>),
}

/// One element of a parenthesised value.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Field(String, V),
    Pos(V),
}

impl Item {
    pub fn value(&self) -> &V {
        match self {
            Item::Field(_, v) | Item::Pos(v) => v,
        }
    }
    pub fn value_mut(&mut self) -> &mut V {
        match self {
            Item::Field(_, v) | Item::Pos(v) => v,
        }
    }
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

/// Parses RON text; `None` when it is not RON this parser understands.
pub fn parse(text: &str) -> Option<V> {
    let mut p = P { s: text.as_bytes(), i: 0, depth: 0 };
    p.ws();
    let v = p.value()?;
    p.ws();
    (p.i == p.s.len()).then_some(v)
}

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn ws(&mut self) {
        loop {
            while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                self.i += 1;
            }
            if self.s[self.i..].starts_with(b"//") {
                while self.peek().is_some_and(|c| c != b'\n') {
                    self.i += 1;
                }
            } else if self.s[self.i..].starts_with(b"/*") {
                match self.s[self.i + 2..].windows(2).position(|w| w == b"*/") {
                    Some(k) => self.i += k + 4,
                    None => self.i = self.s.len(),
                }
            } else {
                return;
            }
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn ident(&mut self) -> Option<String> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }
    fn value(&mut self) -> Option<V> {
        self.depth += 1;
        if self.depth > 100 {
            return None;
        }
        self.ws();
        let v = match self.peek()? {
            b'"' => {
                self.i += 1;
                let start = self.i;
                loop {
                    match self.peek()? {
                        b'\\' => self.i += 2,
                        b'"' => break,
                        _ => self.i += 1,
                    }
                }
                let s = std::str::from_utf8(&self.s[start..self.i]).ok()?.to_string();
                self.i += 1;
                V::Str(s)
            }
            b'(' => {
                self.i += 1;
                V::Paren { name: None, items: self.items()? }
            }
            b'[' => {
                self.i += 1;
                let mut out = Vec::new();
                while !self.eat(b']') {
                    out.push(self.value()?);
                    if !self.eat(b',') {
                        self.eat(b']').then_some(())?;
                        break;
                    }
                }
                V::List(out)
            }
            b'{' => {
                self.i += 1;
                let mut out = Vec::new();
                while !self.eat(b'}') {
                    let k = self.value()?;
                    self.eat(b':').then_some(())?;
                    out.push((k, self.value()?));
                    if !self.eat(b',') {
                        self.eat(b'}').then_some(())?;
                        break;
                    }
                }
                V::Map(out)
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let id = self.ident()?;
                let save = self.i;
                self.ws();
                if self.peek() == Some(b'(') {
                    self.i += 1;
                    V::Paren { name: Some(id), items: self.items()? }
                } else {
                    self.i = save;
                    V::Atom(id)
                }
            }
            c if c.is_ascii_digit() || c == b'-' || c == b'+' || c == b'.' => {
                let start = self.i;
                self.i += 1;
                while self.peek().is_some_and(|c| {
                    c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-' || c == b'+'
                }) {
                    self.i += 1;
                }
                V::Atom(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
            }
            _ => return None,
        };
        self.depth -= 1;
        Some(v)
    }
    fn items(&mut self) -> Option<Vec<Item>> {
        let mut out = Vec::new();
        while !self.eat(b')') {
            self.ws();
            let save = self.i;
            let field = self.ident().and_then(|id| {
                self.ws();
                (self.peek() == Some(b':')).then(|| {
                    self.i += 1;
                    id
                })
            });
            match field {
                Some(name) => out.push(Item::Field(name, self.value()?)),
                None => {
                    self.i = save;
                    out.push(Item::Pos(self.value()?));
                }
            }
            if !self.eat(b',') {
                self.eat(b')').then_some(())?;
                break;
            }
        }
        Some(out)
    }
}

/// Prints a value back as RON.
pub fn print(v: &V) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &V, out: &mut String) {
    match v {
        V::Str(s) => {
            out.push('"');
            out.push_str(s);
            out.push('"');
        }
        V::Atom(a) => out.push_str(a),
        V::Paren { name, items } => {
            if let Some(n) = name {
                out.push_str(n);
            }
            out.push('(');
            for (k, it) in items.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                if let Item::Field(f, _) = it {
                    out.push_str(f);
                    out.push_str(": ");
                }
                write(it.value(), out);
            }
            out.push(')');
        }
        V::List(xs) => {
            out.push('[');
            for (k, x) in xs.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                write(x, out);
            }
            out.push(']');
        }
        V::Map(kv) => {
            out.push('{');
            for (k, (a, b)) in kv.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                write(a, out);
                out.push_str(": ");
                write(b, out);
            }
            out.push('}');
        }
    }
}

/// The children of a value, in order.
pub fn children(v: &V) -> Vec<&V> {
    match v {
        V::Paren { items, .. } => items.iter().map(|i| i.value()).collect(),
        V::List(xs) => xs.iter().collect(),
        V::Map(kv) => kv.iter().flat_map(|(a, b)| [a, b]).collect(),
        _ => Vec::new(),
    }
}

/// Every node's path (child indices from the root), depth first.
pub fn paths(v: &V) -> Vec<Vec<usize>> {
    fn go(v: &V, at: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        out.push(at.clone());
        for (k, c) in children(v).into_iter().enumerate() {
            at.push(k);
            go(c, at, out);
            at.pop();
        }
    }
    let mut out = Vec::new();
    go(v, &mut Vec::new(), &mut out);
    out
}

/// The node at `path`.
pub fn at<'a>(v: &'a V, path: &[usize]) -> Option<&'a V> {
    let Some((&k, rest)) = path.split_first() else { return Some(v) };
    at(*children(v).get(k)?, rest)
}

/// The node at `path`, to change it.
pub fn at_mut<'a>(v: &'a mut V, path: &[usize]) -> Option<&'a mut V> {
    let Some((&k, rest)) = path.split_first() else { return Some(v) };
    let child = match v {
        V::Paren { items, .. } => items.get_mut(k).map(|i| i.value_mut()),
        V::List(xs) => xs.get_mut(k),
        V::Map(kv) => kv.get_mut(k / 2).map(|(a, b)| if k % 2 == 0 { a } else { b }),
        _ => None,
    }?;
    at_mut(child, rest)
}

#[test]
fn every_bundled_file_round_trips() {
    // Printing a parsed file and parsing it again gives the same tree (comments aside).
    for f in super::corpus::files() {
        if let Some(v) = parse(&f.text) {
            assert_eq!(parse(&print(&v)).as_ref(), Some(&v), "{}", f.path.display());
        }
    }
}
