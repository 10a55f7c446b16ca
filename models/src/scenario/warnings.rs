//! Warnings about a scenario that is valid but likely not what its author meant. Unlike
//! errors they never refuse a file; `stormglass validate` and `stormglass run` print them.
//!
//! * A breaker that counts a local governor's refusals as failures: by default a breaker
//!   records every `failed` and `rejected` outcome that climbs back through it
//!   (Resilience4j's `recordExceptions` default: every exception), so a gate or limiter
//!   *after* it in a call site's `governors` (closer to the upstream) that refuses calls
//!   under local congestion opens the breaker although the upstream is healthy (a user's
//!   scenario: 41 openings in 10 minutes). The fix is either order (the breaker after the
//!   gate) or Resilience4j's `ignoreExceptions`: `ignore_exceptions: ["rejected:gate_full"]`.
//!
//! Architecture invariant: a function of the scenario's declarations only (no run, no
//! registry). The kinds say what they refuse and what they count
//! ([`crate::params::GovernorSpec::local_refusals`], `records_failure`): no per-kind code here.

use super::ScenarioSpec;
use crate::outcome::{Outcome, Reason};

impl<V> ScenarioSpec<V> {
    /// One line per breaker × governor after it in a call site's stack whose local
    /// refusals the breaker records as failures.
    pub fn breaker_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (k, site) in self.call_sites.iter().enumerate() {
            for (i, above) in site.governors.iter().enumerate() {
                for below in &site.governors[i + 1..] {
                    let counted: Vec<Reason> = self
                        .governor_local_refusals(below)
                        .into_iter()
                        .filter(|&r| {
                            self.governor_records_failure(above, Outcome::Rejected(r)) == Some(true)
                        })
                        .collect();
                    if counted.is_empty() {
                        continue;
                    }
                    let patterns: Vec<String> =
                        counted.iter().map(|r| format!("\"rejected:{}\"", r.name())).collect();
                    out.push(format!(
                        "warning: call_sites[{k}] (\"{}\"): {} counts the refusals of {} below it ({}) as failures: local congestion can open it while the upstream is healthy; put {} after {} in `governors`, or add {} to its `ignore_exceptions`",
                        site.name,
                        above.path(),
                        below.path(),
                        patterns.join(", "),
                        above.path(),
                        below.path(),
                        patterns.join(", "),
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    /// A breaker before a gate counts `gate_full` (the default `record_exceptions`); after
    /// the gate, or ignoring `rejected:gate_full`, it does not.
    #[test]
    fn a_breaker_above_a_gate_is_warned_about_unless_it_ignores_the_refusals() {
        let sc = |stack: &str, ignore: &str| -> crate::Scenario {
            let text = format!(
                r#"Scenario(name: "w",
                    sources: [(name: "s", interarrival: Exponential(mean: "10ms"), target: "site")],
                    gates: [(name: "g", permits: 4)],
                    circuit_breakers: [(name: "b"{ignore})],
                    call_sites: [(name: "site", governors: [{stack}], upstream: "st")],
                    stations: [(name: "st", servers: 8, service: Constant("50ms"))],
                )"#
            );
            ron::from_str::<crate::Scenario>(&text).unwrap()
        };
        let above = sc(r#"CircuitBreaker("b"), Gate("g")"#, "").breaker_warnings();
        assert_eq!(above.len(), 1, "{above:?}");
        assert!(
            above[0].contains("circuit_breaker.b counts the refusals of gate.g"),
            "{}",
            above[0]
        );
        assert!(above[0].contains("\"rejected:gate_full\""), "{}", above[0]);
        assert!(sc(r#"Gate("g"), CircuitBreaker("b")"#, "").breaker_warnings().is_empty());
        let ignoring = r#", ignore_exceptions: ["rejected:gate_full"]"#;
        assert!(sc(r#"CircuitBreaker("b"), Gate("g")"#, ignoring).breaker_warnings().is_empty());
    }
}
