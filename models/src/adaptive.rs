//! The limiter shared by the adaptive concurrency limits: Netflix concurrency-limits'
//! `SimpleLimiter` over a `Limit` algorithm (`aimd.rs`: `AIMDLimit`, `gradient2.rs`:
//! `Gradient2Limit`, `vegas.rs`: `VegasLimit`), and Envoy's adaptive concurrency filter
//! (`adaptive_concurrency.rs`: its gradient controller, whose timers and sample rule are
//! the algorithm's hooks [`LimitAlgorithm::wake_at`] and [`LimitAlgorithm::classify`]).
//!
//! A call passes while fewer than `limit` calls are in flight past this level, else it is
//! rejected at once (`gate_full`, like a fail-fast gate: `SimpleLimiter.acquire` returns
//! no listener). When a passed call's outcome comes back the algorithm takes a sample, as
//! `AbstractLimiter.createListener` builds it: `rtt` = now − the time the call passed,
//! `inflight` = the calls in flight just after it passed (the listener's
//! `currentInflight`), `didDrop` for a failure below this level (timeout, 5xx, connect
//! error, interrupted stream) or a refusal by the upstream itself (its 429, its full queue):
//! `onDropped`, "rejected by an external limit or hitting a timeout". A business error
//! (the upstream answered), a degraded answer or a refusal by a governor below, and a call
//! cancelled from above take no sample (`onIgnore`). `AbstractLimit.onSample` then sets the limit the
//! algorithm returns. With `windowed: Some((…))` on the declaration the samples pass
//! through the library's `WindowedLimit` first (`adaptive/windowed.rs`): the algorithm then sees
//! one aggregated sample per ready window.
//!
//! Which outcome is which is the declaration's `outcomes` ([`LimiterOutcomes`]): the
//! mapping above is `STORMGLASS` (the default); `GRPC_CLIENT`, `GRPC_SERVER` and `SERVLET`
//! are the library's own integrations (`ConcurrencyLimitClientInterceptor`,
//! `ConcurrencyLimitServerInterceptor`, `ConcurrencyLimitServletFilter`), table in
//! [`LimiterOutcomes::classify`].
//!
//! Same instant: the engine orders one nanosecond's events by phase — completions, then
//! timeouts, then arrivals (`sim_core::calendar`). So an answer returns its permit and
//! takes its sample before a timeout of the same instant fires, and both before a call
//! arriving at that instant is admitted: the arrival sees the limit and `in_flight` after
//! every answer and timeout of its nanosecond. In the library the order is whichever
//! thread gets there first. An answer at the nanosecond its call passed has `rtt` 0 (each
//! algorithm's module says what that does).
//!
//! The limit is the gauge `<kind>.<name>.limit` (with `in_flight` and the algorithm's own
//! gauges); each change of the limit in force is an event, `limit_increase` or
//! `limit_decrease` (`from` → `to`), stamped when it happened.
//!
//! Architecture invariant: `in_flight` = calls passed − calls returned (outcome or
//! abandon); every passed call is in `started` exactly until it returns, and samples at
//! most once.

pub mod windowed;

use crate::governor::{CallDecision, CallInfo, GovEvent, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use crate::params::{ApplyParam, GovernorSpec, ParamValue};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

crate::params::param_choices! {
    /// `outcomes`: which call outcomes a Netflix limiter's listener reports as
    /// `onSuccess`, `onDropped` or `onIgnore` — the library leaves it to the integration
    /// that wraps a call, and its own integrations differ ([`LimiterOutcomes::classify`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum LimiterOutcomes {
        /// stormglass's mapping ([`netflix_classify`]): timeouts, 5xx, connect errors,
        /// interrupted streams and the upstream's own refusals (429, full queue) dropped.
        #[default]
        Stormglass = "STORMGLASS",
        /// `ConcurrencyLimitClientInterceptor` (the `GrpcClientLimiterBuilder` limiter):
        /// OK → success, UNAVAILABLE → dropped, any other status → ignored.
        GrpcClient = "GRPC_CLIENT",
        /// `ConcurrencyLimitServerInterceptor`: CANCELLED / DEADLINE_EXCEEDED → dropped,
        /// every other status (errors too) → success.
        GrpcServer = "GRPC_SERVER",
        /// `ConcurrencyLimitServletFilter`: a response of any status → success, an
        /// exception out of the chain → ignored; never dropped.
        Servlet = "SERVLET",
    }
}

impl LimiterOutcomes {
    /// The default (serialization skips it).
    pub fn is_default(&self) -> bool {
        *self == LimiterOutcomes::Stormglass
    }

    /// A returning call's `didDrop` (`Some(true)`: `onDropped`, `Some(false)`:
    /// `onSuccess`) or `None` (`onIgnore`). stormglass's outcomes as the integrations see
    /// them: an upstream 5xx, a connect error and the upstream's own refusals (its 429,
    /// its full queue) are gRPC UNAVAILABLE (gRPC's HTTP mapping: 429, 502, 503, 504 →
    /// UNAVAILABLE; a server's overload answer), a timeout is DEADLINE_EXCEEDED, a
    /// business error and an interrupted stream other statuses (INVALID_ARGUMENT,
    /// INTERNAL). For a servlet, a timeout, a connect error and an interrupted stream are
    /// exceptions (no response); every answer is a response. A refusal or a degraded
    /// answer by a governor below this level never reached the transport the client
    /// interceptor sees (ignored), but is a status the server handler and the servlet
    /// chain returned (success). A call cancelled from above is ignored by every preset
    /// (`cancel` / `onCancel`; [`SimpleLimiter`]'s `on_abandon`).
    pub fn classify(self, o: Outcome) -> Option<bool> {
        use Reason::*;
        let upstream_refusal = matches!(o, Outcome::Rejected(Upstream429 | QueueFull));
        match self {
            LimiterOutcomes::Stormglass => netflix_classify(o),
            LimiterOutcomes::GrpcClient => match o {
                Outcome::Success => Some(false),
                Outcome::Failed(Upstream5xx | ConnectError) => Some(true),
                _ if upstream_refusal => Some(true),
                _ => None,
            },
            LimiterOutcomes::GrpcServer => Some(o == Outcome::Failed(Timeout)),
            LimiterOutcomes::Servlet => match o {
                Outcome::Failed(Timeout | ConnectError | StreamInterrupted) => None,
                _ => Some(false),
            },
        }
    }
}

/// Largest limit (a bound on the state, as a gate's permits).
pub const MAX_LIMIT: u64 = 10_000_000;

/// One sample: what `AbstractLimiter.createListener` measures for a returning call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// When the call passed this level (`startTime`).
    pub start: SimTime,
    /// When its outcome came back.
    pub now: SimTime,
    /// `now − start`.
    pub rtt: SimDuration,
    /// Calls in flight just after it passed (`inflight`).
    pub inflight: u64,
    /// A failure below this level (`didDrop`).
    pub did_drop: bool,
    /// The call's 64 random bits ([`CallInfo::draw`]), for an algorithm that needs luck
    /// (Vegas's probe jitter, Envoy's window jitter): keyed, never a shared stream.
    pub draw: u64,
}

impl Sample {
    /// A sample of a call that passed at 0 and returned after `rtt` (tests).
    pub fn of(rtt: SimDuration, inflight: u64, did_drop: bool) -> Sample {
        Sample { start: SimTime::ZERO, now: SimTime::ZERO + rtt, rtt, inflight, did_drop, draw: 0 }
    }
}

/// A `Limit` algorithm: its declaration and how a sample moves the limit. A run-time change
/// of one of its parameters ([`ApplyParam`], from its rows) applies from the next sample.
pub trait LimitAlgorithm: Clone + std::fmt::Debug + ApplyParam {
    type Spec: GovernorSpec;
    /// The algorithm's state and the limit before the first sample (`initialLimit`).
    fn new(spec: &Self::Spec) -> (Self, u64);
    /// `_update(startTime, rtt, inflight, didDrop)`: the limit after one sample.
    fn update(&mut self, limit: u64, s: &Sample) -> u64;
    /// The outcome mapping the declaration chose (default stormglass's).
    fn outcomes(_spec: &Self::Spec) -> LimiterOutcomes {
        LimiterOutcomes::Stormglass
    }
    /// The declaration's `WindowedLimit` around the algorithm, if any (`adaptive/windowed.rs`).
    fn windowed(_spec: &Self::Spec) -> Option<&windowed::WindowedSpec> {
        None
    }
    /// Whether an outcome takes a sample (`Some(didDrop)`) or not (`None`): by default
    /// as the declaration's mapping says ([`LimiterOutcomes::classify`]).
    fn classify(outcomes: LimiterOutcomes, o: Outcome) -> Option<bool> {
        outcomes.classify(o)
    }
    /// The algorithm's next timer, if it has one (Envoy's sample and minRTT windows).
    fn wake_at(&self) -> Option<SimTime> {
        None
    }
    /// Its timer came (at or after [`LimitAlgorithm::wake_at`]): the limit after it.
    fn on_wake(&mut self, limit: u64, _now: SimTime) -> u64 {
        limit
    }
    /// Its own gauges beside `limit` and `in_flight` (names independent of the state).
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        Vec::new()
    }
    /// Its own summary counters beside the limiter's.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// Run-time state: `SimpleLimiter` over the algorithm `A`.
#[derive(Clone, Debug)]
pub struct SimpleLimiter<A> {
    algo: A,
    outcomes: LimiterOutcomes,
    /// The `WindowedLimit` the samples pass through first, if declared.
    window: Option<windowed::Windowed>,
    limit: u64,
    /// Calls past this level: when each passed, and the in-flight count just after.
    started: BTreeMap<CallId, (SimTime, u64)>,
    events: Vec<GovEvent>,
    pub passed: u64,
    pub rejected: u64,
    pub succeeded: u64,
    pub dropped: u64,
    pub ignored: u64,
}

impl<A: LimitAlgorithm> SimpleLimiter<A> {
    pub fn new(spec: &A::Spec) -> Self {
        let (algo, limit) = A::new(spec);
        SimpleLimiter {
            algo,
            outcomes: A::outcomes(spec),
            window: A::windowed(spec).map(windowed::Windowed::new),
            limit,
            started: BTreeMap::new(),
            events: Vec::new(),
            passed: 0,
            rejected: 0,
            succeeded: 0,
            dropped: 0,
            ignored: 0,
        }
    }

    /// The limit in force.
    pub fn limit(&self) -> u64 {
        self.limit
    }
    /// The algorithm's state.
    pub fn algorithm(&self) -> &A {
        &self.algo
    }
    /// Calls past this level.
    pub fn in_flight(&self) -> u64 {
        self.started.len() as u64
    }

    /// The limit in force becomes `next`: an event if it changed.
    fn set_limit(&mut self, next: u64, now: SimTime) {
        if next != self.limit {
            self.events.push(GovEvent {
                time: now,
                kind: if next < self.limit { "limit_decrease" } else { "limit_increase" },
                from: self.limit.to_string(),
                to: next.to_string(),
                closed: None,
            });
        }
        self.limit = next;
    }
}

/// A sample's `didDrop` (`Some(true)`: `onDropped`, `Some(false)`: `onSuccess`), or
/// `None` for an outcome that takes no sample (`onIgnore`), as Netflix's limiter decides.
pub fn netflix_classify(o: Outcome) -> Option<bool> {
    match o {
        Outcome::Success => Some(false),
        Outcome::Failed(Reason::BusinessError) => None,
        Outcome::Failed(_) => Some(true),
        // The upstream's own refusals: the external limit `onDropped` is for.
        Outcome::Rejected(Reason::Upstream429 | Reason::QueueFull) => Some(true),
        Outcome::Degraded(_) | Outcome::Rejected(_) => None,
    }
}

impl<A: LimitAlgorithm> Governor for SimpleLimiter<A> {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        if self.in_flight() >= self.limit {
            self.rejected += 1;
            return CallDecision::Reject(Reason::GateFull);
        }
        let inflight = self.in_flight() + 1;
        let prev = self.started.insert(call.call, (now, inflight));
        assert!(prev.is_none(), "call {:?} passed the limit twice", call.call);
        self.passed += 1;
        CallDecision::Pass
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, now: SimTime) -> OutcomeDecision {
        let (start, inflight) =
            self.started.remove(&call.call).expect("an outcome of a call that passed");
        match A::classify(self.outcomes, outcome) {
            Some(drop) => {
                if drop {
                    self.dropped += 1;
                } else {
                    self.succeeded += 1;
                }
                let s = Sample {
                    start,
                    now,
                    rtt: now - start,
                    inflight,
                    did_drop: drop,
                    draw: call.draw,
                };
                let s = match &mut self.window {
                    None => Some(s),
                    Some(w) => w.on_sample(&s),
                };
                if let Some(s) = s {
                    let next = self.algo.update(self.limit, &s);
                    self.set_limit(next, now);
                }
            }
            None => self.ignored += 1,
        }
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        // Cancelled from above: no sample (`onIgnore`).
        let gone = self.started.remove(&call.call);
        assert!(gone.is_some(), "abandoned call never passed this limit");
        self.ignored += 1;
    }

    fn take_woken(&mut self, _out: &mut Vec<CallId>) {}

    fn waiting(&self) -> usize {
        0
    }

    fn wake_at(&self) -> Option<SimTime> {
        self.algo.wake_at()
    }

    fn on_wake(&mut self, now: SimTime) {
        let next = self.algo.on_wake(self.limit, now);
        self.set_limit(next, now);
    }

    fn take_events(&mut self, out: &mut Vec<GovEvent>) {
        out.append(&mut self.events);
    }
}

impl<A: LimitAlgorithm> ApplyParam for SimpleLimiter<A> {
    fn apply_param(&mut self, param: &str, v: ParamValue, now: SimTime) -> Result<(), String> {
        self.algo.apply_param(param, v, now)
    }
}

impl<A: LimitAlgorithm> crate::governor::GovernorKindOps for SimpleLimiter<A> {
    type Spec = A::Spec;
    fn build(spec: &A::Spec, _: &crate::governor::BuildCtx<'_>) -> Self {
        SimpleLimiter::new(spec)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        let mut c = vec![
            ("passed", self.passed),
            ("rejected", self.rejected),
            ("succeeded", self.succeeded),
            ("dropped", self.dropped),
            ("ignored", self.ignored),
            ("in_flight_end", self.in_flight()),
            ("limit_end", self.limit),
        ];
        c.extend(self.algo.counters());
        c
    }
    fn gauges(&self) -> Vec<(&'static str, i64)> {
        let mut g = vec![("limit", self.limit as i64), ("in_flight", self.in_flight() as i64)];
        g.extend(self.algo.gauges());
        g
    }
    fn in_flight_limit(&self) -> Option<(u64, Option<u64>)> {
        Some((self.in_flight(), Some(self.limit)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aimd::{AimdLimit, AimdLimitSpec};

    /// Script through the governor interface (AIMD): the limit rejects at once, samples
    /// carry the in-flight count at acquisition, ignored outcomes take no sample.
    #[test]
    fn limiter_script() {
        let mut l: AimdLimit = SimpleLimiter::new(&AimdLimitSpec {
            initial_limit: 2,
            min_limit: 1,
            max_limit: 3,
            ..AimdLimitSpec::defaults("a")
        });
        let c = |i| CallInfo::simple(i, 0);
        let t = SimTime(0);
        assert_eq!(l.on_call(&c(1), t), CallDecision::Pass);
        assert_eq!(l.on_call(&c(2), t), CallDecision::Pass);
        assert_eq!(l.on_call(&c(3), t), CallDecision::Reject(Reason::GateFull));
        // Call 1 passed with inflight 1: 1×2 ≥ 2 → 3.
        let t1 = SimTime(1_000_000);
        l.on_outcome(&c(1), Outcome::Success, t1);
        assert_eq!(l.limit(), 3);
        // A business error is ignored: no sample.
        l.on_outcome(&c(2), Outcome::Failed(Reason::BusinessError), t1);
        assert_eq!((l.limit(), l.ignored), (3, 1));
        // A timeout is a drop: (int)(3 × 0.9) = 2, one event.
        assert_eq!(l.on_call(&c(4), t1), CallDecision::Pass);
        l.on_outcome(&c(4), Outcome::Failed(Reason::Timeout), SimTime(2_000_000));
        assert_eq!(l.limit(), 2);
        let mut ev = vec![];
        l.take_events(&mut ev);
        let ev: Vec<_> =
            ev.iter().map(|e| (e.time.0, e.kind, e.from.as_str(), e.to.as_str())).collect();
        assert_eq!(
            ev,
            [(1_000_000, "limit_increase", "2", "3"), (2_000_000, "limit_decrease", "3", "2")]
        );
        // The provider's 429 is a drop (an external limit); a governor below refusing is not.
        assert_eq!(netflix_classify(Outcome::Rejected(Reason::Upstream429)), Some(true));
        assert_eq!(netflix_classify(Outcome::Rejected(Reason::QueueFull)), Some(true));
        assert_eq!(netflix_classify(Outcome::Rejected(Reason::GateFull)), None);
        // Cancelled from above: the slot is given back, no sample.
        assert_eq!(l.on_call(&c(5), t1), CallDecision::Pass);
        l.on_abandon(&c(5), t1);
        assert_eq!((l.in_flight(), l.limit(), l.ignored), (0, 2, 2));
        assert_eq!((l.passed, l.rejected, l.succeeded, l.dropped), (4, 1, 1, 1));
    }

    /// Each preset's mapping, outcome by outcome: S = `onSuccess`, D = `onDropped`,
    /// I = `onIgnore`. STORMGLASS is [`netflix_classify`]; GRPC_CLIENT is
    /// `ConcurrencyLimitClientInterceptor`'s `onClose` (`status.isOk()` → onSuccess,
    /// `Code.UNAVAILABLE` → onDropped, else onIgnore); GRPC_SERVER is
    /// `ConcurrencyLimitServerInterceptor`'s `close` (CANCELLED, DEADLINE_EXCEEDED →
    /// onDropped, default → onSuccess); SERVLET is `ConcurrencyLimitServletFilter.doFilter`
    /// (`chain.doFilter` returned → onSuccess, an exception → onIgnore).
    #[test]
    fn outcome_presets_table() {
        use LimiterOutcomes::*;
        use Reason::*;
        #[rustfmt::skip]
        let rows: &[(Outcome, &str, &str)] = &[
            // (outcome, STORMGLASS GRPC_CLIENT GRPC_SERVER SERVLET, why)
            (Outcome::Success, "SSSS", "an answer: OK, a response"),
            (Outcome::Failed(Timeout), "DIDI", "DEADLINE_EXCEEDED; an exception in a servlet"),
            (Outcome::Failed(Upstream5xx), "DDSS", "UNAVAILABLE (503); a 5xx response"),
            (Outcome::Failed(ConnectError), "DDSI", "UNAVAILABLE; an I/O exception"),
            (Outcome::Failed(StreamInterrupted), "DISI", "INTERNAL; an exception"),
            (Outcome::Failed(BusinessError), "IISS", "INVALID_ARGUMENT; a 4xx response"),
            (Outcome::Rejected(Upstream429), "DDSS", "429 → UNAVAILABLE; a 429 response"),
            (Outcome::Rejected(QueueFull), "DDSS", "the upstream's overload answer"),
            (Outcome::Rejected(GateFull), "IISS", "a governor below: no transport call"),
            (Outcome::Degraded(Shed), "IISS", "answered below: no transport call"),
        ];
        let code = |c: Option<bool>| match c {
            Some(false) => 'S',
            Some(true) => 'D',
            None => 'I',
        };
        for &(o, expect, why) in rows {
            let got: String = [Stormglass, GrpcClient, GrpcServer, Servlet]
                .map(|m| code(m.classify(o)))
                .iter()
                .collect();
            assert_eq!(got, expect, "{o:?}: {why}");
        }
    }

    /// The mapping is the declaration's: an AIMD limit under GRPC_SERVER takes a 5xx as a
    /// success (+1 while in use) where the default takes it as a drop (×0.9); under
    /// SERVLET a timeout takes no sample at all.
    #[test]
    fn outcome_mapping_is_a_declared_parameter() {
        let spec = |outcomes| AimdLimitSpec {
            initial_limit: 10,
            min_limit: 1,
            outcomes,
            ..AimdLimitSpec::defaults("a")
        };
        let c = CallInfo::simple(1, 0);
        let (t0, t1) = (SimTime(0), SimTime(1_000_000));
        let after = |o: LimiterOutcomes, outcome: Outcome| {
            let mut l: AimdLimit = SimpleLimiter::new(&spec(o));
            for i in 0..5 {
                assert_eq!(l.on_call(&CallInfo::simple(10 + i, 0), t0), CallDecision::Pass);
            }
            l.on_call(&c, t0);
            l.on_outcome(&c, outcome, t1);
            (l.limit(), l.dropped, l.ignored)
        };
        let fail = Outcome::Failed(Reason::Upstream5xx);
        assert_eq!(after(LimiterOutcomes::Stormglass, fail), (9, 1, 0), "(int)(10 × 0.9)");
        assert_eq!(after(LimiterOutcomes::GrpcServer, fail), (11, 0, 0), "6 × 2 ≥ 10: + 1");
        let timeout = Outcome::Failed(Reason::Timeout);
        assert_eq!(after(LimiterOutcomes::Servlet, timeout), (10, 0, 1), "no sample");
    }

    /// Through the limiter with a `WindowedLimit` (window 10, 1 s, threshold 100 µs):
    /// AIMD sees one sample per ready window. Call 0 returns at 1 ms (the first window,
    /// of one sample: thrown away; next update at 1 ms + 1 s, minRtt × 2 = 2 ms being
    /// below min_window_time); ten more drops by 900 ms stay in the window (the limit
    /// untouched, where unwindowed AIMD would cut it ten times); a success at 1.002 s
    /// closes the window of 11 with didDrop set: one cut, (int)(20 × 0.9) = 18.
    #[test]
    fn windowed_limit_feeds_one_sample_per_window() {
        use windowed::WindowedSpec;
        let mut l: AimdLimit = SimpleLimiter::new(&AimdLimitSpec {
            min_limit: 1,
            windowed: Some(WindowedSpec::default()),
            ..AimdLimitSpec::defaults("a")
        });
        let ms = |x: u64| SimTime(x * 1_000_000);
        let call = |l: &mut AimdLimit, i: u64, start: SimTime, end: SimTime, o: Outcome| {
            assert_eq!(l.on_call(&CallInfo::simple(i, 0), start), CallDecision::Pass);
            l.on_outcome(&CallInfo::simple(i, 0), o, end);
        };
        call(&mut l, 0, ms(0), ms(1), Outcome::Success);
        for i in 1..=10 {
            call(&mut l, i, ms(i * 80), ms(i * 80 + 50), Outcome::Failed(Reason::Timeout));
            assert_eq!(l.limit(), 20, "call {i} still inside the window");
        }
        call(&mut l, 11, ms(1_000), ms(1_002), Outcome::Success);
        assert_eq!(l.limit(), 18, "one cut for the whole window");
        assert_eq!((l.succeeded, l.dropped), (2, 10), "the limiter's counts are per call");
    }
}
