//! The upstreams subsystem: stations, provider quotas, GPU servers and connection pools,
//! with the upstream's own behaviour — a service's duration (base draw, per-token latency,
//! load curve, latency multiplier), the failure draws (5xx, business errors), the quota's
//! admission and the cost of finished work.
//!
//! Architecture invariant: a station's work is paid for once, when it ends served (its
//! client may have given up: then it is also counted as abandoned cost), and a quota ticket
//! taken at admission is given back exactly once, when that work ends (served, cancelled
//! or refused). Every draw here is keyed by the call's `(request, path, attempt)`: taking
//! it or not never shifts another random number.
//!
//! Boundary: this module owns the upstreams' state and answers questions about it; it
//! never touches calls, requests or governors. The world's call path (`world/calls.rs`)
//! decides when work is sent, started and ended, and carries the answer back up.

use super::*;
use crate::quota::{Quota, Ticket};

/// Where a call site's calls end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Upstream {
    Station(u16),
    Gpu(u16),
    /// A GPU pool: a site's target only; a call sent there is at one of its replicas
    /// (`Gpu`), picked by its router when it is sent (`world/gpu_pool.rs`).
    Pool(u16),
}

/// A unit of work at a station: enough to serve it even after its client gave up (the
/// request's slot may then hold another request; `id` tells them apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Job {
    pub slot: u32,
    pub id: u64,
    pub source: u16,
    pub seq: u64,
    pub path: u32,
    pub attempt: u32,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    /// The provider quota's admission, given back when the work ends.
    pub ticket: Option<Ticket>,
    /// When the call was sent (a streamed answer's time to first token counts from here).
    pub sent: SimTime,
}

impl Job {
    /// Tokens the work carries (what a quota counts).
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens as u64 + self.output_tokens as u64
    }
}

pub(super) struct StationRt {
    pub name: String,
    pub st: Station<Job>,
    pub in_system: TimeAverage,
    pub busy: TimeAverage,
    /// Servers can change at run time: utilisation is ∫busy ÷ ∫capacity, the capacity
    /// being max(servers, busy) (a removed server finishes its service), so it is ≤ 1.
    pub servers: TimeAverage,
    depth: GaugeId,
    busy_gauge: GaugeId,
    pub completed: CounterId,
    /// Services finished for calls their client had abandoned.
    pub wasted: CounterId,
    pub abandoned_done: u64,
    /// Index into the subsystem's quotas (shared by every station naming it).
    pub quota: Option<usize>,
    /// Work in service by (call slot, job id), kept only when its end matters (quota, cost).
    pub running: Option<crate::slotmap::SlotMap<Job>>,
    cost_per_1k_prompt: f64,
    cost_per_1k_output: f64,
    pub cost: f64,
    /// Cost of work whose client had given up (paid for, never used).
    pub cost_abandoned: f64,
    /// Scripted answers, by order of service start (`crate::scripted`).
    pub script: Option<crate::scripted::UpstreamScript>,
    /// Stream statistics of a streaming station.
    pub stream: Option<streaming::StreamRt>,
    /// The autoscaler of its servers (index into `autoscalers`) and the metric it reads
    /// (`world/autoscalers.rs`); `None` for a station of fixed size.
    pub scaler: Option<u16>,
    pub meter: Option<autoscalers::Meter>,
}

impl StationRt {
    pub fn new(sc: &Scenario, s: &crate::station::StationSpec, ctx: &mut Ctx<'_, Ev>) -> Self {
        let scaler = sc.autoscalers.iter().position(|a| a.station == s.name).map(|a| a as u16);
        StationRt {
            name: s.name.clone(),
            st: Station::new(s),
            in_system: TimeAverage::default(),
            busy: TimeAverage::default(),
            servers: {
                let mut a = TimeAverage::default();
                a.set(SimTime::ZERO, s.servers as i64);
                a
            },
            depth: ctx.metrics.gauge(&format!("station.{}.queue_depth", s.name)),
            busy_gauge: ctx.metrics.gauge(&format!("station.{}.busy", s.name)),
            completed: ctx.metrics.counter(&format!("station.{}.completed", s.name)),
            wasted: ctx.metrics.counter(&format!("station.{}.abandoned_work", s.name)),
            abandoned_done: 0,
            quota: s
                .quota
                .as_ref()
                .map(|q| sc.quotas.iter().position(|x| &x.name == q).expect("checked")),
            running: (s.quota.is_some()
                || s.cost_per_1k_prompt_tokens > 0.0
                || s.cost_per_1k_output_tokens > 0.0)
                .then(Default::default),
            cost_per_1k_prompt: s.cost_per_1k_prompt_tokens,
            cost_per_1k_output: s.cost_per_1k_output_tokens,
            cost: 0.0,
            cost_abandoned: 0.0,
            script: s.script.as_deref().map(crate::scripted::UpstreamScript::new),
            stream: s.streaming.then(|| streaming::StreamRt::new(&s.name, ctx.metrics)),
            scaler,
            meter: scaler.map(|_| Default::default()),
        }
    }

    /// The duration of `job`'s service starting now (before a script or a stream's stalls
    /// change it): the base draw, the per-token latency and the load curve (calls already
    /// in service, this one excluded: `busy` counts it since its admission), stretched by
    /// the latency multiplier.
    pub fn service_time(&self, job: &Job, key: DrawKey) -> SimDuration {
        let station = &self.st;
        let mut service = station.service.sample(&mut key.attribute(attr::SERVICE_TIME));
        service = service
            + SimDuration(station.per_prompt_token.0.saturating_mul(job.prompt_tokens as u64))
            + SimDuration(station.per_output_token.0.saturating_mul(job.output_tokens as u64))
            + SimDuration(station.load_slope.0.saturating_mul(station.busy().saturating_sub(1)));
        if station.latency_multiplier != 1.0 {
            service = SimDuration::from_ns_f64(service.0 as f64 * station.latency_multiplier);
        }
        service
    }

    /// The upstream's error for a service keyed `key`: an injected 5xx, else a business
    /// error, else none (keyed draws, taken only when the rate is positive).
    pub fn draw_error(&self, key: DrawKey) -> Option<Reason> {
        let (error_rate, business) = (self.st.error_rate, self.st.business_error_rate);
        if error_rate > 0.0 && key.uniform(attr::UPSTREAM_FAILURE) < error_rate {
            Some(Reason::Upstream5xx)
        } else if business > 0.0 && key.uniform(attr::BUSINESS_ERROR) < business {
            Some(Reason::BusinessError)
        } else {
            None
        }
    }

    /// The price of `job`'s work, served in full.
    fn cost_of(&self, job: &Job) -> f64 {
        (job.prompt_tokens as f64 * self.cost_per_1k_prompt
            + job.output_tokens as f64 * self.cost_per_1k_output)
            / 1000.0
    }

    /// Refreshes the station's time averages and gauges at `now`.
    #[inline(always)]
    pub fn gauges(&mut self, now: SimTime, metrics: &mut sim_core::metrics::Metrics) {
        let (busy, q) = (self.st.busy() as i64, self.st.queue_len() as i64);
        self.in_system.set(now, busy + q);
        self.busy.set(now, busy);
        // Servers removed at run time finish their services first: until then they count.
        self.servers.set(now, (self.st.servers as i64).max(busy));
        metrics.set(self.depth, now, q);
        metrics.set(self.busy_gauge, now, busy);
        if let Some(m) = &mut self.meter {
            m.set(now, busy, self.st.servers as i64, q);
        }
    }
}

/// Every upstream of the scenario, by index (the ids [`Upstream`] and the events carry).
pub(super) struct Upstreams {
    pub stations: Vec<StationRt>,
    pub quotas: Vec<(String, Quota)>,
    /// The scenario's GPU servers, then each pool's replicas.
    pub gpus: Vec<gpu::GpuRt>,
    pub conns: Vec<conn::ConnPoolRt>,
    pub pools: Vec<gpu_pool::PoolRt>,
}

impl Upstreams {
    /// The scenario's own GPU servers (the first of `gpus`; pool replicas follow).
    pub fn gpu_servers(&self) -> usize {
        self.pools.first().map_or(self.gpus.len(), |p| p.base as usize)
    }

    /// The provider quota of station `st` admits `job` (its ticket is put on the job), or
    /// answers 429 with its Retry-After, if any (consuming nothing). A station without a quota
    /// admits everything.
    pub fn admit_quota(
        &mut self,
        st: u16,
        job: &mut Job,
        now: SimTime,
    ) -> Result<(), Option<SimDuration>> {
        let Some(q) = self.stations[st as usize].quota else { return Ok(()) };
        match self.quotas[q].1.admit(job.tokens(), now) {
            crate::quota::Admit::Admit(t) => {
                job.ticket = Some(t);
                Ok(())
            }
            crate::quota::Admit::Reject429 { retry_after } => Err(retry_after),
        }
    }

    /// Station `st`'s work for `job` is over (done, cancelled or refused): the quota gets
    /// its ticket back, and finished work is paid for (`abandoned`: its client no longer
    /// waits for it).
    pub fn work_ended(&mut self, st: u16, job: &Job, served: bool, abandoned: bool, now: SimTime) {
        let s = &mut self.stations[st as usize];
        if let (Some(q), Some(t)) = (s.quota, job.ticket) {
            let used = if served { job.tokens() } else { 0 };
            self.quotas[q].1.complete(t, used, now);
        }
        if served {
            let cost = s.cost_of(job);
            s.cost += cost;
            if abandoned {
                s.cost_abandoned += cost;
            }
        }
    }
}
