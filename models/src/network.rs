//! Network delay between a call site's client and its upstream: each direction a
//! distribution (`request`: client → server, `response`: server → client).
//!
//! Semantics (the world side is `world/network.rs`):
//! - The client's timeout runs from when the client *sends*: both legs count toward it. A
//!   timeout that fires during either leg fails the call with `timeout` at the client's
//!   deadline, exactly as one that fires while the call waits at the station.
//! - The upstream sees the call only when the request leg ends: its quota admits (or 429s)
//!   it then, its queue and servers hold it from then, and it frees its server when the
//!   service ends — before the response leg. Network time is outside the server's
//!   concurrency.
//! - A request whose client gave up while it was on the wire still reaches the upstream: a
//!   station that cancels abandoned work drops it on arrival, one that does not serves it as
//!   abandoned work (the retry storm's wasted capacity).
//! - Each leg's delay is a keyed draw of (request, call path, attempt) with its own
//!   attribute (`world::attr::NET_REQUEST`, `NET_RESPONSE`): adding a delay moves no other
//!   random number, and two policies on one seed meet the same network.
//! - A leg whose distribution is `Constant("0s")` is no leg: no event, the fingerprint of a
//!   site without `network`.
//! - Per route: a site's `route_networks` entry gives the calls to one of its upstreams
//!   their own legs in place of the site's `network` (`NetRt::spec` picks them per call).
//!
//! Architecture invariant: a call is on at most one leg at a time, and a leg in flight is
//! never also at the station (I49). API boundary: the scenario's `call_sites[i].network`;
//! the registered parameters `call_site.<name>.network_request` / `network_response`.

use serde::{Deserialize, Serialize};
use sim_core::DistSpec;
use sim_core::{Dist, SimDuration};

/// One call site's network, both directions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// Client → server: from the client's send to the upstream's arrival.
    #[serde(default = "zero")]
    pub request: Dist<SimDuration>,
    /// Server → client: from the end of the upstream's work (or its refusal) to the answer
    /// at the client.
    #[serde(default = "zero")]
    pub response: Dist<SimDuration>,
}

fn zero() -> Dist<SimDuration> {
    Dist::constant(SimDuration::ZERO)
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec { request: zero(), response: zero() }
    }
}

/// Is a leg absent (always zero)? Then it schedules nothing.
pub fn is_zero(d: &Dist<SimDuration>) -> bool {
    matches!(d.spec(), DistSpec::Constant(v) if *v == SimDuration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_constant_zero_is_no_leg() {
        assert!(is_zero(&zero()));
        assert!(!is_zero(&Dist::constant(SimDuration(1))));
        assert!(!is_zero(&Dist::exponential(SimDuration(1_000))));
    }

    #[test]
    fn legs_default_to_zero() {
        let n: NetworkSpec = ron::from_str("(request: Constant(\"5ms\"))").unwrap();
        assert!(!is_zero(&n.request) && is_zero(&n.response));
        let e = ron::from_str::<NetworkSpec>("(latency: Constant(\"5ms\"))").unwrap_err();
        assert!(e.to_string().contains("latency"), "{e}");
    }
}
