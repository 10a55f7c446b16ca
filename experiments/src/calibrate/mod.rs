//! `stormglass calibrate LOG`: a scenario fitted to a call log.
//!
//! From one CSV row per upstream call (`log`: time, class, prompt and output tokens,
//! latency, HTTP status, by a column mapping), it fits ([`fit`]):
//!
//! * **arrivals** — the mean rate, a step rate profile (`buckets` equal steps over the
//!   log's span: each step's rate ÷ the mean), and the burstiness left once the profile is
//!   divided out: the gaps of the time-rescaled process (unit rate if the profile is right)
//!   have CV 1 and an exponential law for a Poisson process, and counts in windows of 10
//!   rescaled units an index of dispersion of 1. A CV off 1 by more than 4/√n makes the
//!   gaps a gamma of that CV instead of an exponential;
//! * **per class** — its share of the calls (one source per class, sharing the profile) and
//!   its prompt and output token distributions (the family of the scenario's with the
//!   smallest KS statistic);
//! * **upstream latency** — least squares `latency = base + per_prompt_token·prompt +
//!   per_output_token·output + load_slope·load` over the served calls (2xx, 5xx, other 4xx),
//!   `load` the other served calls in service at the call's start, reconstructed from the
//!   log's start times and latencies; the base service times (latency minus the fitted
//!   terms) get a distribution like the token counts;
//! * **errors** — the 5xx and business-error shares of served calls, the 429 share of all.
//!   With 429s, the provider is a loss system of the most calls seen in service at once
//!   (`reject_as: Upstream429`, no queue); without, it has ample servers.
//!
//! It writes the scenario (checked by loading it back), and reports the goodness of fit:
//! KS statistics with their 5% critical values, QQ points, and — after running the fitted
//! scenario over the log's span — the latency percentiles replayed against logged.

pub mod calllog;
pub mod cli;
pub mod fit;
pub mod gof;
pub mod log;
pub mod scenario;

use fit::{Arrivals, Fitted, Regression};
use log::Call;

/// One class's share and sizes.
#[derive(Clone, Debug)]
pub struct ClassFit {
    pub name: String,
    pub share: f64,
    pub calls: usize,
    pub prompt: Fitted,
    pub output: Fitted,
}

/// Everything fitted from a log.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub arrivals: Arrivals,
    /// The gap distribution of the scenario's sources (rescaled units: mean 1).
    pub gaps: Fitted,
    pub classes: Vec<ClassFit>,
    pub latency: Regression,
    pub base: Fitted,
    /// Shares: 5xx and business errors of served calls, 429 of all calls.
    pub error_rate: f64,
    pub business_rate: f64,
    pub rate_429: f64,
    /// Calls that reached the upstream and were served, and 429s.
    pub served: usize,
    pub refused: usize,
}

/// Served for the latency fit: answered, 5xx, business errors (not 429, not a timeout,
/// whose latency is the client's patience).
fn in_regression(c: &Call) -> bool {
    c.served() && c.status != 504 && c.latency.is_some()
}

/// Fits a log (sorted by time, as [`log::read`] returns it).
pub fn calibrate(calls: &[Call], buckets: usize) -> Result<Calibration, String> {
    let times: Vec<f64> = calls.iter().map(|c| c.t).collect();
    let arrivals = fit::arrivals(&times, buckets);
    let n = (arrivals.calls - 1) as f64;
    let gaps = if (arrivals.gap_cv - 1.0).abs() > 4.0 / n.sqrt() {
        Fitted { family: fit::Family::Gamma, cv: arrivals.gap_cv, ..arrivals.gaps }
    } else {
        arrivals.gaps
    };
    let mut names: Vec<&str> = Vec::new();
    for c in calls {
        if !names.contains(&c.class.as_str()) {
            names.push(&c.class);
        }
    }
    names.sort_unstable();
    let classes = names
        .iter()
        .map(|&name| {
            let of: Vec<&Call> = calls.iter().filter(|c| c.class == name).collect();
            let p: Vec<f64> = of.iter().map(|c| c.prompt).collect();
            let o: Vec<f64> = of.iter().map(|c| c.output).collect();
            ClassFit {
                name: name.to_string(),
                share: of.len() as f64 / calls.len() as f64,
                calls: of.len(),
                prompt: fit::best_fit(&p),
                output: fit::best_fit(&o),
            }
        })
        .collect();
    let served: Vec<&Call> = calls.iter().filter(|c| in_regression(c)).collect();
    if served.len() < 10 {
        return Err(format!(
            "expected at least 10 served calls (status 2xx, 5xx or 4xx other than 429, with a latency) to fit latency, found {}",
            served.len()
        ));
    }
    let latency = fit::latency(&served);
    let positive: Vec<f64> = latency.base.iter().map(|b| b.max(1e-6)).collect();
    let base = fit::best_fit(&positive);
    let share = |f: &dyn Fn(&Call) -> bool, of: &[&Call]| {
        of.iter().filter(|c| f(c)).count() as f64 / of.len() as f64
    };
    let all: Vec<&Call> = calls.iter().collect();
    Ok(Calibration {
        arrivals,
        gaps,
        classes,
        error_rate: share(&|c| c.status >= 500, &served),
        business_rate: share(&|c| (400..500).contains(&c.status), &served),
        rate_429: share(&|c| c.status == 429, &all),
        served: served.len(),
        refused: calls.iter().filter(|c| c.status == 429).count(),
        latency,
        base,
    })
}
