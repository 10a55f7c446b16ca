//! Single-flight (docs/domain.md §3.12): concurrent identical misses share one upstream call.
//!
//! Like Go's `singleflight.Group.Do`: per key (`CallInfo::key`; 0 = never shared), the
//! first call to arrive is the **leader** and passes; calls with the same key arriving
//! while the leader is out are **followers** and wait here. When the leader's outcome comes
//! back up, every follower is answered with that same outcome through
//! [`Governor::take_answered`] (so they never go upstream) and the flight ends; the next
//! call with that key starts a new flight. Errors are shared too (Go's behaviour) unless
//! `share_errors` is off: then a failed or rejected leader hands the flight to its oldest
//! follower (woken through [`Governor::take_woken`]; it resumes below this level as the
//! new leader) and the others keep waiting.
//!
//! If the leader is abandoned (cancelled: [`Governor::on_abandon`] with the leader's id),
//! the oldest follower is promoted the same way. A follower whose `max_wait` passes is
//! rejected with `timeout` by the call site (and forgotten here).
//!
//! Key design decision: a separate governor rather than an option of the cache, so that it
//! can sit under a cache (`[cache, single_flight, …]`: the cache answers hits, single-flight
//! collapses the misses) or alone, and each stays one small state machine.
//!
//! Architecture invariant: followers per key ≤ `max_followers_per_key`, all followers ≤
//! `max_waiting`, flights ≤ `max_keys`; `waiting()` equals the followers held. A call over
//! any cap passes as its own upstream call (counted in `overflow`), never rejected:
//! collapsing is an optimisation. Followers are answered and promoted oldest first.
//!
//! API boundary: [`SingleFlightSpec`] (serde), [`SingleFlight`] (`impl Governor`).

use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::{BTreeMap, VecDeque};

/// Configuration of a single-flight group, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "SingleFlight")]
pub struct SingleFlightSpec {
    /// Name; the parameters live under `single_flight.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// How long a follower waits for its leader; absent = until the leader answers.
    #[serde(
        default,
        deserialize_with = "crate::params::RangedSome::<SingleFlightSpec>::max_wait",
        serialize_with = "crate::validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_wait: Option<SimDuration>,
    #[serde(
        default = "D::max_followers_per_key",
        deserialize_with = "crate::params::Ranged::<SingleFlightSpec>::max_followers_per_key"
    )]
    pub max_followers_per_key: u64,
    /// Followers over all keys.
    #[serde(
        default = "D::max_waiting",
        deserialize_with = "crate::params::Ranged::<SingleFlightSpec>::max_waiting"
    )]
    pub max_waiting: u64,
    /// Keys with a flight in progress.
    #[serde(
        default = "D::max_keys",
        deserialize_with = "crate::params::Ranged::<SingleFlightSpec>::max_keys"
    )]
    pub max_keys: u64,
    /// Followers get the leader's failure too (Go's behaviour); off: a follower takes over.
    #[serde(default = "D::share_errors")]
    pub share_errors: bool,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<SingleFlightSpec>;

impl SingleFlightSpec {
    pub fn named(name: &str) -> Self {
        SingleFlightSpec {
            name: name.into(),
            max_wait: None,
            max_followers_per_key: D::max_followers_per_key(),
            max_waiting: D::max_waiting(),
            max_keys: D::max_keys(),
            share_errors: D::share_errors(),
        }
    }
}

#[derive(Clone, Debug)]
struct Flight {
    leader: CallId,
    followers: VecDeque<CallId>,
}

/// Run-time state of a single-flight group.
#[derive(Clone, Debug)]
pub struct SingleFlight {
    spec: SingleFlightSpec,
    flights: BTreeMap<u64, Flight>,
    waiting: usize,
    answered: Vec<(CallId, Outcome)>,
    woken: Vec<CallId>,
    /// Flights started (calls that went upstream as leaders, promotions excluded).
    pub leaders: u64,
    /// Calls that joined a flight as followers.
    pub followers: u64,
    /// Followers answered with their leader's outcome.
    pub shared: u64,
    pub promotions: u64,
    pub overflow: u64,
    pub abandoned_followers: u64,
}

impl SingleFlight {
    pub fn new(spec: &SingleFlightSpec) -> Self {
        assert!(spec.max_followers_per_key >= 1 && spec.max_waiting >= 1 && spec.max_keys >= 1);
        SingleFlight {
            spec: spec.clone(),
            flights: BTreeMap::new(),
            waiting: 0,
            answered: Vec::new(),
            woken: Vec::new(),
            leaders: 0,
            followers: 0,
            shared: 0,
            promotions: 0,
            overflow: 0,
            abandoned_followers: 0,
        }
    }

    pub fn set_share_errors(&mut self, on: bool) {
        self.spec.share_errors = on;
    }

    /// Flights in progress.
    pub fn flights(&self) -> usize {
        self.flights.len()
    }

    /// The oldest follower of `key` becomes its leader (or the flight ends).
    fn promote(&mut self, key: u64) {
        let f = self.flights.get_mut(&key).expect("flight exists");
        match f.followers.pop_front() {
            Some(next) => {
                f.leader = next;
                self.waiting -= 1;
                self.promotions += 1;
                self.woken.push(next);
            }
            None => {
                self.flights.remove(&key);
            }
        }
        self.check();
    }

    fn check(&self) {
        assert!(self.waiting as u64 <= self.spec.max_waiting);
        assert!(self.flights.len() as u64 <= self.spec.max_keys);
    }

    /// Followers held, counted flight by flight (O(flights); for tests and audits: must
    /// equal [`Governor::waiting`]).
    pub fn followers_held(&self) -> usize {
        self.flights.values().map(|f| f.followers.len()).sum()
    }
}

impl Governor for SingleFlight {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        if call.key == 0 {
            return CallDecision::Pass;
        }
        let room_for_key = (self.flights.len() as u64) < self.spec.max_keys;
        let decision = match self.flights.get_mut(&call.key) {
            None if room_for_key => {
                self.flights
                    .insert(call.key, Flight { leader: call.call, followers: VecDeque::new() });
                self.leaders += 1;
                CallDecision::Pass
            }
            Some(f)
                if (f.followers.len() as u64) < self.spec.max_followers_per_key
                    && (self.waiting as u64) < self.spec.max_waiting =>
            {
                f.followers.push_back(call.call);
                self.waiting += 1;
                self.followers += 1;
                CallDecision::Wait {
                    deadline: self.spec.max_wait.map(|d| now + d),
                    on_deadline: Reason::Timeout,
                }
            }
            _ => {
                self.overflow += 1;
                CallDecision::Pass
            }
        };
        self.check();
        decision
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, _now: SimTime) -> OutcomeDecision {
        let is_leader = self.flights.get(&call.key).is_some_and(|f| f.leader == call.call);
        if call.key != 0 && is_leader {
            let failed = matches!(outcome, Outcome::Failed(_) | Outcome::Rejected(_));
            if failed && !self.spec.share_errors {
                self.promote(call.key);
            } else {
                let f = self.flights.remove(&call.key).expect("leader's flight");
                self.waiting -= f.followers.len();
                self.shared += f.followers.len() as u64;
                self.answered.extend(f.followers.into_iter().map(|c| (c, outcome)));
            }
        }
        self.check();
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        let Some(f) = self.flights.get_mut(&call.key) else { return };
        if f.leader == call.call {
            self.promote(call.key);
        } else if let Some(pos) = f.followers.iter().position(|c| *c == call.call) {
            f.followers.remove(pos);
            self.waiting -= 1;
            self.abandoned_followers += 1;
        }
        self.check();
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }

    fn take_answered(&mut self, out: &mut Vec<(CallId, Outcome)>) {
        out.append(&mut self.answered);
    }

    fn waiting(&self) -> usize {
        self.waiting
    }
}

crate::params::declare_params! {
    SingleFlightSpec: "single_flight", name = |s| s.name, state = SingleFlight;
    share_errors: Bool, "", runtime(apply = |f, on| f.set_share_errors(on)),
        "followers get the leader's failure (off: a follower takes over)", default = true;
    max_waiting: Count { min: 1, max: 100_000_000 }, "calls", fixed,
        "followers waiting over all keys", default = 100_000;
    max_followers_per_key: Count { min: 1, max: 100_000_000 }, "calls", fixed,
        "followers waiting on one key's leader", default = 100_000;
    max_keys: Count { min: 1, max: 100_000_000 }, "keys", fixed,
        "keys with a flight in progress", default = 100_000;
    // Listed only where set (absent: a follower waits until its leader answers).
    max_wait: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        fixed, "how long a follower waits for its leader",
        opt_get = |s| s.max_wait, set = |s, d| s.max_wait = Some(d);
}

impl crate::params::GovernorSpec for SingleFlightSpec {}

impl crate::governor::GovernorKindOps for SingleFlight {
    type Spec = SingleFlightSpec;
    fn build(spec: &SingleFlightSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        SingleFlight::new(spec)
    }
    fn summary_counters(&self) -> Vec<(&'static str, u64)> {
        vec![("followers", self.followers), ("shared", self.shared)]
    }
}
