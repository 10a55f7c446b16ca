//! Sentinel cluster flow control (token-server mode, docs/domain.md §3.6 "local vs cluster"): the
//! [`ClusterFlow`] governor, with the semantics of Sentinel 1.8.x's `FlowRuleChecker`
//! (`passClusterCheck`, `applyTokenResult`, `fallbackToLocalOrPass`) on the client side and
//! `DefaultTokenService` / `ClusterFlowChecker.acquireClusterToken` on the token server.
//!
//! A call asks the token server for one token. The server counts the passes of the rule
//! cluster-wide in its own sliding window (`sample_count` buckets over
//! `window_interval_ms`, `ClusterMetric`) and answers:
//! * `OK` when `globalThreshold − latestQps − 1 ≥ 0`, `latestQps` being the window's passes
//!   divided by the window length in seconds and `globalThreshold = count × exceed_count`
//!   (`GLOBAL`) or `count × connectedCount × exceed_count` (`AVG_LOCAL`, Sentinel's
//!   default: `count` is a per-instance share, the server multiplies it by the number of
//!   connected clients);
//! * `BLOCKED` otherwise (the call is rejected `rate_limited`);
//! * `TOO_MANY_REQUEST` when the server's own namespace limiter (`max_allowed_qps`, every
//!   request counted in 10 × 100 ms) refuses the request, and `FAIL` when the server is down
//!   (`server_up: false`; the client's transport is not connected). Both make the client
//!   fall back: with `fallback_to_local_when_fail` (default) the rule is checked locally —
//!   Sentinel's `DefaultController` with the *same* `count` over the instance's own resource
//!   statistics (rolling second, 2 × 500 ms) — otherwise the call passes unchecked.
//!
//! Every call that passes (by token, by the local check, or unchecked) is counted in the
//! instance's local statistics, as Sentinel's `StatisticSlot` does, so a fallback starts
//! from the passes the server granted in the last second.
//!
//! Token latency (optional, `token_rtt`): the server decides when the request is sent and
//! the call waits (parked, `Wait { deadline: None }`, released through `wake_at`) for the
//! answer; an answer slower than `request_timeout_ms` (Sentinel's client `requestTimeout`,
//! 20 ms) is a `FAIL` when the timeout fires — the call falls back then, while the server
//! has counted the token anyway (as a real server does for an answer nobody waits for).
//!
//! The key design decision — shared vs per-instance: the token server is one state shared
//! (`Arc<Mutex<TokenServer>>`, single-threaded use, never contended) by the declared
//! governor and every clone of it; everything else (local statistics, counters, the
//! fallback mode) belongs to the clone. So listing `cluster_flow.<name>` in the scenario's
//! `per_instance` gives each app instance its own token client and local fallback rule
//! against one server, and the world tells the server how many clients it has
//! ([`ClusterFlow::set_connected`], = app instances); not listed, the whole cluster is one
//! client (connected = 1). A shadow copy must not share the real server:
//! [`ClusterFlow::detached`] deep-copies it.
//!
//! Not modelled (documented in `docs/scenario-reference.md`): prioritized requests
//! (`SHOULD_WAIT`, occupying future buckets), token prefetch, the concurrency (THREAD)
//! cluster mode, `NO_RULE_EXISTS`, an embedded server, per-client disconnections, and a
//! slow connect (a down server fails at once: its transport is not connected).
//!
//! Architecture invariant: the server's `ok + blocked + too_many` = the requests that
//! reached it = Σ over its clients of `token_ok + token_blocked + too_many` (I43); per
//! client, passed − returned = the calls in flight (`threads`, I44). Calls waiting for an
//! answer ≤ [`MAX_PENDING`], released in (answer time, arrival) order; counters only
//! grow; the server's windows are fixed-size.
//!
//! API boundary: [`ClusterFlow`] implements [`Governor`] (it parks only with a
//! `token_rtt`); run-time changes through [`ClusterFlow::apply_param`] (`count`,
//! `server_up`, `fallback_to_local_when_fail`, `exceed_count`, `max_allowed_qps`,
//! `token_rtt`, `request_timeout_ms`) keep every window; a
//! rule reload ([`ClusterFlow::reload`]) keeps them too (the server keeps a flow id's
//! metric across loads, the client's node statistics survive), so it only records an event.

pub use super::cluster_server::{TokenServer, TokenStatus};
pub use super::cluster_spec::{ClusterFlowRuleSpec, ThresholdType};

use super::qps::{NodeStats, qps_can_pass};
use crate::governor::{CallDecision, CallInfo, GovEvent, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Calls one client may have waiting for a token answer; beyond it a request is treated
/// as failed at once (the call falls back).
pub const MAX_PENDING: usize = 100_000;

/// Which path a client's last decision took (for `state_change` events).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientMode {
    /// The server answered.
    Cluster,
    /// The server failed; the local rule decided.
    Local,
    /// The server failed and fallback is off: calls pass unchecked.
    PassThrough,
}

impl ClientMode {
    fn name(self) -> &'static str {
        match self {
            ClientMode::Cluster => "cluster",
            ClientMode::Local => "local_fallback",
            ClientMode::PassThrough => "pass_through",
        }
    }
}

/// A client's counters (summary columns `cluster_flow.<name>[@app.k].<counter>`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterCounters {
    /// Tokens the server granted this client (with a `token_rtt` beyond the request
    /// timeout the call does not wait for it and falls back: see `timeouts`).
    pub token_ok: u64,
    /// Requests the server blocked.
    pub token_blocked: u64,
    /// Requests answered `TOO_MANY_REQUEST` (the call falls back).
    pub too_many: u64,
    /// Answers slower than `request_timeout_ms` (the call fell back when it fired).
    pub timeouts: u64,
    /// Calls that passed (by token, by the local rule or unchecked).
    pub passed: u64,
    /// Server failed, the local rule passed the call.
    pub local_pass: u64,
    /// Server failed, the local rule rejected the call.
    pub local_block: u64,
    /// Server failed, fallback off: passed unchecked.
    pub pass_through: u64,
    /// Calls that passed and came back.
    pub returned: u64,
}

/// One token client of a cluster rule: the shared server plus this client's local state.
#[derive(Clone, Debug)]
pub struct ClusterFlow {
    server: Arc<Mutex<TokenServer>>,
    /// The rule's count (the local fallback threshold).
    count: f64,
    fallback: bool,
    local: NodeStats,
    mode: ClientMode,
    events: Vec<GovEvent>,
    rtt: SimDuration,
    request_timeout_ms: u64,
    /// Calls waiting for their answer, by (answer time, sequence).
    pending: BTreeMap<(SimTime, u64), Pending>,
    by_call: BTreeMap<CallId, (SimTime, u64)>,
    seq: u64,
    woken: Vec<CallId>,
    answered: Vec<(CallId, Outcome)>,
    pub counters: ClusterCounters,
}

/// A call waiting for the server's answer (decided when the request was sent).
#[derive(Clone, Copy, Debug)]
struct Pending {
    call: CallId,
    status: TokenStatus,
    /// The answer comes after the request timeout: the call falls back instead.
    timed_out: bool,
}

impl ClusterFlow {
    pub fn new(spec: &ClusterFlowRuleSpec) -> Self {
        assert!(spec.count >= 0.0, "validated count");
        ClusterFlow {
            server: Arc::new(Mutex::new(TokenServer::new(spec))),
            count: spec.count,
            fallback: spec.fallback_to_local_when_fail,
            local: NodeStats::default(),
            mode: ClientMode::Cluster,
            events: Vec::new(),
            rtt: spec.token_rtt,
            request_timeout_ms: spec.request_timeout_ms,
            pending: BTreeMap::new(),
            by_call: BTreeMap::new(),
            seq: 0,
            woken: Vec::new(),
            answered: Vec::new(),
            counters: ClusterCounters::default(),
        }
    }

    /// The shared server (single-threaded use: the lock is never contended).
    pub fn server(&self) -> MutexGuard<'_, TokenServer> {
        self.server.lock().expect("token server lock (single-threaded)")
    }

    /// Whether two clients talk to the same server.
    pub fn same_server(&self, other: &ClusterFlow) -> bool {
        Arc::ptr_eq(&self.server, &other.server)
    }

    /// A copy with its own server (a shadow must not count in the real one).
    pub fn detached(&self) -> Self {
        let server = self.server().clone();
        ClusterFlow { server: Arc::new(Mutex::new(server)), ..self.clone() }
    }

    /// The world gave this rule `n` clients (its per-instance copies).
    pub fn set_connected(&mut self, n: u64) {
        assert!(n >= 1, "at least one client");
        self.server().connected = n;
    }

    pub fn mode(&self) -> ClientMode {
        self.mode
    }
    /// Calls passed and not yet returned (`curThreadNum` of the instance's node).
    pub fn threads(&self) -> u64 {
        self.local.threads
    }
    /// The instance's own passes in its rolling second.
    pub fn local_pass_qps(&self, now: SimTime) -> u64 {
        self.local.pass_qps(now)
    }

    pub fn set_count(&mut self, count: f64) {
        assert!(count.is_finite() && count >= 0.0);
        self.count = count;
        self.server().count = count;
    }
    pub fn set_server_up(&mut self, up: bool) {
        self.server().up = up;
    }
    pub fn set_fallback(&mut self, on: bool) {
        self.fallback = on;
    }
    pub fn set_exceed_count(&mut self, x: f64) {
        assert!(x > 0.0 && x.is_finite());
        self.server().exceed_count = x;
    }
    pub fn set_max_allowed_qps(&mut self, x: f64) {
        assert!(x >= 0.0 && x.is_finite());
        self.server().max_allowed_qps = x;
    }
    /// Applies to requests sent from now on.
    pub fn set_token_rtt(&mut self, d: SimDuration) {
        self.rtt = d;
    }
    /// Applies to requests sent from now on.
    pub fn set_request_timeout_ms(&mut self, ms: u64) {
        assert!(ms >= 1);
        self.request_timeout_ms = ms;
    }

    /// A rule reload: the client's controller is rebuilt (the default controller is
    /// stateless), its node statistics survive, and the server keeps the flow id's metric
    /// (`putMetricIfAbsent`): no window changes. Recorded by the world as `rule_reload`.
    pub fn reload(&mut self, _now: SimTime) {}

    fn enter(&mut self, mode: ClientMode, now: SimTime) {
        if mode != self.mode {
            self.events.push(GovEvent {
                time: now,
                kind: "state_change",
                from: self.mode.name().into(),
                to: mode.name().into(),
                closed: None,
            });
            self.mode = mode;
        }
    }

    fn pass(&mut self, now: SimTime) -> CallDecision {
        self.local.record_pass(now);
        self.counters.passed += 1;
        CallDecision::Pass
    }

    /// `applyTokenResult`: what the client does with an answer at `now`.
    fn apply(&mut self, status: TokenStatus, now: SimTime) -> CallDecision {
        match status {
            TokenStatus::Ok => {
                self.enter(ClientMode::Cluster, now);
                self.pass(now)
            }
            TokenStatus::Blocked => {
                self.enter(ClientMode::Cluster, now);
                CallDecision::Reject(Reason::RateLimited)
            }
            TokenStatus::TooManyRequest | TokenStatus::Fail => self.fallback_or_pass(now),
        }
    }

    /// `fallbackToLocalOrPass`.
    fn fallback_or_pass(&mut self, now: SimTime) -> CallDecision {
        if !self.fallback {
            self.enter(ClientMode::PassThrough, now);
            self.counters.pass_through += 1;
            return self.pass(now);
        }
        self.enter(ClientMode::Local, now);
        if qps_can_pass(&self.local, self.count, now) {
            self.counters.local_pass += 1;
            self.pass(now)
        } else {
            self.counters.local_block += 1;
            CallDecision::Reject(Reason::RateLimited)
        }
    }
}

impl Governor for ClusterFlow {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        // The server decides when the request is sent; a down server is a disconnected
        // transport: the client fails at once.
        let status = self.server().request_token(now);
        match status {
            TokenStatus::Ok => self.counters.token_ok += 1,
            TokenStatus::Blocked => self.counters.token_blocked += 1,
            TokenStatus::TooManyRequest => self.counters.too_many += 1,
            TokenStatus::Fail => {}
        }
        if status == TokenStatus::Fail || self.rtt == SimDuration::ZERO {
            return self.apply(status, now);
        }
        if self.pending.len() >= MAX_PENDING {
            self.counters.timeouts += 1;
            return self.fallback_or_pass(now);
        }
        let timeout = SimDuration::from_ms(self.request_timeout_ms);
        let (wait, timed_out) =
            if self.rtt > timeout { (timeout, true) } else { (self.rtt, false) };
        let key = (now + wait, self.seq);
        self.seq += 1;
        self.pending.insert(key, Pending { call: call.call, status, timed_out });
        let prev = self.by_call.insert(call.call, key);
        assert!(prev.is_none(), "call waiting twice for a token");
        CallDecision::Wait { deadline: None, on_deadline: Reason::RateLimited }
    }

    fn on_outcome(&mut self, _call: &CallInfo, outcome: Outcome, _now: SimTime) -> OutcomeDecision {
        self.local.record_exit();
        self.counters.returned += 1;
        assert_eq!(self.counters.passed - self.counters.returned, self.local.threads, "I44");
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        if let Some(key) = self.by_call.remove(&call.call) {
            // Its token (if granted) stays spent at the server.
            self.pending.remove(&key).expect("indexed pending call");
        } else {
            // Woken in the same instant but not yet resumed: it had passed; give it back.
            let pos = self.woken.iter().position(|c| *c == call.call);
            self.woken.remove(pos.expect("abandoned call was not waiting at this rule"));
            self.local.record_exit();
            self.counters.returned += 1;
        }
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }

    fn take_answered(&mut self, out: &mut Vec<(CallId, Outcome)>) {
        out.append(&mut self.answered);
    }

    fn waiting(&self) -> usize {
        self.pending.len()
    }

    fn wake_at(&self) -> Option<SimTime> {
        self.pending.keys().next().map(|k| k.0)
    }

    fn on_wake(&mut self, now: SimTime) {
        while let Some(entry) = self.pending.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let p = entry.remove();
            self.by_call.remove(&p.call);
            let status = if p.timed_out {
                self.counters.timeouts += 1;
                TokenStatus::Fail
            } else {
                p.status
            };
            match self.apply(status, now) {
                CallDecision::Pass => self.woken.push(p.call),
                CallDecision::Reject(r) => self.answered.push((p.call, Outcome::Rejected(r))),
                d => unreachable!("an answer passes or rejects, not {d:?}"),
            }
        }
    }

    fn take_events(&mut self, out: &mut Vec<GovEvent>) {
        out.append(&mut self.events);
    }
}

/// I43 and I44 over every client in a world (`(component path, client)`, arena order):
/// per token server, its answers = the answers its clients saw; per client, passed −
/// returned = calls in flight. Violations are appended to `out`.
pub fn check_clients<'a>(
    clients: impl Iterator<Item = (&'a str, &'a ClusterFlow)>,
    out: &mut Vec<String>,
) {
    let clients: Vec<(&str, &ClusterFlow)> = clients.collect();
    for (i, (name, c)) in clients.iter().enumerate() {
        let k = c.counters;
        if k.passed < k.returned || k.passed - k.returned != c.threads() {
            out.push(format!(
                "I44 cluster client {name}: passed {} − returned {} ≠ in flight {}",
                k.passed,
                k.returned,
                c.threads()
            ));
        }
        // Each server once: at its first client in arena order.
        if clients[..i].iter().any(|(_, d)| d.same_server(c)) {
            continue;
        }
        let mine = clients.iter().filter(|(_, d)| d.same_server(c));
        let (mut ok, mut blocked, mut many) = (0, 0, 0);
        for (_, d) in mine {
            ok += d.counters.token_ok;
            blocked += d.counters.token_blocked;
            many += d.counters.too_many;
        }
        let s = c.server();
        if (s.ok, s.blocked, s.too_many) != (ok, blocked, many) {
            out.push(format!(
                "I43 token server of {name}: ok/blocked/too_many {}/{}/{} ≠ clients' {ok}/{blocked}/{many}",
                s.ok, s.blocked, s.too_many
            ));
        }
    }
}
