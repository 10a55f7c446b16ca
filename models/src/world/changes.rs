//! Run-time parameter changes applied to the running world (timeline, GUI).

use super::*;

impl QueueingWorld {
    /// Applies a run-time parameter change (already checked against the registry).
    pub(super) fn set(&mut self, p: SetParam<ParamValue>, ctx: &mut Ctx<'_, Ev>) {
        let (kind, name, param) = split_path(&p.path).expect("checked path");
        let old = self.params_now.insert(p.path.clone(), p.value.clone());
        let from = old.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "?".into());
        let reload = p.reload;
        self.events.push(ModelEvent {
            time: ctx.now(),
            component: format!("{kind}.{name}"),
            kind: if reload { "rule_reload" } else { "config_change" },
            from: format!("{param} = {from}"),
            to: format!("{param} = {}", p.value),
        });
        match (kind, param, p.value) {
            ("station", "servers", ParamValue::Count(n)) => {
                let st = self.stations.iter().position(|s| s.name == name).expect("checked") as u16;
                self.stations[st as usize].st.servers = n;
                self.stations[st as usize].servers.set(ctx.now(), n as i64);
                while let Some((job, _)) = self.stations[st as usize].st.start_next() {
                    self.start_service(st, job, ctx);
                }
                self.update_station_gauges(st, ctx);
            }
            ("station", "service", ParamValue::DurationDist(d)) => {
                self.stations.iter_mut().find(|s| s.name == name).expect("checked").st.service = d;
            }
            ("station", "cancellation", ParamValue::Bool(b)) => {
                self.stations
                    .iter_mut()
                    .find(|s| s.name == name)
                    .expect("checked")
                    .st
                    .cancellation = b;
            }
            ("station", "error_rate", ParamValue::Float(x)) => {
                self.stations.iter_mut().find(|s| s.name == name).expect("checked").st.error_rate =
                    x;
            }
            ("station", "latency_multiplier", ParamValue::Float(x)) => {
                let st =
                    &mut self.stations.iter_mut().find(|s| s.name == name).expect("checked").st;
                st.latency_multiplier = x;
            }
            ("station", "load_slope", ParamValue::Duration(d)) => {
                self.stations.iter_mut().find(|s| s.name == name).expect("checked").st.load_slope =
                    d;
            }
            ("station", "per_output_token", ParamValue::Duration(d)) => {
                let st =
                    &mut self.stations.iter_mut().find(|s| s.name == name).expect("checked").st;
                st.per_output_token = d;
            }
            ("station", "per_prompt_token", ParamValue::Duration(d)) => {
                let st =
                    &mut self.stations.iter_mut().find(|s| s.name == name).expect("checked").st;
                st.per_prompt_token = d;
            }
            ("station", "business_error_rate", ParamValue::Float(x)) => {
                let st =
                    &mut self.stations.iter_mut().find(|s| s.name == name).expect("checked").st;
                st.business_error_rate = x;
            }
            (
                "station",
                p @ ("chunk_tokens" | "stall_rate" | "stall_duration" | "stall_after"),
                v,
            ) => {
                let st =
                    &mut self.stations.iter_mut().find(|s| s.name == name).expect("checked").st;
                st.stream.set(p, v).expect("a stream setting");
            }
            ("quota", param, v) => {
                let now = ctx.now();
                let q = &mut self.quotas.iter_mut().find(|q| q.0 == name).expect("checked").1;
                match (param, v) {
                    ("rpm", ParamValue::OptCount(n)) => q.set_rpm(n, now),
                    ("tpm", ParamValue::OptCount(n)) => q.set_tpm(n, now),
                    ("max_concurrency", ParamValue::OptCount(n)) => q.set_max_concurrency(n),
                    ("refund_unused", ParamValue::Bool(b)) => q.set_refund_unused(b),
                    (p, v) => unreachable!("quota.{p} = {v:?} is not run-time changeable"),
                }
            }
            ("source", "interarrival", ParamValue::DurationDist(d)) => {
                self.sources.iter_mut().find(|s| s.name == name).expect("checked").interarrival =
                    Some(d);
            }
            ("source", "rate_multiplier", ParamValue::Float(x)) => {
                let i = self.sources.iter().position(|s| s.name == name).expect("checked");
                self.set_rate(i as u16, x, ctx);
            }
            ("source", "users", ParamValue::Count(n)) => {
                let i = self.sources.iter().position(|s| s.name == name).expect("checked");
                self.set_clients(i as u16, n, ctx);
            }
            ("source", "think_time", ParamValue::DurationDist(d)) => {
                let s = self.sources.iter_mut().find(|s| s.name == name).expect("checked");
                s.traffic.closed.as_mut().expect("a closed-loop source").think_time = d;
            }
            ("segment", "class", ParamValue::OptCount(k)) => {
                let p = self.population.as_mut().expect("checked: a population");
                let i = p.names.iter().position(|s| s == name).expect("checked");
                assert!(k.is_none_or(|k| (k as usize) < self.classes.len()), "checked class index");
                p.class[i] = k.map(|k| k as u16);
            }
            (kind, param, v)
                if self.gov_names.iter().any(|g| g.starts_with(&format!("{kind}."))) =>
            {
                // The declared governor and its per-instance copies (`path@app.k`).
                let path = format!("{kind}.{name}");
                // …and the shadow copy of the declaration (`shadow.<kind>.<name>`).
                let copy = format!("{path}@");
                let shadow = format!("shadow.{path}");
                let all: Vec<usize> = (0..self.gov_names.len())
                    .filter(|&i| {
                        let n = &self.gov_names[i];
                        *n == path || n.starts_with(&copy) || *n == shadow
                    })
                    .collect();
                assert!(!all.is_empty(), "checked path");
                for i in all {
                    if let Err(e) = self.govs[i].apply_param(param, v.clone(), ctx.now()) {
                        unreachable!("checked against the registry: {e}");
                    }
                    // A rule reload (checked: a reloadable kind) rebuilds the controllers.
                    if reload {
                        assert!(self.govs[i].reload(ctx.now()), "checked: reloadable kind");
                    }
                    callsite::drain(i, &mut self.govs, &mut self.woken);
                    self.after_governor(i, ctx);
                }
                self.resume_woken(ctx);
                self.update_gate_gauges(ctx);
            }
            ("connpool", param, v) => {
                let now = ctx.now();
                let p = self.conns.iter().position(|c| c.name == name).expect("checked");
                let pool = &mut self.conns[p].pool;
                match (param, v) {
                    ("max_total", ParamValue::Count(n)) => pool.set_max_total(n, now),
                    ("max_per_route", ParamValue::Count(n)) => pool.set_max_per_route(n, now),
                    ("keep_alive", ParamValue::Duration(d)) => pool.set_keep_alive(d, now),
                    ("validate_after_inactivity", ParamValue::Duration(d)) => {
                        pool.set_validate_after_inactivity(d)
                    }
                    ("connection_request_timeout", ParamValue::Duration(d)) => {
                        pool.set_connection_request_timeout(d)
                    }
                    ("server_idle_timeout", ParamValue::Duration(d)) => {
                        pool.set_server_idle_timeout(d)
                    }
                    ("tcp_rtt", ParamValue::Duration(d)) => pool.set_tcp_rtt(d),
                    ("tls_round_trips", ParamValue::Count(n)) => pool.set_tls_round_trips(n),
                    ("stale_failure_delay", ParamValue::Duration(d)) => {
                        pool.set_stale_failure_delay(d)
                    }
                    (p, v) => unreachable!("connpool.{p} = {v:?} is not run-time changeable"),
                }
                self.sync_conn_pool(p as u16, ctx);
                self.resume_woken(ctx);
            }
            ("gpu_server", param, v) => {
                let g = self.gpus.iter().position(|g| g.name == name).expect("checked");
                let server = &mut self.gpus[g].server;
                let r = match (param, v) {
                    ("max_num_seqs", ParamValue::Count(n)) => server.set_max_num_seqs(n),
                    ("max_num_batched_tokens", ParamValue::Count(n)) => {
                        server.set_max_num_batched_tokens(n)
                    }
                    ("max_queue", ParamValue::Count(n)) => server.set_max_queue(n),
                    ("cancellation", ParamValue::Bool(b)) => {
                        server.set_cancellation(b);
                        Ok(())
                    }
                    (p, v) => Err(format!("gpu_server.{p} = {v:?} is not run-time changeable")),
                };
                if let Err(e) = r {
                    // A cross-field rule (batched tokens ≥ sequences): refused, recorded,
                    // and the value in force stays the old one.
                    if let Some(v) = old {
                        self.params_now.insert(p.path.clone(), v);
                    }
                    self.events.push(ModelEvent {
                        time: ctx.now(),
                        component: format!("gpu_server.{name}"),
                        kind: "config_rejected",
                        from: param.to_string(),
                        to: e,
                    });
                }
                self.kick_gpu(g as u16, ctx);
            }
            (k @ ("app" | "dispatcher" | "pool" | "dispatcher_queue" | "pool_queue"), p, v) => {
                self.entry_set(k, name, p, v, ctx)
            }
            ("call_site", "enabled", ParamValue::Bool(b)) => {
                self.sites.iter_mut().find(|s| s.name == name).expect("checked").enabled = b;
            }
            (k, p, v) => unreachable!("{k}.{p} = {v:?} is not run-time changeable"),
        }
    }
}
