//! The scenario check, split by concern: names, governors, pipelines, upstreams, call
//! sites, sources, ranges, apps. [`ScenarioSpec::check`] runs them in a fixed order and
//! reports the first error with the field path of the culprit.

use super::{ScenarioSpec, SpecError, ranges, unique};
use std::collections::BTreeSet;

impl<V> ScenarioSpec<V> {
    /// Cross-reference and consistency checks, by concern, in a fixed order (the first
    /// error found is reported). Range checks of the values also ran during
    /// deserialization; they are repeated here against the registry for values a sweep or
    /// variant set.
    pub fn check(&self) -> Result<(), SpecError> {
        self.check_top_level()?;
        self.check_governor_names()?;
        self.check_governor_rules()?;
        self.check_per_instance()?;
        self.check_pipelines()?;
        self.check_upstream_names()?;
        self.check_site_pools()?;
        self.check_fallbacks()?;
        self.check_class_timeouts()?;
        self.check_gpu_servers()?;
        self.check_gpu_pools()?;
        self.check_stations()?;
        self.check_source_shapes()?;
        self.check_ranges()?;
        self.check_source_refs()?;
        self.check_traffic()?;
        self.check_site_refs()?;
        self.check_network()?;
        super::reach::check_gpu_tokens(self)?;
        self.check_apps()?;
        self.check_stalls()?;
        self.check_autoscalers()
    }

    /// Autoscalers: unique names, values in range, an existing station each (one
    /// autoscaler per station), policies and bounds that make sense
    /// ([`crate::autoscaler::AutoscalerSpec::check`]).
    fn check_autoscalers(&self) -> Result<(), SpecError> {
        unique("autoscalers", self.autoscalers.iter().map(|a| a.name.as_str()))?;
        ranges("autoscalers", &self.autoscalers)?;
        let mut seen = BTreeSet::new();
        for (i, a) in self.autoscalers.iter().enumerate() {
            let err = |(f, message): (&str, String)| SpecError {
                path: format!("autoscalers[{i}].{f}"),
                message,
            };
            a.check(&self.stations).map_err(err)?;
            if !seen.insert(&a.station) {
                let m =
                    format!("station {:?} already has an autoscaler (one per station)", a.station);
                return Err(err(("station", m)));
            }
        }
        Ok(())
    }

    /// Stalls: unique names, values in range, a host that exists, one stall per host, at
    /// most [`crate::stall::MAX_HOSTS`] hosts in all.
    fn check_stalls(&self) -> Result<(), SpecError> {
        use crate::stall::StallHost;
        unique("stalls", self.stalls.iter().map(|s| s.name.as_str()))?;
        ranges("stalls", &self.stalls)?;
        let mut seen = BTreeSet::new();
        let mut hosts = 0u64;
        for (i, s) in self.stalls.iter().enumerate() {
            let err = |message: String| SpecError { path: format!("stalls[{i}].host"), message };
            let (n, what, name, names): (u64, &str, &str, Vec<&str>) = match &s.host {
                StallHost::App(a) => (
                    self.apps.iter().find(|x| &x.name == a).map_or(0, |x| x.instances),
                    "app",
                    a,
                    self.apps.iter().map(|x| x.name.as_str()).collect(),
                ),
                StallHost::CallSite(c) => (
                    self.call_sites.iter().any(|x| &x.name == c) as u64,
                    "call site",
                    c,
                    self.call_sites.iter().map(|x| x.name.as_str()).collect(),
                ),
            };
            if n == 0 {
                return Err(err(format!(
                    "no {what} named \"{name}\"; {what}s: [{}]",
                    names.join(", ")
                )));
            }
            if !seen.insert(&s.host) {
                return Err(err(format!("{:?} already has a stall (one stall per host)", s.host)));
            }
            hosts += n;
            if hosts > crate::stall::MAX_HOSTS {
                return Err(err(format!(
                    "expected at most {} stalled hosts in all (app instances and call sites)",
                    crate::stall::MAX_HOSTS
                )));
            }
        }
        Ok(())
    }

    /// The scenario has sources and 1–64 classes; class and source names are unique; a
    /// recovery window is consistent.
    fn check_top_level(&self) -> Result<(), SpecError> {
        if !self.import.is_empty() {
            return Err(SpecError {
                path: "import".into(),
                message: "imports are resolved when a scenario file is loaded (experiments' \
                          loader, the CLI, the workbench); a scenario built from text in code \
                          must list the imported components itself (`stormglass import`)"
                    .into(),
            });
        }
        if self.sources.is_empty() {
            return Err(SpecError {
                path: "sources".into(),
                message: "expected at least one source".into(),
            });
        }
        if self.classes.is_empty() || self.classes.len() > 64 {
            return Err(SpecError {
                path: "classes".into(),
                message: format!("expected 1 to 64 classes, found {}", self.classes.len()),
            });
        }
        unique("classes", self.classes.iter().map(|s| s.name.as_str()))?;
        unique("sources", self.sources.iter().map(|s| s.name.as_str()))?;
        if let Some(r) = &self.recovery {
            r.check().map_err(|(field, message)| SpecError {
                path: format!("recovery.{field}"),
                message,
            })?;
        }
        Ok(())
    }

    /// Kind-specific rules of declared governors (cluster windows, degrade grades, retry classes).
    fn check_governor_rules(&self) -> Result<(), SpecError> {
        for (i, c) in self.cluster_flow_rules.iter().enumerate() {
            c.check().map_err(|message| SpecError {
                path: format!("cluster_flow_rules[{i}].window_interval_ms"),
                message,
            })?;
        }
        for (i, d) in self.degrade_rules.iter().enumerate() {
            d.check()
                .map_err(|message| SpecError { path: format!("degrade_rules[{i}]"), message })?;
        }
        let class_names: Vec<&str> = self.classes.iter().map(|c| c.name.as_str()).collect();
        for (i, r) in self.retries.iter().enumerate() {
            r.check_classes(&class_names).map_err(|m| match m.split_once(": ") {
                Some((rel, message)) => {
                    SpecError { path: format!("retries[{i}].{rel}"), message: message.into() }
                }
                None => SpecError { path: format!("retries[{i}].class_policies"), message: m },
            })?;
        }
        for (i, p) in self.partitioned_limits.iter().enumerate() {
            p.check(&class_names).map_err(|(rel, message)| SpecError {
                path: format!("partitioned_limits[{i}].{rel}"),
                message,
            })?;
        }
        for (i, f) in self.flow_controllers.iter().enumerate() {
            f.check(&class_names).map_err(|(rel, message)| SpecError {
                path: format!("flow_controllers[{i}].{rel}"),
                message,
            })?;
        }
        Ok(())
    }

    /// Call-site names are unique; `per_instance` names declared governors and needs apps.
    fn check_per_instance(&self) -> Result<(), SpecError> {
        unique("call_sites", self.call_sites.iter().map(|s| s.name.as_str()))?;
        let declared = self.declared_governors();
        for (i, p) in self.per_instance.iter().enumerate() {
            if !declared.iter().any(|d| &d.path == p) {
                return Err(SpecError {
                    path: format!("per_instance[{i}]"),
                    message: format!(
                        "no governor \"{p}\"; governors: [{}]",
                        declared.iter().map(|d| d.path.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
            if self.apps.is_empty() {
                return Err(SpecError {
                    path: format!("per_instance[{i}]"),
                    message: "per-instance copies need app instances (`apps`)".into(),
                });
            }
        }
        Ok(())
    }

    /// Pipeline names are unique and distinct from call sites; every step names a call site.
    fn check_pipelines(&self) -> Result<(), SpecError> {
        unique("pipelines", self.pipelines.iter().map(|s| s.name.as_str()))?;
        for (i, p) in self.pipelines.iter().enumerate() {
            if self.call_sites.iter().any(|c| c.name == p.name) {
                return Err(SpecError {
                    path: format!("pipelines[{i}].name"),
                    message: format!(
                        "\"{}\" names a call site too (a source's target must be unambiguous)",
                        p.name
                    ),
                });
            }
            for (j, stage) in p.stages.iter().enumerate() {
                for (k, step) in stage.steps().iter().enumerate() {
                    if !self.call_sites.iter().any(|c| c.name == step.call) {
                        let at = match stage {
                            crate::pipeline::Stage::Step { .. } => format!("stages[{j}]"),
                            crate::pipeline::Stage::Parallel(_) => format!("stages[{j}][{k}]"),
                        };
                        return Err(SpecError {
                            path: format!("pipelines[{i}].{at}.call"),
                            message: format!(
                                "no call site named \"{}\"; call sites: [{}]",
                                step.call,
                                self.call_sites
                                    .iter()
                                    .map(|c| c.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Station, quota, GPU-server and connection-pool names are unique.
    fn check_upstream_names(&self) -> Result<(), SpecError> {
        unique("stations", self.stations.iter().map(|s| s.name.as_str()))?;
        unique("quotas", self.quotas.iter().map(|s| s.name.as_str()))?;
        unique("gpu_servers", self.gpu_servers.iter().map(|s| s.name.as_str()))?;
        unique("connection_pools", self.connection_pools.iter().map(|s| s.name.as_str()))?;
        Ok(())
    }

    /// Every call site's connection pool exists.
    fn check_site_pools(&self) -> Result<(), SpecError> {
        for (i, c) in self.call_sites.iter().enumerate() {
            if let Some(p) = &c.connection_pool
                && !self.connection_pools.iter().any(|x| &x.name == p)
            {
                return Err(SpecError {
                    path: format!("call_sites[{i}].connection_pool"),
                    message: format!(
                        "no connection pool named \"{p}\"; connection_pools: [{}]",
                        self.connection_pools
                            .iter()
                            .map(|x| x.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// A call site's class timeouts name known classes, each once.
    fn check_class_timeouts(&self) -> Result<(), SpecError> {
        for (i, c) in self.call_sites.iter().enumerate() {
            for (j, (class, _)) in c.class_timeouts.iter().enumerate() {
                let path = format!("call_sites[{i}].class_timeouts[{j}]");
                if !self.classes.iter().any(|k| &k.name == class) {
                    return Err(SpecError {
                        path,
                        message: format!(
                            "no class named \"{class}\"; classes: [{}]",
                            self.classes
                                .iter()
                                .map(|k| k.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    });
                }
                if c.class_timeouts[..j].iter().any(|(k, _)| k == class) {
                    return Err(SpecError {
                        path,
                        message: format!("class \"{class}\" listed twice"),
                    });
                }
            }
        }
        Ok(())
    }

    /// GPU servers: names distinct from stations, their own consistency rules.
    fn check_gpu_servers(&self) -> Result<(), SpecError> {
        for (i, g) in self.gpu_servers.iter().enumerate() {
            if self.stations.iter().any(|s| s.name == g.name) {
                return Err(SpecError {
                    path: format!("gpu_servers[{i}].name"),
                    message: format!(
                        "\"{}\" names a station too (a call site's upstream must be unambiguous)",
                        g.name
                    ),
                });
            }
            g.check()
                .map_err(|message| SpecError { path: format!("gpu_servers[{i}]"), message })?;
        }
        Ok(())
    }

    /// GPU pools: unique names distinct from stations' and GPU servers', values in range,
    /// the template's and the router's rules ([`crate::gpu::GpuPoolSpec::check`]).
    fn check_gpu_pools(&self) -> Result<(), SpecError> {
        unique("gpu_pools", self.gpu_pools.iter().map(|p| p.name.as_str()))?;
        ranges("gpu_pools", &self.gpu_pools)?;
        for (i, p) in self.gpu_pools.iter().enumerate() {
            let taken = self.stations.iter().any(|s| s.name == p.name)
                || self.gpu_servers.iter().any(|g| g.name == p.name);
            if taken {
                return Err(SpecError {
                    path: format!("gpu_pools[{i}].name"),
                    message: format!(
                        "\"{}\" names a station or GPU server too (a call site's upstream must be \
                         unambiguous)",
                        p.name
                    ),
                });
            }
            p.check().map_err(|message| SpecError { path: format!("gpu_pools[{i}]"), message })?;
        }
        Ok(())
    }

    /// Stations: quotas exist; stream settings only on streaming stations.
    fn check_stations(&self) -> Result<(), SpecError> {
        for (i, s) in self.stations.iter().enumerate() {
            if let Some(q) = &s.quota
                && !self.quotas.iter().any(|x| &x.name == q)
            {
                return Err(SpecError {
                    path: format!("stations[{i}].quota"),
                    message: format!(
                        "no quota named \"{q}\"; quotas: [{}]",
                        self.quotas.iter().map(|x| x.name.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
            if !s.streaming && (s.stall_rate > 0.0 || s.chunk_tokens != 1) {
                return Err(SpecError {
                    path: format!("stations[{i}].stall_rate"),
                    message: "stream settings (stall_rate, chunk_tokens) need `streaming: true`"
                        .into(),
                });
            }
        }
        Ok(())
    }

    /// Each source is exactly one of renewal, trace, closed loop or script, with the fields its shape allows.
    fn check_source_shapes(&self) -> Result<(), SpecError> {
        for (i, s) in self.sources.iter().enumerate() {
            let at =
                |f: &str, message: String| SpecError { path: format!("sources[{i}].{f}"), message };
            if s.rate_multiplier != 1.0 && s.interarrival.is_none() {
                return Err(at(
                    "rate_multiplier",
                    "only a renewal source (`interarrival`) has a rate multiplier; a trace has `rate_scale`, closed-loop users pace themselves".into(),
                ));
            }
            if let Some(script) = &s.script {
                if s.interarrival.is_some()
                    || s.trace.is_some()
                    || s.closed_loop.is_some()
                    || s.profile.is_some()
                    || s.assign.is_some()
                {
                    return Err(at(
                        "script",
                        "a scripted source has no `interarrival`, `trace`, `closed_loop`, `profile` or `assign` (its rows give times, classes, users and keys)".into(),
                    ));
                }
                script
                    .check_classes(&self.classes)
                    .map_err(|(f, m)| at(&format!("script{f}"), m))?;
                continue;
            }
            if let Some(cl) = &s.closed_loop {
                if s.interarrival.is_some() || s.trace.is_some() || s.profile.is_some() {
                    return Err(at(
                        "closed_loop",
                        "a closed-loop source has no `interarrival`, `trace` or `profile` (its users pace themselves)".into(),
                    ));
                }
                cl.check().map_err(|(f, m)| at(&format!("closed_loop.{f}"), m))?;
                continue;
            }
            match (&s.interarrival, &s.trace) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(at(
                        "interarrival",
                        "expected exactly one of `interarrival: <distribution>` and `trace: Trace(...)`".into(),
                    ));
                }
                (None, Some(t)) => {
                    t.check().map_err(|m| at("trace", m))?;
                    if s.profile.is_some() {
                        return Err(at("profile", "a trace source replays its own times: use the trace's `rate_scale` instead of a profile".into()));
                    }
                }
                (Some(_), None) => {}
            }
            let peak = crate::source::peak_multiplier(s);
            crate::source::check_rate(s.interarrival.as_ref(), s.limit, peak)
                .map_err(|message| at("interarrival", message))?;
            if let Some(p) = s.profile.as_ref().filter(|p| p.in_rates()) {
                crate::source::resolve_profile(p, s.interarrival.as_ref())
                    .map_err(|message| at("profile", message))?;
            }
        }
        Ok(())
    }

    /// Every value against its registry type and range, with the field path.
    fn check_ranges(&self) -> Result<(), SpecError> {
        ranges("classes", &self.classes)?;
        ranges("sources", &self.sources)?;
        self.check_governor_ranges()?;
        ranges("stations", &self.stations)?;
        ranges("quotas", &self.quotas)?;
        ranges("gpu_servers", &self.gpu_servers)?;
        ranges("connection_pools", &self.connection_pools)?;
        Ok(())
    }

    /// Sources target a pipeline or call site and name known classes.
    fn check_source_refs(&self) -> Result<(), SpecError> {
        let names = |v: Vec<&str>| v.join(", ");
        for (i, s) in self.sources.iter().enumerate() {
            if !self.call_sites.iter().any(|c| c.name == s.target)
                && !self.pipelines.iter().any(|p| p.name == s.target)
            {
                let mut all: Vec<&str> = self.pipelines.iter().map(|p| p.name.as_str()).collect();
                all.extend(self.call_sites.iter().map(|c| c.name.as_str()));
                return Err(SpecError {
                    path: format!("sources[{i}].target"),
                    message: format!(
                        "no pipeline or call site named \"{}\"; pipelines and call sites: [{}]",
                        s.target,
                        names(all)
                    ),
                });
            }
        }
        for (i, s) in self.sources.iter().enumerate() {
            if let Some(c) = &s.class
                && !self.classes.iter().any(|k| &k.name == c)
            {
                return Err(SpecError {
                    path: format!("sources[{i}].class"),
                    message: format!(
                        "no class named \"{c}\"; classes: [{}]",
                        self.classes.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// Call sites: upstreams, split and backup exist; every governor is declared, shadowable, once per stack.
    fn check_site_refs(&self) -> Result<(), SpecError> {
        let names = |v: Vec<&str>| v.join(", ");
        for (i, c) in self.call_sites.iter().enumerate() {
            if !self.stations.iter().any(|s| s.name == c.upstream)
                && !self.gpu_servers.iter().any(|s| s.name == c.upstream)
                && !self.gpu_pools.iter().any(|s| s.name == c.upstream)
            {
                let mut all: Vec<&str> = self.stations.iter().map(|s| s.name.as_str()).collect();
                all.extend(self.gpu_servers.iter().map(|s| s.name.as_str()));
                all.extend(self.gpu_pools.iter().map(|s| s.name.as_str()));
                let what = match (self.gpu_servers.is_empty(), self.gpu_pools.is_empty()) {
                    (true, true) => "station",
                    (false, true) => "station or GPU server",
                    _ => "station, GPU server or GPU pool",
                };
                return Err(SpecError {
                    path: format!("call_sites[{i}].upstream"),
                    message: format!(
                        "no {what} named \"{}\"; {what}s: [{}]",
                        c.upstream,
                        names(all)
                    ),
                });
            }
            let known = |n: &str| {
                self.stations.iter().any(|s| s.name == n)
                    || self.gpu_servers.iter().any(|s| s.name == n)
                    || self.gpu_pools.iter().any(|s| s.name == n)
            };
            for (j, (n, w)) in c.split.iter().enumerate() {
                if !known(n) || *w == 0 {
                    return Err(SpecError {
                        path: format!("call_sites[{i}].split[{j}]"),
                        message: format!(
                            "expected (an upstream's name, a weight ≥ 1), found (\"{n}\", {w})"
                        ),
                    });
                }
            }
            if let Some(b) = &c.backup
                && !known(b)
            {
                return Err(SpecError {
                    path: format!("call_sites[{i}].backup"),
                    message: format!("no station or GPU server named \"{b}\""),
                });
            }
            let mut seen = BTreeSet::new();
            let declared = self.declared_governors();
            for (j, g) in c.governors.iter().enumerate() {
                if let Some(message) = super::govref::check_shadowable(g) {
                    return Err(SpecError {
                        path: format!("call_sites[{i}].governors[{j}]"),
                        message,
                    });
                }
                let path = g.path();
                if !declared.iter().any(|d| d.path == g.declared().path()) {
                    let same: Vec<&str> = declared
                        .iter()
                        .filter(|d| d.list == g.list())
                        .map(|d| d.name.as_str())
                        .collect();
                    return Err(SpecError {
                        path: format!("call_sites[{i}].governors[{j}]"),
                        message: format!(
                            "no {} named \"{}\"; {}: [{}]",
                            g.kind(),
                            g.name(),
                            g.list(),
                            names(same)
                        ),
                    });
                }
                if !seen.insert(path) {
                    return Err(SpecError {
                        path: format!("call_sites[{i}].governors[{j}]"),
                        message: format!(
                            "{} \"{}\" appears twice in one stack",
                            g.kind(),
                            g.name()
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}
