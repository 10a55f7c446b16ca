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
    /// 0, or for an attempt of a hedged call (`world/hedging.rs`) the level of its stack
    /// below the hedging governor: it goes through `stack[base..]` only, and its levels
    /// (`parked_at`, `retry_level`) count from there.
    pub(super) base: u8,
    /// When its current work started service (the wasted time of a cancelled hedge).
    pub(super) service_start: SimTime,
    /// [`Call::job_id`], kept: [`Call::rekey`] after every change of its attempt, backup
    /// or hops (read at every hand-off: `awaits`).
    pub(super) job: u64,
}

impl Call {
    /// A call's first attempt, on no backup, no hop, not yet anywhere. Inlined, so the
    /// record built in an argument is written straight into its slot.
    #[inline(always)]
    pub(super) fn new(
        id: u64,
        req: u32,
        site: u16,
        issue: Issue,
        path: u32,
        draw: u64,
        inst: u16,
    ) -> Call {
        Call {
            id,
            req,
            site,
            issue,
            path,
            attempt: 0,
            draw,
            upstream_error: None,
            upstream_retry_after: None,
            in_service: false,
            service_timer: None,
            upstream_timer: None,
            parked_at: None,
            on_deadline: Reason::Timeout,
            timer: None,
            retry_level: None,
            conn: None,
            up: None,
            on_backup: false,
            stream: None,
            degrade: None,
            inst,
            generation: 0,
            base: 0,
            service_start: SimTime::ZERO,
            // The first attempt's work, on no backup and no hop: the call's id.
            job: id,
        }
    }

    /// The id of its current attempt's work at a station: an abandoned attempt's work,
    /// finishing later, is never taken for the answer to a retry.
    #[inline(always)]
    pub(super) fn job_id(&self) -> u64 {
        debug_assert_eq!(self.job, self.work_id(), "rekeyed after each attempt, backup, hop");
        self.job
    }

    /// The id [`Call::job_id`] keeps: the call's id, its attempt, backup and hops.
    fn work_id(&self) -> u64 {
        debug_assert!(self.id < 1 << 47 && self.attempt < 1 << 8);
        let hops = self.degrade.map_or(0, |d| d.hops as u64);
        self.id | ((self.attempt as u64) << 48) | ((self.on_backup as u64) << 47) | (hops << 56)
    }

    /// Its attempt, backup or hops changed: its work has a new id.
    pub(super) fn rekey(&mut self) {
        self.job = self.work_id();
    }

    /// Is the call waiting for the station's work `id`? Not while it waits to be re-sent
    /// (a retry's back-off after a timeout): its timed-out attempt's work, still running
    /// without cancellation, has that attempt's id until the retry is sent.
    pub(super) fn awaits(&self, id: u64) -> bool {
        self.job_id() == id && self.retry_level.is_none()
    }
}

/// Records by slot, each with a live flag. A record is written into its slot and a release
/// clears the flag: neither moves the whole record (a `Vec<Option<Req>>` built the 200-byte
/// record on the stack and copied it in, and copied a 200-byte `None` over it at release:
/// bench/NOTES.md, session 6). A released slot keeps its dead record until the slot's next
/// insert overwrites it; nothing reads a dead record.
pub(super) struct Slots<T> {
    slots: Vec<Slot<T>>,
}

struct Slot<T> {
    rec: T,
    live: bool,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots { slots: Vec::new() }
    }
}

/// A record that a new one overwrites in place, field by field (`Slots::fill`).
pub(super) trait Record {
    fn overwrite(&mut self, new: Self);
}

/// `overwrite` for a struct: every field named (a field added to the struct and not here
/// fails to compile: a dead record's value is never kept), each stored on its own (a
/// whole-record assignment builds the record on the stack and copies it).
macro_rules! overwrite_fields {
    ($t:ident { $($f:ident),* $(,)? }) => {
        impl Record for $t {
            #[inline(always)]
            fn overwrite(&mut self, new: $t) {
                let $t { $($f),* } = new;
                $(self.$f = $f;)*
            }
        }
    };
}

overwrite_fields!(Req {
    id,
    source,
    class,
    seq,
    pipeline,
    arrival,
    start,
    tokens,
    user,
    key,
    weight,
    client,
    progress,
    live_calls,
    entry,
    deadline,
    expired,
});

overwrite_fields!(Call {
    id,
    req,
    site,
    issue,
    path,
    attempt,
    draw,
    upstream_error,
    upstream_retry_after,
    in_service,
    service_timer,
    upstream_timer,
    parked_at,
    on_deadline,
    timer,
    retry_level,
    conn,
    up,
    inst,
    on_backup,
    stream,
    degrade,
    generation,
    base,
    service_start,
    job,
});

impl<T> Slots<T> {
    /// The live record in `slot`, if any.
    #[inline(always)]
    pub fn get(&self, slot: u32) -> Option<&T> {
        match self.slots.get(slot as usize) {
            Some(s) if s.live => Some(&s.rec),
            _ => None,
        }
    }

    #[inline(always)]
    pub fn get_mut(&mut self, slot: u32) -> Option<&mut T> {
        match self.slots.get_mut(slot as usize) {
            Some(s) if s.live => Some(&mut s.rec),
            _ => None,
        }
    }

    /// The live records, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().filter(|s| s.live).map(|s| &s.rec)
    }

    /// Slots, live or free.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Slots allocated (for the memory estimate).
    pub fn capacity(&self) -> usize {
        self.slots.capacity()
    }

    /// Bytes of one slot (for the memory estimate).
    pub const SLOT_BYTES: usize = std::mem::size_of::<Slot<T>>();

    /// Marks live slot `slot` free (its record stays, dead, until the slot is filled again).
    #[inline(always)]
    fn clear(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        debug_assert!(s.live, "frees a live slot");
        s.live = false;
    }
}

impl<T: Record> Slots<T> {
    /// Writes `rec` into free slot `slot` (or a new slot at the end: `slot == len()`) and
    /// marks it live. Inlined, so the caller's record is stored straight into the slot.
    #[inline(always)]
    fn fill(&mut self, slot: u32, rec: T) {
        let i = slot as usize;
        if i == self.slots.len() {
            self.slots.push(Slot { rec, live: true });
        } else {
            let s = &mut self.slots[i];
            debug_assert!(!s.live, "a free slot");
            s.rec.overwrite(rec);
            s.live = true;
        }
    }
}

/// Requests in the system, by slot.
#[derive(Default)]
pub(super) struct Requests {
    pub slots: Slots<Req>,
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
        let slot = self.free.pop().unwrap_or(self.slots.len() as u32);
        self.slots.fill(slot, r);
        slot
    }

    /// The request in `slot`, ending: the caller reads what it needs in place, then
    /// [`Requests::release`]s the slot (no whole-record move).
    #[inline]
    pub fn ending(&mut self, slot: u32) -> &mut Req {
        self.slots.get_mut(slot).expect("ends once")
    }

    /// Frees `slot` (its request ended once): the record stays in place, dead.
    #[inline]
    pub fn release(&mut self, slot: u32) {
        self.slots.clear(slot);
        self.free.push(slot);
        self.live -= 1;
    }
}

/// Calls in the system, by slot, with each slot's generation.
#[derive(Default)]
pub(super) struct Calls {
    pub slots: Slots<Call>,
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
                self.generations.push(0);
                self.slots.len() as u32
            }
        };
        c.generation = self.generations[slot as usize];
        self.slots.fill(slot, c);
        slot
    }

    /// Ends the call in `slot` (once): the slot's generation moves on and the record stays
    /// in place, dead; returns what its request needs to move on (its request's slot and
    /// its pipeline step), not the whole record.
    #[inline]
    pub fn remove(&mut self, slot: u32) -> (u32, Issue) {
        let c = self.slots.get(slot).expect("a call ends once");
        debug_assert!(c.timer.is_none() && c.parked_at.is_none() && c.retry_level.is_none());
        let ended = (c.req, c.issue);
        self.slots.clear(slot);
        self.generations[slot as usize] = self.generations[slot as usize].wrapping_add(1);
        self.free.push(slot);
        self.live -= 1;
        self.ended += 1;
        ended
    }
}
