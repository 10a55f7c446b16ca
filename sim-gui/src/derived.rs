//! The per-bucket rates the plots derive from the summary's counts (throughput, goodput,
//! degraded by reason, rejected, 429s, retries): `summary.<name>` rows, one per sampling
//! bucket, beside the engine's own series; and what the observation API shows of every
//! component at each bucket's end (`observed.<path>.in_use` and `.limit` for anything
//! held against a limit, `.tokens_left`, and the figures named `*_left` of anything but a
//! breaker, such as a quota's requests left): the limits in force over time (a gate's permits, a quota's concurrency)
//! and the use of budgets without a time series of their own — no code per component kind.
//!
//! Architecture invariant: a bucket's delta is the counts just before its end boundary `b`
//! minus the counts just before its start — read after every event and change stamped
//! before `b` and before any event at `b`, exactly where the engine closes its own bucket
//! (`sim_core::engine`: a boundary `b` is closed before the first event at or after `b`,
//! after every change stamped before `b`). The session's driver (`Run`, in the session module)
//! calls [`Derived::due`] before it processes anything at or after a boundary, so the rows
//! are a function of simulated time only: the same whether the run went in one go, event
//! by event, at any speed, or was rewound and re-simulated.
//!
//! API boundary: fed with `models::summary::Summary` counts, hands out
//! `sim_core::metrics::SeriesRow`s; no UI types.

use models::observe::ComponentState;
use models::summary::{Summary, Value};
use sim_core::metrics::SeriesRow;
use sim_core::{SimDuration, SimTime};

/// Summary counts worth a per-bucket rate (suffixes of `source.*` / `class.*` / governor
/// columns).
const RATE_SUFFIXES: &[&str] = &[
    "offered",
    "completed",
    "success",
    "degraded",
    "failed",
    "rejected",
    "retries",
    "not_permitted",
    "rejected_429",
];

fn is_rate(name: &str) -> bool {
    let leaf = name.rsplit('.').next().unwrap_or("");
    RATE_SUFFIXES.contains(&leaf)
        || leaf.ends_with("_upstream_429")
        || (leaf.starts_with("degraded_") && !leaf.contains("ms"))
}

/// The derived series of one session (see the module doc).
pub struct Derived {
    /// The sampling interval (`None`: the run samples no series, nothing is derived).
    every: Option<SimDuration>,
    end: SimTime,
    /// The start of the open bucket.
    bucket_start: SimTime,
    /// `(summary name, series metric summary.<name>)`, sorted by name: the run's
    /// [`summary_counts`] that [`is_rate`] keeps.
    ///
    /// [`summary_counts`]: models::world::QueueingWorld::summary_counts
    names: Vec<(String, String)>,
    /// Their totals at the open bucket's start.
    before: Vec<f64>,
    /// Every row derived so far, in bucket order.
    rows: Vec<SeriesRow>,
    /// The last bucket is closed (the run reached its end).
    done: bool,
}

impl Derived {
    /// A session at t = 0 whose counts (all zero) are `counts`.
    pub fn new(counts: &Summary, every: Option<SimDuration>, end: SimTime) -> Derived {
        let mut names: Vec<(String, String)> = counts
            .values
            .iter()
            .filter(|(n, _)| is_rate(n))
            .map(|(n, _)| (n.clone(), format!("summary.{n}")))
            .collect();
        names.sort();
        names.dedup();
        let before = vec![0.0; names.len()];
        let every = every.filter(|e| e.0 > 0);
        let (bucket_start, rows, done) = (SimTime::ZERO, Vec::new(), false);
        Derived { every, end, bucket_start, names, before, rows, done }
    }

    /// The next boundary before the end that processing up to `t` would cross, if any: the
    /// driver runs to just before it (`b - 1 ns`), then calls [`Derived::close`].
    pub fn due(&self, t: SimTime) -> Option<SimTime> {
        let every = self.every?;
        let b = self.bucket_start + every;
        (b <= t && b < self.end).then_some(b)
    }

    /// Closes the open bucket with the counts and component states read now (just before
    /// its end boundary).
    pub fn close(&mut self, counts: &Summary, states: &[ComponentState]) {
        let Some(every) = self.every else { return };
        if self.done {
            return;
        }
        self.push(counts, states);
        self.bucket_start += every;
    }

    /// Closes the last bucket (possibly partial) with the counts and states at the end,
    /// after everything at the end was processed — as the engine's `finish` closes its own.
    pub fn finish(&mut self, counts: &Summary, states: &[ComponentState]) {
        if self.every.is_none() || self.done || self.bucket_start >= self.end {
            return;
        }
        self.push(counts, states);
        self.done = true;
    }

    /// Every row derived so far, in bucket order.
    pub fn rows(&self) -> &[SeriesRow] {
        &self.rows
    }

    /// Rows stamped with the open bucket's start: `summary.<name>`, the counts' deltas since
    /// its start, and `observed.<path>.<figure>`, the components' states now.
    fn push(&mut self, counts: &Summary, states: &[ComponentState]) {
        let mut now = self.before.clone();
        for (n, v) in &counts.values {
            if let Ok(i) = self.names.binary_search_by(|(m, _)| m.as_str().cmp(n)) {
                now[i] = match v {
                    Value::U64(x) => *x as f64,
                    Value::F64(x) => *x,
                };
            }
        }
        let at = self.bucket_start.0;
        self.rows.extend(self.names.iter().zip(now.iter().zip(&self.before)).map(
            |((_, metric), (x, b))| SeriesRow {
                bucket_start_ns: at,
                metric: metric.clone(),
                value: x - b,
            },
        ));
        self.before = now;
        for c in states {
            observed_rows(c, at, &mut self.rows);
        }
    }
}

/// What a component's state shows of limits and budgets, as rows `observed.<path>.<what>`.
fn observed_rows(c: &ComponentState, at: u64, out: &mut Vec<SeriesRow>) {
    let mut row = |what: &str, value: f64| {
        let metric = format!("observed.{}.{what}", c.path);
        out.push(SeriesRow { bucket_start_ns: at, metric, value });
    };
    if let Some(f) = c.in_flight
        && let Some(limit) = f.limit
    {
        row("in_use", f.in_use as f64);
        row("limit", limit as f64);
    }
    if let Some(t) = c.tokens_left {
        row("tokens_left", t as f64);
    }
    // A breaker's figures are its window's (half-open permits left), not a budget.
    let budgets = c.figures.iter().filter(|(n, _)| n.ends_with("_left") && c.breaker.is_none());
    for (name, v) in budgets {
        row(name, *v);
    }
}
