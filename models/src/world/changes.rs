//! Run-time parameter changes applied to the running world (timeline, GUI).

use super::*;

impl QueueingWorld {
    /// Applies a run-time parameter change (already checked against the registry).
    pub(super) fn set(&mut self, p: SetParam<ParamValue>, ctx: &mut Ctx<'_, Ev>) {
        let (kind, name, param) = split_path(&p.path).expect("checked path");
        let from = self.current(kind, name, param);
        self.events.push(ModelEvent {
            time: ctx.now(),
            component: format!("{kind}.{name}"),
            kind: "config_change",
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
            ("source", "interarrival", ParamValue::DurationDist(d)) => {
                self.sources.iter_mut().find(|s| s.name == name).expect("checked").interarrival =
                    Some(d);
            }
            ("gate", param, v) => {
                let i = self.gates.iter().find(|g| g.name == name).expect("checked").gov;
                let g = self.govs[i].as_gate_mut().expect("a gate");
                match (param, v) {
                    ("permits", ParamValue::Count(n)) => g.set_permits(n),
                    ("acquire_timeout", ParamValue::Duration(d)) => g.set_acquire_timeout(d),
                    (p, v) => unreachable!("gate.{p} = {v:?} is not run-time changeable"),
                }
                callsite::drain(i, &mut self.govs, &mut self.woken);
                self.resume_woken(ctx);
                self.update_gate_gauges(ctx);
            }
            (k @ ("app" | "dispatcher" | "pool"), p, v) => self.entry_set(k, name, p, v, ctx),
            (k, p, v) => unreachable!("{k}.{p} = {v:?} is not run-time changeable"),
        }
    }

    /// The current value of a run-time changeable parameter, as text.
    fn current(&self, kind: &str, name: &str, param: &str) -> String {
        match (kind, param) {
            ("station", "servers") => {
                self.stations.iter().find(|s| s.name == name).map(|s| s.st.servers.to_string())
            }
            ("station", "service") => self
                .stations
                .iter()
                .find(|s| s.name == name)
                .map(|s| crate::params::dist_to_text(&s.st.service)),
            ("station", "cancellation") => {
                self.stations.iter().find(|s| s.name == name).map(|s| s.st.cancellation.to_string())
            }
            ("station", "error_rate") => {
                self.stations.iter().find(|s| s.name == name).map(|s| s.st.error_rate.to_string())
            }
            ("station", "latency_multiplier") => self
                .stations
                .iter()
                .find(|s| s.name == name)
                .map(|s| s.st.latency_multiplier.to_string()),
            ("source", "interarrival") => self
                .sources
                .iter()
                .find(|s| s.name == name)
                .and_then(|s| s.interarrival.as_ref().map(crate::params::dist_to_text)),
            ("gate", p) => self.gates.iter().find(|g| g.name == name).map(|rt| {
                let g = self.govs[rt.gov].as_gate().expect("a gate");
                match p {
                    "permits" => g.permits().to_string(),
                    _ => format!("\"{}\"", g.acquire_timeout()),
                }
            }),
            ("app" | "dispatcher" | "pool", p) => self.entry_current(kind, name, p),
            _ => None,
        }
        .unwrap_or_else(|| "?".into())
    }
}
