//! Maps keyed by a call (or a job) that find their entry by the call's slot in O(1).
//!
//! A world's calls live in a slab: a [`CallId`] is `generation << 32 | slot`, and the
//! slots in use at any time are few and dense (one per call in flight). Governors and
//! stations keep per-call state for every call in flight — thousands of entries, touched
//! on every call and every answer — where a `BTreeMap` pays a search of several nodes per
//! access (bench/NOTES.md, profile 1). [`SlotMap`] stores an entry at its slot, tagged with
//! the full key, and falls back to an ordered map for the rare key whose slot is held by
//! another key (work still running for a call that ended, a stale entry) or lies beyond
//! [`DENSE_SLOTS`]; so it answers exactly as a map keyed by the full key does, for any keys.
//!
//! Architecture invariant: lookups, inserts and removals give the same answers as a
//! `BTreeMap<u64, V>` keyed by the tag. Iteration ([`SlotMap::values_unordered`]) is NOT in
//! key order: use it only for order-independent folds (counts, sums, `all`).
//! API boundary: keys are `(slot, tag)` with the tag unique; [`CallMap`] is the form keyed by
//! [`CallId`].

use crate::ids::CallId;
use std::collections::BTreeMap;

/// Slots at or beyond this go to the ordered fallback (bounds the dense table: a slot
/// number near 2³² from a hand-made id never allocates gigabytes).
pub const DENSE_SLOTS: u32 = 1 << 22;

/// Entries by `(slot, tag)`; see the module doc.
#[derive(Clone, Debug)]
pub struct SlotMap<V> {
    dense: Vec<Option<(u64, V)>>,
    overflow: BTreeMap<u64, V>,
    len: usize,
}

impl<V> Default for SlotMap<V> {
    fn default() -> Self {
        SlotMap { dense: Vec::new(), overflow: BTreeMap::new(), len: 0 }
    }
}

impl<V> SlotMap<V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Inserts `v` under `tag` (stored at `slot` when that is free); returns the value the
    /// tag had.
    pub fn insert(&mut self, slot: u32, tag: u64, v: V) -> Option<V> {
        if !self.overflow.is_empty()
            && let Some(old) = self.overflow.get_mut(&tag)
        {
            return Some(std::mem::replace(old, v));
        }
        if slot < DENSE_SLOTS {
            let i = slot as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            match &mut self.dense[i] {
                e @ None => {
                    *e = Some((tag, v));
                    self.len += 1;
                    return None;
                }
                Some((t, old)) if *t == tag => return Some(std::mem::replace(old, v)),
                Some(_) => {}
            }
        }
        let prev = self.overflow.insert(tag, v);
        debug_assert!(prev.is_none(), "checked above");
        self.len += 1;
        None
    }

    pub fn get(&self, slot: u32, tag: u64) -> Option<&V> {
        match self.dense.get(slot as usize) {
            Some(Some((t, v))) if *t == tag => Some(v),
            _ if self.overflow.is_empty() => None,
            _ => self.overflow.get(&tag),
        }
    }

    pub fn get_mut(&mut self, slot: u32, tag: u64) -> Option<&mut V> {
        match self.dense.get_mut(slot as usize) {
            Some(Some((t, v))) if *t == tag => Some(v),
            _ if self.overflow.is_empty() => None,
            _ => self.overflow.get_mut(&tag),
        }
    }

    pub fn contains(&self, slot: u32, tag: u64) -> bool {
        self.get(slot, tag).is_some()
    }

    pub fn remove(&mut self, slot: u32, tag: u64) -> Option<V> {
        let found = match self.dense.get_mut(slot as usize) {
            Some(e @ Some(_)) if e.as_ref().is_some_and(|(t, _)| *t == tag) => {
                e.take().map(|(_, v)| v)
            }
            _ if self.overflow.is_empty() => None,
            _ => self.overflow.remove(&tag),
        };
        if found.is_some() {
            self.len -= 1;
        }
        found
    }

    /// Every value, in no particular order (see the module doc).
    pub fn values_unordered(&self) -> impl Iterator<Item = &V> {
        self.dense.iter().flatten().map(|(_, v)| v).chain(self.overflow.values())
    }

    /// Every entry with its tag, in no particular order (see the module doc).
    pub fn iter_unordered(&self) -> impl Iterator<Item = (u64, &V)> {
        self.dense
            .iter()
            .flatten()
            .map(|(t, v)| (*t, v))
            .chain(self.overflow.iter().map(|(t, v)| (*t, v)))
    }
}

/// A [`SlotMap`] keyed by [`CallId`] (slot = its low 32 bits).
#[derive(Clone, Debug)]
pub struct CallMap<V>(SlotMap<V>);

impl<V> Default for CallMap<V> {
    fn default() -> Self {
        CallMap(SlotMap::new())
    }
}

fn slot(c: CallId) -> u32 {
    c.0 as u32
}

impl<V> CallMap<V> {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn insert(&mut self, c: CallId, v: V) -> Option<V> {
        self.0.insert(slot(c), c.0, v)
    }
    pub fn get(&self, c: &CallId) -> Option<&V> {
        self.0.get(slot(*c), c.0)
    }
    pub fn get_mut(&mut self, c: &CallId) -> Option<&mut V> {
        self.0.get_mut(slot(*c), c.0)
    }
    pub fn contains_key(&self, c: &CallId) -> bool {
        self.0.contains(slot(*c), c.0)
    }
    pub fn remove(&mut self, c: &CallId) -> Option<V> {
        self.0.remove(slot(*c), c.0)
    }
    /// Every value, in no particular order (only for order-independent folds).
    pub fn values_unordered(&self) -> impl Iterator<Item = &V> {
        self.0.values_unordered()
    }
    /// Every entry with its call, in no particular order (only for order-independent folds,
    /// or to be sorted).
    pub fn iter_unordered(&self) -> impl Iterator<Item = (CallId, &V)> {
        self.0.iter_unordered().map(|(t, v)| (CallId(t), v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64, u32),
        Remove(u64),
        Get(u64),
    }

    /// A tag's slot, fixed per tag as a call id's is: 4 slots for tags 0..10 (collisions
    /// are frequent), and two tags beyond the dense table.
    fn slot_of(t: u64) -> u32 {
        match t {
            10 => DENSE_SLOTS,
            11 => u32::MAX,
            t => (t % 4) as u32,
        }
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..12, any::<u32>()).prop_map(|(t, v)| Op::Insert(t, v)),
            (0u64..12).prop_map(Op::Remove),
            (0u64..12).prop_map(Op::Get),
        ]
    }

    proptest! {
        /// Same answers as a BTreeMap keyed by the tag.
        #[test]
        fn answers_as_an_ordered_map(ops in proptest::collection::vec(op(), 1..200)) {
            let mut m = SlotMap::new();
            let mut reference = BTreeMap::new();
            for o in ops {
                match o {
                    Op::Insert(t, v) => prop_assert_eq!(m.insert(slot_of(t), t, v), reference.insert(t, v)),
                    Op::Remove(t) => prop_assert_eq!(m.remove(slot_of(t), t), reference.remove(&t)),
                    Op::Get(t) => prop_assert_eq!(m.get(slot_of(t), t).copied(), reference.get(&t).copied()),
                }
                prop_assert_eq!(m.len(), reference.len());
                let mut got: Vec<u32> = m.values_unordered().copied().collect();
                let mut want: Vec<u32> = reference.values().copied().collect();
                got.sort_unstable();
                want.sort_unstable();
                prop_assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn a_call_id_finds_its_slot_and_generation() {
        let mut m = CallMap::new();
        let (a, b) = (CallId(3), CallId((1 << 32) | 3)); // slot 3, generations 0 and 1
        assert_eq!(m.insert(a, "a"), None);
        assert_eq!(m.insert(b, "b"), None); // the slot is taken: the fallback holds it
        assert_eq!((m.get(&a), m.get(&b), m.len()), (Some(&"a"), Some(&"b"), 2));
        assert_eq!(m.remove(&a), Some("a"));
        assert_eq!(m.insert(b, "b2"), Some("b")); // found in the fallback, not duplicated
        assert_eq!((m.len(), m.contains_key(&a), m.get(&b)), (1, false, Some(&"b2")));
    }
}
