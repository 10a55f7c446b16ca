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
}
