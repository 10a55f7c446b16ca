//! The connection pool's entries in the parameter registry (`connpool.<name>.*`).

use super::ConnPoolSpec;
use sim_core::SimDuration;

impl crate::params::Params for ConnPoolSpec {
    const KIND: &'static str = "connpool";
    fn instance_name(&self) -> &str {
        &self.name
    }
    fn decls() -> Vec<crate::params::ParamDecl> {
        use crate::params::{ParamDecl, ParamType};
        let count = |name, runtime, doc| ParamDecl {
            name,
            ty: ParamType::Count { min: 1, max: 10_000_000 },
            unit: "connections",
            runtime,
            doc,
        };
        let dur = |name, doc| ParamDecl {
            name,
            ty: ParamType::Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) },
            unit: "ns",
            runtime: true,
            doc,
        };
        vec![
            count("max_total", true, "connections in total (leased + idle)"),
            count("max_per_route", true, "connections per route (upstream)"),
            dur("keep_alive", "client closes connections idle this long (0 = never)"),
            dur("validate_after_inactivity", "validate on borrow after this idle time (0 = off)"),
            dur("connection_request_timeout", "wait for a connection (0 = fail at once)"),
            dur("tcp_rtt", "network round trip to the upstream"),
            dur("server_idle_timeout", "server closes connections idle this long (0 = never)"),
            dur("stale_failure_delay", "time for a request on a dead connection to fail"),
            ParamDecl {
                name: "tls_round_trips",
                ty: ParamType::Count { min: 0, max: 10 },
                unit: "round trips",
                runtime: true,
                doc: "TLS handshake round trips (2 = TLS 1.2, 1 = TLS 1.3)",
            },
            ParamDecl {
                name: "max_waiting",
                ty: ParamType::Count { min: 0, max: 100_000_000 },
                unit: "calls",
                runtime: false,
                doc: "bound on borrowers waiting for a connection",
            },
        ]
    }
    fn get(&self, p: &str) -> Option<crate::params::ParamValue> {
        use crate::params::ParamValue as V;
        Some(match p {
            "max_total" => V::Count(self.max_total),
            "max_per_route" => V::Count(self.max_per_route),
            "keep_alive" => V::Duration(self.keep_alive),
            "validate_after_inactivity" => V::Duration(self.validate_after_inactivity),
            "connection_request_timeout" => V::Duration(self.connection_request_timeout),
            "tcp_rtt" => V::Duration(self.tcp_rtt),
            "server_idle_timeout" => V::Duration(self.server_idle_timeout),
            "stale_failure_delay" => V::Duration(self.stale_failure_delay),
            "tls_round_trips" => V::Count(self.tls_round_trips),
            "max_waiting" => V::Count(self.max_waiting),
            _ => return None,
        })
    }
    fn set(&mut self, p: &str, v: crate::params::ParamValue) -> Result<(), String> {
        use crate::params::ParamValue as V;
        match (p, v) {
            ("max_total", V::Count(n)) => self.max_total = n,
            ("max_per_route", V::Count(n)) => self.max_per_route = n,
            ("keep_alive", V::Duration(d)) => self.keep_alive = d,
            ("validate_after_inactivity", V::Duration(d)) => self.validate_after_inactivity = d,
            ("connection_request_timeout", V::Duration(d)) => self.connection_request_timeout = d,
            ("tcp_rtt", V::Duration(d)) => self.tcp_rtt = d,
            ("server_idle_timeout", V::Duration(d)) => self.server_idle_timeout = d,
            ("stale_failure_delay", V::Duration(d)) => self.stale_failure_delay = d,
            ("tls_round_trips", V::Count(n)) => self.tls_round_trips = n,
            ("max_waiting", V::Count(n)) => self.max_waiting = n,
            (p, v) => return Err(format!("connpool has no parameter `{p}` of type {v:?}")),
        }
        Ok(())
    }
}
