//! # sim-gui — the stormglass desktop workbench
//!
//! An eframe/egui app over a live, exact session: knobs while it runs, the request path
//! alive on screen, live plots, events and summary, exact export and replay, rewind, and
//! a side-by-side comparison on identical traffic.
//!
//! Layers (each only uses the ones above it):
//! * [`session`] — what to open (experiment, variant × sweep point, seed, values set before
//!   the start) and the run over the live session API (`experiments::session::LiveSession`
//!   over `models::Session`: step, run until, validated changes stamped with their
//!   instants, values in force, export, rewind), kept across the run's end. No UI types.
//! * [`derived`] — the per-bucket rates derived from the summary's counts, closed at the
//!   same boundaries as the engine's own series (a function of simulated time only).
//! * [`worker`] — the simulation thread: owns the session, takes commands, streams updates.
//! * [`store`] — the UI's copy of what the worker sent (series, events, status, summary).
//! * [`ui`] — the panels, one module each: a panel takes its own state and what it reads
//!   (the store, the open experiment) and pushes [`ui::Action`]s; it never sees the window.
//! * [`app`] — the window: the panels' states, the frame loop, the actions carried out.
//!
//! Architecture invariant: the UI thread never runs the simulation and never blocks on
//! it; observing (series, gauges, events, summary reads) never changes a run.

pub mod app;
pub mod derived;
pub mod session;
pub mod store;
pub mod ui;
pub mod worker;

pub use app::{SHOWCASE, Workbench};
