//! The queueing world: sources → app instances (entry path) → pipelines → calls → call
//! sites (governor stacks) → connection pools → upstreams (stations, GPU servers), wired
//! from a [`Scenario`]. It implements [`sim_core::World`].
//!
//! Request life cycle (each arrow an event or an immediate step):
//! `Arrival` (or a closed-loop user's `UserSend`) → draw the request's keyed attributes →
//! (with an app) balancer → gateway thread → dispatcher / worker pool → local work on the
//! thread → the pipeline issues calls (`Progress`) → each call descends its call site's
//! stack (parked at a governor until woken or its deadline; retries re-descend after a
//! back-off) → connection (connect, validate, stale) → upstream: start service, queue, 429
//! (quota, full queue) or a GPU server's step loop → `ServiceDone` / `GpuStep` or the
//! client's `UpstreamTimeout` → the outcome climbs the stack (`climb`, failover to a
//! `backup`) → the pipeline issues the next calls or ends the request. Every request and
//! every call ends exactly once, with one [`Outcome`].
//!
//! Architecture invariants (numbered in ARCHITECTURE.md, checked by
//! [`QueueingWorld::check_invariants`]): conservation of requests (I1) and calls (I22),
//! permits per gate (I2), queues within capacity (I3), work conservation at stations (I4),
//! entry-path resources (I23), quota tickets (I24), GPU sequences (I35), connections (I36).

use crate::callsite::{self, GovernorKind, Next, Woken};
use crate::governor::{CallInfo, Governor};
use crate::ids::{CallId, ClassId, RequestId};
use crate::outcome::{Outcome, Reason};
use crate::params::ParamValue;
use crate::pipeline::{Advance, Issue, Pipeline, Progress};
use crate::scenario::{GovernorRef, Scenario, SetParam};
use crate::station::{Admit, Station};
use crate::summary::{SourceStats, Summary, TimeAverage};
use sim_core::metrics::{CounterId, GaugeId, HistId};
use sim_core::rng::{DrawKey, SourceKey, Stream, name_id};
use sim_core::{Ctx, Phase, SimDuration, SimTime, TimerHandle};

/// Keyed attribute ids (never renumber: they select the random numbers a request gets).
/// Each id's doc says what it is keyed by and what it draws; the table and the next free
/// id are generated into `docs/map.md`.
pub mod attr {
    /// Keyed by request, call path, attempt: a call's service time at its station.
    pub const SERVICE_TIME: u32 = 1;
    /// Keyed by request, call path, attempt: whether the call meets an injected 5xx
    /// (`error_rate`).
    pub const UPSTREAM_FAILURE: u32 = 2;
    /// Keyed by request, call path, attempt: whether the call meets a business error
    /// (`business_error_rate`; drawn only when no 5xx was drawn).
    pub const BUSINESS_ERROR: u32 = 14;
    /// Keyed by request, call path: the bits a call hands its governors
    /// (`CallInfo::draw`: retry jitter, cache match).
    pub const GOVERNOR_BITS: u32 = 3;
    /// Keyed by request, (stage, step) as a call path: the number of calls of a pipeline
    /// step.
    pub const FANOUT: u32 = 4;
    /// Keyed by request, call path (attempt 0): the upstream a call site's weighted
    /// `split` sends a call to (the same for every attempt and under every policy).
    pub const ROUTE: u32 = 17;
    /// Keyed by request: prompt tokens from the source's distribution (`world/traffic.rs`).
    pub const PROMPT_TOKENS: u32 = 5;
    /// Keyed by request: output tokens from the source's distribution.
    pub const OUTPUT_TOKENS: u32 = 6;
    /// Keyed by request: conversation-history tokens from the source's distribution.
    pub const HISTORY_TOKENS: u32 = 7;
    /// Keyed by request: the cache key's popularity rank (Zipf).
    pub const KEY: u32 = 8;
    /// Keyed by request: the user of an open-loop request (a scenario with a population).
    pub const USER: u32 = 9;
    /// Keyed by request: a trace row's class by share (`assign.class_shares`).
    pub const CLASS_SHARE: u32 = 10;
    /// Keyed by (user, turn): a closed-loop user's think time after this turn (or before
    /// its first, on turn 0's key with call path 1).
    pub const THINK_TIME: u32 = 11;
    /// Keyed by (user, turn): a closed-loop user's coin: re-send this turn after a failure
    /// or a give-up?
    pub const USER_RETRY: u32 = 12;
    /// Keyed by (user, turn): the delay before a closed-loop user's re-send.
    pub const USER_RETRY_DELAY: u32 = 13;
    /// Keyed by request: the CPU time of its local work on its app's worker thread.
    pub const LOCAL_WORK: u32 = 15;
    /// Keyed by request: the instance a `Random` balancer picks.
    pub const BALANCER: u32 = 16;
    /// Keyed by request, call path, attempt: whether a streamed answer stalls
    /// (`stall_rate`).
    pub const STREAM_STALL: u32 = 20;
    /// Keyed by request, call path, attempt: the length of a streamed answer's stall.
    pub const STREAM_STALL_LENGTH: u32 = 21;
    /// Keyed by request, call path, attempt: the network delay of the call's request leg,
    /// client → server (`crate::network`).
    pub const NET_REQUEST: u32 = 22;
    /// Keyed by request, call path, attempt: the network delay of the call's response
    /// leg, server → client.
    pub const NET_RESPONSE: u32 = 23;
    /// Keyed by (autoscaler, replica sequence number) — its own key, not a request's: the
    /// provisioning delay of an autoscaler's replica (`crate::autoscaler`).
    pub const PROVISIONING: u32 = 24;
}

/// Events of the queueing world. Kind ids are written down, not derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    Arrival {
        source: u16,
        /// The source's rate generation when scheduled: an arrival rescheduled by a
        /// run-time rate change leaves its old event behind, ignored when it fires.
        rate_gen: u32,
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
    /// A retry's back-off has elapsed: re-send the call.
    RetryDue {
        slot: u32,
        id: u64,
    },
    /// A governor's own timer (`Governor::wake_at`).
    GovWake {
        gov: u16,
    },
    /// A GPU server's step ends.
    GpuStep {
        gpu: u16,
    },
    /// A call's connection is ready (connected, validated) or its staleness surfaced.
    ConnReady {
        slot: u32,
        id: u64,
    },
    /// A call found no connection within `connection_request_timeout`.
    ConnDeadline {
        slot: u32,
        id: u64,
    },
    /// A connection pool's idle connections expire (client keep-alive).
    ConnPoolWake {
        pool: u16,
    },
    /// A closed-loop user sends its next request.
    UserSend {
        source: u16,
        user: u32,
    },
    /// A closed-loop user stops waiting for its request.
    UserGiveUp {
        source: u16,
        user: u32,
    },
    /// An app instance's dispatcher asked to be woken (deferred replay, polling loop).
    DispatchWake {
        app: u16,
        inst: u16,
    },
    /// An app instance's pool: an idle thread's keep-alive runs out.
    PoolWake {
        app: u16,
        inst: u16,
    },
    /// A request's local work on its thread is done: its pipeline starts (`id`: request id).
    LocalWorkDone {
        slot: u32,
        id: u64,
    },
    /// A client's read timeout between two chunks closes a stalled stream.
    StreamClose {
        slot: u32,
        id: u64,
    },
    /// A request's total budget runs out (`world/timeouts.rs`).
    RequestDeadline {
        slot: u32,
        id: u64,
    },
    /// An app instance's earliest queue-wait expiry (`world/timeouts.rs`).
    QueueTimeout {
        app: u16,
        inst: u16,
    },
    /// A call's request leg ends: it reaches its station (`world/network.rs`).
    NetArrive {
        slot: u32,
        id: u64,
    },
    /// A call's response leg ends: the station's answer reaches the client.
    NetReturn {
        slot: u32,
        id: u64,
    },
    /// A host's random pause starts (`world/stalls.rs`; `generation`: a rate change
    /// supersedes a pending one).
    StallStart {
        host: u16,
        generation: u32,
    },
    /// A host's pause ends (a stale one, of a pause since extended, is ignored).
    StallEnd {
        host: u16,
    },
    /// An autoscaler's sync (`world/autoscalers.rs`; `generation`: a `sync_period` change
    /// supersedes the pending one).
    ScalerSync {
        scaler: u16,
        generation: u32,
    },
    /// A provisioning replica becomes ready (`replica`: its sequence number).
    ReplicaReady {
        scaler: u16,
        replica: u32,
    },
    /// KEDA checks an autoscaler's trigger (`world/autoscalers.rs`; `generation`: a
    /// `polling_interval` change supersedes the pending one).
    KedaCheck {
        scaler: u16,
        generation: u32,
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
            Ev::RetryDue { .. } => 6,
            Ev::GovWake { .. } => 7,
            Ev::GpuStep { .. } => 13,
            Ev::ConnReady { .. } => 14,
            Ev::ConnDeadline { .. } => 15,
            Ev::ConnPoolWake { .. } => 16,
            Ev::UserSend { .. } => 8,
            Ev::UserGiveUp { .. } => 9,
            Ev::DispatchWake { .. } => 10,
            Ev::PoolWake { .. } => 11,
            Ev::LocalWorkDone { .. } => 12,
            Ev::StreamClose { .. } => 20,
            Ev::RequestDeadline { .. } => 17,
            Ev::QueueTimeout { .. } => 18,
            Ev::NetArrive { .. } => 21,
            Ev::NetReturn { .. } => 22,
            Ev::StallStart { .. } => 23,
            Ev::StallEnd { .. } => 24,
            Ev::ScalerSync { .. } => 25,
            Ev::ReplicaReady { .. } => 26,
            Ev::KedaCheck { .. } => 27,
        }
    }
    fn entity_id(&self) -> u64 {
        match *self {
            Ev::Arrival { source, .. } => source as u64,
            Ev::ServiceDone { id, .. }
            | Ev::WaitDeadline { id, .. }
            | Ev::UpstreamTimeout { id, .. }
            | Ev::RetryDue { id, .. } => id,
            Ev::GovWake { gov } => gov as u64,
            Ev::GpuStep { gpu } => gpu as u64,
            Ev::ConnReady { id, .. } | Ev::ConnDeadline { id, .. } => id,
            Ev::ConnPoolWake { pool } => pool as u64,
            Ev::WarmupEnd => 0,
            Ev::UserSend { source, user } | Ev::UserGiveUp { source, user } => {
                ((source as u64) << 32) | user as u64
            }
            Ev::DispatchWake { app, inst } | Ev::PoolWake { app, inst } => {
                ((app as u64) << 16) | inst as u64
            }
            Ev::LocalWorkDone { id, .. } | Ev::RequestDeadline { id, .. } => id,
            Ev::StreamClose { id, .. } | Ev::NetArrive { id, .. } | Ev::NetReturn { id, .. } => id,
            Ev::QueueTimeout { app, inst } => ((app as u64) << 16) | inst as u64,
            Ev::StallStart { host, .. } | Ev::StallEnd { host } => host as u64,
            Ev::ScalerSync { scaler, .. } | Ev::KedaCheck { scaler, .. } => scaler as u64,
            Ev::ReplicaReady { scaler, replica } => ((scaler as u64) << 32) | replica as u64,
        }
    }
    fn phase(&self) -> Phase {
        match self {
            Ev::ServiceDone { .. }
            | Ev::LocalWorkDone { .. }
            | Ev::GpuStep { .. }
            | Ev::ConnReady { .. }
            | Ev::NetReturn { .. } => Phase::Completion,
            Ev::ConnDeadline { .. } => Phase::Timeout,
            Ev::ConnPoolWake { .. } => Phase::Dispatch,
            Ev::WaitDeadline { .. } | Ev::UpstreamTimeout { .. } | Ev::UserGiveUp { .. } => {
                Phase::Timeout
            }
            Ev::StreamClose { .. } => Phase::Timeout,
            Ev::Arrival { .. } | Ev::RetryDue { .. } | Ev::UserSend { .. } => Phase::Arrival,
            Ev::NetArrive { .. } => Phase::Arrival,
            Ev::WarmupEnd | Ev::GovWake { .. } => Phase::Dispatch,
            Ev::DispatchWake { .. } | Ev::PoolWake { .. } => Phase::Dispatch,
            Ev::RequestDeadline { .. } | Ev::QueueTimeout { .. } => Phase::Timeout,
            // A pause starts before anything else at its instant; it ends after the answers
            // and timers it held (re-armed at its end), before nothing else is due.
            Ev::StallStart { .. } => Phase::Completion,
            Ev::StallEnd { .. } => Phase::Dispatch,
            // A replica ready takes queued work before the instant's arrivals; a sync reads
            // the metric after everything else at its instant.
            Ev::ReplicaReady { .. } => Phase::Completion,
            Ev::ScalerSync { .. } | Ev::KedaCheck { .. } => Phase::Dispatch,
        }
    }
}

/// A pipeline with the call site of each step resolved.
struct PipelineRt {
    p: Pipeline,
    /// `sites[stage][step]`.
    sites: Vec<Vec<u16>>,
    /// A source's direct call: its one call keeps path 0 (the request's own key).
    direct: bool,
}

/// Per-class results.
struct ClassRt {
    name: String,
    weight: u64,
    sla: SimDuration,
    /// Its requests' statistics, unless `mirror_of` names a source: then they are that
    /// source's, counted once there, and these stay empty (read them through
    /// [`traffic::Traffic::class_stats`]).
    stats: SourceStats,
    /// The one source whose requests are exactly this class's
    /// (`QueueingWorld::mirrored_source`).
    mirror_of: Option<u16>,
    /// Measured requests answered within the SLA.
    within_sla: u64,
}

struct SourceRt {
    name: String,
    class: u16,
    key: u64,
    /// The seed and `key` hashed once: every keyed draw of its requests starts here.
    draw: SourceKey,
    stream: Stream,
    /// `None` for a trace source.
    interarrival: Option<sim_core::Dist<SimDuration>>,
    trace: Option<crate::trace::TraceSpec>,
    start: SimTime,
    profile: Option<crate::profile::Profile>,
    limit: Option<u64>,
    issued: u64,
    pipeline: u16,
    stats: SourceStats,
    /// Calls of its measured requests sent to an upstream (retries included).
    upstream_calls: u64,
    arrivals: CounterId,
    latency: HistId,
    /// Request attributes, rate multiplier, closed-loop users (`world/traffic.rs`).
    traffic: traffic::TrafficRt,
    /// The app its requests enter (index into `apps`).
    app: Option<u16>,
    /// Each request's total budget (the source's, else its pipeline's).
    budget: Option<SimDuration>,
}

struct SiteRt {
    name: String,
    stack: Vec<usize>,
    /// With per-instance governors in the stack: the stack of each instance key + 1
    /// (index 0: calls of requests without an app, `stack` itself). Empty otherwise.
    stacks: Vec<Vec<usize>>,
    upstream: Upstream,
    timeout: SimDuration,
    /// The connection pool its calls borrow from (index into `conns`).
    conn_pool: Option<u16>,
    /// Weighted split of calls among upstreams (empty: all go to `upstream`).
    split: Vec<(Upstream, u32)>,
    /// Where a call goes once when its upstream fails (multi-vendor failover).
    backup: Option<Upstream>,
    failovers: u64,
    /// The client's read timeout between chunks of a streamed answer (zero: none).
    read_timeout: SimDuration,
    /// Per class: `timeout` overridden (`class_timeouts`); empty when none is.
    class_timeout: Vec<Option<SimDuration>>,
    /// The degradation chain's next layer (`world/fallback.rs`).
    fallback: Option<fallback::SiteFallback>,
    /// `call_site.<n>.enabled`: off, every call goes straight to the fallback.
    enabled: bool,
}

impl SiteRt {
    /// The governor stack a call of instance `inst` (key + 1, 0 = none) goes through.
    fn stack_for(&self, inst: u16) -> &[usize] {
        if self.stacks.is_empty() { &self.stack } else { &self.stacks[inst as usize] }
    }
    /// The part of that stack a call with `base` goes through (an attempt of a hedged
    /// call: the levels below its hedging governor; `base` 0: all).
    fn stack_at(&self, inst: u16, base: u8) -> &[usize] {
        &self.stack_for(inst)[base as usize..]
    }
}

/// Run settings that are not part of the scenario.
#[derive(Clone, Copy, Debug)]
pub struct RunSettings {
    pub seed: u64,
    pub warmup: SimDuration,
    /// Keep one [`RequestRecord`] per request (memory grows with the run).
    pub record_requests: bool,
}

/// A state change worth a row in `events.parquet`: a run-time configuration change
/// (`config_change`), a governor's transition (`state_change`, shadow verdicts, …).
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

/// Token counts a request carries (from a trace or the source's distributions; `None`
/// where unknown).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    pub prompt: Option<u32>,
    pub output: Option<u32>,
    /// Conversation history carried with the prompt.
    pub history: Option<u32>,
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
    /// Index into the scenario's classes (resolved at arrival).
    pub class: u16,
    /// User id (0: none) and cache key (0: none).
    pub user: u64,
    pub key: u64,
}

/// The world, composed of owned subsystems. Each owns its state (and, in its module, the
/// handlers of its own events); the hand-offs between them are the world's methods named in
/// [`sim_core::World::handle`] below and the call path of `world/calls.rs`.
pub struct QueueingWorld {
    // Run settings.
    warmup: SimTime,
    /// The scenario's metastability verdict window, computed after the run from its series.
    recovery: Option<crate::recovery::RecoverySpec>,
    /// Traffic: sources, classes, the user population (`world/traffic.rs`).
    traffic: traffic::Traffic,
    /// Entry path: app instances, empty without apps (`world/entry.rs`); budgets,
    /// queue-wait timeouts, continuations (`world/timeouts.rs`).
    entry_path: entry::EntryPath,
    timeouts: timeouts::TimeoutsRt,
    /// Requests and calls in the system, by slot (`world/inflight.rs`), with the routes
    /// they take: pipelines and call sites (their governor stacks, failover, fallback).
    reqs: inflight::Requests,
    calls: inflight::Calls,
    pipelines: Vec<PipelineRt>,
    sites: Vec<SiteRt>,
    /// Governors: arena, names, timers, gauges, woken calls (`world/governors.rs`).
    govs: governors::Governors,
    /// Upstreams: stations, quotas, GPU servers, connection pools (`world/upstreams.rs`).
    upstreams: upstreams::Upstreams,
    /// Observation: model events, request records, time-series ids
    /// (`world/observation.rs`).
    obs: observation::Observation,
    /// Run-time parameters: the registry a change is validated against, and the value in
    /// force of each path (`world/changes.rs`).
    registry: crate::params::Registry,
    params_now: std::collections::BTreeMap<String, ParamValue>,
    /// Call sites' network delay and the legs on the wire (`world/network.rs`).
    net: network::NetRt,
    /// Correlated stalls: hosts' pauses and slowdowns, what they hold (`world/stalls.rs`).
    stalls: stalls::StallsRt,
    /// Hedged calls' attempts and their wasted upstream work (`world/hedging.rs`).
    hedging: hedging::HedgingRt,
    /// Autoscalers: replicas of stations, provisioning and warming (`world/autoscalers.rs`).
    scalers: autoscalers::ScalersRt,
}

fn call_id(slot: u32, generation: u32) -> CallId {
    CallId(((generation as u64) << 32) | slot as u64)
}
fn slot_of(c: CallId) -> (u32, u32) {
    (c.0 as u32, (c.0 >> 32) as u32)
}

mod autoscalers;
mod build;
mod calls;
mod changes;
mod clients;
mod conn;
mod cut;
mod entry;
mod entry_report;
mod fallback;
mod governors;
mod gpu;
mod gpu_pool;
mod hedging;
mod holdings;
mod inflight;
mod network;
mod observation;
mod observe;
mod report;
mod requests;
mod scripted;
mod series;
mod stalls;
mod streaming;
mod timeouts;
mod traffic;
mod upstreams;
use governors::GateRt;
use inflight::{Call, Req};
use upstreams::{Job, StationRt, Upstream};

impl QueueingWorld {
    /// Requests in the system now.
    pub fn live(&self) -> u64 {
        self.reqs.live
    }
}

impl sim_core::World for QueueingWorld {
    type Event = Ev;
    type Change = SetParam<ParamValue>;

    /// The one dispatch: each event goes to the subsystem that owns it. Hand-offs between
    /// subsystems happen inside these handlers through world methods, in this order along
    /// a request: traffic → entry path → requests & calls → governors (the stack) →
    /// upstreams → back up the stack → requests & calls → entry path → traffic (a
    /// closed-loop user's answer); observation is told along the way and never answers.
    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        // A paused host's events wait for its pause's end (`world/stalls.rs`).
        if ctx.now() < self.stalls.until && self.stall_hold(ev, ctx) {
            return;
        }
        match ev {
            // Traffic (`world/requests.rs`, `world/clients.rs`).
            Ev::Arrival { source, rate_gen } => self.on_arrival(source, rate_gen, ctx),
            Ev::UserSend { source, user } => self.on_user_send(source, user, ctx),
            Ev::UserGiveUp { source, user } => self.on_user_give_up(source, user, ctx),
            // Entry path (`world/entry.rs`, `world/timeouts.rs`).
            Ev::DispatchWake { app, inst } => self.on_dispatch_wake(app, inst, ctx),
            Ev::PoolWake { app, inst } => self.on_pool_wake(app, inst, ctx),
            Ev::LocalWorkDone { slot, id } => self.on_local_work_done(slot, id, ctx),
            Ev::RequestDeadline { slot, id } => self.on_request_deadline(slot, id, ctx),
            Ev::QueueTimeout { app, inst } => self.on_queue_timeout(app, inst, ctx),
            // Calls and their stacks (`world/calls.rs`).
            Ev::WaitDeadline { slot, .. } => self.on_deadline(slot, ctx),
            Ev::RetryDue { slot, .. } => self.on_retry_due(slot, ctx),
            Ev::UpstreamTimeout { slot, .. } => self.on_upstream_timeout(slot, ctx),
            Ev::StreamClose { slot, .. } => self.on_stream_close(slot, ctx),
            // Governors (`world/governors.rs`).
            Ev::GovWake { gov } => self.on_gov_wake(gov as usize, ctx),
            // Upstreams (`world/calls.rs`, `world/gpu.rs`, `world/conn.rs`).
            Ev::ServiceDone { station, slot, id } => self.on_service_done(station, slot, id, ctx),
            Ev::GpuStep { gpu } => self.on_gpu_step(gpu, ctx),
            Ev::ConnReady { slot, .. } => self.on_conn_ready(slot, ctx),
            Ev::ConnDeadline { slot, .. } => self.on_conn_deadline(slot, ctx),
            Ev::ConnPoolWake { pool } => self.on_conn_pool_wake(pool, ctx),
            // Network legs (`world/network.rs`).
            Ev::NetArrive { slot, id } => self.on_net_arrive(slot, id, ctx),
            Ev::NetReturn { slot, id } => self.on_net_return(slot, id, ctx),
            // Correlated stalls (`world/stalls.rs`).
            Ev::StallStart { host, generation } => self.on_stall_start(host, generation, ctx),
            Ev::StallEnd { host } => self.on_stall_end(host, ctx),
            // Autoscalers (`world/autoscalers.rs`).
            Ev::ScalerSync { scaler, generation } => self.on_scaler_sync(scaler, generation, ctx),
            Ev::ReplicaReady { scaler, replica } => self.on_replica_ready(scaler, replica, ctx),
            Ev::KedaCheck { scaler, generation } => self.on_keda_check(scaler, generation, ctx),
            // Observation.
            Ev::WarmupEnd => self.on_warmup_end(ctx.now()),
        }
    }
    fn apply_change(&mut self, change: SetParam<ParamValue>, ctx: &mut Ctx<'_, Ev>) {
        self.set(change, ctx);
    }
    fn live_entities(&self) -> u64 {
        // Requests a limited source has still to send count too: a batch flood of 20,000
        // requests at one instant is legitimate, not a zero-time loop.
        let pending: u64 = self
            .traffic
            .sources
            .iter()
            .filter_map(|s| s.limit.map(|l| l.saturating_sub(s.issued)))
            .sum();
        self.reqs
            .live
            .saturating_add(self.calls.live)
            .saturating_add(pending)
            .saturating_add(self.traffic.sources.iter().map(|s| s.traffic.clients()).sum::<u64>())
            .saturating_add(self.traffic.sources.len() as u64)
            .saturating_add(self.govs.len() as u64)
            // Servers are not counted: an idle server does nothing at an instant, and a
            // busy one serves a call counted above (a station of 100,000 servers lifted the
            // limit of a closed loop spinning at one instant to 6.7·10⁶ events).
            .saturating_add(self.entry_entities())
            .saturating_add(self.net.on_wire())
    }
    fn holdings(&self) -> sim_core::Holdings {
        self.holdings_now()
    }
    fn largest_holder(&self) -> String {
        self.largest_holder_now()
    }
    fn component_of(&self, ev: &Ev) -> String {
        let call = |slot: u32| self.calls.slots.get(slot);
        match *ev {
            Ev::Arrival { source, .. } => {
                format!("source.{}", self.traffic.sources[source as usize].name)
            }
            Ev::ServiceDone { station, .. } => {
                format!("station.{}", self.upstreams.stations[station as usize].name)
            }
            Ev::WaitDeadline { slot, .. } => match call(slot) {
                Some(c) => {
                    let site = &self.sites[c.site as usize];
                    c.parked_at
                        .map(|l| self.govs.names[site.stack_at(c.inst, c.base)[l]].clone())
                        .unwrap_or_else(|| format!("call_site.{}", site.name))
                }
                None => "request".into(),
            },
            Ev::WarmupEnd => "run.warmup".into(),
            Ev::UpstreamTimeout { slot, .. }
            | Ev::RetryDue { slot, .. }
            | Ev::StreamClose { slot, .. }
            | Ev::NetArrive { slot, .. }
            | Ev::NetReturn { slot, .. } => match call(slot) {
                Some(c) => format!("call_site.{}", self.sites[c.site as usize].name),
                None => "request".into(),
            },
            Ev::GovWake { gov } => self.govs.names[gov as usize].clone(),
            Ev::GpuStep { gpu } => self.upstreams.gpus[gpu as usize].path.clone(),
            Ev::ConnReady { slot, .. } | Ev::ConnDeadline { slot, .. } => match call(slot) {
                Some(c) => format!("call_site.{}", self.sites[c.site as usize].name),
                None => "request".into(),
            },
            Ev::ConnPoolWake { pool } => {
                format!("connpool.{}", self.upstreams.conns[pool as usize].name)
            }
            Ev::UserSend { source, .. } | Ev::UserGiveUp { source, .. } => {
                format!("source.{}", self.traffic.sources[source as usize].name)
            }
            Ev::DispatchWake { app, .. }
            | Ev::PoolWake { app, .. }
            | Ev::QueueTimeout { app, .. } => {
                format!("app.{}", self.entry_path.apps[app as usize].spec.name)
            }
            Ev::RequestDeadline { slot, .. } => match self.reqs.slots.get(slot) {
                Some(r) => format!("source.{}", self.traffic.sources[r.source as usize].name),
                _ => "request".into(),
            },
            Ev::StallStart { host, .. } | Ev::StallEnd { host } => self.stall_component(host),
            Ev::ScalerSync { scaler, .. }
            | Ev::ReplicaReady { scaler, .. }
            | Ev::KedaCheck { scaler, .. } => {
                format!("autoscaler.{}", self.scalers.list[scaler as usize].name)
            }
            Ev::LocalWorkDone { slot, .. } => {
                match self.reqs.slots.get(slot).and_then(|r| r.entry.as_ref()) {
                    Some(e) => format!("app.{}", self.entry_path.apps[e.app as usize].spec.name),
                    None => "request".into(),
                }
            }
        }
    }
}
