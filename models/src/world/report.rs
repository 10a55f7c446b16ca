//! What a run reports: the summary, the invariant checks, per-request records and state
//! changes.

use super::*;

impl QueueingWorld {
    /// State changes recorded during the run, in time order.
    pub fn take_events(&mut self) -> Vec<ModelEvent> {
        std::mem::take(&mut self.obs.events)
    }

    /// The model's results at `end`.
    /// The scenario's metastability verdict window, if it declares one.
    pub fn recovery(&self) -> Option<&crate::recovery::RecoverySpec> {
        self.recovery.as_ref()
    }

    /// The counts of [`summary`](Self::summary), same names and values: each source's and
    /// class's measured requests by outcome and reason, and every governor's counters —
    /// without the quantiles, which cost a pass over each latency histogram (a live
    /// observer reads these at every sampling bucket: `sim-gui`'s per-bucket rates).
    pub fn summary_counts(&self) -> Summary {
        let mut out = Summary::default();
        for s in &self.traffic.sources {
            s.stats.emit_counts(&format!("source.{}", s.name), &mut out);
        }
        for (k, c) in self.traffic.classes.iter().enumerate() {
            self.traffic.class_stats(k).emit_counts(&format!("class.{}", c.name), &mut out);
        }
        self.governor_counters(&mut out);
        out
    }

    /// Governor counters (`<kind>.<name>.<counter>`, shadows `shadow.<kind>.<name>.…`).
    fn governor_counters(&self, out: &mut Summary) {
        for (g, name) in self.govs.arena.iter().zip(&self.govs.names) {
            for (counter, v) in g.summary_counters() {
                out.push_u64(format!("{name}.{counter}"), v);
            }
        }
    }

    pub fn summary(&self, end: SimTime) -> Summary {
        let mut out = Summary::default();
        let mut oldest: Vec<Option<SimTime>> = vec![None; self.traffic.sources.len()];
        // Ages at the end of the measured requests still in flight, per source and class.
        let mut ages: Vec<Vec<SimDuration>> = vec![Vec::new(); self.traffic.sources.len()];
        let mut class_ages: Vec<Vec<SimDuration>> = vec![Vec::new(); self.traffic.classes.len()];
        for r in self.reqs.slots.iter() {
            let o = &mut oldest[r.source as usize];
            *o = Some(o.map_or(r.arrival, |t| t.min(r.arrival)));
            if r.arrival >= self.warmup {
                ages[r.source as usize].push(end - r.arrival);
                class_ages[r.class as usize].push(end - r.arrival);
            }
        }
        for ((s, o), a) in self.traffic.sources.iter().zip(&oldest).zip(&ages) {
            let p = format!("source.{}", s.name);
            s.stats.emit(&p, a.len() as u64, o.map(|t| end - t), &mut out);
            s.stats.emit_censored(&p, a, &mut out);
            s.traffic.emit(&p, &mut out);
            if !self.pipelines[s.pipeline as usize].direct {
                // Amplification: upstream calls (retries included) ÷ user requests.
                out.push_u64(format!("{p}.upstream_calls"), s.upstream_calls);
                let offered = s.stats.measured_offered;
                let a =
                    if offered == 0 { f64::NAN } else { s.upstream_calls as f64 / offered as f64 };
                out.push_f64(format!("{p}.amplification"), a);
            }
        }
        // Per class: the sums over its sources, and the share answered within the SLA.
        // (From the requests' own classes: a population or trace rule can give a request
        // another class than its source's.)
        let mut class_oldest: Vec<Option<SimTime>> = vec![None; self.traffic.classes.len()];
        for r in self.reqs.slots.iter() {
            let o = &mut class_oldest[r.class as usize];
            *o = Some(o.map_or(r.arrival, |t| t.min(r.arrival)));
        }
        for (k, c) in self.traffic.classes.iter().enumerate() {
            let (a, o) = (&class_ages[k], class_oldest[k]);
            let p = format!("class.{}", c.name);
            let stats = self.traffic.class_stats(k);
            stats.emit(&p, a.len() as u64, o.map(|t| end - t), &mut out);
            let answered = stats.success + stats.degraded.iter().sum::<u64>();
            let share = |met: u64, of: u64| {
                if c.sla == SimDuration::ZERO || of == 0 {
                    f64::NAN
                } else {
                    met as f64 / of as f64
                }
            };
            out.push_f64(format!("{p}.sla_met"), share(c.within_sla, answered));
            stats.emit_censored(&p, a, &mut out);
            // In flight past the SLA already: certain misses. Younger ones are unknown, so
            // the censored share leaves them out.
            let over = if c.sla == SimDuration::ZERO {
                0
            } else {
                a.iter().filter(|&&x| x > c.sla).count() as u64
            };
            out.push_reported_u64(format!("{p}.in_flight_over_sla"), over);
            out.push_reported_f64(
                format!("{p}.sla_met_with_in_flight"),
                share(c.within_sla, answered + over),
            );
        }
        for s in &self.upstreams.stations {
            let p = format!("station.{}", s.name);
            out.push_f64(format!("{p}.mean_in_system"), s.in_system.mean(end));
            out.push_f64(format!("{p}.utilization"), s.busy.mean(end) / s.servers.mean(end));
            out.push_u64(format!("{p}.peak_queue"), s.st.peak_queue);
            out.push_u64(format!("{p}.abandoned_work"), s.abandoned_done);
            // Only under CoDel: a FIFO station's summary (and fingerprint) is unchanged.
            if let Some((dropped, lifo)) = s.st.codel_counts() {
                out.push_u64(format!("{p}.codel_dropped"), dropped);
                out.push_u64(format!("{p}.lifo_takes"), lifo);
            }
            if s.running.is_some() {
                out.push_f64(format!("{p}.cost"), s.cost);
                out.push_f64(format!("{p}.cost_abandoned"), s.cost_abandoned);
            }
            if let Some(rt) = &s.stream {
                Self::stream_summary(rt, &p, &mut out);
            }
        }
        for site in self.sites.iter().filter(|s| s.backup.is_some()) {
            out.push_u64(format!("call_site.{}.failovers", site.name), site.failovers);
        }
        self.fallback_summary(&mut out);
        for g in &self.upstreams.gpus {
            let p = &g.path;
            let st = &g.server.stats;
            out.push_u64(format!("{p}.answered"), g.answered);
            out.push_u64(format!("{p}.rejected_429"), g.rejected_429);
            out.push_u64(format!("{p}.abandoned_work"), g.abandoned_done);
            out.push_u64(format!("{p}.steps"), st.steps);
            out.push_u64(format!("{p}.preemptions"), st.preemptions);
            out.push_u64(format!("{p}.tokens_generated"), st.tokens_generated);
            let mean_batch =
                if st.steps == 0 { f64::NAN } else { st.batch_seqs_sum as f64 / st.steps as f64 };
            out.push_f64(format!("{p}.mean_batch"), mean_batch);
            let secs = end.0 as f64 / 1e9;
            // `busy_ns` counts a step when it starts: the part of a step still running at
            // the end lies outside [0, end] (it made utilisation 1.00044 once).
            let beyond = g.server.step_end().map_or(0, |e| e.0.saturating_sub(end.0));
            let busy = st.busy_ns.saturating_sub(beyond);
            out.push_f64(format!("{p}.utilization"), busy as f64 / end.0.max(1) as f64);
            out.push_f64(format!("{p}.tokens_per_s"), st.tokens_generated as f64 / secs);
            if let Some((running, cached, k)) = g.server.kv_blocks() {
                Self::prefix_summary(p, st.prefill_tokens, (running, cached, k), &mut out);
            }
        }
        self.pool_summary(&mut out);
        for c in &self.upstreams.conns {
            let (p, k) = (format!("connpool.{}", c.name), &c.pool.counters);
            let cols = [
                ("connects", k.connects),
                ("reuses", k.reuses),
                ("stale_failures", k.stale_failures),
                ("validations", k.validations),
                ("validation_discards", k.validation_discards),
                ("expired", k.expired),
                ("evicted_for_room", k.evicted_for_room),
                ("closed", k.closed),
                ("rejected", k.rejected),
            ];
            for (n, v) in cols {
                out.push_u64(format!("{p}.{n}"), v);
            }
        }
        for (name, q) in &self.upstreams.quotas {
            let p = format!("quota.{name}");
            out.push_u64(format!("{p}.admitted"), q.counters.admitted);
            out.push_u64(format!("{p}.rejected_429"), q.counters.rejected);
        }
        self.governor_counters(&mut out);
        self.entry_summary(end, &mut out);
        self.timeouts_summary(&mut out);
        self.stall_summary(&mut out);
        self.scaler_summary(&mut out);
        out
    }

    /// The numbered invariants of ARCHITECTURE.md that this world can check; empty = all hold.
    pub fn check_invariants(&self) -> Vec<String> {
        let mut v = Vec::new();
        self.fallback_violations(&mut v);
        self.net_violations(&mut v);
        let mut live_per_source = vec![0u64; self.traffic.sources.len()];
        for r in self.reqs.slots.iter() {
            live_per_source[r.source as usize] += 1;
        }
        for (s, live) in self.traffic.sources.iter().zip(live_per_source) {
            if s.stats.offered != s.stats.ended + live {
                v.push(format!(
                    "I1 conservation: source {} offered {} ≠ ended {} + in flight {live}",
                    s.name, s.stats.offered, s.stats.ended
                ));
            }
        }
        for (k, c) in self.traffic.classes.iter().enumerate() {
            let live = self.reqs.slots.iter().filter(|r| r.class as usize == k).count() as u64;
            let stats = self.traffic.class_stats(k);
            if stats.offered != stats.ended + live {
                v.push(format!(
                    "I1 conservation: class {} offered {} ≠ ended {} + in flight {live}",
                    c.name, stats.offered, stats.ended
                ));
            }
        }
        if self.calls.issued != self.calls.ended + self.calls.live {
            v.push(format!(
                "I22 call conservation: issued {} ≠ ended {} + in flight {}",
                self.calls.issued, self.calls.ended, self.calls.live
            ));
        }
        let live_calls = self.calls.slots.iter().count() as u64;
        let per_request: u64 = self.reqs.slots.iter().map(|r| r.live_calls as u64).sum();
        // Attempts of hedged calls are not calls of their request (`world/hedging.rs`).
        let attempts = self.hedging.attempts() as u64;
        if live_calls != self.calls.live || per_request + attempts != self.calls.live {
            v.push(format!(
                "I22 call conservation: {live_calls} call slots, {per_request} per request, \
                 {attempts} hedge attempts, counter {}",
                self.calls.live
            ));
        }
        for rt in &self.govs.gates {
            let g = self.govs.arena[rt.gov].as_gate().expect("a gate");
            if g.granted - g.returned != g.in_use() {
                v.push(format!(
                    "I2 permits: gate {} granted {} − returned {} ≠ in use {}",
                    rt.name,
                    g.granted,
                    g.returned,
                    g.in_use()
                ));
            }
        }
        v.extend(self.upstreams.gpus.iter().filter_map(|g| g.check()));
        if self.upstreams.stations.iter().any(|s| s.stream.is_some()) {
            self.stream_invariants(&mut v);
        }
        for (p, rt) in self.upstreams.conns.iter().enumerate() {
            let holding = self
                .calls
                .slots
                .iter()
                .filter(|c| self.sites[c.site as usize].conn_pool == Some(p as u16))
                .filter(|c| c.conn.is_some_and(|s| s != conn::ConnState::Waiting))
                .count() as u64;
            if holding != rt.pool.leased() {
                v.push(format!(
                    "I36 connections: pool {} leased {} ≠ calls holding one {holding}",
                    rt.name,
                    rt.pool.leased()
                ));
            }
        }
        for (name, q) in &self.upstreams.quotas {
            if q.counters.admitted != q.counters.completed + q.in_flight() {
                v.push(format!(
                    "I24 quota tickets: quota {name} admitted {} ≠ completed {} + in flight {}",
                    q.counters.admitted,
                    q.counters.completed,
                    q.in_flight()
                ));
            }
        }
        for s in &self.upstreams.stations {
            if s.st.capacity.is_some_and(|c| s.st.queue_len() > c) {
                v.push(format!(
                    "I3 capacity: station {} queue {} > {:?}",
                    s.name,
                    s.st.queue_len(),
                    s.st.capacity
                ));
            }
            if !s.st.is_work_conserving() {
                v.push(format!(
                    "I4 work conservation: station {} idle server beside a queue",
                    s.name
                ));
            }
        }
        self.entry_invariants(&mut v);
        crate::flow::cluster::check_clients(
            self.govs.arena.iter().zip(&self.govs.names).filter_map(|(g, n)| match g {
                crate::callsite::GovernorKind::ClusterFlow(c) => Some((n.as_str(), c)),
                _ => None,
            }),
            &mut v,
        );
        self.timeouts_invariants(&mut v);
        self.stall_violations(&mut v);
        self.scaler_violations(&mut v);
        v
    }

    /// The per-request records (empty unless `record_requests`), in the order requests
    /// ended, followed by the requests still in the system, by id.
    pub fn take_records(&mut self) -> Vec<RequestRecord> {
        let Some(mut out) = self.obs.records.take() else { return Vec::new() };
        let mut open: Vec<&Req> = self.reqs.slots.iter().collect();
        open.sort_by_key(|r| r.id);
        out.extend(open.into_iter().map(|r| RequestRecord {
            request_id: r.id.0,
            source: r.source,
            seq: r.seq,
            arrival: r.arrival,
            start: r.start,
            end: None,
            outcome: None,
            tokens: r.tokens,
            class: r.class,
            user: r.user,
            key: r.key,
        }));
        out
    }
}
