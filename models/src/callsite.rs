//! The call site: drives one call down an ordered stack of governors to an upstream and its
//! outcome back up.
//!
//! The stack is data: a list of indices into the world's governor arena, so a governor
//! declared once (a semaphore, a cluster-wide limiter) can sit in several call sites. The
//! driver is a pure function of the governors' states: it returns what should happen next
//! ([`Next`]), and the world turns that into events (send upstream, park with a deadline,
//! retry after a delay, finish).
//!
//! Architecture invariant: a call is at exactly one place at any time — descending, parked
//! at one level, upstream, or finished — and every level it passed on the way down sees its
//! outcome on the way up exactly once (or `on_abandon` if the call was parked there).

use crate::gate::Gate;
use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use sim_core::{SimDuration, SimTime};

macro_rules! governor_kind {
    ($( $(#[doc = $doc:literal])* $(#[serde($($serde:tt)*)])?
        $variant:ident { list: $list:ident, spec: $spec:ty, state: $state:ty $(,)? } ),* $(,)?) => {
        /// The closed set of governor kinds (enum dispatch: no boxing, no `dyn` in the hot
        /// path), one variant per row of the kind table (`kinds.rs`) plus the shadow
        /// wrapper.
        // Governors live once each in the world's arena (a few dozen at most), so variant
        // sizes cost nothing worth a Box and a pointer chase on every decision.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug)]
        pub enum GovernorKind {
            $( $(#[doc = $doc])* $variant($state), )*
            Shadow(crate::shadow::Shadow<GovernorKind>),
        }

        /// Forwards a method to whichever governor the enum holds.
        macro_rules! each {
            ($self_:ident, $g_:ident => $e_:expr) => {
                match $self_ {
                    $( GovernorKind::$variant($g_) => $e_, )*
                    GovernorKind::Shadow($g_) => $e_,
                }
            };
        }
    };
}
crate::with_governor_kinds!(governor_kind);

impl GovernorKind {
    pub fn as_gate(&self) -> Option<&Gate> {
        match self {
            GovernorKind::Gate(g) => Some(g),
            _ => None,
        }
    }
}

impl Governor for GovernorKind {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        each!(self, g => g.on_call(call, now))
    }
    fn on_outcome(&mut self, call: &CallInfo, o: Outcome, now: SimTime) -> OutcomeDecision {
        each!(self, g => g.on_outcome(call, o, now))
    }
    fn on_abandon(&mut self, call: &CallInfo, now: SimTime) {
        each!(self, g => g.on_abandon(call, now))
    }
    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        each!(self, g => g.take_woken(out))
    }
    fn take_answered(&mut self, out: &mut Vec<(CallId, Outcome)>) {
        each!(self, g => g.take_answered(out))
    }
    fn take_forks(&mut self, out: &mut Vec<(CallId, u32)>) {
        each!(self, g => g.take_forks(out))
    }
    fn on_attempt(&mut self, call: &CallInfo, attempt: u32, o: Outcome, now: SimTime) {
        each!(self, g => g.on_attempt(call, attempt, o, now))
    }
    fn waiting(&self) -> usize {
        each!(self, g => g.waiting())
    }
    fn wake_at(&self) -> Option<SimTime> {
        each!(self, g => g.wake_at())
    }
    fn on_wake(&mut self, now: SimTime) {
        each!(self, g => g.on_wake(now))
    }
    fn take_events(&mut self, out: &mut Vec<crate::governor::GovEvent>) {
        each!(self, g => g.take_events(out))
    }
    fn batch_of(&self, call: CallId) -> Option<u32> {
        each!(self, g => g.batch_of(call))
    }
    fn take_changed(&mut self) -> bool {
        each!(self, g => g.take_changed())
    }
    fn has_released(&self) -> bool {
        each!(self, g => g.has_released())
    }
}

/// What the world must do next with a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Every level passed: send the call to the upstream.
    Upstream,
    /// Parked at `level` until woken or until the deadline.
    Parked { level: usize, deadline: Option<SimTime>, on_deadline: Reason },
    /// The call is over.
    Finished(Outcome),
    /// Re-issue the call from `level` (going down) after `after`.
    Retry { level: usize, after: SimDuration },
    /// Parked at `level` (no deadline), its attempt 0 to send below that level now
    /// ([`CallDecision::Fork`]).
    Forked { level: usize },
}

/// A call woken at a level of some stack: it resumes below that level, or, when the
/// governor answered it where it waited, its answer climbs from that level, or, when the
/// governor forks it (`fork: Some(attempt)`), a copy of it goes below that level while it
/// stays parked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Woken {
    pub governor: usize,
    pub call: CallId,
    pub answer: Option<Outcome>,
    pub fork: Option<u32>,
}

/// Collects the calls governor `g` woke or answered.
#[inline]
pub fn drain(g: usize, govs: &mut [GovernorKind], woken: &mut impl Extend<Woken>) {
    // On the hot path (every level of every climb) both lists are nearly always empty: a
    // governor that says so is not asked for them (the test inlined into the climb), and
    // the empty extends are skipped (the order is kept).
    if !govs[g].has_released() {
        debug_assert!(released_nothing(&mut govs[g]), "governor {g} hid a released call");
        return;
    }
    drain_released(g, govs, woken);
}

/// [`drain`] of a governor that holds a released call.
#[inline(never)]
fn drain_released(g: usize, govs: &mut [GovernorKind], woken: &mut impl Extend<Woken>) {
    let mut ids = Vec::new();
    govs[g].take_woken(&mut ids);
    if !ids.is_empty() {
        woken.extend(ids.into_iter().map(|call| Woken {
            governor: g,
            call,
            answer: None,
            fork: None,
        }));
    }
    let mut forks = Vec::new();
    govs[g].take_forks(&mut forks);
    if !forks.is_empty() {
        woken.extend(forks.into_iter().map(|(call, k)| Woken {
            governor: g,
            call,
            answer: None,
            fork: Some(k),
        }));
    }
    let mut answered = Vec::new();
    govs[g].take_answered(&mut answered);
    if answered.is_empty() {
        return;
    }
    woken.extend(answered.into_iter().map(|(call, o)| Woken {
        governor: g,
        call,
        answer: Some(o),
        fork: None,
    }));
}

/// Debug check of [`Governor::has_released`] answering no: both lists are empty (taking an
/// empty list changes nothing).
fn released_nothing(g: &mut GovernorKind) -> bool {
    let (mut ids, mut answered, mut forks) = (Vec::new(), Vec::new(), Vec::new());
    g.take_woken(&mut ids);
    g.take_answered(&mut answered);
    g.take_forks(&mut forks);
    ids.is_empty() && answered.is_empty() && forks.is_empty()
}

/// Sends a call down `stack` from `from` (inclusive).
pub fn descend(
    stack: &[usize],
    govs: &mut [GovernorKind],
    call: &CallInfo,
    from: usize,
    now: SimTime,
    woken: &mut impl Extend<Woken>,
) -> Next {
    for (level, &g) in stack.iter().enumerate().skip(from) {
        match govs[g].on_call(call, now) {
            CallDecision::Pass => {}
            CallDecision::Wait { deadline, on_deadline } => {
                return Next::Parked { level, deadline, on_deadline };
            }
            CallDecision::ServeLocally(o) => {
                return ascend(stack, govs, call, level, o, now, woken);
            }
            CallDecision::Reject(r) => {
                return ascend(stack, govs, call, level, Outcome::Rejected(r), now, woken);
            }
            CallDecision::Fork => return Next::Forked { level },
        }
    }
    Next::Upstream
}

/// Carries an outcome up through the levels below `below` (exclusive), from `below − 1` to 0.
pub fn ascend(
    stack: &[usize],
    govs: &mut [GovernorKind],
    call: &CallInfo,
    below: usize,
    outcome: Outcome,
    now: SimTime,
    woken: &mut impl Extend<Woken>,
) -> Next {
    let mut o = outcome;
    for level in (0..below).rev() {
        let g = stack[level];
        let d = govs[g].on_outcome(call, o, now);
        drain(g, govs, woken);
        match d {
            OutcomeDecision::PassUp(x) => o = x,
            OutcomeDecision::RetryAfter(after) => return Next::Retry { level: level + 1, after },
        }
    }
    Next::Finished(o)
}

/// A call parked at `level` gives up: the governor forgets it and the outcome climbs.
pub fn abandon(
    stack: &[usize],
    govs: &mut [GovernorKind],
    call: &CallInfo,
    level: usize,
    reason: Reason,
    now: SimTime,
    woken: &mut impl Extend<Woken>,
) -> Next {
    let g = stack[level];
    govs[g].on_abandon(call, now);
    drain(g, govs, woken);
    ascend(stack, govs, call, level, Outcome::Rejected(reason), now, woken)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::GateSpec;

    fn gate(permits: u64, wait_ms: u64) -> GovernorKind {
        GovernorKind::Gate(Gate::new(&GateSpec {
            name: "g".into(),
            permits,
            acquire_timeout: SimDuration::from_ms(wait_ms),
            max_waiting: 100,
            fair: true,
            wake_latency: SimDuration::ZERO,
        }))
    }
    fn c(i: u64) -> CallInfo {
        CallInfo::simple(i, 0)
    }

    /// Two gates in a stack: an outer (2 permits, waits) and an inner (1 permit, fail fast).
    /// Script of calls → expected `Next` and woken lists.
    #[test]
    fn two_level_stack_script() {
        let mut govs = vec![gate(2, 100), gate(1, 0)];
        let stack = [0, 1];
        let t = SimTime(0);
        let mut w = vec![];
        assert_eq!(descend(&stack, &mut govs, &c(1), 0, t, &mut w), Next::Upstream);
        // Call 2 passes the outer gate, is refused by the inner one, and the outer permit is
        // returned on the way up.
        assert_eq!(
            descend(&stack, &mut govs, &c(2), 0, t, &mut w),
            Next::Finished(Outcome::Rejected(Reason::GateFull))
        );
        assert_eq!(
            descend(&stack, &mut govs, &c(3), 0, t, &mut w),
            Next::Finished(Outcome::Rejected(Reason::GateFull))
        );
        // Occupy the outer gate's second permit by parking at the inner level is impossible
        // (inner fails fast), so fill the outer gate with a fresh stack-less call.
        assert_eq!(descend(&[0], &mut govs, &c(4), 0, t, &mut w), Next::Upstream);
        let parked = descend(&stack, &mut govs, &c(5), 0, t, &mut w);
        assert_eq!(
            parked,
            Next::Parked {
                level: 0,
                deadline: Some(SimTime(100_000_000)),
                on_deadline: Reason::GateFull
            }
        );
        // Call 1 completes: both gates release; the outer permit goes to call 5.
        assert_eq!(
            ascend(&stack, &mut govs, &c(1), 2, Outcome::Success, t, &mut w),
            Next::Finished(Outcome::Success)
        );
        assert_eq!(w, vec![Woken { governor: 0, call: CallId(5), answer: None, fork: None }]);
        // Call 5 resumes below level 0 and gets the inner permit.
        assert_eq!(descend(&stack, &mut govs, &c(5), 1, t, &mut w), Next::Upstream);
    }
}
