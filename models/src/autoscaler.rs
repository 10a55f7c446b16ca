//! An autoscaler: Kubernetes' HorizontalPodAutoscaler (autoscaling/v2) in front of one
//! station, with the replicas' provisioning delay (cold start), warm-up and drain.
//!
//! The station's servers are the autoscaler's replicas: `servers = ready replicas ×
//! servers_per_replica` (at the start: the station's `servers` rounded up to whole
//! replicas, all ready). Every `sync_period` (the controller's `--horizontal-pod-autoscaler-
//! sync-period`, 15 s; the first sync one period after the start) the autoscaler reads the
//! station's metric over the period just ended, computes a recommendation with the replica
//! calculator ([`replica_count`], `replica_calculator.go`), stabilizes and rate-limits it
//! with the behaviour ([`Hpa::reconcile`], `horizontal.go`), and asks for the difference:
//! - a replica asked for is *provisioning* (a Pending pod: counted in the current replicas,
//!   never in the metric's ready pods) for a keyed draw of `provisioning_delay`, then ready:
//!   its servers join the station and start queued work;
//! - a ready replica serves slower for `warmup` (a cold cache, a JIT): its service-time
//!   factor decays linearly from `warmup_multiplier` to 1. The station's queue is shared,
//!   so a service does not know its server: a service started at `t` is stretched by the
//!   ready replicas' mean factor at `t` (each ready replica's share of the capacity), which
//!   is exact for the share of work warming replicas take when a free server is chosen at
//!   random (kube-proxy's endpoint choice) and needs no per-server state;
//! - scale-down removes provisioning replicas first (the newest first), then ready ones
//!   (the most recently ready first: `ActivePods` ranking of `pkg/controller/
//!   controller_utils.go`, pending < running, ready for less time first); a removed ready
//!   replica takes no new work and its calls in service end normally (the station's own
//!   behaviour when `servers` is lowered: busy servers finish, nobody new starts).
//!
//! Metrics (the pods' averages over the sync period): `Utilization` — ∫ busy ready servers
//! ÷ ∫ ready servers, in integer percent as `GetResourceUtilizationRatio` truncates it
//! (servers beyond the ready ones, draining, are the busy ones first); `QueuePerReplica`
//! — the mean queue length ÷ ready replicas in milli-units, as `GetMetricUsageRatio`.
//!
//! The defaults are Kubernetes' (`pkg/apis/autoscaling/v2/defaults.go`): tolerance 0.1,
//! scale up by max(100 %, 4 pods) per 15 s with no stabilization, scale down by 100 % per
//! 15 s after 300 s of stabilization (the controller's `--horizontal-pod-autoscaler-
//! downscale-stabilization`). The behaviour path is always taken (as an HPA with a
//! `behavior` block; without one, Kubernetes' legacy limit `max(2 × current, 4)` applies).
//!
//! Architecture invariant: the station's servers are the ready replicas' servers after every
//! scaling step the autoscaler takes (a run-time change of `station.<n>.servers` holds until
//! its next one); replicas = ready + provisioning, never above `max_replicas` once a
//! decision is taken. API boundary: [`AutoscalerSpec`] (scenario), [`Hpa`] (the decision,
//! pure: state, the instant and the metric in, the replica count out); the run-time side is
//! `world/autoscalers.rs`.

use serde::{Deserialize, Serialize};
use sim_core::{Dist, SimDuration, SimTime};

/// Most replicas one autoscaler may ask for.
pub const MAX_REPLICAS: u64 = 100_000;
/// Longest policy period (`periodSeconds` ≤ 1800 in Kubernetes' validation).
pub const MAX_POLICY_PERIOD: SimDuration = SimDuration::from_secs(1800);
/// Longest stabilization window (`stabilizationWindowSeconds` ≤ 3600).
pub const MAX_WINDOW: SimDuration = SimDuration::from_secs(3600);
/// Most policies per direction (Kubernetes: at most 10).
pub const MAX_POLICIES: usize = 10;

crate::params::param_choices! {
    /// What the autoscaler measures.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum ScaleMetric {
        /// Busy ready servers ÷ ready servers, in percent (a `Resource` metric with an
        /// `averageUtilization` target).
        #[default]
        Utilization = "Utilization",
        /// Requests waiting in the station's queue per ready replica (a `Pods` metric with
        /// an `averageValue` target).
        QueuePerReplica = "QueuePerReplica",
        /// Requests waiting in the station's queue, read at the instant: a KEDA queue
        /// scaler's length (ready messages), served to the HPA as an `External` metric with
        /// an `AverageValue` target; KEDA activates and scales to zero on it.
        QueueLength = "QueueLength",
        /// Requests waiting or in service at the station, read at the instant: the KEDA
        /// HTTP add-on's pending-request count (its interceptor holds requests while there
        /// are no replicas); an `External` `AverageValue` metric, as `QueueLength`.
        InFlight = "InFlight",
    }
}

impl ScaleMetric {
    /// Is it a KEDA scaler's metric (read at the instant, an `External` metric for the HPA,
    /// with KEDA's activation and scale to zero)?
    pub fn is_keda(self) -> bool {
        matches!(self, ScaleMetric::QueueLength | ScaleMetric::InFlight)
    }
}

crate::params::param_choices! {
    /// `selectPolicy`: which policy's limit applies.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum SelectPolicy {
        /// The largest change (the default).
        #[default]
        Max = "Max",
        /// The smallest change.
        Min = "Min",
        /// No scaling in this direction.
        Disabled = "Disabled",
    }
}

crate::params::param_choices! {
    /// A policy's kind (`type`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub enum PolicyKind {
        /// A number of pods per period.
        Pods = "Pods",
        /// A percentage of the replicas at the period's start.
        Percent = "Percent",
    }
}

/// One `HPAScalingPolicy`: at most `value` pods (or percent) per `period`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScalingPolicy {
    pub kind: PolicyKind,
    pub value: u32,
    pub period: SimDuration,
}

/// An autoscaler, as written in scenarios (`autoscalers: [...]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Autoscaler")]
pub struct AutoscalerSpec {
    #[serde(deserialize_with = "crate::validate::name")]
    pub name: String,
    /// The station it scales (an entry of `stations`).
    pub station: String,
    /// Servers per replica (the station's `servers` is a multiple of it).
    #[serde(default = "D::servers_per_replica", deserialize_with = "R::servers_per_replica")]
    pub servers_per_replica: u64,
    #[serde(default = "D::min_replicas", deserialize_with = "R::min_replicas")]
    pub min_replicas: u64,
    #[serde(deserialize_with = "R::max_replicas")]
    pub max_replicas: u64,
    #[serde(default = "D::metric")]
    pub metric: ScaleMetric,
    /// The metric's target: percent for `Utilization` (70 = 70 %), requests per ready
    /// replica for `QueuePerReplica`.
    #[serde(deserialize_with = "R::target")]
    pub target: f64,
    #[serde(default = "D::tolerance", deserialize_with = "R::tolerance")]
    pub tolerance: f64,
    #[serde(default = "D::sync_period", deserialize_with = "R::sync_period")]
    pub sync_period: SimDuration,
    /// From the ask to ready (node, image pull, start, readiness probe).
    #[serde(default = "D::provisioning_delay")]
    pub provisioning_delay: Dist<SimDuration>,
    #[serde(default = "D::warmup", deserialize_with = "R::warmup")]
    pub warmup: SimDuration,
    #[serde(default = "D::warmup_multiplier", deserialize_with = "R::warmup_multiplier")]
    pub warmup_multiplier: f64,
    #[serde(default = "D::scale_up_stabilization", deserialize_with = "R::scale_up_stabilization")]
    pub scale_up_stabilization: SimDuration,
    #[serde(default = "D::scale_up_select")]
    pub scale_up_select: SelectPolicy,
    #[serde(default = "default_up_policies")]
    pub scale_up_policies: Vec<ScalingPolicy>,
    #[serde(
        default = "D::scale_down_stabilization",
        deserialize_with = "R::scale_down_stabilization"
    )]
    pub scale_down_stabilization: SimDuration,
    #[serde(default = "D::scale_down_select")]
    pub scale_down_select: SelectPolicy,
    #[serde(default = "default_down_policies")]
    pub scale_down_policies: Vec<ScalingPolicy>,
    /// KEDA (with a `QueueLength` or `InFlight` metric): a trigger is active while its
    /// metric is above this (`activationThreshold` / `activationValue`).
    #[serde(
        default = "D::activation_threshold",
        deserialize_with = "R::activation_threshold",
        skip_serializing_if = "is_zero"
    )]
    pub activation_threshold: f64,
    /// KEDA: time between two checks of the triggers (`pollingInterval`).
    #[serde(
        default = "D::polling_interval",
        deserialize_with = "R::polling_interval",
        skip_serializing_if = "is_default_polling"
    )]
    pub polling_interval: SimDuration,
    /// KEDA: how long after the last active check it scales to zero (`cooldownPeriod`).
    #[serde(
        default = "D::cooldown_period",
        deserialize_with = "R::cooldown_period",
        skip_serializing_if = "is_default_cooldown"
    )]
    pub cooldown_period: SimDuration,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}
fn is_default_polling(d: &SimDuration) -> bool {
    *d == D::polling_interval()
}
fn is_default_cooldown(d: &SimDuration) -> bool {
    *d == D::cooldown_period()
}

type D = crate::params::Defaults<AutoscalerSpec>;
type R = crate::params::Ranged<AutoscalerSpec>;

/// `defaultHPAScaleUpRules`: 4 pods or 100 % per 15 s, whichever is larger.
pub fn default_up_policies() -> Vec<ScalingPolicy> {
    let period = SimDuration::from_secs(15);
    vec![
        ScalingPolicy { kind: PolicyKind::Pods, value: 4, period },
        ScalingPolicy { kind: PolicyKind::Percent, value: 100, period },
    ]
}

/// `defaultHPAScaleDownRules`: 100 % per 15 s.
pub fn default_down_policies() -> Vec<ScalingPolicy> {
    vec![ScalingPolicy {
        kind: PolicyKind::Percent,
        value: 100,
        period: SimDuration::from_secs(15),
    }]
}

/// Sweeps and variants: at most `max_replicas` at least; zero only with a KEDA metric.
fn check_bounds(s: &AutoscalerSpec) -> Result<(), String> {
    if s.min_replicas > s.max_replicas {
        return Err(format!(
            "min_replicas ({}) must not exceed max_replicas ({})",
            s.min_replicas, s.max_replicas
        ));
    }
    if s.min_replicas == 0 && !s.metric.is_keda() {
        return Err(NO_ZERO_WITHOUT_KEDA.to_string());
    }
    Ok(())
}

/// Why an HPA metric cannot have `min_replicas: 0`.
const NO_ZERO_WITHOUT_KEDA: &str = "min_replicas 0 (scale to zero) needs a KEDA metric \
    (QueueLength or InFlight): the HPA does not scale a target from zero replicas";

crate::params::declare_params! {
    AutoscalerSpec: "autoscaler", name = |s| s.name, check = check_bounds,
        scenario_only = [
            station: "a reference to a station (`stations`)",
            scale_up_policies: "a list of policies valid as a whole (`behavior.scaleUp.policies`)",
            scale_down_policies: "a list of policies valid as a whole (`behavior.scaleDown.policies`)",
        ],
        state = Hpa;
    servers_per_replica: Count { min: 1, max: 10_000 }, "servers", fixed,
        "servers per replica (the station's servers = ready replicas × this)", default = 1;
    min_replicas: Count { min: 0, max: MAX_REPLICAS }, "replicas",
        runtime(apply = |h, n: u64| h.set_min(n)),
        "the fewest replicas (minReplicas; 0 = scale to zero as KEDA's minReplicaCount, with a QueueLength or InFlight metric)",
        default = 1;
    max_replicas: Count { min: 1, max: MAX_REPLICAS }, "replicas",
        runtime(apply = |h, n: u64| h.set_max(n)),
        "the most replicas (maxReplicas)";
    metric: Enum { choices: ScaleMetric::CHOICES }, "", fixed,
        "what is measured: Utilization (busy ÷ ready servers) or QueuePerReplica",
        default = "Utilization";
    target: FloatAbove { above: 0.0, max: 1e6 }, "percent or requests",
        runtime(apply = |h, x| h.target = x),
        "the metric's target (Utilization: percent, averageUtilization; QueuePerReplica: waiting requests per ready replica, averageValue)";
    tolerance: Float { min: 0.0, max: 1.0 }, "ratio", runtime(apply = |h, x| h.tolerance = x),
        "no change while |1 − metric/target| ≤ this (horizontal-pod-autoscaler-tolerance)",
        default = 0.1;
    sync_period: Duration { min: SimDuration::from_ms(100), max: SimDuration::from_secs(3600) },
        "ns", runtime(apply = |h, d| h.sync_period = d),
        "time between two decisions (horizontal-pod-autoscaler-sync-period)",
        default = SimDuration::from_secs(15);
    provisioning_delay: DurationDist, "ns", runtime(apply = |h, d| h.provisioning_delay = d),
        "from a replica's ask to ready (cold start; replicas asked for after a change)",
        default = Dist::constant(SimDuration::ZERO);
    warmup: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(3600) }, "ns",
        runtime(apply = |h, d| h.warmup = d),
        "how long a ready replica serves slower (its factor decays linearly to 1)",
        default = SimDuration::ZERO;
    warmup_multiplier: Float { min: 1.0, max: 100.0 }, "×",
        runtime(apply = |h, x| h.warmup_multiplier = x),
        "a just-ready replica's service-time factor", default = 1.0;
    scale_up_stabilization: Duration { min: SimDuration::ZERO, max: MAX_WINDOW }, "ns",
        runtime(apply = |h, d| h.up.stabilization = d),
        "scale up to the lowest recommendation of this window (behavior.scaleUp.stabilizationWindowSeconds)",
        default = SimDuration::ZERO;
    scale_up_select: Enum { choices: SelectPolicy::CHOICES }, "",
        runtime(apply = |h, p| h.up.select = p),
        "which scale-up policy limits (Max, Min, Disabled)", default = "Max";
    scale_down_stabilization: Duration { min: SimDuration::ZERO, max: MAX_WINDOW }, "ns",
        runtime(apply = |h, d| h.down.stabilization = d),
        "scale down to the highest recommendation of this window (behavior.scaleDown.stabilizationWindowSeconds)",
        default = SimDuration::from_secs(300);
    scale_down_select: Enum { choices: SelectPolicy::CHOICES }, "",
        runtime(apply = |h, p| h.down.select = p),
        "which scale-down policy limits (Max, Min, Disabled)", default = "Max";
    activation_threshold: Float { min: 0.0, max: 1e6 }, "requests",
        runtime(apply = |h, x| h.activation_threshold = x),
        "KEDA: a trigger is active while its metric is above this (activationThreshold)",
        default = 0.0;
    polling_interval: Duration { min: SimDuration::from_ms(100), max: SimDuration::from_secs(3600) },
        "ns", runtime(apply = |h, d| h.polling_interval = d),
        "KEDA: time between two checks of the triggers (pollingInterval)",
        default = SimDuration::from_secs(30);
    cooldown_period: Duration { min: SimDuration::ZERO, max: SimDuration::from_secs(86_400) },
        "ns", runtime(apply = |h, d| h.cooldown_period = d),
        "KEDA: scale to zero once no check was active for this long (cooldownPeriod)",
        default = SimDuration::from_secs(300);
}

impl AutoscalerSpec {
    /// The checks beyond each value's range, as (field, message): the station exists,
    /// min ≤ max, at most `max_replicas × servers_per_replica`
    /// servers, and each policy as Kubernetes validates it (a value > 0, a period in
    /// (0, 1800 s], 1 to 10 policies unless that direction is `Disabled`).
    pub fn check(&self, stations: &[crate::station::StationSpec]) -> Result<(), (&str, String)> {
        let Some(st) = stations.iter().find(|s| s.name == self.station) else {
            let known: Vec<&str> = stations.iter().map(|s| s.name.as_str()).collect();
            let m = format!("no such station {:?}; known: [{}]", self.station, known.join(", "));
            return Err(("station", m));
        };
        let _ = st;
        check_bounds(self).map_err(|m| ("min_replicas", m))?;
        if self.max_replicas.saturating_mul(self.servers_per_replica) > crate::station::MAX_SERVERS
        {
            let m = format!(
                "max_replicas × servers_per_replica exceeds a station's {} servers",
                crate::station::MAX_SERVERS
            );
            return Err(("max_replicas", m));
        }
        let dirs = [
            ("scale_up_policies", &self.scale_up_policies, self.scale_up_select),
            ("scale_down_policies", &self.scale_down_policies, self.scale_down_select),
        ];
        for (field, policies, select) in dirs {
            if policies.len() > MAX_POLICIES
                || (policies.is_empty() && select != SelectPolicy::Disabled)
            {
                let m = format!("expected 1 to {MAX_POLICIES} policies (none: select Disabled)");
                return Err((field, m));
            }
            for p in policies.iter() {
                if p.value == 0 || p.period == SimDuration::ZERO || p.period > MAX_POLICY_PERIOD {
                    let m = format!("a policy needs a value > 0 and a period in (0, 1800s]: {p:?}");
                    return Err((field, m));
                }
            }
        }
        Ok(())
    }
}

/// One direction's behaviour (`HPAScalingRules`).
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    pub stabilization: SimDuration,
    pub select: SelectPolicy,
    pub policies: Vec<ScalingPolicy>,
}

impl Rules {
    /// `getLongestPolicyPeriod`.
    fn longest_period(&self) -> SimDuration {
        self.policies.iter().map(|p| p.period).max().unwrap_or(SimDuration::ZERO)
    }
}

/// A past scaling step (`timestampedScaleEvent`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleEvent {
    pub change: u32,
    pub at: SimTime,
    pub outdated: bool,
}

/// What the metric says, in the replica calculator's units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Usage {
    /// A resource metric: the ready pods' usage summed (milli-units), each pod's request
    /// (milli-units) and the target utilization in percent.
    Resource { total: i64, request: i64, target: f64 },
    /// A plain per-pod metric: the ready pods' values summed (milli-units) and the target
    /// per pod (milli-units).
    Plain { total: i64, target: i64 },
}

impl Usage {
    /// The usage ratio over `pods` pods with `total` usage: `GetResourceUtilizationRatio`
    /// (`metrics/utilization.go`: the utilization truncated to a whole percent, then ÷ the
    /// target) or `GetMetricUsageRatio` (the integer mean per pod ÷ the target).
    fn ratio(self, total: i64, pods: i64) -> f64 {
        match self {
            Usage::Resource { request, target, .. } => {
                ((total * 100) / (request * pods)) as f64 / target
            }
            Usage::Plain { target, .. } => (total / pods) as f64 / target as f64,
        }
    }
    fn total(self) -> i64 {
        match self {
            Usage::Resource { total, .. } | Usage::Plain { total, .. } => total,
        }
    }
    /// What a missing pod counts on a scale-down: its request at max(100 %, target)
    /// (resource), the target (plain).
    fn missing_down(self) -> i64 {
        match self {
            Usage::Resource { request, target, .. } => request * (target.max(100.0) as i64) / 100,
            Usage::Plain { target, .. } => target,
        }
    }
}

/// The replica calculator (`GetResourceReplicas` / `calcPlainMetricReplicas`,
/// `pkg/controller/podautoscaler/replica_calculator.go`): `current` replicas of which
/// `ready` report the metric, `unready` are not ready yet (Pending: provisioning) and
/// `missing` are ready without a metric (none in the simulation; Kubernetes' tests have
/// them). `None`: no ready pod reports ("did not receive metrics for targeted pods"), no
/// recommendation.
pub fn replica_count(
    current: u32,
    ready: u32,
    unready: u32,
    missing: u32,
    usage: Usage,
    tolerance: f64,
) -> Option<u32> {
    if ready == 0 {
        return None;
    }
    let within = |r: f64| (1.0 - tolerance) <= r && r <= (1.0 + tolerance); // Tolerances.isWithin
    let ratio = usage.ratio(usage.total(), ready as i64);
    // scaleUpWithUnready: unready pods matter only when scaling up.
    let up_with_unready = unready > 0 && ratio > 1.0;
    if !up_with_unready && missing == 0 {
        if within(ratio) {
            return Some(current);
        }
        return Some(ceil_i32(ratio * ready as f64));
    }
    // Missing pods: the target (or the full request) on a scale-down, 0 on a scale-up.
    let mut total = usage.total();
    let mut pods = ready as i64;
    if missing > 0 {
        if ratio < 1.0 {
            total += usage.missing_down() * missing as i64;
        }
        if ratio != 1.0 {
            pods += missing as i64;
        }
    }
    // Unready pods count as 0 % on a scale-up.
    if up_with_unready {
        pods += unready as i64;
    }
    let new_ratio = usage.ratio(total, pods);
    if within(new_ratio) || (ratio < 1.0 && new_ratio > 1.0) || (ratio > 1.0 && new_ratio < 1.0) {
        return Some(current); // too small, or the direction would flip
    }
    let new = ceil_i32(new_ratio * pods as f64);
    if (new_ratio < 1.0 && new > current) || (new_ratio > 1.0 && new < current) {
        return Some(current); // the metrics' count would flip the direction
    }
    Some(new)
}

fn ceil_i32(x: f64) -> u32 {
    libm::ceil(x).clamp(0.0, i32::MAX as f64) as u32
}

/// The controller's state for one autoscaler and its settings in force.
#[derive(Clone, Debug, PartialEq)]
pub struct Hpa {
    pub min: u32,
    pub max: u32,
    pub metric: ScaleMetric,
    pub target: f64,
    pub tolerance: f64,
    pub sync_period: SimDuration,
    pub provisioning_delay: Dist<SimDuration>,
    pub warmup: SimDuration,
    pub warmup_multiplier: f64,
    pub up: Rules,
    pub down: Rules,
    /// Unstabilized recommendations (`recommendations[key]`).
    pub recommendations: Vec<(SimTime, u32)>,
    pub up_events: Vec<ScaleEvent>,
    pub down_events: Vec<ScaleEvent>,
    pub activation_threshold: f64,
    pub polling_interval: SimDuration,
    pub cooldown_period: SimDuration,
    /// KEDA's `LastActiveTime`: the last check that found a trigger active.
    pub last_active: Option<SimTime>,
}

/// `t.After(cutoff)` with `cutoff = now − window` (before the run's start: every instant is
/// after it).
fn after(t: SimTime, now: SimTime, window: SimDuration) -> bool {
    now.0 < window.0 || t.0 > now.0 - window.0
}

/// `t.Before(now − window)`.
fn before(t: SimTime, now: SimTime, window: SimDuration) -> bool {
    now.0 >= window.0 && t.0 < now.0 - window.0
}

impl Hpa {
    pub fn new(s: &AutoscalerSpec) -> Hpa {
        Hpa {
            min: s.min_replicas as u32,
            max: s.max_replicas as u32,
            metric: s.metric,
            target: s.target,
            tolerance: s.tolerance,
            sync_period: s.sync_period,
            provisioning_delay: s.provisioning_delay.clone(),
            warmup: s.warmup,
            warmup_multiplier: s.warmup_multiplier,
            up: Rules {
                stabilization: s.scale_up_stabilization,
                select: s.scale_up_select,
                policies: s.scale_up_policies.clone(),
            },
            down: Rules {
                stabilization: s.scale_down_stabilization,
                select: s.scale_down_select,
                policies: s.scale_down_policies.clone(),
            },
            recommendations: Vec::new(),
            up_events: Vec::new(),
            down_events: Vec::new(),
            activation_threshold: s.activation_threshold,
            polling_interval: s.polling_interval,
            cooldown_period: s.cooldown_period,
            last_active: None,
        }
    }

    fn set_min(&mut self, n: u64) -> Result<(), String> {
        if n > self.max as u64 {
            return Err(format!("min_replicas ({n}) must not exceed max_replicas ({})", self.max));
        }
        if n == 0 && !self.metric.is_keda() {
            return Err(NO_ZERO_WITHOUT_KEDA.to_string());
        }
        self.min = n as u32;
        Ok(())
    }

    fn set_max(&mut self, n: u64) -> Result<(), String> {
        if n < self.hpa_min() as u64 {
            return Err(format!(
                "max_replicas ({n}) must not be below min_replicas ({})",
                self.min
            ));
        }
        self.max = n as u32;
        Ok(())
    }

    /// The HPA's own `minReplicas`: KEDA gives its HPA max(minReplicaCount, 1)
    /// (`getHPAMinReplicas`, `controllers/keda/hpa.go`); KEDA itself takes 1 → 0.
    pub fn hpa_min(&self) -> u32 {
        self.min.max(1)
    }

    /// One sync (`reconcileAutoscaler`): `current` replicas (`scale.Spec.Replicas`: ready
    /// and provisioning), `proposal` the metric's recommendation (`None`: no metric). The
    /// replicas to have; a change is stored as a scale event (`storeScaleEvent`).
    pub fn reconcile(&mut self, now: SimTime, current: u32, proposal: Option<u32>) -> u32 {
        if self.recommendations.is_empty() {
            self.recommendations.push((now, current)); // recordInitialRecommendation
        }
        if current == 0 {
            // "scaling is disabled since the replica count of the target is zero"
            // (`reconcileAutoscaler`: Spec.Replicas 0 with minReplicas ≠ 0): KEDA's to wake.
            return 0;
        }
        let desired = if current > self.max {
            self.max
        } else if current < self.hpa_min() {
            self.hpa_min()
        } else {
            let Some(p) = proposal else { return current }; // FailedComputeMetricsReplicas
            let stabilized = self.stabilize(now, current, p);
            self.rate_limit(now, current, stabilized)
        };
        if desired != current {
            self.store_event(now, current, desired);
        }
        desired
    }

    /// `stabilizeRecommendationWithBehaviors`: the current count brought within [the lowest
    /// recommendation of the scale-up window, the highest of the scale-down window]; the
    /// unstabilized one is recorded (over the oldest outside both windows, if any).
    pub fn stabilize(&mut self, now: SimTime, current: u32, desired: u32) -> u32 {
        let (mut up, mut down) = (desired, desired);
        let (wu, wd) = (self.up.stabilization, self.down.stabilization);
        let mut old = None;
        for (i, &(t, r)) in self.recommendations.iter().enumerate() {
            if after(t, now, wu) {
                up = up.min(r);
            }
            if after(t, now, wd) {
                down = down.max(r);
            }
            if before(t, now, wu) && before(t, now, wd) {
                old = Some(i);
            }
        }
        let stabilized = current.max(up).min(down);
        match old {
            Some(i) => self.recommendations[i] = (now, desired),
            None => self.recommendations.push((now, desired)),
        }
        stabilized
    }

    /// `convertDesiredReplicasWithBehaviorRate`: within the policies' limits and
    /// [min, max].
    pub fn rate_limit(&self, now: SimTime, current: u32, desired: u32) -> u32 {
        if desired > current {
            let limit = self.up_limit(now, current).max(current as i64);
            let allowed = (self.max as i64).min(limit);
            if desired as i64 > allowed {
                return allowed as u32;
            }
        } else if desired < current {
            let limit = self.down_limit(now, current).min(current as i64);
            let allowed = (self.hpa_min() as i64).max(limit);
            if (desired as i64) < allowed {
                return allowed as u32;
            }
        }
        desired
    }

    /// `getReplicasChangePerPeriod`: the changes of the events after `now − period`.
    fn changed(events: &[ScaleEvent], now: SimTime, period: SimDuration) -> i64 {
        events.iter().filter(|e| after(e.at, now, period)).map(|e| e.change as i64).sum()
    }

    /// Replicas at the start of `period`, by the events since.
    fn period_start(&self, now: SimTime, current: u32, period: SimDuration) -> i64 {
        current as i64 - Self::changed(&self.up_events, now, period)
            + Self::changed(&self.down_events, now, period)
    }

    /// `calculateScaleUpLimitWithScalingRules`.
    pub fn up_limit(&self, now: SimTime, current: u32) -> i64 {
        let pick: fn(i64, i64) -> i64 = match self.up.select {
            SelectPolicy::Disabled => return current as i64,
            SelectPolicy::Min => i64::min,
            SelectPolicy::Max => i64::max,
        };
        let mut result =
            if self.up.select == SelectPolicy::Min { i32::MAX as i64 } else { i32::MIN as i64 };
        for p in &self.up.policies {
            let start = self.period_start(now, current, p.period);
            let proposed = match p.kind {
                PolicyKind::Pods => start + p.value as i64,
                // Rounded up, or a small replica count could never grow.
                PolicyKind::Percent => {
                    libm::ceil(start as f64 * (1.0 + p.value as f64 / 100.0)) as i64
                }
            };
            result = pick(result, proposed);
        }
        result
    }

    /// `calculateScaleDownLimitWithBehaviors`.
    pub fn down_limit(&self, now: SimTime, current: u32) -> i64 {
        let pick: fn(i64, i64) -> i64 = match self.down.select {
            SelectPolicy::Disabled => return current as i64,
            // The smallest change is the highest count.
            SelectPolicy::Min => i64::max,
            SelectPolicy::Max => i64::min,
        };
        let mut result =
            if self.down.select == SelectPolicy::Min { i32::MIN as i64 } else { i32::MAX as i64 };
        for p in &self.down.policies {
            let start = self.period_start(now, current, p.period);
            let proposed = match p.kind {
                PolicyKind::Pods => start - p.value as i64,
                // int32(float64) truncates toward zero.
                PolicyKind::Percent => (start as f64 * (1.0 - p.value as f64 / 100.0)) as i64,
            };
            result = pick(result, proposed);
        }
        result
    }

    /// `storeScaleEvent`: events older than the direction's longest policy period are
    /// marked outdated; the new event replaces the last outdated one, else is appended.
    fn store_event(&mut self, now: SimTime, prev: u32, new: u32) {
        let (rules, events, change) = if new > prev {
            (&self.up, &mut self.up_events, new - prev)
        } else {
            (&self.down, &mut self.down_events, prev - new)
        };
        let longest = rules.longest_period();
        for e in events.iter_mut() {
            if before(e.at, now, longest) {
                e.outdated = true;
            }
        }
        let event = ScaleEvent { change, at: now, outdated: false };
        match events.iter().rposition(|e| e.outdated) {
            Some(i) => events[i] = event,
            None => events.push(event),
        }
    }

    /// A ready replica's service-time factor `age` after it became ready: from
    /// `warmup_multiplier` down to 1, linearly over `warmup`.
    pub fn warm_factor(&self, age: SimDuration) -> f64 {
        if age >= self.warmup || self.warmup_multiplier == 1.0 {
            return 1.0;
        }
        let left = 1.0 - age.0 as f64 / self.warmup.0 as f64;
        1.0 + (self.warmup_multiplier - 1.0) * left
    }
}

#[path = "autoscaler_keda.rs"]
mod keda;
pub use keda::{KedaStep, external_replica_count};

#[cfg(test)]
#[path = "autoscaler_tests.rs"]
mod tests;
