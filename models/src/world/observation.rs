//! The observation subsystem: what the run writes down for its results — model events
//! (`events.parquet`), one record per request when asked (`requests.parquet`), and the
//! ids of the call path's time series (`world/series.rs`).
//!
//! Architecture invariant: write-only. Nothing here is read by a decision of the model
//! (no draw, no event, no branch depends on it), so recording more or less never changes
//! the fingerprint; the live session reads it while the run goes on.
//!
//! Boundary: the other subsystems hand it what happened by pushing model events
//! and through the `series_*` hooks; reports and the session read it (`world/report.rs`,
//! `world/observe.rs`).

use super::*;

pub(super) struct Observation {
    /// Model events so far, in the order they happened.
    pub events: Vec<ModelEvent>,
    /// One record per ended request (`RunSettings::record_requests`).
    pub records: Option<Vec<RequestRecord>>,
    /// Time-series ids of the call path.
    pub series: series::SeriesIds,
    /// Per class (by index), the latency histogram `class.<name>.latency` of its answered
    /// requests, all its sources together: the per-class quantiles per bucket come from
    /// one histogram, not from the sources' figures (registered last: the other series
    /// keep their order).
    pub class_latency: Vec<HistId>,
    /// Per class (by index), its requests' outcomes per bucket ([`ClassOutcomes`]).
    pub class_outcomes: Vec<ClassOutcomes>,
}

/// Per class, the requests that ended in each bucket by outcome (`class.<c>.success`,
/// `.degraded`, `.failed`, `.rejected`, `.rejected_<reason>` for every reason, and
/// `.upstream_429`: those that ended with an upstream 429, whatever their outcome) — the
/// per-bucket goodput, rejections and 429s the workbench plots, as counters of the
/// `timeseries` table. Every request of the class counts, warm-up included (the series'
/// own time axis tells them apart); their sums over a run with no warm-up are the `runs`
/// table's `class.<c>.*` counts.
pub(super) struct ClassOutcomes {
    success: CounterId,
    degraded: CounterId,
    failed: CounterId,
    rejected: CounterId,
    rejected_by: [CounterId; Reason::ALL.len()],
    upstream_429: CounterId,
}

impl ClassOutcomes {
    /// Registers class `name`'s counters (after every other series: their order is kept).
    pub(super) fn new(name: &str, m: &mut sim_core::metrics::Metrics) -> ClassOutcomes {
        let p = format!("class.{name}");
        ClassOutcomes {
            success: m.counter(&format!("{p}.success")),
            degraded: m.counter(&format!("{p}.degraded")),
            failed: m.counter(&format!("{p}.failed")),
            rejected: m.counter(&format!("{p}.rejected")),
            rejected_by: Reason::ALL.map(|r| m.counter(&format!("{p}.rejected_{}", r.name()))),
            upstream_429: m.counter(&format!("{p}.upstream_429")),
        }
    }

    /// Counts one ended request.
    #[inline]
    pub(super) fn record(&self, outcome: Outcome, m: &mut sim_core::metrics::Metrics) {
        match outcome {
            Outcome::Success => m.incr(self.success),
            Outcome::Degraded(_) => m.incr(self.degraded),
            Outcome::Failed(_) => m.incr(self.failed),
            Outcome::Rejected(r) => {
                m.incr(self.rejected);
                m.incr(self.rejected_by[r.index()]);
            }
        }
        if outcome.reason() == Some(Reason::Upstream429) {
            m.incr(self.upstream_429);
        }
    }
}
