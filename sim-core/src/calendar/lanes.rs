//! Timer lanes: timers armed in the order they expire, nearly all cancelled before they
//! fire (a client's timeout of fixed length on every upstream call), without a heap push
//! and a heap removal each.
//!
//! A lane is a FIFO of timers in `(time, phase, sequence)` order. Only its front, the
//! earliest live timer of the lane, is an entry of the heap; the others wait in the queue
//! with the key they were given when armed. When the front leaves the heap (it fires or is
//! cancelled) the next live timer of the lane enters the heap with its own key. The heap
//! therefore always holds the earliest live event of every lane, and pops exactly the
//! sequence of events it would pop with every timer in it: same keys, same order.
//!
//! Cancelling a timer behind the front marks its queue entry dead (`O(1)`); dead entries
//! leave when they reach the front, or in a compaction when they outnumber the live ones
//! (`len > COMPACT_RATIO × live + COMPACT_SLACK`, 4 × live + 1,024): a lane holds at most
//! that many entries, whatever the run's length. The ratio prices a compaction: each visits
//! every entry and renumbers the live ones, for the dead ones it drops; at 4 it visits ≈ 1.6
//! entries per entry dropped (at 2, ≈ 2.7: a client timeout of 30 s behind ≈ 1 s calls
//! leaves nearly every entry dead, bench/NOTES.md, session 6). A timer armed out of order (earlier than the lane's last) goes to the
//! heap as an ordinary timer; it is cancelled and fires the same way.

use super::{Calendar, Key, NO_TIMER, Phase, TimerHandle};
use crate::time::SimTime;
use std::collections::VecDeque;

/// Dead entries a lane may hold beyond twice its live ones before it compacts.
const COMPACT_SLACK: usize = 1024;
/// Entries a lane may hold per live timer (beyond the slack) before it compacts.
const COMPACT_RATIO: usize = 4;
/// Lanes a calendar may have (their number is a `u16` plus one in the timer slot).
pub const MAX_LANES: usize = u16::MAX as usize;

#[derive(Clone, Copy)]
struct Queued<E> {
    key: Key,
    /// Its timer slot; `NO_TIMER` once cancelled.
    timer: u32,
    payload: E,
}

/// One lane: its timers in key order, the front (if any) live and in the heap.
pub(super) struct Lane<E> {
    queue: VecDeque<Queued<E>>,
    /// Entries taken from the front so far (wrapping): a queued timer's slot holds
    /// `popped + its index` as its place.
    popped: u32,
    /// Live timers in the queue, the front included.
    live: usize,
    /// Key of the last timer queued.
    last: Key,
}

impl<E> Lane<E> {
    fn new() -> Self {
        Lane { queue: VecDeque::new(), popped: 0, live: 0, last: Key { time: 0, phase_seq: 0 } }
    }

    pub(super) fn bytes(&self) -> u64 {
        (self.queue.capacity() * std::mem::size_of::<Queued<E>>()) as u64
    }

    /// Index in `queue` of the entry with place `place`.
    fn index(&self, place: u32) -> usize {
        place.wrapping_sub(self.popped) as usize
    }
}

impl<E: Copy> Calendar<E> {
    /// Schedules a timer in lane `lane` (a number the caller chooses, below
    /// [`MAX_LANES`]; one lane per stream of timers armed in expiry order, e.g. a fixed
    /// timeout after each send). Events come out exactly as with
    /// [`Calendar::schedule_timer`]; the handle cancels it with [`Calendar::cancel`].
    pub fn schedule_lane_timer(
        &mut self,
        lane: usize,
        time: SimTime,
        phase: Phase,
        payload: E,
    ) -> TimerHandle {
        assert!(lane < MAX_LANES, "lane {lane} beyond {MAX_LANES}");
        let key = self.key(time, phase);
        if lane >= self.lanes.len() {
            self.lanes.resize_with(lane + 1, Lane::new);
        }
        let l = &self.lanes[lane];
        if l.live > 0 && key < l.last {
            // Out of order: an ordinary timer.
            return self.schedule_keyed(key, payload);
        }
        let slot = self.timer_slot(lane as u16 + 1);
        let l = &mut self.lanes[lane];
        l.last = key;
        l.live += 1;
        if l.live == 1 {
            // The lane's only live timer: its front, in the heap (dead entries before it
            // have all left: the front of a non-empty lane is live).
            debug_assert!(l.queue.is_empty());
            l.queue.push_back(Queued { key, timer: slot, payload });
            self.push_timer(key, slot, payload);
        } else {
            let place = l.popped.wrapping_add(l.queue.len() as u32);
            l.queue.push_back(Queued { key, timer: slot, payload });
            let t = &mut self.timers[slot as usize];
            t.queued = true;
            t.heap_pos = place;
            self.queued += 1;
        }
        TimerHandle { slot, generation: self.timers[slot as usize].generation }
    }

    /// An ordinary timer with a key already taken.
    fn schedule_keyed(&mut self, key: Key, payload: E) -> TimerHandle {
        let slot = self.timer_slot(0);
        self.push_timer(key, slot, payload);
        TimerHandle { slot, generation: self.timers[slot as usize].generation }
    }

    /// Cancels live timer `slot`, queued behind its lane's front: its entry is marked dead.
    pub(super) fn cancel_queued(&mut self, slot: u32) -> E {
        let t = &mut self.timers[slot as usize];
        let (lane, place) = (t.lane as usize - 1, t.heap_pos);
        (t.queued, t.lane) = (false, 0);
        // Freed as a timer leaving the heap is (the lane's bookkeeping is done here).
        self.release(slot);
        self.queued -= 1;
        let l = &mut self.lanes[lane];
        l.live -= 1;
        let i = l.index(place);
        let q = &mut l.queue[i];
        debug_assert_eq!(q.timer, slot);
        q.timer = NO_TIMER;
        let payload = q.payload;
        self.keep_bounded(lane);
        payload
    }

    /// Compacts lane `lane` when its dead entries outnumber its live ones (checked where
    /// the live count falls: a push never breaks the bound).
    #[inline]
    fn keep_bounded(&mut self, lane: usize) {
        let l = &self.lanes[lane];
        if l.queue.len() > COMPACT_RATIO * l.live + COMPACT_SLACK {
            self.compact(lane);
        }
    }

    /// The front of lane `lane` left the heap (fired or cancelled; its slot is freed): the
    /// dead entries behind it go, and the next live timer enters the heap.
    pub(super) fn front_left(&mut self, lane: usize) {
        let l = &mut self.lanes[lane];
        l.queue.pop_front();
        l.popped = l.popped.wrapping_add(1);
        l.live -= 1;
        while l.queue.front().is_some_and(|q| q.timer == NO_TIMER) {
            l.queue.pop_front();
            l.popped = l.popped.wrapping_add(1);
        }
        let Some(&q) = l.queue.front() else { return };
        self.queued -= 1;
        self.timers[q.timer as usize].queued = false;
        self.push_timer(q.key, q.timer, q.payload);
        self.keep_bounded(lane);
    }

    /// Drops lane `lane`'s dead entries; the queued timers get their new places.
    #[cold]
    fn compact(&mut self, lane: usize) {
        let l = &mut self.lanes[lane];
        l.queue.retain(|q| q.timer != NO_TIMER);
        debug_assert_eq!(l.queue.len(), l.live);
        // The front is in the heap: its slot holds its heap position.
        for (i, q) in l.queue.iter().enumerate().skip(1) {
            self.timers[q.timer as usize].heap_pos = l.popped.wrapping_add(i as u32);
        }
        l.queue.shrink_to(2 * COMPACT_RATIO * l.live + COMPACT_SLACK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed timeout after each "send", most cancelled: the lane's queue stays bounded
    /// and the calendar's length is the live count.
    #[test]
    fn cancelled_lane_timers_do_not_accumulate() {
        let mut cal = Calendar::new();
        let mut live = VecDeque::new();
        // One long-lived timer at the front keeps every later cancelled one behind it.
        let first = cal.schedule_lane_timer(0, SimTime(1_000_000_000), Phase::Timeout, 0u64);
        for i in 1..1_000_000u64 {
            let h = cal.schedule_lane_timer(0, SimTime(1_000_000_000 + i), Phase::Timeout, i);
            live.push_back(h);
            if live.len() > 100 {
                let old = live.pop_front().unwrap();
                assert!(cal.cancel(old).is_some());
            }
            assert_eq!(cal.len(), live.len() + 1);
            assert!(cal.lanes[0].queue.len() <= COMPACT_RATIO * cal.lanes[0].live + COMPACT_SLACK);
        }
        assert!(cal.timer_capacity() <= 103, "timer slots are recycled");
        assert_eq!(cal.pop(), Some((SimTime(1_000_000_000), 0)));
        assert!(!cal.is_pending(first));
        let mut n = 0;
        while let Some((t, i)) = cal.pop() {
            assert_eq!(t, SimTime(1_000_000_000 + i));
            n += 1;
        }
        assert_eq!(n, 100);
        assert_eq!(cal.len(), 0);
    }

    /// Lane timers (in order and out of order, in several lanes), ordinary timers and
    /// events, cancellations and pops, against a sorted reference of `(time, phase,
    /// sequence)`.
    #[test]
    fn lanes_match_a_sorted_reference() {
        let mut cal = Calendar::new();
        let mut reference = std::collections::BTreeSet::new(); // (time, phase, seq)
        let mut handles = Vec::new();
        let mut x = 987654321u64;
        let (mut seq, mut now) = (0u64, 0u64);
        let phases = [Phase::Completion, Phase::Timeout, Phase::Arrival];
        for _ in 0..100_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = x >> 33;
            match r % 8 {
                0..=2 => {
                    // Mostly a fixed delay per lane (in order), sometimes shorter (out of
                    // order), often equal times (ties broken by sequence).
                    let lane = (r / 8 % 3) as usize;
                    let delay = if (r / 64).is_multiple_of(10) {
                        r / 640 % 50
                    } else {
                        100 + 10 * lane as u64
                    };
                    let (t, ph) = (now + delay, phases[(r / 1024 % 3) as usize]);
                    let h = cal.schedule_lane_timer(lane, SimTime(t), ph, seq);
                    handles.push((h, (t, ph as u8, seq)));
                    reference.insert((t, ph as u8, seq));
                    seq += 1;
                }
                3 => {
                    let (t, ph) = (now + r / 8 % 200, phases[(r / 4096 % 3) as usize]);
                    if (r / 2048).is_multiple_of(2) {
                        cal.schedule(SimTime(t), ph, seq);
                    } else {
                        let h = cal.schedule_timer(SimTime(t), ph, seq);
                        handles.push((h, (t, ph as u8, seq)));
                    }
                    reference.insert((t, ph as u8, seq));
                    seq += 1;
                }
                4 | 5 if !handles.is_empty() => {
                    let (h, k) = handles.swap_remove((r as usize / 8) % handles.len());
                    let pending = cal.is_pending(h);
                    assert_eq!(pending, reference.contains(&k));
                    assert_eq!(cal.cancel(h).map(|s| s == k.2), pending.then_some(true));
                    reference.remove(&k);
                }
                _ => {
                    let want = reference.pop_first().map(|(t, _, s)| (t, s));
                    let got = cal.pop().map(|(t, s)| (t.0, s));
                    assert_eq!(got, want);
                    if let Some((t, _)) = got {
                        now = t;
                    }
                }
            }
            assert_eq!(cal.len(), reference.len());
            assert_eq!(cal.peek_time().map(|t| t.0), reference.first().map(|e| e.0));
        }
    }
}
