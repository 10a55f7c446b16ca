//! Closed-loop clients: N users, each sending a request, waiting for its answer, thinking,
//! and sending the next.
//!
//! A user may give up waiting (`give_up`): the request still runs to its end in the system
//! (it is counted there like any other, and ends exactly once), but the user moves on and
//! the source counts `gave_up`. After a failure, a rejection or a give-up, the user re-sends
//! with probability `retry.probability` after `retry.delay` (at most `retry.max` times in a
//! row; the re-sent request is a new turn); otherwise it thinks and sends its next turn.
//!
//! Key design decision: a closed-loop request's sequence number is `(user << 32) | turn`,
//! so its random numbers (tokens, key, service time, failure luck, think time, retry coin)
//! are keyed by `(user, turn)` and stay the same when a policy changes the timing.
//!
//! Architecture invariant: a user waits on at most one request and has at most one pending
//! send; users are at most [`MAX_CLIENTS`], turns per user below 2³².
//!
//! API boundary: [`ClosedLoopSpec`] is source data; [`Client`] is one user's state, and
//! [`after_wait`] is the pure decision taken when a wait ends.

use crate::validate;
use serde::{Deserialize, Serialize};
use sim_core::{Dist, SimDuration, TimerHandle};

/// Most closed-loop users of one source.
pub const MAX_CLIENTS: u64 = 1_000_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "ClosedLoop")]
pub struct ClosedLoopSpec {
    /// Number of users (run-time changeable: `source.<name>.users`).
    #[serde(deserialize_with = "validate::at_least_one")]
    pub users: u64,
    /// Time between an answer (or giving up) and the next request; each user also thinks
    /// once before its first request, so users start spread out.
    pub think_time: Dist<SimDuration>,
    /// A user stops waiting after this long (`"0s"`: waits for ever).
    #[serde(default)]
    pub give_up: SimDuration,
    /// Re-sending by the user after a failure or a give-up.
    #[serde(default)]
    pub retry: Option<UserRetry>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "UserRetry")]
pub struct UserRetry {
    #[serde(deserialize_with = "validate::probability")]
    pub probability: f64,
    pub delay: Dist<SimDuration>,
    /// Most re-sends in a row (default 3).
    #[serde(default = "three")]
    pub max: u32,
}

fn three() -> u32 {
    3
}

impl ClosedLoopSpec {
    pub fn check(&self) -> Result<(), (String, String)> {
        if self.users > MAX_CLIENTS {
            return Err(("users".into(), format!("expected at most {MAX_CLIENTS} users")));
        }
        if let Some(r) = &self.retry
            && r.max > 1000
        {
            return Err(("retry.max".into(), "expected at most 1000 re-sends in a row".into()));
        }
        Ok(())
    }
}

/// One closed-loop user's state.
#[derive(Clone, Debug, Default)]
pub struct Client {
    /// Turns sent so far (the next turn's number).
    pub turn: u32,
    /// The request it waits for (its id), if any.
    pub waiting: Option<u64>,
    /// Its give-up timer while waiting.
    pub give_up: Option<TimerHandle>,
    /// Re-sends in a row.
    pub retries: u32,
    /// A send event is pending.
    pub scheduled: bool,
}

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitEnd {
    Answered,
    Failed,
    GaveUp,
}

/// What the user does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextSend {
    /// Think, then send the next turn.
    Think,
    /// Re-send after the retry delay.
    Retry,
}

/// The decision when a wait ends: `coin` is the user's keyed uniform for this turn.
pub fn after_wait(end: WaitEnd, retry: Option<&UserRetry>, retries: u32, coin: f64) -> NextSend {
    match (end, retry) {
        (WaitEnd::Failed | WaitEnd::GaveUp, Some(r)) if retries < r.max && coin < r.probability => {
            NextSend::Retry
        }
        _ => NextSend::Think,
    }
}

/// The sequence number (random key) of a user's turn.
pub fn sequence(user: u32, turn: u32) -> u64 {
    ((user as u64) << 32) | turn as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_table() {
        let r = UserRetry { probability: 0.5, delay: Dist::constant(SimDuration::ZERO), max: 2 };
        let cases = [
            (WaitEnd::Answered, Some(&r), 0, 0.1, NextSend::Think),
            (WaitEnd::Failed, Some(&r), 0, 0.1, NextSend::Retry),
            (WaitEnd::Failed, Some(&r), 0, 0.6, NextSend::Think),
            (WaitEnd::GaveUp, Some(&r), 1, 0.1, NextSend::Retry),
            (WaitEnd::GaveUp, Some(&r), 2, 0.1, NextSend::Think), // max reached
            (WaitEnd::Failed, None, 0, 0.0, NextSend::Think),
        ];
        for (end, retry, n, coin, want) in cases {
            assert_eq!(after_wait(end, retry, n, coin), want, "{end:?} {n} {coin}");
        }
        assert_eq!(sequence(3, 7), 3 * (1 << 32) + 7);
    }

    #[test]
    fn parses() {
        let s: ClosedLoopSpec = ron::from_str(
            r#"ClosedLoop(users: 5, think_time: Constant("1s"), give_up: "10s",
                          retry: Some(UserRetry(probability: 0.5, delay: Constant("2s"))))"#,
        )
        .unwrap();
        assert_eq!(s.retry.as_ref().unwrap().max, 3);
        assert!(
            ron::from_str::<ClosedLoopSpec>(r#"ClosedLoop(users: 0, think_time: Constant("1s"))"#)
                .is_err()
        );
    }
}
