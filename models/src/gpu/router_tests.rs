//! The router's pick sequence for scripted loads, one policy at a time, each worked by hand
//! in the comments from the rules of `router.rs`.

use super::prefix::PromptPrefix;
use super::router::*;
use super::{SeqEvent, SeqRequest, Server, ServerSpec, SubmitDecision};
use sim_core::SimTime;

fn rep(outstanding: u64, waiting: u64) -> ReplicaView {
    ReplicaView { outstanding, waiting, ..Default::default() }
}

fn req(hashes: &[u64]) -> RequestView<'_> {
    RequestView { hashes, session: None }
}

#[test]
fn round_robin_cycles() {
    // picks mod 3: 0, 1, 2, 0, 1 whatever the load.
    let mut r = Router::new(&RouterPolicy::RoundRobin, 3, 10, 128);
    let busy = [rep(9, 9), rep(0, 0), rep(5, 0)];
    let seq: Vec<usize> = (0..5).map(|_| r.pick(&req(&[]), &busy)).collect();
    assert_eq!(seq, [0, 1, 2, 0, 1]);
}

#[test]
fn least_outstanding_follows_the_scripted_load() {
    // Each pick adds a call to its replica; the script answers some between picks.
    // out [0,0,0], start 0: all tie → 0.          out [1,0,0]
    // start 1: r1 = 0 is first of the least → 1.  out [1,1,0]
    // start 2: r2 = 0 → 2.                        out [1,1,1]; r1 answers → [1,0,1]
    // start 0: r0 1, r1 0 (better), r2 1 → 1.     out [1,1,1]; r0, r2 answer → [0,1,0]
    // start 1: r1 1, r2 0 (better), r0 0 (tie, not better) → 2.
    let mut r = Router::new(&RouterPolicy::LeastOutstanding, 3, 10, 128);
    let mut out = [0u64; 3];
    let mut seq = Vec::new();
    let answers: [&[usize]; 5] = [&[], &[], &[1], &[0, 2], &[]];
    for done in answers {
        let views: Vec<_> = out.iter().map(|&o| rep(o, 0)).collect();
        let i = r.pick(&req(&[]), &views);
        out[i] += 1;
        seq.push(i);
        for &d in done {
            out[d] -= 1;
        }
    }
    assert_eq!(seq, [0, 1, 2, 1, 2]);
}

#[test]
fn session_affinity_is_sticky_consistent_and_spread() {
    let mut r = Router::new(&RouterPolicy::SessionAffinity, 4, 10, 128);
    let idle = [rep(0, 0); 4];
    let mut pick = |s: Option<u64>, views: &[ReplicaView]| {
        r.pick(&RequestView { hashes: &[], session: s }, views)
    };
    // Sessions 7, 8, 7, 9, 8, 7: each session's later requests go where its first went,
    // whatever the load.
    let (a, b) = (pick(Some(7), &idle), pick(Some(8), &idle));
    let c = pick(Some(7), &[rep(50, 50), rep(0, 0), rep(0, 0), rep(0, 0)]);
    let d = pick(Some(9), &idle);
    assert_eq!((c, pick(Some(8), &idle), pick(Some(7), &idle)), (a, b, a));
    assert!(d < 4);
    // No session: the least loaded (SessionRouter's fallback).
    assert_eq!(pick(None, &[rep(3, 0), rep(1, 0), rep(0, 0), rep(2, 0)]), 2);
    // Spread: 4,000 sessions on 4 replicas, each share binomial(4000, 1/4): mean 1,000,
    // sd 27; ±150 is beyond 5 sd.
    let mut count = [0u32; 4];
    let mut r4 = Router::new(&RouterPolicy::SessionAffinity, 4, 10, 128);
    let mut r5 = Router::new(&RouterPolicy::SessionAffinity, 5, 10, 128);
    let mut moved = 0;
    for s in 1..=4000u64 {
        let v = RequestView { hashes: &[], session: Some(s) };
        let i = r4.pick(&v, &idle);
        count[i] += 1;
        // Consistency (rendezvous hashing): a fifth replica takes sessions only for
        // itself; none moves between the first four.
        let j = r5.pick(&v, &[rep(0, 0); 5]);
        assert!(j == i || j == 4, "session {s} moved {i} → {j}");
        moved += u32::from(j == 4);
    }
    assert!(count.iter().all(|&c| (850..=1150).contains(&c)), "{count:?}");
    // ~1/5 of the sessions move: binomial(4000, 1/5), mean 800, sd 25.
    assert!((675..=925).contains(&moved), "{moved}");
}

#[test]
fn prefix_aware_approximate_learns_what_it_routed() {
    // Tenants A (blocks 1 2 3) and B (11 12 13), each request with an own last block.
    // A1: no replica matches, loads equal, start 0 → 0; index0 = {1 2 3 100}.
    // B1: no match, start 1 → 1; index1 = {11 12 13 101}.
    // A2: matches [3, 0] → 0.   B2: [0, 3] → 1.
    // C1 (21 22): no match; outstanding [2, 0] → the fewer: 1.
    // A3: matches [3, 0] with outstanding [5, 0]: the match wins → 0.
    let mut r = Router::new(&RouterPolicy::PrefixAware(PrefixMode::Approximate), 2, 1000, 128);
    let idle = [rep(0, 0); 2];
    let script: [(&[u64], [ReplicaView; 2]); 6] = [
        (&[1, 2, 3, 100], idle),
        (&[11, 12, 13, 101], idle),
        (&[1, 2, 3, 102], idle),
        (&[11, 12, 13, 103], idle),
        (&[21, 22, 104], [rep(2, 0), rep(0, 0)]),
        (&[1, 2, 3, 105], [rep(5, 0), rep(0, 0)]),
    ];
    let seq: Vec<usize> = script.iter().map(|(h, v)| r.pick(&req(h), v)).collect();
    assert_eq!(seq, [0, 1, 0, 1, 1, 0]);
    // Index0: A1, A2, A3 (1 2 3 100 102 105); index1: B1, B2, C1 (11 12 13 101 103 21 22 104).
    assert_eq!((r.indexed(0), r.indexed(1)), (6, 8));
}

#[test]
fn approximate_index_forgets_beyond_its_capacity() {
    // Capacity 4. A1 → 0 (tie, start 0): index0 = {1 2 3 100}. X (21 22) with outstanding
    // [0, 5] → 0: the LRU drops 1 and 2, index0 = {3 100 21 22}. A2 with outstanding [3, 0]:
    // its leading block 1 is gone, no match anywhere → the less loaded 1. With room for
    // everything (capacity 1000) A2 matches 3 blocks at 0 and goes there.
    for (capacity, want) in [(4, [0, 0, 1]), (1000, [0, 0, 0])] {
        let mut r =
            Router::new(&RouterPolicy::PrefixAware(PrefixMode::Approximate), 2, capacity, 128);
        let seq = [
            r.pick(&req(&[1, 2, 3, 100]), &[rep(0, 0); 2]),
            r.pick(&req(&[21, 22]), &[rep(0, 0), rep(5, 0)]),
            r.pick(&req(&[1, 2, 3, 101]), &[rep(3, 0), rep(0, 0)]),
        ];
        assert_eq!(seq, want, "capacity {capacity}");
        assert!(r.indexed(0) <= capacity as usize);
    }
}

#[test]
fn prefix_aware_precise_reads_the_replicas() {
    // cached [0, 5, 5]: 1 and 2 tie on the match, 2 has fewer outstanding (1 < 3) → 2.
    // cached [2, 0, 0] → 0. Nothing is learned: the same request with nothing cached
    // anywhere goes by load alone → the idle 1.
    let mut r = Router::new(&RouterPolicy::PrefixAware(PrefixMode::Precise), 3, 10, 128);
    let h = [1, 2, 3, 4, 5];
    let cached = |c: [u64; 3], out: [u64; 3]| -> Vec<ReplicaView> {
        (0..3).map(|i| ReplicaView { cached_blocks: c[i], ..rep(out[i], 0) }).collect()
    };
    assert_eq!(r.pick(&req(&h), &cached([0, 5, 5], [0, 3, 1])), 2);
    assert_eq!(r.pick(&req(&h), &cached([2, 0, 0], [4, 4, 4])), 0);
    assert_eq!(r.pick(&req(&h), &cached([0, 0, 0], [2, 0, 1])), 1);
    assert_eq!(r.indexed(0), 0);
}

#[test]
fn weighted_scorers_sum_their_weights() {
    // Prefix(Approximate) ×3 + Queue ×2 + Load ×1, threshold 128, three replicas.
    // 1: hashes 1 2 3 4, waiting [0, 4, 8]. prefix 0 everywhere; queue (8−q)/8 =
    //    [1, .5, 0]; load [.5, .5(1−4/128) = .484375, .5(1−8/128) = .46875].
    //    Sums [2.5, 1.484375, .46875] → 0; index0 = {1 2 3 4}.
    // 2: hashes 1 2 9 10, waiting [6, 0, 0]. prefix r0 2/4 → ×3 = 1.5; queue [0, 1, 1] ×2;
    //    load [.4765625, .5, .5]. Sums [1.9765625, 2.5, 2.5]: 1 and 2 tie; one pick so
    //    far, the order starts at 1 → 1; index1 = {1 2 9 10}.
    // 3: hashes 1 2 9 10, waiting [0, 2, 0]. prefix [.5, 1, 0] ×3 = [1.5, 3, 0]; queue
    //    [1, 0, 1] ×2 = [2, 0, 2]; load [.5, .4921875, .5]. Sums [4, 3.4921875, 2.5] → 0.
    let scorers = vec![
        (Scorer::Prefix(PrefixMode::Approximate), 3.0),
        (Scorer::Queue, 2.0),
        (Scorer::Load, 1.0),
    ];
    let mut r = Router::new(&RouterPolicy::Weighted(scorers), 3, 1000, 128);
    let w = |q: [u64; 3]| -> Vec<ReplicaView> { q.iter().map(|&q| rep(0, q)).collect() };
    let seq = [
        r.pick(&req(&[1, 2, 3, 4]), &w([0, 4, 8])),
        r.pick(&req(&[1, 2, 9, 10]), &w([6, 0, 0])),
        r.pick(&req(&[1, 2, 9, 10]), &w([0, 2, 0])),
    ];
    assert_eq!(seq, [0, 1, 0]);
}

#[test]
fn weighted_active_request_kv_cache_and_precise() {
    // ActiveRequest + KvCache. outstanding [4, 2, 0] → (4−c)/4 = [0, .5, 1]; kv used
    // [.5, .9, .1] → [.5, .1, .9]; sums [.5, .6, 1.9] → 2. Then outstanding [0, 2, 4] →
    // [1, .5, 0], kv [.9, 0, 0] → [.1, 1, 1]; sums [1.1, 1.5, 1] → 1.
    let s = vec![(Scorer::ActiveRequest, 1.0), (Scorer::KvCache, 1.0)];
    let mut r = Router::new(&RouterPolicy::Weighted(s), 3, 10, 128);
    let v = |o: [u64; 3], kv: [f64; 3]| -> Vec<ReplicaView> {
        (0..3).map(|i| ReplicaView { kv_usage: kv[i], ..rep(o[i], 0) }).collect()
    };
    assert_eq!(r.pick(&req(&[]), &v([4, 2, 0], [0.5, 0.9, 0.1])), 2);
    assert_eq!(r.pick(&req(&[]), &v([0, 2, 4], [0.9, 0.0, 0.0])), 1);
    // Precise prefix ×1 + ActiveRequest ×0.4: cached [0, 4, 2] min-max → [0, 1, .5];
    // outstanding [0, 5, 0] → [1, 0, 1] × .4; sums [.4, 1, .9] → 1. All cached equal →
    // all 1: the load decides, outstanding [1, 1, 0] → [0, 0, 1] → 2.
    let s = vec![(Scorer::Prefix(PrefixMode::Precise), 1.0), (Scorer::ActiveRequest, 0.4)];
    let mut r = Router::new(&RouterPolicy::Weighted(s), 3, 10, 128);
    let c = |c: [u64; 3], o: [u64; 3]| -> Vec<ReplicaView> {
        (0..3).map(|i| ReplicaView { cached_blocks: c[i], ..rep(o[i], 0) }).collect()
    };
    assert_eq!(r.pick(&req(&[1]), &c([0, 4, 2], [0, 5, 0])), 1);
    assert_eq!(r.pick(&req(&[1]), &c([3, 3, 3], [1, 1, 0])), 2);
}

#[test]
fn policies_say_what_they_read_and_are_checked() {
    use PrefixMode::*;
    let w = |s: Vec<(Scorer, f64)>| RouterPolicy::Weighted(s);
    assert!(!RouterPolicy::RoundRobin.needs_hashes());
    assert!(RouterPolicy::PrefixAware(Approximate).needs_hashes());
    assert!(!RouterPolicy::PrefixAware(Approximate).needs_precise());
    assert!(w(vec![(Scorer::Queue, 1.0), (Scorer::Prefix(Precise), 2.0)]).needs_precise());
    assert!(w(vec![]).check().is_err());
    assert!(w(vec![(Scorer::Queue, -1.0)]).check().is_err());
    assert!(w(vec![(Scorer::Queue, f64::NAN)]).check().is_err());
    assert!(w(vec![(Scorer::Queue, 0.0)]).check().is_ok());
    let text = "Weighted([(Prefix(Approximate), 3.0), (Queue, 2.0), (Load, 1.0)])";
    let p: RouterPolicy = ron::from_str(text).unwrap();
    assert_eq!(
        p,
        w(vec![(Scorer::Prefix(Approximate), 3.0), (Scorer::Queue, 2.0), (Scorer::Load, 1.0)])
    );
}

#[test]
fn router_hashes_are_the_servers_block_hashes() {
    // A server with prefix caching runs one sequence whose prompt is a 64-token shared
    // segment then 20 own tokens (block size 16): it caches blocks 0..4 of the shared
    // segment (and its own full block 4, 64..80). Another request with the same segment
    // and its own tail: its first 4 hashes are found, its 5th (its own tokens) is not.
    let mut spec = ServerSpec::with_defaults("g");
    spec.enable_prefix_caching = true;
    spec.step_time = super::StepTimeSpec::Fixed(sim_core::SimDuration::from_ms(1));
    let mut s = Server::new(&spec);
    let mut prefix = PromptPrefix::NONE;
    prefix.push(0xabc, 64);
    let seq = SeqRequest { id: 1, prompt_tokens: 84, output_tokens: 2, prefix };
    assert_eq!(s.submit(seq, SimTime::ZERO), SubmitDecision::Queued);
    let (mut now, mut evs) = (SimTime::ZERO, Vec::new());
    while s.has_work() {
        now = s.start_step(now).expect("work").end;
        s.finish_step(now, &mut evs);
    }
    assert!(evs.iter().any(|e| matches!(e, SeqEvent::Finished { id: 1, .. })));
    let other = prompt_block_hashes(&prefix, 90, 16, 7);
    assert_eq!(other.len(), 5);
    assert_eq!(s.cached_prefix_blocks(&other), 4);
    let mut unrelated = PromptPrefix::NONE;
    unrelated.push(0xdef, 64);
    assert_eq!(s.cached_prefix_blocks(&prompt_block_hashes(&unrelated, 90, 16, 7)), 0);
    // At most MAX_PREFIX_BLOCKS.
    assert_eq!(prompt_block_hashes(&prefix, 1 << 20, 16, 7).len() as u64, MAX_PREFIX_BLOCKS);
}
