//! Trace replay: arrivals (and token counts) read from a recorded request log.
//!
//! A trace is CSV with a header; columns are mapped by name, so the bundled Azure LLM
//! traces (`arrived_at`, `num_prefill_tokens`, `num_decode_tokens`) and other logs are read
//! as they are. `rate_scale` compresses time (2.0 = twice the rate) to stress a scenario
//! with a real arrival pattern.
//!
//! Optional `class`, `user` and `key` columns give each row its class (a class name of the
//! scenario), user id and cache key (whole numbers ≥ 1). An empty cell, or no such column,
//! leaves the attribute to the source's rules (docs/domain.md §2: `assign` class shares and token
//! bands, hashed users and keys, the population, the key popularity), exactly as before.
//!
//! This module parses text; reading the file is the file layer's job (`experiments`), which
//! stores the parsed rows in [`TraceSpec::data`] before the scenario is checked.

use serde::{Deserialize, Serialize};
use sim_core::SimDuration;
use std::sync::Arc;

/// Parsed trace rows, in file order (arrival times must not decrease).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceData {
    /// Arrival offsets in ns from the first row's time (which becomes 0).
    pub arrival_ns: Vec<u64>,
    pub prompt_tokens: Vec<Option<u32>>,
    pub output_tokens: Vec<Option<u32>>,
    /// With a `class` column: each row's class, an index into `class_names` (`None`: an
    /// empty cell). Empty without the column.
    pub class: Vec<Option<u16>>,
    /// The distinct class names of the `class` column, in first-seen order, with the line
    /// each first appears on (for the scenario's check of the names).
    pub class_names: Vec<(String, usize)>,
    /// With a `user` / `key` column: each row's user id / key (0: an empty cell). Empty
    /// without the column.
    pub user: Vec<u64>,
    pub key: Vec<u64>,
}

/// Column names of a trace file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Columns")]
pub struct TraceColumns {
    #[serde(default = "default_arrival")]
    pub arrival: String,
    /// `None`: the trace has no prompt-token column.
    #[serde(default = "default_prompt")]
    pub prompt_tokens: Option<String>,
    #[serde(default = "default_output")]
    pub output_tokens: Option<String>,
    /// The column of each row's class name (default: none; classes by the source's rules).
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub class: Option<String>,
    /// The column of each row's user id (default: none).
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub user: Option<String>,
    /// The column of each row's cache key (default: none).
    #[serde(
        default,
        deserialize_with = "crate::validate::present",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub key: Option<String>,
}

fn default_arrival() -> String {
    "arrived_at".into()
}
fn default_prompt() -> Option<String> {
    Some("num_prefill_tokens".into())
}
fn default_output() -> Option<String> {
    Some("num_decode_tokens".into())
}

impl Default for TraceColumns {
    fn default() -> Self {
        TraceColumns {
            arrival: default_arrival(),
            prompt_tokens: default_prompt(),
            output_tokens: default_output(),
            class: None,
            user: None,
            key: None,
        }
    }
}

/// A trace source's settings, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Trace")]
pub struct TraceSpec {
    /// CSV file, relative to the scenario file.
    pub file: String,
    /// Column names (default: the Azure LLM trace's).
    #[serde(default)]
    pub columns: TraceColumns,
    /// Unit of the arrival column (`"1s"` for seconds, `"1ms"` for milliseconds).
    #[serde(default = "one_second")]
    pub time_unit: SimDuration,
    /// Replay speed: 2.0 replays at twice the recorded rate.
    #[serde(default = "one")]
    pub rate_scale: f64,
    /// A run that replays under [`MIN_REPLAYED_PERCENT`] of the rows is refused (a trace
    /// in milliseconds read with `time_unit: "1s"`), unless this says it is on purpose.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The parsed rows (filled by the file layer; not part of the scenario's text).
    #[serde(skip)]
    pub data: Option<Arc<TraceData>>,
}

fn one_second() -> SimDuration {
    SimDuration::from_secs(1)
}
fn one() -> f64 {
    1.0
}

/// Most distinct names in a `class` column (a scenario has at most 64 classes).
const MAX_CLASSES: usize = 64;
/// Most rows a trace may have (memory: ~24 bytes a row).
pub const MAX_ROWS: usize = 50_000_000;
/// Most bytes of a trace file (the file layer reads no more: a path to `/dev/zero` or a
/// never-ending pipe is refused, not read until memory runs out). 50·10⁶ rows of ~20 bytes.
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// Most bytes of a cell an error quotes: a bad cell may be a whole file without a line
/// break (a binary file, a trace with another separator), and is never echoed whole.
pub const MAX_QUOTED_BYTES: usize = 100;

/// `text` in backticks as an error quotes it: whole up to [`MAX_QUOTED_BYTES`], else its
/// first bytes (cut at a character boundary), an ellipsis and its length.
pub fn quote(text: &str) -> String {
    if text.len() <= MAX_QUOTED_BYTES {
        return format!("`{text}`");
    }
    let mut end = MAX_QUOTED_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("`{}…` ({} bytes)", &text[..end], text.len())
}

/// A header's column names as an error lists them: each quoted, at most the first 16.
fn header_list(names: &[&str]) -> String {
    const SHOWN: usize = 16;
    let mut list: Vec<String> = names.iter().take(SHOWN).map(|n| quote(n)).collect();
    if names.len() > SHOWN {
        list.push(format!("… ({} columns)", names.len()));
    }
    list.join(", ")
}

/// A run replaying fewer than this percentage of a trace's rows is refused unless the trace
/// says `partial: true`: it is almost always a wrong `time_unit`.
pub const MIN_REPLAYED_PERCENT: u64 = 1;

impl TraceData {
    /// Parses CSV text. Errors name the 1-based line and column and what was expected.
    pub fn parse_csv(text: &str, spec: &TraceSpec) -> Result<TraceData, String> {
        // A byte-order mark (spreadsheet exports) is not part of the first column's name.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text.lines().enumerate();
        let (_, header) = lines.next().ok_or("the trace is empty: expected a header line")?;
        let names: Vec<&str> = header.split(',').map(|s| s.trim()).collect();
        let find = |want: &str| {
            names.iter().position(|n| *n == want).ok_or_else(|| {
                format!(
                    "line 1: no column named {}; the header has: {}",
                    quote(want),
                    header_list(&names)
                )
            })
        };
        let a = find(&spec.columns.arrival)?;
        let p = spec.columns.prompt_tokens.as_deref().map(find).transpose()?;
        let o = spec.columns.output_tokens.as_deref().map(find).transpose()?;
        let cols = &spec.columns;
        let (k, u, y) = (
            cols.class.as_deref().map(find).transpose()?,
            cols.user.as_deref().map(find).transpose()?,
            cols.key.as_deref().map(find).transpose()?,
        );
        let unit_ns = spec.time_unit.0 as f64;
        let mut d = TraceData::default();
        let mut first: Option<f64> = None;
        let mut last = f64::NEG_INFINITY;
        for (i, line) in lines {
            let line_no = i + 1;
            if line.trim().is_empty() {
                continue;
            }
            if d.arrival_ns.len() >= MAX_ROWS {
                return Err(format!("line {line_no}: more than {MAX_ROWS} rows"));
            }
            let cells: Vec<&str> = line.split(',').map(|s| s.trim()).collect();
            let cell = |c: usize, what: &str| {
                cells.get(c).copied().ok_or_else(|| {
                    format!(
                        "line {line_no}: expected {} columns, found {} (no `{what}`)",
                        names.len(),
                        cells.len()
                    )
                })
            };
            let raw = cell(a, &spec.columns.arrival)?;
            let t: f64 =
                raw.parse().ok().filter(|x: &f64| x.is_finite() && *x >= 0.0).ok_or_else(|| {
                    format!(
                        "line {line_no}: column `{}`: expected a non-negative number, found {}",
                        spec.columns.arrival,
                        quote(raw)
                    )
                })?;
            if t < last {
                return Err(format!(
                    "line {line_no}: column `{}`: arrival times must not decrease ({t} after {last})",
                    spec.columns.arrival
                ));
            }
            last = t;
            let t0 = *first.get_or_insert(t);
            let ns = ((t - t0) * unit_ns).round();
            // 2⁶³ ns is 292 years: beyond it the clock cannot hold the time (never clamped).
            if ns >= 9.2e18 {
                return Err(format!(
                    "line {line_no}: column `{}`: {} is more than the 292 years a run can hold after the first row",
                    spec.columns.arrival,
                    quote(raw)
                ));
            }
            d.arrival_ns.push(ns as u64);
            let tokens =
                |col: Option<usize>, name: &Option<String>| -> Result<Option<u32>, String> {
                    let Some(c) = col else { return Ok(None) };
                    let raw = cell(c, name.as_deref().unwrap_or(""))?;
                    raw.parse::<u32>().map(Some).map_err(|_| {
                    format!(
                        "line {line_no}: column `{}`: expected a whole number of tokens, found {}",
                        name.as_deref().unwrap_or(""),
                        quote(raw)
                    )
                })
                };
            d.prompt_tokens.push(tokens(p, &spec.columns.prompt_tokens)?);
            d.output_tokens.push(tokens(o, &spec.columns.output_tokens)?);
            if let Some(c) = k {
                let raw = cell(c, cols.class.as_deref().unwrap_or(""))?;
                let class = (!raw.is_empty()).then(|| d.class_index(raw, line_no)).transpose()?;
                d.class.push(class);
            }
            let id = |col: usize, name: &Option<String>, what: &str| -> Result<u64, String> {
                let name = name.as_deref().unwrap_or("");
                let raw = cell(col, name)?;
                if raw.is_empty() {
                    return Ok(0);
                }
                raw.parse::<u64>().ok().filter(|&x| x >= 1).ok_or_else(|| {
                    format!(
                        "line {line_no}: column `{name}`: expected {what} (a whole number ≥ 1; an empty cell for none), found {}",
                        quote(raw)
                    )
                })
            };
            if let Some(c) = u {
                d.user.push(id(c, &cols.user, "a user id")?);
            }
            if let Some(c) = y {
                d.key.push(id(c, &cols.key, "a key")?);
            }
        }
        if d.arrival_ns.is_empty() {
            return Err("the trace has a header but no rows".into());
        }
        Ok(d)
    }
}

impl TraceData {
    /// The index of class `name` in `class_names`, added on first sight.
    fn class_index(&mut self, name: &str, line: usize) -> Result<u16, String> {
        if let Some(i) = self.class_names.iter().position(|(n, _)| n == name) {
            return Ok(i as u16);
        }
        if self.class_names.len() >= MAX_CLASSES {
            return Err(format!(
                "line {line}: more than {MAX_CLASSES} distinct classes (a scenario has at most that many)"
            ));
        }
        self.class_names.push((name.to_string(), line));
        Ok(self.class_names.len() as u16 - 1)
    }

    /// Every class name of the `class` column is one of `classes`; the message names the
    /// first line a stranger appears on.
    pub fn check_classes(&self, classes: &[&str], column: &str) -> Result<(), String> {
        for (name, line) in &self.class_names {
            if !classes.contains(&name.as_str()) {
                return Err(format!(
                    "line {line}: column `{column}`: no class named {}; the scenario's classes: {}",
                    quote(name),
                    classes.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// A 64-bit hash of every row, so that editing a trace file changes the run ids of the
    /// runs that replay it (the rows are not part of the scenario's text).
    pub fn content_hash(&self) -> u64 {
        let mut h = sim_core::Fingerprint::default();
        h.fold(self.arrival_ns.len() as u64);
        for i in 0..self.arrival_ns.len() {
            h.fold(self.arrival_ns[i]);
            h.fold(self.prompt_tokens[i].map_or(u64::MAX, u64::from));
            h.fold(self.output_tokens[i].map_or(u64::MAX, u64::from));
        }
        // The optional columns fold only when present: a trace without them keeps its hash
        // (and its runs their ids).
        if !self.class.is_empty() {
            h.fold(0x636c_6173); // "clas"
            for (n, _) in &self.class_names {
                h.fold(sim_core::rng::name_id(n));
            }
            for c in &self.class {
                h.fold(c.map_or(u64::MAX, u64::from));
            }
        }
        for (tag, col) in [(0x7573_6572u64, &self.user), (0x006b_6579, &self.key)] {
            if !col.is_empty() {
                h.fold(tag);
                col.iter().for_each(|&x| h.fold(x));
            }
        }
        h.value()
    }
}

impl TraceSpec {
    /// Checks the settings (ranges) and that the rows were loaded.
    pub fn check(&self) -> Result<(), String> {
        if !(self.rate_scale.is_finite() && self.rate_scale > 0.0 && self.rate_scale <= 1e6) {
            return Err(format!("rate_scale must be in (0, 1e6], found {}", self.rate_scale));
        }
        if self.time_unit.0 == 0 {
            return Err("time_unit must be > 0".into());
        }
        if self.data.is_none() {
            return Err(format!(
                "trace \"{}\" was not loaded (the file layer reads it)",
                self.file
            ));
        }
        Ok(())
    }

    /// Refuses a run of `duration` (its first row at `start`) that would replay under
    /// [`MIN_REPLAYED_PERCENT`] of the rows, unless `partial`; the message says how the
    /// trace's span compares and what a millisecond `time_unit` would give.
    pub fn check_coverage(&self, start: SimDuration, duration: SimDuration) -> Result<(), String> {
        let Some(d) = self.data.as_ref() else { return Ok(()) };
        let rows = d.arrival_ns.len();
        // Offsets never decrease (checked at parsing): the replayed rows are a prefix.
        let replayed = d.arrival_ns.partition_point(|&ns| {
            start + SimDuration::from_ns_f64(ns as f64 / self.rate_scale) < duration
        });
        if self.partial || (replayed as u128) * 100 >= (rows as u128) * MIN_REPLAYED_PERCENT as u128
        {
            return Ok(());
        }
        let span = self.offset(rows - 1).unwrap_or(SimDuration::ZERO);
        let mut msg = format!(
            "the run of \"{duration}\" replays {replayed} of the trace's {rows} rows (under {MIN_REPLAYED_PERCENT}%): with `time_unit: \"{}\"` the rows span \"{span}\"",
            self.time_unit
        );
        let ms = SimDuration::from_ms(1);
        if self.time_unit > ms {
            let scaled =
                SimDuration::from_ns_f64(span.0 as f64 * ms.0 as f64 / self.time_unit.0 as f64);
            msg.push_str(&format!(
                "; if the arrival column is in milliseconds, set `time_unit: \"1ms\"` (then they span \"{scaled}\")"
            ));
        }
        msg.push_str("; to replay only the start of the trace on purpose, set `partial: true`");
        Err(msg)
    }

    /// Arrival offset of row `i` at the configured replay speed.
    pub fn offset(&self, i: usize) -> Option<SimDuration> {
        let d = self.data.as_ref()?;
        d.arrival_ns.get(i).map(|ns| SimDuration::from_ns_f64(*ns as f64 / self.rate_scale))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> TraceSpec {
        TraceSpec {
            file: "t.csv".into(),
            columns: TraceColumns::default(),
            time_unit: SimDuration::from_secs(1),
            rate_scale: 1.0,
            partial: false,
            data: None,
        }
    }

    #[test]
    fn a_byte_order_mark_and_crlf_line_ends_are_read() {
        let text = "\u{feff}arrived_at,num_prefill_tokens,num_decode_tokens\r\n1,2,3\r\n2,4,5\r\n";
        let d = TraceData::parse_csv(text, &spec()).unwrap();
        assert_eq!(d.arrival_ns, vec![0, 1_000_000_000]);
        assert_eq!(d.output_tokens, vec![Some(3), Some(5)]);
    }

    #[test]
    fn a_replay_of_under_one_percent_of_the_rows_is_refused() {
        // 2,000 rows: 6 in the first 6 s, the others from 10,006 s on. A run of "10s"
        // replays 6 (0.3%, under 1% = 20 rows); one of 10,020 s replays 6 + 14 = 20.
        let mut text = String::from("arrived_at,num_prefill_tokens,num_decode_tokens\n");
        for i in 0..2000u64 {
            text.push_str(&format!("{},1,1\n", if i < 6 { i } else { 10_000 + i }));
        }
        let mut s = spec();
        s.data = Some(Arc::new(TraceData::parse_csv(&text, &s).unwrap()));
        let e = s.check_coverage(SimDuration::ZERO, SimDuration::from_secs(10)).unwrap_err();
        assert!(e.starts_with("the run of \"10s\" replays 6 of the trace's 2000 rows"), "{e}");
        assert!(e.contains("set `time_unit: \"1ms\"`"), "{e}");
        // 20 rows (1%) is enough; `partial` accepts any share.
        assert!(s.check_coverage(SimDuration::ZERO, SimDuration::from_secs(10_020)).is_ok());
        s.partial = true;
        assert!(s.check_coverage(SimDuration::ZERO, SimDuration::from_secs(1)).is_ok());
    }

    #[test]
    fn parses_by_column_name_in_any_order() {
        let text =
            "num_decode_tokens,arrived_at,num_prefill_tokens\n44,10.5,374\n109,14.814579,396\n";
        let d = TraceData::parse_csv(text, &spec()).unwrap();
        assert_eq!(d.arrival_ns, vec![0, 4_314_579_000]);
        assert_eq!(d.prompt_tokens, vec![Some(374), Some(396)]);
        assert_eq!(d.output_tokens, vec![Some(44), Some(109)]);
        let mut s = spec();
        s.rate_scale = 2.0;
        s.data = Some(Arc::new(d));
        assert_eq!(s.offset(1), Some(SimDuration(2_157_289_500)));
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("", "the trace is empty"),
            ("time,a\n", "line 1: no column named `arrived_at`; the header has: `time`, `a`"),
            ("arrived_at,num_prefill_tokens,num_decode_tokens\n", "no rows"),
            (
                "arrived_at,num_prefill_tokens,num_decode_tokens\n1,2,3\nx,2,3\n",
                "line 3: column `arrived_at`: expected a non-negative number, found `x`",
            ),
            (
                "arrived_at,num_prefill_tokens,num_decode_tokens\n1,2,3\n0.5,2,3\n",
                "line 3: column `arrived_at`: arrival times must not decrease",
            ),
            (
                "arrived_at,num_prefill_tokens,num_decode_tokens\n1,2.5,3\n",
                "line 2: column `num_prefill_tokens`: expected a whole number of tokens, found `2.5`",
            ),
            (
                "arrived_at,num_prefill_tokens,num_decode_tokens\n1,2\n",
                "line 2: expected 3 columns, found 2",
            ),
            (
                "arrived_at,num_prefill_tokens,num_decode_tokens\n0,2,3\n1e300,2,3\n",
                "line 3: column `arrived_at`: `1e300` is more than the 292 years a run can hold",
            ),
        ];
        for (text, want) in cases {
            let e = TraceData::parse_csv(text, &spec()).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    /// A cell of a megabyte (a file with another separator has cells as long as the file)
    /// and a header of 1,000 columns: the error quotes at most `MAX_QUOTED_BYTES` of each
    /// name or cell and 16 names, never the whole (it echoed 943 MB for a 0.9 GB cell).
    #[test]
    fn errors_quote_at_most_a_hundred_bytes_of_a_cell() {
        let cell = format!("{}é{}", "7".repeat(99), "x".repeat(1 << 20));
        let text = format!("arrived_at,num_prefill_tokens,num_decode_tokens\n0,{cell},1\n");
        let e = TraceData::parse_csv(&text, &spec()).unwrap_err();
        // The two-byte `é` straddles byte 100: the quote stops before it.
        assert!(e.ends_with(&format!("found `{}…` ({} bytes)", "7".repeat(99), cell.len())), "{e}");
        let header: Vec<String> = (0..1000).map(|i| format!("c{i}")).collect();
        let e = TraceData::parse_csv(&format!("{}\n", header.join(",")), &spec()).unwrap_err();
        assert!(e.ends_with("`c15`, … (1000 columns)"), "{e}");
        assert!(e.len() < 300, "{}", e.len());
    }
}
