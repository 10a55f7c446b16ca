//! Application instances: the request's entry path (docs/domain.md §3.2–§3.4, ARCHITECTURE.md: the request path is data).
//!
//! An app is `instances` identical copies of one service process behind a load balancer.
//! Each instance has its own copy of the priority dispatcher ([`crate::dispatch`]) and of
//! the worker pool ([`crate::pool`]), a CPU of `thread_overhead.cpu_cores` cores, and
//! `gateway_threads` gateway (accepting) threads. A request of a source with `app: "<name>"`
//! goes: balancer → instance → dispatcher (or straight to the pool) → a worker thread runs
//! `local_work` (CPU, stretched by the per-thread overhead) → the request's pipeline starts
//! → (blocking) the thread is held until the request ends.
//!
//! The key design decision: the dispatcher only hands a task to a worker that can start it at
//! once; the world never pushes a dispatched task into the pool's own FIFO (its priority
//! would be lost there). Without a dispatcher the pool's Java path applies unchanged
//! (queue, grow, reject). CPU contention is a FIFO over `cpu_cores`: the same capacity as
//! processor sharing (so the same saturation throughput, `pool::overhead::analytic_throughput`),
//! simpler to time exactly.
//!
//! Architecture invariant: per instance, busy pool threads = requests holding a worker
//! thread, busy gateway threads = requests holding one, busy cores = requests in their CPU
//! part, and tasks in the dispatcher and pool queues = requests waiting there (checked by
//! `QueueingWorld::check_invariants`, I23).
//!
//! API boundary: scenario types only ([`AppSpec`], [`Balancer`]); the run-time state is in
//! `world/entry.rs`. Parameters: `app.<name>.healthy`; the dispatcher's and pools' own under
//! `dispatcher.<name>.*` and `pool.<name>.*` (applied to every instance's copy).

use crate::dispatch::DispatcherSpec;
use crate::params::ParamValue;
use crate::pool::PoolLayout;
use crate::pool::overhead::ThreadOverheadSpec;
use crate::validate;
use serde::{Deserialize, Serialize};
use sim_core::{Dist, SimDuration};

crate::params::param_choices! {
    /// How an app's load balancer picks an instance: `RoundRobin` (instances in turn, one
    /// counter per app), `LeastOutstanding` (the instance with the fewest requests assigned
    /// and not yet ended; ties: lowest index) or `Random` (uniform, keyed by the request:
    /// attribute `world::attr::BALANCER`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Balancer { RoundRobin = "RoundRobin", LeastOutstanding = "LeastOutstanding", Random = "Random" }
}

/// An application: instances behind a balancer, each with a dispatcher and a pool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "App")]
pub struct AppSpec {
    #[serde(deserialize_with = "validate::name")]
    pub name: String,
    /// Identical instances (1 ..= 1024).
    #[serde(default = "D::instances", deserialize_with = "R::instances")]
    pub instances: u64,
    #[serde(default = "D::balancer")]
    pub balancer: Balancer,
    /// The priority dispatcher in front of the pool (needs a `Shared` pool).
    #[serde(default)]
    pub dispatcher: Option<DispatcherSpec>,
    /// Worker threads; `None` = unlimited (every request runs at once).
    #[serde(default)]
    pub pool: Option<PoolLayout>,
    /// Per-thread overhead and CPU cores; `None` = no overhead and no CPU contention.
    #[serde(default)]
    pub thread_overhead: Option<ThreadOverheadSpec>,
    /// CPU time on the worker thread per request, before its pipeline starts (stretched by
    /// `service_multiplier(threads alive)`); `None` = none.
    #[serde(default)]
    pub local_work: Option<Dist<SimDuration>>,
    /// `true`: the thread is held until the request's pipeline ends (synchronous calls);
    /// `false`: released after `local_work`, the pipeline runs asynchronously.
    #[serde(default = "D::blocking")]
    pub blocking: bool,
    /// Gateway threads per instance; a caller-runs request occupies one for its run, and an
    /// arrival finding none free waits in the accept backlog. `None` = unlimited.
    #[serde(default = "D::gateway_threads", deserialize_with = "R::gateway_threads")]
    pub gateway_threads: Option<u64>,
    /// Bound on arrivals waiting for a gateway thread (full: rejected `queue_full`).
    #[serde(default = "D::accept_backlog", deserialize_with = "R::accept_backlog")]
    pub accept_backlog: u64,
    /// Health signal for the dispatcher's deferred queue: deferred tasks are replayed only
    /// while it is true (and, with `health_from`, while that breaker is CLOSED).
    #[serde(default = "D::healthy")]
    pub healthy: bool,
    /// The breaker whose state is the resource's health (docs/domain.md §3.3: deferred work is
    /// replayed "once its breaker closed"): `"circuit_breaker.<name>"` or
    /// `"degrade_rule.<name>"`. Healthy = `healthy` and the breaker CLOSED (HALF_OPEN is not
    /// healthy yet). A per-instance breaker (`per_instance`) gates each instance by its
    /// own copy. Written without `Some`.
    #[serde(
        default,
        deserialize_with = "validate::present",
        serialize_with = "validate::ser_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub health_from: Option<String>,
}

/// The defaults declared in the parameter rows (`declare_params!` below).
type D = crate::params::Defaults<AppSpec>;
/// The fields parsed with their rows' types and ranges.
type R = crate::params::Ranged<AppSpec>;

impl AppSpec {
    /// Cross-field checks: `classes` are the scenario's class names, in order.
    pub fn validate(&self, classes: &[String]) -> Result<(), (String, String)> {
        let e = |f: &str, m: String| Err((f.to_string(), m));
        if let Some(d) = &self.dispatcher {
            d.validate().map_err(|m| ("dispatcher".to_string(), m))?;
            let names: Vec<&str> = d.queues.iter().map(|q| q.class.as_str()).collect();
            if names != classes.iter().map(|c| c.as_str()).collect::<Vec<_>>() {
                return e(
                    "dispatcher.queues",
                    format!(
                        "expected one queue per class in class order [{}], found [{}]",
                        classes.join(", "),
                        names.join(", ")
                    ),
                );
            }
            match &self.pool {
                Some(PoolLayout::Shared(_)) => {}
                Some(PoolLayout::PerClass { .. }) => {
                    return e(
                        "pool",
                        "a dispatcher needs a `Shared` pool (per-class pools already separate \
                         the classes; the dispatcher cannot know which class's pool is free)"
                            .into(),
                    );
                }
                None => return e("pool", "a dispatcher needs a pool to feed".into()),
            }
        }
        if let Some(p) = &self.pool {
            p.validate().map_err(|m| ("pool".to_string(), m))?;
            if let PoolLayout::PerClass { pools, .. } = p
                && pools.len() != classes.len()
            {
                return e(
                    "pool.pools",
                    format!(
                        "expected one pool per class ({}), found {}",
                        classes.len(),
                        pools.len()
                    ),
                );
            }
        }
        Ok(())
    }

    /// The pool specs of this app (for the registry), in pool order.
    pub fn pools(&self) -> Vec<&crate::pool::worker::ThreadPoolSpec> {
        match &self.pool {
            None => Vec::new(),
            Some(PoolLayout::Shared(p)) => vec![p],
            Some(PoolLayout::PerClass { pools, .. }) => pools.iter().collect(),
        }
    }
    pub fn pools_mut(&mut self) -> Vec<&mut crate::pool::worker::ThreadPoolSpec> {
        match &mut self.pool {
            None => Vec::new(),
            Some(PoolLayout::Shared(p)) => vec![p],
            Some(PoolLayout::PerClass { pools, .. }) => pools.iter_mut().collect(),
        }
    }
}

/// An app's run-time side, as its parameter rows see it: the world's entry path implements
/// it for its running app (every instance), so a run-time row names its setter here and the
/// world hands an `app.*` change over by kind only.
pub trait AppSetters {
    /// `healthy`: deferred tasks are replayed only while true (from `now` on).
    fn set_healthy(&mut self, healthy: bool, now: sim_core::SimTime);
}

crate::params::declare_params! {
    AppSpec: "app", name = |s| s.name, part = thread_overhead[ThreadOverheadSpec],
        scenario_only = [
            dispatcher: "a component of its own: `dispatcher.<name>.*`",
            pool: "the pool layout (shared or per class); its pools are components of their own: `pool.<name>.*`",
        ],
        state = dyn AppSetters + '_;
    local_work: DurationDist, "ns", fixed,
        "CPU time on the worker thread per request before its pipeline starts (declared only)",
        opt_get = |s| s.local_work.clone(), set = |s, d| s.local_work = Some(d);
    healthy: Bool, "", runtime(apply = |a, on, now| a.set_healthy(on, now)),
        "health signal: deferred tasks are replayed only while true", default = true;
    instances: Count { min: 1, max: 1024 }, "", fixed, "identical instances behind the balancer",
        default = 1;
    balancer: Enum { choices: Balancer::CHOICES }, "", fixed,
        "how the balancer picks an instance", default = "RoundRobin";
    blocking: Bool, "", fixed,
        "the worker thread is held until the request's pipeline ends (false: released after local_work)",
        default = true;
    gateway_threads: OptCount { min: 1, max: 1_000_000 }, "threads", fixed,
        "gateway threads per instance (None = unlimited)", default = None;
    accept_backlog: Count { min: 0, max: 100_000_000 }, "requests", fixed,
        "bound on arrivals waiting for a gateway thread", default = 100;
}

pub use crate::timeouts::QueueParams;

/// The queue-wait parameters of an app, each with its place in the app: a dispatcher
/// class queue's index in `queues`, a pool's in its pool layout (listed only where a wait
/// is set).
pub fn queue_params(a: &AppSpec) -> Vec<(QueueParams, usize)> {
    let mut out = Vec::new();
    if let Some(d) = &a.dispatcher {
        for (k, q) in d.queues.iter().enumerate() {
            if let Some(w) = q.max_queue_wait {
                out.push((QueueParams::dispatcher(format!("{}-{}", d.name, q.class), w), k));
            }
        }
    }
    for (j, p) in a.pools().into_iter().enumerate() {
        if let Some(w) = p.max_queue_wait {
            out.push((QueueParams::pool(p.name.clone(), w), j));
        }
    }
    out
}

/// Sets a queue-wait parameter in the app's spec, through the queue's row: the wait of
/// pool `part` (`pool`) or of the dispatcher's class queue `part`; `Err` if it has none.
pub fn set_queue_param(
    a: &mut AppSpec,
    pool: bool,
    part: usize,
    param: &str,
    v: &ParamValue,
) -> Result<(), String> {
    let (mut q, _) = queue_params(a)
        .into_iter()
        .find(|(q, i)| q.is_pool() == pool && *i == part)
        .ok_or_else(|| format!("no queue wait at {part}"))?;
    q.set(param, v.clone())?;
    let w = Some(q.max_queue_wait);
    if pool {
        a.pools_mut().swap_remove(part).max_queue_wait = w;
    } else {
        a.dispatcher.as_mut().expect("listed").queues[part].max_queue_wait = w;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// An app's thread overhead is an optional part: its rows are listed as
    /// `thread_overhead.<row>` where it is set, parsed with their ranges, and a sweep's
    /// `set` writes them into it (never creating one where there is none).
    #[test]
    fn thread_overhead_is_an_optional_part() {
        use crate::params::{ParamValue as V, Params};
        let with: super::AppSpec =
            ron::from_str(r#"App(name: "svc", thread_overhead: Some((cpu_cores: 4)))"#).unwrap();
        let mut with = with;
        assert_eq!(with.get("thread_overhead.cpu_cores"), Some(V::Count(4)));
        assert_eq!(with.get("thread_overhead.overhead_per_thread"), Some(V::Float(0.0004)));
        assert_eq!(
            super::AppSpec::field_of("thread_overhead.knee_threads"),
            "thread_overhead.knee_threads"
        );
        with.set("thread_overhead.knee_threads", V::Count(200)).unwrap();
        assert_eq!(with.thread_overhead.as_ref().unwrap().knee_threads, 200);
        let mut without: super::AppSpec = ron::from_str(r#"App(name: "svc")"#).unwrap();
        assert_eq!(without.get("thread_overhead.cpu_cores"), None, "absent: not listed");
        assert!(without.set("thread_overhead.cpu_cores", V::Count(2)).is_err());
        assert!(without.thread_overhead.is_none());
        let e = ron::from_str::<super::AppSpec>(
            r#"App(name: "svc", thread_overhead: Some((cpu_cores: 0)))"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("expected an integer in [1, 1000000], found 0"), "{e}");
    }

    use crate::scenario::ScenarioSpec;

    fn check(apps: &str, source_app: &str) -> Result<(), (String, String)> {
        let text = format!(
            r#"Scenario(name: "t",
            sources: [(name: "s", interarrival: Constant("1s"), target: "c"{source_app})],
            call_sites: [(name: "c", upstream: "st")],
            stations: [(name: "st", servers: 1, service: Constant("1s"))],
            apps: [{apps}])"#
        );
        let sc: ScenarioSpec<crate::params::ParamValue> = ron::from_str(&text).expect("parses");
        sc.check().map_err(|e| (e.path, e.message))
    }

    const POOL: &str = r#"pool: Some(Shared((name: "w", core_pool_size: 1, maximum_pool_size: 2, queue_capacity: 0)))"#;
    const DISP: &str = r#"dispatcher: Some((name: "d", policy: Strict, queues: [(class: "P0", capacity: 1), (class: "P1", capacity: 1), (class: "P2", capacity: 1)]))"#;

    /// (apps, the source's app field) → the field path of the error, or `None` if valid.
    #[test]
    fn cross_checks_name_the_culprit() {
        let per_class = r#"pool: Some(PerClass(pools: [
            (name: "a", core_pool_size: 1, maximum_pool_size: 1, queue_capacity: 0),
            (name: "b", core_pool_size: 1, maximum_pool_size: 1, queue_capacity: 0),
            (name: "c", core_pool_size: 1, maximum_pool_size: 1, queue_capacity: 0)], max_borrow: [0, 0, 0]))"#;
        let table: Vec<(String, &str, Option<&str>)> = vec![
            (format!(r#"(name: "x", {POOL}, {DISP})"#), r#", app: "x""#, None),
            (format!(r#"(name: "x", {POOL})"#), r#", app: "y""#, Some("sources[0].app")),
            (format!(r#"(name: "x", {DISP})"#), "", Some("apps[0].pool")),
            (format!(r#"(name: "x", {per_class}, {DISP})"#), "", Some("apps[0].pool")),
            (format!(r#"(name: "x", {per_class})"#), "", None),
            (
                format!(
                    r#"(name: "x", {POOL}, {})"#,
                    DISP.replace(r#", (class: "P2", capacity: 1)"#, "")
                ),
                "",
                Some("apps[0].dispatcher.queues"),
            ),
            (
                format!(r#"(name: "x", {POOL}), (name: "y", {POOL})"#),
                "",
                Some("apps[1].pool[0].name"),
            ),
            (r#"(name: "x"), (name: "x")"#.to_string(), "", Some("apps[1].name")),
        ];
        for (apps, src, want) in table {
            let got = check(&apps, src);
            assert_eq!(got.as_ref().err().map(|e| e.0.as_str()), want, "{apps}: {got:?}");
        }
    }

    #[test]
    fn instances_range_is_checked_while_parsing() {
        let r: Result<super::AppSpec, _> = ron::from_str(r#"(name: "x", instances: 0)"#);
        assert!(r.unwrap_err().to_string().contains("expected an integer in [1, 1024], found 0"));
    }
}
