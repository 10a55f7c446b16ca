//! Time-series metrics of the call path (docs/results.md, `timeseries`): per call site the
//! attempts sent upstream, the retries, the client timeouts and the 429s answered; per
//! upstream the calls arriving; per breaker (a Resilience4j breaker, a Sentinel degrade
//! rule, each degrade rule of a `SentinelResource`) its window (buffered, failed, slow
//! calls, the failure and slow-call rates) and state as gauges, and its refusals by state
//! as counters.
//!
//! Architecture invariant: write-only observers. Each hook only updates metrics by id (no
//! draw, no event, no decision reads them), so the fingerprint is the same with or without
//! them — and with or without sampling.
//!
//! API boundary: one-line hooks called from `world/calls.rs` (`series_sent`,
//! `series_reached`, `series_retry`, `series_timeout`, `series_answer`, `series_governor`); ids registered
//! once in [`SeriesIds::new`].

use super::*;
use crate::breaker::{BreakerState, CircuitBreakerStrategy, DegradeBreaker};
use crate::callsite::GovernorKind;
use sim_core::metrics::Metrics;

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
    /// GPU servers', then pool replicas' (`world/gpu_pool.rs`).
    pub(super) gpus: Vec<CounterId>,
    /// Per governor: one for a breaker or degrade rule, one per degrade rule of a Sentinel
    /// resource, none otherwise (an empty `Vec` allocates nothing).
    breakers: Vec<Vec<BreakerSeries>>,
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
            .map(|(g, p)| match g {
                GovernorKind::CircuitBreaker(_) => {
                    vec![BreakerSeries::new(m, p, "not_permitted", &BREAKER_REFUSING)]
                }
                GovernorKind::DegradeRule(_) => {
                    vec![BreakerSeries::new(m, p, "blocked", &DEGRADE_REFUSING)]
                }
                GovernorKind::SentinelResource(r) => (0..r.degrade().len())
                    .map(|j| {
                        let p = format!("{p}.degrade{j}");
                        BreakerSeries::new(m, &p, "blocked", &DEGRADE_REFUSING)
                    })
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        SeriesIds { sites, stations, gpus, breakers }
    }
}

impl BreakerSeries {
    /// The series of the breaker at metric prefix `p`, its refusals `<p>.<refused>_<state>`
    /// for each of the `states` in which it refuses.
    fn new(m: &mut Metrics, p: &str, refused: &str, states: &[BreakerState]) -> Self {
        let mut refused_in = [None; 6];
        for s in states {
            let name = format!("{p}.{refused}_{}", s.name().to_ascii_lowercase());
            refused_in[s.gauge() as usize] = Some(m.counter(&name));
        }
        // States that never refuse share the first id; their count stays 0.
        let first = refused_in.iter().flatten().next().copied().expect("a refusing state");
        BreakerSeries {
            state: m.gauge(&format!("{p}.state")),
            buffered: m.gauge(&format!("{p}.buffered_calls")),
            failed: m.gauge(&format!("{p}.failed_calls")),
            slow: m.gauge(&format!("{p}.slow_calls")),
            failure_rate: m.gauge(&format!("{p}.failure_rate_bp")),
            slow_rate: m.gauge(&format!("{p}.slow_call_rate_bp")),
            refused_in: refused_in.map(|c| c.unwrap_or(first)),
            seen: [0; 6],
        }
    }

    /// The gauges and totals of `v`, in publishing order.
    fn values(v: &BreakerView) -> [i64; 6] {
        let (calls, failed, slow) = (v.calls as i64, v.failed as i64, v.slow as i64);
        [v.state.gauge() as i64, calls, failed, slow, bp(v.failure_pct), bp(v.slow_pct)]
    }

    /// Would [`Self::publish`] of `v` change nothing (every gauge at its value, no new
    /// refusal)? Setting a gauge to the value it holds is no change (`Metrics::set`).
    fn is_published(&self, m: &Metrics, v: &BreakerView) -> bool {
        let ids = [self.state, self.buffered, self.failed, self.slow];
        let ids = [ids[0], ids[1], ids[2], ids[3], self.failure_rate, self.slow_rate];
        let gauges = ids.iter().zip(Self::values(v)).all(|(&id, x)| m.gauge_value(id) == x);
        gauges && v.refused == self.seen
    }

    /// Publishes one breaker's view at `now`: its state, window `(calls, failed, slow)`,
    /// rates in percent and refusal totals by state (adding what is new since last time).
    fn publish(&mut self, m: &mut Metrics, now: SimTime, v: BreakerView) {
        let [state, calls, failed, slow, failure_rate, slow_rate] = Self::values(&v);
        m.set(self.state, now, state);
        m.set(self.buffered, now, calls);
        m.set(self.failed, now, failed);
        m.set(self.slow, now, slow);
        m.set(self.failure_rate, now, failure_rate);
        m.set(self.slow_rate, now, slow_rate);
        for (k, &n) in v.refused.iter().enumerate() {
            if n > self.seen[k] {
                m.add(self.refused_in[k], n - self.seen[k]);
                self.seen[k] = n;
            }
        }
    }
}

/// What a breaker's series show at one instant.
struct BreakerView {
    state: BreakerState,
    calls: u64,
    failed: u64,
    slow: u64,
    failure_pct: f64,
    slow_pct: f64,
    refused: [u64; 6],
}

/// A Sentinel degrade rule's view: its statistics bucket, the bad completions as failed
/// (error ratio / count) or slow (slow ratio), its blocks by state.
fn degrade_view(d: &DegradeBreaker) -> BreakerView {
    let (total, bad) = d.bucket();
    let rate = if total == 0 { 0.0 } else { bad as f64 * 100.0 / total as f64 };
    let slow_grade = d.spec().grade == CircuitBreakerStrategy::SlowRequestRatio;
    let (failed, slow) = if slow_grade { (0, bad) } else { (bad, 0) };
    let (failure_pct, slow_pct) = if slow_grade { (0.0, rate) } else { (rate, 0.0) };
    BreakerView {
        state: d.state(),
        calls: total,
        failed,
        slow,
        failure_pct,
        slow_pct,
        refused: d.counters.blocked_in,
    }
}

/// The states in which each breaker kind refuses calls (its refusal counters).
const BREAKER_REFUSING: [BreakerState; 3] =
    [BreakerState::Open, BreakerState::HalfOpen, BreakerState::ForcedOpen];
const DEGRADE_REFUSING: [BreakerState; 2] = [BreakerState::Open, BreakerState::HalfOpen];

impl QueueingWorld {
    /// A call of `site` is sent (first attempt, retry or failover).
    pub(super) fn series_sent(&mut self, site: usize, ctx: &mut Ctx<'_, Ev>) {
        ctx.metrics.incr(self.obs.series.sites[site].attempts);
    }

    /// A call reaches upstream `up` (when sent, or after its network's request leg).
    pub(super) fn series_reached(&mut self, up: Upstream, ctx: &mut Ctx<'_, Ev>) {
        let c = match up {
            Upstream::Station(s) => self.obs.series.stations[s as usize],
            Upstream::Gpu(g) => self.obs.series.gpus[g as usize],
            Upstream::Pool(_) => unreachable!("a call reaches a pool's replica"),
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
        let series = &mut self.obs.series.breakers[g];
        if series.is_empty() {
            return;
        }
        let (now, m) = (ctx.now(), &mut *ctx.metrics);
        breaker_views(&self.govs.arena[g], |j, v| series[j].publish(m, now, v));
    }

    /// Would [`Self::series_governor`] change nothing for `g` now (debug checks)?
    pub(super) fn series_published(&self, g: usize, ctx: &Ctx<'_, Ev>) -> bool {
        let series = &self.obs.series.breakers[g];
        let mut published = true;
        if !series.is_empty() {
            let m = &*ctx.metrics;
            breaker_views(&self.govs.arena[g], |j, v| published &= series[j].is_published(m, &v));
        }
        published
    }
}

/// The view of each breaker series of governor `gov` (a breaker: one; a Sentinel resource:
/// one per degrade rule), with its index.
fn breaker_views(gov: &GovernorKind, mut each: impl FnMut(usize, BreakerView)) {
    match gov {
        GovernorKind::CircuitBreaker(cb) => {
            let s = cb.snapshot();
            let v = BreakerView {
                state: cb.state(),
                calls: s.calls,
                failed: s.failed,
                slow: s.slow,
                failure_pct: s.failure_rate() as f64,
                slow_pct: s.slow_rate() as f64,
                refused: cb.counters.not_permitted_in,
            };
            each(0, v);
        }
        GovernorKind::DegradeRule(d) => each(0, degrade_view(d)),
        GovernorKind::SentinelResource(r) => {
            for (j, d) in r.degrade().iter().enumerate() {
                each(j, degrade_view(d));
            }
        }
        _ => unreachable!("breaker series for a breaker"),
    }
}
