//! The calibrated scenario as RON text: one source per class (its share of the rate, the
//! shared step profile, its token distributions), one call site, one provider station with
//! the fitted service, token and load terms and error rates.

use super::Calibration;
use super::fit::Fitted;
use sim_core::SimDuration;
use std::fmt::Write;

/// A name the scenario accepts (`[A-Za-z0-9_-]+`): other characters become `_`.
pub fn safe_name(s: &str) -> String {
    let n: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "_-".contains(c) { c } else { '_' })
        .collect();
    if n.is_empty() { "_".into() } else { n }
}

/// A duration string of `secs` to the nanosecond (at least 1 ns).
fn ns(secs: f64) -> String {
    format!("\"{}\"", SimDuration((secs * 1e9).round().max(1.0) as u64))
}

/// A duration string of `secs` to the microsecond (at least 1 µs).
fn us(secs: f64) -> String {
    format!("\"{}\"", SimDuration(((secs * 1e6).round().max(1.0) as u64) * 1000))
}

/// A non-negative per-unit term to the nanosecond (`"0s"` when the fit is ≤ 0).
fn term(secs: f64) -> String {
    let n = (secs * 1e9).round();
    if n <= 0.0 { "\"0s\"".into() } else { format!("\"{}\"", SimDuration(n as u64)) }
}

fn tokens(f: &Fitted) -> Option<String> {
    (f.mean > 0.0).then(|| f.ron(&|m| format!("{m:.2}")))
}

/// The scenario, named `name`; `log` names the log in the header comment.
pub fn ron(c: &Calibration, name: &str, log: &str) -> String {
    let mut o = String::new();
    let a = &c.arrivals;
    let _ = writeln!(
        o,
        "// Calibrated by `stormglass calibrate` from {log}: {} calls over {:.1} s.",
        a.calls, a.span
    );
    let _ = writeln!(
        o,
        "// Replay its span: stormglass run THIS_FILE --duration {}",
        SimDuration((a.span.ceil() as u64).max(1) * 1_000_000_000)
    );
    let _ = writeln!(o, "Scenario(\n    name: \"{}\",", safe_name(name));
    let classes: Vec<String> =
        c.classes.iter().map(|k| format!("(name: \"{}\")", safe_name(&k.name))).collect();
    let _ = writeln!(o, "    classes: [{}],", classes.join(", "));
    let points: Vec<String> = a
        .multipliers
        .iter()
        .enumerate()
        .map(|(k, m)| {
            let at = if k == 0 { "\"0s\"".to_string() } else { us(k as f64 * a.bucket) };
            format!("({at}, {m:.4})")
        })
        .collect();
    let profile = format!("Some(Profile(points: [{}], shape: Step))", points.join(", "));
    let _ = writeln!(o, "    sources: [");
    for k in &c.classes {
        let gap = Fitted { mean: 1.0 / (a.rate * k.share), ..c.gaps };
        let mut fields = vec![
            format!("name: \"{}\"", safe_name(&k.name)),
            format!("class: \"{}\"", safe_name(&k.name)),
            format!("interarrival: {}", gap.ron(&us)),
            "target: \"upstream\"".to_string(),
            format!("profile: {profile}"),
        ];
        if let Some(p) = tokens(&k.prompt) {
            fields.push(format!("prompt_tokens: {p}"));
        }
        if let Some(p) = tokens(&k.output) {
            fields.push(format!("output_tokens: {p}"));
        }
        let _ = writeln!(o, "        ({}),", fields.join(",\n         "));
    }
    let _ = writeln!(o, "    ],");
    let _ = writeln!(o, "    call_sites: [(name: \"upstream\", upstream: \"provider\")],");
    let l = &c.latency;
    let (servers, queue, reject) = if c.refused > 0 {
        // A provider that answered 429: a loss system of the most calls seen in service.
        (l.max_load + 1, "Some(0)", "Upstream429")
    } else {
        (((l.max_load + 1) * 4).clamp(1, 1_000_000), "None", "QueueFull")
    };
    let _ = writeln!(
        o,
        "    stations: [(name: \"provider\", servers: {servers}, queue_capacity: {queue}, reject_as: {reject},\n        service: {},\n        per_prompt_token: {}, per_output_token: {}, load_slope: {},\n        error_rate: {:.6}, business_error_rate: {:.6})],",
        c.base.ron(&ns),
        term(l.beta[1]),
        term(l.beta[2]),
        term(l.beta[3]),
        c.error_rate,
        c.business_rate
    );
    o.push_str(")\n");
    o
}
