//! What a run holds, for the engine's entity and memory bounds (`sim_core::Limits::
//! max_entities`, `max_bytes`): requests and calls in the system, and an estimate of the
//! bytes of the collections that grow with load. Read-only: a run these checks do not stop
//! is the same run.

use super::*;
use std::mem::size_of;

/// Heap bytes a live request owns beyond its slot (its pipeline progress, entry-path
/// bookkeeping): an estimate.
const REQUEST_HEAP_BYTES: u64 = 64;
/// Bytes a live call costs beyond its slot: its queue place at an upstream (a `Job`), its
/// entries in governor tables (breaker, retry, cache), its GPU sequence: an estimate.
const CALL_EXTRA_BYTES: u64 = size_of::<Job>() as u64 + 64;
/// Heap bytes of a recorded state event's strings: an estimate.
const EVENT_TEXT_BYTES: u64 = 64;

impl QueueingWorld {
    /// Requests and calls in the system, and the estimated bytes of what grows with them.
    pub(super) fn holdings_now(&self) -> sim_core::Holdings {
        let cap = |n: usize, each: usize| (n as u64).saturating_mul(each as u64);
        let bytes = cap(self.reqs.slots.capacity(), inflight::Slots::<Req>::SLOT_BYTES)
            + cap(self.calls.slots.capacity(), inflight::Slots::<Call>::SLOT_BYTES)
            + cap(self.reqs.free.capacity() + self.calls.free.capacity(), 4)
            + cap(self.calls.generations.capacity(), 4)
            + cap(self.govs.woken.capacity(), size_of::<Woken>())
            + self
                .obs
                .records
                .as_ref()
                .map_or(0, |r| cap(r.capacity(), size_of::<RequestRecord>()))
            + cap(self.obs.events.capacity(), size_of::<ModelEvent>())
            + (self.obs.events.len() as u64).saturating_mul(EVENT_TEXT_BYTES)
            + self.reqs.live.saturating_mul(REQUEST_HEAP_BYTES)
            + self.calls.live.saturating_mul(CALL_EXTRA_BYTES);
        sim_core::Holdings { entities: self.reqs.live.saturating_add(self.calls.live), bytes }
    }

    /// Where most of what the run holds is: the place holding the most calls (a governor a
    /// call is parked at, an upstream, a call site) and the source of most requests.
    pub(super) fn largest_holder_now(&self) -> String {
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        enum Place {
            Governor(usize),
            Station(u16),
            Gpu(u16),
            Site(u16),
        }
        let mut places = std::collections::BTreeMap::<Place, u64>::new();
        for c in self.calls.slots.iter() {
            let site = &self.sites[c.site as usize];
            let place = match (c.parked_at, c.up) {
                (Some(l), _) => Place::Governor(site.stack_at(c.inst, c.base)[l]),
                (None, Some(Upstream::Station(s))) => Place::Station(s),
                (None, Some(Upstream::Gpu(g))) => Place::Gpu(g),
                (None, Some(Upstream::Pool(_))) => unreachable!("a call is at a pool's replica"),
                (None, None) => Place::Site(c.site),
            };
            *places.entry(place).or_default() += 1;
        }
        let mut per_source = vec![0u64; self.traffic.sources.len()];
        for r in self.reqs.slots.iter() {
            per_source[r.source as usize] += 1;
        }
        let mut out = Vec::new();
        if let Some((p, n)) = places.iter().max_by_key(|(p, n)| (**n, std::cmp::Reverse(**p))) {
            let name = match *p {
                Place::Governor(g) => self.govs.names[g].clone(),
                Place::Station(s) => {
                    format!("station.{}", self.upstreams.stations[s as usize].name)
                }
                Place::Gpu(g) => self.upstreams.gpus[g as usize].path.clone(),
                Place::Site(s) => format!("call_site.{}", self.sites[s as usize].name),
            };
            out.push(format!("`{name}` ({n} of {} calls)", self.calls.live));
        }
        if let Some((s, n)) =
            per_source.iter().enumerate().max_by_key(|(i, n)| (**n, std::cmp::Reverse(*i)))
            && *n > 0
        {
            out.push(format!(
                "source `{}` ({n} of {} requests)",
                self.traffic.sources[s].name, self.reqs.live
            ));
        }
        if out.is_empty() { "the run's records and events".into() } else { out.join(", ") }
    }
}
