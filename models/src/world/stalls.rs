//! Correlated stalls on the running world (`crate::stall`): each host's pauses and
//! slowdown, and what they hold.
//!
//! A host is an app instance or a call site's client; `StallsRt::until` is the latest
//! pause end over all hosts, so a run without a pause in force pays one comparison per
//! event (`QueueingWorld::handle`) and a scenario without stalls schedules, draws and
//! registers nothing: it replays bit for bit.
//!
//! Holding: an event of a paused host (an answer's `NetReturn`, a call's or request's timer,
//! an instance's wake-ups) is re-armed at the pause's end with its handle retargeted in the
//! field that owns it, so every later cancellation finds it; a station's answer to a paused
//! client goes on the response leg until the end (`Leg::Response`, as a network delay);
//! a paused instance's arrivals wait in its accept backlog; a paused site's calls wait in
//! the host's list. Local work is tracked with its timer and stretched eagerly: a pause
//! moves every end by the part of the pause after the current end of the previous one; a
//! slowdown change rescales every remaining part.
//!
//! Architecture invariant (I50, `stall_violations`): every tracked local work is a request
//! of its host in its local work (so a pause or slowdown moves exactly the host's work), and
//! a host holds calls only once it has paused. Held events are due at their host's pause
//! end by construction (re-armed there).
//!
//! API boundary: hooks called from `world.rs` (`stall_hold`), `world/network.rs`
//! (`stall_answer`), `world/requests.rs` (`stall_issue`), `world/entry.rs`
//! (`inst_paused`, `stall_work_start`, `stall_work_done`), and the two event handlers.

use super::*;
use crate::stall::{StallHost, StallSetters};
use std::collections::{BTreeMap, VecDeque};

/// No host (an app or call site without a stall).
const NONE: u32 = u32::MAX;

pub(super) struct StallsRt {
    /// The latest pause end over all hosts: nothing is held at or after it.
    pub until: SimTime,
    stalls: Vec<StallRt>,
    hosts: Vec<HostRt>,
    /// Per app: its instance 0's host (instance k: `+ k`); empty without stalls.
    app_host: Vec<u32>,
    /// Per call site: its client's host; empty without stalls.
    site_host: Vec<u32>,
}

struct StallRt {
    name: String,
    rate: f64,
    length: sim_core::Dist<SimDuration>,
    slowdown: f64,
    /// Its hosts: `first..first + n`.
    first: u32,
    n: u32,
    /// Hosts paused now (a time series: `stall.<name>.paused`).
    paused: GaugeId,
}

struct HostRt {
    stall: u16,
    /// `api.0` (an app instance) or `llm` (a call site).
    label: String,
    /// The app instance it is (`None`: a call site's client).
    inst: Option<(u16, u16)>,
    /// The current (or last) pause: `[since, until)`.
    since: SimTime,
    until: SimTime,
    /// The host's own stream: gaps and lengths of its random pauses.
    stream: Stream,
    /// The pending random pause's generation (a rate change redraws it).
    generation: u32,
    /// Local work in progress, by request slot.
    works: BTreeMap<u32, Work>,
    /// Calls its client would have sent during a pause: (request slot, request id, issue).
    issues: VecDeque<(u32, u64, Issue)>,
    pauses: u64,
    paused: SimDuration,
}

struct Work {
    id: u64,
    end: SimTime,
    timer: TimerHandle,
}

impl StallsRt {
    pub fn new(sc: &Scenario, seed: u64, ctx: &mut Ctx<'_, Ev>) -> StallsRt {
        let mut rt = StallsRt {
            until: SimTime::ZERO,
            stalls: Vec::new(),
            hosts: Vec::new(),
            app_host: Vec::new(),
            site_host: Vec::new(),
        };
        if sc.stalls.is_empty() {
            return rt;
        }
        rt.app_host = vec![NONE; sc.apps.len()];
        rt.site_host = vec![NONE; sc.call_sites.len()];
        for (k, s) in sc.stalls.iter().enumerate() {
            let first = rt.hosts.len() as u32;
            let labels: Vec<(String, Option<(u16, u16)>)> = match &s.host {
                StallHost::App(a) => {
                    let i = sc.apps.iter().position(|x| &x.name == a).expect("checked");
                    rt.app_host[i] = first;
                    let n = sc.apps[i].instances as u16;
                    (0..n).map(|k| (format!("{a}.{k}"), Some((i as u16, k)))).collect()
                }
                StallHost::CallSite(c) => {
                    let i = sc.call_sites.iter().position(|x| &x.name == c).expect("checked");
                    rt.site_host[i] = first;
                    vec![(c.clone(), None)]
                }
            };
            for (label, inst) in labels {
                rt.hosts.push(HostRt {
                    stall: k as u16,
                    stream: Stream::new(seed, &format!("stall/{}/{label}", s.name)),
                    label,
                    inst,
                    since: SimTime::ZERO,
                    until: SimTime::ZERO,
                    generation: 0,
                    works: BTreeMap::new(),
                    issues: VecDeque::new(),
                    pauses: 0,
                    paused: SimDuration::ZERO,
                });
            }
            rt.stalls.push(StallRt {
                name: s.name.clone(),
                rate: s.rate,
                length: s.length.clone(),
                slowdown: s.slowdown,
                first,
                n: rt.hosts.len() as u32 - first,
                paused: ctx.metrics.gauge(&format!("stall.{}.paused", s.name)),
            });
        }
        rt
    }

    /// The pause end of host `h` if it is paused at `now`.
    fn paused(&self, h: u32, now: SimTime) -> Option<SimTime> {
        let u = self.hosts.get(h as usize)?.until;
        (now < u).then_some(u)
    }

    fn inst_host(&self, app: u16, inst: u16) -> u32 {
        match self.app_host.get(app as usize) {
            Some(&h) if h != NONE => h + inst as u32,
            _ => NONE,
        }
    }
}

impl QueueingWorld {
    /// At the run's start: each host's first random pause, and the scenario's `pause`.
    pub(super) fn stalls_start(&mut self, pauses: &[SimDuration], ctx: &mut Ctx<'_, Ev>) {
        for (s, &p) in pauses.iter().enumerate() {
            for h in self.stall_hosts(s) {
                self.next_pause(h, ctx);
                if p > SimDuration::ZERO {
                    self.pause_host(h, p, ctx);
                }
            }
        }
    }

    fn stall_hosts(&self, s: usize) -> std::ops::Range<u32> {
        let st = &self.stalls.stalls[s];
        st.first..st.first + st.n
    }

    /// Is instance `inst` of `app` paused at `now`? (Its arrivals wait in the backlog.)
    #[inline]
    pub(super) fn inst_paused(&self, app: u16, inst: u16, now: SimTime) -> bool {
        now < self.stalls.until && self.inst_until(app, inst, now).is_some()
    }

    fn inst_until(&self, app: u16, inst: u16, now: SimTime) -> Option<SimTime> {
        self.stalls.paused(self.stalls.inst_host(app, inst), now)
    }

    /// The latest pause end of the hosts of call `slot` (its site's client, its request's
    /// instance) if one is paused at `now`.
    fn call_until(&self, slot: u32, now: SimTime) -> Option<SimTime> {
        let c = self.calls.slots.get(slot)?;
        let site = self.stalls.site_host.get(c.site as usize).copied().unwrap_or(NONE);
        let inst = self.req_until(c.req, now);
        self.stalls.paused(site, now).max(inst)
    }

    fn req_until(&self, req: u32, now: SimTime) -> Option<SimTime> {
        let e = self.reqs.slots.get(req)?.entry.as_ref()?;
        self.inst_until(e.app, e.inst, now)
    }

    /// An event of a paused host fires at the pause's end instead (`true`: held). A timer
    /// is re-armed and its handle put where the old one was, so a later cancel finds it.
    #[inline(never)]
    pub(super) fn stall_hold(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) -> bool {
        let now = ctx.now();
        let until = match ev {
            Ev::WaitDeadline { slot, .. }
            | Ev::RetryDue { slot, .. }
            | Ev::UpstreamTimeout { slot, .. }
            | Ev::StreamClose { slot, .. }
            | Ev::ConnReady { slot, .. }
            | Ev::ConnDeadline { slot, .. }
            | Ev::NetReturn { slot, .. } => self.call_until(slot, now),
            Ev::RequestDeadline { slot, .. } => self.req_until(slot, now),
            Ev::QueueTimeout { app, inst }
            | Ev::DispatchWake { app, inst }
            | Ev::PoolWake { app, inst } => self.inst_until(app, inst, now),
            _ => None,
        };
        let Some(until) = until else { return false };
        if let Ev::NetReturn { .. } = ev {
            ctx.schedule_at(until, ev);
            return true;
        }
        let h = ctx.timer_at(until, ev);
        let swap = |t: &mut Option<(SimTime, TimerHandle)>| *t = t.map(|(at, _)| (at, h));
        match ev {
            Ev::WaitDeadline { slot, .. }
            | Ev::RetryDue { slot, .. }
            | Ev::ConnReady { slot, .. }
            | Ev::ConnDeadline { slot, .. } => self.held_call(slot).timer = Some(h),
            Ev::UpstreamTimeout { slot, .. } | Ev::StreamClose { slot, .. } => {
                self.held_call(slot).upstream_timer = Some(h)
            }
            Ev::RequestDeadline { slot, .. } => {
                self.reqs.slots.get_mut(slot).expect("held: live").deadline = Some(h)
            }
            Ev::QueueTimeout { app, inst } => swap(&mut self.held_inst(app, inst).queue_wake),
            Ev::DispatchWake { app, inst } => swap(&mut self.held_inst(app, inst).disp_wake),
            Ev::PoolWake { app, inst } => swap(&mut self.held_inst(app, inst).pool_wake),
            _ => unreachable!("held above"),
        }
        true
    }

    fn held_call(&mut self, slot: u32) -> &mut inflight::Call {
        self.calls.slots.get_mut(slot).expect("held: live")
    }

    fn held_inst(&mut self, app: u16, inst: u16) -> &mut entry::InstanceRt {
        &mut self.entry_path.apps[app as usize].instances[inst as usize]
    }

    /// A station's answer to a paused client waits on the response leg until the pause's
    /// end (`true`: held).
    #[inline(never)]
    pub(super) fn stall_answer(
        &mut self,
        slot: u32,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
        ctx: &mut Ctx<'_, Ev>,
    ) -> bool {
        let now = ctx.now();
        let Some(until) = self.call_until(slot, now) else { return false };
        self.answer_on_wire(slot, until - now, outcome, retry_after, ctx);
        true
    }

    /// A call a paused site's client would send now waits for the pause's end (`true`:
    /// held).
    #[inline(never)]
    pub(super) fn stall_issue(&mut self, req: u32, issue: Issue, ctx: &mut Ctx<'_, Ev>) -> bool {
        let now = ctx.now();
        let r = self.reqs.slots.get(req).expect("live request");
        let pl = &self.pipelines[r.pipeline as usize];
        let site = pl.sites[issue.stage as usize][issue.step as usize];
        let h = self.stalls.site_host.get(site as usize).copied().unwrap_or(NONE);
        if self.stalls.paused(h, now).is_none() {
            return false;
        }
        let id = r.id.0;
        self.stalls.hosts[h as usize].issues.push_back((req, id, issue));
        true
    }

    /// Local work `d` of request `slot` starts on a stalled instance: it ends after the
    /// current pause plus `d` times the slowdown, tracked so pauses and slowdown changes
    /// move it (`false`: no stall here, the caller schedules it).
    pub(super) fn stall_work_start(
        &mut self,
        (app, inst): (u16, u16),
        (slot, id): (u32, u64),
        d: SimDuration,
        ctx: &mut Ctx<'_, Ev>,
    ) -> bool {
        let h = self.stalls.inst_host(app, inst);
        if h == NONE {
            return false;
        }
        let now = ctx.now();
        let host = &self.stalls.hosts[h as usize];
        let f = self.stalls.stalls[host.stall as usize].slowdown;
        let d = if f == 1.0 { d } else { SimDuration::from_ns_f64(d.0 as f64 * f) };
        let end = host.until.max(now) + d;
        let timer = ctx.timer_at(end, Ev::LocalWorkDone { slot, id });
        self.stalls.hosts[h as usize].works.insert(slot, Work { id, end, timer });
        true
    }

    /// Request `slot`'s local work on instance (`app`, `inst`) is done.
    pub(super) fn stall_work_done(&mut self, app: u16, inst: u16, slot: u32) {
        let h = self.stalls.inst_host(app, inst);
        if h != NONE {
            self.stalls.hosts[h as usize].works.remove(&slot);
        }
    }

    /// The next random pause of host `h`, an exponential gap from now (none at rate 0); a
    /// pending one is superseded (its generation).
    fn next_pause(&mut self, h: u32, ctx: &mut Ctx<'_, Ev>) {
        let host = &mut self.stalls.hosts[h as usize];
        host.generation = host.generation.wrapping_add(1);
        let rate = self.stalls.stalls[host.stall as usize].rate;
        if rate > 0.0 {
            let mean = SimDuration::from_ns_f64(1e9 / rate).max(SimDuration::from_ns(1));
            let gap = sim_core::Dist::exponential(mean).sample(&mut host.stream);
            let generation = host.generation;
            ctx.schedule_at(ctx.now() + gap, Ev::StallStart { host: h as u16, generation });
        }
    }

    /// A random pause starts (unless a rate change superseded it).
    pub(super) fn on_stall_start(&mut self, h: u16, generation: u32, ctx: &mut Ctx<'_, Ev>) {
        let host = &mut self.stalls.hosts[h as usize];
        if host.generation != generation {
            return;
        }
        let s = host.stall as usize;
        let len =
            self.stalls.stalls[s].length.sample(&mut host.stream).min(crate::stall::MAX_PAUSE);
        if len == SimDuration::ZERO {
            self.next_pause(h as u32, ctx);
            return;
        }
        self.pause_host(h as u32, len, ctx);
    }

    /// Host `h` pauses for `len` from now (a pause in force is extended to the later end):
    /// its local works move by the added part, its end is scheduled.
    fn pause_host(&mut self, h: u32, len: SimDuration, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let host = &mut self.stalls.hosts[h as usize];
        let was = host.until.max(now);
        let until = now + len;
        if until <= was {
            return; // inside the pause in force
        }
        let fresh = host.until <= now;
        if fresh {
            host.since = now;
            host.pauses += 1;
        }
        let shift = until - was;
        host.until = until;
        host.paused = host.paused + shift;
        for (&slot, w) in host.works.iter_mut() {
            ctx.cancel(w.timer);
            w.end += shift;
            w.timer = ctx.timer_at(w.end, Ev::LocalWorkDone { slot, id: w.id });
        }
        let (s, label) = (host.stall as usize, host.label.clone());
        self.stalls.until = self.stalls.until.max(until);
        ctx.schedule_at(until, Ev::StallEnd { host: h as u16 });
        if fresh {
            self.stall_gauge(s, ctx);
        }
        self.stall_event(s, now, "pause", label, format!("until {until}"));
    }

    /// A `pause` or `resume` row of `events.parquet` (component `stall.<name>`, from: the
    /// host).
    fn stall_event(
        &mut self,
        s: usize,
        now: SimTime,
        kind: &'static str,
        host: String,
        to: String,
    ) {
        let component = format!("stall.{}", self.stalls.stalls[s].name);
        self.obs.events.push(ModelEvent { time: now, component, kind, from: host, to });
    }

    /// `stall.<name>.paused`: its hosts paused now.
    fn stall_gauge(&self, s: usize, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let n = self.stall_hosts(s).filter(|&h| self.stalls.paused(h, now).is_some()).count();
        ctx.metrics.set(self.stalls.stalls[s].paused, now, n as i64);
    }

    /// A pause's end (a stale one, of a pause since extended, does nothing): the calls the
    /// client held are sent in order, the instance's backlog is taken, the next random pause
    /// is drawn.
    pub(super) fn on_stall_end(&mut self, h: u16, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let host = &mut self.stalls.hosts[h as usize];
        if host.until != now {
            return;
        }
        let (s, label, since) = (host.stall as usize, host.label.clone(), host.since);
        let issues = std::mem::take(&mut host.issues);
        self.stall_gauge(s, ctx);
        self.stall_event(s, now, "resume", label, format!("paused {}", now - since));
        for (req, id, issue) in issues {
            // A request whose budget ended it meanwhile sends nothing.
            if self.reqs.slots.get(req).is_some_and(|r| r.id.0 == id) {
                self.issue_call(req, issue, ctx);
            }
        }
        if let Some((app, inst)) = self.stalls.hosts[h as usize].inst {
            self.entry_take_backlog(app, inst, ctx);
            self.entry_sync(app, inst, ctx);
        }
        self.next_pause(h as u32, ctx);
        self.resume_woken(ctx);
    }

    /// Host `h`'s local works in progress run `f_new / f_old` as long for their remaining
    /// part (from the pause's end if paused).
    fn rescale_works(&mut self, h: u32, ratio: f64, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let host = &mut self.stalls.hosts[h as usize];
        let from = host.until.max(now);
        for (&slot, w) in host.works.iter_mut() {
            let rest = w.end.0.saturating_sub(from.0);
            let end = from + SimDuration::from_ns_f64(rest as f64 * ratio);
            if end != w.end {
                ctx.cancel(w.timer);
                w.end = end;
                w.timer = ctx.timer_at(end, Ev::LocalWorkDone { slot, id: w.id });
            }
        }
    }

    /// `stall.<name>.pauses` and `.paused_s`: pauses started (an extension is not a new
    /// one) and paused time, summed over the stall's hosts, over the whole run.
    pub(super) fn stall_summary(&self, out: &mut Summary) {
        for (s, st) in self.stalls.stalls.iter().enumerate() {
            let hosts = self.stall_hosts(s).map(|h| &self.stalls.hosts[h as usize]);
            let (n, ns) = hosts.fold((0, 0u64), |(n, ns), h| (n + h.pauses, ns + h.paused.0));
            out.push_u64(format!("stall.{}.pauses", st.name), n);
            out.push_f64(format!("stall.{}.paused_s", st.name), ns as f64 / 1e9);
        }
    }

    /// I50 (module doc).
    pub(super) fn stall_violations(&self, out: &mut Vec<String>) {
        for (h, host) in self.stalls.hosts.iter().enumerate() {
            if !host.issues.is_empty() && host.until == SimTime::ZERO {
                out.push(format!("I50 stalls: host {} holds calls but never paused", host.label));
            }
            for (&slot, w) in &host.works {
                let r = self.reqs.slots.get(slot).filter(|r| r.id.0 == w.id);
                let ok = r.and_then(|r| r.entry.as_ref()).is_some_and(|e| {
                    e.stage == entry::Stage::LocalWork
                        && self.stalls.inst_host(e.app, e.inst) == h as u32
                });
                if !ok {
                    out.push(format!(
                        "I50 stalls: host {} tracks local work of slot {slot} (due {}) that is not its",
                        host.label, w.end
                    ));
                }
            }
        }
    }

    /// A `stall.*` change: the stall's hosts follow (`crate::stall::StallSetters`).
    pub(super) fn set_stall(
        &mut self,
        stall: usize,
        param: &str,
        v: ParamValue,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        use crate::params::ApplyParam as _;
        let now = ctx.now();
        let mut change = StallChange { world: self, stall, ctx };
        (&mut change as &mut dyn StallSetters).apply_param(param, v, now)
    }
}

/// A `stall.*` change in the world's hands.
struct StallChange<'a, 'c, 'e> {
    world: &'a mut QueueingWorld,
    stall: usize,
    ctx: &'c mut Ctx<'e, Ev>,
}

impl StallSetters for StallChange<'_, '_, '_> {
    fn set_rate(&mut self, rate: f64) {
        self.world.stalls.stalls[self.stall].rate = rate;
        for h in self.world.stall_hosts(self.stall) {
            // During a pause the next one is drawn at its end.
            if self.world.stalls.paused(h, self.ctx.now()).is_none() {
                self.world.next_pause(h, self.ctx);
            }
        }
    }
    fn set_length(&mut self, d: sim_core::Dist<SimDuration>) {
        self.world.stalls.stalls[self.stall].length = d;
    }
    fn pause_now(&mut self, d: SimDuration, _now: SimTime) {
        if d > SimDuration::ZERO {
            for h in self.world.stall_hosts(self.stall) {
                self.world.pause_host(h, d, self.ctx);
            }
        }
    }
    fn set_slowdown(&mut self, f: f64, _now: SimTime) {
        let st = &mut self.world.stalls.stalls[self.stall];
        let ratio = f / st.slowdown;
        st.slowdown = f;
        for h in self.world.stall_hosts(self.stall) {
            self.world.rescale_works(h, ratio, self.ctx);
        }
    }
}

impl QueueingWorld {
    /// `stall.<name>` (the component of a host's pause events).
    pub(super) fn stall_component(&self, h: u16) -> String {
        let host = &self.stalls.hosts[h as usize];
        format!("stall.{}", self.stalls.stalls[host.stall as usize].name)
    }
}
