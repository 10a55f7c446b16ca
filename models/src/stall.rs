//! Correlated stalls: a host that stops (a JVM's stop-the-world pause) or runs slowly (a
//! CPU-starved host) for a while, delaying every thread, timer and in-flight call it has at
//! once — the correlation that independent per-call network and service draws cannot give.
//!
//! A stall names its host: every instance of an app (`App("api")`, each instance its own
//! process and its own pauses) or the client side of a call site (`CallSite("llm")`: every
//! call through that site, whatever its request's app). While a host is paused
//! (`world/stalls.rs`):
//! - local work on its threads stops: a request's local work that overlaps the pause ends
//!   later by exactly the overlap (work started before the pause resumes at its end);
//! - its timers (a call's timeout, a parked call's deadline, a retry's back-off, a
//!   connection's readiness or deadline, a request's budget, the dispatcher's and pool's
//!   wake-ups, queue-wait expiries) fire no earlier than the pause's end: one due during the
//!   pause fires at its end;
//! - answers that reach it during the pause are handled at its end, in the order they came
//!   (before the timers due in the pause: the engine's phase order at one instant,
//!   completions before timeouts — as for a call answered exactly at its deadline);
//! - requests that reach a paused app instance wait in its accept backlog (full: refused
//!   `queue_full`, as a kernel's listen backlog overflows) and are taken at the pause's
//!   end; calls a paused call site's client would send wait and are sent at its end, in
//!   order.
//!
//! The upstreams keep working: a station serves what it has and answers on time; only the
//! client handles the answer late. Not held: a governor's own timers (its state is
//! cluster-wide or the world's), a call woken by another call's release (a governor's
//! permit, a pooled connection: handed over at once, the call goes on) and a GPU server's
//! answers (they reach the client at once).
//!
//! CPU starvation: `slowdown` = f > 1 makes the host's local work run f times slower from
//! the change on (work in progress stretches its remaining part; 1 = none); timers and
//! answers are not delayed by it.
//!
//! Two sources of pauses, both on every host of the stall: the random process (`rate`
//! pauses per second, a Poisson process per host — the next pause starts an exponential gap
//! after the last one ended — each `length` long, both drawn from the host's own stream
//! `stall/<name>/<instance>`: no keyed attribute is used, so a stall moves no other random
//! number), and the timeline (`stall.<name>.pause`: a change starts one pause of its value's
//! length at its instant; the scenario's value, a pause at the run's start). A pause that
//! starts during another extends it to the later end.
//!
//! Architecture invariant (I50): a held event is due at its host's pause end, and every
//! local work a stall tracks is a request of that host in its local work (checked by
//! `QueueingWorld::check_invariants`).
//!
//! API boundary: scenario types ([`StallSpec`], [`StallHost`]) and the setters the world
//! implements ([`StallSetters`]); the run-time side is `world/stalls.rs`.

use crate::validate;
use serde::{Deserialize, Serialize};
use sim_core::{Dist, SimDuration, SimTime};

/// The host a stall pauses.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum StallHost {
    /// Every instance of this app, each on its own.
    App(String),
    /// The client side of this call site: every call through it.
    CallSite(String),
}

/// A host's correlated stalls, as written in scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Stall")]
pub struct StallSpec {
    #[serde(deserialize_with = "validate::name")]
    pub name: String,
    pub host: StallHost,
    /// GC-like stop-the-world pauses per second on each host (Poisson); 0 = none.
    #[serde(default, deserialize_with = "R::rate")]
    pub rate: f64,
    /// A random pause's length.
    #[serde(default = "D::length")]
    pub length: Dist<SimDuration>,
    /// A pause of this length at the run's start (on the timeline: at the change's instant).
    #[serde(default, deserialize_with = "R::pause")]
    pub pause: SimDuration,
    /// CPU starvation: local work runs this many times slower (1 = none).
    #[serde(default = "D::slowdown", deserialize_with = "R::slowdown")]
    pub slowdown: f64,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<StallSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<StallSpec>;

/// The longest pause one change or draw may start (an hour: a run-length outage is a
/// station's `error_rate`, not a stall).
pub const MAX_PAUSE: SimDuration = SimDuration::from_secs(3600);

/// The most hosts the stalls of one scenario may pause (each app instance and call site
/// is one; host ids are 16-bit in events).
pub const MAX_HOSTS: u64 = 4096;

/// A stall's run-time side, as its parameter rows see it: the world implements it for the
/// stall's hosts (every instance of an app), so a change reschedules and stretches there.
pub trait StallSetters {
    /// `rate`: the pending random pause of each host is redrawn with the new rate (a
    /// Poisson process is memoryless: the redraw is exact).
    fn set_rate(&mut self, rate: f64);
    /// `length`: random pauses started from now on.
    fn set_length(&mut self, d: Dist<SimDuration>);
    /// `pause`: a pause of `d` starts now on every host (zero: none).
    fn pause_now(&mut self, d: SimDuration, now: SimTime);
    /// `slowdown`: local work in progress and started from now runs `f` times slower.
    fn set_slowdown(&mut self, f: f64, now: SimTime);
}

crate::params::declare_params! {
    StallSpec: "stall", name = |s| s.name,
        scenario_only = [host: "a reference to an app or a call site"],
        state = dyn StallSetters + '_;
    rate: Float { min: 0.0, max: 1e6 }, "pauses/s", runtime(apply = |s, x| s.set_rate(x)),
        "GC-like stop-the-world pauses per second on each host (Poisson; 0 = none)",
        default = 0.0;
    length: DurationDist, "ns", runtime(apply = |s, d| s.set_length(d)),
        "length of a random pause (pauses started after a change)",
        default = Dist::constant(SimDuration::ZERO);
    pause: Duration { min: SimDuration::ZERO, max: MAX_PAUSE }, "ns",
        runtime(apply = |s, d, now| s.pause_now(d, now)),
        "a pause of this length on every host, at the run's start or a timeline change's instant (0s = none)",
        default = SimDuration::ZERO;
    slowdown: Float { min: 1.0, max: 1000.0 }, "×", runtime(apply = |s, x, now| s.set_slowdown(x, now)),
        "CPU starvation: the host's local work runs this many times slower (1 = none)",
        default = 1.0;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;

    /// Every field but the host reference is a parameter, and the defaults are no stall.
    #[test]
    fn rows_and_defaults() {
        let names: Vec<&str> = StallSpec::decls().iter().map(|d| d.name).collect();
        assert_eq!(names, ["rate", "length", "pause", "slowdown"]);
        assert_eq!((D::rate(), D::pause(), D::slowdown()), (0.0, SimDuration::ZERO, 1.0));
    }
}
