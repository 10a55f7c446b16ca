//! Time-series metrics of the call path (docs/results.md, `timeseries`): per call site the
//! attempts sent upstream, the retries, the client timeouts and the 429s answered; per
//! upstream the calls arriving; per breaker its window (buffered, failed, slow calls, the
//! failure and slow-call rates) and state as gauges, and its refusals by state as counters.
//!
//! Architecture invariant: write-only observers. Each hook only updates metrics by id (no
//! draw, no event, no decision reads them), so the fingerprint is the same with or without
//! them — and with or without sampling.
//!
//! API boundary: one-line hooks called from `world/calls.rs` (`series_sent`,
//! `series_retry`, `series_timeout`, `series_answer`, `series_governor`); ids registered
//! once in [`SeriesIds::new`].

use super::*;
use crate::breaker::{BreakerState, CircuitBreakerStrategy};
use crate::callsite::GovernorKind;

/// Per call site.
pub(super) struct SiteSeries {
    attempts: CounterId,
    retries: CounterId,
    timeouts: CounterId,
    upstream_429: CounterId,
}

/// Per breaker: the gauges of its window and state, and refusals by state (with the last
/// totals seen, to add the difference).
pub(super) struct BreakerSeries {
    state: GaugeId,
    buffered: GaugeId,
    failed: GaugeId,
    slow: GaugeId,
    failure_rate: GaugeId,
    slow_rate: GaugeId,
    refused_in: [CounterId; 6],
    seen: [u64; 6],
}

/// Every series id of the call path.
pub(super) struct SeriesIds {
    sites: Vec<SiteSeries>,
    stations: Vec<CounterId>,
    gpus: Vec<CounterId>,
    /// Per governor: `Some` for the breakers.
    breakers: Vec<Option<BreakerSeries>>,
}

/// A rate in percent as basis points (gauges hold integers): 10,000 = 100%.
fn bp(pct: f64) -> i64 {
    (pct * 100.0).round() as i64
}

impl SeriesIds {
    pub(super) fn new(
        sc: &Scenario,
        gov_names: &[String],
        govs: &[GovernorKind],
        ctx: &mut Ctx<'_, Ev>,
    ) -> Self {
        let m = &mut *ctx.metrics;
        let sites = sc
            .call_sites
            .iter()
            .map(|s| {
                let p = format!("call_site.{}", s.name);
                SiteSeries {
                    attempts: m.counter(&format!("{p}.attempts")),
                    retries: m.counter(&format!("{p}.retries")),
                    timeouts: m.counter(&format!("{p}.timeouts")),
                    upstream_429: m.counter(&format!("{p}.upstream_429")),
                }
            })
            .collect();
        let stations = sc
            .stations
            .iter()
            .map(|s| m.counter(&format!("station.{}.arrivals", s.name)))
            .collect();
        let gpus = sc
            .gpu_servers
            .iter()
            .map(|s| m.counter(&format!("gpu_server.{}.arrivals", s.name)))
            .collect();
        let breakers = govs
            .iter()
            .zip(gov_names)
            .map(|(g, p)| {
                let (refused, states): (&str, &[BreakerState]) = match g {
                    GovernorKind::CircuitBreaker(_) => ("not_permitted", &BREAKER_REFUSING),
                    GovernorKind::DegradeRule(_) => ("blocked", &DEGRADE_REFUSING),
                    _ => return None,
                };
                let mut refused_in = [None; 6];
                for s in states {
                    let name = format!("{p}.{refused}_{}", s.name().to_ascii_lowercase());
                    refused_in[s.gauge() as usize] = Some(m.counter(&name));
                }
                // States that never refuse share the first id; their count stays 0.
                let first = refused_in.iter().flatten().next().copied().expect("a refusing state");
                Some(BreakerSeries {
                    state: m.gauge(&format!("{p}.state")),
                    buffered: m.gauge(&format!("{p}.buffered_calls")),
                    failed: m.gauge(&format!("{p}.failed_calls")),
                    slow: m.gauge(&format!("{p}.slow_calls")),
                    failure_rate: m.gauge(&format!("{p}.failure_rate_bp")),
                    slow_rate: m.gauge(&format!("{p}.slow_call_rate_bp")),
                    refused_in: refused_in.map(|c| c.unwrap_or(first)),
                    seen: [0; 6],
                })
            })
            .collect();
        SeriesIds { sites, stations, gpus, breakers }
    }
}

/// The states in which each breaker kind refuses calls (its refusal counters).
const BREAKER_REFUSING: [BreakerState; 3] =
    [BreakerState::Open, BreakerState::HalfOpen, BreakerState::ForcedOpen];
const DEGRADE_REFUSING: [BreakerState; 2] = [BreakerState::Open, BreakerState::HalfOpen];

impl QueueingWorld {
    /// A call of `site` is sent to `up` (first attempt, retry or failover).
    pub(super) fn series_sent(&mut self, site: usize, up: Upstream, ctx: &mut Ctx<'_, Ev>) {
        ctx.metrics.incr(self.obs.series.sites[site].attempts);
        let c = match up {
            Upstream::Station(s) => self.obs.series.stations[s as usize],
            Upstream::Gpu(g) => self.obs.series.gpus[g as usize],
        };
        ctx.metrics.incr(c);
    }

    /// A call of `site` starts another attempt after its back-off.
    pub(super) fn series_retry(&mut self, site: usize, ctx: &mut Ctx<'_, Ev>) {
        ctx.metrics.incr(self.obs.series.sites[site].retries);
    }

    /// A call of `site` timed out waiting for its upstream.
    pub(super) fn series_timeout(&mut self, site: usize, ctx: &mut Ctx<'_, Ev>) {
        ctx.metrics.incr(self.obs.series.sites[site].timeouts);
    }

    /// The upstream (or its quota) answered a call of `site` with `outcome`.
    pub(super) fn series_answer(&mut self, site: usize, outcome: Outcome, ctx: &mut Ctx<'_, Ev>) {
        if outcome == Outcome::Rejected(Reason::Upstream429) {
            ctx.metrics.incr(self.obs.series.sites[site].upstream_429);
        }
    }

    /// Governor `g` acted: a breaker's gauges and refusals by state.
    pub(super) fn series_governor(&mut self, g: usize, ctx: &mut Ctx<'_, Ev>) {
        let Some(b) = &mut self.obs.series.breakers[g] else { return };
        let (state, calls, failed, slow, refused, fr, sr) = match &self.govs.arena[g] {
            GovernorKind::CircuitBreaker(cb) => {
                let s = cb.snapshot();
                let (fr, sr) = (s.failure_rate() as f64, s.slow_rate() as f64);
                (cb.state(), s.calls, s.failed, s.slow, cb.counters.not_permitted_in, fr, sr)
            }
            GovernorKind::DegradeRule(d) => {
                let (total, bad) = d.bucket();
                let rate = if total == 0 { 0.0 } else { bad as f64 * 100.0 / total as f64 };
                let slow_grade = d.spec().grade == CircuitBreakerStrategy::SlowRequestRatio;
                let (failed, slow) = if slow_grade { (0, bad) } else { (bad, 0) };
                let (fr, sr) = if slow_grade { (0.0, rate) } else { (rate, 0.0) };
                (d.state(), total, failed, slow, d.counters.blocked_in, fr, sr)
            }
            _ => unreachable!("breaker series for a breaker"),
        };
        let now = ctx.now();
        let m = &mut *ctx.metrics;
        m.set(b.state, now, state.gauge() as i64);
        m.set(b.buffered, now, calls as i64);
        m.set(b.failed, now, failed as i64);
        m.set(b.slow, now, slow as i64);
        m.set(b.failure_rate, now, bp(fr));
        m.set(b.slow_rate, now, bp(sr));
        for (k, &n) in refused.iter().enumerate() {
            if n > b.seen[k] {
                m.add(b.refused_in[k], n - b.seen[k]);
                b.seen[k] = n;
            }
        }
    }
}
