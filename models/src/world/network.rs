//! A call's network legs (`crate::network`): the request leg before the station sees the
//! call (`NetArrive`), the response leg after the station answered (`NetReturn`).
//!
//! Architecture invariant (I49): a leg is keyed by (call slot, job id), so a call is on at
//! most one leg; a call on a leg is neither in service nor parked nor waiting to retry, and
//! a request leg's call has the leg's station as its upstream. The client's timeout of a
//! site with a network is armed when the client sends (`net_send`), so it counts both legs.
//!
//! API boundary: hooks called from `world/calls.rs` — `net_send` (the request leaves),
//! `upstream_answer` (the station's answer leaves), `net_on_wire` (a client that gives up
//! on a call on the wire touches no station) — and the two event handlers. A paused
//! client's answer waits on the response leg until the pause's end (`answer_on_wire`, from
//! `world/stalls.rs`).

use super::*;
use crate::network::{NetworkSpec, is_zero};
use sim_core::Dist;
use std::collections::BTreeMap;

pub(super) struct NetRt {
    /// Some call site or route has a leg (else every hook below answers at once).
    any: bool,
    /// Per call site: its legs (`None`: no network, or both legs zero).
    sites: Vec<Option<NetworkSpec>>,
    /// Per call site: its routes' legs by station, in place of the site's (`None`: zero).
    routes: Vec<Vec<(u16, Option<NetworkSpec>)>>,
    /// Legs on the wire, by (call slot, job id).
    legs: BTreeMap<(u32, u64), Leg>,
}

enum Leg {
    /// To station `st`, carrying the call's work as sent.
    Request { st: u16, job: Job },
    /// Back to the client, carrying the station's answer.
    Response { outcome: Outcome, retry_after: Option<SimDuration> },
}

impl NetRt {
    pub fn new(sc: &Scenario) -> NetRt {
        let legs = |n: &NetworkSpec| {
            Some(n.clone()).filter(|n| !(is_zero(&n.request) && is_zero(&n.response)))
        };
        let sites = sc.call_sites.iter().map(|c| c.network.as_ref().and_then(legs)).collect();
        let routes = sc
            .call_sites
            .iter()
            .map(|c| {
                let station = |up: &str| sc.stations.iter().position(|s| s.name == up);
                c.route_networks
                    .iter()
                    .map(|(up, n)| (station(up).expect("checked: a station") as u16, legs(n)))
                    .collect()
            })
            .collect();
        let mut net = NetRt { any: false, sites, routes, legs: BTreeMap::new() };
        net.any = net.has_legs();
        net
    }

    /// Does some call site or route have a leg? (`any`, recomputed whenever a leg changes.)
    fn has_legs(&self) -> bool {
        self.sites.iter().any(Option::is_some)
            || self.routes.iter().flatten().any(|(_, n)| n.is_some())
    }

    /// The legs of calls from `site` to station `st`: its route's, else the site's.
    fn spec(&self, site: usize, st: u16) -> Option<&NetworkSpec> {
        match self.routes[site].iter().find(|(s, _)| *s == st) {
            Some((_, n)) => n.as_ref(),
            None => self.sites[site].as_ref(),
        }
    }

    /// Legs on the wire (live entities of the run: a request whose client gave up still
    /// travels).
    pub fn on_wire(&self) -> u64 {
        self.legs.len() as u64
    }
}

impl QueueingWorld {
    /// This leg's delay for call `slot`'s current attempt (`None`: no such leg). A keyed
    /// draw of (request, call path, attempt, backup) with the leg's own attribute.
    #[inline]
    fn net_delay(&self, slot: u32, response: bool) -> Option<SimDuration> {
        if !self.net.any {
            return None;
        }
        self.leg_delay(slot, response)
    }

    #[inline(never)]
    fn leg_delay(&self, slot: u32, response: bool) -> Option<SimDuration> {
        let c = self.calls.slots.get(slot).expect("live call");
        let Some(Upstream::Station(st)) = c.up else { return None };
        let spec = self.net.spec(c.site as usize, st)?;
        let (d, id) = if response {
            (&spec.response, attr::NET_RESPONSE)
        } else {
            (&spec.request, attr::NET_REQUEST)
        };
        if is_zero(d) {
            return None;
        }
        let r = self.reqs.slots.get(c.req).expect("live request");
        let key = self.traffic.sources[r.source as usize]
            .draw
            .request(r.seq)
            .with_call(c.path, c.attempt | ((c.on_backup as u32) << 31));
        Some(d.sample(&mut key.attribute(id)))
    }

    /// The client sends call `slot`'s `job` to station `st`. On a site with a network the
    /// client's timeout starts now (it counts both legs); with a request leg the work is put
    /// on the wire and `true` returned (it reaches the station at `NetArrive`).
    #[inline]
    pub(super) fn net_send(&mut self, st: u16, job: Job, ctx: &mut Ctx<'_, Ev>) -> bool {
        self.net.any && self.send_on_wire(st, job, ctx)
    }

    #[inline(never)]
    fn send_on_wire(&mut self, st: u16, job: Job, ctx: &mut Ctx<'_, Ev>) -> bool {
        let site = self.calls.slots.get(job.slot).expect("live call").site as usize;
        if self.net.spec(site, st).is_none() {
            return false;
        }
        let timeout = self.call_timeout(job.slot);
        if timeout > SimDuration::ZERO {
            let ev = Ev::UpstreamTimeout { slot: job.slot, id: job.id };
            let h = ctx.timer_at(job.sent + timeout, ev);
            let c = self.calls.slots.get_mut(job.slot).expect("live call");
            debug_assert!(c.upstream_timer.is_none(), "one client timeout per attempt");
            c.upstream_timer = Some(h);
        }
        let Some(d) = self.net_delay(job.slot, false) else { return false };
        self.net.legs.insert((job.slot, job.id), Leg::Request { st, job });
        ctx.schedule_in(d, Ev::NetArrive { slot: job.slot, id: job.id });
        true
    }

    /// The request leg ends: the work reaches its station (whether or not its client still
    /// waits: `reach_station` decides).
    pub(super) fn on_net_arrive(&mut self, slot: u32, id: u64, ctx: &mut Ctx<'_, Ev>) {
        let Some(Leg::Request { st, job }) = self.net.legs.remove(&(slot, id)) else {
            unreachable!("a request leg arrives once")
        };
        self.reach_station(st, job, ctx);
        self.resume_woken(ctx);
    }

    /// The station answered call `slot` (done, 429, full queue): the answer climbs at once,
    /// or travels the response leg first. The client's timeout stays armed until the answer
    /// is in.
    pub(super) fn upstream_answer(
        &mut self,
        slot: u32,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        if let Some(d) = self.net_delay(slot, true) {
            self.answer_on_wire(slot, d, outcome, retry_after, ctx);
            return;
        }
        // A paused client takes the answer at its pause's end (`world/stalls.rs`).
        if ctx.now() < self.stalls.until && self.stall_answer(slot, outcome, retry_after, ctx) {
            return;
        }
        self.deliver(slot, outcome, retry_after, ctx);
    }

    /// The answer goes on the response leg, for `d`. Out of line: the common path, no
    /// network, then saves no registers (bench/NOTES.md, session 7).
    #[inline(never)]
    pub(super) fn answer_on_wire(
        &mut self,
        slot: u32,
        d: SimDuration,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        let id = self.calls.slots.get(slot).expect("live call").job_id();
        self.net.legs.insert((slot, id), Leg::Response { outcome, retry_after });
        ctx.schedule_in(d, Ev::NetReturn { slot, id });
    }

    fn deliver(
        &mut self,
        slot: u32,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        if let Some(h) = self.calls.slots.get_mut(slot).expect("live call").upstream_timer.take() {
            ctx.cancel(h);
        }
        self.answer_with(slot, outcome, retry_after, ctx);
    }

    /// The response leg ends: the answer reaches the client, unless it gave up meanwhile
    /// (its timeout fired, or it was cut short from above).
    pub(super) fn on_net_return(&mut self, slot: u32, id: u64, ctx: &mut Ctx<'_, Ev>) {
        let Some(Leg::Response { outcome, retry_after }) = self.net.legs.remove(&(slot, id)) else {
            unreachable!("a response leg returns once")
        };
        if self.calls.slots.get(slot).is_some_and(|c| c.awaits(id)) {
            self.deliver(slot, outcome, retry_after, ctx);
            self.resume_woken(ctx);
        }
    }

    /// Is call `slot`'s current attempt's request on the wire (to its station)?
    pub(super) fn net_request_on_wire(&self, slot: u32) -> bool {
        !self.net.legs.is_empty() && {
            let c = self.calls.slots.get(slot).expect("live call");
            matches!(self.net.legs.get(&(slot, c.job_id())), Some(Leg::Request { .. }))
        }
    }

    /// Is call `slot`'s current attempt on the wire (either leg)? A client giving up on it
    /// then touches no station: a request still travelling reaches its station as abandoned
    /// work, a response travelling is ignored when it arrives.
    pub(super) fn net_on_wire(&self, slot: u32) -> bool {
        !self.net.legs.is_empty() && {
            let c = self.calls.slots.get(slot).expect("live call");
            self.net.legs.contains_key(&(slot, c.job_id()))
        }
    }

    /// A run-time change of one leg of call site `site` (a declared network only: the
    /// registry lists no other), for calls (`response`: answers) sent from now on. Both legs
    /// zero are kept as none, as at build; the gate `any` is recomputed, so a site of a run
    /// built without any leg gets its delay (calls already on the wire keep theirs).
    pub(super) fn net_set_leg(&mut self, site: usize, response: bool, d: Dist<SimDuration>) {
        let n = self.net.sites[site].get_or_insert_with(NetworkSpec::default);
        if response {
            n.response = d;
        } else {
            n.request = d;
        }
        if is_zero(&n.request) && is_zero(&n.response) {
            self.net.sites[site] = None;
        }
        self.net.any = self.net.has_legs();
    }

    /// I49 (module doc).
    pub(super) fn net_violations(&self, out: &mut Vec<String>) {
        for (&(slot, id), leg) in &self.net.legs {
            let Some(c) = self.calls.slots.get(slot).filter(|c| c.awaits(id)) else {
                continue; // its client gave up: it travels on its own
            };
            let placed = c.in_service || c.parked_at.is_some() || c.retry_level.is_some();
            let wrong_station = match leg {
                Leg::Request { st, .. } => c.up != Some(Upstream::Station(*st)),
                Leg::Response { .. } => false,
            };
            if placed || wrong_station {
                out.push(format!(
                    "I49 network: call {} (slot {slot}) on the wire is also elsewhere \
                     (in service {}, parked {:?}, retrying {:?}, upstream {:?})",
                    c.id, c.in_service, c.parked_at, c.retry_level, c.up
                ));
            }
        }
    }
}
