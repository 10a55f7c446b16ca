//! # sim-gui — the stormglass desktop workbench
//!
//! An eframe/egui app over a live, exact session: knobs while it runs, the request path
//! alive on screen, live plots, events and summary, exact export and replay, rewind, and
//! a side-by-side comparison on identical traffic.
//!
//! Layers (each only uses the ones above it):
//! * [`session`] — the adapter over the resumable run loop (no UI types): open, step, run
//!   until, validated changes recorded with their instants, values in force, rewind;
//!   [`export`] writes a session as an experiment file that replays to the same
//!   fingerprint.
//! * [`worker`] — the simulation thread: owns the session, takes commands, streams updates.
//! * [`store`] — the UI's copy of what the worker sent (series, events, status, summary).
//! * [`app`] and [`ui`] — the window and its panels.
//!
//! Architecture invariant: the UI thread never runs the simulation and never blocks on
//! it; observing (series, gauges, events, summary reads) never changes a run.

pub mod app;
pub mod catalog;
pub mod export;
pub mod session;
pub mod store;
pub mod ui;
pub mod worker;

pub use app::Workbench;
