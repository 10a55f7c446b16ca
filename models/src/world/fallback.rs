//! The degradation chain at run time (`crate::fallback`): a call its site fails (or a
//! switched-off site refuses) moves on to the site's fallback — another call site, a capped
//! busy answer, a reject — as the same call; its final outcome carries the first failure's
//! reason.
//!
//! Hooks: `descend` at level 0 asks [`QueueingWorld::switched_off`]; `call_ended` asks
//! [`QueueingWorld::chain_step`] before the call is finished; token counts come from
//! [`QueueingWorld::prompt_of`] (a trimmed call carries fewer prompt tokens).

use super::*;
use crate::fallback::{self as fb, AfterEnd, BusyCap, FallbackTo, MAX_HOPS, Trim};

/// A call site's fallback, resolved.
pub(super) struct SiteFallback {
    on: u32,
    to: To,
    trim: Option<Trim>,
    /// Calls this site sent on to its fallback layer (switched-off ones included).
    pub fallbacks: u64,
    /// Calls that reached this site while it was switched off.
    pub switched_off: u64,
    /// The busy layer: busy answers, cached answers beyond the cap, failures beyond it.
    pub busy_answers: u64,
    pub busy_cached: u64,
    pub busy_failed: u64,
}

enum To {
    Site(u16),
    Busy { cap: BusyCap, cache: Option<usize> },
    Reject,
}

impl SiteFallback {
    /// `gov_names`: the governor arena's paths (the busy layer's cache is `cache.<name>`).
    pub(super) fn new(sc: &Scenario, f: &fb::FallbackSpec, gov_names: &[String]) -> Self {
        let to = match &f.to {
            FallbackTo::CallSite(n) => {
                To::Site(sc.call_sites.iter().position(|c| &c.name == n).expect("checked") as u16)
            }
            FallbackTo::Busy { max_per_second, cache } => To::Busy {
                cap: BusyCap::new(*max_per_second),
                cache: cache.as_ref().map(|c| {
                    let path = format!("cache.{c}");
                    gov_names.iter().position(|p| *p == path).expect("checked")
                }),
            },
            FallbackTo::Reject => To::Reject,
        };
        SiteFallback {
            on: fb::mask(&f.on),
            to,
            trim: f.trim.clone(),
            fallbacks: 0,
            switched_off: 0,
            busy_answers: 0,
            busy_cached: 0,
            busy_failed: 0,
        }
    }

    /// A run-time change of the busy layer's cap (from the next one-second window).
    pub(super) fn set_busy_cap(&mut self, max_per_second: Option<u64>) -> Result<(), String> {
        match &mut self.to {
            To::Busy { cap, .. } => {
                cap.set_max_per_second(max_per_second);
                Ok(())
            }
            _ => Err("the site's fallback is not Busy".into()),
        }
    }

    /// I42: busy answers in the current window ≤ `max_per_second`.
    pub(super) fn check(&self) -> Option<String> {
        match &self.to {
            To::Busy { cap, .. } if cap.max_per_second.is_some_and(|m| cap.used() > m) => Some(
                format!("{} busy answers in one second, cap {:?}", cap.used(), cap.max_per_second),
            ),
            _ => None,
        }
    }
}

/// A call on its degradation chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CallFallback {
    /// The first failure of its chain (the reason its final answer carries).
    pub first: Reason,
    /// Sites it moved on from (≤ `MAX_HOPS`).
    pub hops: u8,
    /// Its call path before the first hop (hop `h` draws with `orig_path | h << 28`).
    pub orig_path: u32,
    /// Its prompt after trimming (`None`: the request's).
    pub prompt: Option<u32>,
}

impl QueueingWorld {
    /// The prompt tokens call `c` of request `r` carries (trimmed on a fallback).
    pub(super) fn prompt_of(c: &Call, r: &Req) -> Option<u32> {
        c.degrade.and_then(|d| d.prompt).or(r.tokens.prompt)
    }

    /// Call `slot` reached its site at level 0: is the site switched off? Then the call
    /// goes straight to the fallback (or ends `Rejected(shed)`), and `true` is returned.
    pub(super) fn switched_off(&mut self, slot: u32, ctx: &mut Ctx<'_, Ev>) -> bool {
        let site = self.calls.slots.get(slot).expect("live call").site as usize;
        if self.sites[site].enabled {
            return false;
        }
        self.switch_off(slot, site, ctx);
        true
    }

    /// Call `slot` meets its site `site` switched off. Out of line: the common case, the
    /// site on, then saves no registers in [`Self::descend`].
    #[inline(never)]
    fn switch_off(&mut self, slot: u32, site: usize, ctx: &mut Ctx<'_, Ev>) {
        if let Some(f) = &mut self.sites[site].fallback {
            f.switched_off += 1;
        }
        if let Some(o) = self.chain_step(slot, Outcome::Rejected(Reason::Shed), true, ctx) {
            self.call_done(slot, o, ctx);
        }
    }

    /// The call ended at its site with `o`: its final outcome, or `None` when it moved on
    /// to a fallback call site (it is live there now).
    #[inline]
    pub(super) fn chain_step(
        &mut self,
        slot: u32,
        o: Outcome,
        off: bool,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Option<Outcome> {
        let c = self.calls.slots.get(slot).expect("live call");
        if c.degrade.is_none() && self.sites[c.site as usize].fallback.is_none() {
            return Some(o); // the common case: no chain here
        }
        self.chain_step_on(slot, o, off, ctx)
    }

    #[inline(never)]
    fn chain_step_on(
        &mut self,
        slot: u32,
        o: Outcome,
        off: bool,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Option<Outcome> {
        let c = self.calls.slots.get(slot).expect("live call");
        let site = c.site as usize;
        let first = c.degrade.map(|d| d.first);
        let on = self.sites[site].fallback.as_ref().map(|f| f.on);
        if self.reqs.slots.get(c.req).expect("live request").expired {
            return Some(o); // its budget ran out: nothing further is issued, not even a fallback
        }
        let AfterEnd::Fallback { first } = fb::after_end(o, first, on, off) else {
            let AfterEnd::Done(x) = fb::after_end(o, first, on, off) else { unreachable!() };
            return Some(x);
        };
        let now = ctx.now();
        let f = self.sites[site].fallback.as_mut().expect("a fallback decision needs one");
        f.fallbacks += 1;
        let (next, trim) = match &mut f.to {
            To::Reject => return Some(Outcome::Rejected(first)),
            To::Site(next) => (*next, f.trim.clone()),
            To::Busy { cap, cache } => {
                let granted = cap.take(now);
                let cache = *cache;
                let hit = match cache {
                    Some(g) if !granted => Some(self.stale_lookup(slot, g, now)),
                    _ => None,
                };
                let answer = fb::busy_answer(o, first, granted, hit);
                let f = self.sites[site].fallback.as_mut().expect("still there");
                match answer {
                    Outcome::Rejected(Reason::Shed) if granted => f.busy_answers += 1,
                    Outcome::Degraded(_) => f.busy_cached += 1,
                    _ => f.busy_failed += 1,
                }
                return Some(answer);
            }
        };
        self.hop(slot, next, first, trim.as_ref(), ctx);
        None
    }

    /// At build: the caches busy layers read keep their stale entries.
    pub(super) fn fallback_start(&mut self) {
        for s in &self.sites {
            if let Some(SiteFallback { to: To::Busy { cache: Some(g), .. }, .. }) = s.fallback {
                match &mut self.govs.arena[g] {
                    GovernorKind::Cache(c) => c.keep_stale_for_busy(),
                    _ => unreachable!("checked: a cache"),
                }
            }
        }
    }

    /// The busy layer's cache lookup: the best cached similar answer, stale entries
    /// accepted; the question is the call's own (its bits before any hop).
    fn stale_lookup(&mut self, slot: u32, g: usize, now: SimTime) -> bool {
        let c = self.calls.slots.get(slot).expect("live call");
        let r = self.reqs.slots.get(c.req).expect("live request");
        let path = c.degrade.map_or(c.path, |d| d.orig_path);
        let draw = self.traffic.sources[r.source as usize]
            .draw
            .request(r.seq)
            .with_call(path, 0)
            .bits(attr::GOVERNOR_BITS);
        let key = r.key;
        match &mut self.govs.arena[g] {
            GovernorKind::Cache(cache) => cache.lookup_stale(key, draw, now),
            _ => unreachable!("checked: a cache"),
        }
    }

    /// Sends the ended call on to call site `next`, from the top of its stack.
    fn hop(
        &mut self,
        slot: u32,
        next: u16,
        first: Reason,
        trim: Option<&Trim>,
        ctx: &mut Ctx<'_, Ev>,
    ) {
        let c = self.calls.slots.get(slot).expect("live call");
        let prompt = Self::prompt_of(c, self.reqs.slots.get(c.req).expect("live"));
        let c = self.calls.slots.get_mut(slot).expect("live call");
        assert!(
            c.timer.is_none()
                && c.parked_at.is_none()
                && c.retry_level.is_none()
                && c.conn.is_none()
                && c.upstream_timer.is_none()
                && !c.in_service,
            "a call moves on only once it is nowhere"
        );
        let d = c.degrade.get_or_insert(CallFallback {
            first,
            hops: 0,
            orig_path: c.path,
            prompt: None,
        });
        d.hops += 1;
        assert!(d.hops <= MAX_HOPS, "I41: a chain is at most {MAX_HOPS} hops (checked acyclic)");
        if let Some(t) = trim {
            d.prompt = Some(fb::trim_prompt(prompt.unwrap_or(0), t));
        }
        c.path = d.orig_path | ((d.hops as u32) << 28);
        let (req, path) = (c.req, c.path);
        let draw = self.site_draw(next as usize, req, path);
        let c = self.calls.slots.get_mut(slot).expect("live call");
        c.draw = draw;
        c.site = next;
        c.attempt = 0;
        (c.up, c.on_backup, c.upstream_error, c.upstream_retry_after) = (None, false, None, None);
        c.rekey();
        self.descend(slot, 0, ctx);
    }

    /// I41–I42: live calls on a chain have ≤ `MAX_HOPS` hops and the hop's draw path; busy
    /// answers per window within their cap.
    pub(super) fn fallback_violations(&self, out: &mut Vec<String>) {
        for c in self.calls.slots.iter() {
            if let Some(d) = c.degrade
                && (d.hops == 0
                    || d.hops > MAX_HOPS
                    || c.path != d.orig_path | ((d.hops as u32) << 28))
            {
                out.push(format!(
                    "I41 fallback: call {} has {} hops, path {:#x}",
                    c.id, d.hops, c.path
                ));
            }
        }
        for s in &self.sites {
            if let Some(e) = s.fallback.as_ref().and_then(|f| f.check()) {
                out.push(format!("I42 call_site.{}: {e}", s.name));
            }
        }
    }

    /// Summary columns of sites with a fallback (none otherwise: other runs are unchanged).
    pub(super) fn fallback_summary(&self, out: &mut crate::summary::Summary) {
        for s in &self.sites {
            let Some(f) = &s.fallback else { continue };
            let p = format!("call_site.{}", s.name);
            out.push_u64(format!("{p}.fallbacks"), f.fallbacks);
            out.push_u64(format!("{p}.switched_off"), f.switched_off);
            if matches!(f.to, To::Busy { .. }) {
                out.push_u64(format!("{p}.busy_answers"), f.busy_answers);
                out.push_u64(format!("{p}.busy_cached"), f.busy_cached);
                out.push_u64(format!("{p}.busy_failed"), f.busy_failed);
            }
        }
    }
}
