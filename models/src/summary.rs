//! Per-run model results: per-source outcome counts and latency statistics, per-station
//! time averages, as a flat list of named values (the columns of `runs.parquet`).
//!
//! Architecture invariant: the summary is a function of the model only (never of wall
//! clock or observers) and is folded into the run fingerprint — except the *reported*
//! columns ([`Summary::push_reported_u64`]): figures derived from state the fingerprint
//! already covers, added for the reader (censoring views), so adding one moves no
//! fingerprint. Per-request statistics count requests that *arrived* at or after the
//! warm-up; conservation counts all requests.

use crate::outcome::{Outcome, Reason};
use sim_core::metrics::Quantiles;
use sim_core::{SimDuration, SimTime};

/// A named summary value.
#[derive(Clone, Debug)]
pub enum Value {
    U64(u64),
    F64(f64),
}

/// Bit-for-bit equality: results of identical runs are identical, `NaN` (no data)
/// included — which `f64`'s own `==` would call unequal.
impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::U64(a), Value::U64(b)) => a == b,
            (Value::F64(a), Value::F64(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

/// The summary of one run: `(column, value)` in a stable order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub values: Vec<(String, Value)>,
    /// Indices into `values` of the reported columns (not folded into the fingerprint),
    /// ascending.
    pub reported: Vec<usize>,
}

impl Summary {
    pub fn push_u64(&mut self, name: String, v: u64) {
        self.values.push((name, Value::U64(v)));
    }
    pub fn push_f64(&mut self, name: String, v: f64) {
        self.values.push((name, Value::F64(v)));
    }
    /// A reported column: written to `runs` like any other, but not folded into the
    /// fingerprint. Only for figures that are functions of what the fingerprint covers
    /// (the events and the folded columns), so no behaviour can hide in them.
    pub fn push_reported_u64(&mut self, name: String, v: u64) {
        self.reported.push(self.values.len());
        self.push_u64(name, v);
    }
    /// See [`Summary::push_reported_u64`].
    pub fn push_reported_f64(&mut self, name: String, v: f64) {
        self.reported.push(self.values.len());
        self.push_f64(name, v);
    }
    /// The folded columns, in order (what the fingerprint covers).
    pub fn folded(&self) -> impl Iterator<Item = &(String, Value)> {
        let mut skip = self.reported.iter().peekable();
        self.values.iter().enumerate().filter_map(move |(i, v)| {
            if skip.peek() == Some(&&i) {
                skip.next();
                None
            } else {
                Some(v)
            }
        })
    }
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| match v {
            Value::U64(x) => *x as f64,
            Value::F64(x) => *x,
        })
    }
}

/// Outcome counts and latency of one traffic source (all requests for conservation; the
/// measured ones, arriving after warm-up, for statistics).
#[derive(Clone)]
pub struct SourceStats {
    pub offered: u64,
    pub ended: u64,
    /// Measured requests only, below.
    pub measured_offered: u64,
    pub success: u64,
    pub degraded: [u64; Reason::ALL.len()],
    pub failed: [u64; Reason::ALL.len()],
    pub rejected: [u64; Reason::ALL.len()],
    latency: Quantiles,
    latency_sum_ns: u128,
    latency_max_ns: u64,
    wait_sum_ns: u128,
    waited: u64,
    started: u64,
}

impl Default for SourceStats {
    fn default() -> Self {
        SourceStats {
            offered: 0,
            ended: 0,
            measured_offered: 0,
            success: 0,
            degraded: [0; Reason::ALL.len()],
            failed: [0; Reason::ALL.len()],
            rejected: [0; Reason::ALL.len()],
            latency: Quantiles::new(),
            latency_sum_ns: 0,
            latency_max_ns: 0,
            wait_sum_ns: 0,
            waited: 0,
            started: 0,
        }
    }
}

impl SourceStats {
    /// A measured request started service after waiting `wait`.
    pub fn record_start(&mut self, wait: SimDuration) {
        self.started += 1;
        self.wait_sum_ns += wait.0 as u128;
        // Counted without a branch: whether a request waited is a coin toss at high load.
        self.waited += (wait.0 > 0) as u64;
    }

    /// A request ended. `measured` says whether it counts for statistics.
    pub fn record_end(&mut self, outcome: Outcome, latency: SimDuration, measured: bool) {
        self.ended += 1;
        if !measured {
            return;
        }
        match outcome {
            Outcome::Success => self.success += 1,
            Outcome::Degraded(r) => self.degraded[r.index()] += 1,
            Outcome::Failed(r) => self.failed[r.index()] += 1,
            Outcome::Rejected(r) => self.rejected[r.index()] += 1,
        }
        if matches!(outcome, Outcome::Success | Outcome::Degraded(_)) {
            self.latency.record(latency.0);
            self.latency_sum_ns += latency.0 as u128;
            self.latency_max_ns = self.latency_max_ns.max(latency.0);
        }
    }

    pub fn in_flight(&self) -> u64 {
        self.offered - self.ended
    }

    /// Appends this source's columns under `prefix` (e.g. `source.chat`).
    /// `in_flight` counts the measured requests still in the system at the end, so that
    /// `offered = completed + failed + rejected + in_flight_end` holds column-wise.
    pub fn emit(
        &self,
        prefix: &str,
        in_flight: u64,
        in_flight_oldest_age: Option<SimDuration>,
        out: &mut Summary,
    ) {
        self.emit_counts(prefix, out);
        out.push_u64(format!("{prefix}.in_flight_end"), in_flight);
        out.push_f64(
            format!("{prefix}.in_flight_oldest_age_ms"),
            in_flight_oldest_age.map(|d| d.as_ms_f64()).unwrap_or(0.0),
        );
        let n = self.latency.count();
        let q = self.latency.quantiles(&[0.5, 0.95, 0.99]);
        let q = |k: usize| q.as_ref().map_or(f64::NAN, |v| v[k] / 1e6);
        out.push_f64(
            format!("{prefix}.latency_ms_mean"),
            if n == 0 { f64::NAN } else { self.latency_sum_ns as f64 / n as f64 / 1e6 },
        );
        out.push_f64(format!("{prefix}.latency_ms_p50"), q(0));
        out.push_f64(format!("{prefix}.latency_ms_p95"), q(1));
        out.push_f64(format!("{prefix}.latency_ms_p99"), q(2));
        out.push_f64(
            format!("{prefix}.latency_ms_max"),
            if n == 0 { f64::NAN } else { self.latency_max_ns as f64 / 1e6 },
        );
        out.push_f64(
            format!("{prefix}.wait_ms_mean"),
            if self.started == 0 {
                f64::NAN
            } else {
                self.wait_sum_ns as f64 / self.started as f64 / 1e6
            },
        );
        out.push_f64(
            format!("{prefix}.p_wait"),
            if self.started == 0 { f64::NAN } else { self.waited as f64 / self.started as f64 },
        );
    }
}

impl SourceStats {
    /// The first of [`emit`](Self::emit)'s columns: the measured requests by outcome (and
    /// by reason), no quantile — cheap enough for a live observer at every bucket.
    pub fn emit_counts(&self, prefix: &str, out: &mut Summary) {
        let completed = self.success + self.degraded.iter().sum::<u64>();
        out.push_u64(format!("{prefix}.offered"), self.measured_offered);
        out.push_u64(format!("{prefix}.completed"), completed);
        out.push_u64(format!("{prefix}.success"), self.success);
        for (kind, counts) in
            [("degraded", &self.degraded), ("failed", &self.failed), ("rejected", &self.rejected)]
        {
            out.push_u64(format!("{prefix}.{kind}"), counts.iter().sum());
            for r in Reason::ALL {
                out.push_u64(format!("{prefix}.{kind}_{}", r.name()), counts[r.index()]);
            }
        }
    }

    /// The censoring view, as reported columns beside `emit`'s: latency quantiles over the
    /// answered measured requests *and* the measured requests still in flight at the end,
    /// each counted at its age then (right-censored: it will take at least that long).
    /// Each is a lower bound on the quantile those requests will have, and equals the
    /// answered-only figure when nothing is in flight. `NaN` when both sets are empty.
    pub fn emit_censored(&self, prefix: &str, in_flight_ages: &[SimDuration], out: &mut Summary) {
        let mut all = self.latency.clone();
        for a in in_flight_ages {
            all.record(a.0);
        }
        let q = all.quantiles(&[0.5, 0.95, 0.99]);
        for (k, name) in ["p50", "p95", "p99"].iter().enumerate() {
            let v = q.as_ref().map_or(f64::NAN, |v| v[k] / 1e6);
            out.push_reported_f64(format!("{prefix}.latency_ms_{name}_with_in_flight"), v);
        }
    }
}

/// The exact time average of an integer quantity, from a start instant on.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimeAverage {
    value: i64,
    since: SimTime,
    area: i128,
    start: SimTime,
    pub peak: i64,
}

impl TimeAverage {
    pub fn set(&mut self, now: SimTime, value: i64) {
        // The same value again changes nothing: the area is linear in time (exact integer
        // arithmetic) and the peak already counts it. Skipped on the hot path (a station's
        // gauges after every admission and completion).
        if value == self.value {
            return;
        }
        self.area += self.value as i128 * (now.0 - self.since.0) as i128;
        self.since = now;
        self.value = value;
        self.peak = self.peak.max(value);
    }
    /// Forget the past (end of warm-up).
    pub fn restart(&mut self, now: SimTime) {
        self.area = 0;
        self.since = now;
        self.start = now;
        self.peak = self.value;
    }
    pub fn mean(&self, now: SimTime) -> f64 {
        let area = self.area + self.value as i128 * (now.0 - self.since.0) as i128;
        let width = now.0.saturating_sub(self.start.0);
        if width == 0 { f64::NAN } else { area as f64 / width as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_average_restarts_at_warmup() {
        let mut a = TimeAverage::default();
        a.set(SimTime(0), 10);
        a.set(SimTime(5), 2);
        a.restart(SimTime(6));
        a.set(SimTime(8), 4);
        // [6,8): 2, [8,10): 4 → mean 3
        assert_eq!(a.mean(SimTime(10)), 3.0);
        assert_eq!(a.peak, 4);
    }
}
