//! # sim-core — the stormglass engine
//!
//! A deterministic discrete-event engine that knows nothing of AI services. Its one job is
//! to make every run exactly reproducible and fast:
//!
//! * [`time`] — integer-nanosecond instants and durations (no floating-point clock);
//! * [`calendar`] — an indexed heap ordered by `(time, phase, scheduling sequence)` with
//!   in-place cancellation, so the millions of timeouts armed and cancelled per run never
//!   accumulate;
//! * [`engine`] — the resumable run loop, run-time changes at instant boundaries, metric
//!   sampling at bucket boundaries, runaway guards;
//! * [`rng`] — named ChaCha streams and keyed per-request draws (common random numbers);
//! * [`dist`] — distributions sampled with portable `libm` arithmetic;
//! * [`rate`] — rates as written (`"150/s"`), turned into exact integer-ns mean gaps;
//! * [`metrics`] — counters, exact time-weighted gauges, latency histograms (≤ 1% error), time series;
//! * [`fingerprint`] — the 64-bit run fingerprint;
//! * [`stats`] — confidence intervals across replications.
//!
//! The key design decision: **randomness is keyed, not sequential**. A request's attributes
//! and luck are functions of `(seed, source, sequence, call path, attempt, attribute)`, so
//! two policies compared on the same seed meet identical traffic, event for event.

pub mod calendar;
pub mod dist;
pub mod engine;
pub mod fingerprint;
pub mod metrics;
pub mod rate;
pub mod rng;
pub mod stats;
pub mod time;

pub use calendar::{Phase, TimerHandle};
pub use dist::{Dist, DistSpec};
pub use engine::{Ctx, Event, Finished, Holdings, Limits, SimError, Simulation, Stop, World};
pub use fingerprint::Fingerprint;
pub use rate::Rate;
pub use time::{SimDuration, SimTime};
