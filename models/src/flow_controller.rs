//! The Kubernetes Gateway API Inference Extension's flow control layer (the endpoint
//! picker's `FlowController`) at the entry of a call site, from `flow_controllers` (issue
//! 29 item 3): priority bands, fairness between flows within a band, FCFS within a flow, a
//! request time-to-live, and a sheddable band rejected at once under saturation.
//!
//! Read from kubernetes-sigs/gateway-api-inference-extension (`pkg/epp/`); what is adopted:
//!
//! * **Flow key and band** (`requestcontrol/admission.go`, `flowControlRequest.FlowKey`):
//!   a request belongs to the flow `FlowKey{ID: fairnessID, Priority: priority}`. The
//!   priority is the integer of the request's `InferenceObjective` (no objective: 0); here a
//!   map from class to priority, `default_priority` for a class it does not list. The
//!   fairness ID is the `x-gateway-inference-fairness-id` header (missing: the one
//!   `"default-flow"`, `handlers/request.go`); here the call's user (`flow_key: USER`, calls
//!   without a user share flow 0) or its class (`CLASS`).
//! * **Sheddable** (`admission.go`, `rejectIfSheddableAndSaturated`, `IsSheddable`): a request
//!   of priority < 0 is refused at once (`rejected:shed`, GAIE's `ResourceExhausted "system
//!   saturated, sheddable request dropped"`) when the saturation is ≥ 1.0; otherwise it is
//!   enqueued like any other.
//! * **Saturation** (`saturationdetector/.../concurrencydetector/detector.go`,
//!   `Detector.Saturation`): total in-flight requests / total `MaxConcurrency`; a call is in
//!   flight from its dispatch (`PreRequest` increments) to its outcome (`ResponseComplete`
//!   decrements). Here `limit` is the capacity: saturated ⇔ in flight ≥ `limit`. The
//!   utilization detector (KV cache, queue depth scraped from the model servers) has no
//!   equivalent here: a call site sees its own calls, not a server's gauges.
//! * **Dispatch** (`controller/internal/processor.go`, `dispatchCycle` and `Run`): while not
//!   saturated (`filter.go`, `NewSaturationFilter`: a saturated detector pauses every band),
//!   a cycle walks the bands from the highest priority down; in the first band whose
//!   fairness policy picks a flow, the flow's ordering policy picks an item, which is
//!   removed; if it outlived its TTL it is evicted and the cycle *goes on to the next lower
//!   band* (`dispatchItem` fails → `continue`), else it is dispatched and the cycle ends.
//!   Cycles repeat while they do work (`Run`'s default branch). So strict priority, except
//!   that an expired head lets one lower-band call through in its cycle.
//! * **Fairness between flows** (`fairness`): `ROUND_ROBIN` — the round-robin iterator
//!   (`interflow/internal/roundrobin/roundrobin.go`, `SelectNextQueue`): the band's flow IDs
//!   sorted, an index that starts at −1 and advances modulo their number to the next flow
//!   with a queued item, the index kept across calls even when flows join the sorted list
//!   (so a new flow ahead of it shifts which flow comes next, as there). `GLOBAL_STRICT` —
//!   GAIE's current default (`registry/config.go`, `DefaultFairnessPolicyRef`), the
//!   `BestHead` policy (`interflow/besthead.go`, `SelectQueue`) with FCFS heads: the flow
//!   whose head was enqueued first; ties (Go map order there) by arrival order here.
//! * **Order within a flow** (`intraflow/dispatch/fcfs/fcfs.go`, `SelectItem`): FCFS, the
//!   queue's head (`registry/config.go`, `DefaultOrderingPolicyRef`).
//! * **Capacity** (`processor.go`, `hasCapacity`): an arrival is refused (`rejected:
//!   queue_full`, `QueueOutcomeRejectedCapacity`) when the global bound (`MaxBytes`, 0 =
//!   none) or its band's (`PriorityBandConfig.MaxBytes`) would be exceeded. GAIE counts
//!   bytes; a call has no byte size here, so both count calls: `max_queue` (0 = none) and
//!   `band_max_queue` (each band, dynamically provisioned bands too: `DefaultPriorityBand`).
//! * **TTL** (`controller.go`, `EnqueueAndWait`; `controller/config.go`): a request's TTL is
//!   fixed at enqueue, the controller's `DefaultRequestTTL` (0: none), so a run-time change
//!   of `ttl` applies to later arrivals. Expired means `now − enqueue > ttl`
//!   (`checkItemExpiry`, strict). Expired calls are evicted (`rejected:timeout`,
//!   `QueueOutcomeEvictedTTL`, "request timed out in queue") by the periodic scan
//!   (`runExpiryCleanup`, a ticker of `ExpiryCleanupInterval`, default 1 s, started at the
//!   run's start: ticks at k × interval) and at dispatch (above). The scan's timer is this
//!   governor's own (`wake_at`): the first tick strictly after the earliest expiry instant
//!   (`enqueue + ttl`); ticks at which nothing expires change nothing and are skipped.
//!   Calls evicted by one scan leave in order of expiry instant, then call id (GAIE
//!   finalizes them from concurrent workers).
//! * A call cancelled while queued leaves its queue (`QueueOutcomeEvictedContextCancelled`).
//!
//! Not modelled: shards (one shard: `defaultInitialShardCount`), flow and band garbage
//! collection (a flow stays registered for the run; GAIE collects one idle for
//! `FlowGCTimeout`, 5 min), the usage-limit policy and evictor plugins (no-ops by default),
//! and the processor's enqueue buffer.
//!
//! Summary counters `flow_controller.<name>.{dispatched, queued, shed_sheddable, evicted_ttl,
//! rejected_full}` (`queued`: calls that waited); gauges `queued`, `in_flight`, `saturated`.
//!
//! Architecture invariant: a queued call means saturation (a free slot dispatches at
//! once); every dispatched call returns exactly once; every queued call leaves exactly once
//! (dispatched, evicted or cancelled); no randomness, no events.

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

crate::params::param_choices! {
    /// Which flow of a band goes next (module header).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Fairness {
        /// GAIE's round-robin iterator over the band's sorted flow IDs.
        #[default]
        RoundRobin = "ROUND_ROBIN",
        /// GAIE's `BestHead` with FCFS heads: the flow whose head waited longest.
        GlobalStrict = "GLOBAL_STRICT",
    }
}

crate::params::param_choices! {
    /// What a call's flow (GAIE's fairness ID) is.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum FlowKey {
        /// The user who sent the request (0, one flow, when the scenario has no users).
        #[default]
        User = "USER",
        /// The request class.
        Class = "CLASS",
    }
}

/// Configuration, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "FlowController")]
pub struct FlowControllerSpec {
    /// Name; parameters live under `flow_controller.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Calls in flight past the controller at saturation (the concurrency detector's
    /// `MaxConcurrency`).
    #[serde(deserialize_with = "R::limit")]
    pub limit: u64,
    /// Each class's priority (its `InferenceObjective`'s); < 0 is sheddable.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub priorities: BTreeMap<String, i32>,
    /// The priority of a class `priorities` does not list (GAIE: 0).
    #[serde(default)]
    pub default_priority: i32,
    /// Which flow of a band goes next.
    #[serde(default = "D::fairness")]
    pub fairness: Fairness,
    /// What a flow is (the fairness ID).
    #[serde(default = "D::flow_key")]
    pub flow_key: FlowKey,
    /// Time to live in the queue (`DefaultRequestTTL`; 0: none).
    #[serde(default = "D::ttl", deserialize_with = "R::ttl")]
    pub ttl: SimDuration,
    /// The expiry scan's period (`ExpiryCleanupInterval`).
    #[serde(
        default = "D::expiry_cleanup_interval",
        deserialize_with = "R::expiry_cleanup_interval"
    )]
    pub expiry_cleanup_interval: SimDuration,
    /// Bound on the calls queued in one band.
    #[serde(default = "D::band_max_queue", deserialize_with = "R::band_max_queue")]
    pub band_max_queue: u64,
    /// Bound on the calls queued in all bands (0: none).
    #[serde(default = "D::max_queue", deserialize_with = "R::max_queue")]
    pub max_queue: u64,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<FlowControllerSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<FlowControllerSpec>;

impl FlowControllerSpec {
    /// The defaults under a name, with `limit` and the class priorities.
    pub fn defaults(name: &str, limit: u64, priorities: &[(&str, i32)]) -> Self {
        FlowControllerSpec {
            name: name.into(),
            limit,
            priorities: priorities.iter().map(|(c, p)| (c.to_string(), *p)).collect(),
            default_priority: 0,
            fairness: D::fairness(),
            flow_key: D::flow_key(),
            ttl: D::ttl(),
            expiry_cleanup_interval: D::expiry_cleanup_interval(),
            band_max_queue: D::band_max_queue(),
            max_queue: D::max_queue(),
        }
    }

    /// The classes of `priorities` exist: `Err((field, message))`.
    pub fn check(&self, classes: &[&str]) -> Result<(), (String, String)> {
        match self.priorities.keys().find(|c| !classes.contains(&c.as_str())) {
            Some(c) => {
                let m = format!("unknown class `{c}` (classes: {})", classes.join(", "));
                Err(("priorities".into(), m))
            }
            None => Ok(()),
        }
    }
}

/// A queued call (GAIE's `FlowItem`: enqueue time and effective TTL).
#[derive(Clone, Copy, Debug)]
struct Item {
    call: CallId,
    since: SimTime,
    /// Fixed at enqueue; zero: none.
    ttl: SimDuration,
    /// Arrival order (ties of `GLOBAL_STRICT`).
    seq: u64,
}

impl Item {
    /// `checkItemExpiry`: `now − enqueue > ttl`.
    fn expired(&self, now: SimTime) -> bool {
        self.ttl > SimDuration::ZERO && now - self.since > self.ttl
    }
    /// The instant after which it is expired.
    fn expiry(&self) -> Option<SimTime> {
        (self.ttl > SimDuration::ZERO).then(|| self.since + self.ttl)
    }
}

/// A flow's queue.
#[derive(Clone, Debug)]
struct Flow {
    id: u64,
    queue: VecDeque<Item>,
}

/// A priority band: its flows sorted by ID, the round-robin index (`lastFlowIndex`, −1
/// at first) and the calls queued in it.
#[derive(Clone, Debug)]
struct Band {
    flows: Vec<Flow>,
    last: i64,
    len: u64,
}

impl Band {
    fn new() -> Self {
        Band { flows: Vec::new(), last: -1, len: 0 }
    }

    /// The flow's index, registering it at its sorted place.
    fn flow(&mut self, id: u64) -> usize {
        match self.flows.binary_search_by_key(&id, |f| f.id) {
            Ok(i) => i,
            Err(i) => {
                self.flows.insert(i, Flow { id, queue: VecDeque::new() });
                i
            }
        }
    }

    /// The fairness policy's flow, if any holds a call.
    fn select(&mut self, fairness: Fairness) -> Option<usize> {
        let n = self.flows.len() as i64;
        match fairness {
            // `SelectNextQueue`: from the flow after the last one chosen, the first non-empty.
            Fairness::RoundRobin => (0..n).find_map(|_| {
                self.last = (self.last + 1) % n;
                let i = self.last as usize;
                (!self.flows[i].queue.is_empty()).then_some(i)
            }),
            // `BestHead` with FCFS's comparator: the earliest enqueued head.
            Fairness::GlobalStrict => (0..self.flows.len())
                .filter_map(|i| self.flows[i].queue.front().map(|h| ((h.since, h.seq), i)))
                .min()
                .map(|(_, i)| i),
        }
    }
}

/// Run-time state of a `FlowController`.
#[derive(Clone, Debug)]
pub struct FlowController {
    limit: u64,
    ttl: SimDuration,
    cleanup: SimDuration,
    band_max_queue: u64,
    max_queue: u64,
    fairness: Fairness,
    flow_key: FlowKey,
    /// Per class index: its priority.
    by_class: Vec<i32>,
    default_priority: i32,
    bands: BTreeMap<i32, Band>,
    /// Queued calls: their band and flow ID.
    queued_at: BTreeMap<CallId, (i32, u64)>,
    /// Queued calls with a TTL, by expiry instant.
    expiries: BTreeSet<(SimTime, CallId)>,
    in_flight: u64,
    seq: u64,
    woken: Vec<CallId>,
    answered: Vec<(CallId, Outcome)>,
    /// Calls dispatched (passed at once or after waiting) and returned.
    pub dispatched: u64,
    pub returned: u64,
    /// Calls that waited in a queue.
    pub queued: u64,
    /// Sheddable calls refused under saturation.
    pub shed_sheddable: u64,
    /// Queued calls evicted past their TTL (scan or dispatch).
    pub evicted_ttl: u64,
    /// Arrivals refused by a full band or the global bound.
    pub rejected_full: u64,
}

impl FlowController {
    pub fn new(spec: &FlowControllerSpec, classes: &[&str]) -> Self {
        assert!(spec.limit >= 1, "validated: limit ≥ 1");
        let prio = |c: &&str| spec.priorities.get(*c).copied().unwrap_or(spec.default_priority);
        FlowController {
            limit: spec.limit,
            ttl: spec.ttl,
            cleanup: spec.expiry_cleanup_interval,
            band_max_queue: spec.band_max_queue,
            max_queue: spec.max_queue,
            fairness: spec.fairness,
            flow_key: spec.flow_key,
            by_class: classes.iter().map(prio).collect(),
            default_priority: spec.default_priority,
            bands: BTreeMap::new(),
            queued_at: BTreeMap::new(),
            expiries: BTreeSet::new(),
            in_flight: 0,
            seq: 0,
            woken: Vec::new(),
            answered: Vec::new(),
            dispatched: 0,
            returned: 0,
            queued: 0,
            shed_sheddable: 0,
            evicted_ttl: 0,
            rejected_full: 0,
        }
    }

    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }
    /// Calls queued in all bands.
    pub fn queue_len(&self) -> u64 {
        self.queued_at.len() as u64
    }
    /// The concurrency detector's `Saturation(…) >= 1.0`.
    pub fn saturated(&self) -> bool {
        self.in_flight >= self.limit
    }
    /// A class's band.
    pub fn priority_of(&self, call: &CallInfo) -> i32 {
        self.by_class.get(call.class.0 as usize).copied().unwrap_or(self.default_priority)
    }

    /// Run-time change of the limit; raising it dispatches.
    pub fn set_limit(&mut self, limit: u64, now: SimTime) {
        assert!(limit >= 1);
        self.limit = limit;
        self.drain(now);
    }
    /// Applies to calls enqueued from now on (a request's TTL is fixed at enqueue).
    pub fn set_ttl(&mut self, d: SimDuration) {
        self.ttl = d;
    }
    pub fn set_band_max_queue(&mut self, n: u64) {
        self.band_max_queue = n;
    }
    pub fn set_max_queue(&mut self, n: u64) {
        self.max_queue = n;
    }

    fn flow_of(&self, call: &CallInfo) -> u64 {
        match self.flow_key {
            FlowKey::User => call.user,
            FlowKey::Class => u64::from(call.class.0),
        }
    }

    /// `hasCapacity`: room for one more call globally and in the band.
    fn has_capacity(&self, priority: i32) -> bool {
        let band = self.bands.get(&priority).map_or(0, |b| b.len);
        let global_ok = self.max_queue == 0 || self.queue_len() < self.max_queue;
        global_ok && band < self.band_max_queue
    }

    fn enqueue(&mut self, call: &CallInfo, priority: i32, now: SimTime) {
        let flow = self.flow_of(call);
        let item = Item { call: call.call, since: now, ttl: self.ttl, seq: self.seq };
        self.seq += 1;
        let band = self.bands.entry(priority).or_insert_with(Band::new);
        let i = band.flow(flow);
        band.flows[i].queue.push_back(item);
        band.len += 1;
        let prev = self.queued_at.insert(call.call, (priority, flow));
        assert!(prev.is_none(), "call {:?} queued twice", call.call);
        if let Some(e) = item.expiry() {
            self.expiries.insert((e, call.call));
        }
    }

    /// Removes a queued call from its flow.
    fn remove(&mut self, call: CallId) -> Item {
        let (priority, flow) = self.queued_at.remove(&call).expect("a queued call");
        let band = self.bands.get_mut(&priority).expect("its band");
        let f = band.flows.binary_search_by_key(&flow, |f| f.id).expect("its flow");
        let q = &mut band.flows[f].queue;
        let pos = q.iter().position(|w| w.call == call).expect("in its flow");
        let item = q.remove(pos).expect("found");
        band.len -= 1;
        if let Some(e) = item.expiry() {
            self.expiries.remove(&(e, call));
        }
        item
    }

    fn evict(&mut self, item: Item) {
        self.evicted_ttl += 1;
        self.answered.push((item.call, Outcome::Rejected(Reason::Timeout)));
    }

    /// `dispatchCycle`: (dispatched one, evicted one).
    fn dispatch_cycle(&mut self, now: SimTime) -> (bool, bool) {
        let mut evicted = false;
        let priorities: Vec<i32> = self.bands.keys().rev().copied().collect();
        for p in priorities {
            let fairness = self.fairness;
            let band = self.bands.get_mut(&p).expect("listed");
            let Some(f) = band.select(fairness) else { continue };
            let head = band.flows[f].queue.front().expect("selected a non-empty flow").call;
            let item = self.remove(head);
            if item.expired(now) {
                // `dispatchItem` fails; the cycle goes on to the next band.
                self.evict(item);
                evicted = true;
                continue;
            }
            self.in_flight += 1;
            self.dispatched += 1;
            self.woken.push(item.call);
            return (true, evicted);
        }
        (false, evicted)
    }

    /// `Run`'s dispatch: cycles while not saturated and a cycle did work.
    fn drain(&mut self, now: SimTime) {
        while !self.saturated() {
            if self.dispatch_cycle(now) == (false, false) {
                break;
            }
        }
    }
}

impl Governor for FlowController {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        let priority = self.priority_of(call);
        if priority < 0 && self.saturated() {
            self.shed_sheddable += 1;
            return CallDecision::Reject(Reason::Shed);
        }
        if !self.has_capacity(priority) {
            self.rejected_full += 1;
            return CallDecision::Reject(Reason::QueueFull);
        }
        self.enqueue(call, priority, now);
        if self.saturated() {
            self.queued += 1;
            return CallDecision::Wait { deadline: None, on_deadline: Reason::Timeout };
        }
        // Not saturated: the queue held nothing else, and the cycle after the enqueue
        // dispatches this call at once (through the fairness policy, which moves on to it).
        debug_assert_eq!(self.queue_len(), 1, "a queued call means saturation");
        self.drain(now);
        assert_eq!(self.woken.pop(), Some(call.call), "dispatched at once");
        debug_assert!(self.woken.is_empty() && self.answered.is_empty());
        CallDecision::Pass
    }

    fn on_outcome(&mut self, _call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        assert!(self.in_flight > 0, "flow controller returned more calls than it dispatched");
        self.in_flight -= 1;
        self.returned += 1;
        self.drain(now);
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, now: SimTime) {
        if self.queued_at.contains_key(&call.call) {
            // Cancelled while queued (`QueueOutcomeEvictedContextCancelled`).
            self.remove(call.call);
        } else if let Some(pos) = self.answered.iter().position(|(c, _)| *c == call.call) {
            // Evicted in this instant but not yet answered: forget the answer.
            self.answered.remove(pos);
        } else {
            // Dispatched in this instant but not yet resumed: it never went in flight.
            let pos = self.woken.iter().position(|c| *c == call.call);
            self.woken.remove(pos.expect("abandoned call was not parked at this flow controller"));
            self.in_flight -= 1;
            self.returned += 1;
            self.drain(now);
        }
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }

    fn take_answered(&mut self, out: &mut Vec<(CallId, Outcome)>) {
        out.append(&mut self.answered);
    }

    fn waiting(&self) -> usize {
        self.queued_at.len()
    }

    /// The expiry scan's first tick (k × interval) strictly after the earliest expiry.
    fn wake_at(&self) -> Option<SimTime> {
        let (e, _) = self.expiries.first()?;
        let i = self.cleanup.0;
        Some(SimTime((e.0 / i + 1) * i))
    }

    /// `cleanupExpired`: every queued call with `now − enqueue > ttl` is evicted.
    fn on_wake(&mut self, now: SimTime) {
        while let Some(&(e, call)) = self.expiries.first() {
            if e >= now {
                break;
            }
            let item = self.remove(call);
            self.evict(item);
        }
    }

    fn has_released(&self) -> bool {
        !self.woken.is_empty() || !self.answered.is_empty()
    }
}

crate::params::declare_params! {
    FlowControllerSpec: "flow_controller", name = |s| s.name,
        scenario_only = [
            priorities: "the class → priority map (InferenceObjective priorities; < 0 sheddable): the bands of the run",
            default_priority: "a signed band, fixed for the run",
        ],
        state = FlowController;
    limit: Count { min: 1, max: 10_000_000 }, "calls",
        runtime(apply = |f, n, now| f.set_limit(n, now)),
        "calls in flight past the controller at saturation (the concurrency detector's MaxConcurrency): saturated when in flight >= limit";
    fairness: Enum { choices: Fairness::CHOICES }, "", fixed,
        "which flow of a band goes next: ROUND_ROBIN (GAIE's round-robin iterator over the sorted flow IDs) or GLOBAL_STRICT (BestHead with FCFS heads: the flow whose head waited longest)",
        default = "ROUND_ROBIN";
    flow_key: Enum { choices: FlowKey::CHOICES }, "", fixed,
        "what a flow (GAIE's fairness ID) is: USER (the call's user; none: one flow) or CLASS",
        default = "USER";
    ttl: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        runtime(apply = |f, d| f.set_ttl(d)),
        "time to live in the queue (DefaultRequestTTL; 0 = none), fixed per call at enqueue; expired (age > ttl) calls are evicted as rejected:timeout",
        default = SimDuration::ZERO;
    expiry_cleanup_interval: Duration { min: SimDuration(1), max: SimDuration::from_secs(3_600) }, "ns", fixed,
        "the period of the expiry scan (ExpiryCleanupInterval), ticks at multiples of it from the run's start",
        default = SimDuration::from_secs(1);
    band_max_queue: Count { min: 1, max: 100_000_000 }, "calls",
        runtime(apply = |f, n| f.set_band_max_queue(n)),
        "bound on the calls queued in one priority band (GAIE's per-band MaxBytes, counted in calls); beyond it arrivals are refused (queue_full)",
        default = 100_000;
    max_queue: Count { min: 0, max: 100_000_000 }, "calls",
        runtime(apply = |f, n| f.set_max_queue(n)),
        "bound on the calls queued in all bands (GAIE's global MaxBytes, counted in calls; 0 = none)",
        default = 0;
}

impl crate::params::GovernorSpec for FlowControllerSpec {
    fn local_refusals(&self) -> Vec<Reason> {
        vec![Reason::QueueFull, Reason::Shed, Reason::Timeout]
    }
}

impl crate::governor::GovernorKindOps for FlowController {
    type Spec = FlowControllerSpec;
    fn build(spec: &FlowControllerSpec, ctx: &crate::governor::BuildCtx<'_>) -> Self {
        FlowController::new(spec, ctx.classes)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("dispatched", self.dispatched),
            ("queued", self.queued),
            ("shed_sheddable", self.shed_sheddable),
            ("evicted_ttl", self.evicted_ttl),
            ("rejected_full", self.rejected_full),
        ]
    }
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        vec![
            ("queued", self.queue_len() as i64),
            ("in_flight", self.in_flight as i64),
            ("saturated", i64::from(self.saturated())),
        ]
    }
    fn in_flight_limit(&self) -> Option<(u64, Option<u64>)> {
        Some((self.in_flight, Some(self.limit)))
    }
}

#[cfg(test)]
#[path = "flow_controller_tests.rs"]
mod tests;
