//! The measured profile: rows of `e2e.csv` (whole forward passes), read by header name.
//!
//! Columns used: `phase` (`decode` or `prefill`), `batch` (sequences), `context` (decode:
//! cached tokens per sequence; prefill: prompt length per sequence) and `ms_median`. A
//! `tokens` column, if present, must agree (`batch` for a decode, `batch × context` for a
//! prefill). Other columns (`ms_min`, `ms_max`, …) are ignored; column order is free.

use super::step::StepBatch;
use std::fmt;

/// Data rows read at most (a bound on what a profile may hold).
pub const MAX_PROFILE_ROWS: usize = 1_000_000;

/// Largest `batch` or `context` accepted (keeps every derived count far from overflow).
const MAX_COUNT: u64 = 1 << 31;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Decode,
    Prefill,
}

impl Phase {
    /// The name used in the CSV: `decode` or `prefill`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Decode => "decode",
            Phase::Prefill => "prefill",
        }
    }
}

/// One measured forward pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProfileRow {
    /// Line in the CSV text (1-based), for reports.
    pub line: usize,
    pub phase: Phase,
    /// Sequences in the batch.
    pub batch: u64,
    /// Decode: tokens cached per sequence; prefill: prompt tokens per sequence.
    pub context_tokens: u64,
    /// Median time of the pass.
    pub ms_median: f64,
}

impl ProfileRow {
    /// The step this row measured: `batch` decodes over `context_tokens` each, or `batch`
    /// whole prompts of `context_tokens` tokens.
    pub fn step_batch(&self) -> StepBatch {
        match self.phase {
            Phase::Decode => StepBatch::decode(self.batch, self.context_tokens),
            Phase::Prefill => StepBatch::prefill(self.batch, self.context_tokens),
        }
    }

    /// `decode batch 64 context 512`, `prefill batch 4 length 512`.
    pub fn describe(&self) -> String {
        match self.phase {
            Phase::Decode => format!("decode batch {} context {}", self.batch, self.context_tokens),
            Phase::Prefill => {
                format!("prefill batch {} length {}", self.batch, self.context_tokens)
            }
        }
    }
}

/// A problem in the CSV text, at a line (1-based; 0 = the file as a whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for ProfileError {}

fn err(line: usize, message: impl Into<String>) -> ProfileError {
    ProfileError { line, message: message.into() }
}

/// Column positions, found by header name.
struct Columns {
    count: usize,
    phase: usize,
    batch: usize,
    context: usize,
    ms_median: usize,
    tokens: Option<usize>,
}

fn cell(s: &str) -> &str {
    let s = s.trim();
    s.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(s).trim()
}

fn columns(line: usize, header: &str) -> Result<Columns, ProfileError> {
    let names: Vec<String> = header.split(',').map(|s| cell(s).to_ascii_lowercase()).collect();
    for (i, n) in names.iter().enumerate() {
        if !n.is_empty() && names[..i].contains(n) {
            return Err(err(line, format!("header: column `{n}` appears twice")));
        }
    }
    let find = |name: &str| names.iter().position(|n| n == name);
    let missing: Vec<&str> = ["phase", "batch", "context", "ms_median"]
        .into_iter()
        .filter(|n| find(n).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(err(
            line,
            format!(
                "header: missing column(s) {}; expected phase, batch, context, ms_median \
                 (tokens optional, any order), found: {}",
                missing.join(", "),
                names.join(",")
            ),
        ));
    }
    Ok(Columns {
        count: names.len(),
        phase: find("phase").unwrap_or(0),
        batch: find("batch").unwrap_or(0),
        context: find("context").unwrap_or(0),
        ms_median: find("ms_median").unwrap_or(0),
        tokens: find("tokens"),
    })
}

fn count(line: usize, column: &str, s: &str, min: u64) -> Result<u64, ProfileError> {
    let v: u64 = s.parse().map_err(|_| {
        err(line, format!("{column}: expected a whole number ≥ {min}, found `{s}`"))
    })?;
    if v < min || v > MAX_COUNT {
        return Err(err(
            line,
            format!("{column}: expected {min} ≤ {column} ≤ {MAX_COUNT}, found {v}"),
        ));
    }
    Ok(v)
}

/// Reads the rows of an `e2e.csv` profile. Blank lines are skipped; the first other line
/// is the header. Errors name the line and column and say what was expected.
pub fn parse_profile_csv(text: &str) -> Result<Vec<ProfileRow>, ProfileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines =
        text.lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim().is_empty());
    let Some((header_line, header)) = lines.next() else {
        return Err(err(0, "empty profile: expected a header line and data rows"));
    };
    let cols = columns(header_line, header)?;
    let mut rows = vec![];
    for (line, l) in lines {
        if rows.len() == MAX_PROFILE_ROWS {
            return Err(err(line, format!("more than {MAX_PROFILE_ROWS} data rows")));
        }
        let fields: Vec<&str> = l.split(',').map(cell).collect();
        if fields.len() != cols.count {
            return Err(err(
                line,
                format!(
                    "expected {} comma-separated fields (as in the header), found {}",
                    cols.count,
                    fields.len()
                ),
            ));
        }
        let phase = match fields[cols.phase].to_ascii_lowercase().as_str() {
            "decode" => Phase::Decode,
            "prefill" => Phase::Prefill,
            other => {
                return Err(err(
                    line,
                    format!("phase: expected `decode` or `prefill`, found `{other}`"),
                ));
            }
        };
        let batch = count(line, "batch", fields[cols.batch], 1)?;
        let min_context = if phase == Phase::Prefill { 1 } else { 0 };
        let context_tokens = count(line, "context", fields[cols.context], min_context)?;
        let ms = fields[cols.ms_median];
        let ms_median: f64 = ms.parse().map_err(|_| {
            err(line, format!("ms_median: expected a number of milliseconds, found `{ms}`"))
        })?;
        if !(ms_median.is_finite() && ms_median > 0.0) {
            return Err(err(line, format!("ms_median: expected a time > 0, found {ms_median}")));
        }
        if let Some(t) = cols.tokens {
            let tokens = count(line, "tokens", fields[t], 1)?;
            let expected = match phase {
                Phase::Decode => batch,
                Phase::Prefill => batch * context_tokens,
            };
            if tokens != expected {
                let rule = match phase {
                    Phase::Decode => "batch",
                    Phase::Prefill => "batch × context",
                };
                let phase = phase.name();
                return Err(err(
                    line,
                    format!("tokens: a {phase} row has {rule} = {expected} tokens, found {tokens}"),
                ));
            }
        }
        rows.push(ProfileRow { line, phase, batch, context_tokens, ms_median });
    }
    if rows.is_empty() {
        return Err(err(0, "no data rows after the header"));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        parse_profile_csv(text).unwrap_err().to_string()
    }

    #[test]
    fn columns_are_found_by_name_in_any_order() {
        let rows = parse_profile_csv(
            "\u{feff}ms_max,ms_median,context,Batch,phase\r\n\r\n9,4.5,512,8,decode\r\n9, 50 ,512,4,\"prefill\"\n",
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].line, 3);
        assert_eq!(rows[0].phase, Phase::Decode);
        assert_eq!((rows[0].batch, rows[0].context_tokens, rows[0].ms_median), (8, 512, 4.5));
        assert_eq!(rows[1].step_batch(), StepBatch::prefill(4, 512));
        assert_eq!(rows[1].describe(), "prefill batch 4 length 512");
    }

    #[test]
    fn bad_input_names_the_line_and_what_was_expected() {
        let cases = [
            ("", "empty profile"),
            ("phase,batch,ms_median\n", "missing column(s) context"),
            ("phase,batch,batch,context,ms_median\n", "column `batch` appears twice"),
            ("phase,batch,context,ms_median\n\n", "no data rows"),
        ];
        for (text, want) in cases {
            let got = error(text);
            assert!(got.contains(want), "{text:?}: got `{got}`, want `{want}`");
        }
        // A good row on line 2, the bad one on line 3.
        let rows = [
            (
                "decode,1,512,1",
                "line 3: expected 5 comma-separated fields (as in the header), found 4",
            ),
            ("encode,1,512,1,4.7", "line 3: phase: expected `decode` or `prefill`, found `encode`"),
            ("decode,0,512,0,4.7", "line 3: batch: expected 1 ≤ batch ≤ 2147483648, found 0"),
            ("decode,-1,512,1,4.7", "line 3: batch: expected a whole number ≥ 1, found `-1`"),
            ("decode,1e9,512,1,4.7", "line 3: batch: expected a whole number ≥ 1, found `1e9`"),
            ("decode,99999999999,512,1,5", "line 3: batch: expected 1 ≤ batch ≤ 2147483648"),
            ("prefill,1,0,0,4.7", "line 3: context: expected 1 ≤ context"),
            (
                "decode,1,512,1,fast",
                "line 3: ms_median: expected a number of milliseconds, found `fast`",
            ),
            ("decode,1,512,1,NaN", "line 3: ms_median: expected a time > 0, found NaN"),
            ("decode,1,512,1,-3", "line 3: ms_median: expected a time > 0, found -3"),
            (
                "prefill,4,512,512,40",
                "line 3: tokens: a prefill row has batch × context = 2048 tokens, found 512",
            ),
            ("decode,4,512,1,5", "line 3: tokens: a decode row has batch = 4 tokens, found 1"),
        ];
        for (row, want) in rows {
            let text = format!("phase,batch,context,tokens,ms_median\ndecode,1,512,1,4.7\n{row}\n");
            let got = error(&text);
            assert!(got.contains(want), "{row:?}: got `{got}`, want `{want}`");
        }
    }
}
