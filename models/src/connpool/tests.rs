use super::*;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn ms(n: u64) -> SimDuration {
    SimDuration::from_ms(n)
}
fn secs(n: u64) -> SimDuration {
    SimDuration::from_secs(n)
}

/// rtt 20 ms, TLS 1.2 (2 round trips): connect = 20 × (1 + 2) = 60 ms; a validation costs
/// 20 ms; a request on a dead connection fails after 20 ms.
fn spec() -> ConnPoolSpec {
    ConnPoolSpec {
        name: "openai".into(),
        max_total: 20,
        max_per_route: 2,
        keep_alive: SimDuration::ZERO,
        validate_after_inactivity: SimDuration::ZERO,
        connection_request_timeout: secs(1),
        max_waiting: 2,
        tcp_rtt: ms(20),
        tls_round_trips: 2,
        server_idle_timeout: secs(60),
        stale_failure_delay: ms(20),
    }
}

/// (case, validate_after_inactivity, keep_alive, server_idle_timeout, gap, expected,
/// expected counters).
type Row =
    (&'static str, SimDuration, SimDuration, SimDuration, SimDuration, Borrow, (u64, u64, u64));

/// Incident 10 and its fixes. One connection is opened at 0 s and released at 1 s; the
/// next borrow comes `gap` later. Expected (stale_failures, validation_discards, expired).
#[test]
fn incident_10_stale_connection_and_fixes() {
    let c0 = ConnId(0);
    let c1 = ConnId(1);
    #[rustfmt::skip]
    let table: Vec<Row> = vec![
        // (case, validate_after_inactivity, keep_alive, server_idle_timeout, gap, expected)
        ("incident: idle 70 s > server 60 s, no defence → fails after 20 ms",
         SimDuration::ZERO, SimDuration::ZERO, secs(60), secs(70),
         Borrow::Stale { conn: c0, fail_after: ms(20) }, (1, 0, 0)),
        ("fix validate 2 s: 20 ms check finds it dead, then 60 ms connect = 80 ms",
         secs(2), SimDuration::ZERO, secs(60), secs(70),
         Borrow::Connect { conn: c1, delay: ms(80) }, (0, 1, 0)),
        ("fix keep_alive 30 s < server 60 s: closed by the client at 31 s; connect 60 ms",
         SimDuration::ZERO, secs(30), secs(60), secs(70),
         Borrow::Connect { conn: c1, delay: ms(60) }, (0, 0, 1)),
        ("idle 50 s < server 60 s: reused, no cost",
         SimDuration::ZERO, SimDuration::ZERO, secs(60), secs(50),
         Borrow::Reuse { conn: c0, extra_delay: SimDuration::ZERO }, (0, 0, 0)),
        ("idle 50 s with validate 2 s: alive, one 20 ms check",
         secs(2), SimDuration::ZERO, secs(60), secs(50),
         Borrow::Reuse { conn: c0, extra_delay: ms(20) }, (0, 0, 0)),
        ("the sources' numbers: server 30 s, keep_alive 25 s, idle 30 s → connect",
         SimDuration::ZERO, secs(25), secs(30), secs(30),
         Borrow::Connect { conn: c1, delay: ms(60) }, (0, 0, 1)),
        ("server closes at exactly 30 s idle (inclusive) → stale",
         SimDuration::ZERO, SimDuration::ZERO, secs(30), secs(30),
         Borrow::Stale { conn: c0, fail_after: ms(20) }, (1, 0, 0)),
        ("1 ns before the server's close → reused",
         SimDuration::ZERO, SimDuration::ZERO, secs(30), SimDuration(30 * S - 1),
         Borrow::Reuse { conn: c0, extra_delay: SimDuration::ZERO }, (0, 0, 0)),
        ("blind spot: server 1 s < validate 2 s, idle 1.5 s → not checked, stale",
         secs(2), SimDuration::ZERO, secs(1), ms(1_500),
         Borrow::Stale { conn: c0, fail_after: ms(20) }, (1, 0, 0)),
        ("keep_alive expiry is inclusive: idle exactly 60 s → already closed",
         secs(2), secs(60), secs(60), secs(60),
         Borrow::Connect { conn: c1, delay: ms(60) }, (0, 0, 1)),
    ];
    for (case, validate, keep_alive, server, gap, want, (stale, discards, expired)) in table {
        let mut s = spec();
        s.validate_after_inactivity = validate;
        s.keep_alive = keep_alive;
        s.server_idle_timeout = server;
        let mut p = ConnPool::new(&s);
        let first = p.borrow(CallId(1), 0, SimTime(0));
        assert_eq!(first, Borrow::Connect { conn: c0, delay: ms(60) }, "{case}");
        p.release(c0, SimTime(S), true);
        let t = SimTime(S) + gap;
        if let Some(w) = p.wake_at() {
            assert_eq!(w, SimTime(S) + keep_alive, "{case}");
            if w <= t {
                p.on_wake(w);
            }
        }
        assert_eq!(p.borrow(CallId(2), 0, t), want, "{case}");
        let c = p.counters;
        assert_eq!(
            (c.stale_failures, c.validation_discards, c.expired),
            (stale, discards, expired),
            "{case}"
        );
        assert_eq!((p.leased(), p.idle()), (1, 0), "{case}");
    }
}

/// The incident's failure, continued: the world fails the request at +20 ms and releases
/// the dead connection; the retry opens a new one.
#[test]
fn stale_failure_then_retry_connects() {
    let mut p = ConnPool::new(&spec());
    assert!(matches!(p.borrow(CallId(1), 0, SimTime(0)), Borrow::Connect { .. }));
    p.release(ConnId(0), SimTime(S), true);
    let t = SimTime(71 * S);
    assert_eq!(p.borrow(CallId(2), 0, t), Borrow::Stale { conn: ConnId(0), fail_after: ms(20) });
    let t = t + ms(20);
    p.release(ConnId(0), t, false);
    assert_eq!((p.leased(), p.idle(), p.counters.closed), (0, 0, 1));
    assert_eq!(p.borrow(CallId(2), 0, t), Borrow::Connect { conn: ConnId(1), delay: ms(60) });
    assert_eq!((p.counters.connects, p.counters.stale_failures), (2, 1));
}

/// Limits, waiting, FIFO hand-over, eviction for room, abandon, run-time raise.
/// max_total 3, max_per_route 2, connection_request_timeout 1 s, max_waiting 2.
#[test]
fn scripted_limits_and_waiters() {
    let mut s = spec();
    s.max_total = 3;
    s.server_idle_timeout = SimDuration::ZERO;
    let mut p = ConnPool::new(&s);
    let t0 = SimTime(0);
    let connect = |n| Borrow::Connect { conn: ConnId(n), delay: ms(60) };
    assert_eq!(p.borrow(CallId(1), 0, t0), connect(0));
    assert_eq!(p.borrow(CallId(2), 0, t0), connect(1));
    // Route 0 is at max_per_route.
    assert_eq!(p.borrow(CallId(3), 0, t0), Borrow::Wait { deadline: SimTime(S) });
    assert_eq!(p.borrow(CallId(4), 1, t0), connect(2));
    // Route 1 has room but the pool is at max_total.
    assert_eq!(p.borrow(CallId(5), 1, t0), Borrow::Wait { deadline: SimTime(S) });
    // max_waiting = 2.
    assert_eq!(p.borrow(CallId(6), 2, t0), Borrow::Reject);
    assert_eq!((p.leased(), p.idle(), p.pending(), p.counters.rejected), (3, 0, 2, 1));

    // conn 2 (route 1) comes back: call 3 (route 0, still at its route limit) cannot take
    // it; call 5 (route 1) gets it, idle 0 → no validation.
    let mut woken = vec![];
    p.release(ConnId(2), SimTime(500 * MS), true);
    p.take_woken(&mut woken);
    let reuse2 = Borrow::Reuse { conn: ConnId(2), extra_delay: SimDuration::ZERO };
    assert_eq!(woken, vec![(CallId(5), reuse2)]);
    // conn 0 fails (not reusable): route 0 has room again → call 3 connects.
    woken.clear();
    p.release(ConnId(0), SimTime(600 * MS), false);
    p.take_woken(&mut woken);
    assert_eq!(woken, vec![(CallId(3), connect(3))]);
    assert_eq!((p.leased(), p.idle(), p.pending()), (3, 0, 0));

    // conn 2 idle on route 1; a route-2 borrow closes it to make room.
    let t = SimTime(700 * MS);
    p.release(ConnId(2), t, true);
    assert_eq!(p.borrow(CallId(7), 2, t), connect(4));
    assert_eq!((p.counters.evicted_for_room, p.leased(), p.idle()), (1, 3, 0));
    assert_eq!(p.borrow(CallId(8), 2, t), Borrow::Wait { deadline: SimTime(1_700 * MS) });
    p.abandon(CallId(8), SimTime(1_700 * MS));
    assert_eq!(p.pending(), 0);
    // Fail fast.
    p.set_connection_request_timeout(SimDuration::ZERO);
    assert_eq!(p.borrow(CallId(9), 2, t), Borrow::Reject);
    // Raising max_total wakes a waiter.
    p.set_connection_request_timeout(secs(1));
    let t = SimTime(800 * MS);
    assert_eq!(p.borrow(CallId(10), 2, t), Borrow::Wait { deadline: SimTime(1_800 * MS) });
    p.set_max_total(4, t);
    woken.clear();
    p.take_woken(&mut woken);
    assert_eq!(woken, vec![(CallId(10), connect(5))]);
    assert_eq!((p.counters.connects, p.leased()), (6, 4));
}

/// A waiter woken and abandoned in the same instant gives its connection back.
#[test]
fn abandon_after_wake_returns_the_connection() {
    let mut s = spec();
    s.max_per_route = 1;
    let mut p = ConnPool::new(&s);
    assert!(matches!(p.borrow(CallId(1), 0, SimTime(0)), Borrow::Connect { .. }));
    assert!(matches!(p.borrow(CallId(2), 0, SimTime(0)), Borrow::Wait { .. }));
    p.release(ConnId(0), SimTime(S), true);
    assert_eq!(p.leased(), 1); // handed to call 2
    p.abandon(CallId(2), SimTime(S));
    assert_eq!((p.leased(), p.idle(), p.pending()), (0, 1, 0));
    let mut woken = vec![];
    p.take_woken(&mut woken);
    assert!(woken.is_empty());
}

/// Lowering limits closes surplus idle connections (longest idle first), never a lease.
#[test]
fn lowering_limits_closes_idle_only() {
    let mut s = spec();
    s.max_per_route = 3;
    s.server_idle_timeout = SimDuration::ZERO;
    let mut p = ConnPool::new(&s);
    for i in 0..3 {
        p.borrow(CallId(i), 0, SimTime(0));
    }
    p.release(ConnId(0), SimTime(S), true);
    p.release(ConnId(1), SimTime(2 * S), true);
    p.set_max_per_route(1, SimTime(3 * S));
    // 1 leased + 2 idle > 1: both idle closed; the lease stays.
    assert_eq!((p.leased(), p.idle()), (1, 0));
    p.release(ConnId(2), SimTime(4 * S), true);
    assert_eq!(p.idle(), 1);
    p.set_max_per_route(2, SimTime(4 * S));
    p.borrow(CallId(5), 0, SimTime(4 * S));
    p.borrow(CallId(6), 0, SimTime(4 * S));
    p.set_max_total(1, SimTime(4 * S));
    assert_eq!((p.leased(), p.idle()), (2, 0));
    // LIFO reuse: the most recently released idle connection is taken first.
    let mut p = ConnPool::new(&s);
    for i in 0..2 {
        p.borrow(CallId(i), 0, SimTime(0));
    }
    p.release(ConnId(0), SimTime(S), true);
    p.release(ConnId(1), SimTime(2 * S), true);
    let b = p.borrow(CallId(9), 0, SimTime(3 * S));
    assert_eq!(b, Borrow::Reuse { conn: ConnId(1), extra_delay: SimDuration::ZERO });
}

/// Pseudo-random borrows and releases on 3 routes: the limits and lease conservation hold
/// at every step.
#[test]
fn invariants_under_random_script() {
    let mut s = spec();
    s.max_total = 5;
    s.max_waiting = 50;
    s.keep_alive = secs(4);
    s.validate_after_inactivity = secs(3);
    s.server_idle_timeout = secs(2);
    let mut p = ConnPool::new(&s);
    let mut held: Vec<ConnId> = vec![];
    let mut waiting: Vec<CallId> = vec![];
    let mut woken = vec![];
    let mut t = SimTime(0);
    for i in 0..5_000u64 {
        let r = sim_core::rng::mix64(i);
        t += SimDuration::from_ns(r % (S / 2));
        if let Some(w) = p.wake_at()
            && w <= t
        {
            p.on_wake(w);
        }
        if r & 1 == 0 || held.is_empty() {
            match p.borrow(CallId(i), (r >> 8) as u16 % 3, t) {
                Borrow::Reuse { conn, .. } | Borrow::Connect { conn, .. } => held.push(conn),
                Borrow::Stale { conn, .. } => p.release(conn, t, false),
                Borrow::Wait { .. } => waiting.push(CallId(i)),
                Borrow::Reject => {}
            }
        } else {
            let c = held.remove((r >> 16) as usize % held.len());
            p.release(c, t, (r >> 4) & 3 != 0);
        }
        if (r >> 32).is_multiple_of(7)
            && let Some(w) = waiting.pop()
        {
            p.abandon(w, t);
        }
        p.take_woken(&mut woken);
        for (c, b) in woken.drain(..) {
            waiting.retain(|w| *w != c);
            match b {
                Borrow::Reuse { conn, .. } | Borrow::Connect { conn, .. } => held.push(conn),
                Borrow::Stale { conn, .. } => p.release(conn, t, false),
                _ => panic!("woken with {b:?}"),
            }
        }
        assert!(p.allocated() <= 5);
        assert_eq!(p.leased(), held.len() as u64);
        assert_eq!(p.pending(), waiting.len() as u64);
    }
    let c = p.counters;
    assert!(c.connects > 0 && c.reuses > 0 && c.stale_failures > 0);
    assert!(c.validation_discards > 0 && c.expired > 0 && c.evicted_for_room > 0);
}

#[test]
fn spec_parses_with_apache_defaults() {
    let s: ConnPoolSpec = ron::from_str(r#"ConnPool(name: "openai")"#).expect("parses");
    assert_eq!((s.max_total, s.max_per_route), (20, 2));
    assert_eq!(s.validate_after_inactivity, secs(2));
    assert_eq!(s.keep_alive, SimDuration::ZERO);
    let s: ConnPoolSpec =
        ron::from_str(r#"ConnPool(name: "x", default_max_per_route: 5, keep_alive: "25s")"#)
            .unwrap();
    assert_eq!((s.max_per_route, s.keep_alive), (5, secs(25)));
    assert!(ron::from_str::<ConnPoolSpec>(r#"ConnPool(name: "x", max_total: 0)"#).is_err());
}

/// Every declared parameter reads back, writes back, and is unknown under another name.
#[test]
fn params_roundtrip() {
    use crate::params::Params;
    let mut s: ConnPoolSpec = ron::from_str(r#"ConnPool(name: "x")"#).expect("parses");
    for d in ConnPoolSpec::decls() {
        let v = s.get(d.name).unwrap_or_else(|| panic!("{} readable", d.name));
        s.set(d.name, v.clone()).expect("writable");
        assert_eq!(s.get(d.name), Some(v));
    }
    assert_eq!(s.get("no_such_param"), None);
}
