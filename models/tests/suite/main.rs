//! Every integration test of `models`, as modules of one test binary (one link at
//! opt-level 3 instead of one per file): `cargo test -p models --test suite`, one
//! module with `cargo test -p models --test suite -- interactions::`.

mod support;

mod abandoned_work;
mod adaptive;
mod autoscaling;
mod censoring;
mod cluster_flow;
mod codel_queue;
mod connections;
mod degradation;
mod entry_path;
mod every_component;
mod flow_controller;
mod governors;
mod gpu_fit;
mod gpu_pool;
mod gpu_prefix;
mod gpu_world;
mod hedging;
mod incident_timeouts;
mod incidents_breakers;
mod incidents_governance;
mod incidents_quota;
mod incidents_regressions;
mod interactions;
mod keda;
mod limits;
mod network;
mod partitioned_limit;
mod per_instance;
mod provider_faults;
mod queue_discipline;
mod queueing_theory;
mod rate_limiter;
mod recovery;
mod retry_storm_delay;
mod routing;
mod scenarios;
mod scripted;
mod semaphore;
mod sentinel_resource;
mod series;
mod session;
mod shadow;
mod sre_throttle;
mod stalls;
mod stepping;
mod streaming;
mod thread_pool_bulkhead;
mod time_limiter;
mod trace_replay;
mod traffic;
mod traffic_users;
