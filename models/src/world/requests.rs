//! The request's life: arrival, its pipeline's calls, its end.

use super::*;

impl QueueingWorld {
    pub(super) fn on_arrival(&mut self, source: u16, rate_gen: u32, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let src = &mut self.traffic.sources[source as usize];
        if rate_gen != src.traffic.rate_gen {
            return; // rescheduled by a rate change
        }
        src.traffic.pending = None;
        let seq = src.issued;
        src.issued += 1;
        if src.limit.is_none_or(|l| src.issued < l) {
            let rate = src.traffic.rate;
            let next = match (&src.trace, &src.interarrival) {
                // A trace source: the next row's time, until the rows run out.
                (Some(t), _) => t.offset(src.issued as usize).map(|off| src.start + off),
                (None, Some(dist)) => {
                    let gap = dist.sample(&mut src.stream);
                    match &src.profile {
                        None if rate == 1.0 => Some(now + gap),
                        None => Some(now + SimDuration::from_ns_f64(gap.0 as f64 / rate)),
                        // `None`: the profile stays at zero for ever; the source is done.
                        Some(p) => p.advance(now, gap.0 as f64 / rate),
                    }
                }
                (None, None) => unreachable!("checked: a source has a trace or an inter-arrival"),
            };
            if let Some(at) = next {
                let rate_gen = src.traffic.rate_gen;
                ctx.schedule_at(at, Ev::Arrival { source, rate_gen });
                if src.trace.is_none() {
                    // Remembered, so a run-time rate change can rescale the pending gap.
                    src.traffic.pending = Some(at);
                }
            }
        }
        self.new_request(source, seq, None, ctx);
    }

    /// A request of `source` with sequence number `seq` (the key of its random numbers)
    /// enters the system, sent by closed-loop user `client` if any.
    pub(super) fn new_request(
        &mut self,
        source: u16,
        seq: u64,
        client: Option<u32>,
        ctx: &mut Ctx<'_, Ev>,
    ) -> RequestId {
        let now = ctx.now();
        let a = self.draw_attributes(source, seq, client);
        let src = &mut self.traffic.sources[source as usize];
        let measured = now >= self.warmup;
        src.stats.offered += 1;
        src.stats.measured_offered += measured as u64;
        let class = &mut self.traffic.classes[a.class as usize];
        debug_assert!(
            class.mirror_of.is_none_or(|s| s == source),
            "a mirrored class has one source"
        );
        if class.mirror_of.is_none() {
            class.stats.offered += 1;
            class.stats.measured_offered += measured as u64;
        }
        ctx.metrics.incr(src.arrivals);
        let id = RequestId(self.reqs.next_id);
        self.reqs.next_id += 1;
        let (pipeline, app) = (src.pipeline, src.app);
        let key = src.draw.request(seq);
        let pl = &self.pipelines[pipeline as usize];
        let fast = pl.direct && app.is_none();
        // A direct call's request goes in with its progress a constant (nothing built on
        // the stack and copied); a pipeline's starts here and is put in after.
        let started = (!fast).then(|| {
            let mut draw = |stage: u16, step: u16| fanout_draw(key, stage, step);
            Progress::start(&pl.p, &mut draw)
        });
        // Built in the argument: the inlined insert writes it straight into its slot.
        let slot = self.reqs.insert(Req {
            id,
            source,
            class: a.class,
            seq,
            pipeline,
            arrival: now,
            start: None,
            tokens: a.tokens,
            user: a.user,
            key: a.key,
            weight: a.weight,
            client: client.unwrap_or(traffic::NO_CLIENT),
            progress: Progress::single(),
            live_calls: 0,
            entry: None,
            deadline: None,
            expired: false,
        });
        let Some((progress, advance)) = started else {
            // A direct call: issued here, without building the pipeline's list.
            self.arm_budget(slot, ctx);
            self.issue_call(slot, Issue { stage: 0, step: 0, index: 0 }, ctx);
            return id;
        };
        self.reqs.slots.get_mut(slot).expect("inserted").progress = progress;
        self.arm_budget(slot, ctx);
        match app {
            Some(app) => self.entry_arrive(slot, app, advance, ctx),
            None => self.advance(slot, advance, ctx),
        }
        id
    }

    /// Acts on the pipeline's verdict for request `req`.
    pub(super) fn advance(&mut self, req: u32, advance: Advance, ctx: &mut Ctx<'_, Ev>) {
        // A stage's start may release the request's thread or wait for one (`timeouts.rs`).
        let Some(advance) = self.stage_thread(req, advance, ctx) else { return };
        match advance {
            Advance::Issue(issues) => {
                for issue in issues {
                    self.issue_call(req, issue, ctx);
                }
            }
            Advance::Done(o) => self.end_request(req, o, ctx),
        }
    }

    pub(super) fn issue_call(&mut self, req: u32, issue: Issue, ctx: &mut Ctx<'_, Ev>) {
        // A paused client sends it at its pause's end (`world/stalls.rs`).
        if ctx.now() < self.stalls.until && self.stall_issue(req, issue, ctx) {
            return;
        }
        let r = self.reqs.slots.get_mut(req).expect("live request");
        r.live_calls += 1;
        let pl = &self.pipelines[r.pipeline as usize];
        let site = pl.sites[issue.stage as usize][issue.step as usize];
        let path = if pl.direct { 0 } else { issue.call_path() };
        // Its app instance's key + 1 (0: no app): which per-instance governors it meets.
        let entry = r.entry.as_ref().map(|e| (e.app, e.inst));
        let inst = entry.map_or(0, |(app, inst)| self.instance_key(app, inst) as u16 + 1);
        let id = self.calls.next_id;
        self.calls.next_id += 1;
        let draw = self.site_draw(site as usize, req, path);
        // Built in the argument: the inlined insert writes it straight into its slot.
        let slot = self.calls.insert(Call::new(id, req, site, issue, path, draw, inst));
        self.descend(slot, 0, ctx);
        self.resume_woken(ctx);
    }

    /// A call ended at its site: it moves on along its degradation chain, or is over.
    pub(super) fn call_ended(&mut self, slot: u32, outcome: Outcome, ctx: &mut Ctx<'_, Ev>) {
        if let Some(o) = self.chain_step(slot, outcome, false, ctx) {
            self.call_done(slot, o, ctx);
        }
    }

    /// A call is over: its request's pipeline moves on.
    pub(super) fn call_done(&mut self, slot: u32, outcome: Outcome, ctx: &mut Ctx<'_, Ev>) {
        let (req, issue) = self.calls.remove(slot);
        let r = self.reqs.slots.get_mut(req).expect("a call's request outlives it");
        r.live_calls -= 1;
        if r.expired {
            // Its budget ran out: nothing more is issued; it ends with its last call.
            if r.live_calls == 0 {
                self.end_request(req, Outcome::Failed(Reason::Timeout), ctx);
            }
            return;
        }
        let pl = &self.pipelines[r.pipeline as usize];
        if pl.direct && r.entry.is_none() {
            // The one call of a direct request: its outcome is the request's.
            self.end_request(req, outcome, ctx);
            return;
        }
        let key = self.traffic.sources[r.source as usize].draw.request(r.seq);
        let mut draw = |stage: u16, step: u16| fanout_draw(key, stage, step);
        let advance = r.progress.call_ended(&pl.p, issue, outcome, &mut draw);
        self.advance(req, advance, ctx);
    }

    pub(super) fn end_request(&mut self, slot: u32, outcome: Outcome, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        // Read in place, then the slot is freed (no whole-record move).
        let r = self.reqs.ending(slot);
        assert_eq!(r.live_calls, 0, "a request ends after its last call");
        let (id, source, class, arrival, client) = (r.id, r.source, r.class, r.arrival, r.client);
        // Taken only when there (a `take` of `None` copies the empty record out anyway).
        let entry = if r.entry.is_some() { r.entry.take() } else { None };
        let deadline = r.deadline;
        if let Some(recs) = &mut self.obs.records {
            recs.push(RequestRecord {
                request_id: id.0,
                source,
                seq: r.seq,
                arrival,
                start: r.start,
                end: Some(now),
                outcome: Some(outcome),
                tokens: r.tokens,
                class,
                user: r.user,
                key: r.key,
            });
        }
        self.reqs.release(slot);
        if let Some(h) = deadline {
            ctx.cancel(h);
        }
        let measured = arrival >= self.warmup;
        let src = &mut self.traffic.sources[source as usize];
        let latency = now - arrival;
        src.stats.record_end(outcome, latency, measured);
        let class_rt = &mut self.traffic.classes[class as usize];
        if class_rt.mirror_of.is_none() {
            class_rt.stats.record_end(outcome, latency, measured);
        }
        if measured
            && class_rt.sla > SimDuration::ZERO
            && matches!(outcome, Outcome::Success | Outcome::Degraded(_))
            && latency <= class_rt.sla
        {
            class_rt.within_sla += 1;
        }
        // The time series shows the warm-up too: its own time axis tells them apart.
        if matches!(outcome, Outcome::Success | Outcome::Degraded(_)) {
            ctx.metrics.record(src.latency, latency.0);
            ctx.metrics.record(self.obs.class_latency[class as usize], latency.0);
        }
        self.obs.class_outcomes[class as usize].record(outcome, ctx.metrics);
        if client != traffic::NO_CLIENT {
            self.client_answered(source, client, id, outcome, ctx);
        }
        if let Some(e) = entry {
            self.entry_ended(e, ctx);
        }
    }

    /// The first service start of a request's calls: its wait is measured once.
    #[inline(always)]
    pub(super) fn request_started(&mut self, req: u32, now: SimTime) {
        let r = self.reqs.slots.get_mut(req).expect("live request");
        if r.start.is_some() {
            return;
        }
        r.start = Some(now);
        if r.arrival >= self.warmup {
            self.traffic.sources[r.source as usize].stats.record_start(now - r.arrival);
            let class = &mut self.traffic.classes[r.class as usize];
            if class.mirror_of.is_none() {
                class.stats.record_start(now - r.arrival);
            }
        }
    }

    pub(super) fn on_warmup_end(&mut self, now: SimTime) {
        for s in &mut self.upstreams.stations {
            s.in_system.restart(now);
            s.busy.restart(now);
            s.servers.restart(now);
            s.st.peak_queue = s.st.queue_len();
        }
        self.entry_warmup_end(now);
    }
}

/// The uniform that picks a step's number of calls: keyed by the request and the step's
/// position, so every policy sees the same fan-out.
fn fanout_draw(key: DrawKey, stage: u16, step: u16) -> f64 {
    let path = ((stage as u32 + 1) << 16) | ((step as u32) << 8);
    key.with_call(path, 0).uniform(attr::FANOUT)
}
