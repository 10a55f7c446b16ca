//! The connection pool's entries in the parameter registry (`connpool.<name>.*`).

use super::ConnPoolSpec;
use sim_core::SimDuration;

crate::params::declare_params! {
    ConnPoolSpec: "connpool", name = |s| s.name, state = super::ConnPool;
    max_total: Count { min: 1, max: 10_000_000 }, "connections",
        runtime(apply = |c, n, now| c.set_max_total(n, now)),
        "connections in total (leased + idle)", default = 20;
    max_per_route: Count { min: 1, max: 10_000_000 }, "connections",
        runtime(apply = |c, n, now| c.set_max_per_route(n, now)),
        "connections per route (upstream)", default = 2;
    keep_alive: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        runtime(apply = |c, d, now| c.set_keep_alive(d, now)),
        "client closes connections idle this long (0 = never)", default = SimDuration::ZERO;
    validate_after_inactivity: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        runtime(apply = |c, d| c.set_validate_after_inactivity(d)),
        "validate on borrow after this idle time (0 = off)", default = SimDuration::from_secs(2);
    connection_request_timeout: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        runtime(apply = |c, d| c.set_connection_request_timeout(d)),
        "wait for a connection (0 = fail at once)", default = SimDuration::from_secs(180);
    tcp_rtt: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        runtime(apply = |c, d| c.set_tcp_rtt(d)),
        "network round trip to the upstream", default = SimDuration::from_ms(20);
    server_idle_timeout: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        runtime(apply = |c, d| c.set_server_idle_timeout(d)),
        "server closes connections idle this long (0 = never)", default = SimDuration::from_secs(60);
    stale_failure_delay: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) }, "ns",
        runtime(apply = |c, d| c.set_stale_failure_delay(d)),
        "time for a request on a dead connection to fail", default = SimDuration::from_ms(20);
    tls_round_trips: Count { min: 0, max: 10 }, "round trips",
        runtime(apply = |c, n| c.set_tls_round_trips(n)),
        "TLS handshake round trips (2 = TLS 1.2, 1 = TLS 1.3)", default = 2;
    max_waiting: Count { min: 0, max: 100_000_000 }, "calls", fixed,
        "bound on borrowers waiting for a connection", default = 100_000;
}
