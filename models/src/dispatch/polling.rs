//! The source's "weighted polling" dispatcher loop (docs/domain.md §3.3), as a clocked state machine.
//!
//! The Java original (seed 000, `pollNextTask`), called again after every task it returns:
//!
//! ```text
//! for (int i = 0; i < 100; i++) {
//!     p0 = queues[0].poll(); if (p0 != null) return p0;
//!     if (i % 3 == 0) { p1 = queues[1].poll(); if (p1 != null) return p1; }
//!     if (i % 7 == 0) { p2 = queues[2].poll(); if (p2 != null) return p2; }
//!     Thread.sleep(5);
//! }
//! return queues[0].poll(50, TimeUnit.MILLISECONDS);   // null → the caller loops again
//! ```
//!
//! Generalised to `poll_every[c]` (1, 3, 7), `rounds` (100), `idle_sleep` (5 ms) and
//! `final_poll` (50 ms). Consequences reproduced exactly, not smoothed: `i` restarts at 0
//! after every returned task, and iteration 0 polls every class, so under load the loop is
//! strict priority (P0 whenever P0 has work, P1 whenever P0 is empty, …); the modulo
//! "weights" only matter when the loop is idling. A task arriving during a sleep waits for
//! the sleep to end, and for the first iteration that polls its class (a P1 arriving at
//! 1 ms into an idle loop started at 0 is taken at iteration 3 = 15 ms; a P2 at 35 ms).
//! During the final blocking poll a P0 arrival is taken at once; P1/P2 wait for its end.
//!
//! Architecture invariant: the loop's clock only moves forward; an iteration that would take
//! a task runs only inside [`Poller::next`] (a worker is free) — otherwise it stalls, as the
//! dispatcher thread waits for a worker before polling. Empty iterations are replayed
//! lazily ([`Poller::catch_up`]), whole idle cycles in O(1), so an idle loop costs no events.
//!
//! API boundary: the owner passes which class queues are non-empty; the poller answers
//! which class to take or when it will next look.

use sim_core::{SimDuration, SimTime};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// About to run iteration `i` at `at` (i = 0: the start of `pollNextTask`).
    Iter { i: u64, at: SimTime },
    /// `queues[0].poll(final_poll)` from `since` until `until`.
    BlockP0 { since: SimTime, until: SimTime },
}

#[derive(Clone, Debug)]
pub struct Poller {
    poll_every: Vec<u64>,
    rounds: u64,
    idle_sleep: SimDuration,
    final_poll: SimDuration,
    state: State,
}

/// One step of the loop with the given queue contents: the current iteration takes a task
/// of a class, or moves the loop on (empty iteration, end of the final poll), or lies after
/// the time limit.
enum Step {
    Take(usize),
    Move(State),
    Later,
}

impl Poller {
    pub fn new(
        poll_every: Vec<u64>,
        rounds: u64,
        idle_sleep: SimDuration,
        final_poll: SimDuration,
        start: SimTime,
    ) -> Self {
        assert!(
            !poll_every.is_empty() && poll_every.iter().all(|&k| k >= 1),
            "validated: poll_every ≥ 1"
        );
        assert!(
            rounds >= 1 && idle_sleep > SimDuration::ZERO,
            "validated: rounds ≥ 1, idle_sleep > 0"
        );
        Poller {
            poll_every,
            rounds,
            idle_sleep,
            final_poll,
            state: State::Iter { i: 0, at: start },
        }
    }

    /// Iteration index and time of the loop's next look (for tests and traces).
    pub fn position(&self) -> (Option<u64>, SimTime) {
        match self.state {
            State::Iter { i, at } => (Some(i), at),
            State::BlockP0 { since, .. } => (None, since),
        }
    }

    fn cycle(&self) -> SimDuration {
        SimDuration::from_ns(self.idle_sleep.as_ns() * self.rounds + self.final_poll.as_ns())
    }

    /// The step at state `s`, considering only steps that start at or before `limit`.
    fn step(&self, s: State, nonempty: &[bool], limit: SimTime) -> Step {
        match s {
            State::Iter { at, .. } if at > limit => Step::Later,
            State::Iter { i, at } => {
                let k = self.poll_every.len().min(nonempty.len());
                if let Some(c) = (0..k).find(|&c| i % self.poll_every[c] == 0 && nonempty[c]) {
                    return Step::Take(c);
                }
                let wake = at + self.idle_sleep;
                if i + 1 >= self.rounds {
                    Step::Move(State::BlockP0 { since: wake, until: wake + self.final_poll })
                } else {
                    Step::Move(State::Iter { i: i + 1, at: wake })
                }
            }
            State::BlockP0 { since, .. } if since > limit => Step::Later,
            State::BlockP0 { .. } if nonempty[0] => Step::Take(0),
            State::BlockP0 { until, .. } if until > limit => Step::Later,
            State::BlockP0 { until, .. } => Step::Move(State::Iter { i: 0, at: until }),
        }
    }

    /// Replays the empty iterations that started strictly before `now` (the queue contents
    /// have not changed since they ran). Stops at an iteration that would take a task.
    pub fn catch_up(&mut self, nonempty: &[bool], now: SimTime) {
        if now == SimTime::ZERO {
            return;
        }
        let limit = SimTime(now.as_ns() - 1);
        let idle = nonempty.iter().all(|&b| !b);
        loop {
            if idle
                && let State::Iter { i: 0, at } = self.state
                && at < now
            {
                // Skip whole idle cycles: i = 0..rounds then the final poll, `cycle()` long.
                let l = self.cycle().as_ns();
                let k = (now.as_ns() - 1 - at.as_ns()) / l;
                self.state = State::Iter { i: 0, at: SimTime(at.as_ns() + k * l) };
            }
            match self.step(self.state, nonempty, limit) {
                Step::Move(s) => self.state = s,
                Step::Take(_) | Step::Later => return,
            }
        }
    }

    /// A worker is free at `now`: the class to take from, if the loop takes one now.
    pub fn next(&mut self, nonempty: &[bool], now: SimTime) -> Option<usize> {
        self.catch_up(nonempty, now);
        loop {
            match self.step(self.state, nonempty, now) {
                Step::Take(c) => {
                    self.state = State::Iter { i: 0, at: now };
                    return Some(c);
                }
                Step::Move(s) => self.state = s,
                Step::Later => return None,
            }
        }
    }

    /// When the loop will next take a task given these contents (`None` if all empty). At
    /// most one cycle plus one step ahead: iteration 0 polls every class.
    pub fn first_pick_time(&self, nonempty: &[bool]) -> Option<SimTime> {
        if nonempty.iter().all(|&b| !b) {
            return None;
        }
        let mut s = self.state;
        for _ in 0..=self.rounds + 2 {
            match self.step(s, nonempty, SimTime::MAX) {
                Step::Take(_) => {
                    return Some(match s {
                        State::Iter { at, .. } => at,
                        State::BlockP0 { since, .. } => since,
                    });
                }
                Step::Move(n) => s = n,
                Step::Later => unreachable!("limit is SimTime::MAX"),
            }
        }
        unreachable!(
            "iteration 0 polls every class, so a non-empty class is taken within one cycle"
        )
    }
}
