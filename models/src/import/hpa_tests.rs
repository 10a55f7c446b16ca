//! The Kubernetes documentation's own HPA manifests (the HorizontalPodAutoscaler
//! walkthrough's `php-apache`, the behaviour examples of "Horizontal Pod Autoscaling"),
//! imported and read back by the scenario's deserializers.

use super::super::{Format, Options, import};
use crate::autoscaler::{AutoscalerSpec, PolicyKind, ScalingPolicy, SelectPolicy};
use sim_core::SimDuration;

/// The fragment's one autoscaler, as a scenario reads it.
fn autoscaler(text: &str, partial: bool) -> AutoscalerSpec {
    let f = import(text, &Options { partial, ..Options::default() }).unwrap_or_else(|ps| {
        panic!("{}", ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"))
    });
    assert_eq!(f.format, Some(Format::Hpa));
    let sc: crate::scenario::ScenarioSpec<crate::params::ParamValue> =
        ron::from_str(&f.as_scenario_text()).unwrap_or_else(|e| panic!("{e}: {}", f.to_ron()));
    assert_eq!(sc.autoscalers.len(), 1);
    sc.autoscalers[0].clone()
}

fn errors(text: &str) -> Vec<String> {
    import(text, &Options::default()).expect_err("refused").iter().map(|p| p.to_string()).collect()
}

/// The walkthrough's HPA (`kubectl autoscale deployment php-apache --cpu-percent=50
/// --min=1 --max=10`, as `kubectl get hpa php-apache -o yaml` shows it, status included).
const PHP_APACHE: &str = "apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: php-apache
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: php-apache
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        averageUtilization: 50
status:
  observedGeneration: 1
  lastScaleTime: <some-time>
  currentReplicas: 1
  desiredReplicas: 1
  currentMetrics:
  - type: Resource
    resource:
      name: cpu
      current:
        averageUtilization: 0
        averageValue: 0
";

fn secs(s: u64) -> SimDuration {
    SimDuration::from_secs(s)
}

fn pol(kind: PolicyKind, value: u32, period: u64) -> ScalingPolicy {
    ScalingPolicy { kind, value, period: secs(period) }
}

#[test]
fn the_walkthrough_hpa() {
    let a = autoscaler(PHP_APACHE, false);
    assert_eq!((a.name.as_str(), a.station.as_str()), ("php-apache", "php-apache"));
    assert_eq!((a.min_replicas, a.max_replicas, a.target), (1, 10, 50.0));
    // No behavior block: Kubernetes' defaults, which are the autoscaler's.
    assert_eq!(a.scale_down_stabilization, secs(300));
    assert_eq!(a.scale_up_policies, crate::autoscaler::default_up_policies());
    let f = import(PHP_APACHE, &Options::default()).unwrap();
    let notes: Vec<String> = f.notes.iter().map(|n| n.to_string()).collect();
    assert!(notes.iter().any(|n| n.contains("status: ignored")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("add provisioning_delay")), "{notes:?}");
}

/// "Default Behavior": the behaviour Kubernetes applies when none is written, written out;
/// and the examples "Scaling Policies", "Stabilization Window", "Limit scale down" and
/// "Disable scale down".
#[test]
fn the_documented_behaviours() {
    let with = |behavior: &str| {
        autoscaler(
            &PHP_APACHE.replace("status:", &format!("  behavior:\n{behavior}status:")),
            false,
        )
    };
    let d = with(
        "    scaleDown:
      stabilizationWindowSeconds: 300
      policies:
      - type: Percent
        value: 100
        periodSeconds: 15
    scaleUp:
      stabilizationWindowSeconds: 0
      policies:
      - type: Percent
        value: 100
        periodSeconds: 15
      - type: Pods
        value: 4
        periodSeconds: 15
      selectPolicy: Max
",
    );
    let plain = autoscaler(PHP_APACHE, false);
    assert_eq!(d.scale_down_policies, plain.scale_down_policies);
    assert_eq!((d.scale_up_stabilization, d.scale_up_select), (secs(0), SelectPolicy::Max));
    let mut up = d.scale_up_policies.clone();
    up.reverse(); // written Percent first; the same two policies
    assert_eq!(up, plain.scale_up_policies);
    let p = with(
        "    scaleDown:
      policies:
      - type: Pods
        value: 4
        periodSeconds: 60
      - type: Percent
        value: 10
        periodSeconds: 60
",
    );
    assert_eq!(
        p.scale_down_policies,
        [pol(PolicyKind::Pods, 4, 60), pol(PolicyKind::Percent, 10, 60)]
    );
    let w = with("    scaleDown:\n      stabilizationWindowSeconds: 600\n");
    assert_eq!(w.scale_down_stabilization, secs(600));
    let off = with("    scaleDown:\n      selectPolicy: Disabled\n");
    assert_eq!(off.scale_down_select, SelectPolicy::Disabled);
}

/// Every field stormglass does not model is named with its path and position; nothing is
/// dropped silently.
#[test]
fn unsupported_fields_are_named() {
    let memory = PHP_APACHE.replace("name: cpu\n      target", "name: memory\n      target");
    let e = errors(&memory);
    assert!(
        e.iter().any(|e| e.starts_with("15:13: spec.metrics[0].resource.name: not modelled")),
        "{e:?}"
    );
    let pods = PHP_APACHE.replace("minReplicas: 1", "minReplicas: 0");
    assert!(
        errors(&pods).iter().any(|e| e.contains("spec.minReplicas: not modelled: scaling to zero"))
    );
    let two = PHP_APACHE.replace(
        "status:",
        "  - type: Pods\n    pods:\n      metric:\n        name: packets-per-second\n      target:\n        type: AverageValue\n        averageValue: 1k\nstatus:",
    );
    let e = errors(&two);
    assert!(
        e.iter().any(|e| e.contains("spec.metrics[1]: not modelled: several metrics")),
        "{e:?}"
    );
    assert!(
        errors(&PHP_APACHE.replace("maxReplicas", "maxReplica"))
            .iter()
            .any(|e| e.contains("spec.maxReplica: unknown field"))
    );
    // Partial: the rest is imported and what was left out is listed.
    let f = import(&pods, &Options { partial: true, ..Options::default() }).unwrap();
    assert!(
        f.notes.iter().any(|n| n.message.contains("left out (partial import): scaling to zero"))
    );
}

#[test]
fn v1_target_cpu_and_the_default_metric() {
    let v1 = "apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {kind: Deployment, name: web}
  maxReplicas: 5
  targetCPUUtilizationPercentage: 70
";
    assert_eq!(autoscaler(v1, false).target, 70.0);
    let none = v1.replace("  targetCPUUtilizationPercentage: 70\n", "");
    assert_eq!(autoscaler(&none, false).target, 80.0, "SetDefaults_HorizontalPodAutoscaler");
}
