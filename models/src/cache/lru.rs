//! A bounded least-recently-used map from `u64` keys to the time an entry was stored.
//!
//! Two `BTreeMap`s: key → (stored_at, last-use tick) and tick → key. Every insert or touch
//! takes a fresh tick from a counter, so the recency order is total and deterministic
//! (no hash order, no time ties). Operations are O(log n).
//!
//! Architecture invariant: `len() ≤ capacity`, and the two maps always hold the same
//! entries (`entries.len() == recency.len()`, each tick maps back to its key).
//!
//! API boundary: [`Lru::get`] (look without touching), [`Lru::touch`], [`Lru::insert`]
//! (returns the evicted key), [`Lru::remove`].

use sim_core::SimTime;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub struct Lru {
    capacity: usize,
    tick: u64,
    entries: BTreeMap<u64, (SimTime, u64)>,
    recency: BTreeMap<u64, u64>,
}

impl Lru {
    pub fn new(capacity: usize) -> Self {
        assert!(capacity >= 1, "validated: capacity ≥ 1");
        Lru { capacity, tick: 0, entries: BTreeMap::new(), recency: BTreeMap::new() }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// When `key` was stored, without changing its recency.
    pub fn get(&self, key: u64) -> Option<SimTime> {
        self.entries.get(&key).map(|e| e.0)
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// Marks `key` most recently used (no-op when absent).
    pub fn touch(&mut self, key: u64) {
        let t = self.next_tick();
        if let Some(e) = self.entries.get_mut(&key) {
            self.recency.remove(&e.1);
            e.1 = t;
            self.recency.insert(t, key);
        }
    }

    /// Stores (or re-stores) `key` at `stored_at` as most recently used; evicts and returns
    /// the least recently used key when that would exceed the capacity.
    pub fn insert(&mut self, key: u64, stored_at: SimTime) -> Option<u64> {
        let t = self.next_tick();
        if let Some(old) = self.entries.insert(key, (stored_at, t)) {
            self.recency.remove(&old.1);
        }
        self.recency.insert(t, key);
        let evicted = if self.entries.len() > self.capacity {
            let (_, lru) = self.recency.pop_first().expect("non-empty");
            self.entries.remove(&lru);
            Some(lru)
        } else {
            None
        };
        self.check();
        evicted
    }

    pub fn remove(&mut self, key: u64) -> bool {
        match self.entries.remove(&key) {
            Some((_, t)) => {
                self.recency.remove(&t);
                true
            }
            None => false,
        }
    }

    /// Lowers the capacity at run time, evicting least recently used keys (returned count).
    pub fn set_capacity(&mut self, capacity: usize) -> usize {
        assert!(capacity >= 1);
        self.capacity = capacity;
        let mut n = 0;
        while self.entries.len() > capacity {
            let (_, lru) = self.recency.pop_first().expect("non-empty");
            self.entries.remove(&lru);
            n += 1;
        }
        n
    }

    /// Keys from least to most recently used.
    pub fn keys_lru_first(&self) -> impl Iterator<Item = u64> + '_ {
        self.recency.values().copied()
    }

    fn check(&self) {
        assert!(self.entries.len() <= self.capacity);
        assert_eq!(self.entries.len(), self.recency.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Capacity 3. Script: op → expected eviction and order (LRU first).
    #[test]
    fn eviction_order_script() {
        let mut l = Lru::new(3);
        let t = SimTime(0);
        assert_eq!(l.insert(1, t), None);
        assert_eq!(l.insert(2, t), None);
        assert_eq!(l.insert(3, t), None);
        assert_eq!(l.keys_lru_first().collect::<Vec<_>>(), vec![1, 2, 3]);
        l.touch(1); // order 2, 3, 1
        assert_eq!(l.insert(4, t), Some(2)); // 3, 1, 4
        assert_eq!(l.insert(3, SimTime(5)), None); // re-store 3: 1, 4, 3
        assert_eq!(l.get(3), Some(SimTime(5)));
        assert_eq!(l.insert(5, t), Some(1)); // 4, 3, 5
        l.touch(99); // absent: no change
        assert_eq!(l.keys_lru_first().collect::<Vec<_>>(), vec![4, 3, 5]);
        assert!(l.remove(3)); // 4, 5
        assert_eq!(l.insert(6, t), None); // 4, 5, 6
        assert_eq!(l.set_capacity(1), 2); // 6
        assert_eq!(l.keys_lru_first().collect::<Vec<_>>(), vec![6]);
    }
}
