//! A call log: one CSV row per call to the upstream, read through a column mapping.
//!
//! The defaults are the names `stormglass call-log` writes (`timestamp_s`, `class`,
//! `prompt_tokens`, `output_tokens`, `latency_ms`, `status`); `--columns
//! timestamp=ts,latency=upstream_ms,…` maps another log's names, `--time-unit` and
//! `--latency-unit` its units. Statuses are HTTP codes: 2xx answered, 429 refused by a
//! quota, 5xx failed, other 4xx a business error; a served call (2xx, 5xx, 4xx) needs a
//! latency, a 429 may have none. Errors name the line and the column.

use std::path::Path;

/// Where each field is in the log, and its units.
#[derive(Clone, Debug)]
pub struct Columns {
    pub timestamp: String,
    /// `None`: every call is class `P0`.
    pub class: Option<String>,
    pub prompt_tokens: Option<String>,
    pub output_tokens: Option<String>,
    pub latency: String,
    pub status: String,
    /// Seconds per timestamp unit.
    pub time_unit: f64,
    /// Seconds per latency unit.
    pub latency_unit: f64,
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            timestamp: "timestamp_s".into(),
            class: Some("class".into()),
            prompt_tokens: Some("prompt_tokens".into()),
            output_tokens: Some("output_tokens".into()),
            latency: "latency_ms".into(),
            status: "status".into(),
            time_unit: 1.0,
            latency_unit: 1e-3,
        }
    }
}

/// Seconds in one `s`, `ms`, `us` or `ns`.
pub fn unit(s: &str) -> Result<f64, String> {
    match s {
        "s" => Ok(1.0),
        "ms" => Ok(1e-3),
        "us" => Ok(1e-6),
        "ns" => Ok(1e-9),
        _ => Err(format!("expected a unit `s`, `ms`, `us` or `ns`, found `{s}`")),
    }
}

impl Columns {
    /// Applies `field=column,…` to the defaults (`class=` with no column: no class column).
    pub fn mapped(spec: &str) -> Result<Columns, String> {
        let mut c = Columns::default();
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("expected `field=column`, found `{pair}`"))?;
            let v = v.trim().to_string();
            let opt = (!v.is_empty()).then(|| v.clone());
            match k.trim() {
                "timestamp" => c.timestamp = v,
                "class" => c.class = opt,
                "prompt_tokens" => c.prompt_tokens = opt,
                "output_tokens" => c.output_tokens = opt,
                "latency" => c.latency = v,
                "status" => c.status = v,
                other => {
                    return Err(format!(
                        "unknown field `{other}`; expected one of timestamp, class, prompt_tokens, output_tokens, latency, status"
                    ));
                }
            }
        }
        Ok(c)
    }
}

/// One call.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Seconds since the first call.
    pub t: f64,
    pub class: String,
    pub prompt: f64,
    pub output: f64,
    /// Seconds; `None` for a 429 without one.
    pub latency: Option<f64>,
    pub status: u16,
}

impl Call {
    /// Served by the upstream (it held a server): answered, failed or a business error.
    pub fn served(&self) -> bool {
        self.status != 429
    }
}

/// Most rows a log may have (memory bound).
pub const MAX_ROWS: usize = 5_000_000;

/// Reads a log; calls come back sorted by time (stable).
pub fn read(path: &Path, cols: &Columns) -> Result<Vec<Call>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    parse(&text, cols).map_err(|e| format!("{}:{e}", path.display()))
}

/// Parses CSV text (no quoted fields); errors are `line: message`.
pub fn parse(text: &str, cols: &Columns) -> Result<Vec<Call>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().enumerate();
    let (_, header) = lines.next().ok_or("1: the log is empty: expected a header line")?;
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let find = |want: &str| {
        names.iter().position(|n| *n == want).ok_or_else(|| {
            format!("1: no column named `{want}`; the header has: {}", names.join(", "))
        })
    };
    let ts = find(&cols.timestamp)?;
    let cl = cols.class.as_deref().map(find).transpose()?;
    let pr = cols.prompt_tokens.as_deref().map(find).transpose()?;
    let ou = cols.output_tokens.as_deref().map(find).transpose()?;
    let la = find(&cols.latency)?;
    let st = find(&cols.status)?;
    let mut out = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        if out.len() >= MAX_ROWS {
            return Err(format!("{n}: more than {MAX_ROWS} rows"));
        }
        if line.contains('"') {
            return Err(format!("{n}: quoted fields are not read; export the log without quotes"));
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != names.len() {
            return Err(format!("{n}: expected {} columns, found {}", names.len(), cells.len()));
        }
        let num = |c: usize, what: &str| -> Result<f64, String> {
            cells[c].parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| {
                format!("{n}: column `{what}`: expected a number ≥ 0, found `{}`", cells[c])
            })
        };
        let tokens = |c: Option<usize>, what: &Option<String>| -> Result<f64, String> {
            c.map_or(Ok(0.0), |c| num(c, what.as_deref().unwrap_or("")))
        };
        let status: u16 =
            cells[st].parse().ok().filter(|s| (100..600).contains(s)).ok_or_else(|| {
                format!(
                    "{n}: column `{}`: expected an HTTP status 100 … 599, found `{}`",
                    cols.status, cells[st]
                )
            })?;
        let latency = if cells[la].is_empty() {
            if status != 429 {
                return Err(format!(
                    "{n}: column `{}`: a served call (status {status}) needs a latency, found none",
                    cols.latency
                ));
            }
            None
        } else {
            Some(num(la, &cols.latency)? * cols.latency_unit)
        };
        out.push(Call {
            t: num(ts, &cols.timestamp)? * cols.time_unit,
            class: cl.map_or_else(|| "P0".to_string(), |c| cells[c].to_string()),
            prompt: tokens(pr, &cols.prompt_tokens)?,
            output: tokens(ou, &cols.output_tokens)?,
            latency,
            status,
        });
    }
    if out.len() < 2 {
        return Err(format!(
            "{}: expected at least two calls, found {}",
            text.lines().count(),
            out.len()
        ));
    }
    out.sort_by(|a, b| a.t.total_cmp(&b.t));
    let t0 = out[0].t;
    for c in &mut out {
        c.t -= t0;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_with_a_mapping_and_names_bad_cells() {
        let cols = Columns::mapped("timestamp=ts, class=, latency=up_s, status=code").unwrap();
        let cols = Columns { time_unit: 1e-3, latency_unit: 1.0, ..cols };
        let text = "ts,prompt_tokens,output_tokens,up_s,code\n2000,10,5,0.5,200\n1000,1,2,,429\n";
        let calls = parse(text, &cols).unwrap();
        assert_eq!(
            calls[0],
            Call {
                t: 0.0,
                class: "P0".into(),
                prompt: 1.0,
                output: 2.0,
                latency: None,
                status: 429
            }
        );
        assert_eq!((calls[1].t, calls[1].latency), (1.0, Some(0.5)));
        let bad = "ts,prompt_tokens,output_tokens,up_s,code\n1,1,1,,200\n2,1,1,1,200\n";
        assert_eq!(
            parse(bad, &cols).unwrap_err(),
            "2: column `up_s`: a served call (status 200) needs a latency, found none"
        );
        assert!(Columns::mapped("stamp=x").unwrap_err().starts_with("unknown field `stamp`"));
    }
}
