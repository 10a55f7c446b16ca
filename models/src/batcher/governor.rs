//! The request batcher as a governor: calls wait in the open batch; when it is flushed
//! (full, or its window over) one member — the leader — goes on down the stack as the
//! batch's single upstream call, and every other member is answered with the leader's
//! outcome ([`Governor::take_answered`]). The upstream learns the batch size from
//! [`Governor::batch_of`] (a GPU server prefills and decodes that many sequences).
//!
//! Architecture invariant: every member ends exactly once — the leader through the stack,
//! the others answered from here — and `waiting()` counts the members parked here.
//!
//! API boundary: the [`Batcher`] state machine decides membership and flushes; this file
//! only maps its decisions onto the governor interface.

use super::{Batch, BatchAdd, BatchId, Batcher, BatcherSpec};
use crate::governor::{CallDecision, CallInfo, Governor, OutcomeDecision};
use crate::ids::CallId;
use crate::outcome::{Outcome, Reason};
use sim_core::SimTime;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub struct BatchGovernor {
    pub batcher: Batcher,
    /// Leaders of flushed batches → (batch, members).
    leaders: BTreeMap<CallId, (BatchId, u32)>,
    woken: Vec<CallId>,
    answered: Vec<(CallId, Outcome)>,
}

impl BatchGovernor {
    pub fn new(spec: &BatcherSpec) -> Self {
        BatchGovernor {
            batcher: Batcher::new(spec),
            leaders: BTreeMap::new(),
            woken: Vec::new(),
            answered: Vec::new(),
        }
    }

    /// A batch flushed by a run-time change of `max_batch`: its first member leads.
    pub fn flushed(&mut self, batch: Batch) {
        self.launch(batch, None);
    }

    /// A flushed batch: its first member leads (it is woken, unless it is the call being
    /// decided, which simply passes).
    fn launch(&mut self, batch: Batch, current: Option<CallId>) -> CallId {
        let leader = match current {
            Some(c) if batch.members.contains(&c) => c,
            _ => batch.members[0],
        };
        self.leaders.insert(leader, (batch.id, batch.members.len() as u32));
        if Some(leader) != current {
            self.woken.push(leader);
        }
        leader
    }
}

impl Governor for BatchGovernor {
    fn on_call(&mut self, call: &CallInfo, now: SimTime) -> CallDecision {
        match self.batcher.add(call.call, call.tokens as u64, now) {
            BatchAdd::Added => CallDecision::Wait { deadline: None, on_deadline: Reason::Timeout },
            BatchAdd::FlushNow(batch) => {
                let leader = self.launch(batch, Some(call.call));
                assert_eq!(leader, call.call, "the call that fills a batch leads it");
                CallDecision::Pass
            }
        }
    }

    fn on_outcome(&mut self, call: &CallInfo, outcome: Outcome, _now: SimTime) -> OutcomeDecision {
        let (id, _) = self.leaders.remove(&call.call).expect("only a batch's leader passes here");
        for (c, o) in self.batcher.complete(id, outcome) {
            if c != call.call {
                self.answered.push((c, o));
            }
        }
        OutcomeDecision::PassUp(outcome)
    }

    fn on_abandon(&mut self, call: &CallInfo, _now: SimTime) {
        if let Some((id, _)) = self.leaders.remove(&call.call) {
            // A woken leader gave up before going upstream: nobody carries the batch.
            for (c, _) in self.batcher.complete(id, Outcome::Failed(Reason::Timeout)) {
                if c != call.call {
                    self.answered.push((c, Outcome::Failed(Reason::Timeout)));
                }
            }
            return;
        }
        self.batcher.abandon(call.call);
    }

    fn take_woken(&mut self, out: &mut Vec<CallId>) {
        out.append(&mut self.woken);
    }
    fn take_answered(&mut self, out: &mut Vec<(CallId, Outcome)>) {
        out.append(&mut self.answered);
    }
    fn waiting(&self) -> usize {
        (self.batcher.waiting() as usize).saturating_sub(self.leaders.len())
    }
    fn wake_at(&self) -> Option<SimTime> {
        self.batcher.wake_at()
    }
    fn on_wake(&mut self, now: SimTime) {
        if let Some(batch) = self.batcher.on_wake(now) {
            self.launch(batch, None);
        }
    }
    fn batch_of(&self, call: CallId) -> Option<u32> {
        self.leaders.get(&call).map(|b| b.1)
    }
}

impl crate::params::GovernorSpec for BatcherSpec {
    const NOT_SHADOWABLE: Option<&'static str> = Some(
        "a batcher cannot run in shadow mode (it acts by parking calls into batches; a shadow parks nothing)",
    );
}

impl crate::governor::GovernorKindOps for BatchGovernor {
    type Spec = BatcherSpec;
    fn build(spec: &BatcherSpec, _: &crate::governor::BuildCtx<'_>) -> Self {
        BatchGovernor::new(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::CallInfo;

    fn spec(window_ms: u64, max: u64) -> BatcherSpec {
        ron::from_str(&format!(r#"Batcher(name: "b", window: "{window_ms}ms", max_batch: {max})"#))
            .unwrap()
    }
    fn t(ms: u64) -> SimTime {
        SimTime(ms * 1_000_000)
    }

    /// Script: 3 calls at 0, 1, 2 ms with max 3 → call 3 fills the batch and leads;
    /// 2 calls at 10, 11 ms → the window (5 ms) flushes at 15 ms, call 4 leads.
    #[test]
    fn size_and_window_flushes_pick_a_leader_and_answer_the_rest() {
        let mut g = BatchGovernor::new(&spec(5, 3));
        let c = |i| CallInfo::simple(i, 0);
        let wait = CallDecision::Wait { deadline: None, on_deadline: Reason::Timeout };
        assert_eq!(g.on_call(&c(1), t(0)), wait);
        assert_eq!(g.on_call(&c(2), t(1)), wait);
        assert_eq!(g.on_call(&c(3), t(2)), CallDecision::Pass);
        assert_eq!(g.batch_of(CallId(3)), Some(3));
        assert_eq!(g.waiting(), 2);
        assert_eq!(
            g.on_outcome(&c(3), Outcome::Success, t(50)),
            OutcomeDecision::PassUp(Outcome::Success)
        );
        let mut ans = vec![];
        g.take_answered(&mut ans);
        assert_eq!(ans, vec![(CallId(1), Outcome::Success), (CallId(2), Outcome::Success)]);
        assert_eq!(g.waiting(), 0);
        assert_eq!(g.on_call(&c(4), t(10)), wait);
        assert_eq!(g.on_call(&c(5), t(11)), wait);
        assert_eq!(g.wake_at(), Some(t(15)));
        g.on_wake(t(15));
        let mut w = vec![];
        g.take_woken(&mut w);
        assert_eq!(w, vec![CallId(4)]);
        assert_eq!(g.batch_of(CallId(4)), Some(2));
        let f = Outcome::Failed(Reason::Upstream5xx);
        g.on_outcome(&c(4), f, t(40));
        g.take_answered(&mut ans);
        assert_eq!(ans[2..], [(CallId(5), f)]);
        assert_eq!(g.wake_at(), None);
    }
}
