//! The priority-ordered wait list of the priority-aware half-open (the sources'
//! customisation): calls that find the breaker HALF_OPEN with no probe permit left wait
//! here; a freed permit goes to the most important class first (ClassId 0 = P0), FIFO
//! within a class.
//!
//! Architecture invariant: the list holds at most `max_waiting` calls; order is
//! `(class, arrival sequence)` in a `BTreeMap`, never hash order.
//!
//! API boundary: used only by [`super::r4j::CircuitBreaker`].

use crate::ids::{CallId, ClassId};
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub(crate) struct PriorityWaitList {
    max_waiting: usize,
    seq: u64,
    order: BTreeMap<(u16, u64), CallId>,
    index: BTreeMap<CallId, (u16, u64)>,
}

impl PriorityWaitList {
    pub(crate) fn new(max_waiting: usize) -> Self {
        PriorityWaitList { max_waiting, seq: 0, order: BTreeMap::new(), index: BTreeMap::new() }
    }

    pub(crate) fn len(&self) -> usize {
        debug_assert_eq!(self.order.len(), self.index.len());
        self.order.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Adds a call; `false` when the list is full.
    pub(crate) fn push(&mut self, class: ClassId, call: CallId) -> bool {
        if self.order.len() >= self.max_waiting {
            return false;
        }
        let key = (class.0, self.seq);
        self.seq += 1;
        assert!(self.index.insert(call, key).is_none(), "call {call:?} already waiting");
        self.order.insert(key, call);
        true
    }

    /// The most important, oldest waiter.
    pub(crate) fn pop(&mut self) -> Option<CallId> {
        let (_, call) = self.order.pop_first()?;
        self.index.remove(&call).expect("indexed");
        Some(call)
    }

    /// Forgets a call; `false` when it was not waiting.
    pub(crate) fn remove(&mut self, call: CallId) -> bool {
        match self.index.remove(&call) {
            Some(key) => {
                self.order.remove(&key).expect("ordered");
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_then_fifo_order_and_bound() {
        let mut w = PriorityWaitList::new(4);
        // (class, call) pushed in this order …
        for (class, call) in [(2, 1), (0, 2), (2, 3), (0, 4)] {
            assert!(w.push(ClassId(class), CallId(call)));
        }
        assert!(!w.push(ClassId(0), CallId(5)), "full at 4");
        assert!(w.remove(CallId(4)));
        assert!(!w.remove(CallId(4)));
        // … come out P0 first, then P2 in arrival order.
        let out: Vec<u64> = std::iter::from_fn(|| w.pop()).map(|c| c.0).collect();
        assert_eq!(out, vec![2, 1, 3]);
        assert!(w.is_empty());
    }
}
