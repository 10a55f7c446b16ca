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
//!
//! ## A world in twenty lines
//!
//! A model implements [`World`] (a closed event enum and its handlers) and talks to the
//! engine only through [`Ctx`]: the time, scheduling, metrics. Here one server takes a job
//! every 300 ms and serves it in 500 ms, so jobs queue:
//!
//! ```
//! use sim_core::{Ctx, Event, Limits, Phase, SimDuration, SimTime, Simulation, World};
//!
//! #[derive(Clone, Copy)]
//! enum Ev { Arrive, Done }
//! impl Event for Ev {
//!     fn kind_id(&self) -> u16 { match self { Ev::Arrive => 1, Ev::Done => 2 } }
//!     fn entity_id(&self) -> u64 { 0 }
//!     fn phase(&self) -> Phase { match self { Ev::Arrive => Phase::Arrival, Ev::Done => Phase::Completion } }
//! }
//!
//! /// One server, a FIFO queue (its length), jobs served so far.
//! struct Shop { busy: bool, queued: u64, served: u64 }
//! impl World for Shop {
//!     type Event = Ev;
//!     type Change = ();
//!     fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
//!         let service = SimDuration::from_ms(500);
//!         match ev {
//!             Ev::Arrive => {
//!                 ctx.schedule_in(SimDuration::from_ms(300), Ev::Arrive);
//!                 if self.busy { self.queued += 1 } else { self.busy = true; ctx.schedule_in(service, Ev::Done) }
//!             }
//!             Ev::Done => {
//!                 self.served += 1;
//!                 if self.queued > 0 { self.queued -= 1; ctx.schedule_in(service, Ev::Done) } else { self.busy = false }
//!             }
//!         }
//!     }
//!     fn apply_change(&mut self, _: (), _: &mut Ctx<'_, Ev>) {}
//!     fn live_entities(&self) -> u64 { self.queued + self.busy as u64 }
//!     fn component_of(&self, _: &Ev) -> String { "shop".into() }
//! }
//!
//! let mut sim = Simulation::new(Limits::default(), None, |ctx| {
//!     ctx.schedule_at(SimTime::ZERO, Ev::Arrive);
//!     Shop { busy: false, queued: 0, served: 0 }
//! });
//! sim.run_until(SimTime::ZERO + SimDuration::from_secs(3)).unwrap();
//! // Arrivals at 0, 0.3, …, 3.0 s: 11 jobs; 500 ms each: 6 served by 3 s (at 0.5, 1.0, …, 3.0).
//! let shop = sim.world();
//! assert_eq!((shop.served, shop.busy, shop.queued), (6, true, 4));
//! // The same world and the same events give the same fingerprint, run after run.
//! let mut again = Simulation::new(Limits::default(), None, |ctx| {
//!     ctx.schedule_at(SimTime::ZERO, Ev::Arrive);
//!     Shop { busy: false, queued: 0, served: 0 }
//! });
//! again.run_until(SimTime::ZERO + SimDuration::from_secs(3)).unwrap();
//! assert_eq!(sim.fingerprint(), again.fingerprint());
//! ```

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
