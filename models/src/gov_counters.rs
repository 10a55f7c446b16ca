//! Governor counters for the run summary: `<kind>.<name>.<counter>` columns (a shadow copy's
//! under `shadow.<kind>.<name>.<counter>`).
//!
//! Key design decision: one generic hook, [`GovernorKind::summary_counters`], read by the
//! world's summary for every governor in the arena; the names are stable result columns
//! (users build dashboards on them): never rename one, only add.
//!
//! Architecture invariant: counters are read, never reset, and only of the run-wide totals
//! (warm-up included: a governor's state does not restart at the end of the warm-up).
//! Gates, flow rules, hot-parameter rules, token buckets and batchers report nothing here
//! (their gauges are time series), so summaries of scenarios built only of them are
//! unchanged.
//!
//! API boundary: reads the governors' public counters; knows nothing of the world.

use crate::callsite::GovernorKind;

impl GovernorKind {
    /// The governor's counters worth a summary column, in a stable order.
    pub fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        match self {
            GovernorKind::CircuitBreaker(b) => vec![
                ("state_changes", b.counters.state_changes),
                ("not_permitted", b.counters.not_permitted),
            ],
            GovernorKind::DegradeRule(b) => {
                vec![("state_changes", b.counters.state_changes), ("blocked", b.counters.blocked)]
            }
            GovernorKind::Retry(r) => vec![
                ("retries", r.retries),
                ("retries_denied_by_budget", r.retries_denied_by_budget),
                ("exhausted", r.exhausted),
            ],
            GovernorKind::SingleFlight(f) => {
                vec![("followers", f.followers), ("shared", f.shared)]
            }
            GovernorKind::Cache(c) => vec![("hits", c.hits), ("misses", c.misses)],
            GovernorKind::TimeLimiter(t) => vec![("timeouts", t.counters.timeouts)],
            GovernorKind::ClusterFlow(c) => {
                let k = c.counters;
                vec![
                    ("token_ok", k.token_ok),
                    ("token_blocked", k.token_blocked),
                    ("too_many", k.too_many),
                    ("timeouts", k.timeouts),
                    ("local_pass", k.local_pass),
                    ("local_block", k.local_block),
                    ("pass_through", k.pass_through),
                ]
            }
            GovernorKind::Shadow(s) => {
                let c = s.counters;
                let mut v = vec![
                    ("would_pass", c.would_pass),
                    ("would_reject", c.would_reject),
                    ("would_wait", c.would_wait),
                    ("would_serve_locally", c.would_serve_locally),
                    ("would_change_outcome", c.would_change_outcome),
                ];
                // A shadow flow rule or token bucket: its own would-verdicts say it all.
                v.extend(s.inner().summary_counters());
                v
            }
            GovernorKind::Gate(_)
            | GovernorKind::FlowRules(_)
            | GovernorKind::ParamFlow(_)
            | GovernorKind::TokenBucket(_)
            | GovernorKind::Batcher(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breaker::{CircuitBreaker, CircuitBreakerSpec};
    use crate::governor::{CallInfo, Governor};
    use crate::outcome::Outcome;
    use crate::shadow::Shadow;
    use sim_core::SimTime;

    fn breaker() -> GovernorKind {
        let spec: CircuitBreakerSpec = ron::from_str(
            "(name: \"b\", sliding_window_size: 2, minimum_number_of_calls: 2, \
             wait_duration_in_open_state: \"10s\")",
        )
        .unwrap();
        GovernorKind::CircuitBreaker(CircuitBreaker::new(&spec))
    }

    /// Two failures open a window-2 breaker (rate 100% ≥ 50%); the third call is refused.
    #[test]
    fn breaker_and_shadow_counters_are_named_and_counted() {
        let t = SimTime(0);
        for shadowed in [false, true] {
            let mut g = breaker();
            if shadowed {
                g = GovernorKind::Shadow(Shadow::new(g));
            }
            for i in 1..=2 {
                let c = CallInfo::simple(i, 0);
                g.on_call(&c, t);
                g.on_outcome(&c, Outcome::Failed(crate::Reason::Upstream5xx), t);
            }
            g.on_call(&CallInfo::simple(3, 0), t);
            let got = g.summary_counters();
            // CLOSED → OPEN: 1 state change; call 3 not permitted.
            let want_breaker = [("state_changes", 1), ("not_permitted", 1)];
            if shadowed {
                let want = [
                    ("would_pass", 2),
                    ("would_reject", 1),
                    ("would_wait", 0),
                    ("would_serve_locally", 0),
                    ("would_change_outcome", 0),
                ];
                assert_eq!(got[..5], want);
                assert_eq!(got[5..], want_breaker);
            } else {
                assert_eq!(got, want_breaker);
            }
        }
    }
}
