//! What an observer (a live session, a GUI, a test) can see of a running world: one
//! [`ComponentState`] per component (breaker state and window figures, in-flight against
//! each limit, queue lengths per class, tokens left) and a cheap per-frame [`Snapshot`].
//!
//! Architecture invariant: observing is read-only. Everything here is computed from `&`
//! references to the components (no refill, no window advance, no metric reset), so reading
//! state at any time — after every event if you like — cannot change a run: the same seed
//! gives the same fingerprint observed or not (tested in `models/tests/suite/session.rs`).
//!
//! API boundary: plain data (strings, numbers), no UI types and no references into the
//! world, so a snapshot can cross threads or be kept across frames.

use crate::callsite::GovernorKind;
use crate::components::{ComponentId, ComponentKind, Owner};
use crate::flow::rules::FlowGrade;
use crate::governor::Governor;
use sim_core::SimTime;

/// A breaker's state and the figures of its current window (Resilience4j: the sliding
/// window as of its last recorded result; Sentinel degrade rule: the current statistics
/// bucket).
#[derive(Clone, Debug, PartialEq)]
pub struct BreakerWindow {
    /// `CLOSED`, `OPEN`, `HALF_OPEN` or `FORCED_OPEN`.
    pub state: &'static str,
    /// Failed calls ÷ buffered calls, in percent (Resilience4j's float arithmetic).
    pub failure_rate: f64,
    /// Slow calls ÷ buffered calls, in percent (`NaN` for a Sentinel rule: it keeps one
    /// "bad" count, slow or failed by its grade).
    pub slow_rate: f64,
    /// Calls recorded in the window.
    pub buffered_calls: u64,
    pub failed_calls: u64,
    pub slow_calls: u64,
}

/// Use of a limit: what is held now against what is allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// Permits, threads, sequences, connections, concurrent calls held now.
    pub in_use: u64,
    /// The limit in force (`None`: unbounded, or not a concurrency limit).
    pub limit: Option<u64>,
}

/// The observable state of one component (a governor, an upstream, a pool, an app
/// instance), by its component path (`circuit_breaker.llm`, `gate.llm@app.0`,
/// `station.provider`, `app.api.0`).
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentState {
    pub path: String,
    /// Whose state it is, typed: a governor by its arena index (a copy's own), or a
    /// component (an app instance: the app's [`ComponentId`] with the instance as `part`).
    pub owner: Owner,
    /// The component kind's registry name (the path's first segment).
    pub kind: String,
    /// For a breaker: its state and window figures.
    pub breaker: Option<BreakerWindow>,
    /// For anything that limits concurrency: held now against the limit.
    pub in_flight: Option<InFlight>,
    /// Calls or requests parked or queued here now.
    pub waiting: u64,
    /// Per class (scenario order: class name, queued): for an app instance, its dispatcher's
    /// class queues (or its pool's queue by class); empty where queues are not per class.
    pub queues: Vec<(String, u64)>,
    /// For a token bucket, a quota or a retry budget: tokens (or requests) left now.
    pub tokens_left: Option<i64>,
    /// Further kind-specific figures, by stable snake_case name.
    pub figures: Vec<(&'static str, f64)>,
}

impl ComponentState {
    /// The state of `owner`, registry kind `kind`, under its component path `path`.
    pub fn new(owner: Owner, kind: &'static str, path: impl Into<String>) -> Self {
        ComponentState {
            path: path.into(),
            owner,
            kind: kind.to_string(),
            breaker: None,
            in_flight: None,
            waiting: 0,
            queues: Vec::new(),
            tokens_left: None,
            figures: Vec::new(),
        }
    }
    /// The state of component `id` named `name` (path `<kind>.<name>`).
    pub fn component(id: ComponentId, name: &str) -> Self {
        let kind = id.kind.name();
        ComponentState::new(Owner::Component(id), kind, format!("{kind}.{name}"))
    }
    /// Is it an app instance's?
    pub fn is_app_instance(&self) -> bool {
        matches!(self.owner, Owner::Component(c) if c.kind == ComponentKind::App)
    }
    /// A kind-specific figure by name.
    pub fn figure(&self, name: &str) -> Option<f64> {
        self.figures.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// Requests of one source so far (all of them, warm-up included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Throughput {
    /// `source.<name>`.
    pub path: String,
    pub offered: u64,
    /// Requests that ended (any outcome).
    pub ended: u64,
    /// Measured requests (after warm-up) by outcome.
    pub success: u64,
    pub degraded: u64,
    pub failed: u64,
    pub rejected: u64,
}

/// What a GUI draws per frame, computed in one pass over the world's components.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub now: SimTime,
    /// Events processed so far.
    pub events: u64,
    /// Requests and calls in the system now.
    pub live_requests: u64,
    pub live_calls: u64,
    /// Per class (scenario order): requests queued on the entry path (dispatcher or pool
    /// queues, summed over every app instance).
    pub class_queued: Vec<(String, u64)>,
    /// Every component, in a stable order (governors in declaration order, then stations,
    /// GPU servers, quotas, connection pools, app instances).
    pub components: Vec<ComponentState>,
    pub throughput: Vec<Throughput>,
}

impl Snapshot {
    pub fn component(&self, path: &str) -> Option<&ComponentState> {
        self.components.iter().find(|c| c.path == path)
    }
    /// The breakers (components with a window).
    pub fn breakers(&self) -> impl Iterator<Item = (&str, &BreakerWindow)> {
        self.components.iter().filter_map(|c| c.breaker.as_ref().map(|b| (c.path.as_str(), b)))
    }
    /// Everything that holds something against a limit.
    pub fn limits(&self) -> impl Iterator<Item = (&str, InFlight)> {
        self.components.iter().filter_map(|c| c.in_flight.map(|f| (c.path.as_str(), f)))
    }
}

/// The observable state of governor `i` of the arena (`path`: its component path).
pub fn governor_state(i: usize, path: &str, g: &GovernorKind, now: SimTime) -> ComponentState {
    let mut s = ComponentState::new(Owner::Governor(i), g.kind_name(), path);
    s.waiting = g.waiting() as u64;
    match g {
        GovernorKind::Gate(g) => {
            s.in_flight = Some(InFlight { in_use: g.in_use(), limit: Some(g.permits()) });
        }
        GovernorKind::CircuitBreaker(b) => {
            let w = b.snapshot();
            s.breaker = Some(BreakerWindow {
                state: b.state().name(),
                failure_rate: w.failure_rate() as f64,
                slow_rate: w.slow_rate() as f64,
                buffered_calls: w.calls,
                failed_calls: w.failed,
                slow_calls: w.slow,
            });
            s.in_flight = Some(InFlight { in_use: b.in_flight() as u64, limit: None });
            s.figures.push(("half_open_permits_left", b.half_open_permits_left() as f64));
            s.figures.push(("not_permitted", b.counters.not_permitted as f64));
        }
        GovernorKind::DegradeRule(b) => {
            let (total, bad) = b.bucket();
            let rate = if total == 0 { 0.0 } else { bad as f64 * 100.0 / total as f64 };
            s.breaker = Some(BreakerWindow {
                state: b.state().name(),
                failure_rate: rate,
                slow_rate: f64::NAN,
                buffered_calls: total,
                failed_calls: bad,
                slow_calls: bad,
            });
            s.in_flight = Some(InFlight { in_use: b.in_flight() as u64, limit: None });
        }
        GovernorKind::TokenBucket(t) => {
            s.tokens_left = Some(t.tokens_at(now));
            s.figures.push(("passed", t.passed as f64));
            s.figures.push(("rejected", t.rejected as f64));
        }
        GovernorKind::FlowRules(f) => {
            // A THREAD rule limits concurrency: the strictest one is the limit in force.
            let thread_limit = (0..f.rule_count())
                .map(|i| f.rule(i))
                .filter(|r| r.grade == FlowGrade::Thread)
                .map(|r| r.count.max(0.0) as u64)
                .min();
            s.in_flight = Some(InFlight { in_use: f.threads(), limit: thread_limit });
            s.figures.push(("pass_qps", f.pass_qps(now) as f64));
            s.figures.push(("passed", f.passed as f64));
            s.figures.push(("blocked", f.blocked as f64));
        }
        GovernorKind::ClusterFlow(c) => {
            s.in_flight = Some(InFlight { in_use: c.threads(), limit: None });
            s.figures.push(("local_pass_qps", c.local_pass_qps(now) as f64));
        }
        GovernorKind::Retry(r) => {
            s.figures.push(("active", r.active() as f64));
            if let Some(m) = r.budget().milli_tokens() {
                s.tokens_left = Some((m / 1000) as i64);
            }
        }
        GovernorKind::Shadow(sh) => {
            // The inner governor's figures under the shadow's path: what it would hold.
            let inner = governor_state(i, path, sh.inner(), now);
            s.breaker = inner.breaker;
            s.in_flight = inner.in_flight;
            s.tokens_left = inner.tokens_left;
            s.figures = inner.figures;
            s.figures.push(("would_reject", sh.counters.would_reject as f64));
        }
        // Kinds without figures of their own here; what they declare generically
        // (gauges, in flight against a limit) is added below.
        _ => {}
    }
    if s.in_flight.is_none()
        && let Some((in_use, limit)) = g.in_flight_limit()
    {
        s.in_flight = Some(InFlight { in_use, limit });
    }
    if !matches!(g, GovernorKind::Shadow(_)) {
        s.figures.extend(g.gauges().into_iter().map(|(n, v)| (n, v as f64)));
    }
    s
}
