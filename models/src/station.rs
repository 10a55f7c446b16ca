//! A station: a queue (optionally bounded; FIFO, or CoDel with adaptive LIFO: `codel`,
//! `crate::codel::WaitQueue`) in front of `servers` identical servers.
//!
//! The minimal upstream: it models an M/G/c/K system and is what the queueing-theory tests
//! run against. Capacity counts waiting requests only, so an M/M/c/K system with K places in
//! total has `queue_capacity = K − c`.
//!
//! Architecture invariants: `busy ≤ servers` except right after a run-time decrease (busy
//! servers finish their work); the queue never exceeds its capacity; a server is never idle
//! while a request waits (work conservation).

use crate::codel::WaitQueue;
use crate::validate;
use serde::{Deserialize, Serialize};
use sim_core::{Dist, SimDuration, SimTime};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Station")]
pub struct StationSpec {
    #[serde(deserialize_with = "validate::name")]
    pub name: String,
    /// Identical servers (≥ 1).
    #[serde(deserialize_with = "crate::params::Ranged::<StationSpec>::servers")]
    pub servers: u64,
    /// Waiting places; `None` = unbounded; `Some(0)` = none (a pure loss system: a call
    /// that finds every server busy is refused at once, Erlang B).
    #[serde(default)]
    pub queue_capacity: Option<u64>,
    /// How a full station answers: `QueueFull` (a local queue) or `Upstream429` (a
    /// provider's concurrency quota). Either answer carries no Retry-After (a retry's
    /// back-off alone sets its delay); a 429 with one comes from a `quota` or a scripted
    /// `TooMany`.
    #[serde(default = "crate::params::Defaults::<StationSpec>::reject_as")]
    pub reject_as: RejectAs,
    /// Service time of one request.
    pub service: Dist<SimDuration>,
    /// Probability that a call fails with a 5xx after its service time (failure injection;
    /// an outage is a timeline setting it to 1.0 and back).
    #[serde(default, deserialize_with = "R::error_rate")]
    pub error_rate: f64,
    /// Does the station drop the work of a call its client abandoned (timed out)? Without
    /// cancellation (the default, like most LLM APIs) the abandoned call keeps its place in
    /// the queue and its server until its service ends: the work is wasted but not freed.
    #[serde(default)]
    pub cancellation: bool,
    /// Factor on every service time started from now on (a provider slowdown).
    #[serde(default = "D::latency_multiplier", deserialize_with = "R::latency_multiplier")]
    pub latency_multiplier: f64,
    /// The load curve: each call in service when a service starts adds this much to it
    /// (latency = base + load_slope × in-flight), so an overloaded provider slows down.
    #[serde(default)]
    pub load_slope: SimDuration,
    /// Token-based latency: added per prompt token of the call.
    #[serde(default)]
    pub per_prompt_token: SimDuration,
    /// Token-based latency: added per output token of the call.
    #[serde(default)]
    pub per_output_token: SimDuration,
    /// Probability that a call fails with a business error (bad prompt, content filter):
    /// not the upstream's fault, never retried, never counted by breakers by default.
    #[serde(default, deserialize_with = "R::business_error_rate")]
    pub business_error_rate: f64,
    /// Price per 1000 prompt tokens (any currency; summed into `station.<name>.cost`), in
    /// [0, 1e6].
    #[serde(
        default = "D::cost_per_1k_prompt_tokens",
        deserialize_with = "R::cost_per_1k_prompt_tokens"
    )]
    pub cost_per_1k_prompt_tokens: f64,
    /// Price per 1000 output tokens, in [0, 1e6].
    #[serde(
        default = "D::cost_per_1k_output_tokens",
        deserialize_with = "R::cost_per_1k_output_tokens"
    )]
    pub cost_per_1k_output_tokens: f64,
    /// The provider's quota (an entry of the scenario's `quotas`): RPM, TPM, concurrency,
    /// answered with 429 and a Retry-After.
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub quota: Option<String>,
    /// Scripted answers (`crate::scripted`): the n-th service started gets the n-th
    /// `Answer(duration, outcome)`; after the list, the station's normal service.
    #[serde(
        default,
        deserialize_with = "crate::scripted::answers",
        skip_serializing_if = "Option::is_none"
    )]
    pub script: Option<Vec<crate::scripted::Answer>>,
    /// Answers are SSE streams (`crate::stream`): a first chunk after the prompt part of
    /// the service time, then the output tokens in chunks; TTFT and chunk gaps measured,
    /// stalls injectable, the call site's `stream_read_timeout` applies.
    #[serde(default = "D::streaming")]
    pub streaming: bool,
    /// Output tokens per streamed chunk (1 = a chunk per token).
    #[serde(
        default = "D::chunk_tokens",
        deserialize_with = "crate::params::Ranged::<StationSpec>::chunk_tokens"
    )]
    pub chunk_tokens: u64,
    /// Probability that a streamed response stalls once (failure injection; a keyed draw
    /// per call). Needs `streaming`.
    #[serde(default, deserialize_with = "R::stall_rate")]
    pub stall_rate: f64,
    /// How long a stall lasts.
    #[serde(default = "D::stall_duration")]
    pub stall_duration: Dist<SimDuration>,
    /// Where the stall comes, as a fraction of the stream's chunks (0 = right after the
    /// first chunk, 1 = before the last).
    #[serde(default = "D::stall_after", deserialize_with = "R::stall_after")]
    pub stall_after: f64,
    /// The queue's discipline: `None` (the default) FIFO; `Some((target, interval,
    /// lifo_when_overloaded))` CoDel (`crate::codel`): waiting calls judged at dequeue and
    /// dropped by RFC 8289's control law, answered `rejected:shed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codel: Option<crate::codel::CodelSpec>,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<StationSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<StationSpec>;

pub const MAX_SERVERS: u64 = 1_000_000;

crate::params::param_choices! {
    /// The answer of a full station.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum RejectAs {
        /// "System busy" from a local bounded queue (`rejected_queue_full`).
        #[default]
        QueueFull = "QueueFull",
        /// HTTP 429 from a provider over its concurrency quota (`rejected_upstream_429`).
        Upstream429 = "Upstream429",
    }
}

impl RejectAs {
    pub fn reason(self) -> crate::outcome::Reason {
        match self {
            RejectAs::QueueFull => crate::outcome::Reason::QueueFull,
            RejectAs::Upstream429 => crate::outcome::Reason::Upstream429,
        }
    }
}

crate::params::declare_params! {
    StationSpec: "station", name = |s| s.name, part = codel[crate::codel::CodelSpec],
        scenario_only = [
            quota: "a reference to a quota (`quotas`)",
            script: "scripted answers: a list valid as a whole (the n-th service gets the n-th)",
        ],
        state = Station<T>, generics = [T: Copy];
    servers: Count { min: 1, max: MAX_SERVERS }, "servers", runtime(apply = |st, n| st.servers = n),
        "identical servers working in parallel";
    queue_capacity: OptCount { min: 0, max: u64::MAX }, "requests", fixed,
        "waiting places in front of the servers (None = unbounded, Some(0) = none)";
    reject_as: Enum { choices: RejectAs::CHOICES }, "", fixed,
        "a full station's answer: QueueFull (a local queue) or Upstream429 (a provider's concurrency quota); neither carries a Retry-After",
        default = "QueueFull";
    cancellation: Bool, "", runtime(apply = |st, on| st.cancellation = on),
        "drop the work of calls whose client timed out (false: it runs to the end)";
    error_rate: Float { min: 0.0, max: 1.0 }, "probability",
        runtime(apply = |st, x| st.error_rate = x),
        "share of calls answered 5xx (failure injection; 1.0 = outage)";
    latency_multiplier: Float { min: 1e-3, max: 1e3 }, "×",
        runtime(apply = |st, x| st.latency_multiplier = x),
        "factor on service times started after a change (a slowdown)", default = 1.0;
    service: DurationDist, "ns", runtime(apply = |st, d| st.service = d),
        "service time of one request (applies to services started after a change)";
    load_slope: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(3600) }, "ns",
        runtime(apply = |st, d| st.load_slope = d),
        "extra service time per call in service when a service starts (load curve)";
    per_output_token: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(60) },
        "ns",
        runtime(apply = |st, d| st.per_output_token = d),
        "service time added per output token (token-based latency)";
    per_prompt_token: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(60) },
        "ns",
        runtime(apply = |st, d| st.per_prompt_token = d), "service time added per prompt token";
    business_error_rate: Float { min: 0.0, max: 1.0 }, "probability",
        runtime(apply = |st, x| st.business_error_rate = x),
        "share of calls answered with a business error (never retried)";
    // A price is finite and bounded: a cost summed over a run stays finite (the fuzzer found
    // `1e308` and `-inf` making `station.<name>.cost` infinite).
    cost_per_1k_prompt_tokens: Float { min: 0.0, max: 1e6 }, "price/1000 tokens", fixed,
        "price per 1000 prompt tokens (summed into station.<name>.cost)", default = 0.0;
    cost_per_1k_output_tokens: Float { min: 0.0, max: 1e6 }, "price/1000 tokens", fixed,
        "price per 1000 output tokens (summed into station.<name>.cost)", default = 0.0;
    streaming: Bool, "", fixed,
        "answers are SSE streams: a first chunk after the prompt part, then the output in chunks",
        default = false;
    // Stream settings exist (are registered) only on a streaming station.
    chunk_tokens: Count { min: 1, max: crate::stream::MAX_CHUNK_TOKENS }, "tokens",
        runtime(apply = |st, n| st.stream.chunk_tokens = n),
        "output tokens per streamed chunk (streams started after a change)", default = 1,
        opt_get = |s| s.streaming.then_some(s.chunk_tokens);
    stall_rate: Float { min: 0.0, max: 1.0 }, "probability",
        runtime(apply = |st, x| st.stream.stall_rate = x),
        "share of streamed responses that stall once (failure injection)",
        opt_get = |s| s.streaming.then_some(s.stall_rate);
    stall_duration: DurationDist, "ns",
        runtime(apply = |st, d| st.stream.stall_duration = d), "length of a stream stall",
        default = Dist::constant(SimDuration::ZERO),
        opt_get = |s| s.streaming.then(|| s.stall_duration.clone());
    stall_after: Float { min: 0.0, max: 1.0 }, "fraction",
        runtime(apply = |st, x| st.stream.stall_after = x),
        "where a stall comes, as a fraction of the stream's chunks", default = 0.5,
        opt_get = |s| s.streaming.then_some(s.stall_after);
}

/// What happened to a request offered to the station.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// A server took it: start service now.
    Start,
    /// It waits in the queue.
    Queued,
    /// The queue is full.
    Full,
}

/// Run-time state. `T` is whatever the world uses to name a waiting request.
#[derive(Clone, Debug)]
pub struct Station<T> {
    pub servers: u64,
    pub capacity: Option<u64>,
    pub reject_as: RejectAs,
    pub service: Dist<SimDuration>,
    pub error_rate: f64,
    pub cancellation: bool,
    pub latency_multiplier: f64,
    pub load_slope: SimDuration,
    pub per_prompt_token: SimDuration,
    pub per_output_token: SimDuration,
    pub business_error_rate: f64,
    /// Streaming responses and stall injection (`crate::stream`).
    pub stream: crate::stream::StreamSettings,
    busy: u64,
    queue: WaitQueue<T>,
    pub peak_queue: u64,
}

impl<T: Copy> Station<T> {
    pub fn new(spec: &StationSpec) -> Self {
        Station {
            servers: spec.servers,
            capacity: spec.queue_capacity,
            reject_as: spec.reject_as,
            service: spec.service.clone(),
            error_rate: spec.error_rate,
            cancellation: spec.cancellation,
            latency_multiplier: spec.latency_multiplier,
            load_slope: spec.load_slope,
            per_prompt_token: spec.per_prompt_token,
            per_output_token: spec.per_output_token,
            business_error_rate: spec.business_error_rate,
            stream: crate::stream::StreamSettings {
                streaming: spec.streaming,
                chunk_tokens: spec.chunk_tokens,
                stall_rate: spec.stall_rate,
                stall_duration: spec.stall_duration.clone(),
                stall_after: spec.stall_after,
            },
            busy: 0,
            queue: WaitQueue::new(spec.codel.as_ref()),
            peak_queue: 0,
        }
    }
    pub fn busy(&self) -> u64 {
        self.busy
    }
    pub fn queue_len(&self) -> u64 {
        self.queue.len() as u64
    }

    /// Decision for an arriving request.
    pub fn admit(&mut self, item: T, now: SimTime) -> Admit {
        if self.busy < self.servers && self.queue.is_empty() {
            self.busy += 1;
            self.queue.pass();
            Admit::Start
        } else if self.capacity.is_none_or(|c| (self.queue.len() as u64) < c) {
            self.queue.push_back(item, now);
            self.peak_queue = self.peak_queue.max(self.queue.len() as u64);
            Admit::Queued
        } else {
            Admit::Full
        }
    }

    /// A server finished at `now`; returns the next request to start (with its enqueue
    /// time), if a server is free for it.
    pub fn complete(&mut self, now: SimTime) -> Option<(T, SimTime)> {
        assert!(self.busy > 0, "completion without a busy server");
        self.busy -= 1;
        self.start_next(now)
    }

    /// Starts the next waiting request (by the discipline, which may drop some first:
    /// [`Self::take_dropped`]) if a server is free.
    pub fn start_next(&mut self, now: SimTime) -> Option<(T, SimTime)> {
        if self.busy < self.servers {
            let next = self.queue.pop(now)?;
            self.busy += 1;
            Some(next)
        } else {
            None
        }
    }

    /// Removes a waiting item (cancellation); `true` if it was waiting.
    pub fn remove_waiting(&mut self, pred: impl Fn(&T) -> bool) -> Option<T> {
        self.queue.remove(pred).map(|(t, _)| t)
    }

    /// Frees a server whose work was cancelled; returns the next item to start, if any.
    pub fn cancel_service(&mut self, now: SimTime) -> Option<(T, SimTime)> {
        self.complete(now)
    }

    /// Requests the CoDel discipline dropped since the last call (the world answers them
    /// `rejected:shed`), oldest first.
    pub fn take_dropped(&mut self) -> Vec<T> {
        self.queue.take_dropped()
    }
    /// Whether requests were dropped and not yet taken.
    pub fn has_dropped(&self) -> bool {
        self.queue.has_dropped()
    }
    /// Under CoDel: (requests dropped, takes of the newest); `None` under FIFO.
    pub fn codel_counts(&self) -> Option<(u64, u64)> {
        self.queue.codel().map(|_| (self.queue.codel_dropped, self.queue.lifo_takes))
    }
    /// The waiting queue (run-time changes of its `codel.<row>` parameters).
    pub fn queue_mut(&mut self) -> &mut WaitQueue<T> {
        &mut self.queue
    }

    /// Work conservation: no idle server beside a waiting request.
    pub fn is_work_conserving(&self) -> bool {
        self.queue.is_empty() || self.busy >= self.servers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_table() {
        let spec: StationSpec = ron::from_str(
            r#"Station(name: "s", servers: 2, queue_capacity: Some(1), service: Constant("1ms"))"#,
        )
        .unwrap();
        assert_eq!((spec.reject_as, spec.latency_multiplier), (RejectAs::QueueFull, 1.0));
        let mut st = Station::new(&spec);
        let t = SimTime(0);
        let got: Vec<Admit> = (0..4).map(|i| st.admit(i, t)).collect();
        assert_eq!(got, [Admit::Start, Admit::Start, Admit::Queued, Admit::Full]);
        assert_eq!(st.complete(t), Some((2, t)));
        assert_eq!(st.busy(), 2);
        assert_eq!(st.complete(t), None);
        assert_eq!(st.busy(), 1);
        assert!(st.is_work_conserving());
        // Lowering servers: busy ones finish, nobody new starts until below the limit.
        st.servers = 1;
        assert_eq!(st.admit(7, t), Admit::Queued);
        assert_eq!(st.complete(t), Some((7, t)));
    }

    /// The station's CoDel queue under a constant sojourn: one server, a call every
    /// Δ = 1 µs from 0, service ending every Δ from 10 ms on, so each dequeue takes the call
    /// that arrived 10 ms earlier (each drop shifts it by one Δ: after n drops the sojourn
    /// is 10 ms − nΔ, still ≥ target 5 ms). The law first sees it at t₀ = 10 ms; by
    /// `codel::rfc_due` (the derivation in `codel_tests.rs`) the drops are due at t₀ + D_k,
    /// D₁ = I, D_{k+1} = D_k + I/√k, and happen at the first dequeue at or after: t₀ + D_k
    /// rounded up to Δ.
    #[test]
    fn codel_drops_a_constant_sojourn_on_the_control_law() {
        let spec: StationSpec = ron::from_str(
            r#"Station(name: "s", servers: 1, service: Constant("1ms"),
                codel: Some((target: "5ms", interval: "100ms")))"#,
        )
        .unwrap();
        let mut st: Station<u64> = Station::new(&spec);
        const DT: u64 = 1_000;
        let t0 = 10_000 * DT;
        let mut drops = vec![];
        for k in 0..=1_000_000u64 {
            let now = SimTime(k * DT);
            st.admit(k, now);
            if now.0 >= t0 {
                assert!(st.complete(now).is_some());
                drops.extend(st.take_dropped().into_iter().map(|_| k * DT));
            }
        }
        let due = crate::codel::rfc_due(SimDuration::from_ms(100), drops.len() as u32 + 1);
        let want: Vec<u64> = due
            .iter()
            .map(|d| (t0 + d).div_ceil(DT) * DT)
            .filter(|t| *t <= 1_000_000 * DT)
            .collect();
        assert_eq!(drops, want);
        // Up to 1 s: the first drop at t₀ + I = 110 ms, then Σ_{j<k} I/√j ≤ 890 ms;
        // Σ_{j≤m} 1/√j ≈ 2√m + ζ(1/2) + 1/(2√m) is 8.84 for m = 26 and 9.03 for m = 27:
        // 1 + 26 drops.
        assert_eq!(drops.len(), 27);
        assert_eq!(st.codel_counts(), Some((27, 0)));
    }
}
