//! Tests of [`Server`]: scripted steps (fixed step time, so every instant is exact),
//! throughput along the H200 profile, preemption, chunked prefill, cancellation and
//! conservation.

use super::prefix::PromptPrefix;
use super::server::*;
use super::step::StepBatch;
use sim_core::rng::mix64;
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

fn ms(n: u64) -> SimTime {
    SimTime(n * 1_000_000)
}

fn req(id: u64, prompt_tokens: u64, output_tokens: u64) -> SeqRequest {
    SeqRequest { id, prompt_tokens, output_tokens, prefix: PromptPrefix::NONE }
}

/// A spec with a fixed 1 ms step (so step k ends at k ms).
fn fixed(max_num_seqs: u64, kv_cache_tokens: u64) -> ServerSpec {
    ServerSpec {
        max_num_seqs,
        kv_cache_tokens,
        step_time: StepTimeSpec::Fixed(SimDuration::from_ms(1)),
        ..ServerSpec::with_defaults("gpu")
    }
}

/// Steps the server back to back from `now` until it is empty; returns the events and the
/// end of the last step. Bounded: panics beyond `max_steps`.
fn drain(s: &mut Server, mut now: SimTime, max_steps: u64) -> (Vec<SeqEvent>, SimTime) {
    let mut out = Vec::new();
    for _ in 0..max_steps {
        let Some(plan) = s.start_step(now) else { return (out, now) };
        now = plan.end;
        s.finish_step(now, &mut out);
    }
    panic!("server not drained after {max_steps} steps");
}

/// Closed loop: `n` identical sequences submitted at t = 0, stepped until all finish.
fn closed_loop(spec: &ServerSpec, n: u64, prompt: u64, output: u64) -> (Server, SimTime) {
    let mut s = Server::new(spec);
    for id in 0..n {
        assert_eq!(s.submit(req(id, prompt, output), SimTime::ZERO), SubmitDecision::Queued);
    }
    let (events, end) = drain(&mut s, SimTime::ZERO, 1_000_000);
    let finished = events.iter().filter(|e| matches!(e, SeqEvent::Finished { .. })).count();
    assert_eq!(finished as u64, n);
    (s, end)
}

#[test]
fn spec_reads_with_defaults_and_refuses_bad_values() {
    let spec: ServerSpec = ron::from_str(r#"GpuServer(name: "llm")"#).unwrap();
    assert_eq!(spec, ServerSpec::with_defaults("llm"));
    assert_eq!(
        (spec.max_num_seqs, spec.max_num_batched_tokens, spec.kv_cache_tokens, spec.max_queue),
        (256, 8192, 870_000, 10_000)
    );
    assert!(spec.check().is_ok());
    let spec: ServerSpec = ron::from_str(
        r#"GpuServer(name: "a", max_num_seqs: 8, enable_chunked_prefill: true,
            max_num_batched_tokens: 512, step_time: Fixed("5ms"), cancellation: true)"#,
    )
    .unwrap();
    assert_eq!(spec.step_time, StepTimeSpec::Fixed(SimDuration::from_ms(5)));
    for (text, error) in [
        (r#"GpuServer(name: "a", max_num_seqs: 0)"#, "found 0"),
        (r#"GpuServer(name: "a", kv_cache_tokens: 0)"#, "found 0"),
        (r#"GpuServer(name: "a", max_queue: 0)"#, "found 0"),
        (r#"GpuServer(name: "a", step_time: Fixed("0s"))"#, "> 0"),
        (r#"GpuServer(name: "a", max_num_seq: 8)"#, "max_num_seq"),
        (r#"GpuServer(name: "a b")"#, "name"),
    ] {
        let e = ron::from_str::<ServerSpec>(text).unwrap_err().to_string();
        assert!(e.contains(error), "{text}: {e}");
    }
    let cross = ServerSpec { max_num_batched_tokens: 100, ..ServerSpec::with_defaults("a") };
    assert!(cross.check().unwrap_err().contains("max_num_batched_tokens"));
    let mut s = Server::new(&ServerSpec::with_defaults("a"));
    assert!(s.set_max_num_seqs(10_000).is_err(), "above max_num_batched_tokens");
    assert!(s.set_max_num_seqs(64).is_ok());
    assert_eq!(s.spec().max_num_seqs, 64);
}

/// Script, fixed 1 ms steps, max_num_seqs 2, no chunking: A(4 → 3), B(4 → 2), C(4 → 1).
#[test]
fn scripted_steps_first_tokens_and_finishes() {
    let mut s = Server::new(&fixed(2, 1_000));
    for r in [req(1, 4, 3), req(2, 4, 2), req(3, 4, 1)] {
        assert_eq!(s.submit(r, SimTime::ZERO), SubmitDecision::Queued);
    }
    use SeqEvent::*;
    // (step end, decode seqs, prefill seqs, events at the end)
    let script: [(u64, u64, u64, &[SeqEvent]); 4] = [
        // A and B admitted (C waits for a slot): a prefill-only step.
        (1, 0, 2, &[FirstToken { id: 1, at: ms(1) }, FirstToken { id: 2, at: ms(1) }]),
        // C cannot be admitted (2 running): A and B decode; B has its 2 tokens.
        (2, 2, 0, &[Finished { id: 2, at: ms(2) }]),
        // Prefill first (vLLM V0): C is admitted and A waits; C's only token ends it.
        (3, 0, 1, &[FirstToken { id: 3, at: ms(3) }, Finished { id: 3, at: ms(3) }]),
        (4, 1, 0, &[Finished { id: 1, at: ms(4) }]),
    ];
    let mut now = SimTime::ZERO;
    for (end, decodes, prefills, events) in script {
        let plan = s.start_step(now).expect("work left");
        assert_eq!((plan.end, plan.decode_seqs, plan.prefill_seqs), (ms(end), decodes, prefills));
        let mut out = vec![];
        s.finish_step(plan.end, &mut out);
        assert_eq!(out, events, "step ending at {end} ms");
        now = plan.end;
    }
    assert_eq!(s.start_step(now), None);
    assert_eq!((s.stats.steps, s.stats.tokens_generated, s.stats.finished), (4, 6, 3));
    // Inter-token gaps: A 1→2→4 ms, B 1→2 ms: 3 gaps, 4 ms in all, largest 2 ms.
    assert_eq!((s.stats.token_gaps, s.stats.token_gap_sum_ns), (3, 4_000_000));
    assert_eq!(s.stats.max_token_gap_ns, 2_000_000);
}

/// KV 10 tokens, two sequences of 4 prompt → 4 output tokens (each fits alone: 4 + 4 ≤ 10).
#[test]
fn kv_exhaustion_preempts_the_newest_and_recomputes_it() {
    let mut s = Server::new(&fixed(2, 10));
    s.set_emit_tokens(true);
    s.submit(req(1, 4, 4), SimTime::ZERO);
    s.submit(req(2, 4, 4), SimTime::ZERO);
    use SeqEvent::*;
    // (step end, decodes, prefill tokens, KV used during the step, events)
    let script: [(u64, u64, u64, u64, &[SeqEvent]); 6] = [
        // Both prompts admitted: KV 4 + 4.
        (1, 0, 8, 8, &[FirstToken { id: 1, at: ms(1) }, FirstToken { id: 2, at: ms(1) }]),
        // Both decode: one KV token each → 10 (full).
        (2, 2, 0, 10, &[Token { id: 1, at: ms(2) }, Token { id: 2, at: ms(2) }]),
        // A needs an 11th token: B (newest, holds 5) is preempted at 2 ms; A → 6.
        (3, 1, 0, 6, &[Preempted { id: 2, at: ms(2) }, Token { id: 1, at: ms(3) }]),
        // B needs 4 + 2 generated = 6 tokens, 6 + 6 > 10: A decodes alone and ends.
        (4, 1, 0, 7, &[Token { id: 1, at: ms(4) }, Finished { id: 1, at: ms(4) }]),
        // B recomputes its prompt and its 2 tokens (6), producing its 3rd token.
        (5, 0, 6, 6, &[Token { id: 2, at: ms(5) }]),
        (6, 1, 0, 7, &[Token { id: 2, at: ms(6) }, Finished { id: 2, at: ms(6) }]),
    ];
    let mut now = SimTime::ZERO;
    for (end, decodes, prefill, kv, events) in script {
        let plan = s.start_step(now).expect("work left");
        assert_eq!(
            (plan.end, plan.decode_seqs, plan.batch.prefill_tokens),
            (ms(end), decodes, prefill)
        );
        assert_eq!(s.kv_used_tokens(), kv, "KV during the step ending at {end} ms");
        let mut out = vec![];
        s.finish_step(plan.end, &mut out);
        assert_eq!(out, events, "step ending at {end} ms");
        now = plan.end;
    }
    assert_eq!(s.start_step(now), None);
    assert_eq!(s.kv_used_tokens(), 0);
    let st = &s.stats;
    assert_eq!((st.preemptions, st.recomputed_tokens, st.finished), (1, 2, 2));
    // Tokens the clients saw: 4 + 4 (recomputation prefills, it does not regenerate).
    assert_eq!((st.tokens_generated, st.prefill_tokens), (8, 4 + 4 + 6));
}

/// Many sequences through a tiny KV cache, with and without chunking: preemptions happen,
/// and every sequence gets one first token and one finish, in that order.
#[test]
fn heavy_preemption_still_finishes_every_sequence_once() {
    for chunked in [false, true] {
        let spec = ServerSpec {
            enable_chunked_prefill: chunked,
            max_num_batched_tokens: 16,
            ..fixed(8, 40)
        };
        let mut s = Server::new(&spec);
        for id in 0..30 {
            s.submit(req(id, 5 + id % 7, 3 + id % 11), SimTime::ZERO);
        }
        let (events, _) = drain(&mut s, SimTime::ZERO, 100_000);
        assert!(s.stats.preemptions > 0, "chunked {chunked}: no preemption");
        assert!(s.stats.recomputed_tokens > 0);
        let mut seen: BTreeMap<u64, (u32, u32)> = BTreeMap::new();
        for e in events {
            match e {
                SeqEvent::FirstToken { id, .. } => {
                    let v = seen.entry(id).or_default();
                    assert_eq!(*v, (0, 0), "first token twice or after its end: {id}");
                    v.0 += 1;
                }
                SeqEvent::Finished { id, .. } => {
                    let v = seen.entry(id).or_default();
                    assert_eq!(*v, (1, 0), "finish without first token, or twice: {id}");
                    v.1 += 1;
                }
                _ => {}
            }
        }
        assert_eq!(seen.len(), 30);
        let expected: u64 = (0..30).map(|id| 3 + id % 11).sum();
        assert_eq!(s.stats.tokens_generated, expected);
    }
}

#[test]
fn full_queue_too_long_and_empty_are_refused() {
    let mut s = Server::new(&ServerSpec { max_queue: 2, ..fixed(1, 100) });
    let t = SimTime::ZERO;
    use SubmitDecision::*;
    use SubmitRejection::*;
    let script = [
        (req(1, 10, 10), Queued),
        (req(2, 10, 10), Queued),
        (req(3, 10, 10), Rejected(QueueFull)), // 2 waiting = max_queue
        (req(4, 90, 11), Rejected(TooLong)),   // 90 + 11 > 100 KV tokens
        (req(5, 0, 10), Rejected(Empty)),
        (req(6, 10, 0), Rejected(Empty)),
    ];
    for (r, expected) in script {
        assert_eq!(s.submit(r, t), expected, "{r:?}");
    }
    s.start_step(t).unwrap(); // admits 1 (one slot): one place frees up
    assert_eq!(s.submit(req(7, 90, 10), t), Queued); // 90 + 10 = 100 fits
    assert_eq!(s.submit(req(8, 1, 1), t), Rejected(QueueFull));
    assert_eq!((s.waiting(), s.running()), (2, 1));
    let st = &s.stats;
    assert_eq!((st.rejected_queue_full, st.rejected_too_long, st.rejected_empty), (2, 1, 2));
    s.check_invariants();
}

/// Chunked prefill, 8 tokens per step: A (2 → 5) runs; B (20 → 2) arrives at 1 ms and is
/// prefilled in chunks of 7, 7, 6 while A decodes each step (mixed steps).
#[test]
fn chunked_prefill_splits_a_long_prompt_and_decodes_continue() {
    let spec =
        ServerSpec { enable_chunked_prefill: true, max_num_batched_tokens: 8, ..fixed(4, 100) };
    let mut s = Server::new(&spec);
    s.submit(req(1, 2, 5), SimTime::ZERO);
    let batch = |decode_seqs, decode_context_tokens, prefill_tokens, prefill_attention_pairs| {
        StepBatch { decode_seqs, decode_context_tokens, prefill_tokens, prefill_attention_pairs }
    };
    use SeqEvent::*;
    // (step end, batch, events). A's decode context is its KV before the step: 2, 3, 4, 5.
    // B's chunk pairs: 7·8/2 = 28; 7·7 + 28 = 77; 6·14 + 6·7/2 = 105 (Σ 210 = 20·21/2).
    let script: [(u64, StepBatch, &[SeqEvent]); 5] = [
        (1, batch(0, 0, 2, 3), &[FirstToken { id: 1, at: ms(1) }]),
        (2, batch(1, 2, 7, 28), &[]),
        (3, batch(1, 3, 7, 77), &[]),
        (4, batch(1, 4, 6, 105), &[FirstToken { id: 2, at: ms(4) }]),
        (
            5,
            batch(2, 5 + 20, 0, 0),
            &[Finished { id: 1, at: ms(5) }, Finished { id: 2, at: ms(5) }],
        ),
    ];
    let mut now = SimTime::ZERO;
    for (end, expected, events) in script {
        if end == 2 {
            assert_eq!(s.submit(req(2, 20, 2), now), SubmitDecision::Queued);
        }
        let plan = s.start_step(now).expect("work left");
        assert_eq!((plan.end, plan.batch), (ms(end), expected), "step ending at {end} ms");
        let mut out = vec![];
        s.finish_step(plan.end, &mut out);
        assert_eq!(out, events, "step ending at {end} ms");
        now = plan.end;
    }
    assert_eq!(s.stats.mixed_steps, 3);
    assert_eq!(s.start_step(now), None);
}

/// The shipped H200 fit, by hand (ns): `t = 4,659,279.14 + 14,167.39·T + 9,389.99·max(0, T −
/// 353) + 27.667·Σcontext + 0.99275·pairs`. 32 sequences of 512 → 128 tokens, no chunking,
/// max_num_batched_tokens 8192, so each wave of `max_num_seqs` sequences is: prefill steps
/// (at most 16 prompts = 8192 tokens each), then 127 decode steps at contexts 512 ..= 638
/// (Σ = 127 · 575 = 73,025 per sequence); waves run one after another.
///
/// - batch 1: prefill 512 = 4.659 + 7.254 + 1.493 (159 beyond the ridge) + 0.130 (131,328
///   pairs) = 13.536 ms; decodes 127 · (4.659 + 0.0142) + 2.020 (KV) = 595.55 ms; a wave
///   609.08 ms, 32 waves 19.491 s: **210 tokens/s, 1.64 sequences/s**.
/// - batch 8: prefill 4096 tokens = 4.659 + 58.030 + 35.147 + 1.043 = 98.88 ms; decodes
///   591.73 + 14.39 + 16.16 = 622.29 ms; 4 waves 2.885 s: **1,420 tokens/s, 11.1 seq/s**.
/// - batch 32: two prefill steps of 16 × 512 (196.41 ms each, the profile's row); decodes
///   591.73 + 57.58 + 64.65 = 713.96 ms; 1 wave 1.107 s: **3,701 tokens/s, 28.9 seq/s**.
///
/// The makespans below are those sums with each step rounded to the nanosecond.
#[test]
fn throughput_grows_with_batch_size_along_the_profile() {
    let table = [
        // (max_num_seqs, makespan ns, tokens/s, sequences/s)
        (1, 19_490_702_656u64, 210.15, 1.6418),
        (8, 2_884_657_312, 1_419.93, 11.093),
        (32, 1_106_782_740, 3_700.82, 28.913),
    ];
    for (max_num_seqs, makespan, tokens_per_s, seqs_per_s) in table {
        let spec = ServerSpec { max_num_seqs, ..ServerSpec::with_defaults("h200") };
        let (s, end) = closed_loop(&spec, 32, 512, 128);
        assert_eq!(end, SimTime(makespan), "max_num_seqs {max_num_seqs}");
        let secs = end.as_s_f64();
        assert!((s.stats.tokens_generated as f64 / secs - tokens_per_s).abs() < 0.01);
        assert!((32.0 / secs - seqs_per_s).abs() < 0.001);
        assert_eq!(s.stats.max_batch_seqs, max_num_seqs); // the decode steps
        assert_eq!(s.stats.busy_ns, makespan, "back to back: the GPU never idles");
    }
}

/// Incident 16's shape (100 → 210 QPS with a 5 ms / 8-request batcher): short requests
/// (128-token prompt, 1 output token: the prefill is the whole request). One at a time, a
/// step is 4.659 + 128 · 0.014167 + 0.99275 · 8,256 pairs = 6.4809 ms → 154.3 requests/s;
/// eight at a time, 1,024 tokens: 4.659 + 14.507 + 671 · 0.00939 + 0.99275 · 66,048 pairs
/// = 25.533 ms → 313.3 requests/s. Ratio **2.03×**.
#[test]
fn incident_16_batches_of_eight_double_the_throughput() {
    let one = ServerSpec { max_num_seqs: 1, ..ServerSpec::with_defaults("one") };
    let eight = ServerSpec { max_num_seqs: 8, ..ServerSpec::with_defaults("eight") };
    let (_, t1) = closed_loop(&one, 64, 128, 1);
    let (s8, t8) = closed_loop(&eight, 64, 128, 1);
    assert_eq!(t1, SimTime(64 * 6_480_901));
    assert_eq!(t8, SimTime(8 * 25_532_940));
    assert_eq!(s8.stats.max_batch_seqs, 8);
    let ratio = t1.as_ns() as f64 / t8.as_ns() as f64;
    assert!((ratio - 2.0306).abs() < 1e-3, "ratio {ratio}");
}

#[test]
fn cancel_frees_the_slot_and_kv_only_with_cancellation() {
    let spec = ServerSpec { cancellation: true, ..fixed(1, 100) };
    let mut s = Server::new(&spec);
    s.submit(req(1, 10, 5), SimTime::ZERO);
    s.submit(req(2, 10, 1), SimTime::ZERO);
    let plan = s.start_step(SimTime::ZERO).unwrap(); // prefill 1
    let mut out = vec![];
    s.finish_step(plan.end, &mut out);
    assert_eq!((s.running(), s.waiting(), s.kv_used_tokens()), (1, 1, 10));
    // Cancel during a step: 1 decodes in the step in flight; its token is never reported.
    let plan = s.start_step(ms(1)).unwrap();
    assert_eq!(plan.decode_seqs, 1);
    assert!(s.cancel(1));
    assert_eq!((s.running(), s.kv_used_tokens(), s.contains(1)), (0, 0, false));
    assert!(!s.cancel(1), "already gone");
    assert_eq!(s.submit(req(1, 10, 1), ms(1)), SubmitDecision::Queued); // same id again
    out.clear();
    s.finish_step(plan.end, &mut out);
    assert_eq!(out, [], "the cancelled work is not credited to the new sequence");
    assert!(s.cancel(1));
    // The freed slot goes to 2 at the next step; cancelling a waiting one works too.
    s.submit(req(3, 10, 1), ms(2));
    assert!(s.cancel(3));
    let (events, _) = drain(&mut s, ms(2), 10);
    assert_eq!(
        events,
        [SeqEvent::FirstToken { id: 2, at: ms(3) }, SeqEvent::Finished { id: 2, at: ms(3) }]
    );
    assert_eq!((s.stats.cancelled, s.stats.finished), (3, 1));

    // Without cancellation the abandoned sequence runs to its end.
    let mut s = Server::new(&fixed(1, 100));
    s.submit(req(1, 10, 2), SimTime::ZERO);
    assert!(!s.cancel(1));
    let (events, _) = drain(&mut s, SimTime::ZERO, 10);
    assert_eq!(events.last(), Some(&SeqEvent::Finished { id: 1, at: ms(2) }));
}

/// A random mix of arrivals, cancellations and configurations (keyed by `mix64`): every
/// submitted sequence ends exactly once — refused, finished or cancelled — and first
/// tokens come before finishes.
#[test]
fn conservation_under_a_random_mix() {
    let mut totals = ServerStats::default();
    for case in 0..12u64 {
        let r = |k: u64, n: u64| mix64(case << 32 | k) % n;
        let spec = ServerSpec {
            enable_chunked_prefill: case % 2 == 1,
            max_num_batched_tokens: 32 + r(1, 64),
            max_queue: 1 + r(2, 20),
            cancellation: case % 3 != 0,
            ..fixed(1 + r(3, 16), 60 + r(4, 200))
        };
        let mut s = Server::new(&spec);
        s.set_emit_tokens(case % 4 == 0);
        let (mut now, mut next_id, mut out) = (SimTime::ZERO, 0u64, Vec::new());
        let mut ended: BTreeMap<u64, &str> = BTreeMap::new();
        let mut first: BTreeMap<u64, SimTime> = BTreeMap::new();
        for step in 0..400u64 {
            for _ in 0..r(10 + step, 4) {
                let id = next_id;
                next_id += 1;
                let d = s.submit(req(id, r(id << 8 | 1, 40), 1 + r(id << 8 | 2, 30)), now);
                if let SubmitDecision::Rejected(_) = d {
                    assert!(ended.insert(id, "rejected").is_none());
                }
            }
            if next_id > 0 && r(20_000 + step, 5) == 0 {
                let id = r(30_000 + step, next_id);
                if s.cancel(id) {
                    assert!(ended.insert(id, "cancelled").is_none(), "{id} ended twice");
                }
            }
            let Some(plan) = s.start_step(now) else { continue };
            now = plan.end;
            out.clear();
            s.finish_step(now, &mut out);
            for e in &out {
                match *e {
                    SeqEvent::FirstToken { id, at } => assert!(first.insert(id, at).is_none()),
                    SeqEvent::Finished { id, at } => {
                        assert!(first[&id] <= at);
                        assert!(ended.insert(id, "finished").is_none(), "{id} ended twice");
                    }
                    _ => {}
                }
            }
        }
        let (events, _) = drain(&mut s, now, 100_000);
        for e in events {
            if let SeqEvent::Finished { id, .. } = e {
                assert!(ended.insert(id, "finished").is_none(), "{id} ended twice");
            }
        }
        assert_eq!(ended.len() as u64, next_id, "case {case}: every sequence ends once");
        assert_eq!(s.stats.submitted, next_id);
        assert!(!s.has_work());
        totals.preemptions += s.stats.preemptions;
        totals.cancelled += s.stats.cancelled;
        totals.rejected_queue_full += s.stats.rejected_queue_full;
        totals.mixed_steps += s.stats.mixed_steps;
        totals.finished += s.stats.finished;
    }
    // The mix exercises every way out (figures of this deterministic run).
    assert!(totals.preemptions > 0 && totals.cancelled > 0, "{totals:?}");
    assert!(totals.rejected_queue_full > 0 && totals.mixed_steps > 0, "{totals:?}");
    assert!(totals.finished > 1_000, "{totals:?}");
}

/// Eight sequences (512 → 300) decode on the H200 fit; an 8192-token prompt (→ 1) arrives
/// at the end of their second decode step. Returns (largest inter-token gap of the eight,
/// the long prompt's first-token delay).
fn long_prompt_among_decodes(chunked: bool) -> (u64, SimDuration) {
    let spec = ServerSpec {
        enable_chunked_prefill: chunked,
        max_num_batched_tokens: 2048,
        ..ServerSpec::with_defaults("h200")
    };
    let mut s = Server::new(&spec);
    for id in 0..8 {
        s.submit(req(id, 512, 300), SimTime::ZERO);
    }
    let (mut now, mut out) = (SimTime::ZERO, vec![]);
    for _ in 0..3 {
        now = s.start_step(now).unwrap().end;
        s.finish_step(now, &mut out);
    }
    s.submit(req(99, 8192, 1), now);
    let arrival = now;
    let (events, _) = drain(&mut s, now, 10_000);
    let first = events.iter().find_map(|e| match e {
        SeqEvent::FirstToken { id: 99, at } => Some(*at),
        _ => None,
    });
    (s.stats.max_token_gap_ns, first.unwrap() - arrival)
}

/// Without chunking the long prompt gets a prefill-only step (227.64 ms, the profile's
/// "prefill batch 1 length 8192" row), so the eight wait 227.64 ms + one decode step
/// (4.659 + 8 · 0.0142 + 8 · 515 · 27.67e-6 = 4.89 ms) ≈ 232.5 ms between two tokens.
/// With chunked prefill (2048 tokens a step: 8 decodes + 2040 prompt tokens) they get a
/// token every step; the dearest step is the last full chunk, 2040 tokens after 6120
/// cached: 4.659 + 2048 · 0.014167 + 1695 · 0.00939 + 14,566,620 pairs · 0.99275e-6
/// (+ 0.12 KV) ≈ 64.2 ms. The long prompt's first token takes longer chunked (5 steps,
/// ≈ 4 · 60 + 5 ms) than whole (227.6 ms).
#[test]
fn chunked_prefill_keeps_decodes_flowing_past_a_long_prompt() {
    let (whole_gap, whole_ttft) = long_prompt_among_decodes(false);
    let (chunked_gap, chunked_ttft) = long_prompt_among_decodes(true);
    assert!((232_000_000..233_000_000).contains(&whole_gap), "{whole_gap}");
    assert!((64_000_000..64_500_000).contains(&chunked_gap), "{chunked_gap}");
    assert_eq!(whole_ttft.as_ns() / 100_000, 2276, "{whole_ttft:?}");
    assert!(chunked_ttft > whole_ttft, "{chunked_ttft:?} vs {whole_ttft:?}");
}

/// Lowering `max_num_seqs` at run time evicts nobody; it only holds admissions back.
#[test]
fn lowering_max_num_seqs_holds_admissions_back() {
    let mut s = Server::new(&fixed(4, 1_000));
    for id in 0..6 {
        s.submit(req(id, 2, 3), SimTime::ZERO);
    }
    let plan = s.start_step(SimTime::ZERO).unwrap();
    assert_eq!((plan.prefill_seqs, s.running(), s.waiting()), (4, 4, 2));
    let mut out = vec![];
    s.finish_step(plan.end, &mut out);
    s.set_max_num_seqs(1).unwrap();
    // (step end, decodes, prefills, running after the step)
    for (end, decodes, prefills, running) in [(2, 4, 0, 4), (3, 4, 0, 0), (4, 0, 1, 1)] {
        let plan = s.start_step(ms(end - 1)).unwrap();
        assert_eq!((plan.end, plan.decode_seqs, plan.prefill_seqs), (ms(end), decodes, prefills));
        s.finish_step(plan.end, &mut out);
        assert_eq!(s.running(), running, "after the step ending at {end} ms");
    }
}
