//! The workbench's panels, one module each.

pub mod compare;
pub mod controls;
pub mod diagram;
pub mod events;
pub mod knobs;
pub mod open;
pub mod plots;
