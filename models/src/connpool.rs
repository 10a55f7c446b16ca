//! An HTTP connection pool (Apache HttpClient `PoolingHttpClientConnectionManager` /
//! OkHttp `ConnectionPool`), docs/domain.md §3.7 and incident 10 (the stale first request after an
//! idle spell).
//!
//! Connections belong to a route (an upstream, by `u16` id). At most `max_total`
//! connections exist (leased + idle) and at most `max_per_route` per route. A borrow reuses
//! the most recently released idle connection of its route (LIFO, Apache's default),
//! otherwise opens one (cost: `tcp_rtt × (1 + tls_round_trips)`), closing the longest-idle
//! connection of another route if only `max_total` is in the way (as Apache does). With no
//! room the borrower waits (FIFO, bounded by `max_waiting`) up to
//! `connection_request_timeout`.
//!
//! The key design decision: **the pool knows what the client knows, plus the server's idle
//! timer**. The server silently closes a connection idle for `server_idle_timeout` or
//! longer; the client learns it only by using it. Borrowing such a connection gives
//! [`Borrow::Stale`]: the request fails with `Reason::ConnectError` after
//! `stale_failure_delay`. Two client-side defences: `validate_after_inactivity` (a
//! connection idle at least that long is checked on borrow for one `tcp_rtt`; a dead one is
//! discarded and the next candidate tried, or a new one opened) and `keep_alive` (the
//! client closes connections idle that long itself — shorter than the server's, no stale
//! connection survives). Both comparisons are inclusive, as in Apache (`updated + validate
//! ≤ now`, `expiry ≤ now`).
//!
//! Architecture invariant: `leased + idle ≤ max_total` and per route `leased + idle ≤
//! max_per_route` (as of the last decrease: lowering never revokes a lease); every lease
//! ends in exactly one `release`; waiters are served in FIFO order among those that can be
//! served (a waiter blocked by its route's limit does not block other routes); the waiting
//! list never exceeds `max_waiting`.
//!
//! API boundary: a pure state machine. The world calls [`ConnPool::borrow`] before it sends
//! a call upstream, applies the returned delay (or failure), calls [`ConnPool::release`]
//! when the response ends, [`ConnPool::abandon`] when a waiter's deadline passes, drains
//! [`ConnPool::take_woken`] after every interaction, and calls [`ConnPool::on_wake`] at
//! [`ConnPool::wake_at`] (client-side idle expiry).

use crate::ids::CallId;
use serde::{Deserialize, Serialize};
use sim_core::{SimDuration, SimTime};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A connection, unique within a pool for the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

/// Configuration of a connection pool, as written in scenarios (Apache's names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename = "ConnPool")]
pub struct ConnPoolSpec {
    /// Name; parameters live under `connpool.<name>.*`.
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// Connections in total, leased + idle (Apache `maxTotal`, default 20).
    #[serde(default = "D::max_total", deserialize_with = "R::max_total")]
    pub max_total: u64,
    /// Connections per route (Apache `defaultMaxPerRoute`, default 2).
    #[serde(
        default = "D::max_per_route",
        alias = "default_max_per_route",
        deserialize_with = "R::max_per_route"
    )]
    pub max_per_route: u64,
    /// The client closes connections idle this long; `"0s"`: never (Apache's default when
    /// the server sends no Keep-Alive header; OkHttp's `keepAliveDuration` is 5 min).
    #[serde(default = "D::keep_alive")]
    pub keep_alive: SimDuration,
    /// Validate on borrow a connection idle at least this long; `"0s"` disables (Apache
    /// `validateAfterInactivity`, default 2 s).
    #[serde(default = "D::validate_after_inactivity")]
    pub validate_after_inactivity: SimDuration,
    /// How long a borrower waits for a connection; `"0s"` fails at once (unlike Apache,
    /// where 0 means forever). Default 3 min (HttpClient 5).
    #[serde(default = "D::connection_request_timeout")]
    pub connection_request_timeout: SimDuration,
    /// Bound on borrowers waiting; beyond it borrows are refused at once.
    #[serde(default = "D::max_waiting")]
    pub max_waiting: u64,
    /// Network round trip to the upstream.
    #[serde(default = "D::tcp_rtt")]
    pub tcp_rtt: SimDuration,
    /// Extra round trips of the TLS handshake (2 for TLS 1.2, 1 for TLS 1.3, 0 for plain).
    #[serde(default = "D::tls_round_trips")]
    pub tls_round_trips: u64,
    /// The server closes connections idle this long (nginx `keepalive_timeout`); `"0s"`:
    /// never.
    #[serde(default = "D::server_idle_timeout")]
    pub server_idle_timeout: SimDuration,
    /// How long a request on a dead connection takes to fail (the RST arrives after one
    /// round trip; a black-holed connection fails only at the read timeout).
    #[serde(default = "D::stale_failure_delay")]
    pub stale_failure_delay: SimDuration,
}

/// The defaults declared in the parameter rows (`connpool/params.rs`).
type D = crate::params::Defaults<ConnPoolSpec>;
/// The fields parsed with their rows' ranges.
type R = crate::params::Ranged<ConnPoolSpec>;

/// The pool's answer to a borrow (or to a waiter it wakes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Borrow {
    /// An idle connection, after `extra_delay` of validation (zero when not validated).
    Reuse { conn: ConnId, extra_delay: SimDuration },
    /// A new connection, usable after `delay` (handshakes, plus any failed validations).
    Connect { conn: ConnId, delay: SimDuration },
    /// A connection the server already closed: the request fails with
    /// `Reason::ConnectError` after `fail_after`; release it with `reusable = false`.
    Stale { conn: ConnId, fail_after: SimDuration },
    /// No connection now: wait until woken or `deadline` (then `abandon`; the request
    /// fails with `Reason::Timeout`, Apache's ConnectionPoolTimeoutException).
    Wait { deadline: SimTime },
    /// No connection and no room to wait (`Reason::PoolFull`).
    Reject,
}

/// Counters worth exposing (stable names in the field names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnPoolCounters {
    pub connects: u64,
    pub reuses: u64,
    pub stale_failures: u64,
    pub validations: u64,
    /// Validations that found the connection dead.
    pub validation_discards: u64,
    /// Idle connections the client closed after `keep_alive`.
    pub expired: u64,
    /// Idle connections closed to make room for another route.
    pub evicted_for_room: u64,
    /// Connections released as not reusable (or over a lowered limit).
    pub closed: u64,
    pub rejected: u64,
}

#[derive(Clone, Copy, Debug)]
struct Idle {
    conn: ConnId,
    since: SimTime,
}

/// Run-time state of a connection pool.
#[derive(Clone, Debug)]
pub struct ConnPool {
    spec: ConnPoolSpec,
    /// Idle connections per route, most recently released last (LIFO).
    idle: BTreeMap<u16, Vec<Idle>>,
    idle_count: u64,
    leased: BTreeMap<ConnId, u16>,
    leased_per_route: BTreeMap<u16, u64>,
    waiters: VecDeque<(CallId, u16)>,
    woken: Vec<(CallId, Borrow)>,
    next_id: u64,
    pub counters: ConnPoolCounters,
}

impl ConnPool {
    pub fn new(spec: &ConnPoolSpec) -> ConnPool {
        assert!(spec.max_total >= 1 && spec.max_per_route >= 1, "validated: limits ≥ 1");
        ConnPool {
            spec: spec.clone(),
            idle: BTreeMap::new(),
            idle_count: 0,
            leased: BTreeMap::new(),
            leased_per_route: BTreeMap::new(),
            waiters: VecDeque::new(),
            woken: Vec::new(),
            next_id: 0,
            counters: ConnPoolCounters::default(),
        }
    }

    /// The time a new connection takes: TCP handshake plus TLS round trips.
    pub fn connect_cost(&self) -> SimDuration {
        SimDuration::from_ns(self.spec.tcp_rtt.as_ns() * (1 + self.spec.tls_round_trips))
    }

    /// A call wants a connection to `route`.
    pub fn borrow(&mut self, call: CallId, route: u16, now: SimTime) -> Borrow {
        self.tidy(now);
        self.serve_waiters(now);
        // FIFO: a newcomer never overtakes a waiter of its own route.
        if !self.waiters.iter().any(|w| w.1 == route)
            && let Some(b) = self.try_lease(route, now)
        {
            return b;
        }
        if self.spec.connection_request_timeout == SimDuration::ZERO
            || self.waiters.len() as u64 >= self.spec.max_waiting
        {
            self.counters.rejected += 1;
            return Borrow::Reject;
        }
        self.waiters.push_back((call, route));
        Borrow::Wait { deadline: now + self.spec.connection_request_timeout }
    }

    /// The response on `conn` ended; `reusable` is false after an error (stale, reset).
    pub fn release(&mut self, conn: ConnId, now: SimTime, reusable: bool) {
        let route = self.leased.remove(&conn).expect("released a connection not leased");
        let n = self.leased_per_route.get_mut(&route).expect("leased route");
        *n -= 1;
        let fits = self.allocated() < self.spec.max_total
            && self.route_allocated(route) < self.spec.max_per_route;
        if reusable && fits {
            self.idle.entry(route).or_default().push(Idle { conn, since: now });
            self.idle_count += 1;
        } else {
            self.counters.closed += 1;
        }
        self.tidy(now);
        self.serve_waiters(now);
    }

    /// A waiter's deadline passed (or it was cancelled): forget it.
    pub fn abandon(&mut self, call: CallId, now: SimTime) {
        if let Some(pos) = self.waiters.iter().position(|w| w.0 == call) {
            self.waiters.remove(pos);
            return;
        }
        // Woken in the same instant but not yet resumed: give the connection back.
        let pos = self.woken.iter().position(|w| w.0 == call);
        let (_, b) = self.woken.remove(pos.expect("abandoned call was not waiting here"));
        match b {
            Borrow::Reuse { conn, .. } => self.release(conn, now, true),
            Borrow::Connect { conn, .. } | Borrow::Stale { conn, .. } => {
                self.release(conn, now, false)
            }
            Borrow::Wait { .. } | Borrow::Reject => unreachable!("only grants are woken"),
        }
    }

    /// Waiters that got a connection, oldest first, each with its grant.
    pub fn take_woken(&mut self, out: &mut Vec<(CallId, Borrow)>) {
        out.append(&mut self.woken);
    }

    /// The next client-side idle expiry (`keep_alive`), if any.
    pub fn wake_at(&self) -> Option<SimTime> {
        if self.spec.keep_alive == SimDuration::ZERO {
            return None;
        }
        let oldest = self.idle.values().flatten().map(|i| i.since).min()?;
        Some(oldest + self.spec.keep_alive)
    }

    /// The time from [`ConnPool::wake_at`] has come: close expired idle connections (the
    /// room they free may wake waiters).
    pub fn on_wake(&mut self, now: SimTime) {
        self.tidy(now);
        self.serve_waiters(now);
    }

    pub fn leased(&self) -> u64 {
        self.leased.len() as u64
    }
    pub fn idle(&self) -> u64 {
        self.idle_count
    }
    pub fn pending(&self) -> u64 {
        self.waiters.len() as u64
    }
    pub fn allocated(&self) -> u64 {
        self.leased() + self.idle_count
    }
    pub fn spec(&self) -> &ConnPoolSpec {
        &self.spec
    }

    /// Run-time changes. Raising a limit serves waiters; lowering one closes surplus idle
    /// connections (longest idle first) and never revokes a lease.
    pub fn set_max_total(&mut self, n: u64, now: SimTime) {
        assert!(n >= 1);
        self.spec.max_total = n;
        while self.allocated() > n && self.close_longest_idle(None) {}
        self.serve_waiters(now);
    }
    pub fn set_max_per_route(&mut self, n: u64, now: SimTime) {
        assert!(n >= 1);
        self.spec.max_per_route = n;
        let routes: Vec<u16> = self.idle.keys().copied().collect();
        for r in routes {
            while self.route_allocated(r) > n && self.close_longest_idle(Some(r)) {}
        }
        self.serve_waiters(now);
    }
    pub fn set_keep_alive(&mut self, d: SimDuration, now: SimTime) {
        self.spec.keep_alive = d;
        self.tidy(now);
        self.serve_waiters(now);
    }
    pub fn set_validate_after_inactivity(&mut self, d: SimDuration) {
        self.spec.validate_after_inactivity = d;
    }
    pub fn set_connection_request_timeout(&mut self, d: SimDuration) {
        self.spec.connection_request_timeout = d;
    }
    pub fn set_server_idle_timeout(&mut self, d: SimDuration) {
        self.spec.server_idle_timeout = d;
    }
    pub fn set_tcp_rtt(&mut self, d: SimDuration) {
        self.spec.tcp_rtt = d;
    }
    pub fn set_tls_round_trips(&mut self, n: u64) {
        self.spec.tls_round_trips = n;
    }
    pub fn set_stale_failure_delay(&mut self, d: SimDuration) {
        self.spec.stale_failure_delay = d;
    }

    fn route_allocated(&self, route: u16) -> u64 {
        self.leased_per_route.get(&route).copied().unwrap_or(0)
            + self.idle.get(&route).map_or(0, |v| v.len() as u64)
    }

    fn lease(&mut self, conn: ConnId, route: u16) {
        self.leased.insert(conn, route);
        *self.leased_per_route.entry(route).or_default() += 1;
    }

    /// Closes the connection idle longest (in `route`, or anywhere); false if none.
    fn close_longest_idle(&mut self, route: Option<u16>) -> bool {
        let oldest = self
            .idle
            .iter()
            .filter(|(r, _)| route.is_none_or(|x| x == **r))
            .flat_map(|(r, v)| v.iter().enumerate().map(move |(i, c)| (c.since, *r, i)))
            .min();
        let Some((_, r, i)) = oldest else { return false };
        self.idle.get_mut(&r).expect("route").remove(i);
        self.idle_count -= 1;
        true
    }

    /// Closes idle connections past the client's keep-alive.
    fn tidy(&mut self, now: SimTime) {
        let ka = self.spec.keep_alive;
        if ka == SimDuration::ZERO {
            return;
        }
        for v in self.idle.values_mut() {
            let before = v.len();
            v.retain(|c| c.since + ka > now);
            let gone = (before - v.len()) as u64;
            self.idle_count -= gone;
            self.counters.expired += gone;
        }
    }

    /// A connection for `route` now, if the limits allow one.
    fn try_lease(&mut self, route: u16, now: SimTime) -> Option<Borrow> {
        let s = &self.spec;
        let (validate, server_idle, rtt) =
            (s.validate_after_inactivity, s.server_idle_timeout, s.tcp_rtt);
        let mut cost = SimDuration::ZERO;
        while let Some(c) = self.idle.get_mut(&route).and_then(|v| v.pop()) {
            self.idle_count -= 1;
            let idle_for = now.since(c.since);
            let dead = server_idle > SimDuration::ZERO && idle_for >= server_idle;
            let checked = validate > SimDuration::ZERO && idle_for >= validate;
            if checked {
                cost = cost + rtt;
                self.counters.validations += 1;
                if dead {
                    self.counters.validation_discards += 1;
                    continue; // discarded; try the next one
                }
            }
            self.lease(c.conn, route);
            if dead {
                self.counters.stale_failures += 1;
                let fail_after = cost + self.spec.stale_failure_delay;
                return Some(Borrow::Stale { conn: c.conn, fail_after });
            }
            self.counters.reuses += 1;
            return Some(Borrow::Reuse { conn: c.conn, extra_delay: cost });
        }
        if self.route_allocated(route) >= self.spec.max_per_route {
            return None;
        }
        if self.allocated() >= self.spec.max_total {
            if !self.close_longest_idle(None) {
                return None;
            }
            self.counters.evicted_for_room += 1;
        }
        let conn = ConnId(self.next_id);
        self.next_id += 1;
        self.lease(conn, route);
        self.counters.connects += 1;
        assert!(self.allocated() <= self.spec.max_total);
        Some(Borrow::Connect { conn, delay: cost + self.connect_cost() })
    }

    /// Hands connections to waiters that can be served now, in FIFO order.
    fn serve_waiters(&mut self, now: SimTime) {
        let mut blocked_routes = BTreeSet::new();
        let mut i = 0;
        while i < self.waiters.len() {
            if self.allocated() >= self.spec.max_total && self.idle_count == 0 {
                break; // nothing can be served
            }
            let (call, route) = self.waiters[i];
            // A waiter of the same route earlier in the queue was not served: skip.
            let grant =
                if blocked_routes.contains(&route) { None } else { self.try_lease(route, now) };
            match grant {
                Some(b) => {
                    self.waiters.remove(i);
                    self.woken.push((call, b));
                }
                None => {
                    blocked_routes.insert(route);
                    i += 1;
                }
            }
        }
        assert!(self.waiters.len() as u64 <= self.spec.max_waiting.max(1));
    }
}

mod params;

#[cfg(test)]
mod tests;
