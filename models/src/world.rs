//! The queueing world: sources → call sites (governor stacks) → stations, wired from a
//! [`Scenario`]. It implements [`sim_core::World`].
//!
//! Request life cycle (each arrow an event or an immediate step):
//! `Arrival` → descend the call site's stack → (parked at a governor until woken or its
//! deadline) → station: start service or queue or reject → `ServiceDone` → ascend the stack
//! → end. Every request ends exactly once, with one [`Outcome`].
//!
//! Architecture invariants (numbered in ARCHITECTURE.md, checked by [`QueueingWorld::check_invariants`]):
//! conservation per source, permits conserved per gate, queues within capacity, work
//! conservation at stations.

use crate::callsite::{self, GovernorKind, Next, Woken};
use crate::gate::Gate;
use crate::governor::{CallInfo, Governor};
use crate::ids::{CallId, ClassId, RequestId};
use crate::outcome::{Outcome, Reason};
use crate::params::{ParamValue, split_path};
use crate::scenario::{GovernorRef, Scenario, SetParam};
use crate::station::{Admit, Station};
use crate::summary::{SourceStats, Summary, TimeAverage};
use sim_core::metrics::{CounterId, GaugeId, HistId};
use sim_core::rng::{DrawKey, Stream, name_id};
use sim_core::{Ctx, Phase, SimDuration, SimTime, TimerHandle};

/// Keyed attribute ids (never renumber: they select the random numbers a request gets).
pub mod attr {
    pub const SERVICE_TIME: u32 = 1;
    /// Whether an upstream call meets an injected failure.
    pub const UPSTREAM_FAILURE: u32 = 2;
    /// The bits a call hands its governors ([`crate::governor::CallInfo::draw`]).
    pub const GOVERNOR_BITS: u32 = 3;
}

/// Events of the queueing world. Kind ids are written down, not derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    Arrival {
        source: u16,
    },
    ServiceDone {
        station: u16,
        slot: u32,
        id: u64,
    },
    WaitDeadline {
        slot: u32,
        id: u64,
    },
    WarmupEnd,
    /// The client's timeout on an upstream call.
    UpstreamTimeout {
        slot: u32,
        id: u64,
    },
}

impl sim_core::Event for Ev {
    fn kind_id(&self) -> u16 {
        match self {
            Ev::Arrival { .. } => 1,
            Ev::ServiceDone { .. } => 2,
            Ev::WaitDeadline { .. } => 3,
            Ev::WarmupEnd => 4,
            Ev::UpstreamTimeout { .. } => 5,
        }
    }
    fn entity_id(&self) -> u64 {
        match *self {
            Ev::Arrival { source } => source as u64,
            Ev::ServiceDone { id, .. }
            | Ev::WaitDeadline { id, .. }
            | Ev::UpstreamTimeout { id, .. } => id,
            Ev::WarmupEnd => 0,
        }
    }
    fn phase(&self) -> Phase {
        match self {
            Ev::ServiceDone { .. } => Phase::Completion,
            Ev::WaitDeadline { .. } | Ev::UpstreamTimeout { .. } => Phase::Timeout,
            Ev::Arrival { .. } => Phase::Arrival,
            Ev::WarmupEnd => Phase::Dispatch,
        }
    }
}

/// One request in flight.
#[derive(Clone, Debug)]
struct Req {
    id: RequestId,
    source: u16,
    class: u16,
    seq: u64,
    site: u16,
    arrival: SimTime,
    start: Option<SimTime>,
    tokens: Tokens,
    /// The upstream will answer 5xx (failure injection, drawn at the start of service).
    upstream_fails: bool,
    /// In service at its station (else waiting there, or not sent yet).
    in_service: bool,
    /// The completion event, when the station may cancel it.
    service_timer: Option<TimerHandle>,
    /// The client's timeout on the upstream call.
    upstream_timer: Option<TimerHandle>,
    /// Where it is parked, and the deadline timer.
    parked_at: Option<usize>,
    on_deadline: Reason,
    timer: Option<TimerHandle>,
    generation: u32,
}

/// Per-class results.
struct ClassRt {
    name: String,
    sla: SimDuration,
    stats: SourceStats,
    /// Measured requests answered within the SLA.
    within_sla: u64,
}

struct SourceRt {
    name: String,
    class: u16,
    key: u64,
    stream: Stream,
    /// `None` for a trace source.
    interarrival: Option<sim_core::Dist<SimDuration>>,
    trace: Option<crate::trace::TraceSpec>,
    start: SimTime,
    profile: Option<crate::profile::Profile>,
    limit: Option<u64>,
    issued: u64,
    site: u16,
    stats: SourceStats,
    arrivals: CounterId,
    latency: HistId,
}

struct SiteRt {
    name: String,
    stack: Vec<usize>,
    station: u16,
    timeout: SimDuration,
}

/// A unit of work at a station: enough to serve it even after its client gave up (the
/// request's slot may then hold another request; `id` tells them apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Job {
    slot: u32,
    id: u64,
    source: u16,
    seq: u64,
}

struct GateRt {
    name: String,
    in_use: GaugeId,
    waiting: GaugeId,
}

struct StationRt {
    name: String,
    st: Station<Job>,
    in_system: TimeAverage,
    busy: TimeAverage,
    /// Servers can change at run time: utilisation is ∫busy ÷ ∫servers.
    servers: TimeAverage,
    depth: GaugeId,
    busy_gauge: GaugeId,
    completed: CounterId,
    /// Services finished for calls their client had abandoned.
    wasted: CounterId,
    abandoned_done: u64,
}

/// Run settings that are not part of the scenario.
#[derive(Clone, Copy, Debug)]
pub struct RunSettings {
    pub seed: u64,
    pub warmup: SimDuration,
    /// Keep one [`RequestRecord`] per request (memory grows with the run).
    pub record_requests: bool,
}

/// A state change worth a row in `events.parquet`: a run-time configuration change now;
/// breaker transitions and outages as those components arrive.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelEvent {
    pub time: SimTime,
    /// Component path, e.g. `gate.llm`.
    pub component: String,
    /// `config_change`, …
    pub kind: &'static str,
    pub from: String,
    pub to: String,
}

/// Token counts a request carries (from a trace; `None` where unknown).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    pub prompt: Option<u32>,
    pub output: Option<u32>,
}

/// What happened to one request (kept when `record_requests` is on).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestRecord {
    pub request_id: u64,
    /// Index into the scenario's sources.
    pub source: u16,
    /// Sequence number within its source (the key of its random numbers).
    pub seq: u64,
    pub arrival: SimTime,
    /// When service started (`None` if it never did).
    pub start: Option<SimTime>,
    /// When it ended (`None`: still in the system at the end of the run).
    pub end: Option<SimTime>,
    /// `None`: still in the system at the end of the run.
    pub outcome: Option<Outcome>,
    pub tokens: Tokens,
}

pub struct QueueingWorld {
    seed: u64,
    warmup: SimTime,
    sources: Vec<SourceRt>,
    classes: Vec<ClassRt>,
    sites: Vec<SiteRt>,
    govs: Vec<GovernorKind>,
    gates: Vec<GateRt>,
    stations: Vec<StationRt>,
    reqs: Vec<Option<Req>>,
    generations: Vec<u32>,
    free: Vec<u32>,
    live: u64,
    next_request: u64,
    woken: std::collections::VecDeque<Woken>,
    records: Option<Vec<RequestRecord>>,
    events: Vec<ModelEvent>,
}

fn call_id(slot: u32, generation: u32) -> CallId {
    CallId(((generation as u64) << 32) | slot as u64)
}
fn slot_of(c: CallId) -> (u32, u32) {
    (c.0 as u32, (c.0 >> 32) as u32)
}

mod changes;
mod report;

impl QueueingWorld {
    /// Wires the world; the scenario must have passed `check()` and `check_timeline()`.
    pub fn build(sc: &Scenario, run: RunSettings, ctx: &mut Ctx<'_, Ev>) -> Self {
        let find_site =
            |n: &str| sc.call_sites.iter().position(|c| c.name == n).expect("checked") as u16;
        let gates: Vec<GateRt> = sc
            .gates
            .iter()
            .map(|g| GateRt {
                name: g.name.clone(),
                in_use: ctx.metrics.gauge(&format!("gate.{}.in_use", g.name)),
                waiting: ctx.metrics.gauge(&format!("gate.{}.waiting", g.name)),
            })
            .collect();
        let govs = sc.gates.iter().map(|g| GovernorKind::Gate(Gate::new(g))).collect();
        let sites = sc
            .call_sites
            .iter()
            .map(|c| SiteRt {
                stack: c
                    .governors
                    .iter()
                    .map(|GovernorRef::Gate(n)| {
                        sc.gates.iter().position(|g| &g.name == n).expect("checked")
                    })
                    .collect(),
                station: sc.stations.iter().position(|s| s.name == c.upstream).expect("checked")
                    as u16,
                name: c.name.clone(),
                timeout: c.timeout,
            })
            .collect();
        let stations = sc
            .stations
            .iter()
            .map(|s| StationRt {
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
            })
            .collect();
        let sources: Vec<SourceRt> = sc
            .sources
            .iter()
            .map(|s| SourceRt {
                class: s
                    .class
                    .as_ref()
                    .map(|c| sc.classes.iter().position(|k| &k.name == c).expect("checked") as u16)
                    .unwrap_or(0),
                name: s.name.clone(),
                key: name_id(&s.name),
                stream: Stream::new(run.seed, &format!("arrivals/{}", s.name)),
                interarrival: s.interarrival.clone(),
                trace: s.trace.clone(),
                start: SimTime::ZERO + s.start,
                profile: s.profile.clone(),
                limit: s.limit,
                issued: 0,
                site: find_site(&s.target),
                stats: SourceStats::default(),
                arrivals: ctx.metrics.counter(&format!("source.{}.arrivals", s.name)),
                latency: ctx.metrics.histogram(&format!("source.{}.latency", s.name)),
            })
            .collect();
        for (i, s) in sc.sources.iter().enumerate() {
            ctx.schedule_at(SimTime::ZERO + s.start, Ev::Arrival { source: i as u16 });
        }
        if run.warmup > SimDuration::ZERO {
            ctx.schedule_at(SimTime::ZERO + run.warmup, Ev::WarmupEnd);
        }
        QueueingWorld {
            seed: run.seed,
            warmup: SimTime::ZERO + run.warmup,
            sources,
            classes: sc
                .classes
                .iter()
                .map(|c| ClassRt {
                    name: c.name.clone(),
                    sla: c.sla,
                    stats: SourceStats::default(),
                    within_sla: 0,
                })
                .collect(),
            sites,
            govs,
            gates,
            stations,
            reqs: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            live: 0,
            next_request: 0,
            woken: Default::default(),
            records: run.record_requests.then(Vec::new),
            events: Vec::new(),
        }
    }

    fn alloc(&mut self, r: Req) -> u32 {
        self.live += 1;
        match self.free.pop() {
            Some(s) => {
                self.reqs[s as usize] = Some(r);
                s
            }
            None => {
                self.reqs.push(Some(r));
                self.generations.push(0);
                (self.reqs.len() - 1) as u32
            }
        }
    }

    fn info(&self, slot: u32) -> CallInfo {
        let r = self.reqs[slot as usize].as_ref().expect("live request");
        let src = &self.sources[r.source as usize];
        let key = DrawKey::request(self.seed, src.key, r.seq);
        CallInfo {
            call: call_id(slot, r.generation),
            class: ClassId(r.class),
            key: 0,
            user: 0,
            tokens: r.tokens.prompt.unwrap_or(0).saturating_add(r.tokens.output.unwrap_or(0)),
            draw: key.bits(attr::GOVERNOR_BITS),
            retry_after: None,
        }
    }

    fn on_arrival(&mut self, source: u16, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let src = &mut self.sources[source as usize];
        let seq = src.issued;
        src.issued += 1;
        src.stats.offered += 1;
        let class = &mut self.classes[src.class as usize].stats;
        class.offered += 1;
        if now >= self.warmup {
            src.stats.measured_offered += 1;
            class.measured_offered += 1;
        }
        ctx.metrics.incr(src.arrivals);
        if src.limit.is_none_or(|l| src.issued < l) {
            let next = match (&src.trace, &src.interarrival) {
                // A trace source: the next row's time, until the rows run out.
                (Some(t), _) => t.offset(src.issued as usize).map(|off| src.start + off),
                (None, Some(dist)) => {
                    let gap = dist.sample(&mut src.stream);
                    match &src.profile {
                        None => Some(now + gap),
                        // `None`: the profile stays at zero for ever; the source is done.
                        Some(p) => p.advance(now, gap.0 as f64),
                    }
                }
                (None, None) => unreachable!("checked: a source has a trace or an inter-arrival"),
            };
            if let Some(at) = next {
                ctx.schedule_at(at, Ev::Arrival { source });
            }
        }
        let site = src.site;
        let tokens = src
            .trace
            .as_ref()
            .and_then(|t| t.data.as_ref())
            .map(|d| Tokens {
                prompt: d.prompt_tokens.get(seq as usize).copied().flatten(),
                output: d.output_tokens.get(seq as usize).copied().flatten(),
            })
            .unwrap_or_default();
        let id = RequestId(self.next_request);
        self.next_request += 1;
        let class = self.sources[source as usize].class;
        let slot = self.alloc(Req {
            id,
            source,
            class,
            seq,
            site,
            arrival: now,
            start: None,
            tokens,
            upstream_fails: false,
            in_service: false,
            service_timer: None,
            upstream_timer: None,
            parked_at: None,
            on_deadline: Reason::Timeout,
            timer: None,
            generation: 0,
        });
        let generation = self.generations[slot as usize];
        self.reqs[slot as usize].as_mut().expect("just allocated").generation = generation;
        self.descend(slot, 0, ctx);
        self.resume_woken(ctx);
    }

    /// Sends request `slot` down its call site from `level`, and acts on the verdict.
    fn descend(&mut self, slot: u32, level: usize, ctx: &mut Ctx<'_, Ev>) {
        let site = self.reqs[slot as usize].as_ref().expect("live").site as usize;
        if level == self.sites[site].stack.len() {
            // Fast path: nothing (more) to pass.
            self.send_to_station(slot, ctx);
            return;
        }
        let info = self.info(slot);
        let next = callsite::descend(
            &self.sites[site].stack,
            &mut self.govs,
            &info,
            level,
            ctx.now(),
            &mut self.woken,
        );
        self.act(slot, next, ctx);
    }

    fn act(&mut self, slot: u32, next: Next, ctx: &mut Ctx<'_, Ev>) {
        match next {
            Next::Upstream => self.send_to_station(slot, ctx),
            Next::Parked { level, deadline, on_deadline } => {
                let r = self.reqs[slot as usize].as_mut().expect("live");
                r.parked_at = Some(level);
                r.on_deadline = on_deadline;
                let id = r.id.0;
                if let Some(d) = deadline {
                    r.timer = Some(ctx.timer_at(d, Ev::WaitDeadline { slot, id }));
                }
            }
            Next::Finished(o) => self.end(slot, o, ctx),
            Next::Retry { .. } => unreachable!("no governor of this world retries"),
        }
        self.update_gate_gauges(ctx);
    }

    fn send_to_station(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let r = self.reqs[slot as usize].as_ref().expect("live");
        let site = r.site as usize;
        let job = Job { slot, id: r.id.0, source: r.source, seq: r.seq };
        let st = self.sites[site].station;
        let admitted = self.stations[st as usize].st.admit(job, now);
        let timeout = self.sites[site].timeout;
        if admitted != Admit::Full && timeout > SimDuration::ZERO {
            let h = ctx.timer_at(now + timeout, Ev::UpstreamTimeout { slot, id: job.id });
            self.reqs[slot as usize].as_mut().expect("live").upstream_timer = Some(h);
        }
        match admitted {
            Admit::Start => self.start_service(st, job, ctx),
            Admit::Queued => {}
            Admit::Full => {
                let refusal = Outcome::Rejected(self.stations[st as usize].st.reject_as.reason());
                self.answer(slot, refusal, ctx);
            }
        }
        self.update_station_gauges(st, ctx);
    }

    fn start_service(&mut self, st: u16, job: Job, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let key = DrawKey::request(self.seed, self.sources[job.source as usize].key, job.seq);
        let station = &self.stations[st as usize].st;
        let mut service = station.service.sample(&mut key.attribute(attr::SERVICE_TIME));
        if station.latency_multiplier != 1.0 {
            service = SimDuration::from_ns_f64(service.0 as f64 * station.latency_multiplier);
        }
        let (error_rate, cancellable) = (station.error_rate, station.cancellation);
        let done = Ev::ServiceDone { station: st, slot: job.slot, id: job.id };
        let Some(r) = self.reqs[job.slot as usize].as_mut().filter(|r| r.id.0 == job.id) else {
            // Abandoned by its client while waiting, not cancelled: the work is done anyway.
            ctx.schedule_in(service, done);
            return;
        };
        r.start = Some(now);
        r.in_service = true;
        let src = &mut self.sources[job.source as usize];
        if r.arrival >= self.warmup {
            src.stats.record_start(now - r.arrival);
            self.classes[r.class as usize].stats.record_start(now - r.arrival);
        }
        // A keyed draw: taking it or not never shifts any other random number.
        r.upstream_fails = error_rate > 0.0 && key.uniform(attr::UPSTREAM_FAILURE) < error_rate;
        if cancellable {
            r.service_timer = Some(ctx.timer_in(service, done));
        } else {
            ctx.schedule_in(service, done);
        }
    }

    fn on_service_done(&mut self, st: u16, slot: u32, id: u64, ctx: &mut Ctx<'_, Ev>) {
        ctx.metrics.incr(self.stations[st as usize].completed);
        if let Some((next, _)) = self.stations[st as usize].st.complete() {
            self.start_service(st, next, ctx);
        }
        self.update_station_gauges(st, ctx);
        let Some(r) = self.reqs[slot as usize].as_mut().filter(|r| r.id.0 == id) else {
            // Abandoned work finished: nobody is waiting for it.
            ctx.metrics.incr(self.stations[st as usize].wasted);
            self.stations[st as usize].abandoned_done += 1;
            return;
        };
        r.in_service = false;
        r.service_timer = None;
        if let Some(h) = r.upstream_timer.take() {
            ctx.cancel(h);
        }
        let r = self.reqs[slot as usize].as_ref().expect("live");
        let outcome =
            if r.upstream_fails { Outcome::Failed(Reason::Upstream5xx) } else { Outcome::Success };
        self.answer(slot, outcome, ctx);
        self.resume_woken(ctx);
    }

    /// The upstream's answer (or the station's refusal) climbs the call site's whole stack.
    fn answer(&mut self, slot: u32, outcome: Outcome, ctx: &mut Ctx<'_, Ev>) {
        let site = self.reqs[slot as usize].as_ref().expect("live").site as usize;
        let below = self.sites[site].stack.len();
        if below == 0 {
            // Fast path: no governor to tell.
            self.end(slot, outcome, ctx);
            return;
        }
        let info = self.info(slot);
        let next = callsite::ascend(
            &self.sites[site].stack,
            &mut self.govs,
            &info,
            below,
            outcome,
            ctx.now(),
            &mut self.woken,
        );
        self.act(slot, next, ctx);
    }

    /// The client gives up on its upstream call: the call fails with `timeout`. With
    /// cancellation the station drops the work (frees the server or the waiting place);
    /// without, the work goes on and its server stays busy until it ends.
    fn on_upstream_timeout(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let r =
            self.reqs[slot as usize].as_mut().expect("the timer is cancelled when the call ends");
        r.upstream_timer = None;
        let (site, id, in_service) = (r.site as usize, r.id.0, r.in_service);
        let service_timer = r.service_timer.take();
        let st = self.sites[site].station;
        // A service follows the cancellation setting in force when it started (its
        // completion is cancellable exactly then); a waiting call, the setting now.
        if in_service {
            if let Some(h) = service_timer {
                ctx.cancel(h);
                if let Some((next, _)) = self.stations[st as usize].st.cancel_service() {
                    self.start_service(st, next, ctx);
                }
                self.update_station_gauges(st, ctx);
            }
        } else if self.stations[st as usize].st.cancellation {
            let removed = self.stations[st as usize].st.remove_waiting(|j| j.id == id);
            debug_assert!(removed, "a call not in service waits at its station");
            self.update_station_gauges(st, ctx);
        }
        self.answer(slot, Outcome::Failed(Reason::Timeout), ctx);
        self.resume_woken(ctx);
    }

    fn on_deadline(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let r = self.reqs[slot as usize].as_mut().expect("live");
        r.timer = None;
        let level = r.parked_at.take().expect("deadline fires only for parked requests");
        let (site, reason) = (r.site as usize, r.on_deadline);
        let info = self.info(slot);
        let next = callsite::abandon(
            &self.sites[site].stack,
            &mut self.govs,
            &info,
            level,
            reason,
            now,
            &mut self.woken,
        );
        self.act(slot, next, ctx);
        self.resume_woken(ctx);
    }

    /// Resumes calls that governors woke (permits handed over), oldest first.
    fn resume_woken(&mut self, ctx: &mut Ctx<'_, Ev>) {
        // Bounded: each resumption consumes a wake-up, and a request is woken at most once
        // per level of its stack in one cascade (no request arrives meanwhile); the bound is
        // fixed on entry, since `live` falls as woken calls end.
        let depth = self.sites.iter().map(|s| s.stack.len() as u64).max().unwrap_or(0);
        let bound = 1 + (depth + 1) * (self.live + self.woken.len() as u64);
        let mut guard = 0u64;
        while !self.woken.is_empty() {
            guard += 1;
            assert!(guard <= bound, "wake-up loop");
            let Some(w) = self.woken.pop_front() else { break };
            let (slot, generation) = slot_of(w.call);
            let r = self.reqs[slot as usize].as_mut().expect("woken request is live");
            assert_eq!(r.generation, generation, "woken call id is current");
            let level = r.parked_at.take().expect("woken request was parked");
            if let Some(h) = r.timer.take() {
                ctx.cancel(h);
            }
            self.descend(slot, level + 1, ctx);
        }
    }

    fn end(&mut self, slot: u32, outcome: Outcome, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let r = self.reqs[slot as usize].take().expect("ends once");
        debug_assert!(r.timer.is_none() && r.parked_at.is_none());
        self.generations[slot as usize] = self.generations[slot as usize].wrapping_add(1);
        self.free.push(slot);
        self.live -= 1;
        if let Some(recs) = &mut self.records {
            recs.push(RequestRecord {
                request_id: r.id.0,
                source: r.source,
                seq: r.seq,
                arrival: r.arrival,
                start: r.start,
                end: Some(now),
                outcome: Some(outcome),
                tokens: r.tokens,
            });
        }
        let measured = r.arrival >= self.warmup;
        let src = &mut self.sources[r.source as usize];
        let latency = now - r.arrival;
        src.stats.record_end(outcome, latency, measured);
        let class = &mut self.classes[r.class as usize];
        class.stats.record_end(outcome, latency, measured);
        if measured
            && class.sla > SimDuration::ZERO
            && matches!(outcome, Outcome::Success | Outcome::Degraded(_))
            && latency <= class.sla
        {
            class.within_sla += 1;
        }
        // The time series shows the warm-up too: its own time axis tells them apart.
        if matches!(outcome, Outcome::Success | Outcome::Degraded(_)) {
            ctx.metrics.record(src.latency, latency.0);
        }
    }

    fn update_station_gauges(&mut self, st: u16, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let s = &mut self.stations[st as usize];
        let (busy, q) = (s.st.busy() as i64, s.st.queue_len() as i64);
        s.in_system.set(now, busy + q);
        s.busy.set(now, busy);
        ctx.metrics.set(s.depth, now, q);
        ctx.metrics.set(s.busy_gauge, now, busy);
    }

    fn update_gate_gauges(&mut self, ctx: &mut Ctx<'_, Ev>) {
        if self.gates.is_empty() {
            return;
        }
        let now = ctx.now();
        for (g, rt) in self.govs.iter().zip(&self.gates) {
            let GovernorKind::Gate(gate) = g;
            ctx.metrics.set(rt.in_use, now, gate.in_use() as i64);
            ctx.metrics.set(rt.waiting, now, gate.waiting() as i64);
        }
    }

    fn on_warmup_end(&mut self, now: SimTime) {
        for s in &mut self.stations {
            s.in_system.restart(now);
            s.busy.restart(now);
            s.servers.restart(now);
            s.st.peak_queue = s.st.queue_len();
        }
    }

    /// Requests in the system now.
    pub fn live(&self) -> u64 {
        self.live
    }
}

impl sim_core::World for QueueingWorld {
    type Event = Ev;
    type Change = SetParam<ParamValue>;

    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        match ev {
            Ev::Arrival { source } => self.on_arrival(source, ctx),
            Ev::ServiceDone { station, slot, id } => self.on_service_done(station, slot, id, ctx),
            Ev::UpstreamTimeout { slot, .. } => self.on_upstream_timeout(slot, ctx),
            Ev::WaitDeadline { slot, .. } => self.on_deadline(slot, ctx),
            Ev::WarmupEnd => self.on_warmup_end(ctx.now()),
        }
    }
    fn apply_change(&mut self, change: SetParam<ParamValue>, ctx: &mut Ctx<'_, Ev>) {
        self.set(change, ctx);
    }
    fn live_entities(&self) -> u64 {
        // Requests a limited source has still to send count too: a batch flood of 20,000
        // requests at one instant is legitimate, not a zero-time loop.
        let pending: u64 =
            self.sources.iter().filter_map(|s| s.limit.map(|l| l.saturating_sub(s.issued))).sum();
        self.live
            .saturating_add(pending)
            .saturating_add(self.sources.len() as u64)
            .saturating_add(self.stations.iter().map(|s| s.st.servers).sum::<u64>())
    }
    fn component_of(&self, ev: &Ev) -> String {
        match *ev {
            Ev::Arrival { source } => format!("source.{}", self.sources[source as usize].name),
            Ev::ServiceDone { station, .. } => {
                format!("station.{}", self.stations[station as usize].name)
            }
            Ev::WaitDeadline { slot, .. } => match self
                .reqs
                .get(slot as usize)
                .and_then(|r| r.as_ref())
            {
                Some(r) => {
                    let site = &self.sites[r.site as usize];
                    let g = r.parked_at.map(|l| site.stack[l]).unwrap_or(0);
                    format!("gate.{}", self.gates.get(g).map(|g| g.name.as_str()).unwrap_or("?"))
                }
                None => "request".into(),
            },
            Ev::WarmupEnd => "run.warmup".into(),
            Ev::UpstreamTimeout { slot, .. } => {
                match self.reqs.get(slot as usize).and_then(|r| r.as_ref()) {
                    Some(r) => format!("call_site.{}", self.sites[r.site as usize].name),
                    None => "request".into(),
                }
            }
        }
    }
}
