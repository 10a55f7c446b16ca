//! The event calendar: a binary heap with payloads inline, plus an index for the events that
//! may be cancelled (timers).
//!
//! Architecture invariant: events leave the calendar in the total order
//! `(time, phase, scheduling sequence)`. The sequence number is assigned when an event is
//! scheduled, so two events at the same time and phase run in the order they were scheduled,
//! on every machine and every run.
//!
//! Two ways in: [`Calendar::schedule`] for events that will certainly run (completions,
//! arrivals), and [`Calendar::schedule_timer`] for events that may be cancelled (timeouts).
//! Only timers pay for the index: a slot that tracks the entry's heap position. Cancellation
//! removes the entry from the heap at once (`O(log n)`), so cancelled timers never
//! accumulate: `len()` is always exactly the number of live entries. This matters because
//! almost every upstream call arms a timeout that is cancelled when the call completes; a
//! lazily-deleted heap would grow with every completed call. Handles carry a generation, so
//! cancelling a timer that already fired (or was cancelled) is a no-op that reports `None`
//! rather than cancelling an unrelated timer that reused the slot.
//!
//! A third way in, [`Calendar::schedule_lane_timer`] (`lanes.rs`), serves timers that are
//! armed in order and almost always cancelled (a client's fixed timeout per call): a lane
//! queues them in their order and only its earliest live one sits in the heap; the same
//! keys, so the same order of events.

use crate::time::SimTime;

mod lanes;
use lanes::Lane;

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

/// A handle to a scheduled timer, used to cancel it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerHandle {
    slot: u32,
    generation: u32,
}

const SEQ_BITS: u32 = 56;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
/// `timer` value of entries that cannot be cancelled.
const NO_TIMER: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    time: u64,
    /// `phase << 56 | sequence`: one comparison orders phase then scheduling order.
    phase_seq: u64,
}

#[derive(Clone, Copy)]
struct Entry<E> {
    key: Key,
    timer: u32,
    payload: E,
}

#[derive(Clone, Copy)]
struct TimerSlot {
    /// Its entry's heap position; while queued in a lane behind its front, its place in
    /// the lane (`lanes.rs`).
    heap_pos: u32,
    generation: u32,
    live: bool,
    /// Queued in a lane, not in the heap.
    queued: bool,
    /// Its lane + 1 (0: an ordinary timer).
    lane: u16,
}

/// A min-heap of events with cancellable timers.
pub struct Calendar<E> {
    heap: Vec<Entry<E>>,
    timers: Vec<TimerSlot>,
    free: Vec<u32>,
    next_seq: u64,
    lanes: Vec<Lane<E>>,
    /// Live timers queued in lanes (not in the heap).
    queued: usize,
}

impl<E: Copy> Default for Calendar<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> Calendar<E> {
    pub fn new() -> Self {
        Calendar {
            heap: Vec::new(),
            timers: Vec::new(),
            free: Vec::new(),
            next_seq: 0,
            lanes: Vec::new(),
            queued: 0,
        }
    }

    /// Number of live (scheduled, not cancelled, not yet fired) events.
    pub fn len(&self) -> usize {
        self.heap.len() + self.queued
    }
    pub fn is_empty(&self) -> bool {
        // A lane with a live timer has its earliest one in the heap.
        self.heap.is_empty()
    }
    /// Bytes its vectors hold (allocated capacity), for the run's memory bound.
    pub fn bytes(&self) -> u64 {
        use std::mem::size_of;
        (self.heap.capacity() * size_of::<Entry<E>>()
            + self.timers.capacity() * size_of::<TimerSlot>()
            + self.free.capacity() * size_of::<u32>()) as u64
            + self.lanes.iter().map(Lane::bytes).sum::<u64>()
    }
    /// Timer slots allocated (live + free list). Bounded by the peak number of live timers.
    pub fn timer_capacity(&self) -> usize {
        self.timers.len()
    }

    fn key(&mut self, time: SimTime, phase: Phase) -> Key {
        let seq = self.next_seq;
        assert!(seq <= SEQ_MASK, "event sequence space exhausted");
        self.next_seq += 1;
        Key { time: time.0, phase_seq: ((phase as u64) << SEQ_BITS) | seq }
    }

    /// Schedules an event that will not be cancelled. Inlined into the caller, so the
    /// payload is written from registers into the heap (a call took it through a stack
    /// copy read back in wider pieces than written, which stalls store forwarding).
    #[inline(always)]
    pub fn schedule(&mut self, time: SimTime, phase: Phase, payload: E) {
        let key = self.key(time, phase);
        let entry = Entry { key, timer: NO_TIMER, payload };
        self.heap.push(entry);
        self.rise(self.heap.len() - 1, entry);
    }

    /// Schedules an event that may be cancelled with the returned handle.
    pub fn schedule_timer(&mut self, time: SimTime, phase: Phase, payload: E) -> TimerHandle {
        let key = self.key(time, phase);
        let slot = self.timer_slot(0);
        self.push_timer(key, slot, payload);
        TimerHandle { slot, generation: self.timers[slot as usize].generation }
    }

    /// A free timer slot, live, for a timer of lane `lane` (+ 1; 0: none); its position is
    /// set where the timer goes.
    #[inline]
    fn timer_slot(&mut self, lane: u16) -> u32 {
        match self.free.pop() {
            Some(s) => {
                let t = &mut self.timers[s as usize];
                debug_assert!(!t.live);
                t.live = true;
                t.lane = lane;
                s
            }
            None => {
                assert!(self.timers.len() < NO_TIMER as usize, "timer slot space exhausted");
                let t = TimerSlot { heap_pos: 0, generation: 0, live: true, queued: false, lane };
                self.timers.push(t);
                (self.timers.len() - 1) as u32
            }
        }
    }

    /// Puts timer `slot`'s entry in the heap.
    #[inline]
    fn push_timer(&mut self, key: Key, slot: u32, payload: E) {
        let pos = self.heap.len();
        let entry = Entry { key, timer: slot, payload };
        self.heap.push(entry);
        self.rise(pos, entry);
    }

    /// The time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.first().map(|e| SimTime(e.key.time))
    }

    /// Removes and returns the next event in `(time, phase, sequence)` order.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        (!self.heap.is_empty()).then(|| self.pop_next())
    }

    /// [`Self::pop`] for a caller that knows an event is pending (the run loop): no
    /// `Option` around the result, so the payload moves once, in whole words (through
    /// `Option::expect` it was moved in overlapping pieces that the processor could not
    /// forward from the stores before them: bench/NOTES.md, session 5). Panics when empty.
    #[inline]
    pub fn pop_next(&mut self) -> (SimTime, E) {
        // The root goes: the last entry takes its place, sinks to the bottom along the
        // smaller children (one comparison per level), then rises to its place — the
        // cheaper order `std`'s binary heap uses (the last entry usually belongs low). The
        // last entry is held in hand throughout and written once, where it belongs.
        let n = self.heap.len();
        assert!(n > 0, "no event pending");
        let top = self.heap[0];
        let last = self.heap[n - 1];
        self.heap.truncate(n - 1);
        if n > 1 {
            let pos = self.sink_hole_to_bottom(0);
            self.rise(pos, last);
        }
        self.release(top.timer);
        (SimTime(top.key.time), top.payload)
    }

    /// Cancels a pending timer. Returns its payload if it was still pending.
    pub fn cancel(&mut self, h: TimerHandle) -> Option<E> {
        let t = self.timers.get(h.slot as usize)?;
        if t.generation != h.generation || !t.live {
            return None;
        }
        if t.queued {
            return Some(self.cancel_queued(h.slot));
        }
        let pos = t.heap_pos as usize;
        Some(self.remove_at(pos).payload)
    }

    /// Is the timer behind this handle still pending?
    pub fn is_pending(&self, h: TimerHandle) -> bool {
        self.timers.get(h.slot as usize).is_some_and(|t| t.generation == h.generation && t.live)
    }

    /// Removes the entry at `pos`, keeping the heap and the timer index consistent.
    fn remove_at(&mut self, pos: usize) -> Entry<E> {
        let last = self.heap.len() - 1;
        self.heap.swap(pos, last);
        let e = self.heap.pop().expect("non-empty");
        if pos < self.heap.len() {
            self.place(pos);
            // The moved entry may need to go either way.
            if pos > 0 && self.heap[pos].key < self.heap[(pos - 1) / 2].key {
                self.sift_up(pos);
            } else {
                self.sift_down(pos);
            }
        }
        self.release(e.timer);
        e
    }

    /// Frees the timer slot of an entry that left the heap (if it is a timer); the heap is
    /// consistent again. A lane's front left: its next live timer takes its place.
    #[inline]
    fn release(&mut self, timer: u32) {
        if timer != NO_TIMER {
            let t = &mut self.timers[timer as usize];
            t.live = false;
            t.generation = t.generation.wrapping_add(1);
            let lane = std::mem::take(&mut t.lane);
            self.free.push(timer);
            if lane != 0 {
                self.front_left(lane as usize - 1);
            }
        }
    }

    /// Moves the hole at `pos` down to a leaf along the smaller children (each child moves
    /// up once, nothing is compared with the entry that will fill it); returns the leaf
    /// position, where the caller's entry [`Self::rise`]s from.
    #[inline]
    fn sink_hole_to_bottom(&mut self, mut pos: usize) -> usize {
        let n = self.heap.len();
        let mut child = 2 * pos + 1;
        while child + 1 < n {
            if self.heap[child + 1].key < self.heap[child].key {
                child += 1;
            }
            self.heap[pos] = self.heap[child];
            self.place(pos);
            pos = child;
            child = 2 * pos + 1;
        }
        if child + 1 == n {
            self.heap[pos] = self.heap[child];
            self.place(pos);
            pos = child;
        }
        pos
    }

    /// Records the heap position of the entry at `pos` if it is a timer.
    #[inline]
    fn place(&mut self, pos: usize) {
        let t = self.heap[pos].timer;
        if t != NO_TIMER {
            self.timers[t as usize].heap_pos = pos as u32;
        }
    }

    /// Puts `moving` in the hole at `pos` after moving it up past every parent it orders
    /// before (each parent moves down once; `moving` is written once).
    #[inline(always)]
    fn rise(&mut self, mut pos: usize, moving: Entry<E>) {
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if moving.key >= self.heap[parent].key {
                break;
            }
            self.heap[pos] = self.heap[parent];
            self.place(pos);
            pos = parent;
        }
        self.heap[pos] = moving;
        if moving.timer != NO_TIMER {
            self.timers[moving.timer as usize].heap_pos = pos as u32;
        }
    }

    #[inline]
    fn sift_up(&mut self, pos: usize) {
        let moving = self.heap[pos];
        self.rise(pos, moving);
    }

    #[inline]
    fn sift_down(&mut self, mut pos: usize) {
        let n = self.heap.len();
        loop {
            let left = 2 * pos + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child =
                if right < n && self.heap[right].key < self.heap[left].key { right } else { left };
            if self.heap[pos].key <= self.heap[child].key {
                break;
            }
            self.heap.swap(pos, child);
            self.place(pos);
            pos = child;
        }
        self.place(pos);
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
        for (i, (t, p, l)) in input.into_iter().enumerate() {
            // timers and plain events share one order
            if i % 2 == 0 {
                cal.schedule(SimTime(t), p, l);
            } else {
                cal.schedule_timer(SimTime(t), p, l);
            }
        }
        let got: Vec<_> = std::iter::from_fn(|| cal.pop().map(|(_, l)| l)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn cancel_removes_and_stale_handles_are_inert() {
        let mut cal = Calendar::new();
        let a = cal.schedule_timer(SimTime(10), Phase::Timeout, 'a');
        let b = cal.schedule_timer(SimTime(20), Phase::Timeout, 'b');
        let c = cal.schedule_timer(SimTime(5), Phase::Timeout, 'c');
        assert_eq!(cal.cancel(a), Some('a'));
        assert_eq!(cal.cancel(a), None, "double cancel is a no-op");
        assert_eq!(cal.len(), 2);
        assert_eq!(cal.pop(), Some((SimTime(5), 'c')));
        assert!(!cal.is_pending(c));
        // Slot of `c` is reused; the stale handle must not cancel the new event.
        let d = cal.schedule_timer(SimTime(7), Phase::Timeout, 'd');
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
            live.push_back(cal.schedule_timer(SimTime(1_000_000 + i), Phase::Timeout, i));
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..10_000_000u64 {
            // pseudo-random times so the heap is exercised everywhere
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let h = cal.schedule_timer(SimTime(x % 10_000_000), Phase::Timeout, i);
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
        assert!(cal.timer_capacity() <= LIVE + 1, "timer slots are recycled");
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
                    handles.push((cal.schedule_timer(SimTime(t), ph, seq), (t, ph as u8, seq)));
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
