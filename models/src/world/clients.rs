//! Closed-loop users at run time: send, wait (or give up), think or re-send, send again.
//!
//! Every random number of a user's turn `k` is keyed by the sequence `(user, k)`: the think
//! before turn `k` and the retry delay before turn `k` on turn `k`'s key, the retry coin
//! after turn `k` ends on turn `k`'s key. A give-up leaves the request in the system (it
//! ends exactly once, counted like any other); only the user moves on.

use super::*;
use crate::closed_loop::{Client, NextSend, WaitEnd, after_wait, sequence};

impl QueueingWorld {
    /// Starts every closed-loop source's users (each thinks once first).
    pub(super) fn start_clients(&mut self, ctx: &mut Ctx<'_, Ev>) {
        for s in 0..self.traffic.sources.len() {
            if let Some(n) = self.traffic.sources[s].traffic.closed.as_ref().map(|c| c.users) {
                self.set_clients(s as u16, n, ctx);
            }
        }
    }

    /// Sets the number of active users of a closed-loop source. New (or re-activated) idle
    /// users think, then send; users beyond `n` stop after their current wait.
    pub(super) fn set_clients(&mut self, source: u16, n: u64, ctx: &mut Ctx<'_, Ev>) {
        assert!(n <= crate::closed_loop::MAX_CLIENTS);
        let t = &mut self.traffic.sources[source as usize].traffic;
        let old = std::mem::replace(&mut t.active, n);
        while (t.clients.len() as u64) < n {
            t.clients.push(Client::default());
        }
        for u in old..n {
            let c = &self.traffic.sources[source as usize].traffic.clients[u as usize];
            if c.scheduled || c.waiting.is_some() {
                continue; // still busy: it carries on
            }
            let think = self.delay(source, u as u32, attr::THINK_TIME);
            self.schedule_send(source, u as u32, think, ctx);
        }
    }

    /// The think time (or retry delay) before user `user`'s next turn.
    fn delay(&self, source: u16, user: u32, id: u32) -> SimDuration {
        let src = &self.traffic.sources[source as usize];
        let cl = src.traffic.closed.as_ref().expect("a closed-loop source");
        let turn = src.traffic.clients[user as usize].turn;
        let mut u = src.draw.request(sequence(user, turn)).attribute(id);
        match id {
            attr::THINK_TIME => cl.think_time.sample(&mut u),
            _ => cl.retry.as_ref().expect("a retry").delay.sample(&mut u),
        }
    }

    fn schedule_send(&mut self, source: u16, user: u32, after: SimDuration, ctx: &mut Ctx<'_, Ev>) {
        let src = &mut self.traffic.sources[source as usize];
        let c = &mut src.traffic.clients[user as usize];
        assert!(!c.scheduled && c.waiting.is_none(), "a user has one thing to do at a time");
        c.scheduled = true;
        let at = (ctx.now() + after).max(src.start);
        ctx.schedule_at(at, Ev::UserSend { source, user });
    }

    pub(super) fn on_user_send(&mut self, source: u16, user: u32, ctx: &mut Ctx<'_, Ev>) {
        let src = &mut self.traffic.sources[source as usize];
        let limit_reached = src.limit.is_some_and(|l| src.issued >= l);
        let t = &mut src.traffic;
        let give_up = t.closed.as_ref().expect("a closed-loop source").give_up;
        let c = &mut t.clients[user as usize];
        c.scheduled = false;
        if user as u64 >= t.active || limit_reached {
            return; // stopped (fewer users now, or the source's limit is reached)
        }
        assert!(c.waiting.is_none() && c.turn < u32::MAX, "one wait at a time; turns < 2³²");
        let seq = sequence(user, c.turn);
        c.turn += 1;
        // Waiting before the request enters: it may end at once.
        c.waiting = Some(self.reqs.next_id);
        if give_up > SimDuration::ZERO {
            c.give_up = Some(ctx.timer_in(give_up, Ev::UserGiveUp { source, user }));
        }
        src.issued += 1;
        self.new_request(source, seq, Some(user), ctx);
    }

    /// A request a closed-loop user sent has ended.
    pub(super) fn client_answered(
        &mut self,
        source: u16,
        user: u32,
        id: RequestId,
        outcome: Outcome,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        let c = &mut self.traffic.sources[source as usize].traffic.clients[user as usize];
        if c.waiting != Some(id.0) {
            return; // the user gave up on it and moved on
        }
        c.waiting = None;
        if let Some(h) = c.give_up.take() {
            ctx.cancel(h).expect("a give-up timer is live while its user waits");
        }
        let end = match outcome {
            Outcome::Success | Outcome::Degraded(_) => WaitEnd::Answered,
            _ => WaitEnd::Failed,
        };
        self.user_next(source, user, end, ctx);
    }

    pub(super) fn on_user_give_up(&mut self, source: u16, user: u32, ctx: &mut Ctx<'_, Ev>) {
        let t = &mut self.traffic.sources[source as usize].traffic;
        let c = &mut t.clients[user as usize];
        c.give_up = None;
        assert!(c.waiting.take().is_some(), "a give-up timer runs only while its user waits");
        t.gave_up += 1;
        self.user_next(source, user, WaitEnd::GaveUp, ctx);
    }

    /// After a wait: re-send (by chance, after a failure or give-up) or think.
    fn user_next(&mut self, source: u16, user: u32, end: WaitEnd, ctx: &mut Ctx<'_, Ev>) {
        let src = &self.traffic.sources[source as usize];
        let cl = src.traffic.closed.as_ref().expect("a closed-loop source");
        let c = &src.traffic.clients[user as usize];
        let last = src.draw.request(sequence(user, c.turn - 1));
        let next = after_wait(end, cl.retry.as_ref(), c.retries, last.uniform(attr::USER_RETRY));
        let delay = match next {
            NextSend::Retry => self.delay(source, user, attr::USER_RETRY_DELAY),
            NextSend::Think => self.delay(source, user, attr::THINK_TIME),
        };
        let t = &mut self.traffic.sources[source as usize].traffic;
        match next {
            NextSend::Retry => {
                t.clients[user as usize].retries += 1;
                t.user_retries += 1;
            }
            NextSend::Think => t.clients[user as usize].retries = 0,
        }
        if user as u64 >= t.active {
            return; // fewer users now: this one stops
        }
        self.schedule_send(source, user, delay, ctx);
    }
}
