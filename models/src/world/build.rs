//! Wiring the world from a checked scenario.

use super::*;

impl QueueingWorld {
    /// Wires the world; the scenario must have passed `check()` and `check_timeline()`.
    pub fn build(sc: &Scenario, run: RunSettings, ctx: &mut Ctx<'_, Ev>) -> Self {
        let find_site =
            |n: &str| sc.call_sites.iter().position(|c| c.name == n).expect("checked") as u16;
        // The governor arena, in `declared_governors` order.
        let mut govs = sc.build_governors();
        let declared = sc.declared_governors();
        let mut gov_names: Vec<String> = declared.iter().map(|d| d.path.clone()).collect();
        // Shadow copies after the declared governors (arena indices of these unchanged).
        let shadow_bases = sc.build_shadows(&mut govs, &mut gov_names);
        let gates: Vec<GateRt> = sc
            .gates
            .iter()
            .map(|g| GateRt {
                gov: gov_names
                    .iter()
                    .position(|p| *p == format!("gate.{}", g.name))
                    .expect("declared"),
                name: g.name.clone(),
                in_use: ctx.metrics.gauge(&format!("gate.{}.in_use", g.name)),
                waiting: ctx.metrics.gauge(&format!("gate.{}.waiting", g.name)),
            })
            .collect();
        // Per-instance copies: appended to the arena, one per app instance (flat key order).
        let mut instance_names = Vec::new();
        let mut instance_keys = Vec::new();
        for (ai, a) in sc.apps.iter().enumerate() {
            for i in 0..a.instances {
                instance_names.push(format!("{}.{i}", a.name));
                instance_keys.push((ai as u16, i as u16));
            }
        }
        let mut copies: Vec<Option<Vec<usize>>> = vec![None; govs.len()];
        let mut copy_of: Vec<Option<governors::InstanceCopy>> = vec![None; govs.len()];
        let mut shadow_of: Vec<Option<usize>> = vec![None; declared.len()];
        shadow_of.extend(shadow_bases.into_iter().map(Some));
        for p in &sc.per_instance {
            let b = gov_names.iter().position(|n| n == p).expect("checked");
            let mut v = Vec::new();
            for (inst, &(app, k)) in instance_names.iter().zip(&instance_keys) {
                v.push(govs.len());
                govs.push(govs[b].clone());
                gov_names.push(format!("{p}@{inst}"));
                copy_of.push(Some(governors::InstanceCopy { base: b, app, inst: k }));
                shadow_of.push(None);
            }
            copies[b] = Some(v);
            // A cluster rule's token server: one client per instance.
            govs[b].on_per_instance(instance_names.len());
        }
        let mut gates = gates;
        for g in &sc.gates {
            let base = format!("gate.{}", g.name);
            let b = gov_names.iter().position(|n| *n == base).expect("declared");
            for (k, &c) in copies[b].iter().flatten().enumerate() {
                let name = format!("{}@{}", g.name, instance_names[k]);
                gates.push(GateRt {
                    gov: c,
                    in_use: ctx.metrics.gauge(&format!("gate.{name}.in_use")),
                    waiting: ctx.metrics.gauge(&format!("gate.{name}.waiting")),
                    name,
                });
            }
        }
        // Gauges a governor kind declares (`GovernorKindOps::gauges`), for every copy.
        let gov_gauges: Vec<(usize, Vec<GaugeId>)> = govs
            .iter()
            .enumerate()
            .filter_map(|(i, g)| {
                let names = g.gauges();
                (!names.is_empty()).then(|| {
                    let ids = names
                        .iter()
                        .map(|(n, _)| ctx.metrics.gauge(&format!("{}.{n}", gov_names[i])))
                        .collect();
                    (i, ids)
                })
            })
            .collect();
        let stacks_of = |stack: &[usize]| -> Vec<Vec<usize>> {
            if !stack.iter().any(|&g| copies[g].is_some()) {
                return Vec::new();
            }
            let mut out = vec![stack.to_vec()];
            for k in 0..instance_names.len() {
                out.push(stack.iter().map(|&g| copies[g].as_ref().map_or(g, |c| c[k])).collect());
            }
            out
        };
        let gov_index = |r: &GovernorRef| {
            let path = r.path();
            gov_names.iter().position(|p| *p == path).expect("checked")
        };
        let sites = sc
            .call_sites
            .iter()
            .map(|c| SiteRt {
                stack: c.governors.iter().map(gov_index).collect(),
                stacks: stacks_of(&c.governors.iter().map(gov_index).collect::<Vec<_>>()),
                upstream: upstream_of(sc, &c.upstream),
                split: c.split.iter().map(|(n, w)| (upstream_of(sc, n), *w)).collect(),
                backup: c.backup.as_ref().map(|n| upstream_of(sc, n)),
                failovers: 0,
                read_timeout: c.stream_read_timeout,
                class_timeout: if c.class_timeouts.is_empty() {
                    Vec::new()
                } else {
                    sc.classes
                        .iter()
                        .map(|k| c.class_timeouts.iter().find(|(n, _)| *n == k.name).map(|t| t.1))
                        .collect()
                },
                fallback: c
                    .fallback
                    .as_ref()
                    .map(|f| fallback::SiteFallback::new(sc, f, &gov_names)),
                enabled: c.enabled,
                name: c.name.clone(),
                timeout: c.timeout,
                conn_pool: c.connection_pool.as_ref().map(|n| {
                    sc.connection_pools.iter().position(|p| &p.name == n).expect("checked") as u16
                }),
            })
            .collect();
        let stations: Vec<StationRt> =
            sc.stations.iter().map(|s| StationRt::new(sc, s, ctx)).collect();
        // Declared pipelines, then one direct pipeline per call site a source targets.
        let mut pipelines: Vec<PipelineRt> = sc
            .pipelines
            .iter()
            .map(|p| {
                let p = p.compile();
                let sites =
                    p.stages.iter().map(|st| st.iter().map(|s| find_site(&s.call)).collect());
                PipelineRt { sites: sites.collect(), p, direct: false }
            })
            .collect();
        let mut pipeline_of = |target: &str| -> u16 {
            if let Some(i) = pipelines.iter().position(|p| !p.direct && p.p.name == target) {
                return i as u16;
            }
            if let Some(i) = pipelines.iter().position(|p| p.direct && p.p.name == target) {
                return i as u16;
            }
            pipelines.push(PipelineRt {
                p: Pipeline::single(target),
                sites: vec![vec![find_site(target)]],
                direct: true,
            });
            (pipelines.len() - 1) as u16
        };
        let sources: Vec<SourceRt> = sc
            .sources
            .iter()
            .map(|s| SourceRt {
                class: s
                    .class
                    .as_ref()
                    .map(|c| sc.classes.iter().position(|k| &k.name == c).expect("checked") as u16)
                    .unwrap_or(0),
                name: s.name.clone(),
                key: name_id(&s.name),
                draw: SourceKey::new(run.seed, name_id(&s.name)),
                stream: Stream::new(run.seed, &format!("arrivals/{}", s.name)),
                interarrival: s.interarrival.clone(),
                // A scripted source replays its rows like a trace (`crate::scripted`).
                trace: s.trace.clone().or_else(|| s.script.as_ref().map(|c| c.as_trace())),
                start: SimTime::ZERO + s.start,
                profile: s.profile.as_ref().map(|p| {
                    crate::source::resolve_profile(p, s.interarrival.as_ref())
                        .expect("checked by ScenarioSpec::check")
                }),
                limit: match &s.script {
                    Some(c) => Some(s.limit.unwrap_or(u64::MAX).min(c.0.len() as u64)),
                    None => s.limit,
                },
                issued: 0,
                pipeline: pipeline_of(&s.target),
                stats: SourceStats::default(),
                upstream_calls: 0,
                arrivals: ctx.metrics.counter(&format!("source.{}.arrivals", s.name)),
                latency: ctx.metrics.histogram(&format!("source.{}.latency", s.name)),
                traffic: traffic::TrafficRt::new(s, &sc.classes),
                app: None,
                budget: crate::timeouts::effective_budget(
                    s.budget,
                    sc.pipelines.iter().find(|p| p.name == s.target).and_then(|p| p.budget),
                ),
            })
            .collect();
        for (i, s) in sc.sources.iter().enumerate() {
            if s.closed_loop.is_none() {
                let first = s.script.as_ref().map_or(SimDuration::ZERO, |c| c.first_at());
                ctx.schedule_at(
                    SimTime::ZERO + s.start + first,
                    Ev::Arrival { source: i as u16, rate_gen: 0 },
                );
            }
        }
        if run.warmup > SimDuration::ZERO {
            ctx.schedule_at(SimTime::ZERO + run.warmup, Ev::WarmupEnd);
        }
        // The entry path: nothing is registered or scheduled for a scenario without apps.
        let (apps, app_of, dispatch_wait) = Self::entry_build(sc, ctx);
        let mut sources = sources;
        for (s, a) in sources.iter_mut().zip(app_of) {
            s.app = a;
        }
        let series = series::SeriesIds::new(sc, &gov_names, &govs, ctx);
        let n_govs = govs.len();
        let registry = sc.registry();
        // A governor parameter's owner is the declared governor's arena index (both are
        // numbered in declaration order): what run-time changes dispatch on.
        debug_assert!(registry.iter().all(|p| match p.owner {
            crate::components::Owner::Governor(g) => {
                gov_names[g] == format!("{}.{}", p.kind, p.instance)
            }
            crate::components::Owner::Component(_) => true,
        }));
        let mirror_of: Vec<Option<u16>> = (0..sc.classes.len() as u16)
            .map(|k| Self::mirrored_source(&sources, sc.users.is_some(), k))
            .collect();
        let mut w = QueueingWorld {
            warmup: SimTime::ZERO + run.warmup,
            traffic: traffic::Traffic {
                sources,
                classes: sc
                    .classes
                    .iter()
                    .zip(mirror_of)
                    .map(|(c, mirror_of)| ClassRt {
                        name: c.name.clone(),
                        weight: c.weight,
                        sla: c.sla,
                        stats: SourceStats::default(),
                        mirror_of,
                        within_sla: 0,
                    })
                    .collect(),
                population: sc.users.as_ref().map(|u| {
                    let classes: Vec<&str> = sc.classes.iter().map(|c| c.name.as_str()).collect();
                    crate::users::Population::new(u, &classes, run.seed)
                }),
            },
            pipelines,
            sites,
            govs: governors::Governors::new(govs, gov_names, copy_of, shadow_of, gates, gov_gauges),
            params_now: registry.iter().map(|p| (p.path.clone(), p.value.clone())).collect(),
            registry,
            recovery: sc.recovery.clone(),
            // Field order is registration order: pools' metrics, then GPU servers' (GPU
            // pools' replicas join `gpus` after the world is built: `build_pools`).
            upstreams: upstreams::Upstreams {
                stations,
                conns: sc.connection_pools.iter().map(|s| conn::ConnPoolRt::new(s, ctx)).collect(),
                gpus: sc.gpu_servers.iter().map(|s| gpu::GpuRt::new(s, ctx)).collect(),
                quotas: sc
                    .quotas
                    .iter()
                    .map(|q| (q.name.clone(), crate::quota::Quota::new(q)))
                    .collect(),
                pools: Vec::new(),
            },
            reqs: Default::default(),
            calls: Default::default(),
            entry_path: entry::EntryPath { apps, dispatch_wait },
            timeouts: timeouts::TimeoutsRt::new(sc),
            net: network::NetRt::new(sc),
            obs: observation::Observation {
                events: Vec::new(),
                records: run.record_requests.then(Vec::new),
                series,
                class_latency: sc
                    .classes
                    .iter()
                    .map(|c| ctx.metrics.histogram(&format!("class.{}.latency", c.name)))
                    .collect(),
                class_outcomes: sc
                    .classes
                    .iter()
                    .map(|c| observation::ClassOutcomes::new(&c.name, ctx.metrics))
                    .collect(),
            },
            // Registers nothing without stalls.
            stalls: stalls::StallsRt::new(sc, run.seed, ctx),
            hedging: hedging::HedgingRt::default(),
            // Empty without autoscalers: nothing scheduled, drawn or registered.
            scalers: autoscalers::ScalersRt::new(sc, run.seed, ctx),
        };
        w.build_pools(sc, ctx);
        w.fallback_start();
        w.entry_start_all(ctx);
        w.start_clients(ctx);
        let pauses: Vec<SimDuration> = sc.stalls.iter().map(|s| s.pause).collect();
        w.stalls_start(&pauses, ctx);
        w.scalers_start(ctx);
        for g in 0..n_govs {
            w.sync_wake(g, ctx);
        }
        w
    }
}

/// The station or GPU server a name stands for (checked to exist).
fn upstream_of(sc: &Scenario, name: &str) -> Upstream {
    match sc.stations.iter().position(|s| s.name == name) {
        Some(i) => Upstream::Station(i as u16),
        None => match sc.gpu_servers.iter().position(|s| s.name == name) {
            Some(g) => Upstream::Gpu(g as u16),
            None => Upstream::Pool(
                sc.gpu_pools.iter().position(|s| s.name == name).expect("checked") as u16,
            ),
        },
    }
}
