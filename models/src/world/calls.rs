//! A call's life: down its call site's governor stack, at the upstream station, back up.

use super::*;

impl QueueingWorld {
    fn call(&self, slot: u32) -> &Call {
        self.calls.slots.get(slot).expect("live call")
    }
    fn call_mut(&mut self, slot: u32) -> &mut Call {
        self.calls.slots.get_mut(slot).expect("live call")
    }

    pub(super) fn info(&self, slot: u32) -> CallInfo {
        let c = self.call(slot);
        let r = self.reqs.slots.get(c.req).expect("live request");
        // Drawn with the call's path where its site has governors (`site_draw`); else here.
        let draw = if self.sites[c.site as usize].stack.is_empty() {
            self.governor_draw(c.req, c.path)
        } else {
            c.draw
        };
        debug_assert_eq!(draw, self.governor_draw(c.req, c.path), "a call's bits follow its path");
        CallInfo {
            call: call_id(slot, c.generation),
            class: ClassId(r.class),
            key: r.key,
            user: r.user,
            tokens: match c.degrade {
                None => r.tokens.total(),
                Some(_) => {
                    Self::prompt_of(c, r).unwrap_or(0).saturating_add(r.tokens.output.unwrap_or(0))
                }
            },
            draw,
            retry_after: None,
        }
    }

    /// [`Self::governor_draw`] for a call at `site`, or 0 where the site has no governor (no
    /// one reads it on the way; [`Self::info`] draws it if asked).
    #[inline(always)]
    pub(super) fn site_draw(&self, site: usize, req: u32, path: u32) -> u64 {
        if self.sites[site].stack.is_empty() { 0 } else { self.governor_draw(req, path) }
    }

    /// The governors' bits of request `req`'s call on `path` (a keyed draw: stable across
    /// policies).
    pub(super) fn governor_draw(&self, req: u32, path: u32) -> u64 {
        let r = self.reqs.slots.get(req).expect("live request");
        self.traffic.sources[r.source as usize]
            .draw
            .request(r.seq)
            .with_call(path, 0)
            .bits(attr::GOVERNOR_BITS)
    }

    /// The client's timeout on call `slot`'s upstream call: its site's `timeout`, or the
    /// override for its request's class (`class_timeouts`). Zero: none.
    #[inline(always)]
    pub(super) fn call_timeout(&self, slot: u32) -> SimDuration {
        let c = self.call(slot);
        let site = &self.sites[c.site as usize];
        if site.class_timeout.is_empty() {
            return site.timeout;
        }
        let class = self.reqs.slots.get(c.req).expect("live request").class;
        site.class_timeout[class as usize].unwrap_or(site.timeout)
    }

    /// Sends call `slot` down its call site from `level`, and acts on the verdict.
    pub(super) fn descend(&mut self, slot: u32, level: usize, ctx: &mut Ctx<'_, Ev>) {
        let (site, base) = (self.call(slot).site as usize, self.call(slot).base as usize);
        if level + base == 0 && self.switched_off(slot, ctx) {
            return;
        }
        if level + base == self.sites[site].stack.len() {
            // Fast path: nothing (more) to pass.
            self.send_to_station(slot, ctx);
            return;
        }
        self.descend_stack(slot, level, ctx);
    }

    /// [`Self::descend`] through the governors from `level`. Out of line: the fast path
    /// then saves no registers (bench/NOTES.md, session 7).
    #[inline(never)]
    fn descend_stack(&mut self, slot: u32, level: usize, ctx: &mut Ctx<'_, Ev>) {
        let (site, inst, base) = self.call_place(slot);
        let info = self.info(slot);
        let next = callsite::descend(
            self.sites[site].stack_at(inst, base),
            &mut self.govs.arena,
            &info,
            level,
            ctx.now(),
            &mut self.govs.woken,
        );
        self.after_stack(site, inst, ctx);
        self.act(slot, next, ctx);
    }

    pub(super) fn act(&mut self, slot: u32, next: Next, ctx: &mut Ctx<'_, Ev>) {
        match next {
            Next::Upstream => self.send_to_station(slot, ctx),
            Next::Parked { level, deadline, on_deadline } => {
                let c = self.call_mut(slot);
                c.parked_at = Some(level);
                c.on_deadline = on_deadline;
                let id = c.id;
                if let Some(d) = deadline {
                    let h = ctx.timer_at(d, Ev::WaitDeadline { slot, id });
                    self.call_mut(slot).timer = Some(h);
                }
            }
            Next::Finished(o) => self.call_finished(slot, o, ctx),
            Next::Forked { level } => {
                self.call_mut(slot).parked_at = Some(level);
                self.fork_attempt(slot, level, 0, ctx);
            }
            Next::Retry { level, after } => {
                let c = self.call_mut(slot);
                c.retry_level = Some(level);
                let id = c.id;
                // A timer (same order as an event): a cut from above cancels the back-off.
                let h = ctx.timer_in(after, Ev::RetryDue { slot, id });
                self.call_mut(slot).timer = Some(h);
            }
        }
        self.update_gate_gauges(ctx);
    }

    /// The site, instance and base of call `slot` (its stack: `stack_at(inst, base)`).
    pub(super) fn call_place(&self, slot: u32) -> (usize, u16, u8) {
        let c = self.call(slot);
        (c.site as usize, c.inst, c.base)
    }

    /// Call `slot`'s climb is over: an attempt of a hedged call ends at its base
    /// (`world/hedging.rs`), any other call at its site.
    fn call_finished(&mut self, slot: u32, o: Outcome, ctx: &mut Ctx<'_, Ev>) {
        if self.call(slot).base > 0 {
            self.attempt_done(slot, o, ctx);
        } else {
            self.call_ended(slot, o, ctx);
        }
    }

    pub(super) fn on_retry_due(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let c = self.call_mut(slot);
        let level = c.retry_level.take().expect("a retry is due for a call waiting to retry");
        c.timer = None;
        c.attempt += 1;
        (c.up, c.on_backup) = (None, false);
        c.rekey();
        let site = c.site as usize;
        self.series_retry(site, ctx);
        self.descend(slot, level, ctx);
        self.resume_woken(ctx);
    }

    fn send_to_station(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let site = self.call(slot).site as usize;
        if let Some(p) = self.sites[site].conn_pool
            && !self.borrow_conn(slot, p, ctx)
        {
            return; // connecting, stale, waiting or refused
        }
        self.send_upstream(slot, ctx);
    }

    /// Sends the call to its upstream (a connection, if pooled, is in hand).
    pub(super) fn send_upstream(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let site = self.call(slot).site as usize;
        let up = match self.pick_upstream(slot) {
            Upstream::Pool(p) => Upstream::Gpu(self.route_to_pool(slot, p)),
            up => up,
        };
        self.call_mut(slot).up = Some(up);
        self.series_sent(site, ctx);
        let st = match up {
            Upstream::Station(st) => st,
            Upstream::Pool(_) => unreachable!("resolved above"),
            Upstream::Gpu(g) => {
                self.series_reached(up, ctx);
                let call = call_id(slot, self.call(slot).generation);
                let batch = self.sites[site]
                    .stack_for(self.call(slot).inst)
                    .iter()
                    .find_map(|&i| self.govs.arena[i].batch_of(call))
                    .unwrap_or(1);
                self.send_to_gpu(slot, g, batch, ctx);
                return;
            }
        };
        let now = ctx.now();
        let c = self.call(slot);
        let r = self.reqs.slots.get(c.req).expect("live request");
        let source = r.source;
        let job = Job {
            slot,
            id: c.job_id(),
            source,
            seq: r.seq,
            path: c.path,
            attempt: c.attempt,
            prompt_tokens: Self::prompt_of(c, r).unwrap_or(0),
            output_tokens: r.tokens.output.unwrap_or(0),
            ticket: None,
            sent: now,
        };
        if r.arrival >= self.warmup {
            self.traffic.sources[source as usize].upstream_calls += 1;
        }
        if self.net_send(st, job, ctx) {
            return; // on the wire: it reaches the station at `NetArrive`
        }
        self.reach_station(st, job, ctx);
    }

    /// Call `slot`'s work `job` reaches station `st` (at once, or after its network's
    /// request leg, `world/network.rs`). A request whose client gave up on the way is
    /// dropped where the station cancels abandoned work, else served as abandoned work.
    pub(super) fn reach_station(&mut self, st: u16, mut job: Job, ctx: &mut Ctx<'_, Ev>) {
        let (now, slot) = (ctx.now(), job.slot);
        self.series_reached(Upstream::Station(st), ctx);
        let live = self.calls.slots.get(slot).is_some_and(|c| c.awaits(job.id));
        if !live && self.upstreams.stations[st as usize].st.cancellation {
            self.waste_ended(job.id, now); // a cancelled hedge's work, dropped unserved
            return;
        }
        // The provider's quota answers first: 429, with a Retry-After, consumes nothing.
        if let Err(retry_after) = self.upstreams.admit_quota(st, &mut job, now) {
            self.waste_ended(job.id, now); // unserved: nothing wasted (no-op unless abandoned)
            if live {
                let o = Outcome::Rejected(Reason::Upstream429);
                self.upstream_answer(slot, o, retry_after, ctx);
            }
            return;
        }
        let admitted = self.upstreams.stations[st as usize].st.admit(job, now);
        // Without a network the client's timeout starts here (the send); with one it runs
        // since the send already (`net_send`).
        let timeout = if live { self.call_timeout(slot) } else { SimDuration::ZERO };
        if admitted != Admit::Full
            && timeout > SimDuration::ZERO
            && self.call(slot).upstream_timer.is_none()
        {
            // One timer lane per call site: a site's timeouts are mostly one length, armed
            // in expiry order, nearly always cancelled (`sim_core::calendar`'s lanes).
            let lane = self.call(slot).site as usize;
            let h =
                ctx.lane_timer_at(lane, now + timeout, Ev::UpstreamTimeout { slot, id: job.id });
            self.call_mut(slot).upstream_timer = Some(h);
        }
        match admitted {
            Admit::Start => self.start_service(st, job, ctx),
            Admit::Queued => {}
            Admit::Full => {
                self.work_ended(st, &job, false, now);
                self.waste_ended(job.id, now);
                if live {
                    let reason = self.upstreams.stations[st as usize].st.reject_as.reason();
                    self.upstream_answer(slot, Outcome::Rejected(reason), None, ctx);
                }
            }
        }
        self.update_station_gauges(st, ctx);
    }

    pub(super) fn start_service(&mut self, st: u16, job: Job, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let key = self.traffic.sources[job.source as usize]
            .draw
            .request(job.seq)
            .with_call(job.path, job.attempt);
        let station = &self.upstreams.stations[st as usize];
        let mut service = station.service_time(&job, key);
        if let Some(a) = station.scaler {
            service = self.scalers.warm_stretch(a, service, now);
        }
        let station = &self.upstreams.stations[st as usize];
        let cancellable = station.st.cancellation;
        let scripted = self.scripted_start(st, &job);
        if let Some(s) = scripted {
            service = s.service;
        }
        let done = Ev::ServiceDone { station: st, slot: job.slot, id: job.id };
        let Some(c) = self.calls.slots.get_mut(job.slot).filter(|c| c.awaits(job.id)) else {
            // Abandoned by its client while waiting, not cancelled: the work is done anyway.
            self.waste_started(job.id, now);
            ctx.schedule_in(service, done);
            if let Some(m) = &mut self.upstreams.stations[st as usize].running {
                m.insert(job.slot, job.id, job);
            }
            return;
        };
        c.in_service = true;
        c.service_start = now;
        // Keyed draws: taking them or not never shifts any other random number.
        c.upstream_error = self.upstreams.stations[st as usize].draw_error(key);
        c.upstream_retry_after = scripted.and_then(|s| s.retry_after);
        if let Some(s) = scripted {
            c.upstream_error = s.error;
        }
        // A streamed answer (`world/streaming.rs`): stalls stretch the service.
        let plain = c.upstream_error.is_none() && scripted.is_none();
        if plain && self.upstreams.stations[st as usize].stream.is_some() {
            service = self.plan_stream(st, &job, key, service, ctx);
        }
        let c = self.calls.slots.get_mut(job.slot).expect("live call");
        if cancellable {
            c.service_timer = Some(ctx.timer_in(service, done));
        } else {
            ctx.schedule_in(service, done);
        }
        let req = c.req;
        if let Some(m) = &mut self.upstreams.stations[st as usize].running {
            m.insert(job.slot, job.id, job);
        }
        self.request_started(req, now);
    }

    /// Calls the station's CoDel discipline dropped at its last dequeue (`crate::codel`):
    /// each one's work ends unserved and a live one is refused `rejected:shed`, as a full
    /// station refuses (`reach_station`). Whether any was; the caller resumes woken calls.
    pub(super) fn station_drops(&mut self, st: u16, ctx: &mut Ctx<'_, Ev>) -> bool {
        if !self.upstreams.stations[st as usize].st.has_dropped() {
            return false;
        }
        let now = ctx.now();
        for job in self.upstreams.stations[st as usize].st.take_dropped() {
            let live = self.calls.slots.get(job.slot).is_some_and(|c| c.awaits(job.id));
            self.work_ended(st, &job, false, now);
            self.waste_ended(job.id, now);
            if live {
                self.upstream_answer(job.slot, Outcome::Rejected(Reason::Shed), None, ctx);
            }
        }
        true
    }

    /// The station's work for `job` is over (done, cancelled or refused): the upstreams
    /// settle its quota ticket and its cost (`world/upstreams.rs`).
    fn work_ended(&mut self, st: u16, job: &Job, served: bool, now: SimTime) {
        let abandoned = self.calls.slots.get(job.slot).is_none_or(|c| !c.awaits(job.id));
        self.upstreams.work_ended(st, job, served, abandoned, now);
    }

    pub(super) fn on_service_done(&mut self, st: u16, slot: u32, id: u64, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        ctx.metrics.incr(self.upstreams.stations[st as usize].completed);
        if let Some(m) = &mut self.upstreams.stations[st as usize].running {
            let job = m.remove(slot, id).expect("work in service");
            self.work_ended(st, &job, true, now);
        }
        if let Some((next, _)) = self.upstreams.stations[st as usize].st.complete(now) {
            self.start_service(st, next, ctx);
        }
        let dropped = self.station_drops(st, ctx);
        self.update_station_gauges(st, ctx);
        let Some(c) = self.calls.slots.get_mut(slot).filter(|c| c.awaits(id)) else {
            // Abandoned work finished: nobody is waiting for it.
            self.waste_ended(id, now);
            ctx.metrics.incr(self.upstreams.stations[st as usize].wasted);
            self.upstreams.stations[st as usize].abandoned_done += 1;
            if dropped {
                self.resume_woken(ctx);
            }
            return;
        };
        c.in_service = false;
        c.service_timer = None;
        // Taken only when there (a `take` of `None` copies the empty record out anyway).
        if c.stream.is_some() {
            let s = c.stream.take().expect("checked");
            self.stream_completed(s, ctx);
        }
        let c = self.calls.slots.get_mut(slot).expect("live call");
        let outcome = match c.upstream_error {
            // Only a scripted answer is a 429 here (a quota's comes at admission).
            Some(Reason::Upstream429) => Outcome::Rejected(Reason::Upstream429),
            Some(r) => Outcome::Failed(r),
            None => Outcome::Success,
        };
        let retry_after = c.upstream_retry_after;
        self.upstream_answer(slot, outcome, retry_after, ctx);
        self.resume_woken(ctx);
    }

    /// The upstream of the call's attempt: the backup after a failover, else the weighted
    /// split's pick (a keyed draw per call: the same call meets the same vendor under every
    /// policy, and its retries stay with it), else the site's upstream.
    fn pick_upstream(&self, slot: u32) -> Upstream {
        let c = self.call(slot);
        let site = &self.sites[c.site as usize];
        if c.on_backup {
            return site.backup.expect("only a site with a backup fails over");
        }
        if site.split.is_empty() {
            return site.upstream;
        }
        let r = self.reqs.slots.get(c.req).expect("live request");
        let key = self.traffic.sources[r.source as usize].draw.request(r.seq);
        let total: u64 = site.split.iter().map(|s| s.1 as u64).sum();
        let mut x = (key.with_call(c.path, 0).uniform(attr::ROUTE) * total as f64) as u64;
        for &(up, w) in &site.split {
            if x < w as u64 {
                return up;
            }
            x -= w as u64;
        }
        site.split.last().expect("non-empty").0
    }

    /// Should this answer send the call to the site's backup instead of climbing? Once per
    /// attempt, for the upstream's own failures (5xx, 429, a full queue, the client's
    /// timeout), not for business errors.
    fn fail_over(&mut self, slot: u32, site: usize, o: Outcome) -> bool {
        let eligible = matches!(
            o,
            Outcome::Failed(Reason::Upstream5xx | Reason::Timeout | Reason::ConnectError)
                | Outcome::Rejected(Reason::Upstream429 | Reason::QueueFull)
        );
        let c = self.call_mut(slot);
        if !eligible || c.on_backup || c.up.is_none() {
            return false;
        }
        if self.sites[site].backup.is_none() {
            return false;
        }
        let c = self.call_mut(slot);
        c.on_backup = true;
        c.rekey();
        c.upstream_error = None;
        true
    }

    /// The upstream's answer (or the station's refusal) climbs the call site's whole stack.
    pub(super) fn answer(&mut self, slot: u32, outcome: Outcome, ctx: &mut Ctx<'_, Ev>) {
        self.answer_with(slot, outcome, None, ctx);
    }

    /// [`Self::answer`] with the Retry-After the upstream sent.
    pub(super) fn answer_with(
        &mut self,
        slot: u32,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        if self.call(slot).conn.is_some() {
            self.release_conn(slot, outcome, ctx);
        }
        let site = self.call(slot).site as usize;
        self.series_answer(site, outcome, ctx);
        if self.fail_over(slot, site, outcome) {
            self.sites[site].failovers += 1;
            self.send_upstream(slot, ctx);
            return;
        }
        let below = self.sites[site].stack.len() - self.call(slot).base as usize;
        if below == 0 {
            // Fast path: no governor to tell.
            self.call_finished(slot, outcome, ctx);
            return;
        }
        self.climb(slot, below, outcome, retry_after, ctx);
    }

    /// Carries `outcome` up the call's stack from below level `below`, and acts on it.
    pub(super) fn climb(
        &mut self,
        slot: u32,
        below: usize,
        outcome: Outcome,
        retry_after: Option<SimDuration>,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        let (site, inst, base) = self.call_place(slot);
        let info = CallInfo { retry_after, ..self.info(slot) };
        let next = callsite::ascend(
            self.sites[site].stack_at(inst, base),
            &mut self.govs.arena,
            &info,
            below,
            outcome,
            ctx.now(),
            &mut self.govs.woken,
        );
        self.after_stack(site, inst, ctx);
        self.act(slot, next, ctx);
    }

    /// The client gives up on its upstream call: the call fails with `timeout`. With
    /// cancellation the station drops the work (frees the server or the waiting place);
    /// without, the work goes on and its server stays busy until it ends.
    pub(super) fn on_upstream_timeout(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        self.call_mut(slot).upstream_timer = None;
        self.series_timeout(self.call(slot).site as usize, ctx);
        self.drop_upstream_work(slot, true, ctx);
        self.answer(slot, Outcome::Failed(Reason::Timeout), ctx);
        self.resume_woken(ctx);
    }

    /// The call stops waiting for its upstream work (client timeout, or cut short from a
    /// governor above: `cancel` false keeps the work running as abandoned work).
    pub(super) fn drop_upstream_work(&mut self, slot: u32, cancel: bool, ctx: &mut Ctx<'_, Ev>) {
        if let Some(s) = self.call_mut(slot).stream.take() {
            self.stream_dropped(s);
        }
        if self.net_on_wire(slot) {
            // Nothing at the station to drop (`world/network.rs`).
            if let Some(h) = self.call_mut(slot).upstream_timer.take() {
                ctx.cancel(h);
            }
            return;
        }
        let c = self.call_mut(slot);
        let (id, in_service) = (c.job_id(), c.in_service);
        c.in_service = false;
        let service_timer = c.service_timer.take();
        if let Some(h) = c.upstream_timer.take() {
            ctx.cancel(h);
        }
        let st = match c.up.expect("a call at its upstream") {
            Upstream::Station(st) => st,
            Upstream::Pool(_) => unreachable!("a call is at a pool's replica"),
            Upstream::Gpu(g) => {
                if cancel {
                    self.gpu_abandon(g, id, ctx);
                }
                return;
            }
        };
        if !cancel {
            return;
        }
        // A service follows the cancellation setting in force when it started (its
        // completion is cancellable exactly then); a waiting call, the setting now.
        if in_service {
            if let Some(h) = service_timer {
                ctx.cancel(h);
                if let Some(m) = &mut self.upstreams.stations[st as usize].running {
                    let job = m.remove(slot, id).expect("in service");
                    self.work_ended(st, &job, false, ctx.now());
                }
                let now = ctx.now();
                if let Some((next, _)) = self.upstreams.stations[st as usize].st.cancel_service(now)
                {
                    self.start_service(st, next, ctx);
                }
                self.station_drops(st, ctx); // the caller resumes woken calls
                self.update_station_gauges(st, ctx);
            }
        } else if self.upstreams.stations[st as usize].st.cancellation {
            let removed = self.upstreams.stations[st as usize].st.remove_waiting(|j| j.id == id);
            let job = removed.expect("a call not in service waits at its station");
            self.work_ended(st, &job, false, ctx.now());
            self.update_station_gauges(st, ctx);
        }
    }

    pub(super) fn on_deadline(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let c = self.call_mut(slot);
        c.timer = None;
        let level = c.parked_at.take().expect("deadline fires only for parked calls");
        let (site, reason, inst, base) = (c.site as usize, c.on_deadline, c.inst, c.base);
        let info = self.info(slot);
        let next = callsite::abandon(
            self.sites[site].stack_at(inst, base),
            &mut self.govs.arena,
            &info,
            level,
            reason,
            now,
            &mut self.govs.woken,
        );
        self.after_stack(site, inst, ctx);
        self.act(slot, next, ctx);
        self.resume_woken(ctx);
    }

    /// Resumes calls that governors woke (permits handed over) or answered, oldest first.
    /// The common case, nothing to resume, is one inlined test at the call site.
    #[inline]
    pub(super) fn resume_woken(&mut self, ctx: &mut Ctx<'_, Ev>) {
        if !self.govs.woken.is_empty() {
            self.resume_queued(ctx);
        }
    }

    #[inline(never)]
    fn resume_queued(&mut self, ctx: &mut Ctx<'_, Ev>) {
        // Bounded: each resumption consumes a wake-up, and a call is woken at most once
        // per level of its stack in one cascade (no request arrives meanwhile); the bound is
        // fixed on entry, since `live_calls` falls as woken calls end.
        let depth = self.sites.iter().map(|s| s.stack.len() as u64).max().unwrap_or(0);
        let bound = 1 + (depth + 1) * (self.calls.live + self.govs.woken.len() as u64);
        let mut guard = 0u64;
        while let Some(w) = self.govs.woken.pop_front() {
            guard += 1;
            assert!(guard <= bound, "wake-up loop");
            let (slot, generation) = slot_of(w.call);
            if let Some(k) = w.fork {
                self.resume_fork(slot, generation, w.governor, k, ctx);
                continue;
            }
            let c = self.calls.slots.get_mut(slot).expect("woken call is live");
            assert_eq!(c.generation, generation, "woken call id is current");
            // The call's own stack: its instance's copies of per-instance governors.
            let stack = self.sites[c.site as usize].stack_at(c.inst, c.base);
            if let Some(o) = w.answer
                && c.parked_at.is_none_or(|l| stack[l] != w.governor)
            {
                // Answered by a governor it passed (a time limiter's timeout): `cut.rs`.
                // Its parking level may have granted it (a permit handed over earlier in
                // this cascade) with the wake-up still queued: it holds that grant, so it
                // resumes first, and is cut from wherever it gets to (if still live).
                if c.parked_at.is_some()
                    && let Some(k) =
                        self.govs.woken.iter().position(|x| x.call == w.call && x.answer.is_none())
                {
                    self.govs.woken.remove(k);
                    let level = c.parked_at.take().expect("checked");
                    if let Some(h) = c.timer.take() {
                        ctx.cancel(h);
                    }
                    self.descend(slot, level + 1, ctx);
                    if self.calls.slots.get(slot).is_none_or(|c| c.generation != generation) {
                        continue; // it ended below: the answer is stale
                    }
                }
                self.cut_short(slot, w.governor, o, ctx);
                continue;
            }
            let level = c.parked_at.take().expect("woken call was parked");
            if let Some(h) = c.timer.take() {
                ctx.cancel(h);
            }
            match w.answer {
                None => self.descend(slot, level + 1, ctx),
                Some(o) => {
                    // Answered where it waits: a hedged call's attempts are cancelled.
                    self.cancel_attempts(slot, ctx);
                    self.climb(slot, level, o, None, ctx)
                }
            }
        }
    }

    /// A governor's own timer fired.
    pub(super) fn on_gov_wake(&mut self, g: usize, ctx: &mut Ctx<'_, Ev>) {
        self.govs.woke(g, ctx.now());
        self.after_governor(g, ctx);
        self.resume_woken(ctx);
        self.update_gate_gauges(ctx);
    }

    /// After the governors of a site's stack acted: their timers and state changes, for
    /// each governor whose mark says something may have changed (`Governor::take_changed`;
    /// a level the step did not reach, or whose state it left alone, is skipped). Debug
    /// builds check that the hand-off skipped would have done nothing.
    pub(super) fn after_stack(&mut self, site: usize, inst: u16, ctx: &mut Ctx<'_, Ev>) {
        // The common case, no level marked: one pass over the stack, held once. From the
        // first marked level (its mark taken by the pass) on, level by level as before.
        let stack = self.sites[site].stack_for(inst);
        let arena = &mut self.govs.arena;
        let first = stack.iter().position(|&g| arena[g].take_changed());
        let len = stack.len();
        if cfg!(debug_assertions) {
            for level in 0..first.unwrap_or(len) {
                self.debug_check_idle(self.sites[site].stack_for(inst)[level], ctx);
            }
        }
        let Some(first) = first else { return };
        self.after_governor(self.sites[site].stack_for(inst)[first], ctx);
        for level in first + 1..len {
            let g = self.sites[site].stack_for(inst)[level];
            if self.govs.arena[g].take_changed() {
                self.after_governor(g, ctx);
            } else {
                self.debug_check_idle(g, ctx);
            }
        }
    }

    /// Debug builds: a governor whose mark was not set would have given the hand-off
    /// nothing to do.
    #[inline(always)]
    fn debug_check_idle(&mut self, g: usize, ctx: &mut Ctx<'_, Ev>) {
        if cfg!(debug_assertions) {
            assert!(
                self.hand_off_is_idle(g, ctx),
                "{} changed what the world reads without marking it",
                self.govs.names[g]
            );
        }
    }

    /// Would [`Self::after_governor`] do nothing for `g` now: its timer in step, no event
    /// waiting, its series as published? (Taking an empty event list changes nothing.)
    fn hand_off_is_idle(&mut self, g: usize, ctx: &mut Ctx<'_, Ev>) -> bool {
        let mut evs = Vec::new();
        self.govs.arena[g].take_events(&mut evs);
        self.govs.wake_in_step(g, ctx.now()) && evs.is_empty() && self.series_published(g, ctx)
    }

    pub(super) fn after_governor(&mut self, g: usize, ctx: &mut Ctx<'_, Ev>) {
        self.sync_wake(g, ctx);
        self.series_governor(g, ctx);
        let mut evs = Vec::new();
        self.govs.arena[g].take_events(&mut evs);
        for e in evs {
            if let Some(closed) = e.closed {
                self.breaker_health(g, closed, ctx);
            }
            self.obs.events.push(ModelEvent {
                time: e.time,
                component: self.govs.names[g].clone(),
                kind: e.kind,
                from: e.from,
                to: e.to,
            });
        }
    }

    /// Keeps governor `g`'s timer in step with what it asks for.
    pub(super) fn sync_wake(&mut self, g: usize, ctx: &mut Ctx<'_, Ev>) {
        self.govs.sync_wake(g, ctx);
    }

    pub(super) fn update_station_gauges(&mut self, st: u16, ctx: &mut Ctx<'_, Ev>) {
        self.upstreams.stations[st as usize].gauges(ctx.now(), ctx.metrics);
    }

    pub(super) fn update_gate_gauges(&mut self, ctx: &mut Ctx<'_, Ev>) {
        self.govs.update_gauges(ctx);
    }
}
