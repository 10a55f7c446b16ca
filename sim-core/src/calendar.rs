//! The event calendar: a binary heap indexed by slot, so timers can be cancelled in place.
//!
//! Architecture invariant: events leave the calendar in the total order
//! `(time, phase, scheduling sequence)`. The sequence number is assigned when an event is
//! scheduled, so two events at the same time and phase run in the order they were scheduled,
//! on every machine and every run.
//!
//! Cancellation removes the entry from the heap at once (`O(log n)`), so cancelled timers
//! never accumulate: `len()` is always exactly the number of live entries. This matters
//! because almost every upstream call arms a timeout that is cancelled when the call
//! completes; a lazily-deleted heap would grow with every completed call. Handles carry a
//! generation, so cancelling an event that already fired (or was cancelled) is a no-op that
//! reports `false` rather than cancelling an unrelated event that reused the slot.

use crate::time::SimTime;

/// The phase of an event at one instant. Lower phases run first at equal times.
///
/// The list is fixed and documented because model semantics depend on it:
/// 1. `Completion` — work finishing (a call that completes exactly at its deadline completes);
/// 2. `Timeout` — deadlines and timers expiring;
/// 3. `Arrival` — new requests entering the system;
/// 4. `Dispatch` — zero-delay scheduling decisions that should see all of the above.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Phase {
    Completion = 0,
    Timeout = 1,
    Arrival = 2,
    Dispatch = 3,
}

/// A handle to a scheduled event, used to cancel it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerHandle {
    slot: u32,
    generation: u32,
}

const SEQ_BITS: u32 = 56;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    time: u64,
    /// `phase << 56 | sequence`: one comparison orders phase then scheduling order.
    phase_seq: u64,
}

#[derive(Clone, Copy, Debug)]
struct HeapEntry {
    key: Key,
    slot: u32,
}

struct Slot<E> {
    payload: Option<E>,
    heap_pos: u32,
    generation: u32,
}

/// An indexed min-heap of events.
pub struct Calendar<E> {
    heap: Vec<HeapEntry>,
    slots: Vec<Slot<E>>,
    free: Vec<u32>,
    next_seq: u64,
}

impl<E> Default for Calendar<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Calendar<E> {
    pub fn new() -> Self {
        Calendar { heap: Vec::new(), slots: Vec::new(), free: Vec::new(), next_seq: 0 }
    }

    /// Number of live (scheduled, not cancelled, not yet fired) events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    /// Slots allocated (live + free list). Bounded by the peak number of live events.
    pub fn slot_capacity(&self) -> usize {
        self.slots.len()
    }

    pub fn schedule(&mut self, time: SimTime, phase: Phase, payload: E) -> TimerHandle {
        let seq = self.next_seq;
        assert!(seq <= SEQ_MASK, "event sequence space exhausted");
        self.next_seq += 1;
        let key = Key { time: time.0, phase_seq: ((phase as u64) << SEQ_BITS) | seq };
        let pos = self.heap.len() as u32;
        let slot = match self.free.pop() {
            Some(s) => {
                let sl = &mut self.slots[s as usize];
                debug_assert!(sl.payload.is_none());
                sl.payload = Some(payload);
                sl.heap_pos = pos;
                s
            }
            None => {
                assert!(self.slots.len() < u32::MAX as usize, "calendar slot space exhausted");
                self.slots.push(Slot { payload: Some(payload), heap_pos: pos, generation: 0 });
                (self.slots.len() - 1) as u32
            }
        };
        self.heap.push(HeapEntry { key, slot });
        self.sift_up(pos as usize);
        TimerHandle { slot, generation: self.slots[slot as usize].generation }
    }

    /// The time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.first().map(|e| SimTime(e.key.time))
    }

    /// Removes and returns the next event in `(time, phase, sequence)` order.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let top = *self.heap.first()?;
        self.remove_at(0);
        let payload = self.release(top.slot);
        Some((SimTime(top.key.time), payload))
    }

    /// Cancels a scheduled event. Returns the payload if it was still pending.
    pub fn cancel(&mut self, h: TimerHandle) -> Option<E> {
        let slot = self.slots.get(h.slot as usize)?;
        if slot.generation != h.generation || slot.payload.is_none() {
            return None;
        }
        let pos = slot.heap_pos as usize;
        self.remove_at(pos);
        Some(self.release(h.slot))
    }

    /// Is the event behind this handle still pending?
    pub fn is_pending(&self, h: TimerHandle) -> bool {
        self.slots
            .get(h.slot as usize)
            .is_some_and(|s| s.generation == h.generation && s.payload.is_some())
    }

    fn release(&mut self, slot: u32) -> E {
        let s = &mut self.slots[slot as usize];
        s.generation = s.generation.wrapping_add(1);
        self.free.push(slot);
        s.payload.take().expect("live slot has a payload")
    }

    fn remove_at(&mut self, pos: usize) {
        let last = self.heap.len() - 1;
        if pos != last {
            self.heap.swap(pos, last);
            self.heap.pop();
            let moved = self.heap[pos].slot;
            self.slots[moved as usize].heap_pos = pos as u32;
            // The moved entry may need to go either way.
            if pos > 0 && self.heap[pos].key < self.heap[(pos - 1) / 2].key {
                self.sift_up(pos);
            } else {
                self.sift_down(pos);
            }
        } else {
            self.heap.pop();
        }
    }

    #[inline]
    fn sift_up(&mut self, mut pos: usize) {
        let entry = self.heap[pos];
        while pos > 0 {
            let parent = (pos - 1) / 2;
            let p = self.heap[parent];
            if entry.key >= p.key {
                break;
            }
            self.heap[pos] = p;
            self.slots[p.slot as usize].heap_pos = pos as u32;
            pos = parent;
        }
        self.heap[pos] = entry;
        self.slots[entry.slot as usize].heap_pos = pos as u32;
    }

    #[inline]
    fn sift_down(&mut self, mut pos: usize) {
        let n = self.heap.len();
        let entry = self.heap[pos];
        loop {
            let left = 2 * pos + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child =
                if right < n && self.heap[right].key < self.heap[left].key { right } else { left };
            let c = self.heap[child];
            if entry.key <= c.key {
                break;
            }
            self.heap[pos] = c;
            self.slots[c.slot as usize].heap_pos = pos as u32;
            pos = child;
        }
        self.heap[pos] = entry;
        self.slots[entry.slot as usize].heap_pos = pos as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_phase_then_scheduling() {
        // Data: (time, phase, label) in scheduling order → expected pop order.
        let input = [
            (5, Phase::Dispatch, "d5"),
            (5, Phase::Arrival, "a5-first"),
            (3, Phase::Timeout, "t3"),
            (5, Phase::Completion, "c5"),
            (5, Phase::Arrival, "a5-second"),
            (3, Phase::Completion, "c3"),
            (0, Phase::Dispatch, "d0"),
        ];
        let expected = ["d0", "c3", "t3", "c5", "a5-first", "a5-second", "d5"];
        let mut cal = Calendar::new();
        for (t, p, l) in input {
            cal.schedule(SimTime(t), p, l);
        }
        let got: Vec<_> = std::iter::from_fn(|| cal.pop().map(|(_, l)| l)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn cancel_removes_and_stale_handles_are_inert() {
        let mut cal = Calendar::new();
        let a = cal.schedule(SimTime(10), Phase::Timeout, 'a');
        let b = cal.schedule(SimTime(20), Phase::Timeout, 'b');
        let c = cal.schedule(SimTime(5), Phase::Timeout, 'c');
        assert_eq!(cal.cancel(a), Some('a'));
        assert_eq!(cal.cancel(a), None, "double cancel is a no-op");
        assert_eq!(cal.len(), 2);
        assert_eq!(cal.pop(), Some((SimTime(5), 'c')));
        assert!(!cal.is_pending(c));
        // Slot of `c` is reused; the stale handle must not cancel the new event.
        let d = cal.schedule(SimTime(7), Phase::Timeout, 'd');
        assert_eq!(cal.cancel(c), None);
        assert!(cal.is_pending(d));
        assert_eq!(cal.pop(), Some((SimTime(7), 'd')));
        assert_eq!(cal.cancel(b), Some('b'));
        assert!(cal.is_empty());
    }

    /// Cancelled timers never accumulate: 10 million arm/cancel pairs over a standing
    /// population of live timers leave the calendar at exactly the live count.
    #[test]
    fn ten_million_cancelled_timers_do_not_accumulate() {
        const LIVE: usize = 1_000;
        const FIXED_BOUND: usize = 0; // cancellation is eager: no slack at all
        let mut cal = Calendar::new();
        let mut live = std::collections::VecDeque::new();
        for i in 0..LIVE as u64 {
            live.push_back(cal.schedule(SimTime(1_000_000 + i), Phase::Timeout, i));
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..10_000_000u64 {
            // pseudo-random times so the heap is exercised everywhere
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let h = cal.schedule(SimTime(x % 10_000_000), Phase::Timeout, i);
            if i % 2 == 0 {
                assert!(cal.cancel(h).is_some());
            } else {
                live.push_back(h);
                let old = live.pop_front().unwrap();
                assert!(cal.cancel(old).is_some());
            }
            assert!(cal.len() <= LIVE + 1 + FIXED_BOUND);
        }
        assert_eq!(cal.len(), LIVE);
        assert!(cal.slot_capacity() <= LIVE + 1, "slots are recycled");
        // Remaining events still come out in order.
        let mut last = SimTime(0);
        while let Some((t, _)) = cal.pop() {
            assert!(t >= last);
            last = t;
        }
    }

    #[test]
    fn random_interleaving_matches_a_sorted_reference() {
        let mut cal = Calendar::new();
        let mut reference: Vec<(u64, u8, u64)> = Vec::new(); // (time, phase, seq)
        let mut handles = Vec::new();
        let mut x = 12345u64;
        let mut seq = 0u64;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = x >> 33;
            match r % 4 {
                0 | 1 => {
                    let t = r % 500;
                    let ph = [Phase::Completion, Phase::Timeout, Phase::Arrival][(r % 3) as usize];
                    handles.push((cal.schedule(SimTime(t), ph, seq), (t, ph as u8, seq)));
                    reference.push((t, ph as u8, seq));
                    seq += 1;
                }
                2 if !handles.is_empty() => {
                    let (h, k) = handles.swap_remove((r as usize) % handles.len());
                    if cal.cancel(h).is_some() {
                        reference.retain(|e| *e != k);
                    }
                }
                _ => {
                    reference.sort();
                    let want = if reference.is_empty() { None } else { Some(reference.remove(0)) };
                    let got = cal.pop().map(|(t, s)| (t.0, s));
                    assert_eq!(got, want.map(|(t, _, s)| (t, s)));
                }
            }
        }
    }
}
