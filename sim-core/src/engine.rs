//! The run loop: a single-threaded, resumable discrete-event executor.
//!
//! Architecture invariants:
//! * Events are processed in `(time, phase, scheduling sequence)` order (see [`Phase`]).
//! * The loop is resumable: `step`, `run_until`, `run_for` can be interleaved in any way and
//!   the run is the same as one `run_until` to the end (same events, same fingerprint).
//! * Run-time changes are applied at instant boundaries: a change stamped `t` takes effect
//!   after every event at `t` and before any later event (so a recorded GUI session replays
//!   exactly).
//! * Metric sampling happens here, at bucket boundaries, not as calendar events: turning it
//!   on or off cannot change the run. A bucket boundary `b` is closed before the first event
//!   at or after `b`, after every change stamped before `b`.
//! * Guards: an event budget and a same-instant limit (`base + per_entity × live entities`,
//!   the entity count taken once when an instant first exceeds `base` and capped at
//!   `same_instant_max_entities`, so no parameter can raise it without bound and a loop at
//!   one instant is stopped within about a second of wall time) end the run with an error
//!   naming the component whose event tripped them; past the base the instant's events are
//!   counted by kind, and the same-instant error names the component that spun (`spin.rs`). Every [`CHECK_EVERY`] events the loop
//!   also checks what the run holds ([`World::holdings`]: entities and estimated bytes,
//!   against `max_entities` and `max_bytes`) and an outside stop flag (`interrupt`, set by
//!   a second signal): both end the run with an error too, never a hang or an aborted
//!   allocation. The checks only read; a run they do not stop is the same run.
//!
//! API boundary: models implement [`World`] (a closed event enum plus handlers) and talk to
//! the engine only through [`Ctx`].

use crate::calendar::{Calendar, Phase, TimerHandle};
use crate::fingerprint::Fingerprint;
use crate::metrics::{Metrics, SeriesRow};
use crate::time::{SimDuration, SimTime};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// An event of a world: a closed enum, one variant family per component kind. `Copy`:
/// events are small values (ids, not owned data), moved through the calendar's heap by copy.
pub trait Event: Send + Copy {
    /// Stable numeric id of the event kind (written down, never an enum discriminant).
    fn kind_id(&self) -> u16;
    /// The entity the event concerns (request, call, server…), for the fingerprint.
    fn entity_id(&self) -> u64;
    /// Where the event sits among events at the same instant.
    fn phase(&self) -> Phase;
}

/// A simulated world: components plus the wiring between them.
pub trait World: Send + Sized {
    type Event: Event;
    /// A run-time change (a parameter set at a time, from a timeline or the GUI).
    type Change: Send;
    fn handle(&mut self, event: Self::Event, ctx: &mut Ctx<'_, Self::Event>);
    fn apply_change(&mut self, change: Self::Change, ctx: &mut Ctx<'_, Self::Event>);
    /// Entities alive now (requests in the system, servers…): scales the same-instant guard,
    /// since 20,000 simultaneous arrivals are legitimate.
    fn live_entities(&self) -> u64;
    /// The component path an event belongs to, for error messages.
    fn component_of(&self, event: &Self::Event) -> String;
    /// What the world holds now that grows with load (requests, calls, records…), for the
    /// entity and memory bounds; checked every [`CHECK_EVERY`] events, so it must be cheap.
    fn holdings(&self) -> Holdings {
        Holdings::default()
    }
    /// The component holding the most (e.g. `station.llm (queue 9,999,000)`), named when
    /// a bound is exceeded (the slow path).
    fn largest_holder(&self) -> String {
        "world".into()
    }
}

/// What a world holds now (see [`World::holdings`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Holdings {
    /// Entities alive that cost memory: requests and calls in the system.
    pub entities: u64,
    /// Estimated bytes of the collections that grow with the run.
    pub bytes: u64,
}

/// What the world sees of the engine while handling an event.
pub struct Ctx<'a, E> {
    now: SimTime,
    calendar: &'a mut Calendar<E>,
    pub metrics: &'a mut Metrics,
}

impl<E: Event> Ctx<'_, E> {
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }
    /// Schedules an event at an absolute time, which must not be in the past (inlined:
    /// the event goes from the caller's registers into the calendar, `Calendar::schedule`).
    #[inline(always)]
    pub fn schedule_at(&mut self, at: SimTime, event: E) {
        assert!(at >= self.now, "event scheduled in the past ({at} < {})", self.now);
        let phase = event.phase();
        self.calendar.schedule(at, phase, event);
    }
    #[inline(always)]
    pub fn schedule_in(&mut self, delay: SimDuration, event: E) {
        let at = self.now + delay;
        self.schedule_at(at, event);
    }
    /// Schedules an event that may be cancelled (a timeout) at an absolute time.
    #[inline]
    pub fn timer_at(&mut self, at: SimTime, event: E) -> TimerHandle {
        assert!(at >= self.now, "timer set in the past ({at} < {})", self.now);
        let phase = event.phase();
        self.calendar.schedule_timer(at, phase, event)
    }
    #[inline]
    pub fn timer_in(&mut self, delay: SimDuration, event: E) -> TimerHandle {
        let at = self.now + delay;
        self.timer_at(at, event)
    }
    /// [`Self::timer_at`] in timer lane `lane` ([`Calendar::schedule_lane_timer`]): for a
    /// stream of timers armed in expiry order and nearly always cancelled (a fixed timeout
    /// per call). Same order of events as `timer_at`.
    #[inline]
    pub fn lane_timer_at(&mut self, lane: usize, at: SimTime, event: E) -> TimerHandle {
        assert!(at >= self.now, "timer set in the past ({at} < {})", self.now);
        let phase = event.phase();
        self.calendar.schedule_lane_timer(lane, at, phase, event)
    }
    /// Cancels a pending timer; returns its event if it had not fired yet.
    #[inline]
    pub fn cancel(&mut self, handle: TimerHandle) -> Option<E> {
        self.calendar.cancel(handle)
    }
}

/// Events a run may process (the event budget).
pub const MAX_EVENTS: u64 = 20_000_000_000;
/// Events allowed at one instant before the same-instant guard looks at live entities.
pub const SAME_INSTANT_BASE: u64 = 100_000;
/// Additional events allowed at one instant per live entity.
pub const SAME_INSTANT_PER_ENTITY: u64 = 64;
/// Most live entities that scale the same-instant limit: 40,000, so an instant holds at
/// most 100,000 + 64 × 40,000 = 2,660,000 events (0.7 s of wall time for a batch flood
/// into a loss station, measured for issue 32). A batch flood of 2⁶⁴
/// requests, or an idle capacity of 100,000 servers, cannot make a loop at one instant spin
/// for minutes before it is stopped.
pub const SAME_INSTANT_MAX_ENTITIES: u64 = 40_000;
/// Entities (requests and calls in the system, pending events) a run may hold at once:
/// 5·10⁶ (a request and its call are two).
pub const MAX_ENTITIES: u64 = 5_000_000;
/// Estimated bytes a run may hold in the collections that grow with it (2 GiB): with
/// `--jobs` runs at once, a batch stays within the machine's memory.
pub const MAX_RUN_BYTES: u64 = 2 << 30;
/// The loop checks holdings and the interrupt flag once every this many events.
pub const CHECK_EVERY: u64 = 1024;

/// Limits that stop a runaway run with an error instead of hanging.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Total events a run may process.
    pub max_events: u64,
    /// Events allowed at one instant before the guard looks at live entities.
    pub same_instant_base: u64,
    /// Additional events allowed at one instant per live entity.
    pub same_instant_per_entity: u64,
    /// Most live entities counted by the same-instant limit.
    pub same_instant_max_entities: u64,
    /// Most entities a run may hold at once ([`World::holdings`] plus pending events).
    pub max_entities: u64,
    /// Most estimated bytes a run may hold ([`World::holdings`] plus the calendar).
    pub max_bytes: u64,
    /// When set and true, the run stops with [`SimError::Interrupted`] (a second signal,
    /// or a grace period after the first, ran out). Checked every [`CHECK_EVERY`] events.
    pub interrupt: Option<&'static AtomicBool>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_events: MAX_EVENTS,
            same_instant_base: SAME_INSTANT_BASE,
            same_instant_per_entity: SAME_INSTANT_PER_ENTITY,
            same_instant_max_entities: SAME_INSTANT_MAX_ENTITIES,
            max_entities: MAX_ENTITIES,
            max_bytes: MAX_RUN_BYTES,
            interrupt: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error(
        "event budget of {limit} events exhausted at {time} (last event from component `{component}`)"
    )]
    EventBudget { limit: u64, time: SimTime, component: String },
    #[error(
        "{events} events at the single instant {time} exceed the limit of {limit} \
         (a zero-time loop?): component `{busiest}` spun, {busiest_events} of the last \
         {counted} events; the last one came from component `{component}`"
    )]
    ZeroTimeLoop {
        time: SimTime,
        events: u64,
        limit: u64,
        /// The component of the instant's last event.
        component: String,
        /// The component of the event kind with the most events past the base.
        busiest: String,
        busiest_events: u64,
        /// Events counted past the base.
        counted: u64,
    },
    #[error("run-time change stamped {at} is in the past (now {now})")]
    ChangeInPast { at: SimTime, now: SimTime },
    #[error(
        "{amount} {what} at {time} exceed the limit of {limit} (`{limit_name}`); most are held by {component}"
    )]
    Overload {
        time: SimTime,
        /// `"entities (requests and calls in the system, pending events)"` or `"estimated bytes"`.
        what: &'static str,
        amount: u64,
        limit: u64,
        /// The name of the limit's constant (`MAX_ENTITIES`, `MAX_RUN_BYTES`).
        limit_name: &'static str,
        component: String,
    },
    #[error(
        "interrupted at {time} after {events} events (a second signal, or the grace period after the first, ran out): the run did not finish"
    )]
    Interrupted { time: SimTime, events: u64 },
}

/// Why a run call returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The requested time was reached (all events at or before it are done).
    ReachedTime,
    /// The requested number of events was processed.
    EventCount,
    /// Nothing is left to do.
    Idle,
}

/// A world, its calendar, clock, metrics and fingerprint.
pub struct Simulation<W: World> {
    world: W,
    calendar: Calendar<W::Event>,
    now: SimTime,
    metrics: Metrics,
    fingerprint: Fingerprint,
    events: u64,
    limits: Limits,
    instant: SimTime,
    events_at_instant: u64,
    /// The same-instant limit, fixed when the instant first exceeds the base.
    instant_limit: Option<u64>,
    /// The instant's events past the base, by kind (for the same-instant error).
    spin: spin::SpinTally<W::Event>,
    changes: BTreeMap<(SimTime, u64), W::Change>,
    change_seq: u64,
    sampling: Option<SamplingState>,
    failed: Option<SimError>,
}

struct SamplingState {
    every: SimDuration,
    bucket_start: SimTime,
    rows: Vec<SeriesRow>,
}

impl<W: World> Simulation<W> {
    /// Builds a simulation. `init` wires the world: it may register metrics and schedule the
    /// first events at time zero.
    pub fn new(
        limits: Limits,
        sample_every: Option<SimDuration>,
        build: impl FnOnce(&mut Ctx<'_, W::Event>) -> W,
    ) -> Self {
        let mut metrics = Metrics::new();
        let sampling = sample_every.map(|every| {
            assert!(every.0 > 0, "sampling interval must be positive");
            metrics.enable_sampling();
            SamplingState { every, bucket_start: SimTime::ZERO, rows: Vec::new() }
        });
        let mut calendar = Calendar::new();
        let world = {
            let mut ctx =
                Ctx { now: SimTime::ZERO, calendar: &mut calendar, metrics: &mut metrics };
            build(&mut ctx)
        };
        Simulation {
            world,
            calendar,
            now: SimTime::ZERO,
            metrics,
            fingerprint: Fingerprint::default(),
            events: 0,
            limits,
            instant: SimTime::ZERO,
            events_at_instant: 0,
            instant_limit: None,
            spin: spin::SpinTally::new(),
            changes: BTreeMap::new(),
            change_seq: 0,
            sampling,
            failed: None,
        }
    }

    pub fn now(&self) -> SimTime {
        self.now
    }
    pub fn world(&self) -> &W {
        &self.world
    }
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }
    pub fn events_processed(&self) -> u64 {
        self.events
    }
    /// Time of the next scheduled event, if any.
    pub fn next_event_time(&self) -> Option<SimTime> {
        self.calendar.peek_time()
    }
    pub fn pending_events(&self) -> usize {
        self.calendar.len()
    }
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }
    pub fn error(&self) -> Option<&SimError> {
        self.failed.as_ref()
    }
    /// Time-series rows of closed buckets so far (empty when sampling is off).
    pub fn series(&self) -> &[SeriesRow] {
        self.sampling.as_ref().map(|s| s.rows.as_slice()).unwrap_or(&[])
    }
    pub fn take_series(&mut self) -> Vec<SeriesRow> {
        self.sampling.as_mut().map(|s| std::mem::take(&mut s.rows)).unwrap_or_default()
    }

    /// Queues a run-time change stamped `at` (≥ now). It takes effect after every event at
    /// `at` and before any later event.
    pub fn schedule_change(&mut self, at: SimTime, change: W::Change) -> Result<(), SimError> {
        if at < self.now {
            return Err(SimError::ChangeInPast { at, now: self.now });
        }
        self.changes.insert((at, self.change_seq), change);
        self.change_seq += 1;
        Ok(())
    }

    /// The earliest pending item. Items order by `(time, rank)`: a bucket boundary `b`
    /// (rank 0) comes before events at `b`; events (rank 1); a change stamped `c` (rank 2)
    /// comes after every event at `c`. Boundaries are only pending while there is other work.
    fn next_item(&self) -> Option<Item> {
        let event = self.calendar.peek_time().map(|t| (t, 1u8, Item::Event));
        let change = self.changes.keys().next().map(|k| (k.0, 2u8, Item::Change));
        let work = match (event, change) {
            (Some(e), Some(c)) => Some(if (c.0, c.1) < (e.0, e.1) { c } else { e }),
            (e, c) => e.or(c),
        }?;
        if let Some(s) = &self.sampling {
            let b = s.bucket_start + s.every;
            if (b, 0u8) < (work.0, work.1) {
                return Some(Item::Boundary(b));
            }
        }
        Some(match work.2 {
            Item::Event => Item::Event,
            _ => Item::Change,
        })
    }

    fn item_time(&self, item: Item) -> SimTime {
        match item {
            Item::Boundary(b) => b,
            Item::Event => self.calendar.peek_time().expect("event pending"),
            Item::Change => self.changes.keys().next().expect("change pending").0,
        }
    }

    /// Performs one non-event item.
    fn do_item(&mut self, item: Item) {
        match item {
            Item::Boundary(b) => {
                let s = self.sampling.as_mut().expect("boundary implies sampling");
                self.metrics.sample_bucket(s.bucket_start, b, &mut s.rows);
                s.bucket_start = b;
            }
            Item::Change => {
                let ((c, _), change) = self.changes.pop_first().expect("change pending");
                self.now = self.now.max(c);
                let mut ctx =
                    Ctx { now: self.now, calendar: &mut self.calendar, metrics: &mut self.metrics };
                self.world.apply_change(change, &mut ctx);
            }
            Item::Event => unreachable!("events go through process_event"),
        }
    }

    /// Processes the next event (after any changes and bucket boundaries due before it).
    /// Returns `Ok(false)` when no event is left; changes stamped later stay pending (for
    /// `run_until` to apply when the clock gets there), so stepping to idle never moves the
    /// clock past the last event.
    ///
    /// A run that ends at some instant is driven with [`Simulation::step_until`] instead:
    /// a change applied here may cancel the event that was next, and the event then
    /// processed may lie past that end.
    pub fn step(&mut self) -> Result<bool, SimError> {
        self.step_until(SimTime::MAX)
    }

    /// Processes the next event if it is due at or before `limit`, after the changes and
    /// bucket boundaries due before it. `Ok(false)`: none is (the changes and boundaries
    /// at or before `limit` that precede the next event are applied either way, as
    /// `run_until(limit)` would).
    ///
    /// Checking [`Simulation::next_event_time`] against the limit and then calling
    /// [`Simulation::step`] is not the same: a change due before that event may cancel it
    /// (a batch flushed by a run-time change cancels its window's timer), and the event
    /// processed would be a later one, possibly past the limit — a different run than
    /// one `run_until` to the limit (I7).
    pub fn step_until(&mut self, limit: SimTime) -> Result<bool, SimError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.calendar.is_empty() {
            return Ok(false);
        }
        loop {
            match self.next_item() {
                None => return Ok(false),
                Some(item) if self.item_time(item) > limit => return Ok(false),
                Some(Item::Event) => {
                    self.process_event()?;
                    return Ok(true);
                }
                Some(item) => self.do_item(item),
            }
        }
    }

    fn process_event(&mut self) -> Result<(), SimError> {
        let (t, event) = self.calendar.pop_next();
        debug_assert!(t >= self.now, "calendar went backwards");
        if t != self.instant || self.events == 0 {
            self.instant = t;
            self.events_at_instant = 0;
            if self.instant_limit.take().is_some() {
                self.spin.clear();
            }
        }
        self.now = t;
        self.events += 1;
        self.events_at_instant += 1;
        if self.events > self.limits.max_events {
            return Err(self.fail(SimError::EventBudget {
                limit: self.limits.max_events,
                time: t,
                component: self.world.component_of(&event),
            }));
        }
        if self.events.is_multiple_of(CHECK_EVERY) {
            self.check_holdings(t)?;
        }
        if self.events_at_instant > self.limits.same_instant_base {
            self.same_instant_guard(t, &event)?;
        }
        self.fingerprint.fold_event(t.0, event.kind_id(), event.entity_id());
        let mut ctx = Ctx { now: t, calendar: &mut self.calendar, metrics: &mut self.metrics };
        self.world.handle(event, &mut ctx);
        Ok(())
    }

    /// The same-instant limit, for an event past the instant's base (off the hot path).
    /// The limit is fixed once for the rest of the instant, when the base is first
    /// exceeded: a loop that creates entities as it spins cannot keep raising its own
    /// limit, so it is stopped after a bounded number of events. The entity count is capped
    /// at `same_instant_max_entities`: a parameter (a batch flood's `limit` near 2⁶⁴, a
    /// station's 100,000 servers) cannot raise it without bound either.
    #[cold]
    fn same_instant_guard(&mut self, t: SimTime, event: &W::Event) -> Result<(), SimError> {
        let limit = *self.instant_limit.get_or_insert_with(|| {
            let entities = self
                .world
                .live_entities()
                .max(self.calendar.len() as u64)
                .min(self.limits.same_instant_max_entities);
            self.limits
                .same_instant_base
                .saturating_add(self.limits.same_instant_per_entity.saturating_mul(entities))
        });
        self.spin.count(event);
        if self.events_at_instant <= limit {
            return Ok(());
        }
        let (busiest, busiest_events, counted) = match self.spin.busiest() {
            Some((e, n, all)) => (self.world.component_of(e), n, all),
            None => (self.world.component_of(event), 1, 1),
        };
        Err(self.fail(SimError::ZeroTimeLoop {
            time: t,
            events: self.events_at_instant,
            limit,
            component: self.world.component_of(event),
            busiest,
            busiest_events,
            counted,
        }))
    }

    /// The entity and memory bounds and the interrupt flag (every [`CHECK_EVERY`] events).
    #[cold]
    fn check_holdings(&mut self, t: SimTime) -> Result<(), SimError> {
        if self.limits.interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
            return Err(self.fail(SimError::Interrupted { time: t, events: self.events }));
        }
        let h = self.world.holdings();
        let pending = self.calendar.len() as u64;
        let entities = h.entities.saturating_add(pending);
        let bytes = h.bytes.saturating_add(self.calendar.bytes());
        let over = if entities > self.limits.max_entities {
            Some((
                "entities (requests and calls in the system, pending events)",
                entities,
                self.limits.max_entities,
                "MAX_ENTITIES",
            ))
        } else if bytes > self.limits.max_bytes {
            Some(("estimated bytes", bytes, self.limits.max_bytes, "MAX_RUN_BYTES"))
        } else {
            None
        };
        match over {
            None => Ok(()),
            Some((what, amount, limit, limit_name)) => Err(self.fail(SimError::Overload {
                time: t,
                what,
                amount,
                limit,
                limit_name,
                component: self.world.largest_holder(),
            })),
        }
    }

    fn fail(&mut self, e: SimError) -> SimError {
        self.failed = Some(e.clone());
        e
    }

    /// Processes every event, change and bucket boundary at or before `until`, then sets
    /// the clock to `until`.
    pub fn run_until(&mut self, until: SimTime) -> Result<Stop, SimError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.changes.is_empty() && self.sampling.is_none() {
            // Fast path: only events.
            while self.calendar.peek_time().is_some_and(|t| t <= until) {
                self.process_event()?;
            }
        } else {
            while let Some(item) = self.next_item() {
                if self.item_time(item) > until {
                    break;
                }
                match item {
                    Item::Event => self.process_event()?,
                    other => self.do_item(other),
                }
            }
        }
        self.now = self.now.max(until);
        Ok(if self.calendar.is_empty() && self.changes.is_empty() {
            Stop::Idle
        } else {
            Stop::ReachedTime
        })
    }

    /// Processes at most `n` events.
    pub fn run_for(&mut self, n: u64) -> Result<Stop, SimError> {
        let target = self.events.saturating_add(n);
        while self.events < target {
            if !self.step()? {
                return Ok(Stop::Idle);
            }
        }
        Ok(Stop::EventCount)
    }

    /// Ends the run at `end` (call after `run_until(end)`): closes every sampling bucket up
    /// to it, the last one possibly partial, and hands back the world and the results.
    pub fn finish(mut self, end: SimTime) -> Finished<W> {
        if self.failed.is_none() {
            // Close every bucket up to `end`, the last one possibly partial.
            if let Some(s) = self.sampling.as_mut() {
                while s.bucket_start < end {
                    let b = (s.bucket_start + s.every).min(end);
                    self.metrics.sample_bucket(s.bucket_start, b, &mut s.rows);
                    s.bucket_start = b;
                }
            }
        }
        let series = self.take_series();
        Finished {
            world: self.world,
            metrics: self.metrics,
            fingerprint: self.fingerprint,
            events: self.events,
            series,
            error: self.failed,
            end: self.now.max(end),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    Boundary(SimTime),
    Event,
    Change,
}

/// What is left of a simulation after [`Simulation::finish`].
pub struct Finished<W> {
    pub world: W,
    pub metrics: Metrics,
    pub fingerprint: Fingerprint,
    pub events: u64,
    pub series: Vec<SeriesRow>,
    pub error: Option<SimError>,
    pub end: SimTime,
}

mod spin;
#[cfg(test)]
mod tests;
