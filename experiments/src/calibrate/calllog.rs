//! `stormglass call-log FILE`: the simulator writes a call log in the format `calibrate`
//! reads by default — one row per call that reached an upstream, from one seed's
//! per-request records.
//!
//! `timestamp_s` is the arrival (s, to the µs), `latency_ms` the time from the start of
//! service to the answer (ms, to the µs; empty for a 429 refused without service), `status`
//! 200 (answered), 429 (a quota or a full provider), 500 (5xx), 400 (a business error), 504
//! (the client's timeout). Requests a governor refused never reached the upstream and are
//! not in the log; nor are those still in flight at the end.

use models::outcome::{Outcome, Reason};
use models::world::RequestRecord;
use std::fmt::Write;

/// The HTTP status of a request's outcome, or `None` when it never reached the upstream.
fn status(o: Outcome) -> Option<u16> {
    match o {
        Outcome::Success => Some(200),
        Outcome::Degraded(_) => None,
        Outcome::Failed(r) | Outcome::Rejected(r) => match r {
            Reason::Upstream429 => Some(429),
            Reason::Upstream5xx => Some(500),
            Reason::BusinessError => Some(400),
            Reason::Timeout => Some(504),
            _ => None,
        },
    }
}

/// The CSV text of one run's requests, by arrival time.
pub fn csv(sc: &models::Scenario, requests: &[RequestRecord]) -> String {
    let mut out = String::from("timestamp_s,class,prompt_tokens,output_tokens,latency_ms,status\n");
    let mut by_time: Vec<&RequestRecord> = requests.iter().collect();
    by_time.sort_by_key(|q| (q.arrival, q.request_id));
    for q in by_time {
        let (Some(o), Some(end)) = (q.outcome, q.end) else { continue };
        let Some(code) = status(o) else { continue };
        let latency = match q.start {
            Some(s) => format!("{:.3}", (end.0 - s.0) as f64 / 1e6),
            None if code == 429 => String::new(),
            None => continue,
        };
        let class = sc.classes.get(q.class as usize).map_or("P0", |c| c.name.as_str());
        let _ = writeln!(
            out,
            "{:.6},{class},{},{},{latency},{code}",
            q.arrival.0 as f64 / 1e9,
            q.tokens.prompt.unwrap_or(0),
            q.tokens.output.unwrap_or(0)
        );
    }
    out
}
