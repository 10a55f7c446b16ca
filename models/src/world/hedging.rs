//! Hedged calls (`crate::hedge`): a call parked at a hedging governor and its attempts.
//!
//! An attempt is a call record of its own (a slot, an id, its own work at the upstream)
//! whose `base` is the level below the hedging governor: it descends `stack[base..]`, and
//! its climb ends there, where the governor hears its outcome (`Governor::on_attempt`)
//! instead of the levels above. Attempt k keeps the parked call's request, site, attempt
//! number and pipeline position; its path carries k (`path | k << 27`, above every
//! pipeline path), so attempt 0 meets exactly the random numbers the call would have met
//! unhedged, and each hedge its own service time, errors and route.
//!
//! When the parked call leaves the governor's level — answered from there, abandoned there
//! (cut from above, its request's budget) — its attempts still running are cancelled, each
//! abandoned where it is as a time limiter's cut does (`world/cut.rs`, with the hedge's
//! `cancel`). The server time their work took is added to the governor's wasted time: a
//! service cancelled at once counts until now; work left running (no cancellation at the
//! station, or `cancel` off) is remembered by its work id and counted from its service start
//! to its end. Work whose answer was already travelling back (a network's response leg) is
//! not counted.
//!
//! Architecture invariant: attempts are not calls of their request (`live_calls` does not
//! count them; a request's budget cuts the parked call, which cancels them); every attempt
//! ends exactly once, by its climb reaching its base or by its cancellation.

use super::*;
use std::collections::BTreeMap;

/// The attempts of hedged calls in flight and the abandoned work they left.
#[derive(Default)]
pub(super) struct HedgingRt {
    /// Attempt slot → (parked call's slot, attempt number, hedging governor).
    attempt_of: BTreeMap<u32, (u32, u32, usize)>,
    /// Parked call's slot → its attempts' slots in flight, in sending order.
    children: BTreeMap<u32, Vec<u32>>,
    /// Abandoned work of a cancelled attempt still at a station: work id → (governor, its
    /// service start once started).
    waste: BTreeMap<u64, (usize, Option<SimTime>)>,
}

impl HedgingRt {
    /// Attempts in flight.
    pub(super) fn attempts(&self) -> usize {
        self.attempt_of.len()
    }
}

impl QueueingWorld {
    /// Sends attempt `k` of call `slot`, parked at `level` of its stack, below that level.
    pub(super) fn fork_attempt(&mut self, slot: u32, level: usize, k: u32, ctx: &mut Ctx<'_, Ev>) {
        let p = self.calls.slots.get(slot).expect("a parked call").clone();
        let g = self.sites[p.site as usize].stack_at(p.inst, p.base)[level];
        let base = p.base as usize + level + 1;
        assert!(base <= u8::MAX as usize && k < 16, "hedge depth and attempts bounded");
        let path = p.path | (k << 27);
        let id = self.calls.next_id;
        self.calls.next_id += 1;
        let draw = self.site_draw(p.site as usize, p.req, path);
        let fresh = Call::new(id, p.req, p.site, p.issue, path, draw, p.inst);
        let mut c = Call { attempt: p.attempt, degrade: p.degrade, base: base as u8, ..fresh };
        c.rekey();
        let child = self.calls.insert(c);
        self.hedging.attempt_of.insert(child, (slot, k, g));
        self.hedging.children.entry(slot).or_default().push(child);
        self.descend(child, 0, ctx);
    }

    /// A fork asked by governor `g` for call `slot` (generation `generation`): sent if the
    /// call still waits there (a cut earlier in the same cascade may have ended it).
    pub(super) fn resume_fork(
        &mut self,
        slot: u32,
        generation: u32,
        g: usize,
        k: u32,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        let Some(c) = self.calls.slots.get(slot).filter(|c| c.generation == generation) else {
            return;
        };
        let Some(level) = c.parked_at else { return };
        if self.sites[c.site as usize].stack_at(c.inst, c.base)[level] == g {
            self.fork_attempt(slot, level, k, ctx);
        }
    }

    /// Attempt `child`'s outcome reached its base: its governor hears it, the attempt ends.
    pub(super) fn attempt_done(&mut self, child: u32, o: Outcome, ctx: &mut Ctx<'_, Ev>) {
        let Some((slot, k, g)) = self.hedging.attempt_of.remove(&child) else {
            // Being cancelled: resumed with a grant it held (`resume_granted`), its climb
            // ended before the cut; nobody hears its outcome.
            self.calls.remove(child);
            return;
        };
        self.forget_child(slot, child);
        self.calls.remove(child);
        let info = self.info(slot);
        self.govs.arena[g].on_attempt(&info, k, o, ctx.now());
        callsite::drain(g, &mut self.govs.arena, &mut self.govs.woken);
        self.after_governor(g, ctx);
    }

    fn forget_child(&mut self, slot: u32, child: u32) {
        let kids = self.hedging.children.get_mut(&slot).expect("its parked call's attempts");
        kids.retain(|&x| x != child);
        if kids.is_empty() {
            self.hedging.children.remove(&slot);
        }
    }

    /// Call `slot` leaves its hedging level: its attempts still running are cancelled.
    pub(super) fn cancel_attempts(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let Some(kids) = self.hedging.children.remove(&slot) else { return };
        for child in kids {
            let (_, _, g) = self.hedging.attempt_of.remove(&child).expect("an attempt");
            let cancel = match &self.govs.arena[g] {
                GovernorKind::Hedge(h) => h.cancels(),
                _ => true,
            };
            if !self.resume_granted(child, ctx) {
                continue; // it ended on the way
            }
            let c = self.calls.slots.get(child).expect("a live attempt");
            let (site, inst, base) = (c.site as usize, c.inst, c.base);
            let stack: Vec<usize> = self.sites[site].stack_at(inst, base).to_vec();
            let info = self.info(child);
            let left = self.work_left(child, cancel);
            self.cut_below(child, &stack, 0, cancel, &info, ctx);
            self.after_stack(site, inst, ctx);
            match left {
                Left::Cancelled(start) => self.add_waste(g, ctx.now() - start),
                Left::Running(job, start) => {
                    self.hedging.waste.insert(job, (g, start));
                }
                Left::Nothing => {}
            }
            self.calls.remove(child);
        }
    }

    /// An attempt being cancelled whose parking level released it earlier in this cascade
    /// (a permit handed over, an answer where it waits) with the wake-up still queued holds
    /// that grant: it resumes first (as `resume_queued` does before a time limiter's cut)
    /// and is cut from wherever it gets to. Whether it is still live.
    fn resume_granted(&mut self, child: u32, ctx: &mut Ctx<'_, Ev>) -> bool {
        let c = self.calls.slots.get(child).expect("a live attempt");
        let generation = c.generation;
        let Some(level) = c.parked_at else { return true };
        let g = self.sites[c.site as usize].stack_at(c.inst, c.base)[level];
        let id = call_id(child, generation);
        let queued = self
            .govs
            .woken
            .iter()
            .position(|w| w.call == id && w.governor == g && w.fork.is_none());
        let Some(k) = queued else { return true };
        let w = self.govs.woken.remove(k).expect("found");
        let c = self.calls.slots.get_mut(child).expect("live");
        c.parked_at = None;
        if let Some(h) = c.timer.take() {
            ctx.cancel(h);
        }
        match w.answer {
            None => self.descend(child, level + 1, ctx),
            Some(o) => self.climb(child, level, o, None, ctx),
        }
        self.calls.slots.get(child).is_some_and(|c| c.generation == generation)
    }

    /// What cancelling attempt `child` leaves at its station (read before the cut).
    fn work_left(&self, child: u32, cancel: bool) -> Left {
        let c = self.calls.slots.get(child).expect("live");
        let Some(Upstream::Station(st)) = c.up else { return Left::Nothing };
        let station_cancels = self.upstreams.stations[st as usize].st.cancellation;
        if self.net_request_on_wire(child) {
            // Dropped on arrival where the station cancels, else served as abandoned work.
            return if station_cancels { Left::Nothing } else { Left::Running(c.job_id(), None) };
        }
        if self.net_on_wire(child) {
            return Left::Nothing; // its answer travelling back: the work is over (not counted)
        }
        if c.in_service {
            return match cancel && c.service_timer.is_some() {
                true => Left::Cancelled(c.service_start),
                false => Left::Running(c.job_id(), Some(c.service_start)),
            };
        }
        match cancel && station_cancels {
            true => Left::Nothing,
            false => Left::Running(c.job_id(), None),
        }
    }

    fn add_waste(&mut self, g: usize, d: SimDuration) {
        if let GovernorKind::Hedge(h) = &mut self.govs.arena[g] {
            h.add_wasted(d);
        }
    }

    /// Abandoned work `job` started service at a station.
    pub(super) fn waste_started(&mut self, job: u64, now: SimTime) {
        if let Some(e) = self.hedging.waste.get_mut(&job) {
            e.1 = Some(now);
        }
    }

    /// Abandoned work `job` ended at a station (`served`: its service ran to its end).
    pub(super) fn waste_ended(&mut self, job: u64, now: SimTime) {
        if let Some((g, start)) = self.hedging.waste.remove(&job) {
            self.add_waste(g, now - start.unwrap_or(now));
        }
    }
}

/// A cancelled attempt's work at its station.
enum Left {
    Nothing,
    /// Its service was cancelled now; it had started then.
    Cancelled(SimTime),
    /// It runs on (work id, its service start if started).
    Running(u64, Option<SimTime>),
}
