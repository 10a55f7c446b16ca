//! Reading scalars as the configuration's own binder does: Spring Boot's relaxed names and
//! its duration and boolean conversions, fastjson's lenient numbers, protobuf JSON
//! durations; component names made valid for a scenario.

use super::{Kind, Node, Origin, Problem};
use sim_core::SimDuration;
use sim_core::time::parse_duration;

/// A property name as Spring's relaxed binding compares it: `failure-rate-threshold`,
/// `failureRateThreshold` and `failure_rate_threshold` are one name.
pub fn norm(name: &str) -> String {
    name.chars().filter(|c| *c != '-' && *c != '_').map(|c| c.to_ascii_lowercase()).collect()
}

pub fn origin(path: &str, n: &Node) -> Origin {
    Origin { path: path.into(), at: n.at }
}

fn expected(path: &str, n: &Node, what: &str) -> Problem {
    Problem::at(path, n.at, format!("expected {what}, found {}", n.what()))
}

pub fn text<'n>(path: &str, n: &'n Node) -> Result<&'n str, Problem> {
    n.scalar().ok_or_else(|| expected(path, n, "a value"))
}

/// A whole number ≥ 0 (`20`, `"20"`, and `20.0` as fastjson writes a double).
pub fn uint(path: &str, n: &Node) -> Result<u64, Problem> {
    let t = text(path, n)?.trim();
    if let Ok(v) = t.parse::<u64>() {
        return Ok(v);
    }
    match t.parse::<f64>() {
        Ok(x) if x >= 0.0 && x.fract() == 0.0 && x < 9.0e15 => Ok(x as u64),
        _ => Err(expected(path, n, "a whole number ≥ 0")),
    }
}

/// A signed whole number (Sentinel's enum codes).
pub fn int(path: &str, n: &Node) -> Result<i64, Problem> {
    let t = text(path, n)?.trim();
    t.parse::<i64>()
        .or_else(|_| match t.parse::<f64>() {
            Ok(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Ok(x as i64),
            _ => Err(()),
        })
        .map_err(|_| expected(path, n, "a whole number"))
}

pub fn float(path: &str, n: &Node) -> Result<f64, Problem> {
    match text(path, n)?.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(expected(path, n, "a number")),
    }
}

/// Spring's `StringToBooleanConverter`: true/on/yes/1, false/off/no/0, any case.
pub fn boolean(path: &str, n: &Node) -> Result<bool, Problem> {
    match text(path, n)?.trim().to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        _ => Err(expected(path, n, "true or false")),
    }
}

/// A string list: a YAML/JSON list of scalars, or Spring's comma-separated string.
pub fn strings(path: &str, n: &Node) -> Result<Vec<(String, Node)>, Problem> {
    match &n.kind {
        Kind::Seq(items) => items
            .iter()
            .enumerate()
            .map(|(i, it)| Ok((text(&format!("{path}[{i}]"), it)?.trim().to_string(), it.clone())))
            .collect(),
        Kind::Scalar(..) if n.is_null() => Ok(Vec::new()),
        Kind::Scalar(t, _) => Ok(t
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| (s.to_string(), n.clone()))
            .collect()),
        Kind::Map(_) => Err(expected(path, n, "a list")),
    }
}

/// A duration as Spring Boot binds `java.time.Duration` (`DurationStyle.detectAndParse`):
/// the simple style `<whole number><unit>` with ns, us, ms, s, m, h or d (any case),
/// milliseconds when there is no unit, or ISO-8601 (`PT1S`, `PT0.5S`, `P1DT2H`).
pub fn spring_duration(path: &str, n: &Node) -> Result<SimDuration, Problem> {
    let t = text(path, n)?.trim();
    let bad = || {
        expected(
            path,
            n,
            "a duration (`10s`, `500ms`, `2m`, a number of milliseconds, or ISO-8601 `PT1S`)",
        )
    };
    if t.starts_with(['P', 'p']) {
        return iso_duration(t).ok_or_else(bad);
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(bad());
    }
    let unit = match unit.to_ascii_lowercase().as_str() {
        "" => "ms".to_string(),
        u @ ("ns" | "us" | "ms" | "s" | "m" | "h" | "d") => u.to_string(),
        _ => return Err(bad()),
    };
    parse_duration(&format!("{num}{unit}")).map_err(|_| bad())
}

/// ISO-8601 `PnDTnHnMn.nS` as `java.time.Duration.parse` reads it (no sign, no weeks).
fn iso_duration(t: &str) -> Option<SimDuration> {
    let up = t.to_ascii_uppercase();
    let rest = up.strip_prefix('P')?;
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let mut total: u64 = 0;
    let mut add = |num: &str, unit: &str| -> Option<()> {
        let d = parse_duration(&format!("{num}{unit}")).ok()?;
        total = total.checked_add(d.0)?;
        Some(())
    };
    if !days.is_empty() {
        add(days.strip_suffix('D')?, "d")?;
    }
    let Some(mut time) = time else { return (!days.is_empty()).then_some(SimDuration(total)) };
    if time.is_empty() {
        return None;
    }
    for (suffix, unit) in [('H', "h"), ('M', "m"), ('S', "s")] {
        if let Some(i) = time.find(suffix) {
            add(&time[..i], unit)?;
            time = &time[i + 1..];
        }
    }
    time.is_empty().then_some(SimDuration(total))
}

/// A protobuf JSON duration (`"1.5s"`, `"0.010s"`; a leading `.` accepted as grpc's
/// parsers do).
pub fn proto_duration(path: &str, n: &Node) -> Result<SimDuration, Problem> {
    let t = text(path, n)?.trim();
    let bad = || expected(path, n, "a protobuf duration in seconds (`\"0.1s\"`, `\"2s\"`)");
    let num = t.strip_suffix('s').ok_or_else(bad)?;
    let num = if num.starts_with('.') { format!("0{num}") } else { num.to_string() };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    parse_duration(&format!("{num}s")).map_err(|_| bad())
}

/// A scenario component name (`[A-Za-z0-9_-]+`, at most 64 characters) from a name as
/// written: other characters become `_`.
pub fn component_name(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    s.truncate(64);
    if s.is_empty() { "unnamed".into() } else { s }
}

/// The entries of a mapping, or an error naming the path.
pub fn entries<'n>(path: &str, n: &'n Node) -> Result<&'n [(super::tree::Key, Node)], Problem> {
    match &n.kind {
        Kind::Map(e) => Ok(e),
        _ if n.is_null() => Ok(&[]),
        _ => Err(expected(path, n, "a mapping")),
    }
}

/// `a.b`, or `b` at the top.
pub fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() { key.to_string() } else { format!("{prefix}.{key}") }
}

/// Edit distance (Levenshtein) of two short names, for "did you mean" (experiments' metric
/// names use it too).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}
