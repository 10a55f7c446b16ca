//! Reading RON with errors a person can act on: file, line:column, field path, what was
//! expected and what was found.

use crate::locate::{Locations, line_col};
use models::params::{ParamType, ParamValue};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// An error in an input file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub file: PathBuf,
    pub line: usize,
    pub col: usize,
    /// Field path, e.g. `scenario.stations[0].servers` (empty when not known).
    pub field: String,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file.display(), self.line, self.col)?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for InputError {}

/// The text of a file's bytes; invalid UTF-8 is an error at its line:column.
pub fn utf8(file: &Path, bytes: Vec<u8>) -> Result<String, InputError> {
    String::from_utf8(bytes).map_err(|e| {
        let good = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let text = std::str::from_utf8(&bytes[..good]).expect("valid up to here");
        let (line, col) = line_col(text, good);
        InputError {
            file: file.to_path_buf(),
            line,
            col,
            field: String::new(),
            message: format!(
                "invalid UTF-8 (byte 0x{:02x} at byte offset {good}); files must be UTF-8 text",
                bytes[good]
            ),
        }
    })
}

/// Makes ron's messages read as "expected X, found Y" where they do not already.
fn polish(msg: String) -> String {
    msg.replace("Unexpected missing field named", "missing field")
        .replace("Unexpected variant named", "unknown variant")
        .replace("Unexpected duplicate field named", "duplicate field")
        .replace(
            "Integer is out of bounds",
            "expected a whole number in range (≥ 0 for counts), found one out of bounds",
        )
        .replace("Unexpected field named", "unknown field")
        .replace("Expected", "expected")
}

/// The message of a parse error: ron's own, polished, except for an optional field written
/// without `Some` (`max_concurrency: 100`), which ron calls "Expected option": then what to
/// write instead (`write Some(100)`), with the value as written when it is known.
fn message(code: &ron::Error, value: Option<&str>) -> String {
    if !matches!(code, ron::Error::ExpectedOption) {
        return polish(code.to_string());
    }
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return "expected `Some(<value>)` or `None` (an optional field)".into();
    };
    let v: String = match v.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &v[..cut]),
        None => v.to_string(),
    };
    format!("expected `Some(<value>)` or `None` (an optional field), found `{v}`: write Some({v})")
}

/// A RON text and its name, with the field-path index built on demand.
pub struct Source<'a> {
    pub file: &'a Path,
    pub text: &'a str,
    locations: std::cell::OnceCell<Locations>,
}

impl<'a> Source<'a> {
    pub fn new(file: &'a Path, text: &'a str) -> Self {
        Source { file, text, locations: std::cell::OnceCell::new() }
    }

    /// Deserializes the whole text as `T`.
    pub fn parse<T: Deserialize<'a>>(&self) -> Result<T, InputError> {
        let mut de =
            ron::Deserializer::from_str(self.text).map_err(|e| self.spanned(e, String::new()))?;
        let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let field = field_string(e.path());
            let inner = e.into_inner();
            // A range or consistency check (a custom message) concerns the whole value:
            // point at its start. Syntax errors keep the parser's own position.
            if let ron::Error::Message(m) = &inner
                && !field.is_empty()
                && self.offset(&field).is_some()
            {
                return self.error_at(&field, m.clone());
            }
            self.spanned(de.span_error(inner), field)
        })?;
        de.end().map_err(|e| self.spanned(de.span_error(e), String::new()))?;
        Ok(value)
    }

    /// Parses the value found at `field` with the parameter type `ty`.
    pub fn parse_at(&self, field: &str, ty: &ParamType) -> Result<ParamValue, InputError> {
        let off =
            self.offset(field).ok_or_else(|| self.error_at(field, "value not found".into()))?;
        let rest = &self.text[off..];
        let mut de =
            ron::Deserializer::from_str(rest).map_err(|e| self.spanned(e, field.into()))?;
        ty.deserialize_value(&mut de).map_err(|e| {
            let sp = de.span_error(e);
            // Positions inside `rest` → positions in the file.
            let (line0, col0) = line_col(self.text, off);
            let (line, col) = if sp.span.start.line <= 1 {
                (line0, col0 + sp.span.start.col - 1)
            } else {
                (line0 + sp.span.start.line - 1, sp.span.start.col)
            };
            InputError {
                file: self.file.to_path_buf(),
                line,
                col,
                field: field.into(),
                message: message(&sp.code, self.value_text(field)),
            }
        })
    }

    pub fn offset(&self, field: &str) -> Option<usize> {
        self.locations().offset(field)
    }

    /// Where every value of the text stands, by field path.
    pub fn locations(&self) -> &Locations {
        self.locations.get_or_init(|| Locations::scan(self.text))
    }

    /// An error about the value at `field`, positioned where that value starts.
    pub fn error_at(&self, field: &str, message: String) -> InputError {
        let (line, col) = self.offset(field).map(|o| line_col(self.text, o)).unwrap_or((1, 1));
        InputError { file: self.file.to_path_buf(), line, col, field: field.into(), message }
    }

    fn spanned(&self, e: ron::error::SpannedError, field: String) -> InputError {
        InputError {
            file: self.file.to_path_buf(),
            line: e.span.start.line,
            col: e.span.start.col,
            message: message(&e.code, self.value_text(&field)),
            field,
        }
    }

    /// The text of the value at `field`, when the field is located.
    fn value_text(&self, field: &str) -> Option<&str> {
        if field.is_empty() {
            return None;
        }
        // `get`: a span the scanner ended inside a character (an escape before a multi-byte
        // one in a truncated text) quotes nothing rather than panicking.
        self.locations().span(field).and_then(|r| self.text.get(r))
    }
}

/// The field path in the locator's style: enum variant segments (`Inline`, `Some`) and
/// unknown segments (`?`) are dropped, since they are not fields.
fn field_string(p: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in p.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if key.starts_with(|c: char| c.is_ascii_uppercase()) {
                    continue;
                }
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    out
}
