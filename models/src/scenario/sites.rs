//! Call sites in the scenario: the fallback chains' cross-references, the network's
//! upstreams, and the call site's registered parameters (`call_site.<name>.enabled`,
//! `network_request`, `network_response`).

use crate::fallback::{SiteRef, check_chains};
use sim_core::{Dist, SimDuration};

impl<V> super::ScenarioSpec<V> {
    /// The fallback chains' cross-references ([`check_chains`]) with field paths.
    pub(crate) fn check_fallbacks(&self) -> Result<(), super::SpecError> {
        let sites: Vec<SiteRef> = self
            .call_sites
            .iter()
            .map(|c| SiteRef { name: &c.name, fallback: c.fallback.as_ref() })
            .collect();
        let caches: Vec<&str> = self.caches.iter().map(|c| c.name.as_str()).collect();
        check_chains(&sites, &caches).map_err(|(i, field, message)| super::SpecError {
            path: format!("call_sites[{i}].{field}"),
            message,
        })
    }
}

impl<V> super::ScenarioSpec<V> {
    /// A call site's network (`crate::network`) reaches only stations that do not stream:
    /// a GPU server's or a stream's answer path has no network leg (`network` covers every
    /// upstream of the site, a `route_networks` entry its own); a route names one of the
    /// site's upstreams, once.
    pub(crate) fn check_network(&self) -> Result<(), super::SpecError> {
        for (i, c) in self.call_sites.iter().enumerate() {
            let ups: Vec<&String> = std::iter::once(&c.upstream)
                .chain(c.split.iter().map(|(n, _)| n))
                .chain(c.backup.iter())
                .collect();
            for (k, (up, _)) in c.route_networks.iter().enumerate() {
                let path = format!("call_sites[{i}].route_networks[{k}]");
                if !ups.contains(&up) {
                    let message = format!(
                        "\"{up}\" is not an upstream of call site \"{}\" (its upstream, \
                         split or backup)",
                        c.name
                    );
                    return Err(super::SpecError { path, message });
                }
                if c.route_networks[..k].iter().any(|(u, _)| u == up) {
                    let message = format!("a second route for \"{up}\"");
                    return Err(super::SpecError { path, message });
                }
                self.check_network_upstream(up, path)?;
            }
            if c.network.is_some() {
                for up in ups {
                    self.check_network_upstream(up, format!("call_sites[{i}].network"))?;
                }
            }
        }
        Ok(())
    }

    fn check_network_upstream(&self, up: &str, path: String) -> Result<(), super::SpecError> {
        if self.stations.iter().any(|s| s.name == up && !s.streaming) {
            return Ok(());
        }
        let what = if self.gpu_servers.iter().any(|g| g.name == up) {
            "a GPU server"
        } else if self.gpu_pools.iter().any(|g| g.name == up) {
            "a GPU pool"
        } else {
            "a streaming station"
        };
        let message =
            format!("network delay needs station upstreams that do not stream; \"{up}\" is {what}");
        Err(super::SpecError { path, message })
    }
}

/// A call site's run-time side, as its parameter rows see it: the world implements it for
/// its running site (the schema names no runtime type), so each run-time row below names
/// its setter here and the world hands a `call_site.*` change over by kind only.
pub trait CallSiteSetters {
    /// `enabled`: off, every call goes straight to the site's fallback.
    fn set_enabled(&mut self, on: bool);
    /// `network_request`: the client → server leg of calls sent from now on.
    fn set_network_request(&mut self, d: Dist<SimDuration>);
    /// `network_response`: the server → client leg of answers sent from now on.
    fn set_network_response(&mut self, d: Dist<SimDuration>);
    /// `busy_max_per_second`: from the next one-second window (`Err`: no Busy fallback).
    fn set_busy_max_per_second(&mut self, n: Option<u64>) -> Result<(), String>;
}

// `call_site.<name>.enabled`: switch a model off (and on) at run time (docs/domain.md §3.16);
// `network_request` / `network_response`: a declared network's legs (`crate::network`).
crate::params::declare_params! {
    super::CallSiteSpec: "call_site", name = |s| s.name,
        scenario_only = [
            upstream: "a reference to a station or GPU server",
            governors: "references to governors, in stack order",
            split: "weighted references to upstreams",
            backup: "a reference to an upstream",
            connection_pool: "a reference to a connection pool (`connpool.<name>.*`)",
        ],
        state = dyn CallSiteSetters + '_;
    enabled: Bool, "", runtime(apply = |s, on| s.set_enabled(on)),
        "the model is on; off: every call goes straight to the site's fallback";
    timeout: Duration { min: SimDuration::ZERO, max: SimDuration::MAX }, "ns", fixed,
        "the client's timeout on the upstream call, sending to answer (0s = none)",
        default = SimDuration::ZERO;
    stream_read_timeout: Duration { min: SimDuration::ZERO, max: SimDuration::MAX }, "ns", fixed,
        "the client's read timeout between two chunks of a streamed answer (0s = none)",
        default = SimDuration::ZERO;
    // A declared network's legs only.
    network_request: DurationDist, "ns", runtime(apply = |s, d| s.set_network_request(d)),
        "client → server delay (declared `network` only); inside the call's timeout",
        opt_get = |s| s.network.as_ref().map(|n| n.request.clone()),
        set = |s, d| match s.network.as_mut() {
            Some(n) => n.request = d,
            None => return Err("call_site has no network: `network_request`".into()),
        },
        field = "network.request";
    network_response: DurationDist, "ns", runtime(apply = |s, d| s.set_network_response(d)),
        "server → client delay (declared `network` only); inside the call's timeout",
        opt_get = |s| s.network.as_ref().map(|n| n.response.clone()),
        set = |s, d| match s.network.as_mut() {
            Some(n) => n.response = d,
            None => return Err("call_site has no network: `network_response`".into()),
        },
        field = "network.response";
    // A site whose fallback is `Busy` only.
    busy_max_per_second: OptCount { min: 1, max: 1_000_000_000 }, "answers/s",
        runtime(apply = |s, n| s.set_busy_max_per_second(n)),
        "cap on busy answers per one-second window (None = unlimited; a change applies from the next window)",
        opt_get = |s| match s.fallback.as_ref().map(|f| &f.to) {
            Some(crate::fallback::FallbackTo::Busy { max_per_second, .. }) => Some(*max_per_second),
            _ => None,
        },
        set = |s, n| match s.fallback.as_mut().map(|f| &mut f.to) {
            Some(crate::fallback::FallbackTo::Busy { max_per_second, .. }) => *max_per_second = n,
            _ => return Err("call_site: `busy_max_per_second` needs a Busy fallback".into()),
        },
        field = "fallback.to.max_per_second";
}
