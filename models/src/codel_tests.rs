//! The pure core on scripted backlogs: the RFC law's drop instants in closed form, and the
//! queue discipline's order (FIFO, adaptive LIFO) on a scripted sequence.

use super::*;

const MS: u64 = 1_000_000;

fn ms(n: u64) -> SimTime {
    SimTime(n * MS)
}

/// An endless backlog whose every item has waited `sojourn` (items are numbered).
struct Constant {
    sojourn: SimDuration,
    now: SimTime,
    next: u64,
    dropped: Vec<(u64, SimTime)>,
}

impl Backlog for Constant {
    type Item = u64;
    fn take(&mut self) -> Option<(u64, SimTime)> {
        self.next += 1;
        Some((self.next, SimTime(self.now.0 - self.sojourn.0)))
    }
    fn left(&self) -> usize {
        usize::MAX
    }
    fn dropped(&mut self, item: u64) {
        self.dropped.push((item, self.now));
    }
}

/// The RFC 8289 drop instants under a constant sojourn s ≥ target, dequeues at will.
///
/// Derivation (RFC 8289 §5, `dodequeue`/`dequeue`): the first dequeue, at 0, sees s ≥
/// target and sets `first_above_time = 0 + I`. Dequeues before I are not ok to drop; the
/// first at I is: not dropping, so it drops, enters the dropping state with count = 1
/// (count − lastcount = 0) and `drop_next = I + I/√1`. From then on every dequeue is ok to
/// drop (s stays ≥ target) and the `while now ≥ drop_next` loop drops once at the first
/// dequeue at or after `drop_next`, then `count += 1`, `drop_next += I/√count`. So the k-th
/// drop is due at
///   D₁ = I,   D₂ = 2I,   D_{k+1} = D_k + I/√k,   i.e. D_k = I + I·Σ_{j<k} 1/√j,
/// each step truncated to whole nanoseconds (`control_law`), so D_k is within k ns below the
/// real sum. Dequeuing at D_k − 1 ns and at D_k (and on a 1 ms grid besides) drops exactly
/// at the D_k: the law depends on the instants only through `now ≥ drop_next`.
#[test]
fn a_constant_sojourn_drops_at_interval_then_interval_over_root_count() {
    let (target, interval) = (SimDuration::from_ms(5), SimDuration::from_ms(100));
    let due = rfc_due(interval, 20);
    for (k, d) in due.iter().enumerate() {
        let real: f64 = 1.0 + (1..=k).map(|j| 1.0 / (j as f64).sqrt()).sum::<f64>();
        let real = real * interval.0 as f64;
        assert!(real - (*d as f64) < (k + 1) as f64 && real >= *d as f64, "D_{k}: {d} vs {real}");
    }
    let mut instants: Vec<u64> = (0..=due[19] / MS + 1).map(|t| t * MS).collect();
    instants.extend(due.iter().flat_map(|d| [d - 1, *d]));
    instants.sort();
    instants.dedup();
    // Instants from 1 s on (every item has been waiting for s already at the first).
    let base = 1_000 * MS;
    let mut b =
        Constant { sojourn: SimDuration::from_ms(10), now: SimTime(0), next: 0, dropped: vec![] };
    let mut law = Rfc8289::default();
    for t in instants {
        b.now = SimTime(base + t);
        let now = b.now;
        let kept = law.dequeue(&mut b, now, target, interval);
        assert!(kept.is_some(), "an endless backlog always serves one");
    }
    let at: Vec<u64> = b.dropped.iter().map(|(_, t)| t.0 - base).collect();
    assert_eq!(at, due);
    // The gaps: I, then I/√1, I/√2, … (the first drop waits one interval above target).
    assert_eq!((due[1] - due[0], due[2] - due[1]), (100 * MS, 70_710_678));
    assert!(law.dropping());
}

/// A sojourn below target never drops; a pass (sojourn 0) leaves the dropping state.
#[test]
fn below_target_nothing_drops_and_a_pass_ends_dropping() {
    let (target, interval) = (SimDuration::from_ms(5), SimDuration::from_ms(100));
    let mut b =
        Constant { sojourn: SimDuration::from_ms(4), now: SimTime(0), next: 0, dropped: vec![] };
    let mut law = Rfc8289::default();
    for t in 0..1000 {
        b.now = ms(1000 + t);
        let now = b.now;
        law.dequeue(&mut b, now, target, interval);
    }
    assert!(b.dropped.is_empty());
    b.sojourn = SimDuration::from_ms(6);
    for t in 2000..=2100 {
        b.now = ms(t);
        let now = b.now;
        law.dequeue(&mut b, now, target, interval);
    }
    assert_eq!(b.dropped.len(), 1, "one drop, at 2100 ms");
    assert!(law.dropping());
    law.pass();
    assert!(!law.dropping());
    assert_eq!(law.first_above, None);
}

/// FIFO is a plain queue: `pop` is the head, nothing is ever dropped.
#[test]
fn fifo_pops_the_head() {
    let mut q = WaitQueue::new(None);
    for i in 0..5u32 {
        q.push_back(i, SimTime(0));
    }
    let got: Vec<u32> = (0..5).map(|t| q.pop(ms(t * 1000)).unwrap().0).collect();
    assert_eq!(got, vec![0, 1, 2, 3, 4]);
    assert!(q.pop(ms(9000)).is_none());
    assert_eq!((q.codel_dropped, q.take_dropped()), (0, vec![]));
}

/// Adaptive LIFO on a scripted sequence (target 5 ms, interval 100 ms): items 0..=300 wait
/// from 0, one dequeue a millisecond, so the head's sojourn is the instant.
/// * 1–104 ms: FIFO, items 0..=103 (item 4 at 5 ms reaches target: `first_above = 105`);
/// * 105 ms: item 104 is ok to drop: dropped; the law keeps item 105 and enters dropping
///   (`drop_next = 205`); LIFO: item 105 goes back to the head, the newest (300) is served;
/// * 106–204 ms: the law judges item 105 (ok to drop, not yet due) and keeps it: served the
///   newest, 299 down to 201;
/// * 205 ms: item 105 dropped (count 2, `drop_next = 275.71`), item 106 kept at the head:
///   200 served.
#[test]
fn adaptive_lifo_serves_the_newest_while_dropping() {
    let spec = CodelSpec { lifo_when_overloaded: true, ..CodelSpec::default() };
    let mut q = WaitQueue::new(Some(&spec));
    for i in 0..=300u32 {
        q.push_back(i, SimTime(0));
    }
    let mut served = vec![];
    let mut dropped = vec![];
    for t in 1..=205 {
        served.push(q.pop(ms(t)).unwrap().0);
        dropped.extend(q.take_dropped().into_iter().map(|i| (i, t)));
    }
    let mut want: Vec<u32> = (0..=103).collect();
    want.extend((200..=300).rev());
    assert_eq!(served, want);
    assert_eq!(dropped, vec![(104, 105), (105, 205)]);
    assert_eq!((q.codel_dropped, q.lifo_takes), (2, 101));
    assert_eq!(q.front().map(|w| w.0), Some(106));
}

/// Without LIFO the same script stays FIFO and drops as the governor's test
/// (`codel_queue_tests::rfc8289_drops_a_standing_queue_on_the_control_law`): 105, 205, 276.
#[test]
fn codel_fifo_drops_the_head_on_the_control_law() {
    let mut q = WaitQueue::new(Some(&CodelSpec::default()));
    for i in 0..=2000u32 {
        q.push_back(i, SimTime(0));
    }
    let mut drops = vec![];
    for t in 1..=300 {
        q.pop(ms(t)).unwrap();
        drops.extend(q.take_dropped().into_iter().map(|_| t));
    }
    assert_eq!(drops, vec![105, 205, 276]);
    assert_eq!((q.codel_dropped, q.lifo_takes), (3, 0));
}

/// Run-time changes reach the CoDel parameters; a FIFO queue refuses them.
#[test]
fn codel_parameters_change_at_run_time() {
    use crate::params::ParamValue as V;
    let mut q: WaitQueue<u32> = WaitQueue::new(Some(&CodelSpec::default()));
    q.apply_codel("target", V::Duration(SimDuration::from_ms(7)), SimTime(0)).unwrap();
    q.apply_codel("lifo_when_overloaded", V::Bool(true), SimTime(0)).unwrap();
    let c = q.codel().unwrap();
    assert_eq!((c.spec.target, c.spec.lifo_when_overloaded), (SimDuration::from_ms(7), true));
    let mut fifo: WaitQueue<u32> = WaitQueue::new(None);
    assert!(fifo.apply_codel("target", V::Duration(SimDuration(1)), SimTime(0)).is_err());
}
