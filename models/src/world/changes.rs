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
    /// and changes nothing.
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
        let (kind, name, param) = (spec.kind, spec.instance.clone(), spec.name);
        let name = name.as_str();
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
        let now = ctx.now();
        let v = p.value;
        let r = match kind {
            "station" => self.set_station(name, param, v, ctx),
            "quota" => match self.upstreams.quotas.iter_mut().find(|q| q.0 == name) {
                Some(q) => q.1.apply_param(param, v, now),
                None => Err(format!("no quota \"{name}\"")),
            },
            "source" => self.set_source(name, param, v, ctx),
            "segment" => {
                let classes = self.traffic.classes.len();
                let p = self.traffic.population.as_mut();
                match p.and_then(|p| p.segment_mut(name, classes)) {
                    Some(mut segment) => segment.apply_param(param, v, now),
                    None => Err(format!("no segment \"{name}\"")),
                }
            }
            "connpool" => self.set_connpool(name, param, v, ctx),
            "stall" => self.set_stall(name, param, v, ctx),
            "gpu_server" => match self.upstreams.gpus.iter().position(|g| g.name == name) {
                Some(g) => {
                    // A cross-field rule (batched tokens ≥ sequences) may refuse it: recorded
                    // before the server is kicked.
                    if let Err(e) = self.upstreams.gpus[g].server.apply_param(param, v, now) {
                        self.refuse(&p.path, kind, name, param, old.clone(), e, now);
                    }
                    self.kick_gpu(g as u16, ctx);
                    Ok(())
                }
                None => Err(format!("no GPU server \"{name}\"")),
            },
            "app" | "dispatcher" | "pool" | "dispatcher_queue" | "pool_queue" => {
                self.entry_set(kind, name, param, v, ctx)
            }
            "call_site" => match self.sites.iter().position(|s| s.name == name) {
                Some(site) => {
                    let change = &mut SiteChange { world: self, site };
                    let change: &mut dyn crate::scenario::CallSiteSetters = change;
                    change.apply_param(param, v, now)
                }
                None => Err(format!("no call site \"{name}\"")),
            },
            k if crate::scenario::governor_kind_names().contains(&k) => {
                self.set_governor(k, name, param, v, reload, ctx)
            }
            k => Err(format!("`{k}` parameters are not run-time changeable")),
        };
        if let Err(e) = r {
            self.refuse(&p.path, kind, name, param, old, e, now);
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
        name: &str,
        param: &str,
        v: ParamValue,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        let st = index_of(self.upstreams.stations.iter().map(|s| s.name.as_str()), name, "station")?
            as u16;
        self.upstreams.stations[st as usize].st.apply_param(param, v, ctx.now())?;
        // More servers start queued work (after any other change the station is work
        // conserving, I4: nothing starts), and the gauges follow, the capacity's time
        // average too (setting a gauge to its value changes nothing).
        while let Some((job, _)) = self.upstreams.stations[st as usize].st.start_next() {
            self.start_service(st, job, ctx);
        }
        self.update_station_gauges(st, ctx);
        Ok(())
    }

    fn set_source(
        &mut self,
        name: &str,
        param: &str,
        v: ParamValue,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        let i = index_of(self.traffic.sources.iter().map(|s| s.name.as_str()), name, "source")?;
        let now = ctx.now();
        let mut change = traffic::SourceChange { world: self, source: i as u16, ctx };
        (&mut change as &mut dyn crate::source::SourceSetters).apply_param(param, v, now)
    }

    fn set_connpool(
        &mut self,
        name: &str,
        param: &str,
        v: ParamValue,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        let p = index_of(
            self.upstreams.conns.iter().map(|c| c.name.as_str()),
            name,
            "connection pool",
        )?;
        self.upstreams.conns[p].pool.apply_param(param, v, ctx.now())?;
        self.sync_conn_pool(p as u16, ctx);
        self.resume_woken(ctx);
        Ok(())
    }

    fn set_governor(
        &mut self,
        kind: &str,
        name: &str,
        param: &str,
        v: ParamValue,
        reload: bool,
        ctx: &mut Ctx<'_, Ev>,
    ) -> Result<(), String> {
        // The declared governor and its per-instance copies (`path@app.k`)…
        let path = format!("{kind}.{name}");
        let copy = format!("{path}@");
        // …and the shadow copy of the declaration (`shadow.<kind>.<name>`).
        let shadow = format!("shadow.{path}");
        let all: Vec<usize> = (0..self.govs.names.len())
            .filter(|&i| {
                let n = &self.govs.names[i];
                *n == path || n.starts_with(&copy) || *n == shadow
            })
            .collect();
        if all.is_empty() {
            return Err(format!("no governor `{path}`"));
        }
        let mut result = Ok(());
        for i in all {
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

/// The index of the component named `name` (validated paths always find it).
fn index_of<'a>(
    mut names: impl Iterator<Item = &'a str>,
    name: &str,
    what: &str,
) -> Result<usize, String> {
    names.position(|n| n == name).ok_or_else(|| format!("no {what} \"{name}\""))
}
