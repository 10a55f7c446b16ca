//! The controller stepped by hand (the PID table, the measured delay), the priority order,
//! the queue timeout, and a behavioural bound under overload from a small event loop.

use super::*;
use std::collections::BTreeMap;

const MS: u64 = 1_000_000;

fn ms(n: u64) -> SimTime {
    SimTime(n * MS)
}

/// A call of class `tier` from `user`.
fn call(id: u64, tier: u16, user: u64) -> CallInfo {
    CallInfo { user, ..CallInfo::simple(id, tier) }
}

/// The first `n` users (from 1) whose cohort out of `cohorts` satisfies `f`.
fn users(cohorts: u64, n: usize, f: impl Fn(u64) -> bool) -> Vec<u64> {
    (1..).filter(|&u| f(cohort_of(&call(0, 0, u), cohorts))).take(n).collect()
}

/// One slot, threshold = round(m − 5 ms) (kp 1, ki = kd = 0), period 100 ms.
fn proportional() -> PidShedderSpec {
    PidShedderSpec {
        kp: 1.0,
        ki: 0.0,
        target: SimDuration::from_ms(5),
        period: SimDuration::from_ms(100),
        ..PidShedderSpec::defaults("s", 1)
    }
}

/// Beauregard's form, worked by hand: kp = 2, ki = 1, kd = 0.5 (per ms), target 5 ms,
/// output range [0, 10]. Per row: m; e = m − 5; I = clamp(I + e, 0, 10); d = m − m_prev (0 at
/// the first); u = clamp(2e + I − 0.5d, 0, 10); threshold = round(u).
/// The unclamped integral (no anti-windup) would run 4, 11, 12, 9, 7, 2, −3, 0 and give 5
/// at row 5 and 2 at row 9 instead of 3 and 5: the clamp is what the table tests.
#[test]
fn pid_table_with_anti_windup() {
    #[rustfmt::skip]
    let rows: &[(f64, f64, f64, u64)] = &[
        // (m ms, I after, u, threshold)
        (5.0, 0.0, 0.0, 0),    // e 0, first update: no derivative
        (9.0, 4.0, 10.0, 10),  // e 4: 8 + 4 − 0.5·4 = 10
        (12.0, 10.0, 10.0, 10),// e 7: I 11 → 10 (anti-windup); 14 + 10 − 1.5 → 10
        (6.0, 10.0, 10.0, 10), // e 1: I 11 → 10; 2 + 10 + 3 = 15 → 10
        (2.0, 7.0, 3.0, 3),    // e −3: I 7; −6 + 7 + 2 = 3
        (3.0, 5.0, 0.5, 1),    // e −2: I 5; −4 + 5 − 0.5 = 0.5, rounded half away from 0
        (0.0, 0.0, 0.0, 0),    // e −5: I 0; −10 + 0 + 1.5 → 0
        (0.0, 0.0, 0.0, 0),    // e −5: I −5 → 0 (no negative windup); −10 → 0
        (8.0, 3.0, 5.0, 5),    // e 3: I 3; 6 + 3 − 0.5·8 = 5
    ];
    let mut pid = Pid { kp: 2.0, ki: 1.0, kd: 0.5, ..Pid::default() };
    for (k, &(m, i, u, th)) in rows.iter().enumerate() {
        let out = pid.update(m, 5.0, 10.0);
        assert_eq!((pid.i_term, out, out.round() as u64), (i, u, th), "row {}", k + 1);
    }
}

/// The measured delay is the period's longest sojourn of calls that left the queue and
/// age of calls still waiting at the boundary. kp = 1, ki = kd = 0, target 5 ms, period
/// 100 ms, one slot, one tier of 128 cohorts, so threshold = round(m − 5) buckets:
/// * call 1 passes at 0; call 2 waits from 10; call 1 ends at 40, call 2 leaves (30 ms);
///   call 3 waits from 50. At 100: m = max(30, 100 − 50) = 50 → threshold 45.
/// * call 2 ends at 120, call 3 leaves (70 ms). At 200: m = 70 → threshold 65, so buckets
///   ≥ 128 − 65 = 63 are refused.
/// * nothing in the third period: at 300, m = 0, u = −5 → 0.
#[test]
fn the_measured_delay_and_the_threshold_by_period() {
    let mut s = PidShedder::new(&proportional(), 1);
    let low = users(128, 1, |c| c < 20)[0];
    let high = users(128, 1, |c| c >= 63)[0];
    let (mut woken, t) = (vec![], |id| call(id, 0, low));
    assert_eq!(s.on_call(&t(1), ms(0)), CallDecision::Pass);
    assert!(matches!(s.on_call(&t(2), ms(10)), CallDecision::Wait { .. }));
    s.on_outcome(&t(1), Outcome::Success, ms(40));
    assert!(matches!(s.on_call(&t(3), ms(50)), CallDecision::Wait { .. }));
    assert_eq!(s.wake_at(), Some(ms(100)));
    s.on_wake(ms(100));
    assert_eq!((s.threshold(), s.updates), (45, 1));
    s.on_outcome(&t(2), Outcome::Success, ms(120));
    s.take_woken(&mut woken);
    assert_eq!(woken, vec![CallId(2), CallId(3)]);
    // The update at 200 runs from the arrival at 250 (no timer needed).
    assert_eq!(s.on_call(&call(4, 0, high), ms(250)), CallDecision::Reject(Reason::Shed));
    assert_eq!((s.threshold(), s.updates, s.shed_by_threshold), (65, 2, 1));
    assert!(matches!(s.on_call(&t(5), ms(250)), CallDecision::Wait { .. }));
    s.on_abandon(&t(5), ms(250));
    s.on_outcome(&t(3), Outcome::Success, ms(260));
    s.on_wake(ms(300));
    // Period 3 had call 5 leave with sojourn 0: m = 0.
    assert_eq!((s.threshold(), s.updates, s.in_flight(), s.dispatched), (0, 3, 0, 3));
}

/// Rule 1 and 2: 3 tiers × 4 cohorts (12 buckets); threshold 5 refuses buckets 7–11: all of
/// tier 2 and tier 1's cohort 3; the same user lands in the same cohort whatever the call,
/// class or instant, and 10 000 users spread over 128 cohorts within ±3.5 standard
/// deviations of the binomial mean (78.1 ± 30.8 → 47..=109).
#[test]
fn the_least_important_buckets_are_shed_first_and_cohorts_are_stable() {
    let mut s =
        PidShedder::new(&PidShedderSpec { cohorts: 4, ..PidShedderSpec::defaults("s", 100) }, 3);
    assert_eq!(s.buckets(), 12);
    s.threshold = 5;
    for tier in 0..3u16 {
        for cohort in 0..4u64 {
            let user = users(4, 1, |c| c == cohort)[0];
            let c = call(u64::from(tier) * 4 + cohort, tier, user);
            assert_eq!(s.bucket_of(&c), u64::from(tier) * 4 + cohort);
            let refused = s.on_call(&c, ms(1)) == CallDecision::Reject(Reason::Shed);
            assert_eq!(
                refused,
                tier == 2 || (tier == 1 && cohort == 3),
                "tier {tier} cohort {cohort}"
            );
        }
    }
    for user in 1..200u64 {
        let c0 = cohort_of(&call(1, 0, user), 128);
        let other = CallInfo { draw: 99, key: 7, ..call(5000 + user, 2, user) };
        assert_eq!(cohort_of(&other, 128), c0);
    }
    // No user: the key decides.
    let keyed = |id| CallInfo { key: 42, ..CallInfo::simple(id, 0) };
    assert_eq!(cohort_of(&keyed(1), 128), cohort_of(&keyed(2), 128));
    let mut counts = [0u32; 128];
    for user in 1..=10_000u64 {
        counts[cohort_of(&call(0, 0, user), 128) as usize] += 1;
    }
    assert!(counts.iter().all(|&n| (47..=109).contains(&n)), "{counts:?}");
}

/// Rule 3: a freed slot goes to the lowest bucket, oldest first within a bucket.
#[test]
fn the_scheduler_takes_the_lowest_bucket_then_the_oldest() {
    let spec = PidShedderSpec { cohorts: 2, ..PidShedderSpec::defaults("s", 1) };
    let mut s = PidShedder::new(&spec, 2);
    let (c0, c1) = (users(2, 2, |c| c == 0), users(2, 1, |c| c == 1)[0]);
    assert_eq!(s.on_call(&call(0, 0, c0[0]), ms(0)), CallDecision::Pass);
    // Arrival order: (tier 1, c1), (tier 0, c1), (tier 0, c0) twice, (tier 1, c0).
    for (id, tier, user) in [(1, 1, c1), (2, 0, c1), (3, 0, c0[0]), (4, 0, c0[1]), (5, 1, c0[0])] {
        assert!(matches!(s.on_call(&call(id, tier, user), ms(id)), CallDecision::Wait { .. }));
    }
    let mut woken = vec![];
    let mut inflight = 0;
    for t in 10..15 {
        s.on_outcome(&CallInfo::simple(inflight, 0), Outcome::Success, ms(t));
        s.take_woken(&mut woken);
        inflight = woken.last().unwrap().0;
    }
    assert_eq!(woken, [3, 4, 2, 5, 1].map(CallId).to_vec());
}

/// Rule 4: the wait's deadline is arrival + queue_timeout exactly; abandoned at it, the call
/// counts as timed out (and its wait in the period's delay); cancelled before, it does not.
#[test]
fn the_queue_timeout_is_exact() {
    let spec = PidShedderSpec { queue_timeout: SimDuration(7_654_321), ..proportional() };
    let mut s = PidShedder::new(&spec, 1);
    let u = users(128, 1, |c| c == 0)[0];
    assert_eq!(s.on_call(&call(0, 0, u), ms(0)), CallDecision::Pass);
    let want = |t: u64| CallDecision::Wait {
        deadline: Some(SimTime(t + 7_654_321)),
        on_deadline: Reason::Shed,
    };
    assert_eq!(s.on_call(&call(1, 0, u), ms(3)), want(3 * MS));
    assert_eq!(s.on_call(&call(2, 0, u), ms(4)), want(4 * MS));
    s.on_abandon(&call(1, 0, u), SimTime(3 * MS + 7_654_321));
    s.on_abandon(&call(2, 0, u), ms(5));
    assert_eq!((s.timed_out, s.waiting()), (1, 0));
    s.on_wake(ms(100));
    // m = 7.654321 ms: threshold round(2.654321) = 3.
    assert_eq!(s.threshold(), 3);
}

/// Run-time changes: raising max_inflight dispatches at once; a gain change keeps the
/// integral term (Beauregard: ki inside the sum).
#[test]
fn run_time_changes() {
    let mut s = PidShedder::new(&PidShedderSpec::defaults("s", 1), 1);
    let u = users(128, 1, |c| c == 0)[0];
    assert_eq!(s.on_call(&call(0, 0, u), ms(0)), CallDecision::Pass);
    assert!(matches!(s.on_call(&call(1, 0, u), ms(0)), CallDecision::Wait { .. }));
    s.set_max_inflight(2, ms(1));
    let mut woken = vec![];
    s.take_woken(&mut woken);
    assert_eq!((woken, s.in_flight()), (vec![CallId(1)], 2));
    s.pid.i_term = 12.0;
    s.set_gains(None, Some(3.0), None, ms(2));
    assert_eq!((s.pid().i_term, s.pid().ki), (12.0, 3.0));
}

/// Result of [`overload`].
#[derive(Default)]
struct Run {
    /// Per tier: arrivals, shed by the threshold, timed out, dispatched, longest sojourn.
    tiers: [(u64, u64, u64, u64, SimDuration); 3],
    max_threshold: u64,
    dispatched_after_warmup: u64,
    /// The threshold after each update.
    thresholds: Vec<u64>,
}

/// The loop's events, in this order at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Done(u64),
    Expire(u64),
    Arrive(u64),
}

/// Call `i`'s tier: 0 if i % 10 = 0, 1 if 1..=3, else 2 (10/30/60 %).
fn tier(i: u64) -> u16 {
    match i % 10 {
        0 => 0,
        1..=3 => 1,
        _ => 2,
    }
}

/// Call `i`, from its own user.
fn info(i: u64) -> CallInfo {
    call(i, tier(i), mix64(i + 1))
}

/// The small event loop of [`overload`].
struct Harness {
    s: PidShedder,
    evs: BTreeMap<(SimTime, Ev), ()>,
    waiting_since: BTreeMap<u64, SimTime>,
    run: Run,
    gap: SimDuration,
    service: SimDuration,
    warmup: SimTime,
    end: SimTime,
}

impl Harness {
    /// Call `i`, waiting since `since`, is dispatched at `now`: served in `service`.
    fn start(&mut self, i: u64, since: SimTime, now: SimTime) {
        let t = &mut self.run.tiers[tier(i) as usize];
        t.3 += 1;
        t.4 = t.4.max(now - since);
        if now >= self.warmup {
            self.run.dispatched_after_warmup += 1;
        }
        self.evs.insert((now + self.service, Ev::Done(i)), ());
    }

    fn arrive(&mut self, i: u64, now: SimTime) {
        if now + self.gap < self.end {
            self.evs.insert((now + self.gap, Ev::Arrive(i + 1)), ());
        }
        self.run.tiers[tier(i) as usize].0 += 1;
        match self.s.on_call(&info(i), now) {
            CallDecision::Pass => self.start(i, now, now),
            CallDecision::Reject(_) => self.run.tiers[tier(i) as usize].1 += 1,
            CallDecision::Wait { deadline, .. } => {
                self.waiting_since.insert(i, now);
                self.evs.insert((deadline.expect("a queue timeout"), Ev::Expire(i)), ());
            }
            d => panic!("{d:?}"),
        }
    }

    fn handle(&mut self, ev: Ev, now: SimTime) {
        match ev {
            Ev::Arrive(i) => self.arrive(i, now),
            Ev::Expire(i) => {
                if self.waiting_since.remove(&i).is_some() {
                    self.s.on_abandon(&info(i), now);
                    self.run.tiers[tier(i) as usize].2 += 1;
                }
            }
            Ev::Done(i) => {
                self.s.on_outcome(&info(i), Outcome::Success, now);
                let mut woken = vec![];
                self.s.take_woken(&mut woken);
                for c in woken {
                    let since = self.waiting_since.remove(&c.0).expect("a waiting call");
                    self.start(c.0, since, now);
                }
            }
        }
    }
}

/// A small event loop: arrivals every `gap` ([`tier`], [`info`]); a dispatched call is
/// served in exactly `service`; waits expire at their deadline; the timer fires at
/// `wake_at`. Runs `secs` seconds, the first 2 a warm-up.
fn overload(spec: &PidShedderSpec, gap: SimDuration, service: SimDuration, secs: u64) -> Run {
    let mut h = Harness {
        s: PidShedder::new(spec, 3),
        evs: BTreeMap::from([((SimTime::ZERO, Ev::Arrive(0)), ())]),
        waiting_since: BTreeMap::new(),
        run: Run::default(),
        gap,
        service,
        warmup: SimTime::ZERO + SimDuration::from_secs(2),
        end: SimTime::ZERO + SimDuration::from_secs(secs),
    };
    loop {
        let next_ev = h.evs.keys().next().map(|k| k.0);
        let wake = h.s.wake_at().expect("a periodic timer");
        if next_ev.is_none_or(|t| wake < t) {
            if wake >= h.end {
                break;
            }
            h.s.on_wake(wake);
        } else {
            let ((now, ev), ()) = h.evs.pop_first().expect("an event");
            if now >= h.end {
                break;
            }
            h.handle(ev, now);
        }
        h.run.max_threshold = h.run.max_threshold.max(h.s.threshold());
        while (h.run.thresholds.len() as u64) < h.s.updates {
            h.run.thresholds.push(h.s.threshold());
        }
    }
    h.run
}

/// Overload ρ = 2 with a fixed service time: 4 slots × S = 10 ms serve μ = 400 calls/s;
/// arrivals every 1.25 ms (800/s) for 20 s, tiers 0/1/2 = 10/30/60 %, each call its own
/// user, 3 × 128 buckets; kp 0.5, ki 0.05, kd 0, target 20 ms, period 100 ms, queue
/// timeout 100 ms. Bounds:
/// * P0's sojourn ≤ S, whatever the controller does: the scheduler is a non-preemptive
///   priority queue, so a waiting P0 call leaves at the next completion, and each of the 4
///   busy slots completes within S; P0 calls come every 12.5 ms > S, so the previous one has
///   left before the next arrives and no P0 call ever waits behind another. (S = 10 ms is
///   half the target: P0 stays inside the target whatever the lower tiers wait.)
/// * The balance point: the shed fraction must be 1 − μ/λ = 1/2 of all calls, i.e. 0.5/0.6
///   of tier 2's 128 cohorts: b* = 106.7 buckets (users are uniform over cohorts). Above it
///   the queue drains and the delay falls below target, below it the queue grows: the
///   integral holds the threshold's mean after the 2 s warm-up in [b* − 5, b* + 25]
///   (measured 117.9).
/// * No P0 call is shed: that needs threshold ≥ 257. The measured delay is at most the
///   queue timeout (every waiting call leaves by it), so the P term is ≤ 0.5 × (100 − 20) =
///   40 buckets above the integral, which hovers near b*: the threshold stays far below 257
///   (measured maximum 162), and no P0 or tier-1 call times out.
/// * Work conservation: dispatched after the warm-up ≥ 85 % of μ × 18 s = 7200 (measured
///   6508, 90 %; the max-delay statistic keeps some slack).
#[test]
fn under_overload_p0_stays_within_the_service_time_while_low_tiers_are_shed() {
    let spec = PidShedderSpec {
        kp: 0.5,
        ki: 0.05,
        target: SimDuration::from_ms(20),
        period: SimDuration::from_ms(100),
        queue_timeout: SimDuration::from_ms(100),
        ..PidShedderSpec::defaults("s", 4)
    };
    let service = SimDuration::from_ms(10);
    let r = overload(&spec, SimDuration(1_250_000), service, 20);
    let [p0, p1, p2] = r.tiers;
    assert_eq!((p0.0, p1.0, p2.0), (1600, 4800, 9600));
    assert!(p0.4 <= service, "P0 waited {:?}", p0.4);
    assert_eq!((p0.1, p0.2, p1.2), (0, 0, 0), "no P0 shed, no P0 or P1 timeout");
    assert!(r.max_threshold < 257, "max threshold {}", r.max_threshold);
    let tail = &r.thresholds[20..];
    let mean = tail.iter().sum::<u64>() as f64 / tail.len() as f64;
    let b_star = 0.5 / 0.6 * 128.0;
    assert!((b_star - 5.0..=b_star + 25.0).contains(&mean), "mean threshold {mean}");
    assert!(p2.1 + p2.2 > 7_000, "tier 2 shed {} + timed out {}", p2.1, p2.2);
    assert!(r.dispatched_after_warmup >= 6_120, "dispatched {}", r.dispatched_after_warmup);
}
