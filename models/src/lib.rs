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

pub mod adaptive;
pub mod adaptive_concurrency;
pub mod aimd;
pub mod app;
pub mod attributes;
pub mod batcher;
pub mod breaker;
pub mod cache;
pub mod callsite;
pub mod class;
pub mod closed_loop;
pub mod connpool;
pub mod dispatch;
pub mod fallback;
pub mod flow;
pub mod gate;
pub mod governor;
pub mod govspec;
pub mod gpu;
pub mod gradient2;
pub mod ids;
pub mod kinds;
pub mod network;
pub mod observe;
pub mod outcome;
pub mod params;
pub mod pipeline;
pub mod pool;
pub mod profile;
pub mod quota;
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
pub mod stall;
pub mod station;
pub mod stream;
pub mod summary;
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
