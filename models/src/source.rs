//! An open-loop traffic source: a renewal process of arrivals.
//!
//! Inter-arrival times come from the source's own ChaCha stream (`arrivals/<name>`), so the
//! arrival times do not depend on anything else in the run. A [`Profile`] warps the gaps
//! through a time-varying rate multiplier (exactly, by inversion). The first arrival is at
//! `start`. Per-request attributes are
//! keyed by `(seed, source, sequence)`, never drawn from this stream.

use crate::attributes::{AssignSpec, KeySpec};
use crate::closed_loop::ClosedLoopSpec;
use crate::profile::Profile;
use crate::trace::TraceSpec;
use crate::validate;
use serde::{Deserialize, Serialize};
use sim_core::{Dist, SimDuration};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "Source")]
pub struct SourceSpec {
    #[serde(deserialize_with = "validate::name")]
    pub name: String,
    /// Inter-arrival time distribution (`Exponential` = Poisson arrivals). Exactly one of
    /// `interarrival` and `trace`.
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub interarrival: Option<Dist<SimDuration>>,
    /// Replay of a recorded trace (arrival times, prompt and output tokens).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub trace: Option<TraceSpec>,
    /// The call site its requests enter.
    pub target: String,
    /// First arrival at this time (default 0).
    #[serde(default)]
    pub start: SimDuration,
    /// Stop generating after this many requests (default: no limit). With a finite limit
    /// a zero gap is allowed: `interarrival: Constant("0s"), limit: Some(20000)` is a batch
    /// flood of 20,000 requests at `start`; `Constant("5ms")` spreads them.
    #[serde(default, deserialize_with = "R::limit")]
    pub limit: Option<u64>,
    /// The class of its requests (default: the scenario's first class).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub class: Option<String>,
    /// Time-varying load: a rate multiplier that warps the arrival process (diurnal cycles,
    /// surges, on/off), or the rate itself (points written `"1500/s"`, over the mean gap of
    /// `interarrival`: [`resolve_profile`]). `None`: constant.
    #[serde(default)]
    pub profile: Option<Profile>,
    /// The app (instances behind a balancer) its requests enter before their pipeline;
    /// `None`: the pipeline starts at arrival.
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub app: Option<String>,
    /// Closed-loop users instead of an arrival process (exclusive with `interarrival` and
    /// `trace`).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub closed_loop: Option<ClosedLoopSpec>,
    /// Total budget of each request from its arrival (`budget: "20s"`), overriding its
    /// pipeline's; default: the pipeline's (none for a call-site target). See
    /// [`crate::timeouts`].
    #[serde(
        default,
        deserialize_with = "crate::timeouts::budget",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub budget: Option<SimDuration>,
    /// Scripted calls instead of an arrival process (exclusive with `interarrival`,
    /// `trace` and `closed_loop`): `script: Script([Call(at: "1.5s", class: "P0", key: 42,
    /// user: 7), ...])`, one request per row at `start + at` with the row's class, user
    /// and key (`crate::scripted`).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub script: Option<crate::scripted::Script>,
    /// Prompt tokens per request (rounded; a trace's own column takes precedence).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_tokens: Option<Dist<f64>>,
    /// Output tokens per request (rounded; a trace's own column takes precedence).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_tokens: Option<Dist<f64>>,
    /// Conversation history tokens per request (rounded).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_tokens: Option<Dist<f64>>,
    /// How its prompts begin: shared segments (a class's system prompt, a key's document, a
    /// user's history) carved out of each prompt, for GPU servers with prefix caching
    /// ([`crate::prompt_prefix`]). Empty: every prompt is its request's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefix: Vec<crate::prompt_prefix::PrefixSegment>,
    /// Cache key popularity, e.g. `keys: Zipf(n: 10000, s: 1.1)` (key = rank, 1 = hottest).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub keys: Option<KeySpec>,
    /// Weight of every request of this source, overriding its class's (an urgent batch).
    #[serde(
        default,
        deserialize_with = "validate::opt_at_least_one",
        skip_serializing_if = "Option::is_none"
    )]
    pub weight: Option<u64>,
    /// Class, user and key of a trace's rows by rule (bands, shares, hashing).
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub assign: Option<AssignSpec>,
    /// Scales the arrival rate (renewal sources; composes with `profile`; run-time
    /// changeable, applied exactly to the pending arrival). In [0.001, 1000].
    #[serde(
        default = "D::rate_multiplier",
        deserialize_with = "R::rate_multiplier",
        skip_serializing_if = "is_one"
    )]
    pub rate_multiplier: f64,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<SourceSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<SourceSpec>;
fn is_one(x: &f64) -> bool {
    *x == 1.0
}

/// Most arrivals a renewal source may declare per simulated second: 10⁶, a mean gap of
/// 1 µs, at the source's peak (the gap's mean divided by `rate_multiplier` and by its
/// profile's highest multiplier). Above it a few simulated seconds hold billions of events,
/// hours of wall time (`Exponential(mean: "1ns")` for 10 s is 10¹⁰ arrivals): refused when
/// the file is checked rather than found out by the event budget. A batch flood (a zero gap
/// with a `limit`) is not a rate.
pub const MAX_ARRIVAL_RATE: f64 = 1e6;

/// The one rule for a renewal source's rate, wherever its gap, limit or rate multiplier is
/// set: the scenario's check (and so every resolved variant and sweep point) and the
/// timeline's. `peak` is the highest multiplier the gap meets ([`peak_multiplier`]). A gap
/// with a mean of zero is an infinite rate, allowed only with a `limit` (a batch flood of
/// `limit` requests at one instant); any other gap's rate at the peak is at most
/// [`MAX_ARRIVAL_RATE`].
pub fn check_rate(
    interarrival: Option<&Dist<SimDuration>>,
    limit: Option<u64>,
    peak: f64,
) -> Result<(), String> {
    let Some(mean_ns) = interarrival.and_then(|d| d.mean()) else { return Ok(()) };
    if mean_ns <= 0.0 {
        if limit.is_none() {
            return Err("expected a distribution with a mean > 0 (a zero inter-arrival time is an infinite rate; for a batch flood set a `limit`)".into());
        }
        return Ok(());
    }
    let rate = 1e9 / mean_ns * peak;
    if rate > MAX_ARRIVAL_RATE {
        return Err(format!(
            "an arrival rate of {rate:.3e} a simulated second (a mean gap of {} at a peak multiplier of {peak}: `rate_multiplier` × the profile's highest point) exceeds the limit of {MAX_ARRIVAL_RATE:.0} (`MAX_ARRIVAL_RATE`, docs/limits.md): expected a mean gap of at least {}; for a batch flood use a zero gap with a `limit`",
            SimDuration::from_ns(mean_ns.round() as u64),
            SimDuration::from_ns((1e9 / MAX_ARRIVAL_RATE * peak).ceil() as u64),
        ));
    }
    Ok(())
}

/// The multiplier profile a source runs: its profile, or one written in rates over the
/// mean gap of its declared interarrival ([`Profile::resolve`]).
pub fn resolve_profile(
    profile: &Profile,
    interarrival: Option<&Dist<SimDuration>>,
) -> Result<Profile, String> {
    if !profile.in_rates() {
        return Ok(profile.clone());
    }
    match interarrival.and_then(|d| d.mean()).filter(|m| *m > 0.0 && m.is_finite()) {
        Some(mean) => profile.resolve(mean),
        None => Err("a profile written in rates scales the source's `interarrival`, which needs a finite mean > 0".into()),
    }
}

/// The highest multiplier a renewal source's gap meets: `rate_multiplier` × its profile's
/// highest point (1 without a profile; a profile in rates resolved first, and one that does
/// not resolve counted as 1: its own check refuses it).
pub fn peak_multiplier(s: &SourceSpec) -> f64 {
    let resolved =
        s.profile.as_ref().and_then(|p| resolve_profile(p, s.interarrival.as_ref()).ok());
    let profile = resolved.map_or(1.0, |p| p.points().iter().map(|&(_, m)| m).fold(0.0, f64::max));
    s.rate_multiplier * profile
}

/// The error of a parameter this source does not have (a trace source has no
/// `interarrival`…).
fn absent(p: &str) -> String {
    format!("source has no parameter `{p}` (not this kind of source)")
}

/// A source's run-time side, as its parameter rows see it: the world's traffic subsystem
/// implements it with the engine at hand (a rate change reschedules the pending arrival,
/// added users start), so each run-time row names its setter here and the world hands a
/// `source.*` change over by kind only. The registry lists each row only for the sources
/// that have it (a renewal source's gap, a closed loop's users), so a setter meets only
/// its own kind of source.
pub trait SourceSetters {
    /// `interarrival`: from the next arrival on.
    fn set_interarrival(&mut self, d: Dist<SimDuration>);
    /// `rate_multiplier`: the pending arrival is rescaled exactly.
    fn set_rate_multiplier(&mut self, x: f64);
    /// `users`: more start at once, fewer stop after their current request.
    fn set_users(&mut self, n: u64);
    /// `think_time`: from the next think on (`Err`: not a closed-loop source).
    fn set_think_time(&mut self, d: Dist<SimDuration>) -> Result<(), String>;
}

crate::params::declare_params! {
    SourceSpec: "source", name = |s| s.name,
        scenario_only = [
            target: "a reference to a pipeline or call site",
            class: "a reference to a class",
            app: "a reference to an app",
            assign: "class assignment rules: a list valid as a whole",
            profile: "a rate curve valid only as a whole (see above); scale it with `rate_multiplier`",
            script: "scripted requests: a list valid as a whole",
            prefix: "prompt prefix segments: a list valid as a whole",
        ],
        state = dyn SourceSetters + '_;
    // Renewal sources only.
    interarrival: DurationDist, "ns", runtime(apply = |s, d| s.set_interarrival(d)),
        "time between arrivals (takes effect from the next arrival; renewal sources only)",
        opt_get = |s| s.interarrival.clone(), set = |s, d| s.interarrival = Some(d);
    start: Duration { min: SimDuration::ZERO, max: SimDuration::MAX }, "ns", fixed,
        "time of the first arrival";
    limit: OptCount { min: 1, max: u64::MAX }, "requests", fixed,
        "stop after this many requests (None = unlimited)";
    prompt_tokens: NumberDist, "tokens", fixed,
        "prompt tokens per request (rounded; a trace's own column takes precedence)",
        opt_get = |s| s.prompt_tokens.clone(), set = |s, d| s.prompt_tokens = Some(d);
    output_tokens: NumberDist, "tokens", fixed,
        "output tokens per request (rounded; a trace's own column takes precedence)",
        opt_get = |s| s.output_tokens.clone(), set = |s, d| s.output_tokens = Some(d);
    history_tokens: NumberDist, "tokens", fixed,
        "conversation history tokens per request (rounded)",
        opt_get = |s| s.history_tokens.clone(), set = |s, d| s.history_tokens = Some(d);
    // Sources with a key space only.
    keys_n: Count { min: 1, max: crate::attributes::MAX_KEYS }, "keys", fixed,
        "size of the Zipf key space (keys: Zipf(n, s))",
        opt_get = |s| s.keys.as_ref().map(|k| k.n()),
        set = |s, n| match s.keys.as_mut() {
            Some(k) => k.set_n(n),
            None => return Err(absent("keys_n")),
        },
        field = "keys.n";
    keys_s: Float { min: 0.0, max: 10.0 }, "", fixed,
        "Zipf exponent of key popularity (0 = uniform; higher = hotter head)",
        opt_get = |s| s.keys.as_ref().map(|k| k.s()),
        set = |s, x| match s.keys.as_mut() {
            Some(k) => k.set_s(x),
            None => return Err(absent("keys_s")),
        },
        field = "keys.s";
    weight: OptCount { min: 1, max: u64::MAX }, "", fixed,
        "weight of every request of this source, overriding its class's (None = the class's)";
    // Trace sources only.
    trace_rate_scale: Float { min: 1e-6, max: 1e6 }, "×", fixed,
        "replay speed of a trace source (2 = twice the recorded rate)",
        opt_get = |s| s.trace.as_ref().map(|t| t.rate_scale),
        set = |s, x| match s.trace.as_mut() {
            Some(t) => t.rate_scale = x,
            None => return Err(absent("trace_rate_scale")),
        },
        field = "trace.rate_scale";
    // Renewal sources only.
    rate_multiplier: Float { min: 1e-3, max: 1e3 }, "×",
        runtime(apply = |s, x| s.set_rate_multiplier(x)),
        "scales the arrival rate (renewal sources; composes with the profile; the pending arrival is rescaled exactly)",
        default = 1.0, opt_get = |s| s.interarrival.is_some().then_some(s.rate_multiplier);
    // Sources that declare a budget only.
    budget: Duration { min: SimDuration::from_ns(1), max: crate::timeouts::MAX_BUDGET }, "ns", fixed,
        "total budget of each request from its arrival (overrides its pipeline's)",
        opt_get = |s| s.budget, set = |s, d| s.budget = Some(d);
    // Closed-loop sources only.
    give_up: Duration { min: SimDuration::ZERO, max: SimDuration::MAX }, "ns", fixed,
        "a closed-loop user stops waiting after this long (0s = waits for ever)",
        opt_get = |s| s.closed_loop.as_ref().map(|c| c.give_up),
        set = |s, d| match s.closed_loop.as_mut() {
            Some(c) => c.give_up = d,
            None => return Err(absent("give_up")),
        },
        field = "closed_loop.give_up";
    users: Count { min: 1, max: crate::closed_loop::MAX_CLIENTS }, "users",
        runtime(apply = |s, n| s.set_users(n)),
        "closed-loop users (more start at once; fewer stop after their current request)",
        opt_get = |s| s.closed_loop.as_ref().map(|c| c.users),
        set = |s, n| match s.closed_loop.as_mut() {
            Some(c) => c.users = n,
            None => return Err(absent("users")),
        },
        field = "closed_loop.users";
    think_time: DurationDist, "ns", runtime(apply = |s, d| s.set_think_time(d)),
        "closed-loop think time (takes effect from the next think)",
        opt_get = |s| s.closed_loop.as_ref().map(|c| c.think_time.clone()),
        set = |s, d| match s.closed_loop.as_mut() {
            Some(c) => c.think_time = d,
            None => return Err(absent("think_time")),
        },
        field = "closed_loop.think_time";
}
