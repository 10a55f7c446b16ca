//! Tables from Kubernetes' own tests of the replica calculator
//! (`pkg/controller/podautoscaler/replica_calculator_test.go`) and of the behaviour limits
//! (`TestCalculateScaleUpLimitWithScalingRules`, `TestCalculateScaleDownLimitWithBehaviors`:
//! the cases of Karmada's FederatedHPA controller, whose `calculateScaleUpLimitWithScalingRules`
//! and `calculateScaleDownLimitWithBehaviors` are Kubernetes' functions copied), then the
//! stabilization and a reconcile sequence derived from `horizontal.go`.

use super::*;

fn s(n: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_secs(n)
}

/// `replicaCalcTestCase`s with every pod requesting 1.0 CPU (1000 m), by name: current
/// replicas, ready pods' summed usage (m), ready, unready, missing, target → expected.
#[test]
fn replica_calculator_cases() {
    let cpu = |total, target| Usage::Resource { total, request: 1000, target };
    #[rustfmt::skip]
    let cases: &[(&str, u32, Usage, u32, u32, u32, u32)] = &[
        // levels 300, 500, 700; target 30 % → utilization 50 %.
        ("TestReplicaCalcScaleUp", 3, cpu(1500, 30.0), 3, 0, 0, 5),
        // pod 0 not ready: 500 + 700 over 2 → 60 %; re-run with it at 0: 40 % → ceil(1.33·3).
        ("TestReplicaCalcScaleUpUnreadyLessScale", 3, cpu(1200, 30.0), 2, 1, 0, 4),
        // one ready pod at 400: 40 % > 30 %; with the two unready at 0: 13 % < 30 %: no change.
        ("TestReplicaCalcScaleUpUnreadyNoScale", 3, cpu(400, 30.0), 1, 2, 0, 3),
        // two pods being deleted are ignored: 500 + 700 over 2 → 60 % → 4.
        ("TestReplicaCalcScaleUpIgnoresDeletionPods", 2, cpu(1200, 30.0), 2, 0, 0, 4),
        // qps 20, 10, 30 per pod against 15 → mean 20 → ceil(1.33·3).
        ("TestReplicaCalcScaleUpCM", 3, Usage::Plain { total: 60_000, target: 15_000 }, 3, 0, 0, 4),
        // 100, 300, 500, 250, 250 against 50 % → 28 % → ceil(0.56·5).
        ("TestReplicaCalcScaleDown", 5, cpu(1400, 50.0), 5, 0, 0, 3),
        ("TestReplicaCalcScaleDownCM", 5, Usage::Plain { total: 60_000, target: 20_000 }, 5, 0, 0, 3),
        // the two unready pods are left out on a scale-down: 900 over 3 → 30 % → ceil(0.6·3).
        ("TestReplicaCalcScaleDownExcludeUnreadyPods", 5, cpu(900, 50.0), 3, 2, 0, 2),
        // 400 and 95 with two pods missing: 24 % < 100 %, the missing count at 100 %:
        // 2495 over 4 → 62 % → ceil(0.62·4).
        ("TestReplicaCalcMissingMetrics", 4, cpu(495, 100.0), 2, 0, 2, 3),
        // 1010, 1030, 1020 against 100 % (requests 0.9, 1.0, 1.1: 3000 m in all) → 102 %.
        ("TestReplicaCalcTolerance", 3, cpu(3060, 100.0), 3, 0, 0, 3),
    ];
    for &(name, current, usage, ready, unready, missing, want) in cases {
        let got = replica_count(current, ready, unready, missing, usage, 0.1);
        assert_eq!(got, Some(want), "{name}");
    }
    assert_eq!(replica_count(3, 0, 3, 0, cpu(0, 50.0), 0.1), None, "no ready pod: no metric");
}

fn hpa(up: Vec<ScalingPolicy>, up_sel: SelectPolicy, down: Vec<ScalingPolicy>) -> Hpa {
    let spec: AutoscalerSpec =
        ron::from_str(r#"Autoscaler(name: "a", station: "s", max_replicas: 1000, target: 50.0)"#)
            .unwrap();
    let mut h = Hpa::new(&spec);
    h.up.policies = up;
    h.up.select = up_sel;
    h.down.policies = down;
    h
}

fn pol(kind: PolicyKind, value: u32, period: u64) -> ScalingPolicy {
    ScalingPolicy { kind, value, period: SimDuration::from_secs(period) }
}

fn ev(change: u32, at: SimTime) -> ScaleEvent {
    ScaleEvent { change, at, outdated: false }
}

/// `TestCalculateScaleUpLimitWithScalingRules` and `TestCalculateScaleDownLimitWithBehaviors`
/// (Karmada's cases of Kubernetes' functions; now = 100 s, a past event 30 s ago).
#[test]
fn behaviour_limits_cases() {
    use PolicyKind::{Percent, Pods};
    use SelectPolicy::{Disabled, Max, Min};
    let now = s(100);
    let up = |current, events: Vec<ScaleEvent>, sel, policies| {
        let mut h = hpa(policies, sel, vec![]);
        h.up_events = events;
        h.up_limit(now, current)
    };
    assert_eq!(up(5, vec![], Max, vec![pol(Pods, 4, 60)]), 9, "No previous events");
    assert_eq!(up(5, vec![ev(2, s(70))], Max, vec![pol(Pods, 4, 60)]), 7, "previous scale up");
    assert_eq!(up(5, vec![], Disabled, vec![pol(Pods, 4, 60)]), 5, "Disabled policy");
    assert_eq!(up(5, vec![], Min, vec![pol(Pods, 4, 60), pol(Pods, 2, 60)]), 7, "MinChange");
    assert_eq!(up(10, vec![], Max, vec![pol(Percent, 50, 60)]), 15, "Percent scaling policy");
    let down = |current, events: Vec<ScaleEvent>, sel, policies| {
        let mut h = hpa(vec![], Max, policies);
        h.down.select = sel;
        h.down_events = events;
        h.down_limit(now, current)
    };
    assert_eq!(down(10, vec![], Max, vec![pol(Percent, 20, 60)]), 8, "No previous events");
    // 11 at the period's start: int32(11 × 0.8) = 8.
    assert_eq!(down(10, vec![ev(1, s(70))], Max, vec![pol(Percent, 20, 60)]), 8, "previous");
    let both = vec![pol(Percent, 10, 60), pol(Pods, 5, 60)];
    assert_eq!(down(100, vec![], Max, both), 90, "Multiple policies");
    assert_eq!(down(10, vec![], Disabled, vec![pol(Percent, 20, 60)]), 10, "Disabled policy");
    let min = vec![pol(Percent, 10, 60), pol(Pods, 15, 60)];
    assert_eq!(down(100, vec![], Min, min), 90, "MinChange policy");
}

/// With Kubernetes' defaults a surge is answered by doubling (or +4) every sync: the event
/// of the last sync, exactly one period ago, is not *after* the cutoff (`getReplicasChange-
/// PerPeriod` keeps `timestamp.After(now − period)`).
#[test]
fn default_behaviour_doubles_per_sync() {
    let spec: AutoscalerSpec =
        ron::from_str(r#"Autoscaler(name: "a", station: "s", max_replicas: 100, target: 50.0)"#)
            .unwrap();
    let mut h = Hpa::new(&spec);
    let mut current = 1;
    let mut seen = vec![];
    for k in 1..=6 {
        current = h.reconcile(s(15 * k), current, Some(60));
        seen.push(current);
    }
    // max(+4, ×2): 1 → 5 → 10 → 20 → 40 → 60 (the recommendation).
    assert_eq!(seen, [5, 10, 20, 40, 60, 60]);
    assert_eq!(h.up_events.len(), 2, "outdated events are reused, not appended");
}

/// Scale-down waits for the 300 s window's highest recommendation to fall (the initial
/// recommendation is the replicas at the first sync), then goes by at most 100 % per 15 s.
#[test]
fn scale_down_is_stabilized() {
    let spec: AutoscalerSpec =
        ron::from_str(r#"Autoscaler(name: "a", station: "s", max_replicas: 100, target: 50.0)"#)
            .unwrap();
    let mut h = Hpa::new(&spec);
    let mut current = 10;
    let mut first_down = None;
    for k in 1..=40 {
        let next = h.reconcile(s(15 * k), current, Some(2));
        if next < current && first_down.is_none() {
            first_down = Some(15 * k);
        }
        current = next;
    }
    // Recorded: 10 at 15 s (initial), then 2 at 15 s, 30 s, … The initial one leaves the
    // window when 15 > now − 300, i.e. from now = 315 s on.
    assert_eq!(first_down, Some(315));
    assert_eq!(current, 2);
}

/// Above `max_replicas` the count is cut to it at once; below `min_replicas` raised to it.
#[test]
fn out_of_bounds_counts_are_brought_in() {
    let mut h = hpa(default_up_policies(), SelectPolicy::Max, default_down_policies());
    h.max = 8;
    h.min = 3;
    assert_eq!(h.reconcile(s(15), 12, None), 8);
    assert_eq!(h.reconcile(s(30), 1, None), 3);
    assert_eq!(h.reconcile(s(45), 5, None), 5, "no metric, within bounds: unchanged");
}

#[test]
fn warm_factor_decays_linearly() {
    let mut h = hpa(vec![], SelectPolicy::Max, vec![]);
    h.warmup = SimDuration::from_secs(10);
    h.warmup_multiplier = 3.0;
    assert_eq!(h.warm_factor(SimDuration::ZERO), 3.0);
    assert_eq!(h.warm_factor(SimDuration::from_secs(5)), 2.0);
    assert_eq!(h.warm_factor(SimDuration::from_secs(10)), 1.0);
}

#[test]
fn bounds_are_checked_across_fields() {
    use crate::params::Params;
    let mut spec: AutoscalerSpec = ron::from_str(
        r#"Autoscaler(name: "a", station: "s", min_replicas: 2, max_replicas: 4, target: 50.0)"#,
    )
    .unwrap();
    let e = spec.set("min_replicas", crate::params::ParamValue::Count(5)).unwrap_err();
    assert!(e.contains("must not exceed"), "{e}");
    assert_eq!(spec.min_replicas, 2, "refused: undone");
    let mut h = Hpa::new(&spec);
    assert!(h.set_max(1).is_err() && h.max == 4);
}
