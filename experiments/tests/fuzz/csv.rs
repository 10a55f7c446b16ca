//! The trace CSV reader fuzzed: bad rows, missing and extra columns, unsorted times, a BOM,
//! CRLF line ends, huge and non-finite values, quoted cells. Parsing never panics; what
//! parses is sorted, starts at 0 and has one token entry per row; and a replay of it runs
//! with every invariant holding.

use super::drive::{Crash, Outcome};
use super::mutate::Rng;
use models::trace::{TraceData, TraceSpec};
use sim_core::SimDuration;
use std::panic::{AssertUnwindSafe, catch_unwind};

const CELLS: &[&str] = &[
    "0",
    "1",
    "0.5",
    "-1",
    "1e300",
    "1e19",
    "18446744073709551616",
    "4294967295",
    "4294967296",
    "NaN",
    "inf",
    "",
    " ",
    "\"3\"",
    "x",
    "1,5",
    "0x10",
    "1_000",
    "+2",
    ".5",
    "5.",
    "1e-320",
];

/// A CSV text: a header (Azure columns, shuffled, dropped or extra) and rows.
pub fn generate(rng: &mut Rng) -> String {
    let mut cols = vec!["arrived_at", "num_prefill_tokens", "num_decode_tokens"];
    match rng.below(6) {
        0 => cols.reverse(),
        1 => {
            let k = rng.below(cols.len());
            cols.remove(k);
        }
        2 => cols.push("extra"),
        3 => cols.insert(rng.below(cols.len()), "arrived_at"),
        _ => {}
    }
    let nl = if rng.chance(3) { "\r\n" } else { "\n" };
    let mut out = String::new();
    if rng.chance(4) {
        out.push('\u{feff}');
    }
    out.push_str(&cols.join(if rng.chance(8) { ";" } else { "," }));
    out.push_str(nl);
    let rows = rng.below(40);
    let mut t = 0.0f64;
    for _ in 0..rows {
        let mut cells = Vec::new();
        for c in &cols {
            let cell = if rng.chance(12) {
                rng.pick(CELLS).unwrap().to_string()
            } else if *c == "arrived_at" {
                // Mostly increasing, sometimes going back or jumping.
                t += match rng.below(10) {
                    0 => -1.0,
                    1 => 1e6,
                    _ => rng.below(1000) as f64 / 100.0,
                };
                format!("{t}")
            } else {
                rng.below(5000).to_string()
            };
            cells.push(cell);
        }
        if rng.chance(15) {
            cells.pop();
        }
        out.push_str(&cells.join(","));
        out.push_str(if rng.chance(20) { "" } else { nl });
        if rng.chance(25) {
            out.push_str(nl);
        }
    }
    out
}

/// Parses `text` and, when it parses, replays it for a short run.
pub fn execute(
    text: &str,
    rng: &mut Rng,
    flag: &'static std::sync::atomic::AtomicBool,
) -> Result<Outcome, Crash> {
    let mut spec: TraceSpec =
        ron::from_str(r#"Trace(file: "t.csv", partial: true)"#).expect("a trace spec");
    if rng.chance(4) {
        spec.time_unit =
            [SimDuration(1), SimDuration::from_ms(1), SimDuration::from_secs(3600)][rng.below(3)];
    }
    let parsed = catch_unwind(AssertUnwindSafe(|| TraceData::parse_csv(text, &spec)))
        .map_err(|_| Crash(format!("parse_csv panicked on {text:?}")))?;
    let d = match parsed {
        Err(e) => {
            if !e.starts_with("line ") && !e.starts_with("the trace") {
                return Err(Crash(format!("trace error without a line: {e}")));
            }
            return Ok(Outcome::Refused(e));
        }
        Ok(d) => d,
    };
    let n = d.arrival_ns.len();
    if n == 0 || d.arrival_ns[0] != 0 || d.prompt_tokens.len() != n || d.output_tokens.len() != n {
        return Err(Crash(format!("malformed trace data from {text:?}")));
    }
    if d.arrival_ns.windows(2).any(|w| w[0] > w[1]) {
        return Err(Crash(format!("unsorted trace data from {text:?}")));
    }
    // Replay it: an experiment whose source has these rows.
    let dir = std::env::temp_dir().join(format!("stormglass-fuzz-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("t.csv"), text).expect("temp trace");
    let exp = format!(
        r#"Scenario(name: "csv", sources: [(name: "t", target: "llm", trace: Trace(file: "t.csv", time_unit: "{}", partial: true))],
        call_sites: [(name: "llm", upstream: "llm", timeout: "1s")],
        stations: [(name: "llm", servers: 2, queue_capacity: Some(5), service: Exponential(mean: "300ms"))])"#,
        spec.time_unit
    );
    let bytes = exp.into_bytes();
    super::drive::execute(&dir.join("csv.ron"), &bytes, rng, flag)
}
