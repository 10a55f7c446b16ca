//! The governors subsystem: the arena of every governor of the scenario (declared ones,
//! shadow copies, per-instance copies), their component paths and typed identities, their
//! own timers (`GovWake`), the gauges they publish, and the queue of calls they woke.
//!
//! Architecture invariant: each governor has at most one pending wake-up timer, at the
//! time it asks for ([`Governors::sync_wake`] after every interaction); calls it wakes or
//! answers are queued in `woken` and resumed by the world, oldest first, never from inside
//! a governor.
//!
//! Boundary: the stack walk itself (`crate::callsite`) reads and writes `arena` and
//! `woken`; what a governor's state change means for other subsystems (time series, the
//! entry path's health, model events) is the world's hand-off (`world/calls.rs`,
//! `after_governor`).

use super::*;

pub(super) struct GateRt {
    /// Index in the governor arena.
    pub gov: usize,
    pub name: String,
    pub in_use: GaugeId,
    pub waiting: GaugeId,
}

/// The app instance a per-instance copy of a governor serves (path `<base>@<app>.<k>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct InstanceCopy {
    /// Arena index of the declared governor it copies.
    pub base: usize,
    /// Index of the app, and the instance within it.
    pub app: u16,
    pub inst: u16,
}

pub(super) struct Governors {
    pub arena: Vec<GovernorKind>,
    /// Component path of each governor (`gate.llm`, `circuit_breaker.b@api.0`), for events.
    pub names: Vec<String>,
    /// For a per-instance copy, which instance it serves (`None`: a declared governor or a
    /// shadow copy).
    pub copy_of: Vec<Option<InstanceCopy>>,
    /// For a shadow copy, the arena index of the declared governor it copies.
    shadow_of: Vec<Option<usize>>,
    /// Each governor's scheduled wake-up, if any.
    wake: Vec<Option<(SimTime, TimerHandle)>>,
    pub gates: Vec<GateRt>,
    /// Governors with declared gauges: arena index and the gauge of each, in order.
    gauges: Vec<(usize, Vec<GaugeId>)>,
    /// Calls governors woke (permits handed over) or answered, oldest first.
    pub woken: std::collections::VecDeque<Woken>,
}

impl Governors {
    pub fn new(
        arena: Vec<GovernorKind>,
        names: Vec<String>,
        copy_of: Vec<Option<InstanceCopy>>,
        shadow_of: Vec<Option<usize>>,
        gates: Vec<GateRt>,
        gauges: Vec<(usize, Vec<GaugeId>)>,
    ) -> Self {
        let n = arena.len();
        Governors {
            arena,
            names,
            copy_of,
            shadow_of,
            wake: vec![None; n],
            gates,
            gauges,
            woken: Default::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.arena.len()
    }

    /// The declared governor's path and, for a per-instance copy, the instance it serves.
    pub fn identity(&self, g: usize) -> (&str, Option<InstanceCopy>) {
        match self.copy_of[g] {
            Some(c) => (&self.names[c.base], Some(c)),
            None => (&self.names[g], None),
        }
    }

    /// Declared governor `g` and every copy of it (per-instance copies, its shadow copy),
    /// by the typed links recorded at build, in arena order: what a change to `g`'s
    /// parameters applies to.
    pub fn family(&self, g: usize) -> Vec<usize> {
        (0..self.arena.len())
            .filter(|&i| {
                i == g
                    || self.copy_of[i].is_some_and(|c| c.base == g)
                    || self.shadow_of[i] == Some(g)
            })
            .collect()
    }

    /// Governor `g`'s own timer fired: it acts, and what it released is queued in `woken`.
    pub fn woke(&mut self, g: usize, now: SimTime) {
        self.wake[g] = None;
        self.arena[g].on_wake(now);
        callsite::drain(g, &mut self.arena, &mut self.woken);
    }

    /// The time governor `g`'s timer should be at, and the time it is at.
    fn wake_want_have(&self, g: usize, now: SimTime) -> (Option<SimTime>, Option<SimTime>) {
        (self.arena[g].wake_at().map(|t| t.max(now)), self.wake[g].map(|(t, _)| t))
    }

    /// Is governor `g`'s timer where it asks for it ([`Self::sync_wake`] would do nothing)?
    pub fn wake_in_step(&self, g: usize, now: SimTime) -> bool {
        let (want, have) = self.wake_want_have(g, now);
        want == have
    }

    /// Keeps governor `g`'s timer in step with what it asks for.
    pub fn sync_wake(&mut self, g: usize, ctx: &mut Ctx<'_, Ev>) {
        let (want, have) = self.wake_want_have(g, ctx.now());
        if want == have {
            return;
        }
        if let Some((_, h)) = self.wake[g].take() {
            ctx.cancel(h);
        }
        if let Some(t) = want {
            let h = ctx.timer_at(t, Ev::GovWake { gov: g as u16 });
            self.wake[g] = Some((t, h));
        }
    }

    /// Publishes the gates' permits and every declared governor gauge at `now`.
    pub fn update_gauges(&self, ctx: &mut Ctx<'_, Ev>) {
        if self.gates.is_empty() && self.gauges.is_empty() {
            return;
        }
        let now = ctx.now();
        for (g, ids) in &self.gauges {
            for ((_, v), &id) in self.arena[*g].gauges().iter().zip(ids) {
                ctx.metrics.set(id, now, *v);
            }
        }
        for rt in &self.gates {
            let gate = self.arena[rt.gov].as_gate().expect("a gate");
            ctx.metrics.set(rt.in_use, now, gate.in_use() as i64);
            ctx.metrics.set(rt.waiting, now, gate.waiting() as i64);
        }
    }
}
