//! # models — the stormglass component library
//!
//! Components of AI-service traffic governance as plain state machines, and the world that
//! wires them from a scenario. This crate knows nothing of files, the CLI or the UI: it
//! defines the scenario types (serde, format-agnostic), the parameter registry, and runs.
//!
//! The key design decision: **the request path is data**. A call site is an ordered stack
//! of governors, each answering a pure decision on the way down ([`governor::CallDecision`])
//! and on the way up ([`governor::OutcomeDecision`]); the order is whatever the scenario
//! says, like a Resilience4j decorator chain or a Sentinel slot chain.
//!
//! Modules: one component per module, tests beside it; the code map with each module's
//! architecture invariant and API boundary is in `ARCHITECTURE.md`. Entry points:
//! [`scenario`] (the RON types), [`params`] (the registry), [`world`] (the running model),
//! [`run`] (one run → [`summary`] and records).
//!
//! ## A run from RON text
//!
//! A scenario is read with serde (here from RON text; `experiments` reads files), checked,
//! and run for one seed. A client sends every 100 ms to a provider that answers in 50 ms:
//! nothing ever waits, so every latency is exactly 50 ms.
//!
//! ```
//! use models::{RunConfig, Scenario};
//! use sim_core::SimDuration;
//!
//! let scenario: Scenario = ron::from_str(r#"Scenario(
//!     name: "steady",
//!     sources: [(name: "chat", interarrival: Constant("100ms"), target: "llm")],
//!     call_sites: [(name: "llm", upstream: "provider")],
//!     stations: [(name: "provider", servers: 1, service: Constant("50ms"))],
//! )"#).expect("valid RON");
//! scenario.check().expect("a consistent scenario");
//! let out = models::run(&scenario, &RunConfig::new(7, SimDuration::from_secs(10)));
//! assert!(out.error.is_none() && out.violations.is_empty());
//! let col = |c: &str| out.summary.get(&format!("source.chat.{c}")).unwrap();
//! assert_eq!(col("latency_ms_mean"), 50.0);
//! assert_eq!(col("latency_ms_p99"), 50.0);
//! assert_eq!(col("wait_ms_mean"), 0.0);
//! // Every arrival is accounted for: answered, failed, refused or still in flight.
//! let ended = col("completed") + col("failed") + col("rejected") + col("in_flight_end");
//! assert_eq!(col("offered"), ended);
//! assert!((99.0..=101.0).contains(&col("offered")), "one every 100 ms for 10 s");
//! ```
//!
//! ## A session: a run driven from outside
//!
//! [`Session`] runs the same world in steps — event by event, up to an instant — and takes
//! run-time changes between them (what the workbench does). One server of 150 ms under one
//! arrival per 100 ms builds a queue; a second server added at 5 s drains it.
//!
//! ```
//! use models::params::ParamValue;
//! use models::{RunConfig, Scenario, Session};
//! use sim_core::metrics::MetricReading;
//! use sim_core::{SimDuration, SimTime};
//!
//! let scenario: Scenario = ron::from_str(r#"Scenario(
//!     name: "overloaded",
//!     sources: [(name: "chat", interarrival: Constant("100ms"), target: "llm")],
//!     call_sites: [(name: "llm", upstream: "provider")],
//!     stations: [(name: "provider", servers: 1, service: Constant("150ms"))],
//! )"#).unwrap();
//! scenario.check().unwrap();
//! let mut s = Session::new(scenario, RunConfig::new(1, SimDuration::from_secs(20)));
//! assert!(s.step().unwrap()); // one event: the first arrival
//! let secs = |n| SimTime::ZERO + SimDuration::from_secs(n);
//! s.run_until(secs(5)).unwrap();
//! let queue = |s: &Session| match s.read("station.provider.queue_depth") {
//!     Some(MetricReading::Gauge(n)) => n,
//!     other => panic!("{other:?}"),
//! };
//! // 5 s: ~50 arrivals, ~33 served at 150 ms each: a queue of about 17.
//! assert!((15..=18).contains(&queue(&s)), "{}", queue(&s));
//! s.apply("station.provider.servers", ParamValue::Count(2)).unwrap();
//! s.run_until(secs(15)).unwrap();
//! // Two servers serve 13.3 a second against 10 arriving: the queue is gone.
//! assert_eq!(queue(&s), 0);
//! s.run_to_end().unwrap();
//! let out = s.finish();
//! assert!(out.error.is_none() && out.violations.is_empty());
//! ```

pub mod adaptive;
pub mod adaptive_concurrency;
pub mod aimd;
pub mod app;
pub mod attributes;
pub mod autoscaler;
pub mod batcher;
pub mod breaker;
pub mod cache;
pub mod callsite;
pub mod class;
pub mod closed_loop;
pub mod codel;
pub mod codel_queue;
pub mod components;
pub mod connpool;
pub mod dispatch;
pub mod fallback;
pub mod flow;
pub mod flow_controller;
pub mod gate;
pub mod governor;
pub mod govspec;
pub mod gpu;
pub mod gradient2;
pub mod hedge;
pub mod ids;
pub mod import;
pub mod kinds;
pub mod network;
pub mod observe;
pub mod outcome;
pub mod params;
pub mod partitioned_limit;
pub mod pid_shedder;
pub mod pipeline;
pub mod pool;
pub mod profile;
pub mod prompt_prefix;
pub mod quota;
pub mod rate_limiter;
pub mod recovery;
pub mod reference;
pub mod retry;
pub mod run;
pub mod scenario;
pub mod scripted;
pub mod sentinel_resource;
pub mod session;
pub mod shadow;
pub mod slotmap;
pub mod source;
pub mod sre_throttle;
pub mod stall;
pub mod station;
pub mod stream;
pub mod summary;
pub mod thread_pool_bulkhead;
pub mod time_limiter;
pub mod timeouts;
pub mod trace;
pub mod users;
mod validate;
pub mod vegas;
pub mod world;

pub use outcome::{Outcome, Reason};
pub use run::{RunConfig, RunOutput, run};
pub use scenario::{Scenario, ScenarioSpec};
pub use session::Session;
