use super::*;
use crate::outcome::Reason;

const US: u64 = 1_000;

fn spec(window_us: u64, max_batch: u64) -> BatcherSpec {
    BatcherSpec { name: "llm".into(), window: SimDuration::from_us(window_us), max_batch }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Add(u64),
    Wake,
    Abandon(u64),
}

/// Expected: `None` for Added / nothing flushed / abandoned, or the flushed batch as
/// (id, members, opened_at µs, cause); every call brings 10 tokens.
type Flush = Option<(u64, Vec<u64>, u64, FlushCause)>;

/// window 5 ms, max_batch 8; a scripted arrival pattern with the exact membership and
/// times of every batch.
#[test]
fn scripted_membership_and_times() {
    use FlushCause::{Size, Window};
    use Op::*;
    let mut script: Vec<(u64, Op, Flush)> = vec![
        // Three calls, then the window (5 ms from the first, at 0) ends at 5 ms.
        (0, Add(0), None),
        (1_000, Add(1), None),
        (2_000, Add(2), None),
        (4_999, Wake, None),
        (5_000, Wake, Some((0, vec![0, 1, 2], 0, Window))),
    ];
    // Eight calls 0.1 ms apart from 10 ms: the eighth (10.7 ms) fills the batch.
    for i in 0..8u64 {
        let flush = (i == 7).then(|| (1, (3..=10).collect(), 10_000, Size));
        script.push((10_000 + 100 * i, Add(3 + i), flush));
    }
    script.extend([
        // A call exactly at the end of the window (11 + 5 = 16 ms) joins and flushes it.
        (11_000, Add(11), None),
        (16_000, Add(12), Some((2, vec![11, 12], 11_000, Window))),
        // An abandoned member leaves; the window still runs from the batch's first call.
        (20_000, Add(13), None),
        (21_000, Add(14), None),
        (22_000, Abandon(13), None),
        (25_000, Wake, Some((3, vec![14], 20_000, Window))),
        // A batch whose only member leaves is dropped: nothing to send.
        (30_000, Add(15), None),
        (31_000, Abandon(15), None),
        (35_000, Wake, None),
    ]);
    let mut b = Batcher::new(&spec(5_000, 8));
    let mut flushed = vec![];
    for (t_us, op, want) in script {
        let now = SimTime(t_us * US);
        let got = match op {
            Add(c) => match b.add(CallId(c), 10, now) {
                BatchAdd::Added => None,
                BatchAdd::FlushNow(x) => Some(x),
            },
            Wake => b.on_wake(now),
            Abandon(c) => {
                b.abandon(CallId(c));
                None
            }
        };
        let want = want.map(|(id, m, opened, cause)| Batch {
            id: BatchId(id),
            tokens: 10 * m.len() as u64,
            members: m.into_iter().map(CallId).collect(),
            opened_at: SimTime(opened * US),
            flushed_at: now,
            cause,
        });
        assert_eq!(got, want, "at {t_us} µs, {op:?}");
        flushed.extend(got);
        // The timer always points at the open batch's window end.
        let open_deadline = b.open.as_ref().map(|o| o.opened_at + SimDuration::from_ms(5));
        assert_eq!(b.wake_at(), open_deadline);
    }
    assert_eq!(b.wake_at(), None);
    let c = b.counters;
    assert_eq!((c.calls, c.batches, c.flushed_on_size, c.flushed_on_window), (16, 4, 1, 3));
    assert_eq!((c.abandoned, c.calls_batched), (2, 14));

    // One upstream call per batch; every member gets that batch's outcome, once.
    let fail = Outcome::Failed(Reason::Upstream5xx);
    let mut ended: Vec<(CallId, Outcome)> = vec![];
    ended.extend(b.complete(BatchId(1), Outcome::Success));
    ended.extend(b.complete(BatchId(0), fail));
    ended.extend(b.complete(BatchId(3), Outcome::Success));
    ended.extend(b.complete(BatchId(2), Outcome::Success));
    let mut ids: Vec<u64> = ended.iter().map(|e| e.0.0).collect();
    ids.sort();
    let want: Vec<u64> = (0..=14).filter(|c| *c != 13).collect();
    assert_eq!(ids, want);
    for (c, o) in &ended {
        assert_eq!(*o, if c.0 <= 2 { fail } else { Outcome::Success }, "{c:?}");
    }
    assert_eq!((b.waiting(), b.in_flight(), b.open_len()), (0, 0, 0));
}

/// With window 0 or max_batch 1 every call is sent alone at once, with no timer.
#[test]
fn degenerate_settings_send_each_call_alone() {
    for (window_us, max_batch) in [(0, 8), (5_000, 1)] {
        let mut b = Batcher::new(&spec(window_us, max_batch));
        for i in 0..3 {
            let now = SimTime(i * 1_000 * US);
            match b.add(CallId(i), 1, now) {
                BatchAdd::FlushNow(x) => {
                    assert_eq!((x.id, x.members, x.flushed_at), (BatchId(i), vec![CallId(i)], now))
                }
                BatchAdd::Added => panic!("({window_us}, {max_batch}): call {i} was held"),
            }
            assert_eq!(b.wake_at(), None);
        }
    }
}

#[test]
fn runtime_changes() {
    let mut b = Batcher::new(&spec(5_000, 8));
    for i in 0..3 {
        assert_eq!(b.add(CallId(i), 1, SimTime(0)), BatchAdd::Added);
    }
    b.set_window(SimDuration::from_ms(1));
    assert_eq!(b.wake_at(), Some(SimTime(1_000 * US)));
    assert_eq!(b.set_max_batch(4, SimTime(10)), None);
    // Lowering to the open batch's size (3) sends it at once.
    let x = b.set_max_batch(3, SimTime(20)).expect("flushed");
    assert_eq!((x.members.len(), x.cause, x.flushed_at), (3, FlushCause::Size, SimTime(20)));
    assert_eq!(b.wake_at(), None);
}

/// Pseudo-random arrivals, abandons and completions: every call ends exactly once
/// (an outcome or an abandon), batches never exceed max_batch nor wait beyond the window.
#[test]
fn every_member_ends_exactly_once() {
    let window = SimDuration::from_ms(5);
    let mut b = Batcher::new(&spec(5_000, 8));
    let mut ends = vec![0u32; 3_000];
    let mut waiting: Vec<CallId> = vec![];
    let mut sent: Vec<BatchId> = vec![];
    let mut t = SimTime(0);
    let check = |x: &Batch, sent: &mut Vec<BatchId>| {
        assert!(!x.members.is_empty() && x.members.len() <= 8);
        assert!(x.flushed_at.since(x.opened_at) <= window);
        assert!(x.members.windows(2).all(|w| w[0] < w[1]), "arrival order");
        sent.push(x.id);
    };
    for i in 0..3_000u64 {
        let r = sim_core::rng::mix64(i ^ 0x5eed);
        t += SimDuration::from_ns(r % 3_000_000);
        if let Some(w) = b.wake_at()
            && w <= t
        {
            check(&b.on_wake(w).expect("due"), &mut sent);
        }
        if let BatchAdd::FlushNow(x) = b.add(CallId(i), r >> 60, t) {
            check(&x, &mut sent);
        }
        waiting.push(CallId(i));
        if r.is_multiple_of(10) {
            let c = waiting.swap_remove((r >> 20) as usize % waiting.len());
            b.abandon(c);
            ends[c.0 as usize] += 1;
        }
        if (r >> 8).is_multiple_of(3) && !sent.is_empty() {
            let id = sent.remove((r >> 30) as usize % sent.len());
            for (c, _) in b.complete(id, Outcome::Success) {
                ends[c.0 as usize] += 1;
                waiting.retain(|w| *w != c);
            }
        }
        assert_eq!(b.waiting(), waiting.len() as u64);
    }
    if let Some(x) = b.on_wake(SimTime::MAX) {
        sent.push(x.id);
    }
    for id in sent {
        for (c, _) in b.complete(id, Outcome::Success) {
            ends[c.0 as usize] += 1;
        }
    }
    assert!(ends.iter().all(|n| *n == 1), "some call ended twice or never");
    assert_eq!((b.waiting(), b.in_flight()), (0, 0));
    let c = b.counters;
    assert!(c.flushed_on_size > 0 && c.flushed_on_window > 0 && c.abandoned > 0);
}

#[test]
fn spec_parses_with_defaults() {
    let s: BatcherSpec = ron::from_str(r#"Batcher(name: "gpu")"#).expect("parses");
    assert_eq!((s.window, s.max_batch), (SimDuration::from_ms(5), 8));
    assert!(ron::from_str::<BatcherSpec>(r#"Batcher(name: "gpu", max_batch: 0)"#).is_err());
}

/// Every declared parameter reads back, writes back, and is unknown under another name.
#[test]
fn params_roundtrip() {
    use crate::params::Params;
    let mut s: BatcherSpec = ron::from_str(r#"Batcher(name: "gpu")"#).expect("parses");
    for d in BatcherSpec::decls() {
        let v = s.get(d.name).unwrap_or_else(|| panic!("{} readable", d.name));
        s.set(d.name, v.clone()).expect("writable");
        assert_eq!(s.get(d.name), Some(v));
    }
    assert_eq!(s.get("no_such_param"), None);
}
