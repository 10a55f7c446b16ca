//! Prefix caching against vLLM's semantics (`prefix.rs` cites the deciding functions):
//! hand-derived sequences of hashing, reuse, the last-token rule, LRU eviction and the
//! admission accounting, on the pool alone and through a [`Server`] with 1 ms steps.

use super::prefix::*;
use super::server::*;
use super::step::StepBatch;
use sim_core::{SimDuration, SimTime};

/// A prompt whose first `shared` tokens are content 7 (the rest its own).
fn shared(shared: u64) -> PromptPrefix {
    let mut p = PromptPrefix::NONE;
    assert!(p.push(7, shared));
    p
}

fn req(id: u64, prompt_tokens: u64, output_tokens: u64, prefix: PromptPrefix) -> SeqRequest {
    SeqRequest { id, prompt_tokens, output_tokens, prefix }
}

/// Prefix caching, block 16, a fixed 1 ms step; `kv` tokens of KV.
fn server(kv: u64, chunked: bool) -> Server {
    Server::new(&ServerSpec {
        enable_prefix_caching: true,
        enable_chunked_prefill: chunked,
        kv_cache_tokens: kv,
        max_num_seqs: 8,
        max_num_batched_tokens: 8192,
        step_time: StepTimeSpec::Fixed(SimDuration::from_ms(1)),
        ..ServerSpec::with_defaults("gpu")
    })
}

/// One step from `now`; its plan and events.
fn step(s: &mut Server, now: SimTime) -> (StepPlan, Vec<SeqEvent>) {
    let plan = s.start_step(now).expect("work");
    let mut out = Vec::new();
    s.finish_step(plan.end, &mut out);
    s.check_invariants();
    (plan, out)
}

fn hashes(prefix: &PromptPrefix, prompt: u64, id: u64, blocks: u64) -> Vec<u64> {
    let mut h = Vec::new();
    extend_hashes(&mut h, blocks, prefix, prompt, own_content(id), 16);
    h
}

#[test]
fn block_hashes_chain_over_full_blocks_of_equal_tokens() {
    // Two 60-token prompts sharing their first 40 tokens, blocks of 16: blocks 0 and 1
    // (tokens 0..32) are equal; block 2 (32..48) holds 8 shared and 8 own tokens: not equal.
    let (a, b) = (hashes(&shared(40), 60, 1, 3), hashes(&shared(40), 60, 2, 3));
    assert_eq!(a[..2], b[..2]);
    assert_ne!(a[2], b[2]);
    // A chain: the same tokens after a different block 0 hash differently.
    let mut other = PromptPrefix::NONE;
    assert!(other.push(8, 16) && other.push(7, 40));
    let c = hashes(&other, 60, 1, 2);
    assert_ne!(a[0], c[0]);
    // The prefix is cut at the prompt: a 20-token prompt of the same prefix shares block 0
    // (tokens 0..16), and its block 1 (16..20 shared, 20..32 its own) is its own.
    let d = hashes(&shared(40), 20, 3, 2);
    assert_eq!(d[0], a[0]);
    assert_ne!(d[1], a[1]);
    // Two segments of one content back to back are not one longer segment read twice.
    let mut split = PromptPrefix::NONE;
    assert!(split.push(7, 16) && split.push(7, 24));
    assert_ne!(hashes(&split, 60, 1, 2)[1], a[1]);
}

#[test]
fn two_requests_sharing_40_tokens_share_two_blocks() {
    let mut s = server(16 * 64, false);
    s.submit(req(1, 60, 4, shared(40)), SimTime::ZERO);
    let (plan, _) = step(&mut s, SimTime::ZERO);
    // Nothing cached yet: the whole prompt is prefilled.
    assert_eq!(plan.batch, StepBatch::prefill(1, 60));
    s.submit(req(2, 60, 4, shared(40)), plan.end);
    let (plan, _) = step(&mut s, plan.end);
    // B finds A's blocks 0 and 1 (32 tokens) and prefills 28 after them.
    let mut want = StepBatch::EMPTY;
    want.add_prefill_chunk(28, 32);
    assert_eq!((plan.prefill_seqs, plan.batch), (1, want));
    let (_, _, k) = s.kv_blocks().unwrap();
    assert_eq!((k.lookups, k.hit_lookups, k.query_tokens, k.hit_tokens), (2, 1, 120, 32));
    // A holds 4 blocks (60 tokens), B 2 of A's and 2 of its own: 6 distinct blocks.
    assert_eq!(s.kv_used_tokens(), 6 * 16);
    assert_eq!(s.stats.prefill_tokens, 60 + 28);
}

#[test]
fn a_partial_block_is_cached_only_when_full_and_then_with_its_own_tokens() {
    let mut s = server(16 * 64, false);
    // A: exactly the 40 shared tokens, 10 output tokens.
    s.submit(req(1, 40, 10, shared(40)), SimTime::ZERO);
    let (plan, _) = step(&mut s, SimTime::ZERO);
    let a = hashes(&shared(40), 40, 1, 3);
    let pool = s.pool.as_ref().unwrap();
    assert!(pool.is_cached(a[0]) && pool.is_cached(a[1]) && !pool.is_cached(a[2]));
    // B: the same 40 tokens and 8 of its own (48): finds 2 blocks, not 3.
    s.submit(req(2, 48, 10, shared(40)), plan.end);
    let (plan, _) = step(&mut s, plan.end);
    assert_eq!(plan.batch.prefill_tokens, 16);
    // A decodes: KV 40 → 41 … block 2 fills at 48 tokens, 8 decodes in (its 40 prompt
    // tokens + the first 8 generated); it is cached then, named by A's own tokens.
    let mut now = plan.end;
    for k in 1..=8 {
        let pool = s.pool.as_ref().unwrap();
        assert!(!pool.is_cached(a[2]), "decode {k}");
        now = step(&mut s, now).0.end;
    }
    let pool = s.pool.as_ref().unwrap();
    assert!(pool.is_cached(a[2]), "full after 8 decodes");
    // …and no other prompt can find it: block 2 of A's hash chain holds A's own tokens.
    assert_ne!(a[2], hashes(&shared(40), 48, 3, 3)[2]);
}

#[test]
fn a_fully_cached_prompt_recomputes_its_last_token_and_so_its_last_block() {
    // (prompt tokens of B, all shared with A's 64-token cached prompt) → (blocks found,
    // tokens B prefills). The lookup covers B's first `prompt − 1` tokens
    // (`get_computed_blocks`), in whole blocks: 32 tokens → 31 → 1 block → 16 recomputed.
    for (prompt, found, prefill) in [(32, 1, 16), (33, 2, 1), (48, 2, 16), (49, 3, 1), (16, 0, 16)]
    {
        let mut s = server(16 * 64, false);
        s.submit(req(1, 64, 1, shared(64)), SimTime::ZERO);
        let (plan, _) = step(&mut s, SimTime::ZERO); // A prefills 64 and finishes
        s.submit(req(2, prompt, 1, shared(64)), plan.end);
        let (plan, _) = step(&mut s, plan.end);
        let (_, _, k) = s.kv_blocks().unwrap();
        assert_eq!((k.hit_tokens, plan.batch.prefill_tokens), (found * 16, prefill), "{prompt}");
    }
}

#[test]
fn lru_evicts_the_least_recently_freed_block_tail_first() {
    // A pool of 4 blocks of 4 tokens.
    let mut pool = BlockPool::new(4, 4);
    let seq = |content: u64, id: u64| {
        let mut prefix = PromptPrefix::NONE;
        assert!(prefix.push(content, 8));
        SeqBlocks { prefix, own: own_content(id), ..SeqBlocks::default() }
    };
    let admit = |pool: &mut BlockPool, s: &mut SeqBlocks, prompt: u64| {
        let plan = pool.plan(s, prompt, prompt);
        let hit = pool.admit(s, plan, prompt);
        pool.cache_full(s, prompt, prompt);
        hit
    };
    // X (8 tokens of content 1) takes blocks 0 and 1, caches both, finishes: freed tail
    // first, the free queue is [2, 3 (never used), 1, 0].
    let mut x = seq(1, 1);
    assert_eq!(admit(&mut pool, &mut x, 8), 0);
    assert_eq!(x.blocks, [0, 1]);
    pool.release(&mut x);
    assert_eq!(pool.recycled_order(), [1, 0]);
    // Y (content 2) takes the never-used 2 and 3 first: nothing evicted.
    let mut y = seq(2, 2);
    admit(&mut pool, &mut y, 8);
    assert_eq!((y.blocks.as_slice(), pool.stats.evictions), ([2, 3].as_slice(), 0));
    pool.release(&mut y);
    assert_eq!(pool.recycled_order(), [1, 0, 3, 2]);
    assert_eq!((pool.used, pool.cached_free), (0, 4));
    // Z (4 tokens of content 3) needs one block: the head, X's tail block 1, is evicted.
    let mut z = seq(3, 3);
    admit(&mut pool, &mut z, 4);
    assert_eq!((z.blocks.as_slice(), pool.stats.evictions), ([1].as_slice(), 1));
    // X's content again (9 tokens: its 8, then 1 of its own): block 0 is still cached,
    // block 1 was evicted — 1 block found, and taking it out of the free queue counts as
    // one of the 3 blocks it needs (`get_num_blocks_to_allocate`).
    let mut x2 = seq(1, 4);
    let plan = pool.plan(&mut x2, 9, 9);
    assert_eq!((plan.hit_blocks, plan.need), (1, 3 - 1 + 1));
    assert_eq!(pool.free(), 3);
    assert_eq!(admit(&mut pool, &mut x2, 9), 4);
    assert_eq!(x2.blocks[0], 0);
    // Y's blocks were next in line: 3 then 2 are taken, both evicted.
    assert_eq!((&x2.blocks[1..], pool.stats.evictions), ([3, 2].as_slice(), 3));
    let refs = [(0, 1), (1, 1), (2, 1), (3, 1)].into_iter().collect();
    pool.check(&refs);
}

#[test]
fn blocks_held_by_running_sequences_are_never_evicted() {
    // 8 blocks of 16. A (96 tokens = 6 blocks, content 7) runs; B (64 tokens of other
    // content, 4 blocks) cannot be admitted: 2 blocks are free and A's are not free.
    let mut s = server(16 * 8, false);
    s.submit(req(1, 96, 3, shared(96)), SimTime::ZERO);
    let (plan, _) = step(&mut s, SimTime::ZERO);
    let mut other = PromptPrefix::NONE;
    assert!(other.push(9, 64));
    s.submit(req(2, 64, 1, other), plan.end);
    let (plan, _) = step(&mut s, plan.end);
    assert_eq!((plan.prefill_seqs, plan.decode_seqs), (0, 1), "B waits, A decodes");
    assert_eq!(s.kv_blocks().unwrap().2.evictions, 0);
    // A's decode took block 6 (never used; 1 left). A finishes: its blocks are freed tail
    // first — [6 (no hash: partial), 5, 4, …, 0] behind the never-used 7. B is admitted:
    // it takes 7, then 6, then evicts A's last two cached blocks, 5 and 4.
    let (plan, _) = step(&mut s, plan.end);
    let (plan, _) = step(&mut s, plan.end);
    assert_eq!(plan.prefill_seqs, 1);
    let (_, _, k) = s.kv_blocks().unwrap();
    assert_eq!(k.evictions, 2);
    let a = hashes(&shared(96), 96, 1, 6);
    let pool = s.pool.as_ref().unwrap();
    let cached: Vec<bool> = a.iter().map(|h| pool.is_cached(*h)).collect();
    assert_eq!(cached, [true, true, true, true, false, false]);
}

#[test]
fn a_preempted_sequence_finds_its_own_blocks_again() {
    // 6 blocks of 16 (96 tokens). A and B, 32-token own prompts, 40 output tokens each:
    // both run (2 + 2 blocks); when their KV needs more than 6 blocks B (the newest) is
    // preempted, its blocks freed but still cached; on readmission it finds them, within
    // its `prompt + generated − 1` tokens, and recomputes only the rest.
    let mut s = server(16 * 6, false);
    s.submit(req(1, 32, 40, PromptPrefix::NONE), SimTime::ZERO);
    s.submit(req(2, 32, 40, PromptPrefix::NONE), SimTime::ZERO);
    let mut now = SimTime::ZERO;
    let mut readmitted = None;
    for _ in 0..200 {
        let Some(plan) = s.start_step(now) else { break };
        let mut out = Vec::new();
        s.finish_step(plan.end, &mut out);
        s.check_invariants();
        if s.stats.preemptions > 0 && plan.prefill_seqs == 1 && readmitted.is_none() {
            let k = s.kv_blocks().unwrap().2;
            readmitted = Some((plan.batch.prefill_tokens, k.hit_tokens, k.evictions));
        }
        now = plan.end;
    }
    assert_eq!(s.stats.finished, 2);
    // Both take 2 blocks, then one more each at their 33rd KV token (the pool is full).
    // At 48 KV tokens (16 decodes, 17 tokens generated) both have 3 full blocks cached;
    // A's next decode needs a 4th: B (newest) is preempted, its blocks [2, 3, 5] freed
    // tail first — the free queue is [5, 3, 2] — and A takes 5, evicting B's third block.
    // B needs 4 − hits + evictable blocks: it waits. A's 5th block (at KV 64) evicts B's
    // block 3. A finishes (40 tokens); B, readmitted with 32 + 17 = 49 tokens, finds only
    // its first block (16 tokens) and prefills 33. A's blocks [0, 1, 4, 5, 3] were freed
    // tail first behind B's 2: B takes 3 (A's partial block, no hash), then evicts A's 5
    // and 4 — 4 evictions in all.
    let (prefill, hits, evictions) = readmitted.expect("B readmitted");
    assert_eq!((prefill, hits, evictions), (33, 16, 4));
    assert_eq!(s.stats.preemptions, 1);
}

#[test]
fn chunked_prefill_registers_blocks_chunk_by_chunk() {
    // Chunked prefill, 48 tokens per step (of which decodes take theirs first).
    let mut s = Server::new(&ServerSpec {
        enable_chunked_prefill: true,
        max_num_batched_tokens: 48,
        ..server(16 * 64, true).spec().clone()
    });
    // A: 96 shared tokens; its first step prefills 48 (3 blocks registered).
    s.submit(req(1, 96, 2, shared(96)), SimTime::ZERO);
    let (plan, _) = step(&mut s, SimTime::ZERO);
    assert_eq!(plan.batch.prefill_tokens, 48);
    let a = hashes(&shared(96), 96, 1, 6);
    let pool = s.pool.as_ref().unwrap();
    assert!(pool.is_cached(a[2]) && !pool.is_cached(a[3]));
    // B arrives: A's 48 remaining tokens fill the next step (its blocks 3..6 registered);
    // the step after, A decodes (1 token) and B is admitted: it finds 5 of A's 6 blocks
    // (its lookup covers 95 tokens: 5 whole blocks) and prefills 16.
    s.submit(req(2, 96, 2, shared(96)), plan.end);
    let (plan, _) = step(&mut s, plan.end);
    assert_eq!((plan.batch.prefill_tokens, plan.prefill_seqs), (48, 1));
    let (plan, _) = step(&mut s, plan.end);
    assert_eq!((plan.decode_seqs, plan.batch.prefill_tokens), (1, 16));
    assert_eq!(s.kv_blocks().unwrap().2.hit_tokens, 80);
}

/// Records the sequences `out` reports finished, each once.
fn finished(out: &[SeqEvent], ended: &mut std::collections::BTreeMap<u64, &str>) {
    for e in out {
        if let SeqEvent::Finished { id, .. } = *e {
            assert!(ended.insert(id, "finished").is_none(), "{id} ended twice");
        }
    }
}

/// A random mix (keyed by `mix64`) of prompts sharing a few prefixes, cancellations,
/// chunked or whole prefills and small pools: after every step the pool's accounting holds
/// (`check_invariants` walks every block), every sequence ends exactly once, and the mix
/// did meet hits, evictions and preemptions.
#[test]
fn block_accounting_holds_under_a_random_mix() {
    use sim_core::rng::mix64;
    use std::collections::BTreeMap;
    let (mut hits, mut evictions, mut preemptions) = (0, 0, 0);
    for case in 0..12u64 {
        let r = |k: u64, n: u64| mix64((case << 32) | k) % n;
        let bs = [1, 4, 16][case as usize % 3];
        let spec = ServerSpec {
            enable_prefix_caching: true,
            block_size: bs,
            enable_chunked_prefill: case % 2 == 1,
            max_num_batched_tokens: 32 + r(1, 64),
            max_queue: 1 + r(2, 20),
            cancellation: case % 3 != 0,
            max_num_seqs: 1 + r(3, 16),
            kv_cache_tokens: 80 + r(4, 200),
            step_time: StepTimeSpec::Fixed(SimDuration::from_ms(1)),
            ..ServerSpec::with_defaults("gpu")
        };
        let mut s = Server::new(&spec);
        let (mut now, mut next_id, mut out) = (SimTime::ZERO, 0u64, Vec::new());
        let mut ended: BTreeMap<u64, &str> = BTreeMap::new();
        for step in 0..400u64 {
            for _ in 0..r(10 + step, 4) {
                let id = next_id;
                next_id += 1;
                let mut prefix = PromptPrefix::NONE;
                for j in 0..r((id << 8) | 3, 3) {
                    assert!(prefix.push(r((id << 8) | (4 + j), 3), r((id << 8) | (8 + j), 30)));
                }
                let (prompt, output) = (r((id << 8) | 1, 60), 1 + r((id << 8) | 2, 30));
                if let SubmitDecision::Rejected(_) = s.submit(req(id, prompt, output, prefix), now)
                {
                    assert!(ended.insert(id, "rejected").is_none());
                }
            }
            if next_id > 0 && r(20_000 + step, 5) == 0 {
                let id = r(30_000 + step, next_id);
                if s.cancel(id) {
                    assert!(ended.insert(id, "cancelled").is_none(), "{id} ended twice");
                    s.check_invariants();
                }
            }
            let Some(plan) = s.start_step(now) else { continue };
            s.check_invariants();
            now = plan.end;
            out.clear();
            s.finish_step(now, &mut out);
            s.check_invariants();
            finished(&out, &mut ended);
        }
        while let Some(plan) = s.start_step(now) {
            now = plan.end;
            out.clear();
            s.finish_step(now, &mut out);
            s.check_invariants();
            finished(&out, &mut ended);
        }
        assert_eq!(ended.len() as u64, next_id, "case {case}: every sequence ends once");
        let (running, _, k) = s.kv_blocks().unwrap();
        assert_eq!(running, 0, "case {case}: an empty server holds no block");
        hits += k.hit_lookups;
        evictions += k.evictions;
        preemptions += s.stats.preemptions;
    }
    eprintln!("{hits} admissions with hits, {evictions} evictions, {preemptions} preemptions");
    assert!(hits > 100 && evictions > 100 && preemptions > 10);
}

#[test]
fn spec_reads_prefix_caching_and_refuses_pools_out_of_range() {
    let spec: ServerSpec =
        ron::from_str(r#"GpuServer(name: "g", enable_prefix_caching: true, block_size: 32)"#)
            .unwrap();
    // 870,000 tokens / 32 = 27,187 blocks (vLLM rounds the block count down).
    assert_eq!(spec.kv_blocks(), Some(27_187));
    assert_eq!(ServerSpec::with_defaults("g").kv_blocks(), None);
    assert_eq!(ServerSpec::with_defaults("g").block_size, 16);
    let on = |kv: u64, bs: u64| ServerSpec {
        enable_prefix_caching: true,
        kv_cache_tokens: kv,
        block_size: bs,
        ..ServerSpec::with_defaults("g")
    };
    for (spec, error) in [
        (on(15, 16), "0 blocks"),
        (on(16 << 24 | 16, 16), "16777217 blocks"),
        (on(1000, 0), "block_size = 0"),
        (on(4096, 2048), "block_size = 2048"),
    ] {
        let e = spec.check().unwrap_err();
        assert!(e.contains(error), "{e}");
    }
    assert!(on(16 << 24, 16).check().is_ok());
    for (text, error) in [
        (r#"GpuServer(name: "g", block_size: 0)"#, "found 0"),
        (r#"GpuServer(name: "g", enable_prefix_caching: 1)"#, "bool"),
    ] {
        let e = ron::from_str::<ServerSpec>(text).unwrap_err().to_string();
        assert!(e.contains(error), "{text}: {e}");
    }
    // A prompt + output needing more blocks than the pool: refused as too long; blocks
    // round up (33 tokens need 3 blocks of 16).
    let mut s = Server::new(&on(32, 16));
    let d = s.submit(req(1, 30, 3, PromptPrefix::NONE), SimTime::ZERO);
    assert_eq!(d, SubmitDecision::Rejected(SubmitRejection::TooLong));
    assert_eq!(s.submit(req(2, 30, 2, PromptPrefix::NONE), SimTime::ZERO), SubmitDecision::Queued);
}
