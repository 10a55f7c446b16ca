//! What a request carries when it enters (class, user, key, weight, tokens), and a
//! source's run-time rate multiplier.
//!
//! Every attribute is one keyed draw over `(seed, source, sequence)` with its own id in
//! [`attr`], so a source without these settings draws nothing new and runs exactly as
//! before, and adding an attribute never moves arrivals or other attributes.

use super::*;
use crate::attributes::{AssignSpec, KeyTable, hash_into, sample_tokens};
use crate::closed_loop::{Client, ClosedLoopSpec};
use crate::source::SourceSpec;

/// The traffic subsystem: the sources (arrivals, attributes, closed-loop users), the
/// request classes and the user population. Invariant: a source's arrivals and each
/// request's attributes are keyed draws of `(seed, source, sequence)` — nothing another
/// subsystem does moves them.
pub(super) struct Traffic {
    pub sources: Vec<SourceRt>,
    pub classes: Vec<ClassRt>,
    /// The scenario's user population, if any.
    pub population: Option<crate::users::Population>,
}

impl Traffic {
    /// Class `k`'s statistics (its mirrored source's, when it has one).
    pub fn class_stats(&self, k: usize) -> &SourceStats {
        let c = &self.classes[k];
        match c.mirror_of {
            Some(s) => &self.sources[s as usize].stats,
            None => &c.stats,
        }
    }
}

/// `Req::client` of a request no closed-loop user waits for.
pub(super) const NO_CLIENT: u32 = u32::MAX;

/// A source's traffic settings at run time.
pub(super) struct TrafficRt {
    prompt: Option<sim_core::Dist<f64>>,
    output: Option<sim_core::Dist<f64>>,
    history: Option<sim_core::Dist<f64>>,
    keys: Option<KeyTable>,
    weight: Option<u64>,
    assign: Option<AssignSpec>,
    /// Class index of each name in `assign` (bands, then shares), resolved once.
    assign_classes: Vec<(String, u16)>,
    /// Rate multiplier (renewal sources).
    pub(super) rate: f64,
    /// When the pending arrival of a renewal source after its first is due.
    pub(super) pending: Option<SimTime>,
    /// Bumped by each rate change: the arrival event it replaced is ignored when it fires
    /// (plain events instead of cancellable timers keep the arrival path cheap).
    pub(super) rate_gen: u32,
    /// Closed-loop users.
    pub(super) closed: Option<ClosedLoopSpec>,
    /// Users active now (≤ `clients.len()`, which only grows).
    pub(super) active: u64,
    pub(super) clients: Vec<Client>,
    pub(super) gave_up: u64,
    pub(super) user_retries: u64,
    /// A scripted source's rows: class, user and key by sequence number.
    script: Option<crate::scripted::ScriptRows>,
    /// A trace's `class` column: the scenario class of each of its names.
    trace_classes: Vec<u16>,
    /// How its prompts begin, for GPU servers with prefix caching.
    pub(super) prefix: Vec<crate::prompt_prefix::PrefixSegment>,
}

/// The attributes of a new request.
pub(super) struct Attributes {
    pub class: u16,
    pub user: u64,
    pub key: u64,
    pub weight: u64,
    pub tokens: Tokens,
}

impl TrafficRt {
    pub(super) fn new(s: &SourceSpec, classes: &[crate::class::ClassSpec]) -> TrafficRt {
        let idx = |c: &str| classes.iter().position(|k| k.name == c).expect("checked") as u16;
        let assign_classes = s
            .assign
            .iter()
            .flat_map(|a| {
                a.bands
                    .iter()
                    .map(|b| b.class.clone())
                    .chain(a.class_shares.iter().map(|c| c.0.clone()))
            })
            .map(|c| {
                let i = idx(&c);
                (c, i)
            })
            .collect();
        TrafficRt {
            prompt: s.prompt_tokens.clone(),
            output: s.output_tokens.clone(),
            history: s.history_tokens.clone(),
            keys: s.keys.as_ref().map(KeyTable::new),
            weight: s.weight,
            assign: s.assign.clone(),
            assign_classes,
            rate: s.rate_multiplier,
            pending: None,
            rate_gen: 0,
            closed: s.closed_loop.clone(),
            active: 0,
            clients: Vec::new(),
            gave_up: 0,
            user_retries: 0,
            script: s.script.as_ref().map(|c| {
                let default = s.class.as_deref().map_or(0, idx);
                c.resolve(classes, default)
            }),
            trace_classes: s
                .trace
                .iter()
                .filter_map(|t| t.data.as_ref())
                .flat_map(|d| d.class_names.iter().map(|(n, _)| idx(n)))
                .collect(),
            prefix: s.prefix.clone(),
        }
    }

    /// Its requests come from a script's rows (which may answer their own calls).
    #[inline]
    pub(super) fn has_script(&self) -> bool {
        self.script.is_some()
    }

    /// A scripted row's own answer for its call's attempt `attempt` (`crate::scripted`).
    pub(super) fn row_answer(&self, seq: u64, attempt: u32) -> Option<crate::scripted::Answer> {
        self.script.as_ref()?.answer(seq, attempt)
    }

    /// Every request of the source gets the source's own class: none of its own rules
    /// (assignment, script, a trace's class column) can choose another (`draw_attributes`;
    /// a user population's segments can too, which the caller checks).
    pub(super) fn fixed_class(&self, trace: Option<&crate::trace::TraceSpec>) -> bool {
        self.assign.is_none()
            && self.script.is_none()
            && self.trace_classes.is_empty()
            && trace.and_then(|t| t.data.as_ref()).is_none_or(|d| d.class.is_empty())
    }

    /// Closed-loop users now active (for the engine's same-instant guard).
    pub(super) fn clients(&self) -> u64 {
        self.active
    }

    /// Summary columns of a closed-loop source (none for other sources).
    pub(super) fn emit(&self, prefix: &str, out: &mut Summary) {
        if self.closed.is_some() {
            out.push_u64(format!("{prefix}.gave_up"), self.gave_up);
            out.push_u64(format!("{prefix}.user_retries"), self.user_retries);
            out.push_u64(format!("{prefix}.users"), self.active);
        }
    }
}

impl Tokens {
    /// Prompt tokens (0 when unknown).
    pub fn prompt_or_zero(&self) -> u32 {
        self.prompt.unwrap_or(0)
    }
    /// Output tokens (0 when unknown).
    pub fn output_or_zero(&self) -> u32 {
        self.output.unwrap_or(0)
    }
    /// Prompt + output, what a token limiter charges (0 when unknown).
    pub fn total(&self) -> u32 {
        self.prompt_or_zero().saturating_add(self.output_or_zero())
    }
}

impl QueueingWorld {
    /// Draws the attributes of request `seq` of `source` (keyed; pure).
    pub(super) fn draw_attributes(&self, source: u16, seq: u64, client: Option<u32>) -> Attributes {
        let src = &self.traffic.sources[source as usize];
        let t = &src.traffic;
        let key = src.draw.request(seq);
        let row = src.trace.as_ref().and_then(|t| t.data.as_ref());
        let mut tokens = row
            .map(|d| Tokens {
                prompt: d.prompt_tokens.get(seq as usize).copied().flatten(),
                output: d.output_tokens.get(seq as usize).copied().flatten(),
                history: None,
            })
            .unwrap_or_default();
        let fill = |have: &mut Option<u32>, d: &Option<sim_core::Dist<f64>>, id: u32| {
            if have.is_none()
                && let Some(d) = d
            {
                *have = Some(sample_tokens(d, &mut key.attribute(id)));
            }
        };
        fill(&mut tokens.prompt, &t.prompt, attr::PROMPT_TOKENS);
        fill(&mut tokens.output, &t.output, attr::OUTPUT_TOKENS);
        fill(&mut tokens.history, &t.history, attr::HISTORY_TOKENS);
        // A trace row's own class, user and key columns come first (`crate::trace`); an
        // empty cell or no column leaves the attribute to the rules below.
        let i = seq as usize;
        let row_class = row.and_then(|d| d.class.get(i).copied().flatten());
        let row_user = row.and_then(|d| d.user.get(i).copied()).filter(|&u| u != 0);
        let row_key = row.and_then(|d| d.key.get(i).copied()).filter(|&k| k != 0);
        let mut class = src.class;
        if let Some(c) = row_class {
            class = t.trace_classes[c as usize];
        } else if let Some(a) = &t.assign
            && let Some(name) =
                a.class_of(tokens.prompt, tokens.output, key.uniform(attr::CLASS_SHARE))
        {
            class = t.assign_classes.iter().find(|(c, _)| c == name).expect("resolved").1;
        }
        let pop = self.traffic.population.as_ref();
        let user = match (client, t.assign.as_ref().and_then(|a| a.hash_users), pop) {
            _ if row_user.is_some() => row_user.expect("checked"),
            (Some(c), _, Some(p)) => {
                closed_loop_user(c, t.closed.as_ref().map_or(0, |l| l.users), p.count)
            }
            (Some(c), _, None) => c as u64 + 1,
            (None, Some(n), _) => hash_into(seq, src.key, n),
            (None, None, Some(p)) => p.user_of(key.uniform(attr::USER)),
            (None, None, None) => 0,
        };
        if let Some(p) = pop
            && user != 0
        {
            class = p.class_of(user, class);
        }
        let request_key = match (t.assign.as_ref().and_then(|a| a.hash_keys), &t.keys) {
            _ if row_key.is_some() => row_key.expect("checked"),
            (Some(n), _) => hash_into(seq, src.key ^ 0x4b45_5953, n), // "KEYS"
            (None, Some(table)) => table.sample(key.uniform(attr::KEY)),
            (None, None) => 0,
        };
        let (mut user, mut request_key) = (user, request_key);
        if let Some(rows) = &t.script {
            // A scripted row states its class, user and key (`crate::scripted`).
            (class, user, request_key) = rows.row(seq);
        }
        Attributes {
            class,
            user,
            key: request_key,
            weight: t.weight.unwrap_or(self.traffic.classes[class as usize].weight),
            tokens,
        }
    }

    /// The source whose requests are exactly class `class`'s, if there is one: its class is
    /// fixed (no rule of its own, no user population) and no other source's request can
    /// have that class. That class's statistics are then the source's, counted once.
    pub(super) fn mirrored_source(
        sources: &[SourceRt],
        population: bool,
        class: u16,
    ) -> Option<u16> {
        if population {
            return None;
        }
        // The sources that may send a request of `class`: a source of fixed class only
        // when it is that class, any other source always.
        let mut senders = sources
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.traffic.fixed_class(s.trace.as_ref()) || s.class == class);
        match (senders.next(), senders.next()) {
            (Some((i, s)), None) if s.class == class && s.traffic.fixed_class(s.trace.as_ref()) => {
                Some(i as u16)
            }
            _ => None,
        }
    }

    /// The request a live call belongs to (`None` once the call has ended).
    fn request_of_call(&self, call: CallId) -> Option<&Req> {
        let (slot, generation) = slot_of(call);
        let c = self.calls.slots.get(slot).filter(|c| c.generation == generation)?;
        Some(self.reqs.slots.get(c.req).expect("a call's request outlives it"))
    }

    /// The tokens of the request a live call belongs to (prompt and output separately, for
    /// an upstream that needs both); `None` once the call has ended.
    pub fn call_tokens(&self, call: CallId) -> Option<Tokens> {
        self.request_of_call(call).map(|r| r.tokens)
    }

    /// The weight of the request a live call belongs to (its class's, or its source's
    /// override), for weighted upstream policies.
    pub fn call_weight(&self, call: CallId) -> Option<u64> {
        self.request_of_call(call).map(|r| r.weight)
    }

    /// `source.<name>.rate_multiplier = rate`: the pending gap is rescaled exactly (the
    /// operational time left to it is kept, at the new rate).
    pub(super) fn set_rate(&mut self, source: u16, rate: f64, ctx: &mut Ctx<'_, Ev>) {
        assert!(rate > 0.0 && rate.is_finite());
        let now = ctx.now();
        let src = &mut self.traffic.sources[source as usize];
        let old = std::mem::replace(&mut src.traffic.rate, rate);
        let Some(at) = src.traffic.pending.take() else { return };
        src.traffic.rate_gen += 1;
        let next = match &src.profile {
            None => Some(now + SimDuration::from_ns_f64((at - now).0 as f64 * old / rate)),
            Some(p) => p.advance(now, p.work(now, at) * old / rate),
        };
        if let Some(at) = next {
            let rate_gen = src.traffic.rate_gen;
            ctx.schedule_at(at, Ev::Arrival { source, rate_gen });
            src.traffic.pending = Some(at);
        }
    }
}

/// A `source.*` change in the hands of the traffic subsystem: the source's rows name these
/// setters ([`crate::source::SourceSetters`]); the engine context does the follow-ups.
pub(super) struct SourceChange<'a, 'c> {
    pub world: &'a mut QueueingWorld,
    pub source: u16,
    pub ctx: &'a mut Ctx<'c, Ev>,
}

impl crate::source::SourceSetters for SourceChange<'_, '_> {
    fn set_interarrival(&mut self, d: sim_core::Dist<SimDuration>) {
        self.world.traffic.sources[self.source as usize].interarrival = Some(d);
    }
    fn set_rate_multiplier(&mut self, x: f64) {
        self.world.set_rate(self.source, x, self.ctx);
    }
    fn set_users(&mut self, n: u64) {
        self.world.set_clients(self.source, n, self.ctx);
    }
    fn set_think_time(&mut self, d: sim_core::Dist<SimDuration>) -> Result<(), String> {
        let closed = self.world.traffic.sources[self.source as usize].traffic.closed.as_mut();
        closed.ok_or("not a closed-loop source")?.think_time = d;
        Ok(())
    }
}

/// The population user (1-based) of closed-loop user `client` (0-based) of a source
/// configured with `users` users, in a population of `count`: the configured users are
/// spread evenly over the ids (stratified), so the VIP share (the lowest ids) and the
/// hashed segments of the population carry over to a closed loop smaller than it; users
/// added at run time beyond `users` wrap around (`client mod count`).
fn closed_loop_user(client: u32, users: u64, count: u64) -> u64 {
    let c = client as u64;
    if c < users { c * count / users + 1 } else { c % count + 1 }
}

#[cfg(test)]
mod closed_loop_user_tests {
    use super::closed_loop_user;

    #[test]
    fn spread_over_the_population() {
        // (client, users, count) → user. 20 users in 1,000: every 50th id, so with 5%
        // VIPs (ids 1..=50) exactly one of the 20 (5%) is a VIP.
        let table = [
            (0, 20, 1000, 1),
            (1, 20, 1000, 51),
            (19, 20, 1000, 951),
            (20, 20, 1000, 21), // added at run time: wraps
            (0, 3, 2, 1),       // more users than the population
            (1, 3, 2, 1),
            (2, 3, 2, 2),
            (5, 3, 2, 2),
        ];
        for (c, n, count, want) in table {
            assert_eq!(closed_loop_user(c, n, count), want, "client {c} of {n} in {count}");
        }
        let vips = (0..20).filter(|&c| closed_loop_user(c, 20, 1000) <= 50).count();
        assert_eq!(vips, 1);
    }
}
