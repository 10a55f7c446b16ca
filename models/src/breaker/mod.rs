//! Circuit breakers as governors: Resilience4j's `CircuitBreaker` ([`r4j`]) and Sentinel
//! 1.8.x degrade rules ([`sentinel_degrade`]), with the exact semantics of docs/domain.md §7.1 and §7.3.
//!
//! Both are state machines CLOSED → OPEN → HALF_OPEN → CLOSED/OPEN that sit in a call
//! site's governor stack. They look only at the outcomes that climb back through them:
//! every outcome is first *classified* ([`Classified`]) by two lists of outcome patterns
//! written with the libraries' own names, `record_exceptions` and `ignore_exceptions`
//! (an outcome matching `ignore_exceptions` is ignored, else one matching
//! `record_exceptions` is a failure, else it is a success — Resilience4j's precedence).
//! Patterns are strings `"<kind>"` or `"<kind>:<reason>"`, kind one of `degraded`,
//! `failed`, `rejected`, reason a stable [`Reason`] name: `"failed"`, `"rejected:gate_full"`,
//! `"failed:business_error"`.
//!
//! Key design decision: the default classification follows Resilience4j (every exception
//! is recorded) translated to outcomes: `record_exceptions = ["failed", "rejected"]` —
//! upstream 5xx and timeouts, but also refusals from the levels below the breaker (an
//! upstream 429 or queue-full, a local gate or limiter below it), which in Java are
//! exceptions thrown through the breaker — and `ignore_exceptions =
//! ["failed:business_error"]` (a bad prompt is not the upstream's fault, docs/domain.md §3.9).
//! Degraded outcomes (a fallback below the breaker returned a value) are successes. Put a
//! breaker *below* local gates, or add `"rejected:gate_full"` to `ignore_exceptions`, to
//! keep local congestion from opening it; `stormglass validate` and `run` warn about a
//! breaker that counts such refusals (`ScenarioSpec::breaker_warnings`).
//!
//! Architecture invariant: a breaker never schedules anything. It reports its only timer
//! (the automatic OPEN → HALF_OPEN transition, the maximum wait in HALF_OPEN) through
//! `wake_at`, every state change through `take_events` (`state_change`, `CLOSED` → `OPEN`),
//! and every call it admitted is tracked (start time, probe permit) in a bounded map
//! until exactly one of `on_outcome` or `on_abandon` returns it.
//!
//! API boundary: the call site drives breakers through [`crate::governor::Governor`]; the
//! world reads [`BreakerState`] and the counters for gauges, and changes thresholds at run
//! time through the setters (window state is kept).

pub mod params;
mod priority_wait;
pub mod r4j;
pub mod r4j_spec;
mod r4j_window;
pub mod sentinel_degrade;

#[cfg(test)]
mod invariant_tests;
#[cfg(test)]
mod r4j_edge_tests;
#[cfg(test)]
mod r4j_tests;
#[cfg(test)]
mod script;
#[cfg(test)]
mod sentinel_tests;

pub use r4j::{BreakerCounters, CircuitBreaker};
pub use r4j_spec::{
    CircuitBreakerSpec, HalfOpenWaitSpec, SlidingWindowType, StateAfterMaxWait, open_wait,
};
pub use r4j_window::{Snapshot, Verdict};
pub use sentinel_degrade::{
    CircuitBreakerStrategy, DegradeBreaker, DegradeCounters, DegradeRuleSpec,
};

use crate::governor::GovEvent;
use crate::outcome::{Outcome, Reason};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sim_core::SimTime;

/// Upper bound on calls a breaker tracks between `on_call` and `on_outcome` (start time and
/// probe permit). Exceeding it is a bug in the world (an outcome never delivered).
pub const MAX_IN_FLIGHT: usize = 1 << 24;
/// Upper bound on the entries of `record_exceptions` / `ignore_exceptions`.
pub const MAX_PATTERNS: usize = 64;

/// The state of a breaker, with the libraries' names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum BreakerState {
    #[serde(rename = "CLOSED")]
    Closed,
    #[serde(rename = "OPEN")]
    Open,
    #[serde(rename = "HALF_OPEN")]
    HalfOpen,
    /// Resilience4j's FORCED_OPEN: switched off by configuration, every call rejected,
    /// nothing recorded, until switched back on (→ CLOSED).
    #[serde(rename = "FORCED_OPEN")]
    ForcedOpen,
    /// Resilience4j's DISABLED (`transitionToDisabledState`): every call permitted, nothing
    /// recorded, no transition, until switched back (→ CLOSED).
    #[serde(rename = "DISABLED")]
    Disabled,
    /// Resilience4j's METRICS_ONLY (`transitionToMetricsOnlyState`): every call permitted,
    /// results recorded in the window, but the thresholds never open it.
    #[serde(rename = "METRICS_ONLY")]
    MetricsOnly,
}

impl BreakerState {
    /// `CLOSED`, `OPEN` or `HALF_OPEN` (event `from`/`to` values).
    pub fn name(self) -> &'static str {
        match self {
            BreakerState::Closed => "CLOSED",
            BreakerState::Open => "OPEN",
            BreakerState::HalfOpen => "HALF_OPEN",
            BreakerState::ForcedOpen => "FORCED_OPEN",
            BreakerState::Disabled => "DISABLED",
            BreakerState::MetricsOnly => "METRICS_ONLY",
        }
    }
    /// Gauge value: 0 closed, 1 open, 2 half-open, 3 forced open, 4 disabled, 5 metrics only.
    pub fn gauge(self) -> u64 {
        match self {
            BreakerState::Closed => 0,
            BreakerState::Open => 1,
            BreakerState::HalfOpen => 2,
            BreakerState::ForcedOpen => 3,
            BreakerState::Disabled => 4,
            BreakerState::MetricsOnly => 5,
        }
    }
}

pub(crate) fn state_event(time: SimTime, from: BreakerState, to: BreakerState) -> GovEvent {
    GovEvent {
        time,
        kind: "state_change",
        from: from.name().into(),
        to: to.name().into(),
        closed: Some(to == BreakerState::Closed),
    }
}

/// Which outcome kind a pattern matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomeKind {
    Degraded,
    Failed,
    Rejected,
}

/// `"<kind>"` or `"<kind>:<reason>"`: matches outcomes of that kind (with that reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutcomePattern {
    pub kind: OutcomeKind,
    pub reason: Option<Reason>,
}

impl OutcomePattern {
    pub const fn new(kind: OutcomeKind, reason: Option<Reason>) -> Self {
        OutcomePattern { kind, reason }
    }

    pub fn matches(&self, o: Outcome) -> bool {
        let (kind, reason) = match o {
            Outcome::Success => return false,
            Outcome::Degraded(r) => (OutcomeKind::Degraded, r),
            Outcome::Failed(r) => (OutcomeKind::Failed, r),
            Outcome::Rejected(r) => (OutcomeKind::Rejected, r),
        };
        kind == self.kind && self.reason.is_none_or(|want| want == reason)
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let (k, r) = match text.split_once(':') {
            Some((k, r)) => (k, Some(r)),
            None => (text, None),
        };
        let kind = match k {
            "degraded" => OutcomeKind::Degraded,
            "failed" => OutcomeKind::Failed,
            "rejected" => OutcomeKind::Rejected,
            _ => {
                return Err(format!(
                    "outcome pattern \"{text}\": expected \"degraded\", \"failed\" or \
                     \"rejected\", optionally followed by \":<reason>\""
                ));
            }
        };
        let reason = match r {
            None => None,
            Some(r) => {
                Some(Reason::ALL.iter().copied().find(|x| x.name() == r).ok_or_else(|| {
                    let names: Vec<_> = Reason::ALL.iter().map(|x| x.name()).collect();
                    format!(
                        "outcome pattern \"{text}\": unknown reason \"{r}\"; expected one of {}",
                        names.join(", ")
                    )
                })?)
            }
        };
        Ok(OutcomePattern { kind, reason })
    }

    pub fn text(&self) -> String {
        let k = match self.kind {
            OutcomeKind::Degraded => "degraded",
            OutcomeKind::Failed => "failed",
            OutcomeKind::Rejected => "rejected",
        };
        match self.reason {
            None => k.to_string(),
            Some(r) => format!("{k}:{}", r.name()),
        }
    }
}

impl Serialize for OutcomePattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for OutcomePattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        OutcomePattern::parse(&s).map_err(D::Error::custom)
    }
}

/// A list of at most [`MAX_PATTERNS`] outcome patterns.
pub(crate) fn patterns<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<OutcomePattern>, D::Error> {
    let v = Vec::<OutcomePattern>::deserialize(d)?;
    if v.len() > MAX_PATTERNS {
        return Err(D::Error::custom(format!(
            "expected at most {MAX_PATTERNS} outcome patterns, found {}",
            v.len()
        )));
    }
    Ok(v)
}

/// Default `record_exceptions`: every failed or rejected outcome.
pub fn default_record_exceptions() -> Vec<OutcomePattern> {
    vec![
        OutcomePattern::new(OutcomeKind::Failed, None),
        OutcomePattern::new(OutcomeKind::Rejected, None),
    ]
}

/// Default `ignore_exceptions`: business errors.
pub fn default_ignore_exceptions() -> Vec<OutcomePattern> {
    vec![OutcomePattern::new(OutcomeKind::Failed, Some(Reason::BusinessError))]
}

/// What a breaker makes of an outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Classified {
    Success,
    Failure,
    /// Not recorded at all (a half-open permit is given back).
    Ignored,
}

/// Resilience4j's precedence: ignore, then record, else success.
pub fn classify(record: &[OutcomePattern], ignore: &[OutcomePattern], o: Outcome) -> Classified {
    if ignore.iter().any(|p| p.matches(o)) {
        Classified::Ignored
    } else if record.iter().any(|p| p.matches(o)) {
        Classified::Failure
    } else {
        Classified::Success
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_match_and_classify() {
        let p = OutcomePattern::parse("rejected:gate_full").unwrap();
        assert!(p.matches(Outcome::Rejected(Reason::GateFull)));
        assert!(!p.matches(Outcome::Rejected(Reason::Upstream429)));
        assert!(!p.matches(Outcome::Failed(Reason::GateFull)));
        assert_eq!(p.text(), "rejected:gate_full");
        assert!(OutcomePattern::parse("failed:nope").unwrap_err().contains("unknown reason"));
        assert!(OutcomePattern::parse("success").is_err());
        let (rec, ign) = (default_record_exceptions(), default_ignore_exceptions());
        let table = [
            (Outcome::Success, Classified::Success),
            (Outcome::Degraded(Reason::Timeout), Classified::Success),
            (Outcome::Failed(Reason::Upstream5xx), Classified::Failure),
            (Outcome::Failed(Reason::Timeout), Classified::Failure),
            // A stream closed by the read timeout counts toward the breaker (docs/domain.md §3.8).
            (Outcome::Failed(Reason::StreamInterrupted), Classified::Failure),
            (Outcome::Rejected(Reason::Upstream429), Classified::Failure),
            (Outcome::Rejected(Reason::GateFull), Classified::Failure),
            (Outcome::Failed(Reason::BusinessError), Classified::Ignored),
        ];
        for (o, want) in table {
            assert_eq!(classify(&rec, &ign, o), want, "{o:?}");
        }
        // Ignore wins over record.
        let ign2 = [OutcomePattern::parse("failed").unwrap()];
        assert_eq!(classify(&rec, &ign2, Outcome::Failed(Reason::Timeout)), Classified::Ignored);
    }

    #[test]
    fn patterns_round_trip_through_ron() {
        let v: Vec<OutcomePattern> =
            ron::from_str(r#"["failed", "rejected:upstream_429"]"#).unwrap();
        assert_eq!(ron::to_string(&v).unwrap(), r#"["failed","rejected:upstream_429"]"#);
    }
}
