//! The closed outcome of every request and call.
//!
//! Architecture invariant: every request and every call ends exactly once with one
//! [`Outcome`]; conservation (offered = succeeded + degraded + failed + rejected + in flight)
//! is checked after every test run. Reasons have stable snake_case names used in result
//! columns (`rejected_queue_full`), so adding a reason never renames another.

use std::fmt;

/// Why a call did not simply succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// A deadline passed (queue wait, permit acquire, read, total).
    Timeout,
    /// A bounded queue was full.
    QueueFull,
    /// A concurrency gate (semaphore) had no permit in time.
    GateFull,
    /// A worker pool refused the task (Abort policy).
    PoolFull,
    /// A rate limiter refused the call.
    RateLimited,
    /// A circuit breaker was open (or half-open without a probe permit).
    BreakerOpen,
    /// The upstream answered 429 (quota).
    Upstream429,
    /// The upstream answered 5xx.
    Upstream5xx,
    /// The connection could not be made or was dead.
    ConnectError,
    /// A business error (bad prompt): not the upstream's fault, never retried.
    BusinessError,
    /// A streaming response stalled and was closed.
    StreamInterrupted,
    /// Work deliberately shed (a "system busy" answer, a deferred P2 task).
    Shed,
}

impl Reason {
    /// Every reason, in column order.
    pub const ALL: [Reason; 12] = [
        Reason::Timeout,
        Reason::QueueFull,
        Reason::GateFull,
        Reason::PoolFull,
        Reason::RateLimited,
        Reason::BreakerOpen,
        Reason::Upstream429,
        Reason::Upstream5xx,
        Reason::ConnectError,
        Reason::BusinessError,
        Reason::StreamInterrupted,
        Reason::Shed,
    ];

    /// Every reason's stable name, in column order (a constant: parameter choices name it).
    pub const NAMES: [&'static str; 12] = {
        let mut names = [""; 12];
        let mut i = 0;
        while i < names.len() {
            names[i] = Reason::ALL[i].name();
            i += 1;
        }
        names
    };

    /// The stable name used in result columns and events.
    pub const fn name(self) -> &'static str {
        match self {
            Reason::Timeout => "timeout",
            Reason::QueueFull => "queue_full",
            Reason::GateFull => "gate_full",
            Reason::PoolFull => "pool_full",
            Reason::RateLimited => "rate_limited",
            Reason::BreakerOpen => "breaker_open",
            Reason::Upstream429 => "upstream_429",
            Reason::Upstream5xx => "upstream_5xx",
            Reason::ConnectError => "connect_error",
            Reason::BusinessError => "business_error",
            Reason::StreamInterrupted => "stream_interrupted",
            Reason::Shed => "shed",
        }
    }

    pub fn index(self) -> usize {
        Reason::ALL.iter().position(|r| *r == self).expect("listed")
    }
}

impl Reason {
    /// The reason with this stable name, if any.
    pub fn from_name(name: &str) -> Option<Reason> {
        Reason::ALL.iter().copied().find(|r| r.name() == name)
    }
}

/// Serde for a list of reasons written by their stable names (`["timeout",
/// "breaker_open"]`): unknown names are errors listing the known ones; duplicates are
/// dropped (first kept). Callers add their own rules with [`reason_names::parse`].
pub mod reason_names {
    use super::Reason;
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Reason], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|r| r.name()))
    }

    /// Reads the names, refusing any for which `refuse` returns a message.
    pub fn parse<'de, D: Deserializer<'de>>(
        d: D,
        refuse: impl Fn(Reason, &str) -> Option<String>,
    ) -> Result<Vec<Reason>, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        let mut out = Vec::with_capacity(names.len());
        for n in names {
            let Some(r) = Reason::from_name(&n) else {
                let all: Vec<&str> = Reason::ALL.iter().map(|r| r.name()).collect();
                return Err(D::Error::custom(format!(
                    "unknown reason \"{n}\"; known: {}",
                    all.join(", ")
                )));
            };
            if let Some(m) = refuse(r, &n) {
                return Err(D::Error::custom(m));
            }
            if !out.contains(&r) {
                out.push(r);
            }
        }
        Ok(out)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a request or call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Answered by the intended upstream.
    Success,
    /// Answered, but not as intended (cache, fallback model, trimmed context…).
    Degraded(Reason),
    /// Attempted and failed.
    Failed(Reason),
    /// Refused before reaching the upstream.
    Rejected(Reason),
}

impl Outcome {
    pub fn is_success(self) -> bool {
        matches!(self, Outcome::Success)
    }
    pub fn reason(self) -> Option<Reason> {
        match self {
            Outcome::Success => None,
            Outcome::Degraded(r) | Outcome::Failed(r) | Outcome::Rejected(r) => Some(r),
        }
    }
    /// `success`, `degraded`, `failed` or `rejected`.
    pub fn kind_name(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Degraded(_) => "degraded",
            Outcome::Failed(_) => "failed",
            Outcome::Rejected(_) => "rejected",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_names_are_unique_and_indexed() {
        let mut names: Vec<_> = Reason::ALL.iter().map(|r| r.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Reason::ALL.len());
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
    }
}
