//! Connection pools on call sites: before a call is sent it borrows a connection (reuse,
//! validate, connect, or find it stale), pays the delay, and gives it back when the
//! upstream answers (docs/domain.md §3.7, incident 10).
//!
//! Architecture invariant: a call holds at most one connection, from its borrow until its
//! answer, and gives it back exactly once (reusable only after a clean answer).

use super::*;
use crate::connpool::{Borrow, ConnId, ConnPool};

pub(super) struct ConnPoolRt {
    pub name: String,
    pub pool: ConnPool,
    leased: GaugeId,
    idle: GaugeId,
    wake: Option<(SimTime, TimerHandle)>,
}

impl ConnPoolRt {
    pub fn new(spec: &crate::connpool::ConnPoolSpec, ctx: &mut Ctx<'_, Ev>) -> Self {
        ConnPoolRt {
            name: spec.name.clone(),
            pool: ConnPool::new(spec),
            leased: ctx.metrics.gauge(&format!("connpool.{}.leased", spec.name)),
            idle: ctx.metrics.gauge(&format!("connpool.{}.idle", spec.name)),
            wake: None,
        }
    }
}

/// Where a call stands with its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ConnState {
    /// Waiting for a connection (deadline timer in `Call::timer`).
    Waiting,
    /// Connecting or validating; sent when ready.
    Opening(ConnId),
    /// Holding a dead connection: fails when the failure surfaces.
    Stale(ConnId),
    /// Request sent on this connection.
    Open(ConnId),
}

impl QueueingWorld {
    /// Borrows a connection for call `slot` from its site's pool; `true` if the call may be
    /// sent now, `false` if it waits (connecting, stale, waiting for a connection).
    pub(super) fn borrow_conn(&mut self, slot: u32, p: u16, ctx: &mut Ctx<'_, Ev>) -> bool {
        let now = ctx.now();
        let c = self.calls.slots.get(slot).expect("live call");
        let (call, route) = (call_id(slot, c.generation), c.site);
        let b = self.upstreams.conns[p as usize].pool.borrow(call, route, now);
        let go = self.on_borrow(slot, b, ctx);
        self.sync_conn_pool(p, ctx);
        go
    }

    fn on_borrow(&mut self, slot: u32, b: Borrow, ctx: &mut Ctx<'_, Ev>) -> bool {
        let now = ctx.now();
        let c = self.calls.slots.get_mut(slot).expect("live call");
        let id = c.job_id();
        match b {
            Borrow::Reuse { conn, extra_delay: d } | Borrow::Connect { conn, delay: d }
                if d == SimDuration::ZERO =>
            {
                c.conn = Some(ConnState::Open(conn));
                true
            }
            Borrow::Reuse { conn, extra_delay: d } | Borrow::Connect { conn, delay: d } => {
                c.conn = Some(ConnState::Opening(conn));
                c.timer = Some(ctx.timer_at(now + d, Ev::ConnReady { slot, id }));
                false
            }
            Borrow::Stale { conn, fail_after } => {
                c.conn = Some(ConnState::Stale(conn));
                c.timer = Some(ctx.timer_at(now + fail_after, Ev::ConnReady { slot, id }));
                false
            }
            Borrow::Wait { deadline } => {
                c.conn = Some(ConnState::Waiting);
                c.timer = Some(ctx.timer_at(deadline, Ev::ConnDeadline { slot, id }));
                false
            }
            Borrow::Reject => {
                self.answer(slot, Outcome::Rejected(Reason::PoolFull), ctx);
                false
            }
        }
    }

    /// A connection is ready (or its staleness surfaced).
    pub(super) fn on_conn_ready(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let c = self.calls.slots.get_mut(slot).expect("a call waiting for its connection");
        c.timer = None;
        match c.conn {
            Some(ConnState::Opening(conn)) => {
                c.conn = Some(ConnState::Open(conn));
                self.send_upstream(slot, ctx);
            }
            Some(ConnState::Stale(_)) => {
                self.answer(slot, Outcome::Failed(Reason::ConnectError), ctx);
            }
            other => unreachable!("connection ready in state {other:?}"),
        }
        self.resume_woken(ctx);
    }

    /// No connection within `connection_request_timeout`.
    pub(super) fn on_conn_deadline(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) {
        let c = self.calls.slots.get_mut(slot).expect("a call waiting for a connection");
        c.timer = None;
        assert_eq!(c.conn, Some(ConnState::Waiting));
        c.conn = None;
        let (call, site) = (call_id(slot, c.generation), c.site as usize);
        let p = self.sites[site].conn_pool.expect("a pooled site");
        self.upstreams.conns[p as usize].pool.abandon(call, ctx.now());
        self.sync_conn_pool(p, ctx);
        self.answer(slot, Outcome::Failed(Reason::Timeout), ctx);
        self.resume_woken(ctx);
    }

    /// The call's upstream exchange is over: its connection goes back (reusable after a
    /// clean answer; closed after a timeout, a connect error or a refusal mid-flight).
    pub(super) fn release_conn(&mut self, slot: u32, o: Outcome, ctx: &mut Ctx<'_, Ev>) {
        let c = self.calls.slots.get_mut(slot).expect("live call");
        let Some(state) = c.conn.take() else { return };
        let p = self.sites[c.site as usize].conn_pool.expect("a pooled site");
        let conn = match state {
            ConnState::Open(conn) | ConnState::Opening(conn) | ConnState::Stale(conn) => conn,
            ConnState::Waiting => unreachable!("a waiting call has not reached its upstream"),
        };
        let reusable = matches!(state, ConnState::Open(_))
            && !matches!(o, Outcome::Failed(Reason::Timeout | Reason::ConnectError));
        self.upstreams.conns[p as usize].pool.release(conn, ctx.now(), reusable);
        self.sync_conn_pool(p, ctx);
    }

    /// Hands connections freed to waiting calls, and keeps the pool's idle timer.
    pub(super) fn sync_conn_pool(&mut self, p: u16, ctx: &mut Ctx<'_, Ev>) {
        let now = ctx.now();
        let mut woken = Vec::new();
        self.upstreams.conns[p as usize].pool.take_woken(&mut woken);
        for (call, b) in woken {
            let (slot, generation) = slot_of(call);
            let c = self.calls.slots.get_mut(slot).expect("a woken call is live");
            assert_eq!(c.generation, generation);
            assert_eq!(c.conn, Some(ConnState::Waiting));
            if let Some(h) = c.timer.take() {
                ctx.cancel(h);
            }
            if self.on_borrow(slot, b, ctx) {
                self.send_upstream(slot, ctx);
            }
        }
        let rt = &mut self.upstreams.conns[p as usize];
        ctx.metrics.set(rt.leased, now, rt.pool.leased() as i64);
        ctx.metrics.set(rt.idle, now, rt.pool.idle() as i64);
        let want = rt.pool.wake_at().map(|t| t.max(now));
        if want != rt.wake.map(|w| w.0) {
            if let Some((_, h)) = rt.wake.take() {
                ctx.cancel(h);
            }
            if let Some(t) = want {
                rt.wake = Some((t, ctx.timer_at(t, Ev::ConnPoolWake { pool: p })));
            }
        }
    }

    pub(super) fn on_conn_pool_wake(&mut self, p: u16, ctx: &mut Ctx<'_, Ev>) {
        self.upstreams.conns[p as usize].wake = None;
        self.upstreams.conns[p as usize].pool.on_wake(ctx.now());
        self.sync_conn_pool(p, ctx);
        self.resume_woken(ctx);
    }
}
