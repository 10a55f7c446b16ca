//! A search's metrics: a numeric column of `runs` (`class.P0.goodput`), or the ratio of two
//! (`class.P0.rejected / class.P0.offered`: a share), evaluated per run.

use models::Scenario;
use polars::prelude::*;
use serde::Serialize;

/// A column, or `numerator / denominator`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Metric {
    /// As written (trimmed): labels the metric in the output.
    pub text: String,
    pub num: String,
    pub den: Option<String>,
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The numeric columns a run of `sc` writes to `runs`: the model's summary columns and the
/// derived goodput columns.
pub fn columns(sc: &Scenario) -> Vec<String> {
    let names: Vec<String> =
        models::run::summary_template(sc).values.into_iter().map(|(n, _)| n).collect();
    let derived: Vec<String> = names.iter().filter_map(|n| goodput_name(n)).collect();
    names.into_iter().chain(derived).collect()
}

/// The goodput column derived from a summary column, if it is a source's or a class's
/// `success` (`class.P0.success` → `class.P0.goodput`).
pub fn goodput_name(column: &str) -> Option<String> {
    let prefix = column.strip_suffix(".success")?;
    (prefix.starts_with("source.") || prefix.starts_with("class."))
        .then(|| format!("{prefix}.goodput"))
}

impl Metric {
    /// Reads `a` or `a / b`, each a column in `known`; the message says what was expected.
    pub fn parse(text: &str, known: &[String]) -> Result<Metric, String> {
        let text = text.trim();
        let mut parts = text.split('/').map(str::trim);
        let num = parts.next().unwrap_or_default().to_string();
        let den = parts.next().map(str::to_string);
        if parts.next().is_some() {
            return Err(format!(
                "expected a column of `runs` or `a / b` (one ratio), found \"{text}\""
            ));
        }
        for c in std::iter::once(&num).chain(den.iter()) {
            if !known.contains(c) {
                return Err(unknown(c, known));
            }
        }
        Ok(Metric { text: text.to_string(), num, den })
    }

    /// The metric's value in a one-row runs part: `None` when a column is null (a statistic
    /// of no requests) or the denominator is 0.
    pub fn value(&self, df: &DataFrame) -> Option<f64> {
        let get = |c: &str| -> Option<f64> {
            df.column(c).ok()?.cast(&DataType::Float64).ok()?.f64().ok()?.get(0)
        };
        let n = get(&self.num)?;
        match &self.den {
            None => Some(n),
            Some(d) => {
                let d = get(d)?;
                (d != 0.0).then_some(n / d)
            }
        }
    }
}

use models::import::edit_distance as distance;

/// "no column `x`": the nearest column when one is a few edits away, else the columns that
/// share its component (or the components) as hints.
fn unknown(c: &str, known: &[String]) -> String {
    if let Some(k) = known.iter().min_by_key(|k| distance(c, k))
        && distance(c, k) <= 3
    {
        return format!("no column `{c}` in `runs`; did you mean `{k}`?");
    }
    let prefix = c.rsplit_once('.').map_or(c, |(p, _)| p);
    let near: Vec<&str> = known
        .iter()
        .filter(|k| k.rsplit_once('.').is_some_and(|(p, _)| p == prefix))
        .map(String::as_str)
        .collect();
    if near.is_empty() {
        let mut comps: Vec<&str> =
            known.iter().filter_map(|k| k.rsplit_once('.').map(|(p, _)| p)).collect();
        comps.dedup();
        format!(
            "no column `{c}` in `runs`; expected `<component>.<column>` of one of: {}",
            comps.join(", ")
        )
    } else {
        let more = near.len().saturating_sub(12);
        let tail =
            if more > 0 { format!(", … ({more} more: docs/results.md)") } else { String::new() };
        format!(
            "no column `{c}` in `runs`; the columns of `{prefix}` are: {}{tail}",
            near[..near.len().min(12)].join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_and_unknown_columns() {
        let known: Vec<String> = ["class.P0.offered", "class.P0.rejected", "station.s.peak_queue"]
            .map(String::from)
            .into();
        let m = Metric::parse(" class.P0.rejected / class.P0.offered ", &known).unwrap();
        assert_eq!(
            (m.num.as_str(), m.den.as_deref()),
            ("class.P0.rejected", Some("class.P0.offered"))
        );
        let df = df!("class.P0.rejected" => [3u64], "class.P0.offered" => [300u64]).unwrap();
        assert_eq!(m.value(&df), Some(0.01));
        let zero = df!("class.P0.rejected" => [0u64], "class.P0.offered" => [0u64]).unwrap();
        assert_eq!(m.value(&zero), None, "0/0 is undefined, not 0");
        let e = Metric::parse("class.P0.rejectd", &known).unwrap_err();
        assert_eq!(e, "no column `class.P0.rejectd` in `runs`; did you mean `class.P0.rejected`?");
        let e = Metric::parse("class.P0.p99", &known).unwrap_err();
        assert_eq!(
            e,
            "no column `class.P0.p99` in `runs`; the columns of `class.P0` are: class.P0.offered, class.P0.rejected"
        );
        assert!(Metric::parse("a / b / c", &known).is_err());
        let e = Metric::parse("gate.g.x", &known).unwrap_err();
        assert!(e.ends_with("one of: class.P0, station.s"), "{e}");
    }
}
