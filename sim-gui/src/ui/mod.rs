//! The workbench's panels, one module each.
//!
//! A panel takes its own state, what it reads (the [`Store`](crate::store::Store), the
//! open experiment) and a list to push [`Action`]s on; it never holds the workbench. The
//! window (the `app` module) carries the actions out after the panels are drawn, so no
//! panel depends on another's state or on the window.

pub mod compare;
pub mod controls;
pub mod decimate;
pub mod diagram;
pub mod events;
pub mod knobs;
pub mod legend;
pub mod open;
pub mod plot_lines;
pub mod plots;

use crate::session::Selection;
use crate::worker::Cmd;
use experiments::catalog::Entry;
use std::path::PathBuf;

/// The central views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Plots,
    Diagram,
    Events,
    Summary,
    Compare,
}

impl View {
    pub const ALL: [View; 5] =
        [View::Plots, View::Diagram, View::Events, View::Summary, View::Compare];
    pub fn label(self) -> &'static str {
        match self {
            View::Plots => "Plots",
            View::Diagram => "Request path",
            View::Events => "Events",
            View::Summary => "Summary",
            View::Compare => "Compare",
        }
    }
}

/// What a panel asks the window to do.
#[derive(Debug)]
pub enum Action {
    /// Open a bundled experiment.
    OpenEntry(Entry),
    /// Open an experiment or scenario file.
    OpenPath(PathBuf),
    /// Open another selection of the open experiment (a variant × sweep point).
    Select(Selection),
    /// A command for the simulation thread (run controls, changes, rewind, export).
    Send(Cmd),
    /// A fresh run of the selection with this seed, the values waiting for a reset set.
    Reset(u64),
    /// A message for the notice line.
    Notice(String),
    /// Clear the notice line.
    DismissNotices,
    /// Show the plots centred on this instant (s).
    Focus(f64),
}

/// The actions a frame's panels pushed.
pub type Actions = Vec<Action>;
