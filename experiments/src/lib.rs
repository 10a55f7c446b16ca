//! # experiments — scenario files, the headless runner, results
//!
//! Reads RON experiment and scenario files (errors with file, line:column and field path),
//! plans runs (one per seed), runs them in parallel (each run single-threaded), and writes
//! the results contract as Parquet (`docs/results.md`).
//!
//! The key design decision: **typed values are parsed in place**. Parameter values whose
//! type depends on another part of the file (a timeline entry's `value` depends on its
//! `path`) are first skipped, then located by field path in the text ([`locate`]) and
//! parsed with the registry's type. They never pass through an untyped `ron::Value`, which
//! would lose enum names, and their errors still point at the right line and column.

pub mod batch;
pub mod bounded;
pub mod calibrate;
pub mod catalog;
pub mod console;
pub mod embed;
pub mod experiment;
pub mod gpu_cli;
pub mod import_file;
pub mod locate;
pub mod patch;
pub mod provenance;
pub mod report;
pub mod results;
pub mod ronfile;
pub mod runner;
pub mod scenario_file;
pub mod search;
pub mod session;
pub mod shard_lock;
pub mod staging;
pub mod sweep;
pub mod sweep_range;
pub mod unstack;
pub mod variant;

pub use experiment::{Experiment, LoadError, RunDefaults, load};
