//! Run-time parameter changes applied to the running world (timeline, session, GUI).
//!
//! A change is validated first ([`crate::scenario::validate_change`]: known path, run-time
//! parameter, typed value in range, reload only for reloadable kinds); a refused change is
//! recorded as a `config_rejected` event and changes nothing, never a panic. An accepted
//! change goes to the component that owns the parameter (`apply_param` of the station,
//! quota, connection pool, GPU server or governor); the world only does the follow-ups that
//! need it (start queued work on freed servers, wake calls, refresh gauges).
//!
//! API boundary: [`QueueingWorld::validate_change`], [`QueueingWorld::value_in_force`] and
//! [`QueueingWorld::values_in_force`] are public (the live session API builds on them).

use super::*;
use crate::components::{ComponentId, ComponentKind, Owner};
use crate::params::ApplyParam as _;
use crate::scenario::{ChangeError, validate_change};

impl QueueingWorld {
    /// Checks a run-time change against the scenario's registry without applying it. `Ok`:
    /// applying it (through the engine's change queue) cannot fail the registry checks.
    pub fn validate_change(
        &self,
        path: &str,
        value: &ParamValue,
        reload: bool,
    ) -> Result<(), ChangeError> {
        validate_change(&self.registry, self.traffic.classes.len(), path, value, reload)
    }

    /// The value in force of a registered parameter: the scenario's, or the last change
    /// applied (`None`: no such path).
    pub fn value_in_force(&self, path: &str) -> Option<&ParamValue> {
        self.params_now.get(path)
    }

    /// Every registered parameter with its value in force, sorted by path.
    pub fn values_in_force(&self) -> impl Iterator<Item = (&str, &ParamValue)> {
        self.params_now.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The scenario's parameter registry (types, ranges, units, run-time flags, docs).
    pub fn registry(&self) -> &crate::params::Registry {
        &self.registry
    }

    /// Applies a run-time parameter change; a refused one is recorded (`config_rejected`)
    /// and changes nothing. The path is resolved once, by the validation, to its typed
    /// owner ([`crate::components::Owner`]); what follows dispatches on that.
    pub(super) fn set(&mut self, p: SetParam<ParamValue>, ctx: &mut Ctx<'_, Ev>) {
        if let Err(e) = self.validate_change(&p.path, &p.value, p.reload) {
            self.obs.events.push(ModelEvent {
                time: ctx.now(),
                component: p.path.rsplit_once('.').map_or(p.path.clone(), |(c, _)| c.into()),
                kind: "config_rejected",
                from: p.path.clone(),
                to: e.to_string(),
            });
            return;
        }
        let spec = self.registry.get(&p.path).expect("validated: a registered path");
        let (kind, name, param, owner) = (spec.kind, spec.instance.clone(), spec.name, spec.owner);
        let old = self.params_now.insert(p.path.clone(), p.value.clone());
        let from = old.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "?".into());
        let reload = p.reload;
        self.obs.events.push(ModelEvent {
            time: ctx.now(),
            component: format!("{kind}.{name}"),
            kind: if reload { "rule_reload" } else { "config_change" },
            from: format!("{param} = {from}"),
            to: format!("{param} = {}", p.value),
        });
        let r = match owner {
            Owner::Governor(g) => self.set_governor(g, param, p.value, reload, ctx),
            Owner::Component(c) => self.set_component(c, param, p.value, ctx),
        };
        if let Err(e) = r {
            self.refuse(&p.path, kind, &name, param, old, e, ctx.now());
        }
        // A GPU server is kicked after a refusal is recorded (it may start work either way).
        if let Owner::Component(c) = owner
            && c.kind == ComponentKind::GpuServer
        {
            self.kick_gpu(c.index, ctx);
        }
    }

    /// A change to a non-governor component, handed to it by its kind; the world does the
    /// follow-ups that need it. `Err`: refused by the component (a cross-field rule).
    fn set_component(
        &mut self,
        c: ComponentId,
        param: &str,
        v: ParamValue,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        use ComponentKind as K;
        let (i, now) = (c.index(), ctx.now());
        match c.kind {
            K::Station => self.set_station(i as u16, param, v, ctx),
            K::Quota => self.upstreams.quotas[i].1.apply_param(param, v, now),
            K::Source => self.set_source(i, param, v, ctx),
            K::Segment => {
                let classes = self.traffic.classes.len();
                let p = self.traffic.population.as_mut().expect("registered: a population");
                p.segment_mut(i, classes).apply_param(param, v, now)
            }
            K::ConnPool => self.set_connpool(i, param, v, ctx),
            K::Stall => self.set_stall(i, param, v, ctx),
            K::Autoscaler => self.set_autoscaler(i, param, v, ctx),
            // A cross-field rule (batched tokens ≥ sequences) may refuse it.
            K::GpuServer => self.upstreams.gpus[i].server.apply_param(param, v, now),
            K::App | K::Dispatcher | K::Pool | K::DispatcherQueue | K::PoolQueue => {
                self.entry_set(c, param, v, ctx)
            }
            K::CallSite => {
                let change = &mut SiteChange { world: self, site: i };
                let change: &mut dyn crate::scenario::CallSiteSetters = change;
                change.apply_param(param, v, now)
            }
            K::Class | K::Users | K::GpuPool => {
                Err(format!("`{}` parameters are not run-time changeable", c.kind.name()))
            }
        }
    }

    /// A change the component refused (a cross-field rule): recorded, and the value in
    /// force stays the old one.
    #[allow(clippy::too_many_arguments)]
    fn refuse(
        &mut self,
        path: &str,
        kind: &str,
        name: &str,
        param: &str,
        old: Option<ParamValue>,
        e: String,
        now: SimTime,
    ) {
        if let Some(v) = old {
            self.params_now.insert(path.to_string(), v);
        }
        self.obs.events.push(ModelEvent {
            time: now,
            component: format!("{kind}.{name}"),
            kind: "config_rejected",
            from: param.to_string(),
            to: e,
        });
    }

    fn set_station(
        &mut self,
        st: u16,
        param: &str,
        v: ParamValue,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        let station = &mut self.upstreams.stations[st as usize].st;
        match param.strip_prefix("codel.") {
            Some(p) => station.queue_mut().apply_codel(p, v, ctx.now())?,
            None => station.apply_param(param, v, ctx.now())?,
        }
        // An autoscaled station's servers hold until its autoscaler's next step.
        if let Some(a) = self.upstreams.stations[st as usize].scaler
            && param == "servers"
        {
            self.scalers.list[a as usize].overridden = true;
        }
        // More servers start queued work (after any other change the station is work
        // conserving, I4: nothing starts), and the gauges follow, the capacity's time
        // average too (setting a gauge to its value changes nothing).
        while let Some((job, _)) = self.upstreams.stations[st as usize].st.start_next(ctx.now()) {
            self.start_service(st, job, ctx);
        }
        if self.station_drops(st, ctx) {
            self.resume_woken(ctx);
        }
        self.update_station_gauges(st, ctx);
        Ok(())
    }

    fn set_source(
        &mut self,
        i: usize,
        param: &str,
        v: ParamValue,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        let now = ctx.now();
        let mut change = traffic::SourceChange { world: self, source: i as u16, ctx };
        (&mut change as &mut dyn crate::source::SourceSetters).apply_param(param, v, now)
    }

    fn set_connpool(
        &mut self,
        p: usize,
        param: &str,
        v: ParamValue,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        self.upstreams.conns[p].pool.apply_param(param, v, ctx.now())?;
        self.sync_conn_pool(p as u16, ctx);
        self.resume_woken(ctx);
        Ok(())
    }

    /// A change to declared governor `g`: applied to it, its per-instance copies and its
    /// shadow copy (typed at build: [`governors::Governors::family`]), in arena order.
    fn set_governor(
        &mut self,
        g: usize,
        param: &str,
        v: ParamValue,
        reload: bool,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        let mut result = Ok(());
        for i in self.govs.family(g) {
            if let Err(e) = self.govs.arena[i].apply_param(param, v.clone(), ctx.now()) {
                result = Err(e);
            } else if reload {
                // A rule reload (validated: a reloadable kind) rebuilds the controllers.
                self.govs.arena[i].reload(ctx.now());
            }
            callsite::drain(i, &mut self.govs.arena, &mut self.govs.woken);
            self.after_governor(i, ctx);
        }
        self.resume_woken(ctx);
        self.update_gate_gauges(ctx);
        result
    }
}

/// A `call_site.*` change in the world's hands: the site's rows name these setters
/// ([`crate::scenario::CallSiteSetters`]).
struct SiteChange<'a> {
    world: &'a mut QueueingWorld,
    site: usize,
}

impl crate::scenario::CallSiteSetters for SiteChange<'_> {
    fn set_enabled(&mut self, on: bool) {
        self.world.sites[self.site].enabled = on;
    }
    fn set_network_request(&mut self, d: sim_core::Dist<SimDuration>) {
        self.world.net_set_leg(self.site, false, d);
    }
    fn set_network_response(&mut self, d: sim_core::Dist<SimDuration>) {
        self.world.net_set_leg(self.site, true, d);
    }
    fn set_busy_max_per_second(&mut self, n: Option<u64>) -> Result<(), String> {
        match &mut self.world.sites[self.site].fallback {
            Some(f) => f.set_busy_cap(n),
            None => Err("the site has no fallback".into()),
        }
    }
}
