//! Identifiers shared by every component.
//!
//! Architecture invariant: ids are plain integers assigned in event order, so they are the
//! same in every replay. A request is what a user sent; a call is one upstream call a
//! pipeline step makes on behalf of a request; an attempt numbers the tries of one call
//! (0 = first attempt).

/// A user-level request, unique within a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// One upstream call (a pipeline step's call), unique within a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallId(pub u64);

/// The attempt number of a call: 0 for the first try, 1 for the first retry, …
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Attempt(pub u32);

/// Index of a traffic class (P0 = 0 is the most important).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ClassId(pub u16);
