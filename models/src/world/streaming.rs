//! Streamed answers at run time (`crate::stream`): a streaming station's service plans the
//! call's stream when it starts (a keyed stall, the chunk times in closed form), the client's
//! read timeout becomes at most one timer (`StreamClose`, in place of the total timeout when
//! it comes first), and the stream's figures are recorded when it ends.
//!
//! Architecture invariant (I39, I40): a call holds a stream plan only while in service at a
//! streaming station; per streaming station, streams started = completed + interrupted
//! (read timeout) + dropped (the client's total timeout, or cut short from above) + live.
//! A scenario without a streaming station registers no metric, draws no number and
//! schedules no event here.

use super::*;
use crate::stream::StreamTiming;
use sim_core::metrics::Quantiles;

/// A streaming station's stream statistics.
pub(super) struct StreamRt {
    ttft: HistId,
    token_gap: HistId,
    max_gap: HistId,
    stalls_counter: CounterId,
    interruptions_counter: CounterId,
    started: u64,
    completed: u64,
    interrupted: u64,
    dropped: u64,
    stalls: u64,
    ttft_q: Quantiles,
    token_gap_q: Quantiles,
    max_gap_q: Quantiles,
}

impl StreamRt {
    pub(super) fn new(station: &str, m: &mut sim_core::metrics::Metrics) -> Self {
        StreamRt {
            ttft: m.histogram(&format!("station.{station}.ttft")),
            token_gap: m.histogram(&format!("station.{station}.inter_token_gap")),
            max_gap: m.histogram(&format!("station.{station}.max_chunk_gap")),
            stalls_counter: m.counter(&format!("station.{station}.stream_stalls")),
            interruptions_counter: m.counter(&format!("station.{station}.stream_interruptions")),
            started: 0,
            completed: 0,
            interrupted: 0,
            dropped: 0,
            stalls: 0,
            ttft_q: Quantiles::new(),
            token_gap_q: Quantiles::new(),
            max_gap_q: Quantiles::new(),
        }
    }
}

/// A call's stream in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CallStream {
    station: u16,
    timing: StreamTiming,
    /// From sending the call to its first chunk (provider queueing included).
    ttft: SimDuration,
}

impl QueueingWorld {
    /// A streaming station starts serving call `job` (its client still waiting, a plain
    /// answer: no injected error, no scripted one). Plans the stream — a stall is a keyed
    /// draw, so the same call meets the same stall under every policy — arms the read
    /// timeout's close if it comes before the total timeout, and returns the service time,
    /// stretched by the stall (the server stays busy through it).
    pub(super) fn plan_stream(
        &mut self,
        st: u16,
        job: &Job,
        key: DrawKey,
        service: SimDuration,
        ctx: &mut Ctx<'_, Ev>,
    ) -> SimDuration {
        let now = ctx.now();
        let station = &self.upstreams.stations[st as usize].st;
        let cfg = &station.stream;
        let per_token = if station.latency_multiplier != 1.0 {
            SimDuration::from_ns_f64(station.per_output_token.0 as f64 * station.latency_multiplier)
        } else {
            station.per_output_token
        };
        let mut timing =
            StreamTiming::new(service, per_token, job.output_tokens as u64, cfg.chunk_tokens);
        let stalled = cfg.stall_rate > 0.0 && key.uniform(attr::STREAM_STALL) < cfg.stall_rate;
        if stalled {
            let extra = cfg.stall_duration.sample(&mut key.attribute(attr::STREAM_STALL_LENGTH));
            timing = timing.with_stall(timing.stall_position(cfg.stall_after), extra);
        }
        let rt = self.upstreams.stations[st as usize].stream.as_mut().expect("a streaming station");
        rt.started += 1;
        if stalled {
            rt.stalls += 1;
            ctx.metrics.incr(rt.stalls_counter);
        }
        let ttft = SimDuration((now + timing.first).0 - job.sent.0);
        let site = &self.sites[self.calls.slots.get(job.slot).expect("live call").site as usize];
        let timeout = self.call_timeout(job.slot);
        let total = (timeout > SimDuration::ZERO).then(|| job.sent + timeout);
        let close = timing.close_at(site.read_timeout).map(|off| now + off);
        let c = self.calls.slots.get_mut(job.slot).expect("live call");
        if let Some(t) = close
            && total.is_none_or(|d| t < d)
        {
            // The read timeout comes first: its close replaces the total timeout's timer.
            if let Some(h) = c.upstream_timer.take() {
                ctx.cancel(h);
            }
            let ev = Ev::StreamClose { slot: job.slot, id: job.id };
            c.upstream_timer = Some(ctx.timer_at(t, ev));
        }
        c.stream = Some(CallStream { station: st, timing, ttft });
        timing.end()
    }

    /// The client's read timeout closed the stream: the call fails with
    /// `stream_interrupted`; the station keeps or drops the work per its `cancellation`.
    pub(super) fn on_stream_close(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let c = self.call_mut_for_stream(slot);
        c.upstream_timer = None;
        let s = c.stream.take().expect("a closed stream was planned");
        let rt = self.upstreams.stations[s.station as usize].stream.as_mut().expect("streaming");
        rt.interrupted += 1;
        rt.ttft_q.record(s.ttft.0);
        ctx.metrics.incr(rt.interruptions_counter);
        ctx.metrics.record(rt.ttft, s.ttft.0);
        self.drop_upstream_work(slot, true, ctx);
        self.answer(slot, Outcome::Failed(Reason::StreamInterrupted), ctx);
        self.resume_woken(ctx);
    }

    /// The stream reached its last chunk with its client reading.
    pub(super) fn stream_completed(&mut self, s: CallStream, ctx: &mut Ctx<'_, Ev>) {
        let rt = self.upstreams.stations[s.station as usize].stream.as_mut().expect("streaming");
        rt.completed += 1;
        let max_gap = s.timing.max_gap().0;
        rt.ttft_q.record(s.ttft.0);
        rt.max_gap_q.record(max_gap);
        ctx.metrics.record(rt.ttft, s.ttft.0);
        ctx.metrics.record(rt.max_gap, max_gap);
        if let Some(g) = s.timing.mean_token_gap() {
            rt.token_gap_q.record(g.0);
            ctx.metrics.record(rt.token_gap, g.0);
        }
    }

    /// The client stopped reading for another reason (total timeout, cut short from a
    /// governor above): the stream is dropped unmeasured.
    pub(super) fn stream_dropped(&mut self, s: CallStream) {
        self.upstreams.stations[s.station as usize].stream.as_mut().expect("streaming").dropped +=
            1;
    }

    fn call_mut_for_stream(&mut self, slot: u32) -> &mut Call {
        self.calls.slots.get_mut(slot).expect("a stream closes for a live call")
    }

    /// Summary columns of a streaming station.
    pub(super) fn stream_summary(rt: &StreamRt, p: &str, out: &mut Summary) {
        let ms = |q: &Quantiles, x: f64| q.quantile(x).map_or(f64::NAN, |ns| ns / 1e6);
        out.push_u64(format!("{p}.streams_started"), rt.started);
        out.push_u64(format!("{p}.streams_completed"), rt.completed);
        out.push_u64(format!("{p}.stream_stalls"), rt.stalls);
        out.push_u64(format!("{p}.stream_interruptions"), rt.interrupted);
        out.push_f64(format!("{p}.ttft_ms_p50"), ms(&rt.ttft_q, 0.5));
        out.push_f64(format!("{p}.ttft_ms_p99"), ms(&rt.ttft_q, 0.99));
        out.push_f64(format!("{p}.inter_token_gap_ms_p50"), ms(&rt.token_gap_q, 0.5));
        out.push_f64(format!("{p}.max_chunk_gap_ms_p99"), ms(&rt.max_gap_q, 0.99));
    }

    /// I39 and I40.
    pub(super) fn stream_invariants(&self, v: &mut Vec<String>) {
        let mut live = vec![0u64; self.upstreams.stations.len()];
        for c in self.calls.slots.iter() {
            if let Some(s) = &c.stream {
                live[s.station as usize] += 1;
                if !c.in_service || c.up != Some(Upstream::Station(s.station)) {
                    v.push(format!("I39 streams: call {} holds a stream out of service", c.id));
                }
            }
        }
        for (i, s) in self.upstreams.stations.iter().enumerate() {
            let Some(rt) = &s.stream else {
                if live[i] > 0 {
                    v.push(format!("I39 streams: station {} does not stream", s.name));
                }
                continue;
            };
            let ended = rt.completed + rt.interrupted + rt.dropped + live[i];
            if rt.started != ended || rt.stalls > rt.started {
                v.push(format!(
                    "I40 streams at station {}: started {} ≠ completed {} + interrupted {} + \
                     dropped {} + live {} (stalls {})",
                    s.name,
                    rt.started,
                    rt.completed,
                    rt.interrupted,
                    rt.dropped,
                    live[i],
                    rt.stalls
                ));
            }
        }
    }
}
