//! Cutting a call short from a governor it passed (a time limiter's timeout): the one place
//! where a call is answered from a level above where it is.
//!
//! The call is abandoned wherever it is below the answering level `L`:
//! * parked at a lower level `p`: that governor's `on_abandon`, its deadline cancelled;
//! * in a lower retry's back-off (re-sent from `r`): the back-off timer cancelled, the retry
//!   governor (level `r − 1`) forgets the call (`on_abandon`);
//! * waiting for a connection: the pool forgets it; connecting: the connection is closed;
//! * at its upstream: the client-timeout path without its answer (the work cancelled
//!   where the upstream allows, or kept running as abandoned work when the governor does
//!   not cancel), the connection closed as timed out.
//!
//! Then the levels strictly between `L` and that place see `Failed(Timeout)` (a
//! `RetryAfter` among them is refused with `on_abandon`: a cut call is not re-sent below
//! the level that cut it), and the governor's answer climbs from `L` like any answer.
//!
//! Architecture invariant: every level the call passed sees its outcome (or `on_abandon`)
//! exactly once, as on every other path; the call holds no timer afterwards.

use super::*;

impl QueueingWorld {
    /// Governor `g` (in the call's stack, above where the call is) answered call `slot`.
    pub(super) fn cut_short(
        &mut self,
        slot: u32,
        g: usize,
        answer: Outcome,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        let now = ctx.now();
        let c = self.calls.slots.get(slot).expect("live call");
        let (site, inst) = (c.site as usize, c.inst);
        // The call's own stack (its instance's copies of per-instance governors; an
        // attempt of a hedged call: the levels below its hedging governor).
        let stack: Vec<usize> = self.sites[site].stack_at(inst, c.base).to_vec();
        let level = stack
            .iter()
            .position(|&x| x == g)
            .expect("a call is answered only by a governor of its stack");
        let cancel = match &self.govs.arena[g] {
            GovernorKind::TimeLimiter(t) => Some(t.cancels_running_future()),
            _ => None,
        };
        if cancel.is_some() {
            self.series_timeout(site, ctx); // a time limiter's cut is a client timeout
        }
        let cancel = cancel.unwrap_or(true);
        let info = self.info(slot);
        self.cut_below(slot, &stack, level + 1, cancel, &info, ctx);
        let next = callsite::ascend(
            &stack,
            &mut self.govs.arena,
            &info,
            level,
            answer,
            now,
            &mut self.govs.woken,
        );
        self.after_stack(site, inst, ctx);
        self.act(slot, next, ctx);
    }

    /// Abandons call `slot` wherever it is at or below level `from` of its `stack` (see the
    /// module doc), then lets the levels from `from` down to that place see
    /// `Failed(Timeout)`. `cancel`: drop the upstream work where the upstream allows.
    /// Used by a governor's cut (`from` = its level + 1) and a request's budget (`from` =
    /// 0: every level the call passed).
    pub(super) fn cut_below(
        &mut self,
        slot: u32,
        stack: &[usize],
        from: usize,
        cancel: bool,
        info: &CallInfo,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        let now = ctx.now();
        let site = self.calls.slots.get(slot).expect("live call").site as usize;
        let c = self.calls.slots.get_mut(slot).expect("live call");
        if let Some(h) = c.timer.take() {
            ctx.cancel(h);
        }
        let below = if let Some(p) = c.parked_at.take() {
            assert!(p >= from, "answered from above where it is parked");
            let pg = stack[p];
            self.govs.arena[pg].on_abandon(info, now);
            callsite::drain(pg, &mut self.govs.arena, &mut self.govs.woken);
            // Parked at a hedging governor: its attempts go with it (`world/hedging.rs`).
            self.cancel_attempts(slot, ctx);
            p
        } else if let Some(r) = c.retry_level.take() {
            assert!(r > from, "the retry that holds it is below the answering level");
            let rg = stack[r - 1];
            self.govs.arena[rg].on_abandon(info, now);
            callsite::drain(rg, &mut self.govs.arena, &mut self.govs.woken);
            r - 1
        } else {
            match c.conn {
                Some(conn::ConnState::Waiting) => {
                    c.conn = None;
                    let p = self.sites[site].conn_pool.expect("a pooled site");
                    self.upstreams.conns[p as usize].pool.abandon(info.call, now);
                    self.sync_conn_pool(p, ctx);
                }
                Some(conn::ConnState::Opening(_) | conn::ConnState::Stale(_)) => {
                    self.release_conn(slot, Outcome::Failed(Reason::Timeout), ctx);
                }
                _ => {
                    self.drop_upstream_work(slot, cancel, ctx);
                    self.release_conn(slot, Outcome::Failed(Reason::Timeout), ctx);
                }
            }
            stack.len()
        };
        let mut o = Outcome::Failed(Reason::Timeout);
        for l in (from..below).rev() {
            let lg = stack[l];
            match self.govs.arena[lg].on_outcome(info, o, now) {
                crate::governor::OutcomeDecision::PassUp(x) => o = x,
                crate::governor::OutcomeDecision::RetryAfter(_) => {
                    self.govs.arena[lg].on_abandon(info, now)
                }
            }
            callsite::drain(lg, &mut self.govs.arena, &mut self.govs.woken);
        }
    }
}
