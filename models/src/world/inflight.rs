//! The requests-and-calls subsystem: every request and every call in the system, each in
//! a reusable slot, with the counters that conserve them.
//!
//! Architecture invariant (I1, I22): a request or a call is inserted once and removed
//! once; `live` is the number of occupied slots, `issued − ended = live` for calls, and a
//! slot's generation changes each time its call ends, so a stale [`CallId`] (a wake-up
//! for a call that has ended) is never taken for the slot's next call.
//!
//! Boundary: the tables hold state only; what a request or call does next is the world's
//! call path (`world/requests.rs`, `world/calls.rs`).

use super::*;

/// One user request in flight: it runs its pipeline, one or more calls.
#[derive(Clone, Debug)]
pub(super) struct Req {
    pub(super) id: RequestId,
    pub(super) source: u16,
    pub(super) class: u16,
    pub(super) seq: u64,
    pub(super) pipeline: u16,
    pub(super) arrival: SimTime,
    /// When its first call started service.
    pub(super) start: Option<SimTime>,
    pub(super) tokens: Tokens,
    /// The user (0: none), the cache key (0: none), the weight (its class's unless the
    /// source overrides it) and the closed-loop user waiting for it (`NO_CLIENT`: none).
    pub(super) user: u64,
    pub(super) key: u64,
    pub(super) weight: u64,
    pub(super) client: u32,
    pub(super) progress: Progress,
    /// Its calls not yet ended.
    pub(super) live_calls: u32,
    /// Its place on its app's entry path (`None`: its source has no app).
    pub(super) entry: Option<entry::ReqEntry>,
    /// Its budget's timer (`RequestDeadline`), while armed.
    pub(super) deadline: Option<TimerHandle>,
    /// Its budget ran out: no call is issued any more; it ends with its last call.
    pub(super) expired: bool,
}

/// One upstream call of a request (a pipeline step's call), through one call site.
#[derive(Clone, Debug)]
pub(super) struct Call {
    /// Unique over the run (slots are reused).
    pub(super) id: u64,
    /// The request's slot.
    pub(super) req: u32,
    pub(super) site: u16,
    pub(super) issue: Issue,
    /// Key of its random numbers: its position in the pipeline (0 for a direct call).
    pub(super) path: u32,
    /// 0 for the first attempt; a retry governor re-sends it with the next number.
    pub(super) attempt: u32,
    /// Its governors' random bits (`CallInfo::draw`) for its current `path`: set with it
    /// ([`QueueingWorld::governor_draw`]), read at every descent and climb.
    pub(super) draw: u64,
    /// The upstream's error for this attempt (failure injection, drawn at the start of
    /// service): 5xx or a business error.
    pub(super) upstream_error: Option<Reason>,
    /// The Retry-After of a scripted 429 answer (`crate::scripted`).
    pub(super) upstream_retry_after: Option<SimDuration>,
    /// In service at its station (else waiting there, or not sent yet).
    pub(super) in_service: bool,
    /// The completion event, when the station may cancel it.
    pub(super) service_timer: Option<TimerHandle>,
    /// The client's timeout on the upstream call.
    pub(super) upstream_timer: Option<TimerHandle>,
    /// Where it is parked (a governor level), and the deadline timer.
    pub(super) parked_at: Option<usize>,
    pub(super) on_deadline: Reason,
    /// Its one pending timer: a parked call's deadline, a connection wait's deadline or
    /// readiness, a retry back-off's end.
    pub(super) timer: Option<TimerHandle>,
    /// Waiting to be re-sent from this level (a retry's back-off).
    pub(super) retry_level: Option<usize>,
    /// Its connection, on a pooled call site.
    pub(super) conn: Option<conn::ConnState>,
    /// The upstream its current attempt went to.
    pub(super) up: Option<Upstream>,
    /// Instance key + 1 of its request's app instance (0: no app): which copies of
    /// per-instance governors it meets.
    pub(super) inst: u16,
    /// Sent to the site's backup after its upstream failed (once per attempt).
    pub(super) on_backup: bool,
    /// Its streamed answer in flight (at a streaming station, in service).
    pub(super) stream: Option<streaming::CallStream>,
    /// On its degradation chain: moved on from a failing site (`world/fallback.rs`).
    pub(super) degrade: Option<fallback::CallFallback>,
    pub(super) generation: u32,
}

impl Call {
    /// The id of its current attempt's work at a station: an abandoned attempt's work,
    /// finishing later, is never taken for the answer to a retry.
    pub(super) fn job_id(&self) -> u64 {
        debug_assert!(self.id < 1 << 47 && self.attempt < 1 << 8);
        let hops = self.degrade.map_or(0, |d| d.hops as u64);
        self.id | ((self.attempt as u64) << 48) | ((self.on_backup as u64) << 47) | (hops << 56)
    }

    /// Is the call waiting for the station's work `id`? Not while it waits to be re-sent
    /// (a retry's back-off after a timeout): its timed-out attempt's work, still running
    /// without cancellation, has that attempt's id until the retry is sent.
    pub(super) fn awaits(&self, id: u64) -> bool {
        self.job_id() == id && self.retry_level.is_none()
    }
}

/// Requests in the system, by slot.
#[derive(Default)]
pub(super) struct Requests {
    pub slots: Vec<Option<Req>>,
    pub free: Vec<u32>,
    /// Requests in the system.
    pub live: u64,
    /// The next request id.
    pub next_id: u64,
}

impl Requests {
    /// Puts `r` in a free slot (or a new one) and returns the slot. Inlined, so the
    /// record is written straight into its slot (no whole-record copy on the hot path).
    #[inline(always)]
    pub fn insert(&mut self, r: Req) -> u32 {
        self.live += 1;
        match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(r);
                s
            }
            None => {
                self.slots.push(Some(r));
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// The request in `slot`, ending: the caller reads what it needs in place, then
    /// [`Requests::release`]s the slot (no whole-record move).
    #[inline]
    pub fn ending(&mut self, slot: u32) -> &mut Req {
        self.slots[slot as usize].as_mut().expect("ends once")
    }

    /// Frees `slot` (its request ended once), dropping the record in place.
    #[inline]
    pub fn release(&mut self, slot: u32) {
        debug_assert!(self.slots[slot as usize].is_some(), "ends once");
        self.slots[slot as usize] = None;
        self.free.push(slot);
        self.live -= 1;
    }
}

/// Calls in the system, by slot, with each slot's generation.
#[derive(Default)]
pub(super) struct Calls {
    pub slots: Vec<Option<Call>>,
    pub generations: Vec<u32>,
    pub free: Vec<u32>,
    /// Calls in the system.
    pub live: u64,
    pub issued: u64,
    pub ended: u64,
    /// The next call id (unique over the run; slots are reused).
    pub next_id: u64,
}

impl Calls {
    /// Puts `c` in a free slot (or a new one), stamps it with the slot's generation and
    /// returns the slot. Inlined, so the record is written straight into its slot.
    #[inline(always)]
    pub fn insert(&mut self, mut c: Call) -> u32 {
        self.issued += 1;
        self.live += 1;
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.generations.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        c.generation = self.generations[slot as usize];
        self.slots[slot as usize] = Some(c);
        slot
    }

    /// Ends the call in `slot` (once): the slot's generation moves on and the record is
    /// dropped in place; returns what its request needs to move on (its request's slot and
    /// its pipeline step), not the whole record.
    #[inline]
    pub fn remove(&mut self, slot: u32) -> (u32, Issue) {
        let c = self.slots[slot as usize].as_ref().expect("a call ends once");
        debug_assert!(c.timer.is_none() && c.parked_at.is_none() && c.retry_level.is_none());
        let ended = (c.req, c.issue);
        self.slots[slot as usize] = None;
        self.generations[slot as usize] = self.generations[slot as usize].wrapping_add(1);
        self.free.push(slot);
        self.live -= 1;
        self.ended += 1;
        ended
    }
}
